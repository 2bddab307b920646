// A collection's search (modes, filters, expansion, k) with each result's citation and
// passages, the matched words marked at the offsets the API gives (`highlights`); and
// the page view: a page's text as its chunks, with their kinds, and the pages around it.
import { api, h, route, href, busy, field, title } from './core.js';
import { health, collectionNav, crumbs, select, kindBadges, pageName, chunkView, focusTitle, inputError } from './collections.js';

const MODES = [['hybrid', 'Hybrid: words and meaning'], ['keyword', 'Keyword (BM25)'], ['semantic', 'Semantic (by meaning)']];

/** The last search's address per collection, for the page view's way back. */
const lastSearch = new Map();
/** The last search's highlights per page ("doc/n"), at page offsets: the page view marks them too. */
const lastMarks = new Map();

/**
 * `text` (a passage starting at page offset `base`) as text nodes and <mark>s: each
 * highlight is a span of page character offsets (Unicode code points) the API found.
 */
export function marked(text, base, highlights) {
  const cps = Array.from(text);
  const out = [];
  let at = 0;
  for (const hl of [...(highlights || [])].sort((a, b) => a.start - b.start)) {
    const s = hl.start - base;
    const e = hl.end - base;
    if (s < at || s >= e || e > cps.length) continue;
    if (s > at) out.push(cps.slice(at, s).join(''));
    out.push(h('mark', { 'data-start': hl.start, 'data-end': hl.end, 'data-term': hl.term, title: `matches the term “${hl.term}”` }, cps.slice(s, e).join('')));
    at = e;
  }
  if (at < cps.length) out.push(cps.slice(at).join(''));
  return out;
}

/** A metadata filter from "key = value" lines: a value that reads as JSON (a number, true, null) is that, else a string. */
function metadataFilter(text) {
  const out = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    const i = line.indexOf('=');
    if (i <= 0) throw inputError(`The metadata filter line “${line}” is not key = value (e.g. form = contract).`);
    const k = line.slice(0, i).trim();
    const v = line.slice(i + 1).trim();
    let value = v;
    if (/^(-?\d+(\.\d+)?|true|false|null)$/.test(v)) value = JSON.parse(v);
    if (k in out) out[k] = [].concat(out[k], value); else out[k] = value;
  }
  return Object.keys(out).length ? out : null;
}

/** The request body from the form's state (the address's query string). */
function requestOf(q) {
  const body = { query: q.get('q'), mode: q.get('mode') || 'hybrid', k: Number(q.get('k') || 10) };
  const expand = q.get('expand') || 'on';
  body.expand = expand === 'llm' ? 'llm' : expand === 'on';
  const filters = {};
  if (q.get('from') || q.get('to')) {
    filters.date = {};
    if (q.get('from')) filters.date.from = q.get('from');
    if (q.get('to')) filters.date.to = q.get('to');
  }
  const kinds = (q.get('kinds') || '').split(',').map((s) => s.trim()).filter(Boolean);
  if (kinds.length) filters.kinds = kinds;
  if (q.get('headings')) filters.headings = q.get('headings');
  const meta = metadataFilter(q.get('meta') || '');
  if (meta) filters.metadata = meta;
  if (Object.keys(filters).length) body.filters = filters;
  return body;
}

/**
 * The search's state from the address as written (percent-encoded): the core decodes
 * the whole hash before splitting its query, which would turn a query's own & or + into
 * separators and spaces.
 */
function stateOfAddress() {
  const at = location.hash.indexOf('?');
  return new URLSearchParams(at < 0 ? '' : location.hash.slice(at + 1));
}

route('/collections/:id/search', async ({ id }, main) => {
  const query = stateOfAddress();
  const [c, hl] = await Promise.all([api('GET', `/v1/collections/${id}`), health().catch(() => ({}))]);
  main.append(crumbs([c.name, `/collections/${id}`], ['Search', null]), title(`Search ${c.name}`), collectionNav(id, 'Search'));

  const q = h('input', { type: 'search', name: 'q', required: true, maxlength: '4000', value: query.get('q') || '', autocomplete: 'off', placeholder: 'e.g. how often may the customer audit?' });
  const mode = select(MODES, query.get('mode') || 'hybrid', { name: 'mode' });
  const k = h('input', { type: 'number', name: 'k', min: '1', max: '50', value: query.get('k') || '10', inputmode: 'numeric' });
  const expandOpts = [['on', 'On (abbreviations, variants)'], ['off', 'Off (words as typed)']];
  if (hl.llm || hl.local_model) expandOpts.push(['llm', 'With the model’s paraphrases']);
  const expand = select(expandOpts, query.get('expand') || 'on', { name: 'expand' });
  const from = h('input', { name: 'from', value: query.get('from') || '', placeholder: '2024 or 2024-03-14', autocomplete: 'off' });
  const to = h('input', { name: 'to', value: query.get('to') || '', placeholder: '2024-12-31', autocomplete: 'off' });
  const kinds = h('input', { name: 'kinds', value: query.get('kinds') || '', placeholder: 'clause, definition, table', autocomplete: 'off' });
  const headings = h('input', { name: 'headings', value: query.get('headings') || '', autocomplete: 'off' });
  const meta = h('textarea', { name: 'meta', rows: '2', spellcheck: 'false', value: query.get('meta') || '', placeholder: 'form = contract' });
  const hasFilters = ['from', 'to', 'kinds', 'headings', 'meta'].some((n) => query.get(n));
  const results = h('div', { class: 'results', id: 'results', 'aria-live': 'polite' });

  const state = () => {
    const p = new URLSearchParams({ q: q.value, mode: mode.value, k: k.value, expand: expand.value });
    for (const [n, el] of [['from', from], ['to', to], ['kinds', kinds], ['headings', headings], ['meta', meta]]) if (el.value.trim()) p.set(n, el.value.trim());
    return p;
  };
  const run = async (params) => {
    const button = form.querySelector('button[type=submit]');
    await busy(button, async () => {
      const body = requestOf(params);
      results.replaceChildren(h('p', { class: 'muted' }, 'Searching…'));
      const r = await api('POST', `/v1/collections/${id}/search`, body);
      const path = `/collections/${id}/search?${params}`;
      lastSearch.set(id, path);
      lastMarks.clear();
      for (const x of r.results) lastMarks.set(`${x.document.id}/${x.page.n}`, x.passages.flatMap((p) => p.highlights || []));
      // The address keeps the search (for the way back from a page) without a new render.
      history.replaceState(null, '', href(path));
      results.replaceChildren(...answerView(id, r));
    }, results);
    // On a small screen the answer (or the error) starts below the form: bring it up.
    if (results.isConnected && results.getBoundingClientRect().top > window.innerHeight - 80) results.scrollIntoView({ block: 'start' });
  };
  const form = h('form', {
    class: 'card search-form', role: 'search', 'aria-label': `Search ${c.name}`,
    onsubmit: (e) => { e.preventDefault(); run(state()); },
  },
  h('div', { class: 'search-row' }, field('Query', q, 'Quote words for a phrase: which animals have “feathers”?'), h('button', { type: 'submit' }, 'Search')),
  h('div', { class: 'grid3' }, field('Mode', mode), field('Expansion', expand), field('Results (k)', k, '1 to 50 pages.')),
  h('details', { class: 'filters', open: hasFilters },
    h('summary', {}, 'Filters'),
    h('div', { class: 'grid2' },
      field('Date from', from, 'A year, a month (2024-03) or a day; matches documents’ metadata.date.'),
      field('Date to', to)),
    h('div', { class: 'grid2' },
      field('Kinds', kinds, 'Comma-separated chunk kinds: clause, definition, citation, table, list, heading, medication, …'),
      field('Heading contains', headings)),
    field('Metadata', meta, 'One key = value a line (dotted keys reach into objects; a key twice means either value).')));
  main.append(form, results);
  focusTitle(main);
  if (!c.documents) {
    results.append(h('p', {}, 'This collection has no documents yet: ', h('a', { href: href(`/collections/${id}`) }, 'add some or load a sample'), ' first.'));
  }
  if (query.get('q')) await run(query);
}, { title: 'Search' });

/** The answer: what the search did, then each result. */
function answerView(id, r) {
  const head = h('div', { class: 'answer-head' },
    h('p', {}, h('strong', {}, r.results.length ? `${r.results.length} result${r.results.length === 1 ? '' : 's'}` : 'No results'),
      ` · ${r.mode} · read as a ${r.intent} query · ${r.considered} pages considered · ${Math.round(r.timings.totalMs)} ms`),
    r.phrases.length ? h('p', { class: 'muted' }, 'Phrases: ', r.phrases.map((p) => `“${p}”`).join(', ')) : null,
    r.expansions.length ? h('p', { class: 'muted' }, 'Also searched: ', r.expansions.map((e) => `${e.text} (${e.kind})`).join(', ')) : null,
    r.warnings.map((w) => h('p', { class: 'warn', role: 'note' }, w)));
  if (!r.results.length) return [head, h('p', {}, 'Nothing matched. Try other words, the semantic mode, or fewer filters.')];
  return [head, h('ol', { class: 'hits' }, r.results.map((x) => resultView(id, x)))];
}

function resultView(id, x) {
  const page = `/collections/${id}/documents/${x.document.id}/pages/${x.page.n}`;
  const name = x.document.title || x.document.id;
  return h('li', { class: 'card hit' },
    h('div', { class: 'hit-head' },
      h('h3', {}, h('a', { href: href(page) }, name), h('span', { class: 'muted' }, ` · ${pageName(x.page)}`)),
      h('p', { class: 'cite' },
        h('span', { class: 'muted' }, 'Citation '), h('code', { class: 'citation' }, x.citation),
        x.heading ? h('span', { class: 'muted' }, ` · ${x.heading}`) : null,
        h('span', { class: 'muted' }, ` · rank ${x.rank} · found by ${x.retrievers.join(' and ') || 'neither list'}`),
        x.duplicates ? h('span', { class: 'muted' }, ` · ${x.duplicates} near-duplicate${x.duplicates === 1 ? '' : 's'} folded`) : null)),
    x.passages.map((p) => h('div', { class: 'passage' },
      h('div', { class: 'passage-head' }, kindBadges(p.kinds),
        h('span', { class: 'muted' }, ` · characters ${p.offsets.start}–${p.offsets.end}`),
        p.matched.length ? h('span', { class: 'muted' }, ` · matched terms: ${p.matched.join(', ')}`) : null,
        ' · ', h('a', { href: href(`${page}?chunk=${p.pos}`) }, `Open chunk ${p.pos} on its page`)),
      h('blockquote', { class: 'passage-text' }, marked(p.text, p.offsets.start, p.highlights)))));
}

// ---- The page view ----

route('/collections/:id/documents/:doc/pages/:n', async ({ id, doc, n }, main, query) => {
  const [c, d, p] = await Promise.all([
    api('GET', `/v1/collections/${id}`),
    api('GET', `/v1/collections/${id}/documents/${doc}`),
    api('GET', `/v1/collections/${id}/documents/${doc}/pages/${n}`),
  ]);
  const at = Number(n);
  const pg = p.page;
  const name = d.title || d.id;
  main.append(crumbs([c.name, `/collections/${id}`], [name, null]), title(name), collectionNav(id, null));
  const back = lastSearch.get(id);
  const pager = () => h('nav', { class: 'pager', 'aria-label': 'Pages' },
    at > 0 ? h('a', { href: href(`/collections/${id}/documents/${doc}/pages/${at - 1}`), rel: 'prev' }, '← Previous page') : h('span', { class: 'muted' }, 'First page'),
    h('span', {}, `Page ${at + 1} of ${d.pages}`),
    at + 1 < d.pages ? h('a', { href: href(`/collections/${id}/documents/${doc}/pages/${at + 1}`), rel: 'next' }, 'Next page →') : h('span', { class: 'muted' }, 'Last page'));
  main.append(h('section', { class: 'card page-info', 'aria-label': 'This page' },
    h('dl', { class: 'pairs' },
      h('dt', {}, 'Page'), h('dd', {}, pageName(pg), pg.heading ? ` · ${pg.heading}` : ''),
      h('dt', {}, 'Citation'), h('dd', {}, h('code', { class: 'citation' }, pg.citation)),
      d.author ? [h('dt', {}, 'Author'), h('dd', {}, d.author)] : null,
      h('dt', {}, 'Chunks'), h('dd', {}, `${p.chunks.length} on this page, chunked by ${d.chunker}`)),
    back ? h('p', {}, h('a', { href: href(back) }, '← Back to the search results')) : null,
    pager()));
  focusTitle(main);

  const focus = query.get('chunk');
  const marks = lastMarks.get(`${doc}/${at}`) || [];
  const text = Array.from(pg.text);
  const items = [];
  let pos = 0;
  for (const ch of p.chunks) {
    // Text between chunks that is more than whitespace is shown where it stands.
    if (ch.start != null && ch.start > pos) {
      const gap = text.slice(pos, ch.start).join('');
      if (gap.trim()) items.push(h('li', { class: 'gap' }, h('div', { class: 'chunk-head muted' }, 'Outside any chunk'), h('pre', { class: 'chunk-text' }, gap)));
    }
    const body = marks.length && ch.start != null ? marked(ch.text, ch.start, marks.filter((m) => m.start >= ch.start && m.end <= ch.end)) : null;
    items.push(chunkView(ch, { id: `chunk-${ch.pos}`, focus: focus != null && String(ch.pos) === focus, body }));
    if (ch.end != null) pos = Math.max(pos, ch.end);
  }
  if (pos < text.length && text.slice(pos).join('').trim()) items.push(h('li', { class: 'gap' }, h('div', { class: 'chunk-head muted' }, 'Outside any chunk'), h('pre', { class: 'chunk-text' }, text.slice(pos).join(''))));
  main.append(h('section', { class: 'card', 'aria-labelledby': 'page-text-h' },
    h('h2', { id: 'page-text-h' }, 'The page, chunk by chunk'),
    marks.length ? h('p', { class: 'muted' }, 'Marked: the words your last search matched in the passages it returned from this page.') : null,
    h('ol', { class: 'chunks page-chunks' }, items)), pager());
  const target = main.querySelector('.chunk.focus');
  if (target) setTimeout(() => { target.scrollIntoView({ block: 'center' }); target.focus({ preventScroll: true }); }, 0);
}, { title: 'Page' });

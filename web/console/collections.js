// Collections: the list, creating one, its settings and deleting it; a collection's
// documents and adding them (pasted text, a file, a bundled sample corpus), each with
// the chunk preview /v1/chunk gives before anything is stored. search.js has the
// search and the page view; both share the helpers exported here.
import { api, h, route, nav, go, href, busy, field, title, ApiError } from './core.js';

if (!document.querySelector('link[data-module="collections"]')) {
  document.head.append(h('link', { rel: 'stylesheet', href: '/console/collections.css', 'data-module': 'collections' }));
}

nav('Collections', '/collections');

const DOMAINS = [
  ['auto', 'Detect per document'],
  ['general', 'General'],
  ['medical', 'Medical'],
  ['legal', 'Legal'],
  ['classical', 'Classical texts (hadith, verse, commentary)'],
];
const CHUNKERS = [['', 'The collection’s (by its domain)'], ['prose', 'Prose'], ['legal', 'Legal'], ['medical', 'Medical'], ['classical', 'Classical']];
const FORMATS = [
  ['auto', 'Detect it'], ['text', 'Plain text'], ['markdown', 'Markdown'], ['html', 'HTML'],
  ['csv', 'CSV (a row per record)'], ['tsv', 'TSV'], ['json', 'JSON (records or an object)'],
];
const SAMPLES = [
  ['legal', 'Legal: contracts, an opinion, US Code title 1'],
  ['medical', 'Medical: visit notes, a progress note, asthma guidance'],
  ['archive', 'Archive: classical Arabic hadith collections'],
];
/** A file's format by its name's ending; anything else is detected from its text. */
const BY_EXTENSION = { txt: 'text', text: 'text', md: 'markdown', markdown: 'markdown', html: 'html', htm: 'html', csv: 'csv', tsv: 'tsv', tab: 'tsv', json: 'json' };

// ---- Shared helpers (search.js uses them) ----

/** What the person typed cannot be sent as it is: said in their terms, nothing sent. */
export function inputError(message) {
  return new ApiError(0, 'not_sent', message, null);
}

let healthP = null;
/** GET /v1/health once: the embedders this server loads, whether it has a model. */
export function health() {
  if (!healthP) healthP = api('GET', '/v1/health', null, { anonymous: true }).catch((e) => { healthP = null; throw e; });
  return healthP;
}

/** A collection's sub-navigation. */
export function collectionNav(id, active) {
  // Research is research.js's page (console-agents' helper) at /collections/:id/research.
  const items = [['Documents', `/collections/${id}`], ['Search', `/collections/${id}/search`], ['Research', `/collections/${id}/research`], ['Settings', `/collections/${id}/settings`]];
  return h('nav', { class: 'subnav', 'aria-label': 'This collection' },
    h('ul', {}, items.map(([label, path]) => h('li', {},
      h('a', { href: href(path), 'aria-current': label === active ? 'page' : null }, label)))));
}

/**
 * Focuses the page's heading once an async render has put it in (the core focuses it
 * only when the render returns at once), unless the person already moved focus.
 */
export function focusTitle(main) {
  const t = main.querySelector('h1');
  const idle = !document.activeElement || document.activeElement === document.body || document.activeElement.id === 'main';
  if (t && main.isConnected && idle) t.focus();
}

/** "Collections › name", the way back up. */
export function crumbs(...parts) {
  const items = [['Collections', '/collections'], ...parts];
  return h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' },
    h('ol', {}, items.map(([label, path], i) => h('li', {},
      path && i < items.length - 1 ? h('a', { href: href(path) }, label) : h('span', { 'aria-current': 'location' }, label)))));
}

/** A select of [value, label] pairs. */
export function select(options, value, attrs = {}) {
  return h('select', attrs, options.map(([v, label]) => h('option', { value: v, selected: v === value }, label)));
}

/** A checkbox with its label beside it. */
export function check(label, input, hint) {
  const id = input.id || `chk-${Math.random().toString(36).slice(2, 9)}`;
  input.id = id;
  const hintEl = hint ? h('small', { class: 'hint', id: `${id}-hint` }, hint) : null;
  if (hintEl) input.setAttribute('aria-describedby', hintEl.id);
  return h('div', { class: 'field check' }, h('label', { for: id }, input, ' ', label), hintEl);
}

/** Kinds as badges ("heading", "list", "table", …). */
export function kindBadges(kinds) {
  if (!kinds || !kinds.length) return h('span', { class: 'muted' }, 'no kind');
  return h('span', { class: 'kinds' }, kinds.map((k) => h('span', { class: `badge kind kind-${k}` }, k)));
}

/** How a page is named to a person: its printed number if it has one. */
export function pageName(page) {
  const printed = page.number != null ? `p. ${page.number}` : `page ${page.n + 1}`;
  return page.volume != null ? `vol. ${page.volume}, ${printed}` : printed;
}

/**
 * One chunk: its position, kinds, character offsets in the page, heading, and text.
 * `opts.focus` marks it as the one a search result pointed to.
 */
export function chunkView(c, opts = {}) {
  const where = c.start != null ? `characters ${c.start}–${c.end}` : 'offsets unknown';
  return h('li', { class: `chunk${opts.focus ? ' focus' : ''}`, id: opts.id || null, tabindex: opts.focus ? '-1' : null },
    h('div', { class: 'chunk-head' },
      h('strong', {}, `Chunk ${c.pos}`), ' ', kindBadges(c.kinds),
      h('span', { class: 'muted' }, ` · ${where}`),
      c.heading ? h('span', { class: 'muted' }, ` · under “${c.heading}”`) : null,
      c.footnoteOf != null ? h('span', { class: 'muted' }, ` · footnote to chunk ${c.footnoteOf}`) : null),
    h('pre', { class: 'chunk-text' }, opts.body || c.text),
    c.meta && Object.keys(c.meta).length ? h('p', { class: 'muted meta' }, `Chunker noted: ${JSON.stringify(c.meta)}`) : null);
}

/** What /v1/chunk answered: the chunker and format, then each page's chunks. */
function previewView(p) {
  const chunks = p.pages.reduce((n, pg) => n + pg.chunks.length, 0);
  return h('section', { class: 'preview', 'aria-labelledby': 'preview-h' },
    h('h3', { id: 'preview-h' }, 'Chunk preview'),
    h('p', {}, `Nothing is stored yet. Read as ${p.format}, chunked by the ${p.chunker} chunker: `,
      `${p.pages.length} page${p.pages.length === 1 ? '' : 's'}, ${chunks} chunk${chunks === 1 ? '' : 's'}.`),
    p.pages.map((pg) => h('div', { class: 'preview-page' },
      h('h4', {}, `${pageName(pg)[0].toUpperCase()}${pageName(pg).slice(1)}`, pg.heading ? ` · ${pg.heading}` : '', ` · ${pg.chars} characters`),
      h('ol', { class: 'chunks' }, pg.chunks.map((c) => chunkView(c))))));
}

/** JSON typed by a person: `{}` when blank, else an object or a thrown message naming the field. */
function jsonObject(text, what) {
  if (!text.trim()) return null;
  let v;
  try { v = JSON.parse(text); } catch (e) { throw inputError(`${what} is not valid JSON (${e.message}). Write an object such as {"date": "2024-03-14"}, or leave it empty.`); }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw inputError(`${what} must be a JSON object such as {"date": "2024-03-14"}.`);
  return v;
}

/** A document body for POST .../documents and /v1/chunk: the text in the payload field its format takes. */
function documentBody(text, format, extra) {
  const body = {};
  if (extra.title) body.title = extra.title;
  if (extra.metadata) body.metadata = extra.metadata;
  if (extra.chunker) body.chunker = extra.chunker;
  switch (format) {
    case 'text': case 'markdown': body.text = text; body.format = format; break;
    case 'html': body.html = text; break;
    case 'csv': body.csv = text; break;
    case 'tsv': body.tsv = text; break;
    case 'json': body.json = text; break;
    default: body.content = text; body.format = 'auto';
  }
  return body;
}

/** A message for the next render of a page of this module (core clears the notice area on a route change). */
let flashed = null;
function flash(text) { flashed = text; }
function takeFlash() {
  const t = flashed;
  flashed = null;
  return t ? h('div', { class: 'ok', role: 'status' }, t) : null;
}

function plural(n, one, many) { return `${n} ${n === 1 ? one : many || `${one}s`}`; }

function when(rfc3339) {
  const d = new Date(rfc3339);
  return Number.isNaN(d.getTime()) ? rfc3339 : d.toLocaleString();
}

// ---- /collections ----

route('/collections', async (params, main) => {
  main.append(crumbs(), title('Collections'));
  const flashBox = takeFlash();
  if (flashBox) main.append(flashBox);
  const list = h('section', { class: 'card', 'aria-labelledby': 'cols-h' }, h('h2', { id: 'cols-h' }, 'Your collections'), h('p', { class: 'muted' }, 'Loading…'));
  main.append(list, createForm());
  const { collections } = await api('GET', '/v1/collections');
  list.replaceChildren(h('h2', { id: 'cols-h' }, 'Your collections'), collections.length
    ? h('table', { class: 'responsive cols' },
      h('thead', {}, h('tr', {}, ['Name', 'Documents', 'Pages', 'Chunks', 'Domain', 'Embedder', 'Created'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, collections.map((c) => h('tr', {},
        h('td', { 'data-label': 'Name' }, h('a', { href: href(`/collections/${c.id}`) }, c.name)),
        h('td', { 'data-label': 'Documents' }, String(c.documents)),
        h('td', { 'data-label': 'Pages' }, String(c.pages)),
        h('td', { 'data-label': 'Chunks' }, String(c.chunks)),
        h('td', { 'data-label': 'Domain' }, c.settings.domain, c.domain && c.domain !== c.settings.domain ? h('span', { class: 'muted' }, ` (mostly ${c.domain})`) : null),
        h('td', { 'data-label': 'Embedder' }, c.embedder),
        h('td', { 'data-label': 'Created' }, when(c.created_at))))))
    : h('p', {}, 'No collections yet: create one below, then add documents or load a sample corpus.'));
}, { title: 'Collections' });

function createForm() {
  const name = h('input', { name: 'name', required: true, maxlength: '120', autocomplete: 'off' });
  const domain = select(DOMAINS, 'auto', { name: 'domain' });
  const embedder = h('select', { name: 'embedder' }, h('option', { value: '' }, 'The server’s default'));
  const mask = h('input', { type: 'checkbox', name: 'mask_identifiers' });
  const redact = h('input', { type: 'checkbox', name: 'redact_storage' });
  const guidance = h('textarea', { name: 'guidance', rows: '3', maxlength: '2000' });
  const msg = h('div', { class: 'msg' });
  health().then((hl) => {
    for (const e of hl.embedders || []) embedder.append(h('option', { value: e }, e === hl.embedder ? `${e} (default)` : e));
  }).catch(() => {});
  const form = h('form', {
    class: 'card', 'aria-labelledby': 'new-col-h',
    onsubmit: (e) => {
      e.preventDefault();
      busy(form.querySelector('button[type=submit]'), async () => {
        const settings = { domain: domain.value, mask_identifiers: mask.checked, redact_storage: redact.checked };
        if (embedder.value) settings.embedder = embedder.value;
        if (guidance.value.trim()) settings.guidance = guidance.value;
        const c = await api('POST', '/v1/collections', { name: name.value, settings });
        flash(`Created “${c.name}”.${c.warnings ? ` ${c.warnings.join(' ')}` : ''} Add documents below, or load a sample corpus.`);
        go(`/collections/${c.id}`);
      }, msg);
    },
  },
  h('h2', { id: 'new-col-h' }, 'New collection'),
  field('Name', name, 'Up to 120 characters.'),
  field('Domain', domain, 'Chooses the chunker and query expansion: medical notes, legal texts, classical texts, or general prose.'),
  field('Embedder', embedder, 'The model that embeds this collection’s passages for semantic search; the ones this server loads.'),
  check('Mask identifiers for the embedder', mask, 'Names, phones, emails… are masked in what the embedder reads; stored text and results keep the original.'),
  check('Redact before storing', redact, 'Title, author and text are masked before chunking: only the masked form is ever written.'),
  field('Guidance (optional)', guidance, 'Instructions research follows for this collection, e.g. “Cite the MSA first.”'),
  h('button', { type: 'submit' }, 'Create collection'), msg);
  return form;
}

// ---- /collections/:id: documents and adding them ----

route('/collections/:id', async ({ id }, main) => {
  const [c, { documents }] = await Promise.all([api('GET', `/v1/collections/${id}`), api('GET', `/v1/collections/${id}/documents`)]);
  const docsCard = h('section', { class: 'card', 'aria-labelledby': 'docs-h' });
  const reload = async (said) => {
    const [c2, d2] = await Promise.all([api('GET', `/v1/collections/${id}`), api('GET', `/v1/collections/${id}/documents`)]);
    summary.replaceChildren(summaryText(c2));
    fillDocs(docsCard, c2, d2.documents, reload, said);
  };
  const summary = h('p', { class: 'lead', id: 'col-summary' }, summaryText(c));
  main.append(crumbs([c.name, null]), title(c.name), collectionNav(id, 'Documents'), summary);
  const flashBox = takeFlash();
  if (flashBox) main.append(flashBox);
  fillDocs(docsCard, c, documents, reload);
  main.append(docsCard, addCard(c, reload));
  focusTitle(main);
}, { title: 'Collection' });

function summaryText(c) {
  return `${plural(c.documents, 'document')}, ${plural(c.pages, 'page')}, ${plural(c.chunks, 'chunk')} · domain ${c.settings.domain} · embedder ${c.embedder}`;
}

/** The documents table; `said`, a message after a change here, is shown and the heading focused. */
function fillDocs(card, c, documents, reload, said) {
  const msg = h('div', { class: 'msg' }, said ? h('div', { class: 'ok', role: 'status' }, said) : null);
  const heading = h('h2', { id: 'docs-h', tabindex: '-1' }, 'Documents');
  card.replaceChildren(heading, msg, documents.length
    ? h('table', { class: 'responsive docs' },
      h('thead', {}, h('tr', {}, ['Title', 'Pages', 'Chunks', 'Kind', 'Added', ''].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, documents.map((d) => docRow(c, d, msg, reload))))
    : h('p', {}, 'No documents yet. Paste one, upload a file or load a sample corpus below.'));
  if (said) heading.focus();
}

function docRow(c, d, msg, reload) {
  const label = d.title || `(untitled ${d.id})`;
  const kind = d.meta && d.meta.kind && d.meta.kind !== d.chunker ? `${d.chunker} (${d.meta.kind})` : d.chunker;
  const actions = h('td', { class: 'actions' });
  const del = h('button', { type: 'button', class: 'secondary small', 'aria-label': `Delete ${label}` }, 'Delete');
  del.addEventListener('click', () => confirmInline(actions, `Delete “${label}”? Its pages leave search at once.`, 'Delete document', async () => {
    await api('DELETE', `/v1/collections/${c.id}/documents/${d.id}`);
    await reload(`Deleted “${label}”.`);
  }, msg, del));
  actions.append(del);
  return h('tr', {},
    h('td', { 'data-label': 'Title' }, h('a', { href: href(`/collections/${c.id}/documents/${d.id}/pages/0`) }, label),
      d.author ? h('span', { class: 'muted' }, ` · ${d.author}`) : null),
    h('td', { 'data-label': 'Pages' }, String(d.pages)),
    h('td', { 'data-label': 'Chunks' }, String(d.chunks)),
    h('td', { 'data-label': 'Kind' }, kind),
    h('td', { 'data-label': 'Added' }, when(d.created_at)),
    actions);
}

/**
 * Replaces `where`'s content with a question and two buttons; Cancel (focused first)
 * puts `back` back. `act` runs on confirming, its error shown in `msg`.
 */
export function confirmInline(where, question, yesLabel, act, msg, back) {
  const saved = [...where.childNodes];
  const cancel = h('button', { type: 'button', class: 'secondary' }, 'Cancel');
  const yes = h('button', { type: 'button', class: 'danger' }, yesLabel);
  const restore = () => { where.replaceChildren(...saved); if (back) back.focus(); };
  cancel.addEventListener('click', restore);
  yes.addEventListener('click', () => busy(yes, async () => { await act(); }, msg).then(() => { if (yes.isConnected) restore(); }));
  where.replaceChildren(h('div', { class: 'confirm', role: 'group', 'aria-label': question }, h('p', {}, question), h('div', { class: 'row' }, yes, cancel)));
  cancel.focus();
}

function addCard(c, reload) {
  return h('section', { class: 'card', 'aria-labelledby': 'add-h' },
    h('h2', { id: 'add-h' }, 'Add documents'),
    h('p', { class: 'muted' }, 'Preview shows the pages and chunks an add would store (POST /v1/chunk), with nothing stored.'),
    h('details', { class: 'adder', open: true }, h('summary', {}, 'Paste text'), pasteForm(c, reload)),
    h('details', { class: 'adder' }, h('summary', {}, 'Upload a file'), uploadForm(c, reload)),
    h('details', { class: 'adder' }, h('summary', {}, 'Load a sample corpus'), sampleForm(c, reload)));
}

/** Preview and Add buttons over a body the form builds; results in `out`. */
function previewAndAdd(c, bodyOf, out, reload, after) {
  const preview = h('button', { type: 'button', class: 'secondary' }, 'Preview chunks');
  const add = h('button', { type: 'submit' }, 'Add document');
  preview.addEventListener('click', () => busy(preview, async () => {
    const body = await bodyOf();
    out.replaceChildren(h('p', { class: 'muted' }, 'Chunking…'));
    out.replaceChildren(previewView(await api('POST', '/v1/chunk', body)));
    out.querySelector('h3').setAttribute('tabindex', '-1');
    out.querySelector('h3').focus();
  }, out));
  const submit = (e) => {
    e.preventDefault();
    busy(add, async () => {
      const body = await bodyOf();
      out.replaceChildren(h('p', { class: 'muted' }, 'Adding and indexing…'));
      const r = await api('POST', `/v1/collections/${c.id}/documents`, body);
      out.replaceChildren(h('div', { class: 'ok', role: 'status' },
        `Added “${r.title || body.title || r.id}”: ${plural(r.pages, 'page')}, ${plural(r.chunks, 'chunk')}. `,
        h('a', { href: href(`/collections/${c.id}/documents/${r.id}/pages/0`) }, 'Open its first page'), '.'));
      if (after) after();
      await reload();
    }, out);
  };
  return { buttons: h('div', { class: 'row' }, preview, add), submit };
}

function pasteForm(c, reload) {
  const titleIn = h('input', { name: 'title', autocomplete: 'off' });
  const format = select(FORMATS, 'auto', { name: 'format' });
  const chunker = select(CHUNKERS, '', { name: 'chunker' });
  const metadata = h('textarea', { name: 'metadata', rows: '2', spellcheck: 'false', placeholder: '{"date": "2024-03-14"}' });
  const text = h('textarea', { name: 'text', rows: '8', required: true });
  const out = h('div', { class: 'out', 'aria-live': 'polite' });
  const bodyOf = async () => {
    if (!text.value.trim()) throw inputError('Paste or type the document’s text first.');
    return documentBody(text.value, format.value, { title: titleIn.value.trim(), metadata: jsonObject(metadata.value, 'Metadata'), chunker: chunker.value });
  };
  const { buttons, submit } = previewAndAdd(c, bodyOf, out, reload, () => { text.value = ''; titleIn.value = ''; });
  return h('form', { class: 'paste', onsubmit: submit },
    h('div', { class: 'grid2' }, field('Title', titleIn, 'Optional; HTML and Markdown give their own.'), field('Format', format, 'Markdown: form feeds or “--- page N ---” lines split pages.')),
    field('Text', text),
    h('div', { class: 'grid2' }, field('Chunker', chunker), field('Metadata (JSON, optional)', metadata, 'A date here feeds the date filter; any key can be filtered on.')),
    buttons, out);
}

function uploadForm(c, reload) {
  const file = h('input', { type: 'file', name: 'file', required: true, accept: '.txt,.text,.md,.markdown,.html,.htm,.csv,.tsv,.tab,.json,text/*,application/json' });
  const titleIn = h('input', { name: 'title', autocomplete: 'off' });
  const format = select([['', 'By the file’s name'], ...FORMATS], '', { name: 'format' });
  const out = h('div', { class: 'out', 'aria-live': 'polite' });
  const bodyOf = async () => {
    const f = file.files && file.files[0];
    if (!f) throw inputError('Choose a file first.');
    let text;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(await f.arrayBuffer());
    } catch {
      throw inputError(`“${f.name}” is not UTF-8 text (a PDF, a Word file or an image?). Documents are text, Markdown, HTML, CSV, TSV or JSON: convert it to one of them first.`);
    }
    const ext = (f.name.split('.').pop() || '').toLowerCase();
    const fmt = format.value || BY_EXTENSION[ext] || 'auto';
    const stem = f.name.replace(/\.[^.]+$/, '');
    const title = titleIn.value.trim() || (fmt === 'html' || fmt === 'markdown' ? '' : stem);
    return documentBody(text, fmt, { title, metadata: { file: f.name } });
  };
  const { buttons, submit } = previewAndAdd(c, bodyOf, out, reload, () => { file.value = ''; titleIn.value = ''; });
  return h('form', { class: 'upload', onsubmit: submit },
    field('File', file, 'Text (.txt), Markdown (.md), HTML (.html), CSV, TSV or JSON; read in this browser and sent as text.'),
    h('div', { class: 'grid2' }, field('Title', titleIn, 'Optional; else the file’s name (HTML and Markdown give their own).'), field('Format', format)),
    buttons, out);
}

function sampleForm(c, reload) {
  const domain = select(SAMPLES, c.settings.domain === 'medical' ? 'medical' : 'legal', { name: 'sample' });
  const out = h('div', { class: 'out', 'aria-live': 'polite' });
  const form = h('form', {
    class: 'sample',
    onsubmit: (e) => {
      e.preventDefault();
      busy(form.querySelector('button'), async () => {
        out.replaceChildren(h('p', { class: 'muted' }, 'Indexing the sample, one document at a time; this takes a little while…'));
        const r = await api('POST', `/v1/collections/${c.id}/sample`, { domain: domain.value });
        out.replaceChildren(h('div', { class: 'ok', role: 'status' }, `Indexed the ${domain.value} sample: ${plural(r.documents, 'document')}, ${plural(r.pages, 'page')}, ${plural(r.chunks, 'chunk')}. `,
          h('a', { href: href(`/collections/${c.id}/search`) }, 'Search them'), '.'));
        await reload();
      }, out);
    },
  }, field('Sample', domain, 'Bundled with the server, indexed through the same path as any document.'), h('button', { type: 'submit' }, 'Load sample'), out);
  return form;
}

// ---- /collections/:id/settings ----

route('/collections/:id/settings', async ({ id }, main) => {
  const [c, hl] = await Promise.all([api('GET', `/v1/collections/${id}`), health().catch(() => ({ embedders: [] }))]);
  main.append(crumbs([c.name, `/collections/${id}`], ['Settings', null]), title(`Settings of ${c.name}`), collectionNav(id, 'Settings'));
  const s = c.settings;
  const name = h('input', { name: 'name', required: true, maxlength: '120', value: c.name });
  const domain = select(DOMAINS, s.domain, { name: 'domain' });
  const embedders = [...new Set([c.embedder, ...(hl.embedders || [])])];
  const embedder = select(embedders.map((e) => [e, e === c.embedder ? `${e} (current)` : e]), c.embedder, { name: 'embedder', disabled: c.documents > 0 });
  const mask = h('input', { type: 'checkbox', name: 'mask_identifiers', checked: s.mask_identifiers });
  const redact = h('input', { type: 'checkbox', name: 'redact_storage', checked: s.redact_storage });
  const guidance = h('textarea', { name: 'guidance', rows: '3', maxlength: '2000', value: s.guidance || '' });
  const glossary = h('textarea', { name: 'glossary', rows: '4', spellcheck: 'false', value: s.glossary ? JSON.stringify(s.glossary, null, 2) : '', placeholder: '{"MSA": "Master Services Agreement"}' });
  const msg = h('div', { class: 'msg', 'aria-live': 'polite' });
  const form = h('form', {
    class: 'card', 'aria-labelledby': 'set-h',
    onsubmit: (e) => {
      e.preventDefault();
      busy(form.querySelector('button[type=submit]'), async () => {
        const settings = { domain: domain.value, mask_identifiers: mask.checked, redact_storage: redact.checked, guidance: guidance.value.trim() ? guidance.value : null };
        const g = jsonObject(glossary.value, 'Glossary');
        if (g || s.glossary) settings.glossary = g;
        if (embedder.value !== c.embedder) settings.embedder = embedder.value;
        const out = await api('PATCH', `/v1/collections/${id}`, { name: name.value, settings });
        Object.assign(c, out);
        msg.replaceChildren(h('div', { class: 'ok', role: 'status' }, 'Saved.', (out.warnings || []).map((w) => h('p', {}, w))));
      }, msg);
    },
  },
  h('h2', { id: 'set-h' }, 'Settings'),
  field('Name', name),
  field('Domain', domain, 'Documents already indexed keep the chunker they were indexed with.'),
  field('Embedder', embedder, c.documents
    ? 'Fixed: a collection that holds documents keeps the model they were embedded with (delete them to change it).'
    : 'The model this collection embeds with; it can change only while the collection is empty.'),
  check('Mask identifiers for the embedder', mask),
  check('Redact before storing', redact),
  field('Guidance', guidance, 'Empty removes it.'),
  field('Glossary (JSON object)', glossary, 'Terms and their expansions (a string or a list of up to 5); empty removes it.'),
  h('button', { type: 'submit' }, 'Save settings'), msg);

  const dangerMsg = h('div', { class: 'msg' });
  const actions = h('div', { class: 'row' });
  const del = h('button', { type: 'button', class: 'danger' }, 'Delete this collection…');
  del.addEventListener('click', () => confirmInline(actions,
    `Delete “${c.name}” and its ${plural(c.documents, 'document')}? This cannot be undone.`, 'Delete for good', async () => {
      await api('DELETE', `/v1/collections/${id}`);
      flash(`Deleted “${c.name}”.`);
      go('/collections');
    }, dangerMsg, del));
  actions.append(del);
  main.append(form, h('section', { class: 'card danger-zone', 'aria-labelledby': 'danger-h' }, h('h2', { id: 'danger-h' }, 'Delete'), actions, dangerMsg));
  focusTitle(main);
}, { title: 'Collection settings' });

// The research page: a question over one collection, answered with numbered sources and
// checked claim by claim (POST /v1/collections/{id}/research). Streamed, the page shows
// each stage as the server reports it (status, query, sources events), the model's draft
// as it is written (delta), then the checked result (done). Citations link to the page
// view; every claim says its verdict in words, with a mark and a border style of its own,
// so colour is never the only signal.

import { api, h, route, title, field, showError, busy, readLines, ApiError } from './core.js';

document.head.append(h('link', { rel: 'stylesheet', href: new URL('./research.css', import.meta.url).href }));

// The verdicts the verifier gives, as a reader is told them.
const VERDICTS = {
  supported: { word: 'Supported', mark: '✓', say: 'an evidence span on a cited page backs it' },
  partial: { word: 'Partly supported', mark: '◐', say: 'its sources back part of it' },
  unsupported: { word: 'Unsupported', mark: '✗', say: 'its sources do not back it' },
  uncited: { word: 'Uncited', mark: '?', say: 'it names no source' },
  unchecked: { word: 'Unchecked', mark: '–', say: 'it could not be checked' },
};

const STAGES = {
  searching: 'Searching the collection for the question',
  deepening: 'Research step: the model searches and reads further',
  answering: 'Writing the answer from the sources',
  verifying: 'Checking every quotation and claim against its sources',
};

// The HTTP status each code of a streamed `error` event has when not streamed, so the
// event reads like the same failure would (the stream itself is always 200).
const STATUS = { allowance_exceeded: 429, too_many_concurrent: 429, rate_limited: 429, llm_error: 502, llm_unreachable: 502, llm_not_configured: 503, llm_busy: 503, internal: 500 };

route('/collections/:id/research', (params, main) => researchPage(params.id, main), { title: 'Research' });

function researchPage(id, main) {
  const heading = title('Research');
  const context = h('p', { class: 'rs-context' }, 'Collection ', h('code', {}, id));
  api('GET', `/v1/collections/${encodeURIComponent(id)}`).then(
    (c) => context.replaceChildren('Over the collection ', h('a', { href: `#/collections/${id}` }, c.name || id), '.'),
    (e) => showError(e, context),
  );
  const out = h('div', { class: 'rs-out' });
  main.replaceChildren(h('section', { class: 'rs' }, heading, context, form(id, out), out));
}

function form(id, out) {
  const question = h('textarea', { id: 'rs-question', name: 'question', rows: 3, required: true, maxlength: 2000 });
  const tier = h('select', { id: 'rs-tier', name: 'tier' },
    h('option', { value: 'fast' }, 'Fast: a few search steps'),
    h('option', { value: 'deep' }, 'Deep: more steps, reads whole pages'));
  const stream = h('input', { id: 'rs-stream', name: 'stream', type: 'checkbox', checked: true });
  const go = h('button', { type: 'submit', id: 'rs-go' }, 'Research');
  const stop = h('button', { type: 'button', class: 'secondary', id: 'rs-stop', hidden: true }, 'Stop');
  let controller = null;
  stop.addEventListener('click', () => { if (controller) controller.abort(); });
  const f = h('form', { class: 'card rs-form', 'aria-label': 'Ask a research question' },
    field('Question', question, 'Answered from this collection only, with numbered citations; each sentence is then checked against its sources.'),
    h('div', { class: 'rs-row' },
      field('Tier', tier),
      h('div', { class: 'rs-check' }, stream, h('label', { for: 'rs-stream' }, 'Show progress as it streams'))),
    h('div', { class: 'row' }, go, stop));
  f.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const body = { question: question.value, tier: tier.value };
    controller = new AbortController();
    stop.hidden = false;
    busy(go, () => (stream.checked ? streamed(id, body, out, controller.signal) : whole(id, body, out, controller.signal)), out)
      .finally(() => { stop.hidden = true; controller = null; });
  });
  return f;
}

async function whole(id, body, out, signal) {
  const progress = h('p', { class: 'rs-waiting', role: 'status' }, 'Researching… (this waits for the whole answer)');
  out.replaceChildren(progress);
  try {
    const r = await api('POST', `/v1/collections/${encodeURIComponent(id)}/research`, body, { signal });
    out.replaceChildren(result(id, r));
  } catch (e) {
    if (e && e.name === 'AbortError') progress.textContent = 'Stopped: the research was cancelled.';
    else showError(e, out);
  }
}

// The research as NDJSON events: stages and queries in a live list, the draft as it
// grows, then the result in place of the draft.
async function streamed(id, body, out, signal) {
  const steps = h('ol', { class: 'rs-steps' });
  const draft = h('p', { class: 'rs-draft' });
  const draftBox = h('section', { class: 'rs-draft-box', hidden: true, 'aria-label': 'Draft answer' },
    h('h2', {}, 'Draft, as the model writes it'), draft);
  const progress = h('section', { class: 'rs-progress', 'aria-live': 'polite', 'aria-label': 'Progress' },
    h('h2', {}, 'Progress'), steps);
  out.replaceChildren(progress, draftBox);
  const step = (text, cls) => {
    const li = h('li', { class: cls || '' }, text);
    steps.append(li);
    return li;
  };
  let ended = false;
  try {
    const resp = await api('POST', `/v1/collections/${encodeURIComponent(id)}/research`, { ...body, stream: true }, { raw: true, signal });
    await readLines(resp, (e) => {
      switch (e.type) {
        case 'status':
          step(STAGES[e.stage] ? `${STAGES[e.stage]}${e.step ? ` (step ${e.step})` : ''}…` : `${e.stage}…`, 'rs-st-stage');
          break;
        case 'query':
          step(h('span', {}, 'Searched ', h('q', {}, e.query), ` (${e.mode}): ${plural(e.results, 'result')}`), 'rs-st-query');
          break;
        case 'sources':
          step(`${plural(e.sources.length, 'source')} gathered so far`, 'rs-st-sources');
          break;
        case 'delta':
          draftBox.hidden = false;
          draft.append(e.text);
          break;
        case 'answer':
          step('The answer is written; its citations are numbered in order of use', 'rs-st-answered');
          break;
        case 'claims':
          step(e.summary, 'rs-st-claims');
          break;
        case 'done':
          ended = true;
          step('Done', 'rs-st-done');
          draftBox.remove();
          out.append(result(id, e.result));
          break;
        case 'error':
          ended = true;
          step('Stopped with an error', 'rs-st-failed');
          out.prepend(h('div', {}));
          showError(new ApiError(STATUS[e.code] || 500, e.code, e.message, e), out.firstChild);
          break;
        default:
          break;
      }
    });
    if (!ended) {
      step('The connection closed before the research finished: try again', 'rs-st-failed');
    }
  } catch (e) {
    if (e && e.name === 'AbortError') {
      step('Stopped: the research was cancelled (the server stops the model call too)', 'rs-st-failed');
      return;
    }
    out.prepend(h('div', {}));
    showError(e, out.firstChild);
  }
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function pageHref(id, s) {
  return `#/collections/${id}/documents/${encodeURIComponent(s.document.id)}/pages/${s.page.n}`;
}

// The checked research: the answer with its claims marked, the sources, the claims
// one by one, quotations and warnings.
function result(id, r) {
  const sources = new Map(r.sources.map((s) => [s.n, s]));
  const v = r.verification;
  return h('div', { class: 'rs-result' },
    h('section', { class: 'rs-answer', 'aria-labelledby': 'rs-answer-h' },
      h('h2', { id: 'rs-answer-h' }, 'Answer'),
      h('p', { class: 'rs-summary' }, v.summary),
      h('p', { class: 'rs-answer-text' }, ...answerWithClaims(id, r.answer, v.claims, sources)),
      legend(),
      r.note ? h('p', { class: 'rs-note' }, h('strong', {}, 'Research note: '), r.note) : null,
      warnings(r.warnings)),
    sourceList(id, r.sources),
    claimList(id, v.claims, sources),
    quoteList(v),
    h('p', { class: 'rs-meta' },
      `${r.tier} tier · ${r.model} · ${plural(r.timings.steps, 'step')} · ${(r.timings.totalMs / 1000).toFixed(1)} s · `,
      `${r.usage.input_tokens} tokens in, ${r.usage.output_tokens} out`));
}

function warnings(list) {
  if (!list || !list.length) return null;
  return h('ul', { class: 'rs-warnings', 'aria-label': 'Warnings' }, ...list.map((w) => h('li', {}, h('strong', {}, 'Warning: '), w)));
}

function legend() {
  return h('details', { class: 'rs-legend' }, h('summary', {}, 'What the marks mean'),
    h('ul', {}, ...Object.entries(VERDICTS).map(([k, d]) =>
      h('li', {}, h('span', { class: `rs-verdict rs-${k}` }, `${d.mark} ${d.word}`), `: ${d.say}.`))));
}

// The answer's text with each claim (character offsets, code points) in a span marked
// by its verdict, and each `[n]` a link to its source's page.
function answerWithClaims(id, answer, claims, sources) {
  const chars = Array.from(answer);
  const sorted = [...claims].sort((a, b) => a.start - b.start);
  const parts = [];
  let at = 0;
  for (const c of sorted) {
    if (c.start < at) continue;
    if (c.start > at) parts.push(...cited(id, chars.slice(at, c.start).join(''), sources));
    const d = VERDICTS[c.status] || VERDICTS.unchecked;
    parts.push(h('span', { class: `rs-claim rs-${c.status}`, 'data-verdict': c.status },
      ...cited(id, chars.slice(c.start, c.end).join(''), sources),
      h('span', { class: `rs-verdict rs-${c.status}` }, ` ${d.mark} ${d.word}`)));
    at = c.end;
  }
  if (at < chars.length) parts.push(...cited(id, chars.slice(at).join(''), sources));
  return parts;
}

// Text with its `[n]` markers as links to the sources they name.
function cited(id, text, sources) {
  const parts = [];
  const re = /\[(\d+)\]/g;
  let last = 0;
  let m;
  while ((m = re.exec(text)) !== null) {
    if (m.index > last) parts.push(text.slice(last, m.index));
    const s = sources.get(Number(m[1]));
    parts.push(s ? citeLink(id, s) : m[0]);
    last = m.index + m[0].length;
  }
  if (last < text.length) parts.push(text.slice(last));
  return parts;
}

function citeLink(id, s) {
  return h('a', { class: 'rs-cite', href: pageHref(id, s), title: s.citation, 'aria-label': `source ${s.n}: ${s.citation}` }, `[${s.n}]`);
}

function sourceList(id, sources) {
  return h('section', { class: 'rs-sources', 'aria-labelledby': 'rs-sources-h' },
    h('h2', { id: 'rs-sources-h' }, 'Sources'),
    sources.length ? h('ol', { class: 'rs-source-list' }, ...sources.map((s) =>
      h('li', { id: `rs-source-${s.n}`, value: s.n, class: s.cited ? 'cited' : 'uncited' },
        h('span', { class: 'rs-n' }, `[${s.n}]`), ' ',
        h('a', { href: pageHref(id, s) }, `${s.document.title || 'Untitled document'}, page ${s.page.number || s.page.n + 1}`),
        s.heading ? h('span', { class: 'rs-heading' }, ` — ${s.heading}`) : null,
        h('span', { class: 'rs-citation' }, ' · cite as ', h('code', {}, s.citation)),
        s.cited ? null : h('span', { class: 'rs-unused' }, ' (found, not cited)'),
        ...(s.passages || []).slice(0, 2).map((p) => h('blockquote', { class: 'rs-passage' }, p)))))
      : h('p', {}, 'No sources were found.'));
}

function claimList(id, claims, sources) {
  return h('section', { class: 'rs-claims', 'aria-labelledby': 'rs-claims-h' },
    h('h2', { id: 'rs-claims-h' }, 'Claims'),
    claims.length ? h('ol', { class: 'rs-claim-list' }, ...claims.map((c) => {
      const d = VERDICTS[c.status] || VERDICTS.unchecked;
      const cites = c.sources.map((n) => sources.get(n)).filter(Boolean);
      const ev = c.evidenceOffset ? sources.get(c.evidenceOffset.source) : null;
      return h('li', { class: `rs-claim-item rs-${c.status}`, 'data-verdict': c.status },
        h('span', { class: `rs-verdict rs-${c.status}` }, `${d.mark} ${d.word}`), ' ',
        h('span', { class: 'rs-claim-text' }, c.text),
        cites.length ? h('span', { class: 'rs-claim-sources' }, ' — cites ', ...cites.flatMap((s, i) => (i ? [' ', citeLink(id, s)] : [citeLink(id, s)]))) : null,
        c.evidence ? h('blockquote', { class: 'rs-evidence' }, h('span', { class: 'rs-label' }, ev ? `Evidence from [${ev.n}]: ` : 'Evidence: '), c.evidence) : null);
    }))
      : h('p', {}, 'The answer makes no claims to check.'));
}

function quoteList(v) {
  if (!v.quotes.length && !v.removed.length) return null;
  const status = { exact: 'found as written', normalized_exact: 'found (spacing, case or punctuation differ)', unverified: 'not found on the cited page' };
  return h('section', { class: 'rs-quotes', 'aria-labelledby': 'rs-quotes-h' },
    h('h2', { id: 'rs-quotes-h' }, `Quotations: ${v.verified} of ${v.total} verified`),
    h('ul', {}, ...v.quotes.map((q) => h('li', { class: `rs-quote rs-q-${q.status}` },
      h('q', {}, q.quote), q.source ? ` [${q.source}]` : '', ` — ${status[q.status] || q.status}`))),
    v.removed.length ? h('p', {}, 'Removed markers that named no source: ', v.removed.map((x) => x.marker).join(', ')) : null);
}

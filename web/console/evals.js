// Evaluations (SOAT /api/v1/datasets and /api/v1/evals, issue 37): datasets of test
// cases, evals that bind an agent to a dataset and scorers, and runs this server
// executes on a chosen agent version (each test case a real generation, scored here),
// with each case's answer and verdict. A canary's promotion gate accepts only such a
// run on the canary version. Everything goes through core.js's api(); data only as
// text nodes.

import { api, h, route, nav, title, field, busy, notify, invalid, listAll, when } from './core.js';

nav('Evals', '/evals');
route('/evals', evalsPage, { title: 'Evals' });

const enc = encodeURIComponent;

async function evalsPage(params, main) {
  main.append(title('Evals'),
    h('p', { class: 'lead' }, 'A dataset holds test cases; an eval runs an agent version on every case and scores the answers. A rollout gated on an eval promotes only after a run on the canary version passed.'));
  const dataBox = h('section', { class: 'card', 'aria-labelledby': 'ev-ds-h' }, h('h2', { id: 'ev-ds-h' }, 'Datasets'), h('p', { class: 'muted' }, 'Loading…'));
  const evalBox = h('section', { class: 'card', 'aria-labelledby': 'ev-ev-h' }, h('h2', { id: 'ev-ev-h' }, 'Evals'));
  const results = h('section', { class: 'card', 'aria-labelledby': 'ev-res-h', hidden: true });
  main.append(dataBox, evalBox, results);
  const [datasets, evals, agents] = await Promise.all([listAll('/api/v1/datasets'), listAll('/api/v1/evals'), listAll('/api/v1/agents')]);
  const counts = new Map(await Promise.all(datasets.map(async (d) => [d.id, (await api('GET', `/api/v1/datasets/${enc(d.id)}/items?limit=1`)).total])));
  const draw = () => {
    dataBox.replaceChildren(h('h2', { id: 'ev-ds-h' }, 'Datasets'), datasetTable(datasets, counts),
      datasetForm((d) => { datasets.unshift(d); counts.set(d.id, 0); draw(); notify(`Dataset ${d.name} created.`); }),
      itemForm(datasets, (d) => { counts.set(d.id, (counts.get(d.id) || 0) + 1); draw(); notify(`Test case added to ${d.name}.`); }));
    evalBox.replaceChildren(h('h2', { id: 'ev-ev-h' }, 'Evals'), evalTable(evals, agents, datasets),
      runForm(evals, agents, (run, e) => showRun(results, run, e)),
      evalForm(agents, datasets, (e) => { evals.unshift(e); draw(); notify(`Eval ${e.name} created.`); }));
  };
  draw();
}

function datasetTable(datasets, counts) {
  if (!datasets.length) return h('p', {}, 'No datasets yet: create one below, then add test cases to it.');
  return h('table', { class: 'responsive' },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Test cases'), h('th', { scope: 'col' }, 'Created'))),
    h('tbody', {}, ...datasets.map((d) => h('tr', {},
      h('td', { 'data-label': 'Name' }, h('strong', {}, d.name), h('span', { class: 'muted' }, ` (${d.id})`)),
      h('td', { 'data-label': 'Test cases' }, String(counts.get(d.id) || 0)),
      h('td', { 'data-label': 'Created' }, when(d.created_at))))));
}

function datasetForm(done) {
  const name = h('input', { name: 'dataset_name', autocomplete: 'off', required: true });
  const msg = h('div', { class: 'msg' });
  const create = h('button', { type: 'submit' }, 'Create dataset');
  const form = h('form', { 'aria-label': 'New dataset' }, h('h3', {}, 'New dataset'), field('Dataset name', name), h('div', { class: 'row' }, create), msg);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    busy(create, async () => {
      if (!name.value.trim()) throw invalid('A dataset needs a name.');
      const d = await api('POST', '/api/v1/datasets', { name: name.value.trim() });
      form.reset();
      done(d);
    }, msg);
  });
  return form;
}

function options(records, label) {
  return records.map((r) => h('option', { value: r.id }, `${label(r)} (${r.id})`));
}

function itemForm(datasets, done) {
  if (!datasets.length) return null;
  const dataset = h('select', { name: 'item_dataset' }, ...options(datasets, (d) => d.name));
  const question = h('textarea', { name: 'item_question', rows: 2, required: true });
  const expected = h('textarea', { name: 'item_expected', rows: 2 });
  const msg = h('div', { class: 'msg' });
  const add = h('button', { type: 'submit' }, 'Add test case');
  const form = h('form', { 'aria-label': 'New test case' }, h('h3', {}, 'New test case'),
    field('Dataset', dataset), field('Question', question, 'Sent to the agent as the user\'s message.'),
    field('Expected answer (optional)', expected, 'What exact match and the judge compare the answer with.'),
    h('div', { class: 'row' }, add), msg);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    busy(add, async () => {
      if (!question.value.trim()) throw invalid('A test case needs a question.');
      const body = { input: [{ role: 'user', content: question.value.trim() }] };
      if (expected.value.trim()) body.expected_output = expected.value.trim();
      await api('POST', `/api/v1/datasets/${enc(dataset.value)}/items`, body);
      const d = datasets.find((x) => x.id === dataset.value);
      question.value = '';
      expected.value = '';
      done(d);
    }, msg);
  });
  return form;
}

function scorerText(s) {
  if (s.type === 'contains') return `contains “${s.value}”`;
  if (s.type === 'regex') return `matches /${s.pattern}/`;
  if (s.type === 'llm_judge') return `judge ≥ ${s.pass_threshold}`;
  return s.type.replace('_', ' ');
}

function evalTable(evals, agents, datasets) {
  if (!evals.length) return h('p', {}, 'No evals yet: create one below.');
  const name = (list, id) => (list.find((x) => x.id === id) || {}).name || id || '—';
  return h('table', { class: 'responsive' },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Eval'), h('th', { scope: 'col' }, 'Agent'), h('th', { scope: 'col' }, 'Dataset'),
      h('th', { scope: 'col' }, 'Scorers'), h('th', { scope: 'col' }, 'Pass rate needed'))),
    h('tbody', {}, ...evals.map((e) => h('tr', {},
      h('td', { 'data-label': 'Eval' }, h('strong', {}, e.name), h('span', { class: 'muted' }, ` (${e.id})`)),
      h('td', { 'data-label': 'Agent' }, name(agents, e.agent_id)),
      h('td', { 'data-label': 'Dataset' }, name(datasets, e.dataset_id)),
      h('td', { 'data-label': 'Scorers' }, (e.scorers || []).map(scorerText).join(', ') || '—'),
      h('td', { 'data-label': 'Pass rate needed' }, e.pass_threshold === null || e.pass_threshold === undefined ? 'none' : `${Math.round(e.pass_threshold * 100)}%`)))));
}

// Starts a run and waits for it: every test case a generation on the chosen version.
function runForm(evals, agents, shown) {
  const runnable = evals.filter((e) => e.dataset_id && (e.scorers || []).length);
  if (!runnable.length) return null;
  const which = h('select', { name: 'run_eval' }, ...options(runnable, (e) => e.name));
  const live = () => (agents.find((a) => a.id === (runnable.find((e) => e.id === which.value) || {}).agent_id) || {}).version || 1;
  const version = h('input', { name: 'run_version', type: 'number', min: 1, step: 1, value: String(live()) });
  which.addEventListener('change', () => { version.value = String(live()); });
  const msg = h('div', { class: 'msg' });
  const start = h('button', { type: 'submit' }, 'Run the eval');
  const form = h('form', { 'aria-label': 'Run an eval' }, h('h3', {}, 'Run an eval'),
    h('div', { class: 'grid3' }, field('Eval to run', which),
      field('Agent version', version, 'To clear a rollout\'s promotion gate, run its canary version.')),
    h('div', { class: 'row' }, start), msg);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    busy(start, async () => {
      const v = Number(version.value);
      if (!Number.isInteger(v) || v < 1) throw invalid('The version is a whole number from 1.');
      const e = runnable.find((x) => x.id === which.value);
      const r = await api('POST', `/api/v1/evals/${enc(e.id)}/runs`, { wait: true, agent_version: v });
      notify(`Run of ${e.name} on v${r.agent_version}: ${verdict(r)}.`);
      await shown(r, e);
    }, msg);
  });
  return form;
}

function verdict(r) {
  const rate = r.aggregate_scores && r.aggregate_scores.pass_rate;
  const pct = rate === null || rate === undefined ? 'nothing scorable' : `${Math.round(rate * 100)}% of cases passed`;
  if (r.status !== 'completed') return `${r.status}, ${pct}`;
  return `${r.passed === true ? 'passed' : r.passed === false ? 'failed' : 'scored (no threshold)'}, ${pct}`;
}

async function showRun(box, run, e) {
  const results = await listAll(`/api/v1/evals/${enc(e.id)}/runs/${enc(run.id)}/results`);
  const text = (input) => (input || []).map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content))).join(' / ');
  box.hidden = false;
  box.replaceChildren(h('h2', { id: 'ev-res-h' }, `Run ${run.id} of ${e.name}`),
    h('p', { class: 'ev-verdict' }, `Version ${run.agent_version}: ${verdict(run)} (${run.completed_count} scored, ${run.errored_count} errored).`),
    h('table', { class: 'responsive' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Question'), h('th', { scope: 'col' }, 'Answer'), h('th', { scope: 'col' }, 'Scores'), h('th', { scope: 'col' }, 'Verdict'))),
      h('tbody', {}, ...results.map((r) => h('tr', {},
        h('td', { 'data-label': 'Question' }, text(r.input)),
        h('td', { 'data-label': 'Answer' }, r.output || '—'),
        h('td', { 'data-label': 'Scores' }, r.error ? r.error : (r.scores || []).map((s) => `${s.scorer} ${s.score}${s.reasoning ? ` (${s.reasoning})` : ''}`).join('; ')),
        h('td', { 'data-label': 'Verdict' }, r.error ? 'errored' : r.passed ? 'passed' : 'failed'))))));
}

function evalForm(agents, datasets, done) {
  if (!agents.length || !datasets.length) return h('p', { class: 'muted' }, 'An eval needs an agent and a dataset: make them first.');
  const name = h('input', { name: 'eval_name', autocomplete: 'off', required: true });
  const agent = h('select', { name: 'eval_agent' }, ...options(agents, (a) => a.name || a.id));
  const dataset = h('select', { name: 'eval_dataset' }, ...options(datasets, (d) => d.name));
  const contains = h('input', { name: 'eval_contains', autocomplete: 'off' });
  const exact = h('select', { name: 'eval_exact' }, h('option', { value: 'no' }, 'No'), h('option', { value: 'yes' }, 'Yes'));
  const threshold = h('input', { name: 'eval_threshold', type: 'number', min: 0, max: 100, step: 1, value: '100' });
  const msg = h('div', { class: 'msg' });
  const create = h('button', { type: 'submit' }, 'Create eval');
  const form = h('form', { 'aria-label': 'New eval' }, h('h3', {}, 'New eval'),
    field('Eval name', name), h('div', { class: 'grid3' }, field('Agent', agent), field('Dataset', dataset)),
    field('Answer contains (optional)', contains, 'A case passes when the answer holds this text (any case).'),
    field('Exact match with the expected answer', exact),
    field('Pass rate needed (%)', threshold, 'A run passes when at least this share of its cases pass.'),
    h('div', { class: 'row' }, create), msg);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    busy(create, async () => {
      if (!name.value.trim()) throw invalid('An eval needs a name.');
      const scorers = [];
      if (exact.value === 'yes') scorers.push({ type: 'exact_match' });
      if (contains.value.trim()) scorers.push({ type: 'contains', value: contains.value.trim() });
      if (!scorers.length) throw invalid('Choose at least one way to score: exact match, or a text the answer contains.');
      const pct = Number(threshold.value);
      if (!(pct >= 0 && pct <= 100)) throw invalid('The pass rate is a percentage from 0 to 100.');
      const ev = await api('POST', '/api/v1/evals', { name: name.value.trim(), agent_id: agent.value, dataset_id: dataset.value, scorers, pass_threshold: pct / 100 });
      form.reset();
      done(ev);
    }, msg);
  });
  return form;
}

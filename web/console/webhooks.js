// Webhooks (SOAT /api/v1/webhooks, /api/v1/webhook-deliveries): the list and a new
// webhook (name, URL, events); its signing secret shown once, when it is made or
// rotated, with a copy button; one webhook's settings edited (URL, events, active),
// its secret rotated, the webhook deleted; its deliveries (event, status, attempts,
// the receiver's response code, times), refreshed while any is pending, each one
// redelivered on request. Everything goes through core.js's api(); data only as text
// nodes.

import { api, h, route, nav, title, field, href, go, busy, notify, ApiError, listAll, when, invalid, flash, showFlash } from './core.js';

document.head.append(h('link', { rel: 'stylesheet', href: new URL('./agents.css', import.meta.url).href }));
document.head.append(h('link', { rel: 'stylesheet', href: new URL('./webhooks.css', import.meta.url).href }));

nav('Webhooks', '/webhooks');

route('/webhooks', listPage, { title: 'Webhooks' });
route('/webhooks/:id', (params, main) => hookPage(params.id, main), { title: 'Webhook' });

const enc = encodeURIComponent;

// The events this server raises (services/src/agents/webhooks/events.rs); a pattern
// such as `agents.generation.*` is typed in "Other events".
const EVENTS = [
  ['agents.generation.started', 'an agent\'s generation started'],
  ['agents.generation.requires_action', 'it paused on a client tool'],
  ['agents.generation.completed', 'it completed'],
  ['agents.generation.failed', 'it failed'],
  ['sessions.generation.started', 'a session\'s generation started'],
  ['sessions.generation.requires_action', 'it paused on a client tool'],
  ['sessions.generation.completed', 'it completed'],
  ['sessions.generation.failed', 'it failed'],
];

// How often the deliveries are read again while one is pending.
const POLL_MS = 1500;

// A secret to be shown only now (at create or rotate): for the next page of this module.
let revealed = null;

// The secret, once: in words, with a copy button; it is not kept anywhere.
function secretBox(secret, what) {
  const code = h('code', { class: 'secret', id: 'wh-secret' }, secret);
  const copy = h('button', { type: 'button', class: 'secondary' }, 'Copy secret');
  copy.addEventListener('click', async () => {
    try { await navigator.clipboard.writeText(secret); notify('Secret copied.'); } catch { notify('Select the secret and copy it.'); }
  });
  const box = h('div', { class: 'ok wh-reveal', role: 'status' },
    h('p', {}, `${what} Your receiver checks each delivery's signature with it. It is not shown again, so store it now:`),
    h('p', {}, code), h('div', { class: 'row' }, copy));
  return box;
}

// ---- The event picker (shared by create and edit) ----

function eventPicker(chosen) {
  const known = new Set(EVENTS.map(([e]) => e));
  const picked = new Set(chosen || []);
  const boxes = EVENTS.map(([e, what]) => {
    const box = h('input', { type: 'checkbox', id: `wh-ev-${e.replace(/\./g, '-')}`, name: 'event', value: e, checked: picked.has(e) });
    return h('div', { class: 'ag-check' }, box, h('label', { for: box.id }, h('code', {}, e), ` — ${what}`));
  });
  const other = h('input', { name: 'other_events', autocomplete: 'off', placeholder: 'agents.generation.*',
    value: [...picked].filter((e) => !known.has(e)).join(', ') });
  const set = h('fieldset', { class: 'ag-fieldset' }, h('legend', {}, 'Events'), ...boxes,
    field('Other events (optional)', other, 'Names or patterns, comma-separated: * matches any part, e.g. agents.generation.*'));
  const read = () => {
    const out = [...set.querySelectorAll('input[type=checkbox]:checked')].map((b) => b.value);
    for (const e of other.value.split(',').map((x) => x.trim()).filter(Boolean)) if (!out.includes(e)) out.push(e);
    return out;
  };
  return { set, read };
}

// ---- The list and a new webhook ----

async function listPage(params, main, query) {
  showFlash();
  const projectId = query.get('project_id') || '';
  main.append(title('Webhooks'),
    h('p', { class: 'lead' }, 'A webhook posts your project\'s events to a URL as they happen, signed with its secret; each post is a delivery, retried until your receiver answers 2xx.'));
  const listBox = h('section', { class: 'card', 'aria-labelledby': 'wh-list-h' }, h('h2', { id: 'wh-list-h' }, 'Your webhooks'), h('p', { class: 'muted' }, 'Loading…'));
  const made = h('div');
  const projects = await projectsOf();
  const picker = projects.length > 1 ? projectPicker(projects, projectId) : null;
  const draw = async () => drawList(listBox, await listAll(`/api/v1/webhooks${projectId ? `?project_id=${enc(projectId)}` : ''}`));
  main.append(...(picker ? [picker] : []), made, listBox, createForm(made, draw, projectId));
  await draw();
}

// The projects the key sees (none when it may not list them).
async function projectsOf() {
  try { return await listAll('/api/v1/projects'); } catch { return []; }
}

// Webhooks belong to a project: which one's the page lists and makes.
function projectPicker(projects, projectId) {
  const sel = h('select', { name: 'project_id' }, h('option', { value: '' }, 'The default project'),
    ...projects.map((p) => h('option', { value: p.id, selected: p.id === projectId }, p.name ? `${p.name} (${p.id})` : p.id)));
  const f = h('form', { class: 'row wh-project', 'aria-label': 'Choose the project' }, field('Project', sel),
    h('button', { type: 'submit', class: 'secondary' }, 'Show'));
  f.addEventListener('submit', (ev) => {
    ev.preventDefault();
    go(`/webhooks${sel.value ? `?project_id=${enc(sel.value)}` : ''}`);
  });
  return f;
}

function drawList(listBox, hooks) {
  listBox.replaceChildren(h('h2', { id: 'wh-list-h' }, `Your webhooks (${hooks.length})`), hooks.length
    ? h('table', { class: 'responsive wh-table' },
      h('thead', {}, h('tr', {}, ...['Name', 'URL', 'Events', 'Active', 'Created'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, ...hooks.map((w) => h('tr', {},
        h('td', { 'data-label': 'Name' }, h('a', { href: href(`/webhooks/${w.id}`) }, w.name || w.id)),
        h('td', { 'data-label': 'URL' }, h('code', {}, w.url)),
        h('td', { 'data-label': 'Events' }, w.events.join(', ')),
        h('td', { 'data-label': 'Active' }, w.active ? 'yes' : 'no (paused)'),
        h('td', { 'data-label': 'Created' }, when(w.created_at))))))
    : h('p', { class: 'muted' }, 'No webhooks yet: create one below.'));
}

function createForm(made, created, projectId) {
  const name = h('input', { name: 'webhook_name', autocomplete: 'off', required: true });
  const url = h('input', { name: 'webhook_url', type: 'url', autocomplete: 'off', required: true, placeholder: 'https://example.org/hooks/quarry' });
  const desc = h('input', { name: 'webhook_description', autocomplete: 'off' });
  const events = eventPicker(['agents.generation.completed', 'agents.generation.failed']);
  const msg = h('div', { class: 'msg' });
  const create = h('button', { type: 'submit' }, 'Create webhook');
  const f = h('form', { class: 'card', 'aria-labelledby': 'wh-new-h' },
    h('h2', { id: 'wh-new-h' }, 'New webhook'),
    field('Name', name), field('URL', url, 'Where each event is posted (JSON, signed).'),
    field('Description (optional)', desc), events.set,
    h('div', { class: 'row' }, create), msg);
  f.addEventListener('submit', (ev) => {
    ev.preventDefault();
    busy(create, async () => {
      const body = { name: name.value.trim(), url: url.value.trim(), events: events.read() };
      if (!body.name || !body.url) throw invalid('A webhook needs a name and a URL.');
      if (!body.events.length) throw invalid('Choose at least one event to send.');
      if (desc.value.trim()) body.description = desc.value.trim();
      if (projectId) body.project_id = projectId;
      const w = await api('POST', '/api/v1/webhooks', body);
      const open = h('a', { class: 'button', href: href(`/webhooks/${w.id}`) }, `I have stored it: open ${w.name}`);
      made.replaceChildren(h('section', { class: 'card', 'aria-labelledby': 'wh-made-h' },
        h('h2', { id: 'wh-made-h', tabindex: '-1' }, `Webhook ${w.name} created`),
        secretBox(w.secret, 'This is its signing secret.'), h('p', {}, open)));
      name.value = ''; url.value = ''; desc.value = '';
      made.querySelector('h2').focus();
      await created();
    }, msg);
  });
  return f;
}

// ---- One webhook ----

async function hookPage(id, main) {
  showFlash();
  const heading = title('Webhook');
  main.append(h('p', { class: 'crumbs' }, h('a', { href: href('/webhooks') }, '← All webhooks')), heading);
  const w = await api('GET', `/api/v1/webhooks/${enc(id)}`);
  heading.textContent = `Webhook: ${w.name || w.id}`;
  document.title = `${w.name || w.id} · Quarry console`;
  const secretArea = h('div');
  if (revealed && revealed.id === w.id) secretArea.append(secretBox(revealed.secret, 'The new signing secret; the old one no longer signs.'));
  revealed = null;
  const deliveries = h('section', { class: 'card', 'aria-labelledby': 'wh-dl-h' }, h('h2', { id: 'wh-dl-h' }, 'Deliveries'));
  main.append(h('dl', { class: 'pairs card' },
    h('dt', {}, 'URL'), h('dd', {}, h('code', {}, w.url)),
    h('dt', {}, 'Events'), h('dd', {}, w.events.join(', ')),
    h('dt', {}, 'Active'), h('dd', {}, w.active ? 'yes: events are sent' : 'no: paused, nothing is sent'),
    h('dt', {}, 'Webhook id'), h('dd', {}, h('code', {}, w.id)),
    h('dt', {}, 'Created'), h('dd', {}, when(w.created_at)),
    h('dt', {}, 'Updated'), h('dd', {}, when(w.updated_at))),
  secretArea, deliveries, editForm(w), secretSection(w), deleteSection(w));
  await drawDeliveries(w, deliveries, main);
}

function editForm(w) {
  const name = h('input', { name: 'webhook_name', autocomplete: 'off', required: true, value: w.name || '' });
  const url = h('input', { name: 'webhook_url', type: 'url', autocomplete: 'off', required: true, value: w.url });
  const desc = h('input', { name: 'webhook_description', autocomplete: 'off', value: w.description || '' });
  const active = h('input', { type: 'checkbox', id: 'wh-active', name: 'active', checked: w.active });
  const events = eventPicker(w.events);
  const msg = h('div', { class: 'msg' });
  const save = h('button', { type: 'submit' }, 'Save changes');
  const f = h('form', { class: 'card', 'aria-labelledby': 'wh-edit-h' },
    h('h2', { id: 'wh-edit-h' }, 'Settings'),
    field('Name', name), field('URL', url), field('Description (optional)', desc), events.set,
    h('div', { class: 'ag-check' }, active, h('label', { for: 'wh-active' }, 'Active: send events (off pauses the webhook)')),
    h('div', { class: 'row' }, save), msg);
  f.addEventListener('submit', (ev) => {
    ev.preventDefault();
    busy(save, async () => {
      const body = { name: name.value.trim(), url: url.value.trim(), events: events.read(), active: active.checked };
      if (desc.value.trim() || w.description) body.description = desc.value.trim();
      if (!body.name || !body.url) throw invalid('A webhook needs a name and a URL.');
      if (!body.events.length) throw invalid('Choose at least one event to send.');
      await api('PUT', `/api/v1/webhooks/${enc(w.id)}`, body);
      flash('Webhook saved.');
      go(`/webhooks/${w.id}`);
    }, msg);
  });
  return f;
}

function secretSection(w) {
  const msg = h('div', { class: 'msg' });
  const rotate = h('button', { type: 'button', class: 'secondary' }, 'Rotate the secret');
  rotate.addEventListener('click', () => {
    if (!window.confirm('Make a new signing secret? Deliveries are signed with the new one from now on, and your receiver must be given it.')) return;
    busy(rotate, async () => {
      const r = await api('POST', `/api/v1/webhooks/${enc(w.id)}/rotate-secret`);
      revealed = { id: w.id, secret: r.secret };
      flash('Secret rotated.');
      go(`/webhooks/${w.id}`);
    }, msg);
  });
  return h('section', { class: 'card', 'aria-labelledby': 'wh-sec-h' }, h('h2', { id: 'wh-sec-h' }, 'Signing secret'),
    h('p', { class: 'muted' }, 'The secret is shown only when it is made. If it is lost or leaked, rotate it: a new one is shown once.'),
    h('div', { class: 'row' }, rotate), msg);
}

function deleteSection(w) {
  const msg = h('div', { class: 'msg' });
  const del = h('button', { type: 'button', class: 'danger' }, 'Delete this webhook');
  del.addEventListener('click', () => {
    if (!window.confirm(`Delete the webhook ${w.name || w.id} and its deliveries? Nothing more is sent to it.`)) return;
    busy(del, async () => {
      await api('DELETE', `/api/v1/webhooks/${enc(w.id)}`);
      flash(`Webhook ${w.name || w.id} deleted.`);
      go('/webhooks');
    }, msg);
  });
  return h('section', { class: 'card', 'aria-labelledby': 'wh-del-h' }, h('h2', { id: 'wh-del-h' }, 'Delete'), h('div', { class: 'row' }, del), msg);
}

// ---- Deliveries ----

function statusText(d) {
  if (d.status === 'success') return 'delivered';
  if (d.status === 'pending') return d.attempts ? `pending: retried ${when(d.next_attempt_at)}` : 'pending';
  return d.status;
}

// The deliveries, newest first; read again every POLL_MS while one is pending and the
// page is still shown.
// A table that has not changed is left as it is (focus and all); one timer a page.
async function drawDeliveries(w, box, main) {
  const list = await listAll(`/api/v1/webhook-deliveries?webhook_id=${enc(w.id)}`);
  if (!main.isConnected) return;
  clearTimeout(box.pollTimer);
  const pending = list.some((d) => d.status === 'pending');
  if (pending) box.pollTimer = setTimeout(() => { if (main.isConnected) drawDeliveries(w, box, main).catch(() => {}); }, POLL_MS);
  const seen = JSON.stringify(list.map((d) => [d.id, d.status, d.attempts, d.status_code, d.last_attempt_at, d.next_attempt_at]));
  if (box.seen === seen) return;
  box.seen = seen;
  const msg = h('div', { class: 'msg' });
  const refresh = h('button', { type: 'button', class: 'secondary' }, 'Refresh');
  refresh.addEventListener('click', () => busy(refresh, () => drawDeliveries(w, box, main), msg));
  box.replaceChildren(h('h2', { id: 'wh-dl-h' }, `Deliveries (${list.length})`),
    h('div', { class: 'row' }, refresh, h('span', { class: 'muted' }, 'Each event sent to this webhook, newest first.')), msg,
    list.length ? h('table', { class: 'responsive wh-deliveries' },
      h('thead', {}, h('tr', {}, ...['Event', 'Status', 'Attempts', 'Response', 'Created', 'Last attempt', ''].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, ...list.map((d) => deliveryRow(w, d, box, main, msg))))
      : h('p', { class: 'muted' }, 'No deliveries yet: they appear when one of its events happens.'));
}

function deliveryRow(w, d, box, main, msg) {
  const again = h('button', { type: 'button', class: 'secondary', 'aria-label': `Redeliver ${d.event_type} (${d.id})` }, 'Redeliver');
  again.addEventListener('click', () => busy(again, async () => {
    const r = await api('POST', `/api/v1/webhook-deliveries/${enc(d.id)}/redeliver`);
    notify(`Redelivery queued as ${r.id}.`);
    await drawDeliveries(w, box, main);
  }, msg));
  return h('tr', { class: `wh-${d.status}` },
    h('td', { 'data-label': 'Event' }, h('code', {}, d.event_type),
      h('details', {}, h('summary', {}, 'Payload'), h('pre', {}, JSON.stringify(d.payload, null, 2)))),
    h('td', { 'data-label': 'Status' }, h('span', { class: `badge wh-status wh-st-${d.status}` }, statusText(d))),
    h('td', { 'data-label': 'Attempts' }, String(d.attempts)),
    h('td', { 'data-label': 'Response' }, d.status_code != null ? `HTTP ${d.status_code}` : '—',
      d.response_body ? h('details', {}, h('summary', {}, 'Body'), h('pre', {}, d.response_body)) : null),
    h('td', { 'data-label': 'Created' }, when(d.created_at)),
    h('td', { 'data-label': 'Last attempt' }, when(d.last_attempt_at)),
    h('td', { 'data-label': 'Redeliver' }, again));
}

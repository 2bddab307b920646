// Actors (SOAT /api/v1/actors, issue 36): the project's end users of its agents, each
// with how many sessions name it and when the last one began; a form that creates one
// (the same external id twice is the same actor), and a delete per actor (refused,
// and said so, once the actor has spoken in a conversation). Everything goes through
// core.js's api(); data only as text nodes.

import { api, h, route, nav, title, field, busy, notify, ApiError, listAll, when } from './core.js';

nav('Actors', '/actors');
route('/actors', actorsPage, { title: 'Actors' });

const enc = encodeURIComponent;

// Each actor's sessions: how many, and when the newest began.
function sessionsByActor(sessions) {
  const by = new Map();
  for (const s of sessions) {
    if (!s.actor_id) continue;
    const seen = by.get(s.actor_id) || { count: 0, last: null };
    seen.count += 1;
    if (!seen.last || s.created_at > seen.last) seen.last = s.created_at;
    by.set(s.actor_id, seen);
  }
  return by;
}

async function actorsPage(params, main) {
  main.append(title('Actors'),
    h('p', { class: 'lead' }, 'Actors are the people your agents talk to. A session names its actor; a rollout keeps each actor on one version, and an agent can allow each actor one open session.'));
  const listBox = h('section', { class: 'card', 'aria-labelledby': 'ac-list-h' }, h('h2', { id: 'ac-list-h' }, 'Your actors'), h('p', { class: 'muted' }, 'Loading…'));
  const formBox = h('section', { class: 'card', 'aria-labelledby': 'ac-new-h' });
  main.append(listBox, formBox);
  const [actors, sessions] = await Promise.all([listAll('/api/v1/actors'), listAll('/api/v1/sessions')]);
  const draw = () => listBox.replaceChildren(h('h2', { id: 'ac-list-h' }, 'Your actors'), actorTable(actors, sessionsByActor(sessions), draw));
  draw();
  formBox.append(h('h2', { id: 'ac-new-h' }, 'New actor'), actorForm((a, created) => {
    if (created) actors.push(a);
    draw();
    notify(created ? `Actor ${a.name} created.` : `${a.name} already has that external id: nothing new was made.`);
  }));
}

function actorTable(actors, sessions, redraw) {
  if (!actors.length) return h('p', {}, 'No actors yet: create one below, or let your integration create them.');
  return h('table', { class: 'responsive' },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'External id'), h('th', { scope: 'col' }, 'Sessions'),
      h('th', { scope: 'col' }, 'Last session'), h('th', { scope: 'col' }, 'Created'), h('th', { scope: 'col' }, 'Delete'))),
    h('tbody', {}, ...actors.map((a) => {
      const s = sessions.get(a.id) || { count: 0, last: null };
      const del = h('button', { type: 'button', class: 'secondary' }, `Delete ${a.name}`);
      const msg = h('div', { class: 'msg' });
      del.addEventListener('click', () => busy(del, async () => {
        if (!window.confirm(`Delete the actor ${a.name}? Its sessions stay, without an actor.`)) return;
        try {
          await api('DELETE', `/api/v1/actors/${enc(a.id)}`);
        } catch (e) {
          if (e instanceof ApiError && e.code === 'ACTOR_HAS_MESSAGES') {
            throw new ApiError(0, 'actor_has_messages', `${a.name} has spoken in a conversation, so the history still names them: the actor cannot be deleted.`, null);
          }
          throw e;
        }
        actors.splice(actors.indexOf(a), 1);
        redraw();
        notify(`Actor ${a.name} deleted.`);
      }, msg));
      return h('tr', {},
        h('td', { 'data-label': 'Name' }, h('strong', {}, a.name), h('span', { class: 'muted' }, ` (${a.id})`)),
        h('td', { 'data-label': 'External id' }, a.external_id || '—'),
        h('td', { 'data-label': 'Sessions' }, String(s.count)),
        h('td', { 'data-label': 'Last session' }, when(s.last)),
        h('td', { 'data-label': 'Created' }, when(a.created_at)),
        h('td', { 'data-label': 'Delete' }, del, msg));
    })));
}

// The create form; `done(actor, created)`: created is false when the external id
// named an existing actor (the API answers it, 200).
function actorForm(done) {
  const name = h('input', { name: 'actor_name', autocomplete: 'off', required: true });
  const external = h('input', { name: 'actor_external_id', autocomplete: 'off', placeholder: '+15551234567' });
  const instructions = h('textarea', { name: 'actor_instructions', rows: 3 });
  const msg = h('div', { class: 'msg' });
  const create = h('button', { type: 'submit' }, 'Create actor');
  const form = h('form', { 'aria-label': 'New actor' },
    field('Name', name),
    field('External id (optional)', external, 'Their id elsewhere, such as a phone number: one actor per external id in a project.'),
    field('Instructions (optional)', instructions, 'How agents should address this person.'),
    h('div', { class: 'row' }, create), msg);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    busy(create, async () => {
      const body = { name: name.value.trim() };
      if (!body.name) throw new ApiError(0, 'invalid_input', 'An actor needs a name.', null);
      if (external.value.trim()) body.external_id = external.value.trim();
      if (instructions.value.trim()) body.instructions = instructions.value.trim();
      // 201: made now; 200: the actor that already holds the external id.
      const resp = await api('POST', '/api/v1/actors', body, { raw: true });
      const a = await resp.json();
      form.reset();
      done(a, resp.status === 201);
    }, msg);
  });
  return form;
}

// Sessions (SOAT /api/v1/sessions): the list of the sessions a key sees (filtered by
// agent and status), a new session for an agent, and one session as a chat: its
// conversation's messages as a transcript, a box that adds a user message and runs
// the session's generation in the background, whose events (text, tool calls, a
// pause) are read from the generation's SSE stream as they happen; a paused client
// tool is answered through the session's tool-outputs; close, reopen, delete, and a
// fork from any message. Everything goes through core.js's api(); data only as text
// nodes. The chat's look is the playground's (agents.css's pg-* classes).

import { api, h, route, nav, title, field, href, go, showError, busy, notify, readSSE, ApiError, listAll, when, invalid, flash, showFlash } from './core.js';

document.head.append(h('link', { rel: 'stylesheet', href: new URL('./agents.css', import.meta.url).href }));
document.head.append(h('link', { rel: 'stylesheet', href: new URL('./sessions.css', import.meta.url).href }));

nav('Sessions', '/sessions');

route('/sessions', listPage, { title: 'Sessions' });
route('/sessions/new', newPage, { title: 'New session' });
route('/sessions/:id', (params, main) => sessionPage(params.id, main), { title: 'Session' });

const enc = encodeURIComponent;
const STATUSES = ['open', 'closed', 'expired'];

// The projects the key sees (none when it may not list them: a project key's own
// project is then the only one, and no choice is offered).
async function projectsOf() {
  try { return await listAll('/api/v1/projects'); } catch { return []; }
}

function statusBadge(status) {
  return h('span', { class: `badge se-status se-${STATUSES.includes(status) ? status : 'other'}` }, status);
}

function agentName(agents, id) {
  const a = agents.find((x) => x.id === id);
  return a ? (a.name || a.id) : id;
}

// ---- The list ----

async function listPage(params, main, query) {
  showFlash();
  const projectId = query.get('project_id') || '';
  const agentId = query.get('agent_id') || '';
  const status = query.get('status') || '';
  const newQs = new URLSearchParams();
  if (projectId) newQs.set('project_id', projectId);
  if (agentId) newQs.set('agent_id', agentId);
  main.append(title('Sessions'),
    h('p', { class: 'lead' }, 'A session is a chat with one agent: its messages are kept, and each reply is a generation run over them.'),
    h('p', {}, h('a', { class: 'button', href: href(`/sessions/new${newQs.toString() ? `?${newQs}` : ''}`) }, 'New session')));
  const box = h('section', { class: 'card', 'aria-labelledby': 'se-list-h' }, h('h2', { id: 'se-list-h' }, 'Sessions'), h('p', { class: 'muted' }, 'Loading…'));
  main.append(box);
  const inProject = projectId ? `?project_id=${enc(projectId)}` : '';
  const [projects, agents] = await Promise.all([projectsOf(), listAll(`/api/v1/agents${inProject}`)]);
  const qs = new URLSearchParams();
  if (projectId) qs.set('project_id', projectId);
  if (agentId) qs.set('agent_id', agentId);
  if (status) qs.set('status', status);
  const sessions = await listAll(`/api/v1/sessions${qs.toString() ? `?${qs}` : ''}`);

  const agentSel = h('select', { name: 'agent_id' }, h('option', { value: '' }, 'Every agent'),
    ...agents.map((a) => h('option', { value: a.id, selected: a.id === agentId }, a.name || a.id)));
  const statusSel = h('select', { name: 'status' }, h('option', { value: '' }, 'Any status'),
    ...STATUSES.map((s) => h('option', { value: s, selected: s === status }, s)));
  const projectSel = h('select', { name: 'project_id' }, h('option', { value: '' }, 'The default project'),
    ...projects.map((p) => h('option', { value: p.id, selected: p.id === projectId }, p.name ? `${p.name} (${p.id})` : p.id)));
  // Another project's agents are not this one's: choosing a project clears the agent.
  projectSel.addEventListener('change', () => { agentSel.value = ''; });
  const filter = h('form', { class: 'se-filter', 'aria-label': 'Filter the sessions' },
    h('div', { class: 'grid3' }, projects.length > 1 ? field('Project', projectSel) : null, field('Agent', agentSel), field('Status', statusSel)),
    h('div', { class: 'row' }, h('button', { type: 'submit', class: 'secondary' }, 'Filter')));
  filter.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams();
    if (projectSel.value) q.set('project_id', projectSel.value);
    if (agentSel.value) q.set('agent_id', agentSel.value);
    if (statusSel.value) q.set('status', statusSel.value);
    go(`/sessions${q.toString() ? `?${q}` : ''}`);
  });

  const newest = [...sessions].reverse();
  box.replaceChildren(h('h2', { id: 'se-list-h' }, `Sessions (${sessions.length})`), filter, newest.length
    ? h('table', { class: 'responsive se-table' },
      h('thead', {}, h('tr', {}, ...['Session', 'Agent', 'Status', 'Created', 'Last activity'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, ...newest.map((s) => h('tr', {},
        h('td', { 'data-label': 'Session' }, h('a', { href: href(`/sessions/${s.id}`) }, s.name || s.id),
          s.forked_from_session_id ? h('span', { class: 'muted' }, ' (fork)') : null),
        h('td', { 'data-label': 'Agent' }, h('a', { href: href(`/agents/${s.agent_id}`) }, agentName(agents, s.agent_id))),
        h('td', { 'data-label': 'Status' }, statusBadge(s.status), s.generating_at ? h('span', { class: 'muted' }, ' generating') : null),
        h('td', { 'data-label': 'Created' }, when(s.created_at)),
        h('td', { 'data-label': 'Last activity' }, when(s.last_activity_at))))))
    : h('p', {}, agentId || status ? 'No session matches this filter.' : 'No sessions yet. ',
      agentId || status ? null : h('a', { href: href('/sessions/new') }, 'Start one'), agentId || status ? null : '.'));
}

// ---- A new session ----

async function newPage(params, main, query) {
  const want = query.get('agent_id') || '';
  const projectId = query.get('project_id') || '';
  main.append(h('p', { class: 'crumbs' }, h('a', { href: href('/sessions') }, '← All sessions')), title('New session'));
  const agents = await listAll(`/api/v1/agents${projectId ? `?project_id=${enc(projectId)}` : ''}`);
  if (!agents.length) {
    main.append(h('p', {}, 'A session talks to an agent, and there is none yet. ', h('a', { href: href('/agents/new') }, 'Create an agent'), ' first.'));
    return;
  }
  const agent = h('select', { name: 'agent_id', required: true },
    ...agents.map((a) => h('option', { value: a.id, selected: a.id === want }, a.name || a.id)));
  if (want && agents.some((a) => a.id === want)) agent.value = want;
  const name = h('input', { name: 'session_name', autocomplete: 'off', placeholder: 'e.g. Support chat with Ana' });
  const ttl = h('input', { name: 'inactivity_ttl_seconds', type: 'number', min: 0, step: 1, value: '' });
  const msg = h('div', { class: 'msg' });
  const create = h('button', { type: 'submit' }, 'Create session');
  const f = h('form', { class: 'card', 'aria-label': 'New session' },
    field('Agent', agent),
    field('Session name (optional)', name),
    field('Expire after idle seconds (optional)', ttl, 'Empty or 0: the session never expires.'),
    h('div', { class: 'row' }, create), msg);
  f.addEventListener('submit', (ev) => {
    ev.preventDefault();
    busy(create, async () => {
      const body = { agent_id: agent.value };
      if (!body.agent_id) throw invalid('Choose the agent the session talks to.');
      if (name.value.trim()) body.name = name.value.trim();
      if (ttl.value.trim()) body.inactivity_ttl_seconds = Number(ttl.value);
      const s = await api('POST', '/api/v1/sessions', body);
      flash(`Session ${s.name || s.id} started.`);
      go(`/sessions/${s.id}`);
    }, msg);
  });
  main.append(f);
}

// ---- One session ----

async function sessionPage(id, main) {
  showFlash();
  const heading = title('Session');
  main.append(h('p', { class: 'crumbs' }, h('a', { href: href('/sessions') }, '← All sessions')), heading);
  const session = await api('GET', `/api/v1/sessions/${enc(id)}`);
  // Its agent, for its name (gone when deleted since: the id is shown instead).
  const agents = await api('GET', `/api/v1/agents/${enc(session.agent_id)}`).then((a) => [a], () => []);
  const ctx = {
    session, agents, main,
    log: h('ol', { class: 'pg-log', 'aria-label': 'Transcript' }),
    live: h('div', { class: 'pg-live', 'aria-live': 'polite', role: 'status' }),
    pending: h('div', { class: 'pg-pending' }),
    input: h('textarea', { name: 'message', rows: 3, required: true }),
    msg: h('div', { class: 'msg' }),
    facts: h('div'),
    controls: h('div'),
  };
  const label = session.name || session.id;
  heading.textContent = `Session: ${label}`;
  document.title = `${label} · Quarry console`;

  const send = h('button', { type: 'submit', id: 'se-send' }, 'Send');
  const stop = h('button', { type: 'button', class: 'secondary', hidden: true }, 'Stop reading');
  let controller = null;
  stop.addEventListener('click', () => { if (controller) controller.abort(); });
  const form = h('form', { class: 'card pg-form', 'aria-label': 'Send a message' },
    field('Message', ctx.input, 'Ctrl+Enter sends. The session keeps the conversation: only your new message is sent.'),
    h('div', { class: 'row' }, send, stop), ctx.msg);
  ctx.form = form;
  ctx.input.addEventListener('keydown', (e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); form.requestSubmit(); } });
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const text = ctx.input.value.trim();
    if (!text) { ctx.input.focus(); return; }
    controller = new AbortController();
    stop.hidden = false;
    busy(send, () => say(ctx, text, controller.signal), ctx.msg).finally(() => { stop.hidden = true; controller = null; });
  });

  drawFacts(ctx);
  drawControls(ctx);
  const forks = h('div');
  main.append(ctx.facts,
    h('section', { class: 'card pg-chat', 'aria-labelledby': 'se-tr-h' }, h('h2', { id: 'se-tr-h' }, 'Transcript'), ctx.log, ctx.live),
    ctx.pending, form, forks, ctx.controls);
  await loadTranscript(ctx);
  showOpen(ctx);
  drawForks(forks, await listAll(`/api/v1/sessions/${enc(session.id)}/forks`));
}

// The sessions forked from this one, if any.
function drawForks(box, list) {
  if (!list.length) return;
  box.replaceChildren(h('section', { class: 'card', 'aria-labelledby': 'se-forks-h' },
    h('h2', { id: 'se-forks-h' }, `Forks (${list.length})`),
    h('ul', { class: 'ag-records' }, ...list.map((f) => h('li', {},
      h('a', { href: href(`/sessions/${f.id}`) }, f.name || f.id),
      f.forked_from_position != null ? ` from message ${f.forked_from_position}` : '', ' · ', statusBadge(f.status),
      h('span', { class: 'muted' }, ` · ${when(f.created_at)}`))))));
}

function drawFacts(ctx) {
  const s = ctx.session;
  ctx.facts.replaceChildren(h('dl', { class: 'pairs card se-facts' },
    h('dt', {}, 'Status'), h('dd', { id: 'se-status' }, statusBadge(s.status), s.generating_at ? h('span', { class: 'muted' }, ` generating since ${when(s.generating_at)}`) : null),
    h('dt', {}, 'Agent'), h('dd', {}, h('a', { href: href(`/agents/${s.agent_id}`) }, agentName(ctx.agents, s.agent_id))),
    h('dt', {}, 'Session id'), h('dd', {}, h('code', {}, s.id)),
    h('dt', {}, 'Conversation'), h('dd', {}, h('code', {}, s.conversation_id)),
    h('dt', {}, 'Created'), h('dd', {}, when(s.created_at)),
    h('dt', {}, 'Last activity'), h('dd', {}, when(s.last_activity_at)),
    s.inactivity_ttl_seconds ? [h('dt', {}, 'Expires'), h('dd', {}, `after ${s.inactivity_ttl_seconds} s without activity`)] : null,
    s.forked_from_session_id ? [h('dt', {}, 'Forked from'), h('dd', {},
      h('a', { href: href(`/sessions/${s.forked_from_session_id}`) }, s.forked_from_session_id),
      s.forked_from_position != null ? ` at message ${s.forked_from_position}` : '')] : null));
}

// The status controls: close (or reopen) and delete.
function drawControls(ctx) {
  const s = ctx.session;
  const msg = h('div', { class: 'msg' });
  const toggle = h('button', { type: 'button', class: 'secondary' }, s.status === 'open' ? 'Close the session' : 'Reopen the session');
  toggle.addEventListener('click', () => busy(toggle, async () => {
    const to = s.status === 'open' ? 'closed' : 'open';
    ctx.session = await api('PATCH', `/api/v1/sessions/${enc(s.id)}`, { status: to });
    notify(to === 'closed' ? 'Session closed: it takes no new generation.' : 'Session reopened.');
    drawFacts(ctx);
    drawControls(ctx);
    showOpen(ctx);
  }, msg));
  const del = h('button', { type: 'button', class: 'danger' }, 'Delete the session');
  del.addEventListener('click', () => {
    if (!window.confirm(`Delete the session ${s.name || s.id} and its conversation? This cannot be undone.`)) return;
    busy(del, async () => {
      await api('DELETE', `/api/v1/sessions/${enc(s.id)}`);
      flash(`Session ${s.name || s.id} deleted.`);
      go('/sessions');
    }, msg);
  });
  ctx.controls.replaceChildren(h('section', { class: 'card', 'aria-labelledby': 'se-ctl-h' },
    h('h2', { id: 'se-ctl-h' }, 'Manage'),
    h('p', { class: 'muted' }, 'A closed session keeps its messages but runs no generation; reopen it to go on. Deleting removes its conversation too.'),
    h('div', { class: 'row' }, toggle, del), msg));
}

// The message box is open only while the session is.
function showOpen(ctx) {
  const open = ctx.session.status === 'open';
  for (const el of ctx.form.querySelectorAll('textarea, button[type=submit]')) el.disabled = !open;
  let note = ctx.form.querySelector('.se-closed');
  if (open) { if (note) note.remove(); return; }
  if (!note) {
    note = h('p', { class: 'se-closed' });
    ctx.form.prepend(note);
  }
  note.textContent = ctx.session.status === 'expired'
    ? 'This session has expired after a time without activity: start a new session, or fork this one.'
    : 'This session is closed: reopen it below to send a message.';
}

// The conversation's messages, drawn anew.
async function loadTranscript(ctx) {
  const messages = await listAll(`/api/v1/conversations/${enc(ctx.session.conversation_id)}/messages`);
  messages.sort((a, b) => a.position - b.position);
  ctx.log.replaceChildren(...messages.map((m) => messageItem(ctx, m).li));
  if (!messages.length) ctx.log.append(bubble('note', 'No messages yet: write the first one below.').li);
  return messages;
}

function bubble(role, ...content) {
  const who = { user: 'You', assistant: 'Agent', tool: 'Tool', note: 'Note', system: 'System' }[role] || role;
  const body = h('div', { class: 'pg-text' }, ...content);
  const li = h('li', { class: `pg-msg pg-${role}` }, h('span', { class: 'pg-who' }, `${who}: `), body);
  return { li, body };
}

function messageItem(ctx, m) {
  const item = bubble(m.role, m.content);
  item.li.dataset.position = String(m.position);
  const fork = h('button', { type: 'button', class: 'link se-fork', 'aria-label': `Fork the session from message ${m.position}` }, 'Fork from here');
  const msg = h('div', { class: 'msg' });
  fork.addEventListener('click', () => busy(fork, async () => {
    const s = await api('POST', `/api/v1/sessions/${enc(ctx.session.id)}/fork`, { fork_at_position: m.position });
    flash(`Forked from message ${m.position}: a new session with the messages up to it.`);
    go(`/sessions/${s.id}`);
  }, msg));
  item.li.append(h('div', { class: 'se-meta' }, h('span', { class: 'muted' }, `#${m.position}`), ' ', fork), msg);
  return item;
}

function add(ctx, item) {
  const empty = ctx.log.querySelector('.pg-note');
  if (empty && empty.textContent.includes('No messages yet')) empty.remove();
  ctx.log.append(item.li);
  item.li.scrollIntoView({ block: 'nearest' });
  return item;
}

function json(v) {
  return typeof v === 'string' ? v : JSON.stringify(v, null, 2);
}

// Adds the user's message, then runs the session's generation and streams it.
async function say(ctx, text, signal) {
  ctx.msg.replaceChildren();
  ctx.pending.replaceChildren();
  const sent = await api('POST', `/api/v1/sessions/${enc(ctx.session.id)}/messages`, { message: text });
  ctx.input.value = '';
  if (sent && sent.generation_id) {
    // A session with auto_generate answered inline: the reply is in the conversation.
    await settled(ctx, sent);
    return;
  }
  // The message as the conversation placed it (its position, to fork from).
  await loadTranscript(ctx);
  let started;
  try {
    started = await api('POST', `/api/v1/sessions/${enc(ctx.session.id)}/generate`, {});
  } catch (e) {
    const running = e instanceof ApiError && e.body && e.body.error && e.body.error.meta && e.body.error.meta.generation_id;
    if (!running) {
      await refresh(ctx);
      throw e;
    }
    // One is running already (another tab, an earlier message): follow it.
    started = { generation_id: running };
  }
  await stream(ctx, started.generation_id, signal);
}

// Reads the generation's events as they come: text, tool calls and results; then the
// transcript as the conversation holds it, or the pause's form.
async function stream(ctx, generationId, signal) {
  ctx.live.textContent = 'The agent is answering…';
  const resp = await api('GET', `/api/v1/generations/${enc(generationId)}/events`, null, { raw: true, signal });
  let reply = add(ctx, bubble('assistant'));
  reply.li.classList.add('pg-streaming');
  let pause = null;
  let failed = null;
  let done = false;
  try {
    await readSSE(resp, (frame) => {
      if (frame.data === '[DONE]') { done = true; return; }
      let e;
      try { e = JSON.parse(frame.data); } catch { return; }
      if (e.type === 'error') { failed = e; return; }
      if (e.type === 'delta') {
        reply.body.append(e.text);
      } else if (e.type === 'tool_call') {
        add(ctx, bubble('tool', h('span', {}, 'Calls ', h('code', {}, e.tool_name), e.runner === 'client' ? ' (your client answers it)' : ' (the server runs it)'),
          h('pre', { class: 'pg-args' }, json(e.args))));
        ctx.live.textContent = `The agent calls ${e.tool_name}.`;
        reply = add(ctx, bubble('assistant'));
        reply.li.classList.add('pg-streaming');
      } else if (e.type === 'tool_result') {
        add(ctx, bubble('tool', h('span', {}, 'Result of ', h('code', {}, e.tool_name), e.is_error ? ' (an error)' : ''), h('pre', { class: 'pg-args' }, json(e.output))));
      } else if (e.status === 'requires_action') {
        pause = e;
      }
    });
  } catch (e) {
    if (e && e.name === 'AbortError') {
      ctx.live.textContent = 'Stopped reading; the generation goes on on the server.';
      add(ctx, bubble('note', `Stopped reading. The generation ${generationId} keeps running; its reply joins the session when it completes.`));
      return;
    }
    throw e;
  } finally {
    for (const li of ctx.log.querySelectorAll('.pg-streaming')) {
      li.classList.remove('pg-streaming');
      if (!li.querySelector('.pg-text').textContent) li.remove();
    }
  }
  if (failed) {
    ctx.live.textContent = 'The generation failed.';
    await refresh(ctx);
    throw new ApiError(502, failed.code || 'GENERATION_FAILED', failed.error, failed);
  }
  if (pause) {
    showPause(ctx, pause.id || generationId, pause);
    return;
  }
  if (!done) {
    ctx.live.textContent = 'The stream ended early.';
    add(ctx, bubble('note', 'The connection closed before the generation finished; its reply joins the session when it completes.'));
    return;
  }
  await settled(ctx, null);
}

// The generation rested: the transcript as the conversation holds it, its last reply
// marked as the answer.
async function settled(ctx, response) {
  if (response && response.status === 'requires_action') {
    await loadTranscript(ctx);
    showPause(ctx, response.generation_id, response);
    return;
  }
  const messages = await loadTranscript(ctx);
  const last = [...ctx.log.querySelectorAll('.pg-assistant')].pop();
  if (last) last.classList.add('pg-final');
  const answered = messages.length && messages[messages.length - 1].role === 'assistant';
  ctx.live.textContent = answered ? 'The agent answered.' : 'The generation ended without a reply.';
  await refresh(ctx);
  ctx.input.focus();
}

// The session's record again (its status, its activity).
async function refresh(ctx) {
  try {
    ctx.session = await api('GET', `/api/v1/sessions/${enc(ctx.session.id)}`);
    drawFacts(ctx);
    drawControls(ctx);
    showOpen(ctx);
  } catch (e) {
    showError(e, ctx.msg);
  }
}

// The pause: one output per pending client call, sent to the session's tool-outputs;
// the generation resumes and the answer (or the next pause) is waited for.
function showPause(ctx, generationId, g) {
  const calls = g.required_action ? g.required_action.tool_calls : [];
  ctx.live.textContent = `The agent is waiting for your answer to ${calls.length} tool call${calls.length === 1 ? '' : 's'}.`;
  const outputs = calls.map((c, i) => ({ c, ta: h('textarea', { name: `output-${i}`, rows: 3, required: true }) }));
  const send = h('button', { type: 'submit' }, calls.length === 1 ? 'Send the output' : 'Send the outputs');
  const msg = h('div', { class: 'msg' });
  const f = h('form', { class: 'card pg-pause', 'aria-labelledby': 'se-pause-h' },
    h('h2', { id: 'se-pause-h', tabindex: '-1' }, 'The agent is waiting for you'),
    h('p', {}, `The generation ${generationId} paused on ${calls.length === 1 ? 'a client tool' : 'client tools'}: answer each call as your client would. Plain text is sent as a string; valid JSON as its value.`),
    ...outputs.map(({ c, ta }) => h('fieldset', { class: 'pg-call' },
      h('legend', {}, 'Call of ', h('code', {}, c.tool_name)),
      h('p', { class: 'muted' }, `Call id ${c.id}. Arguments:`), h('pre', { class: 'pg-args' }, json(c.args)),
      field(`Output for ${c.tool_name}`, ta))),
    h('div', { class: 'row' }, send), msg);
  f.addEventListener('submit', (ev) => {
    ev.preventDefault();
    busy(send, async () => {
      const body = {
        generation_id: generationId,
        tool_outputs: outputs.map(({ c, ta }) => {
          let output = ta.value;
          try { output = JSON.parse(ta.value); } catch { /* plain text */ }
          return { tool_call_id: c.id, output };
        }),
      };
      ctx.live.textContent = 'Sending the outputs; the generation resumes…';
      const r = await api('POST', `/api/v1/sessions/${enc(ctx.session.id)}/tool-outputs`, body);
      ctx.pending.replaceChildren();
      await settled(ctx, r);
    }, msg);
  });
  ctx.pending.replaceChildren(f);
  f.querySelector('h2').focus();
}

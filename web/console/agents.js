// Agents (SOAT /api/v1): the list, with the project's AI providers and tools; an agent's
// editor (name, provider, model, instructions, tools), its versions (restore) and its
// staged rollout (set, promote, abort); and a playground that runs a generation as SSE,
// shows text as it comes and tool calls as they happen, and answers a client tool's
// pause from a form. Everything goes through core.js's api(); data only as text nodes.

import { api, h, route, nav, title, field, href, go, showError, busy, notify, readSSE, ApiError, listAll, when, invalid, flash, showFlash } from './core.js';

document.head.append(h('link', { rel: 'stylesheet', href: new URL('./agents.css', import.meta.url).href }));

nav('Agents', '/agents');

// Specific patterns before `/agents/:id`: the router takes the first that matches.
route('/agents', listPage, { title: 'Agents' });
route('/agents/new', (params, main) => editPage(null, main), { title: 'New agent' });
route('/agents/:id/playground', (params, main) => playgroundPage(params.id, main), { title: 'Playground' });
route('/agents/:id', (params, main) => editPage(params.id, main), { title: 'Agent' });

const enc = encodeURIComponent;

// Enter in a nested form's field presses its own button, not the outer form's submit.
function enterPresses(group, button) {
  group.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && e.target.tagName === 'INPUT') { e.preventDefault(); button.click(); }
  });
  return group;
}

function releaseText(r) {
  if (!r) return 'No rollout';
  return `Rollout: stable v${r.stable_version}, canary v${r.canary_version} on ${r.canary_percent}% of traffic`;
}

// ---- The list ----

async function listPage(params, main) {
  showFlash();
  main.append(title('Agents'),
    h('p', { class: 'lead' }, 'Agents answer with a model of an AI provider and call tools: the server runs http and builtin tools, your client answers client tools.'),
    h('p', {}, h('a', { class: 'button', href: href('/agents/new') }, 'New agent')));
  const agentsBox = h('section', { class: 'card', 'aria-labelledby': 'ag-list-h' }, h('h2', { id: 'ag-list-h' }, 'Your agents'), h('p', { class: 'muted' }, 'Loading…'));
  const providersBox = h('section', { class: 'card', 'aria-labelledby': 'ag-prov-h' });
  const toolsBox = h('section', { class: 'card', 'aria-labelledby': 'ag-tools-h' });
  main.append(agentsBox, h('div', { class: 'grid2' }, providersBox, toolsBox));
  const [agents, providers, tools] = await Promise.all([listAll('/api/v1/agents'), listAll('/api/v1/ai-providers'), listAll('/api/v1/tools')]);
  const byId = new Map(providers.map((p) => [p.id, p]));
  agentsBox.replaceChildren(h('h2', { id: 'ag-list-h' }, 'Your agents'), agents.length
    ? h('table', { class: 'responsive ag-table' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Model'), h('th', { scope: 'col' }, 'Version'),
        h('th', { scope: 'col' }, 'Rollout'), h('th', { scope: 'col' }, 'Try it'))),
      h('tbody', {}, ...agents.map((a) => {
        const p = byId.get(a.ai_provider_id);
        return h('tr', {},
          h('td', { 'data-label': 'Name' }, h('a', { href: href(`/agents/${a.id}`) }, a.name || a.id)),
          h('td', { 'data-label': 'Model' }, a.model || (p ? `${p.default_model} (default of ${p.name})` : a.model_route_id || '—')),
          h('td', { 'data-label': 'Version' }, `v${a.version}`),
          h('td', { 'data-label': 'Rollout' }, a.active_release ? `canary v${a.active_release.canary_version} at ${a.active_release.canary_percent}%` : 'none'),
          h('td', { 'data-label': 'Try it' }, h('a', { href: href(`/agents/${a.id}/playground`) }, `Playground for ${a.name || a.id}`)));
      })))
    : h('p', {}, 'No agents yet. ', h('a', { href: href('/agents/new') }, 'Create one'), '.'));
  const drawProviders = (list) => providersBox.replaceChildren(h('h2', { id: 'ag-prov-h' }, 'AI providers'), providerList(list),
    disclosure('New AI provider', (close) => providerForm((p) => { list.push(p); close(); drawProviders(list); notify(`Provider ${p.name} created.`); })));
  const drawTools = (list) => toolsBox.replaceChildren(h('h2', { id: 'ag-tools-h' }, 'Tools'), toolList(list),
    disclosure('New tool', (close) => toolForm((t) => { list.push(t); close(); drawTools(list); notify(`Tool ${t.name} created.`); })));
  drawProviders(providers);
  drawTools(tools);
}

function providerList(list) {
  if (!list.length) return h('p', { class: 'muted' }, 'None yet: an agent needs one.');
  return h('ul', { class: 'ag-records' }, ...list.map((p) => h('li', {},
    h('strong', {}, p.name), ` — ${p.provider}, default model ${p.default_model}`, p.base_url ? h('span', { class: 'muted' }, ` at ${p.base_url}`) : null,
    h('span', { class: 'muted' }, ` (${p.id})`))));
}

function toolList(list) {
  if (!list.length) return h('p', { class: 'muted' }, 'None yet.');
  return h('ul', { class: 'ag-records' }, ...list.map((t) => h('li', {},
    h('strong', {}, t.name), ` — ${t.type}${t.type === 'client' ? ' (your client answers it)' : ''}`,
    t.description ? `: ${t.description}` : '', h('span', { class: 'muted' }, ` (${t.id})`))));
}

// A button that opens a form in place (and closes it again): `make(close)` builds it.
function disclosure(label, make) {
  const box = h('div', { class: 'ag-disclosure' });
  const toggle = h('button', { type: 'button', class: 'secondary', 'aria-expanded': 'false' }, label);
  const close = () => { box.replaceChildren(); toggle.setAttribute('aria-expanded', 'false'); toggle.focus(); };
  toggle.addEventListener('click', () => {
    if (toggle.getAttribute('aria-expanded') === 'true') { close(); return; }
    toggle.setAttribute('aria-expanded', 'true');
    const f = make(close);
    box.replaceChildren(f);
    const first = f.querySelector('input, select, textarea');
    if (first) first.focus();
  });
  return h('div', {}, toggle, box);
}

// ---- Providers and tools: the create forms ----

const KINDS = [
  ['custom', 'OpenAI-compatible (custom)'],
  ['local', 'This server\'s local model (local)'],
  ['ollama', 'Ollama (ollama)'],
  ['openai', 'OpenAI (needs a secret)'],
  ['anthropic', 'Anthropic (needs a secret)'],
  ['google', 'Google Gemini (needs a secret)'],
  ['groq', 'Groq (needs a secret)'],
  ['xai', 'xAI (needs a secret)'],
];

// A form that creates an AI provider (a nested <div>, not a <form>, so it can sit in
// the agent's form); `done(provider)` gets the new record.
function providerForm(done) {
  const name = h('input', { name: 'provider_name', autocomplete: 'off' });
  const kind = h('select', { name: 'provider_kind' }, ...KINDS.map(([v, l]) => h('option', { value: v }, l)));
  const base = h('input', { name: 'base_url', type: 'url', placeholder: 'http://127.0.0.1:8080/v1', autocomplete: 'off' });
  const model = h('input', { name: 'default_model', autocomplete: 'off' });
  const secret = h('input', { name: 'secret_id', placeholder: 'sec_…', autocomplete: 'off' });
  const msg = h('div', { class: 'msg' });
  const create = h('button', { type: 'button' }, 'Create provider');
  const baseField = field('Base URL', base, 'The OpenAI-compatible API root, ending in /v1 (needed for custom).');
  kind.addEventListener('change', () => { baseField.hidden = !['custom', 'ollama'].includes(kind.value); });
  create.addEventListener('click', () => busy(create, async () => {
    const body = { name: name.value.trim(), provider: kind.value, default_model: model.value.trim() };
    if (!body.name || !body.default_model) throw invalid('A provider needs a name and a default model.');
    if (base.value.trim() && !baseField.hidden) body.base_url = base.value.trim();
    if (secret.value.trim()) body.secret_id = secret.value.trim();
    const p = await api('POST', '/api/v1/ai-providers', body);
    done(p);
  }, msg));
  return enterPresses(h('div', { class: 'ag-subform', role: 'group', 'aria-label': 'New AI provider' },
    field('Provider name', name), field('Kind', kind), baseField,
    field('Default model', model, 'The model id the upstream knows, used when an agent names none.'),
    field('Secret id (optional)', secret, 'A stored secret holding the API key, for the hosted kinds.'),
    h('div', { class: 'row' }, create), msg), create);
}

// A form that creates a tool: client (your code answers it) or http (the server calls
// a URL); `done(tool)` gets the new record.
function toolForm(done) {
  const name = h('input', { name: 'tool_name', autocomplete: 'off' });
  const type = h('select', { name: 'tool_type' },
    h('option', { value: 'client' }, 'client: the generation pauses until you answer it'),
    h('option', { value: 'http' }, 'http: the server calls a URL'));
  const desc = h('input', { name: 'tool_description', autocomplete: 'off' });
  const params = h('textarea', { name: 'tool_parameters', rows: 4, spellcheck: 'false',
    placeholder: '{"type": "object", "properties": {"question": {"type": "string"}}}' });
  const url = h('input', { name: 'tool_url', type: 'url', placeholder: 'https://example.org/api/{id}', autocomplete: 'off' });
  const method = h('select', { name: 'tool_method' }, ...['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].map((m) => h('option', { value: m }, m)));
  const http = h('div', { hidden: true }, field('URL', url, '{param} placeholders are filled from the call\'s input.'), field('Method', method));
  type.addEventListener('change', () => { http.hidden = type.value !== 'http'; });
  const msg = h('div', { class: 'msg' });
  const create = h('button', { type: 'button' }, 'Create tool');
  create.addEventListener('click', () => busy(create, async () => {
    const body = { name: name.value.trim(), type: type.value };
    if (!body.name) throw invalid('A tool needs a name (letters, digits, _ and -).');
    if (desc.value.trim()) body.description = desc.value.trim();
    if (params.value.trim()) {
      try { body.parameters = JSON.parse(params.value); } catch (e) { throw invalid(`The parameters are not JSON (${e.message}): write a JSON Schema object, or leave them empty.`); }
    }
    if (type.value === 'http') body.execute = { url: url.value.trim(), method: method.value };
    done(await api('POST', '/api/v1/tools', body));
  }, msg));
  return enterPresses(h('div', { class: 'ag-subform', role: 'group', 'aria-label': 'New tool' },
    field('Tool name', name, 'What the model calls it: letters, digits, _ and -.'), field('Type', type),
    field('Description (optional)', desc, 'Tells the model when to call it.'),
    field('Parameters (JSON Schema, optional)', params), http,
    h('div', { class: 'row' }, create), msg), create);
}

// ---- One agent: edit, versions, rollout ----

async function editPage(id, main) {
  showFlash();
  const heading = title(id ? 'Agent' : 'New agent');
  const body = h('div', { class: 'stack' }, h('p', { class: 'muted' }, 'Loading…'));
  main.append(h('p', { class: 'crumbs' }, h('a', { href: href('/agents') }, '← All agents')), heading, body);
  const [agent, providers, tools] = await Promise.all([
    id ? api('GET', `/api/v1/agents/${enc(id)}`) : null, listAll('/api/v1/ai-providers'), listAll('/api/v1/tools')]);
  if (agent) {
    heading.textContent = `Agent: ${agent.name || agent.id}`;
    document.title = `${agent.name || agent.id} · Quarry console`;
  }
  const reload = () => go(`/agents/${id}`);
  const parts = [agentForm(agent, providers, tools)];
  if (agent) {
    parts.unshift(h('p', { class: 'row' },
      h('a', { class: 'button', href: href(`/agents/${agent.id}/playground`) }, 'Open the playground'),
      h('a', { class: 'button', href: href(`/sessions/new?agent_id=${enc(agent.id)}&project_id=${enc(agent.project_id || '')}`) }, 'New session'), // sessions.js
      h('span', { class: 'muted' }, `Version ${agent.version} · ${releaseText(agent.active_release)} · updated ${when(agent.updated_at)}`)));
    const versions = (await listAll(`/api/v1/agents/${enc(agent.id)}/versions`)).sort((x, y) => x.version - y.version);
    parts.push(releaseSection(agent, versions, reload), versionsSection(agent, versions, reload), deleteSection(agent));
  }
  body.replaceChildren(...parts);
}

function agentForm(agent, providers, tools) {
  const a = agent || {};
  const name = h('input', { name: 'name', required: true, value: a.name || '', autocomplete: 'off' });
  const provider = h('select', { name: 'ai_provider_id' });
  const fillProviders = (selected) => {
    provider.replaceChildren(h('option', { value: '' }, providers.length ? 'Choose a provider…' : 'No provider yet: create one below'),
      ...providers.map((p) => h('option', { value: p.id, selected: p.id === selected }, `${p.name} (${p.provider}, default ${p.default_model})`)));
    provider.value = selected || '';
  };
  fillProviders(a.ai_provider_id || (providers.length === 1 ? providers[0].id : ''));
  const models = h('datalist', { id: 'ag-models' });
  const model = h('input', { name: 'model', list: 'ag-models', value: a.model || '', autocomplete: 'off' });
  const listModels = h('button', { type: 'button', class: 'secondary' }, 'List the provider\'s models');
  const modelMsg = h('div', { class: 'msg' });
  listModels.addEventListener('click', () => busy(listModels, async () => {
    if (!provider.value) throw invalid('Choose a provider first.');
    const r = await api('GET', `/api/v1/ai-providers/${enc(provider.value)}/models`);
    const ids = (r.models || []).map((m) => m.id);
    models.replaceChildren(...ids.map((m) => h('option', { value: m })));
    modelMsg.replaceChildren(h('p', { class: 'muted' }, ids.length ? `Models: ${ids.join(', ')}` : 'The provider lists no models.'));
  }, modelMsg));
  const instructions = h('textarea', { name: 'instructions', rows: 6, value: a.instructions || '' });
  const maxSteps = h('input', { name: 'max_steps', type: 'number', min: 1, step: 1, value: a.max_steps != null ? String(a.max_steps) : '' });
  const temperature = h('input', { name: 'temperature', type: 'number', min: 0, max: 2, step: 0.1, value: a.temperature != null ? String(a.temperature) : '' });
  const label = h('input', { name: 'version_label', autocomplete: 'off', placeholder: 'e.g. shorter instructions' });

  const bindings = a.tool_bindings || [];
  const bound = new Set(bindings.filter((b) => b.tool_id).map((b) => b.tool_id));
  const inline = bindings.filter((b) => b.tool);
  const toolBox = h('div', { class: 'ag-tools' });
  const drawTools = () => toolBox.replaceChildren(...[...(tools.length ? tools.map((t) => {
    const box = h('input', { type: 'checkbox', id: `ag-tool-${t.id}`, name: 'tool', value: t.id, checked: bound.has(t.id) });
    box.addEventListener('change', () => { if (box.checked) bound.add(t.id); else bound.delete(t.id); });
    return h('div', { class: 'ag-check' }, box, h('label', { for: box.id }, h('strong', {}, t.name), ` (${t.type})`, t.description ? ` — ${t.description}` : ''));
  }) : [h('p', { class: 'muted' }, 'No tools in this project yet.')]),
  inline.length ? h('p', { class: 'muted' }, `Also bound inline (kept as they are): ${inline.map((b) => b.tool.name).join(', ')}.`) : null].filter(Boolean));
  drawTools();

  const msg = h('div', { class: 'msg' });
  const save = h('button', { type: 'submit' }, agent ? 'Save as a new version' : 'Create agent');
  const f = h('form', { class: 'card ag-form', 'aria-label': agent ? 'Edit the agent' : 'New agent' },
    h('h2', {}, agent ? 'Configuration' : 'A new agent'),
    field('Name', name),
    field('AI provider', provider),
    disclosure('New AI provider', (close) => providerForm((p) => { providers.push(p); fillProviders(p.id); close(); notify(`Provider ${p.name} created and chosen.`); })),
    field('Model (optional)', model, 'Empty: the provider\'s default model.'),
    h('div', { class: 'row' }, listModels), modelMsg,
    field('Instructions', instructions, 'The system prompt every generation starts with.'),
    h('fieldset', { class: 'ag-fieldset' }, h('legend', {}, 'Tools the agent may call'), toolBox,
      disclosure('New tool', (close) => toolForm((t) => { tools.push(t); bound.add(t.id); drawTools(); close(); notify(`Tool ${t.name} created and bound.`); }))),
    h('div', { class: 'grid2' },
      field('Max steps (optional)', maxSteps, 'Model calls per turn, at least 1.'),
      field('Temperature (optional)', temperature, 'From 0 to 2.')),
    field('Version label (optional)', label, 'A note stored with the version this save makes.'),
    h('div', { class: 'row' }, save), msg);
  f.addEventListener('submit', (ev) => {
    ev.preventDefault();
    busy(save, async () => {
      const num = (input) => (input.value.trim() === '' ? null : Number(input.value));
      const body = {
        name: name.value.trim(),
        ai_provider_id: provider.value || null,
        model: model.value.trim() || null,
        instructions: instructions.value || null,
        tool_bindings: [...[...bound].map((t) => ({ tool_id: t })), ...inline.map((b) => ({ tool: b.tool }))],
        max_steps: num(maxSteps),
        temperature: num(temperature),
      };
      if (!body.name) throw invalid('The agent needs a name.');
      // An agent on a model route may have no provider of its own: leave it as it is.
      if (!body.ai_provider_id && a.model_route_id) delete body.ai_provider_id;
      else if (!body.ai_provider_id) throw invalid('Choose an AI provider, or create one with “New AI provider”.');
      if (label.value.trim()) body.version_label = label.value.trim();
      if (!agent) {
        for (const k of Object.keys(body)) if (body[k] === null) delete body[k];
        const made = await api('POST', '/api/v1/agents', body);
        flash(`Agent ${made.name} created.`);
        go(`/agents/${made.id}`);
        return;
      }
      body.expected_version = agent.version;
      const saved = await api('PATCH', `/api/v1/agents/${enc(agent.id)}`, body);
      flash(saved.version === agent.version ? 'Nothing changed: no new version.' : `Saved as version ${saved.version}.`);
      go(`/agents/${agent.id}`);
    }, msg);
  });
  return f;
}

function versionsSection(agent, versions, reload) {
  const rows = [...versions].reverse();
  return h('section', { class: 'card', 'aria-labelledby': 'ag-ver-h' },
    h('h2', { id: 'ag-ver-h' }, `Versions (${versions.length})`),
    h('p', { class: 'muted' }, 'Each save of the configuration is a version. Restoring one writes its configuration again as a new version.'),
    h('ol', { class: 'ag-versions', reversed: true }, ...rows.map((v) => {
      const msg = h('div', { class: 'msg' });
      const current = v.version === agent.version;
      const restore = current ? null : h('button', { type: 'button', class: 'secondary' }, `Restore v${v.version}`);
      if (restore) {
        restore.addEventListener('click', () => busy(restore, async () => {
          const r = await api('POST', `/api/v1/agents/${enc(agent.id)}/versions/${v.version}/restore`, {}, { headers: { 'if-match': String(agent.version) } });
          flash(`Version ${v.version} restored as version ${r.version}.`);
          reload();
        }, msg));
      }
      return h('li', { value: v.version, class: current ? 'current' : '' },
        h('div', { class: 'row' },
          h('strong', {}, `v${v.version}`), current ? h('span', { class: 'badge' }, 'current') : null,
          h('span', {}, v.label || 'no label'),
          h('span', { class: 'muted' }, when(v.created_at)), restore),
        h('details', {}, h('summary', {}, `Configuration of v${v.version}`), h('pre', {}, JSON.stringify(v.config, null, 2))),
        msg);
    })));
}

function releaseSection(agent, versions, reload) {
  const r = agent.active_release;
  const msg = h('div', { class: 'msg' });
  const box = h('section', { class: 'card', 'aria-labelledby': 'ag-rel-h' }, h('h2', { id: 'ag-rel-h' }, 'Staged rollout'));
  if (r) {
    const promote = h('button', { type: 'button' }, `Promote canary v${r.canary_version}`);
    const abort = h('button', { type: 'button', class: 'danger' }, `Abort: back to stable v${r.stable_version}`);
    promote.addEventListener('click', () => busy(promote, async () => {
      const a = await api('POST', `/api/v1/agents/${enc(agent.id)}/release/promote`);
      flash(`Canary promoted: version ${a.version} is live for everyone.`);
      reload();
    }, msg));
    abort.addEventListener('click', () => busy(abort, async () => {
      const a = await api('POST', `/api/v1/agents/${enc(agent.id)}/release/abort`);
      flash(`Rollout aborted: version ${a.version} (stable's configuration) is live for everyone.`);
      reload();
    }, msg));
    box.append(h('p', { class: 'ag-release' }, releaseText(r), r.promotion_gate ? `; promotion needs a passed run of eval ${r.promotion_gate}` : '', '.'),
      h('div', { class: 'row' }, promote, abort), msg);
  }
  if (versions.length < 2) {
    box.append(h('p', { class: 'muted' }, 'A rollout splits traffic between two versions: save a change to make a second one.'));
    return box;
  }
  const opts = (sel) => versions.map((v) => h('option', { value: String(v.version), selected: v.version === sel }, `v${v.version}${v.label ? ` — ${v.label}` : ''}`));
  const newest = versions[versions.length - 1].version;
  const stable = h('select', { name: 'stable_version' }, ...opts(r ? r.stable_version : versions[versions.length - 2].version));
  const canary = h('select', { name: 'canary_version' }, ...opts(r ? r.canary_version : newest));
  const percent = h('input', { name: 'canary_percent', type: 'number', min: 0, max: 100, step: 1, required: true, value: String(r ? r.canary_percent : 10) });
  const gate = h('input', { name: 'promotion_gate', placeholder: 'eval_…', autocomplete: 'off', value: r && r.promotion_gate ? r.promotion_gate : '' });
  const set = h('button', { type: 'submit' }, r ? 'Change the split' : 'Start the rollout');
  const f = h('form', { class: 'ag-release-form', 'aria-label': r ? 'Change the rollout' : 'Start a rollout' },
    h('div', { class: 'grid3' }, field('Stable version', stable), field('Canary version', canary),
      field('Canary share, %', percent, 'Generations on the canary, 0 to 100.')),
    field('Promotion gate (optional)', gate, 'An eval of this agent whose passed run on the canary promotion requires.'),
    h('div', { class: 'row' }, set), r ? null : msg);
  f.addEventListener('submit', (ev) => {
    ev.preventDefault();
    busy(set, async () => {
      const body = { stable_version: Number(stable.value), canary_version: Number(canary.value), canary_percent: Number(percent.value) };
      if (gate.value.trim()) body.promotion_gate = gate.value.trim();
      await api('PUT', `/api/v1/agents/${enc(agent.id)}/release`, body);
      flash(`Rollout set: v${body.canary_version} on ${body.canary_percent}%.`);
      reload();
    }, msg);
  });
  box.append(f);
  return box;
}

function deleteSection(agent) {
  const force = h('input', { type: 'checkbox', id: 'ag-force' });
  const del = h('button', { type: 'button', class: 'danger' }, 'Delete this agent');
  const msg = h('div', { class: 'msg' });
  del.addEventListener('click', () => {
    if (!window.confirm(`Delete the agent ${agent.name || agent.id}${force.checked ? ' with its generations and traces' : ''}? This cannot be undone.`)) return;
    busy(del, async () => {
      await api('DELETE', `/api/v1/agents/${enc(agent.id)}${force.checked ? '?force=true' : ''}`);
      flash(`Agent ${agent.name || agent.id} deleted.`);
      go('/agents');
    }, msg);
  });
  return h('section', { class: 'card', 'aria-labelledby': 'ag-del-h' }, h('h2', { id: 'ag-del-h' }, 'Delete'),
    h('div', { class: 'ag-check' }, force, h('label', { for: 'ag-force' }, 'Also delete its generations and traces (needed once it has run)')),
    h('div', { class: 'row' }, del), msg);
}

// ---- The playground ----

// What each code of a stream's error frame (`{error, code, type: 'error'}`) answers when not streamed.
const FRAME_STATUS = { AI_PROVIDER_ERROR: 502, TOOL_HTTP_ERROR: 502, TEXT_ENCODED_TOOL_CALL: 502, OUTPUT_SCHEMA_VALIDATION_FAILED: 502, INTERNAL_ERROR: 500, APPROVAL_EXPIRED: 409, EGRESS_REFUSED: 403 };

async function playgroundPage(id, main) {
  const heading = title('Playground');
  main.append(h('p', { class: 'crumbs' }, h('a', { href: href('/agents') }, '← All agents'), ' · ', h('a', { href: href(`/agents/${id}`) }, 'Edit this agent')), heading);
  const agent = await api('GET', `/api/v1/agents/${enc(id)}`);
  heading.textContent = `Playground: ${agent.name || agent.id}`;
  document.title = `Playground: ${agent.name || agent.id} · Quarry console`;
  const messages = [];
  const log = h('ol', { class: 'pg-log', 'aria-label': 'Conversation' });
  const live = h('div', { class: 'pg-live', 'aria-live': 'polite', role: 'status' });
  const input = h('textarea', { name: 'message', rows: 3, required: true });
  const run = h('button', { type: 'submit', id: 'pg-run' }, 'Run');
  const stop = h('button', { type: 'button', class: 'secondary', hidden: true }, 'Stop reading');
  const clear = h('button', { type: 'button', class: 'secondary' }, 'New conversation');
  const msg = h('div', { class: 'msg' });
  const pending = h('div', { class: 'pg-pending' });
  let controller = null;
  stop.addEventListener('click', () => { if (controller) controller.abort(); });
  clear.addEventListener('click', () => { messages.length = 0; log.replaceChildren(); pending.replaceChildren(); msg.replaceChildren(); live.textContent = 'Conversation cleared.'; input.focus(); });
  const f = h('form', { class: 'card pg-form', 'aria-label': 'Send a message' },
    field('Message', input, 'Ctrl+Enter sends. The whole conversation is sent each time.'),
    h('div', { class: 'row' }, run, stop, clear), msg);
  input.addEventListener('keydown', (e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); f.requestSubmit(); } });
  const ctx = { agent, messages, log, live, pending, msg, input };
  f.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const text = input.value.trim();
    if (!text) { input.focus(); return; }
    controller = new AbortController();
    stop.hidden = false;
    busy(run, () => generate(ctx, text, controller.signal), msg).finally(() => { stop.hidden = true; controller = null; });
  });
  main.append(h('p', { class: 'muted' }, `Model: ${agent.model || 'the provider\'s default'} · version ${agent.version} · ${releaseText(agent.active_release)}.`),
    h('section', { class: 'card pg-chat', 'aria-label': 'Conversation' }, log, live), pending, f);
}

function bubble(role, ...content) {
  const who = { user: 'You', assistant: 'Agent', tool: 'Tool', note: 'Note' }[role];
  const body = h('div', { class: 'pg-text' }, ...content);
  const li = h('li', { class: `pg-msg pg-${role}` }, h('span', { class: 'pg-who' }, `${who}: `), body);
  return { li, body };
}

function add(ctx, item) {
  ctx.log.append(item.li);
  item.li.scrollIntoView({ block: 'nearest' });
  return item;
}

function json(v) {
  return typeof v === 'string' ? v : JSON.stringify(v, null, 2);
}

function toolCallItem(call) {
  return bubble('tool', h('span', {}, 'Calls ', h('code', {}, call.tool_name), call.runner === 'client' ? ' (your client answers it)' : ' (the server runs it)'),
    h('pre', { class: 'pg-args' }, json(call.args)));
}

// Runs one generation over the conversation so far plus `text`, streamed.
async function generate(ctx, text, signal) {
  ctx.msg.replaceChildren();
  ctx.pending.replaceChildren();
  ctx.messages.push({ role: 'user', content: text });
  const asked = add(ctx, bubble('user', text));
  ctx.input.value = '';
  ctx.live.textContent = 'Running…';
  const reply = add(ctx, bubble('assistant'));
  reply.li.classList.add('pg-streaming');
  let pause = null;
  let failed = null;
  let done = false;
  let resp;
  try {
    resp = await api('POST', `/api/v1/agents/${enc(ctx.agent.id)}/generate`, { messages: ctx.messages, stream: true }, { raw: true, signal });
  } catch (e) {
    ctx.messages.pop();
    reply.li.remove();
    asked.li.remove();
    ctx.input.value = text;
    ctx.live.textContent = '';
    throw e;
  }
  const genId = resp.headers.get('x-generation-id');
  let textEl = reply.body;
  try {
    await readSSE(resp, (frame) => {
      if (frame.data === '[DONE]') { done = true; return; }
      let e;
      try { e = JSON.parse(frame.data); } catch { return; }
      if (e.type === 'error') { failed = e; return; }
      if (e.type === 'delta') {
        textEl.append(e.text);
      } else if (e.type === 'tool_call') {
        add(ctx, toolCallItem(e));
        ctx.live.textContent = `The agent calls ${e.tool_name}.`;
        // Text after a tool step goes in a fresh reply, below the call.
        const next = add(ctx, bubble('assistant'));
        next.li.classList.add('pg-streaming');
        textEl = next.body;
      } else if (e.type === 'tool_result') {
        add(ctx, bubble('tool', h('span', {}, 'Result of ', h('code', {}, e.tool_name), e.is_error ? ' (an error)' : ''), h('pre', { class: 'pg-args' }, json(e.output))));
      } else if (e.status === 'requires_action') {
        pause = e;
      }
    });
  } catch (e) {
    if (e && e.name === 'AbortError') {
      ctx.live.textContent = 'Stopped reading; the generation goes on on the server.';
      add(ctx, bubble('note', `Stopped reading. The generation ${genId || ''} keeps running on the server.`));
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
    ctx.messages.pop();
    throw new ApiError(FRAME_STATUS[failed.code] || 400, failed.code || 'GENERATION_FAILED', failed.error, failed);
  }
  if (pause) {
    showPause(ctx, pause);
    return;
  }
  if (!done) {
    ctx.live.textContent = 'The stream ended early.';
    add(ctx, bubble('note', 'The connection closed before the generation finished; its record may still complete on the server.'));
    return;
  }
  const g = genId ? await api('GET', `/api/v1/generations/${enc(genId)}`) : null;
  finish(ctx, g && g.output ? g.output.content : [...ctx.log.querySelectorAll('.pg-assistant .pg-text')].pop()?.textContent || '', g);
}

// A completed generation: its final text as the reply, kept in the conversation.
function finish(ctx, content, g) {
  const last = [...ctx.log.querySelectorAll('.pg-assistant')].pop();
  const lastText = last ? last.querySelector('.pg-text') : null;
  if (lastText && lastText.textContent === content) {
    lastText.parentElement.classList.add('pg-final');
  } else {
    add(ctx, bubble('assistant', content)).li.classList.add('pg-final');
  }
  ctx.messages.push({ role: 'assistant', content });
  const usage = g && g.usage ? ` (${g.usage.input_tokens} tokens in, ${g.usage.output_tokens} out, ${g.step_count} steps)` : '';
  ctx.live.textContent = `The agent answered${usage}.`;
  ctx.input.focus();
}

// The pause: a form with one output per pending client call; sending it resumes the
// generation, which answers as a waiting request does (completed, or paused again).
function showPause(ctx, g) {
  const calls = g.required_action ? g.required_action.tool_calls : [];
  ctx.live.textContent = `The agent is waiting for your answer to ${calls.length} tool call${calls.length === 1 ? '' : 's'}.`;
  const outputs = calls.map((c, i) => {
    const ta = h('textarea', { name: `output-${i}`, rows: 3, required: true, 'data-call': c.id });
    return { c, ta };
  });
  const send = h('button', { type: 'submit' }, calls.length === 1 ? 'Send the output' : 'Send the outputs');
  const msg = h('div', { class: 'msg' });
  const f = h('form', { class: 'card pg-pause', 'aria-labelledby': 'pg-pause-h' },
    h('h2', { id: 'pg-pause-h', tabindex: '-1' }, 'The agent is waiting for you'),
    h('p', {}, `The generation ${g.id} paused on ${calls.length === 1 ? 'a client tool' : 'client tools'}: answer each call as your client would. Plain text is sent as a string; valid JSON as its value.`),
    ...outputs.map(({ c, ta }) => h('fieldset', { class: 'pg-call' },
      h('legend', {}, 'Call of ', h('code', {}, c.tool_name)),
      h('p', { class: 'muted' }, `Call id ${c.id}. Arguments:`), h('pre', { class: 'pg-args' }, json(c.args)),
      field(`Output for ${c.tool_name}`, ta))),
    h('div', { class: 'row' }, send), msg);
  f.addEventListener('submit', (ev) => {
    ev.preventDefault();
    busy(send, async () => {
      const body = {
        tool_outputs: outputs.map(({ c, ta }) => {
          let output = ta.value;
          try { output = JSON.parse(ta.value); } catch { /* plain text */ }
          return { tool_call_id: c.id, output };
        }),
      };
      ctx.live.textContent = 'Sending the outputs; the generation resumes…';
      const r = await api('POST', `/api/v1/agents/${enc(ctx.agent.id)}/generate/${enc(g.id)}/tool-outputs`, body);
      for (const { c, ta } of outputs) add(ctx, bubble('tool', h('span', {}, 'You answered ', h('code', {}, c.tool_name)), h('pre', { class: 'pg-args' }, ta.value)));
      ctx.pending.replaceChildren();
      if (r.status === 'requires_action') { showPause(ctx, r); return; }
      finish(ctx, r.output ? r.output.content : '', await api('GET', `/api/v1/generations/${enc(r.id)}`));
    }, msg);
  });
  ctx.pending.replaceChildren(f);
  f.querySelector('h2').focus();
}

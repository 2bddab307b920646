// The console's core: the API client, the DOM builder, the hash router, errors in
// words, and signing in. Plain ES module, no framework, no build step. Data is only
// ever put in the page as text nodes (h() below), never as HTML.

const KEY = 'quarry.key';
const EMAIL = 'quarry.email';

/** An API call that failed, whatever the surface's error shape. */
export class ApiError extends Error {
  constructor(status, code, message, body) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

export function key() { return sessionStorage.getItem(KEY); }
export function signedIn() { return !!key(); }
export function email() { return sessionStorage.getItem(EMAIL) || ''; }

function setKey(k, mail) {
  sessionStorage.setItem(KEY, k);
  if (mail) sessionStorage.setItem(EMAIL, mail); else sessionStorage.removeItem(EMAIL);
}

export function signOut() {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(EMAIL);
  go('/signin');
}

/**
 * Calls the API. JSON in and out; `opts.form` sends a FormData, `opts.raw` returns the
 * Response (for streams), `opts.anonymous` sends no key, `opts.headers` adds headers,
 * `opts.signal` aborts. Throws ApiError for a non-2xx answer or no answer at all.
 */
export async function api(method, path, body, opts = {}) {
  const headers = Object.assign({}, opts.headers || {});
  const k = key();
  if (k && !opts.anonymous) headers.authorization = `Bearer ${k}`;
  let payload;
  if (opts.form) payload = opts.form;
  else if (body !== undefined && body !== null) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(path, { method, headers, body: payload, signal: opts.signal });
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    throw new ApiError(0, 'network', 'The server could not be reached. Check that quarry is running, then try again.', null);
  }
  // A read refused for the plan's rate is tried once more when the wait is short (a
  // page that loads several lists at once can meet a small plan's burst); a write never
  // is, and a long wait is said to the person instead.
  const wait = Number(resp.headers.get('retry-after'));
  if (resp.status === 429 && method === 'GET' && !opts.retried && wait > 0 && wait <= 5) {
    await new Promise((r) => setTimeout(r, wait * 1000));
    return api(method, path, body, Object.assign({}, opts, { retried: true }));
  }
  if (!resp.ok) throw await errorOf(resp);
  if (opts.raw) return resp;
  if (resp.status === 204) return null;
  const text = await resp.text();
  if (!text) return null;
  try { return JSON.parse(text); } catch { return text; }
}

/** The error of any surface: AgentLex and SOAT `{error:{code,message}}`, OpenAI's
 * `{error:{message,type,code}}`, the retrieval plugin's 422 `{detail:[...]}`. */
async function errorOf(resp) {
  let body = null;
  const text = await resp.text().catch(() => '');
  try { body = JSON.parse(text); } catch { body = text || null; }
  let code = `http_${resp.status}`;
  let message = '';
  if (body && typeof body === 'object') {
    const e = body.error;
    if (e && typeof e === 'object') {
      code = e.code || e.type || code;
      message = e.message || '';
      if (e.hint) message += message ? ` (${e.hint})` : e.hint;
    } else if (Array.isArray(body.detail)) {
      message = body.detail.map((d) => `${(d.loc || []).join('.')}: ${d.msg}`).join('; ');
      code = 'validation_error';
    } else if (typeof body.detail === 'string') {
      message = body.detail;
    }
  }
  const err = new ApiError(resp.status, String(code), message || resp.statusText || 'the request failed', body);
  err.retryAfter = resp.headers.get('retry-after');
  return err;
}

/** What went wrong, in words a person can act on. */
export function explain(err) {
  if (!(err instanceof ApiError)) return `Something went wrong in the console: ${err && err.message ? err.message : err}`;
  const said = err.message ? ` The server said: “${err.message}”` : '';
  switch (true) {
    case err.status === 0: return err.message;
    case err.status === 401: return `Your key was not accepted: sign in again with a valid key.${said}`;
    case err.code === 'EGRESS_REFUSED': return `This server does not connect tenants to that address (loopback, private or reserved); its operator can open it with [egress] allow.${said}`;
    case err.status === 403: return `This key is not allowed to do that.${said}`;
    case err.status === 404: return `That was not found; it may have been deleted, or belong to another account.${said}`;
    case err.status === 409: return `That conflicts with the current state; reload and try again.${said}`;
    case err.status === 413: return `That is too large for this server.${said}`;
    case err.status === 429: return `Too many requests for your plan${err.retryAfter ? `: try again in ${err.retryAfter} s` : ': wait a moment and try again'}.${said}`;
    case err.status === 503: return `The server cannot do this right now (a model or service it needs is not configured or not ready).${said}`;
    case err.status === 502 || err.status === 504: return `The model provider behind this server failed or timed out.${said}`;
    case err.status >= 500: return `The server failed while doing this; the server's log has the details.${said}`;
    default: return `The request was not accepted.${said}`;
  }
}

/**
 * Shows an error in words: in `where` (an element, its content replaced) or in the
 * page's notice area. Returns the message element (role=alert).
 */
export function showError(err, where) {
  if (err && err.name === 'AbortError') return null;
  console.warn(err);
  const box = h('div', { class: 'error', role: 'alert' },
    h('strong', {}, 'Could not do that. '), explain(err),
    err instanceof ApiError && err.code ? h('span', { class: 'code' }, ` (${err.code}${err.status ? `, HTTP ${err.status}` : ''})`) : null);
  const target = where || document.getElementById('notice');
  target.replaceChildren(box);
  return box;
}

/** A passing message in the notice area. */
export function notify(text) {
  const n = document.getElementById('notice');
  n.replaceChildren(h('div', { class: 'ok' }, text));
  setTimeout(() => { if (n.textContent === text) n.replaceChildren(); }, 6000);
}

/**
 * Builds an element: `attrs` sets attributes (`class`, `for`, `aria-*`, ...), event
 * handlers (`onclick: fn`) and properties (`value`, `checked` when boolean); children
 * are nodes, strings or numbers (text nodes), arrays, or null (skipped).
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2).toLowerCase(), v);
    else if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'value' || k === 'checked' || k === 'selected') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  add(el, children);
  return el;
}

function add(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) add(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

let fieldSeq = 0;
/** A labelled form field: `field('Name', h('input', {...}))`, with an optional hint. */
export function field(label, control, hint) {
  if (!control.id) control.id = `f${++fieldSeq}`;
  const hintEl = hint ? h('small', { class: 'hint', id: `${control.id}-hint` }, hint) : null;
  if (hintEl) control.setAttribute('aria-describedby', hintEl.id);
  return h('div', { class: 'field' }, h('label', { for: control.id }, label), control, hintEl);
}

/** Disables `button` while `fn` runs; an error goes to showError(err, where). */
export async function busy(button, fn, where) {
  const was = button ? button.textContent : '';
  if (button) { button.disabled = true; button.setAttribute('aria-busy', 'true'); }
  try {
    return await fn();
  } catch (e) {
    showError(e, where);
    return undefined;
  } finally {
    if (button) { button.disabled = false; button.removeAttribute('aria-busy'); button.textContent = was; }
  }
}

/** Reads an application/x-ndjson body, calling onJson with each line's value. */
export async function readLines(resp, onJson) {
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      if (line) onJson(JSON.parse(line));
    }
  }
  if (buf.trim()) onJson(JSON.parse(buf));
}

/** Reads a text/event-stream body, calling onEvent({id, event, data}) per frame
 * (data is the frame's text, lines joined by \n; a caller parses JSON or `[DONE]`). */
export async function readSSE(resp, onEvent) {
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  const frame = (text) => {
    const f = { id: null, event: 'message', data: '' };
    const data = [];
    for (const line of text.split('\n')) {
      if (!line || line.startsWith(':')) continue;
      const c = line.indexOf(':');
      const name = c < 0 ? line : line.slice(0, c);
      const val = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '');
      if (name === 'data') data.push(val);
      else if (name === 'id') f.id = val;
      else if (name === 'event') f.event = val;
    }
    if (data.length) { f.data = data.join('\n'); onEvent(f); }
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      frame(buf.slice(0, i));
      buf = buf.slice(i + 2);
    }
  }
  if (buf.trim()) frame(buf);
}

// ---- Navigation and routes ----

const routes = [];
const navItems = [];

/**
 * Registers a route: `pattern` like `/collections/:id`; `render(params, main, query)`
 * fills `main` (a fresh element each time, so a render still running when the user
 * moves on writes into a detached node). `opts.public` routes need no key.
 */
export function route(pattern, render, opts = {}) {
  const names = [];
  const re = new RegExp('^' + pattern.replace(/\/:([A-Za-z_]+)/g, (_, n) => { names.push(n); return '/([^/]+)'; }) + '/?$');
  routes.push({ pattern, re, names, render, public: !!opts.public, title: opts.title });
}

/** Adds a link to the top navigation. */
export function nav(label, path) {
  navItems.push({ label, path });
  if (started) drawNav();
}

/** Goes to a route (`/collections/col_x`). */
export function go(path) {
  const want = '#' + path;
  if (location.hash === want) render(); else location.hash = want;
}

/** The href of a route, for links. */
export function href(path) { return '#' + path; }

function current() {
  // The query string is decoded by URLSearchParams alone: decoding the whole hash first
  // would turn an escaped `&` or `+` in a value into a separator.
  const raw = location.hash.replace(/^#/, '');
  const at = raw.indexOf('?');
  const path = decodeURIComponent(at < 0 ? raw : raw.slice(0, at)) || '/';
  return { path, query: new URLSearchParams(at < 0 ? '' : raw.slice(at + 1)) };
}

let started = false;

function drawNav() {
  const list = document.getElementById('nav-list');
  const { path } = current();
  list.replaceChildren(...(signedIn() ? navItems : []).map((item) => {
    const active = path === item.path || path.startsWith(item.path + '/');
    return h('li', {}, h('a', { href: href(item.path), 'aria-current': active ? 'page' : null }, item.label));
  }), h('li', {}, h('a', { href: '/docs' }, 'API reference')));
  const who = document.getElementById('who');
  who.replaceChildren(...(signedIn()
    ? [h('span', { class: 'muted' }, email() || 'signed in'), ' ', h('button', { type: 'button', class: 'link', onclick: signOut }, 'Sign out')]
    : [h('a', { href: href('/signin') }, 'Sign in')]));
}

function render() {
  const { path, query } = current();
  drawNav();
  document.getElementById('nav').classList.remove('open');
  document.getElementById('menu').setAttribute('aria-expanded', 'false');
  const main = document.getElementById('main');
  for (const r of routes) {
    const m = r.re.exec(path);
    if (!m) continue;
    if (!r.public && !signedIn()) { go(`/signin?next=${encodeURIComponent(path)}`); return; }
    const params = Object.fromEntries(r.names.map((n, i) => [n, m[i + 1]]));
    const view = h('div', { class: 'view' });
    main.replaceChildren(view);
    document.getElementById('notice').replaceChildren();
    document.title = `${r.title || 'Quarry'} · Quarry console`;
    try {
      const done = r.render(params, view, query);
      if (done && typeof done.catch === 'function') done.catch((e) => showError(e, view.appendChild(h('div'))));
    } catch (e) {
      showError(e, view.appendChild(h('div')));
    }
    const heading = view.querySelector('h1');
    (heading || main).focus({ preventScroll: false });
    return;
  }
  main.replaceChildren(h('div', { class: 'view' },
    h('h1', { tabindex: '-1' }, 'Not found'),
    h('p', {}, 'There is no page at this address. ', h('a', { href: href('/') }, 'Go to the start page'), '.')));
}

/** Starts the router (app.js calls it once every module is loaded). */
export function start() {
  started = true;
  window.addEventListener('hashchange', render);
  const menu = document.getElementById('menu');
  menu.addEventListener('click', () => {
    const open = document.getElementById('nav').classList.toggle('open');
    menu.setAttribute('aria-expanded', String(open));
  });
  document.getElementById('skip').addEventListener('click', (e) => {
    e.preventDefault();
    const main = document.getElementById('main');
    (main.querySelector('h1') || main).focus();
  });
  render();
}

/** A page heading that takes focus when the page changes (for keyboard and screen readers). */
export function title(text, ...rest) {
  return h('h1', { tabindex: '-1' }, text, ...rest);
}

// ---- Signing in ----

route('/signin', (params, main, query) => {
  const next = query.get('next') || '/';
  const keyInput = h('input', { type: 'password', name: 'key', autocomplete: 'off', required: true, spellcheck: 'false', placeholder: 'al_…' });
  const inMsg = h('div', { class: 'msg' });
  const signIn = h('form', {
    class: 'card', 'aria-labelledby': 'signin-h',
    onsubmit: async (e) => {
      e.preventDefault();
      const button = signIn.querySelector('button');
      await busy(button, async () => {
        const k = keyInput.value.trim();
        if (!k) throw new Error('enter a key first');
        const account = await api('GET', '/v1/account', null, { headers: { authorization: `Bearer ${k}` } });
        setKey(k, account && account.email);
        go(next);
      }, inMsg);
    },
  },
  h('h2', { id: 'signin-h' }, 'Sign in with a key'),
  field('API key', keyInput, 'The al_… key you got when you signed up. It stays in this tab only.'),
  h('button', { type: 'submit' }, 'Sign in'), inMsg);

  const mailInput = h('input', { type: 'email', name: 'email', autocomplete: 'email', required: true, placeholder: 'you@example.org' });
  const upMsg = h('div', { class: 'msg' });
  const signUp = h('form', {
    class: 'card', 'aria-labelledby': 'signup-h',
    onsubmit: async (e) => {
      e.preventDefault();
      const button = signUp.querySelector('button');
      await busy(button, async () => {
        const out = await api('POST', '/v1/signup', { email: mailInput.value.trim() }, { anonymous: true });
        const k = out.api_key;
        const keyText = h('code', { class: 'secret', id: 'new-key' }, k);
        const copy = h('button', { type: 'button', class: 'secondary', onclick: async () => {
          try { await navigator.clipboard.writeText(k); notify('Key copied.'); } catch { notify('Select the key and copy it.'); }
        } }, 'Copy key');
        const cont = h('button', { type: 'button', id: 'continue', onclick: () => { setKey(k, out.account && out.account.email); go(next); } }, 'I have stored it: continue');
        upMsg.replaceChildren(h('div', { class: 'ok', role: 'status' },
          h('p', {}, 'Your account is ready. This is your key; it is not shown again, so store it now:'),
          h('p', {}, keyText), h('div', { class: 'row' }, copy, cont)));
        cont.focus();
      }, upMsg);
    },
  },
  h('h2', { id: 'signup-h' }, 'Create an account'),
  field('Email', mailInput),
  h('button', { type: 'submit' }, 'Create account'), upMsg);

  main.append(title('Quarry console'),
    h('p', { class: 'lead' }, 'Search, research and agents over your own documents, on your own hardware.'),
    h('div', { class: 'grid2' }, signIn, signUp));
}, { public: true, title: 'Sign in' });

// The page helpers the /api/v1 modules share.

/** A mistake in what was typed, said as the page's own sentence (status 0: explain()
 * shows the message as it is). */
export function invalid(message) {
  return new ApiError(0, 'invalid_input', message, null);
}

/** Every record of a SOAT list (pages of 100). */
export async function listAll(path) {
  const out = [];
  for (let offset = 0; ; offset += 100) {
    const page = await api('GET', `${path}${path.includes('?') ? '&' : '?'}limit=100&offset=${offset}`);
    out.push(...page.data);
    if (out.length >= page.total || !page.data.length) return out;
  }
}

/** An RFC 3339 time in the reader's locale ('—' for none). */
export function when(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

// A message for the page a write goes to: the router clears the notice area when a
// page is drawn, so the next page shows it (showFlash) once it has begun.
let flashed = null;
export function flash(text) { flashed = text; }
export function showFlash() {
  if (flashed) notify(flashed);
  flashed = null;
}

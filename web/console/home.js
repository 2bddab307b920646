// The start page: the account at a glance (plan, this month's use against the plan's
// allowances, keys) and where to go next.
import { api, h, route, title, href } from './core.js';

const USES = [
  ['search', 'search', 'Searches'],
  ['extract', 'extract', 'Extractions'],
  ['research', 'research', 'Research runs'],
  ['stored_chars', 'storedChars', 'Stored characters'],
];

function amount(n) { return typeof n === 'number' ? n.toLocaleString('en-US') : '—'; }

route('/', async (params, main) => {
  main.append(title('Welcome'));
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading your account…'));
  main.append(body);
  const a = await api('GET', '/v1/account');
  const usage = a.usage || {};
  const allow = a.allowances || {};
  const rows = USES.map(([u, al, label]) => h('tr', {},
    h('th', { scope: 'row' }, label),
    h('td', {}, amount(usage[u] || 0), ' of ', allow[al] == null ? 'no limit' : amount(allow[al]), ' this month')));
  body.replaceChildren(
    h('section', { class: 'card', 'aria-labelledby': 'acct-h' },
      h('h2', { id: 'acct-h' }, 'Your account'),
      h('dl', { class: 'pairs' },
        h('dt', {}, 'Email'), h('dd', {}, a.email || '—'),
        h('dt', {}, 'Plan'), h('dd', {}, allow.name || a.plan || '—'),
        h('dt', {}, 'Rate'), h('dd', {}, allow.rate ? `${allow.rate.perMinute} requests a minute, bursts of ${allow.rate.burst}` : '—'),
        h('dt', {}, 'Keys'), h('dd', {}, `${a.keys_active} active of ${a.keys_total}`)),
      h('table', { class: 'usage' }, h('caption', { class: 'muted' }, 'Use this month'), h('tbody', {}, rows))),
    h('section', { class: 'card' },
      h('h2', {}, 'Next'),
      h('ul', { class: 'links' },
        h('li', {}, h('a', { href: href('/collections') }, 'Collections'), ': add documents, search them, read pages, run research.'),
        h('li', {}, h('a', { href: href('/agents') }, 'Agents'), ': tool-using agents and a playground.'),
        h('li', {}, h('a', { href: href('/scan') }, 'Identifiers scan'), ': what personal identifiers a text carries.'),
        h('li', {}, h('a', { href: '/docs' }, 'API reference'), ': every endpoint, from the served OpenAPI documents.'))));
}, { title: 'Welcome' });

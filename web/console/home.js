// The start page: the account at a glance and where to go next.
import { api, h, route, title, href } from './core.js';

route('/', async (params, main) => {
  main.append(title('Welcome'));
  const body = h('div', { class: 'stack' }, h('p', { class: 'muted' }, 'Loading your account…'));
  main.append(body);
  const a = await api('GET', '/v1/account');
  const usage = a.usage || {};
  const allow = a.allowances || a.limits || {};
  body.replaceChildren(
    h('section', { class: 'card', 'aria-labelledby': 'acct-h' },
      h('h2', { id: 'acct-h' }, 'Your account'),
      h('dl', { class: 'pairs' },
        h('dt', {}, 'Email'), h('dd', {}, a.email || '—'),
        h('dt', {}, 'Plan'), h('dd', {}, a.plan && (a.plan.name || a.plan.id) ? (a.plan.name || a.plan.id) : String(a.plan || '—')),
        ...Object.entries(usage).filter(([, v]) => typeof v === 'number').flatMap(([k, v]) => [
          h('dt', {}, `Used: ${k.replace(/_/g, ' ')}`), h('dd', {}, allow[k] != null ? `${v} of ${allow[k]}` : String(v))]))),
    h('section', { class: 'card' },
      h('h2', {}, 'Next'),
      h('ul', { class: 'links' },
        h('li', {}, h('a', { href: href('/collections') }, 'Collections'), ': add documents, search them, read pages, run research.'),
        h('li', {}, h('a', { href: href('/agents') }, 'Agents'), ': tool-using agents and a playground.'),
        h('li', {}, h('a', { href: href('/scan') }, 'Identifiers scan'), ': what personal identifiers a text carries.'),
        h('li', {}, h('a', { href: '/docs' }, 'API reference'), ': every endpoint, from the served OpenAPI documents.'))));
}, { title: 'Welcome' });

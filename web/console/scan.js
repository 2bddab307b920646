// Identifiers scan (POST /v1/scan): what personal identifiers a text carries, counted by
// kind, and the start of the text masked. The API never returns where they are.
import { api, h, route, nav, busy, field, title } from './core.js';
import { check } from './collections.js';

nav('Scan', '/scan');

const KINDS = [
  ['ssn', 'Social Security numbers'], ['phone', 'Phone numbers'], ['email', 'Email addresses'], ['mrn', 'Medical record numbers'],
  ['dob', 'Dates of birth'], ['credit_card', 'Card numbers'], ['ip', 'IP addresses'], ['url', 'URLs'], ['passport', 'Passport numbers'],
  ['npi', 'NPIs (US provider ids)'], ['address', 'Postal addresses'], ['person', 'Names of persons'], ['date', 'Dates'],
];
const LABEL = Object.fromEntries(KINDS);

route('/scan', (params, main) => {
  const text = h('textarea', { name: 'text', rows: '8', required: true, placeholder: 'Call 555-123-4567 or write to ada@example.com about the 2024-01-15 visit.' });
  const boxes = KINDS.map(([k, label]) => [k, h('input', { type: 'checkbox', name: 'kind', value: k })]);
  const out = h('div', { class: 'out', id: 'scan-out', 'aria-live': 'polite' });
  const form = h('form', {
    class: 'card', 'aria-labelledby': 'scan-h',
    onsubmit: (e) => {
      e.preventDefault();
      busy(form.querySelector('button[type=submit]'), async () => {
        const body = { text: text.value };
        const kinds = boxes.filter(([, b]) => b.checked).map(([k]) => k);
        if (kinds.length) body.kinds = kinds;
        out.replaceChildren(h('p', { class: 'muted' }, 'Scanning…'));
        out.replaceChildren(...resultView(await api('POST', '/v1/scan', body)));
      }, out);
    },
  },
  h('h2', { id: 'scan-h' }, 'Text to scan'),
  field('Text', text, 'Up to 1,000,000 characters. Nothing is stored.'),
  h('fieldset', { class: 'kinds-pick' },
    h('legend', {}, 'Only these kinds (none ticked: every kind, all masked but dates and URLs)'),
    h('div', { class: 'checks' }, boxes.map(([k, b]) => check(LABEL[k], b)))),
  h('button', { type: 'submit' }, 'Scan'));
  main.append(title('Identifiers scan'),
    h('p', { class: 'lead' }, 'Counts the identifiers a text carries (13 kinds, each validated, not just pattern-matched) and shows its first 300 characters masked.'),
    form, out);
}, { title: 'Identifiers scan' });

function resultView(r) {
  const kinds = Object.entries(r.counts || {});
  return [h('section', { class: 'card', 'aria-labelledby': 'scan-r-h' },
    h('h2', { id: 'scan-r-h' }, r.total ? `${r.total} identifier${r.total === 1 ? '' : 's'} found` : 'No identifiers found'),
    kinds.length ? h('table', { class: 'counts' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Kind'), h('th', { scope: 'col' }, 'Count'))),
      h('tbody', {}, kinds.map(([k, n]) => h('tr', {}, h('td', {}, LABEL[k] || k, h('span', { class: 'muted' }, ` (${k})`)), h('td', {}, String(n)))))) : null,
    h('h3', {}, 'Masked preview'),
    h('pre', { class: 'masked' }, r.masked_preview || ''))];
}

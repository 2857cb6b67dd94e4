// The alarms panel of /ops (mounted into <section id="alarms">): the alarms with their state,
// value and history, the linked issue, and create / edit / test / delete, over /api/alarms
// (the admin session; writes send its CSRF token). Waits for the console to be shown (signed in).
import { createApi } from './lib/api.js';
import { el, icon } from './lib/dom.js';
import { formatUsd, formatUtcMinute } from './lib/format.js';

const root = document.getElementById('alarms');

const KINDS = {
  forecast_above: { label: 'Monthly forecast above a budget', unit: 'USD' },
  daily_cost_above: { label: 'Daily cost above', unit: 'USD' },
  public_dataset: { label: 'Public datasets more than', unit: 'datasets' },
  saturation_above: { label: 'Slot saturation at or above a share', unit: 'share (0–1)' },
  query_cost_above: { label: 'A query costing more than', unit: 'USD' },
};

const when = (ts) => (ts ? `${formatUtcMinute(ts)} UTC` : '–');

function valueText(kind, v) {
  if (v === null || v === undefined) return '–';
  if (kind === 'public_dataset') return `${v} public`;
  if (kind === 'saturation_above') return `${Math.round(v * 10) / 10} min`;
  return formatUsd(v);
}

function conditionText(c) {
  const where = c.project_id ? ` in ${c.project_id}` : '';
  switch (c.kind) {
    case 'forecast_above': return `Forecast > ${formatUsd(c.threshold)}${where}`;
    case 'daily_cost_above': return `Daily cost > ${formatUsd(c.threshold)}${where}`;
    case 'public_dataset': return `Public datasets > ${c.threshold}${where}`;
    case 'saturation_above': return `Slots ≥ ${Math.round(c.threshold * 100)} % for ${c.minutes ?? 15} min${where}`;
    case 'query_cost_above': return `A query > ${formatUsd(c.threshold)}${where}`;
    default: return c.kind;
  }
}

let info;

// the admin session's client (its CSRF token on writes, once start() has read the session)
const api = createApi();
/** a call's outcome as {ok, data} or {ok: false, error}, for the views that show either */
const attempt = (promise) => promise.then((data) => ({ ok: true, data }), (error) => ({ ok: false, error }));
const errorText = (err) => `${err.code}: ${err.message}`;

// ---- the panel ------------------------------------------------------------------------------

const heading = el('h2', { id: 'h-alarms' }, icon('bell'), ' Alarms');
const status = el('p', { class: 'muted', id: 'alarms-status', 'aria-live': 'polite' });
const flash = el('p', { class: 'error', id: 'alarms-error', role: 'alert', hidden: true });
const list = el('div', { id: 'alarms-list' });
const form = el('form', { id: 'alarm-form', class: 'alarm-form', hidden: true, 'aria-labelledby': 'alarm-form-title' });
const result = el('output', { id: 'alarm-test-result', class: 'alarm-test', 'aria-live': 'polite', hidden: true });
const newButton = el('button', { type: 'button', id: 'alarm-new', onclick: () => openForm() }, '+ New alarm');

function showError(text) {
  flash.hidden = !text;
  flash.textContent = text ?? '';
}

function stateBadge(a) {
  if (!a.enabled) return el('span', { class: 'badge off', text: 'paused' });
  if (a.last_error && a.value === null) return el('span', { class: 'badge error', text: 'cannot evaluate', title: a.last_error });
  return el('span', { class: `badge ${a.state}`, text: a.state });
}

function historyRow(a) {
  const items = a.history.length
    ? el('ol', { class: 'alarm-history' }, ...a.history.map((h) => el('li', { class: h.state },
      el('time', { datetime: h.at, text: when(h.at) }), ' ', el('b', { text: h.state }), ' ', el('span', { text: h.message }))))
    : el('p', { class: 'muted', text: 'Nothing happened yet.' });
  return el('tr', { class: 'history-row', 'data-history': a.id, hidden: true }, el('td', { colspan: '7' }, items));
}

function row(a) {
  const issue = a.issue_key ? el('span', { class: 'issue', text: `${a.issue_key}${a.issue_open ? '' : ' (resolved)'}` }) : el('span', { class: 'muted', text: '–' });
  const tr = el('tr', { 'data-id': a.id, 'data-state': a.state },
    el('td', {}, el('b', { text: a.name }), el('div', { class: 'muted small', text: `${a.cron} (${a.timezone})` })),
    el('td', { text: conditionText(a.condition) }),
    el('td', {}, stateBadge(a)),
    el('td', { class: 'num', text: valueText(a.condition.kind, a.value) }),
    el('td', { text: when(a.last_evaluated) }),
    el('td', {}, issue),
    el('td', { class: 'actions' },
      el('button', { type: 'button', class: 'small ghost', 'data-action': 'history', 'aria-label': `History of ${a.name}`, onclick: () => toggleHistory(a.id) }, icon('clock')),
      el('button', { type: 'button', class: 'small ghost', 'data-action': 'test', 'aria-label': `Test ${a.name}`, onclick: () => testAlarm(a) }, icon('play')),
      el('button', { type: 'button', class: 'small ghost', 'data-action': 'edit', 'aria-label': `Edit ${a.name}`, onclick: () => openForm(a) }, icon('edit')),
      el('button', { type: 'button', class: 'small ghost', 'data-action': 'delete', 'aria-label': `Delete ${a.name}`, onclick: () => removeAlarm(a) }, icon('trash'))));
  return [tr, historyRow(a)];
}

function toggleHistory(id) {
  const r = list.querySelector(`tr[data-history="${CSS.escape(id)}"]`);
  if (r) r.hidden = !r.hidden;
}

function render() {
  const s = info.storage;
  const t = info.tracker;
  status.textContent = `Kept in ${s.kind === 'file' ? `the file ${s.path}${s.state === 'missing' ? ' (not there yet: made at the first alarm)' : ''}` : 'config_db'} · `
    + (t.enabled ? `issues in ${t.project_key} (${t.issue_type}, ${t.priority}) at ${t.url}${t.api_token_set ? '' : ' — no API token set'}` : 'issue tracker off')
    + (info.default_recipients.length ? ` · default recipients: ${info.default_recipients.join(', ')}` : '');
  if (!info.alarms.length) {
    list.replaceChildren(el('p', { class: 'muted', id: 'alarms-empty', text: 'No alarm yet.' }));
    return;
  }
  const head = el('tr', {}, ...['Alarm', 'Condition', 'State', 'Value', 'Last evaluated', 'Issue', ''].map((h) => el('th', { scope: 'col', text: h })));
  list.replaceChildren(el('div', { class: 'table' }, el('table', { id: 'alarms-table' }, el('thead', {}, head), el('tbody', {}, ...info.alarms.flatMap(row)))));
}

async function refresh() {
  const r = await attempt(api.get('/api/alarms'));
  if (r.error?.status === 401) return;
  if (!r.ok) {
    newButton.hidden = true;
    status.textContent = '';
    list.replaceChildren(el('p', { class: 'off', id: 'alarms-off', text: r.error.message || errorText(r.error) }));
    return;
  }
  newButton.hidden = false;
  info = r.data;
  render();
}

// ---- create, edit, test, delete ---------------------------------------------------------------

function field(label, input, hint) {
  return el('label', {}, el('span', { text: label }), input, hint ? el('small', { class: 'muted', text: hint }) : null);
}

function conditionFrom(f) {
  const kind = f.kind.value;
  const c = { kind, threshold: Number(f.threshold.value) };
  if (kind === 'saturation_above' && f.minutes.value) c.minutes = Number(f.minutes.value);
  if (f.project.value.trim()) c.project_id = f.project.value.trim();
  return c;
}

function openForm(a) {
  const f = {
    name: el('input', { id: 'alarm-name', required: true, maxlength: '200', value: a?.name ?? '' }),
    kind: el('select', { id: 'alarm-kind' }, ...Object.entries(KINDS).map(([k, v]) => el('option', { value: k, text: v.label, selected: a?.condition.kind === k }))),
    threshold: el('input', { id: 'alarm-threshold', type: 'number', min: '0', step: 'any', required: true, value: a ? String(a.condition.threshold) : '' }),
    minutes: el('input', { id: 'alarm-minutes', type: 'number', min: '1', step: '1', value: a?.condition.minutes ? String(a.condition.minutes) : '15' }),
    project: el('input', { id: 'alarm-project', maxlength: '200', value: a?.condition.project_id ?? '', placeholder: 'every project' }),
    cron: el('input', { id: 'alarm-cron', maxlength: '200', value: a?.cron ?? '*/15 * * * *' }),
    timezone: el('input', { id: 'alarm-timezone', maxlength: '64', value: a?.timezone ?? '', placeholder: 'scheduler.timezone' }),
    recipients: el('input', { id: 'alarm-recipients', value: (a?.recipients ?? info.default_recipients).join(', ') }),
    enabled: el('input', { id: 'alarm-enabled', type: 'checkbox', checked: a ? a.enabled : true }),
  };
  const unit = el('small', { class: 'muted', id: 'alarm-unit' });
  const minutesField = field('For (minutes)', f.minutes);
  const sync = () => {
    unit.textContent = KINDS[f.kind.value].unit;
    minutesField.hidden = f.kind.value !== 'saturation_above';
  };
  f.kind.addEventListener('change', sync);
  sync();
  const body = () => {
    const out = {
      name: f.name.value.trim(), condition: conditionFrom(f), cron: f.cron.value.trim(),
      recipients: f.recipients.value.split(/[,;\s]+/).filter(Boolean), enabled: f.enabled.checked,
    };
    if (f.timezone.value.trim()) out.timezone = f.timezone.value.trim();
    return out;
  };
  form.replaceChildren(
    el('h3', { id: 'alarm-form-title', text: a ? `Edit “${a.name}”` : 'New alarm' }),
    el('div', { class: 'grid' },
      field('Name', f.name),
      field('Condition', f.kind),
      el('label', {}, el('span', { text: 'Threshold' }), f.threshold, unit),
      minutesField,
      field('Project', f.project, 'a project_id, or empty for every project'),
      field('Evaluated on (cron)', f.cron),
      field('Time zone', f.timezone),
      field('E-mail to', f.recipients, 'addresses, comma separated'),
      el('label', { class: 'check' }, f.enabled, el('span', { text: 'Enabled' }))),
    el('div', { class: 'row' },
      el('button', { type: 'submit', id: 'alarm-save', text: a ? 'Save' : 'Create' }),
      el('button', { type: 'button', class: 'ghost', id: 'alarm-try', onclick: async () => {
        const c = conditionFrom(f);
        showTest(await attempt(api.post(a ? `/api/alarms/${encodeURIComponent(a.id)}/test` : '/api/alarms/test', { condition: c })));
      } }, icon('play'), ' Test'),
      el('button', { type: 'button', class: 'ghost', id: 'alarm-cancel', text: 'Cancel', onclick: () => { form.hidden = true; } })));
  form.onsubmit = async (e) => {
    e.preventDefault();
    const r = await attempt(a ? api.put(`/api/alarms/${encodeURIComponent(a.id)}`, body()) : api.post('/api/alarms', body()));
    if (!r.ok) {
      showError(errorText(r.error));
      return;
    }
    showError('');
    form.hidden = true;
    await refresh();
  };
  form.hidden = false;
  f.name.focus();
}

const WOULD = {
  fire: 'An evaluation now would FIRE the alarm',
  resolve: 'An evaluation now would RESOLVE the alarm',
  stay_firing: 'It would stay firing (no new notification)',
  stay_ok: 'It would stay ok',
  nothing: 'Nothing can be measured now',
};

function showTest(r) {
  result.hidden = false;
  if (!r.ok) {
    result.replaceChildren(el('p', { class: 'error', text: errorText(r.error) }));
    return;
  }
  const t = r.data;
  result.replaceChildren(
    el('p', {}, el('b', { text: `${WOULD[t.would]}.` }), ' ', el('span', { text: t.message })),
    t.recipients.length ? el('p', { class: 'muted', text: `E-mail to: ${t.recipients.join(', ')}` }) : null,
    el('p', { class: 'muted', text: `Issue tracker: ${t.issue}` }),
    t.targets.length ? el('ul', {}, ...t.targets.map((x) => el('li', { text: `${x.label}: ${x.error ?? (x.value === null ? '–' : String(x.value))}` }))) : null);
}

async function testAlarm(a) {
  result.hidden = false;
  result.replaceChildren(el('p', { class: 'muted', text: `Testing “${a.name}”…` }));
  showTest(await attempt(api.post(`/api/alarms/${encodeURIComponent(a.id)}/test`)));
}

async function removeAlarm(a) {
  if (!window.confirm(`Delete the alarm “${a.name}” and its history?`)) return;
  const r = await attempt(api.del(`/api/alarms/${encodeURIComponent(a.id)}`));
  if (!r.ok) showError(errorText(r.error));
  await refresh();
}

// ---- start once the console is shown ------------------------------------------------------------

async function start() {
  if (!(await api.session('/admin/session'))) return;
  await refresh();
}

if (root) {
  root.classList.add('card');
  root.setAttribute('aria-labelledby', 'h-alarms');
  root.append(el('link', { rel: 'stylesheet', href: '/static/ops-alarms.css' }), heading, status, flash, el('div', { class: 'row' }, newButton), form, result, list);
  const consoleEl = document.getElementById('console');
  let started = false;
  const maybeStart = () => {
    if (started || (consoleEl && consoleEl.hidden)) return;
    started = true;
    void start();
  };
  if (consoleEl) new MutationObserver(maybeStart).observe(consoleEl, { attributes: true, attributeFilter: ['hidden'] });
  maybeStart();
}

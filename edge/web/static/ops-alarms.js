// The alarms panel of /ops (mounted into <section id="alarms">): the alarms with their state,
// value and history, the linked issue, and create / edit / test / delete, over /api/alarms
// (the admin session; writes send its CSRF token). Waits for the console to be shown (signed in).
const root = document.getElementById('alarms');

const KINDS = {
  forecast_above: { label: 'Monthly forecast above a budget', unit: 'USD' },
  daily_cost_above: { label: 'Daily cost above', unit: 'USD' },
  public_dataset: { label: 'Public datasets more than', unit: 'datasets' },
  saturation_above: { label: 'Slot saturation at or above a share', unit: 'share (0–1)' },
  query_cost_above: { label: 'A query costing more than', unit: 'USD' },
};

const ICON = {
  bell: 'M6 8a6 6 0 0 1 12 0c0 7 3 9 3 9H3s3-2 3-9M10.3 21a1.94 1.94 0 0 0 3.4 0',
  play: 'M7 4l13 8-13 8z',
  edit: 'M4 20h4L19 9l-4-4L4 16zM14 6l4 4',
  trash: 'M4 7h16M10 11v6M14 11v6M6 7l1 13h10l1-13M9 7V4h6v3',
  clock: 'M12 7v5l3 2M12 21a9 9 0 1 0 0-18 9 9 0 0 0 0 18',
};

function svg(name) {
  const ns = 'http://www.w3.org/2000/svg';
  const s = document.createElementNS(ns, 'svg');
  s.setAttribute('viewBox', '0 0 24 24');
  s.setAttribute('class', 'icon');
  s.setAttribute('aria-hidden', 'true');
  const p = document.createElementNS(ns, 'path');
  p.setAttribute('d', ICON[name]);
  p.setAttribute('fill', 'none');
  p.setAttribute('stroke', 'currentColor');
  p.setAttribute('stroke-width', '2');
  p.setAttribute('stroke-linecap', 'round');
  p.setAttribute('stroke-linejoin', 'round');
  s.append(p);
  return s;
}

function el(tag, attrs = {}, ...children) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') n.textContent = v;
    else if (k === 'class') n.className = v;
    else if (k.startsWith('on')) n.addEventListener(k.slice(2), v);
    else n.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) if (c != null) n.append(c);
  return n;
}

const usd = (n) => `$${Number(n).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
const when = (ts) => (ts ? new Date(ts).toISOString().replace('T', ' ').slice(0, 16) + ' UTC' : '–');

function valueText(kind, v) {
  if (v === null || v === undefined) return '–';
  if (kind === 'public_dataset') return `${v} public`;
  if (kind === 'saturation_above') return `${Math.round(v * 10) / 10} min`;
  return usd(v);
}

function conditionText(c) {
  const where = c.project_id ? ` in ${c.project_id}` : '';
  switch (c.kind) {
    case 'forecast_above': return `Forecast > ${usd(c.threshold)}${where}`;
    case 'daily_cost_above': return `Daily cost > ${usd(c.threshold)}${where}`;
    case 'public_dataset': return `Public datasets > ${c.threshold}${where}`;
    case 'saturation_above': return `Slots ≥ ${Math.round(c.threshold * 100)} % for ${c.minutes ?? 15} min${where}`;
    case 'query_cost_above': return `A query > ${usd(c.threshold)}${where}`;
    default: return c.kind;
  }
}

let csrf = '';
let info;

async function api(method, url, body) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrf) headers['x-csrf-token'] = csrf;
  const res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
    .catch((e) => ({ ok: false, status: 0, json: async () => ({ error: { code: 'NETWORK', message: e.message } }) }));
  const data = await res.json().catch(() => ({}));
  return { ok: res.ok, status: res.status, data };
}

const errorText = (r) => `${r.data.error?.code ?? `HTTP ${r.status}`}: ${r.data.error?.message ?? 'the request failed'}`;

// ---- the panel ------------------------------------------------------------------------------

const heading = el('h2', { id: 'h-alarms' }, svg('bell'), ' Alarms');
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
      el('button', { type: 'button', class: 'small ghost', 'data-action': 'history', 'aria-label': `History of ${a.name}`, onclick: () => toggleHistory(a.id) }, svg('clock')),
      el('button', { type: 'button', class: 'small ghost', 'data-action': 'test', 'aria-label': `Test ${a.name}`, onclick: () => testAlarm(a) }, svg('play')),
      el('button', { type: 'button', class: 'small ghost', 'data-action': 'edit', 'aria-label': `Edit ${a.name}`, onclick: () => openForm(a) }, svg('edit')),
      el('button', { type: 'button', class: 'small ghost', 'data-action': 'delete', 'aria-label': `Delete ${a.name}`, onclick: () => removeAlarm(a) }, svg('trash'))));
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
  const r = await api('GET', '/api/alarms');
  if (r.status === 401) return;
  if (!r.ok) {
    newButton.hidden = true;
    status.textContent = '';
    list.replaceChildren(el('p', { class: 'off', id: 'alarms-off', text: r.data.error?.message ?? errorText(r) }));
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
        const r = a ? await api('POST', `/api/alarms/${encodeURIComponent(a.id)}/test`, { condition: c }) : await api('POST', '/api/alarms/test', { condition: c });
        showTest(r);
      } }, svg('play'), ' Test'),
      el('button', { type: 'button', class: 'ghost', id: 'alarm-cancel', text: 'Cancel', onclick: () => { form.hidden = true; } })));
  form.onsubmit = async (e) => {
    e.preventDefault();
    const r = a ? await api('PUT', `/api/alarms/${encodeURIComponent(a.id)}`, body()) : await api('POST', '/api/alarms', body());
    if (!r.ok) {
      showError(errorText(r));
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
    result.replaceChildren(el('p', { class: 'error', text: errorText(r) }));
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
  showTest(await api('POST', `/api/alarms/${encodeURIComponent(a.id)}/test`));
}

async function removeAlarm(a) {
  if (!window.confirm(`Delete the alarm “${a.name}” and its history?`)) return;
  const r = await api('DELETE', `/api/alarms/${encodeURIComponent(a.id)}`);
  if (!r.ok) showError(errorText(r));
  await refresh();
}

// ---- start once the console is shown ------------------------------------------------------------

async function start() {
  const s = await fetch('/admin/session').catch(() => undefined);
  if (!s?.ok) return;
  csrf = (await s.json()).csrf_token ?? '';
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

// The admin panel's Scheduler tab (every schedule with its owner: pause/resume, run now,
// history; the scheduler settings read-only) and Email & SMTP tab (the email section, secrets
// masked, edited as runtime overrides; Send Test Email). Both take the panel's helpers
// ({ api, flash }: admin.js), whose client sends the admin session's CSRF header.
import { readableMessage } from './lib/api.js';
import { $, el } from './lib/dom.js';
import { formatZoned } from './lib/format.js';
import { describeCron, historyPoller, historyTable, lastRunBadge, stateBadge } from './schedules/parts.js';

const SCHEDULER_SETTINGS = [
  ['enabled', 'Scheduler on'],
  ['timezone', 'Time zone'],
  ['max_concurrent_jobs', 'Jobs at once (every process together)'],
  ['job_timeout_seconds', 'One job at most (seconds)'],
  ['keep_history_days', 'History kept (days)'],
  ['max_executions_per_schedule', 'History kept per schedule (runs)'],
];

const yesNo = (v) => (typeof v === 'boolean' ? (v ? 'yes' : 'no') : String(v ?? '—'));

export function schedulerTab({ api, flash }) {
  const root = $('#tab-scheduler');
  const settings = el('dl', { id: 'sched-settings', class: 'kv' });
  const body = el('tbody');
  const empty = el('p', { class: 'muted', id: 'sched-empty', text: 'No schedules yet (users create them in the dashboard\'s Schedules tab).', hidden: '' });
  // the API says where schedules are kept: in memory (config_db off) they are lost on restart
  const memory = el('p', { class: 'notice', id: 'sched-memory', role: 'status', hidden: '',
    text: 'Kept in memory only: config_db is off, so every schedule and its history is lost when the scheduler process restarts. Turn config_db on to keep them in PostgreSQL.' });
  const historyTitle = el('h3');
  const historyBody = el('div', { id: 'sched-history-body' });
  const history = el('div', { id: 'sched-history', hidden: '' }, historyTitle, historyBody);
  let historyOf;
  let doneSeen;
  root.replaceChildren(
    el('h3', { text: 'Settings ' }, el('span', { class: 'muted', text: '(read-only here: config.yaml, or a runtime override in the Config tab)' })),
    settings,
    el('h3', { text: 'Every schedule' }),
    memory,
    el('div', { class: 'scroll' }, el('table', { id: 'sched-list' },
      el('thead', {}, el('tr', {}, ...['name', 'owner', 'runs', 'next run', 'last run', 'state', ''].map((h) => el('th', { text: h })))), body)),
    empty,
    history);

  const guard = (fn) => async () => {
    try {
      await fn();
    } catch (err) {
      flash(readableMessage(err), true);
    }
  };

  async function loadHistory(id) {
    const r = await api.get(`/api/schedules/${encodeURIComponent(id)}/history?limit=50`);
    if (historyOf?.id !== id) return [];
    historyBody.replaceChildren(historyTable(r.executions));
    const done = r.executions.filter((x) => x.status === 'done').length;
    if (doneSeen !== undefined && done !== doneSeen) void list().catch(() => undefined);
    doneSeen = done;
    return r.executions;
  }
  const poller = historyPoller(loadHistory);

  function showHistory(s) {
    if (historyOf?.id !== s.id) doneSeen = undefined;
    historyOf = s;
    historyTitle.textContent = `History of "${s.name}"`;
    history.hidden = false;
    poller.start(s.id);
  }

  async function list() {
    const { schedules, storage } = await api.get('/api/schedules');
    memory.hidden = storage !== 'memory';
    empty.hidden = schedules.length > 0;
    body.replaceChildren(...schedules.map((s) => el('tr', { class: 'sched-row', 'data-id': s.id, 'data-name': s.name },
      el('td', {}, el('strong', { text: s.name })),
      el('td', { class: 'sched-owner', text: s.owner_user }),
      el('td', {}, el('span', { text: describeCron(s.cron) }), el('div', { class: 'muted' }, el('code', { text: s.cron }), ` ${s.timezone}`)),
      el('td', { text: s.enabled ? formatZoned(s.next_runs?.[0]) : '—' }),
      el('td', {}, lastRunBadge(s)),
      el('td', {}, stateBadge(s)),
      el('td', {}, el('span', { class: 'actions' },
        el('button', { class: 'small ghost sched-toggle', text: s.enabled ? 'Pause' : 'Resume', onclick: guard(async () => {
          await api.post(`/api/schedules/${encodeURIComponent(s.id)}/${s.enabled ? 'pause' : 'resume'}`, {});
          flash(`"${s.name}" ${s.enabled ? 'paused' : 'resumed'}`);
          await list();
        }) }),
        el('button', { class: 'small sched-run', text: 'Run now', onclick: guard(async () => {
          await api.post(`/api/schedules/${encodeURIComponent(s.id)}/run`, {});
          flash(`"${s.name}" queued to run now`);
          showHistory(s);
        }) }),
        el('button', { class: 'small ghost sched-history', text: 'History', onclick: guard(async () => showHistory(s)) }))))));
  }

  return {
    async load() {
      const { config } = await api.get('/admin/config');
      const sch = config.scheduler ?? {};
      settings.replaceChildren(...SCHEDULER_SETTINGS.flatMap(([k, label]) => [el('dt', { text: label }), el('dd', { 'data-key': k, text: yesNo(sch[k]) })]));
      if (sch.enabled === false) settings.append(el('dt', { text: 'Note' }), el('dd', { class: 'muted', text: 'scheduler.enabled is false: schedules are kept, and nothing runs on its cron.' }));
      await list();
    },
  };
}

// ---- Email & SMTP --------------------------------------------------------------------------

/** The email keys the tab edits: [key under email., label, kind]. */
const EMAIL_FIELDS = [
  ['enabled', 'E-mail on (off: e-mails are logged, not sent)', 'bool'],
  ['smtp.host', 'SMTP host', 'text'],
  ['smtp.port', 'SMTP port (25, 465 or 587)', 'int'],
  ['smtp.use_tls', 'STARTTLS (port 587)', 'bool'],
  ['smtp.use_ssl', 'TLS from the start (port 465)', 'bool'],
  ['smtp.user', 'SMTP user', 'text'],
  ['smtp.password', 'SMTP password', 'secret'],
  ['smtp.from_email', 'From address', 'text'],
  ['smtp.from_name', 'From name', 'text'],
  ['smtp.reply_to', 'Reply-To', 'text'],
  ['smtp.custom_headers', 'Extra headers (JSON object)', 'json'],
  ['templates.success_subject', 'Success subject', 'text'],
  ['templates.success_body', 'Success body', 'area'],
  ['templates.failure_subject', 'Failure subject', 'text'],
  ['templates.failure_body', 'Failure body ({{error_message}})', 'area'],
  ['max_emails_per_day', 'E-mails per day (all processes)', 'int'],
  ['max_recipients_per_email', 'Recipients per e-mail', 'int'],
];

const MASK = '********';

function getPath(obj, key) {
  return key.split('.').reduce((o, k) => (o == null ? undefined : o[k]), obj);
}

export function emailTab({ api, flash }) {
  const root = $('#tab-email');
  const inputs = new Map();
  let loaded = {};
  const fields = el('div', { id: 'email-fields', class: 'grid-form' });
  const provider = el('p', { class: 'muted', id: 'email-provider' });
  const to = el('input', { id: 'test-to', type: 'email', required: '', placeholder: 'to, e.g. you@example.com' });
  const subject = el('input', { id: 'test-subject', required: '', value: 'Cortado test e-mail', 'aria-label': 'Subject' });
  const text = el('textarea', { id: 'test-body', rows: '3', 'aria-label': 'Body' });
  text.value = 'This is a test e-mail from Cortado: the SMTP settings work.';
  const result = el('div', { id: 'test-email-result', 'aria-live': 'polite' });
  const send = el('button', { type: 'submit', id: 'test-send', text: 'Send test e-mail' });

  const saveForm = el('form', { id: 'email-form' }, provider, fields,
    el('div', { class: 'row' }, el('button', { type: 'submit', id: 'email-save', text: 'Save' }),
      el('span', { class: 'muted', text: 'Saved as runtime overrides: every process uses them at once. Secrets are never shown; leave the password empty to keep it.' })));
  const testForm = el('form', { id: 'test-email-form' },
    el('div', { class: 'row' }, to, subject), text, el('div', { class: 'row' }, send), result);
  root.replaceChildren(el('h3', { text: 'Settings' }), saveForm, el('h3', { text: 'Send a test e-mail' }), testForm);

  function input(key, kind, value) {
    let node;
    if (kind === 'bool') {
      node = el('input', { type: 'checkbox', name: key, ...(value ? { checked: '' } : {}) });
      return [node, el('label', { class: 'check' }, node, EMAIL_FIELDS.find(([k]) => k === key)[1])];
    }
    if (kind === 'area' || kind === 'json') {
      node = el('textarea', { name: key, rows: kind === 'json' ? '2' : '4' });
      node.value = kind === 'json' ? JSON.stringify(value ?? {}) : value ?? '';
    } else if (kind === 'secret') {
      node = el('input', { name: key, type: 'password', autocomplete: 'new-password', placeholder: value === MASK ? 'set (hidden): type to replace' : 'not set' });
    } else {
      node = el('input', { name: key, ...(kind === 'int' ? { type: 'number', min: '0' } : {}), value: value == null ? '' : String(value) });
    }
    return [node, el('label', {}, EMAIL_FIELDS.find(([k]) => k === key)[1], node)];
  }

  /** The value a field holds now, as the config wants it. */
  function valueOf(key, kind) {
    const node = inputs.get(key);
    if (kind === 'bool') return node.checked;
    if (kind === 'int') return Number(node.value);
    if (kind === 'json') {
      try {
        return JSON.parse(node.value || '{}');
      } catch {
        throw new Error(`${key}: not JSON (write an object, e.g. {"X-Team": "data"})`);
      }
    }
    return node.value;
  }

  saveForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    try {
      const changes = [];
      for (const [key, , kind] of EMAIL_FIELDS) {
        const now = valueOf(key, kind);
        if (kind === 'secret' ? now === '' : JSON.stringify(now) === JSON.stringify(loaded[key])) continue;
        changes.push([key, now]);
      }
      if (!changes.length) return flash('nothing changed');
      // switches turned off first: use_tls and use_ssl may never both be on, not even between two saves
      changes.sort((a, b) => Number(b[1] === false) - Number(a[1] === false));
      for (const [key, value] of changes) await api.put(`/admin/config/${encodeURIComponent(`email.${key}`)}`, { value });
      flash(`saved: ${changes.map(([k]) => `email.${k}`).join(', ')}`);
      await load();
    } catch (err) {
      flash(readableMessage(err), true);
      await load().catch(() => undefined);
    }
  });

  testForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    send.disabled = true;
    result.className = 'muted';
    result.textContent = 'Sending…';
    try {
      const r = await api.post('/admin/test-email', { to: to.value.trim(), subject: subject.value, body: text.value });
      // a failure may come back as an answer ({sent: false, error, error_kind}) as well as an HTTP error
      const raw = r.error ?? r.email_error;
      const failure = raw && typeof raw === 'object' ? [raw.code, raw.message].filter(Boolean).join(': ') : raw;
      const kind = r.error_kind ?? r.kind ?? r.smtp ?? raw?.details?.smtp;
      if (failure) {
        result.className = 'error';
        result.replaceChildren(el('span', { text: `Not sent: ${failure}` }), ...(kind ? [el('div', { class: 'smtp-kind', text: `SMTP failure: ${kind}` })] : []));
      } else if (r.sent === false) {
        result.className = 'muted';
        result.textContent = 'Logged, not sent: email.enabled is false (the log has the recipient and subject).';
      } else {
        result.className = 'ok-text';
        result.textContent = `Sent to ${to.value.trim()}${r.message_id ? ` (message id ${r.message_id})` : ''}.`;
      }
    } catch (err) {
      const kind = err.details?.smtp ?? err.details?.kind;
      result.className = 'error';
      result.replaceChildren(el('code', { text: err.code ?? 'ERROR' }), ` ${err.message}`,
        ...(kind ? [el('div', { class: 'smtp-kind', text: `SMTP failure: ${kind}` })] : []));
    } finally {
      send.disabled = false;
    }
  });

  async function load() {
    const { config } = await api.get('/admin/config');
    const email = config.email ?? {};
    provider.textContent = `Provider: ${email.provider ?? 'smtp'}`;
    loaded = {};
    inputs.clear();
    fields.replaceChildren(...EMAIL_FIELDS.map(([key, , kind]) => {
      const value = getPath(email, key);
      loaded[key] = value;
      const [node, label] = input(key, kind, value);
      inputs.set(key, node);
      return label;
    }));
  }

  return { load };
}

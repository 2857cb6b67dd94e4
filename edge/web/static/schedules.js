// The dashboard's Schedules tab (/#schedules): a signed-in user's scheduled reports — list,
// create with a cron helper (presets, the five fields, live validation and the next five runs),
// the pinned SQL shown after creation (editable), edit, pause/resume, delete, Run Now, History.
// Who: an admin or assistant session (cookie, CSRF header on writes), a plugins.auth session,
// or an API token pasted here (kept in this tab's sessionStorage, sent as a bearer token).
// The admin panel's Scheduler tab (admin-scheduler.js) reuses the helpers exported here.

const TOKEN_KEY = 'cortado.api_token';
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const MONTHS = ['', 'January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const FIELDS = ['minute', 'hour', 'day of month', 'month', 'day of week'];

/** The cron helper's presets: a label and the five fields. */
export const PRESETS = [
  ['Every 15 minutes', '*/15 * * * *'],
  ['Every hour', '0 * * * *'],
  ['Every day at 08:00', '0 8 * * *'],
  ['Weekdays at 08:00', '0 8 * * 1-5'],
  ['Every Monday at 09:00', '0 9 * * 1'],
  ['First day of the month at 08:00', '0 8 1 * *'],
];

export function el(tag, attrs = {}, ...children) {
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

const pad = (n) => String(n).padStart(2, '0');

/** "2026-11-26T08:00:00+01:00" → "2026-11-26 08:00 +01:00" (the schedule's own zone, as the server said it). */
export function fmtTime(iso) {
  if (!iso) return '—';
  const m = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d)(?::\d\d(?:\.\d+)?)?(Z|[+-]\d\d:?\d\d)?$/.exec(iso);
  if (!m) return iso;
  return `${m[1]} ${m[2]}${m[3] ? ` ${m[3] === 'Z' ? 'UTC' : m[3]}` : ''}`;
}

function listWords(field, names) {
  return field.split(',').map((part) => {
    const range = /^(\d+)-(\d+)$/.exec(part);
    if (range) return `${names(range[1])} to ${names(range[2])}`;
    return /^\d+$/.test(part) ? names(part) : part;
  }).join(', ');
}

/** A five-field cron in words, for the common shapes; anything else is shown as written. */
export function describeCron(expr) {
  const f = String(expr ?? '').trim().split(/\s+/);
  if (f.length !== 5) return expr ?? '';
  const [min, hour, dom, mon, dow] = f;
  const num = (s) => /^\d+$/.test(s);
  let time;
  if (min === '*' && hour === '*') time = 'every minute';
  else if (/^\*\/\d+$/.test(min) && hour === '*') time = `every ${min.slice(2)} minutes`;
  else if (num(min) && hour === '*') time = Number(min) === 0 ? 'every hour, on the hour' : `every hour at ${pad(min)} past`;
  else if (num(min) && /^\*\/\d+$/.test(hour)) time = `every ${hour.slice(2)} hours at ${pad(min)} past`;
  else if (num(min) && num(hour)) time = `at ${pad(hour)}:${pad(min)}`;
  else if (num(min) && /^[\d,-]+$/.test(hour)) time = `at ${pad(min)} past hour ${hour}`;
  else return `cron ${expr}`;
  const parts = [time];
  if (dom === '*' && dow === '*') parts.push(mon === '*' ? 'every day' : '');
  if (dow === '1-5' && dom === '*') parts.push('on weekdays');
  else if (dow !== '*') {
    if (!/^[\d,-]+$/.test(dow)) return `cron ${expr}`;
    parts.push(`on ${listWords(dow, (d) => DAYS[Number(d)] ?? d)}`);
  }
  if (dom !== '*') {
    if (!/^[\d,-]+$/.test(dom)) return `cron ${expr}`;
    parts.push(`on day ${dom} of the month`);
  }
  if (mon !== '*') {
    if (!/^[\d,-]+$/.test(mon)) return `cron ${expr}`;
    parts.push(`in ${listWords(mon, (m) => MONTHS[Number(m)] ?? m)}`);
  }
  return parts.filter(Boolean).join(' ');
}

/** The last run of a schedule as a badge. */
export function lastRunBadge(s) {
  if (!s.last_run) return el('span', { class: 'muted', text: 'never run' });
  return el('span', {}, el('span', { class: `badge ${s.last_run.success ? 'ok' : 'bad'}`, text: s.last_run.success ? 'succeeded' : 'failed' }), ` ${fmtTime(s.last_run.at)}`);
}

export function stateBadge(s) {
  return el('span', { class: `badge ${s.enabled ? 'ok' : 'off'} sch-state`, text: s.enabled ? 'enabled' : 'paused' });
}

/** One execution record as a table row: time, trigger, result, rows, duration, e-mail, error. */
function executionRow(x) {
  const result = x.status !== 'done'
    ? el('span', { class: 'badge', text: x.status })
    : el('span', { class: `badge ${x.success ? 'ok' : 'bad'}`, text: x.success ? 'success' : 'failed' });
  const mail = x.status !== 'done' ? '—'
    : x.email_sent ? 'sent'
      : x.email_error ? `not sent: ${x.email_error}` : 'not sent';
  return el('tr', { class: `sch-exec ${x.status}`, 'data-id': x.id },
    el('td', { text: fmtTime(x.execution_time) }),
    el('td', { text: x.trigger }),
    el('td', {}, result),
    el('td', { class: 'num', text: x.rows_returned == null ? '—' : x.rows_returned.toLocaleString() }),
    el('td', { class: 'num', text: x.duration_ms == null ? '—' : `${Math.round(x.duration_ms).toLocaleString()} ms` }),
    el('td', { class: 'wrap', text: mail }),
    el('td', { class: 'wrap', text: x.error_message ?? '' }));
}

/** The History table of a schedule (newest first). */
export function historyTable(executions) {
  if (!executions.length) return el('p', { class: 'muted sch-history-empty', text: 'No runs yet.' });
  return el('div', { class: 'scroll' }, el('table', { class: 'sch-history-table' },
    el('thead', {}, el('tr', {}, ...['time', 'trigger', 'result', 'rows', 'duration', 'e-mail', 'error'].map((h) => el('th', { text: h })))),
    el('tbody', {}, ...executions.map(executionRow))));
}

/** An API error as an Error carrying its code, message and details. */
async function apiError(res) {
  const data = await res.json().catch(() => ({}));
  const e = data?.error ?? {};
  const err = new Error(e.message ? `${e.code}: ${e.message}` : `HTTP ${res.status}`);
  Object.assign(err, { status: res.status, code: e.code, detail: e.message, details: e.details });
  return err;
}

/**
 * Keeps a History panel fresh while one of its runs is queued or running: asks again each
 * second until every run shown is done (or the panel shows another schedule, or 2 minutes pass).
 */
export function historyPoller(load) {
  let timer;
  let until = 0;
  const stop = () => { clearTimeout(timer); timer = undefined; };
  const tick = async (key) => {
    const executions = await load(key).catch(() => []);
    if (executions.some((x) => x.status !== 'done') && Date.now() < until) timer = setTimeout(() => void tick(key), 1000);
    else timer = undefined;
  };
  return {
    start(key) {
      stop();
      until = Date.now() + 120_000;
      void tick(key);
    },
    stop,
  };
}

// ---- the tab -------------------------------------------------------------------------------

export function mount(root, ui) {
  let who = { kind: 'none' };
  let schedules = [];
  let editing; // the schedule being edited, or undefined when creating
  let historyOf; // the schedule whose History is shown
  let doneSeen; // how many of its runs were done at the last look

  async function api(method, path, body) {
    const headers = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (who.kind === 'token') headers.authorization = `Bearer ${who.token}`;
    else if (method !== 'GET' && who.csrf) headers['x-csrf-token'] = who.csrf;
    const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (!res.ok) throw await apiError(res);
    return res.status === 204 ? {} : res.json();
  }

  // ---- layout ----
  const flash = el('p', { id: 'sch-flash', class: 'muted', 'aria-live': 'polite' });
  const say = (text, bad = false) => {
    flash.textContent = text;
    flash.className = bad ? 'error' : 'muted';
  };
  const guard = (fn) => async (e) => {
    e?.preventDefault?.();
    try {
      await fn(e);
    } catch (err) {
      say(err.message, true);
    }
  };

  const authBox = el('section', { id: 'sch-auth', class: 'card' });
  const listBody = el('tbody');
  const empty = el('p', { id: 'sch-empty', class: 'muted', text: 'No schedules yet: create one to have a report e-mailed on a timetable.', hidden: true });
  // the API says where schedules are kept: in memory (config_db off) they are lost on restart
  const memory = el('p', { id: 'sch-memory', class: 'notice', role: 'status', hidden: true,
    text: 'This server keeps schedules in memory only (its configuration database is off): your schedules and their history are lost when it restarts.' });
  const main = el('section', { id: 'sch-main', class: 'card', hidden: true },
    el('div', { class: 'row' }, el('h2', { text: 'Schedules' }), el('div', { class: 'spacer' }),
      el('button', { type: 'button', id: 'sch-new', text: 'New schedule', onclick: guard(() => openEditor()) })),
    memory,
    el('div', { class: 'scroll' }, el('table', { id: 'sch-list' },
      el('thead', {}, el('tr', {}, ...['name', 'runs', 'next run', 'last run', 'state', ''].map((h) => el('th', { text: h })))),
      listBody)),
    empty);

  // the editor: create and edit
  const f = {
    name: el('input', { id: 'sch-name', maxlength: '200', required: true, placeholder: 'e.g. Weekly revenue' }),
    question: el('textarea', { id: 'sch-question', rows: '2', maxlength: '4000', required: true, placeholder: 'The question, e.g. revenue per store last week' }),
    tables: el('input', { id: 'sch-tables', placeholder: 'tables, comma-separated (optional)' }),
    recipients: el('input', { id: 'sch-recipients', required: true, placeholder: 'a@example.com, b@example.com' }),
    format: el('select', { id: 'sch-format' }, ...['csv', 'excel', 'html'].map((v) => el('option', { value: v, text: v }))),
    subject: el('input', { id: 'sch-subject', maxlength: '998', placeholder: 'subject (optional; {{schedule_name}}, {{date}} …)' }),
    timezone: el('input', { id: 'sch-timezone', maxlength: '64', placeholder: 'time zone (default: the server\'s)' }),
    preset: el('select', { id: 'sch-preset' }, el('option', { value: '', text: 'Custom' }), ...PRESETS.map(([label, cron]) => el('option', { value: cron, text: label }))),
    cron: el('input', { id: 'sch-cron', required: true, maxlength: '200', value: '0 8 * * 1-5', 'aria-describedby': 'sch-cron-help' }),
    fields: FIELDS.map((name, i) => el('input', { id: `sch-cron-${i}`, class: 'cron-field', 'aria-label': name, title: name, size: '6' })),
    sql: el('textarea', { id: 'sch-sql', rows: '6', class: 'mono', spellcheck: 'false' }),
    regenerate: el('input', { id: 'sch-regenerate', type: 'checkbox' }),
  };
  const cronError = el('p', { id: 'sch-cron-error', class: 'error', hidden: true });
  const cronWords = el('p', { id: 'sch-cron-words', class: 'muted' });
  const cronRuns = el('ol', { id: 'sch-cron-runs', class: 'runs' });
  const save = el('button', { type: 'submit', id: 'sch-save', text: 'Create' });
  const sqlBox = el('div', { id: 'sch-sql-box', hidden: true },
    el('label', { for: 'sch-sql', text: 'Pinned SQL (every run executes it; the guard checks your edits)' }), f.sql,
    el('label', { class: 'check' }, f.regenerate, 'Write the SQL again from the question'));
  const editorTitle = el('h3', { text: 'New schedule' });
  const editor = el('form', { id: 'sch-editor', class: 'card sem-form', hidden: true, autocomplete: 'off' },
    editorTitle,
    el('div', { class: 'grid-form' },
      el('label', {}, 'Name', f.name),
      el('label', {}, 'Recipients', f.recipients),
      el('label', {}, 'Format', f.format),
      el('label', {}, 'Tables', f.tables),
      el('label', {}, 'Subject', f.subject),
      el('label', {}, 'Time zone', f.timezone)),
    el('label', {}, 'Question', f.question),
    el('fieldset', { class: 'cron' },
      el('legend', { text: 'When' }),
      el('div', { class: 'row' }, el('label', {}, 'Preset ', f.preset), el('label', {}, 'Cron ', f.cron)),
      el('div', { class: 'row cron-fields' }, ...f.fields.map((input, i) => el('label', {}, el('span', { class: 'muted', text: FIELDS[i] }), input))),
      el('p', { id: 'sch-cron-help', class: 'muted', text: 'Five fields: minute (0-59), hour (0-23), day of month (1-31), month (1-12), day of week (0-7, 0 and 7 are Sunday). Ranges 1-5, steps */15 and lists 1,15 work.' }),
      cronError, cronWords,
      el('div', { id: 'sch-cron-next' }, el('span', { class: 'muted', text: 'Next runs:' }), cronRuns)),
    sqlBox,
    el('div', { class: 'row' }, save, el('button', { type: 'button', class: 'ghost', text: 'Cancel', onclick: () => closeEditor() })));

  // after creation: the SQL that was pinned
  const pinnedSql = el('textarea', { id: 'sch-pinned-sql', rows: '6', class: 'mono', spellcheck: 'false' });
  const pinnedWhy = el('p', { id: 'sch-pinned-explanation', class: 'explanation' });
  const pinnedTitle = el('h3');
  const pinned = el('section', { id: 'sch-pinned', class: 'card', hidden: true },
    pinnedTitle, pinnedWhy,
    el('label', { for: 'sch-pinned-sql', class: 'muted', text: 'Every run executes this SQL (no model call per run). Edit it if you like: the guard checks it.' }),
    pinnedSql,
    el('div', { class: 'row' },
      el('button', { type: 'button', id: 'sch-pinned-save', text: 'Save SQL', onclick: guard(savePinned) }),
      el('button', { type: 'button', class: 'ghost', text: 'Done', onclick: () => { pinned.hidden = true; } })));
  let pinnedId;

  const historyTitle = el('h3');
  const historyBody = el('div', { id: 'sch-history-body' });
  const historyActions = el('div', { class: 'row' });
  const historyBox = el('section', { id: 'sch-history', class: 'card', hidden: true }, historyTitle, historyActions, historyBody);
  const poller = historyPoller(loadHistory);

  root.replaceChildren(authBox, flash, main, editor, pinned, historyBox);

  // ---- who is signed in ----
  async function findCaller() {
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) return { kind: 'token', token, user: `API token ${token.slice(0, 8)}…` };
    const kinds = [['admin', '/admin/session'], ['assistant', '/assistant/session']];
    if (ui?.sign_in?.auth) kinds.push(['auth', '/auth/session']);
    for (const [kind, path] of kinds) {
      const r = await fetch(path).catch(() => undefined);
      if (r?.ok) {
        const s = await r.json();
        return { kind, user: s.username, csrf: s.csrf_token };
      }
    }
    return { kind: 'none' };
  }

  function drawAuth() {
    if (who.kind !== 'none') {
      const label = { admin: 'admin panel session: every schedule', assistant: 'assistant session', auth: 'database session', token: 'your schedules' }[who.kind];
      authBox.replaceChildren(el('div', { class: 'row' },
        el('span', { id: 'sch-who', text: `Signed in: ${who.user}` }), el('span', { class: 'muted', text: `(${label})` }), el('div', { class: 'spacer' }),
        who.kind === 'token' ? el('button', { type: 'button', class: 'ghost', id: 'sch-forget', text: 'Forget the token', onclick: guard(forgetToken) }) : null));
      return;
    }
    const token = el('input', { id: 'sch-token', type: 'password', placeholder: 'ctd_…', autocomplete: 'off', 'aria-label': 'API token' });
    const parts = [
      el('h3', { text: 'Sign in to see your schedules' }),
      el('p', { id: 'sch-signin-hint', class: 'muted', text: 'Scheduled reports belong to whoever made them, so this tab needs to know who you are: sign in with the assistant login, use an API token an admin issued you, or sign in to the admin panel (/admin) to see every schedule.' }),
    ];
    if (ui?.sign_in?.assistant_login) {
      const user = el('input', { id: 'sch-user', autocomplete: 'username', placeholder: 'username', 'aria-label': 'Username' });
      const pass = el('input', { id: 'sch-pass', type: 'password', autocomplete: 'current-password', placeholder: 'password', 'aria-label': 'Password' });
      parts.push(el('form', { class: 'row', id: 'sch-login', onsubmit: guard(async () => {
        const res = await fetch('/assistant/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: user.value, password: pass.value }) });
        if (!res.ok) throw await apiError(res);
        pass.value = '';
        await refresh();
      }) }, user, pass, el('button', { type: 'submit', text: 'Sign in' })));
    }
    parts.push(el('form', { class: 'row', id: 'sch-token-form', onsubmit: guard(async () => {
      const value = token.value.trim();
      if (!value) return;
      sessionStorage.setItem(TOKEN_KEY, value);
      token.value = '';
      await refresh();
      if (who.kind === 'none') say('That token was not accepted (unknown, expired or revoked).', true);
    }) }, el('label', { for: 'sch-token', class: 'muted', text: 'API token' }), token, el('button', { type: 'submit', class: 'ghost', text: 'Use token' })));
    authBox.replaceChildren(...parts);
  }

  async function forgetToken() {
    sessionStorage.removeItem(TOKEN_KEY);
    await refresh();
  }

  // ---- the list ----
  function drawList() {
    empty.hidden = schedules.length > 0;
    listBody.replaceChildren(...schedules.map((s) => el('tr', { class: 'sch-row', 'data-id': s.id, 'data-name': s.name },
      el('td', {}, el('strong', { class: 'sch-name', text: s.name }),
        who.kind === 'admin' && s.owner_user ? el('div', { class: 'muted', text: `by ${s.owner_user}` }) : null),
      el('td', {}, el('span', { class: 'sch-words', text: describeCron(s.cron) }), el('div', { class: 'muted' }, el('code', { text: s.cron }), ` ${s.timezone}${s.own_timezone ? '' : ' (the server\'s)'}`)),
      el('td', { class: 'sch-next', text: s.enabled ? fmtTime(s.next_runs?.[0]) : '—' }),
      el('td', { class: 'sch-last' }, lastRunBadge(s)),
      el('td', {}, stateBadge(s)),
      el('td', {}, el('span', { class: 'actions' },
        el('button', { type: 'button', class: 'small ghost sch-edit', text: 'Edit', onclick: guard(() => openEditor(s)) }),
        el('button', { type: 'button', class: 'small ghost sch-toggle', text: s.enabled ? 'Pause' : 'Resume', onclick: guard(() => toggle(s)) }),
        el('button', { type: 'button', class: 'small sch-run', text: 'Run now', onclick: guard(() => runNow(s)) }),
        el('button', { type: 'button', class: 'small ghost sch-history', text: 'History', onclick: guard(() => showHistory(s)) }),
        el('button', { type: 'button', class: 'small ghost sch-delete', text: 'Delete', onclick: guard(() => remove(s)) }))),
    )));
  }

  async function loadList() {
    const r = await api('GET', '/api/schedules');
    schedules = r.schedules ?? [];
    memory.hidden = r.storage !== 'memory';
    drawList();
  }

  async function refresh() {
    who = await findCaller();
    if (who.kind !== 'none') {
      try {
        await loadList();
      } catch (err) {
        if (err.status !== 401) throw err;
        // a stale token or session: forget it and ask again
        if (who.kind === 'token') sessionStorage.removeItem(TOKEN_KEY);
        who = { kind: 'none' };
      }
    }
    drawAuth();
    main.hidden = who.kind === 'none';
    if (who.kind === 'none') {
      editor.hidden = true;
      pinned.hidden = true;
      historyBox.hidden = true;
      poller.stop();
    }
  }

  // ---- the cron helper ----
  let previewSeq = 0;
  let previewTimer;
  let cronValid = false;

  function syncFromCron() {
    const parts = f.cron.value.trim().split(/\s+/);
    f.fields.forEach((input, i) => { input.value = parts.length === 5 ? parts[i] : ''; });
    f.preset.value = PRESETS.some(([, c]) => c === parts.join(' ')) ? parts.join(' ') : '';
  }
  function syncFromFields() {
    f.cron.value = f.fields.map((i) => i.value.trim() || '*').join(' ');
    f.preset.value = PRESETS.some(([, c]) => c === f.cron.value) ? f.cron.value : '';
  }
  function schedulePreview() {
    clearTimeout(previewTimer);
    previewTimer = setTimeout(() => void preview(), 250);
  }
  async function preview() {
    const seq = ++previewSeq;
    const body = { cron: f.cron.value.trim() };
    if (f.timezone.value.trim()) body.timezone = f.timezone.value.trim();
    let r;
    try {
      r = await api('POST', '/api/schedules/cron-preview', body);
    } catch (err) {
      r = { valid: false, error: err.detail ?? err.message, next_runs: [] };
    }
    if (seq !== previewSeq) return; // an older answer
    cronValid = r.valid;
    save.disabled = !r.valid;
    f.cron.setAttribute('aria-invalid', String(!r.valid));
    cronError.hidden = r.valid;
    cronError.textContent = r.valid ? '' : r.error ?? 'not a valid cron';
    cronWords.textContent = r.valid ? `${r.description || describeCron(body.cron)} (${r.timezone})` : '';
    cronRuns.replaceChildren(...(r.valid ? r.next_runs : []).map((t) => el('li', { text: fmtTime(t) })));
  }
  f.preset.addEventListener('change', () => {
    if (!f.preset.value) return;
    f.cron.value = f.preset.value;
    syncFromCron();
    schedulePreview();
  });
  f.cron.addEventListener('input', () => { syncFromCron(); schedulePreview(); });
  for (const input of f.fields) input.addEventListener('input', () => { syncFromFields(); schedulePreview(); });
  f.timezone.addEventListener('input', schedulePreview);

  // ---- create and edit ----
  const splitList = (s) => s.split(/[,;\s]+/).map((x) => x.trim()).filter(Boolean);

  function openEditor(s) {
    editing = s;
    editorTitle.textContent = s ? `Edit "${s.name}"` : 'New schedule';
    save.textContent = s ? 'Save' : 'Create';
    f.name.value = s?.name ?? '';
    f.question.value = s?.question ?? '';
    f.tables.value = (s?.tables ?? []).join(', ');
    f.recipients.value = (s?.email_recipients ?? []).join(', ');
    f.format.value = s?.format ?? 'csv';
    f.subject.value = s?.subject ?? '';
    // the field holds the schedule's own zone; empty: it follows the server's (scheduler.timezone)
    f.timezone.value = s?.own_timezone ?? '';
    f.timezone.placeholder = s && !s.own_timezone ? `time zone (now the server's: ${s.timezone})` : 'time zone (default: the server\'s)';
    f.cron.value = s?.cron ?? '0 8 * * 1-5';
    f.sql.value = s?.sql ?? '';
    f.regenerate.checked = false;
    sqlBox.hidden = !s;
    syncFromCron();
    editor.hidden = false;
    pinned.hidden = true;
    say('');
    void preview();
    f.name.focus();
  }
  function closeEditor() {
    editor.hidden = true;
    editing = undefined;
  }

  editor.addEventListener('submit', guard(async () => {
    if (!cronValid) throw new Error('The cron expression is not valid yet (see above).');
    const body = {
      name: f.name.value.trim(),
      question: f.question.value.trim(),
      tables: splitList(f.tables.value),
      cron: f.cron.value.trim().split(/\s+/).join(' '),
      email_recipients: splitList(f.recipients.value),
      format: f.format.value,
      subject: f.subject.value.trim(),
    };
    // a zone is the schedule's own only when asked for (else it follows scheduler.timezone); emptied: none of its own again
    const zone = f.timezone.value.trim();
    if (zone && zone !== editing?.own_timezone) body.timezone = zone;
    else if (!zone && editing?.own_timezone) body.timezone = null;
    save.disabled = true;
    try {
      if (!editing) {
        say('Creating: the question is turned into SQL once…');
        const created = await api('POST', '/api/schedules', body);
        closeEditor();
        await loadList();
        showPinned(created, 'created');
        say(`"${created.name}" created.`);
      } else {
        if (f.regenerate.checked) body.regenerate = true;
        else if (f.sql.value.trim() && f.sql.value.trim() !== editing.sql.trim()) body.sql = f.sql.value.trim();
        const updated = await api('PATCH', `/api/schedules/${encodeURIComponent(editing.id)}`, body);
        const sqlChanged = updated.sql !== editing.sql;
        closeEditor();
        await loadList();
        if (sqlChanged) showPinned(updated, 'updated');
        say(`"${updated.name}" saved.`);
      }
    } finally {
      save.disabled = !cronValid;
    }
  }));

  function showPinned(s, what) {
    pinnedId = s.id;
    pinnedTitle.textContent = `The SQL "${s.name}" runs (${what})`;
    pinnedWhy.textContent = s.explanation ?? '';
    pinnedWhy.hidden = !s.explanation;
    pinnedSql.value = s.sql;
    pinned.hidden = false;
  }

  async function savePinned() {
    const updated = await api('PATCH', `/api/schedules/${encodeURIComponent(pinnedId)}`, { sql: pinnedSql.value.trim() });
    pinnedSql.value = updated.sql;
    await loadList();
    say('SQL saved: the next run executes it.');
  }

  // ---- the row actions ----
  async function toggle(s) {
    await api('POST', `/api/schedules/${encodeURIComponent(s.id)}/${s.enabled ? 'pause' : 'resume'}`, {});
    await loadList();
    say(`"${s.name}" ${s.enabled ? 'paused' : 'resumed'}.`);
  }

  async function runNow(s) {
    await api('POST', `/api/schedules/${encodeURIComponent(s.id)}/run`, {});
    say(`"${s.name}" queued to run now.`);
    await showHistory(s);
  }

  async function remove(s) {
    if (!confirm(`Delete "${s.name}"? Its run history is deleted with it.`)) return;
    await api('DELETE', `/api/schedules/${encodeURIComponent(s.id)}`);
    if (historyOf?.id === s.id) { historyBox.hidden = true; poller.stop(); }
    if (pinnedId === s.id) pinned.hidden = true;
    await loadList();
    say(`"${s.name}" deleted, with its history.`);
  }

  async function loadHistory(id) {
    const r = await api('GET', `/api/schedules/${encodeURIComponent(id)}/history?limit=50`);
    if (historyOf?.id !== id) return [];
    const executions = r.executions ?? [];
    historyBody.replaceChildren(historyTable(executions));
    // offered only when the newest finished run failed because the database changed under its SQL
    const latest = executions.find((x) => x.status === 'done');
    historyActions.replaceChildren(...(latest && !latest.success && latest.drift === true
      ? [el('button', { type: 'button', class: 'ghost small', id: 'sch-regen', text: 'Write the SQL again from the question', onclick: guard(async () => {
        const updated = await api('PATCH', `/api/schedules/${encodeURIComponent(id)}`, { regenerate: true });
        await loadList();
        showPinned(updated, 'written again');
      }) })]
      : []));
    // a run finished since the last look: the list's last run and next run changed
    const done = executions.filter((x) => x.status === 'done').length;
    if (doneSeen !== undefined && done !== doneSeen) void loadList().catch(() => undefined);
    doneSeen = done;
    return executions;
  }

  async function showHistory(s) {
    if (historyOf?.id !== s.id) doneSeen = undefined;
    historyOf = s;
    historyTitle.textContent = `History of "${s.name}"`;
    historyBox.hidden = false;
    poller.start(s.id);
  }

  return { refresh: guard(refresh) };
}

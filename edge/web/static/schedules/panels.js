// The Schedules tab's other panels: who is signed in (and how to sign in), the list of
// schedules with their actions, the SQL a schedule runs (shown after it is made), and a
// schedule's run history.
import { el } from '../lib/dom.js';
import { formatZoned } from '../lib/format.js';
import { describeCron, historyPoller, historyTable, lastRunBadge, stateBadge } from './parts.js';

const TOKEN_KEY = 'cortado.api_token';
const WHO_LABEL = { admin: 'admin panel session: every schedule', assistant: 'assistant session', auth: 'database session', token: 'your schedules' };

/**
 * Who is asking: an API token pasted here (kept in this tab's sessionStorage, sent as a bearer
 * token), else the first session there is (admin, assistant, then plugins.auth's).
 * Sets the client's bearer token or CSRF token to match.
 */
export async function findCaller(api, ui) {
  api.setBearer(undefined);
  api.setCsrf(undefined);
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) {
    api.setBearer(token);
    return { kind: 'token', user: `API token ${token.slice(0, 8)}…` };
  }
  const kinds = [['admin', '/admin/session'], ['assistant', '/assistant/session']];
  if (ui?.sign_in?.auth) kinds.push(['auth', '/auth/session']);
  for (const [kind, path] of kinds) {
    const s = await api.session(path);
    if (s) return { kind, user: s.username };
  }
  return { kind: 'none' };
}

export const forgetToken = () => sessionStorage.removeItem(TOKEN_KEY);


/**
 * Who the schedules are shown for, or one sentence why there are none and the way to the page's
 * one sign-in (the header; `ui.signIn` opens it). Nothing here signs in itself.
 */
export function callerBox({ ui }) {
  const node = el('section', { id: 'sch-auth', class: 'card' });

  function signedIn(who) {
    node.replaceChildren(el('div', { class: 'row' },
      el('span', { id: 'sch-who', text: `Signed in: ${who.user}` }), el('span', { class: 'muted', text: `(${WHO_LABEL[who.kind]})` })));
  }

  function draw(who) {
    if (who.kind !== 'none') return signedIn(who);
    node.replaceChildren(
      el('h3', { text: 'Sign in to see your schedules' }),
      el('p', { id: 'sch-signin-hint', class: 'muted', text: 'Scheduled reports belong to whoever made them, so this tab needs to know who you are: sign in to see yours and make new ones.' }),
      ui?.signIn ? el('button', { type: 'button', id: 'sch-sign-in', text: 'Sign in', onclick: () => ui.signIn() }) : null);
  }

  return { node, draw };
}

/** The list of schedules; `actions` = {edit, toggle, run, history, remove}, each given the schedule. */
/**
 * The dates a report covers, as the API computed them (period: actors/scheduler/periods.ts): the
 * next run's period for a relative question, the one period a fixed question names, or a
 * warning when the SQL froze a relative question's dates.
 */
export function periodText(s) {
  const p = s.period;
  if (!p) return '';
  if (p.kind === 'fixed') return `Always covers ${p.label} (a fixed period)`;
  if (p.kind === 'frozen') return `The question asks for ${p.phrase}, but the SQL names fixed dates: every run reports the same days. Regenerate the SQL from the question to follow ${p.phrase}.`;
  return s.enabled && s.next_runs?.length ? `Next run covers ${p.label} (${p.phrase})` : `Covers ${p.phrase}: ${p.label} if run now`;
}

export function scheduleList({ onNew, actions }) {
  const body = el('tbody');
  const empty = el('p', { id: 'sch-empty', class: 'muted', text: 'No schedules yet: create one to have a report e-mailed on a timetable.', hidden: true });
  // the API says where schedules are kept: in memory (config_db off) they are lost on restart
  const memory = el('p', { id: 'sch-memory', class: 'notice', role: 'status', hidden: true,
    text: 'This server keeps schedules in memory only (its configuration database is off): your schedules and their history are lost when it restarts.' });
  const create = el('button', { type: 'button', id: 'sch-new', text: 'New schedule', onclick: onNew });
  // a database sign-in may list schedules but not make one (the scheduler refuses: a schedule
  // runs when nobody is signed in, and a session ends): say so instead of offering the button
  const readOnly = el('p', { id: 'sch-read-only', class: 'notice', role: 'note', hidden: true,
    text: 'Schedules run when you are not signed in, so a database sign-in cannot make one: issue yourself an API token in the Tokens tab, sign in with it, and make the schedule then.' });
  const node = el('section', { id: 'sch-main', class: 'card', hidden: true },
    el('div', { class: 'row' }, el('h2', { text: 'Schedules' }), el('div', { class: 'spacer' }), create),
    readOnly,
    memory,
    el('div', { class: 'scroll' }, el('table', { id: 'sch-list' },
      el('thead', {}, el('tr', {}, ...['name', 'runs', 'next run', 'last run', 'state', ''].map((h) => el('th', { text: h })))),
      body)),
    empty);

  const button = (cls, text, act, s) => el('button', { type: 'button', class: cls, text, onclick: () => act(s) });
  const row = (s, who) => el('tr', { class: 'sch-row', 'data-id': s.id, 'data-name': s.name },
    el('td', {}, el('strong', { class: 'sch-name', text: s.name }),
      who.kind === 'admin' && s.owner_user ? el('div', { class: 'muted', text: `by ${s.owner_user}` }) : null),
    // data-label: a phone shows each row as a card, each cell under its column's name (style.css)
    el('td', { 'data-label': 'runs' }, el('span', { class: 'sch-words', text: describeCron(s.cron) }), el('div', { class: 'muted' }, el('code', { text: s.cron }), ` ${s.timezone}${s.own_timezone ? '' : ' (the server\'s)'}`)),
    el('td', { class: 'sch-next', 'data-label': 'next run' }, s.enabled ? formatZoned(s.next_runs?.[0]) : '—',
      s.period ? el('div', { class: `sch-period ${s.period.kind === 'frozen' ? 'warn-text' : 'muted'}`, text: periodText(s) }) : null),
    el('td', { class: 'sch-last', 'data-label': 'last run' }, lastRunBadge(s)),
    el('td', { 'data-label': 'state' }, stateBadge(s)),
    el('td', { class: 'sch-actions' }, el('span', { class: 'actions' },
      button('small ghost sch-edit', 'Edit', actions.edit, s),
      button('small ghost sch-toggle', s.enabled ? 'Pause' : 'Resume', actions.toggle, s),
      button('small sch-run', 'Run now', actions.run, s),
      button('small ghost sch-history', 'History', actions.history, s),
      button('small ghost sch-delete', 'Delete', actions.remove, s))));

  return {
    node,
    draw(schedules, who, storage) {
      create.hidden = who.kind === 'auth';
      readOnly.hidden = who.kind !== 'auth';
      empty.textContent = who.kind === 'auth' ? 'No schedules yet.' : 'No schedules yet: create one to have a report e-mailed on a timetable.';
      memory.hidden = storage !== 'memory';
      empty.hidden = schedules.length > 0;
      body.replaceChildren(...schedules.map((s) => row(s, who)));
    },
  };
}

/** The SQL a schedule runs, shown after it is made or its SQL changed; editable (the guard checks it). */
export function pinnedSqlPanel({ api, guard, say, onSaved }) {
  const sql = el('textarea', { id: 'sch-pinned-sql', rows: '6', class: 'mono', spellcheck: 'false' });
  const why = el('p', { id: 'sch-pinned-explanation', class: 'explanation' });
  const period = el('p', { id: 'sch-pinned-period', class: 'muted' });
  const title = el('h3');
  let id;
  const node = el('section', { id: 'sch-pinned', class: 'card', hidden: true },
    title, why, period,
    el('label', { for: 'sch-pinned-sql', class: 'muted', text: 'Every run executes this SQL (no model call per run), with {{period_start}}, {{period_end}} and {{period_last}} set to the dates of that run\'s period. Edit it if you like: the guard checks it.' }),
    sql,
    el('div', { class: 'row' },
      el('button', { type: 'button', id: 'sch-pinned-save', text: 'Save SQL', onclick: guard(async () => {
        const updated = await api.patch(`/api/schedules/${encodeURIComponent(id)}`, { sql: sql.value.trim() });
        sql.value = updated.sql;
        await onSaved();
        say('SQL saved: the next run executes it.');
      }) }),
      el('button', { type: 'button', class: 'ghost', text: 'Done', onclick: () => { node.hidden = true; } })));
  return {
    node,
    get id() { return id; },
    show(s, what) {
      id = s.id;
      title.textContent = `The SQL "${s.name}" runs (${what})`;
      why.textContent = s.explanation ?? '';
      why.hidden = !s.explanation;
      period.textContent = periodText(s);
      period.hidden = !s.period;
      sql.value = s.sql;
      node.hidden = false;
    },
    hide() { node.hidden = true; },
  };
}

/**
 * A schedule's run history, kept fresh while a run is queued or running. `onRunFinished()` when
 * a run finished since the last look (the list's last and next run changed); `onRegenerated(s)`
 * after the SQL was written again from the question (offered when the newest run failed because
 * the database changed under its SQL).
 */
export function historyPanel({ api, guard, onRunFinished, onRegenerated }) {
  const title = el('h3');
  const body = el('div', { id: 'sch-history-body' });
  const actions = el('div', { class: 'row' });
  const node = el('section', { id: 'sch-history', class: 'card', hidden: true }, title, actions, body);
  let of; // the schedule shown
  let doneSeen; // how many of its runs were done at the last look

  async function load(id) {
    const r = await api.get(`/api/schedules/${encodeURIComponent(id)}/history?limit=50`);
    if (of?.id !== id) return [];
    const executions = r.executions ?? [];
    body.replaceChildren(historyTable(executions));
    const latest = executions.find((x) => x.status === 'done');
    actions.replaceChildren(...(latest && !latest.success && latest.drift === true
      ? [el('button', { type: 'button', class: 'ghost small', id: 'sch-regen', text: 'Write the SQL again from the question', onclick: guard(async () => {
        onRegenerated(await api.patch(`/api/schedules/${encodeURIComponent(id)}`, { regenerate: true }));
      }) })]
      : []));
    const done = executions.filter((x) => x.status === 'done').length;
    if (doneSeen !== undefined && done !== doneSeen) onRunFinished();
    doneSeen = done;
    return executions;
  }
  const poller = historyPoller(load);

  return {
    node,
    get of() { return of; },
    show(s) {
      if (of?.id !== s.id) doneSeen = undefined;
      of = s;
      title.textContent = `History of "${s.name}"`;
      node.hidden = false;
      poller.start(s.id);
    },
    hide() {
      node.hidden = true;
      poller.stop();
    },
  };
}

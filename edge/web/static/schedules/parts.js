// What the dashboard's Schedules tab (schedules.js) and the admin panel's Scheduler tab
// (admin-scheduler.js) both show: the cron helper's presets, a cron in words, the state and
// last-run badges, and a schedule's run history (with a poller while a run is under way).
import { el } from '../lib/dom.js';
import { formatInt, formatMs, formatZoned } from '../lib/format.js';

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const MONTHS = ['', 'January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
export const FIELDS = ['minute', 'hour', 'day of month', 'month', 'day of week'];

/** The cron helper's presets: a label and the five fields. */
export const PRESETS = [
  ['Every 15 minutes', '*/15 * * * *'],
  ['Every hour', '0 * * * *'],
  ['Every day at 08:00', '0 8 * * *'],
  ['Weekdays at 08:00', '0 8 * * 1-5'],
  ['Every Monday at 09:00', '0 9 * * 1'],
  ['First day of the month at 08:00', '0 8 1 * *'],
];

const pad = (n) => String(n).padStart(2, '0');

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
  return el('span', {}, el('span', { class: `badge ${s.last_run.success ? 'ok' : 'bad'}`, text: s.last_run.success ? 'succeeded' : 'failed' }), ` ${formatZoned(s.last_run.at)}`);
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
    el('td', { text: formatZoned(x.execution_time) }),
    el('td', { text: x.trigger }),
    el('td', {}, result),
    el('td', { class: 'num', text: x.rows_returned == null ? '—' : formatInt(x.rows_returned) }),
    el('td', { class: 'num', text: x.duration_ms == null ? '—' : formatMs(x.duration_ms) }),
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

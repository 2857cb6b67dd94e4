// The admin panel's Audit log tab: searched on the server (GET /admin/audit: the question's words,
// the user, a time range, the outcome code, the kind of event) a page at a time, each row the time,
// who, the question (or what happened) and the outcome; "Details" opens everything recorded for
// that request: the question, the SQL, rows, timings, the request and trace ids.
import { readableMessage } from './lib/api.js';
import { $, el } from './lib/dom.js';
import { formatInt, formatLocal, formatMs } from './lib/format.js';

const PAGE = 25;

/** The kinds of events, as the search's "What" offers them (protocol/subjects.ts EVENTS). */
export const AUDIT_KINDS = [
  ['question.completed', 'Questions'],
  ['', 'Everything'],
  ['query.generated', 'SQL written'],
  ['query.executed', 'SQL run'],
  ['query.rejected', 'SQL refused'],
  ['query.failed', 'Failed questions'],
  ['identity.login', 'Sign-ins'],
  ['identity.token', 'API tokens'],
  ['config.changed', 'Config changes'],
  ['mask.changed', 'Mask rule changes'],
  ['semantic.changed', 'Semantic layer changes'],
  ['schedule.ran', 'Scheduled reports'],
  ['mail.sent', 'E-mail sent'],
  ['mail.failed', 'E-mail not sent'],
  ['alert.raised', 'Security alerts'],
  ['alarm.fired', 'Alarms fired'],
  ['alarm.resolved', 'Alarms resolved'],
];
const KIND_WORDS = { ...Object.fromEntries(AUDIT_KINDS.filter(([k]) => k)), 'question.completed': 'Answered' };
/** a question's steps in the order they run (protocol/schemas/analytics.ts STEPS) */
const STEPS = ['intent', 'schema', 'generate', 'execute', 'mask', 'insights', 'total'];
const STEP_WORDS = { intent: 'understanding', schema: 'finding tables', generate: 'writing SQL', execute: 'database', mask: 'masking', insights: 'insights', total: 'total' };

/** What an entry is about, in words: its question, else the kind of event and its subject. */
function about(e) {
  const p = e.payload ?? {};
  if (typeof p.question === 'string' && p.question) return p.question;
  const what = KIND_WORDS[e.type] ?? e.type;
  const detail = p.key ?? (p.kind ? `${p.kind}${p.source ? `, ${p.source}` : ''}${p.reason ? `: ${p.reason}` : ''}` : undefined) ?? p.action ?? p.name ?? p.reason ?? p.message;
  return detail ? `${what}: ${detail}` : what;
}

function outcome(code) {
  if (!code) return el('span', { class: 'muted', text: '—' });
  return el('span', { class: `badge ${code === 'OK' ? 'ok' : 'bad'}`, text: code === 'OK' ? 'OK' : code });
}

/** A datetime-local value (the reader's zone) as ISO 8601, or undefined. */
function isoFrom(value) {
  if (!value) return undefined;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

export function auditTab({ api, flash }) {
  let offset = 0;

  function query() {
    const q = new URLSearchParams();
    const text = (id) => $(id).value.trim();
    if (text('#audit-q')) q.set('q', text('#audit-q'));
    if (text('#audit-user')) q.set('user', text('#audit-user'));
    if (text('#audit-code')) q.set('code', text('#audit-code').toUpperCase());
    if ($('#audit-type').value) q.set('type', $('#audit-type').value);
    const from = isoFrom($('#audit-from').value);
    const to = isoFrom($('#audit-to').value);
    if ($('#audit-from').value && !from) throw new Error('"From" is not a date and time.');
    if ($('#audit-to').value && !to) throw new Error('"To" is not a date and time.');
    if (from) q.set('from', from);
    if (to) q.set('to', to);
    return q;
  }

  async function load() {
    const q = query();
    $('#audit-csv').href = `/admin/audit.csv?${q}`;
    q.set('limit', String(PAGE));
    q.set('offset', String(offset));
    const { entries, total } = await api.get(`/admin/audit?${q}`);
    $('#audit tbody').replaceChildren(...entries.map((e) => {
      const words = about(e);
      return el('tr', {},
        el('td', {}, el('time', { datetime: e.ts, text: formatLocal(e.ts) })),
        el('td', { text: e.user ?? '—' }),
        el('td', { class: 'audit-about' }, words),
        el('td', {}, outcome(e.code)),
        el('td', {}, el('button', { type: 'button', class: 'ghost small', text: 'Details', 'aria-label': `Details: ${words.slice(0, 80)}`, onclick: () => void detail(e) })));
    }));
    $('#audit-empty').hidden = entries.length > 0;
    const last = offset + entries.length;
    $('#audit-count').textContent = total === 0 ? 'Nothing matches.' : `${formatInt(offset + 1)}–${formatInt(last)} of ${formatInt(total)}`;
    $('#audit-prev').disabled = offset === 0;
    $('#audit-next').disabled = last >= total;
  }

  /** Everything recorded for the entry's request, gathered into one view. */
  async function detail(e) {
    const box = $('#audit-detail');
    try {
      const all = e.request_id ? (await api.get(`/admin/audit?request_id=${encodeURIComponent(e.request_id)}&limit=100`)).entries : [e];
      const of = (type) => all.filter((x) => x.type === type);
      const last = (type) => of(type)[0]?.payload;
      const completed = last('question.completed');
      const executed = last('query.executed');
      const generated = last('query.generated');
      const rejected = last('query.rejected');
      const failed = last('query.failed');
      const question = completed?.question ?? generated?.question ?? e.payload?.question;
      const sql = executed?.sql ?? rejected?.sql ?? generated?.sql;
      const rows = executed?.row_count ?? completed?.row_count;
      const trace = all.find((x) => x.trace_id)?.trace_id;
      const durations = completed?.durations ? Object.entries(completed.durations).sort(([a], [b]) => STEPS.indexOf(a) - STEPS.indexOf(b)) : [];
      const timings = durations.length
        ? durations.map(([k, v]) => `${STEP_WORDS[k] ?? k} ${formatMs(Math.round(v))}`).join(' · ')
        : executed?.duration_ms !== undefined ? `database ${formatMs(Math.round(executed.duration_ms))}` : undefined;
      const code = completed?.code ?? failed?.code ?? rejected?.code ?? e.code;
      const kv = (k, v) => (v === undefined || v === null || v === '' ? [] : [el('dt', { text: k }), el('dd', {}, v)]);
      const tables = executed?.tables ?? completed?.tables;
      // replaceChildren writes a null as the text "null": only the parts there are
      box.replaceChildren(...[
        el('div', { class: 'detail-head' },
          el('h3', { id: 'audit-detail-title', tabindex: '-1', text: question ? 'Question details' : KIND_WORDS[e.type] ?? e.type }),
          el('button', { type: 'button', class: 'ghost small', id: 'audit-detail-close', text: 'Close', onclick: () => { box.hidden = true; } })),
        el('dl', { class: 'kv' },
          ...kv('Question', question),
          ...kv('When', formatLocal(e.ts)),
          ...kv('User', e.user),
          ...kv('Outcome', code ? outcome(code) : undefined),
          ...kv('Why', rejected?.reason ?? failed?.message),
          ...kv('Rows', rows === undefined ? undefined : `${formatInt(rows)}${executed?.truncated ? ' (cut at the limit)' : ''}`),
          ...kv('Timings', timings),
          ...kv('Tables read', tables?.length ? tables.join(', ') : undefined),
          ...kv('Asked from', [...new Set([e.channel, completed?.widget].filter(Boolean))].join(', ')),
          ...kv('Request ID', e.request_id ? el('code', { text: e.request_id }) : undefined),
          ...kv('Trace ID', trace ? el('code', { class: 'audit-trace', text: trace }) : undefined)),
        sql ? el('h4', { text: 'SQL' }) : null,
        sql ? el('pre', { class: 'sql', id: 'audit-sql', text: sql }) : null,
        question ? null : el('details', {}, el('summary', { text: 'Everything recorded' }), el('pre', { class: 'sql', text: JSON.stringify(e.payload, null, 2) })),
        all.length > 1 ? el('p', { class: 'muted', text: `Recorded for this request: ${all.map((x) => KIND_WORDS[x.type] ?? x.type).reverse().join(' → ')}.` }) : null,
      ].filter(Boolean));
      box.hidden = false;
      $('#audit-detail-title').focus();
    } catch (err) {
      flash(readableMessage(err), true);
    }
  }

  const run = (fn) => async (ev) => {
    ev?.preventDefault?.();
    try { await fn(); } catch (err) { flash(readableMessage(err), true); }
  };
  $('#audit-form').addEventListener('submit', run(() => { offset = 0; $('#audit-detail').hidden = true; return load(); }));
  $('#audit-prev').addEventListener('click', run(() => { offset = Math.max(0, offset - PAGE); return load(); }));
  $('#audit-next').addEventListener('click', run(() => { offset += PAGE; return load(); }));

  return { load };
}

// The answer view (docs/ui.md, "Answers"): a question box and the answers list, mountable in any
// Element or ShadowRoot. Every answer shows its steps as they stream, the SQL highlighted with
// Copy, the explanation, a chart when the shape suits one, a sortable paged table, insight cards,
// downloads, thumbs up/down and a favourite star; chat answers are safe markdown; errors show
// their code and request id; clarifying questions offer their choices as buttons.
// ES module, no global side effects until mountAsk or renderAnswer is called.
import { prepareChartJs, renderChart } from './chart.js';
import { createApi, readableMessage } from '../lib/api.js';
import { copyInto, el, errorBox, icon, randomId } from '../lib/dom.js';
import { formatBytes } from '../lib/format.js';
import { renderMarkdown } from './markdown.js';
import { highlight } from './sql.js';
import { postSse, sendWs } from './stream.js';
import { ANSWER_CSS } from './styles.js';
import { renderTable } from './table.js';

export { ANSWER_CSS } from './styles.js';
export { chooseChart } from './chart.js';

const STEP_LABELS = { started: 'Question received', context: 'Schema', intent: 'Understood', sql: 'SQL written', rows: 'Query ran', insights: 'Insights', clarify: 'Which one?' };
const INSIGHT_ICONS = { trend: 'trend', change: 'trend', outlier: 'outlier', total: 'sum', summary: 'sum', top: 'chart', correlation: 'link', partial: 'warning', empty: 'info', llm: 'sparkle' };
const SEVERITY_LABEL = { info: 'Note', success: 'Good', warning: 'Warning', critical: 'Critical' };
/** headers a WebSocket frame may carry (edge/ws/endpoint.ts) */
const WS_HEADERS = new Set(['x-session-id', 'x-csrf-token', 'authorization']);

/** What a retried answer says of its first query: that it failed and was fixed, and (behind a toggle) the query. */
function retryNote(sql) {
  return el('details', { class: 'retry-sql' },
    el('summary', { text: 'The first query failed, so it was fixed and run again' }), el('pre', { text: sql }));
}

/** Legacy replies (/query, /auth/query: response_type, column names, data) in the shape of /api/query's. */
export function normaliseReply(r) {
  if (!r || typeof r !== 'object' || !('response_type' in r)) return r ?? {};
  const out = { ...r, intent: r.response_type };
  if (r.response_type === 'sql') {
    out.columns = (r.columns ?? []).map((name, i) => (typeof name === 'string' ? { name, type: r.column_types?.[i] ?? '' } : name));
    out.rows = r.data ?? [];
    if (r.requires_confirmation) {
      out.confirmation = { id: r.confirmation_id, expires_at: r.confirmation_expires_at, bytes_processed: r.bytes_processed, estimated_cost_usd: r.estimated_cost_usd };
    }
  }
  return out;
}

const renderError = (err, sql) => errorBox(err?.error ?? err ?? {}, { sql });

function renderSql(sql) {
  const copy = el('button', { type: 'button', class: 'copy', title: 'Copy the SQL' }, icon('copy'), el('span', { text: 'Copy' }));
  copy.addEventListener('click', () => copyInto(copy, sql));
  const code = el('code');
  code.append(highlight(sql));
  return el('div', { class: 'sql-block' }, el('pre', { class: 'sql', tabindex: '0', 'aria-label': 'SQL' }, code), copy);
}

function renderInsights(list) {
  return el('ul', { class: 'insights', 'aria-label': 'Insights' }, ...list.map((i) => el('li', { class: i.severity ?? 'info', 'data-type': i.type ?? '' },
    icon(INSIGHT_ICONS[i.type] ?? (i.severity === 'warning' || i.severity === 'critical' ? 'alert' : 'info'), SEVERITY_LABEL[i.severity] ?? 'Note'),
    el('span', { text: i.message ?? '' }))));
}

/**
 * The answer's API client: the host's own (opts.api: the page's client, which holds its cookie
 * session's CSRF token), else one with the host's base, headers (a widget's session header) and
 * credentials.
 */
const clientOf = (opts) => (opts.api ??= createApi({ base: opts.base ?? '', credentials: opts.credentials ?? 'same-origin', headers: () => opts.headers?.() ?? {} }));

function renderDownloads(reply, opts) {
  const status = el('span', { class: 'muted dl-status', 'aria-live': 'polite' });
  const buttons = [['csv', 'CSV'], ['excel', 'Excel'], ['html', 'HTML']].map(([format, label]) => {
    const b = el('button', { type: 'button', class: 'ghost small', 'data-format': format, title: `Download the result as ${label}` }, icon('download'), el('span', { text: label }));
    b.addEventListener('click', async () => {
      status.textContent = 'Preparing the file…';
      try {
        const r = await clientOf(opts).post('/api/export', { sql: reply.sql, format, title: (opts.question ?? 'Cortado export').slice(0, 200) }, { as: 'blob' });
        const name = r.filename ?? `cortado.${format === 'excel' ? 'xlsx' : format}`;
        const url = URL.createObjectURL(r.blob);
        const a = el('a', { href: url, download: name, hidden: true });
        status.after(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 30_000);
        status.textContent = `Downloaded ${name}`;
      } catch (e) {
        if (e.status === 401) {
          // said here, beside the answer, which stays: a download is no reason to take the answer
          // away for a login form (a question's 401 is, and brings it through onAuthRequired)
          status.textContent = 'Downloads are for signed-in users, and you are not signed in: sign in to download this result (the answer stays here).';
          for (const x of buttons) x.disabled = true;
        } else status.textContent = `No file: ${readableMessage(e)}`;
      }
    });
    return b;
  });
  return el('div', { class: 'downloads', role: 'group', 'aria-label': 'Download the result' }, el('span', { class: 'muted', text: 'Download' }), ...buttons, status);
}

// Thumbs up or down on one answer, with an optional comment (POST /api/feedback, by request id).
// Only whoever asked may rate: a legacy (/query) answer names its widget by the session_id it
// was asked with, as the question did.
function renderFeedback(requestId, opts, sessionId) {
  const status = el('span', { class: 'status muted', 'aria-live': 'polite' });
  const comment = el('input', { class: 'comment', type: 'text', maxlength: '2000', placeholder: 'What was wrong or right? (optional)', 'aria-label': 'Comment on this answer', hidden: true });
  const send = el('button', { type: 'button', class: 'send ghost small', text: 'Send comment', hidden: true });
  const up = el('button', { type: 'button', class: 'up ghost small', 'aria-pressed': 'false', title: 'A useful answer' }, icon('up'), el('span', { text: 'Useful' }));
  const down = el('button', { type: 'button', class: 'down ghost small', 'aria-pressed': 'false', title: 'Not a useful answer' }, icon('down'), el('span', { text: 'Not useful' }));
  let rating;
  const send1 = async (withComment) => {
    const payload = { request_id: requestId, rating, ...(typeof sessionId === 'string' && sessionId ? { session_id: sessionId } : {}) };
    if (withComment && comment.value.trim()) payload.comment = comment.value.trim();
    status.textContent = 'Sending…';
    try {
      const saved = (await clientOf(opts).post('/api/feedback', payload)).ok !== false;
      status.textContent = saved ? (payload.comment ? 'Thanks for the comment.' : 'Thanks for the feedback.') : 'Not recorded: analytics are off on this server.';
      status.className = `status ${saved ? 'muted' : 'error-text'}`;
    } catch (e) {
      status.textContent = `Not saved: ${e.message}`;
      status.className = 'status error-text';
    }
  };
  const choose = (value) => {
    rating = value;
    up.setAttribute('aria-pressed', String(value === 'up'));
    down.setAttribute('aria-pressed', String(value === 'down'));
    comment.hidden = false;
    send.hidden = false;
    void send1(false);
  };
  up.addEventListener('click', () => choose('up'));
  down.addEventListener('click', () => choose('down'));
  send.addEventListener('click', () => { if (rating) void send1(true); });
  comment.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); send.click(); } });
  return el('div', { class: 'feedback', role: 'group', 'aria-label': 'Was this answer useful?' }, el('span', { class: 'muted', text: 'Was this useful?' }), up, down, comment, send, status);
}

function renderFavourite(opts) {
  const star = el('button', { type: 'button', class: 'fav ghost small', 'aria-pressed': 'false', title: 'Keep this question in your favourites', disabled: true }, icon('star'), el('span', { text: 'Favourite' }));
  const status = el('span', { class: 'muted', 'aria-live': 'polite' });
  let entry;
  star.addEventListener('click', async () => {
    if (!entry) return;
    const on = star.getAttribute('aria-pressed') !== 'true';
    try {
      await opts.history.setFavourite(entry.id, on);
      star.setAttribute('aria-pressed', String(on));
      status.textContent = on ? 'Saved to favourites.' : 'Removed from favourites.';
    } catch (e) {
      status.textContent = `Not saved: ${e.message}`;
    }
  });
  return {
    node: el('span', { class: 'fav-wrap' }, star, status),
    set(e) { entry = e; star.disabled = !e; },
  };
}

/**
 * "Pin to dashboard" (opts.pin, lib/dashboards.js createPinner): one click pins the answer's SQL
 * as a tile, titled with the question, to the dashboard last used (or a new one); with several
 * dashboards a list beside the button says which, and may choose another.
 */
function renderPin(r, opts) {
  const status = el('span', { class: 'muted pin-status', 'aria-live': 'polite' });
  const to = el('select', { class: 'pin-to', 'aria-label': 'Dashboard to pin to', hidden: true });
  const button = el('button', { type: 'button', class: 'pin ghost small', title: 'Pin this answer to a dashboard as a tile' }, icon('pin'), el('span', { text: 'Pin to dashboard' }));
  opts.pin.choices().then(({ dashboards, last }) => {
    if (dashboards.length < 2) return;
    to.replaceChildren(...dashboards.map((d) => el('option', { value: d.id, text: d.name })));
    to.value = last;
    to.hidden = false;
  }, () => undefined);
  button.addEventListener('click', async () => {
    button.disabled = true;
    status.textContent = 'Pinning…';
    try {
      const d = await opts.pin.pin({ ...(to.hidden ? {} : { dashboard: to.value }), title: (opts.question ?? 'Answer').slice(0, 200), sql: opts.writtenSql ?? r.sql });
      status.textContent = `Pinned to "${d.name}".`;
      button.setAttribute('aria-pressed', 'true');
    } catch (e) {
      status.textContent = `Not pinned: ${readableMessage(e)}`;
      button.disabled = false;
    }
  });
  return el('span', { class: 'pin-wrap', role: 'group', 'aria-label': 'Pin to a dashboard' }, button, to, status);
}

/**
 * A dashboard tile's answer (opts.layout 'tile'): what the shape says to show (the number, or the
 * chart, the same one the answer view draws: lib/chart-model.js), else the rows; the rows under
 * a chart and the SQL behind toggles; opts.note (a date filter's word) above.
 */
function renderTileAnswer(container, r, opts) {
  const parts = [];
  let chart;
  if (opts.note) parts.push(el('p', { class: 'muted tile-note', text: opts.note }));
  if (r.intent === 'chat' || r.intent === 'clarify') {
    const msg = el('div', { class: 'message' });
    msg.append(renderMarkdown(r.message ?? ''));
    parts.push(msg);
  } else if (r.columns) {
    const rows = r.rows ?? [];
    chart = rows.length ? renderChart(r.columns, rows, { base: opts.base, question: opts.question }) : null;
    // a chart the shape does not suit by itself is not a tile's to offer: the rows instead
    if (chart && chart.dataset.type === 'none') chart = null;
    if (!rows.length) parts.push(el('p', { class: 'muted', text: 'No rows.' }));
    else if (chart?.dataset.type === 'kpi') parts.push(chart);
    else if (chart) parts.push(chart, el('details', { class: 'tile-rows' }, el('summary', { text: 'Show the rows' }), renderTable(r.columns, rows)));
    else parts.push(renderTable(r.columns, rows));
    const count = r.row_count ?? rows.length;
    parts.push(el('div', { class: 'meta muted', text: `${count.toLocaleString()} row${count === 1 ? '' : 's'}${r.truncated ? ' (cut at the row limit)' : ''}${r.masked?.length ? ` · masked: ${r.masked.map((m) => m.column).join(', ')}` : ''}` }));
  }
  const sql = opts.sql ?? r.sql;
  if (sql) parts.push(el('details', { class: 'tile-sql' }, el('summary', { text: 'Show the SQL' }), renderSql(sql)));
  container.replaceChildren(...parts);
  const charts = chart ? [chart] : [];
  return {
    reply: r,
    drawn: Promise.all(charts.map((c) => c.drawChart())),
    setFavouriteEntry: () => {},
    setInsights: () => {},
    destroy() { for (const c of charts) c.destroyChart(); charts.length = 0; },
  };
}

/**
 * Render one finished reply (an /api/query reply, or a legacy /query one) into `container`.
 * opts: {base, headers, credentials, question, onChoice(text), onConfirm(reply) → Promise,
 *        feedback (default true), downloads (default true), history, onAuthRequired,
 *        pin (lib/dashboards.js createPinner: "Pin to dashboard"; writtenSql the SQL it pins),
 *        layout ('tile': a dashboard tile's view, with sql and note)}
 * Returns {reply, drawn (a promise: every chart drawn), setFavouriteEntry(entry), setInsights(list), destroy()}.
 */
export function renderAnswer(container, reply, opts = {}) {
  const r = normaliseReply(reply);
  if (opts.layout === 'tile') return renderTileAnswer(container, r, opts);
  const parts = [];
  let charts = [];
  if (r.intent === 'chat') {
    const msg = el('div', { class: 'message' });
    msg.append(renderMarkdown(r.message ?? ''));
    parts.push(msg);
  } else if (r.intent === 'clarify') {
    parts.push(el('div', { class: 'message clarify', text: r.message ?? '' }));
    const choices = (r.clarification?.choices ?? []).map((c) => {
      const b = el('button', { type: 'button', class: 'chip choice', text: c.label, title: c.kind ? `${c.kind}: ${c.value}` : undefined });
      b.addEventListener('click', () => opts.onChoice?.(c.label));
      return b;
    });
    if (choices.length) parts.push(el('div', { class: 'choices', role: 'group', 'aria-label': 'Choose a meaning' }, ...choices));
  } else {
    if (r.explanation) parts.push(el('div', { class: 'explanation', text: r.explanation }));
    if (r.sql) parts.push(renderSql(r.sql));
    if (r.confirmation?.id) parts.push(renderConfirm(r, opts));
    else if (r.executed === false) parts.push(el('p', { class: 'muted not-run', text: 'The SQL was written but not run (this server shows generated SQL only).' }));
    if (r.columns && r.executed !== false) {
      const rows = r.rows ?? [];
      if (rows.length) {
        const chart = renderChart(r.columns, rows, { base: opts.base, question: opts.question });
        if (chart) { parts.push(chart); charts.push(chart); }
        parts.push(renderTable(r.columns, rows));
      } else parts.push(el('p', { class: 'muted', text: 'No rows.' }));
      const count = r.row_count ?? rows.length;
      parts.push(el('div', { class: 'meta muted', text: `${count.toLocaleString()} row${count === 1 ? '' : 's'}${r.truncated ? ' (cut at the row limit)' : ''}${r.masked?.length ? ` · masked: ${r.masked.map((m) => m.column).join(', ')}` : ''}` }));
    }
    if (r.insights?.length) parts.push(renderInsights(r.insights));
    if (r.sql && r.executed !== false && opts.downloads !== false) parts.push(renderDownloads(r, opts));
  }
  const t = r.timing_ms?.total;
  const tokens = r.usage ? (r.usage.input_tokens ?? 0) + (r.usage.output_tokens ?? 0) : 0;
  const timing = [t !== undefined ? `${Math.round(t).toLocaleString()} ms` : '', tokens ? `${tokens.toLocaleString()} tokens` : '', r.corrections ? `the query was fixed and retried ${r.corrections}×` : '', r.request_id ? `request id ${r.request_id}` : ''].filter(Boolean).join(' · ');
  // how long it took and what it cost: for whoever looks (admins, developers), not on every answer
  if (timing) parts.push(el('details', { class: 'meta muted timing' }, el('summary', { text: 'Details' }), el('span', { text: timing })));
  let fav;
  const actions = [];
  if (r.request_id && opts.feedback !== false) actions.push(renderFeedback(r.request_id, opts, reply.session_id));
  if (opts.history && r.intent !== 'clarify') {
    fav = renderFavourite(opts);
    actions.push(fav.node);
  }
  if (opts.pin && r.sql && r.columns && r.executed !== false && !r.confirmation?.id) actions.push(renderPin(r, opts));
  if (actions.length) parts.push(el('div', { class: 'actions' }, ...actions));
  container.replaceChildren(...parts);
  const drawn = Promise.all(charts.map((c) => c.drawChart()));
  return {
    reply: r,
    /** settles once every chart of the answer is drawn (at once when there is none) */
    drawn,
    setFavouriteEntry: (e) => fav?.set(e),
    setInsights(list) {
      if (!list?.length) return;
      const next = renderInsights(list);
      const old = container.querySelector('ul.insights');
      if (old) old.replaceWith(next);
      else (container.querySelector('.downloads') ?? container.querySelector('.meta'))?.before(next);
    },
    destroy() { for (const c of charts) c.destroyChart(); charts = []; },
  };
}

/** The confirm dialog of SQL held for confirmation (query.confirm_before_execute). */
function renderConfirm(r, opts) {
  const c = r.confirmation;
  const cost = [];
  if (c.bytes_processed !== undefined && c.bytes_processed !== null) cost.push(`It will read ${formatBytes(c.bytes_processed)}`);
  if (c.estimated_cost_usd !== undefined && c.estimated_cost_usd !== null) cost.push(`estimated cost $${Number(c.estimated_cost_usd).toFixed(c.estimated_cost_usd < 0.01 ? 4 : 2)}`);
  const id = `ctd-confirm-${randomId().slice(0, 8)}`;
  const run = el('button', { type: 'button', class: 'run' }, icon('play'), el('span', { text: 'Run' }));
  const cancel = el('button', { type: 'button', class: 'ghost cancel' }, icon('x'), el('span', { text: 'Cancel' }));
  const status = el('p', { class: 'muted', 'aria-live': 'polite' });
  const box = el('div', { class: 'confirm', role: 'dialog', 'aria-modal': 'false', 'aria-labelledby': id },
    el('h3', { id, text: 'Run this SQL?' }),
    el('p', { class: 'muted', text: `The SQL above was checked but not run.${cost.length ? ` ${cost.join(', ')}.` : ''}${c.expires_at ? ` The offer stands until ${new Date(c.expires_at).toLocaleTimeString()}.` : ''}` }),
    cost.length ? el('p', { class: 'cost', text: cost.join(' · ') }) : null,
    el('div', { class: 'row' }, run, cancel), status);
  cancel.addEventListener('click', () => { box.replaceChildren(el('p', { class: 'muted cancelled', text: 'Not run.' })); });
  run.addEventListener('click', async () => {
    if (!opts.onConfirm) { status.textContent = 'This view cannot run held SQL.'; return; }
    run.disabled = true;
    cancel.disabled = true;
    status.textContent = 'Running…';
    try {
      await opts.onConfirm(r);
    } catch (e) {
      status.textContent = `Not run: ${e.message}`;
      run.disabled = false;
      cancel.disabled = false;
    }
  });
  queueMicrotask(() => run.focus());
  return box;
}

/**
 * Mount the question box and the answers list into `root` (an Element or a ShadowRoot).
 * opts as in docs/ui.md ("Answers"): {base, endpoint, confirmEndpoint, widget, headers,
 * credentials, transport, tables, history, onAuthRequired, examples}.
 */
export function mountAsk(root, opts) {
  const o = { base: '', endpoint: '/api/query', widget: 'dashboard', transport: 'sse', credentials: 'same-origin', ...opts };
  const legacy = o.endpoint === '/query';
  if (typeof ShadowRoot !== 'undefined' && root instanceof ShadowRoot) {
    root.append(el('style', { text: ANSWER_CSS }));
  } else if (!document.getElementById('ctd-answer-css')) {
    document.head.append(el('style', { id: 'ctd-answer-css', text: ANSWER_CSS }));
  }
  const uid = randomId().slice(0, 8);
  const question = el('textarea', { id: `ctd-q-${uid}`, class: 'question', name: 'question', rows: '2', maxlength: '4000', required: true, placeholder: 'Ask about your data, e.g. which store sold the most last month?' });
  const go = el('button', { type: 'submit', class: 'go', text: 'Ask' });
  const fresh = el('button', { type: 'button', class: 'ghost new-conv', title: 'Forget the earlier questions', text: 'New conversation' });
  const examples = (o.examples ?? []).map((x) => el('button', { type: 'button', class: 'chip', text: x }));
  const form = el('form', { class: 'ask-form', autocomplete: 'off', 'aria-label': 'Ask a question' },
    el('label', { for: question.id, class: 'sr', text: 'Your question' }), question,
    el('div', { class: 'row' }, el('span', { class: 'spacer' }), fresh, go),
    examples.length ? el('div', { class: 'examples' }, ...examples) : null);
  const answers = el('section', { class: 'answers', 'aria-live': 'polite', 'aria-label': 'Answers' });
  const panel = el('div', { class: 'ctd-ask' }, form, answers);
  root.append(panel);

  let conversation = randomId();
  const views = new Set();
  const headers = () => o.headers?.() ?? {};
  // one client for the questions and every answer's downloads and feedback
  const api = clientOf(o);
  const wsHeaders = () => Object.fromEntries(Object.entries(headers()).filter(([k]) => WS_HEADERS.has(k.toLowerCase())));

  /** send one request (ask or confirm) over the chosen transport; events to onEvent */
  const exchange = (kind, path, body, onEvent) => (o.transport === 'ws'
    ? sendWs(o.base, kind, path, body, { headers: wsHeaders(), onEvent })
    : postSse(o.base, path, body, { api, onEvent, stream: kind === 'ask' }));

  function card(text) {
    const steps = el('ol', { class: 'steps', 'aria-label': 'Steps' });
    const body = el('div', { class: 'body' }, el('span', { class: 'muted', text: 'Thinking…' }));
    const node = el('article', { class: 'answer', 'aria-busy': 'true' }, el('div', { class: 'q', text: text }), steps, body);
    answers.prepend(node);
    return { node, steps, body };
  }

  /** run one exchange into a card: steps, the SQL early, the result, late insights, errors */
  async function run(c, text, kind, path, payload) {
    let view;
    let lastError;
    /** the SQL last written: the error keeps it one click away */
    let lastSql;
    /** the SQL the database refused before the model fixed it */
    let failedSql;
    const renderOpts = {
      ...o, question: text,
      onChoice: (label) => void panelApi.ask(label),
      onConfirm: (reply) => confirm(reply, text),
    };
    await exchange(kind, path, payload, (event, data) => {
      // a query rewritten after the database refused the first: a retry, not a second "SQL written"
      const retry = event === 'sql' && data.attempt > 0;
      if (retry) c.steps.append(el('li', { class: 'done retry' }, icon('refresh'), 'Fixed the query and retried'));
      else if (STEP_LABELS[event]) c.steps.append(el('li', { class: 'done' }, icon('check'), STEP_LABELS[event]));
      if (event === 'sql') {
        if (retry && lastSql) failedSql = lastSql;
        const before = retry && failedSql ? [retryNote(failedSql)] : [];
        lastSql = data.sql;
        c.body.replaceChildren(...before, ...(data.explanation ? [el('div', { class: 'explanation', text: data.explanation })] : []), renderSql(data.sql), el('span', { class: 'muted', text: 'Running…' }));
      } else if (event === 'result') {
        const r = normaliseReply(data);
        if (r.conversation_id && !legacy) conversation = r.conversation_id;
        view?.destroy();
        // a pinned tile keeps the SQL as written (the guard bounds each run again), not as it ran
        view = renderAnswer(c.body, r, { ...renderOpts, ...(lastSql ? { writtenSql: lastSql } : {}) });
        // the answer of a fixed query keeps the one that failed, one click away
        if (failedSql) c.body.prepend(retryNote(failedSql));
        views.add(view);
        // the answer is on screen, its chart drawn: a mark the bench measures from the reply's arrival
        void view.drawn.then(() => performance.mark?.('cortado:answer-drawn', { detail: { request_id: r.request_id ?? null, rows: r.rows?.length ?? 0 } }));
        if (o.history && r.intent !== 'clarify') {
          o.history.add({ question: text, ...(r.sql ? { sql: r.sql } : {}), ...(r.row_count !== undefined ? { row_count: r.row_count } : {}), ...(r.request_id ? { request_id: r.request_id } : {}), at: new Date().toISOString() })
            .then((entry) => view.setFavouriteEntry(entry), () => undefined);
        }
      } else if (event === 'model_insights') {
        if (data.status === 'ready') view?.setInsights(data.insights);
      } else if (event === 'error') {
        lastError = data;
        c.body.replaceChildren(renderError(data, lastSql));
        if ((data.status === 401 || data.error?.code === 'UNAUTHORIZED') && o.onAuthRequired) o.onAuthRequired(data.error ?? data);
      }
    });
    return { view, error: lastError };
  }

  async function confirm(reply, text) {
    if (!o.confirmEndpoint) throw new Error('no confirmation route for this panel');
    const c = card(text);
    c.steps.append(el('li', { class: 'done' }, icon('check'), 'Confirmed'));
    const body = { confirmation_id: reply.confirmation.id, ...(legacy ? { session_id: conversation } : {}) };
    try {
      await run(c, text, 'confirm', o.confirmEndpoint, body);
    } finally {
      c.node.removeAttribute('aria-busy');
    }
  }

  const panelApi = {
    async ask(text) {
      const q = String(text ?? '').trim();
      if (!q) return;
      const c = card(q);
      go.disabled = true;
      // Chart.js (not in the widget script) loads while the question is answered, and is warmed
      // up off screen in idle time, so the first answer with a chart waits neither for its
      // download nor for its cold first draw; a page that never asks never loads it
      void prepareChartJs(o.base);
      const payload = { question: q, widget: o.widget, ...(legacy ? { session_id: conversation } : { conversation_id: conversation }) };
      const tables = o.tables?.() ?? [];
      if (tables.length) payload.tables = tables;
      try {
        await run(c, q, 'ask', o.endpoint, payload);
      } catch (e) {
        c.body.replaceChildren(renderError({ code: 'NETWORK', message: e.message }));
      } finally {
        go.disabled = false;
        c.node.removeAttribute('aria-busy');
      }
    },
    clear() {
      for (const v of views) v.destroy();
      views.clear();
      answers.replaceChildren();
    },
    newConversation() {
      conversation = randomId();
      panelApi.clear();
      question.focus();
    },
    destroy() {
      panelApi.clear();
      panel.remove();
    },
    /** the conversation id the next question is sent with */
    get conversation() { return conversation; },
  };

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = question.value;
    if (text.trim()) void panelApi.ask(text);
  });
  question.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); }
  });
  for (const chip of examples) chip.addEventListener('click', () => { question.value = chip.textContent; form.requestSubmit(); });
  fresh.addEventListener('click', () => panelApi.newConversation());
  return panelApi;
}

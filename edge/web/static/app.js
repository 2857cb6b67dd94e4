// The first page: ask a question, watch the steps stream in, see SQL, rows and insights.
const $ = (sel, root = document) => root.querySelector(sel);
const form = $('#ask');
const question = $('#question');
const go = $('#go');
const answers = $('#answers');

const STEP_LABELS = { started: 'Question received', context: 'Schema', intent: 'Understood', sql: 'SQL written', rows: 'Query ran', insights: 'Insights', clarify: 'Which one?' };

function conversationId() {
  let id = sessionStorage.getItem('cortado.conversation');
  if (!id) {
    id = crypto.randomUUID();
    sessionStorage.setItem('cortado.conversation', id);
  }
  return id;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c != null) node.append(c);
  return node;
}

async function health() {
  const pill = $('#health');
  try {
    const r = await fetch('/health');
    const h = await r.json();
    pill.textContent = h.status === 'ok' ? `ready · v${h.version}` : `database: ${h.database} · LLM: ${h.llm.replace('_', ' ')}`;
    pill.className = `pill ${h.status === 'ok' ? 'ok' : 'degraded'}`;
    pill.title = JSON.stringify(h.details ?? {}, null, 1);
  } catch {
    pill.textContent = 'unreachable';
    pill.className = 'pill down';
  }
}

async function loadTables() {
  const box = $('#tables');
  try {
    const r = await fetch('/api/tables');
    const body = await r.json();
    if (!r.ok) throw new Error(body.error?.message ?? r.statusText);
    box.replaceChildren(...body.tables.map((t) => el('label', { title: t.comment ?? '' }, el('input', { type: 'checkbox', value: t.name }), t.name)));
    $('#tables-count').textContent = `(${body.tables.length}; none ticked = let Cortado choose)`;
  } catch (e) {
    box.replaceChildren(el('span', { class: 'muted', text: `cannot list tables: ${e.message}` }));
  }
}

function selectedTables() {
  return [...document.querySelectorAll('#tables input:checked')].map((i) => i.value);
}

function renderError(body, err) {
  body.replaceChildren(el('div', { class: 'error' },
    el('code', { text: err.code ?? 'ERROR' }), ` ${err.message ?? 'something went wrong'}`,
    err.request_id ? el('div', { class: 'muted', text: `request id ${err.request_id}` }) : null));
}

function renderSql(sql) {
  const copy = el('button', { type: 'button', text: 'Copy' });
  copy.addEventListener('click', () => navigator.clipboard?.writeText(sql).then(() => { copy.textContent = 'Copied'; }));
  return el('pre', { class: 'sql' }, sql, copy);
}

function renderRows(columns, rows) {
  const numeric = columns.map((c) => /int|numeric|decimal|float|double|real|money/i.test(c.type));
  const head = el('tr', {}, ...columns.map((c, i) => el('th', { title: c.type, text: c.name, class: numeric[i] ? 'num' : '' })));
  const body = rows.map((r) => el('tr', {}, ...r.map((v, i) => {
    if (v === null) return el('td', { class: 'null', text: 'null' });
    const text = typeof v === 'number' && numeric[i] ? v.toLocaleString() : String(v);
    return el('td', { class: numeric[i] ? 'num' : '', text });
  })));
  return el('div', { class: 'grid' }, el('table', {}, el('thead', {}, head), el('tbody', {}, ...body)));
}

/** The insight cards of an answer (replaced when the model's insights follow: insights.mode hybrid). */
function renderInsights(list) {
  return el('ul', { class: 'insights' }, ...list.map((i) => el('li', { class: i.severity, text: `${i.icon ? i.icon + ' ' : ''}${i.message}` })));
}

function renderResult(body, r) {
  const parts = [];
  if (r.intent === 'chat') {
    parts.push(el('div', { class: 'message', text: r.message ?? '' }));
  } else if (r.intent === 'clarify') {
    // a clarifying question: each choice is the next question of the same conversation
    parts.push(el('div', { class: 'message clarify', text: r.message ?? '' }));
    const choices = (r.clarification?.choices ?? []).map((c) => {
      const b = el('button', { type: 'button', class: 'chip choice', text: c.label });
      b.addEventListener('click', () => { question.value = c.label; form.requestSubmit(); });
      return b;
    });
    if (choices.length) parts.push(el('div', { class: 'choices' }, ...choices));
  } else {
    if (r.explanation) parts.push(el('div', { class: 'explanation', text: r.explanation }));
    if (r.sql) parts.push(renderSql(r.sql));
    if (r.executed === false) parts.push(el('p', { class: 'muted', text: 'The SQL was generated but not run (query.execute_generated_sql is off).' }));
    if (r.columns) {
      parts.push(r.rows.length ? renderRows(r.columns, r.rows) : el('p', { class: 'muted', text: 'No rows.' }));
      const note = `${r.row_count} row${r.row_count === 1 ? '' : 's'}${r.truncated ? ' (cut at the row limit)' : ''}`;
      parts.push(el('div', { class: 'meta muted', text: note }));
    }
    if (r.insights?.length) parts.push(renderInsights(r.insights));
  }
  const t = r.timing_ms?.total;
  const tokens = r.usage ? r.usage.input_tokens + r.usage.output_tokens : 0;
  parts.push(el('div', { class: 'meta muted', text: `${t !== undefined ? `${Math.round(t)} ms` : ''}${tokens ? ` · ${tokens} tokens` : ''}${r.corrections ? ` · corrected ${r.corrections}×` : ''}` }));
  if (r.request_id) parts.push(renderFeedback(r.request_id));
  body.replaceChildren(...parts);
}

// Thumbs up or down on one answer, with an optional comment (POST /api/feedback, by request id).
function renderFeedback(requestId) {
  const status = el('span', { class: 'status muted', 'aria-live': 'polite' });
  const comment = el('input', { class: 'comment', type: 'text', maxlength: '2000', placeholder: 'What was wrong or right? (optional)', 'aria-label': 'Comment on this answer', hidden: '' });
  const send = el('button', { type: 'button', class: 'send', text: 'Send comment', hidden: '' });
  const up = el('button', { type: 'button', class: 'up', 'aria-pressed': 'false', title: 'A useful answer', text: 'Useful' });
  const down = el('button', { type: 'button', class: 'down', 'aria-pressed': 'false', title: 'Not a useful answer', text: 'Not useful' });
  let rating;
  const post = async (withComment) => {
    const payload = { request_id: requestId, rating };
    if (withComment && comment.value.trim()) payload.comment = comment.value.trim();
    status.textContent = 'Sending…';
    try {
      const res = await fetch('/api/feedback', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(payload) });
      const body = await res.json().catch(() => ({}));
      const saved = res.ok && body.ok !== false;
      status.textContent = saved ? (payload.comment ? 'Thanks for the comment.' : 'Thanks for the feedback.')
        : res.ok ? 'Not recorded: analytics are off on this server.' : `Not saved: ${body.error?.message ?? res.statusText}`;
      status.className = `status ${saved ? 'muted' : 'error-text'}`;
    } catch (e) {
      status.textContent = `Not saved: ${e.message}`;
    }
  };
  const choose = (value) => {
    rating = value;
    up.setAttribute('aria-pressed', String(value === 'up'));
    down.setAttribute('aria-pressed', String(value === 'down'));
    comment.hidden = false;
    send.hidden = false;
    void post(false);
  };
  up.addEventListener('click', () => choose('up'));
  down.addEventListener('click', () => choose('down'));
  send.addEventListener('click', () => { if (rating) void post(true); });
  comment.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); send.click(); } });
  return el('div', { class: 'feedback', role: 'group', 'aria-label': 'Was this answer useful?' }, el('span', { class: 'muted', text: 'Was this useful?' }), up, down, comment, send, status);
}

// Reads an SSE response body; calls onEvent(name, data) per event.
async function readSse(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let event = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
      }
      if (data.length) onEvent(event, JSON.parse(data.join('\n')));
    }
  }
}

async function ask(text) {
  const card = $('#answer-tpl').content.firstElementChild.cloneNode(true);
  $('.q', card).textContent = text;
  const steps = $('.steps', card);
  const body = $('.body', card);
  body.append(el('span', { class: 'muted', text: 'Thinking…' }));
  answers.prepend(card);
  go.disabled = true;
  const payload = { question: text, conversation_id: conversationId() };
  const tables = selectedTables();
  if (tables.length) payload.tables = tables;
  try {
    const res = await fetch('/api/query', { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: JSON.stringify(payload) });
    if (!res.ok || !(res.headers.get('content-type') ?? '').includes('event-stream')) {
      const err = await res.json().catch(() => ({ error: { code: `HTTP_${res.status}`, message: res.statusText } }));
      renderError(body, err.error ?? {});
      return;
    }
    await readSse(res, (event, data) => {
      if (STEP_LABELS[event]) steps.append(el('li', { class: 'done', text: STEP_LABELS[event] }));
      if (event === 'sql') body.replaceChildren(...(data.explanation ? [el('div', { class: 'explanation', text: data.explanation })] : []), renderSql(data.sql), el('span', { class: 'muted', text: 'Running…' }));
      if (event === 'result') renderResult(body, data);
      if (event === 'model_insights' && data.status === 'ready' && data.insights?.length) {
        const list = body.querySelector('ul.insights');
        if (list) list.replaceWith(renderInsights(data.insights));
        else body.querySelector('.meta')?.after(renderInsights(data.insights));
      }
      if (event === 'error') renderError(body, data.error ?? {});
    });
  } catch (e) {
    renderError(body, { code: 'NETWORK', message: e.message });
  } finally {
    go.disabled = false;
  }
}

form.addEventListener('submit', (e) => {
  e.preventDefault();
  const text = question.value.trim();
  if (text) void ask(text);
});
question.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); }
});
for (const chip of document.querySelectorAll('#examples .chip')) {
  chip.addEventListener('click', () => { question.value = chip.textContent; form.requestSubmit(); });
}
$('#new-conv').addEventListener('click', () => { sessionStorage.removeItem('cortado.conversation'); answers.replaceChildren(); question.focus(); });

void health();
void loadTables();

// The tabs of the dashboard: the home tab (this page) always; the others as ui.sections says
// (GET /ui/config; a key left out is on). A tab's script is loaded when it is first opened.
const VIEWS = { schedules: () => import('./schedules.js') };
const mounted = new Map();

async function showView(name) {
  for (const b of document.querySelectorAll('#main-tabs [data-view]')) {
    b.classList.toggle('active', b.dataset.view === name);
    b.setAttribute('aria-pressed', String(b.dataset.view === name));
  }
  for (const v of document.querySelectorAll('main > .view')) v.hidden = v.id !== `view-${name}`;
  if (!VIEWS[name]) return;
  if (!mounted.has(name)) mounted.set(name, VIEWS[name]().then((m) => m.mount($(`#view-${name}`), uiConfig)));
  const view = await mounted.get(name);
  await view.refresh();
}

let uiConfig = { sections: {}, sign_in: {} };
async function loadUiConfig() {
  try {
    const r = await fetch('/ui/config');
    if (r.ok) uiConfig = await r.json();
  } catch {
    // the home tab works without it
  }
  for (const b of document.querySelectorAll('#main-tabs [data-view]')) {
    if (b.dataset.view !== 'home') b.hidden = uiConfig.sections?.[b.dataset.view] === false;
  }
  document.body.dataset.ui = 'ready';
  const wanted = location.hash.slice(1);
  if (VIEWS[wanted] && uiConfig.sections?.[wanted] !== false) await showView(wanted);
}
for (const b of document.querySelectorAll('#main-tabs [data-view]')) {
  b.addEventListener('click', () => {
    history.replaceState(null, '', b.dataset.view === 'home' ? location.pathname : `#${b.dataset.view}`);
    void showView(b.dataset.view).catch((e) => console.error(e));
  });
}
void loadUiConfig();

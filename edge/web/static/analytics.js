// /analytics: how Cortado is used, from GET /api/analytics/report. Charts by Chart.js (served
// by Cortado from its npm package at /vendor/), each readable without colour: series differ
// by fill pattern, line dash and marker too, axes and legends are labelled, every chart has an
// aria label and a data table beside it.
import { showOnly, wireSignIn } from './admin-signin.js';
import { createApi } from './lib/api.js';
import { $, el } from './lib/dom.js';
import { formatInt, formatMs, formatUsd, formatUtcMinute } from './lib/format.js';

const Chart = window.Chart;

// the text colour of the theme in force (style.css --ctd-ink), read again at each render
let INK = '#2b2118';
const themeInk = () => getComputedStyle(document.documentElement).getPropertyValue('--ctd-ink').trim() || '#2b2118';
const PALETTE = ['#7a4b2a', '#2f6f8f', '#b26a00', '#5a7d2a', '#8e3b5e', '#4b4b8f'];
const PATTERNS = ['solid', 'stripes', 'dots', 'cross', 'vertical', 'horizontal'];
const MARKERS = ['circle', 'triangle', 'rectRot', 'rect', 'star', 'crossRot'];
const DASHES = [[], [6, 4], [2, 3], [10, 3, 2, 3]];
const charts = new Map();


/** A fill that tells a series apart without its colour: a pattern drawn in the colour. */
function fill(kind, color) {
  if (kind === 'solid') return color;
  const c = document.createElement('canvas');
  c.width = 8;
  c.height = 8;
  const g = c.getContext('2d');
  g.fillStyle = '#ffffff';
  g.fillRect(0, 0, 8, 8);
  g.strokeStyle = color;
  g.fillStyle = color;
  g.lineWidth = 2;
  g.beginPath();
  if (kind === 'stripes') { g.moveTo(0, 8); g.lineTo(8, 0); g.moveTo(-2, 2); g.lineTo(2, -2); g.moveTo(6, 10); g.lineTo(10, 6); g.stroke(); }
  if (kind === 'cross') { g.moveTo(0, 0); g.lineTo(8, 8); g.moveTo(8, 0); g.lineTo(0, 8); g.stroke(); }
  if (kind === 'vertical') { g.moveTo(4, 0); g.lineTo(4, 8); g.stroke(); }
  if (kind === 'horizontal') { g.moveTo(0, 4); g.lineTo(8, 4); g.stroke(); }
  if (kind === 'dots') { g.arc(4, 4, 2, 0, Math.PI * 2); g.fill(); }
  return g.createPattern(c, 'repeat');
}

function barSet(label, data, i, extra = {}) {
  const color = PALETTE[i % PALETTE.length];
  return { type: 'bar', label, data, backgroundColor: fill(PATTERNS[i % PATTERNS.length], color), borderColor: color, borderWidth: 1.5, ...extra };
}

function lineSet(label, data, i, extra = {}) {
  const color = PALETTE[i % PALETTE.length];
  return {
    type: 'line', label, data, borderColor: color, backgroundColor: color, borderWidth: 2, borderDash: DASHES[i % DASHES.length],
    pointStyle: MARKERS[i % MARKERS.length], pointRadius: 4, pointHoverRadius: 6, tension: 0, ...extra,
  };
}

/** A table of rows; numeric columns right-aligned. */
function table(columns, rows) {
  if (!rows.length) return el('p', { class: 'muted', text: 'Nothing in this range.' });
  const head = el('tr', {}, ...columns.map((c) => el('th', { scope: 'col', class: c.num ? 'num' : '', text: c.label })));
  const body = rows.map((r) => el('tr', {}, ...columns.map((c) => {
    const v = c.value(r);
    return el('td', { class: c.num ? 'num' : '', text: v == null ? '' : String(v) });
  })));
  return el('table', {}, el('thead', {}, head), el('tbody', {}, ...body));
}

/** Draws one chart into its figure (replacing the last one), with its aria label and data table. */
function draw(id, config, summary, columns, rows) {
  const fig = $(`#${id}`);
  const canvas = $('canvas', fig);
  charts.get(id)?.destroy();
  charts.delete(id);
  $('.table', fig).replaceChildren(table(columns, rows));
  canvas.setAttribute('aria-label', summary);
  fig.classList.toggle('nodata', rows.length === 0);
  if (!Chart) {
    canvas.hidden = true;
    return;
  }
  canvas.hidden = false;
  const legend = { labels: { usePointStyle: true, color: INK, boxWidth: 18, font: { size: 12 } } };
  const base = { animation: false, responsive: true, maintainAspectRatio: false, plugins: { legend, tooltip: { mode: 'index', intersect: false } } };
  const options = { ...base, ...config.options, plugins: { ...base.plugins, ...(config.options?.plugins ?? {}) } };
  charts.set(id, new Chart(canvas, { type: config.type ?? 'bar', data: config.data, options }));
}

const axis = (title, extra = {}) => ({ beginAtZero: true, title: { display: true, text: title, color: INK }, ticks: { color: INK, precision: 0 }, ...extra });
const cat = (title, extra = {}) => ({ title: { display: Boolean(title), text: title, color: INK }, ticks: { color: INK, autoSkip: true, maxRotation: 60 }, ...extra });

let last; // the report on show, drawn again when the theme changes
function render(r) {
  last = r;
  INK = themeInk();
  $('#range').textContent = `${formatUtcMinute(r.range.from)} → ${formatUtcMinute(r.range.to)} UTC`;
  $('#f-users').replaceChildren(...r.users.map((u) => el('option', { value: u.user })));
  const t = r.totals;
  const total = (id, text, value) => { const dd = $(`#${id}`); dd.textContent = text; dd.dataset.value = String(value); };
  total('t-questions', formatInt(t.questions), t.questions);
  total('t-errors', formatInt(t.errors), t.errors);
  total('t-users', formatInt(t.users), t.users);
  total('t-tokens', `${formatInt(t.input_tokens)} / ${formatInt(t.output_tokens)}`, `${t.input_tokens}/${t.output_tokens}`);
  total('t-cost', formatUsd(t.cost_usd), t.cost_usd);
  total('t-feedback', `${formatInt(t.likes)} / ${formatInt(t.dislikes)}`, `${t.likes}/${t.dislikes}`);
  total('t-clarify', formatInt(t.clarifications ?? 0), t.clarifications ?? 0);

  const off = !r.enabled;
  const none = r.enabled && t.questions === 0;
  $('#empty').hidden = !(off || none);
  $('#content').hidden = off || none;
  if (off) {
    $('#empty-title').textContent = 'Analytics are off';
    $('#empty-text').textContent = 'Nothing is recorded while analytics.enabled is false in the configuration. Turn it on (with its PostgreSQL connection) to see how Cortado is used.';
  } else if (none) {
    $('#empty-title').textContent = 'No questions in this range';
    $('#empty-text').textContent = 'Nobody asked anything that matches these filters. Widen the dates, or pick another widget, channel or user.';
  }
  if (off || none) {
    for (const c of charts.values()) c.destroy();
    charts.clear();
    return;
  }

  const days = r.per_day.map((d) => d.day);
  draw('c-per-day', {
    type: 'line',
    data: { labels: days, datasets: [lineSet('Questions', r.per_day.map((d) => d.questions), 0), lineSet('Errors', r.per_day.map((d) => d.errors), 3, { borderDash: DASHES[1] })] },
    options: { scales: { x: cat('day (UTC)'), y: axis('questions') } },
  }, `Questions per day: ${formatInt(t.questions)} in all, ${formatInt(t.errors)} errors, over ${days.length} days.`,
  [{ label: 'day', value: (d) => d.day }, { label: 'questions', num: true, value: (d) => d.questions }, { label: 'errors', num: true, value: (d) => d.errors }], r.per_day);

  draw('c-steps', {
    data: { labels: r.steps.map((s) => s.step), datasets: [barSet('p50', r.steps.map((s) => s.p50_ms), 0), barSet('p95', r.steps.map((s) => s.p95_ms), 1)] },
    options: { scales: { x: cat('step'), y: axis('milliseconds') } },
  }, `Latency per step: ${r.steps.map((s) => `${s.step} p50 ${Math.round(s.p50_ms)} ms, p95 ${Math.round(s.p95_ms)} ms`).join('; ')}.`,
  [{ label: 'step', value: (s) => s.step }, { label: 'count', num: true, value: (s) => s.count }, { label: 'p50 ms', num: true, value: (s) => Math.round(s.p50_ms) }, { label: 'p95 ms', num: true, value: (s) => Math.round(s.p95_ms) }], r.steps);

  draw('c-errors', {
    data: { labels: r.errors.map((e) => e.code), datasets: [barSet('errors', r.errors.map((e) => e.count), 2)] },
    options: { indexAxis: 'y', plugins: { legend: { display: false } }, scales: { x: axis('errors'), y: cat('') } },
  }, r.errors.length ? `Errors by code: ${r.errors.map((e) => `${e.code} ${e.count}`).join(', ')}.` : 'No errors.',
  [{ label: 'code', value: (e) => e.code }, { label: 'errors', num: true, value: (e) => e.count }], r.errors);

  draw('c-models', {
    data: {
      labels: r.models.map((m) => `${m.model} · ${formatUsd(m.cost_usd)}`),
      datasets: [barSet('input tokens', r.models.map((m) => m.input_tokens), 0), barSet('output tokens', r.models.map((m) => m.output_tokens), 1)],
    },
    options: { indexAxis: 'y', scales: { x: axis('tokens', { stacked: true }), y: cat('', { stacked: true }) } },
  }, `Tokens and cost by model: ${r.models.map((m) => `${m.model} ${m.input_tokens} in, ${m.output_tokens} out, ${formatUsd(m.cost_usd)}`).join('; ')}.`,
  [{ label: 'model', value: (m) => m.model }, { label: 'calls', num: true, value: (m) => m.calls }, { label: 'input tokens', num: true, value: (m) => m.input_tokens },
    { label: 'output tokens', num: true, value: (m) => m.output_tokens }, { label: 'cost', num: true, value: (m) => formatUsd(m.cost_usd) }], r.models);

  const models = [...new Set(r.models_per_day.map((m) => m.model))];
  const tokensOn = (model, day) => r.models_per_day.filter((m) => m.model === model && m.day === day).reduce((a, m) => a + m.input_tokens + m.output_tokens, 0);
  draw('c-cost-day', {
    data: {
      labels: days,
      datasets: [
        ...models.map((model, i) => barSet(`${model} tokens`, days.map((d) => tokensOn(model, d)), i, { stack: 'tokens', yAxisID: 'y' })),
        lineSet('cost (USD, right axis)', r.per_day.map((d) => d.cost_usd), 4, { borderDash: DASHES[2], yAxisID: 'y1' }),
      ],
    },
    options: {
      scales: {
        x: cat('day (UTC)', { stacked: true }), y: axis('tokens', { stacked: true }),
        y1: { ...axis('cost (USD)'), position: 'right', grid: { drawOnChartArea: false }, ticks: { color: INK } },
      },
    },
  }, `Tokens and cost by day: ${formatInt(t.input_tokens + t.output_tokens)} tokens and ${formatUsd(t.cost_usd)} in all, by ${models.length} model(s).`,
  [{ label: 'day', value: (m) => m.day }, { label: 'model', value: (m) => m.model }, { label: 'input tokens', num: true, value: (m) => m.input_tokens },
    { label: 'output tokens', num: true, value: (m) => m.output_tokens }, { label: 'cost', num: true, value: (m) => formatUsd(m.cost_usd) }], r.models_per_day);

  draw('c-widgets', {
    data: { labels: r.widgets.map((w) => w.widget), datasets: [barSet('questions', r.widgets.map((w) => w.questions), 1)] },
    options: { plugins: { legend: { display: false } }, scales: { x: cat('widget'), y: axis('questions') } },
  }, `Questions by widget: ${r.widgets.map((w) => `${w.widget} ${w.questions}`).join(', ')}.`,
  [{ label: 'widget', value: (w) => w.widget }, { label: 'questions', num: true, value: (w) => w.questions }], r.widgets);

  draw('c-channels', {
    data: { labels: r.channels.map((c) => c.channel), datasets: [barSet('questions', r.channels.map((c) => c.questions), 5)] },
    options: { plugins: { legend: { display: false } }, scales: { x: cat('channel'), y: axis('questions') } },
  }, `Questions by channel: ${r.channels.map((c) => `${c.channel} ${c.questions}`).join(', ')}.`,
  [{ label: 'channel', value: (c) => c.channel }, { label: 'questions', num: true, value: (c) => c.questions }], r.channels);

  draw('c-tables', {
    data: { labels: r.tables.map((x) => x.table), datasets: [barSet('questions', r.tables.map((x) => x.questions), 3)] },
    options: { indexAxis: 'y', plugins: { legend: { display: false } }, scales: { x: axis('questions'), y: cat('') } },
  }, r.tables.length ? `Busiest tables: ${r.tables.map((x) => `${x.table} ${x.questions}`).join(', ')}.` : 'No tables were queried.',
  [{ label: 'table', value: (x) => x.table }, { label: 'questions', num: true, value: (x) => x.questions }], r.tables);

  draw('c-users', {
    data: { labels: r.users.map((u) => u.user), datasets: [barSet('questions', r.users.map((u) => u.questions), 0), barSet('errors', r.users.map((u) => u.errors), 1)] },
    options: { indexAxis: 'y', scales: { x: axis('questions'), y: cat('') } },
  }, r.users.length ? `Busiest users and tokens: ${r.users.map((u) => `${u.user} ${u.questions} questions, ${u.errors} errors`).join('; ')}.` : 'No signed-in users or tokens asked.',
  [{ label: 'user or token', value: (u) => u.user }, { label: 'questions', num: true, value: (u) => u.questions }, { label: 'errors', num: true, value: (u) => u.errors }], r.users);

  const what = (x) => x.question ?? `request ${x.request_id}`;
  $('#slowest').replaceChildren(table([
    { label: 'when (UTC)', value: (x) => formatUtcMinute(x.ts) }, { label: 'total', num: true, value: (x) => formatMs(x.total_ms) },
    { label: 'widget', value: (x) => x.widget ?? x.channel ?? '' }, { label: 'user', value: (x) => x.user ?? '' }, { label: 'question', value: what },
  ], r.slowest));
  $('#disliked').replaceChildren(table([
    { label: 'when (UTC)', value: (x) => formatUtcMinute(x.ts) }, { label: 'comment', value: (x) => x.comment ?? '' },
    { label: 'widget', value: (x) => x.widget ?? x.channel ?? '' }, { label: 'user', value: (x) => x.user ?? '' }, { label: 'question', value: what },
  ], r.disliked));
  $('#questions-note').hidden = r.store_questions;
}

// ---- filters, loading and signing in ------------------------------------------------------

function filterQuery() {
  const q = new URLSearchParams();
  const from = $('#f-from').value;
  const to = $('#f-to').value;
  // bare UTC dates: the report reads `to` as the end of that day
  if (from) q.set('from', from);
  if (to) q.set('to', to);
  if ($('#f-widget').value) q.set('widget', $('#f-widget').value);
  if ($('#f-channel').value) q.set('channel', $('#f-channel').value);
  const user = $('#f-user').value.trim();
  if (user) q.set('user', user);
  return q;
}

/** The filters a shared link carries (?from=YYYY-MM-DD&to=…&widget=…&channel=…&user=…). */
function filtersFromUrl() {
  const q = new URLSearchParams(location.search);
  const day = (v) => (/^\d{4}-\d{2}-\d{2}/.test(v ?? '') ? v.slice(0, 10) : '');
  $('#f-from').value = day(q.get('from'));
  $('#f-to').value = day(q.get('to'));
  $('#f-widget').value = q.get('widget') ?? '';
  $('#f-channel').value = q.get('channel') ?? '';
  $('#f-user').value = q.get('user') ?? '';
}

const api = createApi();
const show = (section) => showOnly(['login', 'denied', 'board'], section);

let loading = 0;
async function load() {
  const mine = ++loading;
  const q = filterQuery();
  document.body.dataset.state = 'loading';
  let body;
  let failed;
  try {
    body = await api.get(`/api/analytics/report${q.size ? `?${q}` : ''}`);
  } catch (err) {
    failed = err;
  }
  if (mine !== loading) return; // a newer filter change is on its way
  if (failed?.status === 401) {
    show('login');
    document.body.dataset.state = 'login';
    return;
  }
  if (failed?.status === 403) {
    $('#denied-text').textContent = failed.message || 'You may not see the analytics.';
    show('denied');
    document.body.dataset.state = 'denied';
    return;
  }
  show('board');
  history.replaceState(null, '', `/analytics${q.size ? `?${q}` : ''}`);
  if (failed) {
    $('#problem').hidden = false;
    $('#problem').textContent = `${failed.code}: ${failed.message}`;
    $('#content').hidden = true;
    $('#empty').hidden = true;
    document.body.dataset.state = 'error';
    return;
  }
  $('#problem').hidden = true;
  render(body);
  if (!Chart) {
    $('#problem').hidden = false;
    $('#problem').textContent = 'The chart library could not be loaded: the data tables below show the same numbers.';
  }
  document.body.dataset.state = 'ready';
}

wireSignIn(load);

for (const id of ['f-from', 'f-to', 'f-widget', 'f-channel', 'f-user']) $(`#${id}`).addEventListener('change', () => void load());
$('#filters').addEventListener('submit', (e) => { e.preventDefault(); void load(); });
$('#f-user').addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); void load(); } });
$('#f-clear').addEventListener('click', () => {
  for (const id of ['f-from', 'f-to', 'f-widget', 'f-channel', 'f-user']) $(`#${id}`).value = '';
  void load();
});

filtersFromUrl();
void load();
// theme.js says when the theme changed (the toggle of another page of this origin, the dashboard around an iframe)
addEventListener('cortado:theme', () => { if (last && document.body.dataset.state === 'ready') render(last); });

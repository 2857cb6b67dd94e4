// /ops: the warehouse operations console, from GET /api/ops/status and GET /api/ops/{operation}.
// One section per operation; in it, per project, a chart (Chart.js, served at /vendor/) and
// tables, or that project's error. The alarms panel mounts itself into #alarms (ops-alarms.js).
import { showOnly, wireSignIn } from './admin-signin.js';
import { createApi } from './lib/api.js';
import { $, el } from './lib/dom.js';
import { formatGiB, formatInt, formatPercent, formatUsd, formatUtcMinute } from './lib/format.js';

const Chart = window.Chart;

// the text colour of the theme in force (style.css --ctd-ink): read at each load, and when the theme changes
const themeInk = () => getComputedStyle(document.documentElement).getPropertyValue('--ctd-ink').trim() || '#2b2118';
let INK = themeInk();
const PALETTE = ['#7a4b2a', '#2f6f8f', '#b26a00', '#5a7d2a', '#8e3b5e'];
const OPERATIONS = ['get_expensive_queries', 'forecast_monthly_costs', 'find_public_datasets', 'check_slot_saturation'];
const charts = [];


function table(columns, rows, empty = 'Nothing found.') {
  if (!rows.length) return el('p', { class: 'muted', text: empty });
  const head = el('tr', {}, ...columns.map((c) => el('th', { scope: 'col', class: c.cls ?? '', text: c.label })));
  const body = rows.map((r) => el('tr', {}, ...columns.map((c) => el('td', { class: c.cls ?? '', text: String(c.value(r) ?? '') }))));
  return el('div', { class: 'table' }, el('table', {}, el('thead', {}, head), el('tbody', {}, ...body)));
}

function figures(pairs) {
  return el('dl', { class: 'figures' }, ...pairs.map(([k, v]) => el('div', {}, el('dt', { text: k }), el('dd', { text: v }))));
}

/** A chart in its own sized box, with an aria label saying what it shows. */
function chart(label, config) {
  const canvas = el('canvas', { role: 'img', 'aria-label': label });
  const box = el('div', { class: 'canvas' }, canvas);
  if (Chart) {
    requestAnimationFrame(() => {
      const options = { animation: false, responsive: true, maintainAspectRatio: false, plugins: { legend: { labels: { color: INK, usePointStyle: true } } }, ...config.options };
      charts.push(new Chart(canvas, { ...config, options }));
    });
  }
  return box;
}

const axis = (title, extra = {}) => ({ beginAtZero: true, title: { display: true, text: title, color: INK }, ticks: { color: INK }, ...extra });

// ---- one project's result, per operation --------------------------------------------------

function expensive(r, target) {
  const costed = r.by_bytes.some((q) => q.cost_usd != null);
  const top = r.by_bytes.length ? r.by_bytes : r.by_slot;
  const byBytes = r.by_bytes.length > 0;
  const values = top.map((q) => (byBytes ? (costed ? q.cost_usd : q.bytes_billed / 2 ** 30) : q.slot_ms / 1000));
  const unit = byBytes ? (costed ? 'cost (USD)' : 'GiB read') : 'seconds';
  const cols = [
    { label: 'Job', value: (q) => q.job_id },
    { label: 'User', value: (q) => q.user },
    { label: 'Started', value: (q) => formatUtcMinute(q.started_at) },
    { label: 'Bytes', cls: 'num', value: (q) => formatGiB(q.bytes_billed) },
    { label: 'Slot time', cls: 'num', value: (q) => `${formatInt(Math.round(q.slot_ms / 1000))} s` },
    ...(costed ? [{ label: 'Cost', cls: 'num', value: (q) => formatUsd(q.cost_usd) }] : []),
    ...(top.some((q) => (q.calls ?? 1) > 1) ? [{ label: 'Calls', cls: 'num', value: (q) => formatInt(q.calls) }] : []),
    { label: 'Query', cls: 'sql', value: (q) => q.query },
  ];
  return [
    chart(`${target.label}: the top queries by ${unit}`, {
      type: 'bar',
      data: { labels: top.map((q) => q.job_id.slice(0, 18)), datasets: [{ label: unit, data: values, backgroundColor: PALETTE[0] }] },
      options: { indexAxis: 'y', scales: { x: axis(unit), y: { ticks: { color: INK } } } },
    }),
    r.note ? el('p', { class: 'note', text: r.note }) : null,
    el('h4', { text: `By bytes billed (last ${r.window_days} days)` }),
    table(cols, r.by_bytes, 'No query in the window.'),
    el('h4', { text: 'By slot time' }),
    table(cols, r.by_slot, 'No query in the window.'),
  ];
}

function forecastView(r, target) {
  return [
    figures([['Month to date', formatUsd(r.month_to_date_usd)], ['Forecast', formatUsd(r.forecast_usd)], ['80 % interval', `${formatUsd(r.low_usd)} – ${formatUsd(r.high_usd)}`], ['Days observed', `${r.days_observed} of ${r.days_in_month}`]]),
    chart(`${target.label}: cost per day, ${r.month}`, {
      type: 'bar',
      data: { labels: r.daily.map((d) => d.date.slice(5)), datasets: [{ label: 'cost per day (USD)', data: r.daily.map((d) => d.cost_usd), backgroundColor: PALETTE[1] }] },
      options: { scales: { y: axis('USD'), x: { ticks: { color: INK, autoSkip: true } } } },
    }),
    el('p', { class: 'note', text: `Method: ${r.method}.` }),
    el('details', {}, el('summary', { text: 'Cost per day' }), table([{ label: 'Day', value: (d) => d.date }, { label: 'Bytes billed', cls: 'num', value: (d) => formatGiB(d.bytes_billed) }, { label: 'Cost', cls: 'num', value: (d) => formatUsd(d.cost_usd) }], r.daily)),
  ];
}

function publicView(r, target) {
  const allUsers = r.datasets.filter((d) => d.entries.some((e) => e.member === 'allUsers')).length;
  const allAuth = r.datasets.filter((d) => d.entries.some((e) => e.member === 'allAuthenticatedUsers')).length;
  return [
    figures([['Datasets checked', formatInt(r.checked)], ['Public', formatInt(r.datasets.length)]]),
    chart(`${target.label}: ${r.datasets.length} of ${r.checked} datasets public`, {
      type: 'bar',
      data: { labels: ['private', 'allUsers', 'allAuthenticatedUsers'], datasets: [{ label: 'datasets', data: [r.checked - r.datasets.length, allUsers, allAuth], backgroundColor: [PALETTE[3], PALETTE[4], PALETTE[2]] }] },
      options: { plugins: { legend: { display: false } }, scales: { y: axis('datasets', { ticks: { color: INK, precision: 0 } }) } },
    }),
    table([
      { label: 'Dataset', value: (d) => d.dataset_id },
      { label: 'Location', value: (d) => d.location ?? '' },
      { label: 'Public through', value: (d) => d.entries.map((e) => `${e.role} to ${e.member}`).join('; ') },
    ], r.datasets, 'No public dataset.'),
  ];
}

function saturationView(r, target) {
  const peak = r.points.reduce((a, p) => Math.max(a, p.avg_slots), 0);
  const datasets = [{ type: 'line', label: 'average slots in use', data: r.points.map((p) => p.avg_slots), borderColor: PALETTE[1], backgroundColor: PALETTE[1], pointRadius: 0, borderWidth: 2 }];
  if (r.capacity != null) {
    datasets.push({ type: 'line', label: 'capacity', data: r.points.map(() => r.capacity), borderColor: PALETTE[4], borderDash: [6, 4], pointRadius: 0, borderWidth: 2 });
    datasets.push({ type: 'line', label: `threshold (${formatPercent(r.threshold_share)})`, data: r.points.map(() => r.capacity * r.threshold_share), borderColor: PALETTE[2], borderDash: [2, 3], pointRadius: 0, borderWidth: 1.5 });
  }
  return [
    figures([['Capacity', r.capacity == null ? 'unknown' : formatInt(r.capacity)], ['Peak slots', formatInt(Math.round(peak))], ['Saturated periods', formatInt(r.saturated_periods.length)], ['Minutes saturated', formatInt(r.saturated_periods.reduce((a, s) => a + s.minutes, 0))]]),
    chart(`${target.label}: slots in use over the last ${r.window_hours} hours`, {
      type: 'line',
      data: { labels: r.points.map((p) => formatUtcMinute(p.period_start).slice(5)), datasets },
      options: { scales: { y: axis('slots'), x: { ticks: { color: INK, autoSkip: true, maxTicksLimit: 12 } } } },
    }),
    r.note ? el('p', { class: 'note', text: r.note }) : null,
    table([
      { label: 'From', value: (s) => formatUtcMinute(s.start) },
      { label: 'To', value: (s) => formatUtcMinute(s.end) },
      { label: 'Minutes', cls: 'num', value: (s) => formatInt(s.minutes) },
      { label: 'Peak share', cls: 'num', value: (s) => formatPercent(s.peak_share) },
    ], r.saturated_periods, 'No saturated period.'),
  ];
}

const VIEWS = { get_expensive_queries: expensive, forecast_monthly_costs: forecastView, find_public_datasets: publicView, check_slot_saturation: saturationView };

function projectCard(p) {
  const fig = el('figure', { class: 'project', 'data-target': p.target.label }, el('h3', { text: p.target.label }));
  if (p.error) {
    fig.append(el('p', { class: 'project-error', role: 'alert', text: `${p.error.code}: ${p.error.message}` }));
    return fig;
  }
  for (const part of VIEWS[p.result.kind](p.result, p.target)) if (part) fig.append(part);
  return fig;
}

function insightCards(insights) {
  if (insights.status === 'off') return [];
  if (insights.status !== 'ok') return [el('p', { class: 'muted', text: insights.status === 'bad_reply' ? 'The model\'s findings did not follow the format and were left out.' : 'The model could not be reached: no findings this time.' })];
  return insights.items.map((i) => el('div', { class: `insight ${i.severity}` }, el('b', { text: `${i.type} · ${i.severity}` }), el('p', { text: i.message })));
}

// ---- loading ------------------------------------------------------------------------------

const api = createApi();
const show = (section) => showOnly(['login', 'denied', 'console'], section);

async function runOperation(op, allowed) {
  const section = $(`#op-${op}`);
  const projects = $('.projects', section);
  const insights = $('.insights', section);
  if (!allowed.includes(op)) {
    projects.replaceChildren(el('p', { class: 'off', text: `Not run: ${op} is not in ops_agent.config.allowed_operations.` }));
    insights.replaceChildren();
    section.dataset.state = 'off';
    return;
  }
  section.dataset.state = 'loading';
  const q = new URLSearchParams({ window_days: $('#f-days').value || '7', window_hours: $('#f-hours').value || '24', limit: $('#f-limit').value || '10' });
  if (op !== 'get_expensive_queries') q.delete('limit');
  if (op !== 'get_expensive_queries') q.delete('window_days');
  if (op !== 'check_slot_saturation') q.delete('window_hours');
  let body;
  try {
    body = await api.get(`/api/ops/${op}?${q}`);
  } catch (err) {
    projects.replaceChildren(el('p', { class: 'project-error', role: 'alert', text: `${err.code}: ${err.message}` }));
    insights.replaceChildren();
    section.dataset.state = 'error';
    return;
  }
  projects.replaceChildren(...body.projects.map(projectCard));
  insights.replaceChildren(...insightCards(body.insights));
  section.dataset.state = 'ready';
}

async function load() {
  document.body.dataset.state = 'loading';
  let body;
  let failed;
  try {
    body = await api.get('/api/ops/status');
  } catch (err) {
    failed = err;
  }
  if (failed?.status === 401) {
    show('login');
    document.body.dataset.state = 'login';
    return;
  }
  if (failed || !body.enabled) {
    $('#denied-text').textContent = failed?.message ?? body.reason ?? 'The operations console cannot be shown.';
    show('denied');
    document.body.dataset.state = 'denied';
    return;
  }
  show('console');
  INK = themeInk();
  $('#targets').textContent = `${body.targets.map((t) => t.label).join(', ') || 'no target'} · $${body.price_per_tb_usd} per TiB${body.ai_insights ? ' · model insights on' : ''}`;
  while (charts.length) charts.pop().destroy();
  await Promise.all(OPERATIONS.map((op) => runOperation(op, body.allowed_operations)));
  $('#problem').hidden = Boolean(Chart);
  if (!Chart) $('#problem').textContent = 'The chart library could not be loaded: the tables show the same numbers.';
  document.body.dataset.state = 'ready';
}

wireSignIn(load);
$('#controls').addEventListener('submit', (e) => { e.preventDefault(); void load(); });

void load();

/** The charts drawn already take the new theme's text colour (theme.js says when it changed). */
addEventListener('cortado:theme', () => {
  INK = themeInk();
  for (const c of charts) {
    const o = c.options;
    if (o.plugins?.legend?.labels) o.plugins.legend.labels.color = INK;
    for (const scale of Object.values(o.scales ?? {})) {
      if (scale.ticks) scale.ticks.color = INK;
      if (scale.title) scale.title.color = INK;
    }
    c.update('none');
  }
});

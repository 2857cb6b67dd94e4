// The chart of an answer: the model (lib/chart-model.js: which chart the result's shape suits,
// pivoted, with its legend and axis titles) drawn with Chart.js, or a number card for a single
// value, with pickers for the chart type, x, series and measure (docs/ui.md, "Charts"). Chart.js
// is served by Cortado (/vendor/chart.umd.min.js) and loaded once per page: when a question is
// asked (prepareChartJs), or else on the first chart. Once loaded while a question is answered,
// it is warmed up in idle time (a tiny chart of each type drawn off screen and destroyed), so
// that the page's first real chart is not drawn cold.
import { chartModel, COUNT_ROWS, percentages } from '../lib/chart-model.js';
import { el } from '../lib/dom.js';
import { formatNumber } from '../lib/format.js';

/** The chart a result gets with no choice made: its kind ('line' | 'bar' | 'doughnut' | 'kpi' | 'none') and why. */
export function chooseChart(columns, rows) {
  const m = chartModel(columns, rows);
  return { type: m.kind, why: m.why, x: m.x, series: m.series, measure: m.measure };
}

let loading;
/** window.Chart, loading /vendor/chart.umd.min.js once per page. */
export function loadChartJs(base = '') {
  if (globalThis.Chart) return Promise.resolve(globalThis.Chart);
  loading ??= new Promise((resolve, reject) => {
    const s = document.createElement('script');
    s.src = `${base}/vendor/chart.umd.min.js`;
    s.async = true;
    s.onload = () => (globalThis.Chart ? resolve(globalThis.Chart) : reject(new Error('Chart.js did not load')));
    s.onerror = () => { loading = undefined; reject(new Error('the chart library could not be loaded')); };
    document.head.append(s);
  });
  return loading;
}

// Set on the Chart.js constructor (one per page, whichever bundle loaded it) once it has drawn a
// chart, a warm-up one or a real one: the warm-up runs at most once per page, never after a real chart.
const WARM = Symbol.for('cortado.chart.warm');
const idle = (fn) => (typeof requestIdleCallback === 'function' ? requestIdleCallback(fn, { timeout: 1000 }) : setTimeout(fn, 50));

/**
 * Load Chart.js (loadChartJs) and, in idle time, warm it up: the first chart Chart.js draws in a
 * page is slow (its code compiled, fonts measured, its controllers and scales set up), so a tiny
 * chart of each type the answer view draws (line, bar, pie) is drawn on a detached canvas, never
 * in the page, then destroyed, one type per idle callback so input is never held up for long.
 * Once per page; skipped when a real chart was drawn first. Never rejects.
 */
export function prepareChartJs(base = '') {
  return loadChartJs(base).then((Chart) => {
    if (Chart[WARM]) return;
    Chart[WARM] = 'warming';
    const types = ['line', 'bar', 'doughnut'];
    const step = () => {
      if (Chart[WARM] === true) return; // a real chart came first: warm already
      const type = types.shift();
      if (!type) { Chart[WARM] = true; return; }
      try {
        const canvas = document.createElement('canvas');
        canvas.width = 240;
        canvas.height = 120;
        const n = type === 'doughnut' ? 4 : 24;
        const rows = Array.from({ length: n }, (_, i) => [`2023-01-${String(i + 1).padStart(2, '0')}`, i % 2 ? 'a' : 'b', 100 + ((i * 37) % 50)]);
        const model = chartModel([{ name: 'day', type: 'date' }, { name: 'kind', type: 'text' }, { name: 'value', type: 'integer' }], rows, { kind: type, ...(type === 'doughnut' ? { x: 1, series: null } : {}) });
        const chart = new Chart(canvas, chartConfig(model, '#6f6054', 'rgba(0,0,0,0.1)', { responsive: false, events: [] }));
        chart.destroy();
      } catch {
        // a warm-up only: a failure here shows nowhere (the real chart reports its own)
      }
      idle(step);
    };
    idle(step);
  }, () => undefined);
}

/** Ticks: 1,050 as it is, 12,345,678 → "12.3M" (the tooltips say the full value). */
const compact = (v) => (typeof v !== 'number' ? v : Math.abs(v) < 10_000 ? v.toLocaleString(undefined, { maximumFractionDigits: 2 })
  : v.toLocaleString(undefined, { notation: 'compact', maximumSignificantDigits: 3 }));
const PALETTE = ['#a67c52', '#4e79a7', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];
const OTHER = '#9e9e9e';

/**
 * A Chart.js config for a chart model (ink, grid: the theme's text and line colours). A legend
 * and axis titles always; a doughnut's parts and a share's bars say their percentage.
 */
function chartConfig(model, ink, grid, extra = {}) {
  const type = model.kind;
  const round = type === 'doughnut';
  const long = model.labels.length;
  const shares = model.percent ? percentages(model.datasets[0]?.data ?? []) : null;
  const pct = (i) => (shares?.[i] === null || shares?.[i] === undefined ? '' : ` (${formatNumber(shares[i], 1)} %)`);
  const datasets = model.datasets.map((d, k) => {
    const color = d.other ? OTHER : PALETTE[k % PALETTE.length];
    return {
      label: d.label,
      data: d.data,
      borderColor: round ? 'rgba(255,255,255,0.8)' : color,
      backgroundColor: round ? d.data.map((_, j) => PALETTE[j % PALETTE.length]) : type === 'line' ? color : `${color}cc`,
      // a curve through every point of a long series costs more to draw than it shows
      tension: long > 200 ? 0 : 0.2,
      pointRadius: long > 60 ? 0 : 3,
      spanGaps: true,
    };
  });
  const axis = (title) => ({ title: { display: true, text: title, color: ink }, ticks: { color: ink }, grid: { color: grid }, border: { color: grid } });
  return {
    type,
    data: { labels: round ? model.labels.map((l, i) => `${l}${pct(i)}`) : model.labels, datasets: round ? datasets.slice(0, 1) : datasets },
    options: {
      responsive: true, maintainAspectRatio: false, animation: false, color: ink,
      plugins: {
        legend: { display: true, position: round ? 'right' : 'top', labels: { color: ink, boxWidth: 12 } },
        tooltip: {
          callbacks: {
            label: (c) => `${round ? c.label : c.dataset.label}: ${model.format(c.raw)}${!round && model.percent ? pct(c.dataIndex) : ''}`,
          },
        },
      },
      ...(round ? {} : {
        scales: {
          x: axis(model.xTitle),
          y: { ...axis(model.yTitle), beginAtZero: type === 'bar', ticks: { color: ink, callback: compact } },
        },
      }),
      ...extra,
    },
  };
}

/** "Revenue by month and region", "Share by channel (of the total)" */
const captionOf = (m) => `${m.yTitle} by ${m.xTitle.toLowerCase()}${m.seriesTitle ? ` and ${m.seriesTitle.toLowerCase()}` : ''}${m.percent ? ' (each part\'s share of the total)' : ''}`;

const KIND_LABEL = { line: 'Line chart', bar: 'Bar chart', doughnut: 'Doughnut', none: 'No chart' };

/** The number cards of a single value: the figure, its label, and the row's category under it. */
function renderKpis(model) {
  return el('div', { class: 'kpis' }, ...model.cards.map((c) => el('div', { class: 'kpi', role: 'group', 'aria-label': `${c.label}: ${c.text}` },
    el('span', { class: 'kpi-value', text: c.text }),
    el('span', { class: 'kpi-label', text: c.label }),
    c.caption ? el('span', { class: 'kpi-caption muted', text: c.caption }) : null)));
}

/**
 * The chart block of an answer, or null when there is nothing to chart (no rows). opts: {base,
 * question} (the question picks the measure it names).
 * A single value is a number card; a shape no chart suits offers "Make a chart" (pickers only).
 * The block holds pickers (type, x, series, measure) and a canvas sized by its box.
 */
export function renderChart(columns, rows, opts = {}) {
  if (!columns?.length || !rows?.length) return null;
  const context = { question: opts.question ?? '' };
  let model = chartModel(columns, rows, {}, context);
  if (model.kind === 'kpi') {
    const wrap = el('figure', { class: 'chart kpi-chart', 'data-type': 'kpi', 'data-rule': model.why }, renderKpis(model));
    wrap.drawChart = async () => {};
    wrap.destroyChart = () => {};
    return wrap;
  }
  if (model.kind === 'none' && rows.length < 2) return null;
  const label = (i) => (i === COUNT_ROWS ? 'Number of rows' : model.roles[i].label);
  const picker = (cls, text, values, names, selected) => {
    const select = el('select', { class: cls, 'aria-label': text },
      ...values.map((v, k) => el('option', { value: String(v), text: names[k], selected: String(v) === String(selected) })));
    return { select, node: el('label', { class: 'pick' }, el('span', { class: 'muted', text: `${text} ` }), select) };
  };
  const kinds = ['line', 'bar', 'doughnut', 'none'];
  const type = picker('chart-type', 'Chart type', kinds, kinds.map((k) => KIND_LABEL[k]), model.kind === 'none' ? 'bar' : model.kind);
  const xs = model.choices.x;
  const xPick = picker('chart-x', 'Along', xs, xs.map(label), model.x ?? xs[0]);
  const ss = ['', ...model.choices.series];
  const sPick = picker('chart-series', 'Series', ss, ['None', ...model.choices.series.map(label)], model.series ?? '');
  const ms = model.choices.measures;
  const mPick = picker('chart-measure', 'Measure', ms, ms.map(label), model.measure ?? ms[0]);
  const box = el('div', { class: 'chart-box' });
  const status = el('span', { class: 'muted chart-status', 'aria-live': 'polite' });
  const pickers = el('div', { class: 'chart-bar' }, type.node, mPick.node, xPick.node, sPick.node, status);
  const wrap = el('figure', { class: 'chart', 'data-type': model.kind, 'data-rule': model.why, 'data-measure': model.measure === undefined ? '' : label(model.measure) });
  if (model.kind === 'none') {
    // no chart suits the shape by itself: the pickers, folded, for a person who wants one anyway
    const details = el('details', { class: 'chart-pick' }, el('summary', { text: 'Make a chart' }), pickers, box);
    wrap.append(details);
    details.addEventListener('toggle', () => { if (details.open && !chart) void draw(); }, { once: false });
  } else wrap.append(el('figcaption', { class: 'chart-caption muted', text: captionOf(model) }), pickers, box);
  let chart;
  const choice = () => ({
    kind: type.select.value,
    x: Number(xPick.select.value),
    series: sPick.select.value === '' ? null : Number(sPick.select.value),
    measure: Number(mPick.select.value),
  });
  const draw = async (picked) => {
    if (picked) model = chartModel(columns, rows, choice(), context);
    chart?.destroy();
    chart = undefined;
    box.replaceChildren();
    wrap.dataset.type = model.kind;
    wrap.dataset.measure = model.measure === undefined ? '' : label(model.measure);
    box.hidden = model.kind === 'none';
    if (model.kind === 'none') return;
    wrap.querySelector('figcaption')?.replaceChildren(captionOf(model));
    const canvas = el('canvas', { role: 'img', 'aria-label': `${KIND_LABEL[model.kind]} of ${model.yTitle} by ${model.xTitle}${model.seriesTitle ? ` and ${model.seriesTitle}` : ''}` });
    box.append(canvas);
    try {
      const Chart = await loadChartJs(opts.base ?? '');
      if (!canvas.isConnected && !box.isConnected) await new Promise((r) => requestAnimationFrame(r));
      // the text and grid colours of the theme the chart is drawn in (the --ctd-* of a dark page or widget)
      const style = getComputedStyle(box);
      const ink = style.getPropertyValue('--ctd-muted').trim() || '#6f6054';
      const grid = style.getPropertyValue('--ctd-line').trim() || 'rgba(0,0,0,0.1)';
      Chart[WARM] = true; // a pending warm-up is not needed any more
      chart = new Chart(canvas, chartConfig(model, ink, grid));
      status.textContent = '';
    } catch (e) {
      status.textContent = `No chart: ${e.message}`;
    }
  };
  for (const p of [type, xPick, sPick, mPick]) p.select.addEventListener('change', () => void draw(true));
  wrap.destroyChart = () => chart?.destroy();
  // drawn once the block is in the page (Chart.js measures its box)
  wrap.drawChart = () => (model.kind === 'none' ? Promise.resolve() : draw());
  return wrap;
}

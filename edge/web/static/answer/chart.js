// The automatic chart of an answer, chosen by rules (docs/ui.md, "Answers"):
//   1. a date/time column and a numeric measure            → line (x sorted by time)
//   2. one category column and one measure, a share of a whole
//      (the measure is named share/percent/pct/ratio, or its values are ≥ 0 and sum to 100 ± 1)
//                                                         → pie with ≤ 8 parts, bar otherwise
//   3. one category column and a measure, ≤ 30 categories → bar
//   4. anything else (one row, no measure, several category columns, > 30 categories) → none
// The user can switch between line, bar and pie, or hide the chart. Chart.js is served by
// Cortado (/vendor/chart.umd.min.js) and loaded once per page: when a question is asked
// (prepareChartJs), or else on the first chart. Once loaded while a question is answered, it is
// warmed up in idle time (a tiny chart of each type drawn off screen and destroyed), so that the
// page's first real chart is not drawn cold.
import { el } from '../lib/dom.js';
import { isNumericType, isTemporalType } from './table.js';

export const MAX_BAR_CATEGORIES = 30;
export const MAX_PIE_PARTS = 8;
const DATE_TEXT = /^\d{4}-\d{2}(-\d{2})?([ T]\d{2}:\d{2}.*)?$/;
const SHARE_NAME = /share|percent|pct|ratio|proportion|%/i;

function columnKinds(columns, rows) {
  return columns.map((c, i) => {
    const values = rows.map((r) => r[i]).filter((v) => v !== null && v !== undefined);
    if (!values.length) return 'empty';
    if (isTemporalType(c.type) || values.every((v) => typeof v === 'string' && DATE_TEXT.test(v))) return 'time';
    if (isNumericType(c.type) || values.every((v) => typeof v === 'number' || (typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v))))) return 'num';
    return 'cat';
  });
}

const num = (v) => (v === null || v === undefined ? null : typeof v === 'number' ? v : Number(v));

/** {type: 'line'|'bar'|'pie', x, ys: [column index], rule} or null (no chart suits the shape). */
export function chooseChart(columns, rows) {
  if (!columns?.length || !rows || rows.length < 2) return null;
  const kinds = columnKinds(columns, rows);
  const time = kinds.indexOf('time');
  const measures = kinds.map((k, i) => (k === 'num' ? i : -1)).filter((i) => i >= 0);
  const cats = kinds.map((k, i) => (k === 'cat' ? i : -1)).filter((i) => i >= 0);
  if (time >= 0 && measures.length) return { type: 'line', x: time, ys: measures.slice(0, 4), rule: 'time series' };
  if (cats.length !== 1 || !measures.length) return null;
  const x = cats[0];
  const y = measures[0];
  const values = rows.map((r) => num(r[y]));
  const sum = values.reduce((a, v) => a + (v ?? 0), 0);
  const share = SHARE_NAME.test(columns[y].name) || (values.every((v) => v !== null && v >= 0) && Math.abs(sum - 100) <= 1);
  if (share) return { type: rows.length <= MAX_PIE_PARTS ? 'pie' : 'bar', x, ys: [y], rule: 'share' };
  if (rows.length <= MAX_BAR_CATEGORIES) return { type: 'bar', x, ys: [y], rule: 'category and measure' };
  return null;
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
    const types = ['line', 'bar', 'pie'];
    const step = () => {
      if (Chart[WARM] === true) return; // a real chart came first: warm already
      const type = types.shift();
      if (!type) { Chart[WARM] = true; return; }
      try {
        const canvas = document.createElement('canvas');
        canvas.width = 240;
        canvas.height = 120;
        const n = type === 'pie' ? 4 : 24;
        const rows = Array.from({ length: n }, (_, i) => [`2023-01-${String(i + 1).padStart(2, '0')}`, 100 + ((i * 37) % 50), 50 + ((i * 11) % 40)]);
        const columns = [{ name: 'day' }, { name: 'a' }, { name: 'b' }];
        const spec = { type, x: 0, ys: type === 'pie' ? [1] : [1, 2], rule: type === 'line' ? 'time series' : 'category and measure' };
        const data = datasets(spec, type, columns, rows);
        if (type === 'line') Object.assign(data.datasets[1], { tension: 0, pointRadius: 0 }); // the long-series path too
        const chart = new Chart(canvas, chartConfig(type, data, spec, '#6f6054', 'rgba(0,0,0,0.1)', { responsive: false, events: [] }));
        chart.destroy();
      } catch {
        // a warm-up only: a failure here shows nowhere (the real chart reports its own)
      }
      idle(step);
    };
    idle(step);
  }, () => undefined);
}

/** A Chart.js config for the answer view's chart (ink, grid: the theme's text and line colours). */
function chartConfig(type, data, spec, ink, grid, extra = {}) {
  const axis = { ticks: { color: ink }, grid: { color: grid }, border: { color: grid } };
  return {
    type,
    data,
    options: {
      responsive: true, maintainAspectRatio: false, animation: false, color: ink,
      plugins: { legend: { display: type === 'pie' || spec.ys.length > 1, labels: { color: ink } } },
      ...(type === 'pie' ? {} : { scales: { x: axis, y: { ...axis, beginAtZero: type === 'bar' } } }),
      ...extra,
    },
  };
}

const PALETTE = ['#a67c52', '#4e79a7', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];

function datasets(spec, type, columns, rows) {
  const order = rows.map((_, i) => i);
  if (spec.rule === 'time series') order.sort((a, b) => Date.parse(rows[a][spec.x]) - Date.parse(rows[b][spec.x]));
  const labels = order.map((i) => String(rows[i][spec.x] ?? 'null'));
  const sets = spec.ys.map((y, k) => {
    const color = PALETTE[k % PALETTE.length];
    return {
      label: columns[y].name,
      data: order.map((i) => num(rows[i][y])),
      borderColor: type === 'pie' ? '#fff' : color,
      backgroundColor: type === 'pie' ? order.map((_, j) => PALETTE[j % PALETTE.length]) : type === 'line' ? color : `${color}cc`,
      // a curve through every point of a long series costs more to draw than it shows
      tension: rows.length > 200 ? 0 : 0.2,
      pointRadius: rows.length > 60 ? 0 : 3,
    };
  });
  return { labels, datasets: type === 'pie' ? sets.slice(0, 1) : sets };
}

/**
 * The chart block of an answer, or null when no chart suits it. opts: {base}. The block holds a
 * type switch (line / bar / pie / hidden) and a canvas sized by its box.
 */
export function renderChart(columns, rows, opts = {}) {
  const spec = chooseChart(columns, rows);
  if (!spec) return null;
  const box = el('div', { class: 'chart-box' });
  const status = el('span', { class: 'muted chart-status', 'aria-live': 'polite' });
  const select = el('select', { class: 'chart-type', 'aria-label': 'Chart type' },
    ...['line', 'bar', 'pie', 'none'].map((t) => el('option', { value: t, text: t === 'none' ? 'Hide chart' : `${t[0].toUpperCase()}${t.slice(1)} chart`, selected: t === spec.type })));
  const wrap = el('figure', { class: 'chart', 'data-type': spec.type, 'data-rule': spec.rule },
    el('figcaption', { class: 'chart-bar' }, el('span', { class: 'muted', text: `Chart: ${spec.rule}` }), select, status), box);
  let chart;
  const draw = async (type) => {
    chart?.destroy();
    chart = undefined;
    box.replaceChildren();
    wrap.dataset.type = type;
    box.hidden = type === 'none';
    if (type === 'none') return;
    const canvas = el('canvas', { role: 'img', 'aria-label': `${type} chart of ${spec.ys.map((y) => columns[y].name).join(', ')} by ${columns[spec.x].name}` });
    box.append(canvas);
    try {
      const Chart = await loadChartJs(opts.base ?? '');
      if (!canvas.isConnected && !box.isConnected) await new Promise((r) => requestAnimationFrame(r));
      // the text and grid colours of the theme the chart is drawn in (the --ctd-* of a dark page or widget)
      const style = getComputedStyle(box);
      const ink = style.getPropertyValue('--ctd-muted').trim() || '#6f6054';
      const grid = style.getPropertyValue('--ctd-line').trim() || 'rgba(0,0,0,0.1)';
      Chart[WARM] = true; // a pending warm-up is not needed any more
      chart = new Chart(canvas, chartConfig(type, datasets(spec, type, columns, rows), spec, ink, grid));
      status.textContent = '';
    } catch (e) {
      status.textContent = `No chart: ${e.message}`;
    }
  };
  select.addEventListener('change', () => void draw(select.value));
  wrap.destroyChart = () => chart?.destroy();
  // drawn once the block is in the page (Chart.js measures its box)
  wrap.drawChart = () => draw(select.value);
  return wrap;
}

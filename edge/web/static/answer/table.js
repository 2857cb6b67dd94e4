// The rows of an answer: a sortable, paged table. Only one page of rows is ever in the DOM, so
// a result of query.max_limit rows draws as fast as a small one; sorting compares typed keys
// computed once per column (numbers as numbers, dates as times, text with the locale's collator).
// Cells are written for people (lib/format.js columnFormat: money with two decimals, a column's
// decimals fixed, ids without grouping, times in the browser's locale) and headers are the
// columns' display names; the title of a header keeps the SQL's own name.
import { el, icon } from '../lib/dom.js';
import { columnFormat, columnLabel, isNumericType, isTemporalType, parseTemporal } from '../lib/format.js';

export const PAGE_SIZE = 50;

function keyOf(v, kind) {
  if (v === null || v === undefined) return null;
  if (kind === 'num') { const n = typeof v === 'number' ? v : Number(v); return Number.isNaN(n) ? null : n; }
  if (kind === 'time') { const t = parseTemporal(v)?.time ?? Date.parse(String(v)); return Number.isNaN(t) ? null : t; }
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

function display(v, fmt) {
  if (v === null || v === undefined) return 'null';
  return fmt.format(v);
}

/**
 * renderTable(columns: [{name, type}], rows: any[][]) → Element (`.grid` wrapping a table and a
 * pager). Sort by clicking (or Enter/Space on) a header: ascending, descending, back to the
 * original order; nulls always last.
 */
export function renderTable(columns, rows) {
  const formats = columns.map((c, i) => columnFormat(c, rows.map((r) => r[i])));
  const kinds = columns.map((c, i) => (isNumericType(c.type) || ['id', 'calendar', 'currency', 'percent', 'integer', 'decimal'].includes(formats[i].kind) ? 'num'
    : isTemporalType(c.type) || formats[i].kind === 'time' ? 'time' : 'text'));
  const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });
  let order = rows.map((_, i) => i);
  let sortCol = -1;
  let sortDir = 0; // 1 ascending, -1 descending
  let page = 0;
  const pages = () => Math.max(1, Math.ceil(rows.length / PAGE_SIZE));
  const keys = new Map();

  const tbody = el('tbody');
  const ths = columns.map((c, i) => {
    const button = el('button', { type: 'button', class: 'sort', title: `Sort by ${columnLabel(c)} (${c.name}${c.type ? `, ${c.type}` : ''})` }, columnLabel(c), icon('sort'));
    button.addEventListener('click', () => sortBy(i));
    return el('th', { scope: 'col', class: kinds[i] === 'num' ? 'num' : '', 'aria-sort': 'none' }, button);
  });
  const info = el('span', { class: 'page-info', 'aria-live': 'polite' });
  const prev = el('button', { type: 'button', class: 'ghost small prev', text: 'Previous', 'aria-label': 'Previous page' });
  const next = el('button', { type: 'button', class: 'ghost small next', text: 'Next', 'aria-label': 'Next page' });
  prev.addEventListener('click', () => { if (page > 0) { page--; draw(); } });
  next.addEventListener('click', () => { if (page < pages() - 1) { page++; draw(); } });
  const pager = el('div', { class: 'pager', role: 'navigation', 'aria-label': 'Result pages' }, prev, info, next);

  function sortBy(i) {
    if (sortCol !== i) { sortCol = i; sortDir = 1; } else sortDir = sortDir === 1 ? -1 : sortDir === -1 ? 0 : 1;
    if (!sortDir) order = rows.map((_, k) => k);
    else {
      if (!keys.has(i)) keys.set(i, rows.map((r) => keyOf(r[i], kinds[i])));
      const k = keys.get(i);
      const cmp = kinds[i] === 'text' ? (a, b) => collator.compare(a, b) : (a, b) => a - b;
      order = rows.map((_, x) => x).sort((a, b) => {
        const ka = k[a];
        const kb = k[b];
        if (ka === null) return kb === null ? a - b : 1;
        if (kb === null) return -1;
        return sortDir * cmp(ka, kb) || a - b;
      });
    }
    ths.forEach((th, x) => th.setAttribute('aria-sort', x === sortCol && sortDir ? (sortDir === 1 ? 'ascending' : 'descending') : 'none'));
    page = 0;
    draw();
  }

  function draw() {
    const from = page * PAGE_SIZE;
    const slice = order.slice(from, from + PAGE_SIZE);
    const trs = slice.map((ri) => {
      const r = rows[ri];
      const tr = document.createElement('tr');
      for (let i = 0; i < columns.length; i++) {
        const td = document.createElement('td');
        const v = r[i];
        td.textContent = display(v, formats[i]);
        if (v === null || v === undefined) td.className = 'null';
        else if (kinds[i] === 'num') td.className = 'num';
        tr.append(td);
      }
      return tr;
    });
    tbody.replaceChildren(...trs);
    info.textContent = rows.length ? `Rows ${from + 1}–${from + slice.length} of ${rows.length.toLocaleString()} · page ${page + 1} of ${pages()}` : 'No rows';
    prev.disabled = page === 0;
    next.disabled = page >= pages() - 1;
    pager.hidden = pages() <= 1;
  }
  draw();
  const table = el('table', {}, el('thead', {}, el('tr', {}, ...ths)), tbody);
  return el('div', { class: 'table-wrap' }, el('div', { class: 'grid', tabindex: '0', role: 'region', 'aria-label': 'Result rows' }, table), pager);
}

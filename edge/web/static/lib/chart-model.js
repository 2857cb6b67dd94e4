// The chart of a result, as data (docs/ui.md, "Charts"): what a result's shape says to draw, with
// no DOM and no chart library, so the rules are tested on their own and any view can draw them.
//
// Each column gets a role: time (a date/time type, or ISO dates as text), measure (a number that
// is a quantity), id (a number named like a key: id, *_id, *_key, customerId…), calendar (a
// number named like a period: year, month, quarter… with whole values), category (text), empty.
// The measure is the last measure column the question names (revenue in "Monthly revenue…"), else
// the last measure column: the rule the insights use (actors/insights/roles.ts), so the chart and
// the insight cards talk about the same figure. Then, in order:
//
//   one row with a measure                        → number cards (KPI), each with its label
//   time (or a calendar number) + category + measure → one line per category (pivoted; at most
//                                                   MAX_SERIES, the rest summed as "Other")
//   time + measure                                → line, sorted by time
//   category + measure that is a share of a whole → doughnut with percentages (≤ MAX_PIE_PARTS
//                                                   parts), else bar with percentages
//   category + category + measure                 → bars per first category, one series per
//                                                   second (capped as above)
//   category + measure, ≤ MAX_CATEGORIES          → bar
//   anything else                                 → none (the user can still pick x, series and
//                                                   measure: "Number of rows" counts rows)
//
// Every chart has a legend and axis titles (the columns' display names).
import { columnFormat, columnLabel, isCalendarName, isIdName, isNumericType, isTemporalType, isTextType, parseTemporal } from './format.js';

export const MAX_SERIES = 8;
export const MAX_PIE_PARTS = 8;
export const MAX_CATEGORIES = 30;
/** the measure "Number of rows": a count per x (and series) instead of a column's values */
export const COUNT_ROWS = -1;
const SHARE_NAME = /(^|_)(share|percent|percentage|pct|ratio|proportion|fraction)(_|$)|%/i;
const NON_ADDITIVE = /(^|_)(avg|average|mean|median|rate|ratio|pct|percent|percentage|share)(_|$)/i;

const present = (v) => v !== null && v !== undefined && v !== '';
const toNumber = (v) => (typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN);

/** Each column's role: {index, name, label, role, additive} (see the header). */
export function columnRoles(columns, rows) {
  return columns.map((c, index) => {
    const values = rows.map((r) => r[index]).filter(present);
    const base = { index, name: c.name, label: columnLabel(c), additive: !NON_ADDITIVE.test(c.name) };
    if (!values.length) return { ...base, role: 'empty' };
    const numericValues = values.every((v) => typeof v === 'number' || (typeof v === 'string' && !Number.isNaN(toNumber(v))));
    const numeric = isNumericType(c.type) || (!isTemporalType(c.type) && !isTextType(c.type) && numericValues);
    if (!numeric && (isTemporalType(c.type) || values.every((v) => typeof v === 'string' && parseTemporal(v)))) return { ...base, role: 'time' };
    if (!numeric) return { ...base, role: typeof values[0] === 'object' ? 'other' : 'category' };
    const integers = values.every((v) => Number.isInteger(toNumber(v)));
    if (isIdName(c.name)) return { ...base, role: 'id' };
    if (isCalendarName(c.name) && integers) return { ...base, role: 'calendar' };
    return { ...base, role: 'measure' };
  });
}

const GENERIC_WORDS = new Set(['total', 'sum', 'avg', 'average', 'mean', 'count', 'cnt', 'num', 'number', 'of', 'the', 'per', 'by', 'amt', 'value']);

/**
 * Whether the question names a column: every word of its name but the generic ones (total, sum,
 * count…) begins a word of the question. The insights' rule (actors/insights/roles.ts namedIn).
 */
export function namedIn(question, name) {
  const words = String(name).replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase().split(/[^a-z0-9]+/).filter((w) => w && !GENERIC_WORDS.has(w));
  if (!words.length) return false;
  const q = ` ${String(question).toLowerCase().replace(/[^a-z0-9]+/g, ' ')} `;
  return words.every((w) => q.includes(` ${w}`));
}

/**
 * The measure the chart and the insights talk about: the last measure column the question names
 * when it names any, else the last measure column; undefined when there is none.
 */
export function pickMeasure(roles, question = '') {
  const measures = roles.filter((r) => r.role === 'measure');
  const named = question ? measures.filter((r) => namedIn(question, r.name)).at(-1) : undefined;
  return (named ?? measures.at(-1))?.index;
}

/** The columns a person may choose from: x (any but empty), series (categories, calendars), measures. */
function choicesOf(roles) {
  return {
    x: roles.filter((r) => r.role !== 'empty' && r.role !== 'other').map((r) => r.index),
    series: roles.filter((r) => r.role === 'category' || r.role === 'calendar' || r.role === 'time').map((r) => r.index),
    measures: [...roles.filter((r) => r.role === 'measure').map((r) => r.index), COUNT_ROWS],
  };
}

/** The default x, series and measure of a result, and the kind of chart its shape suits. */
function defaults(roles, rows, columns, question) {
  const measure = pickMeasure(roles, question);
  const of = (role) => roles.filter((r) => r.role === role).map((r) => r.index);
  const [time] = of('time');
  // no text to group by: a key (a customer's id) names the bars
  const cats = of('category').length ? of('category') : of('id');
  const cals = of('calendar');
  if (measure === undefined) return { kind: 'none', why: 'no measure to draw' };
  if (rows.length === 1) return { kind: 'kpi', measure, why: 'a single value' };
  const timeX = time ?? (cals.length ? cals[0] : undefined);
  if (timeX !== undefined) {
    return cats.length ? { kind: 'line', x: timeX, series: cats[0], measure, why: 'over time, by category' } : { kind: 'line', x: timeX, series: null, measure, why: 'over time' };
  }
  if (!cats.length) return { kind: 'none', why: 'no category or time to draw it along' };
  const x = cats[0];
  if (cats.length >= 2) return { kind: 'bar', x, series: cats[1], measure, why: 'by two categories' };
  const distinct = new Set(rows.map((r) => r[x])).size;
  if (isShare(columns[measure], rows.map((r) => toNumber(r[measure])))) {
    return { kind: distinct <= MAX_PIE_PARTS ? 'doughnut' : 'bar', x, series: null, measure, share: true, why: 'a share of a whole' };
  }
  if (distinct > MAX_CATEGORIES) return { kind: 'none', why: `more than ${MAX_CATEGORIES} categories` };
  return { kind: 'bar', x, series: null, measure, why: 'by category' };
}

/** A share of a whole: named so, or values ≥ 0 that add up to 100 (± 1) or to 1 (± 0.01). */
function isShare(column, values) {
  if (SHARE_NAME.test(column.name)) return true;
  if (!values.length || values.some((v) => Number.isNaN(v) || v < 0)) return false;
  const sum = values.reduce((a, v) => a + v, 0);
  return Math.abs(sum - 100) <= 1 || (values.length > 1 && Math.abs(sum - 1) <= 0.01);
}

/** The key a cell is grouped under, and how it sorts and reads. */
function axisOf(roles, columns, rows, index) {
  const role = roles[index]?.role;
  const fmt = columnFormat(columns[index], rows.map((r) => r[index]));
  if (role === 'time') {
    return { sort: (a, b) => (parseTemporal(a)?.time ?? 0) - (parseTemporal(b)?.time ?? 0), label: (k) => (k === null ? '(empty)' : fmt.format(k)) };
  }
  if (role === 'calendar' || role === 'id' || role === 'measure') {
    return { sort: (a, b) => toNumber(a) - toNumber(b), label: (k) => (k === null ? '(empty)' : fmt.format(k)) };
  }
  return { sort: null, label: (k) => (k === null || k === '' ? '(empty)' : String(k)) };
}

const keyOf = (v) => (present(v) ? String(v) : null);

/**
 * The chart of a result: chartModel(columns, rows, choice?, {question}?) where choice = {x, series, measure,
 * kind} overrides the defaults (a person's picks; series null for none, measure COUNT_ROWS for
 * the number of rows; kind 'line' | 'bar' | 'doughnut' | 'none'). Returns
 *   {kind: 'none', why, choices, roles}
 *   {kind: 'kpi', cards: [{label, value, text, caption}], why, choices, roles, measure}
 *   {kind: 'line'|'bar'|'doughnut', x, series, measure, labels, datasets: [{label, data, other?}],
 *    xTitle, yTitle, percent (a share: what each value is of the total), format(v), why, choices, roles}
 */
export function chartModel(columns, rows, choice = {}, { question = '' } = {}) {
  const roles = columnRoles(columns ?? [], rows ?? []);
  const choices = choicesOf(roles);
  const base = { roles, choices };
  if (!columns?.length || !rows?.length) return { ...base, kind: 'none', why: 'no rows' };
  const d = defaults(roles, rows, columns, question);
  const picked = choice.x !== undefined || choice.series !== undefined || choice.measure !== undefined;
  if (!picked && choice.kind === undefined) {
    if (d.kind === 'none') return { ...base, kind: 'none', why: d.why, measure: pickMeasure(roles, question) };
    if (d.kind === 'kpi') return { ...base, ...kpi(columns, rows, roles, d.measure), why: d.why };
  }
  const x = choice.x ?? d.x ?? choices.x.find((i) => i !== (choice.measure ?? d.measure));
  const series = choice.series !== undefined ? choice.series : d.series ?? null;
  const measure = choice.measure ?? d.measure ?? COUNT_ROWS;
  let kind = choice.kind ?? (d.kind === 'kpi' || d.kind === 'none' ? 'bar' : d.kind);
  if (x === undefined) return { ...base, kind: 'none', why: 'nothing to draw it along' };
  if (kind === 'none') return { ...base, kind: 'none', why: 'hidden', x, series, measure };
  const model = pivot(columns, rows, roles, { x, series: series === x ? null : series, measure });
  if (kind === 'doughnut' && model.datasets.length > 1) kind = 'bar';
  const share = d.share && x === d.x && measure === d.measure && model.datasets.length === 1;
  return { ...base, ...model, kind, percent: Boolean(share || kind === 'doughnut'), why: picked ? 'as you chose' : d.why };
}

/** One row: a card per measure (up to four), labelled with the column's display name and the row's category. */
function kpi(columns, rows, roles, measure) {
  const row = rows[0];
  const measures = roles.filter((r) => r.role === 'measure').map((r) => r.index);
  const order = [measure, ...measures.filter((i) => i !== measure)].slice(0, 4);
  const caption = roles.filter((r) => r.role === 'category' || r.role === 'time' || r.role === 'calendar')
    .map((r) => columnFormat(columns[r.index], [row[r.index]]).format(row[r.index])).join(' · ');
  return {
    kind: 'kpi',
    measure,
    cards: order.map((i) => ({ column: i, label: roles[i].label, value: toNumber(row[i]), text: columnFormat(columns[i], [row[i]]).format(row[i]), caption })),
  };
}

/**
 * Rows grouped by x (and series), the measure summed per group (averaged when it is not additive:
 * an average, a rate, a share), x sorted by time or number when it is one, else in the rows'
 * order; series beyond MAX_SERIES (by their total) summed into "Other".
 */
function pivot(columns, rows, roles, { x, series, measure }) {
  const additive = measure === COUNT_ROWS || roles[measure]?.additive !== false;
  const xAxis = axisOf(roles, columns, rows, x);
  const sAxis = series !== null && series !== undefined ? axisOf(roles, columns, rows, series) : null;
  const xs = [];
  const seenX = new Set();
  const cells = new Map(); // series key → Map(x key → {sum, n})
  const totals = new Map();
  for (const r of rows) {
    const xk = keyOf(r[x]);
    const sk = sAxis ? keyOf(r[series]) : '';
    const v = measure === COUNT_ROWS ? 1 : toNumber(r[measure]);
    if (!seenX.has(xk)) { seenX.add(xk); xs.push(xk); }
    if (Number.isNaN(v)) continue;
    if (!cells.has(sk)) cells.set(sk, new Map());
    const m = cells.get(sk);
    const c = m.get(xk) ?? { sum: 0, n: 0 };
    c.sum += v;
    c.n += 1;
    m.set(xk, c);
    totals.set(sk, (totals.get(sk) ?? 0) + Math.abs(v));
  }
  if (xAxis.sort) xs.sort((a, b) => (a === null ? 1 : b === null ? -1 : xAxis.sort(a, b)));
  let keys = [...cells.keys()];
  if (sAxis?.sort) keys.sort((a, b) => (a === null ? 1 : b === null ? -1 : sAxis.sort(a, b)));
  let other = [];
  if (keys.length > MAX_SERIES) {
    const ranked = [...keys].sort((a, b) => totals.get(b) - totals.get(a));
    const kept = new Set(ranked.slice(0, MAX_SERIES - 1));
    other = keys.filter((k) => !kept.has(k));
    keys = keys.filter((k) => kept.has(k));
  }
  const value = (c) => (c ? (additive ? c.sum : c.sum / c.n) : null);
  const datasets = keys.map((k) => ({ label: sAxis ? sAxis.label(k) : measureLabel(roles, measure), data: xs.map((xk) => value(cells.get(k).get(xk))) }));
  if (other.length) {
    datasets.push({
      label: `Other (${other.length})`, other: true,
      data: xs.map((xk) => {
        const parts = other.map((k) => cells.get(k).get(xk)).filter(Boolean);
        if (!parts.length) return null;
        const sum = parts.reduce((a, c) => a + c.sum, 0);
        return additive ? sum : sum / parts.reduce((a, c) => a + c.n, 0);
      }),
    });
  }
  const fmt = measure === COUNT_ROWS ? columnFormat({ name: 'rows', type: 'bigint' }, [1]) : columnFormat(columns[measure], rows.map((r) => r[measure]));
  return {
    x, series: sAxis ? series : null, measure,
    labels: xs.map((k) => xAxis.label(k)),
    datasets,
    xTitle: roles[x].label,
    yTitle: measureLabel(roles, measure),
    seriesTitle: sAxis ? roles[series].label : null,
    format: fmt.format,
  };
}

const measureLabel = (roles, measure) => (measure === COUNT_ROWS ? 'Number of rows' : roles[measure].label);

/** Each value's share of the dataset's total, in percent (the doughnut's and a share bar's labels). */
export function percentages(data) {
  const total = data.reduce((a, v) => a + (typeof v === 'number' && v > 0 ? v : 0), 0);
  return data.map((v) => (total > 0 && typeof v === 'number' ? (v / total) * 100 : null));
}

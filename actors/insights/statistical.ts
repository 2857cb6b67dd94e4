/**
 * The statistical insights of a result: deterministic sentences computed from the (masked) rows,
 * each said only when the data can support it. The rules and thresholds are the constants
 * below, documented in docs/configuration.md ("How insights are computed").
 *
 * - partial: the last period of a time series that the data only partly covers (it holds
 *   `now`, or a finer date column of the rows ends before it does) is named, and left out of
 *   the trend, the period comparison, the outliers and the correlation.
 * - trend: Mann-Kendall over the complete periods (at least TREND_MIN_POINTS); "rose"/"fell"
 *   only when p < SIGNIFICANCE, with Sen's slope per period and the change it makes over the
 *   span; otherwise "no clear trend".
 * - change: the last complete period against the one before and the same period a year
 *   earlier, when the series has them.
 * - outlier: robust z-scores (median and MAD) of at least OUTLIER_MIN_POINTS values, beyond
 *   OUTLIER_Z; a series with a significant trend is measured against its Sen line.
 * - top: the leading label's share of an additive, non-negative measure; from
 *   SHARE_MIN_GROUPS labels, the top 3's share and how concentrated the whole is.
 * - correlation: Spearman (with Pearson beside it) between the measure and another numeric
 *   column, over at least CORRELATION_MIN_POINTS rows, significant after a Bonferroni correction
 *   and at least CORRELATION_MIN_RHO strong.
 * - total: exact decimal sums; a mean per row (or an average's mean and range) from MEAN_MIN_ROWS rows,
 *   nothing over shares of a whole; summary: only a result cut at the limit says its size.
 */
import type { Cell } from '../../protocol/schemas/common.js';
import type { Insight, InsightsGenerateRequest } from '../../protocol/schemas/insights.js';
import { type PartialPeriod, unitWords } from './periods.js';
import { CALENDAR_NAME, capitalize, type ColumnRef, type ColumnRoles, humanize, labelText, pickRoles } from './roles.js';
import { buildSeries, type Point, type Series } from './series.js';
import { correlation, type Correlation, type Line, mannKendall, type MannKendall, robustScores, senSlope } from './stats.js';
import {
  addDecimal,
  compareDecimal,
  type Decimal,
  divideDecimal,
  FLAT_CHANGE,
  formatDate,
  formatDecimal,
  formatNumber,
  formatPercent,
  parseDate,
  parseDecimal,
  shifted,
  toNumber,
  withDecimalCache,
  ZERO,
} from './values.js';

/** p-values below this are significant. */
export const SIGNIFICANCE = 0.05;
/** Fewest complete periods a trend is read from (below 5 even a perfect rise is not significant). */
export const TREND_MIN_POINTS = 5;
/** Fewest values the outlier check looks at. */
export const OUTLIER_MIN_POINTS = 8;
/** A robust z-score ((x − median) / (1.4826 × MAD)) beyond this is an outlier (Iglewicz and Hoaglin). */
export const OUTLIER_Z = 3.5;
/** Beyond this robust z-score an outlier is "far" above or below. */
export const OUTLIER_FAR_Z = 10;
/** Fewest pairs a correlation is computed from. */
export const CORRELATION_MIN_POINTS = 8;
/** Weaker correlations are not mentioned even when significant. */
export const CORRELATION_MIN_RHO = 0.3;
/** Fewest labels for the top-3 share and the concentration. */
export const SHARE_MIN_GROUPS = 5;
/** A Herfindahl index (sum of squared shares) at or above this is "highly concentrated". */
export const CONCENTRATED_HHI = 0.25;

export interface StatisticalOptions {
  /** ms since the epoch: a period holding it is still running (partial); defaults to the clock */
  now?: number;
}

/**
 * Every statistical insight for a result, most useful first: empty; or partial, trend, change,
 * outlier, top, correlation, an insignificant trend, total, summary, except that a truncated
 * result leads with the summary, since it qualifies every number after it.
 */
export function statisticalInsights(input: InsightsGenerateRequest, options: StatisticalOptions = {}): Insight[] {
  const { rows, columns } = input;
  if (rows.length === 0 && input.row_count === 0) {
    return [insight('empty', 'info', 'No rows matched.', '🔍')];
  }
  const summary = summaryInsight(input);
  const roles = pickRoles(columns, rows, input.question);
  const found: Insight[] = [];
  if (roles.measure) {
    const m = roles.measure;
    // every insight reads the measure column: parse each cell once
    withDecimalCache(() => {
      const series = roles.dates.length > 0 ? buildSeries(rows, m, roles, input.truncated, options.now ?? Date.now()) : null;
      const partial = series?.partial ? partialInsight(series.partial) : null;
      const trend = series ? trendOf(series) : null;
      const trendInsight = series && trend ? describeTrend(series, trend, m) : null;
      const change = series ? changeInsight(series, m) : null;
      const outlier = outlierInsight(rows, m, roles, series, trend);
      const top = roles.label ? topInsight(rows, m, roles.label, input.truncated) : null;
      const related = correlationInsight(rows, roles, series);
      const total = totalInsight(rows, m, input.truncated);
      const significant = trend?.significant ? trendInsight : null;
      const flat = trend && !trend.significant ? trendInsight : null;
      for (const i of [partial, significant, change, outlier, top, related, flat, total]) if (i) found.push(i);
    });
  }
  return summary ? [summary, ...found] : found;
}

// ---------------------------------------------------------------------------------------------
// Time series: partial, trend, change

interface Trend {
  mk: MannKendall;
  line: Line;
  significant: boolean;
}

function trendOf(series: Series): Trend | null {
  const pts = series.points;
  if (pts.length < TREND_MIN_POINTS) return null;
  const ys = pts.map((p) => p.value);
  const mk = mannKendall(ys);
  const line = senSlope(pts.map((p) => p.x), ys);
  if (!mk || !line) return null;
  return { mk, line, significant: mk.p < SIGNIFICANCE && mk.s !== 0 };
}

function pointLabel(series: Series, p: Point): string {
  return series.scale ? series.scale.label(p.when) : formatDate(p.when, 'minute');
}

function describeTrend(series: Series, trend: Trend, m: ColumnRef): Insight {
  const pts = series.points;
  const first = pts[0]!;
  const last = pts[pts.length - 1]!;
  const from = pointLabel(series, first);
  const to = pointLabel(series, last);
  const name = capitalize(humanize(m.name));
  const values = `${formatDecimal(first.exact)} → ${formatDecimal(last.exact)}`;
  const units = unitWords(series.scale?.unit ?? null);
  const test = `Mann-Kendall ${formatP(trend.mk.p)} over ${formatNumber(pts.length)} ${units.many}`;
  if (!trend.significant) {
    return insight('trend', 'info', `${name} shows no clear trend from ${from} to ${to} (${values}; ${test}).`, '➡️');
  }
  const up = trend.mk.s > 0;
  const { slope, intercept } = trend.line;
  const fitStart = intercept + series.base;
  const fitEnd = fitStart + slope * last.x;
  const relative = fitStart > 0 ? (fitEnd - fitStart) / fitStart : null;
  const slight = relative !== null && Math.abs(relative) <= FLAT_CHANGE;
  const verb = slight ? (up ? 'edged up' : 'edged down') : up ? 'rose' : 'fell';
  const effects: string[] = [];
  if (slope !== 0) effects.push(`about ${formatSigned(slope)} ${units.one}`);
  if (relative !== null && Math.abs(relative) >= 0.0005) effects.push(`${relative < 0 ? '-' : '+'}${formatPercent(Math.abs(relative))} over the period`);
  const effect = effects.length > 0 ? `: ${effects.join(', ')}` : '';
  const msg = `${name} ${verb} from ${from} to ${to} (${values})${effect} (a significant trend: ${test}).`;
  return insight('trend', up ? 'success' : 'warning', msg, up ? '📈' : '📉');
}

/** The last complete period against the one before and the same period a year earlier. */
function changeInsight(series: Series, m: ColumnRef): Insight | null {
  const { scale, points } = series;
  if (!scale || points.length < 2) return null;
  const last = points[points.length - 1]!;
  const byKey = new Map(points.map((p) => [p.key, p]));
  const previous = byKey.get(last.key - 1);
  const yearAgoKey = scale.yearAgo(last.when);
  const yearAgo = yearAgoKey !== null && yearAgoKey !== last.key - 1 ? byKey.get(yearAgoKey) : undefined;
  const against = [previous, yearAgo].filter((p): p is Point => p !== undefined);
  if (against.length === 0) return null;
  const parts = against.map((p) => {
    const words = changeWords(p.exact, last.exact);
    return `${words} ${words === 'unchanged' ? 'from' : 'on'} ${scale.label(p.when)} (${formatDecimal(p.exact)})`;
  });
  const msg = `${capitalize(humanize(m.name))} in ${scale.label(last.when)}: ${formatDecimal(last.exact)}, ${parts.join(' and ')}.`;
  return insight('change', 'info', msg, '🗓️');
}

/** "up 4.1%", "down 12%", "unchanged", or "up"/"down" alone from a base of zero or less */
function changeWords(before: Decimal, after: Decimal): string {
  const cmp = compareDecimal(after, before);
  if (cmp === 0) return 'unchanged';
  const way = cmp > 0 ? 'up' : 'down';
  const base = toNumber(before);
  if (!(base > 0)) return way;
  const diff = addDecimal(after, { units: -before.units, scale: before.scale });
  const relative = Math.abs(toNumber(diff)) / base;
  return relative < 0.0005 ? `${way} by less than 0.1%` : `${way} ${formatPercent(relative)}`;
}

function partialInsight(partial: PartialPeriod): Insight {
  const why = partial.reason === 'running' ? `the period is still running (today is ${partial.until})` : `data ends on ${partial.until}`;
  return insight('partial', 'info', `${partial.label} is partial: ${why}, so it is left out of the trend, the comparisons and the outlier check.`, '⏳');
}

// ---------------------------------------------------------------------------------------------
// Outliers

/**
 * The value furthest from the others by a robust z-score, when beyond OUTLIER_Z. A time series
 * without labels is checked by period (complete periods only), against its Sen line when its
 * trend is significant (a steady rise is not an outlier); other results row by row, the rows of
 * a partial period left out.
 */
function outlierInsight(rows: readonly Cell[][], m: ColumnRef, roles: ColumnRoles, series: Series | null, trend: Trend | null): Insight | null {
  const name = humanize(m.name);
  if (series && !roles.label) {
    const pts = series.points;
    const line = trend?.significant ? trend.line : null;
    const expected = (p: Point): number => (line ? line.intercept + line.slope * p.x : 0);
    const found = flag(pts.map((p) => p.value - expected(p)));
    if (!found) return null;
    const p = pts[found.at]!;
    const reference = line ? `what the trend suggests, about ${formatNumber(expected(p) + series.base)}` : `the median of ${formatNumber(found.median + series.base)}`;
    // a low last period that was not recognised as partial may still be one
    const lastLow = found.at === pts.length - 1 && found.z < 0 && series.scale !== null;
    const hint = lastLow ? ` If the data stops partway through ${pointLabel(series, p)}, that period is only incomplete.` : '';
    return outlierMessage(pointLabel(series, p), name, formatDecimal(p.exact), found, reference, hint);
  }
  const points: Array<{ row: number; value: Decimal }> = [];
  rows.forEach((r, row) => {
    if (series?.excluded.has(row)) return;
    const d = parseDecimal(r[m.index]);
    if (d !== null) points.push({ row, value: d });
  });
  const { base, numbers } = shifted(points.map((p) => p.value));
  const found = flag(numbers);
  if (!found) return null;
  const point = points[found.at]!;
  const row = rows[point.row]!;
  let who = `Row ${formatNumber(point.row + 1)}`;
  const date = series?.date ?? roles.date;
  const when = date ? parseDate(row[date.index]) : null;
  const whenText = when ? (series?.scale ? series.scale.label(when) : formatDate(when, 'minute')) : null;
  if (roles.label) who = labelText(row[roles.label.index]) + (whenText ? ` (${whenText})` : '');
  else if (whenText) who = whenText;
  return outlierMessage(who, name, formatDecimal(point.value), found, `the median of ${formatNumber(found.median + base)}`);
}

interface Flagged {
  at: number;
  z: number;
  median: number;
  count: number;
}

function flag(values: readonly number[]): Flagged | null {
  const robust = robustScores(values, OUTLIER_MIN_POINTS);
  if (!robust) return null;
  let best: Flagged | null = null;
  let count = 0;
  robust.scores.forEach((z, at) => {
    if (!(Math.abs(z) > OUTLIER_Z)) return;
    count += 1;
    if (!best || Math.abs(z) > Math.abs(best.z)) best = { at, z, median: robust.median, count: 0 };
  });
  return best ? { ...(best as Flagged), count } : null;
}

function outlierMessage(who: string, name: string, value: string, found: Flagged, reference: string, hint = ''): Insight {
  const side = found.z > 0 ? 'above' : 'below';
  const far = Math.abs(found.z) > OUTLIER_FAR_Z ? 'far ' : '';
  const others = found.count - 1;
  const more = others > 0 ? ` ${others === 1 ? '1 other value is' : `${formatNumber(others)} other values are`} unusual too.` : '';
  const msg = `${who} stands out: ${name} of ${value} is ${far}${side} ${reference} (robust z-score ${formatNumber(found.z, 1)}).${more}${hint}`;
  return insight('outlier', 'warning', msg, '⚠️');
}

// ---------------------------------------------------------------------------------------------
// Share of total

function topInsight(rows: readonly Cell[][], m: ColumnRef, label: ColumnRef, truncated: boolean): Insight | null {
  const groups = new Map<string, { sum: Decimal; count: number }>();
  let total: Decimal = ZERO;
  for (const row of rows) {
    const v = parseDecimal(row[m.index]);
    if (v === null) continue;
    if (m.additive && v.units < 0n) return null;
    const key = labelText(row[label.index]);
    const g = groups.get(key);
    groups.set(key, g ? { sum: addDecimal(g.sum, v), count: g.count + 1 } : { sum: v, count: 1 });
    total = addDecimal(total, v);
  }
  if (groups.size < 2) return null;
  // additive measures add up per label; averages and rates are averaged
  const scored = [...groups].map(([key, g]) => ({ key, value: m.additive ? g.sum : divideDecimal(g.sum, g.count) }));
  // best first; equal values keep their order in the result
  const ranked = scored.map((s, i) => ({ ...s, i })).sort((a, b) => compareDecimal(b.value, a.value) || a.i - b.i);
  const best = ranked[0]!;
  const leaders = ranked.filter((s) => compareDecimal(s.value, best.value) === 0);
  if (leaders.length === ranked.length) return null; // all equal: nobody leads
  const name = humanize(m.name);
  const who = names(leaders.map((l) => l.key));
  if (!m.additive) {
    const msg = leaders.length > 1
      ? `${who} share the highest ${name} (${formatDecimal(best.value)}).`
      : `${who} has the highest ${name} (${formatDecimal(best.value)}).`;
    return insight('top', 'info', msg, '🏆');
  }
  const totalNum = toNumber(total);
  if (!(totalNum > 0)) return null;
  const share = formatPercent(toNumber(best.value) / totalNum, 1);
  const shown = truncated ? ' in the rows shown' : '';
  let msg = leaders.length > 1
    ? `${who} share the lead with ${share} of ${name}${shown} each (${formatDecimal(best.value)}).`
    : `${who} leads with ${share} of ${name}${shown} (${formatDecimal(best.value)}).`;
  if (ranked.length >= SHARE_MIN_GROUPS) {
    const shares = ranked.map((s) => toNumber(s.value) / totalNum);
    const top3 = shares.slice(0, 3).reduce((a, b) => a + b, 0);
    const hhi = shares.reduce((a, s) => a + s * s, 0);
    const spread = hhi >= CONCENTRATED_HHI ? ': highly concentrated' : 1 / hhi >= 0.8 * ranked.length ? ': spread evenly' : '';
    msg = `${msg.slice(0, -1)}; the top 3 of ${formatNumber(ranked.length)} make ${formatPercent(top3, 1)}${spread}.`;
  }
  return insight('top', 'info', msg, '🏆');
}

function names(keys: readonly string[]): string {
  if (keys.length === 1) return keys[0]!;
  if (keys.length <= 3) return `${keys.slice(0, -1).join(', ')} and ${keys[keys.length - 1]}`;
  return `${keys.slice(0, 2).join(', ')} and ${formatNumber(keys.length - 2)} others`;
}

// ---------------------------------------------------------------------------------------------
// Correlation


/**
 * The strongest significant relation between the measure and another numeric column, row by
 * row (rows of a partial period left out). Significant means a Spearman p-value below
 * SIGNIFICANCE divided by the number of columns tried.
 */
function correlationInsight(rows: readonly Cell[][], roles: ColumnRoles, series: Series | null): Insight | null {
  const m = roles.measure;
  if (!m || roles.measures.length < 2) return null;
  // a numeric year or month is time, not a second measure (the trend covers it)
  const others = roles.measures.filter((c) => c.index !== m.index && !CALENDAR_NAME.test(c.name));
  if (others.length === 0) return null;
  const alpha = SIGNIFICANCE / others.length;
  let best: { other: ColumnRef; c: Correlation } | null = null;
  for (const other of others) {
    const xs: Decimal[] = [];
    const ys: Decimal[] = [];
    rows.forEach((row, i) => {
      if (series?.excluded.has(i)) return;
      const x = parseDecimal(row[other.index]);
      const y = parseDecimal(row[m.index]);
      if (x === null || y === null) return;
      xs.push(x);
      ys.push(y);
    });
    const c = correlation(shifted(xs).numbers, shifted(ys).numbers, CORRELATION_MIN_POINTS);
    if (!c || !(c.spearmanP < alpha) || Math.abs(c.spearman) < CORRELATION_MIN_RHO) continue;
    if (!best || c.spearmanP < best.c.spearmanP || (c.spearmanP === best.c.spearmanP && Math.abs(c.spearman) > Math.abs(best.c.spearman))) best = { other, c };
  }
  if (!best) return null;
  const { other, c } = best;
  const strength = Math.abs(c.spearman) >= 0.7 ? 'strong' : Math.abs(c.spearman) >= 0.5 ? 'moderate' : 'weak';
  const how = c.spearman > 0 ? 'rise together' : 'move in opposite directions';
  const stats = `Spearman ρ ${formatNumber(c.spearman)}, Pearson r ${formatNumber(c.pearson)}, ${formatP(c.spearmanP)}`;
  const time = roles.dates.length > 0 ? ' Over time, a trend they share can be enough for that.' : '';
  const msg = `${capitalize(humanize(other.name))} and ${humanize(m.name)} ${how} across ${formatNumber(c.n)} rows (${strength}: ${stats}).${time}`;
  return insight('correlation', 'info', msg, '🔗');
}

// ---------------------------------------------------------------------------------------------
// Totals and the summary

/**
 * Only a result cut at the limit is worth a word about its size: the answer shows its row count
 * under the table, and "3 rows returned." says nothing the reader does not see.
 */
function summaryInsight(input: InsightsGenerateRequest): Insight | null {
  const n = Math.max(input.row_count, input.rows.length);
  if (!input.truncated) return null;
  return insight('summary', 'warning', `At least ${formatNumber(n)} rows — the result was cut at the limit.`, '📋');
}

/** Fewest rows for a mean per row (or a non-additive measure's mean and range) to say more than the rows themselves. */
export const MEAN_MIN_ROWS = 10;
/** A share of a whole, by name: its mean over the parts is 100 / parts, never news. */
const SHARE_NAME = /(^|_)(share|pct|percent|percentage|proportion|ratio)(_|$)/i;

/**
 * The measure's total (additive) or mean and range (averages, rates). Nothing rather than filler:
 * no mean per row over a handful of rows, and nothing at all over shares of a whole.
 */
function totalInsight(rows: readonly Cell[][], m: ColumnRef, truncated: boolean): Insight | null {
  const values = rows.map((r) => parseDecimal(r[m.index])).filter((d): d is Decimal => d !== null);
  if (values.length === 0) return null;
  const name = humanize(m.name);
  const shown = truncated ? ' (counting only the rows shown)' : '';
  if (values.length === 1) return insight('total', 'info', `${capitalize(name)} is ${formatDecimal(values[0]!)}.`, '🧮');
  if (SHARE_NAME.test(m.name)) return null;
  const sum = values.reduce(addDecimal);
  const mean = divideDecimal(sum, values.length);
  if (!m.additive) {
    if (values.length < MEAN_MIN_ROWS) return null;
    let lo = values[0]!;
    let hi = values[0]!;
    for (const v of values) {
      if (compareDecimal(v, lo) < 0) lo = v;
      if (compareDecimal(v, hi) > 0) hi = v;
    }
    const msg = `${capitalize(name)} averages ${formatDecimal(mean)} across ${formatNumber(values.length)} rows, from ${formatDecimal(lo)} to ${formatDecimal(hi)}${shown}.`;
    return insight('total', 'info', msg, '🧮');
  }
  const totalName = /^total\b/i.test(name) ? capitalize(name) : `Total ${name}`;
  const perRow = values.length >= MEAN_MIN_ROWS ? `, averaging ${formatDecimal(mean)} per row` : '';
  return insight('total', 'info', `${totalName} is ${formatDecimal(sum)}${perRow}${shown}.`, '🧮');
}

// ---------------------------------------------------------------------------------------------
// Formatting

/** "p < 0.001", "p = 0.012", "p = 0.45" */
export function formatP(p: number): string {
  if (p < 0.001) return 'p < 0.001';
  return `p = ${p < 0.01 ? p.toFixed(3) : formatNumber(p, 2)}`;
}

/** +1,234, +12.5, +1.25, +0.034 (two significant digits below 1) */
function formatSigned(v: number): string {
  const abs = Math.abs(v);
  const text = abs >= 100 ? formatNumber(abs, 0) : abs >= 1 ? formatNumber(abs, abs >= 10 ? 1 : 2) : formatNumber(Number(abs.toPrecision(2)), 6);
  return `${v < 0 ? '-' : '+'}${text}`;
}

function insight(type: string, severity: Insight['severity'], message: string, icon: string): Insight {
  return { type, severity, message, icon, source: 'statistical' };
}

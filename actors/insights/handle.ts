/**
 * Insights: a few short sentences about a query result, put beside the table.
 *
 * Statistical insights are computed here, deterministically, from the rows: empty result,
 * trend over a date column, top contributor, total/average, outliers, row count. The LLM
 * insights of `llm_only`/`hybrid` come later; until then those modes answer with the
 * statistical ones (see `llmInsights`, the seam that will be replaced).
 *
 * Column roles are picked from the PostgreSQL type names (falling back to the values when a
 * type is unknown): the measure is the last numeric column that is not an id, the label the
 * first text column, the date the first date/timestamp column (or a text column of ISO dates).
 * Sums are exact: numeric cells are added as decimals (big numerics arrive as strings), and
 * only ratios (shares, changes, deviations) are computed in floating point.
 */
import type { Bus, Ctx } from '../../protocol/bus.js';
import type { Cell, Column, Usage } from '../../protocol/schemas/common.js';
import { ZERO_USAGE } from '../../protocol/schemas/common.js';
import type { Insight, InsightsGenerateReply, InsightsGenerateRequest } from '../../protocol/schemas/insights.js';
import type { Config } from '../../config/schema.js';
import { capitalize, type ColumnRef, humanize, labelText, pickRoles } from './roles.js';
import { addDecimal, dateGrain, type Decimal, direction, divideDecimal, formatDate, formatDecimal, formatNumber, formatPercent, parseDate, type ParsedDate, parseDecimal, slope, toNumber, withDecimalCache, ZERO } from './values.js';

export { isIdLike, pickRoles, type ColumnRef, type ColumnRoles } from './roles.js';
export { formatDecimal, formatNumber, parseDate, parseDecimal, type Decimal, type ParsedDate } from './values.js';

export type InsightsConfig = Config['insights'];

export interface InsightsDeps {
  /** for the model calls of the LLM insights (not made yet) */
  bus: Pick<Bus, 'request'>;
  config: Config;
}

/** A change of at most this much (either way) is "flat". */
export const FLAT_CHANGE = 0.05;
/** A value further than this many standard deviations from the others is an outlier. */
export const OUTLIER_SIGMAS = 3;
/** Fewest values the outlier check looks at. */
export const OUTLIER_MIN_ROWS = 8;
/** Fewest distinct dates a trend is read from. */
export const TREND_MIN_POINTS = 3;

// ---------------------------------------------------------------------------------------------
// Entry points

/**
 * The reply for one result: nothing when insights are off, else the model's insights (none yet)
 * followed by the statistical ones, capped at `max_insights`.
 */
export async function generate(input: InsightsGenerateRequest, deps: InsightsDeps, ctx: Ctx): Promise<InsightsGenerateReply> {
  const cfg = deps.config.insights;
  if (!cfg.enabled || cfg.max_insights === 0) return { insights: [], usage: { ...ZERO_USAGE } };
  const llm = cfg.mode === 'statistical_only' ? { insights: [], usage: { ...ZERO_USAGE } } : await llmInsights(input, deps, ctx);
  return { insights: buildInsights(input, cfg, llm.insights), usage: llm.usage };
}

/**
 * Which insights to show, given the model's (if any): the model's first; the statistical ones
 * in `statistical_only`, when `include_statistical` is set, or when the model gave none (so
 * `llm_only` falls back to them, which is all it does until the LLM insights exist).
 */
export function buildInsights(input: InsightsGenerateRequest, cfg: InsightsConfig, llm: readonly Insight[] = []): Insight[] {
  if (!cfg.enabled || cfg.max_insights <= 0) return [];
  const withStats = cfg.mode === 'statistical_only' || cfg.include_statistical || llm.length === 0;
  const all = withStats ? [...llm, ...statisticalInsights(input)] : [...llm];
  return all.slice(0, cfg.max_insights);
}

/**
 * The seam for the LLM insights of `llm_only` and `hybrid`: to be replaced by one model call
 * (task `insights`) whose answer is parsed into insights with `source: 'llm'`. Until then it
 * asks nothing and returns nothing, so the statistical insights stand in.
 */
async function llmInsights(_input: InsightsGenerateRequest, _deps: InsightsDeps, _ctx: Ctx): Promise<{ insights: Insight[]; usage: Usage }> {
  return { insights: [], usage: { ...ZERO_USAGE } };
}

/**
 * Every statistical insight for a result, most useful first: empty, or trend, outlier, top,
 * total, summary, except that a truncated result leads with the summary, since it qualifies
 * every number after it.
 */
export function statisticalInsights(input: InsightsGenerateRequest): Insight[] {
  const { rows, columns } = input;
  if (rows.length === 0 && input.row_count === 0) {
    return [insight('empty', 'info', 'No rows matched.', '🔍')];
  }
  const summary = summaryInsight(input);
  const roles = pickRoles(columns, rows);
  const found: Insight[] = [];
  if (roles.measure) {
    const m = roles.measure;
    // every insight reads the measure column: parse each cell once
    withDecimalCache(() => {
      const trend = roles.date ? trendInsight(rows, m, roles.date) : null;
      const outlier = outlierInsight(rows, m, roles.label, roles.date);
      const top = roles.label ? topInsight(rows, m, roles.label, input.truncated) : null;
      const total = totalInsight(rows, m, input.truncated);
      for (const i of [trend, outlier, top, total]) if (i) found.push(i);
    });
  }
  return input.truncated ? [summary, ...found] : [...found, summary];
}

// ---------------------------------------------------------------------------------------------
// The insights

function summaryInsight(input: InsightsGenerateRequest): Insight {
  const n = Math.max(input.row_count, input.rows.length);
  if (input.truncated) {
    return insight('summary', 'warning', `At least ${formatNumber(n)} rows — the result was cut at the limit.`, '📋');
  }
  return insight('summary', 'info', `${formatNumber(n)} ${n === 1 ? 'row' : 'rows'} returned.`, '📋');
}

function totalInsight(rows: readonly Cell[][], m: ColumnRef, truncated: boolean): Insight | null {
  const values = rows.map((r) => parseDecimal(r[m.index])).filter((d): d is Decimal => d !== null);
  if (values.length === 0) return null;
  const name = humanize(m.name);
  const shown = truncated ? ' (counting only the rows shown)' : '';
  if (values.length === 1) return insight('total', 'info', `${capitalize(name)} is ${formatDecimal(values[0]!)}.`, '🧮');
  const sum = values.reduce(addDecimal);
  const mean = divideDecimal(sum, values.length);
  if (!m.additive) {
    const nums = values.map(toNumber);
    const lo = values[nums.indexOf(Math.min(...nums))]!;
    const hi = values[nums.indexOf(Math.max(...nums))]!;
    const msg = `${capitalize(name)} averages ${formatDecimal(mean)} across ${formatNumber(values.length)} rows, from ${formatDecimal(lo)} to ${formatDecimal(hi)}${shown}.`;
    return insight('total', 'info', msg, '🧮');
  }
  const totalName = /^total\b/i.test(name) ? capitalize(name) : `Total ${name}`;
  return insight('total', 'info', `${totalName} is ${formatDecimal(sum)}, averaging ${formatDecimal(mean)} per row${shown}.`, '🧮');
}

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
  let best = scored[0]!;
  for (const s of scored) if (toNumber(s.value) > toNumber(best.value)) best = s;
  const name = humanize(m.name);
  if (!m.additive) {
    return insight('top', 'info', `${best.key} has the highest ${name} (${formatDecimal(best.value)}).`, '🏆');
  }
  const totalNum = toNumber(total);
  if (!(totalNum > 0)) return null;
  const share = formatPercent(toNumber(best.value) / totalNum, 1);
  const shown = truncated ? ' in the rows shown' : '';
  return insight('top', 'info', `${best.key} leads with ${share} of ${name}${shown} (${formatDecimal(best.value)}).`, '🏆');
}

function trendInsight(rows: readonly Cell[][], m: ColumnRef, date: ColumnRef): Insight | null {
  // one point per date: additive measures are summed, others averaged
  const byTime = new Map<number, { when: ParsedDate; sum: number; count: number }>();
  for (const row of rows) {
    const when = parseDate(row[date.index]);
    const v = parseDecimal(row[m.index]);
    if (!when || v === null) continue;
    const p = byTime.get(when.epoch);
    if (p) {
      p.sum += toNumber(v);
      p.count += 1;
    } else byTime.set(when.epoch, { when, sum: toNumber(v), count: 1 });
  }
  if (byTime.size < TREND_MIN_POINTS) return null;
  const points = [...byTime.values()]
    .sort((a, b) => a.when.epoch - b.when.epoch)
    .map((p) => ({ when: p.when, value: m.additive ? p.sum : p.sum / p.count }));
  const first = points[0]!;
  const last = points[points.length - 1]!;
  const grain = dateGrain(points.map((p) => p.when));
  const from = formatDate(first.when, grain);
  const to = formatDate(last.when, grain);
  const name = humanize(m.name);

  const change = last.value - first.value;
  const endDir = first.value > 0 ? direction(change / first.value) : Math.sign(change);
  // least squares over time (in days since the first point), as a change across the whole span
  const xs = points.map((p) => (p.when.epoch - first.when.epoch) / 86_400_000);
  const ys = points.map((p) => p.value);
  const fitted = slope(xs, ys) * xs[xs.length - 1]!;
  const mean = ys.reduce((a, b) => a + b, 0) / ys.length;
  const fitDir = mean !== 0 ? direction(fitted / Math.abs(mean)) : Math.sign(fitted);

  const values = `(${formatNumber(first.value)} → ${formatNumber(last.value)})`;
  if (endDir === 0 && fitDir === 0) {
    return insight('trend', 'info', `${capitalize(name)} stayed flat from ${from} to ${to} ${values}.`, '➡️');
  }
  if (endDir === 0) {
    const way = fitDir > 0 ? 'upward' : 'downward';
    return insight('trend', 'info', `${capitalize(name)} ended about where it started (${from} to ${to}), though the overall trend was ${way}.`, '↕️');
  }
  if (fitDir === -endDir) {
    const way = fitDir > 0 ? 'upward' : 'downward';
    const end = endDir > 0 ? 'higher' : 'lower';
    return insight('trend', 'info', `${capitalize(name)} ended ${end} in ${to} than in ${from} ${values}, but the overall trend was ${way}.`, '↕️');
  }
  const verb = endDir > 0 ? 'rose' : 'fell';
  const msg = first.value > 0
    ? `${capitalize(name)} ${verb} ${formatPercent(Math.abs(change / first.value))} from ${from} to ${to} ${values}.`
    : `${capitalize(name)} ${verb} from ${formatNumber(first.value)} in ${from} to ${formatNumber(last.value)} in ${to}.`;
  return insight('trend', endDir > 0 ? 'success' : 'warning', msg, endDir > 0 ? '📈' : '📉');
}

/**
 * The row furthest from the others, when it is more than OUTLIER_SIGMAS standard deviations
 * from their mean. Each value is measured against the rest (leave-one-out): an extreme value
 * inflates the spread it is measured with, so that among n values no value can be more than
 * (n-1)/√n deviations from a mean that includes it, fewer than 3 below 11 rows.
 */
function outlierInsight(rows: readonly Cell[][], m: ColumnRef, label: ColumnRef | undefined, date: ColumnRef | undefined): Insight | null {
  const points: Array<{ row: number; value: number }> = [];
  rows.forEach((r, row) => {
    const d = parseDecimal(r[m.index]);
    if (d !== null) points.push({ row, value: toNumber(d) });
  });
  const n = points.length;
  if (n < OUTLIER_MIN_ROWS) return null;
  // shifted by the mean so the sums of squares keep their precision
  const mean = points.reduce((a, p) => a + p.value, 0) / n;
  const ys = points.map((p) => p.value - mean);
  const s = ys.reduce((a, y) => a + y, 0);
  const q = ys.reduce((a, y) => a + y * y, 0);
  let best: { at: number; z: number; othersMean: number } | undefined;
  let count = 0;
  for (const [at, y] of ys.entries()) {
    const m1 = (s - y) / (n - 1);
    const variance = (q - y * y) / (n - 1) - m1 * m1;
    const sd = Math.sqrt(Math.max(variance, 0));
    if (!(sd > 1e-12 * Math.max(1, Math.abs(mean)))) continue;
    const z = (y - m1) / sd;
    if (Math.abs(z) <= OUTLIER_SIGMAS) continue;
    count += 1;
    if (!best || Math.abs(z) > Math.abs(best.z)) best = { at, z, othersMean: m1 + mean };
  }
  if (!best) return null;
  const { at, z, othersMean } = best;
  const point = points[at]!;
  const row = rows[point.row]!;
  let who = `Row ${formatNumber(point.row + 1)}`;
  if (label) who = labelText(row[label.index]);
  else if (date) {
    const when = parseDate(row[date.index]);
    const all = rows.map((r) => parseDate(r[date.index])).filter((d): d is ParsedDate => d !== null);
    if (when) who = formatDate(when, dateGrain(all));
  }
  const side = z > 0 ? 'above' : 'below';
  const more = count > 1 ? ` ${count - 1 === 1 ? '1 other row is' : `${formatNumber(count - 1)} other rows are`} unusual too.` : '';
  const distance = Math.abs(z) > 10 ? `far ${side}` : `${formatNumber(Math.abs(z), 1)} standard deviations ${side}`;
  const msg = `${who} stands out: ${humanize(m.name)} of ${formatNumber(point.value)} is ${distance} the average of the other rows (${formatNumber(othersMean)}).${more}`;
  return insight('outlier', 'warning', msg, '⚠️');
}

function insight(type: string, severity: Insight['severity'], message: string, icon: string): Insight {
  return { type, severity, message, icon, source: 'statistical' };
}


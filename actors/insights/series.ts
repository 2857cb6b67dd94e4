/**
 * A result as a time series: the measure by period of its coarsest date column (summed, or
 * averaged for averaged measures), with the last period split off when the data only partly
 * covers it (it holds `now`, or a finer date column of the same rows ends before it does).
 */
import type { Cell } from '../../protocol/schemas/common.js';
import { partialPeriod, type PartialPeriod, periodScale, type PeriodScale } from './periods.js';
import type { ColumnRef, ColumnRoles } from './roles.js';
import { addDecimal, type Decimal, divideDecimal, parseDate, type ParsedDate, parseDecimal, shifted } from './values.js';

export interface Point {
  when: ParsedDate;
  /** period ordinal, or the epoch when the dates are irregular */
  key: number;
  /** x for the trend: periods (or days) since the first point */
  x: number;
  /** the value less the series' smallest (Series.base), for the statistics */
  value: number;
  /** exact, for the messages */
  exact: Decimal;
  rows: number[];
}

export interface Series {
  scale: PeriodScale | null;
  /** the smallest value, added back for messages */
  base: number;
  date: ColumnRef;
  /** complete periods, in time order */
  points: Point[];
  partial: (PartialPeriod & { point: Point }) | null;
  /** rows of the partial period (left out of outliers and correlation) */
  excluded: Set<number>;
}

/**
 * The measure by period of the coarsest date column: additive measures summed per period,
 * others averaged. Null when a truncated result repeats dates (its per-period sums would be cut
 * short) or fewer than two periods have values.
 */
export function buildSeries(rows: readonly Cell[][], m: ColumnRef, roles: ColumnRoles, truncated: boolean, now: number): Series | null {
  const dateCols = roles.dates.map((ref) => ({ ref, values: rows.map((r) => parseDate(r[ref.index])) }));
  // the period column is the coarsest one (a month beside the last order's timestamp)
  const scales = dateCols.map((c) => ({ ...c, scale: periodScale(c.values.filter((d): d is ParsedDate => d !== null)) }));
  const rank = (s: PeriodScale | null): number => (s ? ['hour', 'day', 'week', 'month', 'quarter', 'year'].indexOf(s.unit) : -1);
  let period = scales[0]!;
  for (const c of scales) if (rank(c.scale) > rank(period.scale)) period = c;
  const scale = period.scale;

  const byKey = new Map<number, { when: ParsedDate; sum: Decimal; count: number; rows: number[] }>();
  let repeated = false;
  rows.forEach((row, i) => {
    const when = period.values[i];
    const v = parseDecimal(row[m.index]);
    if (!when || v === null) return;
    const key = scale ? scale.ordinal(when) : when.epoch;
    const p = byKey.get(key);
    if (p) {
      p.sum = addDecimal(p.sum, v);
      p.count += 1;
      p.rows.push(i);
      repeated = true;
    } else byKey.set(key, { when, sum: v, count: 1, rows: [i] });
  });
  if (truncated && repeated) return null;
  if (byKey.size < 2) return null;
  const sortedKeys = [...byKey.keys()].sort((a, b) => a - b);
  const first = byKey.get(sortedKeys[0]!)!;
  const exacts = sortedKeys.map((key) => {
    const p = byKey.get(key)!;
    return m.additive ? p.sum : divideDecimal(p.sum, p.count);
  });
  const { base, numbers } = shifted(exacts);
  let points: Point[] = sortedKeys.map((key, i) => {
    const p = byKey.get(key)!;
    const x = scale ? key - sortedKeys[0]! : (p.when.epoch - first.when.epoch) / 86_400_000;
    return { when: p.when, key, x, value: numbers[i]!, exact: exacts[i]!, rows: p.rows };
  });

  let partial: Series['partial'] = null;
  const excluded = new Set<number>();
  if (scale) {
    const last = points[points.length - 1]!;
    const found = partialPeriod(scale, last.when, dataEnd(rows, period.ref, scale, scales), now);
    if (found) {
      partial = { ...found, point: last };
      for (const r of last.rows) excluded.add(r);
      points = points.slice(0, -1);
    }
  }
  return { scale, base, date: period.ref, points, partial, excluded };
}

/** Column names of a finer date column that tell where a period starts, not where its data ends. */
const START_NAME = /(^|_)(first|min|start|starts|started|begin|begins|from|since|earliest|opened|open)(_|$)/i;

/**
 * The data's last timestamp, from a finer date column of the same rows: every value inside its
 * row's period (so it details that period), at least one not at the period's start, and a name
 * that does not say it is the period's first instant (`first_order`, `min_date`).
 */
function dataEnd(rows: readonly Cell[][], period: ColumnRef, scale: PeriodScale, columns: ReadonlyArray<{ ref: ColumnRef; values: Array<ParsedDate | null> }>): ParsedDate | null {
  let best: ParsedDate | null = null;
  for (const c of columns) {
    if (c.ref.index === period.index || START_NAME.test(c.ref.name)) continue;
    let finer = false;
    let inside = true;
    let latest: ParsedDate | null = null;
    for (let i = 0; i < rows.length && inside; i++) {
      const p = parseDate(rows[i]![period.index]);
      const d = c.values[i];
      if (!p || !d) continue;
      const { start, end } = scale.bounds(p);
      if (d.epoch < start || d.epoch >= end) inside = false;
      if (d.epoch !== start) finer = true;
      if (!latest || d.epoch > latest.epoch) latest = d;
    }
    if (inside && finer && latest && (!best || latest.epoch > best.epoch)) best = latest;
  }
  return best;
}

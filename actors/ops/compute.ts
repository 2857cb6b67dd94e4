/**
 * The arithmetic of the operations, as plain functions over rows already read: cost at the
 * price per TiB, the month's forecast with its interval, saturation points and the periods
 * they merge into, and query texts cut for display. No I/O here (tests check the numbers by
 * hand).
 */
import type { Static } from 'typebox';
import type { DailyCost, ForecastResult, SaturationPoint, SaturationResult } from '../../protocol/schemas/ops.js';

export const BYTES_PER_TIB = 2 ** 40;
/** Characters of a query text shown, at most (`…` marks a cut). */
export const QUERY_TEXT_CHARS = 500;
/** Complete days before today whose spread gives the forecast's interval. */
export const SPREAD_DAYS = 30;
/** z for a two-sided 80 % interval of a normal distribution. */
const Z80 = 1.2816;
const DAY_MS = 86_400_000;

/** US dollars for `bytes` billed at `pricePerTib` per TiB (2^40 bytes), to the cent's hundredth. */
export function costUsd(bytes: number, pricePerTib: number): number {
  return round4((bytes / BYTES_PER_TIB) * pricePerTib);
}

export function round2(x: number): number {
  return Math.round(x * 100) / 100;
}

function round4(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}

/** A query text on display: whitespace runs kept, cut to QUERY_TEXT_CHARS characters. */
export function cutQuery(text: string): string {
  const chars = [...text];
  return chars.length > QUERY_TEXT_CHARS ? `${chars.slice(0, QUERY_TEXT_CHARS - 1).join('')}…` : text;
}

/** `YYYY-MM-DD` of a time, in UTC. */
export function isoDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** `TIMESTAMP 'YYYY-MM-DD HH:MM:SS+00'`: a literal both GoogleSQL and PostgreSQL read as that instant. */
export function timestampLiteral(ms: number): string {
  return `TIMESTAMP '${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')}+00'`;
}

/** Where the forecast's rows start: SPREAD_DAYS complete days before today, or the 1st of the month when earlier. */
export function forecastSince(now: number): number {
  const d = new Date(now);
  const today = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  const first = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  return Math.min(first, today - SPREAD_DAYS * DAY_MS);
}

type Forecast = Static<typeof ForecastResult>;

/**
 * The month's forecast from billed bytes per UTC day (days absent cost nothing):
 * - month to date: every day of this month, today so far included;
 * - forecast: what the complete days (before today) cost, plus today at the larger of its
 *   cost so far and the daily mean, plus the daily mean for each day after today; the mean is
 *   that of this month's complete days (on the 1st, with none yet, of the last SPREAD_DAYS
 *   days). With today at or under the mean this is the mean × days in the month;
 * - interval (80 %): forecast ± 1.2816 · σ · √(days left, today included), σ the sample
 *   standard deviation of the last SPREAD_DAYS complete days' costs (the spread of a sum of
 *   independent days); the low end never below the month to date.
 */
export function forecast(rows: ReadonlyArray<{ date: string; bytes_billed: number }>, pricePerTib: number, now: number): Forecast {
  const d = new Date(now);
  const year = d.getUTCFullYear();
  const month = d.getUTCMonth();
  const today = Date.UTC(year, month, d.getUTCDate());
  const first = Date.UTC(year, month, 1);
  const daysInMonth = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  const bytesByDay = new Map<string, number>();
  for (const r of rows) bytesByDay.set(r.date, (bytesByDay.get(r.date) ?? 0) + r.bytes_billed);

  const daily: Array<Static<typeof DailyCost>> = [];
  for (let t = forecastSince(now); t <= today; t += DAY_MS) {
    const bytes = bytesByDay.get(isoDay(t)) ?? 0;
    daily.push({ date: isoDay(t), bytes_billed: bytes, cost_usd: costUsd(bytes, pricePerTib) });
  }
  const costOf = (t: number): number => costUsd(bytesByDay.get(isoDay(t)) ?? 0, pricePerTib);

  const complete: number[] = [];
  for (let t = first; t < today; t += DAY_MS) complete.push(costOf(t));
  const spread: number[] = [];
  for (let t = today - SPREAD_DAYS * DAY_MS; t < today; t += DAY_MS) spread.push(costOf(t));
  const todaySoFar = costOf(today);
  const spent = complete.reduce((a, b) => a + b, 0);
  const mtd = spent + todaySoFar;

  const basis = complete.length > 0 ? complete : spread;
  const mean = basis.reduce((a, b) => a + b, 0) / basis.length;
  const left = daysInMonth - complete.length;
  const total = spent + Math.max(todaySoFar, mean) + mean * (left - 1);
  const sigma = sampleSd(spread);
  const half = Z80 * sigma * Math.sqrt(left);
  const low = Math.max(mtd, total - half);
  const high = Math.max(low, total + half);

  const meanText = complete.length > 0
    ? `daily mean $${round2(mean)} from ${complete.length} complete day${complete.length === 1 ? '' : 's'} this month`
    : `daily mean $${round2(mean)} from the last ${SPREAD_DAYS} days (no complete day this month yet)`;
  const method = `${meanText}; forecast = the complete days' cost ($${round2(spent)}) + today at the larger of its cost so far and the mean + the mean × ${left - 1} days after today (${daysInMonth} days in the month); 80 % interval ± 1.28 σ √${left} (days left, today included), σ = $${round2(sigma)}/day from the last ${SPREAD_DAYS} complete days, the low end at least the month to date`;
  return {
    kind: 'forecast_monthly_costs',
    month: `${year}-${String(month + 1).padStart(2, '0')}`,
    days_in_month: daysInMonth,
    days_observed: complete.length,
    month_to_date_usd: round2(mtd),
    forecast_usd: round2(total),
    low_usd: round2(low),
    high_usd: round2(high),
    method,
    daily: daily.slice(-60),
  };
}

function sampleSd(xs: readonly number[]): number {
  if (xs.length < 2) return 0;
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const v = xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (xs.length - 1);
  return Math.sqrt(v);
}

/** Seconds per saturation point for a window: a minute up to 6 hours, 5 minutes up to 2 days, else an hour. */
export function bucketSeconds(windowHours: number): number {
  if (windowHours <= 6) return 60;
  if (windowHours <= 48) return 300;
  return 3600;
}

type Point = Static<typeof SaturationPoint>;
type Saturation = Static<typeof SaturationResult>;

/**
 * How long JOBS_TIMELINE may take to hold a second that has passed. Google documents the view
 * as "near real-time" without a bound; a bucket is read once it ended at least this long ago,
 * so its slot milliseconds are all there.
 */
export const TIMELINE_LAG_MS = 60_000;

/**
 * The complete buckets of a saturation window ending at `now`: `until` is the end of the last
 * bucket that ended at least `lagMs` before now (floor((now − lag) / step) × step), `since` is
 * `windowHours` before it. A bucket still under way (or too recent for the view) is never a
 * point: divided by the whole bucket it would read as nearly idle and break every trailing run.
 */
export function saturationWindow(now: number, windowHours: number, lagMs = TIMELINE_LAG_MS): { since: number; until: number; bucketSeconds: number } {
  const step = bucketSeconds(windowHours) * 1000;
  const until = Math.floor((now - lagMs) / step) * step;
  return { since: until - windowHours * 3_600_000, until, bucketSeconds: step / 1000 };
}

/**
 * Points from slot milliseconds per bucket (a bucket with no row used no slot), each the
 * average slots over its bucket, and the saturated periods: consecutive points at or above the
 * threshold share, merged; a period ends where its last point's bucket ends. Only whole buckets
 * from `since` to `until` (see saturationWindow) are points.
 */
export function saturation(
  rows: ReadonlyArray<{ bucket_ms: number; slot_ms: number }>,
  opts: { since: number; until: number; bucketSeconds: number; capacity: number | null; threshold: number; windowHours: number; note?: string },
): Saturation {
  const step = opts.bucketSeconds * 1000;
  const byBucket = new Map<number, number>();
  for (const r of rows) byBucket.set(r.bucket_ms, (byBucket.get(r.bucket_ms) ?? 0) + r.slot_ms);
  const points: Point[] = [];
  const start = Math.ceil(opts.since / step) * step;
  const end = Math.floor(opts.until / step) * step;
  for (let t = start; t < end; t += step) {
    const avg = (byBucket.get(t) ?? 0) / step;
    points.push({ period_start: new Date(t).toISOString(), avg_slots: round2(avg), share: opts.capacity ? round4(avg / opts.capacity) : null });
  }
  return {
    kind: 'check_slot_saturation',
    window_hours: opts.windowHours,
    capacity: opts.capacity,
    threshold_share: opts.threshold,
    points,
    saturated_periods: mergePeriods(points, opts.threshold, opts.bucketSeconds),
    ...(opts.note ? { note: opts.note } : {}),
  };
}

/** Consecutive points whose share is at or above the threshold, as periods (none without a share). */
export function mergePeriods(points: readonly Point[], threshold: number, bucketSeconds: number): Saturation['saturated_periods'] {
  const out: Saturation['saturated_periods'] = [];
  let open: { start: string; count: number; peak: number; last: string } | undefined;
  const close = (): void => {
    if (!open) return;
    const end = new Date(Date.parse(open.last) + bucketSeconds * 1000).toISOString();
    out.push({ start: open.start, end, minutes: round2((open.count * bucketSeconds) / 60), peak_share: open.peak });
    open = undefined;
  };
  for (const p of points) {
    if (p.share !== null && p.share >= threshold) {
      if (open) {
        open.count++;
        open.peak = Math.max(open.peak, p.share);
        open.last = p.period_start;
      } else {
        open = { start: p.period_start, count: 1, peak: p.share, last: p.period_start };
      }
    } else {
      close();
    }
  }
  close();
  return out;
}

/**
 * What an alarm's condition measures, from one reply of the ops actor (OpsRun, insights off).
 * Plain functions: the reply in, a measurement out.
 *
 * | kind              | operation               | value                                                      | fires when          |
 * |-------------------|-------------------------|------------------------------------------------------------|---------------------|
 * | forecast_above    | forecast_monthly_costs  | this month's forecast, USD, summed over the targets         | value > threshold   |
 * | daily_cost_above  | forecast_monthly_costs  | the newest day's cost, USD, summed over the targets         | value > threshold   |
 * | public_dataset    | find_public_datasets    | how many datasets allUsers / allAuthenticatedUsers can read  | value > threshold   |
 * | saturation_above  | check_slot_saturation   | minutes the share has been ≥ threshold without a break, up  | value ≥ minutes     |
 * |                   |                         | to the newest period (the longest such run over targets)     |                     |
 * | query_cost_above  | get_expensive_queries   | the costliest query of the last day, USD                     | value > threshold   |
 *
 * `project_id` keeps one target (its project_id, or its label); absent, every target counts. A
 * target that failed is named in the message; when every target failed there is no value and
 * the evaluation is an error (the alarm's state stays as it was).
 */
import { CortadoError } from '../../protocol/errors.js';
import type { AlarmCondition, AlarmKind } from '../../protocol/schemas/alarms.js';
import type { OpsOperation, OpsProjectResult, OpsRunReply, OpsRunRequest, OpsResult } from '../../protocol/schemas/ops.js';

export const OPERATION: Readonly<Record<AlarmKind, OpsOperation>> = {
  forecast_above: 'forecast_monthly_costs',
  daily_cost_above: 'forecast_monthly_costs',
  public_dataset: 'find_public_datasets',
  saturation_above: 'check_slot_saturation',
  query_cost_above: 'get_expensive_queries',
};

/** saturation_above without `minutes`: how long the share must hold */
export const DEFAULT_SATURATION_MINUTES = 15;

export interface Measurement {
  /** null: nothing could be measured (`error` says why) */
  value: number | null;
  fires: boolean;
  /** one readable sentence or two: the value, the threshold, where */
  message: string;
  error?: string;
  targets: Array<{ label: string; value: number | null; error?: string }>;
}

/** The condition checked beyond its schema: a share is 0–1, minutes only where they mean something. */
export function checkCondition(c: AlarmCondition): AlarmCondition {
  const bad = (m: string) => new CortadoError('VALIDATION_FAILED', `condition: ${m}`, { field: 'condition' });
  if (c.kind === 'saturation_above') {
    if (c.threshold <= 0 || c.threshold > 1) throw bad('threshold is a share of the slot capacity for saturation_above: more than 0, at most 1 (0.8 = 80 %)');
    return { ...c, minutes: c.minutes ?? DEFAULT_SATURATION_MINUTES };
  }
  if (c.minutes !== undefined) throw bad(`minutes is for saturation_above only, not ${c.kind}`);
  if (c.kind === 'public_dataset' && !Number.isInteger(c.threshold)) throw bad('threshold is a number of datasets for public_dataset (0: any public dataset fires)');
  return c;
}

/** The OpsRun request that measures a condition (no model insights: alarms evaluate without them). */
export function opsRequest(c: AlarmCondition): OpsRunRequest {
  const base = { operation: OPERATION[c.kind], insights: false, ...(c.project_id ? { project_id: c.project_id } : {}) };
  switch (c.kind) {
    case 'saturation_above':
      return { ...base, window_hours: Math.min(24 * 14, Math.max(1, Math.ceil((c.minutes ?? DEFAULT_SATURATION_MINUTES) / 60) + 1)) };
    case 'query_cost_above':
      return { ...base, window_days: 1, limit: 10 };
    default:
      return base;
  }
}

const usd = (n: number): string => `$${n.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
const pct = (n: number): string => `${Math.round(n * 1000) / 10} %`;

/** How a condition's value and threshold read in a message. */
export function describeValue(kind: AlarmKind, v: number): string {
  switch (kind) {
    case 'public_dataset': return `${v} public dataset${v === 1 ? '' : 's'}`;
    case 'saturation_above': return `${Math.round(v * 10) / 10} min`;
    default: return usd(v);
  }
}

export function describeThreshold(c: AlarmCondition): string {
  switch (c.kind) {
    case 'forecast_above': return `a monthly budget of ${usd(c.threshold)}`;
    case 'daily_cost_above': return `a daily cost of ${usd(c.threshold)}`;
    case 'public_dataset': return c.threshold === 0 ? 'no public dataset' : `at most ${c.threshold} public datasets`;
    case 'saturation_above': return `slot use at or above ${pct(c.threshold)} of capacity for ${c.minutes ?? DEFAULT_SATURATION_MINUTES} min`;
    case 'query_cost_above': return `a query cost of ${usd(c.threshold)}`;
  }
}

type Of<K extends OpsResult['kind']> = Extract<OpsResult, { kind: K }>;

function resultOf<K extends OpsResult['kind']>(p: OpsProjectResult, kind: K): Of<K> | undefined {
  return p.result?.kind === kind ? (p.result as Of<K>) : undefined;
}

/** Minutes the newest periods have held share ≥ threshold without a break (and the peak share in them). */
export function trailingSaturation(points: ReadonlyArray<{ period_start: string; share: number | null }>, threshold: number): { minutes: number; peak: number } {
  const sorted = [...points].sort((a, b) => Date.parse(a.period_start) - Date.parse(b.period_start));
  const gaps: number[] = [];
  for (let i = 1; i < sorted.length; i++) gaps.push(Date.parse((sorted[i] as { period_start: string }).period_start) - Date.parse((sorted[i - 1] as { period_start: string }).period_start));
  gaps.sort((a, b) => a - b);
  // the period's length: the usual gap between points (one minute when there is a single point)
  const period = gaps.length > 0 ? (gaps[Math.floor(gaps.length / 2)] as number) : 60_000;
  let n = 0;
  let peak = 0;
  for (let i = sorted.length - 1; i >= 0; i--) {
    const s = (sorted[i] as { share: number | null }).share;
    if (s === null || s < threshold) break;
    n++;
    peak = Math.max(peak, s);
  }
  return { minutes: (n * period) / 60_000, peak };
}

/** The measurement of a condition from the ops actor's reply. */
export function measure(c: AlarmCondition, reply: OpsRunReply): Measurement {
  const wanted = c.project_id;
  const projects = reply.projects.filter((p) => !wanted || p.target.project_id === wanted || p.target.label === wanted);
  if (projects.length === 0) {
    const known = reply.projects.map((p) => p.target.project_id ?? p.target.label).join(', ') || 'none';
    const error = wanted ? `no target ${wanted} among the console's targets (${known})` : 'the console has no target (ops_agent.config.projects is empty)';
    return { value: null, fires: false, message: error, error, targets: [] };
  }
  const targets: Measurement['targets'] = [];
  const failed: string[] = [];
  const ok: OpsProjectResult[] = [];
  for (const p of projects) {
    if (p.error || !p.result) {
      const why = p.error ? `${p.error.code}: ${p.error.message}` : 'no result';
      targets.push({ label: p.target.label, value: null, error: why });
      failed.push(`${p.target.label} (${why})`);
    } else {
      ok.push(p);
    }
  }
  const failures = failed.length ? ` Not measured: ${failed.join('; ')}.` : '';
  if (ok.length === 0) {
    const error = `every target failed: ${failed.join('; ')}`;
    return { value: null, fires: false, message: error, error, targets };
  }
  const threshold = describeThreshold(c);
  const finish = (value: number, fires: boolean, what: string): Measurement => ({
    value, fires, targets,
    message: `${what} — ${fires ? 'above' : 'within'} ${threshold}.${failures}`,
  });

  switch (c.kind) {
    case 'forecast_above': {
      let sum = 0;
      let mtd = 0;
      const parts: string[] = [];
      let month = '';
      for (const p of ok) {
        const r = resultOf(p, 'forecast_monthly_costs');
        if (!r) continue;
        sum += r.forecast_usd;
        mtd += r.month_to_date_usd;
        month = r.month;
        targets.push({ label: p.target.label, value: r.forecast_usd });
        parts.push(`${p.target.label}: ${usd(r.forecast_usd)} (${usd(r.low_usd)}–${usd(r.high_usd)}; ${r.method})`);
      }
      return finish(sum, sum > c.threshold, `Forecast for ${month || 'this month'}: ${usd(sum)}, ${usd(mtd)} so far [${parts.join('; ')}]`);
    }
    case 'daily_cost_above': {
      const byDate = new Map<string, number>();
      for (const p of ok) {
        const r = resultOf(p, 'forecast_monthly_costs');
        const last = r?.daily.at(-1);
        targets.push({ label: p.target.label, value: last ? last.cost_usd : 0 });
        for (const d of r?.daily ?? []) byDate.set(d.date, (byDate.get(d.date) ?? 0) + d.cost_usd);
      }
      const newest = [...byDate.keys()].sort().at(-1);
      const value = newest ? (byDate.get(newest) as number) : 0;
      return finish(value, value > c.threshold, newest ? `Cost on ${newest}: ${usd(value)}` : 'No billed day yet: $0.00');
    }
    case 'public_dataset': {
      const found: string[] = [];
      let n = 0;
      for (const p of ok) {
        const r = resultOf(p, 'find_public_datasets');
        const list = r?.datasets ?? [];
        n += list.length;
        targets.push({ label: p.target.label, value: list.length });
        for (const d of list) found.push(`${p.target.project_id ?? p.target.label}:${d.dataset_id} (${d.entries.map((e) => `${e.member} ${e.role}`).join(', ')})`);
      }
      return finish(n, n > c.threshold, n === 0 ? 'No public dataset' : `${n} public dataset${n === 1 ? '' : 's'}: ${found.slice(0, 20).join('; ')}${found.length > 20 ? ` and ${found.length - 20} more` : ''}`);
    }
    case 'saturation_above': {
      let best = { minutes: 0, peak: 0, label: '' };
      const unknown: string[] = [];
      for (const p of ok) {
        const r = resultOf(p, 'check_slot_saturation');
        if (!r || r.capacity === null) {
          unknown.push(`${p.target.label}: no known capacity (on-demand)`);
          targets.push({ label: p.target.label, value: null, error: 'no known capacity (on-demand): no share to compare' });
          continue;
        }
        if (r.points.length < 2) {
          // one sample (PostgreSQL's backends now) says nothing of how long: never counted as minutes
          unknown.push(`${p.target.label}: one sample, no history`);
          targets.push({ label: p.target.label, value: null, error: 'one sample, no history: no duration to measure' });
          continue;
        }
        const s = trailingSaturation(r.points, c.threshold);
        targets.push({ label: p.target.label, value: s.minutes });
        if (s.minutes > best.minutes || !best.label) best = { ...s, label: p.target.label };
      }
      const need = c.minutes ?? DEFAULT_SATURATION_MINUTES;
      if (!best.label) {
        const error = `no target has a known slot capacity over time (${unknown.join('; ')}): saturation cannot be measured`;
        return { value: null, fires: false, message: error, error, targets };
      }
      const what = best.minutes > 0
        ? `Slots at or above ${pct(c.threshold)} of capacity for ${describeValue('saturation_above', best.minutes)} in ${best.label} (peak ${pct(best.peak)})`
        : `Slots below ${pct(c.threshold)} of capacity now`;
      return finish(best.minutes, best.minutes >= need, what);
    }
    case 'query_cost_above': {
      let top: { cost: number; label: string; job: string; user: string } | undefined;
      for (const p of ok) {
        const r = resultOf(p, 'get_expensive_queries');
        let own = 0;
        for (const q of r?.by_bytes ?? []) {
          if (q.cost_usd === null) continue;
          own = Math.max(own, q.cost_usd);
          if (!top || q.cost_usd > top.cost) top = { cost: q.cost_usd, label: p.target.label, job: q.job_id, user: q.user };
        }
        targets.push({ label: p.target.label, value: own });
      }
      const value = top?.cost ?? 0;
      return finish(value, value > c.threshold, top ? `Costliest query of the last day: ${usd(top.cost)}, job ${top.job} by ${top.user} in ${top.label}` : 'No billed query in the last day');
    }
  }
}

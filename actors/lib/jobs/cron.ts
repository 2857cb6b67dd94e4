/**
 * Five-field cron (SPEC.md "Endpoints → Schedules"): minute hour day-of-month month day-of-week,
 * each `*`, a number, a range `1-5`, a step `*\/15` or `1-30/5` or `5/10`, or a list of those
 * (`1,15,30`); months and weekdays also by their English three-letter names (`jan`, `mon-fri`);
 * 0 and 7 are both Sunday. When day-of-month and day-of-week are both restricted, a day matching
 * either runs (as every cron does). Nothing else: no seconds field, no `@daily`, no `L`, `W`,
 * `#`, `?` or `H` — each refused with a message naming the field.
 *
 * Times are read in an IANA zone (the schedule's own, else scheduler.timezone). Daylight-saving
 * transitions, decided here and tested (test/actors/scheduler-cron.test.ts):
 * - spring forward: a time inside the skipped hour (02:30 when clocks go 02:00 → 03:00) runs
 *   once, at the first valid time after the gap (03:00); several such times are that one run.
 * - fall back: a time inside the repeated hour runs once, at its first occurrence (02:30 on the
 *   summer-time side); its second occurrence does not run.
 *
 * cron-parser does the calendar walk; this module validates, and applies the two rules above.
 * Shared: the scheduler (schedules) and the alarms (each alarm's evaluation cron) read crons here.
 */
import { CronExpressionParser } from 'cron-parser';
import { CortadoError } from '../../../protocol/errors.js';

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const FIELDS: readonly FieldSpec[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'] },
  { name: 'day of week', min: 0, max: 7, names: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] },
];

/** the most run times one call computes */
export const MAX_RUNS = 100;
/** how far ahead a walk looks for a gap-shifted run that sorts before a later one */
const LOOKAHEAD_MS = 3 * 3_600_000;
/** calendar steps cron-parser may take in one walk before the expression counts as never running */
const MAX_STEPS = 5_000;

export interface ParsedCron {
  /** the five fields as given (lower-cased) */
  fields: readonly string[];
  /** the values each field allows, 0 and 7 folded to Sunday 0 */
  sets: readonly ReadonlySet<number>[];
  timezone: string;
}

function invalid(message: string): CortadoError {
  return new CortadoError('VALIDATION_FAILED', `cron: ${message}`, { field: 'cron' });
}

function value(raw: string, f: FieldSpec): number {
  if (/^[0-9]{1,2}$/.test(raw)) {
    const n = Number(raw);
    if (n < f.min || n > f.max) throw invalid(`${f.name}: ${raw} is out of range (${f.min}-${f.max})`);
    return n;
  }
  const i = f.names?.indexOf(raw) ?? -1;
  if (i >= 0) return f.name === 'month' ? i + 1 : i;
  if (/^[a-z]+$/.test(raw) && f.names) throw invalid(`${f.name}: "${raw}" is no ${f.name === 'month' ? 'month' : 'weekday'} (use ${f.min}-${f.max} or ${f.names[0]}, ${f.names[1]} …)`);
  throw invalid(`${f.name}: "${raw}" is not a number in ${f.min}-${f.max}`);
}

/** The values one field allows; throws naming the field. */
function field(raw: string, f: FieldSpec): Set<number> {
  const out = new Set<number>();
  const special = /[LW#?H]/i.exec(raw.replace(/[a-z]{3}/gi, (m) => (f.names?.includes(m.toLowerCase()) ? 'x'.repeat(m.length) : m)));
  if (special) throw invalid(`${f.name}: "${special[0].toUpperCase()}" is not supported (five plain fields: numbers, ranges, steps and lists)`);
  for (const item of raw.split(',')) {
    if (item === '') throw invalid(`${f.name}: an empty item in the list "${raw}"`);
    const [range = '', stepText, extra] = item.split('/');
    if (extra !== undefined) throw invalid(`${f.name}: "${item}" has two steps`);
    let step = 1;
    if (stepText !== undefined) {
      if (!/^[0-9]{1,2}$/.test(stepText) || Number(stepText) < 1) throw invalid(`${f.name}: the step in "${item}" must be a whole number of at least 1`);
      step = Number(stepText);
      if (step > f.max - f.min + 1) throw invalid(`${f.name}: the step ${step} in "${item}" is larger than the field's range (${f.min}-${f.max})`);
    }
    let lo: number;
    let hi: number;
    if (range === '*') {
      lo = f.min;
      hi = f.max === 7 ? 6 : f.max;
    } else if (range.includes('-')) {
      const [a = '', b = '', more] = range.split('-');
      if (more !== undefined) throw invalid(`${f.name}: "${range}" is no range (write it as a-b)`);
      lo = value(a, f);
      hi = value(b, f);
      if (lo > hi) throw invalid(`${f.name}: the range ${range} runs backwards (${lo} > ${hi})`);
    } else {
      lo = value(range, f);
      // `5/10`: from 5 to the end of the field in steps of 10
      hi = stepText !== undefined ? (f.max === 7 ? 6 : f.max) : lo;
    }
    for (let v = lo; v <= hi; v += step) out.add(f.max === 7 && v === 7 ? 0 : v);
  }
  return out;
}

/** Whether a zone name is an IANA time zone this runtime knows. */
export function validZone(zone: string): boolean {
  if (!/^(?:UTC|[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+){0,2})$/.test(zone)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The zone's canonical name (`utc` → `UTC`); the name as given when the runtime has none. */
export function canonicalZone(zone: string): string {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    return zone;
  }
}

/** A cron and zone checked; VALIDATION_FAILED naming the field (cron: minute: …, timezone: …) otherwise. */
export function parseCron(expression: string, timezone: string): ParsedCron {
  if (!validZone(timezone)) {
    throw new CortadoError('VALIDATION_FAILED', `timezone: "${timezone.slice(0, 64)}" is not an IANA time zone (for example UTC, Europe/Berlin, America/New_York)`, { field: 'timezone' });
  }
  const text = expression.trim().toLowerCase();
  if (text === '') throw invalid('empty (five fields: minute hour day-of-month month day-of-week, e.g. "0 9 * * 1-5")');
  if (text.startsWith('@')) throw invalid(`"${text.split(/\s/)[0]}" is not supported: write the five fields (e.g. "0 0 * * *" for daily at midnight)`);
  const fields = text.split(/\s+/);
  if (fields.length !== 5) {
    const hint = fields.length === 6 ? ' (a seconds field is not supported)' : '';
    throw invalid(`five fields are needed (minute hour day-of-month month day-of-week), this has ${fields.length}${hint}`);
  }
  const sets = fields.map((raw, i) => field(raw, FIELDS[i] as FieldSpec));
  const [, , days, months] = sets as [Set<number>, Set<number>, Set<number>, Set<number>];
  const longest = Math.max(...[...months].map((m) => MONTH_DAYS[m - 1] as number));
  if (fields[4] === '*' && Math.min(...days) > longest) {
    throw invalid(`day of month: ${listOf(days, String)} never occurs in ${listOf(months, (n) => MONTH_NAMES[n - 1] as string)}, so it would never run`);
  }
  try {
    CronExpressionParser.parse(fields.join(' '), { tz: timezone });
  } catch (err) {
    throw invalid(`not a valid expression (${err instanceof Error ? err.message : String(err)})`);
  }
  return { fields, sets, timezone };
}

// ---- wall-clock time in a zone --------------------------------------------------------------------

const formats = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
    });
    formats.set(zone, f);
  }
  return f;
}

interface Wall {
  y: number; mo: number; d: number; h: number; mi: number; s: number;
}

function wall(ms: number, zone: string): Wall {
  const p: Record<string, number> = {};
  for (const part of formatter(zone).formatToParts(new Date(ms))) if (part.type !== 'literal') p[part.type] = Number(part.value);
  return { y: p.year ?? 0, mo: p.month ?? 0, d: p.day ?? 0, h: (p.hour ?? 0) % 24, mi: p.minute ?? 0, s: p.second ?? 0 };
}

/** The zone's offset from UTC at an instant, in minutes. */
function offset(ms: number, zone: string): number {
  const w = wall(ms, zone);
  return Math.round((Date.UTC(w.y, w.mo - 1, w.d, w.h, w.mi, w.s) - Math.floor(ms / 1000) * 1000) / 60_000);
}

function sameWall(a: Wall, b: Wall): boolean {
  return a.y === b.y && a.mo === b.mo && a.d === b.d && a.h === b.h && a.mi === b.mi;
}

/** The instant a forward transition happens, between lo (before it) and hi (after it). */
function transition(lo: number, hi: number, zone: string): number {
  const before = offset(lo, zone);
  while (hi - lo > 60_000) {
    const mid = lo + Math.floor((hi - lo) / 120_000) * 60_000;
    if (offset(mid, zone) === before) lo = mid;
    else hi = mid;
  }
  return hi;
}

/**
 * A run cron-parser found, after the DST rules: the instant it runs, or undefined when it does
 * not (the second occurrence of a repeated wall-clock time).
 */
function adjust(ms: number, c: ParsedCron): number | undefined {
  const w = wall(ms, c.timezone);
  const [minutes, hours] = c.sets as [ReadonlySet<number>, ReadonlySet<number>];
  if (!minutes.has(w.mi) || !hours.has(w.h)) {
    // shifted past a spring-forward gap: it runs when the gap ends
    return transition(ms - LOOKAHEAD_MS, ms, c.timezone);
  }
  for (const back of [30, 60, 120]) {
    if (sameWall(wall(ms - back * 60_000, c.timezone), w)) return undefined; // the repeated hour, second time round
  }
  return ms;
}

/**
 * The next `count` run times strictly after `after`, as Dates (at most MAX_RUNS). An
 * expression that never matches a real date (`0 0 31 2 *`) has none: [].
 */
export function nextRuns(c: ParsedCron, after: Date, count: number): Date[] {
  const want = Math.max(0, Math.min(count, MAX_RUNS));
  if (want === 0) return [];
  const start = after.getTime();
  const it = CronExpressionParser.parse(c.fields.join(' '), { tz: c.timezone, currentDate: new Date(start) });
  const found = new Set<number>();
  for (let steps = 0; steps < MAX_STEPS; steps++) {
    let raw: number;
    try {
      raw = it.next().getTime();
    } catch {
      break; // no further date matches (cron-parser gives up), e.g. 31 February
    }
    const at = adjust(raw, c);
    if (at !== undefined && at > start) found.add(at);
    if (found.size >= want) {
      const sorted = [...found].sort((a, b) => a - b);
      // a later raw run can still adjust to before the last one kept: look a little further
      if (raw - LOOKAHEAD_MS > (sorted[want - 1] as number)) return sorted.slice(0, want).map((ms) => new Date(ms));
    }
  }
  return [...found].sort((a, b) => a - b).slice(0, want).map((ms) => new Date(ms));
}

/** The run times in (from, to], oldest first, at most `limit` (what a leader fires, and what a recovery finds missed). */
export function runsBetween(c: ParsedCron, from: Date, to: Date, limit = MAX_RUNS): Date[] {
  const out: Date[] = [];
  let cursor = from;
  while (out.length < limit) {
    const batch = nextRuns(c, cursor, Math.min(MAX_RUNS, limit - out.length));
    for (const d of batch) {
      if (d.getTime() > to.getTime()) return out;
      out.push(d);
    }
    if (batch.length === 0) return out;
    cursor = batch[batch.length - 1] as Date;
  }
  return out;
}

/** ISO 8601 with the zone's offset (2026-03-29T03:00:00+02:00): how run times are shown. */
export function isoInZone(d: Date, zone: string): string {
  const ms = d.getTime();
  const w = wall(ms, zone);
  const off = offset(ms, zone);
  const pad = (n: number, l = 2): string => String(n).padStart(l, '0');
  const sign = off < 0 ? '-' : '+';
  const abs = Math.abs(off);
  const tz = off === 0 ? 'Z' : `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
  return `${pad(w.y, 4)}-${pad(w.mo)}-${pad(w.d)}T${pad(w.h)}:${pad(w.mi)}:${pad(w.s)}${tz}`;
}

// ---- in words -----------------------------------------------------------------------------------

const DAY_NAMES = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
/** the most days each month can have (February in a leap year) */
const MONTH_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const MONTH_NAMES = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

function listOf(values: ReadonlySet<number>, name: (n: number) => string): string {
  const v = [...values].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < v.length;) {
    let j = i;
    while (j + 1 < v.length && (v[j + 1] as number) === (v[j] as number) + 1) j++;
    parts.push(j - i >= 2 ? `${name(v[i] as number)} to ${name(v[j] as number)}` : v.slice(i, j + 1).map(name).join(', '));
    i = j + 1;
  }
  return parts.join(', ');
}

/** What a cron means, in a sentence (the cron helper shows it beside the next runs). */
export function describeCron(c: ParsedCron): string {
  const [mi, h, dom, mon, dow] = c.fields as [string, string, string, string, string];
  const [minutes, hours, days, months, weekdays] = c.sets as [ReadonlySet<number>, ReadonlySet<number>, ReadonlySet<number>, ReadonlySet<number>, ReadonlySet<number>];
  const pad = (n: number): string => String(n).padStart(2, '0');
  let when: string;
  if (mi === '*' && h === '*') when = 'every minute';
  else if (/^\*\/\d+$/.test(mi) && h === '*') when = `every ${mi.slice(2)} minutes`;
  else if (h === '*') when = `at minute ${listOf(minutes, String)} of every hour`;
  else if (minutes.size * hours.size <= 6) {
    when = `at ${[...hours].sort((a, b) => a - b).flatMap((hh) => [...minutes].sort((a, b) => a - b).map((mm) => `${pad(hh)}:${pad(mm)}`)).join(', ')}`;
  } else when = `at minute ${listOf(minutes, String)} of hour ${listOf(hours, String)}`;
  const on: string[] = [];
  if (dom !== '*') on.push(`on day ${listOf(days, String)} of the month`);
  if (dow !== '*') on.push(`${dom !== '*' ? 'or ' : ''}on ${listOf(weekdays, (n) => DAY_NAMES[n] as string)}`);
  if (mon !== '*') on.push(`in ${listOf(months, (n) => MONTH_NAMES[n - 1] as string)}`);
  return `${when}${on.length ? ` ${on.join(' ')}` : ''} (${c.timezone})`;
}

/** The newest run time in (from, to], looking back in growing windows and walking forward in bounded steps. */
export function newestRun(c: ParsedCron, from: Date, to: Date): Date | undefined {
  // a frequent cron has its newest run close to `to`: look back a short window first
  for (const span of [2 * 3_600_000, 3 * 86_400_000, 40 * 86_400_000, 400 * 86_400_000, Number.POSITIVE_INFINITY]) {
    const start = new Date(Math.max(from.getTime(), to.getTime() - span));
    let last: Date | undefined;
    let cursor = start;
    for (let i = 0; i < 200; i++) {
      const batch = runsBetween(c, cursor, to);
      if (batch.length === 0) break;
      last = batch[batch.length - 1];
      cursor = last as Date;
    }
    if (last) return last;
    if (start.getTime() <= from.getTime()) return undefined;
  }
  return undefined;
}

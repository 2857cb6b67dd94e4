/**
 * The period a scheduled report covers, so that "revenue by store last month" means last month
 * at every run, not the month before the day it was made (issue 28 §1).
 *
 * - `relativePeriod(question)` reads a relative period from the question ("last month", "this
 *   year", "the last 7 days", "yesterday", "year to date", "same month last year", ...): a small
 *   deterministic reader, no model. `resolve(rule, at, zone)` turns it into calendar dates in
 *   the schedule's IANA zone at a run's time: `start` (first day), `end` (the day after the
 *   last: an exclusive bound) and `last` (the last day: an inclusive bound).
 * - The pinned SQL says the period with three run-time parameters, `{{period_start}}`,
 *   `{{period_end}}` and `{{period_last}}`. When a schedule's SQL is pinned, date literals equal
 *   to the period the question means at that moment are rewritten into them (`pinPeriod`), so
 *   it works whatever the model wrote (the model is also told which literals to write).
 * - At each run, `bindPeriod` puts the run's dates back as literals before the guard, the drift
 *   check and the database see the SQL: a parameter inside a quoted string becomes the date's
 *   text (`DATE '{{period_start}}'` → `DATE '2026-11-01'`, whatever type the literal had), a bare
 *   one the typed literal `DATE '2026-11-01'`, which PostgreSQL, MariaDB/MySQL, Trino and
 *   BigQuery all read as a date.
 * - A question that names a fixed period ("October 2026", "Q3 2025", "in 2025") keeps its
 *   literals: `fixedPeriod(question)` is what the schedule page says it always covers.
 */

/** Calendar dates, YYYY-MM-DD. */
export interface Period {
  start: string;
  /** the day after the last day: `x < end` */
  end: string;
  /** the last day: `x <= last` */
  last: string;
}

type Unit = 'day' | 'week' | 'month' | 'quarter' | 'year';

/** What a relative phrase means, as a function of the run's day. */
export interface RelativeRule {
  /** the words of the question it was read from, as written there */
  phrase: string;
  resolve(today: Day): { start: Day; end: Day };
}

/** A calendar day (no time, no zone): y, m (1-12), d. */
export interface Day { y: number; m: number; d: number }

const MS_DAY = 86_400_000;

function toUtc(x: Day): number {
  return Date.UTC(x.y, x.m - 1, x.d);
}

function fromUtc(ms: number): Day {
  const d = new Date(ms);
  return { y: d.getUTCFullYear(), m: d.getUTCMonth() + 1, d: d.getUTCDate() };
}

function addDays(x: Day, n: number): Day {
  return fromUtc(toUtc(x) + n * MS_DAY);
}

/** The first day of the month `n` months after x's month. */
function monthStart(x: Day, n = 0): Day {
  const i = x.y * 12 + (x.m - 1) + n;
  return { y: Math.floor(i / 12), m: (i % 12) + 1, d: 1 };
}

/** Monday of x's ISO week. */
function weekStart(x: Day): Day {
  const dow = (new Date(toUtc(x)).getUTCDay() + 6) % 7; // Monday 0
  return addDays(x, -dow);
}

export function dayText(x: Day): string {
  return `${String(x.y).padStart(4, '0')}-${String(x.m).padStart(2, '0')}-${String(x.d).padStart(2, '0')}`;
}

function parseDay(s: string): Day {
  const [y, m, d] = s.split('-').map(Number) as [number, number, number];
  return { y, m, d };
}

/** The day it is at `at` in the zone. */
export function dayIn(at: Date, zone: string): Day {
  const parts = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(at);
  const get = (t: string): number => Number(parts.find((p) => p.type === t)?.value);
  return { y: get('year'), m: get('month'), d: get('day') };
}

function period(start: Day, end: Day): Period {
  return { start: dayText(start), end: dayText(end), last: dayText(addDays(end, -1)) };
}

const NUMBERS: Record<string, number> = {
  one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10, eleven: 11, twelve: 12,
  fourteen: 14, thirty: 30, ninety: 90,
};

function count(word: string): number {
  return /^\d+$/.test(word) ? Number(word) : NUMBERS[word] ?? NaN;
}

/** The whole `n` units before the current one (days: before today). */
function lastN(n: number, unit: Unit): (t: Day) => { start: Day; end: Day } {
  return (t) => {
    if (unit === 'day') return { start: addDays(t, -n), end: t };
    if (unit === 'week') return { start: addDays(weekStart(t), -7 * n), end: weekStart(t) };
    if (unit === 'month') return { start: monthStart(t, -n), end: monthStart(t) };
    if (unit === 'quarter') {
      const q = monthStart(t, -((t.m - 1) % 3));
      return { start: monthStart(q, -3 * n), end: q };
    }
    return { start: { y: t.y - n, m: 1, d: 1 }, end: { y: t.y, m: 1, d: 1 } };
  };
}

/** The current unit, whole (this month: the 1st to the end of the month). */
function current(unit: Exclude<Unit, 'day'>): (t: Day) => { start: Day; end: Day } {
  return (t) => {
    if (unit === 'week') return { start: weekStart(t), end: addDays(weekStart(t), 7) };
    if (unit === 'month') return { start: monthStart(t), end: monthStart(t, 1) };
    if (unit === 'quarter') {
      const q = monthStart(t, -((t.m - 1) % 3));
      return { start: q, end: monthStart(q, 3) };
    }
    return { start: { y: t.y, m: 1, d: 1 }, end: { y: t.y + 1, m: 1, d: 1 } };
  };
}

const UNIT = '(day|week|month|quarter|year)s?';
const NUM = `(\\d{1,4}|${Object.keys(NUMBERS).join('|')})`;

/**
 * The readings, most specific first (so "same month last year" is not read as "last year").
 * Each has the regular expression on the lower-cased question and what it means.
 */
const READINGS: Array<{ re: RegExp; rule: (m: RegExpMatchArray) => RelativeRule['resolve'] | undefined }> = [
  { re: /\bsame month (?:of |in )?last year\b/, rule: () => (t) => ({ start: { y: t.y - 1, m: t.m, d: 1 }, end: monthStart({ y: t.y - 1, m: t.m, d: 1 }, 1) }) },
  { re: /\b(?:year[- ]to[- ]date|ytd)\b/, rule: () => (t) => ({ start: { y: t.y, m: 1, d: 1 }, end: addDays(t, 1) }) },
  { re: /\b(?:month[- ]to[- ]date|mtd)\b/, rule: () => (t) => ({ start: monthStart(t), end: addDays(t, 1) }) },
  {
    re: new RegExp(`\\b(?:the )?(?:last|past|previous|prior) ${NUM} ${UNIT}\\b`),
    rule: (m) => {
      const n = count(m[1] as string);
      return Number.isInteger(n) && n > 0 && n <= 3660 ? lastN(n, m[2] as Unit) : undefined;
    },
  },
  { re: /\byesterday\b/, rule: () => (t) => ({ start: addDays(t, -1), end: t }) },
  { re: /\btoday\b/, rule: () => (t) => ({ start: t, end: addDays(t, 1) }) },
  { re: new RegExp(`\\b(?:last|previous|prior) ${UNIT}\\b`), rule: (m) => lastN(1, m[1] as Unit) },
  { re: /\b(?:this|current) (week|month|quarter|year)\b/, rule: (m) => current(m[1] as Exclude<Unit, 'day'>) },
];

/** The relative period a question asks for, or undefined when it names none. */
export function relativePeriod(question: string): RelativeRule | undefined {
  const q = question.toLowerCase().replace(/\s+/g, ' ');
  for (const { re, rule } of READINGS) {
    const m = q.match(re);
    if (!m) continue;
    const resolve = rule(m);
    if (resolve) return { phrase: m[0].trim(), resolve };
  }
  return undefined;
}

/** The period of a relative rule at a run's time, in the schedule's zone. */
export function resolve(rule: RelativeRule, at: Date, zone: string): Period {
  const { start, end } = rule.resolve(dayIn(at, zone));
  return period(start, end);
}

const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
const MONTH_RE = `(${MONTHS.map((m) => `${m.slice(0, 3)}(?:${m.slice(3)})?`).join('|')})\\.?`;

/** A fixed period the question names ("October 2026", "Q3 2025", "2026-10", "in 2025"), or undefined. */
export function fixedPeriod(question: string): Period | undefined {
  const q = question.toLowerCase();
  let m = q.match(new RegExp(`\\b${MONTH_RE} (?:of )?((?:19|20)\\d\\d)\\b`));
  if (m) {
    const month = MONTHS.findIndex((x) => x.startsWith((m as RegExpMatchArray)[1]!.slice(0, 3))) + 1;
    const s = { y: Number(m[2]), m: month, d: 1 };
    return period(s, monthStart(s, 1));
  }
  m = q.match(/\b((?:19|20)\d\d)-(0[1-9]|1[0-2])\b(?!-\d)/);
  if (m) {
    const s = { y: Number(m[1]), m: Number(m[2]), d: 1 };
    return period(s, monthStart(s, 1));
  }
  const quarter = q.match(/\bq([1-4]) (?:of )?((?:19|20)\d\d)\b/) ?? (() => {
    const r = q.match(/\b((?:19|20)\d\d) q([1-4])\b/);
    return r ? ['', r[2], r[1]] : null;
  })();
  if (quarter) {
    const s = { y: Number(quarter[2]), m: (Number(quarter[1]) - 1) * 3 + 1, d: 1 };
    return period(s, monthStart(s, 3));
  }
  m = q.match(/\b(?:in|for|during|of|year) ((?:19|20)\d\d)\b(?!-)/);
  if (m) return period({ y: Number(m[1]), m: 1, d: 1 }, { y: Number(m[1]) + 1, m: 1, d: 1 });
  return undefined;
}

const PARAM = /('?)\{\{\s*period_(start|end|last)\s*\}\}/g;

/** Whether the SQL says its period with the run-time parameters. */
export function hasPeriodParams(sql: string): boolean {
  return new RegExp(PARAM.source).test(sql);
}

/**
 * The SQL with the period's dates for its parameters: inside a quoted literal the date's text,
 * bare the typed literal DATE 'YYYY-MM-DD' (the same text in all four dialects).
 */
export function bindPeriod(sql: string, p: Period): string {
  return sql.replace(PARAM, (_all, quote: string, which: 'start' | 'end' | 'last') => (quote ? `'${p[which]}` : `DATE '${p[which]}'`));
}

/**
 * Date literals of the SQL that are the period's bounds, rewritten into its parameters: a quoted
 * `'YYYY-MM-DD'` (or that day at midnight, `'YYYY-MM-DD 00:00:00'`) equal to its start, its end
 * or its last day. The literal's own type keyword (DATE, TIMESTAMP, none) stays as written.
 * `replaced` counts them: none means the SQL still names fixed dates (or no dates at all).
 */
export function pinPeriod(sql: string, p: Period): { sql: string; replaced: number } {
  let replaced = 0;
  const out = sql.replace(/'(\d{4}-\d{2}-\d{2})((?:[ T]00:00(?::00(?:\.0+)?)?)?)'/g, (all, day: string, time: string) => {
    const which = day === p.start ? 'start' : day === p.end ? 'end' : day === p.last ? 'last' : undefined;
    if (!which) return all;
    replaced++;
    return `'{{period_${which}}}${time}'`;
  });
  return { sql: out, replaced };
}

/** "1 Nov – 30 Nov 2026", "28 Dec 2026 – 3 Jan 2027", "29 Nov 2026" (the last day inclusive). */
export function periodLabel(p: Pick<Period, 'start' | 'last'>): string {
  const a = parseDay(p.start);
  const b = parseDay(p.last);
  const mon = (x: Day): string => {
    const name = MONTHS[x.m - 1] as string;
    return name.charAt(0).toUpperCase() + name.slice(1, 3);
  };
  if (p.start === p.last) return `${b.d} ${mon(b)} ${b.y}`;
  return a.y === b.y ? `${a.d} ${mon(a)} – ${b.d} ${mon(b)} ${b.y}` : `${a.d} ${mon(a)} ${a.y} – ${b.d} ${mon(b)} ${b.y}`;
}

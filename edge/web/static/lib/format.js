// How the pages write numbers, money, sizes, durations and times: one copy, so a figure reads
// the same on every page. Numbers in en-US grouping (1,234.5) unless a locale is given; missing
// values as an en dash.

const DASH = '–';
const missing = (v) => v === undefined || v === null || (typeof v === 'number' && Number.isNaN(v));

/** 1234 → "1,234" (rounded to a whole number) */
export function formatInt(n, locale = 'en-US') {
  return missing(n) ? DASH : Math.round(Number(n)).toLocaleString(locale);
}

/** 1234.567 → "1,234.57" (at most `digits` decimals) */
export function formatNumber(n, digits = 2, locale = 'en-US') {
  return missing(n) ? DASH : Number(n).toLocaleString(locale, { maximumFractionDigits: digits });
}

/** 1234.5 → "$1,234.50"; under a dollar with four decimals ("$0.0042") so a small cost does not read as nothing */
export function formatUsd(n) {
  if (missing(n)) return DASH;
  const v = Number(n);
  const digits = Math.abs(v) > 0 && Math.abs(v) < 1 ? 4 : 2;
  return `$${v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })}`;
}

/** 0.1234 → "12.3 %" (a fraction, not a percentage) */
export function formatPercent(fraction, digits = 1) {
  return missing(fraction) ? DASH : `${(Number(fraction) * 100).toFixed(digits)} %`;
}

/** 1536 → "1.50 KB" (powers of 1024) */
export function formatBytes(n) {
  if (missing(n)) return DASH;
  const units = ['bytes', 'KB', 'MB', 'GB', 'TB', 'PB'];
  let v = Number(n);
  let u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return `${u ? v.toFixed(v < 10 ? 2 : 1) : v} ${units[u]}`;
}

/** 3 * 2**30 → "3 GiB" */
export function formatGiB(bytes) {
  return missing(bytes) ? DASH : `${(Number(bytes) / 2 ** 30).toLocaleString('en-US', { maximumFractionDigits: 2 })} GiB`;
}

/** 1234.4 → "1,234 ms" */
export function formatMs(ms) {
  return missing(ms) ? DASH : `${formatInt(ms)} ms`;
}

/** A span in words: 45 s, 12 min, 3 h 5 min, 2 d 4 h */
export function formatDuration(ms) {
  if (missing(ms)) return DASH;
  const s = Math.round(Number(ms) / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h${m % 60 ? ` ${m % 60} min` : ''}`;
  return `${Math.floor(h / 24)} d${h % 24 ? ` ${h % 24} h` : ''}`;
}

/** An instant to the minute in UTC, the same for every reader: "2026-11-29 14:05" */
export function formatUtcMinute(ts) {
  if (!ts) return '';
  const d = new Date(ts);
  return Number.isNaN(d.getTime()) ? String(ts) : d.toISOString().replace('T', ' ').slice(0, 16);
}

/** An instant in the reader's own locale and zone */
export function formatLocal(ts) {
  if (!ts) return '';
  const d = new Date(ts);
  return Number.isNaN(d.getTime()) ? String(ts) : d.toLocaleString();
}

/** A time of day in the reader's own locale and zone */
export function formatLocalTime(ts = Date.now()) {
  const d = new Date(ts);
  return Number.isNaN(d.getTime()) ? String(ts) : d.toLocaleTimeString();
}

/**
 * An ISO time as the server wrote it, in its own zone: "2026-11-26T08:00:00+01:00" →
 * "2026-11-26 08:00 +01:00" (a schedule's times are read in the schedule's zone, not the reader's).
 */
export function formatZoned(iso) {
  if (!iso) return '—';
  const m = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d)(?::\d\d(?:\.\d+)?)?(Z|[+-]\d\d:?\d\d)?$/.exec(iso);
  if (!m) return iso;
  return `${m[1]} ${m[2]}${m[3] ? ` ${m[3] === 'Z' ? 'UTC' : m[3]}` : ''}`;
}

/** "3 rows", "1 row" */
export function plural(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

// ---- a result's columns: names and values for people (docs/ui.md, "Numbers for people") ------------

const NUMERIC_TYPE = /int|numeric|decimal|float|double|real|money|number|serial/i;
const TEMPORAL_TYPE = /date|time/i;
const DATE_TEXT = /^(\d{4})-(\d{2})(?:-(\d{2}))?(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?)?$/;
/** a key, not a quantity: never summed, charted or grouped in thousands */
const ID_NAME = /^(id|pk|key|uuid|guid)$|[_\s-](id|pk|key|uuid|guid|code|no|nr)$|[a-z]Id$/i;
/** a number that is a period, not a quantity (a year, a month's number) */
const CALENDAR_NAME = /(^|_)(year|yr|quarter|qtr|month|mon|week|wk|day|dow|weekday|hour|hr|minute)s?$/i;
const PERCENT_NAME = /(^|_)(pct|percent|percentage)(_|$)|%/i;
const FRACTION_NAME = /(^|_)(share|ratio|rate|proportion|fraction)(_|$)/i;
const CURRENCY_NAME = /(^|_)(revenue|sales|amount|price|prices|cost|costs|spend|spent|income|profit|gmv|aov|arpu|fee|fees|paid|payment|payments|budget|salary|wage|wages|turnover|usd|eur|gbp|chf|dollars|euros)(_|$)/i;

const TEXT_TYPE = /char|text|string|uuid|bool|json|enum|citext|^name$/i;
export const isTextType = (type) => TEXT_TYPE.test(type ?? '');
export const isNumericType = (type) => NUMERIC_TYPE.test(type ?? '') && !/interval/i.test(type ?? '');
export const isTemporalType = (type) => TEMPORAL_TYPE.test(type ?? '') && !/interval/i.test(type ?? '');
export const isIdName = (name) => ID_NAME.test(String(name ?? ''));
export const isCalendarName = (name) => CALENDAR_NAME.test(String(name ?? ''));
const present = (v) => v !== null && v !== undefined && v !== '';
const asNumber = (v) => (typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN);

/** `total_revenue` → "Total revenue", `orderCount` → "Order count" (a column's name as a header) */
export function humanizeName(name) {
  const s = String(name ?? '').replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/[_\s]+/g, ' ').trim();
  if (!s) return String(name ?? '');
  const words = s.split(' ').map((w) => (/^(id|url|sku|kpi|usd|eur|gbp|gmv|aov|arpu|vat|sql)$/i.test(w) ? w.toUpperCase() : w.toLowerCase()));
  const out = words.join(' ');
  return out.charAt(0).toUpperCase() + out.slice(1);
}

/** A column's name for people: the semantic layer's display name when the reply carries one, else humanised. */
export const columnLabel = (column) => column?.label || humanizeName(column?.name);

/**
 * A date or time cell as a point in time: {time (ms), dateOnly} or null. A date, or a timestamp at
 * midnight UTC (a truncated period: `date_trunc('month', …)` written as `2024-03-01 00:00:00+00`),
 * is a calendar date, read in UTC so that no zone moves it to the day before.
 */
export function parseTemporal(v) {
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : { time: v.getTime(), dateOnly: false };
  if (typeof v !== 'string') return null;
  const m = DATE_TEXT.exec(v.trim());
  if (!m) return null;
  const [, y, mo, d = '01', h, mi, s = '00', zone] = m;
  const midnight = h === undefined || (h === '00' && mi === '00' && s === '00');
  const utc = !zone || zone === 'Z' || /^[+-]00(:?00)?$/.test(zone);
  if (midnight && utc) {
    const time = Date.UTC(Number(y), Number(mo) - 1, Number(d));
    return Number.isNaN(time) ? null : { time, dateOnly: true, monthOnly: m[3] === undefined };
  }
  const iso = `${y}-${mo}-${d}T${h}:${mi}:${s}${zone ? (zone === 'Z' ? 'Z' : zone.length === 3 ? `${zone}:00` : zone.replace(/^([+-]\d{2})(\d{2})$/, '$1:$2')) : ''}`;
  const time = Date.parse(iso);
  return Number.isNaN(time) ? null : { time, dateOnly: false };
}

/** How fine a column of times is: 'year' | 'month' | 'day' | 'time' (for labels that say no more than the data). */
export function temporalGrain(values) {
  const ts = values.map(parseTemporal).filter(Boolean);
  if (!ts.length) return 'day';
  if (ts.some((t) => !t.dateOnly)) return 'time';
  // one date on the 1st says nothing of a month: only several do
  if (ts.length < 2 && !ts[0].monthOnly) return 'day';
  const ds = ts.map((t) => new Date(t.time));
  if (ds.every((d) => d.getUTCDate() === 1)) return ds.every((d) => d.getUTCMonth() === 0) && ts.length > 1 ? 'year' : 'month';
  return 'day';
}

/** A time in the browser's locale, no finer than its grain: "Mar 2024", "3/14/2024", "3/14/2024, 9:05 AM". */
export function formatTemporal(v, grain = 'day', locale = undefined) {
  const t = parseTemporal(v);
  if (!t) return v === null || v === undefined ? DASH : String(v);
  const d = new Date(t.time);
  if (t.dateOnly) {
    const utc = { timeZone: 'UTC' };
    if (grain === 'year') return d.toLocaleDateString(locale, { ...utc, year: 'numeric' });
    if (grain === 'month') return d.toLocaleDateString(locale, { ...utc, year: 'numeric', month: 'short' });
    return d.toLocaleDateString(locale, utc);
  }
  return d.toLocaleString(locale, { dateStyle: 'medium', timeStyle: 'short' });
}

/**
 * How one column of a result is written, by its type and meaning: {kind, digits, format(v)}.
 * kind: 'id' (a key: the digits as they are, no grouping), 'calendar' (a year or month number,
 * as it is), 'currency' (two fixed decimals, grouped), 'percent' (one decimal and " %"; a
 * share/ratio/rate whose values are within 0–1 is a fraction, × 100), 'integer' (grouped),
 * 'decimal' (grouped, the same number of decimals on every row: the most any value has, at most
 * 2), 'time' (the browser's locale, as fine as the column needs), 'text'. `column.format`
 * ('currency' | 'percentage', the semantic layer's format_type) wins over the name.
 */
export function columnFormat(column, values, locale = undefined) {
  const name = String(column?.name ?? '');
  const type = column?.type ?? '';
  const vals = values.filter(present);
  const numeric = isNumericType(type) || (!isTextType(type) && vals.length > 0 && vals.every((v) => typeof v === 'number' || (typeof v === 'string' && !Number.isNaN(asNumber(v)))));
  const temporal = isTemporalType(type) || (vals.length > 0 && vals.every((v) => typeof v === 'string' && parseTemporal(v)));
  if (temporal && !numeric) {
    const grain = temporalGrain(vals);
    return { kind: 'time', grain, format: (v) => (present(v) ? formatTemporal(v, grain, locale) : DASH) };
  }
  if (!numeric || !vals.length) return { kind: 'text', format: (v) => (v === null || v === undefined ? DASH : typeof v === 'object' ? JSON.stringify(v) : String(v)) };
  const nums = vals.map(asNumber);
  const integers = nums.every((n) => Number.isInteger(n));
  const plain = (v) => (present(v) ? String(v) : DASH);
  if (isIdName(name) && integers) return { kind: 'id', format: plain };
  if (isCalendarName(name) && integers) return { kind: 'calendar', format: plain };
  const group = (digits) => (v) => (present(v) && !Number.isNaN(asNumber(v)) ? asNumber(v).toLocaleString(locale, { minimumFractionDigits: digits, maximumFractionDigits: digits }) : DASH);
  const fmt = column?.format;
  if (fmt === 'percentage' || (!fmt && (PERCENT_NAME.test(name) || FRACTION_NAME.test(name)))) {
    const fraction = !PERCENT_NAME.test(name) && nums.every((n) => Math.abs(n) <= 1);
    const f = group(1);
    return { kind: 'percent', digits: 1, fraction, format: (v) => (present(v) ? `${f(fraction ? asNumber(v) * 100 : v)} %` : DASH) };
  }
  if (fmt === 'currency' || (!fmt && CURRENCY_NAME.test(name))) return { kind: 'currency', digits: 2, format: group(2) };
  if (integers) return { kind: 'integer', digits: 0, format: group(0) };
  const decimals = Math.min(2, Math.max(...vals.map((v) => {
    const s = typeof v === 'number' ? String(v) : v.trim();
    return /e/i.test(s) ? 2 : (s.split('.')[1] ?? '').length;
  })));
  return { kind: 'decimal', digits: decimals, format: group(decimals) };
}

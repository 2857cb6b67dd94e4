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

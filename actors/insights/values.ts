/**
 * The values insights compute with: exact decimals (units × 10^-scale; big numerics arrive as
 * strings), dates and their grain, and numbers formatted for people (statistics: stats.ts).
 */
import type { Cell } from '../../protocol/schemas/common.js';

/** A change of at most this much (either way) is "flat". */
export const FLAT_CHANGE = 0.05;

// Exact decimals: units × 10^-scale

export interface Decimal {
  units: bigint;
  scale: number;
}

export const ZERO: Decimal = { units: 0n, scale: 0 };
const DECIMAL_TEXT = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

/** While one statisticalInsights() runs: the cells already parsed (cells are strings and numbers). */
let decimals: Map<Cell | undefined, Decimal | null> | undefined;

/** Runs `work` with parseDecimal remembering the cells it parsed (every insight reads the measure column). */
export function withDecimalCache<T>(work: () => T): T {
  decimals = new Map();
  try {
    return work();
  } finally {
    decimals = undefined;
  }
}

/** A numeric cell (a JSON number or a numeric string) as an exact decimal; null otherwise. */
export function parseDecimal(cell: Cell | undefined): Decimal | null {
  if (!decimals) return parseDecimalText(cell);
  let d = decimals.get(cell);
  if (d === undefined) decimals.set(cell, (d = parseDecimalText(cell)));
  return d;
}

function parseDecimalText(cell: Cell | undefined): Decimal | null {
  let text: string;
  if (typeof cell === 'number') {
    if (!Number.isFinite(cell)) return null;
    text = String(cell);
  } else if (typeof cell === 'string') text = cell.trim();
  else return null;
  const m = DECIMAL_TEXT.exec(text);
  if (!m) return null;
  const [, sign = '', int = '', frac = '', exp = '0'] = m;
  if (int === '' && frac === '') return null;
  const e = Number(exp);
  if (Math.abs(e) > 1000) return null;
  let units = BigInt(`${int}${frac}` || '0');
  let scale = frac.length - e;
  if (scale < 0) {
    units *= 10n ** BigInt(-scale);
    scale = 0;
  }
  return { units: sign === '-' ? -units : units, scale };
}

/** -1, 0 or 1: the sign of a − b, exactly */
export function compareDecimal(a: Decimal, b: Decimal): number {
  if (a.scale === b.scale) return a.units > b.units ? 1 : a.units < b.units ? -1 : 0;
  const d = addDecimal(a, { units: -b.units, scale: b.scale }).units;
  return d > 0n ? 1 : d < 0n ? -1 : 0;
}

/**
 * Decimals as doubles relative to their smallest, subtracted exactly first: statistics read
 * differences, and 12345678901234567890.1 and …891.2 are one double apart otherwise.
 */
export function shifted(values: readonly Decimal[]): { base: number; numbers: number[] } {
  if (values.length === 0) return { base: 0, numbers: [] };
  let min = values[0]!;
  for (const v of values) if (compareDecimal(v, min) < 0) min = v;
  const minus = { units: -min.units, scale: min.scale };
  return { base: toNumber(min), numbers: values.map((v) => toNumber(addDecimal(v, minus))) };
}

export function addDecimal(a: Decimal, b: Decimal): Decimal {
  if (a.scale === b.scale) return { units: a.units + b.units, scale: a.scale };
  const scale = Math.max(a.scale, b.scale);
  return { units: a.units * 10n ** BigInt(scale - a.scale) + b.units * 10n ** BigInt(scale - b.scale), scale };
}

/** a / n, with 4 more decimals than shown (cut toward zero, so display rounding stays right) */
export function divideDecimal(a: Decimal, n: number): Decimal {
  const extra = 4;
  return { units: (a.units * 10n ** BigInt(extra)) / BigInt(n), scale: a.scale + extra };
}

function decimalText(d: Decimal): `${number}` {
  const neg = d.units < 0n;
  const digits = (neg ? -d.units : d.units).toString().padStart(d.scale + 1, '0');
  const int = digits.slice(0, digits.length - d.scale);
  const frac = digits.slice(digits.length - d.scale);
  return `${neg ? '-' : ''}${int}${frac ? `.${frac}` : ''}` as `${number}`;
}

const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** The nearest double: an exact integer over an exact power of ten is rounded once, like parsing the text. */
export function toNumber(d: Decimal): number {
  if (d.scale <= 22 && d.units <= SAFE && d.units >= -SAFE) return Number(d.units) / 10 ** d.scale;
  return Number(decimalText(d));
}

// ---------------------------------------------------------------------------------------------
// Formatting: thousands separators, at most 2 decimals

const formatters = new Map<number, Intl.NumberFormat>();

function formatter(maxDecimals: number): Intl.NumberFormat {
  let f = formatters.get(maxDecimals);
  if (!f) {
    f = new Intl.NumberFormat('en-US', { maximumFractionDigits: maxDecimals, signDisplay: 'negative' });
    formatters.set(maxDecimals, f);
  }
  return f;
}

export function formatNumber(n: number, maxDecimals = 2): string {
  return formatter(maxDecimals).format(n);
}

export function formatDecimal(d: Decimal): string {
  return formatter(2).format(decimalText(d));
}

/** 0.234 → 23.4% (1 decimal), 0.35 → 35% (by default: 1 decimal below 10%, none above) */
export function formatPercent(fraction: number, decimals?: number): string {
  const p = fraction * 100;
  return `${formatNumber(p, decimals ?? (Math.abs(p) < 10 ? 1 : 0))}%`;
}

// ---------------------------------------------------------------------------------------------
// Dates

export interface ParsedDate {
  /** for ordering: ms since the epoch, offset applied */
  epoch: number;
  /** as written */
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

type Grain = 'year' | 'month' | 'day' | 'minute';

const ISO_DATE = /^(\d{4})-(\d{2})(?:-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?)?\s*(Z|UTC|[+-]\d{2}(?::?\d{2})?)?$/i;

/** An ISO-like date or timestamp (`2025-01`, `2025-01-31`, `2025-01-31 10:00:00+01`, …). */
export function parseDate(cell: Cell | undefined): ParsedDate | null {
  if (typeof cell !== 'string') return null;
  const m = ISO_DATE.exec(cell.trim());
  if (!m) return null;
  const [, y, mo, d = '1', h = '0', mi = '0', s = '0', frac = '', zone] = m;
  const date = { year: Number(y), month: Number(mo), day: Number(d), hour: Number(h), minute: Number(mi), second: Number(s) };
  if (date.month < 1 || date.month > 12 || date.day < 1 || date.day > 31 || date.hour > 24 || date.minute > 59 || date.second > 60) return null;
  let offsetMin = 0;
  if (zone && /^[+-]/.test(zone)) {
    const digits = zone.slice(1).replace(':', '');
    offsetMin = (zone.startsWith('-') ? -1 : 1) * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2) || '0'));
  }
  const ms = frac ? Number(`0.${frac}`) * 1000 : 0;
  const epoch = Date.UTC(date.year, date.month - 1, date.day, date.hour, date.minute, date.second, ms) - offsetMin * 60_000;
  return { epoch, ...date };
}

/** The coarsest way to write all these dates: 2025, 2025-03, 2025-03-14 or 2025-03-14 09:30. */
export function dateGrain(dates: readonly ParsedDate[]): Grain {
  if (dates.some((d) => d.hour !== 0 || d.minute !== 0 || d.second !== 0)) return 'minute';
  if (dates.some((d) => d.day !== 1)) return 'day';
  if (dates.some((d) => d.month !== 1)) return 'month';
  return 'year';
}

export function formatDate(d: ParsedDate, grain: Grain): string {
  const p = (n: number): string => String(n).padStart(2, '0');
  const ym = `${d.year}-${p(d.month)}`;
  if (grain === 'year') return String(d.year);
  if (grain === 'month') return ym;
  if (grain === 'day') return `${ym}-${p(d.day)}`;
  return `${ym}-${p(d.day)} ${p(d.hour)}:${p(d.minute)}`;
}

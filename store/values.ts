/**
 * What every repository shares, in memory and on PostgreSQL alike: times as ISO 8601 in UTC
 * with milliseconds, pages made safe, values copied in and out (a caller changing an object it
 * passed or got back changes nothing stored, as with a database).
 */
import { CortadoError } from '../protocol/errors.js';

/** A page request made safe: whole numbers, limit within 1..max, offset ≥ 0. */
export function page(limit: number | undefined, offset: number | undefined, def: number, max: number): { limit: number; offset: number } {
  const l = Number.isFinite(limit) ? Math.floor(limit as number) : def;
  const o = Number.isFinite(offset) ? Math.floor(offset as number) : 0;
  return { limit: Math.min(Math.max(l, 1), max), offset: Math.max(o, 0) };
}

/** A time as every repository returns it: ISO 8601 in UTC with milliseconds. */
export function isoTime(value: string | Date, what: string): string {
  const d = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(d.getTime())) throw new CortadoError('VALIDATION_FAILED', `${what} is not a valid time`);
  return d.toISOString();
}

/** A copy as a database would give back: JSON in, JSON out. */
export function copy<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}

/** Sort by a text key in code-point order (what PostgreSQL's COLLATE "C" does). */
export function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

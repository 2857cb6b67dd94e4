/**
 * One place the operations run: a BigQuery project in a region, or the configured database
 * (beyond the spec). Each target answers the operations its engine has data for and refuses the
 * others with NOT_AVAILABLE's stand-in, a CortadoError the handler turns into that target's
 * `error` (never the whole reply's).
 */
import { CortadoError } from '../../protocol/errors.js';
import type { OpsOperation, OpsResult, OpsTarget } from '../../protocol/schemas/ops.js';

export interface OpsParams {
  windowDays: number;
  windowHours: number;
  limit: number;
  /** epoch ms the windows end at */
  now: number;
  pricePerTib: number;
  threshold: number;
  /** epoch ms after which nothing is waited for */
  deadline: number;
}

export interface OpsTargetRunner {
  readonly target: OpsTarget;
  run(op: OpsOperation, p: OpsParams): Promise<OpsResult>;
  close(): Promise<void>;
}

/** `US`, `region-us` → `us`: how BigQuery's locations compare. */
export function normalRegion(region: string): string {
  return region.trim().toLowerCase().replace(/^region-/, '');
}

/** What an engine keeps no data for: a per-target error that says so. */
export function notAvailable(op: OpsOperation, engine: string, why: string): CortadoError {
  return new CortadoError('NOT_FOUND', `${op} is not available on ${engine}: ${why}`);
}

/** A number from what a driver hands back: number, numeric text, bigint, BigQuery's wrapped values, big.js. */
export function num(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'string') return Number(v);
  if (v && typeof v === 'object') {
    const inner = (v as { value?: unknown }).value;
    if (inner !== undefined) return Number(inner);
    return Number(String(v));
  }
  return 0;
}

/** Text from a driver value: BigQuery's wrapped TIMESTAMP/DATE give their `value`; null gives ''. */
export function text(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'object' && 'value' in v) return String((v as { value: unknown }).value);
  return String(v);
}

/** An ISO instant from a driver's timestamp (BigQuery's `2024-05-01T10:00:00.000Z`, pg's Date, Trino's text). */
export function isoTime(v: unknown): string | undefined {
  const t = text(v);
  if (t === '') return undefined;
  const ms = Date.parse(/^\d{4}-\d\d-\d\d \d/.test(t) ? t.replace(' ', 'T').replace(/ UTC$/, 'Z') : t);
  return Number.isFinite(ms) ? new Date(ms).toISOString() : t;
}

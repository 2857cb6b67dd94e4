/**
 * Figures from sampled rows (sql.profile when the engine keeps no statistics): distinct values,
 * the share of NULLs, min and max, a few distinct values, the average text length. Pure.
 */
import type { Cell } from '../../protocol/schemas/common.js';
import { PROFILE_SAMPLE_VALUES, PROFILE_VALUE_CHARS, type ColumnStats } from '../../protocol/schemas/profile.js';

export type SampleFigures = Pick<ColumnStats, 'distinct_count' | 'null_fraction' | 'min' | 'max' | 'sample_values' | 'avg_length'>;

/** A long text value cut at PROFILE_VALUE_CHARS (ending with …). */
export function shorten(value: Cell): Cell {
  if (typeof value !== 'string' || value.length <= PROFILE_VALUE_CHARS) return value;
  return `${value.slice(0, PROFILE_VALUE_CHARS - 1)}…`;
}

/** Numbers sent as text (big integers, long decimals) compare as numbers when the column is numeric. */
function numeric(v: Cell): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && /^-?\d+(\.\d+)?(e[+-]?\d+)?$/i.test(v)) return Number(v);
  return undefined;
}

/** a < b for min/max: numbers (or numeric text) by value, else text order; booleans are not ordered. */
export function less(a: Cell, b: Cell): boolean {
  const x = numeric(a);
  const y = numeric(b);
  if (x !== undefined && y !== undefined) return x < y;
  return String(a) < String(b);
}

/** The figures of column `index` over `rows`. */
export function sampleFigures(rows: readonly Cell[][], index: number): SampleFigures {
  let nulls = 0;
  let textChars = 0;
  let texts = 0;
  let min: Cell | undefined;
  let max: Cell | undefined;
  const seen = new Set<string>();
  const samples: Cell[] = [];
  for (const row of rows) {
    const v = row[index] ?? null;
    if (v === null) {
      nulls++;
      continue;
    }
    const key = `${typeof v}:${String(v)}`;
    if (!seen.has(key)) {
      seen.add(key);
      if (samples.length < PROFILE_SAMPLE_VALUES) samples.push(shorten(v));
    }
    if (typeof v === 'string') {
      texts++;
      textChars += v.length;
    }
    if (typeof v !== 'boolean') {
      if (min === undefined || less(v, min)) min = v;
      if (max === undefined || less(max, v)) max = v;
    }
  }
  const out: SampleFigures = { distinct_count: seen.size, sample_values: samples };
  if (rows.length) out.null_fraction = nulls / rows.length;
  if (min !== undefined) out.min = shorten(min);
  if (max !== undefined) out.max = shorten(max);
  if (texts) out.avg_length = Math.round((textChars / texts) * 10) / 10;
  return out;
}

/** The distinct non-null values of column `index`, at most `max` (for overlap checks). */
export function distinctValues(rows: readonly Cell[][], index: number, max: number): Cell[] {
  const seen = new Set<string>();
  const out: Cell[] = [];
  for (const row of rows) {
    const v = row[index] ?? null;
    if (v === null || typeof v === 'boolean') continue;
    const key = `${typeof v}:${String(v)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(v);
    if (out.length >= max) break;
  }
  return out;
}

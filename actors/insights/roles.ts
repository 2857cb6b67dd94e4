/**
 * Column roles: the measure is the last numeric column that is not an id, the label the first
 * text column, the date the first date/timestamp column (or a text column of ISO dates); types
 * are read from their names, the values decide when a type is unknown.
 */
import type { Cell, Column } from '../../protocol/schemas/common.js';
import { parseDate, parseDecimal } from './values.js';

// Column roles

export interface ColumnRef {
  index: number;
  name: string;
  /** a sum means something (not an average, rate or ratio) */
  additive: boolean;
}

export interface ColumnRoles {
  measure?: ColumnRef;
  label?: ColumnRef;
  date?: ColumnRef;
  /** every numeric non-id column, in column order (the measure is the last) */
  measures: ColumnRef[];
  /** every date column, in column order (the date is the first) */
  dates: ColumnRef[];
}

type Kind = 'number' | 'date' | 'text' | 'other';

const NUMERIC_TYPE = /^(smallint|integer|bigint|int|int2|int4|int8|int64|tinyint|mediumint|numeric|bignumeric|decimal|real|double precision|double|float|float4|float8|float64)\b/;
const DATE_TYPE = /^(date|timestamp|timestamptz|datetime)\b/;
const TEXT_TYPE = /^(text|character varying|character|varchar|char|bpchar|name|citext|string)\b/;
const NON_ADDITIVE = /(^|_)(avg|average|mean|median|rate|ratio|pct|percent|percentage)(_|$)/i;

export function isIdLike(name: string): boolean {
  const n = name.toLowerCase();
  return n === 'id' || n.endsWith('_id');
}

function columnKind(column: Column, values: readonly Cell[]): Kind {
  const type = column.type.trim().toLowerCase();
  if (type.endsWith('[]')) return 'other';
  if (NUMERIC_TYPE.test(type)) return 'number';
  if (DATE_TYPE.test(type)) return 'date';
  const present = values.filter((v) => v !== null && v !== undefined);
  const all = (ok: (v: Cell) => boolean): boolean => present.length > 0 && present.every(ok);
  if (all((v) => typeof v === 'string' && parseDate(v) !== null)) return 'date';
  if (TEXT_TYPE.test(type)) return 'text';
  // a type name we do not know: judge by the values
  if (all((v) => parseDecimal(v) !== null)) return 'number';
  if (all((v) => typeof v === 'string')) return 'text';
  return 'other';
}

/** The measure (last numeric non-id column), label (first text column) and date column. */
export function pickRoles(columns: readonly Column[], rows: readonly Cell[][]): ColumnRoles {
  const roles: ColumnRoles = { measures: [], dates: [] };
  columns.forEach((column, index) => {
    const kind = columnKind(column, rows.map((r) => r[index] ?? null));
    const ref = { index, name: column.name, additive: !NON_ADDITIVE.test(column.name) };
    if (kind === 'number' && !isIdLike(column.name)) {
      roles.measure = ref;
      roles.measures.push(ref);
    } else if (kind === 'text' && !roles.label) roles.label = ref;
    else if (kind === 'date') {
      if (!roles.date) roles.date = ref;
      roles.dates.push(ref);
    }
  });
  return roles;
}

export function labelText(cell: Cell | undefined): string {
  if (cell === null || cell === undefined) return '(empty)';
  const s = String(cell).trim();
  return s === '' ? '(empty)' : s;
}

/** `total_revenue` → `total revenue` */
export function humanize(name: string): string {
  const s = name.replace(/_+/g, ' ').replace(/\s+/g, ' ').trim();
  return s === '' ? name : s;
}

export function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

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

/**
 * A key, not a quantity: id, *_id, *_key, *_code, *_no, customerId … The same rule as the answer
 * view's chart (edge/web/static/lib/format.js ID_NAME), so the chart and the insight cards pick
 * the same measure (test/edge/chart-model.test.ts holds them together).
 */
const ID_NAME = /^(id|pk|key|uuid|guid)$|[_\s-](id|pk|key|uuid|guid|code|no|nr)$|[a-z]Id$/i;
/** a number that is a period (a year, a month's number), not a quantity, when its values are whole */
export const CALENDAR_NAME = /(^|_)(year|yr|quarter|qtr|month|mon|week|wk|day|dow|weekday|hour|hr|minute)s?$/i;

export function isIdLike(name: string): boolean {
  return ID_NAME.test(name);
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

/** words of a column name that name no particular quantity */
const GENERIC_WORDS = new Set(['total', 'sum', 'avg', 'average', 'mean', 'count', 'cnt', 'num', 'number', 'of', 'the', 'per', 'by', 'amt', 'value']);

/**
 * Whether the question names a column: every word of its name but the generic ones (total, sum,
 * count…) begins a word of the question ("revenue" in "Monthly revenues…"). The same rule as the
 * answer view's chart (edge/web/static/lib/chart-model.js namedIn).
 */
export function namedIn(question: string, name: string): boolean {
  const words = name.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase().split(/[^a-z0-9]+/).filter((w) => w && !GENERIC_WORDS.has(w));
  if (!words.length) return false;
  const q = ` ${question.toLowerCase().replace(/[^a-z0-9]+/g, ' ')} `;
  return words.every((w) => q.includes(` ${w}`));
}

/** whole numbers only (a year column), judged on the values present */
function wholeNumbers(values: readonly Cell[]): boolean {
  const present = values.filter((v) => v !== null && v !== undefined);
  return present.length > 0 && present.every((v) => Number.isInteger(typeof v === 'number' ? v : Number(v)));
}

/**
 * The measure (the last numeric column that is neither an id nor a whole-numbered period such as
 * a year — of those the question names, when it names any), label (first text column) and date
 * column.
 */
export function pickRoles(columns: readonly Column[], rows: readonly Cell[][], question = ''): ColumnRoles {
  const roles: ColumnRoles = { measures: [], dates: [] };
  columns.forEach((column, index) => {
    const values = rows.map((r) => r[index] ?? null);
    const kind = columnKind(column, values);
    const ref = { index, name: column.name, additive: !NON_ADDITIVE.test(column.name) };
    if (kind === 'number' && !isIdLike(column.name) && !(CALENDAR_NAME.test(column.name) && wholeNumbers(values))) {
      roles.measure = ref;
      roles.measures.push(ref);
    } else if (kind === 'text' && !roles.label) roles.label = ref;
    else if (kind === 'date') {
      if (!roles.date) roles.date = ref;
      roles.dates.push(ref);
    }
  });
  const named = question ? roles.measures.filter((m) => namedIn(question, m.name)).at(-1) : undefined;
  if (named) roles.measure = named;
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

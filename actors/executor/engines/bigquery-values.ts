/** BigQuery values: every value arrives as a string (or nested f/v records) and becomes a JSON cell. */

import type { Cell, Column } from '../../../protocol/schemas/common.js';
import { exactNumber } from './values.js';

export interface TableField {
  name?: string;
  type?: string;
  mode?: string;
  fields?: TableField[];
}

export interface Row {
  f?: Array<{ v?: unknown }>;
}


/** The REST API's (legacy) type names → GoogleSQL's. */
const TYPE_NAMES: Record<string, string> = { INTEGER: 'INT64', FLOAT: 'FLOAT64', BOOLEAN: 'BOOL', RECORD: 'STRUCT' };

function typeName(field: TableField, withMode = true): string {
  const raw = (field.type ?? 'STRING').toUpperCase();
  let name = TYPE_NAMES[raw] ?? raw;
  if (name === 'STRUCT') name = `STRUCT<${(field.fields ?? []).map((f) => `${f.name ?? ''} ${typeName(f)}`).join(', ')}>`;
  return withMode && field.mode === 'REPEATED' ? `ARRAY<${name}>` : name;
}

export function columnOf(field: TableField): Column {
  return { name: field.name ?? '', type: typeName(field) };
}

export function rowCells(fields: TableField[], row: Row): Cell[] {
  return fields.map((field, i) => bigqueryCell(field, row.f?.[i]?.v));
}

/** One value of a row: a JSON scalar; arrays and structs as JSON text. */
export function bigqueryCell(field: TableField, v: unknown): Cell {
  const value = decode(field, v);
  if (value !== null && typeof value === 'object') return JSON.stringify(value);
  return value;
}

type Decoded = Cell | Decoded[] | { [key: string]: Decoded };

function decode(field: TableField, v: unknown): Decoded {
  if (v === null || v === undefined) return null;
  if (field.mode === 'REPEATED') {
    const items = Array.isArray(v) ? (v as Array<{ v?: unknown }>) : [];
    const element = { ...field, mode: 'NULLABLE' };
    return items.map((item) => decode(element, item?.v));
  }
  const type = typeName(field, false);
  if (type.startsWith('STRUCT')) {
    const cells = (v as Row).f ?? [];
    const out: Record<string, Decoded> = {};
    (field.fields ?? []).forEach((f, i) => {
      out[f.name ?? String(i)] = decode(f, cells[i]?.v);
    });
    return out;
  }
  const text = typeof v === 'string' ? v : String(v);
  switch (type) {
    case 'INT64': {
      const n = Number(text);
      return Number.isSafeInteger(n) ? n : text;
    }
    case 'FLOAT64': {
      const n = Number(text);
      return Number.isFinite(n) ? n : text; // NaN and Infinity are not JSON
    }
    case 'NUMERIC':
    case 'BIGNUMERIC':
    case 'DECIMAL':
    case 'BIGDECIMAL':
      return exactNumber(text);
    case 'BOOL':
      return text === 'true';
    case 'TIMESTAMP':
      return isoTimestamp(text);
    default:
      return text; // STRING, BYTES (base64), DATE, DATETIME, TIME, JSON, GEOGRAPHY, INTERVAL, RANGE
  }
}

/**
 * A TIMESTAMP as ISO-8601 in UTC, to the microsecond: from epoch microseconds (what we ask
 * for, exact) or epoch seconds as a float string (BigQuery's other format).
 */
export function isoTimestamp(text: string): string {
  let micros: bigint;
  if (/^-?\d+$/.test(text)) micros = BigInt(text);
  else {
    const seconds = Number(text);
    if (!Number.isFinite(seconds)) return text;
    micros = BigInt(Math.round(seconds * 1e6));
  }
  const MICROS = 1_000_000n;
  let secs = micros / MICROS;
  let frac = micros % MICROS;
  if (frac < 0n) {
    frac += MICROS;
    secs -= 1n;
  }
  const iso = new Date(Number(secs) * 1000).toISOString(); // 2024-01-05T08:00:00.000Z
  const fraction = frac === 0n ? '' : `.${frac.toString().padStart(6, '0')}`;
  return `${iso.slice(0, 19)}${fraction}Z`;
}

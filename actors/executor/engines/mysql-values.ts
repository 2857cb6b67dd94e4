/** MySQL / MariaDB values: column types named as the server would, and the text protocol's values decoded into JSON cells. */

import type { FieldPacket } from 'mysql2/promise';
import type { Cell, Column } from '../../../protocol/schemas/common.js';
import { exactNumber } from './values.js';

/** MySQL column flags (include/mysql_com.h). */
const FLAG = { UNSIGNED: 32, BINARY: 128, ENUM: 256, SET: 2048 } as const;
const BINARY_CHARSET = 63;

/** Column type codes (include/field_types.h). */
const T = {
  DECIMAL: 0, TINY: 1, SHORT: 2, LONG: 3, FLOAT: 4, DOUBLE: 5, NULL: 6, TIMESTAMP: 7, LONGLONG: 8, INT24: 9, DATE: 10, TIME: 11,
  DATETIME: 12, YEAR: 13, NEWDATE: 14, VARCHAR: 15, BIT: 16, TIMESTAMP2: 17, DATETIME2: 18, TIME2: 19, VECTOR: 242, JSON: 245,
  NEWDECIMAL: 246, ENUM: 247, SET: 248, TINY_BLOB: 249, MEDIUM_BLOB: 250, LONG_BLOB: 251, BLOB: 252, VAR_STRING: 253, STRING: 254,
  GEOMETRY: 255,
} as const;

function flagsOf(f: FieldPacket): number {
  return typeof f.flags === 'number' ? f.flags : 0;
}

function isBinary(f: FieldPacket): boolean {
  return f.characterSet === BINARY_CHARSET;
}

/** A name for the column's type, as a person would write it in DDL (`int unsigned`, `decimal`, `varchar`). */
export function typeName(f: FieldPacket): string {
  const flags = flagsOf(f);
  const unsigned = flags & FLAG.UNSIGNED ? ' unsigned' : '';
  if (f.extendedFormat === 'json') return 'json';
  if (f.extendedTypeName) return f.extendedTypeName; // MariaDB: uuid, inet4, inet6, point...
  switch (f.columnType) {
    case T.TINY: return `tinyint${unsigned}`;
    case T.SHORT: return `smallint${unsigned}`;
    case T.INT24: return `mediumint${unsigned}`;
    case T.LONG: return `int${unsigned}`;
    case T.LONGLONG: return `bigint${unsigned}`;
    case T.DECIMAL:
    case T.NEWDECIMAL: return `decimal${unsigned}`;
    case T.FLOAT: return `float${unsigned}`;
    case T.DOUBLE: return `double${unsigned}`;
    case T.BIT: return 'bit';
    case T.DATE:
    case T.NEWDATE: return 'date';
    case T.DATETIME:
    case T.DATETIME2: return 'datetime';
    case T.TIMESTAMP:
    case T.TIMESTAMP2: return 'timestamp';
    case T.TIME:
    case T.TIME2: return 'time';
    case T.YEAR: return 'year';
    case T.NULL: return 'null';
    case T.JSON: return 'json';
    case T.ENUM: return 'enum';
    case T.SET: return 'set';
    case T.GEOMETRY: return 'geometry';
    case T.VECTOR: return 'vector';
    case T.VARCHAR:
    case T.VAR_STRING: return isBinary(f) ? 'varbinary' : 'varchar';
    case T.STRING:
      if (flags & FLAG.ENUM) return 'enum';
      if (flags & FLAG.SET) return 'set';
      return isBinary(f) ? 'binary' : 'char';
    case T.TINY_BLOB:
    case T.MEDIUM_BLOB:
    case T.LONG_BLOB:
    case T.BLOB: return isBinary(f) ? 'blob' : 'text';
    default: return `type ${String(f.columnType)}`;
  }
}

export function columnOf(f: FieldPacket): Column {
  return { name: f.name, type: typeName(f) };
}

type Converter = (v: unknown) => Cell;

const asFloat = (text: string): Cell => {
  const n = Number(text);
  return Number.isFinite(n) ? n : text;
};

/** How a column's values become JSON scalars. */
export function converterFor(f: FieldPacket): Converter {
  switch (f.columnType) {
    case T.TINY:
    case T.SHORT:
    case T.INT24:
    case T.LONG:
    case T.YEAR:
    case T.LONGLONG:
    case T.DECIMAL:
    case T.NEWDECIMAL:
      return (v) => (v === null || v === undefined ? null : exactNumber(String(v)));
    case T.FLOAT:
    case T.DOUBLE:
      return (v) => (v === null || v === undefined ? null : typeof v === 'number' ? (Number.isFinite(v) ? v : String(v)) : asFloat(String(v)));
    case T.BIT:
      return (v) => (Buffer.isBuffer(v) ? bitValue(v) : v === null || v === undefined ? null : String(v));
    default:
      return (v) => {
        if (v === null || v === undefined) return null;
        if (Buffer.isBuffer(v)) return `0x${v.toString('hex')}`;
        if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
        return JSON.stringify(v);
      };
  }
}

/** BIT(n) bytes (big-endian) → a number when exact, else its decimal text. */
function bitValue(b: Buffer): Cell {
  let n = 0n;
  for (const byte of b) n = (n << 8n) | BigInt(byte);
  return n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString();
}

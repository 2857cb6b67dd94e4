/** PostgreSQL values: pg's text format decoded into JSON cells (numbers exact or kept as text). */

import type pg from 'pg';
import type { Cell } from '../../../protocol/schemas/common.js';
import { exactNumber } from './values.js';

const OID = { bool: 16, int8: 20, int2: 21, int4: 23, oid: 26, float4: 700, float8: 701, numeric: 1700 } as const;

const asText = (text: string): Cell => text;
const asBoolean = (text: string): Cell => text === 't';
const asFloat = (text: string): Cell => {
  const n = Number(text);
  return Number.isFinite(n) ? n : text; // NaN and Infinity are not JSON
};

/** Per-pool parsers (text format): numbers and booleans decoded, everything else the server's text. */
function resultParser(oid: number): (text: string) => Cell {
  switch (oid) {
    case OID.bool:
      return asBoolean;
    case OID.int2:
    case OID.int4:
    case OID.oid:
    case OID.float4:
    case OID.float8:
      return asFloat;
    case OID.int8:
    case OID.numeric:
      return exactNumber;
    default:
      return asText; // dates, timestamps, json, arrays, bytea, uuid, intervals...
  }
}

// The typings want pg-types' overloaded signature; ours answers the text format for every oid.
export const RESULT_TYPES = { getTypeParser: resultParser } as unknown as pg.CustomTypesConfig;

/**
 * The lineage parser's worker thread (isolated.ts starts it through lineage-worker-entry.mjs):
 * the statement read into the lineage model (dialects.ts parseForLineage), so a parser that
 * overflows, traps or loops does it here and not on the masking actor's event loop.
 *
 * The model comes back as plain data (a structured clone). One nested deeper than
 * MAX_QUERY_NESTING objects is sent back as the opaque query instead: the resolver on the main
 * thread (lineage.ts) walks it recursively, and so does the clone itself, so neither meets a
 * tree deeper than it can walk. The depth is measured here without recursion.
 */
import { parserBroke } from '../lib/sql-parsers/failure.js';
import { serveParsers } from '../lib/sql-parsers/serve.js';
import type { Dialect } from '../../protocol/schemas/common.js';
import { parseForLineage, prepareParsers } from './dialects.js';
import { OPAQUE_QUERY, type Query } from './lineage.js';

/** Objects nested in the model, at most (a subquery level is about six; lineage.ts stops at 64 levels anyway). */
export const MAX_QUERY_NESTING = 1_000;

export interface LineageJob {
  sql: string;
  dialect: Dialect;
}

function lineage(job: LineageJob): Query {
  let query: Query;
  try {
    query = parseForLineage(job.sql, job.dialect);
  } catch (err) {
    if (parserBroke(err)) throw err; // the worker is replaced
    return OPAQUE_QUERY; // a reader of ours that failed: unknown lineage, as in process
  }
  return deeperThan(query, MAX_QUERY_NESTING) ? OPAQUE_QUERY : query;
}

/** Whether objects and arrays nest deeper than `max` in `root` (iterative). */
export function deeperThan(root: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[root, 1]];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const [value, depth] = item;
    if (depth > max) return true;
    if (value instanceof Map || value instanceof Set) {
      for (const v of value.values()) if (v !== null && typeof v === 'object') stack.push([v, depth + 1]);
    } else if (Array.isArray(value)) {
      for (const v of value) if (v !== null && typeof v === 'object') stack.push([v, depth + 1]);
    } else if (value !== null && typeof value === 'object') {
      for (const v of Object.values(value)) if (v !== null && typeof v === 'object') stack.push([v, depth + 1]);
    }
  }
  return false;
}

await serveParsers({ lineage }, { prepare: prepareParsers });

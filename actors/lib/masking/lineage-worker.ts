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
import { parserBroke } from '../sql/parsers/failure.js';
import { serveParsers } from '../sql/parsers/serve.js';
import type { Dialect } from '../../../protocol/schemas/common.js';
import { parseForLineage, prepareParsers } from './dialects.js';
import { OPAQUE_QUERY, type Query } from './lineage.js';
import { deeperThan, MAX_QUERY_NESTING } from './depth.js';

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

await serveParsers({ lineage }, { prepare: prepareParsers });

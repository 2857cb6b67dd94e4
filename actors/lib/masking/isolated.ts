/**
 * The lineage parse as the masking actor runs it: in a worker thread (lineage-worker.ts, on
 * actors/lib/sql/parsers/pool.ts), never on the event loop, bounded in size, time and memory
 * (issue 24, class E; docs/security.md "Parsers cannot be taken down").
 *
 * Masking fails closed, here as everywhere: SQL longer than MAX_SQL_CHARS, a parse that runs
 * past LINEAGE_TIMEOUT_MS (its worker is ended and replaced), a parser that breaks, a worker
 * that runs out of memory or is not free in time all give the opaque query, so every column is
 * of unknown lineage and masked whenever a rule is active. Never unmasked.
 */
import type { Logger } from '../../../runtime/log.js';
import type { Dialect } from '../../../protocol/schemas/common.js';
import { ParserPool } from '../sql/parsers/pool.js';
import { OPAQUE_QUERY, type Query } from './lineage.js';
import type { LineageJob } from './lineage-worker.js';

/** The longest SQL read for lineage (the guard's bound: executor/guard/isolated.ts). */
export const MAX_SQL_CHARS = 100_000;
/** How long one parse may take in its worker. */
export const LINEAGE_TIMEOUT_MS = 2_000;

const pool = new ParserPool({
  name: 'lineage',
  source: new URL('./lineage-worker.ts', import.meta.url),
  entry: new URL('./lineage-worker-entry.mjs', import.meta.url),
  size: 1,
  timeoutMs: LINEAGE_TIMEOUT_MS,
});

/** Start the worker (the masking actor at its start) and wait until it has loaded its parsers. */
export async function startLineageWorkers(log?: Logger): Promise<void> {
  if (log) pool.useLogger(log);
  await pool.start();
}

/** End the worker (tests); the next parse starts it again. */
export function stopLineageWorkers(): Promise<void> {
  return pool.close();
}

/** Replacements since the start, by reason (tests, bench). */
export function lineageWorkerRestarts(): ReadonlyMap<string, number> {
  return pool.restarts;
}

/** The statement in the lineage model, read in a worker; the opaque query whenever it cannot be read safely. */
export async function lineageQuery(sql: string, dialect: Dialect): Promise<Query> {
  if (sql.length > MAX_SQL_CHARS) return OPAQUE_QUERY;
  const job: LineageJob = { sql, dialect };
  try {
    return await pool.run<Query>('lineage', job);
  } catch {
    return OPAQUE_QUERY;
  }
}

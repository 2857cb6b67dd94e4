/**
 * One guard job as the executor runs it: the dialect's guard, then the catalog lock, then the
 * aggregate verdict, then (with `lineage`, for masking) the statement's lineage model, on plain
 * data. The guard's worker (worker.ts) runs it for every SQL; the event loop runs it itself only
 * for PostgreSQL statements that inline.ts proves small.
 *
 * The lineage of a PostgreSQL statement is read from the guard's own parse (its tree, handed over
 * by `onParsed`): one parse for both, in the same thread, bounded the same way. Other dialects'
 * lineage is read by the masking library's own worker (lib/masking/isolated.ts).
 */
import type { Dialect } from '../../../protocol/schemas/common.js';
import { parserBroke } from '../../lib/sql/parsers/failure.js';
import { deeperThan, MAX_QUERY_NESTING } from '../../lib/masking/depth.js';
import { OPAQUE_QUERY, type Query } from '../../lib/masking/lineage.js';
import { pgQueryOfStatement } from '../../lib/masking/lineage-pg.js';
import { aggregateOf, type AggregateVerdict } from './aggregate.js';
import { checkCatalogLock, type CatalogLock } from './catalog-lock.js';
import { guardSql, type GuardLimits, type GuardResult } from './index.js';

export interface GuardJob {
  sql: string;
  dialect: Dialect;
  limits: GuardLimits;
  /** the request's catalog lock, when one applies */
  lock?: CatalogLock;
  /** also the aggregate verdict (sql.check with expect 'aggregate') */
  aggregate?: boolean;
  /** also the lineage model of the statement, for masking (PostgreSQL only: see lineageReused) */
  lineage?: boolean;
}

export interface GuardAnswer {
  guarded: GuardResult;
  verdict?: AggregateVerdict;
  /** with `lineage` on a dialect whose guard parse it reuses */
  lineage?: Query;
}

/** Whether the guard's parse of this dialect is the one lineage reads (PostgreSQL's parser for both). */
export function lineageReused(dialect: Dialect): boolean {
  return dialect === 'postgresql';
}

export function runGuardJob(job: GuardJob): GuardAnswer {
  let tree: unknown;
  const reuse = job.lineage === true && lineageReused(job.dialect);
  const limits: GuardLimits = reuse ? { ...job.limits, onParsed: (stmt) => { tree = stmt; } } : job.limits;
  const guarded = guardSql(job.sql, job.dialect, limits);
  if (job.lock) checkCatalogLock(guarded.runSql, job.lock);
  const lineage = reuse ? lineageOf(tree, job.dialect) : undefined;
  const answer: GuardAnswer = lineage ? { guarded, lineage } : { guarded };
  if (!job.aggregate) return answer;
  return { ...answer, verdict: aggregateOf(job.sql, job.dialect) };
}

/** The lineage model of the guard's tree; the opaque query (every column masked) when it cannot be read or is too deep to cross a thread. */
function lineageOf(tree: unknown, dialect: Dialect): Query {
  if (tree === undefined) return OPAQUE_QUERY;
  let query: Query;
  try {
    query = pgQueryOfStatement(tree, dialect);
  } catch (err) {
    if (parserBroke(err)) throw err; // the worker is replaced (isolated.ts)
    return OPAQUE_QUERY;
  }
  return deeperThan(query, MAX_QUERY_NESTING) ? OPAQUE_QUERY : query;
}

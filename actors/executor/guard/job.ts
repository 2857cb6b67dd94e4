/**
 * One guard job as the executor runs it: the dialect's guard, then the catalog lock, then the
 * aggregate verdict, on plain data. The guard's worker (worker.ts) runs it for every SQL; the
 * event loop runs it itself only for PostgreSQL statements that inline.ts proves small.
 */
import type { Dialect } from '../../../protocol/schemas/common.js';
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
}

export interface GuardAnswer {
  guarded: GuardResult;
  verdict?: AggregateVerdict;
}

export function runGuardJob(job: GuardJob): GuardAnswer {
  const guarded = guardSql(job.sql, job.dialect, job.limits);
  if (job.lock) checkCatalogLock(guarded.runSql, job.lock);
  if (!job.aggregate) return { guarded };
  return { guarded, verdict: aggregateOf(job.sql, job.dialect) };
}

/**
 * The guard's worker thread (isolated.ts starts it through worker-entry.mjs): the dialect's
 * guard, then the catalog lock, then the aggregate verdict, all on plain data, so a parser that
 * overflows, traps or loops does it here and not on the executor's event loop. Loads the
 * PostgreSQL (WASM) and MySQL/MariaDB parsers before it says it is ready.
 */
import { serveParsers } from '../../lib/sql-parsers/serve.js';
import type { Dialect } from '../../../protocol/schemas/common.js';
import { aggregateOf, type AggregateVerdict } from './aggregate.js';
import { adoptMysqlAllowListState } from './allow-mysql.js';
import { adoptPostgresAllowListState, type AllowListCopy } from './allow-postgresql.js';
import { checkCatalogLock, type CatalogLock } from './catalog-lock.js';
import { guardSql, prepareGuard, type GuardLimits, type GuardResult } from './index.js';

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

function guard(job: GuardJob): GuardAnswer {
  const guarded = guardSql(job.sql, job.dialect, job.limits);
  if (job.lock) checkCatalogLock(guarded.runSql, job.lock);
  if (!job.aggregate) return { guarded };
  return { guarded, verdict: aggregateOf(job.sql, job.dialect) };
}

await serveParsers({ guard }, {
  prepare: async () => {
    await prepareGuard('postgresql');
    await prepareGuard('mysql');
  },
  state: (key, value) => {
    if (key === 'allowList') adoptPostgresAllowListState(value as AllowListCopy);
    if (key === 'mysqlAllowList') adoptMysqlAllowListState(value as Map<string, string[]>);
  },
});

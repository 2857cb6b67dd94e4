/**
 * The guard's worker thread (isolated.ts starts it through worker-entry.mjs): the guard job
 * (job.ts: the dialect's guard, then the catalog lock, then the aggregate verdict), so a parser
 * that overflows, traps or loops does it here and not on the executor's event loop. Loads the
 * PostgreSQL (WASM) and MySQL/MariaDB parsers before it says it is ready.
 */
import { serveParsers } from '../../lib/sql/parsers/serve.js';
import { adoptMysqlAllowListState } from './allow-mysql.js';
import { adoptPostgresAllowListState, type AllowListCopy } from './allow-postgresql.js';
import { prepareGuard } from './index.js';
import { runGuardJob, type GuardAnswer, type GuardJob } from './job.js';

export type { GuardAnswer, GuardJob } from './job.js';

function guard(job: GuardJob): GuardAnswer {
  return runGuardJob(job);
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

/**
 * The guard as the executor runs it: in worker threads (worker.ts, on actors/lib/sql/parsers/
 * pool.ts), never on the event loop, bounded in size, time and memory (issue 24, class E; see
 * docs/security.md "Parsers cannot be taken down").
 *
 * - Size: SQL longer than MAX_SQL_CHARS (100,000 characters, the cap of export and schedule
 *   SQL) is refused before any parser sees it.
 * - Time: one check may take GUARD_TIMEOUT_MS (2 s); past it the worker is ended and replaced,
 *   and the SQL refused as too complex to check.
 * - Memory and stack: each worker has a 256 MB heap and a 16 MB stack (pool.ts): enough for
 *   libpg-query to read the deepest expression 100,000 characters can write (`1+1+…`, 50,000
 *   levels, which overflow the main thread's 1 MB); a worker that runs out anyway, or whose
 *   parser breaks otherwise, is replaced and the SQL refused the same way. The next question gets a fresh worker: one SQL cannot break the
 *   parser for the questions after it.
 *
 * Refusals are SQL_REJECTED with `details.kind` `parse` and a reason a person can read; a
 * question that waited too long for a free worker gets TIMEOUT (retryable). What the guard
 * itself refuses (not_select, function_not_allowed, ...) comes back unchanged.
 *
 * The allow-lists as the database tightened them (allow-postgresql.ts and allow-mysql.ts, at
 * start and at each scope's start) live in this process; each worker gets a copy when they change.
 *
 * One exception, for what it saves per question: a PostgreSQL statement that a linear scan
 * proves small (inline.ts: at most 2,000 characters, brackets 16 deep, 100 operator characters)
 * is checked here, on the event loop, with the same job (job.ts); inline.ts argues why that
 * cannot overflow, loop or stall. If the parser breaks here anyway, checking here stops for the
 * life of the process and the workers take every statement.
 *
 * The in-process guard (index.ts `guardSql`) stays for tests and tools that check a trusted
 * text; everything that checks a user's or a model's SQL comes through here.
 */
import { CortadoError } from '../../../protocol/errors.js';
import type { Logger } from '../../../runtime/log.js';
import type { Dialect } from '../../../protocol/schemas/common.js';
import { countParserRestart } from '../../../runtime/metrics.js';
import { ParserFailure, ParserPool } from '../../lib/sql/parsers/pool.js';
import type { AggregateVerdict } from './aggregate.js';
import { mysqlAllowListState } from './allow-mysql.js';
import { postgresAllowListState, type AllowListCopy } from './allow-postgresql.js';
import type { CatalogLock } from './catalog-lock.js';
import { rejected, type GuardLimits, type GuardResult } from './types.js';
import { prepareGuard } from './index.js';
import { boundedForInline } from './inline.js';
import { runGuardJob, type GuardAnswer, type GuardJob } from './job.js';
import type { Query } from '../../lib/masking/lineage.js';

/** The longest SQL the guard reads (characters). */
export const MAX_SQL_CHARS = 100_000;
/** How long one check may take in its worker. */
export const GUARD_TIMEOUT_MS = 2_000;
/** Workers per process: one question that takes its full time does not hold up the others. */
const WORKERS = 2;

const pool = new ParserPool({
  name: 'guard',
  source: new URL('./worker.ts', import.meta.url),
  entry: new URL('./worker-entry.mjs', import.meta.url),
  size: WORKERS,
  timeoutMs: GUARD_TIMEOUT_MS,
});

/** The event loop's own PostgreSQL parser: loading, loaded, or given up after it broke (inline.ts). */
let inline: 'off' | 'loading' | 'ready' | 'broken' = 'off';
let log: Logger | undefined;
/** checks by where they ran (tests, bench) */
const checked = { inline: 0, worker: 0 };

/** the versions of the allow-lists' changes the workers were last given (allow-postgresql.ts, allow-mysql.ts) */
let allowListSent = -1;
let mysqlAllowListSent = -1;

/** Start the workers (the executor at its start) and wait until one has loaded its parsers. */
export async function startGuardWorkers(logger?: Logger): Promise<void> {
  if (logger) {
    log = logger;
    pool.useLogger(logger);
  }
  await Promise.all([pool.start(), loadInline()]);
}

/** Load the PostgreSQL parser on the event loop too (once); until it is there, the workers check everything. */
function loadInline(): Promise<void> {
  if (inline !== 'off') return Promise.resolve();
  inline = 'loading';
  return prepareGuard('postgresql').then(
    () => {
      if (inline === 'loading') inline = 'ready';
    },
    (err: unknown) => {
      inline = 'broken';
      log?.warn({ err: (err as Error).message }, 'the PostgreSQL parser did not load on the event loop: the guard\'s workers check every statement');
    },
  );
}

/** End the workers (tests); the next check starts them again. */
export function stopGuardWorkers(): Promise<void> {
  checked.inline = 0;
  checked.worker = 0;
  allowListSent = -1;
  mysqlAllowListSent = -1;
  return pool.close();
}

/** Replacements since the start, by reason (tests, bench). */
export function guardWorkerRestarts(): ReadonlyMap<string, number> {
  return pool.restarts;
}

/** How many checks ran on the event loop and in the workers since the start, and whether the event loop still checks (tests, bench). */
export function guardPlaces(): { inline: number; worker: number; inlineState: typeof inline } {
  return { ...checked, inlineState: inline };
}

export interface IsolatedGuard {
  guarded: GuardResult;
  /** with `aggregate: true`: is the first item an aggregate expression (aggregate.ts) */
  verdict?: AggregateVerdict;
  /** with `lineage: true` on a dialect whose guard parse lineage reuses (job.ts lineageReused): the lineage model for masking */
  lineage?: Query;
}

/**
 * The dialect's guard, then the catalog lock when `lock` is given, then (with `aggregate`) the
 * aggregate verdict, in a worker. Throws what the guard throws (SQL_REJECTED), SQL_REJECTED kind
 * `parse` when the SQL is too long or too complex to check, TIMEOUT when no worker was free.
 */
export async function guardIsolated(sql: string, dialect: Dialect, limits: GuardLimits, opts: { lock?: CatalogLock; aggregate?: boolean; lineage?: boolean } = {}): Promise<IsolatedGuard> {
  if (sql.length > MAX_SQL_CHARS) {
    throw rejected('parse', `the SQL is ${sql.length.toLocaleString('en')} characters long, and the guard reads at most ${MAX_SQL_CHARS.toLocaleString('en')}`, { length: sql.length });
  }
  const state = postgresAllowListState();
  if (state.version !== allowListSent) {
    const copy: AllowListCopy = { dropped: state.dropped, absent: state.absent, ...(state.attributeCalls ? { attributeCalls: state.attributeCalls } : {}) };
    pool.setState('allowList', copy);
    allowListSent = state.version;
  }
  const mysql = mysqlAllowListState();
  if (mysql.version !== mysqlAllowListSent) {
    pool.setState('mysqlAllowList', mysql.shadowed);
    mysqlAllowListSent = mysql.version;
  }
  const job: GuardJob = { sql, dialect, limits, ...(opts.lock ? { lock: opts.lock } : {}), ...(opts.aggregate ? { aggregate: true } : {}), ...(opts.lineage ? { lineage: true } : {}) };
  if (dialect === 'postgresql' && !opts.lock) {
    if (inline === 'off') void loadInline();
    if (inline === 'ready' && boundedForInline(sql)) {
      try {
        const answer = runGuardJob(job);
        checked.inline++;
        return answer;
      } catch (err) {
        if (err instanceof CortadoError) {
          checked.inline++;
          throw err; // the guard's own refusal
        }
        // the parser broke on a statement the scan let through: never again here (inline.ts)
        inline = 'broken';
        await Promise.resolve(); // go on from a fresh stack: this one may have just run out
        countParserRestart('guard', 'inline');
        log?.error({ err: `${(err as Error).name}: ${(err as Error).message}` }, 'the SQL guard\'s parser broke on the event loop: from now on every statement is checked in the guard\'s workers');
      }
    }
  }
  checked.worker++;
  try {
    return await pool.run<GuardAnswer>('guard', job);
  } catch (err) {
    if (err instanceof ParserFailure) throw refusal(err);
    throw err;
  }
}

function refusal(err: ParserFailure): CortadoError {
  const secs = GUARD_TIMEOUT_MS / 1000;
  switch (err.reason) {
    case 'timeout':
      return rejected('parse', `the SQL is too complex to check safely: checking it took longer than ${secs} seconds, so it was refused (write it simpler: fewer nested expressions)`, { parser: 'timeout' });
    case 'memory':
      return rejected('parse', 'the SQL is too complex to check safely: checking it needed more memory than the guard may use, so it was refused', { parser: 'memory' });
    case 'unavailable':
      return new CortadoError('TIMEOUT', 'the SQL could not be checked in time: the SQL guard is busy; try again');
    default:
      return rejected('parse', 'the SQL is too complex to check safely: the parser gave up on it (an expression nested too deeply or too long), so it was refused', { parser: err.reason });
  }
}

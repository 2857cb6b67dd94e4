/**
 * Ending a PostgreSQL query Cortado gave up on, and making sure it ended (issue 24, class F).
 *
 * statement_timeout, pg_cancel_backend and pg_terminate_backend all take effect only where the
 * server's code checks for interrupts; a function with a long loop that never checks (ts_headline
 * choosing among many fragments, ts_rank over a long query: guard/allow-postgresql.ts
 * UNCANCELLABLE) keeps its backend busy, holding a connection and its locks, long after the
 * caller had DB_TIMEOUT. So after the cancel, from a connection of its own:
 *
 *   1. note the backend's query_start (state active), then pg_cancel_backend(pid);
 *   2. look at pg_stat_activity for that pid, running that same query, every POLL_MS for
 *      `cancelWaitMs`: gone → `stopped`;
 *   3. else pg_terminate_backend(pid), and look again for `terminateWaitMs`: gone → `terminated`,
 *      still there → `still_running` (an error in the log: the server is still computing).
 *
 * The outcome is counted and logged (cancel-watch.ts: cortado_db_cancel_total{engine="postgresql",
 * outcome}, with the pid, never the SQL). The connection of a backend Cortado gave up on never
 * goes back to a pool (the engines drop it).
 */
import pg from 'pg';
import type { Logger } from '../../../runtime/log.js';
import type { DbCancelOutcome } from '../../../runtime/metrics.js';
import { CANCEL_WAIT_MS, TERMINATE_WAIT_MS, recordCancel, stillAfter } from './cancel-watch.js';
import { toDbError } from './postgresql-errors.js';

export interface StopOptions {
  /** opens a connection of the same role to the same database (not one of a pool) */
  connect: () => pg.Client;
  log: Logger;
  cancelWaitMs?: number;
  terminateWaitMs?: number;
  /** called once pg_cancel_backend has been sent (or could not be): the caller may answer then */
  onCancelled?: () => void;
}

/**
 * Cancel the query the backend `pid` runs, then watch that it stops (see the top of this file).
 * Never throws; undefined when the outcome could not be seen (no connection for the check).
 */
export async function stopBackend(pid: number, o: StopOptions): Promise<DbCancelOutcome | undefined> {
  const started = performance.now();
  let told = false;
  const tell = (): void => {
    if (told) return;
    told = true;
    o.onCancelled?.();
  };
  const other = o.connect();
  other.on('error', () => undefined); // a failure reaches the query below; unheard, it would end the process
  try {
    await other.connect();
    const running = await other.query<{ start: string }>(
      "SELECT query_start::text AS start FROM pg_catalog.pg_stat_activity WHERE pid = $1 AND state = 'active'",
      [pid],
    );
    const start = running.rows[0]?.start;
    await other.query('SELECT pg_catalog.pg_cancel_backend($1)', [pid]);
    tell();
    if (start === undefined) return record(o.log, pid, 'stopped', started); // it ended before the cancel
    const stillActive = async (): Promise<boolean> => {
      const r = await other.query("SELECT 1 FROM pg_catalog.pg_stat_activity WHERE pid = $1 AND state = 'active' AND query_start::text = $2", [pid, start]);
      return r.rows.length > 0;
    };
    if (!(await stillAfter(stillActive, o.cancelWaitMs ?? CANCEL_WAIT_MS))) return record(o.log, pid, 'stopped', started);
    // only that backend still running that query (a pid can be another backend's once it ended)
    await other.query(
      "SELECT pg_catalog.pg_terminate_backend(pid) FROM pg_catalog.pg_stat_activity WHERE pid = $1 AND state = 'active' AND query_start::text = $2",
      [pid, start],
    );
    if (!(await stillAfter(stillActive, o.terminateWaitMs ?? TERMINATE_WAIT_MS))) return record(o.log, pid, 'terminated', started);
    return record(o.log, pid, 'still_running', started);
  } catch (err) {
    o.log.warn({ pid, err: toDbError(err).message }, 'cannot cancel the query, nor see whether it stopped');
    return undefined;
  } finally {
    tell();
    await other.end().catch(() => undefined);
  }
}

function record(log: Logger, pid: number, outcome: DbCancelOutcome, started: number): DbCancelOutcome {
  return recordCancel({ engine: 'postgresql', log, who: { pid }, outcome, started });
}

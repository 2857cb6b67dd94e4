/**
 * What the engines share when they watch a query they cancelled (issue 24, class F): how long to
 * wait, the polling, and how an outcome is told — counted in cortado_db_cancel_total{engine,
 * outcome} and logged with the session's id and how long it took, never the SQL (its literals may
 * be data). PostgreSQL: pg-cancel.ts; MySQL/MariaDB: mysql.ts `stopThread`.
 */
import type { Logger } from '../../../runtime/log.js';
import { countDbCancel, type DbCancelOutcome } from '../../../runtime/metrics.js';

/** How long a cancelled query has to end before its session is ended, and then to end after that. */
export const CANCEL_WAIT_MS = 2_000;
export const TERMINATE_WAIT_MS = 2_000;
const POLL_MS = 100;

/** Whether `active()` still holds once `ms` have passed, looking every POLL_MS (false as soon as it does not). */
export async function stillAfter(active: () => Promise<boolean>, ms: number): Promise<boolean> {
  const until = performance.now() + ms;
  for (;;) {
    if (!(await active())) return false;
    if (performance.now() >= until) return true;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

export interface CancelRecord {
  engine: string;
  log: Logger;
  /** the session: `{ pid }` (PostgreSQL), `{ thread }` (MySQL) */
  who: Record<string, number>;
  outcome: DbCancelOutcome;
  /** performance.now() when the cancel began */
  started: number;
}

/** Count and log what became of a cancelled query; returns the outcome. */
export function recordCancel(r: CancelRecord): DbCancelOutcome {
  countDbCancel(r.engine, r.outcome);
  const line = { ...r.who, engine: r.engine, outcome: r.outcome, ms: Math.round(performance.now() - r.started) };
  if (r.outcome === 'stopped') r.log.info(line, 'the cancelled query stopped');
  else if (r.outcome === 'terminated') r.log.warn(line, 'the cancelled query ignored the cancel: its session was ended');
  else {
    r.log.error(
      line,
      'the cancelled query ignores cancel and terminate: the database keeps computing it (it holds a session and its locks until it ends); a function that does not check for interrupts is the likely cause',
    );
  }
  return r.outcome;
}

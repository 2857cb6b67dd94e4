/**
 * Retention of the executions, in every scheduler process, whatever `scheduler.enabled` says
 * (Run Now keeps history too, and the leader only runs while firing is on).
 *
 * Every RETENTION_MS by the scheduler's clock (the first pass a few seconds after start):
 * 1. an execution still `queued` STALE_QUEUED_MS after it was recorded is never going to run
 *    (a leader stopped between recording a tick and queueing it and `missed: skip` moved past
 *    the tick, or the queue lost it): it is marked done and failed with STALE_MESSAGE;
 * 2. finished executions older than `scheduler.keep_history_days` (by execution_time) and, per
 *    schedule, beyond the newest `scheduler.max_executions_per_schedule` are deleted.
 * Both are single statements any number of processes may run at once (the same rows end up
 * failed or deleted once); the two settings are read at each pass, so a runtime change applies
 * at the next one.
 */
import type { Logger } from '../../runtime/log.js';
import type { Config } from '../../config/schema.js';
import type { ExecutionsRepository } from '../../store/schedules.js';

/** how often old executions are pruned */
export const RETENTION_MS = 10 * 60_000;
/** a run still queued this long after it was recorded counts as failed (and is then pruned like any other) */
export const STALE_QUEUED_MS = 24 * 3_600_000;
/** how often the clock is looked at (a test's clock may jump) */
const CHECK_MS = 2_000;

export const STALE_MESSAGE = 'This run never started: it was still waiting in the queue a day after it was recorded (a scheduler process stopped before handing it to a worker, or the queue lost it). It was not run; later runs are not affected.';

export interface RetentionDeps {
  config: Pick<Config, 'scheduler'>;
  log: Logger;
  executions: Pick<ExecutionsRepository, 'prune' | 'failStale'>;
  /** the clock the ages are counted by (tests inject one; the product uses Date.now) */
  now: () => number;
}

export class Retention {
  private timer: NodeJS.Timeout | undefined;
  private pass: Promise<void> | undefined;
  private last = -Infinity;

  constructor(private readonly deps: RetentionDeps) {}

  start(): void {
    this.timer = setInterval(() => {
      if (this.pass || this.deps.now() - this.last < RETENTION_MS) return;
      this.pass = this.prune().catch((err: unknown) => {
        this.deps.log.warn({ err: (err as Error).message }, 'pruning schedule executions failed: trying again at the next pass');
      }).finally(() => { this.pass = undefined; });
    }, CHECK_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.pass;
  }

  /** One pass: fail the stale queued runs, then delete what the settings no longer keep. */
  async prune(): Promise<void> {
    const { config, log, executions } = this.deps;
    const at = this.deps.now();
    this.last = at;
    const now = new Date(at);
    const failed = await executions.failStale(new Date(at - STALE_QUEUED_MS), STALE_MESSAGE, now);
    if (failed > 0) log.warn({ failed }, 'schedule runs still queued a day after they were due: marked failed');
    const sc = config.scheduler;
    const deleted = await executions.prune(sc.keep_history_days, sc.max_executions_per_schedule, now);
    if (deleted > 0) log.info({ deleted }, 'old schedule executions pruned (keep_history_days, max_executions_per_schedule)');
  }
}

/**
 * Evaluating alarms on their crons, by one leader among every alarms process.
 *
 * The lease is actors/lib/jobs/lease.ts's (the scheduler's too), in the JetStream KV bucket
 * Bucket.AlarmsLease. Without JetStream every process evaluates (said in the log).
 *
 * Leading or not, a tick is evaluated once: handle.ts's `evaluate` claims it on the alarm in the
 * store first (the file under its lock, or the row under FOR UPDATE), so two leaders for a
 * moment, or processes without a lease, never both evaluate the same tick nor notify twice.
 *
 * While leader, every TICK_MS: for each enabled alarm, the newest tick of its cron in
 * (evaluated_through — else its creation —, now]; when there is one it is evaluated now. Ticks
 * missed while every process was down are one evaluation, not one per tick: an alarm says what
 * is true now. At most MAX_PARALLEL evaluations at once; an alarm still being evaluated is not
 * started again.
 */
import type { Kv } from '../../runtime/kv.js';
import { toCortadoError } from '../../protocol/errors.js';
import { newestRun, parseCron } from '../lib/jobs/cron.js';
import { LeaderLease, type LeaseValue } from '../lib/jobs/lease.js';
import type { AlarmRecord } from '../../store/index.js';
import { evaluate, type AlarmsDeps } from './handle.js';

const TICK_MS = 1_000;
const MAX_PARALLEL = 4;

/** The tick an alarm is due for now, if any (its cron unreadable: undefined, reported by the caller). */
export function dueTick(a: AlarmRecord, now: Date): Date | undefined {
  const c = parseCron(a.cron, a.timezone);
  return newestRun(c, new Date(a.evaluated_through ?? a.created_at), now);
}

export class Evaluator {
  private readonly lease: LeaderLease;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private passing = false;
  private readonly running = new Map<string, Promise<unknown>>();
  private readonly badCron = new Set<string>();
  /** why the last pass failed (logged once per distinct reason) */
  private passError: string | undefined;

  /**
   * Without a lease this process evaluates alone (memory of its own, or no JetStream). `tickMs`:
   * how often it looks for due alarms (tests look more often than the product's second).
   */
  constructor(private readonly deps: AlarmsDeps, lease?: Kv<LeaseValue>, private readonly tickMs = TICK_MS) {
    this.lease = new LeaderLease(lease, deps.log, { role: 'alarms leader', leading: 'this process evaluates the alarms', paused: 'evaluations paused' });
  }

  get id(): string {
    return this.lease.id;
  }

  get isLeader(): boolean {
    return this.lease.isLeader;
  }

  start(): void {
    this.lease.start();
    this.timer = setInterval(() => {
      if (this.passing || !this.isLeader || this.stopped) return;
      this.passing = true;
      this.pass().then(() => {
        if (this.passError !== undefined) this.deps.log.info('the alarms can be read again: evaluating');
        this.passError = undefined;
      }, (err: unknown) => {
        // once per distinct reason (a corrupt file fails every second until someone fixes it)
        const message = toCortadoError(err).message;
        if (message !== this.passError) this.deps.log.warn({ err: message }, 'an alarms pass failed: trying again every second (logged again only when the reason changes)');
        this.passError = message;
      }).finally(() => { this.passing = false; });
    }, this.tickMs);
  }

  async stop(deadlineMs: number): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.lease.halt();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.running.values()]), new Promise((r) => { timer = setTimeout(r, deadlineMs); })]);
    clearTimeout(timer);
    await this.lease.release();
  }

  /** One pass: start the evaluations that are due (at most MAX_PARALLEL at once). */
  async pass(): Promise<void> {
    const now = new Date(this.deps.now());
    const all = await this.deps.store.list();
    for (const a of all) {
      if (this.stopped || !this.isLeader) return;
      if (!a.enabled || this.running.has(a.id)) continue;
      if (this.running.size >= MAX_PARALLEL) await Promise.race(this.running.values());
      let tick: Date | undefined;
      try {
        tick = dueTick(a, now);
        this.badCron.delete(a.id);
      } catch (err) {
        if (!this.badCron.has(a.id)) this.deps.log.warn({ alarm: a.id, err: (err as Error).message }, 'an alarm with a cron that does not parse: not evaluated');
        this.badCron.add(a.id);
        continue;
      }
      if (!tick) continue;
      const p = evaluate(a.id, tick.toISOString(), this.deps)
        .catch((err: unknown) => {
          this.deps.log.warn({ alarm: a.id, err: toCortadoError(err).message }, 'an alarm evaluation failed: tried again at its next tick');
        })
        .finally(() => { this.running.delete(a.id); });
      this.running.set(a.id, p);
    }
  }

  /** Wait for the evaluations under way (tests). */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.running.values()]);
  }
}

/**
 * Evaluating alarms on their crons, by one leader among every alarms process.
 *
 * The lease is the scheduler's pattern (actors/scheduler/leader.ts) with a key of its own, in the
 * JetStream KV bucket Bucket.AlarmsLease: every RENEW_MS each process writes the key by
 * compare-and-set when it is absent or its own; the bucket's TTL ends the lease of a leader that
 * stopped renewing (killed, cut off); a leader that stops cleanly gives it back. Without
 * JetStream every process evaluates (said in the log).
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
import { randomUUID } from 'node:crypto';
import type { Kv } from '../../protocol/kv.js';
import { toCortadoError } from '../../protocol/errors.js';
import { parseCron, runsBetween, type ParsedCron } from '../lib/cron.js';
import type { AlarmRecord } from '../../store/index.js';
import { evaluate, type AlarmsDeps } from './handle.js';

export const LEASE_TTL_MS = 10_000;
const RENEW_MS = 2_000;
const TICK_MS = 1_000;
const MAX_PARALLEL = 4;
const LEASE_KEY = 'leader';

export interface LeaseValue {
  holder: string;
  n: number;
}

/** The newest run time in (from, to], looking back in growing windows. */
export function newestTick(c: ParsedCron, from: Date, to: Date): Date | undefined {
  for (const span of [2 * 3_600_000, 40 * 86_400_000, 400 * 86_400_000]) {
    const start = new Date(Math.max(from.getTime(), to.getTime() - span));
    let cursor = start;
    let last: Date | undefined;
    for (let i = 0; i < 50; i++) {
      const batch = runsBetween(c, cursor, to);
      if (batch.length === 0) break;
      last = batch[batch.length - 1];
      cursor = last as Date;
    }
    if (last) return last;
    if (start.getTime() <= from.getTime()) return undefined;
  }
  return undefined;
}

/** The tick an alarm is due for now, if any (its cron unreadable: undefined, reported by the caller). */
export function dueTick(a: AlarmRecord, now: Date): Date | undefined {
  const c = parseCron(a.cron, a.timezone);
  return newestTick(c, new Date(a.evaluated_through ?? a.created_at), now);
}

export class Evaluator {
  readonly id = randomUUID();
  private leading = false;
  private renewedAt = 0;
  private n = 0;
  private timers: NodeJS.Timeout[] = [];
  private stopped = false;
  private passing = false;
  private readonly running = new Map<string, Promise<unknown>>();
  private readonly badCron = new Set<string>();

  /** without a lease this process evaluates alone (memory of its own, or no JetStream) */
  constructor(private readonly deps: AlarmsDeps, private readonly lease?: Kv<LeaseValue>) {
    this.leading = lease === undefined;
  }

  get isLeader(): boolean {
    return this.leading && (!this.lease || performance.now() - this.renewedAt < LEASE_TTL_MS / 2);
  }

  start(): void {
    if (this.lease) {
      void this.renew();
      this.timers.push(setInterval(() => void this.renew(), RENEW_MS));
    }
    this.timers.push(setInterval(() => {
      if (this.passing || !this.isLeader || this.stopped) return;
      this.passing = true;
      this.pass().catch((err: unknown) => {
        this.deps.log.warn({ err: toCortadoError(err).message }, 'an alarms pass failed: trying again');
      }).finally(() => { this.passing = false; });
    }, TICK_MS));
  }

  private async renew(): Promise<void> {
    const lease = this.lease;
    if (!lease || this.stopped) return;
    try {
      const after = await lease.update(LEASE_KEY, (cur) => (cur === undefined || cur.holder === this.id ? { holder: this.id, n: ++this.n } : undefined), { tries: 3 });
      const mine = after?.holder === this.id;
      if (mine) this.renewedAt = performance.now();
      if (mine !== this.leading && !this.stopped) {
        this.leading = mine;
        this.deps.log.info({ leader: this.id }, mine ? 'alarms leader: this process evaluates the alarms' : 'alarms leader: another process took over');
      }
    } catch (err) {
      if (this.leading) this.deps.log.warn({ err: (err as Error).message }, 'alarms leader: cannot renew the lease, evaluations paused');
      this.leading = false;
    }
  }

  async stop(deadlineMs: number): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.running.values()]), new Promise((r) => { timer = setTimeout(r, deadlineMs); })]);
    clearTimeout(timer);
    if (this.leading && this.lease) await this.lease.take(LEASE_KEY, (v) => v.holder === this.id).catch(() => undefined);
    this.leading = false;
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

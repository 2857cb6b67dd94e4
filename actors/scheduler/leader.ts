/**
 * Firing, by one leader among every scheduler process.
 *
 * The lease: one key in the JetStream KV bucket Bucket.SchedulerLease, whose TTL (LEASE_TTL_MS)
 * ends the lease of a leader that stopped renewing it (killed, cut off). Every process tries
 * every RENEW_MS to write the key by compare-and-set when it is absent or its own; the one whose
 * write wins is the leader until its key is gone. A leader that cannot renew (the broker away)
 * stops firing at once; one that stops cleanly deletes its key so another takes over within
 * RENEW_MS. No clock is compared between processes: the broker's TTL decides.
 *
 * While leader, every TICK_MS: for each enabled schedule, the newest cron tick in
 * (fired_through, now] — fired_through being the newest tick fired before, else when the schedule
 * was last created, edited or resumed (ticks while paused never run). At most one run per
 * schedule per pass, whatever number of ticks went by:
 *
 * - the newest tick is at most MISSED_AFTER_MS old: it runs (trigger `cron`), and covers any
 *   older ones (a leader that took over a moment late runs the tick it missed, once);
 * - older (every scheduler was down at that time): the schedule's `missed` policy says: `once`
 *   runs it once now (trigger `recovery`), `skip` runs nothing; never once per missed tick.
 *
 * A tick is recorded before it is queued (executions.enqueue refuses a second row for the same
 * schedule and tick: a second leader, or this one again, cannot fire it twice), then queued
 * (the execution's id is the message id), then fired_through advances. A leader that dies
 * between the steps leaves the tick to the next one, which finds the record and queues it again
 * if it is still waiting (the queue drops the duplicate).
 *
 * Retention runs here too, every RETENTION_MS: executions older than keep_history_days and
 * beyond max_executions_per_schedule per schedule are deleted.
 */
import { randomUUID } from 'node:crypto';
import type { Bus, Ctx } from '../../protocol/bus.js';
import type { Kv } from '../../protocol/kv.js';
import type { Logger } from '../../protocol/log.js';
import { Bucket } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import type { Execution, ExecutionsRepository, ScheduleRecord, SchedulesRepository } from '../../store/schedules.js';
import { parseCron, runsBetween, type ParsedCron } from './cron.js';
import type { JobQueue } from './queue.js';

/** a leader's key lives this long after its last renewal */
export const LEASE_TTL_MS = 10_000;
/** how often the lease is renewed (leader) or tried (the others) */
const RENEW_MS = 2_000;
/** how often the leader looks for due ticks */
const TICK_MS = 1_000;
/** a tick older than this when found was missed (every scheduler was down) */
export const MISSED_AFTER_MS = 60_000;
/** how often old executions are pruned */
const RETENTION_MS = 10 * 60_000;
const LEASE_KEY = 'leader';

export interface LeaseValue {
  holder: string;
  /** renewals, so that each write is a new revision */
  n: number;
}

export interface LeaderDeps {
  bus: Bus;
  config: Config;
  log: Logger;
  schedules: SchedulesRepository;
  executions: ExecutionsRepository;
  queue: JobQueue;
  /** the clock ticks are compared with (tests inject one; the product uses Date.now) */
  now: () => number;
  /** the lease bucket; absent: this process leads alone (memory storage, or no JetStream) */
  lease?: Kv<LeaseValue>;
}

export async function openLease(bus: Bus): Promise<Kv<LeaseValue>> {
  return bus.bucket<LeaseValue>(Bucket.SchedulerLease, { ttlMs: LEASE_TTL_MS });
}

/** The newest run time in (from, to], walking forward in bounded steps. */
export function newestRun(c: ParsedCron, from: Date, to: Date): Date | undefined {
  // look back a growing window first: a frequent cron has its newest run close to `to`
  for (const span of [2 * 3_600_000, 3 * 86_400_000, 40 * 86_400_000, 400 * 86_400_000, Number.POSITIVE_INFINITY]) {
    const start = new Date(Math.max(from.getTime(), to.getTime() - span));
    let last: Date | undefined;
    let cursor = start;
    for (let i = 0; i < 200; i++) {
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

export class Leader {
  readonly id = randomUUID();
  private leading = false;
  /** when the lease was last renewed (this process's monotonic clock) */
  private renewedAt = 0;
  private n = 0;
  private timers: NodeJS.Timeout[] = [];
  private pass: Promise<void> | undefined;
  private lastPrune = 0;
  private stopped = false;
  private readonly badCron = new Set<string>();

  constructor(private readonly deps: LeaderDeps) {}

  get isLeader(): boolean {
    return this.leading && (!this.deps.lease || performance.now() - this.renewedAt < LEASE_TTL_MS / 2);
  }

  start(): void {
    const { lease } = this.deps;
    if (lease) {
      void this.renew();
      this.timers.push(setInterval(() => void this.renew(), RENEW_MS));
    } else {
      this.leading = true;
      this.deps.log.info('scheduler leader: this process alone (no shared lease)');
    }
    this.timers.push(setInterval(() => {
      if (this.pass || !this.isLeader || this.stopped) return;
      this.pass = this.fire().catch((err: unknown) => {
        this.deps.log.warn({ err: (err as Error).message }, 'a scheduler pass failed: trying again');
      }).finally(() => { this.pass = undefined; });
    }, TICK_MS));
  }

  private async renew(): Promise<void> {
    const lease = this.deps.lease;
    if (!lease || this.stopped) return;
    try {
      const after = await lease.update(LEASE_KEY, (cur) => (cur === undefined || cur.holder === this.id ? { holder: this.id, n: ++this.n } : undefined), { tries: 3 });
      const mine = after?.holder === this.id;
      if (mine) this.renewedAt = performance.now();
      if (mine !== this.leading && !this.stopped) {
        this.leading = mine;
        this.deps.log.info({ leader: this.id }, mine ? 'scheduler leader: this process fires the schedules' : 'scheduler leader: another process took over');
      }
    } catch (err) {
      if (this.leading) this.deps.log.warn({ err: (err as Error).message }, 'scheduler leader: cannot renew the lease, firing paused');
      this.leading = false;
    }
  }

  /** Stop firing; give the lease back so another process takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.pass;
    if (this.leading && this.deps.lease) await this.deps.lease.take(LEASE_KEY, (v) => v.holder === this.id).catch(() => undefined);
    this.leading = false;
  }

  /** One pass: fire what is due, prune now and then. */
  async fire(): Promise<void> {
    const { schedules, log } = this.deps;
    const now = new Date(this.deps.now());
    const all = await schedules.list({ enabledOnly: true });
    for (const s of all) {
      if (this.stopped || !this.isLeader) return;
      await this.fireOne(s, now).catch((err: unknown) => {
        log.warn({ err: (err as Error).message, schedule: s.id }, 'cannot fire a schedule: trying again at the next pass');
      });
    }
    if (now.getTime() - this.lastPrune >= RETENTION_MS) {
      this.lastPrune = now.getTime();
      const sc = this.deps.config.scheduler;
      const n = await this.deps.executions.prune(sc.keep_history_days, sc.max_executions_per_schedule, now);
      if (n > 0) log.info({ deleted: n }, 'old schedule executions pruned (keep_history_days, max_executions_per_schedule)');
    }
  }

  private async fireOne(s: ScheduleRecord, now: Date): Promise<void> {
    let cron: ParsedCron;
    try {
      cron = parseCron(s.cron, s.timezone);
    } catch (err) {
      if (!this.badCron.has(s.id)) this.deps.log.warn({ schedule: s.id, err: (err as Error).message }, 'a schedule with a cron that does not parse: not fired');
      this.badCron.add(s.id);
      return;
    }
    // ticks before its creation, its last edit or resume, or the newest one fired, never run
    const since = [s.fired_through, s.updated_at, s.created_at].filter((v): v is string => v !== undefined).sort().pop() as string;
    const tick = newestRun(cron, new Date(since), now);
    if (!tick) return;
    const late = now.getTime() - tick.getTime() > MISSED_AFTER_MS;
    const trigger: Execution['trigger'] | undefined = !late ? 'cron' : s.missed === 'once' ? 'recovery' : undefined;
    const at = tick.toISOString();
    if (trigger) await this.queueTick(s, at, trigger);
    else this.deps.log.info({ schedule: s.id, tick: at }, 'missed run(s) skipped (the schedule says missed: skip)');
    await this.deps.schedules.advance(s.id, at);
  }

  private async queueTick(s: ScheduleRecord, at: string, trigger: Execution['trigger']): Promise<void> {
    const { executions, queue, log } = this.deps;
    const ctx: Ctx = { requestId: randomUUID(), user: s.owner_user };
    const e = await executions.enqueue({ schedule_id: s.id, schedule_name: s.name, execution_time: at, trigger });
    if (e) {
      ctx.requestId = e.id;
      await queue.put({ execution_id: e.id, schedule_id: s.id }, ctx);
      log.info({ schedule: s.id, execution: e.id, tick: at, trigger }, 'scheduled run queued');
      return;
    }
    // recorded already: by another leader, or by a leader that died before queueing it
    const recent = await executions.list(s.id, { limit: 20 });
    const same = recent.find((x) => x.trigger !== 'manual' && Date.parse(x.execution_time) === Date.parse(at));
    if (same?.status === 'queued') {
      ctx.requestId = same.id;
      await queue.put({ execution_id: same.id, schedule_id: s.id }, ctx);
    }
  }
}

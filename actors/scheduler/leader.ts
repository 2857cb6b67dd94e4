/**
 * Firing, by one leader among every scheduler process.
 *
 * The lease is actors/lib/jobs/lease.ts's, in the JetStream KV bucket Bucket.SchedulerLease: one
 * leader at a time, the broker's TTL ending a dead leader's lease, a clean stop giving it back.
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
 * Retention is not the leader's: every scheduler process prunes (retention.ts), firing on or off.
 */
import { randomUUID } from 'node:crypto';
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import type { Kv } from '../../runtime/kv.js';
import type { Logger } from '../../runtime/log.js';
import { Bucket } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import type { Execution, ExecutionsRepository, ScheduleRecord, SchedulesRepository } from '../../store/schedules.js';
import { newestRun, parseCron, type ParsedCron } from '../lib/jobs/cron.js';
import { LeaderLease, openLeaseBucket, type LeaseValue } from '../lib/jobs/lease.js';
import type { JobQueue } from './queue.js';

/** how often the leader looks for due ticks */
const TICK_MS = 1_000;
/** a tick older than this when found was missed (every scheduler was down) */
export const MISSED_AFTER_MS = 60_000;


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

export function openLease(bus: Bus): Promise<Kv<LeaseValue>> {
  return openLeaseBucket(bus, Bucket.SchedulerLease);
}

export { newestRun };

export class Leader {
  private readonly lease: LeaderLease;
  private timer: NodeJS.Timeout | undefined;
  private pass: Promise<void> | undefined;
  private stopped = false;
  private readonly badCron = new Set<string>();

  constructor(private readonly deps: LeaderDeps) {
    this.lease = new LeaderLease(deps.lease, deps.log, { role: 'scheduler leader', leading: 'this process fires the schedules', paused: 'firing paused' });
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
      if (this.pass || !this.isLeader || this.stopped) return;
      this.pass = this.fire().catch((err: unknown) => {
        this.deps.log.warn({ err: (err as Error).message }, 'a scheduler pass failed: trying again');
      }).finally(() => { this.pass = undefined; });
    }, TICK_MS);
  }

  /** Stop firing; give the lease back so another process takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.lease.halt();
    await this.pass;
    await this.lease.release();
  }

  /** One pass: fire what is due. */
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

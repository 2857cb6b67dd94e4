/**
 * The scheduler actor: scheduled reports (SPEC.md "Schedule", "Execution record", section
 * scheduler). It serves the schedules' requests (schedules.ts) and runs them: a leader among
 * every scheduler process fires due ticks onto a JetStream work queue (leader.ts, queue.ts) that
 * workers in any process take (run.ts). Opens its own storage like the semantic actor.
 *
 * - scheduler.enabled false (the default): nothing fires on its cron; the API (create, edit,
 *   history, the cron helper) and Run Now still work (a run asked for by a person is run).
 * - retention (retention.ts) runs in every scheduler process, firing on or off.
 * - config_db on: schedules and executions in PostgreSQL, shared by every scheduler process; one
 *   leader (JetStream KV lease) fires, any process runs (JetStream work queue).
 * - config_db off: schedules live in this process's memory (lost on restart), so this process
 *   fires and runs them itself (no lease, a queue in memory). Run one scheduler process then.
 * - no JetStream: each process fires (the executions' unique tick still runs each tick once)
 *   and runs in memory; said in the log.
 */
import {
  Actor, CronPreview, ScheduleCreate, ScheduleDelete, ScheduleGet, ScheduleHistory, ScheduleList, ScheduleRunNow, ScheduleUpdate,
} from '../../protocol/subjects.js';
import type { Kv } from '../../runtime/kv.js';
import { openStorage } from '../../store/index.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import type { LeaseValue } from '../lib/jobs/lease.js';
import { Leader, openLease } from './leader.js';
import { jetstreamQueue, localQueue, type JobQueue } from './queue.js';
import { Retention } from './retention.js';
import { runJob, runNow, type RunDeps } from './run.js';
import * as sch from './schedules.js';

export interface SchedulerOptions {
  /** the clock ticks and run times are read from: for tests only; the product uses the real one */
  now?: () => number;
}

/** how long a stop waits for the runs under way in this process */
const STOP_WAIT_MS = 20_000;

export async function startScheduler(deps: ActorDeps, opts: SchedulerOptions = {}): Promise<RunningActor> {
  const { config, log, bus } = deps;
  const store = await openStorage(config, log);
  const now = opts.now ?? Date.now;
  // a schedule without a zone of its own follows scheduler.timezone as it is at each read (a runtime change applies)
  store.schedules.defaultZone = () => config.scheduler.timezone;
  let queue: JobQueue | undefined;
  let leader: Leader | undefined;
  const retention = new Retention({ config, log, executions: store.executions, now });
  try {
    const max = config.scheduler.max_concurrent_jobs;
    let lease: Kv<LeaseValue> | undefined;
    if (store.kind === 'memory') {
      log.info('config_db is off: schedules and their history are kept in this process\'s memory (lost on restart); this process fires and runs them');
      queue = localQueue(log, max);
    } else {
      try {
        queue = await jetstreamQueue(bus, log, max, config.scheduler.redelivery_seconds * 1000);
        lease = await openLease(bus);
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'no JetStream: scheduled runs are fired and run in each scheduler process (each tick still runs once)');
        queue = localQueue(log, max);
        lease = undefined;
      }
    }
    const q = queue;

    // the schedules' requests (schedules.ts; Run Now is the runner's)
    const sd: sch.SchedulesDeps = { bus, config, log, store };
    bus.serve(ScheduleCreate, (input, ctx) => sch.create(input, sd, ctx));
    bus.serve(ScheduleList, (input) => sch.list(input, sd));
    bus.serve(ScheduleGet, (input) => sch.get(input, sd));
    bus.serve(ScheduleUpdate, (input, ctx) => sch.update(input, sd, ctx));
    bus.serve(ScheduleDelete, (input, ctx) => sch.remove(input, sd, ctx));
    bus.serve(ScheduleHistory, (input) => sch.history(input, sd));
    bus.serve(CronPreview, async (input) => sch.cronPreview(input, sd));

    const rd: RunDeps = { bus, config, log, schedules: store.schedules, executions: store.executions, now };
    bus.serve(ScheduleRunNow, (input, ctx) => runNow(input, { ...rd, queue: q }, ctx));
    await q.work((job, deliveries) => runJob(job, deliveries, rd));
    retention.start();

    if (config.scheduler.enabled) {
      leader = new Leader({ bus, config, log, schedules: store.schedules, executions: store.executions, queue: q, now, ...(lease ? { lease } : {}) });
      leader.start();
    } else {
      log.info('scheduler.enabled is false: schedules do not fire on their cron (the API and Run Now work)');
    }
    log.info({ store: store.kind, queue: q.kind, enabled: config.scheduler.enabled, max_concurrent_jobs: max }, 'scheduler ready');
  } catch (err) {
    await leader?.stop().catch(() => undefined);
    await retention.stop().catch(() => undefined);
    await queue?.stop(0).catch(() => undefined);
    await store.close().catch(() => undefined);
    throw err;
  }
  const l = leader;
  const q = queue;
  return {
    name: Actor.Scheduler,
    stop: async () => {
      await l?.stop();
      await retention.stop();
      await q.stop(STOP_WAIT_MS);
      await store.close();
    },
  };
}

export function start(deps: ActorDeps): Promise<RunningActor> {
  return startScheduler(deps);
}

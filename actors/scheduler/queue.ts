/**
 * Where due runs wait for a worker. Two kinds, one interface:
 *
 * - `jetstream` (the normal case): the bus's work queue (runtime/bus-queue.ts,
 *   ScheduleRunQueue). Any scheduler process takes a run; it is acknowledged when the run is
 *   recorded as done and delivered again when the worker died before that. The consumer's
 *   max_ack_pending is scheduler.max_concurrent_jobs: no more runs at once across every process.
 * - `local`: this process only (config_db off: the schedules live in this process's memory, so
 *   nobody else could run them; or no JetStream). max_concurrent_jobs counts in this process.
 *
 * A message is the execution's id: putting one twice (a leader that died between the two
 * steps, taken over by another) is one message (JetStream drops the duplicate by id), and the
 * worker runs an execution only while it is not done (store: markRunning).
 */
import type { Bus, WorkQueue } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import type { Logger } from '../../runtime/log.js';
import type { ScheduleJob } from '../../protocol/schemas/schedules.js';
import { ScheduleRunQueue } from '../../protocol/subjects.js';

export type JobHandler = (job: ScheduleJob, deliveries: number) => Promise<void>;

export interface JobQueue {
  readonly kind: 'jetstream' | 'local';
  /** resolves once the run is queued (stored by JetStream) */
  put(job: ScheduleJob, ctx: Ctx): Promise<void>;
  /** start taking runs */
  work(handler: JobHandler): Promise<void>;
  /** stop taking runs; wait (up to deadlineMs) for the ones running here */
  stop(deadlineMs: number): Promise<void>;
}

/**
 * `redeliveryMs`: a run not acknowledged (nor said to be still running) this long goes to another
 * worker (scheduler.redelivery_seconds, 30 s by default).
 */
export async function jetstreamQueue(bus: Bus, log: Logger, maxConcurrent: number, redeliveryMs = 30_000): Promise<JobQueue> {
  const q: WorkQueue<typeof ScheduleRunQueue> = await bus.workQueue(ScheduleRunQueue, { maxInFlight: maxConcurrent, ackWaitMs: redeliveryMs });
  let worker: { stop(deadlineMs?: number): Promise<void> } | undefined;
  return {
    kind: 'jetstream',
    put: (job, ctx) => q.put(job, job.execution_id, ctx),
    async work(handler) {
      worker = await q.work((item) => handler(item.data, item.deliveries), { concurrency: maxConcurrent });
      log.debug({ max_concurrent_jobs: maxConcurrent }, 'taking scheduled runs from the work queue');
    },
    async stop(deadlineMs) {
      await worker?.stop(deadlineMs);
    },
  };
}

/** This process only: at most `maxConcurrent` runs at once, the others wait in order. */
export function localQueue(log: Logger, maxConcurrent: number): JobQueue {
  const waiting: ScheduleJob[] = [];
  const running = new Set<Promise<void>>();
  let handler: JobHandler | undefined;
  let stopped = false;
  const pump = (): void => {
    while (handler && !stopped && running.size < maxConcurrent && waiting.length > 0) {
      const job = waiting.shift() as ScheduleJob;
      const h = handler;
      const p: Promise<void> = h(job, 1)
        .catch((err: unknown) => { log.warn({ err: (err as Error).message, execution: job.execution_id }, 'a scheduled run failed to finish'); })
        .finally(() => { running.delete(p); pump(); });
      running.add(p);
    }
  };
  return {
    kind: 'local',
    async put(job) {
      if (!waiting.some((j) => j.execution_id === job.execution_id)) waiting.push(job);
      pump();
    },
    async work(h) {
      handler = h;
      pump();
    },
    async stop(deadlineMs) {
      stopped = true;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled([...running]), new Promise((r) => { timer = setTimeout(r, deadlineMs); })]);
      clearTimeout(timer);
    },
  };
}

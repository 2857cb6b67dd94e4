/**
 * JetStream work queues behind `Bus.workQueue(def)`: a message put on a queue is taken by one
 * worker of any process, acknowledged when its handler finished, and delivered again when the
 * worker died before that (after `ackWaitMs`; a live worker says "still working" meanwhile).
 *
 * - The stream keeps a message until it is acknowledged (retention work-queue) and drops a
 *   second one with the same id within the duplicate window (`put(…, id)` is idempotent).
 * - `maxInFlight` is the consumer's max_ack_pending: the server hands out no more unacknowledged
 *   messages than that across every process (the scheduler's max_concurrent_jobs). Changed on
 *   the next start when the configuration changes.
 * - A payload that breaks the queue's contract is logged and terminated (it would fail again);
 *   a handler that throws has its message delivered again after `retryDelayMs`.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import {
  AckPolicy, DeliverPolicy, DiscardPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType, type JsMsg,
} from '@nats-io/jetstream';
import type { Static, TSchema } from 'typebox';
import { Compile, type Validator } from 'typebox/compile';
import { describeErrors } from '../protocol/define.js';
import { ctxFrom, headersFor, type Ctx } from './bus-headers.js';
import { Header } from '../protocol/headers.js';
import type { Logger } from './log.js';
import type { BusConnection } from './bus-connection.js';
import { queueStreamName } from '../protocol/subjects.js';

/**
 * A work queue as protocol/subjects.ts defines it: its name (the stream's and the durable
 * consumer's), its subject relative to the prefix, and the schema of its messages.
 */
export interface QueueDef<I extends TSchema = TSchema> {
  readonly name: string;
  readonly subject: string;
  readonly item: I;
}
export type QueueItemOf<D extends QueueDef> = Static<D['item']>;

const checkers = new WeakMap<QueueDef, Validator>();
function checker(def: QueueDef): Validator {
  let c = checkers.get(def);
  if (!c) checkers.set(def, (c = Compile(def.item)));
  return c;
}

export interface WorkQueueOptions {
  /** unacknowledged messages at most, across every worker of every process */
  maxInFlight: number;
  /** a message not acknowledged (nor "still working") this long is delivered again */
  ackWaitMs?: number;
  /** how long a message waits for a worker at most */
  maxAgeMs?: number;
  /** copies JetStream keeps of the queue's stream (the bus passes config bus.replicas) */
  replicas?: number;
}

export interface WorkOptions {
  /** handlers running at once in this process (never more than maxInFlight overall) */
  concurrency: number;
  /** a failed handler's message comes again after this long */
  retryDelayMs?: number;
}

/** One message taken from a queue. */
export interface WorkItem<T> {
  data: T;
  ctx: Ctx;
  /** how many times it was delivered (more than 1: a worker died or failed with it) */
  deliveries: number;
}

const enc = new TextEncoder();
const dec = new TextDecoder();
const DUPLICATE_WINDOW_MS = 10 * 60_000;
/** how long one pull waits for messages */
const PULL_EXPIRES_MS = 1_000;

export class WorkQueue<D extends QueueDef> {
  private constructor(
    private readonly nc: NatsConnection,
    private readonly def: D,
    private readonly prefix: string,
    private readonly log: Logger,
    private readonly opts: Required<WorkQueueOptions>,
  ) {}

  private get stream(): string {
    return queueStreamName(this.prefix, this.def.name);
  }

  private get subject(): string {
    return `${this.prefix}.${this.def.subject}`;
  }

  /** The queue's stream and its one durable consumer, made (or brought to `opts`) when needed. */
  static async open<D extends QueueDef>(conn: BusConnection, def: D, opts: WorkQueueOptions): Promise<WorkQueue<D>> {
    const q = new WorkQueue(conn.nc, def, conn.prefix, conn.log, {
      maxInFlight: Math.max(1, opts.maxInFlight),
      ackWaitMs: opts.ackWaitMs ?? 30_000,
      maxAgeMs: opts.maxAgeMs ?? 7 * 24 * 3_600_000,
      replicas: opts.replicas ?? conn.replicas,
    });
    await q.ensure();
    return q;
  }

  private async ensure(): Promise<void> {
    const jsm = await jetstreamManager(this.nc, { timeout: 5_000 });
    try {
      await jsm.streams.info(this.stream);
    } catch {
      try {
        await jsm.streams.add({
          name: this.stream,
          subjects: [this.subject],
          retention: RetentionPolicy.Workqueue,
          storage: StorageType.File,
          num_replicas: this.opts.replicas,
          discard: DiscardPolicy.Old,
          max_age: this.opts.maxAgeMs * 1_000_000,
          duplicate_window: DUPLICATE_WINDOW_MS * 1_000_000,
        });
        this.log.info({ stream: this.stream }, 'created the work queue');
      } catch (err) {
        // another process made it in between
        await jsm.streams.info(this.stream).catch(() => { throw err; });
      }
    }
    const config = {
      durable_name: this.def.name,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: this.opts.ackWaitMs * 1_000_000,
      max_ack_pending: this.opts.maxInFlight,
      max_deliver: -1,
    };
    const info = await jsm.consumers.info(this.stream, this.def.name).catch(() => undefined);
    if (!info) {
      await jsm.consumers.add(this.stream, config).catch(async (err: unknown) => {
        if (!(await jsm.consumers.info(this.stream, this.def.name).catch(() => undefined))) throw err;
      });
    } else if (info.config.max_ack_pending !== config.max_ack_pending || info.config.ack_wait !== config.ack_wait) {
      await jsm.consumers.update(this.stream, this.def.name, { max_ack_pending: config.max_ack_pending, ack_wait: config.ack_wait });
      this.log.info({ queue: this.def.name, max_in_flight: config.max_ack_pending }, 'work queue limits changed');
    }
  }

  /** Put a message on the queue, stored by JetStream when this resolves; the same `id` twice is one message. */
  async put(data: QueueItemOf<D>, id: string, ctx: Ctx): Promise<void> {
    if (!checker(this.def).Check(data)) {
      throw new Error(`${this.def.subject}: the message does not match its contract: ${JSON.stringify(describeErrors(checker(this.def), data))}`);
    }
    const h = headersFor({ requestId: ctx.requestId, ...(ctx.user ? { user: ctx.user } : {}), ...(ctx.scope ? { scope: ctx.scope } : {}) });
    h.set(Header.MsgId, id);
    await jetstream(this.nc).publish(this.subject, enc.encode(JSON.stringify(data)), { msgID: id, headers: h });
  }

  /**
   * Take messages while `stop` is not called: up to `concurrency` handlers at once here. A
   * message is acknowledged when its handler resolved; a running handler tells the server it
   * is still working every third of ackWaitMs. `stop` stops taking and waits (up to
   * `deadlineMs`) for the handlers running.
   */
  async work(handler: (item: WorkItem<QueueItemOf<D>>) => Promise<void>, opts: WorkOptions): Promise<{ stop(deadlineMs?: number): Promise<void> }> {
    const consumer = await jetstream(this.nc).consumers.get(this.stream, this.def.name);
    const concurrency = Math.max(1, opts.concurrency);
    const running = new Set<Promise<void>>();
    let stopped = false;
    let wake: (() => void) | undefined;
    const handle = async (m: JsMsg): Promise<void> => {
      let data: unknown;
      try {
        data = JSON.parse(dec.decode(m.data));
      } catch {
        data = undefined;
      }
      if (!checker(this.def).Check(data)) {
        this.log.warn({ queue: this.def.name, errors: describeErrors(checker(this.def), data) }, 'a work item that does not match its contract: dropped');
        m.term();
        return;
      }
      const beat = setInterval(() => m.working(), Math.max(1_000, Math.floor(this.opts.ackWaitMs / 3)));
      try {
        await handler({ data: data as QueueItemOf<D>, ctx: ctxFrom(m.headers), deliveries: m.info.deliveryCount });
        m.ack();
      } catch (err) {
        this.log.warn({ queue: this.def.name, err: (err as Error).message }, 'work item failed: it comes again');
        m.nak(opts.retryDelayMs ?? 5_000);
      } finally {
        clearInterval(beat);
      }
    };
    const loop = (async () => {
      while (!stopped) {
        const free = concurrency - running.size;
        if (free <= 0) {
          await Promise.race([...running, new Promise<void>((r) => { wake = r; })]);
          continue;
        }
        try {
          const batch = await consumer.fetch({ max_messages: free, expires: PULL_EXPIRES_MS });
          for await (const m of batch) {
            const p = handle(m).finally(() => running.delete(p));
            running.add(p);
            if (stopped) break;
          }
        } catch (err) {
          if (stopped || this.nc.isClosed()) break;
          this.log.warn({ queue: this.def.name, err: (err as Error).message }, 'cannot take from the work queue: trying again');
          await new Promise<void>((r) => { const timer = setTimeout(r, 1_000); wake = () => { clearTimeout(timer); r(); }; });
        }
      }
    })();
    return {
      stop: async (deadlineMs = 30_000) => {
        stopped = true;
        wake?.();
        await Promise.race([loop, new Promise((r) => setTimeout(r, PULL_EXPIRES_MS + 500))]);
        const left = [...running];
        if (left.length) {
          let timer: NodeJS.Timeout | undefined;
          await Promise.race([Promise.allSettled(left), new Promise((r) => { timer = setTimeout(r, deadlineMs); })]);
          clearTimeout(timer);
        }
      },
    };
  }
}


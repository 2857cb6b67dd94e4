/**
 * The JetStream pull loop behind `Bus.consumeEvents` and `Bus.consume`: a durable consumer of
 * the event stream read in batches, with its acks sent together, and made again when another
 * process removed it. Written by hand (not the client's consumer) so that one pull costs one
 * message each way and a batch of acks one socket write (see Bus.send).
 */
import { randomUUID } from 'node:crypto';
import type { Msg, NatsConnection } from '@nats-io/transport-node';
import { AckPolicy, DeliverPolicy, jetstreamManager } from '@nats-io/jetstream';
import { ctxFrom, type Ctx } from './bus-headers.js';
import type { Logger } from './log.js';
import { eventsStreamName } from '../protocol/subjects.js';
import { registerConsumerLag } from './metrics.js';

/** What the loop needs of the bus. */
export interface ConsumerHost {
  readonly nc: NatsConnection;
  readonly prefix: string;
  readonly log: Logger;
  /** queue a write with the bus's others of this turn */
  send(write: () => void): void;
  closed(): boolean;
}

export interface ConsumeOptions {
  ackWaitMs?: number;
  retryDelayMs?: number;
  intervalMs?: number;
  batch?: number;
  active?: () => boolean;
  startAt?: 'all' | 'new';
}

const enc = new TextEncoder();
const dec = new TextDecoder();
/** events taken per pull, and how often a consumer asks for what is pending */
const EVENT_BATCH = 256;
const EVENT_PULL_INTERVAL_MS = 100;
/** a pull that does not wait is answered at once; after this long the server is taken as gone */
const PULL_ANSWER_TIMEOUT_MS = 5_000;
/** the status of a pull that got no answer in that time */
const NO_ANSWER = -1;

/**
 * Read every event of the stream through a durable consumer (`durable` names it; copies in
 * several processes share it, each event going to one of them). An event is acknowledged
 * only after `handler` resolved; a handler that throws has it redelivered after a pause, so
 * a consumer killed mid-stream loses nothing (handlers must be idempotent: dedup by id).
 * `subject` is relative to the prefix (`evt.query.executed`).
 *
 * Events are taken in batches: every `intervalMs` the consumer asks the server for what is
 * pending (a pull of up to `batch` events that does not wait), handles them in order and
 * sends their acks together; a full batch is followed by the next one at once. Audit and
 * alerts do not need an event the instant it is stored, and having the server push each
 * event the moment it arrives costs a wakeup of the server and of this process per event —
 * several times the work of the event itself at a few hundred questions a second.
 * `active()` (when given) is asked before each pull. While it says false the durable
 * consumer is removed from the server (a consumer that exists costs the server work for every
 * event stored, pulled or not) and nothing is read; when it says true again the consumer is
 * made anew, starting at `startAt` (`new`: the events stored from then on).
 */
export async function pullConsumer(
  bus: ConsumerHost,
  durable: string,
  handler: (subject: string, data: unknown, ctx: Ctx) => Promise<void>,
  opts: ConsumeOptions = {},
): Promise<{ stop(): Promise<void> }> {
  const stream = eventsStreamName(bus.prefix);
  const batch = Math.max(1, opts.batch ?? EVENT_BATCH);
  const intervalMs = Math.max(1, opts.intervalMs ?? EVENT_PULL_INTERVAL_MS);
  const jsm = await jetstreamManager(bus.nc, { timeout: 5_000 });
  const ensureConsumer = async (): Promise<void> => {
    try {
      await jsm.consumers.info(stream, durable);
    } catch {
      await jsm.consumers.add(stream, {
        durable_name: durable,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: opts.startAt === 'new' ? DeliverPolicy.New : DeliverPolicy.All,
        ack_wait: (opts.ackWaitMs ?? 10_000) * 1_000_000,
        max_ack_pending: Math.max(1_000, batch * 4),
      });
      bus.log.info({ durable }, 'event consumer created');
    }
  };
  const removeConsumer = async (): Promise<void> => {
    const gone = await jsm.consumers.delete(stream, durable).catch((err: unknown) => /not found/i.test(String((err as Error).message)));
    if (gone) bus.log.info({ durable }, 'event consumer removed: nothing reads the stream for it now');
  };
  /** whether the durable consumer is known to exist (undefined: to be checked) */
  let exists: boolean | undefined;
  if (!opts.active || opts.active()) {
    await ensureConsumer();
    exists = true;
  }
  const nextSubject = `$JS.API.CONSUMER.MSG.NEXT.${stream}.${durable}`;
  const pullRequest = enc.encode(JSON.stringify({ batch, no_wait: true }));
  const inbox = `_INBOX.${randomUUID().replace(/-/g, '')}`;
  const strip = bus.prefix.length + 1;

  // What a pull delivers arrives under each event's own subject (only the statuses name the
  // pull), so arrivals are kept in order until the loop takes them, late ones included.
  const received: Msg[] = [];
  /** the pull being answered, and how to end it */
  let current: { id: string; end: (status: number) => void } | undefined;
  const sub = bus.nc.subscribe(`${inbox}.*`, {
    callback: (err, msg) => {
      if (err) return;
      const status = msg.headers?.code ?? 0;
      if (status !== 0 && msg.data.length === 0) {
        if (current && msg.subject === `${inbox}.${current.id}`) current.end(status);
        return;
      }
      received.push(msg);
      if (current && received.length >= batch) current.end(0);
    },
  });

  let stopped = false;
  let wake: (() => void) | undefined;
  const pause = (ms: number) => new Promise<void>((resolve) => {
    const timer = setTimeout(() => { wake = undefined; resolve(); }, ms);
    wake = () => { clearTimeout(timer); wake = undefined; resolve(); };
  });
  let pulls = 0;
  const pull = () => new Promise<number>((resolve) => {
    const id = (++pulls).toString(36);
    const state = {
      id,
      end: (status: number) => {
        clearTimeout(timer);
        if (current === state) current = undefined;
        resolve(status);
      },
    };
    // the server answers a pull that does not wait at once; silence means the consumer (or
    // the server) is gone
    const timer = setTimeout(() => state.end(NO_ANSWER), PULL_ANSWER_TIMEOUT_MS);
    current = state;
    bus.send(() => {
      try {
        bus.nc.publish(nextSubject, pullRequest, { reply: `${inbox}.${id}` });
      } catch {
        state.end(503);
      }
    });
  });
  const ack = enc.encode('+ACK');
  const term = enc.encode('+TERM');
  const nak = enc.encode(`-NAK {"delay":${(opts.retryDelayMs ?? 2_000) * 1_000_000}}`);
  const reply = (m: Msg, payload: Uint8Array) => {
    if (!m.reply) return;
    const to = m.reply;
    bus.send(() => {
      try {
        bus.nc.publish(to, payload);
      } catch {
        // the connection is gone: the event comes again after ack_wait (handlers dedup)
      }
    });
  };
  /** a trouble that lasts is said at most once a minute */
  let warned = 0;
  const warnSometimes = (line: Record<string, unknown>, msg: string) => {
    if (Date.now() - warned < 60_000) return;
    warned = Date.now();
    bus.log.warn({ durable, ...line }, msg);
  };
  const loop = (async () => {
    while (!stopped && !bus.closed()) {
      if (opts.active && !opts.active()) {
        if (exists !== false) {
          await removeConsumer().catch(() => undefined);
          exists = false;
        }
        await pause(intervalMs);
        continue;
      }
      if (exists !== true) {
        try {
          await ensureConsumer();
          exists = true;
        } catch (err) {
          warnSometimes({ err: (err as Error).message }, 'cannot make the event consumer: trying again');
          await pause(Math.max(intervalMs, 1_000));
          continue;
        }
      }
      const status = await pull();
      const got = received.splice(0);
      for (const m of got) {
        let data: unknown;
        try {
          data = JSON.parse(dec.decode(m.data));
        } catch {
          bus.log.warn({ subj: m.subject, durable }, 'an event that is not JSON: skipped');
          reply(m, term);
          continue;
        }
        try {
          await handler(m.subject.slice(strip), data, ctxFrom(m.headers));
          reply(m, ack);
        } catch (err) {
          bus.log.warn({ subj: m.subject, durable, err: (err as Error).message }, 'event handler failed: it comes again');
          reply(m, nak);
        }
      }
      if (stopped || bus.closed()) break;
      // 404 "no messages" and 408 "request timeout" answer a pull that found fewer events
      // than it asked for. No answer at all, or 503 (no responders): the consumer may be gone
      // (removed by another process), so it is checked, and made again, before the next pull.
      // Anything else is said, and the pulls go on after a pause.
      if (status === NO_ANSWER || status === 503) exists = undefined;
      const normal = status === 0 || status === 404 || status === 408;
      if (!normal) warnSometimes({ status }, 'the event stream did not answer a pull: trying again');
      if (got.length < batch) await pause(normal ? intervalMs : Math.max(intervalMs, 1_000));
    }
  })().catch((err: unknown) => {
    if (!bus.closed()) bus.log.warn({ durable, err: (err as Error).message }, 'the event consumer stopped');
  });
  // its lag in /metrics (runtime/metrics.ts): what the stream holds that it has not acknowledged
  const stopLag = registerConsumerLag(durable, async () => {
    if (exists !== true || bus.closed()) return undefined;
    const info = await jsm.consumers.info(stream, durable);
    return info.num_pending + info.num_ack_pending;
  });
  return {
    async stop() {
      stopLag();
      stopped = true;
      wake?.();
      current?.end(0);
      await loop;
      sub.unsubscribe();
    },
  };
}

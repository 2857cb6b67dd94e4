/**
 * The bus. With its parts, the ONLY importer of the NATS client, split by concern:
 *
 *   bus-connection.ts  the connection: one write queue per turn, lost and back, close
 *   bus-requests.ts    request/reply, serving, gather (sys.stats), per-subject stats
 *   bus.ts             events: publish (durable ones through the outbox), on, consume, KV
 *   bus-durable.ts     the event stream and the outbox's acknowledgements (outbox.ts)
 *   bus-consumer.ts    the JetStream pull loop behind consume/consumeEvents
 *   bus-kv.ts          JetStream KV behind the typed key-value API (kv.ts)
 *   bus-headers.ts     Ctx in and out of NATS headers; bus-stats.ts the counters and log line
 *
 * - `request(def, input, ctx)`: typed request/reply with one wildcard inbox of our own
 *   (one subscription, a map of pending replies) instead of the client's per-request
 *   machinery; no responders → ACTOR_UNAVAILABLE, no answer in time → TIMEOUT.
 * - `serve(def, handler)`: queue group = the owning actor; input validated with the
 *   compiled schema; anything thrown is normalised into the reply envelope; in-flight
 *   handlers are tracked so a stop can wait for them.
 * - `publish(event, payload, ctx)`: facts, captured by the JetStream stream. A `durable` event
 *   (protocol/define.ts) is published to JetStream with an acknowledgement and its id as
 *   `Nats-Msg-Id`, and waits in the outbox until the stream stored it, across a lost connection
 *   and a restarted server (protocol/bus-durable.ts, protocol/outbox.ts); `eventTrouble()` says
 *   when that cannot be promised (stream not kept, outbox full): the assistant refuses
 *   questions then.
 * - The connection lost: the client drops whatever is written while it is away, so the bus holds
 *   its writes until it is back (up to HELD_MAX), a request already sent fails at once
 *   (ACTOR_UNAVAILABLE: its answer cannot arrive) and one not yet sent waits for the reconnect
 *   at most HOLD_MS; for a moment after the reconnect "no responders" is sent again (the
 *   actor's process may not have resubscribed yet) instead of failing.
 * - request id, user, deadline, hop count and database scope travel in headers.
 * - `preferLocal`: a request whose actor is served by this very process is handed to the
 *   handler directly (same validation, deadline, in-flight tracking and error model, no
 *   serialisation and no network hop); only requests for actors that live elsewhere cross
 *   NATS. That holds for questions from the edge too: a process that runs the edge and an
 *   assistant answers its own questions without a bus hop (the default, one-process
 *   deployment), while an edge-only process (`--role edge`) spreads them over every assistant
 *   through the queue group. `remote: true` forces the queue group for one request.
 */
import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { Static, TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { describeErrors, type EventDef, type EventOf, type PayloadOf } from './define.js';
import { CortadoError, toCortadoError } from './errors.js';
import { Header } from './headers.js';
import type { OutboxStats, StreamOptions } from './bus-durable.js';
import { ctxFrom, eventHeaders, type Ctx } from './bus-headers.js';
import { OUTBOX_WAIT_MS, type BusOptions } from './bus-connection.js';
import { pullConsumer, type ConsumeOptions, type ConsumerHost } from './bus-consumer.js';
import { openBucket, type BucketOptions } from './bus-kv.js';
import { openObjects, type ObjectBucket, type ObjectBucketOptions } from './bus-objects.js';
import { WorkQueue, type QueueDef, type WorkQueueOptions } from './bus-queue.js';
import { logHandled, type ServeStats } from './bus-stats.js';
import { startSpan } from './tracing.js';
import { RequestBus, type Handler } from './bus-requests.js';
import type { Kv } from './kv.js';
import { bucketName, progressSubject, type Bucket } from './subjects.js';
import { ProgressEvent } from './schemas/progress.js';

export type { Ctx, ServeStats, ConsumeOptions, BucketOptions, BusOptions, Handler, ObjectBucket, ObjectBucketOptions };
export type { WorkQueue, WorkItem, WorkQueueOptions, QueueDef } from './bus-queue.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
const checkProgress = Compile(ProgressEvent);

export class Bus extends RequestBus {
  private constructor(nc: NatsConnection, opts: BusOptions) {
    super(nc, opts);
  }

  static async connect(opts: BusOptions): Promise<Bus> {
    const nc = await connect({
      servers: opts.url,
      name: opts.name,
      timeout: opts.connectTimeoutMs ?? 10_000,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      noAsyncTraces: true,
    });
    return new Bus(nc, opts);
  }

  // ---- events and raw subjects --------------------------------------------------------

  /**
   * Publish a fact. The JetStream stream keeps it; duplicates (same id) are dropped. A durable
   * event, once the stream is known to be kept (ensureEventStream), goes through the outbox:
   * acknowledged by JetStream, sent again until it is. Nothing here waits for the ack.
   */
  publish<E extends EventDef>(def: E, payload: PayloadOf<E>, ctx: Ctx): void {
    if (this.closed) return;
    if (this.strict && !def.checkPayload.Check(payload)) {
      this.log.error({ subj: def.subject, errors: describeErrors(def.checkPayload, payload) }, 'event does not match its contract');
      return;
    }
    const h = eventHeaders(ctx);
    const given = (payload as { id?: unknown }).id;
    const id = typeof given === 'string' && given !== '' ? given : undefined;
    if (id) h.set(Header.MsgId, id);
    let data: Uint8Array;
    try {
      data = enc.encode(JSON.stringify(payload));
    } catch (err) {
      this.log.warn({ err, subj: def.subject }, 'cannot encode event');
      return;
    }
    if (def.durable && this.durable.active) {
      const msgId = id ?? randomUUID();
      if (!id) h.set(Header.MsgId, msgId);
      this.durable.add({ id: msgId, subject: def.subject, requestId: ctx.requestId, data, headers: h });
      return;
    }
    this.send(() => {
      try {
        this.nc.publish(this.subject(def.subject), data, { headers: h });
      } catch (err) {
        this.log.warn({ err, subj: def.subject }, 'cannot publish event');
      }
    });
  }

  /** Publish JSON on a subject built in protocol/ (progress streams). */
  publishTo(relativeSubject: string, data: unknown): void {
    if (this.closed) return;
    let bytes: Uint8Array;
    try {
      bytes = enc.encode(JSON.stringify(data));
    } catch (err) {
      this.log.warn({ err, subj: relativeSubject }, 'cannot encode');
      return;
    }
    this.send(() => {
      try {
        this.nc.publish(this.subject(relativeSubject), bytes);
      } catch (err) {
        this.log.warn({ err, subj: relativeSubject }, 'cannot publish');
      }
    });
  }

  /**
   * Subscribe to a subject (or wildcard) built in protocol/: progress streams, `cortado tap`.
   * For an event with a definition, `on` is the typed way. A throw in `onMessage` is logged and
   * the message dropped: it never stops the subscription. Returns the unsubscribe.
   */
  listen(relativeSubject: string, onMessage: (data: unknown, subject: string, ctx: Ctx) => void): () => void {
    const sub = this.nc.subscribe(this.subject(relativeSubject), {
      callback: (err, msg) => {
        if (err) return;
        let data: unknown;
        try {
          data = JSON.parse(dec.decode(msg.data));
        } catch {
          return;
        }
        const ctx = ctxFrom(msg.headers);
        const subject = msg.subject.slice(this.prefix.length + 1);
        try {
          onMessage(data, subject, ctx);
        } catch (e) {
          this.log.error({ err: e, subj: subject, rid: ctx.requestId }, 'a listener failed; the message is dropped');
        }
      },
    });
    return () => sub.unsubscribe();
  }

  /** One step of a question, on its progress subject (SSE and WebSocket streams read it). */
  progress(requestId: string, event: ProgressEvent): void {
    this.publishTo(progressSubject(requestId), event);
  }

  /** The steps of one question as they happen; one that breaks the contract is dropped. The unsubscribe. */
  onProgress(requestId: string, handler: (event: ProgressEvent) => void): () => void {
    return this.listen(progressSubject(requestId), (data, subject, ctx) => {
      if (checkProgress.Check(data)) handler(data);
      else this.log.warn({ subj: subject, rid: ctx.requestId }, 'a progress step that does not match its contract: dropped');
    });
  }

  /**
   * Take an event as it is published (core NATS: every process that listens gets it; none is
   * kept for a process that is away: `consume` is for that). The payload is checked against
   * its schema first (one that does not match is logged and dropped); the handler's throw or
   * rejection is logged and never stops the subscription. Per-subject stats and the log line
   * of `serve`. Returns the unsubscribe.
   */
  on<E extends EventDef>(def: E, handler: (payload: PayloadOf<E>, ctx: Ctx) => void | Promise<void>): () => void {
    const sub = this.nc.subscribe(this.subject(def.subject), {
      callback: (err, msg) => {
        if (err) return;
        const ctx = ctxFrom(msg.headers);
        let data: unknown;
        try {
          data = JSON.parse(dec.decode(msg.data));
        } catch {
          this.log.warn({ subj: def.subject, rid: ctx.requestId }, 'an event that is not JSON: dropped');
          return;
        }
        void this.takeEvent(def, data, ctx, async (payload) => { await handler(payload as PayloadOf<E>, ctx); }, false).catch(() => undefined);
      },
    });
    return () => sub.unsubscribe();
  }

  /**
   * One event, checked and handled, counted and logged like a request. `rethrow`: a consumer's
   * handler failure goes back to the pull loop (the event comes again); a payload that breaks
   * its contract never does (it would fail again): `consume` terminates it.
   */
  private async takeEvent(def: EventDef, data: unknown, ctx: Ctx, handler: (payload: unknown) => Promise<void>, rethrow: boolean): Promise<void> {
    const stats = this.statsFor(def.subject, 'event');
    const started = performance.now();
    stats.begin();
    let error: CortadoError | undefined;
    if (!def.checkPayload.Check(data)) {
      error = new CortadoError('VALIDATION_FAILED', `${def.subject}: the event does not match its contract`, { errors: describeErrors(def.checkPayload, data) });
      stats.add(performance.now() - started, true, error.code);
      this.log.warn({ rid: ctx.requestId, subj: def.subject, code: error.code, errors: error.details?.errors }, error.message);
      return;
    }
    // a span per event taken, under the publisher's (protocol/tracing.ts); none while tracing is off
    const span = startSpan(def.subject, ctx.trace, 'consumer', { 'cortado.request_id': ctx.requestId, 'messaging.system': 'nats', 'messaging.destination.name': def.subject });
    if (span) ctx.trace = span.traceparent;
    try {
      await handler(data);
    } catch (err) {
      error = toCortadoError(err);
      if (rethrow) {
        stats.add(performance.now() - started, true, error.code);
        span?.end({ code: error.code, message: error.message });
        logHandled(this.log, { rid: ctx.requestId, subj: def.subject, ms: performance.now() - started }, error);
        throw err;
      }
    }
    const ms = performance.now() - started;
    stats.add(ms, error !== undefined, error?.code);
    span?.end(error ? { code: error.code, message: error.message } : undefined);
    logHandled(this.log, { rid: ctx.requestId, subj: def.subject, ms }, error);
  }

  /** What the JetStream pull loop (protocol/bus-consumer.ts) needs of this bus. */
  private get consumerHost(): ConsumerHost {
    return { nc: this.nc, prefix: this.prefix, log: this.log, send: (w) => this.send(w), closed: () => this.closed };
  }

  /**
   * Round trip to the server: everything published before is on the server after it, and the
   * durable events waiting in the outbox are stored (waited for up to OUTBOX_WAIT_MS).
   */
  async flush(): Promise<void> {
    this.flushOutgoing();
    await this.nc.flush();
    await this.durable.settled(Date.now() + OUTBOX_WAIT_MS);
  }

  /**
   * Why a durable event published now might never reach the audit trail, as the error a
   * question is refused with (the caller decides whether to: config audit.required); undefined
   * when it will get there. Two reasons: JetStream did not keep the event stream when it was
   * made (ensureEventStream failed; tried again every few seconds), or the outbox is full.
   */
  eventTrouble(): CortadoError | undefined {
    return this.durable.trouble();
  }

  /** How many durable events wait for JetStream's acknowledgement, and the outbox's counters. */
  outboxStats(): OutboxStats {
    return this.durable.stats();
  }

  // ---- JetStream ----------------------------------------------------------------------

  /**
   * Create the event stream if missing; from then on durable events go through the outbox.
   * When JetStream cannot keep it (not enabled, out of storage: "insufficient storage
   * resources"), events still flow as plain messages (warned), `eventTrouble()` says so, and
   * making the stream is tried again every STREAM_RETRY_MS until it works.
   */
  async ensureEventStream(opts: StreamOptions = {}): Promise<boolean> {
    return this.durable.ensureStream({ replicas: this.replicas, ...opts });
  }

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
  async consumeEvents(
    durable: string,
    handler: (subject: string, data: unknown, ctx: Ctx) => Promise<void>,
    opts: ConsumeOptions = {},
  ): Promise<{ stop(): Promise<void> }> {
    return pullConsumer(this.consumerHost, durable, handler, opts);
  }

  /**
   * `consumeEvents` typed: only the events of `defs` are handed on, each checked against its
   * schema (one that does not match is logged and terminated: it would fail again), with the
   * per-subject stats and log line of `serve`. Others in the stream are acknowledged unread.
   */
  async consume<const E extends readonly EventDef[]>(
    durable: string,
    defs: E,
    handler: (event: EventOf<E[number]>, ctx: Ctx) => Promise<void>,
    opts: ConsumeOptions = {},
  ): Promise<{ stop(): Promise<void> }> {
    const bySubject = new Map(defs.map((d) => [d.subject, d] as const));
    return pullConsumer(this.consumerHost, durable, async (subject, data, ctx) => {
      const def = bySubject.get(subject);
      if (!def) return;
      await this.takeEvent(def, data, ctx, (payload) => handler({ subject: def.subject, payload } as EventOf<E[number]>, ctx), true);
    }, opts);
  }

  // ---- key-value ----------------------------------------------------------------------

  /** A typed bucket (protocol/kv.ts) in JetStream KV, made when missing. */
  bucket<T>(bucket: Bucket, opts: BucketOptions = {}): Promise<Kv<T>> {
    return openBucket<T>(this.nc, bucketName(this.prefix, bucket), { replicas: this.replicas, ...opts });
  }

  /** A JetStream Object Store bucket (protocol/bus-objects.ts), made when missing: files between processes. */
  objects(bucket: Bucket, opts: ObjectBucketOptions = {}): Promise<ObjectBucket> {
    return openObjects(this.nc, bucketName(this.prefix, bucket), { replicas: this.replicas, ...opts });
  }

  // ---- work queues --------------------------------------------------------------------

  /** A JetStream work queue (protocol/bus-queue.ts): stream and consumer made when missing. */
  workQueue<D extends QueueDef>(def: D, opts: WorkQueueOptions): Promise<WorkQueue<D>> {
    return WorkQueue.open(this.nc, def, this.prefix, this.log, { replicas: this.replicas, ...opts });
  }

}

export type { Static, TSchema };

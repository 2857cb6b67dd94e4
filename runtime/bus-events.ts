/**
 * Events and plain subjects, on the bus's connection (runtime/bus-connection.ts):
 *
 * - `publish(def, payload)`: a fact; a durable one goes through the outbox
 *   (runtime/bus-durable.ts) once the event stream is kept, acknowledged by JetStream.
 * - `on(def, handler)` (core NATS, every listening process) and `consume(durable, defs, …)`
 *   (a durable JetStream consumer, runtime/bus-consumer.ts): each payload is checked against
 *   its schema where it enters the process, and handed on typed; a handler never checks it again.
 * - `publishTo`/`listen`, `progress`/`onProgress`: subjects built in protocol/ (progress
 *   streams, `cortado tap`).
 */
import { randomUUID } from 'node:crypto';
import { Compile } from 'typebox/compile';
import { describeErrors, type EventDef, type EventOf, type PayloadOf } from '../protocol/define.js';
import { CortadoError, toCortadoError } from '../protocol/errors.js';
import { Header } from '../protocol/headers.js';
import { ctxFrom, eventHeaders, type Ctx } from './bus-headers.js';
import type { BusConnection } from './bus-connection.js';
import { pullConsumer, type ConsumeOptions } from './bus-consumer.js';
import { DurableEvents, type OutboxStats, type StreamOptions } from './bus-durable.js';
import { planStorage, type StoragePlan } from './bus-storage.js';
import type { Serving } from './bus-serving.js';
import { logHandled } from './bus-stats.js';
import { registerOutbox } from './metrics.js';
import { startSpan } from './tracing.js';
import { progressSubject } from '../protocol/subjects.js';
import { ProgressEvent } from '../protocol/schemas/progress.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
const checkProgress = Compile(ProgressEvent);
/** while the event stream does not fit in what JetStream offers, how often the storage plan is made again */
const REPLAN_MS = 60_000;

export class Events {
  /** the event stream and the outbox of durable events */
  private readonly durable: DurableEvents;
  /** stop counting this outbox in /metrics (runtime/metrics.ts) */
  private readonly stopOutboxMetrics: () => void;

  constructor(private readonly conn: BusConnection, private readonly serving: Serving, outboxMaxEvents?: number) {
    this.durable = new DurableEvents({
      nc: conn.nc, prefix: conn.prefix, log: conn.log, ...(outboxMaxEvents !== undefined ? { max: outboxMaxEvents } : {}),
      send: (write) => conn.send(write), down: () => conn.down,
    });
    this.stopOutboxMetrics = registerOutbox(() => this.durable.stats());
    conn.watch({
      lost: () => { this.durable.pause(); return {}; },
      back: () => this.durable.resume(),
      fields: () => ({ waiting_events: this.durable.waiting }),
    });
  }

  /**
   * Publish a fact. The JetStream stream keeps it; duplicates (same id) are dropped. A durable
   * event, once the stream is known to be kept (ensureEventStream), goes through the outbox:
   * acknowledged by JetStream, sent again until it is. Nothing here waits for the ack.
   */
  publish<E extends EventDef>(def: E, payload: PayloadOf<E>, ctx: Ctx): void {
    const conn = this.conn;
    if (conn.closed()) return;
    if (conn.strict && !def.checkPayload.Check(payload)) {
      conn.log.error({ subj: def.subject, errors: describeErrors(def.checkPayload, payload) }, 'event does not match its contract');
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
      conn.log.warn({ err, subj: def.subject }, 'cannot encode event');
      return;
    }
    if (def.durable && this.durable.active) {
      const msgId = id ?? randomUUID();
      if (!id) h.set(Header.MsgId, msgId);
      this.durable.add({ id: msgId, subject: def.subject, requestId: ctx.requestId, data, headers: h });
      return;
    }
    conn.send(() => {
      try {
        conn.nc.publish(conn.subject(def.subject), data, { headers: h });
      } catch (err) {
        conn.log.warn({ err, subj: def.subject }, 'cannot publish event');
      }
    });
  }

  /** Publish JSON on a subject built in protocol/ (progress streams). */
  publishTo(relativeSubject: string, data: unknown): void {
    const conn = this.conn;
    if (conn.closed()) return;
    let bytes: Uint8Array;
    try {
      bytes = enc.encode(JSON.stringify(data));
    } catch (err) {
      conn.log.warn({ err, subj: relativeSubject }, 'cannot encode');
      return;
    }
    conn.send(() => {
      try {
        conn.nc.publish(conn.subject(relativeSubject), bytes);
      } catch (err) {
        conn.log.warn({ err, subj: relativeSubject }, 'cannot publish');
      }
    });
  }

  /**
   * Subscribe to a subject (or wildcard) built in protocol/: progress streams, `cortado tap`.
   * For an event with a definition, `on` is the typed way. A throw in `onMessage` is logged and
   * the message dropped: it never stops the subscription. Returns the unsubscribe.
   */
  listen(relativeSubject: string, onMessage: (data: unknown, subject: string, ctx: Ctx) => void): () => void {
    const conn = this.conn;
    const sub = conn.nc.subscribe(conn.subject(relativeSubject), {
      callback: (err, msg) => {
        if (err) return;
        let data: unknown;
        try {
          data = JSON.parse(dec.decode(msg.data));
        } catch {
          return;
        }
        const ctx = ctxFrom(msg.headers);
        const subject = msg.subject.slice(conn.prefix.length + 1);
        try {
          onMessage(data, subject, ctx);
        } catch (e) {
          conn.log.error({ err: e, subj: subject, rid: ctx.requestId }, 'a listener failed; the message is dropped');
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
      else this.conn.log.warn({ subj: subject, rid: ctx.requestId }, 'a progress step that does not match its contract: dropped');
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
    const conn = this.conn;
    const sub = conn.nc.subscribe(conn.subject(def.subject), {
      callback: (err, msg) => {
        if (err) return;
        const ctx = ctxFrom(msg.headers);
        let data: unknown;
        try {
          data = JSON.parse(dec.decode(msg.data));
        } catch {
          conn.log.warn({ subj: def.subject, rid: ctx.requestId }, 'an event that is not JSON: dropped');
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
    const log = this.conn.log;
    const stats = this.serving.statsFor(def.subject, 'event');
    const started = performance.now();
    stats.begin();
    let error: CortadoError | undefined;
    if (!def.checkPayload.Check(data)) {
      error = new CortadoError('VALIDATION_FAILED', `${def.subject}: the event does not match its contract`, { errors: describeErrors(def.checkPayload, data) });
      stats.add(performance.now() - started, true, error.code);
      log.warn({ rid: ctx.requestId, subj: def.subject, code: error.code, errors: error.details?.errors }, error.message);
      return;
    }
    // a span per event taken, under the publisher's (runtime/tracing.ts); none while tracing is off
    const span = startSpan(def.subject, ctx.trace, 'consumer', { 'cortado.request_id': ctx.requestId, 'messaging.system': 'nats', 'messaging.destination.name': def.subject });
    if (span) ctx.trace = span.traceparent;
    try {
      await handler(data);
    } catch (err) {
      error = toCortadoError(err);
      if (rethrow) {
        stats.add(performance.now() - started, true, error.code);
        span?.end({ code: error.code, message: error.message });
        logHandled(log, { rid: ctx.requestId, subj: def.subject, ms: performance.now() - started }, error);
        throw err;
      }
    }
    const ms = performance.now() - started;
    stats.add(ms, error !== undefined, error?.code);
    span?.end(error ? { code: error.code, message: error.message } : undefined);
    logHandled(log, { rid: ctx.requestId, subj: def.subject, ms }, error);
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
  consumeEvents(
    durable: string,
    handler: (subject: string, data: unknown, ctx: Ctx) => Promise<void>,
    opts: ConsumeOptions = {},
  ): Promise<{ stop(): Promise<void> }> {
    return pullConsumer(this.conn, durable, handler, opts);
  }

  /**
   * `consumeEvents` typed: only the events of `defs` are handed on, each checked against its
   * schema (one that does not match is logged and terminated: it would fail again), with the
   * per-subject stats and log line of `serve`. Others in the stream are acknowledged unread.
   */
  consume<const E extends readonly EventDef[]>(
    durable: string,
    defs: E,
    handler: (event: EventOf<E[number]>, ctx: Ctx) => Promise<void>,
    opts: ConsumeOptions = {},
  ): Promise<{ stop(): Promise<void> }> {
    const bySubject = new Map(defs.map((d) => [d.subject, d] as const));
    return pullConsumer(this.conn, durable, async (subject, data, ctx) => {
      const def = bySubject.get(subject);
      if (!def) return;
      await this.takeEvent(def, data, ctx, (payload) => handler({ subject: def.subject, payload } as EventOf<E[number]>, ctx), true);
    }, opts);
  }

  // ---- the event stream and the outbox ----------------------------------------------------

  /**
   * Create the event stream if missing; from then on durable events go through the outbox.
   * When JetStream cannot keep it (not enabled, out of storage: "insufficient storage
   * resources"), events still flow as plain messages (warned), `eventTrouble()` says so, and
   * making the stream is tried again every few seconds until it works.
   */
  ensureEventStream(opts: StreamOptions = {}): Promise<boolean> {
    const { nc, prefix, replicas, log } = this.conn;
    // planned once, before the actors make their buckets: the plan's probe holds storage for a
    // moment, and a bucket made meanwhile could be refused. While the event stream does not fit,
    // planned again now and then (REPLAN_MS), to notice a server given more storage.
    let last: { at: number; plan: StoragePlan } | undefined;
    const plan = async (): Promise<StoragePlan> => {
      if (last && (last.plan.short === undefined || Date.now() - last.at < REPLAN_MS)) return last.plan;
      last = { at: Date.now(), plan: await planStorage(nc, prefix, replicas, log) };
      return last.plan;
    };
    return this.durable.ensureStream({ replicas, plan, ...opts });
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

  /** Resolves when no durable event waits, or at the deadline. */
  settled(deadline: number): Promise<void> {
    return this.durable.settled(deadline);
  }

  /**
   * The bus closes: durable events still waiting get until `deadline` to be stored; what is left
   * then is logged at error level, by event id (runtime/bus-durable.ts).
   */
  async close(deadline: number): Promise<void> {
    await this.durable.close(deadline);
    this.stopOutboxMetrics();
  }
}

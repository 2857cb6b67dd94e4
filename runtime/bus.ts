/**
 * The bus: NATS behind a typed API, composed of parts that each take the one connection (the
 * line nats.js draws between its core and its services):
 *
 * | part | file | what |
 * |---|---|---|
 * | connection | runtime/bus-connection.ts | the NATS connection, writes sent together per turn of the event loop, lost and back, close |
 * | serving | runtime/bus-serving.ts | `serve`: the handler's wrapper (validation, deadline, error envelope, stats, log, span), THE in-flight registry, `stopServing` |
 * | requests | runtime/bus-requests.ts | `request`, `gather`: one reply inbox, timeouts, signs of life, local calls (`preferLocal`) |
 * | events | runtime/bus-events.ts | `publish`, `on`, `consume` (typed, checked once where they enter), the outbox, `listen`, progress |
 * | streams | runtime/bus-queue.ts, runtime/bus-consumer.ts, runtime/bus-durable.ts | work queues, the event consumer's pull loop, the event stream |
 * | KV, objects | runtime/bus-kv.ts, runtime/bus-objects.ts | typed buckets (runtime/kv.ts), the object store |
 * | storage | runtime/bus-storage.ts | the byte limits of the event stream and the buckets, fitted to what JetStream offers |
 *
 * `Bus` below is the facade the actors, the edge and the commands hold: each method hands over
 * to its part, and the parts are there too (`bus.serving`, …) for what needs one of them only.
 *
 * With `preferLocal` (config bus.prefer_local, on by default) a request for an actor that this
 * process serves is handed to its handler directly (same validation, in-flight tracking and
 * error model, no serialisation and no network hop); only requests for actors that live
 * elsewhere cross NATS. That holds for questions from the edge too: a process that runs the
 * edge and an assistant answers its own questions without a bus hop (the default, one-process
 * deployment), while an edge-only process (`--role edge`) spreads them over every assistant
 * through the queue group. `remote: true` forces the queue group for one request.
 */
import type { Static, TSchema } from 'typebox';
import type { EventDef, EventOf, PayloadOf, ReplyOf, RequestDef, RequestOf } from '../protocol/define.js';
import { CortadoError } from '../protocol/errors.js';
import type { Ctx } from './bus-headers.js';
import { BusConnection, type BusOptions } from './bus-connection.js';
import type { ConsumeOptions } from './bus-consumer.js';
import type { OutboxStats, StreamOptions } from './bus-durable.js';
import { Events } from './bus-events.js';
import { openBucket, type BucketOptions } from './bus-kv.js';
import { openObjects, type ObjectBucket, type ObjectBucketOptions } from './bus-objects.js';
import { WorkQueue, type QueueDef, type WorkQueueOptions } from './bus-queue.js';
import { Requests } from './bus-requests.js';
import { Serving, type Handler, type RequestInFlight } from './bus-serving.js';
import type { ServeStats } from './bus-stats.js';
import type { Kv } from './kv.js';
import type { Bucket } from '../protocol/subjects.js';
import type { ProgressEvent } from '../protocol/schemas/progress.js';

export type { Ctx, ServeStats, ConsumeOptions, BucketOptions, BusOptions, Handler, ObjectBucket, ObjectBucketOptions, RequestInFlight };
export type { WorkQueue, WorkItem, WorkQueueOptions, QueueDef } from './bus-queue.js';

/** how long flush() waits for the outbox, and close() without a deadline */
export const OUTBOX_WAIT_MS = 5_000;
/** how long a refusal for want of the audit trail, heard from another process, counts in auditTrouble() */
const AUDIT_REFUSAL_MS = 30_000;

export class Bus {
  readonly connection: BusConnection;
  readonly serving: Serving;
  readonly requests: Requests;
  readonly events: Events;
  /** the last AUDIT_UNAVAILABLE another process answered us with (auditTrouble) */
  private auditRefused: { at: number; err: CortadoError } | undefined;

  private constructor(conn: BusConnection, opts: BusOptions) {
    this.connection = conn;
    this.serving = new Serving(conn, opts.preferLocal ?? false);
    this.requests = new Requests(conn, this.serving);
    this.events = new Events(conn, this.serving, opts.outboxMaxEvents);
  }

  static async connect(opts: BusOptions): Promise<Bus> {
    return new Bus(await BusConnection.open(opts), opts);
  }

  // ---- the connection -----------------------------------------------------------------

  get prefix(): string { return this.connection.prefix; }
  get log(): BusOptions['log'] { return this.connection.log; }
  /** copies of what this bus makes in JetStream (config bus.replicas) */
  get replicas(): number { return this.connection.replicas; }
  get server(): string { return this.connection.server; }

  /** `cortado.sql.execute` for `sql.execute`. */
  subject(relative: string): string {
    return this.connection.subject(relative);
  }

  /** The connection as a probe sees it: up, reconnecting (since when), or closed. */
  state(): { state: 'up' | 'reconnecting' | 'closed'; down_for_ms?: number } {
    return this.connection.state();
  }

  /** Resolves when the connection is closed for good (server gone and no reconnect). */
  closedPromise(): Promise<void | Error> {
    return this.connection.closedPromise();
  }

  /**
   * Flush and close. Pending requests fail with SHUTTING_DOWN. Durable events still waiting in
   * the outbox get until `deadline` (the shutdown grace; OUTBOX_WAIT_MS when not given) to be
   * stored; what is left then is logged at error level, by event id, and is not in the audit
   * trail (the outbox lives in this process's memory).
   */
  async close(deadline: number = Date.now() + OUTBOX_WAIT_MS): Promise<void> {
    if (!this.connection.closing()) return;
    this.requests.close();
    this.connection.writeNow();
    await this.events.close(deadline);
    await this.connection.end();
  }

  /**
   * Round trip to the server: everything published before is on the server after it, and the
   * durable events waiting in the outbox are stored (waited for up to OUTBOX_WAIT_MS). While the
   * connection is lost it waits for it as `roundTrip` does, and fails as it does.
   */
  async flush(): Promise<void> {
    await this.connection.roundTrip();
    await this.events.settled(Date.now() + OUTBOX_WAIT_MS);
  }

  /**
   * Round trip to the server only (no wait for the outbox): what this process published and
   * subscribed before is on the server after it. While the connection is lost it waits for it
   * to come back up to `deadline` (HOLD_MS from now at the latest), then fails with
   * ACTOR_UNAVAILABLE, retryable (runtime/bus-connection.ts `roundTrip`).
   */
  roundTrip(deadline?: number): Promise<void> {
    return this.connection.roundTrip(deadline);
  }

  // ---- requests and serving (runtime/bus-requests.ts, runtime/bus-serving.ts) ----------

  /** `remote: true` always crosses NATS, even when this process serves the actor. */
  request<D extends RequestDef>(def: D, input: RequestOf<D>, ctx: Ctx, opts?: { timeoutMs?: number; remote?: boolean }): Promise<ReplyOf<D>> {
    return this.requests.request(def, input, ctx, opts).catch((err: unknown) => {
      // another process refused for want of the audit trail: this one's /health says so (auditTrouble)
      if (err instanceof CortadoError && err.code === 'AUDIT_UNAVAILABLE') this.auditRefused = { at: Date.now(), err };
      throw err;
    });
  }

  /** The answers of every process to a request each serves (sys.stats), within `timeoutMs`. */
  gather<D extends RequestDef>(def: D, input: RequestOf<D>, ctx: Ctx, opts?: { timeoutMs?: number; max?: number }): Promise<Array<ReplyOf<D>>> {
    return this.requests.gather(def, input, ctx, opts);
  }

  serve<D extends RequestDef>(def: D, handler: Handler<D>, opts?: { queue?: string }): void {
    this.serving.serve(def, handler, opts);
  }

  /** Per-subject counters of what this process handled: requests served, events taken. */
  stats(): ServeStats[] {
    return this.serving.stats();
  }

  /** How many handlers of these owners (or all) are running now. */
  busy(owners?: readonly string[]): number {
    return this.serving.busy(owners);
  }

  /** The requests whose handlers run in this process now, the oldest first. */
  requestsInFlight(): RequestInFlight[] {
    return this.serving.requestsInFlight();
  }

  /** Stop taking new messages for these owners, then wait for their handlers up to the deadline; how many were left. */
  stopServing(owners: readonly string[], deadline: number): Promise<number> {
    return this.serving.stopServing(owners, deadline);
  }

  // ---- events (runtime/bus-events.ts) -----------------------------------------------------

  publish<E extends EventDef>(def: E, payload: PayloadOf<E>, ctx: Ctx): void {
    this.events.publish(def, payload, ctx);
  }

  publishTo(relativeSubject: string, data: unknown): void {
    this.events.publishTo(relativeSubject, data);
  }

  listen(relativeSubject: string, onMessage: (data: unknown, subject: string, ctx: Ctx) => void): () => void {
    return this.events.listen(relativeSubject, onMessage);
  }

  progress(requestId: string, event: ProgressEvent): void {
    this.events.progress(requestId, event);
  }

  onProgress(requestId: string, handler: (event: ProgressEvent) => void): () => void {
    return this.events.onProgress(requestId, handler);
  }

  on<E extends EventDef>(def: E, handler: (payload: PayloadOf<E>, ctx: Ctx) => void | Promise<void>): () => void {
    return this.events.on(def, handler);
  }

  consumeEvents(durable: string, handler: (subject: string, data: unknown, ctx: Ctx) => Promise<void>, opts?: ConsumeOptions): Promise<{ stop(): Promise<void> }> {
    return this.events.consumeEvents(durable, handler, opts);
  }

  consume<const E extends readonly EventDef[]>(durable: string, defs: E, handler: (event: EventOf<E[number]>, ctx: Ctx) => Promise<void>, opts?: ConsumeOptions): Promise<{ stop(): Promise<void> }> {
    return this.events.consume(durable, defs, handler, opts);
  }

  ensureEventStream(opts?: StreamOptions): Promise<boolean> {
    return this.events.ensureEventStream(opts);
  }

  eventTrouble(): CortadoError | undefined {
    return this.events.eventTrouble();
  }

  /**
   * What `/health` says of the audit path: this process's own eventTrouble(), else the refusal
   * (AUDIT_UNAVAILABLE) another process answered one of our requests with in the last
   * AUDIT_REFUSAL_MS — an edge learns so that the actors' outbox is full, which it cannot see.
   */
  auditTrouble(): CortadoError | undefined {
    const own = this.events.eventTrouble();
    if (own) return own;
    const r = this.auditRefused;
    return r && Date.now() - r.at < AUDIT_REFUSAL_MS ? r.err : undefined;
  }

  outboxStats(): OutboxStats {
    return this.events.outboxStats();
  }

  // ---- streams, KV, objects ----------------------------------------------------------------

  /** A typed bucket (runtime/kv.ts) in JetStream KV, made when missing. */
  bucket<T>(bucket: Bucket, opts?: BucketOptions): Promise<Kv<T>> {
    return openBucket<T>(this.connection, bucket, opts);
  }

  /** A JetStream Object Store bucket (runtime/bus-objects.ts), made when missing: files between processes. */
  objects(bucket: Bucket, opts?: ObjectBucketOptions): Promise<ObjectBucket> {
    return openObjects(this.connection, bucket, opts);
  }

  /** A JetStream work queue (runtime/bus-queue.ts): stream and consumer made when missing. */
  workQueue<D extends QueueDef>(def: D, opts: WorkQueueOptions): Promise<WorkQueue<D>> {
    return WorkQueue.open(this.connection, def, opts);
  }
}

export type { Static, TSchema };

/**
 * The bus: with protocol/bus-durable.ts, the ONLY importer of the NATS client.
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
import { connect, headers as natsHeaders, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { AckPolicy, DeliverPolicy, jetstreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { Static, TSchema } from 'typebox';
import { describeErrors, type EventDef, type PayloadOf, type ReplyOf, type RequestDef, type RequestOf } from './define.js';
import { CortadoError, toCortadoError, type WireError } from './errors.js';
import { Header, MAX_HOPS } from './headers.js';
import type { Logger } from './log.js';
import { DurableEvents, type OutboxStats, type StreamOptions } from './bus-durable.js';
import { eventsStreamName } from './subjects.js';

/** What travels with every message: who asked, for which request, until when. */
export interface Ctx {
  requestId: string;
  user?: string;
  /** epoch ms; nobody waits for an answer after it */
  deadline?: number;
  hop?: number;
  /**
   * whose database connection the work runs on: `s:<id>` (an /auth/login session) or
   * `t:<id>` (an API token with a db_config); absent: the server's own database config
   */
  scope?: string;
}

export type Handler<D extends RequestDef> = (input: RequestOf<D>, ctx: Ctx) => Promise<ReplyOf<D>>;

type Envelope = { ok: true; data: unknown } | { ok: false; error: WireError };

interface Pending {
  resolve: (value: unknown) => void;
  reject: (err: CortadoError) => void;
  timer: NodeJS.Timeout;
  def: RequestDef;
  /** handed to the connection (lost with it when it drops) */
  written: boolean;
  since: number;
  /** sends it (again) */
  write?: () => void;
}

export interface BusOptions {
  url: string;
  prefix: string;
  /** connection name, visible in the NATS monitor */
  name: string;
  log: Logger;
  /** validate replies against their schema too (tests, development) */
  strict?: boolean;
  /** how long a connect attempt may take */
  connectTimeoutMs?: number;
  /** call handlers served by this process directly instead of over NATS (config bus.prefer_local) */
  preferLocal?: boolean;
  /** durable events waiting for JetStream at which questions are refused (config bus.outbox_max_events) */
  outboxMaxEvents?: number;
}

interface LocalRoute {
  def: RequestDef;
  handler: (input: never, ctx: Ctx) => Promise<unknown>;
  owner: string;
  stats: ServeStats;
}

type Outcome = { ok: true; data: unknown } | { ok: false; error: CortadoError };

export interface ServeStats {
  subject: string;
  handled: number;
  errors: number;
  totalMs: number;
}

const enc = new TextEncoder();
/** events taken per pull, and how often a consumer asks for what is pending */
const EVENT_BATCH = 256;
const EVENT_PULL_INTERVAL_MS = 100;
/** a pull that does not wait is answered at once; after this long the server is taken as gone */
const PULL_ANSWER_TIMEOUT_MS = 5_000;
/** the status of a pull that got no answer in that time */
const NO_ANSWER = -1;
const dec = new TextDecoder();
/** how long a request not yet sent waits for a lost connection to come back */
const HOLD_MS = 10_000;
/**
 * after a reconnect, how long "no responders" is taken for an actor's process that has not
 * resubscribed yet (the request goes again every RESEND_NO_RESPONDERS_MS) rather than for none
 */
const RESUBSCRIBE_GRACE_MS = 3_000;
const RESEND_NO_RESPONDERS_MS = 250;
/** writes kept while the connection is away; past it they are dropped (requests then fail after HOLD_MS) */
const HELD_MAX = 50_000;
/** how long flush() waits for the outbox, and close() without a deadline */
const OUTBOX_WAIT_MS = 5_000;

export class Bus {
  readonly prefix: string;
  readonly log: Logger;
  private readonly nc: NatsConnection;
  private readonly strict: boolean;
  private readonly inbox: string;
  private readonly pending = new Map<string, Pending>();
  private seq = 0;
  private readonly served: Array<{ sub: Subscription; owner: string; stats: ServeStats }> = [];
  private readonly inFlight = new Map<string, Set<Promise<unknown>>>();
  private readonly local = new Map<string, LocalRoute>();
  private readonly preferLocal: boolean;
  private closed = false;
  /** writes waiting for the end of this turn of the event loop (see `send`) */
  private outgoing: Array<() => void> = [];
  private readonly flushOutgoing = (): void => {
    const batch = this.outgoing;
    this.outgoing = [];
    if (this.down) {
      this.hold(batch);
      return;
    }
    for (const write of batch) write();
  };
  /** the connection is lost (the client reconnects); since when */
  private down = false;
  private downSince = 0;
  private reconnectedAt = 0;
  /** writes kept while the connection is lost, sent when it is back */
  private held: Array<() => void> = [];
  private heldDropped = 0;
  private holdTimer: NodeJS.Timeout | undefined;

  /** the event stream and the outbox of durable events */
  private readonly durable: DurableEvents;

  private constructor(nc: NatsConnection, opts: BusOptions) {
    this.nc = nc;
    this.prefix = opts.prefix;
    this.log = opts.log;
    this.strict = opts.strict ?? false;
    this.preferLocal = opts.preferLocal ?? false;
    this.inbox = `_INBOX.${randomUUID().replace(/-/g, '')}`;
    this.durable = new DurableEvents({
      nc, prefix: opts.prefix, log: opts.log, ...(opts.outboxMaxEvents !== undefined ? { max: opts.outboxMaxEvents } : {}),
      send: (write) => this.send(write), down: () => this.down,
    });
    this.nc.subscribe(`${this.inbox}.*`, { callback: (err, msg) => { this.onReply(err, msg); } });
    void this.watchConnection();
  }

  static async connect(opts: BusOptions): Promise<Bus> {
    const nc = await connect({
      servers: opts.url,
      name: opts.name,
      timeout: opts.connectTimeoutMs ?? 2_000,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      noAsyncTraces: true,
    });
    return new Bus(nc, opts);
  }

  /** `cortado.sql.execute` for `sql.execute`. */
  subject(relative: string): string {
    return `${this.prefix}.${relative}`;
  }

  get server(): string {
    return this.nc.getServer();
  }

  // ---- request/reply ------------------------------------------------------------------

  /** `remote: true` always crosses NATS, even when this process serves the actor. */
  request<D extends RequestDef>(def: D, input: RequestOf<D>, ctx: Ctx, opts: { timeoutMs?: number; remote?: boolean } = {}): Promise<ReplyOf<D>> {
    if (this.closed) return Promise.reject(new CortadoError('SHUTTING_DOWN', 'the bus connection is closed'));
    const hop = (ctx.hop ?? 0) + 1;
    if (hop > MAX_HOPS) return Promise.reject(new CortadoError('INTERNAL', `too many hops (${hop}) for ${def.subject}`));
    let timeoutMs = opts.timeoutMs ?? def.timeoutMs;
    if (ctx.deadline !== undefined) timeoutMs = Math.min(timeoutMs, Math.max(1, ctx.deadline - Date.now()));
    const route = opts.remote ? undefined : this.local.get(def.subject);
    if (route) return this.callLocal(route, input, { ...ctx, hop }, timeoutMs) as Promise<ReplyOf<D>>;
    const id = (++this.seq).toString(36);
    const headers = this.headersFor({ ...ctx, hop });
    let payload: Uint8Array;
    try {
      payload = enc.encode(JSON.stringify(input));
    } catch (err) {
      return Promise.reject(new CortadoError('INTERNAL', `cannot encode ${def.subject} request`, undefined, { cause: err }));
    }
    return new Promise<ReplyOf<D>>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new CortadoError('TIMEOUT', `${def.owner} did not answer ${def.subject} within ${timeoutMs} ms`, { subject: def.subject }));
      }, timeoutMs);
      const p: Pending = { resolve: resolve as (v: unknown) => void, reject, timer, def, written: false, since: Date.now() };
      this.pending.set(id, p);
      p.write = () => {
        if (this.pending.get(id) !== p) return; // given up while the connection was away
        try {
          this.nc.publish(this.subject(def.subject), payload, { reply: `${this.inbox}.${id}`, headers });
          p.written = true;
        } catch (err) {
          clearTimeout(timer);
          this.pending.delete(id);
          reject(new CortadoError('ACTOR_UNAVAILABLE', `cannot reach the bus: ${(err as Error).message}`));
        }
      };
      this.send(p.write);
    });
  }

  private onReply(err: Error | null, msg: Msg): void {
    if (err) {
      this.log.error({ err }, 'reply inbox failed');
      return;
    }
    const id = msg.subject.slice(this.inbox.length + 1);
    const p = this.pending.get(id);
    if (!p) return; // late reply after a timeout
    if (msg.headers?.code === 503 && msg.data.length === 0 && p.write && Date.now() - this.reconnectedAt < RESUBSCRIBE_GRACE_MS) {
      // nobody got it (so nothing ran): the actor's process may not have resubscribed after
      // the broker came back yet; the same message goes again in a moment
      p.written = false;
      const write = p.write;
      setTimeout(() => this.send(write), RESEND_NO_RESPONDERS_MS).unref();
      return;
    }
    this.pending.delete(id);
    clearTimeout(p.timer);
    if (msg.headers?.code === 503 && msg.data.length === 0) {
      p.reject(new CortadoError('ACTOR_UNAVAILABLE', `no ${p.def.owner} actor is running (${p.def.subject})`, { actor: p.def.owner }));
      return;
    }
    let env: Envelope;
    try {
      env = JSON.parse(dec.decode(msg.data)) as Envelope;
    } catch {
      p.reject(new CortadoError('INTERNAL', `unreadable reply on ${p.def.subject}`));
      return;
    }
    if (env.ok) {
      const bad = this.replyMismatch(p.def, env.data);
      if (bad) p.reject(bad);
      else p.resolve(env.data);
    } else {
      p.reject(CortadoError.fromWire(env.error));
    }
  }

  /** In strict mode, a reply that breaks its contract is an INTERNAL error (both paths). */
  private replyMismatch(def: RequestDef, data: unknown): CortadoError | undefined {
    if (!this.strict || def.checkReply.Check(data)) return undefined;
    const errors = describeErrors(def.checkReply, data);
    this.log.error({ subj: def.subject, errors }, 'reply does not match its contract');
    return new CortadoError('INTERNAL', `reply on ${def.subject} does not match its contract`, { errors });
  }

  /** A request for an actor served in this process: the handler, directly, with the same rules. */
  private callLocal(route: LocalRoute, input: unknown, ctx: Ctx, timeoutMs: number): Promise<unknown> {
    const work = this.handle(route.def, route.handler, input, ctx, route.stats);
    const tracked = this.inFlight.get(route.owner);
    tracked?.add(work);
    void work.finally(() => tracked?.delete(work));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new CortadoError('TIMEOUT', `${route.def.owner} did not answer ${route.def.subject} within ${timeoutMs} ms`, { subject: route.def.subject }));
      }, timeoutMs);
      void work.then((out) => {
        clearTimeout(timer);
        if (!out.ok) return reject(out.error);
        const bad = this.replyMismatch(route.def, out.data);
        if (bad) reject(bad);
        else resolve(out.data);
      });
    });
  }

  // ---- serving ------------------------------------------------------------------------

  serve<D extends RequestDef>(def: D, handler: Handler<D>, opts: { queue?: string } = {}): void {
    const owner = opts.queue ?? def.owner;
    const stats: ServeStats = { subject: def.subject, handled: 0, errors: 0, totalMs: 0 };
    let set = this.inFlight.get(owner);
    if (!set) this.inFlight.set(owner, (set = new Set()));
    const tracked = set;
    const sub = this.nc.subscribe(this.subject(def.subject), {
      queue: owner,
      callback: (err, msg) => {
        if (err) {
          this.log.error({ err, subj: def.subject }, 'subscription failed');
          return;
        }
        const work = this.dispatch(def, handler, msg, stats);
        tracked.add(work);
        void work.finally(() => tracked.delete(work));
      },
    });
    this.served.push({ sub, owner, stats });
    if (this.preferLocal) this.local.set(def.subject, { def, handler: handler as LocalRoute['handler'], owner, stats });
  }

  private async dispatch<D extends RequestDef>(def: D, handler: Handler<D>, msg: Msg, stats: ServeStats): Promise<void> {
    const ctx = this.ctxFrom(msg.headers);
    let input: unknown;
    let out: Outcome;
    try {
      input = msg.data.length ? JSON.parse(dec.decode(msg.data)) : {};
      out = await this.handle(def, handler, input, ctx, stats);
    } catch {
      out = { ok: false, error: new CortadoError('VALIDATION_FAILED', `${def.subject}: the message is not JSON`) };
    }
    if (!msg.reply) return;
    const env: Envelope = out.ok ? out : { ok: false, error: out.error.toWire() };
    let body: Uint8Array;
    try {
      body = enc.encode(JSON.stringify(env));
    } catch (err) {
      this.log.error({ err, subj: def.subject }, 'cannot encode reply');
      body = enc.encode(JSON.stringify({ ok: false, error: new CortadoError('INTERNAL', 'cannot encode reply').toWire() }));
    }
    const max = this.nc.info?.max_payload;
    if (max !== undefined && body.length > max) {
      this.log.warn({ rid: ctx.requestId, subj: def.subject, bytes: body.length, max }, 'reply over the bus payload limit');
      const e = new CortadoError('LIMIT_EXCEEDED', `the answer (${mb(body.length)}) is over the bus message limit (${mb(max)}): ask for fewer rows or raise max_payload in the NATS server config`);
      body = enc.encode(JSON.stringify({ ok: false, error: e.toWire() }));
    }
    this.send(() => {
      try {
        msg.respond(body);
      } catch (err) {
        this.log.warn({ err, subj: def.subject }, 'cannot send reply');
      }
    });
  }

  /**
   * Every write of ours to NATS waits for the end of the current turn of the event loop
   * (setImmediate: after the I/O callbacks of this turn), then all of them go out together.
   * The client already coalesces what is published in one synchronous run; under load one
   * turn handles many replies, events and acks, and each separate socket write costs more
   * CPU than the message itself (on loopback the kernel does the receiver's work in the
   * sender's write). Order is kept: one queue for requests, replies, events and acks.
   */
  private send(write: () => void): void {
    if (this.outgoing.push(write) === 1) setImmediate(this.flushOutgoing);
  }

  /** Validate, check the deadline, run the handler, normalise what it throws, count and log. Never rejects. */
  private async handle(def: RequestDef, handler: LocalRoute['handler'], input: unknown, ctx: Ctx, stats: ServeStats): Promise<Outcome> {
    const started = performance.now();
    let out: Outcome;
    try {
      if (!def.checkRequest.Check(input)) {
        throw new CortadoError('VALIDATION_FAILED', `${def.subject}: the message does not match its contract`, {
          errors: describeErrors(def.checkRequest, input),
        });
      }
      if (ctx.deadline !== undefined && ctx.deadline < Date.now()) {
        throw new CortadoError('TIMEOUT', `${def.subject}: the deadline passed before the work started`);
      }
      const data = await handler(input as never, ctx);
      out = { ok: true, data };
    } catch (err) {
      const e = toCortadoError(err);
      out = { ok: false, error: e };
      stats.errors++;
      const line = { rid: ctx.requestId, subj: def.subject, code: e.code, ms: round(performance.now() - started) };
      if (e.httpStatus >= 500) this.log.error({ ...line, err: e.cause ?? e }, e.message);
      else this.log.info(line, e.message);
    }
    const ms = performance.now() - started;
    stats.handled++;
    stats.totalMs += ms;
    if (out.ok && this.log.isLevelEnabled('info')) this.log.info({ rid: ctx.requestId, subj: def.subject, code: 'OK', ms: round(ms) }, 'handled');
    return out;
  }

  /** Per-subject counters of what this process served. */
  stats(): ServeStats[] {
    return this.served.map((s) => ({ ...s.stats }));
  }

  /** How many handlers of these owners (or all) are running now. */
  busy(owners?: readonly string[]): number {
    let n = 0;
    for (const [owner, set] of this.inFlight) if (!owners || owners.includes(owner)) n += set.size;
    return n;
  }

  /**
   * Stop taking new messages for these owners (others keep serving), then wait for their
   * in-flight handlers, up to the deadline. Returns how many were still running.
   */
  async stopServing(owners: readonly string[], deadline: number): Promise<number> {
    for (const [subject, route] of this.local) if (owners.includes(route.owner)) this.local.delete(subject);
    const mine = this.served.filter((s) => owners.includes(s.owner));
    await Promise.all(mine.map((s) => s.sub.drain().catch(() => s.sub.unsubscribe())));
    for (;;) {
      const running = owners.flatMap((o) => [...(this.inFlight.get(o) ?? [])]);
      if (running.length === 0) return 0;
      const left = deadline - Date.now();
      if (left <= 0) return running.length;
      await Promise.race([Promise.allSettled(running), sleep(left)]);
    }
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
    // an event says who and which request; deadlines, hops and scopes belong to requests
    const h = natsHeaders();
    h.set(Header.RequestId, ctx.requestId);
    if (ctx.user) h.set(Header.User, ctx.user);
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

  /** Subscribe to a subject (or wildcard) built in protocol/. Returns the unsubscribe. */
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
        onMessage(data, msg.subject.slice(this.prefix.length + 1), this.ctxFrom(msg.headers));
      },
    });
    return () => sub.unsubscribe();
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
    return this.durable.ensureStream(opts);
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
    opts: { ackWaitMs?: number; retryDelayMs?: number; intervalMs?: number; batch?: number; active?: () => boolean; startAt?: 'all' | 'new' } = {},
  ): Promise<{ stop(): Promise<void> }> {
    const stream = eventsStreamName(this.prefix);
    const batch = Math.max(1, opts.batch ?? EVENT_BATCH);
    const intervalMs = Math.max(1, opts.intervalMs ?? EVENT_PULL_INTERVAL_MS);
    const jsm = await jetstreamManager(this.nc, { timeout: 5_000 });
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
        this.log.info({ durable }, 'event consumer created');
      }
    };
    const removeConsumer = async (): Promise<void> => {
      const gone = await jsm.consumers.delete(stream, durable).catch((err: unknown) => /not found/i.test(String((err as Error).message)));
      if (gone) this.log.info({ durable }, 'event consumer removed: nothing reads the stream for it now');
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
    const strip = this.prefix.length + 1;

    // What a pull delivers arrives under each event's own subject (only the statuses name the
    // pull), so arrivals are kept in order until the loop takes them, late ones included.
    const received: Msg[] = [];
    /** the pull being answered, and how to end it */
    let current: { id: string; end: (status: number) => void } | undefined;
    const sub = this.nc.subscribe(`${inbox}.*`, {
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
      this.send(() => {
        try {
          this.nc.publish(nextSubject, pullRequest, { reply: `${inbox}.${id}` });
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
      this.send(() => {
        try {
          this.nc.publish(to, payload);
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
      this.log.warn({ durable, ...line }, msg);
    };
    const loop = (async () => {
      while (!stopped && !this.closed) {
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
            this.log.warn({ subj: m.subject, durable }, 'an event that is not JSON: skipped');
            reply(m, term);
            continue;
          }
          try {
            await handler(m.subject.slice(strip), data, this.ctxFrom(m.headers));
            reply(m, ack);
          } catch (err) {
            this.log.warn({ subj: m.subject, durable, err: (err as Error).message }, 'event handler failed: it comes again');
            reply(m, nak);
          }
        }
        if (stopped || this.closed) break;
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
      if (!this.closed) this.log.warn({ durable, err: (err as Error).message }, 'the event consumer stopped');
    });
    return {
      async stop() {
        stopped = true;
        wake?.();
        current?.end(0);
        await loop;
        sub.unsubscribe();
      },
    };
  }

  /** Open (or create) a KV bucket. */
  async kv(bucket: string, opts: { ttlMs?: number; history?: number; maxBytes?: number } = {}): Promise<KV> {
    const kvm = new Kvm(this.nc);
    return kvm.create(bucket, {
      ...(opts.ttlMs !== undefined ? { ttl: opts.ttlMs } : {}),
      history: opts.history ?? 1,
      ...(opts.maxBytes !== undefined ? { max_bytes: opts.maxBytes } : {}),
    });
  }

  // ---- lifecycle ----------------------------------------------------------------------

  /**
   * Flush and close. Pending requests fail with SHUTTING_DOWN. Durable events still waiting in
   * the outbox get until `deadline` (the shutdown grace; OUTBOX_WAIT_MS when not given) to be
   * stored; what is left then is logged at error level, by event id, and is not in the audit
   * trail (the outbox lives in this process's memory).
   */
  async close(deadline: number = Date.now() + OUTBOX_WAIT_MS): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new CortadoError('SHUTTING_DOWN', 'the bus connection closed'));
      this.pending.delete(id);
    }
    this.flushOutgoing();
    await this.durable.close(deadline);
    if (this.holdTimer) clearInterval(this.holdTimer);
    try {
      await this.nc.drain();
    } catch {
      await this.nc.close().catch(() => undefined);
    }
  }

  /** Resolves when the connection is closed for good (server gone and no reconnect). */
  closedPromise(): Promise<void | Error> {
    return this.nc.closed();
  }

  // ---- the connection -----------------------------------------------------------------

  private async watchConnection(): Promise<void> {
    try {
      for await (const s of this.nc.status()) {
        if (s.type === 'disconnect') this.onDisconnect();
        else if (s.type === 'reconnect') this.onReconnect();
      }
    } catch {
      // the connection closed
    }
  }

  /**
   * The connection dropped. What was sent and not answered cannot be answered any more (the
   * server forgets our inbox with us): those requests fail now instead of at their timeout.
   * What is sent from now on is kept until the connection is back (see `flushOutgoing`).
   */
  private onDisconnect(): void {
    if (this.down) return;
    this.down = true;
    this.downSince = Date.now();
    this.durable.pause();
    let failed = 0;
    for (const [id, p] of this.pending) {
      if (!p.written) continue;
      this.pending.delete(id);
      clearTimeout(p.timer);
      failed++;
      p.reject(new CortadoError('ACTOR_UNAVAILABLE', `the connection to the message broker was lost while ${p.def.owner} worked on ${p.def.subject}: its answer cannot arrive`, { actor: p.def.owner }));
    }
    this.log.warn({ failed, waiting_events: this.durable.waiting }, 'lost the connection to NATS: reconnecting');
    this.holdTimer = setInterval(() => this.expireHeld(), 500);
    this.holdTimer.unref();
  }

  /** Requests that waited HOLD_MS for the connection to come back fail. */
  private expireHeld(): void {
    const limit = Date.now() - HOLD_MS;
    for (const [id, p] of this.pending) {
      if (p.written || Math.max(p.since, this.downSince) > limit) continue;
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.reject(new CortadoError('ACTOR_UNAVAILABLE', `the message broker has been unreachable for ${Math.round((Date.now() - this.downSince) / 1000)} s: ${p.def.subject} was not sent`, { actor: p.def.owner }));
    }
  }

  private hold(writes: Array<() => void>): void {
    const room = HELD_MAX - this.held.length;
    if (writes.length > room) {
      if (this.heldDropped === 0) this.log.warn({ held: this.held.length }, 'the connection to NATS is still lost: further messages are dropped until it is back');
      this.heldDropped += writes.length - Math.max(0, room);
    }
    for (let i = 0; i < Math.min(room, writes.length); i++) this.held.push(writes[i]!);
  }

  /** Back: what was kept goes out first, in order; the outbox sends what waits again. */
  private onReconnect(): void {
    if (!this.down) return;
    this.down = false;
    this.reconnectedAt = Date.now();
    if (this.holdTimer) clearInterval(this.holdTimer);
    this.holdTimer = undefined;
    const held = this.held;
    this.held = [];
    this.log.info({ after_ms: Date.now() - this.downSince, held: held.length, dropped: this.heldDropped, waiting_events: this.durable.waiting }, 'reconnected to NATS');
    this.heldDropped = 0;
    this.outgoing = held.concat(this.outgoing);
    this.flushOutgoing();
    this.durable.resume();
  }

  // ---- headers ------------------------------------------------------------------------

  private headersFor(ctx: Ctx): MsgHdrs {
    const h = natsHeaders();
    h.set(Header.RequestId, ctx.requestId);
    if (ctx.user) h.set(Header.User, ctx.user);
    if (ctx.deadline !== undefined) h.set(Header.Deadline, String(ctx.deadline));
    if (ctx.hop !== undefined) h.set(Header.Hop, String(ctx.hop));
    if (ctx.scope) h.set(Header.Scope, ctx.scope);
    return h;
  }

  private ctxFrom(h: MsgHdrs | undefined): Ctx {
    const ctx: Ctx = { requestId: h?.get(Header.RequestId) || randomUUID() };
    const user = h?.get(Header.User);
    if (user) ctx.user = user;
    const deadline = Number(h?.get(Header.Deadline));
    if (Number.isFinite(deadline) && deadline > 0) ctx.deadline = deadline;
    const hop = Number(h?.get(Header.Hop));
    if (Number.isFinite(hop) && hop > 0) ctx.hop = hop;
    const scope = h?.get(Header.Scope);
    if (scope) ctx.scope = scope;
    return ctx;
  }
}

function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}

export type { KV, Static, TSchema };

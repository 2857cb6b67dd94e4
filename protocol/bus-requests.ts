/**
 * Request/reply and serving, on the bus's connection (protocol/bus-connection.ts):
 *
 * - `request(def, input, ctx)`: one wildcard inbox of our own (one subscription, a map of
 *   pending replies) instead of the client's per-request machinery; no responders →
 *   ACTOR_UNAVAILABLE, no answer in time → TIMEOUT; `preferLocal` hands a request for an actor
 *   of this process to its handler directly.
 * - `serve(def, handler)`: queue group = the owning actor; input validated with the compiled
 *   schema; anything thrown normalised into the reply envelope; in-flight handlers tracked so a
 *   stop can wait for them; per-subject stats (protocol/bus-stats.ts), also on sys.stats.
 * - `gather(def, …)`: the answers of every process to a request each serves (sys.stats).
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { describeErrors, type RequestDef, type ReplyOf, type RequestOf } from './define.js';
import { CortadoError, toCortadoError, type WireError } from './errors.js';
import { MAX_HOPS } from './headers.js';
import { ALIVE_HEADERS, ctxFrom, headersFor, type Ctx } from './bus-headers.js';
import { pace, requestKey } from './pacer.js';
import { Header } from './headers.js';
import { BusConnection, type BusOptions, type Pending } from './bus-connection.js';
import { logHandled, SubjectStats, type ServeStats } from './bus-stats.js';
import { busSeries, type BusSeries } from './metrics.js';
import { startSpan, traceOf } from './tracing.js';
import { SysStats } from './subjects.js';
import type { SysStatsReply } from './schemas/sys.js';

export type Handler<D extends RequestDef> = (input: RequestOf<D>, ctx: Ctx) => Promise<ReplyOf<D>>;

type Envelope = { ok: true; data: unknown } | { ok: false; error: WireError };

interface LocalRoute {
  def: RequestDef;
  handler: (input: never, ctx: Ctx) => Promise<unknown>;
  owner: string;
  stats: SubjectStats;
}

type Outcome = { ok: true; data: unknown } | { ok: false; error: CortadoError };

const enc = new TextEncoder();
const dec = new TextDecoder();
/**
 * after a reconnect, how long "no responders" is taken for an actor's process that has not
 * resubscribed yet (the request goes again every RESEND_NO_RESPONDERS_MS) rather than for none
 */
const RESUBSCRIBE_GRACE_MS = 3_000;
const RESEND_NO_RESPONDERS_MS = 250;
/**
 * Signs of life. A process that dies (kill -9, OOM, a lost host) while it works on a request
 * sends no answer and no error: its requester would wait the whole timeout (330 s for a
 * question). So a handler working on a remote request longer than ALIVE_EVERY_MS says so to the
 * reply subject every ALIVE_EVERY_MS (an empty message with Header.Alive; one timer per
 * process, nothing per request that ends sooner), and a requester waiting on a long request
 * (timeout ≥ LIVENESS_FROM_MS) that hears nothing for SILENT_AFTER_MS gives up with
 * ACTOR_UNAVAILABLE, retryable. Silence while the broker is away, or just after it came back,
 * does not count.
 */
const ALIVE_EVERY_MS = 1_000;
const SILENT_AFTER_MS = 6_000;
const LIVENESS_FROM_MS = 20_000;

export class RequestBus extends BusConnection {
  protected seq = 0;
  protected readonly served: Array<{ sub: Subscription; owner: string }> = [];
  /** what this process handled, per subject (requests and events): `stats()`, sys.stats */
  protected readonly handled = new Map<string, SubjectStats>();
  protected readonly name: string;
  protected readonly startedAt = new Date().toISOString();
  protected readonly inFlight = new Map<string, Set<Promise<unknown>>>();
  protected readonly local = new Map<string, LocalRoute>();
  protected readonly preferLocal: boolean;
  /** remote requests being handled here, with when they started (signs of life) */
  protected readonly working = new Map<Msg, number>();
  /** when liveness() last ran, and since when silence counts (after this process itself stalled, from then) */
  protected lastLiveness = Date.now();
  protected quietFrom = 0;
  protected constructor(nc: NatsConnection, opts: BusOptions) {
    super(nc, opts);
    this.preferLocal = opts.preferLocal ?? false;
    this.name = opts.name;
    this.nc.subscribe(`${this.inbox}.*`, { callback: (err, msg) => { this.onReply(err, msg); } });
    this.serveStats();
    setInterval(() => this.liveness(), ALIVE_EVERY_MS).unref();
  }

  /** Once a second: say "still working" for long handlings; give up on long requests gone silent. */
  protected liveness(): void {
    if (this.closed) return;
    const now = Date.now();
    // this process's own event loop stalled: the signs of life may be waiting in its socket
    if (now - this.lastLiveness > 2 * ALIVE_EVERY_MS) this.quietFrom = now;
    this.lastLiveness = now;
    if (!this.down) {
      for (const [msg, started] of this.working) {
        if (now - started < ALIVE_EVERY_MS) continue;
        try {
          msg.respond(undefined, { headers: ALIVE_HEADERS });
        } catch { /* the connection is away: the requester does not count silence then */ }
      }
    }
    if (this.down || now - this.reconnectedAt < SILENT_AFTER_MS) return;
    for (const [id, p] of this.pending) {
      if (!p.written || p.def.timeoutMs < LIVENESS_FROM_MS) continue;
      const heard = Math.max(p.heard ?? p.since, this.reconnectedAt, this.quietFrom);
      if (now - heard < SILENT_AFTER_MS) continue;
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.reject(new CortadoError('ACTOR_UNAVAILABLE', `the ${p.def.owner} process working on ${p.def.subject} stopped answering (no sign of life for ${Math.round((now - heard) / 1000)} s): it may have ended; try again`, { actor: p.def.owner }));
    }
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
    const series = busSeries(def.subject, 'client');
    if (route) return tracked(this.callLocal(route, input, { ...ctx, hop }, timeoutMs) as Promise<ReplyOf<D>>, series);
    const id = (++this.seq).toString(36);
    const headers = headersFor({ ...ctx, hop });
    let payload: Uint8Array;
    try {
      payload = enc.encode(JSON.stringify(input));
    } catch (err) {
      return Promise.reject(new CortadoError('INTERNAL', `cannot encode ${def.subject} request`, undefined, { cause: err }));
    }
    return tracked(new Promise<ReplyOf<D>>((resolve, reject) => {
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
    }), series);
  }

  protected onReply(err: Error | null, msg: Msg): void {
    if (err) {
      this.log.error({ err }, 'reply inbox failed');
      return;
    }
    const id = msg.subject.slice(this.inbox.length + 1);
    const p = this.pending.get(id);
    if (!p) return; // late reply after a timeout
    if (msg.data.length === 0 && msg.headers?.get(Header.Alive)) {
      p.heard = Date.now(); // still being worked on
      return;
    }
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
  protected replyMismatch(def: RequestDef, data: unknown): CortadoError | undefined {
    if (!this.strict || def.checkReply.Check(data)) return undefined;
    const errors = describeErrors(def.checkReply, data);
    this.log.error({ subj: def.subject, errors }, 'reply does not match its contract');
    return new CortadoError('INTERNAL', `reply on ${def.subject} does not match its contract`, { errors });
  }

  /** A request for an actor served in this process: the handler, directly, with the same rules. */
  protected callLocal(route: LocalRoute, input: unknown, ctx: Ctx, timeoutMs: number): Promise<unknown> {
    // a request's first hop is new work arriving (an HTTP request, a schedule): it waits its turn
    const work = this.handle(route.def, route.handler, input, ctx, route.stats, ctx.hop === 1);
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
    const stats = this.statsFor(def.subject, 'request');
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
    this.served.push({ sub, owner });
    if (this.preferLocal) this.local.set(def.subject, { def, handler: handler as LocalRoute['handler'], owner, stats });
  }

  protected async dispatch<D extends RequestDef>(def: D, handler: Handler<D>, msg: Msg, stats: SubjectStats): Promise<void> {
    const ctx = ctxFrom(msg.headers);
    let input: unknown;
    let out: Outcome;
    if (msg.reply) this.working.set(msg, Date.now());
    try {
      input = msg.data.length ? JSON.parse(dec.decode(msg.data)) : {};
      out = await this.handle(def, handler, input, ctx, stats, true);
    } catch {
      out = { ok: false, error: new CortadoError('VALIDATION_FAILED', `${def.subject}: the message is not JSON`) };
    } finally {
      if (msg.reply) this.working.delete(msg);
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

  /** Validate, check the deadline, run the handler, normalise what it throws, count and log. Never rejects. */
  protected async handle(def: RequestDef, handler: LocalRoute['handler'], input: unknown, ctx: Ctx, stats: SubjectStats, paced = false): Promise<Outcome> {
    // work that arrived (from NATS, or a request's first hop) waits its turn in a burst
    // (protocol/pacer.ts); a hop within this process goes on with the step that made it
    if (paced) {
      const turn = pace(requestKey(ctx.requestId));
      if (turn) await turn;
    }
    const started = performance.now();
    stats.begin();
    // a span per handled request, under the sender's (protocol/tracing.ts); none while tracing is off
    const span = startSpan(def.subject, traceOf(ctx), 'server', { 'cortado.request_id': ctx.requestId, 'messaging.system': 'nats', 'messaging.destination.name': def.subject, 'cortado.actor': def.owner });
    if (span) ctx = { ...ctx, trace: span.traceparent };
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
      out = { ok: false, error: toCortadoError(err) };
    }
    const ms = performance.now() - started;
    stats.add(ms, !out.ok, out.ok ? undefined : out.error.code);
    span?.end(out.ok ? undefined : { code: out.error.code, message: out.error.message });
    logHandled(this.log, { rid: ctx.requestId, subj: def.subject, ms }, out.ok ? undefined : out.error);
    return out;
  }

  protected statsFor(subject: string, kind: 'request' | 'event'): SubjectStats {
    let s = this.handled.get(subject);
    if (!s) this.handled.set(subject, (s = new SubjectStats(subject, kind)));
    return s;
  }

  /** Per-subject counters of what this process handled: requests served, events taken. */
  stats(): ServeStats[] {
    return [...this.handled.values()].map((s) => s.summary());
  }

  /**
   * sys.stats: every process answers (a queue group of its own), with its per-subject stats;
   * `gather(SysStats, …)` collects the answers.
   */
  protected serveStats(): void {
    this.serve(SysStats, async (): Promise<SysStatsReply> => ({
      process: this.name, host: hostname(), pid: process.pid, started_at: this.startedAt,
      subjects: this.stats().filter((s) => s.subject !== SysStats.subject),
    }), { queue: `sys.${this.inbox.slice(7)}` });
    // not counted in in-flight work: a stop never waits for it, and never stops it
    this.inFlight.delete(`sys.${this.inbox.slice(7)}`);
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

  /**
   * A request every process answers (a definition served with a queue group per process, like
   * sys.stats): the answers that arrive within `timeoutMs` (or the first `max` of them).
   */
  async gather<D extends RequestDef>(def: D, input: RequestOf<D>, ctx: Ctx, opts: { timeoutMs?: number; max?: number } = {}): Promise<Array<ReplyOf<D>>> {
    if (this.closed) throw new CortadoError('SHUTTING_DOWN', 'the bus connection is closed');
    const inbox = `_INBOX.${randomUUID().replace(/-/g, '')}`;
    const out: Array<ReplyOf<D>> = [];
    const max = opts.max ?? Number.MAX_SAFE_INTEGER;
    await new Promise<void>((resolve) => {
      const sub = this.nc.subscribe(inbox, {
        callback: (err, msg) => {
          if (err || msg.data.length === 0) return;
          try {
            const env = JSON.parse(dec.decode(msg.data)) as Envelope;
            if (env.ok && !this.replyMismatch(def, env.data)) out.push(env.data as ReplyOf<D>);
          } catch {
            // an unreadable answer is left out
          }
          if (out.length >= max) done();
        },
      });
      const timer = setTimeout(() => done(), opts.timeoutMs ?? 1_000);
      const done = () => { clearTimeout(timer); sub.unsubscribe(); resolve(); };
      const payload = enc.encode(JSON.stringify(input));
      this.send(() => {
        try {
          this.nc.publish(this.subject(def.subject), payload, { reply: inbox, headers: headersFor({ ...ctx, hop: (ctx.hop ?? 0) + 1 }) });
        } catch {
          done();
        }
      });
    });
    return out;
  }

}

/** The client side of a request in its series (protocol/metrics.ts): in flight, latency, error code. */
function tracked<T>(p: Promise<T>, series: BusSeries | undefined): Promise<T> {
  if (!series) return p;
  const started = performance.now();
  series.enter();
  return p.then(
    (v) => { series.leave(performance.now() - started); return v; },
    (err: unknown) => {
      series.leave(performance.now() - started, err instanceof CortadoError ? err.code : 'INTERNAL');
      throw err;
    },
  );
}

function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}

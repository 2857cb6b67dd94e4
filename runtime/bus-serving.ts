/**
 * Serving requests, on the bus's connection (runtime/bus-connection.ts), in the manner of
 * nats.js services: the bus owns the handler's wrapper, handlers stay plain async functions.
 *
 * - `serve(def, handler)`: queue group = the owning actor; input validated with the compiled
 *   schema; the deadline checked; anything thrown normalised into the reply envelope; one span
 *   and one log line per request; per-subject stats (runtime/bus-stats.ts), also on sys.stats.
 * - THE in-flight registry of this process: every handler running now, remote or local
 *   (preferLocal), with its request id and subject. A stop waits for an owner's handlers
 *   (`stopServing`); a failure nobody caught names the requests it may belong to
 *   (`requestsInFlight`, cli/crash.ts).
 * - signs of life: a handler working on a remote request longer than ALIVE_EVERY_MS says so to
 *   the requester every ALIVE_EVERY_MS (runtime/bus-requests.ts gives up on a silent one).
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Msg, Subscription } from '@nats-io/transport-node';
import { describeErrors, type ReplyOf, type RequestDef, type RequestOf } from '../protocol/define.js';
import { CortadoError, toCortadoError, type WireError } from '../protocol/errors.js';
import { ALIVE_HEADERS, ctxFrom, type Ctx } from './bus-headers.js';
import type { BusConnection } from './bus-connection.js';
import { logHandled, SubjectStats, type HandledKind, type ServeStats } from './bus-stats.js';
import { pace, requestKey } from './pacer.js';
import { startSpan, traceOf } from './tracing.js';
import { SysStats } from '../protocol/subjects.js';
import type { SysStatsReply } from '../protocol/schemas/sys.js';

export type Handler<D extends RequestDef> = (input: RequestOf<D>, ctx: Ctx) => Promise<ReplyOf<D>>;

export type Envelope = { ok: true; data: unknown } | { ok: false; error: WireError };
export type Outcome = { ok: true; data: unknown } | { ok: false; error: CortadoError };

/** A handler served in this process, for a request that does not cross NATS (preferLocal). */
export interface LocalRoute {
  def: RequestDef;
  handler: (input: never, ctx: Ctx) => Promise<unknown>;
  owner: string;
  stats: SubjectStats;
}

/** A request whose handler runs in this process now. */
export interface RequestInFlight {
  rid: string;
  subj: string;
}

interface Running extends RequestInFlight {
  owner: string;
}

const enc = new TextEncoder();
const dec = new TextDecoder();
/** how often a handler of a remote request says it still works on it */
export const ALIVE_EVERY_MS = 1_000;

export class Serving {
  /** what this process handled, per subject (requests and events): `stats()`, sys.stats */
  private readonly handled = new Map<string, SubjectStats>();
  private readonly served: Array<{ sub: Subscription; owner: string }> = [];
  /** the handlers running now, the oldest first (Set keeps the order they came in) */
  private readonly running = new Set<Running>();
  /** told when a handler ends (a stop waits for them) */
  private readonly waiters = new Set<() => void>();
  private readonly routes = new Map<string, LocalRoute>();
  /** remote requests being handled here, with when they started (signs of life) */
  private readonly working = new Map<Msg, number>();
  private readonly startedAt = new Date().toISOString();

  constructor(private readonly conn: BusConnection, private readonly preferLocal: boolean) {
    this.serveStats();
    setInterval(() => this.sayAlive(), ALIVE_EVERY_MS).unref();
  }

  /** The route of a subject served in this process (preferLocal), or undefined. */
  local(subject: string): LocalRoute | undefined {
    return this.routes.get(subject);
  }

  serve<D extends RequestDef>(def: D, handler: Handler<D>, opts: { queue?: string } = {}): void {
    this.subscribe(def, handler, opts.queue ?? def.owner, true);
  }

  private subscribe<D extends RequestDef>(def: D, handler: Handler<D>, owner: string, counted: boolean): void {
    const stats = this.statsFor(def.subject, 'request');
    const sub = this.conn.nc.subscribe(this.conn.subject(def.subject), {
      queue: owner,
      callback: (err, msg) => {
        if (err) {
          this.conn.log.error({ err, subj: def.subject }, 'subscription failed');
          return;
        }
        void this.dispatch(def, handler, msg, stats, counted ? owner : undefined);
      },
    });
    this.served.push({ sub, owner });
    if (this.preferLocal && counted) this.routes.set(def.subject, { def, handler: handler as LocalRoute['handler'], owner, stats });
  }

  /** One request from NATS: handled (counted in flight under `owner` when given), then answered. Never rejects. */
  private async dispatch<D extends RequestDef>(def: D, handler: Handler<D>, msg: Msg, stats: SubjectStats, owner: string | undefined): Promise<void> {
    const ctx = ctxFrom(msg.headers);
    const entry = owner === undefined ? undefined : this.enter(ctx.requestId, def.subject, owner);
    try {
      let out: Outcome;
      if (msg.reply) this.working.set(msg, Date.now());
      try {
        const input: unknown = msg.data.length ? JSON.parse(dec.decode(msg.data)) : {};
        out = await this.handle(def, handler, input, ctx, stats, true);
      } catch {
        out = { ok: false, error: new CortadoError('VALIDATION_FAILED', `${def.subject}: the message is not JSON`) };
      } finally {
        if (msg.reply) this.working.delete(msg);
      }
      if (msg.reply) this.reply(def, msg, out, ctx);
    } finally {
      if (entry) this.leave(entry);
    }
  }

  private reply(def: RequestDef, msg: Msg, out: Outcome, ctx: Ctx): void {
    const env: Envelope = out.ok ? out : { ok: false, error: out.error.toWire() };
    let body: Uint8Array;
    try {
      body = enc.encode(JSON.stringify(env));
    } catch (err) {
      this.conn.log.error({ err, subj: def.subject }, 'cannot encode reply');
      body = enc.encode(JSON.stringify({ ok: false, error: new CortadoError('INTERNAL', 'cannot encode reply').toWire() }));
    }
    const max = this.conn.nc.info?.max_payload;
    if (max !== undefined && body.length > max) {
      this.conn.log.warn({ rid: ctx.requestId, subj: def.subject, bytes: body.length, max }, 'reply over the bus payload limit');
      const e = new CortadoError('LIMIT_EXCEEDED', `the answer (${mb(body.length)}) is over the bus message limit (${mb(max)}): ask for fewer rows or raise max_payload in the NATS server config`);
      body = enc.encode(JSON.stringify({ ok: false, error: e.toWire() }));
    }
    this.conn.send(() => {
      try {
        msg.respond(body);
      } catch (err) {
        this.conn.log.warn({ err, subj: def.subject }, 'cannot send reply');
      }
    });
  }

  /**
   * A request for a route of this process, called directly (runtime/bus-requests.ts): counted
   * in flight like one from NATS. Never rejects.
   */
  callLocal(route: LocalRoute, input: unknown, ctx: Ctx): Promise<Outcome> {
    const entry = this.enter(ctx.requestId, route.def.subject, route.owner);
    // a request's first hop is new work arriving (an HTTP request, a schedule): it waits its turn
    const work = this.handle(route.def, route.handler, input, ctx, route.stats, ctx.hop === 1);
    void work.then(() => this.leave(entry));
    return work;
  }

  /** Validate, check the deadline, run the handler, normalise what it throws, count and log. Never rejects. */
  private async handle(def: RequestDef, handler: LocalRoute['handler'], input: unknown, ctx: Ctx, stats: SubjectStats, paced: boolean): Promise<Outcome> {
    // work that arrived (from NATS, or a request's first hop) waits its turn in a burst
    // (runtime/pacer.ts); a hop within this process goes on with the step that made it
    if (paced) {
      const turn = pace(requestKey(ctx.requestId));
      if (turn) await turn;
    }
    const started = performance.now();
    stats.begin();
    // a span per handled request, under the sender's (runtime/tracing.ts); none while tracing is off
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
    logHandled(this.conn.log, { rid: ctx.requestId, subj: def.subject, ms }, out.ok ? undefined : out.error);
    return out;
  }

  // ---- in flight ----------------------------------------------------------------------

  private enter(rid: string, subj: string, owner: string): Running {
    const entry: Running = { rid, subj, owner };
    this.running.add(entry);
    return entry;
  }

  private leave(entry: Running): void {
    this.running.delete(entry);
    if (this.waiters.size) for (const w of this.waiters) w();
  }

  /** The requests whose handlers run in this process now, the oldest first. */
  requestsInFlight(): RequestInFlight[] {
    const out: RequestInFlight[] = [];
    for (const r of this.running) out.push({ rid: r.rid, subj: r.subj });
    return out;
  }

  /** How many handlers of these owners (or all) are running now. */
  busy(owners?: readonly string[]): number {
    if (!owners) return this.running.size;
    let n = 0;
    for (const r of this.running) if (owners.includes(r.owner)) n++;
    return n;
  }

  /**
   * Stop taking new messages for these owners (others keep serving), then wait for their
   * in-flight handlers, up to the deadline. Returns how many were still running.
   */
  async stopServing(owners: readonly string[], deadline: number): Promise<number> {
    for (const [subject, route] of this.routes) if (owners.includes(route.owner)) this.routes.delete(subject);
    const mine = this.served.filter((s) => owners.includes(s.owner));
    await Promise.all(mine.map((s) => s.sub.drain().catch(() => s.sub.unsubscribe())));
    for (;;) {
      const left = this.busy(owners);
      if (left === 0) return 0;
      const ms = deadline - Date.now();
      if (ms <= 0) return left;
      // woken when one of them ends (any handler's end, then counted again), or at the deadline
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          this.waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, ms);
        timer.unref();
        this.waiters.add(done);
      });
    }
  }

  /** Once a second: a handler working on a remote request for a while says so (see ALIVE_EVERY_MS). */
  private sayAlive(): void {
    if (this.conn.closed() || this.conn.down || this.working.size === 0) return;
    const now = Date.now();
    for (const [msg, started] of this.working) {
      if (now - started < ALIVE_EVERY_MS) continue;
      try {
        msg.respond(undefined, { headers: ALIVE_HEADERS });
      } catch { /* the connection is away: the requester does not count silence then */ }
    }
  }

  // ---- stats --------------------------------------------------------------------------

  statsFor(subject: string, kind: HandledKind): SubjectStats {
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
   * `gather(SysStats, …)` collects the answers. Not counted in flight: a stop never waits for
   * it, and never stops it.
   */
  private serveStats(): void {
    this.subscribe(SysStats, async (): Promise<SysStatsReply> => ({
      process: this.conn.name, host: hostname(), pid: process.pid, started_at: this.startedAt,
      subjects: this.stats().filter((s) => s.subject !== SysStats.subject),
    }), `sys.${randomUUID().replace(/-/g, '')}`, false);
  }
}

function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

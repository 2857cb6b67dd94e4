/**
 * Requests, on the bus's connection (runtime/bus-connection.ts): the client side of
 * request/reply.
 *
 * - `request(def, input, ctx)`: one wildcard inbox of our own (one subscription, a map of
 *   pending replies) instead of the client's per-request machinery; no responders →
 *   ACTOR_UNAVAILABLE, no answer in time → TIMEOUT; `preferLocal` hands a request for an actor
 *   of this process to its handler directly (runtime/bus-serving.ts), with the same rules.
 * - the connection lost: requests already sent fail at once (their answer cannot arrive), those
 *   not sent yet wait HOLD_MS for it to come back.
 * - `gather(def, …)`: the answers of every process to a request each serves (sys.stats).
 */
import { randomUUID } from 'node:crypto';
import type { Msg } from '@nats-io/transport-node';
import { describeErrors, type RequestDef, type ReplyOf, type RequestOf } from '../protocol/define.js';
import { CortadoError } from '../protocol/errors.js';
import { Header, MAX_HOPS } from '../protocol/headers.js';
import { headersFor, type Ctx } from './bus-headers.js';
import { HOLD_MS, type BusConnection } from './bus-connection.js';
import type { Envelope, LocalRoute, Serving } from './bus-serving.js';
import { ALIVE_EVERY_MS } from './bus-serving.js';
import { busSeries, type BusSeries } from './metrics.js';

interface Pending {
  resolve: (value: unknown) => void;
  reject: (err: CortadoError) => void;
  timer: NodeJS.Timeout;
  def: RequestDef;
  /** handed to the connection (lost with it when it drops) */
  written: boolean;
  since: number;
  /** when the handler last said it still works on it (Header.Alive; long requests only) */
  heard?: number;
  /** sends it (again) */
  write?: () => void;
}

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
 * question). So a handler working on a remote request longer than ALIVE_EVERY_MS says so
 * (runtime/bus-serving.ts), and a requester waiting on a long request (timeout ≥
 * LIVENESS_FROM_MS) that hears nothing for SILENT_AFTER_MS gives up with ACTOR_UNAVAILABLE,
 * retryable. Silence while the broker is away, or just after it came back, does not count.
 */
const SILENT_AFTER_MS = 6_000;
const LIVENESS_FROM_MS = 20_000;

export class Requests {
  private seq = 0;
  private readonly inbox = `_INBOX.${randomUUID().replace(/-/g, '')}`;
  private readonly pending = new Map<string, Pending>();
  /** when silent() last ran, and since when silence counts (after this process itself stalled, from then) */
  private lastCheck = Date.now();
  private quietFrom = 0;
  private holdTimer: NodeJS.Timeout | undefined;

  constructor(private readonly conn: BusConnection, private readonly serving: Serving) {
    conn.nc.subscribe(`${this.inbox}.*`, { callback: (err, msg) => { this.onReply(err, msg); } });
    conn.watch({ lost: () => this.lost(), back: () => this.back() });
    setInterval(() => this.silent(), ALIVE_EVERY_MS).unref();
  }

  /** `remote: true` always crosses NATS, even when this process serves the actor. */
  request<D extends RequestDef>(def: D, input: RequestOf<D>, ctx: Ctx, opts: { timeoutMs?: number; remote?: boolean } = {}): Promise<ReplyOf<D>> {
    if (this.conn.closed()) return Promise.reject(new CortadoError('SHUTTING_DOWN', 'the bus connection is closed'));
    const hop = (ctx.hop ?? 0) + 1;
    if (hop > MAX_HOPS) return Promise.reject(new CortadoError('INTERNAL', `too many hops (${hop}) for ${def.subject}`));
    let timeoutMs = opts.timeoutMs ?? def.timeoutMs;
    if (ctx.deadline !== undefined) timeoutMs = Math.min(timeoutMs, Math.max(1, ctx.deadline - Date.now()));
    const route = opts.remote ? undefined : this.serving.local(def.subject);
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
    const conn = this.conn;
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
          conn.nc.publish(conn.subject(def.subject), payload, { reply: `${this.inbox}.${id}`, headers });
          p.written = true;
        } catch (err) {
          clearTimeout(timer);
          this.pending.delete(id);
          reject(new CortadoError('ACTOR_UNAVAILABLE', `cannot reach the bus: ${(err as Error).message}`));
        }
      };
      conn.send(p.write);
    }), series);
  }

  private onReply(err: Error | null, msg: Msg): void {
    if (err) {
      this.conn.log.error({ err }, 'reply inbox failed');
      return;
    }
    const id = msg.subject.slice(this.inbox.length + 1);
    const p = this.pending.get(id);
    if (!p) return; // late reply after a timeout
    if (msg.data.length === 0 && msg.headers?.get(Header.Alive)) {
      p.heard = Date.now(); // still being worked on
      return;
    }
    if (msg.headers?.code === 503 && msg.data.length === 0 && p.write && Date.now() - this.conn.reconnectedAt < RESUBSCRIBE_GRACE_MS) {
      // nobody got it (so nothing ran): the actor's process may not have resubscribed after
      // the broker came back yet; the same message goes again in a moment
      p.written = false;
      const write = p.write;
      setTimeout(() => this.conn.send(write), RESEND_NO_RESPONDERS_MS).unref();
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
    if (!this.conn.strict || def.checkReply.Check(data)) return undefined;
    const errors = describeErrors(def.checkReply, data);
    this.conn.log.error({ subj: def.subject, errors }, 'reply does not match its contract');
    return new CortadoError('INTERNAL', `reply on ${def.subject} does not match its contract`, { errors });
  }

  /** A request for an actor served in this process: its handler, directly, with the same rules. */
  private callLocal(route: LocalRoute, input: unknown, ctx: Ctx, timeoutMs: number): Promise<unknown> {
    const work = this.serving.callLocal(route, input, ctx);
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

  /**
   * A request every process answers (a definition served with a queue group per process, like
   * sys.stats): the answers that arrive within `timeoutMs` (or the first `max` of them).
   */
  async gather<D extends RequestDef>(def: D, input: RequestOf<D>, ctx: Ctx, opts: { timeoutMs?: number; max?: number } = {}): Promise<Array<ReplyOf<D>>> {
    if (this.conn.closed()) throw new CortadoError('SHUTTING_DOWN', 'the bus connection is closed');
    const conn = this.conn;
    const inbox = `_INBOX.${randomUUID().replace(/-/g, '')}`;
    const out: Array<ReplyOf<D>> = [];
    const max = opts.max ?? Number.MAX_SAFE_INTEGER;
    await new Promise<void>((resolve) => {
      const sub = conn.nc.subscribe(inbox, {
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
      conn.send(() => {
        try {
          conn.nc.publish(conn.subject(def.subject), payload, { reply: inbox, headers: headersFor({ ...ctx, hop: (ctx.hop ?? 0) + 1 }) });
        } catch {
          done();
        }
      });
    });
    return out;
  }

  // ---- the connection lost, and closed --------------------------------------------------

  /**
   * What was sent and not answered cannot be answered any more (the server forgets our inbox
   * with us): those requests fail now instead of at their timeout. Those not sent yet wait.
   */
  private lost(): Record<string, unknown> {
    let failed = 0;
    for (const [id, p] of this.pending) {
      if (!p.written) continue;
      this.pending.delete(id);
      clearTimeout(p.timer);
      failed++;
      p.reject(new CortadoError('ACTOR_UNAVAILABLE', `the connection to the message broker was lost while ${p.def.owner} worked on ${p.def.subject}: its answer cannot arrive`, { actor: p.def.owner }));
    }
    this.holdTimer = setInterval(() => this.expireHeld(), 500);
    this.holdTimer.unref();
    return { failed };
  }

  private back(): void {
    if (this.holdTimer) clearInterval(this.holdTimer);
    this.holdTimer = undefined;
  }

  /** Requests that waited HOLD_MS for the connection to come back fail. */
  private expireHeld(): void {
    const since = this.conn.downSince;
    const limit = Date.now() - HOLD_MS;
    for (const [id, p] of this.pending) {
      if (p.written || Math.max(p.since, since) > limit) continue;
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.reject(new CortadoError('ACTOR_UNAVAILABLE', `the message broker has been unreachable for ${Math.round((Date.now() - since) / 1000)} s: ${p.def.subject} was not sent`, { actor: p.def.owner }));
    }
  }

  /** Once a second: give up on long requests gone silent (see SILENT_AFTER_MS). */
  private silent(): void {
    if (this.conn.closed()) return;
    const now = Date.now();
    // this process's own event loop stalled: the signs of life may be waiting in its socket
    if (now - this.lastCheck > 2 * ALIVE_EVERY_MS) this.quietFrom = now;
    this.lastCheck = now;
    if (this.conn.down || now - this.conn.reconnectedAt < SILENT_AFTER_MS) return;
    for (const [id, p] of this.pending) {
      if (!p.written || p.def.timeoutMs < LIVENESS_FROM_MS) continue;
      const heard = Math.max(p.heard ?? p.since, this.conn.reconnectedAt, this.quietFrom);
      if (now - heard < SILENT_AFTER_MS) continue;
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.reject(new CortadoError('ACTOR_UNAVAILABLE', `the ${p.def.owner} process working on ${p.def.subject} stopped answering (no sign of life for ${Math.round((now - heard) / 1000)} s): it may have ended; try again`, { actor: p.def.owner }));
    }
  }

  /** The bus closes: every request still waiting fails with SHUTTING_DOWN. */
  close(): void {
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new CortadoError('SHUTTING_DOWN', 'the bus connection closed'));
      this.pending.delete(id);
    }
    if (this.holdTimer) clearInterval(this.holdTimer);
  }
}

/** The client side of a request in its series (runtime/metrics.ts): in flight, latency, error code. */
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

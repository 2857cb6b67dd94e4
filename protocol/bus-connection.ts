/**
 * The bus's connection to NATS: one queue of writes sent together at the end of each turn of
 * the event loop (`send`), what happens while the connection is lost (writes held, requests
 * already sent failed at once, the outbox paused) and when it is back, and the close. The
 * request/reply layer (protocol/bus-requests.ts) and the events (protocol/bus.ts) build on it.
 */
import { randomUUID } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import type { RequestDef } from './define.js';
import { CortadoError } from './errors.js';
import type { Logger } from './log.js';
import { DurableEvents } from './bus-durable.js';
import { registerOutbox } from './metrics.js';

export interface Pending {
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

export interface BusOptions {
  url: string;
  prefix: string;
  /** connection name, visible in the NATS monitor */
  name: string;
  log: Logger;
  /** validate replies against their schema too (tests, development) */
  strict?: boolean;
  /**
   * How long a connect attempt may take (10 s by default). A broker that is not there refuses at
   * once whatever this is; this bounds a live broker that is slow to greet (a loaded host: 2 s
   * was seen to run out with the broker up, and the process then failed to start).
   */
  connectTimeoutMs?: number;
  /** call handlers served by this process directly instead of over NATS (config bus.prefer_local) */
  preferLocal?: boolean;
  /** durable events waiting for JetStream at which questions are refused (config bus.outbox_max_events) */
  outboxMaxEvents?: number;
  /** copies JetStream keeps of each stream, bucket and object store this bus makes (config bus.replicas; default 1) */
  replicas?: number;
}

/** how long a request not yet sent waits for a lost connection to come back */
const HOLD_MS = 10_000;
/** writes kept while the connection is away; past it they are dropped (requests then fail after HOLD_MS) */
const HELD_MAX = 50_000;
/** how long flush() waits for the outbox, and close() without a deadline */
export const OUTBOX_WAIT_MS = 5_000;

export class BusConnection {
  readonly prefix: string;
  readonly log: Logger;
  /** copies of what this bus makes in JetStream (config bus.replicas) */
  readonly replicas: number;
  protected readonly nc: NatsConnection;
  protected readonly strict: boolean;
  protected readonly inbox: string;
  protected readonly pending = new Map<string, Pending>();
  protected closed = false;
  /** writes waiting for the end of this turn of the event loop (see `send`) */
  protected outgoing: Array<() => void> = [];
  protected readonly flushOutgoing = (): void => {
    const batch = this.outgoing;
    this.outgoing = [];
    if (this.down) {
      this.hold(batch);
      return;
    }
    for (const write of batch) write();
  };
  /** the connection is lost (the client reconnects); since when */
  protected down = false;
  protected downSince = 0;
  protected reconnectedAt = 0;
  /** writes kept while the connection is lost, sent when it is back */
  protected held: Array<() => void> = [];
  protected heldDropped = 0;
  protected holdTimer: NodeJS.Timeout | undefined;

  /** the event stream and the outbox of durable events */
  protected readonly durable: DurableEvents;
  /** stop counting this outbox in /metrics (protocol/metrics.ts) */
  private readonly stopOutboxMetrics: () => void;


  protected constructor(nc: NatsConnection, opts: BusOptions) {
    this.nc = nc;
    this.prefix = opts.prefix;
    this.log = opts.log;
    this.replicas = opts.replicas ?? 1;
    this.strict = opts.strict ?? false;
    this.inbox = `_INBOX.${randomUUID().replace(/-/g, '')}`;
    this.durable = new DurableEvents({
      nc, prefix: opts.prefix, log: opts.log, ...(opts.outboxMaxEvents !== undefined ? { max: opts.outboxMaxEvents } : {}),
      send: (write) => this.send(write), down: () => this.down,
    });
    this.stopOutboxMetrics = registerOutbox(() => this.durable.stats());
    void this.watchConnection();
  }

  /** `cortado.sql.execute` for `sql.execute`. */
  subject(relative: string): string {
    return `${this.prefix}.${relative}`;
  }

  get server(): string {
    return this.nc.getServer();
  }

  /**
   * Every write of ours to NATS waits for the end of the current turn of the event loop
   * (setImmediate: after the I/O callbacks of this turn), then all of them go out together.
   * The client already coalesces what is published in one synchronous run; under load one
   * turn handles many replies, events and acks, and each separate socket write costs more
   * CPU than the message itself (on loopback the kernel does the receiver's work in the
   * sender's write). Order is kept: one queue for requests, replies, events and acks.
   */
  protected send(write: () => void): void {
    if (this.outgoing.push(write) === 1) setImmediate(this.flushOutgoing);
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
    this.stopOutboxMetrics();
    if (this.holdTimer) clearInterval(this.holdTimer);
    try {
      await this.nc.drain();
    } catch {
      await this.nc.close().catch(() => undefined);
    }
  }

  /** The connection as a probe sees it: up, reconnecting (since when), or closed. */
  state(): { state: 'up' | 'reconnecting' | 'closed'; down_for_ms?: number } {
    if (this.closed || this.nc.isClosed()) return { state: 'closed' };
    if (this.down) return { state: 'reconnecting', down_for_ms: Date.now() - this.downSince };
    return { state: 'up' };
  }

  /** Resolves when the connection is closed for good (server gone and no reconnect). */
  closedPromise(): Promise<void | Error> {
    return this.nc.closed();
  }

  // ---- the connection -----------------------------------------------------------------

  protected async watchConnection(): Promise<void> {
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
  protected onDisconnect(): void {
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
  protected expireHeld(): void {
    const limit = Date.now() - HOLD_MS;
    for (const [id, p] of this.pending) {
      if (p.written || Math.max(p.since, this.downSince) > limit) continue;
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.reject(new CortadoError('ACTOR_UNAVAILABLE', `the message broker has been unreachable for ${Math.round((Date.now() - this.downSince) / 1000)} s: ${p.def.subject} was not sent`, { actor: p.def.owner }));
    }
  }

  protected hold(writes: Array<() => void>): void {
    const room = HELD_MAX - this.held.length;
    if (writes.length > room) {
      if (this.heldDropped === 0) this.log.warn({ held: this.held.length }, 'the connection to NATS is still lost: further messages are dropped until it is back');
      this.heldDropped += writes.length - Math.max(0, room);
    }
    for (let i = 0; i < Math.min(room, writes.length); i++) this.held.push(writes[i]!);
  }

  /** Back: what was kept goes out first, in order; the outbox sends what waits again. */
  protected onReconnect(): void {
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

}

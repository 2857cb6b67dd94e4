/**
 * The bus's connection to NATS, which every part of the bus takes (runtime/bus.ts composes
 * them: requests, serving, events, streams, KV, objects): one queue of writes sent together at
 * the end of each turn of the event loop (`send`), what happens while the connection is lost
 * (writes held until it is back; each part told, through `watch`, so that it can fail or pause
 * what it owns), and the close of the connection itself.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { CortadoError } from '../protocol/errors.js';
import type { Logger } from './log.js';

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

/** What a part of the bus does when the connection is lost and when it is back. */
export interface ConnectionWatcher {
  /** the connection dropped; returns fields for the log line that says so */
  lost(): Record<string, unknown>;
  /** it is back (what was held has been written) */
  back(): void;
  /** fields for the log lines of both */
  fields?(): Record<string, unknown>;
}

/** writes kept while the connection is away; past it they are dropped (requests then fail, runtime/bus-requests.ts) */
const HELD_MAX = 50_000;
/**
 * How long what has not reached the broker yet waits for a lost connection to come back: a
 * request not sent (runtime/bus-requests.ts), a round trip (`roundTrip`). A broker restart
 * takes a few seconds; past this the caller hears a retryable ACTOR_UNAVAILABLE.
 */
export const HOLD_MS = 10_000;
/** while a round trip waits for the connection, how often it looks again (the client's status events can lag) */
const ROUND_TRIP_RETRY_MS = 250;

export class BusConnection {
  readonly prefix: string;
  readonly log: Logger;
  /** the connection name (config: the process's) */
  readonly name: string;
  /** copies of what this bus makes in JetStream (config bus.replicas) */
  readonly replicas: number;
  /** check replies and published events against their schemas too */
  readonly strict: boolean;
  readonly nc: NatsConnection;
  private shut = false;
  /** writes waiting for the end of this turn of the event loop (see `send`) */
  private outgoing: Array<() => void> = [];
  private readonly flushOutgoing = (): void => {
    const batch = this.outgoing;
    this.outgoing = [];
    if (this.isDown) {
      this.hold(batch);
      return;
    }
    for (const write of batch) write();
  };
  /** the connection is lost (the client reconnects); since when; when it came back last */
  private isDown = false;
  private lostAt = 0;
  private backAt = 0;
  /** writes kept while the connection is lost, sent when it is back */
  private held: Array<() => void> = [];
  private heldDropped = 0;
  private readonly watchers: ConnectionWatcher[] = [];
  /** round trips waiting for the connection to come back */
  private waitingForBack = new Set<() => void>();

  static async open(opts: BusOptions): Promise<BusConnection> {
    const nc = await connect({
      servers: opts.url,
      name: opts.name,
      timeout: opts.connectTimeoutMs ?? 10_000,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      noAsyncTraces: true,
    });
    return new BusConnection(nc, opts);
  }

  constructor(nc: NatsConnection, opts: BusOptions) {
    this.nc = nc;
    this.prefix = opts.prefix;
    this.log = opts.log;
    this.name = opts.name;
    this.replicas = opts.replicas ?? 1;
    this.strict = opts.strict ?? false;
    void this.watchConnection();
  }

  /** `cortado.sql.execute` for `sql.execute`. */
  subject(relative: string): string {
    return `${this.prefix}.${relative}`;
  }

  get server(): string {
    return this.nc.getServer();
  }

  /** closed by `close` (or closing) */
  closed(): boolean {
    return this.shut;
  }

  /** the connection is lost now */
  get down(): boolean {
    return this.isDown;
  }

  /** since when it is lost (when `down`) */
  get downSince(): number {
    return this.lostAt;
  }

  /** when it came back last (0: never lost) */
  get reconnectedAt(): number {
    return this.backAt;
  }

  /** Tell this part when the connection is lost and back. */
  watch(watcher: ConnectionWatcher): void {
    this.watchers.push(watcher);
  }

  /**
   * Every write of ours to NATS waits for the end of the current turn of the event loop
   * (setImmediate: after the I/O callbacks of this turn), then all of them go out together.
   * The client already coalesces what is published in one synchronous run; under load one
   * turn handles many replies, events and acks, and each separate socket write costs more
   * CPU than the message itself (on loopback the kernel does the receiver's work in the
   * sender's write). Order is kept: one queue for requests, replies, events and acks.
   */
  send(write: () => void): void {
    if (this.outgoing.push(write) === 1) setImmediate(this.flushOutgoing);
  }

  /** Write what waits for the end of this turn now. */
  writeNow(): void {
    this.flushOutgoing();
  }

  /**
   * A round trip to the server (PING, PONG): what this process wrote before is on the server
   * after it (a subscription is in place, published messages were delivered first). The
   * client's own flush fails while the connection is lost (each reconnect attempt drops it), so
   * this one waits for the connection to come back, as a request not sent yet does, and tries
   * again; at `until` (a request's deadline), HOLD_MS at the latest, it gives up with
   * ACTOR_UNAVAILABLE (retryable), once closed with SHUTTING_DOWN. Never an unexplained
   * INTERNAL because the broker restarted.
   */
  async roundTrip(until?: number): Promise<void> {
    const from = Date.now();
    const deadline = Math.min(until ?? Infinity, from + HOLD_MS);
    this.flushOutgoing();
    for (;;) {
      if (this.shut || this.nc.isClosed()) throw new CortadoError('SHUTTING_DOWN', 'the bus connection is closed');
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new CortadoError('ACTOR_UNAVAILABLE', `the message broker could not be reached for ${Math.round((Date.now() - from) / 100) / 10} s: try again`, { broker: this.isDown ? 'reconnecting' : 'slow' });
      }
      if (!this.isDown) {
        // a flush lost with the connection rejects; one that never ends (a broker gone without
        // closing the socket) is bounded by the deadline
        const ok = await within(this.nc.flush().then(() => true, () => false), left);
        if (ok) return;
        if (Date.now() >= deadline) continue;
      }
      // lost (or its status event is on its way): wait until it is back, a little at a time
      await new Promise<void>((resolve) => {
        const wake = (): void => { clearTimeout(timer); this.waitingForBack.delete(wake); resolve(); };
        const timer = setTimeout(wake, Math.max(1, Math.min(ROUND_TRIP_RETRY_MS, deadline - Date.now())));
        this.waitingForBack.add(wake);
      });
    }
  }

  // ---- lifecycle ----------------------------------------------------------------------

  /** From now on `closed()`; false when it already was. The parts then close what they own (runtime/bus.ts). */
  closing(): boolean {
    if (this.shut) return false;
    this.shut = true;
    return true;
  }

  /** The last step of a close: what waits is written, then the connection drains and ends. */
  async end(): Promise<void> {
    this.shut = true;
    this.flushOutgoing();
    try {
      await this.nc.drain();
    } catch {
      await this.nc.close().catch(() => undefined);
    }
  }

  /** The connection as a probe sees it: up, reconnecting (since when), or closed. */
  state(): { state: 'up' | 'reconnecting' | 'closed'; down_for_ms?: number } {
    if (this.shut || this.nc.isClosed()) return { state: 'closed' };
    if (this.isDown) return { state: 'reconnecting', down_for_ms: Date.now() - this.lostAt };
    return { state: 'up' };
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

  private fields(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const w of this.watchers) if (w.fields) Object.assign(out, w.fields());
    return out;
  }

  /**
   * The connection dropped. What is sent from now on is kept until the connection is back (see
   * `flushOutgoing`); each part decides about what it owns (requests already sent fail at once:
   * the server forgets our inbox with us).
   */
  private onDisconnect(): void {
    if (this.isDown) return;
    this.isDown = true;
    this.lostAt = Date.now();
    const line = this.fields();
    for (const w of this.watchers) Object.assign(line, w.lost());
    this.log.warn(line, 'lost the connection to NATS: reconnecting');
  }

  private hold(writes: Array<() => void>): void {
    const room = HELD_MAX - this.held.length;
    if (writes.length > room) {
      if (this.heldDropped === 0) this.log.warn({ held: this.held.length }, 'the connection to NATS is still lost: further messages are dropped until it is back');
      this.heldDropped += writes.length - Math.max(0, room);
    }
    for (let i = 0; i < Math.min(room, writes.length); i++) this.held.push(writes[i]!);
  }

  /** Back: what was kept goes out first, in order; then each part is told. */
  private onReconnect(): void {
    if (!this.isDown) return;
    this.isDown = false;
    this.backAt = Date.now();
    const held = this.held;
    this.held = [];
    this.log.info({ after_ms: Date.now() - this.lostAt, held: held.length, dropped: this.heldDropped, ...this.fields() }, 'reconnected to NATS');
    this.heldDropped = 0;
    this.outgoing = held.concat(this.outgoing);
    this.flushOutgoing();
    for (const w of this.watchers) w.back();
    for (const wake of [...this.waitingForBack]) wake();
  }
}

/** true or false as `p` settles, false if it has not within `ms` */
function within(p: Promise<boolean>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    void p.then((v) => { clearTimeout(timer); resolve(v); });
  });
}

/**
 * The outbox of the events that must not be lost (`durable` in their definition): each one waits
 * here, in this process's memory, from the moment it is published until JetStream says the
 * stream has stored it. Nothing in here knows NATS: the bus hands it a `send` and reports what
 * each acknowledgement said (`settle`).
 *
 * - A publish costs a map entry and one write queued with the others of its event-loop turn;
 *   nobody waits for the acknowledgement (a question's reply goes out before its events are
 *   stored, the outbox holds them).
 * - Not acknowledged within `ackWaitMs`, or refused for a while (JetStream restarting, out of
 *   storage, no stream): sent again after a backoff that doubles from `retryMinMs` to
 *   `retryMaxMs`, with jitter. Every copy carries the event's id as its message id, so the
 *   stream keeps one (and the audit keeps one entry per id whatever happens).
 * - Connection lost (`pause`): nothing is sent (the NATS client drops what is written while
 *   it is away); back (`resume`): everything waiting goes again, spread over a moment.
 * - Bounded: at `max` waiting events `full` says so (the assistant refuses new questions then,
 *   protocol/errors.ts AUDIT_UNAVAILABLE); the events of work already under way still get in,
 *   up to `limit` (2 × max): past it an event is dropped, and said at error level.
 * - On shutdown the bus waits for `settled()` up to its deadline; what is left is logged by id.
 */
import type { Logger } from './log.js';

export interface OutboxItem {
  /** the event's id: its message id in JetStream */
  readonly id: string;
  readonly subject: string;
  readonly requestId: string;
}

/** What an acknowledgement said: stored (or a duplicate of a stored copy), try again, or never. */
export type Settlement = 'stored' | 'retry' | 'refused';

export interface OutboxOptions<T extends OutboxItem> {
  /** waiting events at which the outbox is full */
  max: number;
  /** hand one event to the connection, with the key its acknowledgement is settled by */
  send(item: T, key: string): void;
  log: Logger;
  ackWaitMs?: number;
  retryMinMs?: number;
  retryMaxMs?: number;
  /** waiting events past which a new one is dropped (default 2 × max) */
  limit?: number;
}

interface Waiting<T> {
  readonly item: T;
  readonly since: number;
  attempts: number;
  /** when to send (again) if nothing settled it before */
  due: number;
}

const TICK_MS = 100;
/** after a reconnect, everything waiting goes again within this long (jitter) */
const RESUME_SPREAD_MS = 250;
/** a trouble that lasts is said at most this often */
const WARN_EVERY_MS = 10_000;

export class Outbox<T extends OutboxItem> {
  readonly max: number;
  readonly limit: number;
  /** what happened so far, for stats and tests */
  readonly counts = { added: 0, stored: 0, resent: 0, dropped: 0, refused: 0 };
  private readonly waiting = new Map<string, Waiting<T>>();
  private readonly opts: Required<Omit<OutboxOptions<T>, 'limit'>>;
  private seq = 0;
  private paused = false;
  private timer: NodeJS.Timeout | undefined;
  private waiters: Array<() => void> = [];
  private warned = 0;
  private troubled = false;
  private wasFull = false;
  private droppedSince = 0;
  private dropWarned = 0;

  constructor(opts: OutboxOptions<T>) {
    this.max = Math.max(1, opts.max);
    this.limit = Math.max(this.max, opts.limit ?? this.max * 2);
    this.opts = { ackWaitMs: 5_000, retryMinMs: 250, retryMaxMs: 5_000, ...opts };
  }

  get size(): number {
    return this.waiting.size;
  }

  /** as many events wait as the outbox is meant to hold: new work should not start */
  get full(): boolean {
    return this.waiting.size >= this.max;
  }

  /** how long the oldest waiting event has waited (0 when none) */
  oldestMs(): number {
    const first = this.waiting.values().next();
    return first.done ? 0 : Date.now() - first.value.since;
  }

  /** Keep the event until it is stored; false when it had to be dropped (over `limit`). */
  add(item: T): boolean {
    if (this.waiting.size >= this.limit) {
      this.counts.dropped++;
      this.droppedSince++;
      // one line per second at most in a flood, each naming the event it lost
      if (Date.now() - this.dropWarned >= 1_000) {
        this.dropWarned = Date.now();
        this.opts.log.error(
          { subj: item.subject, event_id: item.id, rid: item.requestId, waiting: this.waiting.size, dropped: this.droppedSince },
          'the event outbox is over its limit: an event was dropped, the audit trail misses it',
        );
        this.droppedSince = 0;
      }
      return false;
    }
    const key = (++this.seq).toString(36);
    const now = Date.now();
    const w: Waiting<T> = { item, since: now, attempts: 0, due: now };
    this.waiting.set(key, w);
    this.counts.added++;
    if (!this.paused) this.sendNow(key, w, now);
    this.checkFull();
    this.arm();
    return true;
  }

  /** What the acknowledgement for `key` said. Unknown keys (a late copy's answer) are ignored. */
  settle(key: string, outcome: Settlement, why?: string): void {
    const w = this.waiting.get(key);
    if (!w) return;
    if (outcome === 'retry') {
      w.due = Date.now() + backoff(w.attempts, this.opts.retryMinMs, this.opts.retryMaxMs);
      this.trouble(why ?? 'not stored');
      return;
    }
    this.waiting.delete(key);
    if (outcome === 'stored') {
      this.counts.stored++;
    } else {
      this.counts.refused++;
      this.opts.log.error({ subj: w.item.subject, event_id: w.item.id, rid: w.item.requestId, why }, 'the event stream refused an event for good: the audit trail misses it');
    }
    this.afterRemove();
  }

  /** The connection is gone: send nothing until `resume`. */
  pause(): void {
    this.paused = true;
  }

  /** The connection is back: whatever waits goes again, spread over a moment. */
  resume(): void {
    this.paused = false;
    const now = Date.now();
    for (const w of this.waiting.values()) w.due = now + Math.random() * RESUME_SPREAD_MS;
    this.arm();
  }

  /** Resolves when nothing waits, or at the deadline (whichever comes first). */
  settled(deadline: number): Promise<void> {
    if (this.waiting.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, Math.max(0, deadline - Date.now()));
      const waiters = this.waiters;
      function done(): void {
        clearTimeout(timer);
        const i = waiters.indexOf(done);
        if (i >= 0) waiters.splice(i, 1);
        resolve();
      }
      waiters.push(done);
    });
  }

  /** Stop retrying; returns what never got stored. */
  stop(): T[] {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const left = [...this.waiting.values()].map((w) => w.item);
    this.waiting.clear();
    for (const done of this.waiters.splice(0)) done();
    return left;
  }

  private sendNow(key: string, w: Waiting<T>, now: number): void {
    if (w.attempts > 0) this.counts.resent++;
    w.attempts++;
    // a copy sent again waits longer for its answer: a slow broker is not sent ever more copies
    w.due = now + this.opts.ackWaitMs + (w.attempts > 1 ? backoff(w.attempts - 1, this.opts.retryMinMs, this.opts.retryMaxMs) : 0);
    this.opts.send(w.item, key);
  }

  private tick(): void {
    if (this.paused) return;
    const now = Date.now();
    let late = 0;
    for (const [key, w] of this.waiting) {
      if (w.due > now) continue;
      if (w.attempts > 0) late++;
      this.sendNow(key, w, now);
    }
    if (late > 0) this.trouble('no acknowledgement in time');
  }

  private arm(): void {
    if (this.timer || this.waiting.size === 0) return;
    this.timer = setInterval(() => this.tick(), TICK_MS);
    this.timer.unref();
  }

  private afterRemove(): void {
    this.checkFull();
    if (this.waiting.size > 0) return;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.troubled) {
      this.troubled = false;
      this.warned = 0;
      this.opts.log.info({ stored: this.counts.stored, resent: this.counts.resent }, 'every waiting event is stored now');
    }
    for (const done of this.waiters.splice(0)) done();
  }

  private trouble(why: string): void {
    this.troubled = true;
    if (Date.now() - this.warned < WARN_EVERY_MS) return;
    this.warned = Date.now();
    this.opts.log.warn({ waiting: this.waiting.size, oldest_ms: this.oldestMs(), max: this.max, why }, 'events wait in the outbox: JetStream has not stored them yet');
  }

  private checkFull(): void {
    const full = this.full;
    if (full === this.wasFull) return;
    this.wasFull = full;
    if (full) this.opts.log.error({ waiting: this.waiting.size, max: this.max }, 'the event outbox is full: new questions are refused until JetStream stores what waits');
    else this.opts.log.info({ waiting: this.waiting.size, max: this.max }, 'the event outbox has room again');
  }
}

/** attempts 1, 2, 3… → min, 2·min, 4·min… up to max, each scaled by 0.5–1 (jitter) */
export function backoff(attempts: number, minMs: number, maxMs: number): number {
  const base = Math.min(maxMs, minMs * 2 ** Math.max(0, attempts - 1));
  return Math.round(base * (0.5 + Math.random() * 0.5));
}

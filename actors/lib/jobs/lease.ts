/**
 * One leader among every process of a role, by a lease in a JetStream KV bucket.
 *
 * The lease is one key (`leader`) in the role's bucket, whose TTL (LEASE_TTL_MS) ends the lease
 * of a leader that stopped renewing it (killed, cut off). Every process tries every RENEW_MS to
 * write the key by compare-and-set when it is absent or its own; the one whose write wins leads
 * until its key is gone. A leader that cannot renew (the broker away) stops leading at once; one
 * that stops cleanly deletes its key so another takes over within RENEW_MS. No clock is compared
 * between processes: the broker's TTL decides. A leader also counts itself out once half the
 * TTL went by without a renewal it saw succeed, before the broker could hand the key on.
 *
 * Without a bucket (memory storage, no JetStream) the process leads alone.
 * The scheduler (actors/scheduler/leader.ts) and the alarms (actors/alarms/evaluator.ts) lead
 * by it, each in a bucket of its own.
 */
import { randomUUID } from 'node:crypto';
import type { Bus } from '../../../runtime/bus.js';
import type { Kv } from '../../../runtime/kv.js';
import type { Logger } from '../../../runtime/log.js';
import type { Bucket } from '../../../protocol/subjects.js';

/** a leader's key lives this long after its last renewal */
export const LEASE_TTL_MS = 10_000;
/** how often the lease is renewed (leader) or tried (the others) */
const RENEW_MS = 2_000;
const LEASE_KEY = 'leader';

export interface LeaseValue {
  holder: string;
  /** renewals, so that each write is a new revision */
  n: number;
}

export function openLeaseBucket(bus: Bus, bucket: Bucket): Promise<Kv<LeaseValue>> {
  return bus.bucket<LeaseValue>(bucket, { ttlMs: LEASE_TTL_MS });
}

export interface LeaseWords {
  /** the log's prefix, e.g. 'scheduler leader' */
  role: string;
  /** what the leader does, e.g. 'this process fires the schedules' */
  leading: string;
  /** what stops when it cannot renew, e.g. 'firing paused' */
  paused: string;
}

export class LeaderLease {
  readonly id = randomUUID();
  private leading: boolean;
  /** when the lease was last renewed (this process's monotonic clock) */
  private renewedAt = 0;
  private n = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly kv: Kv<LeaseValue> | undefined, private readonly log: Logger, private readonly words: LeaseWords) {
    this.leading = kv === undefined;
  }

  get isLeader(): boolean {
    return !this.stopped && this.leading && (!this.kv || performance.now() - this.renewedAt < LEASE_TTL_MS / 2);
  }

  start(): void {
    if (!this.kv) {
      this.log.info(`${this.words.role}: this process alone (no shared lease)`);
      return;
    }
    void this.renew();
    this.timer = setInterval(() => void this.renew(), RENEW_MS);
  }

  private async renew(): Promise<void> {
    const kv = this.kv;
    if (!kv || this.stopped) return;
    try {
      const after = await kv.update(LEASE_KEY, (cur) => (cur === undefined || cur.holder === this.id ? { holder: this.id, n: ++this.n } : undefined), { tries: 3 });
      const mine = after?.holder === this.id;
      if (mine) this.renewedAt = performance.now();
      if (mine !== this.leading && !this.stopped) {
        this.leading = mine;
        this.log.info({ leader: this.id }, `${this.words.role}: ${mine ? this.words.leading : 'another process took over'}`);
      }
    } catch (err) {
      if (this.leading) this.log.warn({ err: (err as Error).message }, `${this.words.role}: cannot renew the lease, ${this.words.paused}`);
      this.leading = false;
    }
  }

  /** Stop leading and renewing (at once). */
  halt(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Give the lease back so another process takes over at once (after halt and the work's end). */
  async release(): Promise<void> {
    this.halt();
    if (this.leading && this.kv) await this.kv.take(LEASE_KEY, (v) => v.holder === this.id).catch(() => undefined);
    this.leading = false;
  }
}

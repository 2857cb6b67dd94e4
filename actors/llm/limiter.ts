/**
 * How many calls one provider has on the wire at once, and how long the rest may wait.
 *
 * Providers' rate limits are real, and a process that sends every question to the model at
 * once only trades a queue of its own for 429s. So each provider gets `max_concurrency` slots
 * (llm.max_concurrency, or llm.<provider>.max_concurrency), one per HTTP attempt in flight,
 * and a FIFO wait in front of them that is bounded twice: at most `max_queue` calls wait, and
 * none waits longer than `queue_timeout_ms` (nor past its own deadline). Beyond either bound
 * the call is refused at once with a clear error instead of waiting unseen in an HTTP client's
 * queue: RATE_LIMITED when the provider itself answered 429 lately (its limit is what is
 * full), LLM_UNAVAILABLE otherwise. The HTTP client below (keepalive-fetch.ts) gets as many
 * connections as there are slots, so nothing queues there.
 */
import { CortadoError } from '../../protocol/errors.js';

export interface LimiterOptions {
  /** the provider's name, for messages */
  provider: string;
  /** calls on the wire at once */
  maxConcurrency: number;
  /** calls waiting for a slot at once; more are refused */
  maxQueue: number;
  /** how long one call may wait for a slot */
  queueTimeoutMs: number;
  /** how long a 429 from the provider colours a refusal RATE_LIMITED */
  rateLimitedForMs?: number;
}

export interface LimiterStats {
  provider: string;
  in_flight: number;
  waiting: number;
  max_concurrency: number;
  max_queue: number;
  /** calls refused because the queue was full or the wait too long, since start */
  refused: number;
}

interface Waiter {
  grant: () => void;
  timer: NodeJS.Timeout;
  /** set once granted or given up, so a late timer or grant does nothing */
  settled: boolean;
}

const RATE_LIMITED_FOR_MS = 30_000;

export class ModelLimiter {
  private active = 0;
  private readonly queue: Waiter[] = [];
  /** index of the queue's head: shift() on a long array is O(n) */
  private head = 0;
  private refused = 0;
  /** when the provider last said 429 (epoch ms) */
  private lastRateLimitedAt = -Infinity;
  /** told of every change of the wait queue's depth (the /metrics gauge) */
  onDepth: ((waiting: number) => void) | undefined;
  private reported = 0;

  constructor(readonly opts: LimiterOptions) {}

  get waiting(): number {
    return this.queue.length - this.head;
  }

  get inFlight(): number {
    return this.active;
  }

  stats(): LimiterStats {
    return {
      provider: this.opts.provider, in_flight: this.active, waiting: this.waiting,
      max_concurrency: this.opts.maxConcurrency, max_queue: this.opts.maxQueue, refused: this.refused,
    };
  }

  /** The provider answered 429: refusals for a while say RATE_LIMITED. */
  rateLimited(now = Date.now()): void {
    this.lastRateLimitedAt = now;
  }

  /**
   * A slot, now or after a bounded wait; resolves with the function that gives it back (call it
   * exactly once, when the attempt is over). `deadline` (epoch ms) shortens the wait.
   */
  acquire(deadline?: number): Promise<() => void> {
    if (this.active < this.opts.maxConcurrency && this.waiting === 0) {
      this.active++;
      return Promise.resolve(this.releaser());
    }
    if (this.waiting >= this.opts.maxQueue) return Promise.reject(this.refusal(`${this.waiting} calls wait already (llm.max_queue)`));
    const left = deadline !== undefined ? deadline - Date.now() : Infinity;
    const waitMs = Math.min(this.opts.queueTimeoutMs, left);
    if (waitMs <= 0) return Promise.reject(this.refusal('no time was left to wait for it'));
    return new Promise((resolve, reject) => {
      const w: Waiter = {
        settled: false,
        grant: () => {
          w.settled = true;
          clearTimeout(w.timer);
          this.active++;
          resolve(this.releaser());
        },
        timer: setTimeout(() => {
          if (w.settled) return;
          w.settled = true;
          this.remove(w);
          reject(this.refusal(waitMs === this.opts.queueTimeoutMs ? `no slot came free within ${waitMs} ms (llm.queue_timeout_ms)` : `no slot came free before the question's deadline (${waitMs} ms)`));
        }, waitMs),
      };
      this.queue.push(w);
      this.report();
    });
  }

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.active--;
      this.next();
    };
  }

  private next(): void {
    while (this.active < this.opts.maxConcurrency && this.head < this.queue.length) {
      const w = this.queue[this.head]!;
      this.queue[this.head] = undefined as unknown as Waiter;
      this.head++;
      if (!w.settled) w.grant();
    }
    this.compact();
    this.report();
  }

  private remove(w: Waiter): void {
    const i = this.queue.indexOf(w, this.head);
    if (i >= 0) this.queue.splice(i, 1);
    this.compact();
    this.report();
  }

  private report(): void {
    const n = this.waiting;
    if (n === this.reported) return;
    this.reported = n;
    this.onDepth?.(n);
  }

  private compact(): void {
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
  }

  private refusal(why: string): CortadoError {
    this.refused++;
    const limit = `${this.opts.maxConcurrency} calls at once (llm.max_concurrency)`;
    const recent = Date.now() - this.lastRateLimitedAt < (this.opts.rateLimitedForMs ?? RATE_LIMITED_FOR_MS);
    const details = { provider: this.opts.provider, max_concurrency: this.opts.maxConcurrency, waiting: this.waiting };
    if (recent) {
      return new CortadoError('RATE_LIMITED', `the LLM (${this.opts.provider}) is rate limiting this service and ${limit} are busy: ${why}; try again shortly`, { ...details, retry_after_s: 1 });
    }
    return new CortadoError('LLM_UNAVAILABLE', `the LLM (${this.opts.provider}) is busy: ${limit} are under way and ${why}; try again shortly`, details);
  }
}

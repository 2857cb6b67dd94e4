/**
 * The three rate-limit strategies as pure functions: (stored state, now, limit) → verdict and
 * the state to store. No I/O and no clock of their own, so the exact counts are testable; the
 * shared store (ratelimit.ts) runs them inside a compare-and-swap loop on JetStream KV.
 *
 * L = requests_per_window, W = window_seconds. Only ALLOWED requests change the state: a
 * refused request is not counted, so a client that keeps knocking is let in again as soon as
 * the quota comes back, not later.
 *
 * - `sliding_window` — a sliding LOG (exact, not the weighted two-window approximation): the
 *   state is the timestamps of the allowed requests of the last W. A request is allowed when
 *   fewer than L of them are younger than W, so no interval of W ever holds more than L allowed
 *   requests. A timestamp leaves the window exactly W after it was taken. Cost: up to L numbers
 *   per client, rewritten on every allowed request: cheap for the tens a rate limit usually
 *   has; above 1 000 a warning suggests token_bucket or fixed_window (constant size).
 * - `token_bucket` — capacity L, refilled continuously at L/W tokens per second, starting
 *   full: a burst of L, then one request every W/L seconds. A request takes one token.
 * - `fixed_window` — a counter that starts with the client's first request and lasts W; the
 *   next request after it ends opens a new window (anchored to the client, not to the clock's
 *   minute, like SQLatte's limiter). At most L per window; at most 2L across a window edge.
 *
 * Times, all in ms and rounded up to whole seconds only when they become headers:
 * - `remaining`: requests left now (after this one, when it was allowed).
 * - `resetMs`: until `remaining` next grows — the oldest logged request leaves the window
 *   (sliding), one more token has dripped in (bucket), or the window ends and the whole quota
 *   comes back (fixed).
 * - `retryAfterMs` (refused only): until the next request would be allowed.
 */
export const Strategy = {
  SlidingWindow: 'sliding_window',
  TokenBucket: 'token_bucket',
  FixedWindow: 'fixed_window',
} as const;
export type Strategy = (typeof Strategy)[keyof typeof Strategy];

export interface Quota {
  /** requests per window */
  limit: number;
  windowMs: number;
}

export interface Verdict {
  allowed: boolean;
  remaining: number;
  resetMs: number;
  /** refused only: ms until a request would be allowed */
  retryAfterMs: number;
  /** allowed only: the state to store */
  next?: unknown;
}

/** Stored shapes (short names: this travels on every limited request). */
interface SlidingState { s: 'sw'; t: number[] }
interface BucketState { s: 'tb'; k: number; t: number }
interface FixedState { s: 'fw'; w: number; n: number }

function isNum(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

/**
 * Decide one request. `state` is whatever the store held (undefined, or garbage: a fresh start).
 * `cost`: how many requests it counts as (an MCP batch counts each tool call it holds); it is
 * allowed only when all of them fit, and then all are taken at once.
 */
export function decide(strategy: Strategy, state: unknown, now: number, q: Quota, cost = 1): Verdict {
  const n = Math.max(1, Math.floor(cost));
  switch (strategy) {
    case 'sliding_window': return slidingWindow(state, now, q, n);
    case 'token_bucket': return tokenBucket(state, now, q, n);
    case 'fixed_window': return fixedWindow(state, now, q, n);
  }
}

function slidingWindow(state: unknown, now: number, q: Quota, n: number): Verdict {
  const s = state as Partial<SlidingState> | undefined;
  const logged = s?.s === 'sw' && Array.isArray(s.t) ? s.t.filter(isNum) : [];
  // a timestamp taken at `now - W` has just left the window
  const live = logged.filter((ts) => ts > now - q.windowMs).sort((a, b) => a - b);
  if (live.length + n <= q.limit) {
    for (let i = 0; i < n; i++) live.push(now);
    const keep = live.slice(-q.limit);
    return {
      allowed: true,
      remaining: q.limit - keep.length,
      resetMs: Math.max(0, keep[0]! + q.windowMs - now),
      retryAfterMs: 0,
      next: { s: 'sw', t: keep } satisfies SlidingState,
    };
  }
  if (n > q.limit) return never(q);
  // the request becomes possible when all but L-n of the live ones have left the window
  const frees = live[live.length - (q.limit - n) - 1]!;
  const wait = Math.max(1, frees + q.windowMs - now);
  return { allowed: false, remaining: Math.max(0, q.limit - live.length), resetMs: wait, retryAfterMs: wait };
}

/** A request that counts as more than the whole quota: never allowed; asked again after a window. */
function never(q: Quota): Verdict {
  return { allowed: false, remaining: 0, resetMs: q.windowMs, retryAfterMs: q.windowMs };
}

function tokenBucket(state: unknown, now: number, q: Quota, n: number): Verdict {
  const s = state as Partial<BucketState> | undefined;
  const perMs = q.limit / q.windowMs;
  let tokens = q.limit;
  if (s?.s === 'tb' && isNum(s.k) && isNum(s.t)) {
    // a clock a little behind another edge's must not drain the bucket
    tokens = Math.min(q.limit, Math.max(0, s.k) + Math.max(0, now - s.t) * perMs);
  }
  if (tokens >= n) {
    const left = tokens - n;
    const whole = Math.floor(left);
    return {
      allowed: true,
      remaining: whole,
      resetMs: Math.ceil((whole + 1 - left) / perMs),
      retryAfterMs: 0,
      next: { s: 'tb', k: left, t: now } satisfies BucketState,
    };
  }
  if (n > q.limit) return never(q);
  const wait = Math.max(1, Math.ceil((n - tokens) / perMs));
  return { allowed: false, remaining: Math.floor(tokens), resetMs: wait, retryAfterMs: wait };
}

function fixedWindow(state: unknown, now: number, q: Quota, n: number): Verdict {
  const s = state as Partial<FixedState> | undefined;
  let start = now;
  let count = 0;
  if (s?.s === 'fw' && isNum(s.w) && isNum(s.n) && now < s.w + q.windowMs) {
    start = s.w;
    count = Math.max(0, s.n);
  }
  const ends = Math.max(1, start + q.windowMs - now);
  if (count + n <= q.limit) {
    return {
      allowed: true,
      remaining: q.limit - count - n,
      resetMs: ends,
      retryAfterMs: 0,
      next: { s: 'fw', w: start, n: count + n } satisfies FixedState,
    };
  }
  if (n > q.limit) return never(q);
  return { allowed: false, remaining: Math.max(0, q.limit - count), resetMs: ends, retryAfterMs: ends };
}

/**
 * One model call with retries, the same for every provider: an attempt that fails with a
 * retryable error (429, 5xx, 408/409, network, no answer in time) is tried again after an
 * exponential backoff with full jitter, or after the server's retry-after when it sends one;
 * never past the caller's deadline. What still fails is LLM_UNAVAILABLE, saying why.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { CortadoError } from '../../protocol/errors.js';
import type { ModelLimiter } from './limiter.js';
import { LlmAttemptError, type Completion, type CompletionRequest, type LlmProvider } from './providers/provider.js';

export interface CallPolicy {
  /** retries after the first attempt */
  maxRetries: number;
  /** one attempt may take this long */
  attemptTimeoutMs: number;
  /** absolute time (epoch ms) after which nobody waits for the answer */
  deadline?: number;
  /** first backoff; doubles each retry (jittered), capped at maxBackoffMs */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** a server's retry-after longer than this is not waited for */
  maxRetryAfterMs?: number;
  random?: () => number;
  /**
   * the provider's slots (limiter.ts): each attempt holds one while it is on the wire, none is
   * held during a backoff; a refused wait ends the call with the limiter's error, untried
   */
  limiter?: ModelLimiter;
}

export interface CallResult extends Completion {
  attempts: number;
}

const BASE_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 8_000;
const MAX_RETRY_AFTER_MS = 30_000;

export async function callWithRetries(provider: LlmProvider, req: Omit<CompletionRequest, 'signal'>, policy: CallPolicy): Promise<CallResult> {
  const random = policy.random ?? Math.random;
  const base = policy.baseBackoffMs ?? BASE_BACKOFF_MS;
  const cap = policy.maxBackoffMs ?? MAX_BACKOFF_MS;
  const maxAttempts = policy.maxRetries + 1;
  let last: LlmAttemptError | undefined;

  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    if (policy.deadline !== undefined && policy.deadline - Date.now() <= 0) break;
    const release = policy.limiter ? await policy.limiter.acquire(policy.deadline) : undefined;
    const left = policy.deadline !== undefined ? policy.deadline - Date.now() : Infinity;
    if (left <= 0) {
      release?.();
      break;
    }
    const timeoutMs = Math.min(policy.attemptTimeoutMs, left);
    // a controller and a plain timer: AbortSignal.timeout() costs several times more per call
    const controller = new AbortController();
    const { signal } = controller;
    const timer = setTimeout(() => controller.abort(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError')), timeoutMs);
    try {
      const done = await provider.complete({ ...req, signal }).finally(() => {
        clearTimeout(timer);
        release?.();
      });
      return { ...done, attempts: attempt };
    } catch (err) {
      if (signal.aborted) last = new LlmAttemptError(`no answer within ${seconds(timeoutMs)}`, { retryable: true, cause: err });
      else last = err instanceof LlmAttemptError ? err : new LlmAttemptError('unexpected failure', { retryable: false, cause: err });
      if (last.status === 429) policy.limiter?.rateLimited();
      if (!last.retryable || attempt === maxAttempts) return fail(provider, last, attempt);
      let wait = Math.floor(random() * Math.min(cap, base * 2 ** (attempt - 1)));
      if (last.retryAfterMs !== undefined) {
        if (last.retryAfterMs > (policy.maxRetryAfterMs ?? MAX_RETRY_AFTER_MS)) return fail(provider, last, attempt);
        wait = last.retryAfterMs;
      }
      const remaining = policy.deadline !== undefined ? policy.deadline - Date.now() : Infinity;
      if (wait >= remaining) return fail(provider, last, attempt);
      await sleep(wait);
    }
  }
  return fail(provider, last ?? new LlmAttemptError('no time was left to call it', { retryable: true }), 0);
}

function fail(provider: LlmProvider, err: LlmAttemptError, attempts: number): never {
  const tries = attempts === 1 ? 'after 1 attempt' : `after ${attempts} attempts`;
  throw new CortadoError(
    'LLM_UNAVAILABLE',
    `the LLM (${provider.name}) is unavailable: ${err.message}${attempts > 0 ? `, ${tries}` : ''}`,
    { provider: provider.name, attempts, ...(err.status !== undefined ? { status: err.status } : {}) },
    { cause: err },
  );
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

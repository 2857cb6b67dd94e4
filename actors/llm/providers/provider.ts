/**
 * One interface for every LLM provider; one file per provider beside this one. A provider
 * makes exactly one HTTP attempt per call (retries, backoff and the overall deadline belong
 * to ../call.ts, the same for every provider) and reports failures as an LlmAttemptError
 * that says whether trying again could help.
 */
import type { LlmMessage } from '../../../protocol/schemas/llm.js';
import type { Usage } from '../../../protocol/schemas/common.js';

export interface CompletionRequest {
  model: string;
  /** the stable part of the prompt: instructions and schema (providers cache it where they can) */
  system: string;
  messages: LlmMessage[];
  maxTokens: number;
  temperature: number;
  /** aborts the HTTP attempt (the per-attempt timeout or the caller's deadline) */
  signal: AbortSignal;
}

export interface Completion {
  text: string;
  usage: Omit<Usage, 'llm_calls'>;
}

export interface LlmProvider {
  readonly name: string;
  /** whether it has what it needs to call out (a key, a project); `reason` when not */
  status(): { configured: boolean; reason?: string };
  complete(req: CompletionRequest): Promise<Completion>;
}

/** One failed attempt: `retryable` for 408/409/429/5xx and network errors; `retryAfterMs` from the server. */
export class LlmAttemptError extends Error {
  readonly retryable: boolean;
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(message: string, opts: { retryable: boolean; status?: number; retryAfterMs?: number; cause?: unknown }) {
    super(message, { cause: opts.cause });
    this.name = 'LlmAttemptError';
    this.retryable = opts.retryable;
    this.status = opts.status;
    this.retryAfterMs = opts.retryAfterMs;
  }
}

/** Statuses worth another attempt. */
export function retryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** `retry-after-ms` (milliseconds) or `retry-after` (seconds or an HTTP date), in ms. */
export function retryAfterMs(get: (name: string) => string | null | undefined, now = Date.now()): number | undefined {
  const ms = Number(get('retry-after-ms'));
  if (get('retry-after-ms') && Number.isFinite(ms) && ms >= 0) return ms;
  const raw = get('retry-after');
  if (!raw) return undefined;
  const secs = Number(raw);
  if (Number.isFinite(secs) && secs >= 0) return secs * 1000;
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

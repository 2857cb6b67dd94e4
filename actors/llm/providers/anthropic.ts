/**
 * Anthropic's Messages API through @anthropic-ai/sdk. The system prompt (instructions and
 * schema, the same for every question) is sent as a cacheable block, so repeated questions
 * pay for it once per cache lifetime; cache hits come back as cached_input_tokens.
 * The Messages API of SDK 1.x no longer takes a temperature: llm.anthropic.temperature is
 * accepted for compatibility and not sent.
 */
import Anthropic from '@anthropic-ai/sdk';
import type { Config } from '../../../config/schema.js';
import { createKeepAliveFetch } from './keepalive-fetch.js';
import { LlmAttemptError, retryAfterMs, retryableStatus, type Completion, type CompletionRequest, type LlmProvider } from './provider.js';

export function createAnthropicProvider(section: Config['llm']['anthropic']): LlmProvider {
  const client = section.api_key
    ? new Anthropic({
        apiKey: section.api_key,
        ...(section.base_url ? { baseURL: section.base_url } : {}),
        maxRetries: 0, // ../call.ts retries, the same way for every provider
        timeout: section.timeout * 1000,
        // undici keep-alive: a third of the CPU of the built-in fetch per call; a socket per slot of
        // the provider's max_concurrency (../limiter.ts), so no call waits for one unseen
        fetch: createKeepAliveFetch(section.max_concurrency !== undefined ? { connections: section.max_concurrency } : {}),
        // the SDK's own spans would come from OpenTelemetry's global tracer, which Cortado never
        // registers (runtime/tracing.ts: the model call's span is ours, actors/llm/observe.ts):
        // they could only ever be no-ops, made and checked on every call
        openTelemetry: false,
      })
    : undefined;

  return {
    name: 'anthropic',
    status: () => (client ? { configured: true } : { configured: false, reason: 'no API key: set llm.anthropic.api_key (ANTHROPIC_API_KEY)' }),
    async complete(req: CompletionRequest): Promise<Completion> {
      if (!client) throw new LlmAttemptError('the Anthropic provider has no API key (llm.anthropic.api_key)', { retryable: false });
      try {
        const msg = await client.messages.create(
          {
            model: req.model,
            max_tokens: req.maxTokens,
            system: [{ type: 'text', text: req.system, cache_control: { type: 'ephemeral' } }],
            messages: req.messages.map((m) => ({ role: m.role, content: m.content })),
          },
          { signal: req.signal },
        );
        const text = msg.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
        const u = msg.usage;
        const cached = u.cache_read_input_tokens ?? 0;
        return {
          text,
          usage: {
            // input_tokens excludes cached reads and cache writes: count everything the prompt held
            input_tokens: u.input_tokens + cached + (u.cache_creation_input_tokens ?? 0),
            output_tokens: u.output_tokens,
            cached_input_tokens: cached,
          },
        };
      } catch (err) {
        throw toAttemptError(err);
      }
    },
  };
}

function toAttemptError(err: unknown): LlmAttemptError {
  if (err instanceof LlmAttemptError) return err;
  if (err instanceof Anthropic.APIUserAbortError) return new LlmAttemptError('the call was aborted', { retryable: true, cause: err });
  if (err instanceof Anthropic.APIConnectionTimeoutError) return new LlmAttemptError('no answer in time', { retryable: true, cause: err });
  if (err instanceof Anthropic.APIConnectionError) return new LlmAttemptError('cannot connect', { retryable: true, cause: err });
  if (err instanceof Anthropic.APIError && typeof err.status === 'number') {
    const status = err.status;
    const after = err.headers ? retryAfterMs((n) => err.headers?.get(n)) : undefined;
    return new LlmAttemptError(describeStatus(status, err), {
      retryable: retryableStatus(status),
      status,
      ...(after !== undefined ? { retryAfterMs: after } : {}),
      cause: err,
    });
  }
  return new LlmAttemptError('unexpected failure', { retryable: false, cause: err });
}

function describeStatus(status: number, err: InstanceType<typeof Anthropic.APIError>): string {
  switch (status) {
    case 401:
      return 'the API key was refused (401)';
    case 403:
      return 'the API key may not use this model (403)';
    case 404:
      return 'the model was not found (404)';
    case 429:
      return 'rate limited (429)';
    case 529:
      return 'overloaded (529)';
  }
  // the provider's own message says what was wrong with a 400; it never holds the key
  const detail = (err.error as { error?: { message?: unknown } } | undefined)?.error?.message;
  return typeof detail === 'string' && status < 500 ? `refused the request (${status}): ${detail}` : `failed (${status})`;
}

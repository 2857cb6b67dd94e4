/**
 * OpenAI's Chat Completions API through the `openai` SDK, and with llm.openai.base_url any
 * server that speaks it (Ollama, vLLM, llama.cpp, LM Studio, a gateway). A local server needs
 * no key: the SDK insists on one, so a placeholder is sent, which such servers ignore.
 *
 * Where the request differs between the two (decided by whether the endpoint is OpenAI's own):
 * - the token limit: OpenAI deprecated `max_tokens` in favour of `max_completion_tokens`, and
 *   its reasoning models (o-series, gpt-5) refuse `max_tokens`; many compatible servers only
 *   know `max_tokens` (older vLLM and llama.cpp ignore the new name and run unbounded). So
 *   OpenAI's endpoint gets `max_completion_tokens`, every other endpoint `max_tokens`.
 * - the temperature: OpenAI's reasoning models accept only their default and answer 400 to
 *   anything else, so it is not sent to them; every other model gets llm.openai.temperature.
 * Prompt caching is automatic on OpenAI's side for long prompts with a stable prefix (the
 * system prompt comes first for that reason); hits are reported as cached_tokens.
 */
import { createKeepAliveFetch } from './keepalive-fetch.js';
import OpenAI from 'openai';
import type { Config } from '../../../config/schema.js';
import { LlmAttemptError, retryAfterMs, retryableStatus, type Completion, type CompletionRequest, type LlmProvider } from './provider.js';

const OPENAI_BASE_URL = 'https://api.openai.com/v1';
/** sent to OpenAI-compatible servers configured without a key; they do not check it */
const PLACEHOLDER_KEY = 'not-needed';

export interface OpenAiProviderOptions {
  /** test seam: the fetch the SDK uses */
  fetch?: typeof fetch;
}

/** Whether base_url (empty: the default) is OpenAI's own API rather than a compatible server. */
export function isOpenAiEndpoint(baseUrl: string): boolean {
  if (!baseUrl) return true;
  try {
    return new URL(baseUrl).hostname.toLowerCase() === 'api.openai.com';
  } catch {
    return false;
  }
}

/** OpenAI's reasoning models, which take no temperature but their default (gpt-5-chat does). */
export function isReasoningModel(model: string): boolean {
  const m = model.toLowerCase().replace(/^openai\//, '');
  return /^o\d/.test(m) || (/^gpt-5/.test(m) && !m.includes('chat'));
}

export function createOpenAiProvider(section: Config['llm']['openai'], opts: OpenAiProviderOptions = {}): LlmProvider {
  const baseUrl = section.base_url.trim();
  const official = isOpenAiEndpoint(baseUrl);
  const configured = Boolean(section.api_key || baseUrl);
  const client = configured
    ? new OpenAI({
        apiKey: section.api_key || PLACEHOLDER_KEY,
        // everything explicit, so OPENAI_* variables in the environment do not override the config
        organization: section.organization || null,
        project: null,
        baseURL: baseUrl || OPENAI_BASE_URL,
        maxRetries: 0, // ../call.ts retries, the same way for every provider
        timeout: section.timeout * 1000,
        fetch: opts.fetch ?? createKeepAliveFetch(section.max_concurrency !== undefined ? { connections: section.max_concurrency } : {}),
      })
    : undefined;

  return {
    name: 'openai',
    status: () =>
      client
        ? { configured: true }
        : { configured: false, reason: 'no API key: set llm.openai.api_key, or llm.openai.base_url for a local OpenAI-compatible server' },
    async complete(req: CompletionRequest): Promise<Completion> {
      if (!client) throw new LlmAttemptError('the OpenAI provider has no API key or base URL (llm.openai.api_key, llm.openai.base_url)', { retryable: false });
      const body: OpenAI.Chat.ChatCompletionCreateParamsNonStreaming = {
        model: req.model,
        messages: [
          { role: 'system', content: req.system },
          ...req.messages.map((m): OpenAI.Chat.ChatCompletionMessageParam => (m.role === 'assistant' ? { role: 'assistant', content: m.content } : { role: 'user', content: m.content })),
        ],
        ...(official ? { max_completion_tokens: req.maxTokens } : { max_tokens: req.maxTokens }),
        ...(official && isReasoningModel(req.model) ? {} : { temperature: req.temperature }),
      };
      let res: OpenAI.Chat.ChatCompletion;
      try {
        res = await client.chat.completions.create(body, { signal: req.signal });
      } catch (err) {
        throw toAttemptError(err, section.api_key);
      }
      const choice = res.choices?.[0];
      const message = choice?.message;
      if (message?.refusal) throw new LlmAttemptError(`the model refused: ${message.refusal}`, { retryable: false });
      const text = stripThinking(typeof message?.content === 'string' ? message.content : '');
      if (!text.trim()) {
        const why = !choice ? 'no choices' : choice.finish_reason === 'length' ? `the token limit (${req.maxTokens}) was reached first` : 'no content';
        throw new LlmAttemptError(`empty reply (${why})`, { retryable: false });
      }
      const u = res.usage;
      return {
        text,
        usage: {
          input_tokens: count(u?.prompt_tokens),
          output_tokens: count(u?.completion_tokens),
          cached_input_tokens: count(u?.prompt_tokens_details?.cached_tokens),
        },
      };
    },
  };
}

/**
 * Local reasoning models (DeepSeek-R1, Qwen3 on Ollama or llama.cpp) may put their thinking
 * in the content as a leading <think>…</think> block; it is not the answer, and any draft SQL
 * in it must not be mistaken for the query.
 */
function stripThinking(text: string): string {
  return text.replace(/^\s*<think>[\s\S]*?<\/think>\s*/i, '');
}

/** Token counts as non-negative integers; servers that omit usage count as zero. */
function count(n: unknown): number {
  return typeof n === 'number' && Number.isFinite(n) && n > 0 ? Math.floor(n) : 0;
}

function toAttemptError(err: unknown, apiKey: string): LlmAttemptError {
  if (err instanceof LlmAttemptError) return err;
  if (err instanceof OpenAI.APIUserAbortError) return new LlmAttemptError('the call was aborted', { retryable: true, cause: err });
  if (err instanceof OpenAI.APIConnectionTimeoutError) return new LlmAttemptError('no answer in time', { retryable: true, cause: err });
  if (err instanceof OpenAI.APIConnectionError) return new LlmAttemptError('cannot connect', { retryable: true, cause: err });
  if (err instanceof OpenAI.APIError && typeof err.status === 'number') {
    const status = err.status;
    const after = err.headers ? retryAfterMs((n) => err.headers?.get(n)) : undefined;
    return new LlmAttemptError(redact(describeStatus(status, err), apiKey), {
      // a used-up quota is a 429 that no waiting mends
      retryable: retryableStatus(status) && err.code !== 'insufficient_quota',
      status,
      ...(after !== undefined ? { retryAfterMs: after } : {}),
      cause: err,
    });
  }
  return new LlmAttemptError('unexpected failure', { retryable: false, cause: err });
}

/** A server's message never carries the key out, whatever the server puts in it. */
function redact(message: string, apiKey: string): string {
  return apiKey.length >= 4 ? message.split(apiKey).join('[key]') : message;
}

function describeStatus(status: number, err: InstanceType<typeof OpenAI.APIError>): string {
  switch (status) {
    case 401:
      return 'the API key was refused (401)';
    case 403:
      return 'the API key may not use this model, or the region is not supported (403)';
    case 404:
      return 'the model or endpoint was not found (404): check llm.openai.model and llm.openai.base_url';
    case 429:
      return err.code === 'insufficient_quota' ? 'the quota is used up (429 insufficient_quota)' : 'rate limited (429)';
  }
  // the server's own message says what was wrong with a 400; OpenAI's never holds the key, but
  // a 401 message can ("Incorrect API key provided: sk-…"), which is why those are not passed on
  const detail = (err.error as { message?: unknown } | undefined)?.message;
  return typeof detail === 'string' && status < 500 ? `refused the request (${status}): ${detail}` : `failed (${status})`;
}

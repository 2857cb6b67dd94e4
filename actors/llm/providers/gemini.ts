/**
 * Google's Gemini models through @google/genai. This file holds the translation both Google
 * providers share (the generateContent wire format, usage, errors) and the `gemini` provider
 * itself (the Gemini API with an API key); `vertexai` (the same models on Vertex AI with
 * Google Cloud credentials) is in vertexai.ts.
 *
 * One HTTP attempt per call: the SDK retries only when httpOptions.retryOptions is given, and
 * it is never given here (../call.ts retries, the same way for every provider).
 * Prompt caching: Gemini 2.5 and later cache a repeated prompt prefix implicitly; the stable
 * part (instructions and schema) goes first as the system instruction so that it is the
 * shared prefix, and hits come back as cachedContentTokenCount → cached_input_tokens.
 */
import { ApiError, GoogleGenAI, type Content, type GenerateContentResponse, type HttpOptions } from '@google/genai';
import { gaxios } from 'google-auth-library';
import type { Config } from '../../../config/schema.js';
import { LlmAttemptError, retryAfterMs, retryableStatus, type Completion, type CompletionRequest, type LlmProvider } from './provider.js';

export function createGeminiProvider(section: Config['llm']['gemini']): LlmProvider {
  const client = section.api_key ? new GoogleGenAI({ apiKey: section.api_key, httpOptions: geminiHttpOptions(section) }) : undefined;
  return {
    name: 'gemini',
    status: () => (client ? { configured: true } : { configured: false, reason: 'no API key: set llm.gemini.api_key' }),
    async complete(req: CompletionRequest): Promise<Completion> {
      if (!client) throw new LlmAttemptError('the Gemini provider has no API key (llm.gemini.api_key)', { retryable: false });
      return generate(client, req);
    },
  };
}

/** base_url and the per-attempt timeout; no retryOptions, so the SDK makes one attempt. */
export function geminiHttpOptions(section: { base_url: string; timeout: number }): HttpOptions {
  return { ...(section.base_url ? { baseUrl: section.base_url } : {}), timeout: section.timeout * 1000 };
}

/** One generateContent call, its reply translated; every failure an LlmAttemptError. */
export async function generate(client: GoogleGenAI, req: CompletionRequest): Promise<Completion> {
  // The SDK's errors carry the status but not the headers: a fetch of our own keeps the
  // response's headers for retry-after. (With it the SDK no longer lifts undici's 300 s
  // header/body timeouts, far above any sensible llm.*.timeout.)
  let headers: Headers | undefined;
  const recordingFetch: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    headers = res.headers;
    return res;
  };
  try {
    const call = client.models.generateContent({
      model: req.model,
      contents: req.messages.map((m): Content => ({ role: m.role === 'assistant' ? 'model' : 'user', parts: [{ text: m.content }] })),
      config: {
        systemInstruction: req.system,
        maxOutputTokens: req.maxTokens,
        temperature: req.temperature,
        abortSignal: req.signal,
        httpOptions: { fetch: recordingFetch },
      },
    });
    // Vertex AI fetches an access token before the request, and that step does not see the
    // signal: stop waiting when the signal fires whatever the SDK is doing.
    return translate(await abortable(call, req.signal));
  } catch (err) {
    throw toAttemptError(err, headers, req.signal);
  }
}

function translate(res: GenerateContentResponse): Completion {
  const block = res.promptFeedback?.blockReason;
  if (block) throw new LlmAttemptError(`the prompt was blocked by the provider's filters (${block})`, { retryable: false });
  const candidate = res.candidates?.[0];
  // thought summaries are not the answer; everything else that is text is
  const text = (candidate?.content?.parts ?? []).flatMap((p) => (typeof p.text === 'string' && !p.thought ? [p.text] : [])).join('');
  const u = res.usageMetadata ?? {};
  if (!text) {
    const reason = candidate?.finishReason;
    if (!candidate) throw new LlmAttemptError('the reply held no candidates', { retryable: false });
    if (reason === 'MAX_TOKENS') {
      const thought = u.thoughtsTokenCount ? ` (${u.thoughtsTokenCount} of them spent thinking)` : '';
      throw new LlmAttemptError(`the reply reached max_tokens before any text${thought}: raise max_tokens or pick a model that thinks less`, { retryable: false });
    }
    if (reason && reason !== 'STOP') throw new LlmAttemptError(`the reply was withheld by the provider (finishReason ${reason})`, { retryable: false });
    throw new LlmAttemptError('the reply was empty', { retryable: false });
  }
  return {
    text,
    usage: {
      // promptTokenCount already includes the cached part
      input_tokens: u.promptTokenCount ?? 0,
      // thinking is billed as output
      output_tokens: (u.candidatesTokenCount ?? 0) + (u.thoughtsTokenCount ?? 0),
      cached_input_tokens: u.cachedContentTokenCount ?? 0,
    },
  };
}

function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** A Google API error body: {error: {code, message, status, details: [{'@type', ...}]}}. */
interface GoogleErrorBody {
  message?: string;
  status?: string;
  details?: Array<{ '@type'?: string; reason?: string; retryDelay?: string }>;
}

function errorBody(err: ApiError): GoogleErrorBody {
  try {
    const parsed = JSON.parse(err.message) as { error?: GoogleErrorBody };
    return parsed.error && typeof parsed.error === 'object' ? parsed.error : {};
  } catch {
    return {};
  }
}

/** google.rpc.RetryInfo's retryDelay, a protobuf Duration in JSON ("13s", "0.500s"), in ms. */
function retryDelayMs(body: GoogleErrorBody): number | undefined {
  const delay = body.details?.find((d) => d['@type']?.endsWith('google.rpc.RetryInfo'))?.retryDelay;
  const m = typeof delay === 'string' ? /^(\d+(?:\.\d+)?)s$/.exec(delay) : null;
  return m?.[1] ? Math.round(Number(m[1]) * 1000) : undefined;
}

function toAttemptError(err: unknown, headers: Headers | undefined, signal: AbortSignal): LlmAttemptError {
  if (err instanceof LlmAttemptError) return err;
  if (err instanceof ApiError) {
    const status = err.status;
    const body = errorBody(err);
    const after = (headers ? retryAfterMs((n) => headers?.get(n)) : undefined) ?? retryDelayMs(body);
    return new LlmAttemptError(describeStatus(status, body), {
      retryable: retryableStatus(status),
      status,
      ...(after !== undefined ? { retryAfterMs: after } : {}),
      cause: err,
    });
  }
  if (err instanceof gaxios.GaxiosError) return authError(err);
  const e = err as { name?: unknown; message?: unknown } | undefined;
  if (e?.name === 'AbortError' || e?.name === 'TimeoutError') {
    // not our signal: the SDK's own timer (httpOptions.timeout) gave up
    return new LlmAttemptError(signal.aborted ? 'the call was aborted' : 'no answer in time', { retryable: true, cause: err });
  }
  if (err instanceof TypeError && err.message === 'fetch failed') return new LlmAttemptError('cannot connect', { retryable: true, cause: err });
  // e.g. google-auth-library's "Could not load the default credentials": worth reading, never a secret
  const message = typeof e?.message === 'string' ? e.message.slice(0, 300) : String(err);
  return new LlmAttemptError(`unexpected failure: ${message}`, { retryable: false, cause: err });
}

/** Getting the Google Cloud access token failed (Vertex AI). */
function authError(err: InstanceType<typeof gaxios.GaxiosError>): LlmAttemptError {
  const status = err.status ?? err.response?.status;
  if (typeof status !== 'number') return new LlmAttemptError('cannot reach the token endpoint for an access token', { retryable: true, cause: err });
  // getToken puts the endpoint's "error: error_description" into the message; no credential is in it
  return new LlmAttemptError(`no access token for the credentials (${status}): ${err.message.slice(0, 300)}`, {
    retryable: retryableStatus(status),
    status,
    cause: err,
  });
}

function describeStatus(status: number, body: GoogleErrorBody): string {
  const reason = body.details?.find((d) => d['@type']?.endsWith('google.rpc.ErrorInfo'))?.reason;
  // the Gemini API answers a bad key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID
  if (status === 401 || reason === 'API_KEY_INVALID') return `the API key or credentials were refused (${status})`;
  switch (status) {
    case 403:
      return 'the API key or credentials may not use this model or project (403)';
    case 404:
      return 'the model was not found (404)';
    case 429:
      return 'rate limited or out of quota (429)';
  }
  // the provider's own message says what was wrong with a 400; it never holds the key
  return typeof body.message === 'string' && status < 500 ? `refused the request (${status}): ${body.message.slice(0, 300)}` : `failed (${status})`;
}

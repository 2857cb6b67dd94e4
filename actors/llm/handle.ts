/**
 * The LLM gateway: every model call of every actor goes through here, so routing, retries,
 * timeouts and token accounting are decided once. The route (provider and model) of a task
 * comes from config/model-routing.ts.
 */
import type { Ctx } from '../../protocol/headers.js';
import { CortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/log.js';
import type { LlmCompleteReply, LlmCompleteRequest, LlmStatusReply } from '../../protocol/schemas/llm.js';
import type { Config, LlmProviderName } from '../../config/schema.js';
import { resolveRoute } from '../../config/model-routing.js';
import { callWithRetries, type CallPolicy } from './call.js';
import { ModelLimiter } from './limiter.js';
import { llmQueue } from '../../runtime/metrics.js';
import { costUsd } from './pricing.js';
import type { LlmProvider } from './providers/provider.js';

export interface LlmDeps {
  config: Config;
  log: Logger;
  /** providers built so far, by name (each made once, at its first use) */
  providers: Map<LlmProviderName, Promise<LlmProvider>>;
  /** test seam for the backoff */
  policy?: Partial<CallPolicy>;
  /** each provider's slots and wait queue (limiter.ts), made on its first call */
  limiters?: Map<LlmProviderName, ModelLimiter>;
  /** told of each provider's wait-queue depth as it changes (the /metrics gauge) */
  onQueueDepth?: (provider: LlmProviderName, waiting: number) => void;
  /** how each provider's calls have gone lately (reachability below), made on the first call */
  reach?: Map<LlmProviderName, Reach>;
}

/**
 * Whether a provider answers, as its calls found: /health cannot ask the model itself (a call
 * costs money), so it says what the questions found. A call that failed after its attempts
 * (connection refused, no answer in time, 5xx after retries, a refused key) marks the provider
 * unreachable from then on; the next call that gets an answer marks it reachable again. A call
 * refused by our own limiter (busy, rate limited) or out of time before its first attempt says
 * nothing about the model and changes nothing.
 */
export interface Reach {
  ok: boolean;
  /** since when calls have failed (epoch ms), while !ok */
  since?: number;
  error?: string;
}

function noteReach(deps: LlmDeps, name: LlmProviderName, err?: unknown): void {
  const reach = (deps.reach ??= new Map());
  if (!err) {
    reach.set(name, { ok: true });
    return;
  }
  const attempts = err instanceof CortadoError ? err.details?.attempts : undefined;
  if (!(err instanceof CortadoError && err.code === 'LLM_UNAVAILABLE' && typeof attempts === 'number' && attempts > 0)) return;
  const before = reach.get(name);
  reach.set(name, { ok: false, since: before && !before.ok && before.since ? before.since : Date.now(), error: err.message });
}

/** A provider's calls at once: its own max_concurrency, else llm.max_concurrency. */
export function maxConcurrency(config: Config, name: LlmProviderName): number {
  return config.llm[name].max_concurrency ?? config.llm.max_concurrency;
}

/** the provider's section with its max_concurrency resolved (its HTTP client has that many sockets) */
const sized = <N extends LlmProviderName>(config: Config, name: N): Config['llm'][N] => ({ ...config.llm[name], max_concurrency: maxConcurrency(config, name) });

/**
 * One line per provider. Each module is loaded at the provider's first use, not before: each
 * brings its vendor's SDK (Anthropic's, OpenAI's, Google's with its auth library), which a
 * process configured for another vendor would load for nothing.
 */
const FACTORIES: Partial<Record<LlmProviderName, (config: Config) => Promise<LlmProvider>>> = {
  anthropic: async (config) => (await import('./providers/anthropic.js')).createAnthropicProvider(sized(config, 'anthropic')),
  gemini: async (config) => (await import('./providers/gemini.js')).createGeminiProvider(config.llm.gemini),
  vertexai: async (config) => (await import('./providers/vertexai.js')).createVertexProvider(config.llm.vertexai),
  openai: async (config) => (await import('./providers/openai.js')).createOpenAiProvider(sized(config, 'openai')),
};

export function limiterFor(name: LlmProviderName, deps: Pick<LlmDeps, 'config' | 'limiters' | 'onQueueDepth'>): ModelLimiter {
  const limiters = (deps.limiters ??= new Map());
  const known = limiters.get(name);
  if (known) return known;
  const made = new ModelLimiter({
    provider: name,
    maxConcurrency: maxConcurrency(deps.config, name),
    maxQueue: deps.config.llm.max_queue,
    queueTimeoutMs: deps.config.llm.queue_timeout_ms,
  });
  const report = deps.onQueueDepth;
  made.onDepth = (waiting) => {
    llmQueue.set(name, waiting); // cortado_llm_queue_depth{provider}
    report?.(name, waiting);
  };
  limiters.set(name, made);
  return made;
}

/** The provider's section each provider was made from: a run-time change of it makes the provider again. */
const MADE_FROM = new WeakMap<Promise<LlmProvider>, string>();

export async function providerFor(name: LlmProviderName, deps: Pick<LlmDeps, 'config' | 'providers'>): Promise<LlmProvider> {
  const section = JSON.stringify(deps.config.llm[name]);
  const known = deps.providers.get(name);
  if (known && MADE_FROM.get(known) === section) return known;
  const make = FACTORIES[name];
  if (!make) throw new CortadoError('LLM_UNAVAILABLE', `the LLM provider "${name}" is not available in this build (available: ${Object.keys(FACTORIES).join(', ')})`, { provider: name });
  const made = make(deps.config);
  MADE_FROM.set(made, section);
  deps.providers.set(name, made);
  // a provider that could not be made is tried again at the next call (as before, when it threw each time)
  made.catch(() => { if (deps.providers.get(name) === made) deps.providers.delete(name); });
  return made;
}

export async function complete(input: LlmCompleteRequest, deps: LlmDeps, ctx: Ctx): Promise<LlmCompleteReply> {
  const route = resolveRoute(deps.config, input.task);
  const provider = await providerFor(route.provider, deps);
  const status = provider.status();
  if (!status.configured) {
    throw new CortadoError('LLM_UNAVAILABLE', `the LLM is not configured: ${status.reason ?? 'see the llm section'}`, { provider: route.provider });
  }
  const started = performance.now();
  const section = deps.config.llm[route.provider];
  const result = await callWithRetries(
    provider,
    {
      model: route.model,
      system: input.system,
      messages: input.messages,
      maxTokens: Math.min(input.max_tokens ?? route.maxTokens, route.maxTokens),
      temperature: route.temperature,
    },
    {
      maxRetries: section.max_retries,
      attemptTimeoutMs: section.timeout * 1000,
      ...(ctx.deadline !== undefined ? { deadline: ctx.deadline } : {}),
      limiter: limiterFor(route.provider, deps),
      ...deps.policy,
    },
  ).catch((err: unknown) => {
    noteReach(deps, route.provider, err);
    deps.log.warn({ rid: ctx.requestId, task: input.task, provider: route.provider, model: route.model, err: (err as Error).message }, 'model call failed');
    throw err;
  });
  noteReach(deps, route.provider);
  const cost = costUsd(deps.config, route.model, result.usage);
  // per question: at debug (the edge's access line is the one line a request gets at info)
  if (deps.log.isLevelEnabled('debug')) deps.log.debug(
    {
      rid: ctx.requestId, task: input.task, provider: route.provider, model: route.model, attempts: result.attempts,
      ms: Math.round(performance.now() - started), in: result.usage.input_tokens, out: result.usage.output_tokens, cached: result.usage.cached_input_tokens,
      ...(cost !== undefined ? { usd: cost } : {}),
    },
    'model call',
  );
  return {
    text: result.text,
    provider: route.provider,
    model: route.model,
    usage: { ...result.usage, llm_calls: 1, ...(cost !== undefined ? { cost_usd: cost } : {}) },
    attempts: result.attempts,
  };
}

/**
 * Cheap: says whether the configured provider could be called, never calls it, and whether its
 * calls have been getting answers lately (Reach above).
 */
export async function status(deps: Pick<LlmDeps, 'config' | 'providers' | 'reach'>): Promise<LlmStatusReply> {
  const name = deps.config.llm.provider;
  const model = deps.config.llm[name].model;
  try {
    const s = (await providerFor(name, deps)).status();
    const reach = deps.reach?.get(name);
    return {
      configured: s.configured, provider: name, model, ...(s.reason ? { reason: s.reason } : {}),
      ...(reach ? { reachable: reach.ok } : {}),
      ...(reach && !reach.ok ? { ...(reach.since ? { failing_since: new Date(reach.since).toISOString() } : {}), ...(reach.error ? { last_error: reach.error } : {}) } : {}),
    };
  } catch (err) {
    return { configured: false, provider: name, model, reason: (err as Error).message };
  }
}

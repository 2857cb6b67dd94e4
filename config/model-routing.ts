/**
 * Which provider and model serve a task. The top-level `model_routing` wins (a task →
 * "provider", "provider:model", a model name of the configured provider, or
 * {provider, model}); then `llm.<provider>.model_routing.<task>` (a model of the configured
 * provider); then the provider's `model`.
 */
import type { Config, LlmProviderName } from './schema.js';
import type { LlmTask } from '../protocol/schemas/llm.js';

export interface Route {
  provider: LlmProviderName;
  model: string;
  maxTokens: number;
  temperature: number;
}

const PROVIDERS: readonly LlmProviderName[] = ['anthropic', 'gemini', 'vertexai', 'openai'];

function isProvider(s: string): s is LlmProviderName {
  return (PROVIDERS as readonly string[]).includes(s);
}

export function resolveRoute(config: Config, task: LlmTask): Route {
  const target = config.model_routing[task];
  let provider: LlmProviderName = config.llm.provider;
  let model: string | undefined;
  if (typeof target === 'string') {
    const colon = target.indexOf(':');
    const head = colon > 0 ? target.slice(0, colon) : target;
    if (colon > 0 && isProvider(head)) {
      provider = head;
      model = target.slice(colon + 1) || undefined;
    } else if (isProvider(target)) {
      provider = target;
    } else {
      model = target;
    }
  } else if (target) {
    provider = target.provider;
    model = target.model || undefined;
  }
  const section = config.llm[provider];
  if (!model && provider === config.llm.provider) model = section.model_routing[task] || undefined;
  return { provider, model: model || section.model, maxTokens: section.max_tokens, temperature: section.temperature };
}

export function sameRoute(a: Route, b: Route): boolean {
  return a.provider === b.provider && a.model === b.model;
}

/**
 * Why a provider's section cannot make a call (no key, no project), from the config alone; undefined
 * when it looks usable. The provider's own status (actors/llm) says the same at run time.
 */
export function missingCredentials(config: Config, provider: LlmProviderName): string | undefined {
  const llm = config.llm;
  switch (provider) {
    case 'anthropic': return llm.anthropic.api_key ? undefined : 'no API key in llm.anthropic.api_key';
    case 'gemini': return llm.gemini.api_key ? undefined : 'no API key in llm.gemini.api_key';
    case 'openai': return llm.openai.api_key || llm.openai.base_url.trim() ? undefined : 'neither llm.openai.api_key nor llm.openai.base_url';
    case 'vertexai': return llm.vertexai.project_id ? undefined : 'no project in llm.vertexai.project_id';
  }
}

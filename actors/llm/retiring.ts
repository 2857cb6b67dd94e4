/**
 * Models their vendors retire: a configured one is named once, when the llm actor starts, with
 * the key to change and what to change it to; never once per call. (The Anthropic SDK also
 * writes its own two lines to stderr on every call to a model it lists as deprecated: one more
 * reason to move.) Dates are the vendors' published end-of-life days (Anthropic's from SDK 1.12's
 * own list).
 */
import type { Config } from '../../config/schema.js';

interface Retiring {
  /** the last day the vendor serves it (YYYY-MM-DD) */
  until: string;
  /** the model to move to */
  use: string;
}

export const RETIRING: Readonly<Record<string, Readonly<Record<string, Retiring>>>> = Object.freeze({
  anthropic: Object.freeze({
    'claude-sonnet-4-5': { until: '2026-11-30', use: 'claude-sonnet-5-5' },
    'claude-sonnet-4-5-20250929': { until: '2026-11-30', use: 'claude-sonnet-5-5' },
  }),
});

export interface RetiringModel {
  /** the config key that names it (`llm.anthropic.model`, `llm.anthropic.model_routing.sql`) */
  key: string;
  model: string;
  until: string;
  use: string;
  /** the day has passed: calls fail */
  gone: boolean;
}

/** The configured provider's models (its model and every model_routing entry) that its vendor retires. */
export function retiringModels(config: Pick<Config, 'llm'>, today: Date = new Date()): RetiringModel[] {
  const provider = config.llm.provider;
  const table = RETIRING[provider === 'vertexai' ? 'gemini' : provider] ?? {};
  const section = config.llm[provider];
  const named: Array<[string, string | undefined]> = [[`llm.${provider}.model`, section.model]];
  for (const [task, model] of Object.entries(section.model_routing ?? {})) named.push([`llm.${provider}.model_routing.${task}`, model]);
  const day = today.toISOString().slice(0, 10);
  const out: RetiringModel[] = [];
  for (const [key, model] of named) {
    const r = model ? table[model] : undefined;
    if (model && r) out.push({ key, model, until: r.until, use: r.use, gone: day > r.until });
  }
  return out;
}

/** One sentence for the start-up log. */
export function retiringText(m: RetiringModel): string {
  return m.gone
    ? `${m.key} is ${m.model}, which its vendor retired after ${m.until}: calls to it fail; set ${m.key} to ${m.use}`
    : `${m.key} is ${m.model}, which its vendor retires after ${m.until}; set ${m.key} to ${m.use} before then`;
}

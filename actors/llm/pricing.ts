/**
 * What a model call costs, estimated from its tokens: USD per million input, cached input and
 * output tokens, by model. The built-in table holds the default model of each provider (and a
 * few common siblings) at their list prices; `llm.pricing` overrides or adds models (a
 * negotiated price, a gateway's, a model the table does not know). A model in neither has no
 * price: its calls carry no `cost_usd` at all, since a made-up zero would read as "free".
 *
 * Prices are list prices in USD as published by the vendors (checked 2025-11); they change, so
 * an operator who bills by them sets `llm.pricing`.
 */
import type { Config } from '../../config/schema.js';
import { roundUsd, type Usage } from '../../protocol/schemas/common.js';

export interface ModelPrice {
  input_per_mtok: number;
  output_per_mtok: number;
  /** cached prompt tokens (read from the provider's cache); the input price when absent */
  cached_input_per_mtok?: number;
}

/** List prices (USD per million tokens) of the providers' default and common models. */
export const MODEL_PRICES: Readonly<Record<string, ModelPrice>> = Object.freeze({
  // Anthropic (llm.anthropic.model default: claude-sonnet-5-5); cache reads at a tenth
  'claude-sonnet-5-5': { input_per_mtok: 2, output_per_mtok: 10, cached_input_per_mtok: 0.2 },
  'claude-sonnet-5': { input_per_mtok: 2, output_per_mtok: 10, cached_input_per_mtok: 0.2 },
  // the default until 2026-11: Anthropic retires it on 30 November 2026
  'claude-sonnet-4-5': { input_per_mtok: 3, output_per_mtok: 15, cached_input_per_mtok: 0.3 },
  'claude-sonnet-4': { input_per_mtok: 3, output_per_mtok: 15, cached_input_per_mtok: 0.3 },
  'claude-haiku-4-5': { input_per_mtok: 1, output_per_mtok: 5, cached_input_per_mtok: 0.1 },
  'claude-opus-4-1': { input_per_mtok: 15, output_per_mtok: 75, cached_input_per_mtok: 1.5 },
  // Google, Gemini API and Vertex AI (default: gemini-2.5-flash)
  'gemini-2.5-flash': { input_per_mtok: 0.3, output_per_mtok: 2.5, cached_input_per_mtok: 0.03 },
  'gemini-2.5-flash-lite': { input_per_mtok: 0.1, output_per_mtok: 0.4, cached_input_per_mtok: 0.01 },
  'gemini-2.5-pro': { input_per_mtok: 1.25, output_per_mtok: 10, cached_input_per_mtok: 0.125 },
  // OpenAI (default: gpt-4.1-mini)
  'gpt-4.1-mini': { input_per_mtok: 0.4, output_per_mtok: 1.6, cached_input_per_mtok: 0.1 },
  'gpt-4.1': { input_per_mtok: 2, output_per_mtok: 8, cached_input_per_mtok: 0.5 },
  'gpt-4.1-nano': { input_per_mtok: 0.1, output_per_mtok: 0.4, cached_input_per_mtok: 0.025 },
  'gpt-4o-mini': { input_per_mtok: 0.15, output_per_mtok: 0.6, cached_input_per_mtok: 0.075 },
  'gpt-4o': { input_per_mtok: 2.5, output_per_mtok: 10, cached_input_per_mtok: 1.25 },
});

/**
 * A dated or versioned name of a model the table knows (`claude-sonnet-4-5-20250929`,
 * `gpt-4.1-mini-2025-04-14`, `gemini-2.5-flash-001`, `claude-sonnet-4-5@20250929`, or with a
 * `models/` path): the base name. Anything else is left as it is.
 */
function baseName(model: string): string {
  const name = model.slice(model.lastIndexOf('/') + 1);
  return name.replace(/(@.*|-\d{8}|-\d{4}-\d{2}-\d{2}|-\d{3}|-latest)$/, '');
}

/** The price of a model: `llm.pricing` first (exact name, then base name), then the table. */
export function priceOf(config: Pick<Config, 'llm'>, model: string): ModelPrice | undefined {
  const custom = config.llm.pricing;
  const base = baseName(model);
  return custom[model] ?? custom[base] ?? MODEL_PRICES[model] ?? MODEL_PRICES[base];
}

/**
 * The estimated cost of one call in USD, or undefined when the model has no price. Providers
 * count cached prompt tokens inside `input_tokens` (actors/llm/providers): those are priced at
 * the cached rate, the rest at the input rate.
 */
export function costUsd(config: Pick<Config, 'llm'>, model: string, usage: Pick<Usage, 'input_tokens' | 'output_tokens' | 'cached_input_tokens'>): number | undefined {
  const price = priceOf(config, model);
  if (!price) return undefined;
  const cached = Math.min(usage.cached_input_tokens, usage.input_tokens);
  const fresh = usage.input_tokens - cached;
  const usd = (fresh * price.input_per_mtok + cached * (price.cached_input_per_mtok ?? price.input_per_mtok) + usage.output_tokens * price.output_per_mtok) / 1e6;
  return roundUsd(usd);
}

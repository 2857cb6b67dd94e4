/**
 * Insights: a few short sentences about a query result, put beside the table.
 *
 * Statistical insights are computed in statistical.ts (on series.ts, periods.ts and stats.ts),
 * deterministically, from the rows: empty result, partial last period, trend with its
 * significance, period over period, outliers, share of total, correlation, total, row count
 * (rules and thresholds: docs/configuration.md, "How insights are computed"). The LLM
 * insights of `llm_only`/`hybrid` are one model call over a bounded, masked summary of the
 * result (llm.ts); when it fails or its reply does not parse, the statistical ones stand in.
 *
 * Column roles are picked from the PostgreSQL type names (falling back to the values when a
 * type is unknown): the measure is the last numeric column that is not an id, the label the
 * first text column, the period the coarsest date/timestamp column (or a text column of ISO
 * dates). Sums are exact: numeric cells are added as decimals (big numerics arrive as strings);
 * the statistics read differences from the smallest value in floating point.
 */
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import { ZERO_USAGE } from '../../protocol/schemas/common.js';
import type { Insight, InsightsGenerateReply, InsightsGenerateRequest } from '../../protocol/schemas/insights.js';
import type { Config } from '../../config/schema.js';
import type { Logger } from '../../runtime/log.js';
import { combineInsights, modelInsights, type ModelInsights } from './llm.js';
import { statisticalInsights, type StatisticalOptions } from './statistical.js';

export { isIdLike, pickRoles, type ColumnRef, type ColumnRoles } from './roles.js';
export { FLAT_CHANGE, formatDecimal, formatNumber, parseDate, parseDecimal, type Decimal, type ParsedDate } from './values.js';
export {
  CORRELATION_MIN_POINTS,
  OUTLIER_MIN_POINTS,
  OUTLIER_Z,
  SIGNIFICANCE,
  statisticalInsights,
  TREND_MIN_POINTS,
  type StatisticalOptions,
} from './statistical.js';

export type InsightsConfig = Config['insights'];

export interface InsightsDeps {
  /** for the model calls of the LLM insights (llm.ts) */
  bus: Pick<Bus, 'request'>;
  config: Config;
  log?: Logger;
}

// ---------------------------------------------------------------------------------------------
// Entry points

/**
 * The reply for one result: nothing when insights are off; the statistical insights in
 * `statistical_only` (and for `part: 'statistical'`, the immediate half of `hybrid`); else the
 * model's insights with the statistical ones as llm.ts combines them, capped at `max_insights`.
 */
export async function generate(input: InsightsGenerateRequest, deps: InsightsDeps, ctx: Ctx): Promise<InsightsGenerateReply> {
  const cfg = deps.config.insights;
  if (!cfg.enabled || cfg.max_insights === 0) return { insights: [], usage: { ...ZERO_USAGE } };
  // nothing for a model to read in an empty result: "No rows matched." says it all
  const empty = input.rows.length === 0 && input.row_count === 0;
  if (cfg.mode === 'statistical_only' || input.part === 'statistical' || empty) {
    return { insights: buildInsights(input, { ...cfg, mode: 'statistical_only' }), usage: { ...ZERO_USAGE } };
  }
  const statistical = statisticalInsights(input);
  const llm = await llmInsights(input, statistical, deps, ctx);
  return { insights: combineInsights(cfg, llm.insights, statistical), usage: llm.usage, model_status: llm.status };
}

/**
 * Which insights to show, given the model's (if any): the model's first; the statistical ones
 * in `statistical_only`, when `include_statistical` is set, or when the model gave none (so
 * `llm_only` falls back to them, which is all it does until the LLM insights exist).
 */
export function buildInsights(input: InsightsGenerateRequest, cfg: InsightsConfig, llm: readonly Insight[] = [], options: StatisticalOptions = {}): Insight[] {
  if (!cfg.enabled || cfg.max_insights <= 0) return [];
  const withStats = cfg.mode === 'statistical_only' || cfg.include_statistical || llm.length === 0;
  const all = withStats ? [...llm, ...statisticalInsights(input, options)] : [...llm];
  return all.slice(0, cfg.max_insights);
}

/** The LLM insights of `llm_only` and `hybrid`: one model call (llm.ts); none, with the reason, when it fails. */
function llmInsights(input: InsightsGenerateRequest, statistical: readonly Insight[], deps: InsightsDeps, ctx: Ctx): Promise<ModelInsights> {
  return modelInsights(input, statistical, deps, ctx);
}


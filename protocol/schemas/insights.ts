import Type, { type Static } from 'typebox';
import { Cell, Column, Usage } from './common.js';

export const Insight = Type.Object({
  /** summary, total, top, trend, change, partial, outlier, correlation, empty, llm */
  type: Type.String(),
  severity: Type.Enum(['info', 'success', 'warning', 'critical']),
  message: Type.String(),
  icon: Type.Optional(Type.String()),
  /** statistical or llm */
  source: Type.Enum(['statistical', 'llm']),
});
export type Insight = Static<typeof Insight>;

export const InsightsGenerateRequest = Type.Object({
  question: Type.String(),
  sql: Type.String(),
  columns: Type.Array(Column),
  rows: Type.Array(Type.Array(Cell)),
  row_count: Type.Integer({ minimum: 0 }),
  truncated: Type.Boolean(),
  /**
   * `statistical`: only the statistical insights, whatever the mode (the immediate half of
   * `hybrid`); absent: the insights of the configured mode, the model's included
   */
  part: Type.Optional(Type.Enum(['statistical'])),
  /** columns the mask rules hid (their values are masked already): told to the model, never profiled */
  masked_columns: Type.Optional(Type.Array(Type.String())),
});
export type InsightsGenerateRequest = Static<typeof InsightsGenerateRequest>;

/** How the model's half went: `unavailable` (LLM_UNAVAILABLE, a timeout), `bad_reply` (dropped: its reply did not parse). */
export const ModelInsightsStatus = Type.Enum(['ok', 'unavailable', 'bad_reply']);
export type ModelInsightsStatus = Static<typeof ModelInsightsStatus>;

export const InsightsGenerateReply = Type.Object({
  insights: Type.Array(Insight),
  usage: Usage,
  /** present when the model was asked (llm_only, hybrid) */
  model_status: Type.Optional(ModelInsightsStatus),
});
export type InsightsGenerateReply = Static<typeof InsightsGenerateReply>;

/**
 * The model's insights of a `hybrid` answer, sent after the answer: the SSE event
 * `model_insights` and the body of GET /api/insights/{insights_id}. `insights` is the whole
 * list to show (model's and statistical, at most insights.max_insights): it replaces the one
 * the answer carried.
 */
export const InsightsFollowUp = Type.Object({
  request_id: Type.String(),
  status: Type.Enum(['pending', 'ready', 'failed']),
  insights: Type.Array(Insight),
  usage: Type.Optional(Usage),
  model_status: Type.Optional(ModelInsightsStatus),
  /** pending: when the answer stops being waited for (ISO time) */
  until: Type.Optional(Type.String()),
});
export type InsightsFollowUp = Static<typeof InsightsFollowUp>;

/** How long a hybrid answer's follow-up is kept for GET /api/insights/{insights_id}. */
export const INSIGHTS_FOLLOW_UP_TTL_MS = 10 * 60_000;

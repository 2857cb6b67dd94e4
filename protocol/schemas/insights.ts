import Type, { type Static } from 'typebox';
import { Cell, Column, Usage } from './common.js';

export const Insight = Type.Object({
  /** summary, total, top, trend, outlier, empty, llm */
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
});
export type InsightsGenerateRequest = Static<typeof InsightsGenerateRequest>;

export const InsightsGenerateReply = Type.Object({ insights: Type.Array(Insight), usage: Usage });
export type InsightsGenerateReply = Static<typeof InsightsGenerateReply>;

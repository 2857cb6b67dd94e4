/**
 * Analytics of how Cortado is used (SPEC.md section `analytics`): one fact per question, told
 * by the assistant when the question ends (`evt.question.completed`), stored by the analytics
 * actor in its own database when `analytics.enabled`, and read back as the report behind
 * `/analytics` and `/api/analytics/*`. Feedback (thumbs up or down) is keyed by request id.
 */
import Type, { type Static } from 'typebox';
import { OwnerString } from '../scope.js';
import { Channel, WidgetType } from './common.js';
import { TextString } from './text.js';

/** The steps a question is timed by (the assistant's `run.timed` names). */
export const STEPS = ['intent', 'schema', 'generate', 'execute', 'mask', 'insights', 'total'] as const;

/** One model's share of a question. */
export const ModelUse = Type.Object({
  /** `provider:model` */
  model: Type.String(),
  calls: Type.Integer({ minimum: 0 }),
  input_tokens: Type.Integer({ minimum: 0 }),
  output_tokens: Type.Integer({ minimum: 0 }),
  /** priced by the model price table; absent when the model's price is unknown */
  cost_usd: Type.Optional(Type.Number({ minimum: 0 })),
});
export type ModelUse = Static<typeof ModelUse>;

/** The end of one question, answered or failed: everything analytics keeps of it. */
export const QuestionCompleted = Type.Object({
  id: Type.String(),
  ts: Type.String(),
  request_id: Type.String(),
  /** the signed-in user, or the API token's label */
  user: Type.Optional(Type.String()),
  /** who asked (protocol/scope.ts: a digest or an id, never a secret): the only one who may rate the answer */
  owner: Type.Optional(OwnerString),
  channel: Type.Optional(Channel),
  /** which client asked (WidgetType: assistant, agent, dashboard, api, mcp, …; docs/ui.md "Widget types") */
  widget: Type.Optional(Type.String({ maxLength: 64 })),
  /** the question's text; the analytics actor keeps it only when analytics.store_questions is on */
  question: Type.String(),
  intent: Type.Optional(Type.Enum(['sql', 'chat', 'clarify'])),
  tables: Type.Array(Type.String()),
  row_count: Type.Optional(Type.Integer({ minimum: 0 })),
  /** milliseconds per step that ran (STEPS), `total` always */
  durations: Type.Record(Type.String(), Type.Number({ minimum: 0 })),
  models: Type.Array(ModelUse),
  /** the error code when the question failed */
  code: Type.Optional(Type.String()),
});
export type QuestionCompleted = Static<typeof QuestionCompleted>;

export const FeedbackRequest = Type.Object({
  request_id: Type.String({ minLength: 1, maxLength: 128 }),
  rating: Type.Enum(['up', 'down']),
  comment: Type.Optional(TextString({ maxLength: 2000 })),
  /** who gave it (the edge says) */
  user: Type.Optional(Type.String({ maxLength: 256 })),
  /** who gave it, as the question's owner says who asked (the edge says): only the asker's rating counts */
  owner: OwnerString,
});
export type FeedbackRequest = Static<typeof FeedbackRequest>;

export const ReportFilter = Type.Object({
  /** ISO times; the last 30 days when absent */
  from: Type.Optional(Type.String({ maxLength: 64 })),
  to: Type.Optional(Type.String({ maxLength: 64 })),
  channel: Type.Optional(Channel),
  /** the client that asked (dashboard and api both ask on /api/query: this tells them apart) */
  widget: Type.Optional(WidgetType),
  user: Type.Optional(Type.String({ maxLength: 256 })),
  /** rows of each top list (busiest tables, users, slowest, most disliked) */
  top: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
});
export type ReportFilter = Static<typeof ReportFilter>;

const Count = Type.Integer({ minimum: 0 });
const Ms = Type.Number({ minimum: 0 });

export const AnalyticsReport = Type.Object({
  range: Type.Object({ from: Type.String(), to: Type.String() }),
  totals: Type.Object({
    questions: Count, errors: Count, users: Count, input_tokens: Count, output_tokens: Count,
    cost_usd: Type.Number({ minimum: 0 }), likes: Count, dislikes: Count,
    /** questions answered with a clarifying question (which table, value or metric was meant) */
    clarifications: Count,
  }),
  /** UTC days, oldest first, every day of the range (zeros included) */
  per_day: Type.Array(Type.Object({ day: Type.String(), questions: Count, errors: Count, input_tokens: Count, output_tokens: Count, cost_usd: Type.Number({ minimum: 0 }) })),
  steps: Type.Array(Type.Object({ step: Type.String(), count: Count, p50_ms: Ms, p95_ms: Ms })),
  errors: Type.Array(Type.Object({ code: Type.String(), count: Count })),
  models: Type.Array(Type.Object({ model: Type.String(), calls: Count, input_tokens: Count, output_tokens: Count, cost_usd: Type.Number({ minimum: 0 }) })),
  models_per_day: Type.Array(Type.Object({ day: Type.String(), model: Type.String(), input_tokens: Count, output_tokens: Count, cost_usd: Type.Number({ minimum: 0 }) })),
  channels: Type.Array(Type.Object({ channel: Type.String(), questions: Count })),
  /** questions per widget type (`unknown` for a question recorded without one) */
  widgets: Type.Array(Type.Object({ widget: Type.String(), questions: Count })),
  tables: Type.Array(Type.Object({ table: Type.String(), questions: Count })),
  users: Type.Array(Type.Object({ user: Type.String(), questions: Count, errors: Count })),
  slowest: Type.Array(Type.Object({ request_id: Type.String(), ts: Type.String(), total_ms: Ms, channel: Type.Optional(Type.String()), widget: Type.Optional(Type.String()), user: Type.Optional(Type.String()), question: Type.Optional(Type.String()) })),
  disliked: Type.Array(Type.Object({ request_id: Type.String(), ts: Type.String(), comment: Type.Optional(Type.String()), channel: Type.Optional(Type.String()), widget: Type.Optional(Type.String()), user: Type.Optional(Type.String()), question: Type.Optional(Type.String()) })),
  /** false when analytics.enabled is off: everything above is empty */
  enabled: Type.Boolean(),
  /** whether question texts are kept (analytics.store_questions) */
  store_questions: Type.Boolean(),
});
export type AnalyticsReport = Static<typeof AnalyticsReport>;

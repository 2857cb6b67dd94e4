/**
 * The warehouse operations console (SPEC.md "Sections ops_agent, alarms, issue tracker"; the
 * spec shows only the keys, docs/ops.md the behaviour). Owned by the ops actor: four read-only
 * operations over every configured BigQuery project and region (INFORMATION_SCHEMA jobs, jobs
 * timeline, reservations, dataset access entries), and — beyond the spec — expensive queries and
 * saturation for PostgreSQL (`pg_stat_statements`, `pg_stat_activity`) and Trino
 * (`system.runtime.queries`) on the configured database.
 *
 * A project's failure is that project's `error`, never the whole reply's. Money is US dollars at
 * the configured price per TB (`ops_agent.price_per_tb_usd`); bytes are numbers (a month of a
 * large project stays far below 2^53).
 */
import Type, { type Static } from 'typebox';
import { Insight } from './insights.js';

export const OpsOperation = Type.Enum(['get_expensive_queries', 'forecast_monthly_costs', 'find_public_datasets', 'check_slot_saturation']);
export type OpsOperation = Static<typeof OpsOperation>;

/** Where an operation ran: a BigQuery project in a region, or the configured database (beyond the spec). */
export const OpsTarget = Type.Object({
  engine: Type.Enum(['bigquery', 'postgresql', 'trino', 'mysql']),
  /** BigQuery project id; absent for the configured database */
  project_id: Type.Optional(Type.String()),
  /** BigQuery region (`US`, `EU`, `europe-west1`…) */
  region: Type.Optional(Type.String()),
  /** what the page shows: `project/region`, or the engine and database name */
  label: Type.String(),
});
export type OpsTarget = Static<typeof OpsTarget>;

export const ExpensiveQuery = Type.Object({
  /** the engine's job or query id, as text (no link) */
  job_id: Type.String(),
  user: Type.String(),
  /** ISO 8601; absent where the engine does not keep it (pg_stat_statements) */
  started_at: Type.Optional(Type.String()),
  bytes_billed: Type.Number({ minimum: 0 }),
  /** slot milliseconds (BigQuery), or total execution milliseconds elsewhere */
  slot_ms: Type.Number({ minimum: 0 }),
  /** at the price per TB; null where bytes are not billed (PostgreSQL, Trino) */
  cost_usd: Type.Union([Type.Number(), Type.Null()]),
  /** the query text, cut to 500 characters (`…` marks a cut) */
  query: Type.String(),
  /** calls (pg_stat_statements aggregates by statement), else 1 */
  calls: Type.Optional(Type.Integer({ minimum: 0 })),
  statement_type: Type.Optional(Type.String()),
});
export type ExpensiveQuery = Static<typeof ExpensiveQuery>;

export const ExpensiveQueriesResult = Type.Object({
  kind: Type.Literal('get_expensive_queries'),
  window_days: Type.Integer({ minimum: 1 }),
  by_bytes: Type.Array(ExpensiveQuery),
  by_slot: Type.Array(ExpensiveQuery),
  /** what the lists cannot say on this engine (no window in pg_stat_statements, no bytes in Trino's query list) */
  note: Type.Optional(Type.String()),
});

export const DailyCost = Type.Object({ date: Type.String(), bytes_billed: Type.Number({ minimum: 0 }), cost_usd: Type.Number({ minimum: 0 }) });

export const ForecastResult = Type.Object({
  kind: Type.Literal('forecast_monthly_costs'),
  /** YYYY-MM, in UTC */
  month: Type.String(),
  days_in_month: Type.Integer({ minimum: 28, maximum: 31 }),
  /** complete days of this month with data */
  days_observed: Type.Integer({ minimum: 0 }),
  month_to_date_usd: Type.Number({ minimum: 0 }),
  forecast_usd: Type.Number({ minimum: 0 }),
  /** the interval's bounds (see `method`) */
  low_usd: Type.Number({ minimum: 0 }),
  high_usd: Type.Number({ minimum: 0 }),
  /** the method and its uncertainty in a sentence, e.g. "mean of 24 complete days × 31 days; 80 % interval from the daily spread" */
  method: Type.String(),
  /** the last days (up to 60), oldest first */
  daily: Type.Array(DailyCost),
});

export const PublicDataset = Type.Object({
  dataset_id: Type.String(),
  location: Type.Optional(Type.String()),
  /** the access entries that make it public: member is allUsers or allAuthenticatedUsers */
  entries: Type.Array(Type.Object({ role: Type.String(), member: Type.String() })),
});
export type PublicDataset = Static<typeof PublicDataset>;

export const PublicDatasetsResult = Type.Object({
  kind: Type.Literal('find_public_datasets'),
  /** datasets looked at */
  checked: Type.Integer({ minimum: 0 }),
  datasets: Type.Array(PublicDataset),
});

export const SaturationPoint = Type.Object({
  period_start: Type.String(),
  /** average slots in use over the period (or active queries, elsewhere) */
  avg_slots: Type.Number({ minimum: 0 }),
  /** avg_slots / capacity; null without a known capacity */
  share: Type.Union([Type.Number({ minimum: 0 }), Type.Null()]),
});

export const SaturationResult = Type.Object({
  kind: Type.Literal('check_slot_saturation'),
  window_hours: Type.Integer({ minimum: 1 }),
  /** reservation slots (BigQuery), max_connections (PostgreSQL); null when unknown (on-demand) */
  capacity: Type.Union([Type.Number({ minimum: 0 }), Type.Null()]),
  /** the share at or above which a period counts as saturated */
  threshold_share: Type.Number({ minimum: 0 }),
  points: Type.Array(SaturationPoint),
  saturated_periods: Type.Array(Type.Object({ start: Type.String(), end: Type.String(), minutes: Type.Number({ minimum: 0 }), peak_share: Type.Number({ minimum: 0 }) })),
  /** why there is no share (no reservation: on-demand), or how the points were sampled */
  note: Type.Optional(Type.String()),
});

export const OpsResult = Type.Union([ExpensiveQueriesResult, ForecastResult, PublicDatasetsResult, SaturationResult]);
export type OpsResult = Static<typeof OpsResult>;

export const OpsProjectResult = Type.Object({
  target: OpsTarget,
  /** this project's failure (permission denied, unknown region…): code and a readable message */
  error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String() })),
  result: Type.Optional(OpsResult),
  duration_ms: Type.Number({ minimum: 0 }),
});
export type OpsProjectResult = Static<typeof OpsProjectResult>;

export const OpsRunRequest = Type.Object({
  operation: OpsOperation,
  /** expensive queries and forecast: days looked back (default 7; forecast reads this month) */
  window_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 180 })),
  /** saturation: hours looked back (default 24) */
  window_hours: Type.Optional(Type.Integer({ minimum: 1, maximum: 24 * 14 })),
  /** expensive queries: rows per list (default 10) */
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  /** only this target (project_id, or the label of the configured database) */
  project_id: Type.Optional(Type.String({ maxLength: 200 })),
  /** false: no model insights even when ops_agent.ai_insights (alarms evaluate without them) */
  insights: Type.Optional(Type.Boolean()),
});
export type OpsRunRequest = Static<typeof OpsRunRequest>;

export const OpsRunReply = Type.Object({
  operation: OpsOperation,
  generated_at: Type.String(),
  projects: Type.Array(OpsProjectResult),
  /** ops_agent.ai_insights: at most ai_insights_max, from aggregates only */
  insights: Type.Object({
    status: Type.Enum(['off', 'ok', 'unavailable', 'bad_reply']),
    items: Type.Array(Insight),
  }),
});
export type OpsRunReply = Static<typeof OpsRunReply>;

/** What the console shows before it runs anything. */
export const OpsStatusReply = Type.Object({
  enabled: Type.Boolean(),
  /** why nothing runs (ops_agent.enabled false, no project, …) */
  reason: Type.Optional(Type.String()),
  targets: Type.Array(OpsTarget),
  allowed_operations: Type.Array(OpsOperation),
  ai_insights: Type.Boolean(),
  price_per_tb_usd: Type.Number(),
  /** the share at or above which a saturation point counts as saturated (ops_agent.saturation_threshold) */
  saturation_threshold: Type.Optional(Type.Number()),
});
export type OpsStatusReply = Static<typeof OpsStatusReply>;

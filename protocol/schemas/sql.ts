import Type, { type Static } from 'typebox';
import { Cell, Column, Dialect, PromptOverrides, Turn, Usage } from './common.js';
import { NameString, TextString } from './text.js';
import { MaskedColumn } from './policy.js';

// ---- sqlgen -------------------------------------------------------------------------------

export const SqlGenerateRequest = Type.Object({
  question: Type.String({ minLength: 1 }),
  history: Type.Array(Turn),
  schema_text: Type.String(),
  business_context: Type.String(),
  dialect: Dialect,
  /** combined: decide intent and write SQL (or the chat reply) in one call; sql: SQL only */
  mode: Type.Enum(['combined', 'sql']),
  /** a previous attempt the database rejected: the model gets its error and tries once more */
  previous: Type.Optional(Type.Object({ sql: Type.String(), error: Type.String() })),
  /** candidate prompts for this question only (AskRequest.prompts) */
  prompts: Type.Optional(PromptOverrides),
});
export type SqlGenerateRequest = Static<typeof SqlGenerateRequest>;

export const SqlGenerateReply = Type.Object({
  intent: Type.Enum(['sql', 'chat']),
  sql: Type.Optional(Type.String()),
  explanation: Type.Optional(Type.String()),
  message: Type.Optional(Type.String()),
  usage: Usage,
  model: Type.String(),
});
export type SqlGenerateReply = Static<typeof SqlGenerateReply>;

// ---- intent -------------------------------------------------------------------------------

export const IntentDetectRequest = Type.Object({
  question: Type.String({ minLength: 1 }),
  history: Type.Array(Turn),
  schema_text: Type.String(),
});
export type IntentDetectRequest = Static<typeof IntentDetectRequest>;

export const IntentDetectReply = Type.Object({
  intent: Type.Enum(['sql', 'chat']),
  confidence: Type.Number({ minimum: 0, maximum: 1 }),
  usage: Usage,
});
export type IntentDetectReply = Static<typeof IntentDetectReply>;

export const ChatReplyRequest = Type.Object({
  question: Type.String({ minLength: 1 }),
  history: Type.Array(Turn),
  schema_text: Type.String(),
});
export type ChatReplyRequest = Static<typeof ChatReplyRequest>;

export const ChatReplyReply = Type.Object({ message: Type.String(), usage: Usage });
export type ChatReplyReply = Static<typeof ChatReplyReply>;

// ---- executor -----------------------------------------------------------------------------

/** A calendar day, YYYY-MM-DD (the executor also checks that it is a real day). */
export const IsoDate = Type.String({ pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' });

/**
 * Keep only the rows whose `column` falls within from..to (both days included; either may be left
 * out). The executor wraps the statement as a subquery (`SELECT * FROM (<sql>) WHERE
 * CAST(<column> AS DATE) BETWEEN DATE '<from>' AND DATE '<to>'`): the column quoted for the
 * dialect, the days checked, and the whole guarded and masked like any statement. A dashboard's
 * date filter (docs/ui.md "Dashboards").
 */
export const DateRange = Type.Object({
  column: NameString({ minLength: 1, maxLength: 300 }),
  from: Type.Optional(IsoDate),
  to: Type.Optional(IsoDate),
});
export type DateRange = Static<typeof DateRange>;

export const SqlExecuteRequest = Type.Object({
  /** tabs and line breaks, but no other control character (NUL ends a string on PostgreSQL's wire) */
  sql: TextString({ minLength: 1 }),
  /** only the rows within these days (DateRange) */
  date_range: Type.Optional(DateRange),
  /** rows when the SQL has no LIMIT (defaults to query.default_limit) */
  default_limit: Type.Optional(Type.Integer({ minimum: 1 })),
  /** hard cap (defaults to query.max_limit) */
  max_limit: Type.Optional(Type.Integer({ minimum: 1 })),
  /** per-query timeout; defaults to the provider's or query.timeout */
  timeout_ms: Type.Optional(Type.Integer({ minimum: 1 })),
});
export type SqlExecuteRequest = Static<typeof SqlExecuteRequest>;

export const SqlExecuteReply = Type.Object({
  /** the statement as it ran (LIMIT added or clamped) */
  sql: Type.String(),
  columns: Type.Array(Column),
  rows: Type.Array(Type.Array(Cell)),
  row_count: Type.Integer({ minimum: 0 }),
  /** true when Cortado's row cap cut the result */
  truncated: Type.Boolean(),
  /** the row cap that applied */
  limit: Type.Integer({ minimum: 1 }),
  /** the relations the statement reads, as written in it (the guard's parse; CTE names left out) */
  tables: Type.Optional(Type.Array(Type.String())),
  /**
   * The columns the mask rules covered: `rows` hold their masked values already (the executor
   * masks every result before it replies; there is no way to ask it for unmasked rows).
   */
  masked: Type.Array(MaskedColumn),
  /** of duration_ms, the time masking took */
  mask_ms: Type.Number({ minimum: 0 }),
  duration_ms: Type.Number({ minimum: 0 }),
  /** bytes the engine scanned or will scan (BigQuery) */
  bytes_processed: Type.Optional(Type.Number({ minimum: 0 })),
  /** bytes_processed priced with price_per_tb_usd */
  estimated_cost_usd: Type.Optional(Type.Number({ minimum: 0 })),
});
export type SqlExecuteReply = Static<typeof SqlExecuteReply>;

export const SqlCheckRequest = Type.Object({
  sql: TextString({ minLength: 1 }),
  /**
   * aggregate: also say whether the first item of the SELECT list is an aggregate expression
   * (a semantic metric's `SELECT <expr> AS metric_value FROM <table>`), in `aggregate`
   */
  expect: Type.Optional(Type.Enum(['aggregate'])),
});
export type SqlCheckRequest = Static<typeof SqlCheckRequest>;

export const SqlCheckReply = Type.Object({
  ok: Type.Boolean(),
  reason: Type.Optional(Type.String()),
  /** the statement as it would run */
  sql: Type.Optional(Type.String()),
  /** with ok: the relations the statement reads, as written (`public.orders`), without CTE names */
  tables: Type.Optional(Type.Array(Type.String())),
  /** with expect 'aggregate' and ok: an aggregate function at the top level, no subquery, not a window function alone */
  aggregate: Type.Optional(Type.Boolean()),
  /** why it is not an aggregate, for people */
  aggregate_reason: Type.Optional(Type.String()),
});
export type SqlCheckReply = Static<typeof SqlCheckReply>;

/** The guard, then the engine's own estimate where it has one (BigQuery's dry run); nothing runs. */
export const SqlEstimateReply = Type.Object({
  /** the statement as it would run */
  sql: Type.String(),
  bytes_processed: Type.Optional(Type.Number({ minimum: 0 })),
  estimated_cost_usd: Type.Optional(Type.Number({ minimum: 0 })),
});
export type SqlEstimateReply = Static<typeof SqlEstimateReply>;

export const DbColumn = Type.Object({
  name: Type.String(),
  type: Type.String(),
  nullable: Type.Boolean(),
  comment: Type.Optional(Type.String()),
});
export type DbColumn = Static<typeof DbColumn>;

export const DbTable = Type.Object({
  schema: Type.String(),
  name: Type.String(),
  kind: Type.Enum(['table', 'view']),
  comment: Type.Optional(Type.String()),
  columns: Type.Array(DbColumn),
  /** the planner's estimate, where the engine has one */
  row_estimate: Type.Optional(Type.Number()),
  /** foreign keys to other tables the role can read, where the engine knows them */
  foreign_keys: Type.Optional(Type.Array(Type.Object({
    columns: Type.Array(Type.String()),
    ref_schema: Type.String(),
    ref_table: Type.String(),
    ref_columns: Type.Array(Type.String()),
  }))),
});
export type DbTable = Static<typeof DbTable>;

export const SqlIntrospectReply = Type.Object({
  dialect: Dialect,
  provider: Type.String(),
  /** the default schema unqualified names resolve in */
  default_schema: Type.String(),
  tables: Type.Array(DbTable),
});
export type SqlIntrospectReply = Static<typeof SqlIntrospectReply>;

export const SqlPingReply = Type.Object({
  provider: Type.String(),
  dialect: Dialect,
  ok: Type.Boolean(),
  latency_ms: Type.Number(),
  error: Type.Optional(Type.String()),
});
export type SqlPingReply = Static<typeof SqlPingReply>;

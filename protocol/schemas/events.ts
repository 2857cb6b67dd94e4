import Type, { type Static } from 'typebox';
import { Channel, Usage } from './common.js';

/** Fields every event carries. */
const Base = {
  /** unique per event; JetStream drops duplicates by it */
  id: Type.String(),
  /** ISO time */
  ts: Type.String(),
  request_id: Type.String(),
  user: Type.Optional(Type.String()),
  channel: Type.Optional(Channel),
  /** which client asked (docs/ui.md "Widget types"): assistant, agent, dashboard, api, mcp, schedule */
  widget: Type.Optional(Type.String({ maxLength: 64 })),
};

export const QueryGenerated = Type.Object({
  ...Base,
  question: Type.String(),
  sql: Type.String(),
  model: Type.String(),
  usage: Usage,
  /** 0 for the first attempt, then 1.. for self-corrections */
  attempt: Type.Integer({ minimum: 0 }),
});
export type QueryGenerated = Static<typeof QueryGenerated>;

export const QueryExecuted = Type.Object({
  ...Base,
  sql: Type.String(),
  duration_ms: Type.Number(),
  row_count: Type.Integer({ minimum: 0 }),
  truncated: Type.Boolean(),
  usage: Usage,
  /** attempt that succeeded */
  attempt: Type.Integer({ minimum: 0 }),
  /**
   * The relations the statement read, as the executor's guard parsed them (`public.orders`; CTE
   * names left out): names, never values. The alerts score these instead of lexing the SQL again.
   */
  tables: Type.Optional(Type.Array(Type.String())),
});
export type QueryExecuted = Static<typeof QueryExecuted>;

export const QueryRejected = Type.Object({
  ...Base,
  sql: Type.String(),
  /** SQL_REJECTED (guard) or DB_QUERY_FAILED / DB_TIMEOUT (database) */
  code: Type.String(),
  reason: Type.String(),
  /** SQL_REJECTED: why the guard refused it (actors/executor/guard/types.ts RejectKind) */
  kind: Type.Optional(Type.String({ maxLength: 64 })),
  /** the assistant's attempt number; absent when the executor reports it (it does not know it) */
  attempt: Type.Optional(Type.Integer({ minimum: 0 })),
});
export type QueryRejected = Static<typeof QueryRejected>;

export const QueryFailed = Type.Object({
  ...Base,
  code: Type.String(),
  message: Type.String(),
});
export type QueryFailed = Static<typeof QueryFailed>;

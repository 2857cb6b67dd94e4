import Type, { type Static } from 'typebox';
import { Cell, Channel, Column, Usage } from './common.js';
import { Insight } from './insights.js';
import { NameString, TextString } from './text.js';

export const AskRequest = Type.Object({
  /** tabs and line breaks, but no other control character (protocol/schemas/text.ts) */
  question: TextString({ minLength: 1, maxLength: 4000 }),
  tables: Type.Optional(Type.Array(NameString({ minLength: 1, maxLength: 512 }), { maxItems: 200 })),
  conversation_id: Type.Optional(Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_.:-]+$' })),
  channel: Channel,
  /** publish step-by-step progress on progress.<request id> */
  stream: Type.Optional(Type.Boolean()),
  /**
   * who may confirm SQL held for confirmation: the edge's key of the asking session (a hash of
   * the session cookie, or of the legacy session_id and the client address)
   */
  owner: Type.Optional(Type.String({ maxLength: 128 })),
});
export type AskRequest = Static<typeof AskRequest>;

export const AskConfirmRequest = Type.Object({
  confirmation_id: Type.String({ minLength: 1, maxLength: 100 }),
  /** must be the owner the question was asked with */
  owner: Type.String({ maxLength: 128 }),
  channel: Channel,
  stream: Type.Optional(Type.Boolean()),
});
export type AskConfirmRequest = Static<typeof AskConfirmRequest>;

export const Confirmation = Type.Object({
  /** send it to POST /query/confirm-execute (or /auth/query/confirm) to run exactly this SQL */
  id: Type.String(),
  expires_at: Type.String(),
  /** the warehouse's dry-run estimate (BigQuery) */
  bytes_processed: Type.Optional(Type.Number({ minimum: 0 })),
  estimated_cost_usd: Type.Optional(Type.Number({ minimum: 0 })),
});

export const StepTiming = Type.Record(Type.String(), Type.Number());

export const AskReply = Type.Object({
  request_id: Type.String(),
  conversation_id: Type.Optional(Type.String()),
  intent: Type.Enum(['sql', 'chat']),
  /** chat */
  message: Type.Optional(Type.String()),
  /** sql */
  sql: Type.Optional(Type.String()),
  explanation: Type.Optional(Type.String()),
  columns: Type.Optional(Type.Array(Column)),
  rows: Type.Optional(Type.Array(Type.Array(Cell))),
  row_count: Type.Optional(Type.Integer({ minimum: 0 })),
  truncated: Type.Optional(Type.Boolean()),
  insights: Type.Optional(Type.Array(Insight)),
  /** false when the SQL was generated but not run (query.execute_generated_sql: false) */
  executed: Type.Optional(Type.Boolean()),
  /** how many times the model was asked again after the database rejected its SQL */
  corrections: Type.Optional(Type.Integer({ minimum: 0 })),
  tables: Type.Optional(Type.Array(Type.String())),
  /** present when the SQL waits for the user's confirmation (query.confirm_before_execute) */
  confirmation: Type.Optional(Confirmation),
  /** columns the mask rules hid, and how */
  masked: Type.Optional(Type.Array(Type.Object({ column: Type.String(), strategy: Type.String() }))),
  /** bytes the warehouse scanned (BigQuery), and their price with price_per_tb_usd */
  bytes_processed: Type.Optional(Type.Number({ minimum: 0 })),
  estimated_cost_usd: Type.Optional(Type.Number({ minimum: 0 })),
  usage: Usage,
  timing_ms: StepTiming,
});
export type AskReply = Static<typeof AskReply>;

import Type, { type Static } from 'typebox';
import { OwnerString } from '../scope.js';
import { Cell, Channel, Clarification, Column, PromptOverrides, Usage } from './common.js';
import { Insight } from './insights.js';
import { NameString, TextString } from './text.js';

/**
 * The limits of a question, the same on every channel (HTTP bodies and MCP tool arguments are
 * derived from these fields: protocol/schemas/http.ts).
 */
export const ASK_LIMITS = {
  /** characters of a question */
  question: 4000,
  /** table hints in one question */
  tables: 200,
  /** characters of one table name (catalog.schema.table, quoted parts included) */
  table: 512,
  /** characters of a conversation id (the caller's own name for it: the owner is not part of it) */
  conversation_id: 128,
  /** characters of a confirmation id */
  confirmation_id: 100,
} as const;

/** A question: tabs and line breaks, but no other control character (protocol/schemas/text.ts). */
export const Question = TextString({ minLength: 1, maxLength: ASK_LIMITS.question });
/** A table hint: a name (no control character at all). */
export const TableName = NameString({ minLength: 1, maxLength: ASK_LIMITS.table });
export const Tables = Type.Array(TableName, { maxItems: ASK_LIMITS.tables });
export const ConversationId = Type.String({ minLength: 1, maxLength: ASK_LIMITS.conversation_id, pattern: '^[A-Za-z0-9_.:-]+$' });
export const ConfirmationId = Type.String({ minLength: 1, maxLength: ASK_LIMITS.confirmation_id });
/** Rows a caller may ask for at most, before query.max_limit caps it again. */
export const MaxRows = Type.Integer({ minimum: 1 });
/**
 * Which client asked (analytics): the edge says it from the route — `assistant` (legacy
 * /query), `auth` (/auth/query), `api` (/api/query), `dashboard` (the page at `/`), `mcp`;
 * `schedule` for scheduled reports. Never taken from a request body.
 */
export const Widget = NameString({ minLength: 1, maxLength: 64 });

export const AskRequest = Type.Object({
  question: Question,
  tables: Type.Optional(Tables),
  /**
   * the caller's name for a conversation: its last turns are the question's context. It is kept
   * under the owner (protocol/scope.ts ownedKey): another owner using the same id starts a
   * conversation of its own. Without an owner it is not looked up (no name is shared).
   */
  conversation_id: Type.Optional(ConversationId),
  channel: Channel,
  /** publish step-by-step progress on progress.<request id> */
  stream: Type.Optional(Type.Boolean()),
  /**
   * who asks (protocol/scope.ts): the only one who may confirm SQL held for confirmation, rate
   * the answer (analytics feedback), and continue the conversation
   */
  owner: Type.Optional(OwnerString),
  /**
   * the caller's row cap (MCP: mcp.max_rows): the database returns at most this many rows (and
   * never more than query.max_limit); `truncated` says when it cut the result
   */
  max_rows: Type.Optional(MaxRows),
  widget: Type.Optional(Widget),
  /** candidate prompt texts for this question only (POST /admin/eval): never saved */
  prompts: Type.Optional(PromptOverrides),
});
export type AskRequest = Static<typeof AskRequest>;

export const AskConfirmRequest = Type.Object({
  confirmation_id: ConfirmationId,
  /** must be the owner the question was asked with */
  owner: OwnerString,
  channel: Channel,
  stream: Type.Optional(Type.Boolean()),
  /** as in AskRequest */
  max_rows: Type.Optional(MaxRows),
  widget: Type.Optional(Widget),
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
  intent: Type.Enum(['sql', 'chat', 'clarify']),
  /** chat; clarify: the clarifying question */
  message: Type.Optional(Type.String()),
  /**
   * clarify: a word of the question could mean several tables or metrics (or a value that is not
   * known): no SQL was written. Answer in the same conversation with a choice's label or value
   * (or its number, or your own words), and the question is asked again with that meaning.
   */
  clarification: Type.Optional(Clarification),
  /** sql */
  sql: Type.Optional(Type.String()),
  explanation: Type.Optional(Type.String()),
  columns: Type.Optional(Type.Array(Column)),
  rows: Type.Optional(Type.Array(Type.Array(Cell))),
  row_count: Type.Optional(Type.Integer({ minimum: 0 })),
  truncated: Type.Optional(Type.Boolean()),
  insights: Type.Optional(Type.Array(Insight)),
  /**
   * insights.mode hybrid: the model's insights follow the answer (SSE event `model_insights`;
   * JSON: GET /api/insights/{insights_id}, kept for 10 minutes)
   */
  insights_pending: Type.Optional(Type.Boolean()),
  insights_id: Type.Optional(Type.String()),
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

import Type, { type Static } from 'typebox';
import { Usage } from './common.js';

/** The tasks a model call can be routed by (SPEC model_routing keys). */
export const LlmTask = Type.Enum(['intent_detection', 'chat', 'sql', 'insights', 'ops_insights', 'table_selection']);
export type LlmTask = Static<typeof LlmTask>;

export const LlmMessage = Type.Object({
  role: Type.Enum(['user', 'assistant']),
  content: Type.String(),
});
export type LlmMessage = Static<typeof LlmMessage>;

export const LlmCompleteRequest = Type.Object({
  task: LlmTask,
  /** the stable part of the prompt (instructions, schema, business context): cacheable */
  system: Type.String(),
  messages: Type.Array(LlmMessage, { minItems: 1 }),
  max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
});
export type LlmCompleteRequest = Static<typeof LlmCompleteRequest>;

export const LlmCompleteReply = Type.Object({
  text: Type.String(),
  provider: Type.String(),
  model: Type.String(),
  usage: Usage,
  /** how many HTTP attempts the call took (1 = no retry) */
  attempts: Type.Integer({ minimum: 1 }),
});
export type LlmCompleteReply = Static<typeof LlmCompleteReply>;

export const LlmStatusReply = Type.Object({
  configured: Type.Boolean(),
  provider: Type.String(),
  model: Type.String(),
  /** why it is not configured, for /health */
  reason: Type.Optional(Type.String()),
  /**
   * false when the provider's last model call failed for want of the model (refused, no answer,
   * 5xx after retries) and none has succeeded since; absent before any call (actors/llm/handle.ts)
   */
  reachable: Type.Optional(Type.Boolean()),
  /** since when every call has failed (ISO time), while reachable is false */
  failing_since: Type.Optional(Type.String()),
  /** the last failure, as the model call said it, while reachable is false */
  last_error: Type.Optional(Type.String()),
});
export type LlmStatusReply = Static<typeof LlmStatusReply>;

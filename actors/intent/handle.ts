/**
 * Intent detection and the chat reply, as separate model calls: used when model routing
 * puts intent detection (or chat) on another model than SQL generation. In the default
 * configuration sqlgen decides the intent in the same call as the SQL. The question is fenced
 * as data and the system prompt says so (lib/model-io/prompting.ts), as in sqlgen.
 */
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import { LlmComplete } from '../../protocol/subjects.js';
import type { ChatReplyReply, ChatReplyRequest, IntentDetectReply, IntentDetectRequest } from '../../protocol/schemas/sql.js';
import { CortadoError } from '../../protocol/errors.js';
import type { Config } from '../../config/schema.js';
import { promptText, splitPrompt } from '../../config/prompts.js';
import type { LlmMessage } from '../../protocol/schemas/llm.js';
import { fence, historyMessages, withDataRule } from '../lib/model-io/prompting.js';
import { parseIntentReply } from '../lib/model-io/reply-parse.js';

export interface IntentDeps {
  bus: Pick<Bus, 'request'>;
  config: Config;
}

/** The intent prompt: the schema (fenced by the catalog) in the system prompt, the question fenced, the earlier turns. */
export function buildIntentPrompt(input: IntentDetectRequest, config: Config): { system: string; messages: LlmMessage[] } {
  const { system, user } = splitPrompt(promptText(config, 'intent_detection'), {
    schema_info: input.schema_text,
    question: fence('question', input.question),
  });
  return { system: withDataRule(system), messages: [...historyMessages(input.history), { role: 'user', content: user }] };
}

/** The chat prompt: the persona and the schema (fenced by the catalog), the message fenced, the earlier turns. */
export function buildChatPrompt(input: ChatReplyRequest, config: Config): { system: string; messages: LlmMessage[] } {
  const persona = promptText(config, 'barista_personality');
  const system = `${persona}\n\nThe data you can help with:\n${input.schema_text}\n\nAnswer the user's message directly. If it is a data question, suggest how to phrase it.`;
  return { system: withDataRule(system), messages: [...historyMessages(input.history), { role: 'user', content: fence('question', input.question) }] };
}

export async function detect(input: IntentDetectRequest, deps: IntentDeps, ctx: Ctx): Promise<IntentDetectReply> {
  const { system, messages } = buildIntentPrompt(input, deps.config);
  const reply = await deps.bus.request(LlmComplete, { task: 'intent_detection', system, messages, max_tokens: 64 }, ctx);
  const parsed = parseIntentReply(reply.text);
  return { intent: parsed.intent, confidence: parsed.confidence, usage: reply.usage };
}

export async function chat(input: ChatReplyRequest, deps: IntentDeps, ctx: Ctx): Promise<ChatReplyReply> {
  const { system, messages } = buildChatPrompt(input, deps.config);
  const reply = await deps.bus.request(LlmComplete, { task: 'chat', system, messages, max_tokens: 512 }, ctx);
  const message = reply.text.replace(/^[ \t]*message[ \t]*:[ \t]*/i, '').trim();
  if (!message) throw new CortadoError('LLM_BAD_REPLY', 'the model returned an empty chat reply');
  return { message, usage: reply.usage };
}

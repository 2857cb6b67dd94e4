/**
 * SQL generation: one model call that decides the intent and writes the SQL (or the chat
 * reply) in the default `combined` mode; the SQL alone in `sql` mode (when routing splits
 * intent detection onto another model). A previous attempt the database rejected is shown
 * to the model with the database's error, so it can correct itself.
 *
 * What the database and the user wrote reaches the model fenced as data (lib/model-io/prompting.ts):
 * the schema text and the business context arrive fenced from the catalog and the semantic
 * layer; the question, the earlier turns and the database's error are fenced here; the system
 * prompt ends with the rule that fenced text is data, never instructions.
 */
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import { LlmComplete } from '../../protocol/subjects.js';
import type { SqlGenerateReply, SqlGenerateRequest } from '../../protocol/schemas/sql.js';
import type { LlmMessage } from '../../protocol/schemas/llm.js';
import type { Config } from '../../config/schema.js';
import { promptText, splitPrompt } from '../../config/prompts.js';
import { DIALECT_NAMES, fence, formatAnswer, historyMessages, today, withDataRule } from '../lib/model-io/prompting.js';
import { parseSqlReply } from '../lib/model-io/reply-parse.js';

export interface SqlGenDeps {
  bus: Pick<Bus, 'request'>;
  config: Config;
  now?: () => Date;
}

/**
 * The semantic layer's block goes into every SQL prompt (SPEC: the semantic context is injected
 * into every LLM prompt): a prompt edited at runtime without `{business_context}` gets it after
 * its `{schema_info}` (else ahead of its text), so it is never dropped because a placeholder was
 * left out. Empty when the layer defines nothing, so a prompt without it reads as it did.
 */
function withBusinessContext(template: string): string {
  if (template.includes('{business_context}')) return template;
  if (template.includes('{schema_info}')) return template.replace('{schema_info}', '{schema_info}\n{business_context}');
  return `{business_context}\n${template}`;
}

export function buildSqlPrompt(input: SqlGenerateRequest, configured: Config, now: Date): { system: string; messages: LlmMessage[] } {
  // candidate prompts of an evaluation (POST /admin/eval) stand in for the configured ones, for this question only
  const config = input.prompts ? { ...configured, prompts: { ...configured.prompts, ...input.prompts } } : configured;
  const { system, user } = splitPrompt(withBusinessContext(promptText(config, 'sql_generation')), {
    schema_info: input.schema_text,
    business_context: input.business_context ? `\n${input.business_context}\n` : '',
    dialect: DIALECT_NAMES[input.dialect],
    today: today(now),
    default_limit: String(config.query.default_limit),
    personality: promptText(config, 'barista_personality'),
    question: fence('question', input.question),
  });
  const messages: LlmMessage[] = [...historyMessages(input.history)];
  const ask = input.mode === 'sql' ? `${user}\n\n(This question needs the database: reply with INTENT: sql.)` : user;
  messages.push({ role: 'user', content: ask });
  if (input.previous) {
    messages.push({ role: 'assistant', content: formatAnswer({ sql: input.previous.sql }) });
    messages.push({
      role: 'user',
      content: `The database rejected that SQL with this error:\n${fence('database error', input.previous.error)}\n\nWrite a corrected query for the same question, using only the tables and columns listed. Reply in the same format.`,
    });
  }
  return { system: withDataRule(system), messages };
}

export async function generate(input: SqlGenerateRequest, deps: SqlGenDeps, ctx: Ctx): Promise<SqlGenerateReply> {
  const { system, messages } = buildSqlPrompt(input, deps.config, deps.now?.() ?? new Date());
  const reply = await deps.bus.request(LlmComplete, { task: 'sql', system, messages }, ctx);
  const parsed = parseSqlReply(reply.text);
  const out: SqlGenerateReply = { intent: parsed.intent, usage: reply.usage, model: `${reply.provider}:${reply.model}` };
  if (parsed.sql !== undefined) out.sql = parsed.sql;
  if (parsed.explanation !== undefined) out.explanation = parsed.explanation;
  if (parsed.message !== undefined) out.message = parsed.message;
  return out;
}

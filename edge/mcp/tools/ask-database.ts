/**
 * ask_database: a question in plain language → the SQL Cortado wrote, the rows and a short
 * explanation. Always executes: the confirm and execute settings of the interactive assistant
 * do not apply to MCP (SPEC).
 *
 * The rows come as the assistant delivers them: masked once by the masking actor (the mask
 * rules have no channel of their own: MCP's are everyone's), and at most mcp.max_rows of them,
 * because the row cap travels in the question (`max_rows`) down to the executor, which has the
 * database return no more (`truncated` says it cut). Nothing is masked or cut again here.
 */
import Type from 'typebox';
import { ASK_LIMITS, ConversationId, Question, TableName } from '../../../protocol/schemas/ask.js';
import type { Clarification } from '../../../protocol/schemas/common.js';
import { OwnerKind, ownerOf } from '../../../protocol/scope.js';
import { Ask } from '../../../protocol/subjects.js';
import { textTable } from './render.js';
import type { McpTool } from './types.js';

/** The arguments: the question's fields of the ask request, with their limits (protocol/schemas/ask.ts). */
const Input = Type.Object({
  question: Question,
  tables: Type.Optional(Type.Array(TableName, { maxItems: ASK_LIMITS.tables, description: 'tables to use' })),
  conversation_id: Type.Optional({ ...ConversationId, description: 'continue a conversation: the id a clarifying question came with' }),
}, { additionalProperties: false });

export const askDatabase: McpTool<typeof Input> = {
  name: 'ask_database',
  description: 'Answer a question about the database in plain language: runs read-only SQL and returns it with the rows.',
  input: Input,
  async run(args, { bus, config, ctx, session }) {
    const question = args.question.trim();
    const reply = await bus.request(Ask, {
      question: question || args.question,
      ...(args.tables?.length ? { tables: args.tables } : {}),
      ...(args.conversation_id ? { conversation_id: args.conversation_id } : {}),
      // the token owns its conversations: another token naming the same id starts its own
      owner: ownerOf(OwnerKind.Token, session.tokenId),
      channel: 'mcp',
      widget: 'mcp',
      max_rows: config.mcp.max_rows,
    }, ctx);
    if (reply.intent === 'clarify' && reply.clarification) return clarifyOutput(reply.request_id, reply.clarification, reply.conversation_id);
    if (reply.intent === 'chat') {
      const message = reply.message ?? '';
      return { structured: { request_id: reply.request_id, intent: 'chat', message }, text: message };
    }
    const sql = reply.sql ?? '';
    const columns = reply.columns ?? [];
    const rows = reply.rows ?? [];
    const masked = reply.masked ?? [];
    const truncated = reply.truncated ?? false;

    const structured: Record<string, unknown> = {
      request_id: reply.request_id,
      intent: 'sql',
      sql,
      ...(reply.explanation ? { explanation: reply.explanation } : {}),
      executed: reply.executed !== false,
      columns,
      rows,
      row_count: rows.length,
      truncated,
      ...(masked.length ? { masked } : {}),
      ...(reply.insights?.length ? { insights: reply.insights } : {}),
    };
    const parts = [`SQL:\n${sql}`];
    if (reply.explanation) parts.push(reply.explanation);
    if (reply.executed === false) {
      parts.push('(not executed)');
    } else {
      parts.push(`${rows.length} row${rows.length === 1 ? '' : 's'}${truncated ? ` (truncated at ${rows.length})` : ''}:\n${textTable(columns.map((c) => c.name), rows)}`);
    }
    if (masked.length) parts.push(`Masked: ${masked.map((m) => `${m.column} (${m.strategy})`).join(', ')}`);
    return { structured, text: parts.join('\n\n') };
  },
};

/** A clarifying question: the choices, numbered, and how to answer (the same tool, the same conversation). */
function clarifyOutput(requestId: string, clarification: Clarification, conversationId: string | undefined): { structured: Record<string, unknown>; text: string } {
  const choices = clarification.choices.map((c, i) => `${i + 1}. ${c.label}${c.value !== c.label ? ` (${c.kind} ${c.value})` : ''}`);
  const how = conversationId
    ? `To answer, call ask_database again with conversation_id "${conversationId}" and the choice (its label, value or number) as the question.`
    : 'To answer, ask again naming the one you mean.';
  return {
    structured: { request_id: requestId, intent: 'clarify', message: clarification.question, clarification, ...(conversationId ? { conversation_id: conversationId } : {}) },
    text: [`Clarification needed: ${clarification.question}`, choices.join('\n'), how].join('\n\n'),
  };
}

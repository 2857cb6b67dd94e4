/**
 * ask_database: a question in plain language → the SQL Cortado wrote, the rows (masked, capped
 * at mcp.max_rows) and a short explanation. Always executes: the confirm and execute settings of
 * the interactive assistant do not apply to MCP (SPEC).
 */
import Type from 'typebox';
import type { Cell, Column } from '../../../protocol/schemas/common.js';
import { Ask, ResultMask } from '../../../protocol/subjects.js';
import { textTable } from './render.js';
import type { McpTool } from './types.js';

const Input = Type.Object({
  question: Type.String({ minLength: 1, maxLength: 4000 }),
  tables: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 512 }), { maxItems: 50, description: 'tables to use' })),
}, { additionalProperties: false });

export const askDatabase: McpTool<typeof Input> = {
  name: 'ask_database',
  description: 'Answer a question about the database in plain language: runs read-only SQL and returns it with the rows.',
  input: Input,
  async run(args, { bus, config, session, ctx }) {
    const question = args.question.trim();
    const reply = await bus.request(Ask, { question: question || args.question, ...(args.tables?.length ? { tables: args.tables } : {}), channel: 'mcp' }, ctx);
    if (reply.intent === 'chat') {
      const message = reply.message ?? '';
      return { structured: { request_id: reply.request_id, intent: 'chat', message }, text: message };
    }
    const sql = reply.sql ?? '';
    const columns: Column[] = reply.columns ?? [];
    let rows: Cell[][] = reply.rows ?? [];
    let masked = reply.masked ?? [];
    // The assistant masks before rows leave it (its reply says so: `masked`, or the `mask` step's
    // timing). An answer that came back unmasked is masked here with this connection's rules.
    const maskedUpstream = reply.masked !== undefined || reply.timing_ms.mask !== undefined;
    if (!maskedUpstream && rows.length > 0 && sql) {
      const m = await bus.request(ResultMask, { sql, dialect: session.dialect, columns, rows, rules: [...session.maskRules] }, ctx);
      rows = m.rows;
      masked = m.masked.map((x) => ({ column: x.column, strategy: x.strategy }));
    }
    const max = config.mcp.max_rows;
    const truncated = (reply.truncated ?? false) || rows.length > max;
    if (rows.length > max) rows = rows.slice(0, max);

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

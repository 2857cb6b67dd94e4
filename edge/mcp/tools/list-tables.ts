/** list_tables: the tables and views Cortado can query, by the name to use in SQL. */
import Type from 'typebox';
import { SchemaTables } from '../../../protocol/subjects.js';
import type { McpTool } from './types.js';

const Input = Type.Object({}, { additionalProperties: false });

export const listTables: McpTool<typeof Input> = {
  name: 'list_tables',
  description: 'List the tables and views that can be queried.',
  input: Input,
  async run(_args, { bus, ctx }) {
    const { tables } = await bus.request(SchemaTables, {}, ctx);
    const list = tables.map((t) => ({ name: t.name, kind: t.kind, columns: t.column_count, ...(t.comment ? { comment: t.comment } : {}) }));
    const text = list.length
      ? list.map((t) => `${t.name}${t.kind === 'view' ? ' (view)' : ''}${t.comment ? ` -- ${t.comment.replace(/\s+/g, ' ').trim()}` : ''}`).join('\n')
      : 'No tables.';
    return { structured: { tables: list }, text };
  },
};

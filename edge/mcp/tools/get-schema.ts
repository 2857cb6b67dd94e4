/** get_schema: one table's columns and types. An unknown table is a NOT_FOUND tool error, with a suggestion. */
import Type from 'typebox';
import { SchemaDescribe } from '../../../protocol/subjects.js';
import type { McpTool } from './types.js';

const Input = Type.Object({
  table: Type.String({ minLength: 1, maxLength: 512 }),
}, { additionalProperties: false });

export const getSchema: McpTool<typeof Input> = {
  name: 'get_schema',
  description: 'Columns and types of one table.',
  input: Input,
  async run(args, { bus, ctx }) {
    const t = await bus.request(SchemaDescribe, { table: args.table }, ctx);
    const head = `${t.kind === 'view' ? 'View' : 'Table'} ${t.table}${t.comment ? ` -- ${t.comment.replace(/\s+/g, ' ').trim()}` : ''}`;
    const lines = t.columns.map((c) => `  ${c.name} ${c.type}${c.nullable ? '' : ' NOT NULL'}${c.comment ? ` -- ${c.comment.replace(/\s+/g, ' ').trim()}` : ''}`);
    return {
      structured: { table: t.table, schema: t.schema, kind: t.kind, ...(t.comment ? { comment: t.comment } : {}), columns: t.columns },
      text: [head, ...lines].join('\n'),
    };
  },
};

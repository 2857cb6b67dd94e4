import Type, { type Static } from 'typebox';
import { DbColumn, DbTable } from './sql.js';
import { Dialect } from './common.js';

export const TableSummary = Type.Object({
  /** the name to use in SQL (schema-qualified outside the default schema) */
  name: Type.String(),
  schema: Type.String(),
  kind: Type.Enum(['table', 'view']),
  comment: Type.Optional(Type.String()),
  column_count: Type.Integer({ minimum: 0 }),
});
export type TableSummary = Static<typeof TableSummary>;

export const SchemaTablesRequest = Type.Object({
  /** bypass the cache */
  refresh: Type.Optional(Type.Boolean()),
});
export type SchemaTablesRequest = Static<typeof SchemaTablesRequest>;

export const SchemaTablesReply = Type.Object({ tables: Type.Array(TableSummary) });
export type SchemaTablesReply = Static<typeof SchemaTablesReply>;

export const SchemaDescribeRequest = Type.Object({ table: Type.String({ minLength: 1, maxLength: 512 }) });
export type SchemaDescribeRequest = Static<typeof SchemaDescribeRequest>;

export const SchemaDescribeReply = Type.Object({
  table: Type.String(),
  schema: Type.String(),
  kind: Type.Enum(['table', 'view']),
  comment: Type.Optional(Type.String()),
  columns: Type.Array(DbColumn),
});
export type SchemaDescribeReply = Static<typeof SchemaDescribeReply>;

export const SchemaContextRequest = Type.Object({
  question: Type.String(),
  /** tables the user picked; when absent, retrieval picks the relevant ones */
  tables: Type.Optional(Type.Array(Type.String())),
  /** earlier questions of the conversation, to keep their tables in view */
  history: Type.Optional(Type.Array(Type.String())),
});
export type SchemaContextRequest = Static<typeof SchemaContextRequest>;

export const SchemaContextReply = Type.Object({
  dialect: Dialect,
  /** the schema text for the prompt */
  schema_text: Type.String(),
  /** the business-context block (semantic layer); empty when none is defined */
  business_context: Type.String(),
  tables: Type.Array(Type.String()),
});
export type SchemaContextReply = Static<typeof SchemaContextReply>;

export { DbTable };

import Type, { type Static } from 'typebox';
import { DbColumn, DbTable } from './sql.js';
import { ClarificationChoice, ColumnLabel, Dialect, Usage } from './common.js';

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
  /** words the user already clarified in this conversation: they are never ambiguous again */
  clarified: Type.Optional(Type.Array(Type.String({ maxLength: 200 }), { maxItems: 20 })),
});
export type SchemaContextRequest = Static<typeof SchemaContextRequest>;

/** One answer to a clarifying question (protocol/schemas/common.ts). */
export const AmbiguityChoice = ClarificationChoice;
export type AmbiguityChoice = ClarificationChoice;

export const Ambiguity = Type.Object({
  /** the word of the question that is ambiguous, as it was written */
  word: Type.String(),
  choices: Type.Array(AmbiguityChoice, { minItems: 1, maxItems: 10 }),
  /** the clarifying question, for people */
  question: Type.String(),
});
export type Ambiguity = Static<typeof Ambiguity>;

export const SchemaContextReply = Type.Object({
  dialect: Dialect,
  /** the schema text for the prompt */
  schema_text: Type.String(),
  /** the business-context block (semantic layer); empty when none is defined */
  business_context: Type.String(),
  /**
   * result columns the semantic layer names (an entity column's or a metric's display name, a
   * metric's format), by column name: the answer's columns carry them for the pages
   */
  column_labels: Type.Optional(Type.Array(ColumnLabel, { maxItems: 2000 })),
  tables: Type.Array(Type.String()),
  /**
   * a word of the question that two tables or metrics tie for, or a literal that matches no
   * known value: the assistant asks the user which one is meant (intent `clarify`) instead of
   * guessing
   */
  ambiguity: Type.Optional(Ambiguity),
  /**
   * how the tables were chosen when the caller named none: `lexical` (the ranking), `model` (the
   * model picked them from the ranking's candidates, catalog.linking: model) or `fallback` (the
   * model was asked and failed: the ranking's choice)
   */
  linking: Type.Optional(Type.Enum(['lexical', 'model', 'fallback'])),
  /** the model call that picked the tables (catalog.linking: model), to be counted with the question's */
  usage: Type.Optional(Usage),
});
export type SchemaContextReply = Static<typeof SchemaContextReply>;

export { DbTable };

/**
 * `sql.profile`: what the executor can tell about the tables of one schema without reading them
 * whole (the semantic actor's auto-discover builds its suggestions from it). Read-only and
 * bounded: the engine's statistics where it keeps them (PostgreSQL pg_stats and reltuples),
 * else a sample of at most PROFILE_SAMPLE_ROWS rows; declared keys from the catalog; and, for
 * the column pairs asked for, how many sampled values of one column the other holds.
 *
 * Values (sample values, min, max) come back masked: the executor passes each table's values
 * through the mask rules before it replies (`masked: true` on a column they cover), as it does
 * the rows of sql.execute. Long text values are cut at PROFILE_VALUE_CHARS.
 */
import Type, { type Static } from 'typebox';
import { Cell, Dialect } from './common.js';
import { NameString } from './text.js';

/** Rows a sample reads from one table, at most. */
export const PROFILE_SAMPLE_ROWS = 1000;
/** Characters of one sampled text value kept (longer ones end with …). */
export const PROFILE_VALUE_CHARS = 100;
/** Sample values kept per column. */
export const PROFILE_SAMPLE_VALUES = 5;

const Name = NameString({ minLength: 1, maxLength: 256 });

/** One value-overlap check: how many distinct sampled values of from_column are found in to_column. */
export const OverlapPair = Type.Object({
  /** table names of the request's schema */
  from_table: Name,
  from_column: Name,
  to_table: Name,
  to_column: Name,
});
export type OverlapPair = Static<typeof OverlapPair>;

export const SqlProfileRequest = Type.Object({
  /** Trino: the catalog (when the configured one is not set); BigQuery: the project; else ignored unless it names another database */
  catalog: Type.Optional(NameString({ maxLength: 256 })),
  schema: Name,
  /** the tables to profile; absent: every table and view of the schema (up to PROFILE_MAX_TABLES); []: none (overlap checks only) */
  tables: Type.Optional(Type.Array(Name, { maxItems: 200 })),
  overlaps: Type.Optional(Type.Array(OverlapPair, { maxItems: 100 })),
});
export type SqlProfileRequest = Static<typeof SqlProfileRequest>;

export const ProfileSource = Type.Enum(['statistics', 'sample']);
export type ProfileSource = Static<typeof ProfileSource>;

export const ColumnStats = Type.Object({
  name: Type.String(),
  data_type: Type.String(),
  nullable: Type.Boolean(),
  comment: Type.Optional(Type.String()),
  /** distinct values: the statistics' estimate, or counted in the sample */
  distinct_count: Type.Optional(Type.Number({ minimum: 0 })),
  /** share of NULLs, 0..1 */
  null_fraction: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  min: Type.Optional(Cell),
  max: Type.Optional(Cell),
  /** a few values: the most common ones (statistics) or the first distinct ones sampled */
  sample_values: Type.Array(Cell),
  /** a mask rule covers the column: min, max and sample_values hold masked values */
  masked: Type.Optional(Type.Boolean()),
  /** average length of the sampled text values, in characters */
  avg_length: Type.Optional(Type.Number({ minimum: 0 })),
  /** where the figures come from; absent when there are none (the table could not be sampled) */
  source: Type.Optional(ProfileSource),
});
export type ColumnStats = Static<typeof ColumnStats>;

export const ForeignKey = Type.Object({
  columns: Type.Array(Type.String()),
  ref_schema: Type.String(),
  ref_table: Type.String(),
  ref_columns: Type.Array(Type.String()),
});
export type ForeignKey = Static<typeof ForeignKey>;

export const TableProfile = Type.Object({
  /** the schema as the engine names it (Trino without a configured catalog: `catalog.schema`) */
  schema: Type.String(),
  name: Type.String(),
  kind: Type.Enum(['table', 'view']),
  comment: Type.Optional(Type.String()),
  /** rows: the statistics' estimate, or exact when the sample read the whole table */
  row_count: Type.Optional(Type.Number({ minimum: 0 })),
  /** the declared primary key (empty: none declared, or the engine has none) */
  primary_key: Type.Array(Type.String()),
  /** declared foreign keys to tables the role can read */
  foreign_keys: Type.Array(ForeignKey),
  /** statistics: every column had them; sample: at least one column's figures were sampled; none: no figures */
  source: Type.Enum(['statistics', 'sample', 'none']),
  /** rows the sample read, when there was one */
  sampled_rows: Type.Optional(Type.Integer({ minimum: 0 })),
  /** why some or all figures are missing, for people */
  note: Type.Optional(Type.String()),
  /** `SELECT <the columns> FROM <the table>` in the engine's dialect: what masking traces the values' columns through */
  select_sql: Type.String(),
  columns: Type.Array(ColumnStats),
});
export type TableProfile = Static<typeof TableProfile>;

export const OverlapResult = Type.Object({
  ...OverlapPair.properties,
  /** distinct non-null values sampled from from_column */
  sampled: Type.Integer({ minimum: 0 }),
  /** how many of them to_column holds */
  found: Type.Integer({ minimum: 0 }),
  /** found / sampled (0 when nothing was sampled) */
  share: Type.Number({ minimum: 0, maximum: 1 }),
  /** why the check could not run (a table or column not found, types that do not compare) */
  error: Type.Optional(Type.String()),
});
export type OverlapResult = Static<typeof OverlapResult>;

export const SqlProfileReply = Type.Object({
  dialect: Dialect,
  provider: Type.String(),
  /** the schema as asked for */
  schema: Type.String(),
  tables: Type.Array(TableProfile),
  /** tables asked for that do not exist or that the role cannot read */
  missing: Type.Array(Type.String()),
  overlaps: Type.Array(OverlapResult),
  /** the schema has more tables than one profile reads (PROFILE_MAX_TABLES), or time ran out: ask for the rest by name */
  truncated: Type.Boolean(),
  duration_ms: Type.Number({ minimum: 0 }),
});
export type SqlProfileReply = Static<typeof SqlProfileReply>;

// ---- the value index (sql.values) ------------------------------------------------------------

/** Distinct values a column may have to be indexed (a status, a category, a shipper, a country). */
export const VALUE_INDEX_MAX_DISTINCT = 1000;
/** A column unique in its table is indexed only in a table of at most this many rows (a lookup table: shippers, categories, departments). */
export const VALUE_INDEX_UNIQUE_ROWS = 200;
/** Values of one column kept, at most. */
export const VALUE_INDEX_COLUMN_VALUES = 200;
/** Values of the whole index, at most. */
export const VALUE_INDEX_MAX_VALUES = 200_000;

export const SqlValuesRequest = Type.Object({});
export type SqlValuesRequest = Static<typeof SqlValuesRequest>;

export const IndexedColumn = Type.Object({
  schema: Type.String(),
  table: Type.String(),
  column: Type.String(),
  /** the column's distinct values (the statistics' estimate) */
  distinct: Type.Number({ minimum: 0 }),
  /** empty when a mask rule covers the column (`masked`): a masked value is neither matched nor offered */
  values: Type.Array(Type.String()),
  masked: Type.Optional(Type.Boolean()),
});
export type IndexedColumn = Static<typeof IndexedColumn>;

/**
 * The dates a date or timestamp column holds, from its statistics: the first and last day
 * (`YYYY-MM-DD`), far-off placeholders ('9999-01-01' for "still current") left out.
 */
export const IndexedDates = Type.Object({
  schema: Type.String(),
  table: Type.String(),
  column: Type.String(),
  first: Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$' }),
  last: Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$' }),
});
export type IndexedDates = Static<typeof IndexedDates>;

export const SqlValuesReply = Type.Object({
  /** statistics: the engine's own (PostgreSQL's pg_stats); none: this engine keeps no value statistics */
  source: Type.Enum(['statistics', 'none']),
  columns: Type.Array(IndexedColumn),
  /** the date columns' ranges (an engine that keeps none leaves it out) */
  dates: Type.Optional(Type.Array(IndexedDates)),
  /** more values than VALUE_INDEX_MAX_VALUES: the rest was left out */
  truncated: Type.Boolean(),
  duration_ms: Type.Number({ minimum: 0 }),
});
export type SqlValuesReply = Static<typeof SqlValuesReply>;

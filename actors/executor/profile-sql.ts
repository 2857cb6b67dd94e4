/**
 * The SQL `sql.profile` writes, per dialect: every identifier quoted, every value a quoted
 * literal (never spliced as written), every read bounded by a LIMIT. Nothing here runs SQL.
 */
import type { Cell, Dialect } from '../../protocol/schemas/common.js';

/** An identifier, quoted for the dialect (a quote inside it doubled, or escaped for BigQuery). */
export function quoteIdent(dialect: Dialect, name: string): string {
  switch (dialect) {
    case 'mysql':
      return `\`${name.replace(/`/g, '``')}\``;
    case 'bigquery':
      return `\`${name.replace(/[\\`]/g, (c) => `\\${c}`)}\``;
    default:
      return `"${name.replace(/"/g, '""')}"`;
  }
}

/**
 * A string literal for the dialect. PostgreSQL: an E'' literal (backslashes and quotes escaped,
 * whatever standard_conforming_strings says); MySQL: quotes doubled and backslashes escaped (the
 * engine's sessions never run with NO_BACKSLASH_ESCAPES); Trino: quotes doubled; BigQuery:
 * backslash escapes, line breaks too (a quoted string may not hold one).
 */
export function quoteString(dialect: Dialect, text: string): string {
  switch (dialect) {
    case 'postgresql':
      return `E'${text.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
    case 'mysql':
      return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
    case 'bigquery':
      return `'${text.replace(/[\\'\n\r]/g, (c) => (c === '\n' ? '\\n' : c === '\r' ? '\\r' : `\\${c}`))}'`;
    default:
      return `'${text.replace(/'/g, "''")}'`;
  }
}

/** A sampled value as a literal of its own kind: finite numbers as numbers, text as a string; else undefined (not compared). */
export function valueLiteral(dialect: Dialect, value: Cell): string | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : undefined;
  if (typeof value === 'string') return quoteString(dialect, value);
  return undefined;
}

/** Where a table is: the schema's parts (Trino's `catalog`, when the schema is catalog-qualified) and its name. */
export interface TableRef {
  /** the catalog, when the table must be named with it (Trino without a configured catalog) */
  catalog?: string;
  schema: string;
  name: string;
}

export function tableSql(dialect: Dialect, t: TableRef): string {
  const parts = [...(t.catalog ? [t.catalog] : []), t.schema, t.name];
  return parts.map((p) => quoteIdent(dialect, p)).join('.');
}

/** Characters of a text value a sample reads: enough for its figures, never a whole document. */
export const SAMPLE_TEXT_CHARS = 200;

const LONG_TEXT = /^(text|tinytext|mediumtext|longtext|string|varchar|character varying|nvarchar|clob)\b(?!.*\[\])/i;

/** What a sample reads of a column: long text only its first SAMPLE_TEXT_CHARS characters (substr exists in every dialect). */
export function sampleColumnSql(dialect: Dialect, column: { name: string; type: string }): string {
  const col = quoteIdent(dialect, column.name);
  return LONG_TEXT.test(column.type.trim()) ? `substr(${col}, 1, ${SAMPLE_TEXT_CHARS})` : col;
}

/** `SELECT <what a sample reads of each column> FROM <table> <tail>`. */
export function sampleSql(dialect: Dialect, t: TableRef, columns: ReadonlyArray<{ name: string; type: string }>, tail: string): string {
  return `SELECT ${columns.map((c) => sampleColumnSql(dialect, c)).join(', ')} FROM ${tableSql(dialect, t)} ${tail}`;
}

/** `SELECT "a", "b" FROM "s"."t"`, with an optional tail (`LIMIT 1000`, a TABLESAMPLE clause). */
export function selectSql(dialect: Dialect, t: TableRef, columns: readonly string[], tail = ''): string {
  const cols = columns.length ? columns.map((c) => quoteIdent(dialect, c)).join(', ') : '1';
  return `SELECT ${cols} FROM ${tableSql(dialect, t)}${tail ? ` ${tail}` : ''}`;
}

/** How many distinct `values` the column holds, bounded by the values themselves. */
export function overlapSql(dialect: Dialect, t: TableRef, column: string, literals: readonly string[]): string {
  const col = quoteIdent(dialect, column);
  return `SELECT count(DISTINCT ${col}) FROM ${tableSql(dialect, t)} WHERE ${col} IN (${literals.join(', ')})`;
}

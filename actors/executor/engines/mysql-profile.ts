/**
 * sql.profile on MySQL / MariaDB: the primary keys from information_schema (the row estimate,
 * the columns and the foreign keys come with the introspection; the figures from a sample).
 */
import { quoteString } from '../profile-sql.js';

/** table name, column name, in key order. */
export function primaryKeysSql(schema: string, tables: readonly string[]): string {
  const names = tables.map((n) => quoteString('mysql', n)).join(', ');
  return `SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE
WHERE TABLE_SCHEMA = ${quoteString('mysql', schema)} AND CONSTRAINT_NAME = 'PRIMARY' AND TABLE_NAME IN (${names})
ORDER BY TABLE_NAME, ORDINAL_POSITION`;
}

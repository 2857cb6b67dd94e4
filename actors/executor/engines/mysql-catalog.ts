/**
 * MySQL / MariaDB introspection: the tables, views, columns and foreign keys the account sees
 * (of the configured database, or of every user schema), from information_schema.
 */

import type { DbTable } from '../../../protocol/schemas/sql.js';
import type { DbSchema } from './engine.js';

/** Runs one catalog query as the engine's internal (unmetered, bounded) query. */
type Query = <R>(sql: string, params?: unknown[]) => Promise<R[]>;

interface TableRow {
  table_schema: string;
  table_name: string;
  table_type: string;
  table_rows: number | string | null;
  table_comment: string | null;
}

interface ColumnRow {
  table_schema: string;
  table_name: string;
  column_name: string;
  column_type: string;
  is_nullable: string;
  column_comment: string | null;
}

interface KeyRow {
  table_schema: string;
  table_name: string;
  constraint_name: string;
  column_name: string;
  ref_schema: string;
  ref_table: string;
  ref_column: string;
}

/** The schema the account sees; MariaDB JSON columns (LONGTEXT with a json_valid check) named `json`. */
export async function introspectMysql(query: Query, database: string, mariadb: boolean): Promise<DbSchema> {
  const scope = database
    ? { where: 'TABLE_SCHEMA = ?', params: [database] }
    : { where: `TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')`, params: [] as string[] };
  const tables = await query<TableRow>(
    `SELECT TABLE_SCHEMA AS table_schema, TABLE_NAME AS table_name, TABLE_TYPE AS table_type,
            TABLE_ROWS AS table_rows, TABLE_COMMENT AS table_comment
     FROM information_schema.TABLES WHERE ${scope.where} AND TABLE_TYPE <> 'SEQUENCE' ORDER BY TABLE_SCHEMA, TABLE_NAME`,
    scope.params,
  );
  const columns = await query<ColumnRow>(
    `SELECT TABLE_SCHEMA AS table_schema, TABLE_NAME AS table_name, COLUMN_NAME AS column_name,
            COLUMN_TYPE AS column_type, IS_NULLABLE AS is_nullable, COLUMN_COMMENT AS column_comment
     FROM information_schema.COLUMNS WHERE ${scope.where} ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION`,
    scope.params,
  );
  const keys = await query<KeyRow>(
    `SELECT TABLE_SCHEMA AS table_schema, TABLE_NAME AS table_name, CONSTRAINT_NAME AS constraint_name,
            COLUMN_NAME AS column_name, REFERENCED_TABLE_SCHEMA AS ref_schema,
            REFERENCED_TABLE_NAME AS ref_table, REFERENCED_COLUMN_NAME AS ref_column
     FROM information_schema.KEY_COLUMN_USAGE
     WHERE ${scope.where} AND REFERENCED_TABLE_NAME IS NOT NULL
     ORDER BY TABLE_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION`,
    scope.params,
  );

  const byName = new Map<string, DbTable>();
  const out: DbTable[] = [];
  for (const row of tables) {
    const view = /VIEW/i.test(row.table_type);
    const table: DbTable = { schema: row.table_schema, name: row.table_name, kind: view ? 'view' : 'table', columns: [] };
    // a view's comment is the word VIEW (or a note about an invalid view)
    if (!view && row.table_comment) table.comment = row.table_comment;
    const estimate = row.table_rows === null ? NaN : Number(row.table_rows);
    if (!view && Number.isFinite(estimate) && estimate >= 0) table.row_estimate = estimate;
    byName.set(`${row.table_schema}.${row.table_name}`, table);
    out.push(table);
  }
  for (const c of columns) {
    const table = byName.get(`${c.table_schema}.${c.table_name}`);
    if (!table) continue;
    table.columns.push({
      name: c.column_name,
      type: c.column_type,
      nullable: c.is_nullable === 'YES',
      ...(c.column_comment ? { comment: c.column_comment } : {}),
    });
  }
  if (mariadb) await markJsonColumns(query, byName, database, scope.params);
  const fks = new Map<string, { table: DbTable; columns: string[]; ref_schema: string; ref_table: string; ref_columns: string[] }>();
  for (const k of keys) {
    const table = byName.get(`${k.table_schema}.${k.table_name}`);
    if (!table || !byName.has(`${k.ref_schema}.${k.ref_table}`)) continue; // only between tables the role sees
    const id = `${k.table_schema}.${k.table_name}.${k.constraint_name}`;
    let fk = fks.get(id);
    if (!fk) {
      fk = { table, columns: [], ref_schema: k.ref_schema, ref_table: k.ref_table, ref_columns: [] };
      fks.set(id, fk);
    }
    fk.columns.push(k.column_name);
    fk.ref_columns.push(k.ref_column);
  }
  for (const fk of fks.values()) {
    (fk.table.foreign_keys ??= []).push({ columns: fk.columns, ref_schema: fk.ref_schema, ref_table: fk.ref_table, ref_columns: fk.ref_columns });
  }
  return { default_schema: database, tables: out };
}

/**
 * MariaDB's JSON is LONGTEXT with a json_valid() check: name those columns `json`, so the
 * model knows JSON functions apply. Best effort (older servers have no CHECK_CONSTRAINTS).
 */
async function markJsonColumns(query: Query, byName: Map<string, DbTable>, database: string, params: string[]): Promise<void> {
  const where = database ? 'CONSTRAINT_SCHEMA = ?' : `CONSTRAINT_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')`;
  let checks: Array<{ table_schema: string; table_name: string; clause: string }>;
  try {
    checks = await query(
      `SELECT CONSTRAINT_SCHEMA AS table_schema, TABLE_NAME AS table_name, CHECK_CLAUSE AS clause FROM information_schema.CHECK_CONSTRAINTS WHERE ${where}`,
      params,
    );
  } catch {
    return;
  }
  for (const c of checks) {
    const m = /^json_valid\(`((?:[^`]|``)+)`\)$/i.exec(c.clause.trim());
    if (!m) continue;
    const column = byName.get(`${c.table_schema}.${c.table_name}`)?.columns.find((col) => col.name === m[1]!.replace(/``/g, '`'));
    if (column && /text$/i.test(column.type)) column.type = 'json';
  }
}

/**
 * What the database says about a record before it is stored: the entity's table exists (the
 * catalog's `schema.describe`), its primary key and columns are columns of it, a relationship's
 * columns are columns of its two tables, and a metric's expression passes the executor's guard
 * as `SELECT <expr> AS metric_value FROM <table>`, is an aggregate (sql.check, expect
 * 'aggregate': the dialect's own parser decides), and, over an entity, runs on the database
 * (LIMIT 0; BigQuery: a dry run) so an unknown column is said at once.
 *
 * Every refusal is VALIDATION_FAILED naming the field; when the catalog or the executor cannot
 * be asked, the error says so and keeps its own code (a 503, not a 400).
 */
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import { CortadoError, toCortadoError } from '../../protocol/errors.js';
import type { SchemaDescribeReply } from '../../protocol/schemas/catalog.js';
import type { Dialect } from '../../protocol/schemas/common.js';
import type { SemanticEntity } from '../../protocol/schemas/semantic.js';
import { SchemaDescribe, SchemaTables, SqlCheck, SqlEstimate, SqlExecute } from '../../protocol/subjects.js';
import { sqlName } from './block.js';

export interface ValidateDeps {
  bus: Pick<Bus, 'request'>;
  dialect: Dialect;
}

type TableRef = Pick<SemanticEntity, 'schema_name' | 'table_name'>;

export const NOT_AGGREGATE_HINT = 'use SUM(...), COUNT(...), AVG(...), MIN(...) or MAX(...) over the columns';

function invalid(message: string, field: string): CortadoError {
  return new CortadoError('VALIDATION_FAILED', message, { field });
}

/** The name the catalog resolves: bare words (case-insensitive, as SQL reads them) when plain, quoted otherwise. */
function describeName(t: TableRef): string {
  const part = (s: string) => (/^[A-Za-z_][A-Za-z0-9_$]*$/.test(s) ? s : `"${s.split('"').join('""')}"`);
  return `${part(t.schema_name)}.${part(t.table_name)}`;
}

/** The table's columns from the catalog; `field` is named when the table is not there. */
export async function describeTable(t: TableRef, field: string, deps: ValidateDeps, ctx: Ctx): Promise<SchemaDescribeReply> {
  try {
    try {
      return await deps.bus.request(SchemaDescribe, { table: describeName(t) }, ctx);
    } catch (err) {
      if (toCortadoError(err).code !== 'NOT_FOUND') throw err;
      // a table made since the catalog's cache was filled: read the schema again, once
      await deps.bus.request(SchemaTables, { refresh: true }, ctx);
      return await deps.bus.request(SchemaDescribe, { table: describeName(t) }, ctx);
    }
  } catch (err) {
    const e = toCortadoError(err);
    if (e.code === 'NOT_FOUND') {
      const hint = typeof e.details?.suggestion === 'string' ? ` (did you mean ${e.details.suggestion}?)` : '';
      throw invalid(`${field}: there is no table ${t.schema_name}.${t.table_name} in the database${hint}`, field);
    }
    if (e.code === 'VALIDATION_FAILED') throw invalid(`${field}: ${e.message}`, field);
    throw new CortadoError(e.code, `${field}: cannot check ${t.schema_name}.${t.table_name} against the database, the catalog did not answer: ${e.message}`, { field });
  }
}

function columnSet(d: SchemaDescribeReply): Map<string, string> {
  // exact names first; a bare lower-case name also finds its column case-insensitively
  const m = new Map<string, string>();
  for (const c of d.columns) m.set(c.name, c.name);
  for (const c of d.columns) if (!m.has(c.name.toLowerCase())) m.set(c.name.toLowerCase(), c.name);
  return m;
}

function hasColumn(cols: Map<string, string>, name: string): boolean {
  return cols.has(name) || cols.has(name.toLowerCase());
}

function unknownColumns(cols: Map<string, string>, names: readonly string[], t: TableRef, field: string): CortadoError | undefined {
  const bad = names.filter((n) => !hasColumn(cols, n));
  if (!bad.length) return undefined;
  const list = bad.map((n) => `"${n}"`).join(', ');
  return invalid(`${field}: ${t.schema_name}.${t.table_name} has no column${bad.length > 1 ? 's' : ''} ${list}`, field);
}

/** The entity's table exists; its primary key and the given columns name columns of it. */
export async function checkEntity(
  e: TableRef & { primary_key?: string | undefined; columns?: ReadonlyArray<{ name: string }> | undefined },
  deps: ValidateDeps, ctx: Ctx,
): Promise<void> {
  const d = await describeTable(e, 'table_name', deps, ctx);
  const cols = columnSet(d);
  const pk = (e.primary_key ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const bad = unknownColumns(cols, pk, e, 'primary_key') ?? unknownColumns(cols, (e.columns ?? []).map((c) => c.name), e, 'columns');
  if (bad) throw bad;
}

/** One column of an entity names a column of its table. */
export async function checkColumn(entity: SemanticEntity, name: string, deps: ValidateDeps, ctx: Ctx): Promise<void> {
  const d = await describeTable(entity, 'entity_id', deps, ctx);
  const bad = unknownColumns(columnSet(d), [name], entity, 'name');
  if (bad) throw bad;
}

/** from_column and to_column are columns of the two entities' tables. */
export async function checkRelationshipColumns(
  from: SemanticEntity, fromColumn: string, to: SemanticEntity, toColumn: string, deps: ValidateDeps, ctx: Ctx,
): Promise<void> {
  const f = await describeTable(from, 'from_entity_id', deps, ctx);
  const bad = unknownColumns(columnSet(f), [fromColumn], from, 'from_column');
  if (bad) throw bad;
  const t = await describeTable(to, 'to_entity_id', deps, ctx);
  const bad2 = unknownColumns(columnSet(t), [toColumn], to, 'to_column');
  if (bad2) throw bad2;
}

/** The statement a metric is checked as: the expression on lines of its own, so a comment in it cannot hide the rest. */
export function metricProbe(expression: string, entity: TableRef | undefined, dialect: Dialect): string {
  const from = entity ? ` FROM ${sqlName(entity.schema_name, dialect)}.${sqlName(entity.table_name, dialect)}` : '';
  return `SELECT\n${expression}\nAS metric_value${from}`;
}

/**
 * The guard accepts it, it is an aggregate, and (over an entity) the database runs it: LIMIT 0
 * (no row is read), or on BigQuery a dry run (no byte is billed).
 */
export async function checkMetricExpression(expression: string, entity: SemanticEntity | undefined, deps: ValidateDeps, ctx: Ctx): Promise<void> {
  const field = 'sql_expression';
  if (/;\s*$/.test(expression.trim())) throw invalid(`${field}: one expression, without a semicolon`, field);
  // the model copies the expression into its SQL, maybe onto one line: a comment would swallow what follows it
  const code = expression.replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"|`(?:[^`]|``)*`/g, ' ');
  const comment = deps.dialect === 'mysql' || deps.dialect === 'bigquery' ? /--|\/\*|#/ : /--|\/\*/;
  if (comment.test(code)) throw invalid(`${field}: no comments in the expression (put the explanation in the description)`, field);
  const sql = metricProbe(expression, entity, deps.dialect);
  let check;
  try {
    check = await deps.bus.request(SqlCheck, { sql, expect: 'aggregate' }, ctx);
  } catch (err) {
    const e = toCortadoError(err);
    throw new CortadoError(e.code, `${field}: cannot be checked, the executor did not answer: ${e.message}`, { field });
  }
  if (!check.ok) throw invalid(`${field}: the SQL guard refuses it: ${check.reason ?? 'not a read-only expression'}`, field);
  if (check.aggregate !== true) {
    const why = check.aggregate_reason ? `${check.aggregate_reason}; ` : '';
    throw invalid(`${field}: not an aggregate (${why}${NOT_AGGREGATE_HINT})`, field);
  }
  if (!entity) return;
  try {
    if (deps.dialect === 'bigquery') await deps.bus.request(SqlEstimate, { sql }, ctx);
    else await deps.bus.request(SqlExecute, { sql: `${sql}\nLIMIT 0`, default_limit: 1, max_limit: 1 }, ctx);
  } catch (err) {
    const e = toCortadoError(err);
    if (e.code === 'DB_QUERY_FAILED' || e.code === 'SQL_REJECTED') {
      throw invalid(`${field}: the database refuses it over ${entity.schema_name}.${entity.table_name}: ${e.message}`, field);
    }
    throw new CortadoError(e.code, `${field}: cannot be checked on the database: ${e.message}`, { field });
  }
}

/**
 * What lineage knows about functions and operators: which ones make their values only from their
 * arguments (so tracing the arguments traces the value), and which do not.
 *
 * Fails closed: a column whose value comes out of anything below is "lineage unknown" (masked
 * with the strongest active strategy, handle.ts), however harmless its arguments look.
 *
 * - A function that reads rows, files or other sessions instead of (or beside) its arguments:
 *   it runs SQL held in a string (`ts_rewrite(q, 'SELECT email ...')`, `query_to_xml`, `ts_stat`,
 *   `dblink`), reads a large object, a server file, another session's query text, a replication
 *   slot (PostgreSQL); `LOAD_FILE` (MySQL); `EXTERNAL_QUERY` (BigQuery); Trino's `query` table
 *   function. The executor's guard refuses these too; lineage does not rely on it.
 * - A function the deployment listed in `database.allowed_functions`: a user-defined function
 *   may read any table (`get_email(id)` has the source `id` only to a parser), so its value is
 *   not traced through its arguments.
 * - A function in FROM that is not one of the table functions below (`FROM f() AS t(a text)`, a
 *   SETOF record function, `ts_stat`, `EXTERNAL_QUERY`): its rows come from wherever it reads.
 *   The ones below return rows made of their arguments only (`unnest(array_agg(email))`,
 *   `jsonb_each(doc)`, `json_to_recordset(...)`), so their columns are traced to the arguments.
 * - A PostgreSQL operator that is not one of PostgreSQL's own symbols, or one named through
 *   `OPERATOR(schema.op)`: a user-defined operator runs a function, which may read anything.
 *
 * - A function that takes a whole row, called in PostgreSQL's attribute notation: `c.row_to_json`
 *   is `row_to_json(c)`, every column of `c` (lineage.ts reads `c.x` as a column x of c, or the
 *   whole row when x is one of these or a function the deployment allows). The functions of
 *   pg_catalog callable with one argument of a row's type (record, anyelement, anynonarray,
 *   "any", anycompatible...) on PostgreSQL 13 to 18, and the row functions of common
 *   extensions (hstore): a name that is not a column of the row and not one of these is an
 *   error on the server, not a call.
 *
 * Names compare lower-cased, by their last part and in full (`pg_catalog.unnest` is `unnest`;
 * an allowed `public.f` matches `public.f` and `f`).
 */

/** Functions whose value is not made from their arguments alone (every dialect; names do not collide). */
const READS_DATA: ReadonlySet<string> = new Set([
  // PostgreSQL: SQL held in a string
  'ts_rewrite', 'ts_stat',
  'query_to_xml', 'query_to_xmlschema', 'query_to_xml_and_xmlschema',
  'cursor_to_xml', 'cursor_to_xmlschema',
  'table_to_xml', 'table_to_xmlschema', 'table_to_xml_and_xmlschema',
  'schema_to_xml', 'schema_to_xmlschema', 'schema_to_xml_and_xmlschema',
  'database_to_xml', 'database_to_xmlschema', 'database_to_xml_and_xmlschema',
  'dblink', 'dblink_exec', 'dblink_fetch', 'dblink_get_result', 'dblink_send_query', 'dblink_open',
  // PostgreSQL: large objects, server files, other sessions, replication
  'lo_get', 'loread', 'pg_read_file', 'pg_read_binary_file',
  'pg_stat_get_activity', 'pg_stat_get_backend_activity',
  'pg_logical_slot_get_changes', 'pg_logical_slot_peek_changes',
  'pg_logical_slot_get_binary_changes', 'pg_logical_slot_peek_binary_changes',
  // MySQL / MariaDB
  'load_file',
  // BigQuery
  'external_query',
  // Trino (system.query, and the connectors' query pass-through)
  'query', 'raw_query',
]);

/** Table functions whose rows are made of their arguments only. */
const TABLE_FUNCTIONS: ReadonlySet<string> = new Set([
  'unnest', 'generate_series', 'generate_subscripts', 'generate_array', 'generate_date_array', 'generate_timestamp_array',
  'json_each', 'json_each_text', 'jsonb_each', 'jsonb_each_text',
  'json_array_elements', 'json_array_elements_text', 'jsonb_array_elements', 'jsonb_array_elements_text',
  'json_object_keys', 'jsonb_object_keys',
  'json_to_record', 'json_to_recordset', 'jsonb_to_record', 'jsonb_to_recordset',
  'json_populate_record', 'json_populate_recordset', 'jsonb_populate_record', 'jsonb_populate_recordset',
  'jsonb_path_query', 'jsonb_path_query_tz',
  'regexp_matches', 'regexp_split_to_table', 'string_to_table',
  'json_table', 'xmltable', 'sequence',
]);

/**
 * Functions a whole row can be given in attribute notation (`c.f` = `f(c)`): pg_catalog's
 * functions callable with one argument of a pseudo-type a composite fits (window functions and
 * ordered-set aggregates need OVER / WITHIN GROUP and cannot be called that way), and
 * extensions' row functions.
 */
const WHOLE_ROW: ReadonlySet<string> = new Set([
  'row_to_json', 'to_json', 'to_jsonb', 'json_agg', 'jsonb_agg', 'json_agg_strict', 'jsonb_agg_strict', 'array_agg', 'any_value',
  'json_build_array', 'jsonb_build_array', 'concat', 'quote_literal', 'quote_nullable',
  'record_out', 'record_send', 'hash_record', 'hash_record_extended', 'num_nonnulls', 'num_nulls', 'pg_column_size', 'pg_typeof',
  'pg_collation_for', 'pg_column_compression', 'pg_column_toast_chunk_id',
  'any_out', 'anyelement_out', 'anynonarray_out', 'anycompatible_out', 'anycompatiblenonarray_out',
  'hstore',
]);

/** PostgreSQL's own operator symbols (pg_operator of a plain installation). */
const PG_OPERATORS: ReadonlySet<string> = new Set([
  '+', '-', '*', '/', '%', '^', '|/', '||/', '@', '&', '|', '#', '~', '<<', '>>',
  '=', '<>', '!=', '<', '>', '<=', '>=',
  '||', '~~', '~~*', '!~~', '!~~*', '~*', '!~', '!~*',
  '->', '->>', '#>', '#>>', '#-', '?', '?|', '?&', '@>', '<@', '@?', '@@', '@@@', '&&',
  '<->', '<#>', '<<|', '|>>', '&<', '&>', '&<|', '|&>', '<^', '>^', '?#', '?-', '?|', '?-|', '?||', '@-@', '##', '~=',
  '-|-', '<<=', '>>=', '!!', '<%', '%>', '<<%', '%>>',
]);

function lastPart(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot < 0 ? name : name.slice(dot + 1);
}

/**
 * Whether a function's value cannot be traced through its arguments; `listed`: whether the
 * deployment allows it (database.allowed_functions: it may take a whole row too).
 */
export type OpaqueFunction = ((name: string) => boolean) & { listed?: (name: string) => boolean };

/** The rule above, with the deployment's `database.allowed_functions`. */
export function opaqueFunctions(allowed: readonly string[] = []): OpaqueFunction {
  const names = new Set(allowed.map((n) => n.trim().toLowerCase()).filter((n) => n !== ''));
  const namesLast = new Set([...names].map(lastPart));
  const listed = (name: string): boolean => {
    const n = name.toLowerCase();
    return names.has(n) || namesLast.has(lastPart(n));
  };
  const fn: OpaqueFunction = (name) => READS_DATA.has(lastPart(name.toLowerCase())) || listed(name);
  fn.listed = listed;
  return fn;
}

/** Whether `x.name` may be `name(x)` on a whole row (PostgreSQL's attribute notation). */
export function isWholeRowFunction(name: string): boolean {
  return WHOLE_ROW.has(name.toLowerCase());
}

/** Whether a FROM function's rows are made of its arguments only. */
export function isTableFunction(name: string): boolean {
  return TABLE_FUNCTIONS.has(lastPart(name.toLowerCase()));
}

/** Whether a PostgreSQL operator (its name parts as parsed) is one of PostgreSQL's own. */
export function isPgOperator(parts: readonly string[]): boolean {
  if (parts.length === 1) return PG_OPERATORS.has(parts[0]!);
  // OPERATOR(pg_catalog.+) is PostgreSQL's own; OPERATOR(public.===) is not
  return parts.length === 2 && parts[0]!.toLowerCase() === 'pg_catalog' && PG_OPERATORS.has(parts[1]!);
}

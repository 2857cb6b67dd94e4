/**
 * What a MySQL / MariaDB query may use: the allow-lists of guard/mysql.ts, and the checks that
 * refuse what is not on them. A function, operator, cast type, system variable or system
 * relation that is not here is refused with its name and why (deny.ts still names the
 * well-known dangerous ones, with their own reason, and wins over database.allowed_functions).
 * Each group says in one line why it is there; a name is compared lower-cased. guard/mysql.ts
 * reads the SQL and calls the checks; this file knows nothing of the parser's tree beyond a
 * GROUP BY's shape.
 *
 * The lists hold what analytical SQL needs on either server (MySQL 8 and MariaDB 10.3+), so a
 * few names are built-ins of only one of them (MariaDB 10.11 lacks any_value, regexp_like,
 * json_storage_size and MariaDB 11's json_array_intersect, json_object_filter_keys,
 * json_object_to_array; MySQL lacks MariaDB's own). On the other, an unqualified call of such a
 * name reaches a stored function of the default database with that name (measured on MariaDB
 * 10.11: a name the server has as a built-in always reaches the built-in). So at start, and when a
 * scope's connection opens, the stored functions of the default database (and the loadable ones,
 * when the account may read mysql.func) are read (`restrictMysqlAllowList`): an allowed name one
 * of them has is no longer allowed unless database.allowed_functions lists it; then the other
 * names are probed (engines/mysql.ts `missingBuiltins`) and those the server has no built-in of
 * are dropped too (`markMysqlMissingBuiltins`), so a stored function created later cannot take
 * them. Only tightened, like PostgreSQL's (allow-postgresql.ts).
 *
 * Nothing here may write, sleep, lock, read files, reach other sessions, set session state that
 * outlives the question, or run SQL given as text.
 */

import type { CortadoError } from '../../../protocol/errors.js';
import type { Logger } from '../../../runtime/log.js';
import { deniedFunction } from './deny.js';
import { rejected } from './types.js';

export interface AllowGroup {
  /** why these are allowed (or, for the refused relations, refused), for people */
  readonly why: string;
  readonly names: readonly string[];
}

// ---- functions ------------------------------------------------------------------------------

export const MYSQL_FUNCTIONS: readonly AllowGroup[] = [
  {
    why: 'aggregates: what GROUP BY summaries are made of (GROUP_CONCAT and JSON_*AGG output is bounded by the result caps)',
    names: [
      'count', 'sum', 'avg', 'min', 'max', 'group_concat', 'json_arrayagg', 'json_objectagg', 'std', 'stddev', 'stddev_pop', 'stddev_samp',
      'variance', 'var_pop', 'var_samp', 'bit_and', 'bit_or', 'bit_xor', 'any_value', 'median', 'percentile_cont', 'percentile_disc',
    ],
  },
  {
    why: 'window functions: ranks, offsets and distributions over ordered rows',
    names: ['row_number', 'rank', 'dense_rank', 'percent_rank', 'cume_dist', 'ntile', 'lag', 'lead', 'first_value', 'last_value', 'nth_value'],
  },
  {
    why: 'arithmetic and maths on numbers',
    names: [
      'abs', 'ceil', 'ceiling', 'floor', 'round', 'truncate', 'mod', 'pow', 'power', 'sqrt', 'exp', 'ln', 'log', 'log2', 'log10', 'sign', 'pi',
      'degrees', 'radians', 'sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'atan2', 'cot', 'rand', 'conv', 'bin', 'oct', 'hex', 'unhex', 'crc32',
      'bit_count', 'format',
    ],
  },
  {
    why: 'text: building, cutting, searching, padding and comparing strings',
    names: [
      'concat', 'concat_ws', 'length', 'lengthb', 'char_length', 'character_length', 'octet_length', 'bit_length', 'lower', 'lcase', 'upper',
      'ucase', 'substring', 'substr', 'mid', 'left', 'right', 'lpad', 'rpad', 'trim', 'ltrim', 'rtrim', 'replace', 'reverse', 'repeat', 'space',
      'insert', 'instr', 'locate', 'position', 'field', 'find_in_set', 'elt', 'ascii', 'ord', 'char', 'chr', 'soundex', 'quote', 'strcmp',
      'substring_index', 'to_base64', 'from_base64', 'sformat', 'natural_sort_key', 'charset', 'collation', 'coercibility',
    ],
  },
  {
    why: 'regular expressions',
    names: ['regexp_like', 'regexp_replace', 'regexp_instr', 'regexp_substr'],
  },
  {
    why: 'hashes and identifiers: fingerprints of values, fresh UUIDs (nothing stored)',
    names: ['md5', 'sha', 'sha1', 'sha2', 'uuid', 'inet_aton', 'inet_ntoa', 'inet6_aton', 'inet6_ntoa', 'is_ipv4', 'is_ipv6'],
  },
  {
    why: 'dates and times: the clock, parts of dates, formatting, parsing and interval arithmetic',
    names: [
      'now', 'current_timestamp', 'current_date', 'current_time', 'curdate', 'curtime', 'sysdate', 'localtime', 'localtimestamp', 'utc_date',
      'utc_time', 'utc_timestamp', 'date', 'time', 'timestamp', 'year', 'month', 'day', 'dayofmonth', 'dayofweek', 'dayofyear', 'dayname',
      'monthname', 'week', 'weekday', 'weekofyear', 'yearweek', 'quarter', 'hour', 'minute', 'second', 'microsecond', 'date_format',
      'time_format', 'get_format', 'str_to_date', 'to_char', 'date_add', 'date_sub', 'adddate', 'subdate', 'addtime', 'subtime', 'add_months',
      'datediff', 'timediff', 'timestampdiff', 'timestampadd', 'from_days', 'to_days', 'to_seconds', 'from_unixtime', 'unix_timestamp',
      'makedate', 'maketime', 'period_add', 'period_diff', 'last_day', 'sec_to_time', 'time_to_sec', 'convert_tz', 'extract',
    ],
  },
  {
    why: 'JSON: reading documents, and building values in the result (nothing is stored)',
    names: [
      'json_extract', 'json_unquote', 'json_value', 'json_query', 'json_contains', 'json_contains_path', 'json_keys', 'json_length', 'json_depth',
      'json_type', 'json_valid', 'json_exists', 'json_search', 'json_overlaps', 'json_equals', 'json_array', 'json_object', 'json_quote',
      'json_array_append', 'json_array_insert', 'json_insert', 'json_replace', 'json_set', 'json_remove', 'json_merge', 'json_merge_patch',
      'json_merge_preserve', 'json_pretty', 'json_detailed', 'json_compact', 'json_loose', 'json_normalize', 'json_storage_size',
      'json_array_intersect', 'json_object_filter_keys', 'json_object_to_array',
    ],
  },
  {
    why: 'conditional expressions',
    names: ['if', 'ifnull', 'nullif', 'coalesce', 'isnull', 'greatest', 'least', 'nvl', 'nvl2', 'interval'],
  },
  {
    why: 'conversions between plain types (CAST and CONVERT check the target type too)',
    names: ['cast', 'convert', 'binary'],
  },
  {
    why: 'which database and server the query runs on (for information_schema filters and version checks)',
    names: ['database', 'schema', 'version'],
  },
];

/**
 * Functions whose value changes from one call to the next may not be in a GROUP BY (directly,
 * through a select-list alias, or by position): the server then meets a group it already made
 * and fails with "Duplicate entry '<the grouped value>'", which carries data (any column, any
 * subquery) out through the error text, the classic `FLOOR(RAND(0)*2)` exfiltration.
 */
export const VOLATILE_IN_GROUP_BY: ReadonlySet<string> = new Set(['rand', 'uuid', 'uuid_short', 'sysdate']);

/**
 * Subquery predicates and row constructors, which node-sql-parser represents as calls: allowed
 * only in that shape (a subquery argument, or a list of values), never as a call of a function
 * by that name.
 */
export const MYSQL_PSEUDO_FUNCTIONS: ReadonlySet<string> = new Set(['exists', 'not', 'all', 'any', 'some', 'row']);

// ---- operators ------------------------------------------------------------------------------

export const MYSQL_OPERATORS: readonly AllowGroup[] = [
  { why: 'arithmetic on numbers, dates and intervals', names: ['+', '-', '*', '/', '%', 'div', 'mod'] },
  { why: 'comparisons, NULL tests, ranges and lists', names: ['=', '<>', '!=', '<', '>', '<=', '>=', '<=>', 'is', 'is not', 'between', 'not between', 'in', 'not in'] },
  { why: 'boolean logic (|| is OR unless PIPES_AS_CONCAT)', names: ['and', 'or', 'xor', 'not', '!', '&&', '||'] },
  { why: 'pattern matching with LIKE and regular expressions', names: ['like', 'not like', 'regexp', 'not regexp', 'rlike', 'not rlike', 'sounds like'] },
  { why: 'bit arithmetic on integers', names: ['&', '|', '^', '~', '<<', '>>'] },
  { why: 'JSON path access and membership (MySQL 8)', names: ['->', '->>', 'member of'] },
  { why: 'tests on a subquery\'s rows', names: ['exists', 'not exists'] },
];

// ---- types ----------------------------------------------------------------------------------

/** Targets of CAST(x AS type) and CONVERT(x, type), as written before any `(n)`. */
export const MYSQL_CAST_TYPES: readonly AllowGroup[] = [
  { why: 'numbers: integers, exact decimals and floating point', names: ['signed', 'signed integer', 'unsigned', 'unsigned integer', 'int', 'integer', 'bigint', 'decimal', 'dec', 'numeric', 'double', 'double precision', 'float', 'real'] },
  { why: 'text and bytes (CHARACTER SET may follow)', names: ['char', 'nchar', 'varchar', 'text', 'binary'] },
  { why: 'dates, times and years', names: ['date', 'datetime', 'time', 'timestamp', 'year'] },
  { why: 'JSON documents (MySQL; LONGTEXT on MariaDB)', names: ['json'] },
];

// ---- system variables -----------------------------------------------------------------------

/**
 * `@@name`, `@@SESSION.name`, `@@LOCAL.name`, `@@GLOBAL.name`: only these. Every other system
 * variable is a server setting (paths, hosts, plugins, replication), and `@@identity`,
 * `@@last_insert_id` and `@@insert_id` are session state; user variables (`@x`) are never read.
 */
export const MYSQL_SYSTEM_VARIABLES: readonly AllowGroup[] = [
  { why: 'the server\'s version', names: ['version', 'version_comment'] },
  {
    why: 'settings that shape a query\'s result (time zone, week and date rules, precision, lengths, recursion depth)',
    names: [
      'time_zone', 'system_time_zone', 'sql_mode', 'div_precision_increment', 'default_week_format', 'lc_time_names', 'character_set_connection',
      'character_set_results', 'collation_connection', 'group_concat_max_len', 'max_recursive_iterations', 'cte_max_recursion_depth',
    ],
  },
  {
    why: 'how the question runs: read-only, isolation, timeout, autocommit',
    names: ['tx_read_only', 'transaction_read_only', 'tx_isolation', 'transaction_isolation', 'max_statement_time', 'max_execution_time', 'autocommit'],
  },
];

// ---- relations ------------------------------------------------------------------------------

/** The schemas of the server itself; the user's databases are everything else. */
export const SYSTEM_SCHEMAS: Readonly<Record<string, string>> = {
  mysql: 'the mysql schema holds accounts, password hashes, grants and server settings',
  performance_schema: 'performance_schema shows other sessions\' statements, server activity and settings',
  sys: 'the sys schema is views over performance_schema and the server\'s activity and settings',
  information_schema: 'only the tables and columns metadata of information_schema is readable',
};

/** information_schema tables a query may read: metadata of what the role can already see. */
export const INFORMATION_SCHEMA_SAFE: readonly AllowGroup[] = [
  {
    why: 'tables, columns, keys and constraints: the schema the model writes SQL against (the server shows only what the role can read)',
    names: [
      'tables', 'columns', 'key_column_usage', 'referential_constraints', 'table_constraints', 'check_constraints', 'schemata', 'views',
      'statistics', 'partitions',
    ],
  },
  {
    why: 'static facts of the server: character sets, collations and keywords',
    names: ['character_sets', 'collations', 'collation_character_set_applicability', 'keywords', 'sql_functions'],
  },
];

/** Why well-known information_schema tables are refused (any other is refused as "not in the safe set"). */
export const INFORMATION_SCHEMA_REFUSED: readonly AllowGroup[] = [
  { why: 'it shows other sessions\' statements', names: ['processlist', 'query_cache_info', 'metadata_lock_info', 'thread_pool_*', 'user_variables', 'query_response_time*'] },
  { why: 'it shows accounts, roles and grants', names: ['*_privileges', 'user_*', 'applicable_roles', 'enabled_roles', 'administrable_role_authorizations', 'role_*'] },
  { why: 'it shows server settings and status', names: ['global_*', 'session_*', 'plugins', 'all_plugins', 'engines', 'system_variables', 'optimizer_trace', 'profiling', 'spatial_ref_sys', 'disks', 'files'] },
  { why: 'InnoDB internals (buffer pool pages, locks, transactions) are server activity', names: ['innodb_*', 'tokudb_*', 'rocksdb_*', 'aria_*', 'wsrep_*', 'client_statistics', 'index_statistics', 'table_statistics'] },
  { why: 'routine, trigger and event bodies are code, not data', names: ['routines', 'triggers', 'events', 'parameters'] },
];

// ---- lookups --------------------------------------------------------------------------------

export interface AllowedName {
  name: string;
  why: string;
}

function globToRegExp(glob: string): RegExp {
  const body = glob.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*');
  return new RegExp(`^${body}$`);
}

type Lookup = (name: string) => AllowedName | undefined;

/** `globs`: a `*` in a name matches any run of characters (else it is the `*` operator). */
function lookup(groups: readonly AllowGroup[], globs = false): Lookup {
  const exact = new Map<string, string>();
  const patterns: Array<{ re: RegExp; why: string }> = [];
  for (const g of groups) {
    for (const n of g.names) {
      if (globs && n.includes('*')) patterns.push({ re: globToRegExp(n), why: g.why });
      else exact.set(n, g.why);
    }
  }
  return (name) => {
    const lower = name.toLowerCase();
    const why = exact.get(lower) ?? patterns.find((p) => p.re.test(lower))?.why;
    return why === undefined ? undefined : { name: lower, why };
  };
}

const builtinFunction: Lookup = lookup(MYSQL_FUNCTIONS);
/** On the allow-list, and no stored function of the database has the name (restrictMysqlAllowList). */
export const allowedFunction: Lookup = (name) => (shadowed.has(name.toLowerCase()) ? undefined : builtinFunction(name));
export const allowedOperator: Lookup = lookup(MYSQL_OPERATORS);
export const allowedSystemVariable: Lookup = lookup(MYSQL_SYSTEM_VARIABLES);
export const safeInformationSchemaTable: Lookup = lookup(INFORMATION_SCHEMA_SAFE);
export const refusedInformationSchemaTable: Lookup = lookup(INFORMATION_SCHEMA_REFUSED, true);
const castType = lookup(MYSQL_CAST_TYPES);

/** `CHAR(4)`, `decimal`, `SIGNED  INTEGER` → the allowed type, or undefined. */
export function allowedCastType(dataType: string): AllowedName | undefined {
  const base = dataType.replace(/\(.*$/s, '').trim().replace(/\s+/g, ' ');
  return castType(base);
}

/**
 * database.allowed_functions as a matcher: an entry `db.fn` allows calls written `db.fn(...)`,
 * an entry `fn` allows `fn(...)` however it is qualified (names compared case-insensitively).
 */
export function operatorAllowedFunctions(entries: readonly string[] | undefined): (parts: readonly string[]) => boolean {
  const qualified = new Set<string>();
  const bare = new Set<string>();
  for (const raw of entries ?? []) {
    const e = raw.trim().toLowerCase().replace(/`/g, '');
    if (!e) continue;
    if (e.includes('.')) qualified.add(e);
    else bare.add(e);
  }
  return (parts) => {
    const lower = parts.map((p) => p.toLowerCase());
    const last = lower[lower.length - 1] ?? '';
    return bare.has(last) || qualified.has(lower.join('.'));
  };
}

// ---- the checks -----------------------------------------------------------------------------

/** What the allow-lists are checked with for one query. */
export interface Policy {
  /** database.allowed_functions */
  operatorAllows: (parts: readonly string[]) => boolean;
}

/** A call by name: the deny list first (its reason), then database.allowed_functions, then the built-in allow-list. */
export function checkFunction(parts: readonly string[], quoted: boolean, policy: Policy): void {
  const written = parts.join('.');
  refuseDenied(parts[parts.length - 1]!);
  if (policy.operatorAllows(parts)) return;
  if (parts.length > 1) {
    throw notAllowedFunction(written, `the SQL calls ${written}(), a stored function (its name is qualified with a database); only built-in analytical functions and those listed in database.allowed_functions may be called`);
  }
  if (quoted) {
    throw notAllowedFunction(written, `the SQL calls \`${written}\`() with its name in backticks, which can reach a stored function instead of the built-in; write built-in function names without quotes`);
  }
  if (allowedFunction(written)) return;
  const where = shadowed.get(written.toLowerCase());
  if (where?.length === 1 && where[0] === NO_BUILTIN) {
    throw notAllowedFunction(
      written,
      `the SQL calls ${written.toLowerCase()}(), which is on the allow-list, but this server has no built-in of that name (MySQL and MariaDB differ in their built-ins), so the call could only reach a stored function of the database's own; list it in database.allowed_functions if that is intended`,
    );
  }
  if (where) {
    throw notAllowedFunction(
      written,
      `the SQL calls ${written.toLowerCase()}(), which is on the allow-list, but the database has a stored function of that name (${where.join(', ')}), which the server calls instead when it has no built-in of that name (MySQL and MariaDB differ in their built-ins); list it in database.allowed_functions if that is intended`,
    );
  }
  throw notAllowedFunction(
    written,
    `the SQL calls ${written.toLowerCase()}(), which is not on the allow-list of analytical functions (aggregates, window functions, maths, text, dates, JSON, conditionals, casts); a user-defined function trusted to only read may be listed in database.allowed_functions`,
  );
}

export function refuseDenied(name: string): void {
  const denied = deniedFunction('mysql', name);
  if (!denied) return;
  throw rejected('dangerous_function', `the SQL calls ${denied.name}(), which is not allowed: ${denied.why}`, { function: denied.name });
}

function notAllowedFunction(name: string, reason: string): CortadoError {
  return rejected('function_not_allowed', reason, { function: name.toLowerCase() });
}

export function checkOperator(operator: unknown): void {
  const op = typeof operator === 'string' ? operator.trim().replace(/\s+/g, ' ') : '';
  if (op && allowedOperator(op)) return;
  throw rejected('operator_not_allowed', `the SQL uses the operator ${op || '(unknown)'}, which is not on the allow-list of operators`, { operator: op });
}

export function checkType(dataType: unknown): void {
  const type = typeof dataType === 'string' ? dataType : '';
  if (type && allowedCastType(type)) return;
  throw rejected('type_not_allowed', `the SQL converts to the type ${type || '(unknown)'}, which is not allowed: only plain types (numbers, text, bytes, dates and times, JSON)`, { type });
}

/** `@x` (never), `@@x` / `@@SESSION.x` / `@@GLOBAL.x` (only the allow-listed ones). */
export function checkVariable(prefix: string, name: string, members: readonly string[]): void {
  if (prefix !== '@@') {
    throw rejected('function_not_allowed', `the SQL reads the user variable @${name}: variables are session state that outlives the question, so they are not allowed`, { variable: `@${name}` });
  }
  const scoped = /^(session|local|global)$/i.test(name) && members.length === 1;
  const variable = scoped ? members[0]! : members.length === 0 ? name : [name, ...members].join('.');
  if (allowedSystemVariable(variable)) return;
  throw rejected('function_not_allowed', `the SQL reads the system variable @@${variable}, a server setting that queries may not read (only the version, the session's time zone, modes and limits)`, { variable: `@@${variable}` });
}

/**
 * No RAND() (nor another value that changes per call) among the GROUP BY expressions, written
 * there, or reached through a select-list alias or a position (`GROUP BY x`, `GROUP BY 2`).
 */
export function checkGroupBy(select: Record<string, unknown>): void {
  const groupby = select.groupby as { columns?: unknown } | unknown[] | null | undefined;
  const items = Array.isArray(groupby) ? groupby : Array.isArray((groupby as { columns?: unknown } | null)?.columns) ? (groupby as { columns: unknown[] }).columns : [];
  if (items.length === 0) return;
  const columns = Array.isArray(select.columns) ? (select.columns as Array<{ expr?: unknown; as?: unknown }>) : [];
  for (const item of items) {
    const e = item as { type?: unknown; column?: unknown; value?: unknown };
    const targets: unknown[] = [item];
    if (e?.type === 'column_ref' && typeof e.column === 'string') {
      const alias = e.column.toLowerCase();
      for (const c of columns) if (typeof c.as === 'string' && c.as.toLowerCase() === alias) targets.push(c.expr);
    }
    if (e?.type === 'number' && Number.isInteger(Number(e.value))) targets.push(columns[Number(e.value) - 1]?.expr);
    for (const target of targets) {
      const volatile = findCall(target, VOLATILE_IN_GROUP_BY);
      if (volatile) {
        throw rejected(
          'function_not_allowed',
          `the SQL groups by ${volatile}(), whose value changes from call to call: MariaDB then fails with a duplicate-key error that carries the grouped values (a known way to read data through errors); group by a stable expression`,
          { function: volatile },
        );
      }
    }
  }
}

/** The first call in the subtree whose (last) name is in `names`, lower-cased. */
function findCall(node: unknown, names: ReadonlySet<string>): string | undefined {
  if (Array.isArray(node)) {
    for (const child of node) {
      const found = findCall(child, names);
      if (found) return found;
    }
    return undefined;
  }
  if (node === null || typeof node !== 'object') return undefined;
  const o = node as Record<string, unknown>;
  if (o.type === 'function' || o.type === 'aggr_func') {
    const name = o.name as { name?: Array<{ value?: unknown }> } | string | undefined;
    const last = typeof name === 'string' ? name : name?.name?.[name.name.length - 1]?.value;
    if (typeof last === 'string' && names.has(last.toLowerCase())) return last.toLowerCase();
  }
  for (const v of Object.values(o)) {
    if (v !== null && typeof v === 'object') {
      const found = findCall(v, names);
      if (found) return found;
    }
  }
  return undefined;
}

/** A relation of a system schema: only information_schema's safe set. */
export function checkRelation(db: string | undefined, table: string): void {
  if (db === undefined) return;
  const schema = db.toLowerCase();
  const why = SYSTEM_SCHEMAS[schema];
  if (why === undefined) return;
  const relation = `${db}.${table}`;
  if (schema === 'information_schema') {
    if (safeInformationSchemaTable(table)) return;
    const refused = refusedInformationSchemaTable(table);
    throw rejected('relation_not_allowed', `the SQL reads ${relation}, which is not allowed: ${refused?.why ?? 'only the tables, columns, keys and constraints metadata of information_schema is readable'}`, { relation });
  }
  throw rejected('relation_not_allowed', `the SQL reads ${relation}, which is not allowed: ${why}`, { relation });
}

// ---- the check against the database ---------------------------------------------------------

/** allowed names a stored function of the database also has → where (`shop.any_value`), or NO_BUILTIN */
const shadowed = new Map<string, string[]>();
/** the `where` of an allowed name the server has no built-in of (a later version's, or the other server's) */
export const NO_BUILTIN = '(no built-in of this server)';
/** bumped at each change, so a copy elsewhere (the guard's worker: isolated.ts) knows when it is stale */
let shadowedVersion = 0;

/** The names the check dropped, as plain data, and their version (0: the built-in list). */
export function mysqlAllowListState(): { version: number; shadowed: Map<string, string[]> } {
  return { version: shadowedVersion, shadowed };
}

/** Take over a copy made by mysqlAllowListState (in the guard's worker thread). */
export function adoptMysqlAllowListState(copy: Map<string, string[]>): void {
  shadowed.clear();
  for (const [name, where] of copy) shadowed.set(name, [...where]);
  shadowedVersion++;
}

/**
 * Tighten the allow-list with the stored functions an unqualified call can reach (engines/
 * mysql.ts `storedFunctions`): an allowed name one of them has is dropped (see the top of this
 * file). Names compared case-insensitively, as the server does. Returns what was dropped.
 */
export function restrictMysqlAllowList(rows: ReadonlyArray<{ schema: string; name: string }>): Array<{ name: string; where: string[] }> {
  for (const row of rows) {
    const name = row.name.toLowerCase();
    if (!builtinFunction(name)) continue;
    const where = shadowed.get(name) ?? [];
    const at = `${row.schema}.${row.name}`;
    if (!where.includes(at)) where.push(at);
    shadowed.set(name, where);
  }
  shadowedVersion++;
  return [...shadowed].map(([name, where]) => ({ name, where: [...where] }));
}

/** An engine that can list its stored functions (engines/mysql.ts), told without importing it. */
export function hasStoredFunctions<E extends { dialect: string }>(
  engine: E,
): engine is E & { storedFunctions(): Promise<Array<{ schema: string; name: string }>>; missingBuiltins(names: readonly string[]): Promise<string[]> } {
  const e = engine as { storedFunctions?: unknown; missingBuiltins?: unknown };
  return engine.dialect === 'mysql' && typeof e.storedFunctions === 'function' && typeof e.missingBuiltins === 'function';
}

/**
 * Drop the allowed names the server has no built-in of (engines/mysql.ts `missingBuiltins`): there
 * a call of one reaches a stored function of the default database, created now or later.
 */
export function markMysqlMissingBuiltins(names: readonly string[]): void {
  for (const name of names) {
    const lower = name.toLowerCase();
    if (builtinFunction(lower) && !shadowed.has(lower)) shadowed.set(lower, [NO_BUILTIN]);
  }
  shadowedVersion++;
}

/** Every name of the built-in function allow-list (for the probe of missing built-ins). */
export function mysqlFunctionNames(): string[] {
  return MYSQL_FUNCTIONS.flatMap((g) => g.names);
}

/**
 * The start-up check (executor actor, a scope's engine): the stored functions, then, for the
 * allowed names none of them has, which ones the server lacks (`probe`). Never throws; a check
 * that fails warns.
 */
export async function checkMysqlAllowList(
  load: () => Promise<ReadonlyArray<{ schema: string; name: string }>>,
  log: Logger,
  probe?: (names: readonly string[]) => Promise<readonly string[]>,
): Promise<void> {
  let dropped: Array<{ name: string; where: string[] }>;
  try {
    dropped = restrictMysqlAllowList(await load());
    if (probe) {
      const candidates = mysqlFunctionNames().filter((n) => !shadowed.has(n));
      const missing = await probe(candidates);
      markMysqlMissingBuiltins(missing);
      if (missing.length > 0) log.info({ missing: [...missing].sort() }, 'allowed functions this server has no built-in of: a call of one could only reach a stored function, so they are refused unless database.allowed_functions lists them');
    }
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'cannot read the stored functions of the database: one named like an allowed built-in the server lacks would be called by that name');
    return;
  }
  dropped = dropped.filter((d) => !(d.where.length === 1 && d.where[0] === NO_BUILTIN));
  if (dropped.length > 0) {
    log.warn(
      { dropped: dropped.map((d) => `${d.name} (${d.where.join(', ')})`) },
      'the SQL allow-list no longer allows these names: the database has stored functions of the same name, which the server calls when it has no built-in of that name; list a name in database.allowed_functions to allow it again',
    );
  }
}

/** Back to the built-in list (tests). */
export function resetMysqlAllowList(): void {
  shadowed.clear();
  shadowedVersion++;
}

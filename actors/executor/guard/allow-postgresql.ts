/**
 * What a PostgreSQL query may use: the functions, operators, types and system relations of
 * analytical SQL. Anything not listed here is refused by the guard (guard/postgresql.ts), with
 * its name and why; the operator trusts more with `database.allowed_functions`. Each group
 * says in one line why it is there. Names are as PostgreSQL knows them after parsing: lower
 * case, `int4` for `integer`, `timestamptz` for `timestamp with time zone`.
 *
 * Checked against the database at start (`restrictPostgresAllowList`, from the rows of the
 * executor's catalog query, engines/postgresql.ts `allowListCatalog`): a function or operator
 * outside pg_catalog (or an extension's, wherever it lives) with an allowed name shadows or
 * overloads it (for some argument types PostgreSQL would call it instead), so that name is
 * dropped from the effective list unless database.allowed_functions names it. Operators an extension defines (citext, PostGIS, hstore
 * define `=` and friends for their own types) are kept and reported: dropping `=` would refuse
 * nearly every query, and an extension's operator is reached only through a value of the
 * extension's type. The same rows give the names a call in attribute notation (`x.f`) could
 * reach, and the allowed names this server has no built-in of (a later PostgreSQL's: any_value,
 * random_normal, uuidv7 on 15), which are dropped too: on this server such a call can only reach a
 * function of the database's own, even one created after the check (issue 24, class D). The
 * effective list is module state: set at start, only ever tightened (a second database, a
 * scope's, can add to what is dropped, never take it back).
 *
 * What a list of names cannot see: calls hidden in the database's own objects — a view that
 * calls a function, a domain's CHECK, a column type's operators, casts and I/O functions, row
 * security policies. The read-only transaction, its rollback and a role that may only SELECT
 * are the defence there (docs/security.md).
 */
import { toCortadoError } from '../../../protocol/errors.js';
import type { Logger } from '../../../runtime/log.js';

export interface AllowGroup {
  /** why these are allowed, for people reading the list */
  readonly why: string;
  readonly names: readonly string[];
}

export const FUNCTION_GROUPS: readonly AllowGroup[] = [
  {
    why: 'aggregates: the core of analytics',
    names: [
      'avg', 'count', 'max', 'min', 'sum', 'bit_and', 'bit_or', 'bit_xor', 'bool_and', 'bool_or', 'every', 'string_agg', 'array_agg',
      'json_agg', 'jsonb_agg', 'json_agg_strict', 'jsonb_agg_strict', 'json_object_agg', 'jsonb_object_agg', 'json_object_agg_strict',
      'jsonb_object_agg_strict', 'json_object_agg_unique', 'jsonb_object_agg_unique', 'json_object_agg_unique_strict',
      'jsonb_object_agg_unique_strict', 'range_agg', 'range_intersect_agg', 'any_value',
    ],
  },
  {
    why: 'statistical and ordered-set aggregates: spread, correlation, regression, percentiles',
    names: [
      'corr', 'covar_pop', 'covar_samp', 'regr_avgx', 'regr_avgy', 'regr_count', 'regr_intercept', 'regr_r2', 'regr_slope', 'regr_sxx',
      'regr_sxy', 'regr_syy', 'stddev', 'stddev_pop', 'stddev_samp', 'variance', 'var_pop', 'var_samp', 'mode', 'percentile_cont', 'percentile_disc',
    ],
  },
  {
    why: 'window functions (rank and friends are hypothetical-set aggregates too)',
    names: ['row_number', 'rank', 'dense_rank', 'percent_rank', 'cume_dist', 'ntile', 'lag', 'lead', 'first_value', 'last_value', 'nth_value'],
  },
  {
    why: 'maths: pure functions of their arguments',
    names: [
      'abs', 'cbrt', 'ceil', 'ceiling', 'degrees', 'div', 'exp', 'factorial', 'floor', 'gcd', 'lcm', 'ln', 'log', 'log10', 'min_scale', 'mod', 'pi',
      'pow', 'power', 'radians', 'round', 'scale', 'sign', 'sqrt', 'trim_scale', 'trunc', 'width_bucket', 'random', 'random_normal', 'erf', 'erfc',
      'gamma', 'lgamma', 'acos', 'acosd', 'acosh', 'asin', 'asind', 'asinh', 'atan', 'atan2', 'atan2d', 'atand', 'atanh', 'cos', 'cosd', 'cosh',
      'cot', 'cotd', 'sin', 'sind', 'sinh', 'tan', 'tand', 'tanh', 'num_nonnulls', 'num_nulls', 'bit_count',
    ],
  },
  {
    why: 'strings, patterns and encodings: pure functions of their arguments',
    names: [
      'ascii', 'bit_length', 'btrim', 'casefold', 'char_length', 'character_length', 'chr', 'concat', 'concat_ws', 'format', 'initcap', 'left',
      'length', 'lower', 'lpad', 'ltrim', 'md5', 'normalize', 'is_normalized', 'octet_length', 'overlay', 'parse_ident', 'position', 'quote_ident',
      'quote_literal', 'quote_nullable', 'regexp_count', 'regexp_instr', 'regexp_like', 'regexp_match', 'regexp_matches', 'regexp_replace',
      'regexp_split_to_array', 'regexp_split_to_table', 'regexp_substr', 'repeat', 'replace', 'reverse', 'right', 'rpad', 'rtrim', 'split_part',
      'starts_with', 'string_to_array', 'string_to_table', 'strpos', 'substr', 'substring', 'to_hex', 'to_bin', 'to_oct', 'translate', 'unistr',
      'upper', 'encode', 'decode', 'convert', 'convert_from', 'convert_to', 'sha224', 'sha256', 'sha384', 'sha512', 'crc32', 'crc32c', 'get_bit',
      'get_byte', 'to_number',
    ],
  },
  {
    why: 'what the grammar turns SQL syntax into (LIKE ... ESCAPE, SIMILAR TO, COLLATION FOR)',
    names: ['like_escape', 'similar_escape', 'similar_to_escape', 'pg_collation_for'],
  },
  {
    why: 'dates, times, intervals and time zones (AT TIME ZONE is timezone(), EXTRACT is extract())',
    names: [
      'age', 'clock_timestamp', 'date_add', 'date_bin', 'date_part', 'date_subtract', 'date_trunc', 'extract', 'isfinite', 'justify_days',
      'justify_hours', 'justify_interval', 'make_date', 'make_interval', 'make_time', 'make_timestamp', 'make_timestamptz', 'now',
      'statement_timestamp', 'timeofday', 'transaction_timestamp', 'to_char', 'to_date', 'to_timestamp', 'timezone', 'overlaps', 'generate_series',
    ],
  },
  {
    why: 'JSON and JSONB: building, reading and path queries over values in the row',
    names: [
      'to_json', 'to_jsonb', 'array_to_json', 'row_to_json', 'json_build_array', 'json_build_object', 'json_object', 'jsonb_build_array',
      'jsonb_build_object', 'jsonb_object', 'json_array_elements', 'json_array_elements_text', 'json_array_length', 'json_each', 'json_each_text',
      'json_extract_path', 'json_extract_path_text', 'json_object_keys', 'json_populate_record', 'json_populate_recordset', 'json_to_record',
      'json_to_recordset', 'json_strip_nulls', 'json_typeof', 'jsonb_array_elements', 'jsonb_array_elements_text', 'jsonb_array_length',
      'jsonb_each', 'jsonb_each_text', 'jsonb_extract_path', 'jsonb_extract_path_text', 'jsonb_object_keys', 'jsonb_populate_record',
      'jsonb_populate_recordset', 'jsonb_to_record', 'jsonb_to_recordset', 'jsonb_strip_nulls', 'jsonb_typeof', 'jsonb_set', 'jsonb_set_lax',
      'jsonb_insert', 'jsonb_pretty', 'jsonb_path_exists', 'jsonb_path_match', 'jsonb_path_query', 'jsonb_path_query_array',
      'jsonb_path_query_first', 'jsonb_path_exists_tz', 'jsonb_path_match_tz', 'jsonb_path_query_tz', 'jsonb_path_query_array_tz',
      'jsonb_path_query_first_tz',
    ],
  },
  {
    why: 'arrays: building, reading and expanding them',
    names: [
      'array_append', 'array_cat', 'array_dims', 'array_fill', 'array_length', 'array_lower', 'array_ndims', 'array_position', 'array_positions',
      'array_prepend', 'array_remove', 'array_replace', 'array_reverse', 'array_sample', 'array_shuffle', 'array_sort', 'array_to_string',
      'array_upper', 'cardinality', 'trim_array', 'unnest', 'generate_subscripts',
    ],
  },
  {
    why: 'ranges and multiranges: constructors and accessors',
    names: [
      'upper_inc', 'lower_inc', 'upper_inf', 'lower_inf', 'isempty', 'range_merge', 'multirange', 'int4range', 'int8range', 'numrange', 'tsrange',
      'tstzrange', 'daterange', 'int4multirange', 'int8multirange', 'nummultirange', 'tsmultirange', 'tstzmultirange', 'datemultirange',
    ],
  },
  {
    why: 'full-text search over values in the row (ts_rewrite and ts_stat run SQL text, so they are not here; ts_headline and ts_rank only with bounded inputs: UNCANCELLABLE)',
    names: [
      'to_tsvector', 'to_tsquery', 'plainto_tsquery', 'phraseto_tsquery', 'websearch_to_tsquery', 'ts_rank', 'ts_rank_cd', 'ts_headline', 'setweight',
      'strip', 'tsvector_to_array', 'array_to_tsvector', 'numnode', 'querytree', 'ts_delete', 'ts_filter', 'tsquery_phrase', 'get_current_ts_config',
    ],
  },
  {
    why: 'network addresses: pure functions of inet/cidr/macaddr values',
    names: ['abbrev', 'broadcast', 'family', 'host', 'hostmask', 'inet_merge', 'inet_same_family', 'masklen', 'netmask', 'network', 'set_masklen', 'macaddr8_set7bit'],
  },
  {
    why: 'geometry: constructors and measures of plain geometric values',
    names: ['area', 'center', 'diameter', 'height', 'width', 'radius', 'slope', 'isclosed', 'isopen', 'npoints', 'pclose', 'popen', 'bound_box', 'box', 'circle', 'line', 'lseg', 'path', 'point', 'polygon'],
  },
  {
    why: 'UUIDs: new random ones and the parts of one',
    names: ['gen_random_uuid', 'uuid_extract_timestamp', 'uuid_extract_version', 'uuidv4', 'uuidv7'],
  },
  {
    why: 'casts written as calls (date(ts), text(n), numeric(x)) to the plain types below',
    names: [
      'bool', 'int2', 'int4', 'int8', 'float4', 'float8', 'numeric', 'money', 'text', 'varchar', 'bpchar', 'char', 'name', 'date', 'time', 'timetz',
      'timestamp', 'timestamptz', 'interval', 'cidr', 'macaddr', 'macaddr8', 'bit', 'varbit', 'bytea', 'oid',
    ],
  },
  {
    why: 'metadata of tables and values: names, types, comments, definitions and sizes, nothing of other sessions',
    names: [
      'pg_typeof', 'pg_column_size', 'pg_size_pretty', 'pg_size_bytes', 'pg_relation_size', 'pg_table_size', 'pg_indexes_size', 'pg_total_relation_size',
      'format_type', 'obj_description', 'col_description', 'pg_get_constraintdef', 'pg_get_indexdef', 'pg_get_viewdef', 'pg_get_expr',
      'current_database', 'current_schema',
    ],
  },
  {
    why: 'reads a setting, only one named in SAFE_SETTINGS by a constant (custom settings can hold secrets)',
    names: ['current_setting'],
  },
];

/**
 * Functions with a loop that does not stop when the query is cancelled (no CHECK_FOR_INTERRUPTS
 * in it, measured on PostgreSQL 15.20): statement_timeout, pg_cancel_backend and even
 * pg_terminate_backend wait until the loop ends, so a large call holds a backend, its locks and a
 * connection for minutes. The guard allows them only with inputs that bound that loop (guard/
 * postgresql.ts), else refuses them unless database.allowed_functions lists the name:
 * - ts_headline: choosing MaxFragments fragments among every match of the document loops
 *   MaxFragments × matches (MaxFragments=40000 over 40,000 matches, under 1 MB: 7.5 s past its
 *   cancel); the options must be a string constant with MaxFragments at most HEADLINE_MAX_FRAGMENTS;
 * - ts_rank: a query whose operands are joined by & or <-> ranks every pair of operands over their
 *   positions (20,000 operands: 2 s, 400 operands over a document of repeated words: 1.6 s, growing
 *   with the square); the query must be a string constant of at most RANK_MAX_QUERY_WORDS words, no
 *   prefix (`:*`, which multiplies the operands by the lexemes it matches).
 * Measured cancellable, so not here: to_tsvector, ts_rank_cd, the @@ operator, ts_headline's
 * default selection and its parsing, the regexp functions. phraseto_tsquery of a long text ignores
 * a cancel for up to ~3 s before it fails on the stack depth limit (bounded, so allowed).
 */
export const UNCANCELLABLE_WHY = 'does not stop when a query is cancelled, so a large call could hold the database for minutes';
export const HEADLINE_MAX_FRAGMENTS = 10;
export const RANK_MAX_QUERY_WORDS = 32;

/** `current_setting(name)` may read these (compared case-insensitively), named by a string constant. */
export const SAFE_SETTINGS: readonly string[] = [
  'application_name', 'datestyle', 'intervalstyle', 'timezone', 'search_path', 'server_version', 'server_version_num', 'server_encoding',
  'client_encoding', 'lc_collate', 'lc_ctype', 'lc_monetary', 'lc_numeric', 'lc_time', 'default_transaction_read_only', 'transaction_read_only',
  'transaction_isolation', 'statement_timeout', 'extra_float_digits', 'standard_conforming_strings', 'integer_datetimes', 'max_identifier_length',
];

export const OPERATOR_GROUPS: readonly AllowGroup[] = [
  { why: 'comparison', names: ['=', '<>', '<', '>', '<=', '>='] },
  { why: 'arithmetic (|/ square root, ||/ cube root, @ absolute value)', names: ['+', '-', '*', '/', '%', '^', '|/', '||/', '@'] },
  { why: 'bitwise', names: ['&', '|', '#', '~', '<<', '>>'] },
  { why: 'strings and patterns: LIKE (~~), ILIKE (~~*), regular expressions, starts-with, concatenation', names: ['||', '~~', '!~~', '~~*', '!~~*', '~*', '!~', '!~*', '^@', '~<~', '~<=~', '~>=~', '~>~'] },
  { why: 'JSON and JSONB accessors, containment, existence and path tests', names: ['->', '->>', '#>', '#>>', '@>', '<@', '?', '?|', '?&', '#-', '@?', '@@'] },
  { why: 'arrays, ranges and multiranges: overlap, adjacency, position', names: ['&&', '&<', '&>', '-|-'] },
  { why: 'full-text search: match, negation, phrase distance', names: ['@@@', '!!', '<->'] },
  { why: 'network containment', names: ['<<=', '>>='] },
  { why: 'geometry: distance, intersection, position, length, sameness', names: ['##', '@-@', '?#', '?-', '?-|', '?||', '~=', '<^', '>^', '&<|', '|&>', '<<|', '|>>'] },
];

export const TYPE_GROUPS: readonly AllowGroup[] = [
  { why: 'numbers and booleans', names: ['bool', 'int2', 'int4', 'int8', 'numeric', 'float4', 'float8', 'money', 'oid'] },
  { why: 'text and bytes', names: ['text', 'varchar', 'bpchar', 'char', 'name', 'bytea', 'bit', 'varbit', 'uuid'] },
  { why: 'dates, times and intervals', names: ['date', 'time', 'timetz', 'timestamp', 'timestamptz', 'interval'] },
  { why: 'JSON, JSONB and JSON paths', names: ['json', 'jsonb', 'jsonpath'] },
  { why: 'network addresses', names: ['inet', 'cidr', 'macaddr', 'macaddr8'] },
  { why: 'full-text search (regconfig names a text search configuration, the one reg* type that is plain data)', names: ['tsvector', 'tsquery', 'regconfig'] },
  { why: 'geometry', names: ['point', 'line', 'lseg', 'box', 'path', 'polygon', 'circle'] },
  {
    why: 'ranges and multiranges of the types above',
    names: ['int4range', 'int8range', 'numrange', 'tsrange', 'tstzrange', 'daterange', 'int4multirange', 'int8multirange', 'nummultirange', 'tsmultirange', 'tstzmultirange', 'datemultirange'],
  },
];

export interface SafeRelationGroup {
  readonly why: string;
  /** `schema.relation` */
  readonly names: readonly string[];
}

/** System relations a query may read: names of tables, columns, keys and comments, nothing else. */
export const SAFE_RELATIONS: readonly SafeRelationGroup[] = [
  {
    why: 'the SQL standard\'s metadata views: they list only what the role may use',
    names: [
      'information_schema.tables', 'information_schema.columns', 'information_schema.views', 'information_schema.schemata',
      'information_schema.table_constraints', 'information_schema.key_column_usage', 'information_schema.referential_constraints',
      'information_schema.constraint_column_usage', 'information_schema.check_constraints',
    ],
  },
  { why: 'PostgreSQL\'s views of tables, views and indexes (owners and definitions, no data)', names: ['pg_catalog.pg_tables', 'pg_catalog.pg_views', 'pg_catalog.pg_matviews', 'pg_catalog.pg_indexes'] },
  {
    why: 'the catalog tables behind \\d: names, columns, types, keys, indexes and comments, readable by every role',
    names: [
      'pg_catalog.pg_namespace', 'pg_catalog.pg_class', 'pg_catalog.pg_attribute', 'pg_catalog.pg_type', 'pg_catalog.pg_enum',
      'pg_catalog.pg_constraint', 'pg_catalog.pg_index', 'pg_catalog.pg_description',
    ],
  },
];

/** Why a system relation outside the safe set is refused, by name pattern (first match wins). */
const RELATION_REFUSALS: ReadonlyArray<{ re: RegExp; why: string }> = [
  { re: /^pg_(stat|statio)_|^pg_stat_activity$|^pg_stat_statements/, why: 'it shows statistics and other sessions\' activity, including their query text' },
  { re: /^pg_stats|^pg_statistic/, why: 'column statistics hold samples of the data of every table' },
  { re: /^pg_(authid|shadow|user|roles|auth_members|group|user_mapping|user_mappings|db_role_setting)$|^pg_foreign_server$|^user_mapping/, why: 'it holds roles, credentials or foreign-server passwords' },
  { re: /^pg_(settings|file_settings|hba_file_rules|ident_file_mappings|config)$/, why: 'it shows the server\'s settings and configuration files' },
  { re: /^pg_(locks|prepared_xacts|prepared_statements|cursors|backend_memory_contexts|shmem_allocations|wait_events)/, why: 'it shows locks and other sessions\' state' },
  { re: /^pg_(replication|publication|subscription)|^pg_(wal|xlog)|^pg_logical/, why: 'it belongs to replication' },
  { re: /^pg_largeobject/, why: 'large objects are server-side storage outside the tables' },
  { re: /^pg_proc$|^routines$|^pg_language$/, why: 'it holds the source code of functions' },
];

// ---- lookups --------------------------------------------------------------------------------

function setOf(groups: readonly AllowGroup[]): ReadonlySet<string> {
  return new Set(groups.flatMap((g) => g.names));
}

const FUNCTIONS = setOf(FUNCTION_GROUPS);
const OPERATORS = setOf(OPERATOR_GROUPS);
const TYPES = setOf(TYPE_GROUPS);
const RELATIONS: ReadonlySet<string> = new Set(SAFE_RELATIONS.flatMap((g) => g.names));
const SETTINGS: ReadonlySet<string> = new Set(SAFE_SETTINGS);

/** The schemas of the system: names in them are PostgreSQL's own. */
export function isSystemSchema(schema: string): boolean {
  const s = schema.toLowerCase();
  return s === 'pg_catalog' || s === 'information_schema' || s.startsWith('pg_');
}

export type AllowKind = 'function' | 'operator' | 'type';

interface CatalogState {
  /** allowed names dropped at start: kind:name → where the other definitions live */
  dropped: Map<string, string[]>;
  /** allowed function names this server has no built-in of (newer PostgreSQL's): a call can only reach one of the database's own */
  absent: Set<string>;
  /** names a call in attribute notation could reach, once the catalog was read */
  attributeCalls?: Set<string>;
}

const state: CatalogState = { dropped: new Map(), absent: new Set() };
/** bumped at each change, so a copy of the state elsewhere (the guard's worker: isolated.ts) knows when it is stale */
let stateVersion = 0;

/** The effective allow-list's changes, as plain data, and their version (0: the built-in list). */
export function postgresAllowListState(): { version: number } & AllowListCopy {
  return { version: stateVersion, dropped: state.dropped, absent: state.absent, ...(state.attributeCalls ? { attributeCalls: state.attributeCalls } : {}) };
}

/** What the guard's worker thread gets of the state (a structured clone). */
export interface AllowListCopy {
  dropped: Map<string, string[]>;
  absent: Set<string>;
  attributeCalls?: Set<string>;
}

/** Take over a copy made by postgresAllowListState (in the guard's worker thread). */
export function adoptPostgresAllowListState(copy: AllowListCopy): void {
  state.dropped = new Map(copy.dropped);
  state.absent = new Set(copy.absent);
  if (copy.attributeCalls) state.attributeCalls = new Set(copy.attributeCalls);
  else delete state.attributeCalls;
  stateVersion++;
}

/** Whether a built-in name is on the effective allow-list (the list, less what the catalog check dropped). */
export function builtinAllowed(kind: AllowKind, name: string): boolean {
  const list = kind === 'function' ? FUNCTIONS : kind === 'operator' ? OPERATORS : TYPES;
  return list.has(name) && !state.dropped.has(`${kind}:${name}`) && !(kind === 'function' && state.absent.has(name));
}

/** An allowed function name the server has no built-in of (it came with a later PostgreSQL), as the catalog check found. */
export function absentFromServer(name: string): boolean {
  return state.absent.has(name);
}

/** Where the definitions that made the catalog check drop this allowed name live (`public.upper`), if it did. */
export function droppedBecause(kind: AllowKind, name: string): readonly string[] | undefined {
  return state.dropped.get(`${kind}:${name}`);
}

/** `current_setting(x)` may read x. */
export function safeSetting(name: string): boolean {
  return SETTINGS.has(name.toLowerCase());
}

/** Names of PostgreSQL's administration functions, refused after a dot with or without the catalog. */
const ADMINISTRATIVE =
  /^(pg_|lo_|brin_|gin_|txid_|dblink|(query|table|cursor|schema|database)_to_xml)|^(ts_stat|ts_rewrite|set_config|current_setting|nextval|setval|currval|lastval|setseed|version|loread|lowrite|xpath|xml|regclass)$/;

/**
 * Whether `x.name` (attribute notation) might be a call the guard must refuse: a function of
 * one argument or a type of the database with that name, as the catalog check found them, or
 * a name that looks like one of PostgreSQL's own administration functions.
 */
export function attributeMayCall(name: string): boolean {
  if (builtinAllowed('function', name)) return false;
  if (state.absent.has(name)) return true; // x.any_value is any_value(x): one of the database's own on this server
  return state.attributeCalls?.has(name) === true || ADMINISTRATIVE.test(name.toLowerCase());
}

/** A system relation may be read: it is in SAFE_RELATIONS. `schema` is pg_catalog for an unqualified pg_* name. */
export function safeRelation(schema: string, name: string): boolean {
  return RELATIONS.has(`${schema.toLowerCase()}.${name}`);
}

/** Why a system relation is refused, for people. */
export function relationRefusal(name: string): string {
  const lower = name.toLowerCase();
  const rule = RELATION_REFUSALS.find((r) => r.re.test(lower));
  return rule?.why ?? 'it is a system catalog outside the small set Cortado allows (names of tables, columns, keys and comments)';
}

// ---- the check against the database ---------------------------------------------------------

/** One row of the catalog query (engines/postgresql.ts `allowListCatalog`). */
export interface CatalogRow {
  kind: 'function' | 'operator' | 'type';
  schema: string;
  name: string;
  /** a function callable with one argument (so `x.name` can call it), or a type */
  one_arg: boolean;
  /** the extension that owns it, if one does */
  extension: string | null;
}

export interface AllowListReport {
  /** allowed names no longer allowed: something outside pg_catalog has the same name */
  dropped: Array<{ kind: AllowKind; name: string; where: string[] }>;
  /** allowed operator names an extension also defines for its own types, kept */
  kept: Array<{ kind: AllowKind; name: string; where: string[] }>;
  /** allowed function names this server does not have (an older or newer PostgreSQL) */
  missing: string[];
}

/**
 * Tighten the effective allow-list with what the database holds (see the top of this file).
 * Pure apart from the module state it tightens; the report says what changed.
 */
export function restrictPostgresAllowList(rows: readonly CatalogRow[]): AllowListReport {
  const present = new Set<string>();
  const outside = new Map<string, { where: Set<string>; extensionOnly: boolean }>();
  const attributeCalls = new Set<string>(state.attributeCalls ?? []);
  for (const row of rows) {
    // PostgreSQL's own: in pg_catalog and not an extension's (one may be installed into pg_catalog)
    const core = row.schema === 'pg_catalog' && !row.extension;
    if (row.kind === 'function' && core) present.add(row.name);
    if (row.one_arg) attributeCalls.add(row.name);
    if (core) continue;
    const list = row.kind === 'function' ? FUNCTIONS : row.kind === 'operator' ? OPERATORS : undefined; // types cannot shadow: pg_catalog comes first
    if (!list?.has(row.name)) continue;
    const key = `${row.kind}:${row.name}`;
    const entry = outside.get(key) ?? { where: new Set<string>(), extensionOnly: true };
    entry.where.add(`${row.schema}.${row.name}${row.extension ? ` (extension ${row.extension})` : ''}`);
    if (!row.extension) entry.extensionOnly = false;
    outside.set(key, entry);
  }

  const report: AllowListReport = { dropped: [], kept: [], missing: [] };
  for (const [key, entry] of outside) {
    const [kind, name] = splitKey(key);
    const where = [...entry.where].sort();
    if (kind === 'operator' && entry.extensionOnly) {
      report.kept.push({ kind, name, where });
      continue;
    }
    state.dropped.set(key, where);
    report.dropped.push({ kind, name, where });
  }
  if (present.size > 0) report.missing = [...FUNCTIONS].filter((n) => !present.has(n)).sort();
  // a name this server has no built-in of is, on this server, a call of the database's own function
  // of that name, created now or later (issue 24, class D); a type's name written as a call
  // (bytea(x)) is a cast when no function has it, and is left to the check above
  for (const name of report.missing) if (!TYPES.has(name)) state.absent.add(name);
  state.attributeCalls = attributeCalls;
  stateVersion++;
  return report;
}

function splitKey(key: string): [AllowKind, string] {
  const i = key.indexOf(':');
  return [key.slice(0, i) as AllowKind, key.slice(i + 1)];
}

/**
 * The start-up check (executor actor): read the catalog, tighten the list, say what changed.
 * Never throws: a check that fails leaves the built-in list and warns.
 */
export async function checkPostgresAllowList(load: () => Promise<readonly CatalogRow[]>, log: Logger): Promise<AllowListReport | undefined> {
  let report: AllowListReport;
  try {
    report = restrictPostgresAllowList(await load());
  } catch (err) {
    const e = toCortadoError(err);
    log.warn({ code: e.code, err: e.message }, 'cannot check the SQL allow-list against pg_proc: functions of the database that overload allowed names are not detected, and x.f is judged by name only');
    return undefined;
  }
  const line = (d: { name: string; where: string[] }): string => `${d.name} (${d.where.join(', ')})`;
  if (report.dropped.length > 0) {
    log.warn(
      { dropped: report.dropped.map(line) },
      'the SQL allow-list no longer allows these names: the database has functions or operators of the same name outside pg_catalog, which PostgreSQL could call instead; list a name in database.allowed_functions to allow it again',
    );
  }
  if (report.kept.length > 0) log.info({ kept: report.kept.map(line) }, 'operators that extensions define for their own types share allowed names; they stay allowed');
  if (report.missing.length > 0) {
    log.info({ missing: report.missing }, 'allowed functions this PostgreSQL does not have (a later version\'s): a call of one could only reach a function of the database\'s own, so they are refused unless database.allowed_functions lists them');
  }
  return report;
}

/** Back to the built-in list (tests). */
export function resetPostgresAllowList(): void {
  state.dropped.clear();
  state.absent.clear();
  delete state.attributeCalls;
  stateVersion++;
}

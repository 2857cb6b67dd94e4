/**
 * The PostgreSQL guard, on the real PostgreSQL parser (libpg-query, WASM). Fails closed:
 * what does not parse does not run.
 *
 * Allowed: exactly one SelectStmt (plain SELECT, set operations, VALUES, TABLE x), with
 * CTEs, subqueries, window functions and so on. Refused anywhere in the tree: any other
 * statement (writable CTEs), SELECT INTO, FOR UPDATE/SHARE.
 *
 * And an allow-list (allow-postgresql.ts) for everything that runs code or reads the system:
 * - calls (FuncCall: plain, aggregate, window, ordered-set, in FROM and ROWS FROM, and what the
 *   grammar turns syntax into, such as AT TIME ZONE → timezone()) must name an allowed
 *   function, unqualified or as pg_catalog.f; the attribute notation `(x).f` / `alias.f`, which
 *   PostgreSQL runs as the call f(x) when f is not a column, is refused for names that are
 *   functions or types of the database and not allowed (the guard cannot know the columns);
 * - operators (in expressions, ANY/ALL, IN, LIKE, subquery comparisons, ORDER BY USING);
 * - types (casts, `type 'literal'`, column definitions of record functions, RETURNING of
 *   SQL/JSON functions): plain types only, no reg* (but regconfig), no user types or domains;
 * - relations: the user's schemas freely; system schemas (pg_catalog, information_schema,
 *   pg_toast, pg_temp...) only the documented safe set. An unqualified `pg_*` name is a system
 *   relation, because PostgreSQL searches pg_catalog first: refused unless safe, even when a
 *   table or CTE of the user has that name (an accepted false rejection);
 * - XML functions (they are syntax, not calls) and TABLESAMPLE methods but bernoulli and system;
 * - syntax newer than the database server (NEWER_SYNTAX): the parser knows PostgreSQL 18's
 *   grammar, where `json_value(...)`, `json_object()`, `merge_action()` and the like are
 *   syntax; a server older than the version that made them syntax reads the same text as a call
 *   of a function of that name, which can only be one of the database's own. On such a server
 *   (GuardLimits.serverVersion, the engine's; unknown counts as the oldest) they are checked as
 *   that call.
 * database.allowed_functions (GuardLimits.allowedFunctions) allows more: user functions,
 * operators and types the operator trusts, as `schema.name` or `name` (any schema).
 * The deny list (deny.ts) names the well-known dangerous functions, so their refusal says why.
 *
 * Locations in the parse tree and the scanner's tokens are byte offsets into the UTF-8 text,
 * so the text is cut as bytes.
 */
import { loadModule, parseSync, scanSync } from 'libpg-query';
import type { A_Const, Node, ParseResult, RawStmt, SelectStmt } from 'libpg-query';
import { CortadoError } from '../../../protocol/errors.js';
import { parserBroke } from '../../lib/sql/parsers/failure.js';
import { deniedFunction } from './deny.js';
import {
  absentFromServer,
  attributeMayCall,
  builtinAllowed,
  droppedBecause,
  isSystemSchema,
  relationRefusal,
  safeRelation,
  safeSetting,
  HEADLINE_MAX_FRAGMENTS,
  RANK_MAX_QUERY_WORDS,
  UNCANCELLABLE_WHY,
  type AllowKind,
} from './allow-postgresql.js';
import { applyLimit, type ExistingLimit } from './limit.js';
import { rejected, type DialectGuard, type GuardLimits, type GuardResult } from './types.js';

let loading: Promise<void> | undefined;
let ready = false;

/** Load the WASM parser once; every later call is free. */
export function preparePostgres(): Promise<void> {
  loading ??= loadModule().then(() => {
    ready = true;
  });
  return loading;
}

export function guardPostgres(sql: string, limits: GuardLimits): GuardResult {
  if (!ready) throw new CortadoError('INTERNAL', 'the PostgreSQL parser is not loaded (call preparePostgres first)');
  if (sql.trim() === '') throw rejected('empty', 'the SQL is empty');

  let parsed: ParseResult;
  try {
    parsed = parseSync(sql);
  } catch (err) {
    if (parserBroke(err)) throw err; // not the SQL's fault: the worker that ran this is replaced (isolated.ts)
    throw parseRejection(sql, err);
  }
  const stmts = parsed.stmts ?? [];
  const raw = stmts[0];
  if (raw === undefined) throw rejected('empty', 'the SQL holds no statement, only comments or semicolons');
  if (stmts.length > 1) {
    throw rejected('multiple_statements', `only one statement may run, and this SQL holds ${stmts.length}`, { count: stmts.length });
  }
  const [type, body] = nodeEntry(raw.stmt);
  if (type !== 'SelectStmt') {
    const statement = statementName(type);
    throw rejected('not_select', `only a SELECT query may run; this is ${statement}`, { statement });
  }
  const select = body as SelectStmt;
  const tables = inspectTree(select, limits);

  const bytes = Buffer.from(sql, 'utf8');
  const text = statementText(bytes, raw);
  const existing = existingLimit(select, bytes, text.start);
  const limited = applyLimit(text.value, existing, limits);
  limits.onParsed?.(raw.stmt);
  return { ...limited, tables };
}

export const postgresGuard: DialectGuard = { prepare: preparePostgres, guard: guardPostgres };

// ---- the tree ---------------------------------------------------------------------------

/** `{ SelectStmt: {...} }` → ['SelectStmt', {...}] */
function nodeEntry(node: Node | undefined): [string, unknown] {
  const entry = node ? Object.entries(node)[0] : undefined;
  return entry ?? ['nothing', undefined];
}

const STMT_KEY = /^[A-Z][A-Za-z]*Stmt$/;

type Json = unknown;

interface Relation {
  name: string;
  unqualified: boolean;
  location: number;
}

/**
 * What one walk found against the allow-list. Every refusal is kept until the walk ends, and
 * the one reported is the most telling: a well-known dangerous function first (its reason is
 * the clearest), else the first in the text. Statement rules (not_select, locking...) throw at
 * once: they hold whatever else the SQL holds.
 */
interface Walk {
  trusted: ReadonlySet<string>;
  /** the database server's major version; undefined: not known, judged as the oldest */
  serverVersion: number | undefined;
  refusal?: { rank: number; location: number; error: CortadoError };
}

function refuse(walk: Walk, error: CortadoError, location: number | undefined): void {
  const rank = error.details?.kind === 'dangerous_function' ? 0 : 1;
  const at = location ?? Number.MAX_SAFE_INTEGER;
  const best = walk.refusal;
  if (!best || rank < best.rank || (rank === best.rank && at < best.location)) walk.refusal = { rank, location: at, error };
}

/**
 * Walk the WHOLE tree once, refusing what may not run, and collect the relations read.
 * Generic on purpose: a node kind the rules do not know is still visited.
 */
function inspectTree(root: SelectStmt, limits: GuardLimits): string[] {
  const walk: Walk = { trusted: trustedOf(limits), serverVersion: limits.serverVersion };
  const relations: Relation[] = [];
  const cteNames = new Set<string>();
  const stack: Array<{ node: Json; inCte: boolean; depth: number }> = [{ node: root, inCte: false, depth: 0 }];

  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const { node, inCte, depth } = item;
    if (depth > MAX_TREE_DEPTH) throw tooDeep();
    if (Array.isArray(node)) {
      for (const child of node) stack.push({ node: child, inCte, depth: depth + 1 });
      continue;
    }
    if (node === null || typeof node !== 'object') continue;
    for (const [key, value] of Object.entries(node)) {
      if (value === null || typeof value !== 'object') continue;
      checkNode(key, value, inCte, walk);
      if (key === 'RangeVar') relations.push(relationOf(value as RangeVarLike));
      if (key === 'CommonTableExpr') {
        const name = (value as { ctename?: string }).ctename;
        if (name) cteNames.add(name);
      }
      stack.push({ node: value, inCte: inCte || key === 'CommonTableExpr', depth: depth + 1 });
    }
  }
  if (walk.refusal) throw walk.refusal.error;

  const seen = new Set<string>();
  const out: string[] = [];
  for (const r of relations.sort((a, b) => a.location - b.location)) {
    if (r.unqualified && cteNames.has(r.name)) continue; // a CTE, not a relation of the database
    if (seen.has(r.name)) continue;
    seen.add(r.name);
    out.push(r.name);
  }
  return out;
}

/**
 * How deep the parse tree may be: about 1,000 nested operators, calls or parentheses (each is
 * two levels). No analytical query comes near it; `SELECT 1+1+…` of 5,000 terms makes PostgreSQL
 * itself answer "stack depth limit exceeded" (PGlite, the embedded server, a broken protocol
 * state), and every later reader of the tree (lineage, the aggregate verdict) recurses on it.
 */
export const MAX_TREE_DEPTH = 2_000;

function tooDeep(): CortadoError {
  return rejected('parse', `the SQL nests its expressions more than ${MAX_TREE_DEPTH / 2} levels deep, which Cortado does not check (PostgreSQL itself gives up at a few thousand); write it with fewer nested steps, e.g. sum() over rows instead of a long chain of +`, { max_depth: MAX_TREE_DEPTH / 2 });
}

const LOCK_NAMES: Record<string, string> = {
  LCS_FORUPDATE: 'FOR UPDATE',
  LCS_FORNOKEYUPDATE: 'FOR NO KEY UPDATE',
  LCS_FORSHARE: 'FOR SHARE',
  LCS_FORKEYSHARE: 'FOR KEY SHARE',
};

/** Operator names of the A_Expr kinds whose `name` is not the operator itself. */
const BETWEEN_OPERATORS = ['>=', '<='];

/** XML is syntax, not calls: the name a person would look for. */
const XML_NAMES: Record<string, string> = {
  IS_XMLCONCAT: 'xmlconcat',
  IS_XMLELEMENT: 'xmlelement',
  IS_XMLFOREST: 'xmlforest',
  IS_XMLPARSE: 'xmlparse',
  IS_XMLPI: 'xmlpi',
  IS_XMLROOT: 'xmlroot',
  IS_XMLSERIALIZE: 'xmlserialize',
  IS_DOCUMENT: 'IS DOCUMENT',
};

/**
 * Syntax of PostgreSQL's grammar newer than some servers, by the parse tree's node: the major
 * version that made it syntax, and the function an older server calls for the same text (it is
 * an ordinary call there, `json_value(doc, path)`, resolved against the database's own
 * functions, since PostgreSQL has none of that name). Every node of the raw parse tree added
 * since PostgreSQL 15 that is written like a call; their parts (JsonValueExpr, JsonKeyValue,
 * JsonOutput, JsonTableColumn, ...) are walked as usual. `call` undefined: not a call on an
 * older server but a syntax error (IS JSON).
 */
/** The PostgreSQL grammar libpg-query has (its major version): NEWER_SYNTAX is complete up to it. A newer parser needs the table reviewed (a test says so). */
export const PARSER_GRAMMAR = 18;

interface NewerSyntax {
  since: number;
  /** the function an older server calls */
  call?: (node: { op?: string }) => string;
  /** what a person would look for, for the message of a syntax that is no call on older servers */
  written?: string;
}

const NEWER_SYNTAX: ReadonlyMap<string, NewerSyntax> = new Map(Object.entries({
  // PostgreSQL 16: the SQL/JSON constructors and IS JSON
  JsonObjectConstructor: { since: 16, call: () => 'json_object' },
  JsonArrayConstructor: { since: 16, call: () => 'json_array' },
  JsonArrayQueryConstructor: { since: 16, call: () => 'json_array' },
  JsonObjectAgg: { since: 16, call: () => 'json_objectagg' },
  JsonArrayAgg: { since: 16, call: () => 'json_arrayagg' },
  JsonIsPredicate: { since: 16, written: 'IS JSON' },
  // PostgreSQL 17: the SQL/JSON query functions, JSON_TABLE, and MERGE's merge_action()
  JsonFuncExpr: { since: 17, call: (n) => (n.op ?? 'JSON_VALUE_OP').replace(/_OP$/, '').toLowerCase() },
  JsonScalarExpr: { since: 17, call: () => 'json_scalar' },
  JsonSerializeExpr: { since: 17, call: () => 'json_serialize' },
  JsonParseExpr: { since: 17, call: () => 'json' },
  JsonTable: { since: 17, call: () => 'json_table' },
  MergeSupportFunc: { since: 17, call: () => 'merge_action' },
} satisfies Record<string, NewerSyntax>));

/** The parse tree's node kinds of NEWER_SYNTAX, with the version that made each syntax (for tests and docs). */
export function newerSyntaxNodes(): Array<{ node: string; since: number }> {
  return [...NEWER_SYNTAX].map(([node, s]) => ({ node, since: s.since }));
}

/**
 * A node of NEWER_SYNTAX on a server older than its version: checked as the call that server
 * makes of it (database.allowed_functions may allow it; a name on the built-in allow-list, such
 * as json_object, stays allowed unless the catalog check dropped it). Unknown version: the oldest.
 */
function checkNewerSyntax(syntax: NewerSyntax, node: { op?: string; location?: number; constructor?: { location?: number } }, walk: Walk): void {
  const version = walk.serverVersion;
  if (version !== undefined && version >= syntax.since) return;
  const server = version === undefined ? 'a PostgreSQL whose version Cortado could not read (taken as the oldest)' : `PostgreSQL ${version}`;
  const location = node.location ?? node.constructor?.location;
  if (!syntax.call) {
    const written = syntax.written ?? 'a syntax';
    refuse(walk, rejected('parse', `the SQL uses ${written}, which came with PostgreSQL ${syntax.since}; the database runs ${server}, which does not know it`, { syntax: written, server_version: version ?? null }), location);
    return;
  }
  const name = syntax.call(node);
  if (isTrusted(walk, undefined, name)) return;
  if (builtinAllowed('function', name)) return;
  const why = droppedBecause('function', name) ? notAllowedReason('function', name, true) : `can only be one of the database's own; ${TRUST_HINT}`;
  refuse(
    walk,
    rejected(
      'function_not_allowed',
      `the SQL calls ${name}(): the database runs ${server}, which reads ${name}(...) as a call of a function of that name (it is SQL syntax only since PostgreSQL ${syntax.since}), ` +
        `and such a function ${why}`,
      { function: name, server_version: version ?? null },
    ),
    location,
  );
}

function checkNode(key: string, value: object, inCte: boolean, walk: Walk): void {
  const newer = NEWER_SYNTAX.get(key); // a Map: a key such as `constructor` is not Object's
  if (newer) {
    // the aggregates keep their location in `constructor` (JsonAggConstructor)
    checkNewerSyntax(newer, value as { op?: string; location?: number; constructor?: { location?: number } }, walk);
    return;
  }
  if (STMT_KEY.test(key) && key !== 'SelectStmt') {
    const statement = statementName(key);
    if (inCte) {
      throw rejected('writable_cte', `a WITH query may only read; this one holds ${statement}`, { statement });
    }
    throw rejected('not_select', `only a SELECT query may run; this one holds ${statement}`, { statement });
  }
  switch (key) {
    case 'intoClause':
      throw rejected('select_into', 'SELECT ... INTO creates a table; only reading is allowed');
    case 'lockingClause': {
      if (!Array.isArray(value) || value.length === 0) return;
      const first = (value[0] as { LockingClause?: { strength?: string } }).LockingClause?.strength ?? '';
      const clause = LOCK_NAMES[first] ?? 'FOR UPDATE/SHARE';
      throw rejected('locking', `${clause} locks rows; only reading without locks is allowed`, { clause });
    }
    case 'FuncCall':
      checkCall(value as FuncCallLike, walk);
      return;
    case 'ColumnRef': {
      // `alias.f`, `alias.column.f`, `schema.table.column.f`: the last name may be the attribute
      // notation of a call f(...) (PostgreSQL reads the names before it as relations and columns)
      const v = value as { fields?: Json[]; location?: number };
      const fields = v.fields ?? [];
      const [last] = stringsOf(fields.slice(-1));
      if (fields.length > 1 && last !== undefined) checkAttribute(last, v.location, walk);
      return;
    }
    case 'A_Indirection': {
      // `(expression).f` may be the attribute notation of a call f(expression).
      for (const part of stringsOf((value as { indirection?: Json[] }).indirection)) checkAttribute(part, undefined, walk);
      return;
    }
    case 'A_Expr': {
      const v = value as { kind?: string; name?: Json[]; location?: number };
      if (v.kind?.includes('BETWEEN')) for (const op of BETWEEN_OPERATORS) checkOperator([op], v.location, walk);
      else checkOperator(stringsOf(v.name), v.location, walk);
      return;
    }
    case 'SubLink': {
      // x = ANY (SELECT ...), (a, b) < ALL (SELECT ...)
      const v = value as { operName?: Json[]; location?: number };
      if (v.operName) checkOperator(stringsOf(v.operName), v.location, walk);
      return;
    }
    case 'SortBy': {
      // ORDER BY x USING op
      const v = value as { useOp?: Json[]; location?: number };
      if (v.useOp) checkOperator(stringsOf(v.useOp), v.location, walk);
      return;
    }
    case 'typeName':
    case 'TypeName':
      checkType(value as TypeNameLike, walk);
      return;
    case 'RangeVar':
      checkRelation(value as RangeVarLike, walk);
      return;
    case 'RangeTableSample': {
      const v = value as { method?: Json[]; location?: number };
      const parts = stringsOf(v.method);
      const name = parts.at(-1) ?? '';
      const builtin = parts.length === 1 || parts.at(-2) === 'pg_catalog';
      if (!builtin || (name !== 'bernoulli' && name !== 'system')) {
        refuse(walk, rejected('function_not_allowed', `the SQL samples with TABLESAMPLE ${parts.join('.')}, and only the built-in methods bernoulli and system are allowed`, { function: parts.join('.') }), v.location);
      }
      return;
    }
    case 'XmlExpr':
    case 'XmlSerialize':
    case 'RangeTableFunc': {
      const v = value as { op?: string; location?: number };
      const name = key === 'XmlSerialize' ? 'xmlserialize' : key === 'RangeTableFunc' ? 'xmltable' : (XML_NAMES[v.op ?? ''] ?? 'an XML function');
      refuse(walk, rejected('function_not_allowed', `the SQL uses ${name}, and XML functions are not on the list of what analytical queries may use`, { function: name }), v.location);
      return;
    }
  }
}

// ---- the allow-list ---------------------------------------------------------------------------

interface FuncCallLike {
  funcname?: Json[];
  args?: Json[];
  location?: number;
}

interface TypeNameLike {
  names?: Json[];
  location?: number;
}

interface RangeVarLike {
  catalogname?: string;
  schemaname?: string;
  relname?: string;
  location?: number;
}

const NOTHING_TRUSTED: ReadonlySet<string> = new Set();
const trustedLists = new WeakMap<readonly string[], ReadonlySet<string>>();

/** database.allowed_functions, lower-cased, computed once per list. */
function trustedOf(limits: GuardLimits): ReadonlySet<string> {
  const list = limits.allowedFunctions;
  if (!list || list.length === 0) return NOTHING_TRUSTED;
  let set = trustedLists.get(list);
  if (!set) trustedLists.set(list, (set = new Set(list.map((n) => n.trim().toLowerCase()))));
  return set;
}

/** A name the operator trusts: listed as `schema.name` (the call written so), or as `name` (any schema). */
function isTrusted(walk: Walk, schema: string | undefined, name: string): boolean {
  if (walk.trusted.size === 0) return false;
  const n = name.toLowerCase();
  return walk.trusted.has(n) || (schema !== undefined && walk.trusted.has(`${schema.toLowerCase()}.${n}`));
}

/** `[schema?, name]` of a qualified name list (a leading database name is ignored, PostgreSQL allows only the current one). */
function qualified(parts: string[]): { schema: string | undefined; name: string | undefined; written: string } {
  return { schema: parts.length > 1 ? parts.at(-2) : undefined, name: parts.at(-1), written: parts.join('.') };
}

/** Unqualified, or qualified with pg_catalog exactly (a quoted "PG_CATALOG" is another schema). */
function isBuiltin(schema: string | undefined): boolean {
  return schema === undefined || schema === 'pg_catalog';
}

const TRUST_HINT = 'list it in database.allowed_functions to allow it';

function notAllowedReason(kind: AllowKind, name: string, builtin: boolean): string {
  if (builtin && kind === 'function' && absentFromServer(name)) {
    return `is on the allow-list, but this PostgreSQL has no built-in of that name (it came with a later version), so the call could only reach a function of the database's own; ${TRUST_HINT} if that is intended`;
  }
  const dropped = builtin ? droppedBecause(kind, name) : undefined;
  if (dropped) {
    return `is on the allow-list, but the database also has ${dropped.join(', ')}, which PostgreSQL could call instead for some arguments; ${TRUST_HINT} if that is intended`;
  }
  if (!builtin) return `is outside the built-in allow-list (one of the database's own); ${TRUST_HINT}`;
  const what = kind === 'function' ? 'functions' : kind === 'operator' ? 'operators' : 'types';
  return `is not on the list of ${what} analytical queries may use (one of the database's own must be listed in database.allowed_functions)`;
}

function checkCall(call: FuncCallLike, walk: Walk): void {
  const { schema, name, written } = qualified(stringsOf(call.funcname));
  if (!name) return;
  const builtin = isBuiltin(schema);
  if (builtin) {
    const denied = deniedFunction('postgresql', name);
    if (denied) {
      refuse(walk, rejected('dangerous_function', `the SQL calls ${denied.name}(), which is not allowed: ${denied.why}`, { function: denied.name }), call.location);
      return;
    }
  }
  if (isTrusted(walk, schema, name)) return;
  if (builtin && builtinAllowed('function', name)) {
    checkArguments(name, call, walk);
    return;
  }
  refuse(walk, rejected('function_not_allowed', `the SQL calls ${written}(), which ${notAllowedReason('function', name, builtin)}`, { function: written }), call.location);
}

/** The allowed functions whose arguments matter. */
function checkArguments(name: string, call: FuncCallLike, walk: Walk): void {
  if (name === 'ts_headline') return checkHeadline(call, walk);
  if (name === 'ts_rank') return checkRank(call, walk);
  if (name !== 'current_setting') return;
  const [first, second, ...more] = call.args ?? [];
  const setting = (first as { A_Const?: { sval?: { sval?: string } } } | undefined)?.A_Const?.sval?.sval;
  const flagOk = second === undefined || (second as { A_Const?: unknown }).A_Const !== undefined;
  if (setting !== undefined && safeSetting(setting) && flagOk && more.length === 0) return;
  const what = setting === undefined ? 'a setting named by an expression' : `the setting ${setting}`;
  refuse(walk, rejected('function_not_allowed', `the SQL reads ${what} with current_setting(), which may only read a few harmless settings named by a string constant (TimeZone, DateStyle, search_path, ...)`, { function: 'current_setting' }), call.location);
}

/** A string constant, bare or cast (`'x'`, `'x'::text`), else undefined. */
function stringConstant(node: Json): string | undefined {
  const n = node as { A_Const?: { sval?: { sval?: string } }; TypeCast?: { arg?: Json } } | undefined;
  if (n?.A_Const) return n.A_Const.sval?.sval;
  if (n?.TypeCast) return stringConstant(n.TypeCast.arg);
  return undefined;
}

const TSQUERY_BUILDERS = new Set(['to_tsquery', 'plainto_tsquery', 'phraseto_tsquery', 'websearch_to_tsquery']);

/** The text of a tsquery written as a constant (`'a & b'`, `'a & b'::tsquery`, `to_tsquery('english', 'a & b')`), else undefined. */
function constantQueryText(node: Json): string | undefined {
  const n = node as { A_Const?: unknown; TypeCast?: { arg?: Json; typeName?: TypeNameLike }; FuncCall?: FuncCallLike } | undefined;
  if (n?.A_Const) return stringConstant(n);
  if (n?.TypeCast) {
    const type = stringsOf(n.TypeCast.typeName?.names).at(-1);
    return type === 'tsquery' ? stringConstant(n.TypeCast.arg) : undefined;
  }
  if (n?.FuncCall) {
    const { schema, name } = qualified(stringsOf(n.FuncCall.funcname));
    if (!isBuiltin(schema) || !name || !TSQUERY_BUILDERS.has(name)) return undefined;
    const texts = (n.FuncCall.args ?? []).map(stringConstant);
    if (texts.length === 0 || texts.some((x) => x === undefined)) return undefined;
    return texts.at(-1);
  }
  return undefined;
}

function refuseUncancellable(call: FuncCallLike, walk: Walk, name: string, allowed: string, instead: string): void {
  refuse(
    walk,
    rejected('function_not_allowed', `the SQL calls ${name}() with ${allowed}: ${name} ${UNCANCELLABLE_WHY}; ${instead}, or ${TRUST_HINT} if its inputs are always small`, { function: name, reason: 'uncancellable' }),
    call.location,
  );
}

/**
 * ts_headline(...[, options]): MaxFragments bounds a loop that ignores cancellation
 * (allow-postgresql.ts UNCANCELLABLE). The options are the last argument of four, or of three
 * when that one is not a tsquery (`ts_headline(config, doc, query)`): a string constant whose
 * MaxFragments, if any, is a plain number of at most HEADLINE_MAX_FRAGMENTS. Anything else — an
 * expression, a column, a quoted or escaped key, another notation of the number — is refused.
 */
function checkHeadline(call: FuncCallLike, walk: Walk): void {
  const args = call.args ?? [];
  const what = `options that are not a constant with MaxFragments at most ${HEADLINE_MAX_FRAGMENTS}`;
  const instead = `write its options as a constant with MaxFragments at most ${HEADLINE_MAX_FRAGMENTS}`;
  if (args.some((a) => (a as { NamedArgExpr?: unknown }).NamedArgExpr !== undefined)) return refuseUncancellable(call, walk, 'ts_headline', 'named arguments', instead);
  const last = args.at(-1);
  // three arguments: (config, doc, query) or (doc, query, options); a first argument that is a
  // configuration's name is the former, or else a document of one word (nothing to loop over)
  const config = args.length === 3 ? stringConstant(args[0]) : undefined;
  const namesConfig = config !== undefined && /^[A-Za-z_][\w.]{0,62}$/.test(config);
  if (args.length < 3 || (args.length === 3 && (namesConfig || isTsquery(last)))) return;
  const options = stringConstant(last);
  if (options === undefined || !boundedFragments(options)) refuseUncancellable(call, walk, 'ts_headline', what, instead);
}

/** A tsquery by its form (to_tsquery(x) of any argument, x::tsquery): the third argument of ts_headline(config, doc, query). */
function isTsquery(node: Json): boolean {
  const n = node as { FuncCall?: FuncCallLike; TypeCast?: { typeName?: TypeNameLike } } | undefined;
  if (n?.TypeCast) return stringsOf(n.TypeCast.typeName?.names).at(-1) === 'tsquery';
  if (!n?.FuncCall) return false;
  const { schema, name } = qualified(stringsOf(n.FuncCall.funcname));
  return isBuiltin(schema) && name !== undefined && TSQUERY_BUILDERS.has(name);
}

/** Every MaxFragments of a headline options string is a plain number up to the bound (PostgreSQL 16+ also reads 0x.., 1_000). */
function boundedFragments(options: string): boolean {
  if (/["\\]/.test(options)) return !/maxfragments/i.test(options.replace(/["\\]/g, ''));
  const re = /maxfragments/gi;
  for (let m = re.exec(options); m !== null; m = re.exec(options)) {
    const value = /^\s*=\s*\+?(\d+)\s*(?:,|$)/.exec(options.slice(m.index + m[0].length));
    if (!value || Number(value[1]) > HEADLINE_MAX_FRAGMENTS) return false;
  }
  return true;
}

/**
 * ts_rank(...): a query of operands joined by & or <-> ranks every pair of them in a loop that
 * ignores cancellation (allow-postgresql.ts UNCANCELLABLE); the query must be a constant of at
 * most RANK_MAX_QUERY_WORDS words without a prefix match. ts_rank has one tsquery parameter, so
 * an argument written as a tsquery constant is that parameter (the others cannot take one).
 */
function checkRank(call: FuncCallLike, walk: Walk): void {
  const texts = (call.args ?? []).map(constantQueryText).filter((x): x is string => x !== undefined);
  const bounded = texts.some((q) => !q.includes('*') && (q.match(/[\p{L}\p{N}_]+/gu) ?? []).length <= RANK_MAX_QUERY_WORDS);
  if (!bounded) {
    refuseUncancellable(
      call, walk, 'ts_rank', `a query that is not written in the call as a constant of at most ${RANK_MAX_QUERY_WORDS} words without :* prefixes`,
      "write the query in the call (ts_rank(v, to_tsquery('english', 'cat & dog'))), use ts_rank_cd",
    );
  }
}

function checkAttribute(name: string, location: number | undefined, walk: Walk): void {
  const denied = deniedFunction('postgresql', name);
  if (denied) {
    refuse(walk, rejected('dangerous_function', `the SQL calls ${denied.name}() through the attribute notation, which is not allowed: ${denied.why}`, { function: denied.name }), location);
    return;
  }
  if (!attributeMayCall(name) || isTrusted(walk, undefined, name)) return;
  refuse(
    walk,
    rejected('function_not_allowed', `the SQL names ${name} after a dot (x.${name}), which PostgreSQL runs as the call ${name}(x) when x has no column ${name}, and ${name} is a function or type that is not on the allow-list; if it is a column, name it without the function's name or ${TRUST_HINT}`, { function: name }),
    location,
  );
}

function checkOperator(parts: string[], location: number | undefined, walk: Walk): void {
  const { schema, name, written } = qualified(parts);
  if (!name) return;
  const builtin = isBuiltin(schema);
  if (builtin && builtinAllowed('operator', name)) return;
  if (isTrusted(walk, schema, name)) return;
  refuse(walk, rejected('operator_not_allowed', `the SQL uses the operator ${written}, which ${notAllowedReason('operator', name, builtin)}`, { operator: written }), location);
}

function checkType(type: TypeNameLike, walk: Walk): void {
  const { schema, name, written } = qualified(stringsOf(type.names));
  if (!name) return;
  const builtin = isBuiltin(schema);
  if (builtin && builtinAllowed('type', name)) return;
  if (isTrusted(walk, schema, name)) return;
  const why = builtin
    ? 'is not one of the plain types queries may use (numbers, text, dates and times, JSON, network, geometry, ranges, arrays of them): ' +
      'reg* types look up system objects, and a domain or type of the database\'s own runs its code (one must be listed in database.allowed_functions)'
    : `is a type of the database's own (a domain's CHECK or a type's functions run code); ${TRUST_HINT}`;
  refuse(walk, rejected('type_not_allowed', `the SQL uses the type ${written}, which ${why}`, { type: written }), type.location);
}

function checkRelation(rv: RangeVarLike, walk: Walk): void {
  const name = rv.relname;
  if (!name) return;
  const schema = rv.schemaname || undefined;
  if (schema !== undefined) {
    if (!isSystemSchema(schema) || safeRelation(schema, name)) return;
  } else {
    // pg_catalog is searched first: an unqualified pg_* name is the system's
    if (!name.toLowerCase().startsWith('pg_') || safeRelation('pg_catalog', name)) return;
  }
  const written = schema ? `${schema}.${name}` : name;
  refuse(walk, rejected('relation_not_allowed', `the SQL reads ${written}, which is not allowed: ${relationRefusal(name)}`, { relation: written }), rv.location);
}

/** The `sval` of each `{ String: { sval } }` item of a list (other items are skipped). */
function stringsOf(list: Json[] | undefined): string[] {
  const out: string[] = [];
  for (const item of list ?? []) {
    const s = (item as { String?: { sval?: string } } | null)?.String?.sval;
    if (typeof s === 'string') out.push(s);
  }
  return out;
}

function relationOf(rv: RangeVarLike): Relation {
  const parts = [rv.catalogname, rv.schemaname, rv.relname].filter((p): p is string => typeof p === 'string' && p !== '');
  return { name: parts.join('.'), unqualified: parts.length === 1, location: rv.location ?? 0 };
}

/** `CreateTableAsStmt` → `CREATE TABLE AS`, for messages. */
const STATEMENT_NAMES: Record<string, string> = {
  InsertStmt: 'INSERT',
  UpdateStmt: 'UPDATE',
  DeleteStmt: 'DELETE',
  MergeStmt: 'MERGE',
  CopyStmt: 'COPY',
  ExplainStmt: 'EXPLAIN',
  VariableSetStmt: 'SET',
  VariableShowStmt: 'SHOW',
  DoStmt: 'DO',
  CallStmt: 'CALL',
  CreateTableAsStmt: 'CREATE ... AS',
  CreateStmt: 'CREATE TABLE',
  ViewStmt: 'CREATE VIEW',
  IndexStmt: 'CREATE INDEX',
  CreateFunctionStmt: 'CREATE FUNCTION',
  CreateSeqStmt: 'CREATE SEQUENCE',
  DropStmt: 'DROP',
  TruncateStmt: 'TRUNCATE',
  AlterTableStmt: 'ALTER TABLE',
  GrantStmt: 'GRANT/REVOKE',
  GrantRoleStmt: 'GRANT/REVOKE',
  TransactionStmt: 'a transaction command',
  LockStmt: 'LOCK',
  VacuumStmt: 'VACUUM/ANALYZE',
  RefreshMatViewStmt: 'REFRESH MATERIALIZED VIEW',
  NotifyStmt: 'NOTIFY',
  ListenStmt: 'LISTEN',
  PrepareStmt: 'PREPARE',
  ExecuteStmt: 'EXECUTE',
  DeclareCursorStmt: 'DECLARE CURSOR',
  FetchStmt: 'FETCH',
};

function statementName(key: string): string {
  const known = STATEMENT_NAMES[key];
  if (known) return known;
  // AlterRoleStmt → ALTER ROLE
  return key.replace(/Stmt$/, '').replace(/([a-z])([A-Z])/g, '$1 $2').toUpperCase();
}

// ---- the text -----------------------------------------------------------------------------

/**
 * The statement's own text: from its first token to its end, without the semicolon and what
 * follows it. `start` is its byte offset in the whole SQL.
 */
function statementText(bytes: Buffer, raw: RawStmt): { value: string; start: number } {
  const start = raw.stmt_location ?? 0;
  const end = raw.stmt_len ? start + raw.stmt_len : bytes.length; // stmt_len 0: up to the end
  const value = bytes.subarray(start, end).toString('utf8').trimEnd();
  return { value, start };
}

/** What LIMIT the top-level statement has, and where its number sits in the statement text. */
function existingLimit(select: SelectStmt, bytes: Buffer, stmtStart: number): ExistingLimit {
  const count = select.limitCount;
  if (count === undefined) return { kind: 'none' }; // also OFFSET without LIMIT
  if (select.limitOption === 'LIMIT_OPTION_WITH_TIES') return { kind: 'other' }; // ties may exceed any count
  const [type, body] = nodeEntry(count);
  if (type !== 'A_Const') return { kind: 'other' };
  const value = integerOf(body as A_Const);
  if (value === undefined) return { kind: 'other' };

  const location = (body as A_Const).location ?? -1;
  const token = location >= 0 ? numberTokenAt(bytes, location) : undefined;
  if (!token) {
    // FETCH FIRST ROWS ONLY has an implicit 1 with no place in the text: nothing to edit
    return value === 1 ? { kind: 'constant', value, start: 0, end: 0 } : { kind: 'other' };
  }
  const statement = bytes.subarray(stmtStart);
  return {
    kind: 'constant',
    value,
    start: charIndex(statement, token.start - stmtStart),
    end: charIndex(statement, token.end - stmtStart),
  };
}

/** A non-negative integer constant (large ones come as Float with digits only), else undefined. */
function integerOf(c: A_Const): number | undefined {
  if (c.isnull) return undefined; // LIMIT ALL / LIMIT NULL
  if (c.ival !== undefined) {
    const v = c.ival.ival ?? 0; // the tree omits zero values
    return v >= 0 ? v : undefined;
  }
  if (c.fval?.fval !== undefined && /^\d+$/.test(c.fval.fval)) return Number(c.fval.fval);
  return undefined;
}

/** The scanner's integer token that starts at this byte offset. */
function numberTokenAt(bytes: Buffer, location: number): { start: number; end: number } | undefined {
  const tokens = scanSync(bytes.toString('utf8')).tokens;
  const token = tokens.find((t) => t.start === location);
  if (!token || (token.tokenName !== 'ICONST' && token.tokenName !== 'FCONST')) return undefined;
  return { start: token.start, end: token.end };
}

function charIndex(bytes: Buffer, byteOffset: number): number {
  return bytes.subarray(0, byteOffset).toString('utf8').length;
}

function parseRejection(sql: string, err: unknown): CortadoError {
  const e = err as { message?: string; sqlDetails?: { message?: string; cursorPosition?: number } };
  const message = e.sqlDetails?.message ?? e.message ?? 'unknown parser error';
  const extra: Record<string, unknown> = {};
  const cursor = e.sqlDetails?.cursorPosition;
  let where = '';
  if (typeof cursor === 'number' && cursor >= 0) {
    // the parser counts characters (code points) from 0; people count from 1
    const position = Array.from(sql).slice(0, cursor).join('').length + 1;
    extra.position = position;
    where = ` (at character ${position})`;
  }
  return rejected('parse', `the SQL does not parse as PostgreSQL: ${message}${where}`, extra);
}

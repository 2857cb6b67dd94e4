/**
 * The MySQL / MariaDB guard, on node-sql-parser (its MySQL grammar, else its MariaDB grammar),
 * behind a small lexer that follows MySQL's own rules. Fails closed: what does not parse does
 * not run, and what the parser shows is checked against allow-lists (guard/allow-mysql.ts).
 *
 * Why a lexer of our own: MySQL runs code the parser would take for a comment. `/*! ... *\/`
 * and `/*M! ... *\/` are executed by the server, `/*+ ... *\/` hints change limits, and `--x`
 * (no space after the dashes) is two minus signs to MySQL but a comment to node-sql-parser.
 * So the lexer refuses executable comments, hints and `--` without a space, and hands the
 * parser the text with every real comment blanked out (same length, so positions stay).
 * The lexer also splits statements (a `;` inside a string or comment does not count) and finds
 * the LIMIT clause in the text: node-sql-parser gives no positions.
 *
 * Allowed: exactly one SELECT (with UNION / INTERSECT / EXCEPT, WITH / WITH RECURSIVE,
 * subqueries, window functions) whose every function, operator, cast type, system variable and
 * system relation is on an allow-list: built-in functions that analytics needs, or the names in
 * database.allowed_functions (stored and user-defined functions are refused otherwise); the
 * user's databases, and of information_schema only its tables-and-columns metadata (never
 * mysql, performance_schema, sys, PROCESSLIST, privileges, settings). Refused anywhere in the
 * tree: any other statement, SELECT ... INTO (OUTFILE, DUMPFILE, variables), locking reads
 * (FOR UPDATE, FOR SHARE, LOCK IN SHARE MODE), user variables read or assigned (`@x := ...`
 * changes the pooled session), and an expression form the walk does not know. The tree is
 * walked generically (every object and array), so a node kind these rules do not name is still
 * visited; the function checks run once more on the tokens (every name followed by `(`), in
 * case the parser represents a call in a shape the walk does not know.
 *
 * The session it runs in is made to lex like this file (engines/mysql.ts clears ANSI_QUOTES
 * and NO_BACKSLASH_ESCAPES from sql_mode): backslash escapes in strings, `"` quotes strings.
 */
import { createRequire } from 'node:module';
import type { AST, Parser as ParserType } from 'node-sql-parser';
import { CortadoError } from '../../../protocol/errors.js';
import {
  MYSQL_PSEUDO_FUNCTIONS,
  SYSTEM_SCHEMAS,
  allowedCastType,
  allowedFunction,
  checkFunction,
  checkGroupBy,
  checkOperator,
  checkRelation,
  checkType,
  checkVariable,
  operatorAllowedFunctions,
  refuseDenied,
  type Policy,
} from './allow-mysql.js';
import { splitStatements, SqlLexError } from '../../lib/sql/lexer/index.js';
import { lexMysql, type MysqlLexed, type MysqlToken } from '../../lib/sql/lexer/mysql.js';
import { deniedFunction } from './deny.js';
import { applyLimit, type ExistingLimit } from './limit.js';
import { rejected, type DialectGuard, type GuardLimits, type GuardResult } from './types.js';

// ---- the parsers ----------------------------------------------------------------------------

interface Grammar {
  name: 'MySQL' | 'MariaDB';
  parser: ParserType;
}

let grammars: Grammar[] | undefined;

type ParserModule = { Parser: new () => ParserType };

/** Load both grammars once (the per-dialect builds, a fraction of the all-dialects bundle). */
export async function prepareMysql(): Promise<void> {
  if (grammars) return;
  // CommonJS bundles: required, not imported, so their exports need no static analysis
  const require = createRequire(import.meta.url);
  const mysql = require('node-sql-parser/build/mysql.js') as ParserModule;
  const mariadb = require('node-sql-parser/build/mariadb.js') as ParserModule;
  grammars = [
    { name: 'MySQL', parser: new mysql.Parser() },
    { name: 'MariaDB', parser: new mariadb.Parser() },
  ];
}

export function guardMysql(sql: string, limits: GuardLimits): GuardResult {
  if (!grammars) throw new CortadoError('INTERNAL', 'the MySQL parser is not loaded (call prepareMysql first)');
  if (sql.trim() === '') throw rejected('empty', 'the SQL is empty');

  const lexed = lex(sql);
  const statements = splitStatements(lexed.tokens, (t) => t.kind === 'punct' && t.text === ';');
  if (statements.length === 0) throw rejected('empty', 'the SQL holds no statement, only comments or semicolons');
  if (statements.length > 1) {
    throw rejected('multiple_statements', `only one statement may run, and this SQL holds ${statements.length}`, { count: statements.length });
  }
  const tokens = statements[0]!;
  refuseOtherStatements(tokens);

  const policy: Policy = { operatorAllows: operatorAllowedFunctions(limits.allowedFunctions) };
  const root = parseOne(lexed.code, tokens);
  if (root.type !== 'select') {
    const statement = statementName(root);
    throw rejected('not_select', `only a SELECT query may run; this is ${statement}`, { statement });
  }
  const facts = inspectTree(root, policy);
  inspectTokens(tokens, facts.declared);
  inspectCalls(tokens, policy, facts.declared);
  const tables = facts.tables;

  const start = tokens[0]!.start;
  const end = statementEnd(sql, lexed.tokens, tokens);
  const statement = sql.slice(start, end).trimEnd();
  const existing = existingLimit(root, tokens, start);
  return { ...applyLimit(statement, existing, limits), tables };
}

export const mysqlGuard: DialectGuard = { prepare: prepareMysql, guard: guardMysql };

/**
 * Parse the blanked text: MySQL's grammar first, MariaDB's when that fails. One statement
 * (the lexer already counted) but the parser counts again, in case it splits differently.
 */
function parseOne(code: string, tokens: Token[]): SelectLike {
  let firstError: unknown;
  for (const g of grammars!) {
    let ast: AST | AST[];
    try {
      ast = g.parser.astify(code, { database: g.name });
    } catch (err) {
      firstError ??= err;
      continue;
    }
    const list = (Array.isArray(ast) ? ast : [ast]).filter((s) => s !== null && s !== undefined);
    if (list.length === 0) throw rejected('empty', 'the SQL holds no statement, only comments or semicolons');
    if (list.length > 1) {
      throw rejected('multiple_statements', `only one statement may run, and this SQL holds ${list.length}`, { count: list.length });
    }
    return list[0] as unknown as SelectLike;
  }
  // Name what is recognisable even in SQL the grammars cannot read (FOR SHARE, INTO OUTFILE...)
  inspectTokens(tokens);
  throw parseRejection(code, firstError);
}

function parseRejection(code: string, err: unknown): CortadoError {
  const e = err as { message?: string; location?: { start?: { offset?: number; line?: number; column?: number } } };
  const raw = (e?.message ?? 'unknown parser error').split('\n')[0] ?? '';
  // peggy lists every token it expected: keep what was found
  const found = / but (.+) found\.?$/.exec(raw);
  const message = found ? `unexpected ${found[1]}` : raw.length > 200 ? `${raw.slice(0, 200)}...` : raw;
  const offset = e?.location?.start?.offset;
  const extra: Record<string, unknown> = {};
  let where = '';
  if (typeof offset === 'number' && offset >= 0) {
    extra.position = offset + 1;
    // what MySQL itself would quote: the text from there on (comments already blanked)
    const near = code.slice(offset).replace(/\s+/g, ' ').trim();
    const quoted = near === '' ? '' : ` near '${near.length > 40 ? `${near.slice(0, 40)}...` : near}'`;
    where = `${quoted} (at character ${offset + 1})`;
  }
  return rejected('parse', `the SQL does not parse as MySQL: ${message}${where}`, extra);
}

// ---- the lexer ------------------------------------------------------------------------------

type Token = MysqlToken;

/** MySQL's tokens and the SQL without its comments (lib/sql/lexer/mysql.ts); throws SQL_REJECTED (kind parse) on what it will not read. */
export function lex(sql: string): MysqlLexed {
  try {
    return lexMysql(sql);
  } catch (err) {
    if (err instanceof SqlLexError) throw rejected('parse', err.message, err.details);
    throw err;
  }
}

/** The end of the statement's text: its semicolon, else the end of the SQL (trailing comments kept). */
function statementEnd(sql: string, all: Token[], statement: Token[]): number {
  const last = statement[statement.length - 1]!;
  const semicolon = all.find((t) => t.start >= last.end && t.kind === 'punct' && t.text === ';');
  return semicolon ? semicolon.start : sql.length;
}

// ---- token checks ---------------------------------------------------------------------------

/**
 * Statements MySQL has and the grammars may not (HANDLER, DO, KILL, XA...), refused by their
 * first word so the reason names them. A query starts with SELECT, WITH or `(`; any other
 * start is left to the parser, which refuses it.
 */
const OTHER_STATEMENTS = new Set([
  'ALTER', 'ANALYZE', 'BACKUP', 'BEGIN', 'BINLOG', 'CACHE', 'CALL', 'CHANGE', 'CHECK', 'CHECKSUM', 'CLONE', 'COMMIT', 'CREATE',
  'DEALLOCATE', 'DELETE', 'DESC', 'DESCRIBE', 'DO', 'DROP', 'EXECUTE', 'EXPLAIN', 'FLUSH', 'GET', 'GRANT', 'HANDLER', 'HELP', 'IMPORT',
  'INSERT', 'INSTALL', 'KILL', 'LOAD', 'LOCK', 'OPTIMIZE', 'PREPARE', 'PURGE', 'RELEASE', 'RENAME', 'REPAIR', 'REPLACE', 'RESET',
  'RESIGNAL', 'RESTART', 'REVOKE', 'ROLLBACK', 'SAVEPOINT', 'SET', 'SHOW', 'SHUTDOWN', 'SIGNAL', 'START', 'STOP', 'TRUNCATE',
  'UNINSTALL', 'UNLOCK', 'UPDATE', 'USE', 'XA',
]);

function refuseOtherStatements(tokens: Token[]): void {
  const first = tokens[0]!;
  if (first.kind !== 'word' || !OTHER_STATEMENTS.has(first.upper)) return;
  const second = tokens[1]?.kind === 'word' ? ` ${tokens[1].upper}` : '';
  const statement = ['LOAD', 'LOCK', 'UNLOCK', 'CREATE', 'DROP', 'ALTER', 'START', 'SHOW'].includes(first.upper) ? `${first.upper}${second}` : first.upper;
  throw rejected('not_select', `only a SELECT query may run; this is ${statement}`, { statement });
}

/**
 * Checks on the code tokens, whatever the tree says (and when the grammars cannot read the SQL,
 * to name what is recognisable): denied functions (a name, then `(`), sequences
 * (`NEXT VALUE FOR`), variables (`@x`, `@@x`), locking clauses and SELECT ... INTO a file or
 * variable. FOR and INTO are reserved words in MySQL, so these sequences cannot be identifiers
 * unless quoted (and quoted ones are `quoted`). `@` appears in MySQL code only before a variable.
 */
function inspectTokens(tokens: Token[], declared: ReadonlySet<string> = new Set()): void {
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k]!;
    const next = tokens[k + 1];
    if ((t.kind === 'word' || t.kind === 'quoted') && next?.text === '(') {
      refuseDenied(t.kind === 'quoted' ? unquote(t.text) : t.text);
    }
    // `mysql.user`, `performance_schema`.`threads`: a system relation, however the parser read it
    // (a name the statement declares, like an alias `sys`, is not a schema)
    if ((t.kind === 'word' || t.kind === 'quoted') && next?.kind === 'punct' && next.text === '.') {
      const schema = t.kind === 'quoted' ? unquote(t.text) : t.text;
      const name = tokens[k + 2];
      if (SYSTEM_SCHEMAS[schema.toLowerCase()] !== undefined && !declared.has(schema.toLowerCase()) && name && (name.kind === 'word' || name.kind === 'quoted') && tokens[k + 3]?.text !== '(') {
        checkRelation(schema, name.kind === 'quoted' ? unquote(name.text) : name.text);
      }
    }
    if (t.kind === 'punct' && t.text === '@') {
      k = checkVariableTokens(tokens, k);
      continue;
    }
    if (t.kind !== 'word') continue;
    const after = (m: number) => (tokens[k + m]?.kind === 'word' ? tokens[k + m]!.upper : '');
    if ((t.upper === 'NEXT' || t.upper === 'PREVIOUS') && after(1) === 'VALUE' && after(2) === 'FOR') {
      const denied = deniedFunction('mysql', t.upper === 'NEXT' ? 'nextval' : 'lastval')!;
      throw rejected('dangerous_function', `${t.upper} VALUE FOR reads a sequence, which is not allowed: ${denied.why}`, { function: denied.name });
    }
    if (t.upper === 'FOR' && (after(1) === 'UPDATE' || after(1) === 'SHARE')) {
      throw lockingRejection(`FOR ${after(1)}`);
    }
    if (t.upper === 'LOCK' && after(1) === 'IN' && after(2) === 'SHARE' && after(3) === 'MODE') {
      throw lockingRejection('LOCK IN SHARE MODE');
    }
    if (t.upper === 'INTO' && (after(1) === 'OUTFILE' || after(1) === 'DUMPFILE' || tokens[k + 1]?.text === '@')) {
      throw intoRejection(after(1) || 'a variable');
    }
  }
}

/** `@x`, `@'x'`, `@@x`, `@@SESSION.x` from the `@` at `at`: refused unless an allowed system variable; returns the last token used. */
function checkVariableTokens(tokens: Token[], at: number): number {
  const word = (m: number) => {
    const t = tokens[m];
    return t && (t.kind === 'word' || t.kind === 'quoted' || t.kind === 'string') ? (t.kind === 'word' ? t.text : unquote(t.text)) : undefined;
  };
  if (tokens[at + 1]?.text !== '@' || tokens[at + 1]?.kind !== 'punct') {
    checkVariable('@', word(at + 1) ?? '', []);
    return at + 1;
  }
  const first = word(at + 2) ?? '';
  if (tokens[at + 3]?.text === '.' && /^(session|local|global)$/i.test(first)) {
    checkVariable('@@', first, [word(at + 4) ?? '']);
    return at + 4;
  }
  checkVariable('@@', first, []);
  return at + 2;
}

/**
 * Words that may stand before `(` without being a call: MySQL reserved words cannot name a
 * stored function unless quoted, and these are the ones a query puts before a parenthesis.
 */
const KEYWORDS_BEFORE_PARENTHESIS: ReadonlySet<string> = new Set([
  'AGAINST', 'AND', 'AS', 'BETWEEN', 'BY', 'CASE', 'CROSS', 'DISTINCT', 'DISTINCTROW', 'DIV', 'ELSE', 'EXCEPT', 'FROM', 'GROUP', 'HAVING',
  'IN', 'INDEX', 'INTERSECT', 'IS', 'JOIN', 'KEY', 'LATERAL', 'LIKE', 'MATCH', 'MINUS', 'NOT', 'ON', 'OR', 'ORDER', 'OVER', 'PARTITION',
  'REGEXP', 'RLIKE', 'SELECT', 'STRAIGHT_JOIN', 'THEN', 'UNION', 'USING', 'VALUES', 'WHEN', 'WHERE', 'WINDOW', 'WITH', 'XOR', 'ALL', 'EXISTS',
]);

/** Types written with a length after AS (CAST) or a comma (CONVERT): `DECIMAL(10,2)`, `DATETIME(6)`. */
const TYPE_BEFORE_PARENTHESIS: ReadonlySet<string> = new Set(['AS', ',']);

/**
 * The allow-list once more, on the tokens: every name followed by `(` must be an allowed
 * function, a keyword, a type after AS, or a name the statement itself declares (a CTE, an
 * alias with a column list). The tree walk has already named what it saw; this catches a call
 * the parser represents in a shape the walk does not know.
 */
function inspectCalls(tokens: Token[], policy: Policy, declared: ReadonlySet<string>): void {
  for (let k = 0; k + 1 < tokens.length; k++) {
    const t = tokens[k]!;
    if (tokens[k + 1]!.text !== '(' || (t.kind !== 'word' && t.kind !== 'quoted')) continue;
    const name = t.kind === 'quoted' ? unquote(t.text) : t.text;
    const dotted = tokens[k - 1]?.kind === 'punct' && tokens[k - 1]!.text === '.';
    const parts = dotted && tokens[k - 2] ? [tokens[k - 2]!.kind === 'quoted' ? unquote(tokens[k - 2]!.text) : tokens[k - 2]!.text, name] : [name];
    if (policy.operatorAllows(parts)) continue;
    if (!dotted && declared.has(name.toLowerCase())) continue;
    if (!dotted && t.kind === 'word') {
      if (KEYWORDS_BEFORE_PARENTHESIS.has(t.upper)) continue;
      if (allowedFunction(name) || MYSQL_PSEUDO_FUNCTIONS.has(name.toLowerCase())) continue;
      const before = tokens[k - 1];
      if (before && TYPE_BEFORE_PARENTHESIS.has(before.upper) && allowedCastType(name)) continue;
    }
    checkFunction(parts, t.kind === 'quoted', policy);
  }
}

function unquote(quoted: string): string {
  const q = quoted[0]!;
  return quoted.slice(1, -1).split(q + q).join(q);
}

// ---- the tree -------------------------------------------------------------------------------

/** What the walk reads of a SELECT node; everything else is visited generically. */
interface SelectLike {
  type: string;
  keyword?: string;
  limit?: LimitNode | null;
  _limit?: LimitNode | null;
  _next?: SelectLike | null;
  parentheses_symbol?: boolean;
  [key: string]: unknown;
}

interface LimitNode {
  seperator?: string;
  value?: Array<{ type?: string; value?: unknown }>;
}

/** Statement types node-sql-parser produces that are not a query, for messages. */
const STATEMENT_NAMES: Record<string, string> = {
  insert: 'INSERT',
  replace: 'REPLACE',
  update: 'UPDATE',
  delete: 'DELETE',
  create: 'CREATE',
  drop: 'DROP',
  alter: 'ALTER',
  truncate: 'TRUNCATE',
  rename: 'RENAME',
  use: 'USE',
  call: 'CALL',
  set: 'SET',
  lock: 'LOCK TABLES',
  unlock: 'UNLOCK TABLES',
  transaction: 'a transaction command',
  grant: 'GRANT',
  revoke: 'REVOKE',
  show: 'SHOW',
  explain: 'EXPLAIN',
  desc: 'DESCRIBE',
  load_data: 'LOAD DATA',
  exec: 'EXECUTE',
  declare: 'DECLARE',
  analyze: 'ANALYZE',
  deallocate: 'DEALLOCATE',
  prepare: 'PREPARE',
  handler: 'HANDLER',
  do: 'DO',
  kill: 'KILL',
  flush: 'FLUSH',
};

/** Statement types that are never the type of an expression: refused wherever they are. */
const WRITE_TYPES: ReadonlySet<string> = new Set([
  'insert', 'replace', 'update', 'delete', 'create', 'drop', 'alter', 'truncate', 'rename', 'call', 'load_data', 'grant', 'revoke',
]);

/**
 * Node types of a query that need no check of their own: literals, column references, lists,
 * CASE parts, window and sort specifications, and the keyword nodes the grammar keeps as text.
 * Their children are still walked. Any other type is refused: what the guard does not know, it
 * cannot check.
 */
const PLAIN_NODES: ReadonlySet<string> = new Set([
  'select', 'column_ref', 'star', 'number', 'bigint', 'bool', 'null', 'single_quote_string', 'double_quote_string', 'natural_string',
  'hex_string', 'full_hex_string', 'bit_string', 'backticks_quote_string', 'date', 'time', 'timestamp', 'datetime', 'expr_list', 'case',
  'when', 'else', 'interval', 'extract', 'collate', 'window', 'origin', 'default', 'ESCAPE', 'ASC', 'DESC', 'dual', 'values',
  'fulltext_search',
]);

function statementName(node: SelectLike): string {
  const known = STATEMENT_NAMES[node.type];
  const base = known ?? String(node.type ?? 'an unknown statement').toUpperCase();
  if ((node.type === 'create' || node.type === 'drop') && typeof node.keyword === 'string') return `${base} ${node.keyword.toUpperCase()}`;
  return base;
}

interface TreeFacts {
  /** relations the statement reads, as written, CTE names left out */
  tables: string[];
  /** names the statement declares that may stand before `(`: CTEs, aliases, tables (lower-cased) */
  declared: Set<string>;
}

/**
 * Walk the WHOLE tree once, refusing what may not run, and collect the relations read
 * (in the order the walk meets them, CTE names left out). Generic on purpose.
 */
function inspectTree(root: SelectLike, policy: Policy): TreeFacts {
  const relations: Array<{ name: string; qualified: boolean }> = [];
  const cteNames = new Set<string>();
  const declared = new Set<string>();
  const visit = (node: unknown, key: string): void => {
    if (Array.isArray(node)) {
      for (const child of node) visit(child, key);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    const o = node as Record<string, unknown>;
    checkNode(o, key);
    checkExpression(o, key, policy);
    if (o.type === 'select') checkGroupBy(o);
    if (key === 'with' && o.name && typeof (o.name as { value?: unknown }).value === 'string') {
      const cte = ((o.name as { value: string }).value).toLowerCase();
      cteNames.add(cte);
      declared.add(cte);
    }
    // a relation: in FROM, in a JOIN, and in parenthesised joins (`FROM (a JOIN b)`, under `expr`):
    // wherever it is, a table reference is the untyped node with a `table` name
    if (key === 'from' && typeof o.as === 'string') declared.add(o.as.toLowerCase());
    if (o.type === undefined && ((o.table !== undefined && o.table !== null && typeof o.table !== 'string') || (o.db !== undefined && o.db !== null && typeof o.db !== 'string'))) {
      throw rejected('parse', 'the guard cannot read the name of a relation this SQL reads, so it does not run', { form: 'relation' });
    }
    if (o.type === undefined && typeof o.table === 'string') {
      const db = typeof o.db === 'string' && o.db !== '' ? o.db : undefined;
      checkRelation(db, o.table);
      if (typeof o.as === 'string') declared.add(o.as.toLowerCase());
      declared.add(o.table.toLowerCase());
      relations.push({ name: db ? `${db}.${o.table}` : o.table, qualified: db !== undefined });
    }
    for (const [k, v] of Object.entries(o)) {
      if (v !== null && typeof v === 'object') visit(v, k);
    }
  };
  visit(root, '');

  const seen = new Set<string>();
  const tables: string[] = [];
  for (const r of relations) {
    if (!r.qualified && cteNames.has(r.name.toLowerCase())) continue;
    if (seen.has(r.name)) continue;
    seen.add(r.name);
    tables.push(r.name);
  }
  return { tables, declared };
}

/** The rules on statements: nothing but queries, no INTO, no locks, no assignments. */
function checkNode(o: Record<string, unknown>, key: string): void {
  const type = typeof o.type === 'string' ? o.type : undefined;
  // a statement where a query belongs (a subquery, a CTE body, a UNION branch)
  if ((key === 'ast' || key === '_next') && type !== 'select') {
    const statement = statementName(o as SelectLike);
    throw rejected('not_select', `only a SELECT query may run; this one holds ${statement}`, { statement });
  }
  if (type !== undefined && WRITE_TYPES.has(type)) {
    const statement = statementName(o as SelectLike);
    throw rejected('not_select', `only a SELECT query may run; this one holds ${statement}`, { statement });
  }
  if (key === 'into' && (o.keyword || o.expr || o.position)) {
    const target = typeof o.keyword === 'string' ? (o.keyword.toLowerCase() === 'var' ? 'a variable' : o.keyword.toUpperCase()) : 'a target';
    throw intoRejection(target);
  }
  if (o.locking_read) throw lockingRejection(String(o.locking_read).toUpperCase());
  if (type === 'assign' || (typeof o.symbol === 'string' && o.symbol === ':=') || o.operator === ':=') {
    throw rejected('not_select', 'the SQL assigns a user variable (@x := ...), which changes the session; only reading is allowed', { statement: 'assignment' });
  }
}

/** The allow-lists on one node: calls, operators, cast types, variables; other node types must be plain. */
function checkExpression(o: Record<string, unknown>, key: string, policy: Policy): void {
  const type = typeof o.type === 'string' ? o.type : undefined;
  if (type === undefined) {
    // a call in a shape without a type would still have a name and arguments
    if ('args' in o && 'name' in o) checkCall(o, policy);
    return;
  }
  switch (type) {
    case 'function':
    case 'aggr_func':
      checkCall(o, policy);
      return;
    case 'binary_expr':
    case 'unary_expr':
      checkOperator(o.operator);
      return;
    case 'cast':
      for (const target of Array.isArray(o.target) ? o.target : [o.target]) checkType((target as { dataType?: unknown } | undefined)?.dataType);
      return;
    case 'datatype':
      checkType(o.dataType);
      return;
    case 'var':
      checkVariable(String(o.prefix ?? '@'), String(o.name ?? ''), Array.isArray(o.members) ? o.members.map(String) : []);
      return;
  }
  if (PLAIN_NODES.has(type)) return;
  throw rejected('parse', `the guard cannot check this form of expression (${type}${key ? ` in ${key}` : ''}), so it does not run`, { form: type });
}

/** A call node: its name as parts (`[db, fn]` or `[fn]`), whether quoted, and the checks. */
function checkCall(o: Record<string, unknown>, policy: Policy): void {
  const name = o.name;
  let parts: string[] = [];
  let quoted = false;
  if (typeof name === 'string') {
    parts = [name];
  } else if (name && typeof name === 'object') {
    const n = name as { name?: unknown; schema?: unknown; value?: unknown };
    const schema = n.schema as { value?: unknown; type?: unknown } | undefined;
    if (schema && typeof schema.value === 'string') parts.push(schema.value);
    if (Array.isArray(n.name)) {
      for (const p of n.name as Array<{ value?: unknown; type?: unknown }>) {
        if (typeof p?.value === 'string') parts.push(p.value);
        if (p?.type === 'backticks_quote_string') quoted = true;
      }
    } else if (typeof n.value === 'string') {
      parts.push(n.value);
    }
  }
  if (parts.length === 0) throw rejected('parse', 'the guard cannot read the name of a function this SQL calls, so it does not run', { form: 'function' });
  const last = parts[parts.length - 1]!.toLowerCase();
  if (!quoted && parts.length === 1 && MYSQL_PSEUDO_FUNCTIONS.has(last) && pseudoShape(last, o.args)) return;
  checkFunction(parts, quoted, policy);
}

/** EXISTS / ALL / ANY / SOME take one subquery; NOT and ROW take expressions (both are reserved words). */
function pseudoShape(name: string, args: unknown): boolean {
  if (name === 'not' || name === 'row') return true;
  const list = (args as { value?: unknown } | undefined)?.value;
  return Array.isArray(list) && list.length === 1 && typeof list[0] === 'object' && list[0] !== null && 'ast' in list[0];
}

function lockingRejection(clause: string): CortadoError {
  return rejected('locking', `${clause} locks rows; only reading without locks is allowed`, { clause });
}

function intoRejection(target: string): CortadoError {
  const what = target === 'OUTFILE' || target === 'DUMPFILE' ? `writes a file on the database server (INTO ${target})` : `stores the result into ${target === 'a variable' ? 'a variable' : target}`;
  return rejected('select_into', `SELECT ... INTO ${what}; only reading is allowed`, { target });
}

// ---- the LIMIT ------------------------------------------------------------------------------

/**
 * The LIMIT that bounds the whole result, from the tree: a plain SELECT's own; after a UNION,
 * the last branch's when it is not in parentheses (MySQL applies it to the whole UNION), or the
 * one after the parentheses (`_limit`).
 */
function topLimit(root: SelectLike): LimitNode | undefined {
  const has = (l: LimitNode | null | undefined): l is LimitNode => !!l && Array.isArray(l.value) && l.value.length > 0;
  if (has(root._limit)) return root._limit;
  if (root._next) {
    let last = root._next;
    while (last._next) last = last._next;
    if (has(last._limit)) return last._limit;
    return last.parentheses_symbol ? undefined : has(last.limit) ? last.limit : undefined;
  }
  return has(root.limit) ? root.limit : undefined;
}

/** The row count of a LIMIT node: `LIMIT n`, `LIMIT offset, n`, `LIMIT n OFFSET m`. */
function countNode(limit: LimitNode): { type?: string; value?: unknown } | undefined {
  const values = limit.value ?? [];
  const sep = (limit.seperator ?? '').toLowerCase();
  if (sep === ',') return values[1];
  return values[0];
}

/**
 * What LIMIT the statement has, and where its row count sits in the statement text. The tree
 * says what it is; the tokens say where: the last LIMIT at the outermost level (inside the
 * parentheses when the whole statement is one parenthesised query), which must be followed by
 * exactly the tree's numbers and nothing else. Whenever the two do not agree: `other`, so the
 * statement is wrapped rather than edited at a guessed place.
 */
function existingLimit(root: SelectLike, tokens: Token[], stmtStart: number): ExistingLimit {
  const limit = topLimit(root);
  const level = outermost(tokens);
  let at = -1;
  for (let k = level.length - 1; k >= 0; k--) {
    if (level[k]!.kind === 'word' && level[k]!.upper === 'LIMIT') {
      at = k;
      break;
    }
  }
  if (!limit) return at < 0 ? { kind: 'none' } : { kind: 'other' };
  if (at < 0) return { kind: 'other' };

  const count = countNode(limit);
  const value = integerOf(count);
  if (value === undefined) return { kind: 'other' };
  const rest = level.slice(at + 1);
  const isNumber = (t: Token | undefined) => t?.kind === 'word' && /^\d+$/.test(t.text);
  const sep = (limit.seperator ?? '').toLowerCase();
  let countToken: Token | undefined;
  if (sep === '' && rest.length === 1 && isNumber(rest[0])) countToken = rest[0];
  else if (sep === ',' && rest.length === 3 && isNumber(rest[0]) && rest[1]?.text === ',' && isNumber(rest[2])) countToken = rest[2];
  else if (sep === 'offset' && rest.length === 3 && isNumber(rest[0]) && rest[1]?.upper === 'OFFSET' && isNumber(rest[2])) countToken = rest[0];
  if (!countToken || BigInt(countToken.text) !== BigInt(value.text)) return { kind: 'other' };
  return { kind: 'constant', value: value.number, start: countToken.start - stmtStart, end: countToken.end - stmtStart };
}

/** A non-negative integer constant of the tree, as text and as a number (huge ones: Infinity-safe). */
function integerOf(node: { type?: string; value?: unknown } | undefined): { text: string; number: number } | undefined {
  if (!node) return undefined;
  if ((node.type === 'number' || node.type === 'bigint') && /^\d+$/.test(String(node.value))) {
    const text = String(node.value);
    return { text, number: Number(text) };
  }
  return undefined;
}

/** The tokens at the outermost parenthesis level; inside the parentheses when they wrap everything. */
function outermost(tokens: Token[]): Token[] {
  let list = tokens;
  while (list.length >= 2 && list[0]!.text === '(' && list[0]!.kind === 'punct' && matching(list, 0) === list.length - 1) {
    list = list.slice(1, -1);
  }
  const out: Token[] = [];
  let depth = 0;
  for (const t of list) {
    if (t.kind === 'punct' && t.text === '(') depth++;
    else if (t.kind === 'punct' && t.text === ')') depth--;
    else if (depth === 0) out.push(t);
  }
  return out;
}

function matching(tokens: Token[], open: number): number {
  let depth = 0;
  for (let k = open; k < tokens.length; k++) {
    const t = tokens[k]!;
    if (t.kind !== 'punct') continue;
    if (t.text === '(') depth++;
    else if (t.text === ')' && --depth === 0) return k;
  }
  return -1;
}

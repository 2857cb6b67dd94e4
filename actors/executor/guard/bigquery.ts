/**
 * The BigQuery (GoogleSQL) guard: a tokenizer, a few structural rules and allow-lists, not a
 * full parser.
 *
 * Why not a parser: node-sql-parser's `bigquery` build (the only GoogleSQL parser for Node at
 * hand) refuses everyday BigQuery analytics (`QUALIFY`, `ARRAY_AGG(x ORDER BY y LIMIT 3)`,
 * `TABLESAMPLE`), and a guard that fails closed on those would refuse good questions daily.
 * GoogleSQL makes a lexical guard sound where a SQL dialect with writable CTEs would not:
 * a query statement cannot contain another statement (no DML in WITH or subqueries, no
 * SELECT INTO), so "one statement that starts like a query" plus the lexical rules below is
 * the whole question. The engine's dry run (statementType must be SELECT) checks it again.
 *
 * The tokenizer knows GoogleSQL's lexical structure and fails closed on anything else:
 * strings ('…', "…", '''…''', """…""", with r/b/rb/br prefixes; a backslash always takes the
 * next character, raw strings included), `backtick` identifiers (the only escapes taken in
 * them are \` and \\: any other could spell a name the lists below would not recognise), #,
 * -- and /* *\/ comments, numbers, @params, and the operators GoogleSQL has. Any other
 * character outside a string or quoted identifier (non-ASCII, `$`, `{`, `?`, `%`, a lone `!`)
 * is refused, as are unterminated strings or comments and unbalanced brackets.
 *
 * Rules, in order:
 * - exactly one statement (empty statements from extra semicolons are ignored);
 * - no `#legacySQL` comment (legacy SQL has other lexical rules) and no pipe syntax (`|>`);
 * - it starts with SELECT, WITH or `(` leading to those; a WITH clause is read structurally
 *   (`name AS (…)`, …) and what follows it must be a query too;
 * - unquoted INTO, CREATE, MERGE and SET are refused anywhere (reserved words that only
 *   statements use); a statement keyword (INSERT, DELETE, DECLARE, EXECUTE, …) right after
 *   `(` and followed by what would continue a statement is refused as a hidden statement;
 * - every call — a name or dotted path followed by `(`, anywhere (select list, FROM,
 *   subqueries), however quoted — is checked: first against the deny list (deny.ts; every
 *   dotted suffix, so `SAFE.x`, `` `region-us`.x `` and `ml.generate_text` are all seen),
 *   then against the allow-list of GoogleSQL's analytical built-ins (allow-bigquery.ts;
 *   `SAFE.` before a listed one is fine) or database.allowed_functions. A dotted call that is
 *   not a built-in namespace (NET., HLL_COUNT., …) is a persistent function in a dataset: a
 *   user function can do anything (a remote function sends rows to a Cloud Function), so it
 *   runs only when listed. Reserved words before `(` (`IN (`, `OVER (`, `EXISTS (`) and a few
 *   clause words (`GROUPING SETS (`, `TABLESAMPLE SYSTEM (`, `PIVOT (`, `WEEK(MONDAY)`) are
 *   syntax, not calls. Table functions other than UNNEST (ML.*, VECTOR_SEARCH, APPENDS,
 *   CHANGES, a dataset's table functions) are calls like any other, so not on the list;
 * - the type of every CAST and SAFE_CAST, and every ARRAY<…>, STRUCT<…> and RANGE<…>, must be
 *   made of GoogleSQL's plain types;
 * - relations: any dataset (BigQuery's IAM decides); a path through INFORMATION_SCHEMA only to
 *   the table and column metadata views (allow-bigquery.ts: never JOBS*, SESSIONS*,
 *   OBJECT_PRIVILEGES, ROUTINES, reservations, …), wherever the path is; the legacy
 *   `__TABLES__` meta-tables not at all;
 * - LIMIT: the only LIMIT at bracket depth 0 is the statement's own (a set operation's LIMIT
 *   applies to the whole); an integer there is kept or clamped, anything else is wrapped.
 *
 * What it cannot see: a view's body (a view may call a remote function; BigQuery runs it with
 * the view's rights), and what a listed user function does.
 *
 * `tables` is best effort: paths after FROM, JOIN and commas of a FROM list, without CTE
 * names, table functions, UNNEST and array paths that start with an alias.
 */
import { lexBigQuery, type BigQueryLexed, type BigQueryToken } from '../../lib/sql/lexer/bigquery.js';
import { charPosition, splitStatements, SqlLexError } from '../../lib/sql/lexer/index.js';
import { deniedFunction } from './deny.js';
import {
  ALLOWED_FUNCTIONS, ALLOWED_INFORMATION_SCHEMA, ALLOWED_TYPES, BIGQUERY_INFORMATION_SCHEMA, BIGQUERY_NAMESPACES, BIGQUERY_NOT_ALLOWED,
  PARAMETERISED_TYPES, informationSchemaWhy,
} from './allow-bigquery.js';
import { applyLimit, type ExistingLimit } from './limit.js';
import { rejected, type DialectGuard, type GuardLimits, type GuardResult, type RejectKind } from './types.js';

// ---- tokens -------------------------------------------------------------------------------

type Token = BigQueryToken;
type Lexed = BigQueryLexed;

function parseError(message: string, at: number): never {
  throw new SqlLexError(message, at);
}

/** The rejection for a SqlLexError, its position in characters (code points) from 1. */
function asRejection(sql: string, err: unknown): unknown {
  if (!(err instanceof SqlLexError)) return err;
  const position = charPosition(sql, err.at);
  return rejected('parse', `the SQL cannot be read as GoogleSQL: ${err.message} (at character ${position})`, { position });
}

/** GoogleSQL's tokens and comments; throws SQL_REJECTED (kind parse) on what it cannot read. */
export function tokenize(sql: string): Lexed {
  try {
    return lexBigQuery(sql);
  } catch (err) {
    throw asRejection(sql, err);
  }
}

// ---- words --------------------------------------------------------------------------------

/** Reserved in GoogleSQL and used only by statements: never part of a query. */
const NEVER_IN_A_QUERY: Record<string, RejectKind> = {
  INTO: 'select_into',
  CREATE: 'not_select',
  MERGE: 'not_select',
  SET: 'not_select',
};

/** Words that start a statement that is not a query (DML, DDL, DCL, scripting, data movement). */
const STATEMENT_KEYWORDS = new Set([
  'INSERT', 'UPDATE', 'DELETE', 'MERGE', 'TRUNCATE', 'CREATE', 'DROP', 'ALTER', 'UNDROP', 'GRANT', 'REVOKE',
  'EXPORT', 'LOAD', 'DECLARE', 'SET', 'BEGIN', 'COMMIT', 'ROLLBACK', 'CALL', 'EXECUTE', 'RETURN', 'RAISE',
  'IF', 'LOOP', 'WHILE', 'REPEAT', 'FOR', 'BREAK', 'LEAVE', 'CONTINUE', 'ITERATE', 'ASSERT',
]);

/** Words after which a statement keyword is only a column name in an expression: `(begin AND x)`. */
const EXPRESSION_WORDS = new Set([
  'AND', 'OR', 'NOT', 'IS', 'IN', 'LIKE', 'BETWEEN', 'AS', 'ASC', 'DESC', 'NULLS', 'OVER', 'COLLATE', 'AT',
  'RESPECT', 'IGNORE', 'WHEN', 'THEN', 'ELSE', 'END',
]);

/** Words that follow the first keyword in a statement's name: CREATE OR REPLACE TEMP TABLE. */
const NAME_WORDS = new Set([
  'OR', 'REPLACE', 'TEMP', 'TEMPORARY', 'TABLE', 'VIEW', 'MATERIALIZED', 'FUNCTION', 'PROCEDURE', 'SCHEMA', 'SNAPSHOT',
  'EXTERNAL', 'MODEL', 'ROW', 'ACCESS', 'POLICY', 'SEARCH', 'VECTOR', 'INDEX', 'AGGREGATE', 'CLONE', 'DATA', 'IMMEDIATE',
  'RESERVATION', 'CAPACITY', 'ASSIGNMENT', 'ALL', 'TRANSACTION',
]);

/**
 * GoogleSQL's reserved keywords: unquoted, they cannot name a function, so `(` after one is
 * syntax (`IN (`, `OVER (`, `EXISTS (`, `UNION ALL (`). The reserved words that are also
 * built-ins (IF, CAST, EXTRACT, ARRAY, STRUCT, UNNEST, GROUPING, RANGE, COLLATE, LEFT, RIGHT)
 * are on the allow-list anyway.
 */
const RESERVED = new Set([
  'ALL', 'AND', 'ANY', 'ARRAY', 'AS', 'ASC', 'ASSERT_ROWS_MODIFIED', 'AT', 'BETWEEN', 'BY', 'CASE', 'CAST', 'COLLATE', 'CONTAINS',
  'CREATE', 'CROSS', 'CUBE', 'CURRENT', 'DEFAULT', 'DEFINE', 'DESC', 'DISTINCT', 'ELSE', 'END', 'ENUM', 'ESCAPE', 'EXCEPT', 'EXCLUDE',
  'EXISTS', 'EXTRACT', 'FALSE', 'FETCH', 'FOLLOWING', 'FOR', 'FROM', 'FULL', 'GROUP', 'GROUPING', 'GROUPS', 'HASH', 'HAVING', 'IF',
  'IGNORE', 'IN', 'INNER', 'INTERSECT', 'INTERVAL', 'INTO', 'IS', 'JOIN', 'LATERAL', 'LEFT', 'LIKE', 'LIMIT', 'LOOKUP', 'MERGE',
  'NATURAL', 'NEW', 'NO', 'NOT', 'NULL', 'NULLS', 'OF', 'ON', 'OR', 'ORDER', 'OUTER', 'OVER', 'PARTITION', 'PRECEDING', 'PROTO',
  'QUALIFY', 'RANGE', 'RECURSIVE', 'RESPECT', 'RIGHT', 'ROLLUP', 'ROWS', 'SELECT', 'SET', 'SOME', 'STRUCT', 'TABLESAMPLE', 'THEN',
  'TO', 'TREAT', 'TRUE', 'UNBOUNDED', 'UNION', 'UNNEST', 'USING', 'WHEN', 'WHERE', 'WINDOW', 'WITH', 'WITHIN',
]);

/**
 * Unreserved words whose `(` is a clause's, not a call: GROUPING SETS (…), TABLESAMPLE
 * SYSTEM (10 PERCENT) REPEATABLE (1), PIVOT (…), UNPIVOT (…), WEEK(MONDAY) as a date part,
 * AT TIME ZONE (…), SELECT AS VALUE (…), SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (…) (OPTIONS
 * of a statement never gets this far: the statement is refused first). None of them is a built-in function, and an
 * unqualified name can only be a built-in, so nothing runs through them.
 */
const CLAUSE_WORDS = new Set(['SETS', 'SYSTEM', 'REPEATABLE', 'PIVOT', 'UNPIVOT', 'WEEK', 'ZONE', 'VALUE', 'OPTIONS']);

/** Clause words that end a FROM list at their depth. */
const FROM_ENDS = new Set(['WHERE', 'GROUP', 'HAVING', 'QUALIFY', 'WINDOW', 'ORDER', 'LIMIT', 'UNION', 'INTERSECT', 'EXCEPT', 'SELECT', 'ON', 'USING']);

/** Words that can follow a table path instead of an alias. */
const NOT_AN_ALIAS = new Set([
  ...FROM_ENDS, 'JOIN', 'INNER', 'LEFT', 'RIGHT', 'FULL', 'CROSS', 'OUTER', 'NATURAL', 'FOR', 'TABLESAMPLE', 'PIVOT', 'UNPIVOT',
  'WITH', 'AS', 'OFFSET',
]);

/** Lower-case A-Z only: a name with other letters is never taken for a listed one (`ſum`, `K`). */
function asciiLower(s: string): string {
  return s.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

// ---- the guard ----------------------------------------------------------------------------

export function guardBigQuery(sql: string, limits: GuardLimits): GuardResult {
  try {
    return guardStatement(sql, limits);
  } catch (err) {
    throw asRejection(sql, err);
  }
}

function guardStatement(sql: string, limits: GuardLimits): GuardResult {
  if (sql.trim() === '') throw rejected('empty', 'the SQL is empty');
  // before lexing: legacy SQL's own syntax (`[project:dataset.table]`) would be a parse error
  if (/^\s*(#|--)\s*legacysql\b/i.test(sql)) throw legacy(sql.search(/\S/) + 1);
  const { tokens, comments } = lexBigQuery(sql);

  for (const c of comments) {
    if (/^(#|--)\s*legacysql\b/i.test(c.text)) throw legacy(c.start + 1);
  }

  const statements = splitStatements(tokens, (t) => t.type === 'op' && t.value === ';');
  const stmt = statements[0];
  if (stmt === undefined) throw rejected('empty', 'the SQL holds no statement, only comments or semicolons');
  if (statements.length > 1) {
    throw rejected('multiple_statements', `only one statement may run, and this SQL holds ${statements.length}`, { count: statements.length });
  }

  const match = matchBrackets(stmt);
  const cteRanges = checkStart(stmt, match);
  const pipe = stmt.find((t) => t.type === 'op' && t.value === '|>');
  if (pipe) parseError('the pipe syntax (|>) is not supported; write the query with SELECT', pipe.start);
  const allowed = new Set((limits.allowedFunctions ?? []).map((n) => asciiLower(n.trim().replace(/`/g, ''))));
  checkTokens(stmt, cteRanges, match, allowed);
  checkRelations(stmt);

  const first = stmt[0]!;
  const last = stmt[stmt.length - 1]!;
  const text = sql.slice(first.start, last.end);
  const limited = applyLimit(text, existingLimit(stmt, match, first.start), limits);
  return { ...limited, tables: tablesRead(stmt, cteNames(stmt, cteRanges)) };
}

function legacy(position: number): Error {
  return rejected('parse', 'the SQL asks for legacy SQL (#legacySQL); only GoogleSQL is accepted', { position });
}

export const bigqueryGuard: DialectGuard = { prepare: () => Promise.resolve(), guard: guardBigQuery };

/** index of an opening bracket → index of its closing one; refuses unbalanced brackets. */
function matchBrackets(tokens: Token[]): Map<number, number> {
  const pairs = new Map<number, number>();
  const stack: number[] = [];
  tokens.forEach((t, i) => {
    if (t.type !== 'op') return;
    if (t.value === '(' || t.value === '[') stack.push(i);
    else if (t.value === ')' || t.value === ']') {
      const open = stack.pop();
      const want = t.value === ')' ? '(' : '[';
      if (open === undefined || tokens[open]!.value !== want) parseError(`"${t.value}" closes nothing`, t.start);
      pairs.set(open, i);
    }
  });
  const unclosed = stack.pop();
  if (unclosed !== undefined) parseError(`"${tokens[unclosed]!.value}" is not closed`, tokens[unclosed]!.start);
  return pairs;
}

const isOp = (t: Token | undefined, v: string): boolean => t?.type === 'op' && t.value === v;
const isWord = (t: Token | undefined, v?: string): boolean => t?.type === 'word' && (v === undefined || t.value === v);
const isName = (t: Token | undefined): boolean => t?.type === 'word' || t?.type === 'quoted';

/** The statement's name for messages, from its first word: `CREATE OR REPLACE TABLE`, `EXPORT DATA`. */
function statementName(tokens: Token[], at: number): string {
  const words = [tokens[at]!.value];
  for (let i = at + 1; i < tokens.length && words.length < 5; i++) {
    const t = tokens[i]!;
    if (t.type !== 'word' || !NAME_WORDS.has(t.value)) break;
    words.push(t.value);
  }
  return words.join(' ');
}

/** The first token that is not an opening parenthesis, from `i`. */
function skipParens(tokens: Token[], i: number): number {
  while (isOp(tokens[i], '(')) i++;
  return i;
}

/**
 * The statement must start like a query. Returns the token ranges of the WITH clause's CTE
 * bodies (inside their parentheses), where a statement would be a writable CTE.
 */
function checkStart(tokens: Token[], match: Map<number, number>): Array<[number, number]> {
  const at = skipParens(tokens, 0);
  const first = tokens[at];
  if (!first) return parseError('the statement is only parentheses', tokens[0]!.start);
  if (isWord(first, 'SELECT')) return [];
  if (!isWord(first, 'WITH')) notAQuery(tokens, at, 'not_select');

  const ranges: Array<[number, number]> = [];
  let i = at + 1;
  if (isWord(tokens[i], 'RECURSIVE')) i++;
  for (;;) {
    if (!isName(tokens[i])) parseError('WITH must be followed by a name', (tokens[i] ?? tokens[i - 1]!).start);
    i++;
    if (!isWord(tokens[i], 'AS')) parseError('a WITH query is written `name AS (query)`', (tokens[i] ?? tokens[i - 1]!).start);
    i++;
    const close = isOp(tokens[i], '(') ? match.get(i) : undefined;
    if (close === undefined) parseError('a WITH query is written `name AS (query)`', (tokens[i] ?? tokens[i - 1]!).start);
    const body = skipParens(tokens, i + 1);
    if (!isWord(tokens[body], 'SELECT') && !isWord(tokens[body], 'WITH')) notAQuery(tokens, body, 'writable_cte');
    ranges.push([i + 1, close]);
    i = close + 1;
    if (isOp(tokens[i], ',')) {
      i++;
      continue;
    }
    break;
  }
  const main = skipParens(tokens, i);
  if (!isWord(tokens[main], 'SELECT') && !isWord(tokens[main], 'WITH')) notAQuery(tokens, main, 'not_select');
  return ranges;
}

function notAQuery(tokens: Token[], at: number, kind: 'not_select' | 'writable_cte'): never {
  const t = tokens[at];
  if (!t) return parseError('the statement ends where a query should start', tokens[tokens.length - 1]!.end);
  if (t.type === 'word' && (STATEMENT_KEYWORDS.has(t.value) || NAME_WORDS.has(t.value) || t.value === 'FROM')) {
    const statement = t.value === 'FROM' ? 'FROM (pipe syntax)' : statementName(tokens, at);
    if (kind === 'writable_cte') throw rejected('writable_cte', `a WITH query may only read; this one holds ${statement}`, { statement });
    throw rejected('not_select', `only a SELECT query may run; this is ${statement}`, { statement });
  }
  return parseError(`a query starts with SELECT, WITH or "(", not "${t.text}"`, t.start);
}

/** Rules on every token: words that only statements use, hidden statements, calls, types. */
function checkTokens(tokens: Token[], cteRanges: Array<[number, number]>, match: Map<number, number>, allowed: ReadonlySet<string>): void {
  const inCte = (i: number): boolean => cteRanges.some(([a, b]) => i >= a && i < b);
  // tokens of the types already checked: `NUMERIC(10, 2)` there is a type's parameters, not a call
  const types: Array<[number, number]> = [];
  const inType = (i: number): boolean => types.some(([a, b]) => i >= a && i < b);
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    const prev = tokens[i - 1];
    const next = tokens[i + 1];
    if (t.type === 'word' && !isOp(prev, '.')) {
      const kind = NEVER_IN_A_QUERY[t.value];
      if (kind === 'select_into') throw rejected('select_into', 'INTO writes the result somewhere; only reading is allowed');
      if (kind) {
        const statement = statementName(tokens, i);
        throw rejected(inCte(i) ? 'writable_cte' : 'not_select', `only a SELECT query may run; this one holds ${statement}`, { statement });
      }
      if (isOp(prev, '(') && STATEMENT_KEYWORDS.has(t.value) && startsStatement(next)) {
        const statement = statementName(tokens, i);
        if (inCte(i)) throw rejected('writable_cte', `a WITH query may only read; this one holds ${statement}`, { statement });
        throw rejected('not_select', `only a SELECT query may run; this one holds ${statement}`, { statement });
      }
      if ((t.value === 'ARRAY' || t.value === 'STRUCT' || t.value === 'RANGE') && (isOp(next, '<') || isOp(next, '<<'))) types.push([i, checkType(tokens, i, tokens.length)]);
    }
    // CAST, SAFE_CAST and SAFE.CAST
    if ((isWord(t, 'CAST') || isWord(t, 'SAFE_CAST')) && isOp(next, '(') && (!isOp(prev, '.') || isWord(tokens[i - 2], 'SAFE'))) {
      types.push(checkCastType(tokens, i + 1, match));
    }
    if (isOp(t, '(') && isName(prev) && !inType(i)) checkCall(tokens, i - 1, allowed);
  }
}

/** Whether the token after a statement keyword continues a statement (not an expression). */
function startsStatement(next: Token | undefined): boolean {
  if (!next) return false;
  if (next.type === 'quoted' || next.type === 'param' || next.type === 'string') return true;
  return next.type === 'word' && !EXPRESSION_WORDS.has(next.value);
}

/** The dotted name ending at `last` (words and quoted parts), split into its parts. */
function pathEndingAt(tokens: Token[], last: number): { parts: string[]; first: number } {
  let first = last;
  while (isOp(tokens[first - 1], '.') && isName(tokens[first - 2])) first -= 2;
  const parts: string[] = [];
  for (let i = first; i <= last; i += 2) {
    const t = tokens[i]!;
    if (t.type === 'quoted') parts.push(...t.value.split('.'));
    else parts.push(t.text);
  }
  return { parts, first };
}

// ---- calls --------------------------------------------------------------------------------

/**
 * A call `name(…)`: denied (deny.ts) → dangerous_function; a built-in on the allow-list, with
 * or without `SAFE.`, or a name in database.allowed_functions → fine; anything else →
 * function_not_allowed, saying whether it is a built-in left out or a user function.
 */
function checkCall(tokens: Token[], nameAt: number, allowed: ReadonlySet<string>): void {
  const t = tokens[nameAt]!;
  const { parts } = pathEndingAt(tokens, nameAt);
  if (parts.length === 1 && t.type === 'word' && (RESERVED.has(t.value) || CLAUSE_WORDS.has(t.value))) return;

  for (let k = parts.length - 1; k >= 0; k--) {
    const denied = deniedFunction('bigquery', parts.slice(k).join('.'));
    if (denied) {
      throw rejected('dangerous_function', `the SQL calls ${denied.name}(), which is not allowed: ${denied.why}`, { function: denied.name });
    }
  }

  const lower = parts.map(asciiLower);
  const name = lower.join('.');
  const bare = lower.length > 1 && lower[0] === 'safe' ? lower.slice(1) : lower;
  const bareName = bare.join('.');
  if (allowed.has(name) || allowed.has(bareName)) return;
  const namespace = bare.length === 2 ? BIGQUERY_NAMESPACES[bare[0]!] : undefined;
  if (bare.length === 1 || namespace !== undefined) {
    if (ALLOWED_FUNCTIONS.has(bareName)) return;
    const why = BIGQUERY_NOT_ALLOWED[bareName] ?? namespace ?? 'it is not one of the BigQuery built-ins Cortado allows (aggregates, window, maths, string, date, JSON, array and conditional functions)';
    throw rejected('function_not_allowed', `the SQL calls ${name}(), which is not allowed: ${why}. An operator can allow it in database.allowed_functions`, { function: name });
  }
  throw rejected(
    'function_not_allowed',
    `the SQL calls ${name}(), a user-defined function: user functions can do anything (a remote function sends rows to a service), so one runs only when database.allowed_functions lists it`,
    { function: name },
  );
}

// ---- types --------------------------------------------------------------------------------

/** The type of `CAST(x AS type [FORMAT …])` at the `(` `open`: plain types only. Returns where the type is. */
function checkCastType(tokens: Token[], open: number, match: Map<number, number>): [number, number] {
  const close = match.get(open)!;
  let as = -1;
  for (let k = open + 1; k < close; k++) {
    const inner = match.get(k);
    if (inner !== undefined) {
      k = inner;
      continue;
    }
    if (isWord(tokens[k], 'AS')) {
      as = k;
      break;
    }
  }
  const cast = tokens[open - 1]!.value;
  if (as < 0) throw rejected('type_not_allowed', `a ${cast} names its type after AS`, { type: '' });
  const after = checkType(tokens, as + 1, close);
  if (after !== close && !isWord(tokens[after], 'FORMAT')) throw notAType(tokens, as + 1, close);
  return [as + 1, after];
}

/**
 * Reads the type starting at `at` (no further than `end`) and returns the index after it;
 * refuses any part that is not a plain type. `>>` closes two brackets.
 */
function checkType(tokens: Token[], at: number, end: number): number {
  // `>>` as two `>` (and `<<` as two `<`), each half remembering the token it came from
  const view: Array<{ t: Token; index: number }> = [];
  for (let k = at; k < end; k++) {
    const t = tokens[k]!;
    const half = isOp(t, '>>') ? '>' : isOp(t, '<<') ? '<' : undefined;
    if (half) view.push({ t: { ...t, text: half, value: half }, index: k }, { t: { ...t, text: half, value: half }, index: k });
    else view.push({ t, index: k });
  }
  const fail = (): never => {
    throw notAType(tokens, at, end);
  };
  const expect = (j: number, v: string): number => (isOp(view[j]?.t, v) ? j + 1 : fail());

  const read = (j: number): number => {
    const t = view[j]?.t;
    if (t?.type !== 'word') return fail();
    const type = asciiLower(t.value);
    if (!ALLOWED_TYPES.has(type)) return fail();
    j++;
    if (type === 'array' || type === 'range') return expect(read(expect(j, '<')), '>');
    if (type === 'struct') {
      j = expect(j, '<');
      for (;;) {
        // a field name, when a type follows it: STRUCT<a INT64, b ARRAY<STRING>> or STRUCT<INT64>
        if (isName(view[j]?.t) && view[j + 1]?.t.type === 'word') j++;
        j = read(j);
        if (isOp(view[j]?.t, ',')) {
          j++;
          continue;
        }
        return expect(j, '>');
      }
    }
    if (PARAMETERISED_TYPES.has(type) && isOp(view[j]?.t, '(')) {
      j++;
      while (view[j]?.t.type === 'number' || isOp(view[j]?.t, ',')) j++;
      return expect(j, ')');
    }
    return j;
  };
  const after = read(0);
  // what follows the type (half a `>>` left over points at the `>>`, which nothing accepts)
  return after >= view.length ? end : view[after]!.index;
}

function notAType(tokens: Token[], at: number, end: number): Error {
  const shown = tokens.slice(at, Math.min(end, at + 12)).map((t) => t.text).join(' ');
  return rejected('type_not_allowed', `the SQL names the type "${shown}", which is not made of GoogleSQL's plain types (numbers, STRING, BYTES, BOOL, dates and times, JSON, GEOGRAPHY, ARRAY, STRUCT, RANGE)`, { type: shown });
}

// ---- relations ----------------------------------------------------------------------------

/**
 * Every dotted path, wherever it is: a path through INFORMATION_SCHEMA must end at one of
 * the safe views; the legacy `__TABLES__` meta-tables are refused.
 */
function checkRelations(tokens: Token[]): void {
  for (let i = 0; i < tokens.length; i++) {
    if (!isName(tokens[i]) || (isOp(tokens[i - 1], '.') && isName(tokens[i - 2]))) continue;
    let last = i;
    while (isOp(tokens[last + 1], '.') && isName(tokens[last + 2])) last += 2;
    const { parts } = pathEndingAt(tokens, last);
    const path = parts.join('.');
    parts.forEach((part, p) => {
      const upper = part.replace(/[a-z]/g, (c) => c.toUpperCase());
      if (upper === '__TABLES__' || upper === '__TABLES_SUMMARY__') {
        throw rejected('relation_not_allowed', `the SQL reads ${path}, which is not allowed: ${part} is an undocumented legacy meta-table of the system catalog; INFORMATION_SCHEMA.TABLES tells the same`, { relation: path });
      }
      if (upper !== 'INFORMATION_SCHEMA') return;
      const view = parts[p + 1];
      if (view !== undefined && p + 2 === parts.length && ALLOWED_INFORMATION_SCHEMA.has(asciiLower(view))) return;
      const why = view === undefined ? 'it names no view' : informationSchemaWhy(view);
      throw rejected('relation_not_allowed', `the SQL reads ${path}, which is not allowed: ${why}. Of the system catalog (INFORMATION_SCHEMA), only ${SAFE_VIEWS} may be read`, { relation: path });
    });
    i = last;
  }
}

const SAFE_VIEWS = BIGQUERY_INFORMATION_SCHEMA.flatMap((g) => g.names).map((n) => n.toUpperCase()).join(', ');

// ---- LIMIT and tables ---------------------------------------------------------------------

/** The LIMIT of the statement itself: the one LIMIT outside every bracket. */
function existingLimit(tokens: Token[], match: Map<number, number>, stmtStart: number): ExistingLimit {
  const atTop: number[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const close = match.get(i);
    if (close !== undefined) {
      i = close;
      continue;
    }
    if (isWord(tokens[i], 'LIMIT') && !isOp(tokens[i - 1], '.')) atTop.push(i);
  }
  if (atTop.length === 0) return { kind: 'none' };
  const at = atTop[0]!;
  if (atTop.length > 1) return { kind: 'other' };
  const count = tokens[at + 1];
  if (count?.type !== 'number' || !/^\d+$/.test(count.text)) return { kind: 'other' };
  // after the count: nothing, or OFFSET and one integer or parameter
  const rest = tokens.slice(at + 2);
  const plainOffset = rest.length === 2 && isWord(rest[0], 'OFFSET') && (rest[1]!.type === 'param' || (rest[1]!.type === 'number' && /^\d+$/.test(rest[1]!.text)));
  if (rest.length !== 0 && !plainOffset) return { kind: 'other' };
  return { kind: 'constant', value: Number(count.text), start: count.start - stmtStart, end: count.end - stmtStart };
}

/** Names the WITH clause defines (lower-cased: GoogleSQL's CTE names are case-insensitive). */
function cteNames(tokens: Token[], ranges: Array<[number, number]>): Set<string> {
  const names = new Set<string>();
  for (const [open] of ranges) {
    // `name AS (`: the name is three tokens before the body
    const t = tokens[open - 3];
    if (t && isName(t)) names.add(t.value.toLowerCase());
  }
  // nested WITHs inside subqueries define names too: `WITH x AS (` anywhere
  for (let i = 0; i + 2 < tokens.length; i++) {
    if (isName(tokens[i]) && isWord(tokens[i + 1], 'AS') && isOp(tokens[i + 2], '(')) {
      const before = tokens[i - 1];
      if (isWord(before, 'WITH') || isWord(before, 'RECURSIVE') || isOp(before, ',')) names.add(tokens[i]!.value.toLowerCase());
    }
  }
  return names;
}

/**
 * The path starting at `at` in a FROM position, as written: `a.b.c`, `` `p.d`.t ``, and a
 * project with dashes left unquoted (`my-project.shop.orders`, `region-us.INFORMATION_SCHEMA.X`),
 * which BigQuery allows there. Returns its parts and the index of its last token.
 */
function tablePathAt(tokens: Token[], at: number): { parts: string[]; last: number } {
  const parts: string[] = [];
  const adjacent = (a: Token | undefined, b: Token | undefined): boolean => a !== undefined && b !== undefined && a.end === b.start;
  let i = at;
  for (;;) {
    const t = tokens[i]!;
    let part = t.type === 'quoted' ? t.value : t.text;
    while (t.type === 'word' && isOp(tokens[i + 1], '-') && isWord(tokens[i + 2]) && adjacent(tokens[i], tokens[i + 1]) && adjacent(tokens[i + 1], tokens[i + 2])) {
      part += `-${tokens[i + 2]!.text}`;
      i += 2;
    }
    parts.push(...(t.type === 'quoted' ? part.split('.') : [part]));
    if (isOp(tokens[i + 1], '.') && isName(tokens[i + 2])) {
      i += 2;
      continue;
    }
    return { parts, last: i };
  }
}

/** Best effort: the relations a statement reads, as written, in order, without CTE names. */
function tablesRead(tokens: Token[], ctes: Set<string>): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const aliases = new Set<string>();
  const inFrom: boolean[] = [];
  // brackets opened by EXTRACT: `EXTRACT(DAY FROM ts)` reads no table
  const extract: boolean[] = [];
  let depth = 0;

  const readItem = (at: number): void => {
    const t = tokens[at];
    if (!isName(t) || isWord(t, 'UNNEST') || isWord(t, 'SELECT') || isWord(t, 'WITH')) return;
    const { parts, last } = tablePathAt(tokens, at);
    if (isOp(tokens[last + 1], '(')) return; // a table function
    const head = parts[0]!.toLowerCase();
    const alias = aliasAfter(tokens, last + 1);
    const isCte = parts.length === 1 && ctes.has(head);
    // `FROM t AS o, o.items`: an array of a row already in FROM, not a table
    const isArrayPath = parts.length > 1 && aliases.has(head);
    aliases.add((alias ?? parts[parts.length - 1]!).toLowerCase());
    if (isCte || isArrayPath) return;
    const name = parts.join('.');
    if (!seen.has(name)) {
      seen.add(name);
      out.push(name);
    }
  };

  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (isOp(t, '(') || isOp(t, '[')) {
      depth++;
      inFrom[depth] = false;
      extract[depth] = isWord(tokens[i - 1], 'EXTRACT');
      continue;
    }
    if (isOp(t, ')') || isOp(t, ']')) {
      depth = Math.max(0, depth - 1);
      continue;
    }
    if (t.type !== 'word' || isOp(tokens[i - 1], '.')) {
      if (isOp(t, ',') && inFrom[depth]) readItem(i + 1);
      continue;
    }
    if (t.value === 'FROM') {
      // `a IS DISTINCT FROM b` and `EXTRACT(part FROM x)` are expressions
      if (isWord(tokens[i - 1], 'DISTINCT') || extract[depth]) continue;
      inFrom[depth] = true;
      readItem(i + 1);
    } else if (t.value === 'JOIN') {
      inFrom[depth] = true;
      readItem(i + 1);
    } else if (FROM_ENDS.has(t.value)) {
      inFrom[depth] = false;
    }
  }
  return out;
}

function aliasAfter(tokens: Token[], at: number): string | undefined {
  let i = at;
  if (isWord(tokens[i], 'AS')) i++;
  const t = tokens[i];
  if (!t) return undefined;
  if (t.type === 'quoted') return t.value;
  if (t.type === 'word' && !NOT_AN_ALIAS.has(t.value)) return t.text;
  return undefined;
}

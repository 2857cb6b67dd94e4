/**
 * The Trino guard: a lexer written to Trino's own lexical rules, and checks on its tokens.
 * Fails closed: a character, literal or comment it does not understand is a refusal.
 *
 * Why not a parser: node-sql-parser's Trino build (5.4) refuses everyday Trino analytics
 * (`UNNEST ... WITH ORDINALITY`, `ROW(...)` types, `FETCH FIRST n ROWS ONLY`, table
 * functions), and Trino's own parser is Java. What a guard must know about a Trino statement
 * can be read from its tokens, because Trino's grammar is much smaller than PostgreSQL's on
 * the points that matter: one statement per request, a query can hold no other statement
 * (no writable CTEs, no SELECT INTO), and the statement's kind is its first keyword. So:
 *
 * - The lexer follows Trino's: `--` to the end of the line (CR or LF), `/* *\/` NOT nested,
 *   strings `'...'` with `''` (no backslash escapes), `U&'...'`, binary `X'...'` (no escape
 *   at all), identifiers `"..."` with `""`,
 *   numbers (also `1_000`, `0x1F`), and the operators Trino has (`->`, `=>`, `||`, `{-`...).
 *   Backquotes, `$$`, `#`, `@`, `:`, non-ASCII outside literals: refused. Whitespace is only
 *   what Trino accepts (space, tab, CR, LF).
 * - One statement: a `;` may only be followed by more `;`, whitespace and comments.
 * - The statement must be a query: after any opening parentheses, SELECT, WITH, VALUES or
 *   TABLE. Everything else (INSERT, UPDATE, DELETE, MERGE, CREATE, DROP, ALTER, CALL,
 *   GRANT, REVOKE, DENY, SET, RESET, USE, EXECUTE, PREPARE, DEALLOCATE, START TRANSACTION,
 *   COMMIT, ROLLBACK, ANALYZE, REFRESH, TRUNCATE, COMMENT, EXPLAIN [ANALYZE], SHOW, DESCRIBE)
 *   is refused as not a query; prose is refused as unparseable.
 * - `WITH SESSION` (per-query session properties, which would lift the time limit) and
 *   `WITH FUNCTION` (inline routines) are refused.
 * - Anywhere in the statement, unquoted: the reserved keywords of writes and prepared
 *   statements (ALTER, CREATE, DEALLOCATE, DELETE, DESCRIBE, DROP, EXECUTE, INSERT, PREPARE)
 *   and INTO. Reserved words cannot be identifiers in Trino, so this costs no valid query.
 *
 * Then an allow-list (allow-trino.ts), read in one pass that knows, per bracket level, whether
 * it is in a FROM clause:
 * - Every name followed by `(`, wherever it is, is a call unless it is a keyword's parenthesis
 *   (reserved words: `IN (`, `EXISTS (`, `VALUES (`, `UNNEST(`, `AS (`...; non-reserved words
 *   only where Trino reads them as keywords: `OVER (` and `FILTER (` after a call, `LATERAL (`
 *   where a relation starts, `GROUPING SETS (`, `TABLESAMPLE BERNOULLI (`...), a CAST, or the
 *   column list of a CTE or of a relation's alias (names only, else it is read as a call). A
 *   call must be one of Trino's built-in analytical functions or be listed in
 *   database.allowed_functions (`function_not_allowed`); a call qualified with a catalog or
 *   schema is a user routine, allowed only when listed as written. Denied functions (deny.ts)
 *   and functions of a `system` schema are `dangerous_function`.
 * - Types, in CAST/TRY_CAST, after RETURNING and in typed literals (`DATE '2024-01-01'`, any
 *   `name 'text'`): plain types only (`type_not_allowed`).
 * - Relations and every other dotted name: nothing in the `system` catalog or a connector's
 *   `system` schema (`system.runtime.queries` shows other users' SQL, `x.system.query` is a
 *   pass-through, `system.jdbc.tables`...); of `information_schema` only tables, columns,
 *   views and schemata; no connector metadata table (`"t$files"`) (`relation_not_allowed`).
 * - Table functions (`TABLE(fn(...))`): only exclude_columns and sequence, Trino's own, in a
 *   FROM clause. Connectors' table functions (`TABLE(pg.system.query(query => '...'))`) run
 *   text as SQL on the underlying database.
 * - MATCH_RECOGNIZE's PATTERN (...) holds pattern variables, not calls; it is read as such.
 * Trino has no user-defined operators, so there is no operator list: the lexer knows each one.
 *
 * The row cap: the LIMIT or FETCH FIRST clause at parenthesis depth 0 at the very end of the
 * statement is the root query's (Trino: `[ORDER BY] [OFFSET n] [LIMIT n | FETCH ...]`); its
 * number is edited in place (LIMIT ALL too, so an ORDER BY keeps working: Trino ignores ORDER
 * BY in a subquery without a limit). Anything else Cortado cannot read as a count is wrapped.
 *
 * Trino has no read-only transaction Cortado could open here: this guard and Trino's own
 * access control (the asking user is sent as the Trino user) are the defences.
 */
import type { CortadoError } from '../../../protocol/errors.js';
import { TRINO_FUNCTIONS, TRINO_INFORMATION_SCHEMA_SAFE, TRINO_PLAIN_TYPES, TRINO_REFUSED_WHY, TRINO_TABLE_FUNCTIONS } from './allow-trino.js';
import { chainAt as chainOf, charPosition, SqlLexError } from '../../lib/sql/lexer/index.js';
import { lexTrino, type TrinoToken as Token } from '../../lib/sql/lexer/trino.js';
import { deniedFunction } from './deny.js';
import { applyLimit, type ExistingLimit } from './limit.js';
import { rejected, type DialectGuard, type GuardLimits, type GuardResult } from './types.js';

// ---- tokens -------------------------------------------------------------------------------


function parseError(sql: string, index: number, what: string): never {
  const at = charPosition(sql, index);
  throw rejected('parse', `the SQL does not parse as Trino: ${what} (at character ${at})`, { position: at });
}

/** Trino's tokens (lib/sql/lexer/trino.ts); throws SQL_REJECTED (kind parse) on what Trino's lexer would refuse. */
export function tokenize(sql: string): Token[] {
  try {
    return lexTrino(sql);
  } catch (err) {
    if (err instanceof SqlLexError) parseError(sql, err.at, err.message);
    throw err;
  }
}

// ---- the guard ----------------------------------------------------------------------------

/** Statements a person might send, by their first keyword: refused as "not a query". */
const STATEMENT_KEYWORDS = new Set([
  'insert', 'update', 'delete', 'merge', 'create', 'drop', 'alter', 'call', 'grant', 'revoke', 'deny', 'set', 'reset',
  'use', 'execute', 'prepare', 'deallocate', 'start', 'commit', 'rollback', 'abort', 'analyze', 'refresh', 'truncate',
  'comment', 'explain', 'show', 'describe', 'desc', 'begin', 'end', 'vacuum', 'optimize', 'copy', 'load', 'kill',
  'unload', 'replace', 'upsert', 'lock', 'unlock', 'declare', 'fetch', 'close', 'open', 'do', 'rename', 'msck',
]);
/** Their name takes the second keyword too: CREATE TABLE, SET SESSION, EXPLAIN ANALYZE... */
const TWO_WORD = new Set(['create', 'drop', 'alter', 'set', 'reset', 'show', 'start', 'refresh', 'comment', 'explain', 'deallocate', 'truncate', 'grant', 'revoke', 'deny']);
/** Reserved in Trino, so never an identifier: refused wherever they are. */
const RESERVED_WRITES = new Set(['alter', 'create', 'deallocate', 'delete', 'describe', 'drop', 'execute', 'insert', 'prepare']);
const QUERY_START = new Set(['select', 'with', 'values', 'table']);

/**
 * Reserved words of Trino that may stand before a parenthesis without calling anything:
 * `IN (`, `EXISTS (`, `VALUES (`, `UNNEST(`, `ROLLUP (`, `WITHIN GROUP (`, `AS (` (a CTE or a
 * window), `USING (`... Reserved, so none of them can be a function's name; what is inside the
 * parentheses is checked like the rest.
 */
const RESERVED_OPENERS = new Set([
  'and', 'as', 'between', 'by', 'case', 'cube', 'distinct', 'else', 'escape', 'except', 'exists', 'for', 'from', 'group', 'having', 'in',
  'intersect', 'is', 'join', 'like', 'not', 'on', 'or', 'rollup', 'select', 'then', 'union', 'unnest', 'using', 'values', 'when', 'where',
]);

/**
 * Words before which a name cannot be a relation's alias, because an expression or a relation
 * follows them (`AS OF f(x)`, `JOIN f(x)`, `AND f(x)`, `FINAL last(x)`): a name followed by a
 * parenthesis after one of them is a call, and checked as one.
 */
const BEFORE_AN_EXPRESSION = new Set([
  ...RESERVED_OPENERS, 'of', 'lateral', 'table', 'tablesample', 'bernoulli', 'system', 'cross', 'left', 'right', 'full', 'inner', 'outer',
  'natural', 'all', 'any', 'some', 'running', 'final', 'interval', 'at', 'zone', 'with', 'over', 'filter', 'return', 'returning', 'default',
  'passing', 'key', 'value', 'leading', 'trailing', 'both', 'to', 'ordinality', 'recursive',
]);

/**
 * Words a string literal may follow without being a typed literal (`type 'text'`, which is a
 * cast): `LIKE 'x'`, `AT TIME ZONE 'UTC'`, `INTERVAL '7' DAY`, `KEY 'k' VALUE 'v'`,
 * `ON OVERFLOW TRUNCATE '...'`, `U&'..' UESCAPE '!'`...
 */
const BEFORE_A_STRING = new Set([
  ...RESERVED_OPENERS, 'all', 'of', 'to', 'at', 'zone', 'interval', 'leading', 'trailing', 'both', 'key', 'value', 'default', 'passing',
  'path', 'truncate', 'return', 'uescape', 'precision', 'escape', 'measures',
]);

/** Clause keywords that end a FROM clause at their level. */
const CLAUSE_ENDS = new Set(['where', 'group', 'having', 'window', 'order', 'offset', 'limit', 'fetch', 'union', 'intersect', 'except']);

/** Words inside a type after its name: DOUBLE PRECISION, TIMESTAMP WITH TIME ZONE, INTERVAL DAY TO SECOND. */
const TYPE_WORDS = new Set(['precision', 'with', 'without', 'year', 'month', 'day', 'hour', 'minute', 'second', 'to']);
const INTERVAL_FIELDS = new Set(['year', 'month', 'day', 'hour', 'minute', 'second']);

const COMPARISONS = new Set(['=', '<>', '!=', '<', '>', '<=', '>=']);

/** Pattern syntax of MATCH_RECOGNIZE: variables, groups, alternation, quantifiers, anchors, exclusion. */
const PATTERN_PUNCT = new Set(['(', ')', '|', '+', '*', '?', '{', '}', ',', '^', '$', '{-', '-}']);

export function guardTrino(sql: string, limits: GuardLimits): GuardResult {
  if (sql.trim() === '') throw rejected('empty', 'the SQL is empty');
  const all = tokenize(sql);
  const body = oneStatement(all);
  checkBalanced(sql, body);
  checkStart(body);
  checkWords(body);
  const ctes = cteDefinitions(body);
  new Walk(body, ctes.nameTokens, allowedSet(limits)).run();
  const tables = relations(body, ctes.names);

  const first = body[0] as Token;
  const last = body.at(-1) as Token;
  const text = sql.slice(first.start, last.end);
  const existing = existingLimit(body, first.start);
  return { ...applyLimit(text, existing, limits), tables };
}

export const trinoGuard: DialectGuard = { prepare: async () => undefined, guard: guardTrino };

/** The one statement's tokens: refuses a second statement; drops semicolons around it. */
function oneStatement(tokens: Token[]): Token[] {
  const statements: Token[][] = [[]];
  for (const t of tokens) {
    if (t.kind === 'punct' && t.value === ';' && t.depth === 0) statements.push([]);
    else (statements.at(-1) as Token[]).push(t);
  }
  const nonEmpty = statements.filter((s) => s.length > 0);
  if (nonEmpty.length === 0) throw rejected('empty', 'the SQL holds no statement, only comments or semicolons');
  if (nonEmpty.length > 1) {
    throw rejected('multiple_statements', `only one statement may run, and this SQL holds ${nonEmpty.length}`, { count: nonEmpty.length });
  }
  const body = nonEmpty[0] as Token[];
  const semicolon = body.find((t) => t.kind === 'punct' && t.value === ';');
  if (semicolon) throw rejected('parse', 'the SQL does not parse as Trino: a ";" inside parentheses');
  return body;
}

function checkBalanced(sql: string, tokens: Token[]): void {
  const open: Token[] = [];
  for (const t of tokens) {
    if (t.kind !== 'punct') continue;
    if (t.value === '(' || t.value === '[') open.push(t);
    else if (t.value === ')' || t.value === ']') {
      const o = open.pop();
      if (!o || (o.value === '(') !== (t.value === ')')) parseError(sql, t.start, `"${t.value}" does not match its opening bracket`);
    }
  }
  const unclosed = open.pop();
  if (unclosed) parseError(sql, unclosed.start, `"${unclosed.value}" is not closed`);
}

function statementName(tokens: Token[], at: number): string {
  const first = tokens[at] as Token;
  const words = [first.value];
  const second = tokens[at + 1];
  if (TWO_WORD.has(first.value) && second?.kind === 'word') {
    words.push(second.value);
    // CREATE OR REPLACE VIEW, REFRESH MATERIALIZED VIEW
    const more = second.value === 'or' ? 2 : second.value === 'materialized' ? 1 : 0;
    for (let k = 2; k < 2 + more && tokens[at + k]?.kind === 'word'; k++) words.push((tokens[at + k] as Token).value);
  }
  return words.join(' ').toUpperCase();
}

function checkStart(tokens: Token[]): void {
  let i = 0;
  while (tokens[i]?.kind === 'punct' && tokens[i]?.value === '(') i++;
  const first = tokens[i];
  if (first?.kind === 'word' && QUERY_START.has(first.value)) return;
  if (first?.kind === 'word' && STATEMENT_KEYWORDS.has(first.value)) {
    const statement = statementName(tokens, i);
    throw rejected('not_select', `only a query (SELECT, WITH, VALUES, TABLE) may run; this is ${statement}`, { statement });
  }
  const shown = first ? first.text.slice(0, 40) : 'nothing';
  throw rejected('parse', `the SQL does not parse as Trino: a query starts with SELECT, WITH, VALUES or TABLE, not "${shown}"`);
}

/** Words that have no place in a query wherever they are: writes, INTO, WITH SESSION / FUNCTION. */
function checkWords(tokens: Token[]): void {
  tokens.forEach((t, i) => {
    if (t.kind !== 'word') return;
    if (RESERVED_WRITES.has(t.value)) {
      const statement = statementName(tokens, i);
      throw rejected('not_select', `only a query may run; this SQL holds ${statement}`, { statement });
    }
    if (t.value === 'into') throw rejected('select_into', 'INTO writes rows into a table; only reading is allowed');
    if (t.value === 'with') checkWithPrefix(tokens, i);
  });
}

/** `WITH SESSION name = value` and `WITH FUNCTION f() ...` (a CTE may still be called session or function). */
function checkWithPrefix(tokens: Token[], at: number): void {
  let i = at + 1;
  if (isWord(tokens[i], 'recursive')) i++;
  const t = tokens[i];
  if (t?.kind !== 'word' || (t.value !== 'session' && t.value !== 'function')) return;
  const after = tokens[i + 1];
  if (isWord(after, 'as') || isPunct(after, '(')) return; // a CTE with that name
  const statement = `WITH ${t.value.toUpperCase()}`;
  const why = t.value === 'session' ? 'it changes session properties, among them the time limit' : 'inline routines may not be defined';
  throw rejected('not_select', `${statement} is not allowed: ${why}`, { statement });
}

export function isWord(t: Token | undefined, value: string): boolean {
  return t?.kind === 'word' && t.value === value;
}

export function isPunct(t: Token | undefined, value: string): boolean {
  return t?.kind === 'punct' && t.value === value;
}

export function isName(t: Token | undefined): t is Token {
  return t?.kind === 'word' || t?.kind === 'quoted';
}

/** A name as Trino compares it: lower-cased, quoted or not. */
function lower(t: Token): string {
  return t.value.toLowerCase();
}

/** A dotted name starting at `i`: its parts (as Trino compares them: lower-cased) and the index after it. */
export function chainAt(tokens: Token[], i: number): { parts: Token[]; end: number } {
  return chainOf(tokens, i, { isDot: (x) => isPunct(x, '.'), isName });
}

/** database.allowed_functions, as Trino compares names: lower-cased, quotes dropped (`"Cat".s.f` is `cat.s.f`). */
function allowedSet(limits: GuardLimits): ReadonlySet<string> {
  return new Set((limits.allowedFunctions ?? []).map((f) => f.replace(/"/g, '').trim().toLowerCase()).filter((f) => f !== ''));
}

// ---- the allow-list walk --------------------------------------------------------------------

/**
 * What a pair of brackets holds, which decides how a name followed by `(` is read inside it:
 * - `query`: the statement, or parentheses that hold a query or an expression;
 * - `relation`: parentheses in a FROM clause around a relation (`FROM (a JOIN b ON ...)`);
 * - `match`: MATCH_RECOGNIZE's, where PATTERN (...) holds pattern variables, not calls;
 * - `table_function`: an allowed table function's arguments, where TABLE(t) is a table
 *   argument and DESCRIPTOR(...) lists columns.
 */
type LevelKind = 'query' | 'relation' | 'match' | 'table_function';

interface Level {
  kind: LevelKind;
  /** the function whose arguments these brackets hold, if they do */
  fn?: string;
  /** a SELECT started at this level, so a FROM here is a FROM clause (not EXTRACT(x FROM y)) */
  select: boolean;
  /** within a FROM clause at this level */
  fromClause: boolean;
  /** a relation, its alias, or what follows a relation may come here (FROM clause, not in ON) */
  relation: boolean;
}

/**
 * One pass over the statement's tokens, keeping per bracket level whether a FROM clause is
 * being read. Every name followed by `(` is one of: a keyword's parenthesis (IN, EXISTS,
 * OVER, FILTER, ...), a CAST, a CTE's or a relation alias's column list, a table function, or
 * a call, which must be allowed. Every dotted name is checked against the relations that are
 * not allowed; every string after a name against the types that are not.
 */
class Walk {
  private readonly close: Map<number, number>;
  private readonly levels: Level[] = [{ kind: 'query', select: false, fromClause: false, relation: false }];
  /** the level kind the bracket at this index opens, when it is not the default */
  private readonly opens = new Map<number, LevelKind>();
  /** tokens read already (a type, a pattern): the walk jumps from the key to the value */
  private readonly jumps = new Map<number, number>();
  /** names already decided (a table function's name): not checked as a call */
  private readonly decided = new Set<number>();
  /** the function called with the parenthesis at this index */
  private readonly callees = new Map<number, string>();

  constructor(
    private readonly tokens: Token[],
    private readonly cteNameTokens: ReadonlySet<number>,
    private readonly allowed: ReadonlySet<string>,
  ) {
    this.close = matchingClose(tokens);
  }

  run(): void {
    const { tokens } = this;
    for (let i = 0; i < tokens.length; i++) {
      const jump = this.jumps.get(i);
      if (jump !== undefined) {
        i = jump - 1;
        continue;
      }
      const t = tokens[i] as Token;
      const level = this.levels.at(-1) as Level;
      if (t.kind === 'punct') {
        this.punct(t, i, level);
        continue;
      }
      if (t.kind === 'string') {
        this.typedLiteral(i);
        continue;
      }
      if (t.kind === 'word') this.clause(t, i, level);
      if (!isName(t)) continue;
      if (isPunct(tokens[i - 1], '.')) {
        // `(expr).name(`: a call on something Cortado cannot name
        if (isPunct(tokens[i + 1], '(')) throw this.notAllowed(lower(t), 'it is called on an expression, which Trino has no use for');
        continue;
      }
      const { parts, end } = chainAt(tokens, i);
      if (isPunct(tokens[end], '(')) this.beforeParenthesis(i, parts, end, level);
      else this.checkRelationName(parts);
      i = end - 1;
    }
  }

  private punct(t: Token, i: number, level: Level): void {
    if (t.value === '(' || t.value === '[') {
      let kind = this.opens.get(i);
      if (!kind && t.value === '(' && level.relation && this.startsRelation(i)) kind = 'relation';
      const inRelation = kind === 'relation';
      const fn = this.callees.get(i);
      this.levels.push({ kind: kind ?? 'query', ...(fn ? { fn } : {}), select: false, fromClause: inRelation, relation: inRelation });
    } else if (t.value === ')' || t.value === ']') {
      this.levels.pop();
    } else if (t.value === ',' && level.fromClause) {
      level.relation = true;
    }
  }

  /** Keeps track of the FROM clause at this level; reads the type after RETURNING. */
  private clause(t: Token, i: number, level: Level): void {
    const w = t.value;
    if (w === 'select' || w === 'values') {
      level.select = w === 'select';
      level.fromClause = level.relation = false;
    } else if (w === 'from') {
      if (level.select && !isWord(this.tokens[i - 1], 'distinct')) level.fromClause = level.relation = true;
    } else if (w === 'join') {
      level.fromClause = level.relation = true;
    } else if (w === 'on' || w === 'using') {
      level.relation = false;
    } else if (CLAUSE_ENDS.has(w)) {
      level.fromClause = level.relation = false;
    } else if (w === 'returning' && level.fn?.startsWith('json_')) {
      // json_value(... RETURNING type ...), json_query, json_object, json_array
      this.jumps.set(i + 1, this.readType(i + 1, this.levelEnd(i)));
    }
  }

  /** The index of the bracket that closes the level token `i` is in (or the end). */
  private levelEnd(i: number): number {
    const depth = (this.tokens[i] as Token).depth;
    for (let j = i + 1; j < this.tokens.length; j++) if ((this.tokens[j] as Token).depth < depth) return j;
    return this.tokens.length;
  }

  /** Whether the bracket at `i` stands where a relation begins: after FROM, JOIN, a comma of FROM, or another such bracket. */
  private startsRelation(i: number): boolean {
    const prev = this.tokens[i - 1];
    return isWord(prev, 'from') || isWord(prev, 'join') || isWord(prev, 'lateral') || isPunct(prev, ',') || isPunct(prev, '(');
  }

  private beforeParenthesis(i: number, parts: Token[], open: number, level: Level): void {
    const { tokens } = this;
    const t = tokens[i] as Token;
    const prev = tokens[i - 1];
    if (this.decided.has(i)) return;
    if (parts.length === 1 && t.kind === 'word') {
      const w = t.value;
      if (w === 'cast' || w === 'try_cast') return this.cast(open);
      if (w === 'table') return this.table(i, open, level);
      if (RESERVED_OPENERS.has(w)) return;
      if ((w === 'over' || w === 'filter') && (isPunct(prev, ')') || isWord(prev, 'nulls'))) return;
      if (w === 'sets' && isWord(prev, 'grouping')) return;
      if ((w === 'bernoulli' || w === 'system') && isWord(prev, 'tablesample')) return;
      if (w === 'of' && isWord(prev, 'as')) return;
      if (w === 'all' && (COMPARISONS.has(prev?.value ?? '') || ['union', 'intersect', 'except', 'select'].some((k) => isWord(prev, k)))) return;
      if ((w === 'any' || w === 'some') && prev?.kind === 'punct' && COMPARISONS.has(prev.value)) return;
      if (w === 'lateral' && level.relation && this.startsRelation(i)) return;
      if (w === 'match_recognize' && level.relation && !this.startsRelation(i)) {
        this.opens.set(open, 'match');
        return;
      }
      if (w === 'pattern' && level.kind === 'match' && this.patternClause(i, open)) return this.pattern(open);
      if (w === 'descriptor' && level.kind === 'table_function') return;
    }
    if (parts.length === 1 && (this.cteNameTokens.has(i) || (level.relation && this.aliasPosition(i)))) {
      // a CTE's or an alias's column list: names only, or it is read as a call
      if (this.onlyNames(open)) return;
    }
    this.call(parts);
    this.callees.set(open, lower(parts.at(-1) as Token));
  }

  /** A name at `i` in a FROM clause that can only be an alias: after AS, a relation's name, `)` or ORDINALITY. */
  private aliasPosition(i: number): boolean {
    const prev = this.tokens[i - 1];
    if (isWord(prev, 'as') || isWord(prev, 'ordinality') || isPunct(prev, ')')) return true;
    // a quoted name, or the end of a time travel's value (`FOR VERSION AS OF 5 v (a)`)
    if (prev?.kind === 'quoted' || prev?.kind === 'number' || prev?.kind === 'string') return true;
    return prev?.kind === 'word' && !BEFORE_AN_EXPRESSION.has(prev.value);
  }

  /** The parentheses at `open` hold names separated by commas, nothing else. */
  private onlyNames(open: number): boolean {
    const end = this.close.get(open) ?? this.tokens.length;
    for (let j = open + 1; j < end; j++) {
      const u = this.tokens[j] as Token;
      if ((j - open) % 2 === 1 ? !isName(u) : !isPunct(u, ',')) return false;
    }
    return end > open + 1 && (end - open) % 2 === 0;
  }

  /** A call: denied, a system schema's, a catalog's routine, or a built-in that is not on the list. */
  private call(parts: Token[]): void {
    const names = parts.map(lower);
    const name = names.join('.');
    const last = names.at(-1) as string;
    const denied = deniedFunction('trino', last);
    if (denied) {
      throw rejected('dangerous_function', `the SQL calls ${name}(), which is not allowed: ${denied.why}`, { function: name });
    }
    if (names.length > 1) {
      if (names.slice(0, -1).includes('system')) {
        throw rejected('dangerous_function', `the SQL calls ${name}(), which is not allowed: functions of the system catalog and of connectors' system schemas (pass-through queries, procedures) are not for queries`, { function: name });
      }
      if (this.allowed.has(name)) return;
      throw this.notAllowed(name, 'it is a routine of a catalog (user-defined), and only those listed in database.allowed_functions may be called');
    }
    if (TRINO_FUNCTIONS.has(last) || this.allowed.has(last)) return;
    const known = TRINO_REFUSED_WHY.find(([re]) => re.test(last));
    throw this.notAllowed(last, known ? known[1] : 'it is not one of Trino\'s analytical functions Cortado allows, nor listed in database.allowed_functions');
  }

  private notAllowed(name: string, why: string): CortadoError {
    return rejected('function_not_allowed', `the SQL calls ${name}(), which is not allowed: ${why}`, { function: name });
  }

  /** CAST(expr AS type), TRY_CAST: the expression is read on; the type must be plain. */
  private cast(open: number): void {
    const { tokens } = this;
    const end = this.close.get(open) ?? tokens.length;
    const depth = (tokens[open] as Token).depth + 1;
    let as = -1;
    for (let j = open + 1; j < end; j++) {
      const u = tokens[j] as Token;
      if (u.depth === depth && isWord(u, 'as')) {
        as = j;
        break;
      }
    }
    if (as < 0) throw rejected('parse', 'the SQL does not parse as Trino: a CAST without AS and a type');
    const after = this.readType(as + 1, end);
    if (after !== end) throw rejected('parse', `the SQL does not parse as Trino: "${(tokens[after] as Token).text}" after the type of a CAST`);
    this.jumps.set(as, end);
  }

  /**
   * A type from `i` (not past `end`); every type name in it must be plain (or listed in
   * database.allowed_functions). Returns the index after the type.
   */
  private readType(i: number, end: number): number {
    const { tokens } = this;
    const t = tokens[i];
    if (i >= end || !isName(t)) throw rejected('parse', 'the SQL does not parse as Trino: a type is missing');
    const name = lower(t);
    if (!TRINO_PLAIN_TYPES.has(name) && !this.allowed.has(name)) {
      throw rejected('type_not_allowed', `the SQL uses the type ${name}, which is not allowed: only plain types (numbers, text, dates and times, JSON, and arrays, maps and rows of them) may be cast to or returned`, { type: name });
    }
    let j = i + 1;
    const word = t.kind === 'word' ? name : '';
    if (word === 'double' && isWord(tokens[j], 'precision')) return j + 1;
    if (word === 'interval') {
      // INTERVAL DAY TO SECOND, INTERVAL YEAR TO MONTH
      if (!INTERVAL_FIELDS.has(tokens[j]?.value ?? '')) throw rejected('parse', 'the SQL does not parse as Trino: an interval type needs its fields');
      j++;
      if (isWord(tokens[j], 'to') && INTERVAL_FIELDS.has(tokens[j + 1]?.value ?? '')) j += 2;
      return j;
    }
    if (word === 'array' || word === 'map') {
      const close = isPunct(tokens[j], '<') ? '>' : isPunct(tokens[j], '(') ? ')' : '';
      if (!close) throw rejected('parse', `the SQL does not parse as Trino: ${word} needs its element type`);
      j = this.readType(j + 1, end);
      if (word === 'map') {
        if (!isPunct(tokens[j], ',')) throw rejected('parse', 'the SQL does not parse as Trino: map needs a key and a value type');
        j = this.readType(j + 1, end);
      }
      if (!isPunct(tokens[j], close)) throw rejected('parse', `the SQL does not parse as Trino: ${word}'s type is not closed`);
      return j + 1;
    }
    if (word === 'row') {
      if (!isPunct(tokens[j], '(')) throw rejected('parse', 'the SQL does not parse as Trino: row needs its fields');
      const close = this.close.get(j) ?? end;
      j++;
      for (;;) {
        // a field: `name type` or just `type`
        const named = isName(tokens[j]) && isName(tokens[j + 1]) && !(tokens[j]?.kind === 'word' && TYPE_WORDS.has(tokens[j + 1]?.value ?? ''));
        j = this.readType(named ? j + 1 : j, close);
        if (isPunct(tokens[j], ',')) {
          j++;
          continue;
        }
        if (j !== close) throw rejected('parse', 'the SQL does not parse as Trino: a row type\'s field');
        return j + 1;
      }
    }
    if (isPunct(tokens[j], '(')) {
      // parameters: varchar(10), decimal(12, 2), timestamp(3)
      const close = this.close.get(j) ?? end;
      j++;
      while (j < close) {
        if (tokens[j]?.kind === 'number') j++;
        else j = this.readType(j, close);
        if (isPunct(tokens[j], ',')) j++;
        else if (j !== close) throw rejected('parse', 'the SQL does not parse as Trino: a type\'s parameters');
      }
      j = close + 1;
    }
    if ((word === 'timestamp' || word === 'time') && (isWord(tokens[j], 'with') || isWord(tokens[j], 'without'))) {
      if (!isWord(tokens[j + 1], 'time') || !isWord(tokens[j + 2], 'zone')) throw rejected('parse', 'the SQL does not parse as Trino: WITH TIME ZONE');
      j += 3;
    }
    return j;
  }

  /** `type 'text'` is a cast: after a name that is not a keyword, the name must be a plain type. */
  private typedLiteral(i: number): void {
    const prev = this.tokens[i - 1];
    if (!isName(prev)) return;
    if (isPunct(this.tokens[i - 2], '.')) {
      throw rejected('type_not_allowed', `the SQL uses a qualified type before a literal (${prev.text}), which is not allowed`, { type: lower(prev) });
    }
    if (prev.kind === 'word' && BEFORE_A_STRING.has(prev.value)) return;
    const name = lower(prev);
    if (TRINO_PLAIN_TYPES.has(name) || this.allowed.has(name)) return;
    throw rejected('type_not_allowed', `the SQL uses the type ${name} for a literal (${name} '...' is a cast), which is not allowed: only plain types (numbers, text, dates and times, JSON) may be`, { type: name });
  }

  /**
   * Whether PATTERN at `i` (directly in MATCH_RECOGNIZE's parentheses) is the clause, not a call
   * named pattern in a measure or a sort key: it follows the end of a clause (not a comma, an
   * operator or a keyword that an expression follows), and SUBSET or DEFINE follows it.
   */
  private patternClause(i: number, open: number): boolean {
    const prev = this.tokens[i - 1];
    const after = this.tokens[(this.close.get(open) ?? this.tokens.length) + 1];
    if (!isWord(after, 'subset') && !isWord(after, 'define')) return false;
    if (isPunct(prev, ')') || prev?.kind === 'quoted') return true;
    if (isPunct(prev, '(')) return this.opens.get(i - 1) === 'match';
    return prev?.kind === 'word' && !BEFORE_AN_EXPRESSION.has(prev.value) && prev.value !== 'measures';
  }

  /** PATTERN (...) of MATCH_RECOGNIZE: pattern variables and pattern syntax only, nothing is called. */
  private pattern(open: number): void {
    const end = this.close.get(open) ?? this.tokens.length;
    for (let j = open + 1; j < end; j++) {
      const u = this.tokens[j] as Token;
      const ok = u.kind === 'word' || u.kind === 'quoted' || u.kind === 'number' || (u.kind === 'punct' && PATTERN_PUNCT.has(u.value));
      if (!ok) throw rejected('parse', `the SQL does not parse as Trino: "${u.text}" in a MATCH_RECOGNIZE pattern`);
    }
    if (end > open + 1) this.jumps.set(open + 1, end);
  }

  /**
   * TABLE(...): a table function in a FROM clause may only be one of TRINO_TABLE_FUNCTIONS;
   * within its arguments, TABLE(t) or TABLE(query) is a table argument. Anything else is
   * refused: connectors' table functions run text as SQL on the underlying database.
   */
  private table(i: number, open: number, level: Level): void {
    const { tokens } = this;
    const prev = tokens[i - 1];
    if (level.kind === 'table_function' && (isPunct(prev, '=>') || isPunct(prev, ',') || isPunct(prev, '('))) {
      this.opens.set(open, 'relation');
      return;
    }
    const inner = tokens[open + 1];
    const fn = isName(inner) ? chainAt(tokens, open + 1) : undefined;
    const fnOpen = fn?.end ?? -1;
    const called = fn !== undefined && isPunct(tokens[fnOpen], '(');
    const names = called ? fn.parts.map(lower) : [];
    const name = names.join('.') || 'table';
    if (called) {
      const denied = deniedFunction('trino', names.at(-1) as string);
      if (denied) throw rejected('dangerous_function', `the SQL calls the table function ${name}(), which is not allowed: ${denied.why}`, { function: name });
      const closes = this.close.get(fnOpen);
      const fits = closes !== undefined && closes + 1 === this.close.get(open);
      if (names.length === 1 && TRINO_TABLE_FUNCTIONS.has(name) && fits && level.relation && this.startsRelation(i)) {
        this.decided.add(open + 1);
        this.opens.set(fnOpen, 'table_function');
        return;
      }
    }
    throw rejected('dangerous_function', `the SQL calls the table function ${name}(), which is not allowed: only ${[...TRINO_TABLE_FUNCTIONS].join(' and ')} are; connectors' table functions run text as SQL on the underlying database`, { function: name });
  }

  /**
   * A dotted name that is not called: not in the system catalog nor a connector's system
   * schema, in information_schema only the safe tables, and no connector metadata table.
   */
  private checkRelationName(parts: Token[]): void {
    const names = parts.map(lower);
    const name = names.join('.');
    if (names.slice(0, -1).includes('system')) {
      throw rejected('relation_not_allowed', `the SQL reads ${name}: the system catalog and connectors' system schemas (other users' queries, nodes, transactions, procedures) are not allowed`, { name });
    }
    const at = names.slice(0, -1).indexOf('information_schema');
    if (at >= 0 && !TRINO_INFORMATION_SCHEMA_SAFE.has(names[at + 1] as string)) {
      throw rejected('relation_not_allowed', `the SQL reads ${name}: of information_schema only ${[...TRINO_INFORMATION_SCHEMA_SAFE].join(', ')} may be read (roles and privileges are not about the data)`, { name });
    }
    const hidden = parts.find((p) => p.kind === 'quoted' && p.value.indexOf('$') > 0);
    if (hidden) {
      throw rejected('relation_not_allowed', `the SQL reads ${name}: connectors' metadata tables (table$files, table$snapshots, table$properties...) are not allowed`, { name });
    }
  }
}

// ---- relations ----------------------------------------------------------------------------

/** The CTE names a statement defines, and the token indices where they are defined. */
function cteDefinitions(tokens: Token[]): { names: Set<string>; nameTokens: Set<number> } {
  const names = new Set<string>();
  const nameTokens = new Set<number>();
  const close = matchingClose(tokens);
  for (let w = 0; w < tokens.length; w++) {
    if (!isWord(tokens[w], 'with')) continue;
    let k = w + 1;
    if (isWord(tokens[k], 'recursive')) k++;
    for (;;) {
      const name = tokens[k];
      if (!isName(name)) break;
      let j = k + 1;
      if (isPunct(tokens[j], '(')) j = (close.get(j) ?? tokens.length) + 1;
      if (!isWord(tokens[j], 'as') || !isPunct(tokens[j + 1], '(')) break;
      names.add(name.value.toLowerCase());
      nameTokens.add(k);
      j = (close.get(j + 1) ?? tokens.length) + 1;
      if (!isPunct(tokens[j], ',')) break;
      k = j + 1;
    }
  }
  return { names, nameTokens };
}

function matchingClose(tokens: Token[]): Map<number, number> {
  const out = new Map<number, number>();
  const open: number[] = [];
  tokens.forEach((t, i) => {
    if (t.kind !== 'punct') return;
    if (t.value === '(' || t.value === '[') open.push(i);
    else if (t.value === ')' || t.value === ']') {
      const o = open.pop();
      if (o !== undefined) out.set(o, i);
    }
  });
  return out;
}

const FROM_CLAUSE_END = new Set(['where', 'group', 'having', 'window', 'order', 'offset', 'limit', 'fetch', 'union', 'intersect', 'except', 'match_recognize']);
const NOT_A_RELATION = new Set(['lateral', 'unnest', 'table', 'json_table', 'select', 'values', 'with']);

/**
 * Relations the statement reads, as written (quoted names without their quotes), in order,
 * without CTE names: what follows FROM (of a SELECT, not EXTRACT(x FROM y)), each comma of its
 * list, and JOIN. Only reported, never relied on for safety.
 */
function relations(tokens: Token[], cteNames: ReadonlySet<string>): string[] {
  const found = new Map<number, string>();
  const record = (i: number): void => {
    const t = tokens[i];
    if (!isName(t) || (t.kind === 'word' && NOT_A_RELATION.has(t.value))) return;
    const { parts, end } = chainAt(tokens, i);
    if (isPunct(tokens[end], '(')) return; // a function in FROM: generate_series(...)
    if (parts.length === 1 && cteNames.has(t.value.toLowerCase())) return;
    found.set(i, parts.map((p) => (p.kind === 'quoted' ? p.value : p.text)).join('.'));
  };

  // per parenthesis level: whether a SELECT has started there (so FROM is a FROM clause)
  const selectAt: boolean[] = [false];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    if (t.kind === 'punct' && (t.value === '(' || t.value === '[')) selectAt[t.depth + 1] = false;
    if (t.kind !== 'word') continue;
    if (t.value === 'select') selectAt[t.depth] = true;
    else if (t.value === 'join') record(i + 1);
    else if (t.value === 'table') {
      // TABLE x: the query shorthand; TABLE(x): a table function's table argument
      if (isPunct(tokens[i + 1], '(') && isName(tokens[i + 2]) && isPunct(tokens[chainAt(tokens, i + 2).end], ')')) record(i + 2);
      else record(i + 1);
    }
    else if (t.value === 'from' && selectAt[t.depth] && !isWord(tokens[i - 1], 'distinct')) {
      record(i + 1);
      for (let j = i + 1; j < tokens.length; j++) {
        const u = tokens[j] as Token;
        if (u.depth < t.depth) break;
        if (u.depth > t.depth) continue;
        if (u.kind === 'word' && FROM_CLAUSE_END.has(u.value)) break;
        if (isPunct(u, ',')) record(j + 1);
      }
    }
  }
  const names = [...found.entries()].sort((a, b) => a[0] - b[0]).map(([, name]) => name);
  return [...new Set(names)];
}

// ---- the LIMIT ------------------------------------------------------------------------------

function integerToken(t: Token | undefined): number | undefined {
  if (t?.kind !== 'number' || !/^\d[\d_]*$/.test(t.text)) return undefined;
  const value = Number(t.text.replace(/_/g, ''));
  return Number.isFinite(value) ? value : undefined;
}

/** The root query's LIMIT / FETCH FIRST: the clause at depth 0 that ends the statement. */
function existingLimit(tokens: Token[], offset: number): ExistingLimit {
  let at = -1;
  for (let i = tokens.length - 1; i >= 0; i--) {
    const t = tokens[i] as Token;
    if (t.depth === 0 && (isWord(t, 'limit') || isWord(t, 'fetch'))) {
      at = i;
      break;
    }
  }
  if (at < 0) return { kind: 'none' };
  const rest = tokens.slice(at + 1);
  const place = (t: Token) => ({ start: t.start - offset, end: t.end - offset });

  if (isWord(tokens[at], 'limit')) {
    const [count] = rest;
    if (rest.length !== 1 || !count) return { kind: 'other' };
    // LIMIT ALL: the number goes in its place
    if (isWord(count, 'all')) return { kind: 'constant', value: Number.MAX_SAFE_INTEGER, ...place(count) };
    const value = integerToken(count);
    return value === undefined ? { kind: 'other' } : { kind: 'constant', value, ...place(count) };
  }

  // FETCH { FIRST | NEXT } [ n ] { ROW | ROWS } { ONLY | WITH TIES }
  const words = rest.map((t) => (t.kind === 'word' ? t.value : ''));
  if (words[0] !== 'first' && words[0] !== 'next') return { kind: 'other' };
  const count = rest[1]?.kind === 'number' ? rest[1] : undefined;
  const k = count ? 2 : 1;
  if ((words[k] !== 'row' && words[k] !== 'rows') || words[k + 1] !== 'only' || rest.length !== k + 2) return { kind: 'other' };
  if (!count) return { kind: 'constant', value: 1, start: 0, end: 0 }; // FETCH FIRST ROW ONLY: an implicit 1
  const value = integerToken(count);
  return value === undefined ? { kind: 'other' } : { kind: 'constant', value, ...place(count) };
}

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
 * - The `system` catalog and every connector's `system` schema: any qualified name with
 *   `system` as a part before the last (`system.runtime.queries` shows other users' SQL,
 *   `x.system.query` is a pass-through, `system.jdbc.tables`...), quoted or not, any case.
 * - Table functions: any `TABLE(...)`. Connector pass-through functions
 *   (`TABLE(pg.system.query(query => '...'))`) run text as SQL on the underlying database.
 * - Calls of denied functions (deny.ts), wherever they are.
 *
 * The row cap: the LIMIT or FETCH FIRST clause at parenthesis depth 0 at the very end of the
 * statement is the root query's (Trino: `[ORDER BY] [OFFSET n] [LIMIT n | FETCH ...]`); its
 * number is edited in place (LIMIT ALL too, so an ORDER BY keeps working: Trino ignores ORDER
 * BY in a subquery without a limit). Anything else Cortado cannot read as a count is wrapped.
 *
 * Trino has no read-only transaction Cortado could open here: this guard and Trino's own
 * access control (the asking user is sent as the Trino user) are the defences.
 */
import { deniedFunction } from './deny.js';
import { applyLimit, type ExistingLimit } from './limit.js';
import { rejected, type DialectGuard, type GuardLimits, type GuardResult } from './types.js';

// ---- tokens -------------------------------------------------------------------------------

export type TokenKind = 'word' | 'quoted' | 'string' | 'number' | 'punct';

export interface Token {
  kind: TokenKind;
  /** word: lower-cased; quoted: the name without quotes; string: its raw text; else the text */
  value: string;
  /** the text as written */
  text: string;
  start: number;
  end: number;
  /** parentheses and brackets open around the token (an opening one counts outside itself) */
  depth: number;
}

/** Longest first, as Trino's lexer matches. */
const OPERATORS = ['->', '=>', '<>', '!=', '<=', '>=', '||', '{-', '-}'] as const;
const SINGLE = new Set(['(', ')', '[', ']', '{', '}', ',', '.', ';', '+', '-', '*', '/', '%', '=', '<', '>', '?', '|', '^', '$']);
const WHITESPACE = new Set([' ', '\t', '\r', '\n']);

function isIdentStart(c: string): boolean {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';
}

function isIdentPart(c: string): boolean {
  return isIdentStart(c) || (c >= '0' && c <= '9');
}

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= '0' && c <= '9';
}

const NUMBER = /(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|(?:\d[\d_]*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)/y;

/** One character-position, 1-based, for messages. */
function position(sql: string, index: number): number {
  return Array.from(sql.slice(0, index)).length + 1;
}

function parseError(sql: string, index: number, what: string): never {
  const at = position(sql, index);
  throw rejected('parse', `the SQL does not parse as Trino: ${what} (at character ${at})`, { position: at });
}

/** Skip a quoted run that ends at `quote` (doubled quotes are the quote itself); the end index. */
function closingQuote(sql: string, from: number, quote: string): number {
  let i = from;
  for (;;) {
    const j = sql.indexOf(quote, i);
    if (j < 0) return -1;
    if (sql[j + 1] === quote) {
      i = j + 2;
      continue;
    }
    return j;
  }
}

export function tokenize(sql: string): Token[] {
  const tokens: Token[] = [];
  let depth = 0;
  let i = 0;
  const push = (kind: TokenKind, value: string, start: number, end: number): void => {
    tokens.push({ kind, value, text: sql.slice(start, end), start, end, depth });
  };
  while (i < sql.length) {
    const c = sql[i] as string;
    const next = sql[i + 1];
    if (WHITESPACE.has(c)) {
      i++;
      continue;
    }
    if (c === '-' && next === '-') {
      // Trino ends a line comment at CR as well as LF: what follows a lone CR is code
      let j = i + 2;
      while (j < sql.length && sql[j] !== '\n' && sql[j] !== '\r') j++;
      i = j;
      continue;
    }
    if (c === '/' && next === '*') {
      const close = sql.indexOf('*/', i + 2); // Trino's block comments do not nest
      if (close < 0) parseError(sql, i, 'a /* comment is not closed');
      i = close + 2;
      continue;
    }
    if (c === "'" || ((c === 'U' || c === 'u') && next === '&' && sql[i + 2] === "'")) {
      const open = c === "'" ? i : i + 2;
      const close = closingQuote(sql, open + 1, "'");
      if (close < 0) parseError(sql, i, 'a string is not closed');
      push('string', sql.slice(i, close + 1), i, close + 1);
      i = close + 1;
      continue;
    }
    if ((c === 'X' || c === 'x') && next === "'") {
      // a binary literal: hex digits up to the next quote, with no '' escape (unlike strings)
      const close = sql.indexOf("'", i + 2);
      if (close < 0) parseError(sql, i, 'a binary literal is not closed');
      push('string', sql.slice(i, close + 1), i, close + 1);
      i = close + 1;
      continue;
    }
    if (c === '"') {
      const close = closingQuote(sql, i + 1, '"');
      if (close < 0) parseError(sql, i, 'a quoted identifier is not closed');
      const name = sql.slice(i + 1, close).replace(/""/g, '"');
      if (name === '') parseError(sql, i, 'an identifier is empty');
      push('quoted', name, i, close + 1);
      i = close + 1;
      continue;
    }
    if (isIdentStart(c)) {
      let j = i + 1;
      while (j < sql.length && isIdentPart(sql[j] as string)) j++;
      push('word', sql.slice(i, j).toLowerCase(), i, j);
      i = j;
      continue;
    }
    if (isDigit(c) || (c === '.' && isDigit(next))) {
      NUMBER.lastIndex = i;
      const m = NUMBER.exec(sql);
      const j = i + (m?.[0].length ?? 1);
      if (j < sql.length && isIdentPart(sql[j] as string)) parseError(sql, i, 'an identifier may not start with a digit');
      push('number', sql.slice(i, j), i, j);
      i = j;
      continue;
    }
    const op = OPERATORS.find((o) => sql.startsWith(o, i));
    if (op) {
      push('punct', op, i, i + op.length);
      i += op.length;
      continue;
    }
    if (SINGLE.has(c)) {
      if (c === ')' || c === ']') {
        depth--;
        if (depth < 0) parseError(sql, i, `"${c}" closes nothing`);
      }
      push('punct', c, i, i + 1);
      if (c === '(' || c === '[') depth++;
      i++;
      continue;
    }
    const shown = c === '`' ? 'backquoted identifiers are not Trino SQL' : `the character ${JSON.stringify(Array.from(sql.slice(i))[0])} is not allowed outside strings, quoted identifiers and comments`;
    parseError(sql, i, shown);
  }
  return tokens;
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

export function guardTrino(sql: string, limits: GuardLimits): GuardResult {
  if (sql.trim() === '') throw rejected('empty', 'the SQL is empty');
  const all = tokenize(sql);
  const body = oneStatement(all);
  checkBalanced(sql, body);
  checkStart(body);
  const ctes = cteDefinitions(body);
  checkTokens(body, ctes.nameTokens);
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
  if (first?.kind === 'word' && QUERY_START.has(first.value)) {
    if (first.value === 'with') checkWithPrefix(tokens, i);
    return;
  }
  if (first?.kind === 'word' && STATEMENT_KEYWORDS.has(first.value)) {
    const statement = statementName(tokens, i);
    throw rejected('not_select', `only a query (SELECT, WITH, VALUES, TABLE) may run; this is ${statement}`, { statement });
  }
  const shown = first ? first.text.slice(0, 40) : 'nothing';
  throw rejected('parse', `the SQL does not parse as Trino: a query starts with SELECT, WITH, VALUES or TABLE, not "${shown}"`);
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

function isWord(t: Token | undefined, value: string): boolean {
  return t?.kind === 'word' && t.value === value;
}

function isPunct(t: Token | undefined, value: string): boolean {
  return t?.kind === 'punct' && t.value === value;
}

function isName(t: Token | undefined): t is Token {
  return t?.kind === 'word' || t?.kind === 'quoted';
}

/** A dotted name starting at `i`: its parts (as Trino compares them: lower-cased) and the index after it. */
function chainAt(tokens: Token[], i: number): { parts: Token[]; end: number } {
  const parts: Token[] = [tokens[i] as Token];
  let j = i + 1;
  while (isPunct(tokens[j], '.') && isName(tokens[j + 1])) {
    parts.push(tokens[j + 1] as Token);
    j += 2;
  }
  return { parts, end: j };
}

function checkTokens(tokens: Token[], cteNameTokens: ReadonlySet<number>): void {
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    if (t.kind === 'word') {
      if (RESERVED_WRITES.has(t.value)) {
        const statement = statementName(tokens, i);
        throw rejected('not_select', `only a query may run; this SQL holds ${statement}`, { statement });
      }
      if (t.value === 'into') throw rejected('select_into', 'INTO writes rows into a table; only reading is allowed');
      if (t.value === 'table' && isPunct(tokens[i + 1], '(')) {
        throw rejected('dangerous_function', 'table functions (TABLE(...)) are not allowed: connectors\' pass-through functions run text as SQL on the underlying database', { function: 'table' });
      }
      if (t.value === 'with') checkWithPrefix(tokens, i);
    }
    if (!isName(t) || isPunct(tokens[i - 1], '.')) continue;

    // a dotted name, read once from its first part
    const { parts, end } = chainAt(tokens, i);
    const system = parts.slice(0, -1).find((p) => p.value.toLowerCase() === 'system');
    if (system) {
      const name = parts.map((p) => p.value.toLowerCase()).join('.');
      throw rejected('dangerous_function', `the SQL reads ${name}: the system catalog and connectors' system schemas (other users' queries, procedures, pass-through functions) are not allowed`, { name });
    }
    if (isPunct(tokens[end], '(') && !cteNameTokens.has(i) && !isWord(tokens[i - 1], 'as')) {
      const last = parts.at(-1) as Token;
      const denied = deniedFunction('trino', last.value);
      if (denied) {
        throw rejected('dangerous_function', `the SQL calls ${denied.name}(), which is not allowed: ${denied.why}`, { function: denied.name });
      }
    }
    i = end - 1;
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
    else if (t.value === 'join' || t.value === 'table') record(i + 1); // TABLE x: the query shorthand
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

/**
 * GoogleSQL's lexer (BigQuery), for the BigQuery guard: words (upper-cased), backquoted names,
 * strings with their r/b prefixes and triple quotes, numbers (`.1` after a name is a path step,
 * not a number), @params and @@variables, operators, and the comments (`#`, `--` and block
 * comments) kept aside for the #legacySQL check. What it cannot read throws SqlLexError; the
 * guard refuses with it.
 */
import { SqlLexError } from './index.js';

export type BigQueryTokenType = 'word' | 'quoted' | 'string' | 'number' | 'param' | 'op';

export interface BigQueryToken {
  type: BigQueryTokenType;
  /** the text as written */
  text: string;
  /** word: upper-cased; quoted: the identifier without backticks; others: the text */
  value: string;
  start: number;
  end: number;
}

const TWO_CHAR_OPS = new Set(['<=', '>=', '<>', '!=', '||', '<<', '>>', '=>', '|>']);
const ONE_CHAR_OPS = new Set(['(', ')', '[', ']', ',', '.', ';', '+', '-', '*', '/', '=', '<', '>', '|', '&', '^', '~']);
const STRING_PREFIXES = new Set(['r', 'b', 'rb', 'br']);

function isWordStart(c: string): boolean {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';
}
function isWordChar(c: string): boolean {
  return isWordStart(c) || isDigit(c);
}
function isDigit(c: string): boolean {
  return c >= '0' && c <= '9';
}

export interface BigQueryLexed {
  tokens: BigQueryToken[];
  /** the text of every comment, for the #legacySQL check */
  comments: Array<{ text: string; start: number }>;
}

function fail(message: string, at: number): never {
  throw new SqlLexError(message, at);
}

/** GoogleSQL's tokens and comments; throws SqlLexError on what it cannot read. */
export function lexBigQuery(sql: string): BigQueryLexed {
  const tokens: BigQueryToken[] = [];
  const comments: BigQueryLexed['comments'] = [];
  const n = sql.length;
  let i = 0;
  const push = (type: BigQueryTokenType, start: number, end: number, value?: string): void => {
    const text = sql.slice(start, end);
    tokens.push({ type, text, value: value ?? text, start, end });
  };

  while (i < n) {
    const c = sql[i]!;
    const next = sql[i + 1] ?? '';
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v') {
      i++;
      continue;
    }
    if (c === '#' || (c === '-' && next === '-')) {
      const end = sql.indexOf('\n', i);
      const stop = end < 0 ? n : end;
      comments.push({ text: sql.slice(i, stop), start: i });
      i = stop;
      continue;
    }
    if (c === '/' && next === '*') {
      const end = sql.indexOf('*/', i + 2);
      if (end < 0) fail('a /* comment is not closed', i);
      comments.push({ text: sql.slice(i, end + 2), start: i });
      i = end + 2;
      continue;
    }
    if (c === "'" || c === '"') {
      const end = stringEnd(sql, i);
      push('string', i, end);
      i = end;
      continue;
    }
    if (c === '`') {
      const end = quotedEnd(sql, i);
      push('quoted', i, end, unescapeQuoted(sql.slice(i + 1, end - 1)));
      i = end;
      continue;
    }
    if (isWordStart(c)) {
      let j = i + 1;
      while (j < n && isWordChar(sql[j]!)) j++;
      const word = sql.slice(i, j);
      const q = sql[j];
      if ((q === "'" || q === '"') && STRING_PREFIXES.has(word.toLowerCase())) {
        const end = stringEnd(sql, j);
        push('string', i, end);
        i = end;
        continue;
      }
      push('word', i, j, word.toUpperCase());
      i = j;
      continue;
    }
    if (c === '.' && isDigit(next) && continuesPath(tokens.at(-1))) {
      push('op', i, i + 1); // `dataset.2024_sales`: the dot of a path, not a decimal point
      i++;
      continue;
    }
    if (isDigit(c) || (c === '.' && isDigit(next))) {
      i = lexNumber(sql, i, push);
      continue;
    }
    if (c === '@') {
      let j = next === '@' ? i + 2 : i + 1;
      if (!isWordStart(sql[j] ?? '')) fail('"@" must start a parameter name', i);
      while (j < n && isWordChar(sql[j]!)) j++;
      push('param', i, j);
      i = j;
      continue;
    }
    const two = sql.slice(i, i + 2);
    if (TWO_CHAR_OPS.has(two)) {
      push('op', i, i + 2);
      i += 2;
      continue;
    }
    if (ONE_CHAR_OPS.has(c)) {
      push('op', i, i + 1);
      i++;
      continue;
    }
    const shown = c.codePointAt(0)! < 0x20 || c.codePointAt(0)! > 0x7e ? `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}` : `"${c}"`;
    fail(`unexpected character ${shown}`, i);
  }
  return { tokens, comments };
}

/** Whether a `.` after this token joins a path (after a name or a closing bracket). */
function continuesPath(prev: BigQueryToken | undefined): boolean {
  if (!prev) return false;
  return prev.type === 'word' || prev.type === 'quoted' || (prev.type === 'op' && (prev.value === ')' || prev.value === ']'));
}

/** Where the string literal starting at `i` (its opening quote) ends, exclusive. */
function stringEnd(sql: string, i: number): number {
  const q = sql[i]!;
  const triple = sql.startsWith(q + q + q, i);
  const open = triple ? 3 : 1;
  let j = i + open;
  while (j < sql.length) {
    const c = sql[j]!;
    if (c === '\\') {
      j += 2; // in raw strings too: a backslash-quote does not end the literal
      continue;
    }
    if (triple) {
      if (sql.startsWith(q + q + q, j)) return j + 3;
    } else {
      if (c === q) return j + 1;
      if (c === '\n' || c === '\r') fail('a string is not closed on its line', i);
    }
    j++;
  }
  return fail('a string is not closed', i);
}

function quotedEnd(sql: string, i: number): number {
  let j = i + 1;
  while (j < sql.length) {
    const c = sql[j]!;
    if (c === '\\') {
      const escaped = sql[j + 1];
      // \x5f, \u0041, \n, …: BigQuery decodes them, so a name could be spelt past the lists
      if (escaped !== '`' && escaped !== '\\') fail('a `quoted identifier` may escape only ` and \\', j);
      j += 2;
      continue;
    }
    if (c === '`') {
      if (j === i + 1) fail('an empty `` identifier', i);
      return j + 1;
    }
    if (c === '\n' || c === '\r') break;
    j++;
  }
  return fail('a `quoted identifier` is not closed', i);
}

function unescapeQuoted(body: string): string {
  return body.replace(/\\(.)/g, '$1');
}

function lexNumber(sql: string, i: number, push: (type: BigQueryTokenType, start: number, end: number) => void): number {
  const n = sql.length;
  let j = i;
  if (sql[j] === '0' && (sql[j + 1] === 'x' || sql[j + 1] === 'X')) {
    j += 2;
    while (j < n && /[0-9a-fA-F]/.test(sql[j]!)) j++;
  } else {
    while (j < n && isDigit(sql[j]!)) j++;
    if (sql[j] === '.') {
      j++;
      while (j < n && isDigit(sql[j]!)) j++;
    }
    if ((sql[j] === 'e' || sql[j] === 'E') && (isDigit(sql[j + 1] ?? '') || ((sql[j + 1] === '+' || sql[j + 1] === '-') && isDigit(sql[j + 2] ?? '')))) {
      j += 2;
      while (j < n && isDigit(sql[j]!)) j++;
    }
  }
  // a path part may start with digits (`dataset.2024_sales`): one word
  if (j < n && isWordStart(sql[j]!) && /^\d+$/.test(sql.slice(i, j))) {
    while (j < n && isWordChar(sql[j]!)) j++;
    push('word', i, j);
    return j;
  }
  push('number', i, j);
  return j;
}

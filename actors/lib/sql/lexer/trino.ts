/**
 * Trino's lexer, for the Trino guard and the catalog lock: words (lower-cased), double-quoted
 * names, strings (with their U&/X prefixes), numbers, operators and punctuation, each token
 * with the depth of the brackets around it. Comments and whitespace are dropped; a character
 * Trino's lexer would refuse (a backquote, a control or invisible character outside strings)
 * throws SqlLexError, which the guard turns into its refusal.
 */
import { closingQuote, describeChar, SqlLexError } from './index.js';

export type TrinoTokenKind = 'word' | 'quoted' | 'string' | 'number' | 'punct';

export interface TrinoToken {
  kind: TrinoTokenKind;
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

function fail(index: number, what: string): never {
  throw new SqlLexError(what, index);
}

/** Trino's tokens, each with the bracket depth around it; throws SqlLexError on what Trino's lexer would refuse. */
export function lexTrino(sql: string): TrinoToken[] {
  const tokens: TrinoToken[] = [];
  let depth = 0;
  let i = 0;
  const push = (kind: TrinoTokenKind, value: string, start: number, end: number): void => {
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
      if (close < 0) fail(i, 'a /* comment is not closed');
      i = close + 2;
      continue;
    }
    if (c === "'" || ((c === 'U' || c === 'u') && next === '&' && sql[i + 2] === "'")) {
      const open = c === "'" ? i : i + 2;
      const close = closingQuote(sql, open + 1, "'");
      if (close < 0) fail(i, 'a string is not closed');
      push('string', sql.slice(i, close + 1), i, close + 1);
      i = close + 1;
      continue;
    }
    if ((c === 'X' || c === 'x') && next === "'") {
      // a binary literal: hex digits up to the next quote, with no '' escape (unlike strings)
      const close = sql.indexOf("'", i + 2);
      if (close < 0) fail(i, 'a binary literal is not closed');
      push('string', sql.slice(i, close + 1), i, close + 1);
      i = close + 1;
      continue;
    }
    if (c === '"') {
      const close = closingQuote(sql, i + 1, '"');
      if (close < 0) fail(i, 'a quoted identifier is not closed');
      const name = sql.slice(i + 1, close).replace(/""/g, '"');
      if (name === '') fail(i, 'an identifier is empty');
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
      if (j < sql.length && isIdentPart(sql[j] as string)) fail(i, 'an identifier may not start with a digit');
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
        if (depth < 0) fail(i, `"${c}" closes nothing`);
      }
      push('punct', c, i, i + 1);
      if (c === '(' || c === '[') depth++;
      i++;
      continue;
    }
    const shown = c === '`' ? 'backquoted identifiers are not Trino SQL' : `the character ${describeChar(Array.from(sql.slice(i))[0] as string)} is not allowed outside strings, quoted identifiers and comments`;
    fail(i, shown);
  }
  return tokens;
}

/**
 * MySQL's and MariaDB's lexer, for the MySQL guard and its catalog lock: words, backquoted names,
 * strings (doubled quotes and backslash escapes), punctuation; `#`, `-- ` and block comments
 * blanked out of the code the parser reads. Executable comments and optimizer hints, and `--`
 * without the space MySQL wants, throw SqlLexError: the guard refuses them.
 */
import { SqlLexError } from './index.js';

export type MysqlTokenKind = 'word' | 'quoted' | 'string' | 'punct';

export interface MysqlToken {
  kind: MysqlTokenKind;
  /** the text as written; for words upper-cased in `upper` */
  text: string;
  upper: string;
  start: number;
  end: number;
}

export interface MysqlLexed {
  tokens: MysqlToken[];
  /** the SQL with every comment replaced by spaces (newlines kept): what the parser reads */
  code: string;
}

const SPACE = /[ \t\n\r\f\v]/;
const WORD = /[A-Za-z0-9_$\u0080-\uffff]/;

/**
 * MySQL's lexical rules, as far as they decide what is code, string, identifier or comment;
 * throws SqlLexError (its message and details the guard's refusal) on what it will not read.
 */
export function lexMysql(sql: string): MysqlLexed {
  const tokens: MysqlToken[] = [];
  const code = sql.split('');
  const blank = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (code[k] !== '\n') code[k] = ' ';
  };
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql[i]!;
    if (SPACE.test(c)) {
      i++;
      continue;
    }
    // # comment and -- comment (MySQL wants a space or control character after the dashes)
    if (c === '#' || (c === '-' && sql[i + 1] === '-' && (i + 2 >= n || sql.charCodeAt(i + 2) <= 32))) {
      const nl = sql.indexOf('\n', i);
      const end = nl < 0 ? n : nl;
      blank(i, end);
      i = end;
      continue;
    }
    if (c === '-' && sql[i + 1] === '-') {
      throw new SqlLexError(`"--" must be followed by a space to start a comment: MySQL reads "${sql.slice(i, i + 6)}" as two minus signs, the parser as a comment; write "- -" or "-- " (at character ${i + 1})`, i, { position: i + 1 });
    }
    if (c === '/' && sql[i + 1] === '*') {
      const close = sql.indexOf('*/', i + 2);
      if (close < 0) throw new SqlLexError(`the SQL does not parse as MySQL: unterminated /* comment (at character ${i + 1})`, i, { position: i + 1 });
      const body = sql.slice(i + 2, close);
      if (/^!|^M!/i.test(body)) {
        throw new SqlLexError(`the SQL holds an executable comment ("/*${body.slice(0, body.startsWith('!') ? 1 : 2)} ... */"), which MySQL runs as code; it is not allowed`, i, { comment: 'executable' });
      }
      if (body.startsWith('+')) {
        throw new SqlLexError('the SQL holds an optimizer hint ("/*+ ... */"), which can change the server\'s limits for the query; it is not allowed', i, { comment: 'hint' });
      }
      blank(i, close + 2);
      i = close + 2;
      continue;
    }
    if (c === "'" || c === '"') {
      const end = quotedEnd(sql, i, c, true);
      tokens.push(token('string', sql, i, end));
      i = end;
      continue;
    }
    if (c === '`') {
      const end = quotedEnd(sql, i, '`', false);
      tokens.push(token('quoted', sql, i, end));
      i = end;
      continue;
    }
    if (WORD.test(c)) {
      let j = i + 1;
      while (j < n && WORD.test(sql[j]!)) j++;
      tokens.push(token('word', sql, i, j));
      i = j;
      continue;
    }
    tokens.push(token('punct', sql, i, i + 1));
    i++;
  }
  return { tokens, code: code.join('') };
}

function token(kind: MysqlTokenKind, sql: string, start: number, end: number): MysqlToken {
  const text = sql.slice(start, end);
  return { kind, text, upper: kind === 'word' ? text.toUpperCase() : text, start, end };
}

/** Where a quoted string or identifier ends: doubled quotes, and (strings only) backslash escapes. */
function quotedEnd(sql: string, start: number, quote: string, backslash: boolean): number {
  let i = start + 1;
  while (i < sql.length) {
    const c = sql[i]!;
    if (backslash && c === '\\') {
      i += 2;
      continue;
    }
    if (c === quote) {
      if (sql[i + 1] === quote) {
        i += 2;
        continue;
      }
      return i + 1;
    }
    i++;
  }
  const what = quote === '`' ? 'identifier' : 'string';
  throw new SqlLexError(`the SQL does not parse as MySQL: unterminated quoted ${what} (at character ${start + 1})`, start, { position: start + 1 });
}

/**
 * The tolerant scan the alert scorer reads SQL with: any dialect, never refusing. Words (lower-
 * cased), quoted identifiers ("" and `` ` ``, unquoted and lower-cased), numbers and the
 * punctuation `. , * ( ) ; =`; comments, strings and dollar-quoted bodies are skipped, and an
 * unclosed one runs to the end. It sees what the SQL says, not whether a dialect accepts it:
 * the guards (actors/executor/guard) decide that, with their own dialect lexers.
 */
import { closingQuote } from './index.js';

export type ScanToken =
  | { t: 'word'; v: string }
  | { t: 'ident'; v: string }
  | { t: 'num'; v: string }
  | { t: 'punct'; v: string };

const WORD_START = /[A-Za-z_\u0080-\uffff]/;
const WORD_CHAR = /[A-Za-z0-9_$\u0080-\uffff]/;

/** Words, quoted identifiers, numbers and `. , * ( ) ; =`; comments and strings dropped. */
export function scan(sql: string): ScanToken[] {
  const out: ScanToken[] = [];
  const n = sql.length;
  let i = 0;
  while (i < n) {
    const c = sql[i]!;
    const next = sql[i + 1];
    if (c === '-' && next === '-') {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? n : end + 1;
    } else if (c === '/' && next === '*') {
      const end = sql.indexOf('*/', i + 2);
      i = end < 0 ? n : end + 2;
    } else if (c === '\'') {
      i = skipQuoted(sql, i, '\'');
    } else if (c === '"' || c === '`') {
      const end = skipQuoted(sql, i, c);
      out.push({ t: 'ident', v: sql.slice(i + 1, end - 1).split(c + c).join(c).toLowerCase() });
      i = end;
    } else if (c === '$' && (i === 0 || !WORD_CHAR.test(sql[i - 1]!))) {
      const m = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i, i + 66));
      if (m) {
        const end = sql.indexOf(m[0], i + m[0].length);
        i = end < 0 ? n : end + m[0].length;
      } else {
        i++;
      }
    } else if (WORD_START.test(c)) {
      let j = i + 1;
      while (j < n && WORD_CHAR.test(sql[j]!)) j++;
      out.push({ t: 'word', v: sql.slice(i, j).toLowerCase() });
      i = j;
    } else if (c >= '0' && c <= '9') {
      let j = i + 1;
      while (j < n && /[0-9.eE]/.test(sql[j]!)) j++;
      out.push({ t: 'num', v: sql.slice(i, j) });
      i = j;
    } else {
      if ('.,*();='.includes(c)) out.push({ t: 'punct', v: c });
      i++;
    }
  }
  return out;
}

/** The index just after the closing quote (a doubled quote is an escaped one); the end of the SQL when it never closes. */
function skipQuoted(sql: string, start: number, q: string): number {
  const end = closingQuote(sql, start + 1, q);
  return end < 0 ? sql.length : end + 1;
}

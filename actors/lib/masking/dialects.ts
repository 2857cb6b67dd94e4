/**
 * Which parser reads a dialect's SQL for lineage, in order, until one parses it:
 *
 * - postgresql: PostgreSQL's parser (libpg-query).
 * - trino: PostgreSQL's parser on the text as is (Trino quotes like PostgreSQL: "ident",
 *   'string' with '' escapes; its queries have the same shape), then node-sql-parser's Trino
 *   grammar.
 * - mysql, bigquery: PostgreSQL's parser on a lexical translation of the text (below), then
 *   node-sql-parser's grammar for the dialect (MySQL, then MariaDB; BigQuery).
 *
 * None parses it → the opaque query: every column's lineage is unknown (masking fails closed).
 *
 * The translation for MySQL/BigQuery keeps the statement's structure and changes only the
 * lexical layer PostgreSQL reads differently: every string literal ('…', "…", BigQuery's
 * '''…''', r'…', b"…", with backslash escapes) becomes a dollar-quoted constant with the same
 * text (`$s$…$s$`: no escape can end it early; only the words of JSON paths are read from it),
 * backquoted identifiers become "double-quoted" (BigQuery's `proj.ds.t` path split into
 * "proj"."ds"."t"), `#` comments are dropped. Text it cannot lex (an unclosed string or
 * quote) is not translated: the dialect's own grammar gets it.
 */
import type { Dialect } from '../../../protocol/schemas/common.js';
import { OPAQUE_QUERY, type Query } from './lineage.js';
import { pgQuery, pgQueryOrUndefined, preparePgParser } from './lineage-pg.js';
import { nspQuery } from './lineage-nsp.js';

export function prepareParsers(): Promise<void> {
  return preparePgParser();
}

export function parseForLineage(sql: string, dialect: Dialect): Query {
  if (dialect === 'postgresql') return pgQuery(sql);
  const text = dialect === 'trino' ? sql : toPostgresText(sql, dialect);
  const viaPg = text !== undefined ? pgQueryOrUndefined(text, dialect) : undefined;
  if (viaPg !== undefined) return viaPg;
  return nspQuery(sql, dialect) ?? OPAQUE_QUERY;
}

/** A PostgreSQL string constant holding `text` as written (escapes left alone: only its words matter). */
function dollarQuoted(text: string): string {
  let tag = 's';
  for (let i = 0; text.includes(`$${tag}$`); i++) tag = `s${i}`;
  return `$${tag}$${text}$${tag}$`;
}

/** MySQL/BigQuery text for PostgreSQL's parser, or undefined when it does not lex. */
export function toPostgresText(sql: string, dialect: 'mysql' | 'bigquery'): string | undefined {
  let out = '';
  let i = 0;
  const n = sql.length;
  /** the end of a quoted run opened at `from` with `quote` (backslash escapes; doubled quote in MySQL) */
  const closeQuote = (from: number, quote: string, triple: boolean): number => {
    let j = from;
    while (j < n) {
      const c = sql[j]!;
      if (c === '\\') {
        j += 2;
        continue;
      }
      if (triple) {
        if (sql.startsWith(quote.repeat(3), j)) return j + 3;
        j++;
        continue;
      }
      if (c === quote) {
        if (dialect === 'mysql' && sql[j + 1] === quote) {
          j += 2;
          continue;
        }
        return j + 1;
      }
      j++;
    }
    return -1;
  };
  while (i < n) {
    const c = sql[i]!;
    const next = sql[i + 1];
    if (c === '-' && next === '-') {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? n : end;
      out += ' ';
      continue;
    }
    if (c === '#') {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? n : end;
      out += ' ';
      continue;
    }
    if (c === '/' && next === '*') {
      const end = sql.indexOf('*/', i + 2);
      if (end < 0) return undefined;
      i = end + 2;
      out += ' ';
      continue;
    }
    if (c === "'" || c === '"') {
      const triple = dialect === 'bigquery' && sql.startsWith(c.repeat(3), i);
      const open = triple ? 3 : 1;
      const end = closeQuote(i + open, c, triple);
      if (end < 0) return undefined;
      out += dollarQuoted(sql.slice(i + open, end - open));
      i = end;
      continue;
    }
    if (c === '`') {
      let j = i + 1;
      let name = '';
      for (;;) {
        if (j >= n) return undefined;
        if (sql[j] === '`') {
          if (sql[j + 1] === '`') {
            name += '`';
            j += 2;
            continue;
          }
          break;
        }
        name += sql[j];
        j++;
      }
      const parts = dialect === 'bigquery' ? name.split('.') : [name];
      out += parts.map((p) => `"${p.replace(/"/g, '""')}"`).join('.');
      i = j + 1;
      continue;
    }
    if (/[A-Za-z_]/.test(c)) {
      let j = i + 1;
      while (j < n && /[A-Za-z0-9_$]/.test(sql[j]!)) j++;
      const word = sql.slice(i, j);
      // BigQuery string prefixes: r'…', b"…", rb'…'; MySQL charset introducers: _utf8mb4'…'
      const q = sql[j];
      if ((q === "'" || q === '"') && (/^(r|b|rb|br)$/i.test(word) || (dialect === 'mysql' && /^_\w+$/.test(word)))) {
        i = j;
        continue;
      }
      out += word;
      i = j;
      continue;
    }
    out += c;
    i++;
  }
  return out;
}

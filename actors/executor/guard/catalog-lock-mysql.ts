/**
 * The catalog lock for MySQL / MariaDB (plugins.auth.enforce_catalog_lock with allowed_catalogs):
 * on MySQL the "catalog" is the database, so the SQL of a session, a token or (while plugins.auth
 * is on) the server's own connection may name no database but the one it is connected to:
 * `otherdb.t`, `` `otherdb`.`t` ``, `otherdb.t.col`, `otherdb.f()`, `information_schema.…`,
 * `mysql.user` are refused wherever they are (joins, subqueries, CTEs, set operations, the select
 * list). It runs after the MySQL guard, on the statement that will run.
 *
 * Two readers, and both must agree that only the session's database is named:
 *
 * 1. The tokens, with the MySQL guard's own lexer (guard/mysql.ts `lex`: backticks quote names,
 *    `"` and `'` quote strings, the guard's session keeps ANSI_QUOTES off; comments are not
 *    code). Every dotted name is looked at:
 *    - four parts or more: refused (MySQL has at most `db.table.column`);
 *    - three parts (`db.t.col`, `db.t.*`): the first is a database;
 *    - two parts in a table position (after FROM, JOIN, STRAIGHT_JOIN, a comma of a FROM list,
 *      inside a parenthesised table list, after TABLE, NEXT/PREVIOUS VALUE FOR, in
 *      NEXTVAL/LASTVAL/SETVAL) or called (`db.f(…)`): the first is a database;
 *    - two parts elsewhere: `alias.column` when the first part is a table, alias or CTE of the
 *      statement, else it is taken for a database (fail closed);
 *    - user and system variables (`@x.y`, `@@session.x`) are not names of tables.
 *    ODBC escapes (`{ OJ … }`), a string used as a name (`'db'.t`) and two dots in a row are
 *    refused: this reader does not follow them.
 * 2. node-sql-parser's table list of the statement (the grammar the guard parsed it with): every
 *    table it finds must be unqualified or in the session's database.
 *
 * Database names compare exactly, as MySQL compares them on Linux (lower_case_table_names=0):
 * `SHOP.t` is another database than `shop`, so it is refused; on a server that ignores case the
 * refusal is only stricter than needed. The allowed_schemas of a MySQL entry have no meaning
 * here (a MySQL database has no schemas inside it). A lock without a database (the server's
 * connection has none) allows no qualified name at all.
 */
import { createRequire } from 'node:module';
import type { Parser as ParserType } from 'node-sql-parser';
import { CortadoError } from '../../../protocol/errors.js';
import type { AllowedCatalog, CatalogLock } from './catalog-lock.js';
import { lex } from './mysql.js';

type Token = ReturnType<typeof lex>['tokens'][number];

/**
 * The lock of one request on MySQL, or undefined when it does not apply (off, or no
 * allowed_catalogs). `database`: the database its connection runs in ('' = none).
 */
export function mysqlCatalogLockFor(opts: { enforce: boolean; allowed: readonly AllowedCatalog[]; database: string }): CatalogLock | undefined {
  if (!opts.enforce || opts.allowed.length === 0) return undefined;
  const catalogs = new Map<string, ReadonlySet<string>>();
  if (opts.database) catalogs.set(opts.database, new Set<string>());
  return { catalogs, sessionCatalog: opts.database, dialect: 'mysql' };
}

function refuse(reason: string, extra: Record<string, unknown> = {}): CortadoError {
  return new CortadoError('SQL_REJECTED', reason, { kind: 'catalog_lock', ...extra });
}

function scopeText(lock: CatalogLock): string {
  return lock.sessionCatalog ? `this session is locked to database "${lock.sessionCatalog}"` : 'this session has no database it may name';
}

// ---- reader 1: the tokens -------------------------------------------------------------------

function isName(t: Token | undefined): t is Token {
  return t?.kind === 'word' || t?.kind === 'quoted';
}

function isPunct(t: Token | undefined, value: string): boolean {
  return t?.kind === 'punct' && t.text === value;
}

function isWord(t: Token | undefined, upper: string): boolean {
  return t?.kind === 'word' && t.upper === upper;
}

function nameOf(t: Token): string {
  return t.kind === 'quoted' ? t.text.slice(1, -1).replace(/``/g, '`') : t.text;
}

/** `3`, `1e3`: a word that starts a number, not a name (`123e` and `1abc` are names to MySQL). */
function isNumberStart(t: Token | undefined): boolean {
  return t?.kind === 'word' && /^\d+(?:e\d+)?$/i.test(t.text);
}

/** `14` of `3.14`, `5e` of `1.5e-3`: the fraction after a number's dot. */
function isFraction(t: Token | undefined): boolean {
  return t?.kind === 'word' && /^\d+(?:e\d*)?$/i.test(t.text);
}

interface Chain {
  parts: Token[];
  /** ends in `.*` */
  star: boolean;
  end: number;
}

function chainAt(tokens: Token[], i: number): Chain {
  const parts: Token[] = [tokens[i] as Token];
  let j = i + 1;
  let star = false;
  while (isPunct(tokens[j], '.')) {
    if (isName(tokens[j + 1])) {
      parts.push(tokens[j + 1] as Token);
      j += 2;
    } else {
      if (isPunct(tokens[j + 1], '*')) {
        star = true;
        j += 2;
      }
      break;
    }
  }
  return { parts, star, end: j };
}

/** Words that end a FROM clause (at its own depth): after them a comma no longer separates tables. */
const FROM_CLAUSE_END = new Set(['WHERE', 'GROUP', 'HAVING', 'WINDOW', 'ORDER', 'LIMIT', 'UNION', 'INTERSECT', 'EXCEPT', 'INTO', 'PROCEDURE', 'RETURNING']);
/** Words that open a derived table or a subquery after `(`. */
const SUBQUERY = new Set(['SELECT', 'WITH', 'VALUES', 'TABLE']);
/** MariaDB's sequence functions: their argument is a table. */
const SEQUENCE_FUNCTIONS = new Set(['NEXTVAL', 'LASTVAL', 'SETVAL']);
/** Words after a table reference that are not its alias. */
const NOT_AN_ALIAS = new Set([
  'ON', 'USING', 'JOIN', 'STRAIGHT_JOIN', 'INNER', 'LEFT', 'RIGHT', 'FULL', 'OUTER', 'CROSS', 'NATURAL', 'WHERE', 'GROUP', 'ORDER', 'HAVING',
  'LIMIT', 'OFFSET', 'UNION', 'INTERSECT', 'EXCEPT', 'WINDOW', 'FOR', 'AS', 'LATERAL', 'WITH', 'SELECT', 'FROM', 'AND', 'OR', 'XOR', 'WHEN',
  'THEN', 'ELSE', 'END', 'IS', 'NOT', 'IN', 'USE', 'IGNORE', 'FORCE', 'PARTITION', 'INTO', 'LOCK',
]);

/** Each token's parenthesis depth: `(` and `)` carry the depth outside them. */
function depths(tokens: Token[]): number[] {
  const out: number[] = [];
  let d = 0;
  for (const t of tokens) {
    if (isPunct(t, ')')) d = Math.max(0, d - 1);
    out.push(d);
    if (isPunct(t, '(')) d++;
  }
  return out;
}

/** The index of the `)` that closes the `(` at `open` (tokens.length when it is not closed). */
function closing(tokens: Token[], depth: number[], open: number): number {
  for (let k = open + 1; k < tokens.length; k++) if (isPunct(tokens[k], ')') && depth[k] === depth[open]) return k;
  return tokens.length;
}

/** Token indices where a table reference starts. */
function tableStarts(tokens: Token[], depth: number[]): Set<number> {
  const out = new Set<number>();
  // a table list from `from` (one past FROM, or one past `(`), at depth d: its first item and each item after a comma
  const list = (from: number, d: number): void => {
    mark(from);
    for (let j = from; j < tokens.length; j++) {
      const u = tokens[j] as Token;
      if ((depth[j] ?? 0) < d) break;
      if ((depth[j] ?? 0) > d) continue;
      if (u.kind === 'word' && FROM_CLAUSE_END.has(u.upper)) break;
      if (isPunct(u, ';')) break;
      if (isPunct(u, ',')) mark(j + 1);
    }
  };
  const mark = (k: number): void => {
    const t = tokens[k];
    if (isPunct(t, '(')) {
      const next = tokens[k + 1];
      if (next?.kind === 'word' && SUBQUERY.has(next.upper)) return; // a derived table: its own FROM is found on its own
      list(k + 1, (depth[k] ?? 0) + 1); // a parenthesised table list: (a, b) or (a JOIN b ON …)
      return;
    }
    if (isName(t)) out.add(k);
    else if (isPunct(t, '.') && isName(tokens[k + 1])) out.add(k + 1); // `.t`: ODBC's table of the default database
  };
  const selectAt: boolean[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    const d = depth[i] ?? 0;
    if (isPunct(t, '(')) selectAt[d + 1] = false;
    if (t.kind !== 'word') continue;
    if (t.upper === 'SELECT') selectAt[d] = true;
    else if (t.upper === 'JOIN' || t.upper === 'STRAIGHT_JOIN') mark(i + 1);
    else if (t.upper === 'TABLE' && !isPunct(tokens[i + 1], '(')) mark(i + 1);
    else if (t.upper === 'FOR' && isWord(tokens[i - 1], 'VALUE')) mark(i + 1);
    else if (SEQUENCE_FUNCTIONS.has(t.upper) && isPunct(tokens[i + 1], '(')) mark(i + 2);
    else if (t.upper === 'FROM' && selectAt[d]) list(i + 1, d);
  }
  return out;
}

/** Names that may qualify a column (lower-cased): tables (last part), their aliases, CTE names, AS names. */
function qualifierNames(tokens: Token[], depth: number[], starts: ReadonlySet<number>): Set<string> {
  const out = new Set<string>();
  const alias = (t: Token | undefined): void => {
    if (isName(t) && !(t.kind === 'word' && NOT_AN_ALIAS.has(t.upper))) out.add(nameOf(t).toLowerCase());
  };
  for (const s of starts) {
    const { parts, end } = chainAt(tokens, s);
    out.add(nameOf(parts.at(-1) as Token).toLowerCase());
    if (isWord(tokens[end], 'AS')) alias(tokens[end + 1]);
    else alias(tokens[end]);
  }
  tokens.forEach((t, i) => {
    if (isWord(t, 'AS')) alias(tokens[i + 1]);
    if (isPunct(t, ')')) alias(tokens[i + 1]); // a derived table's alias without AS
    // a CTE: WITH [RECURSIVE] name [(columns)] AS (…), name …
    if (!isName(t) || !(isWord(tokens[i - 1], 'WITH') || isWord(tokens[i - 1], 'RECURSIVE') || isPunct(tokens[i - 1], ','))) return;
    const after = isPunct(tokens[i + 1], '(') ? closing(tokens, depth, i + 1) + 1 : i + 1;
    if (isWord(tokens[after], 'AS') && isPunct(tokens[after + 1], '(')) out.add(nameOf(t).toLowerCase());
  });
  return out;
}

function checkTokens(tokens: Token[], lock: CatalogLock): void {
  const depth = depths(tokens);
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k] as Token;
    if (isPunct(t, '{')) throw refuse('the SQL holds an ODBC escape ("{ … }"), which the catalog lock does not read: it is refused');
    if (isPunct(t, '.') && (isPunct(tokens[k + 1], '.') || tokens[k + 1]?.kind === 'string' || tokens[k - 1]?.kind === 'string')) {
      throw refuse('the SQL has a name the catalog lock cannot read (two dots in a row, or a quoted string used as a name): it is refused');
    }
  }
  const starts = tableStarts(tokens, depth);
  const qualifiers = qualifierNames(tokens, depth, starts);
  const allowed = (db: string): boolean => lock.catalogs.has(db);
  const check = (db: string, shown: string, why: string): void => {
    if (!allowed(db)) throw refuse(`the SQL reads ${shown}, in database "${db}"${why}, but ${scopeText(lock)}`, { database: db, name: shown });
  };

  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    if (isNumberStart(t) && !isPunct(tokens[i - 1], '.')) {
      // 3, 3.14, 1.5e-3: a number, and its fraction with it; a name after `3.` is read on its own
      if (isPunct(tokens[i + 1], '.') && isFraction(tokens[i + 2])) i += 2;
      continue;
    }
    if (!isName(t)) continue;
    const prev = tokens[i - 1];
    const variable = isPunct(prev, '@') && prev!.end === t.start;
    const at = i;
    const chain = chainAt(tokens, i);
    i = chain.end - 1;
    if (variable) continue; // @x.y, @@session.x: a variable, not a table
    const names = chain.parts.map(nameOf);
    const shown = chain.parts.map((p) => p.text).join('.') + (chain.star ? '.*' : '');
    const count = names.length + (chain.star ? 1 : 0);
    const call = isPunct(tokens[chain.end], '(');
    const table = starts.has(at) && !call;
    if (count > 3) throw refuse(`the SQL names ${shown}, which has more parts than database.table.column: the catalog lock cannot tell what it reads`, { name: shown });
    if (count === 3) {
      check(names[0] as string, shown, '');
      continue;
    }
    if (count === 2 && names.length === 2) {
      if (table || call) {
        check(names[0] as string, shown, '');
      } else if (!qualifiers.has((names[0] as string).toLowerCase())) {
        check(names[0] as string, shown, ` ("${names[0]}" is not a table or alias of the statement, so it is taken for a database)`);
      }
    }
  }
}

// ---- reader 2: the parser's table list ------------------------------------------------------

type ParserModule = { Parser: new () => ParserType };
let parsers: Array<{ parser: ParserType; database: string }> | undefined;

function grammars(): Array<{ parser: ParserType; database: string }> {
  if (!parsers) {
    // the same CommonJS bundles the guard loads (required, so they are shared with it)
    const require = createRequire(import.meta.url);
    parsers = [
      { parser: new (require('node-sql-parser/build/mysql.js') as ParserModule).Parser(), database: 'MySQL' },
      { parser: new (require('node-sql-parser/build/mariadb.js') as ParserModule).Parser(), database: 'MariaDB' },
    ];
  }
  return parsers;
}

function checkTableList(code: string, lock: CatalogLock): void {
  let list: string[] | undefined;
  for (const { parser, database } of grammars()) {
    try {
      list = parser.tableList(code, { database });
      break;
    } catch {
      /* the other grammar */
    }
  }
  if (!list) throw refuse('the SQL does not parse, so the catalog lock cannot tell which databases it names: it is refused');
  for (const entry of list) {
    // "select::db::table", db "null" when unqualified
    const [, db, table] = entry.split('::');
    if (db === undefined || db === 'null' || db === '') continue;
    if (!lock.catalogs.has(db)) throw refuse(`the SQL reads ${db}.${table ?? '?'}, in database "${db}", but ${scopeText(lock)}`, { database: db, name: `${db}.${table ?? ''}` });
  }
}

/**
 * Throws SQL_REJECTED (details.kind `catalog_lock`) when the SQL names a database the lock does
 * not allow, or cannot be read.
 */
export function checkMysqlCatalogLock(sql: string, lock: CatalogLock): void {
  let lexed: ReturnType<typeof lex>;
  try {
    lexed = lex(sql);
  } catch {
    throw refuse('the SQL cannot be read, so the catalog lock cannot tell which databases it names: it is refused');
  }
  checkTokens(lexed.tokens, lock);
  checkTableList(lexed.code, lock);
}

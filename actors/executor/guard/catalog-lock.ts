/**
 * The catalog lock (plugins.auth.enforce_catalog_lock; Trino, with allowed_catalogs): the SQL
 * of a session or token may name no catalog but the one it is scoped to (a catalog-less
 * discovery token: any of allowed_catalogs), and within a catalog whose allowed_schemas are
 * listed, no other schema. It runs after the Trino guard, on the statement that will run,
 * with the guard's own lexer (guard/trino.ts), so quoting, case, comments and strings are read
 * exactly as Trino reads them; names compare lower-cased, as Trino compares them.
 *
 * Every dotted name of the statement is looked at, wherever it is (joins, subqueries, CTEs,
 * scalar subqueries, set operations), not only the ones found in FROM:
 *
 * - three parts in a table position (`cat.schema.t`, `"Cat"."s"."t"`): the catalog and schema
 *   must be allowed; more than three parts: refused;
 * - two parts in a table position (`schema.t`): relative to the session catalog, so the schema
 *   must be allowed there; one part: the session catalog and schema, always allowed;
 * - a function named with three parts (`cat.schema.f(...)`, a catalog's SQL routine): the catalog
 *   must be allowed;
 * - anywhere else, a name of three or more parts must start with an allowed catalog: a column
 *   qualified that way (`t.col.field`, `schema.t.col`) cannot be told apart from a catalog, so
 *   it is refused (fail closed; `alias.col` is what generated SQL uses);
 * - anywhere else, a two-part name whose first part is not a table, alias or CTE of the
 *   statement is checked as `schema.table` (a table in a position this reader does not know).
 *
 * SQL the lexer cannot read is refused. Trino's own access control for the user stays behind
 * this: the lock is about what the scope promises, not a replacement for grants.
 *
 * On MySQL the catalog is the database: a lock with `dialect: 'mysql'` is read by
 * guard/catalog-lock-mysql.ts (its lexer, its names compared exactly), to which
 * checkCatalogLock hands it.
 */
import { CortadoError } from '../../../protocol/errors.js';
import type { TrinoToken as Token } from '../../lib/sql/lexer/trino.js';
import { chainAt, isName, isPunct, isWord, tokenize } from './trino.js';
import { checkMysqlCatalogLock } from './catalog-lock-mysql.js';

export interface CatalogLock {
  /** the catalogs the SQL may name (lower-cased) → the schemas allowed in each (lower-cased; empty = any) */
  readonly catalogs: ReadonlyMap<string, ReadonlySet<string>>;
  /** the catalog one- and two-part names resolve in (lower-cased); '' = none (Trino then refuses relative names) */
  readonly sessionCatalog: string;
  /** whose names: Trino catalogs (the default), or MySQL databases (guard/catalog-lock-mysql.ts: compared exactly) */
  readonly dialect?: 'mysql';
}

export interface AllowedCatalog {
  name: string;
  allowed_schemas: readonly string[];
}

/**
 * The lock for one request, or undefined when it does not apply (off, no allowed_catalogs).
 * `catalog`: the catalog the request's connection runs in ('' = none); `discovery`: a
 * catalog-less discovery token, which may name any allowed catalog.
 */
export function catalogLockFor(opts: { enforce: boolean; allowed: readonly AllowedCatalog[]; catalog: string; discovery: boolean }): CatalogLock | undefined {
  if (!opts.enforce || opts.allowed.length === 0) return undefined;
  const all = new Map<string, ReadonlySet<string>>();
  for (const c of opts.allowed) all.set(c.name.toLowerCase(), new Set(c.allowed_schemas.map((s) => s.toLowerCase())));
  if (opts.discovery) return { catalogs: all, sessionCatalog: '' };
  const own = opts.catalog.toLowerCase();
  if (!own) return { catalogs: new Map(), sessionCatalog: '' };
  return { catalogs: new Map([[own, all.get(own) ?? new Set<string>()]]), sessionCatalog: own };
}

function refuse(reason: string, extra: Record<string, unknown> = {}): CortadoError {
  return new CortadoError('SQL_REJECTED', reason, { kind: 'catalog_lock', ...extra });
}

const FROM_CLAUSE_END = new Set(['where', 'group', 'having', 'window', 'order', 'offset', 'limit', 'fetch', 'union', 'intersect', 'except', 'match_recognize']);
/** Words that start something other than a table reference after FROM / JOIN. */
const NOT_A_TABLE = new Set(['lateral', 'unnest', 'table', 'json_table', 'select', 'values', 'with']);
/** Words that follow a table reference without being its alias. */
const NOT_AN_ALIAS = new Set([
  'on', 'using', 'join', 'inner', 'left', 'right', 'full', 'outer', 'cross', 'natural', 'where', 'group', 'order', 'having',
  'limit', 'offset', 'fetch', 'union', 'intersect', 'except', 'window', 'tablesample', 'for', 'match_recognize', 'as', 'lateral',
  'with', 'select', 'from', 'and', 'or', 'when', 'then', 'else', 'end', 'is', 'not', 'in',
]);

/** Token indices where a table reference starts: after FROM (of a SELECT), each comma of its list, JOIN, TABLE. */
function tableStarts(tokens: Token[]): Set<number> {
  const out = new Set<number>();
  const mark = (k: number): void => {
    while (isPunct(tokens[k], '(')) k++; // a parenthesised join: (a JOIN b ON ...)
    const t = tokens[k];
    if (!isName(t) || (t.kind === 'word' && NOT_A_TABLE.has(t.value))) return;
    out.add(k);
  };
  const selectAt: boolean[] = [false];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    if (t.kind === 'punct' && (t.value === '(' || t.value === '[')) selectAt[t.depth + 1] = false;
    if (t.kind !== 'word') continue;
    if (t.value === 'select') selectAt[t.depth] = true;
    else if (t.value === 'join') mark(i + 1);
    else if (t.value === 'table' && !isPunct(tokens[i + 1], '(')) mark(i + 1);
    else if (t.value === 'from' && selectAt[t.depth] && !isWord(tokens[i - 1], 'distinct')) {
      mark(i + 1);
      for (let j = i + 1; j < tokens.length; j++) {
        const u = tokens[j] as Token;
        if (u.depth < t.depth) break;
        if (u.depth > t.depth) continue;
        if (u.kind === 'word' && FROM_CLAUSE_END.has(u.value)) break;
        if (isPunct(u, ',')) mark(j + 1);
      }
    }
  }
  return out;
}

/** Names that may qualify a column: tables (last part), their aliases, CTE names, AS names, lambda parameters. */
function qualifierNames(tokens: Token[], starts: ReadonlySet<number>): Set<string> {
  const out = new Set<string>();
  const alias = (t: Token | undefined): void => {
    if (isName(t) && !(t.kind === 'word' && NOT_AN_ALIAS.has(t.value))) out.add(t.value.toLowerCase());
  };
  for (const s of starts) {
    const { parts, end } = chainAt(tokens, s);
    out.add((parts.at(-1) as Token).value.toLowerCase());
    if (isWord(tokens[end], 'as')) alias(tokens[end + 1]);
    else alias(tokens[end]);
  }
  tokens.forEach((t, i) => {
    if (isWord(t, 'as')) alias(tokens[i + 1]);
    if (isPunct(t, ')')) alias(tokens[i + 1]); // a subquery's alias without AS
    if (isName(t) && isWord(tokens[i + 1], 'as') && isPunct(tokens[i + 2], '(')) out.add(t.value.toLowerCase()); // a CTE
    if (isName(t) && isPunct(tokens[i + 1], '->')) out.add(t.value.toLowerCase()); // x -> x.field
  });
  return out;
}

/**
 * Throws SQL_REJECTED (details.kind `catalog_lock`) when the SQL names a catalog or schema the
 * lock does not allow, or cannot be read.
 */
export function checkCatalogLock(sql: string, lock: CatalogLock): void {
  if (lock.dialect === 'mysql') {
    checkMysqlCatalogLock(sql, lock);
    return;
  }
  let tokens: Token[];
  try {
    tokens = tokenize(sql);
  } catch {
    throw refuse('the SQL cannot be read, so the catalog lock cannot tell which catalogs it names: it is refused');
  }
  const allowedList = [...lock.catalogs.keys()];
  const scopeText = lock.sessionCatalog
    ? `this session is locked to catalog "${lock.sessionCatalog}"`
    : allowedList.length
      ? `this scope may read only the catalogs ${allowedList.map((c) => `"${c}"`).join(', ')}`
      : 'this scope has no catalog it may name';

  const checkCatalog = (catalog: string, schema: string | undefined, name: string): void => {
    const schemas = lock.catalogs.get(catalog);
    if (!schemas) throw refuse(`the SQL reads ${name}, in catalog "${catalog}", but ${scopeText}`, { catalog, name });
    if (schema !== undefined && schemas.size > 0 && !schemas.has(schema)) {
      throw refuse(`the SQL reads ${name}, in schema "${schema}", which catalog "${catalog}" does not allow (allowed: ${[...schemas].join(', ')})`, { catalog, schema, name });
    }
  };

  const starts = tableStarts(tokens);
  const qualifiers = qualifierNames(tokens, starts);
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    if (!isName(t) || isPunct(tokens[i - 1], '.')) continue;
    const { parts, end } = chainAt(tokens, i);
    const names = parts.map((p) => p.value.toLowerCase());
    const shown = parts.map((p) => (p.kind === 'quoted' ? `"${p.value}"` : p.text)).join('.');
    const call = isPunct(tokens[end], '(');
    const table = starts.has(i) && !call;
    i = end - 1;

    if (names.length > 3 && (table || call)) {
      throw refuse(`the SQL names ${shown}, which has more parts than catalog.schema.table: the catalog lock cannot tell what it reads`, { name: shown });
    }
    if (names.length === 3 && (table || call)) {
      checkCatalog(names[0] as string, names[1] as string, shown);
      continue;
    }
    if (names.length >= 3) {
      // a column path: only when it starts with an allowed catalog (catalog.schema.table.column)
      if (!lock.catalogs.has(names[0] as string)) {
        throw refuse(`the SQL names ${shown}: the catalog lock cannot tell whether "${names[0]}" is a catalog (${scopeText}); qualify columns with a table alias (alias.column)`, { name: shown });
      }
      checkCatalog(names[0] as string, names[1] as string, shown);
      continue;
    }
    if (names.length === 2 && lock.sessionCatalog && (table || call || !qualifiers.has(names[0] as string))) {
      if (call) continue; // schema.f(): a routine of the session catalog
      checkCatalog(lock.sessionCatalog, names[0] as string, shown);
    }
  }
}

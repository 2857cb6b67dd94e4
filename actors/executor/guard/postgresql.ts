/**
 * The PostgreSQL guard, on the real PostgreSQL parser (libpg-query, WASM). Fails closed:
 * what does not parse does not run.
 *
 * Allowed: exactly one SelectStmt (plain SELECT, set operations, VALUES, TABLE x), with
 * CTEs, subqueries, window functions and so on. Refused anywhere in the tree: any other
 * statement (writable CTEs), SELECT INTO, FOR UPDATE/SHARE, and calls of denied functions,
 * whether written `f(x)` or in the attribute notation `(x).f` / `alias.f`, which PostgreSQL
 * also runs as a function call.
 *
 * Locations in the parse tree and the scanner's tokens are byte offsets into the UTF-8 text,
 * so the text is cut as bytes.
 */
import { loadModule, parseSync, scanSync } from 'libpg-query';
import type { A_Const, Node, ParseResult, RawStmt, SelectStmt } from 'libpg-query';
import { CortadoError } from '../../../protocol/errors.js';
import { deniedFunction } from './deny.js';
import { applyLimit, type ExistingLimit } from './limit.js';
import { rejected, type DialectGuard, type GuardLimits, type GuardResult } from './types.js';

let loading: Promise<void> | undefined;
let ready = false;

/** Load the WASM parser once; every later call is free. */
export function preparePostgres(): Promise<void> {
  loading ??= loadModule().then(() => {
    ready = true;
  });
  return loading;
}

export function guardPostgres(sql: string, limits: GuardLimits): GuardResult {
  if (!ready) throw new CortadoError('INTERNAL', 'the PostgreSQL parser is not loaded (call preparePostgres first)');
  if (sql.trim() === '') throw rejected('empty', 'the SQL is empty');

  let parsed: ParseResult;
  try {
    parsed = parseSync(sql);
  } catch (err) {
    throw parseRejection(sql, err);
  }
  const stmts = parsed.stmts ?? [];
  const raw = stmts[0];
  if (raw === undefined) throw rejected('empty', 'the SQL holds no statement, only comments or semicolons');
  if (stmts.length > 1) {
    throw rejected('multiple_statements', `only one statement may run, and this SQL holds ${stmts.length}`, { count: stmts.length });
  }
  const [type, body] = nodeEntry(raw.stmt);
  if (type !== 'SelectStmt') {
    const statement = statementName(type);
    throw rejected('not_select', `only a SELECT query may run; this is ${statement}`, { statement });
  }
  const select = body as SelectStmt;
  const tables = inspectTree(select);

  const bytes = Buffer.from(sql, 'utf8');
  const text = statementText(bytes, raw);
  const existing = existingLimit(select, bytes, text.start);
  const limited = applyLimit(text.value, existing, limits);
  return { ...limited, tables };
}

export const postgresGuard: DialectGuard = { prepare: preparePostgres, guard: guardPostgres };

// ---- the tree ---------------------------------------------------------------------------

/** `{ SelectStmt: {...} }` → ['SelectStmt', {...}] */
function nodeEntry(node: Node | undefined): [string, unknown] {
  const entry = node ? Object.entries(node)[0] : undefined;
  return entry ?? ['nothing', undefined];
}

const STMT_KEY = /^[A-Z][A-Za-z]*Stmt$/;

type Json = unknown;

interface Relation {
  name: string;
  unqualified: boolean;
  location: number;
}

/**
 * Walk the WHOLE tree once, refusing what may not run, and collect the relations read.
 * Generic on purpose: a node kind the rules do not know is still visited.
 */
function inspectTree(root: SelectStmt): string[] {
  const relations: Relation[] = [];
  const cteNames = new Set<string>();
  const stack: Array<{ node: Json; inCte: boolean }> = [{ node: root, inCte: false }];

  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const { node, inCte } = item;
    if (Array.isArray(node)) {
      for (const child of node) stack.push({ node: child, inCte });
      continue;
    }
    if (node === null || typeof node !== 'object') continue;
    for (const [key, value] of Object.entries(node)) {
      if (value === null || typeof value !== 'object') continue;
      checkNode(key, value, inCte);
      if (key === 'RangeVar') relations.push(relationOf(value as RangeVarLike));
      if (key === 'CommonTableExpr') {
        const name = (value as { ctename?: string }).ctename;
        if (name) cteNames.add(name);
      }
      stack.push({ node: value, inCte: inCte || key === 'CommonTableExpr' });
    }
  }

  const seen = new Set<string>();
  const out: string[] = [];
  for (const r of relations.sort((a, b) => a.location - b.location)) {
    if (r.unqualified && cteNames.has(r.name)) continue; // a CTE, not a relation of the database
    if (seen.has(r.name)) continue;
    seen.add(r.name);
    out.push(r.name);
  }
  return out;
}

const LOCK_NAMES: Record<string, string> = {
  LCS_FORUPDATE: 'FOR UPDATE',
  LCS_FORNOKEYUPDATE: 'FOR NO KEY UPDATE',
  LCS_FORSHARE: 'FOR SHARE',
  LCS_FORKEYSHARE: 'FOR KEY SHARE',
};

function checkNode(key: string, value: object, inCte: boolean): void {
  if (STMT_KEY.test(key) && key !== 'SelectStmt') {
    const statement = statementName(key);
    if (inCte) {
      throw rejected('writable_cte', `a WITH query may only read; this one holds ${statement}`, { statement });
    }
    throw rejected('not_select', `only a SELECT query may run; this one holds ${statement}`, { statement });
  }
  switch (key) {
    case 'intoClause':
      throw rejected('select_into', 'SELECT ... INTO creates a table; only reading is allowed');
    case 'lockingClause': {
      if (!Array.isArray(value) || value.length === 0) return;
      const first = (value[0] as { LockingClause?: { strength?: string } }).LockingClause?.strength ?? '';
      const clause = LOCK_NAMES[first] ?? 'FOR UPDATE/SHARE';
      throw rejected('locking', `${clause} locks rows; only reading without locks is allowed`, { clause });
    }
    case 'FuncCall': {
      const parts = stringsOf((value as { funcname?: Json[] }).funcname);
      checkFunction(parts.at(-1), 'call');
      return;
    }
    case 'ColumnRef': {
      // `alias.f` and `schema.alias.f` may be the attribute notation of a call f(alias).
      const parts = stringsOf((value as { fields?: Json[] }).fields);
      for (const part of parts.slice(1)) checkFunction(part, 'attribute');
      return;
    }
    case 'A_Indirection': {
      // `(expression).f` may be the attribute notation of a call f(expression).
      for (const part of stringsOf((value as { indirection?: Json[] }).indirection)) checkFunction(part, 'attribute');
      return;
    }
  }
}

function checkFunction(name: string | undefined, form: 'call' | 'attribute'): void {
  if (!name) return;
  const denied = deniedFunction('postgresql', name);
  if (!denied) return;
  const how = form === 'call' ? `calls ${denied.name}()` : `calls ${denied.name}() through the attribute notation`;
  throw rejected('dangerous_function', `the SQL ${how}, which is not allowed: ${denied.why}`, { function: denied.name });
}

/** The `sval` of each `{ String: { sval } }` item of a list (other items are skipped). */
function stringsOf(list: Json[] | undefined): string[] {
  const out: string[] = [];
  for (const item of list ?? []) {
    const s = (item as { String?: { sval?: string } } | null)?.String?.sval;
    if (typeof s === 'string') out.push(s);
  }
  return out;
}

interface RangeVarLike {
  catalogname?: string;
  schemaname?: string;
  relname?: string;
  location?: number;
}

function relationOf(rv: RangeVarLike): Relation {
  const parts = [rv.catalogname, rv.schemaname, rv.relname].filter((p): p is string => typeof p === 'string' && p !== '');
  return { name: parts.join('.'), unqualified: parts.length === 1, location: rv.location ?? 0 };
}

/** `CreateTableAsStmt` → `CREATE TABLE AS`, for messages. */
const STATEMENT_NAMES: Record<string, string> = {
  InsertStmt: 'INSERT',
  UpdateStmt: 'UPDATE',
  DeleteStmt: 'DELETE',
  MergeStmt: 'MERGE',
  CopyStmt: 'COPY',
  ExplainStmt: 'EXPLAIN',
  VariableSetStmt: 'SET',
  VariableShowStmt: 'SHOW',
  DoStmt: 'DO',
  CallStmt: 'CALL',
  CreateTableAsStmt: 'CREATE ... AS',
  CreateStmt: 'CREATE TABLE',
  ViewStmt: 'CREATE VIEW',
  IndexStmt: 'CREATE INDEX',
  CreateFunctionStmt: 'CREATE FUNCTION',
  CreateSeqStmt: 'CREATE SEQUENCE',
  DropStmt: 'DROP',
  TruncateStmt: 'TRUNCATE',
  AlterTableStmt: 'ALTER TABLE',
  GrantStmt: 'GRANT/REVOKE',
  GrantRoleStmt: 'GRANT/REVOKE',
  TransactionStmt: 'a transaction command',
  LockStmt: 'LOCK',
  VacuumStmt: 'VACUUM/ANALYZE',
  RefreshMatViewStmt: 'REFRESH MATERIALIZED VIEW',
  NotifyStmt: 'NOTIFY',
  ListenStmt: 'LISTEN',
  PrepareStmt: 'PREPARE',
  ExecuteStmt: 'EXECUTE',
  DeclareCursorStmt: 'DECLARE CURSOR',
  FetchStmt: 'FETCH',
};

function statementName(key: string): string {
  const known = STATEMENT_NAMES[key];
  if (known) return known;
  // AlterRoleStmt → ALTER ROLE
  return key.replace(/Stmt$/, '').replace(/([a-z])([A-Z])/g, '$1 $2').toUpperCase();
}

// ---- the text -----------------------------------------------------------------------------

/**
 * The statement's own text: from its first token to its end, without the semicolon and what
 * follows it. `start` is its byte offset in the whole SQL.
 */
function statementText(bytes: Buffer, raw: RawStmt): { value: string; start: number } {
  const start = raw.stmt_location ?? 0;
  const end = raw.stmt_len ? start + raw.stmt_len : bytes.length; // stmt_len 0: up to the end
  const value = bytes.subarray(start, end).toString('utf8').trimEnd();
  return { value, start };
}

/** What LIMIT the top-level statement has, and where its number sits in the statement text. */
function existingLimit(select: SelectStmt, bytes: Buffer, stmtStart: number): ExistingLimit {
  const count = select.limitCount;
  if (count === undefined) return { kind: 'none' }; // also OFFSET without LIMIT
  if (select.limitOption === 'LIMIT_OPTION_WITH_TIES') return { kind: 'other' }; // ties may exceed any count
  const [type, body] = nodeEntry(count);
  if (type !== 'A_Const') return { kind: 'other' };
  const value = integerOf(body as A_Const);
  if (value === undefined) return { kind: 'other' };

  const location = (body as A_Const).location ?? -1;
  const token = location >= 0 ? numberTokenAt(bytes, location) : undefined;
  if (!token) {
    // FETCH FIRST ROWS ONLY has an implicit 1 with no place in the text: nothing to edit
    return value === 1 ? { kind: 'constant', value, start: 0, end: 0 } : { kind: 'other' };
  }
  const statement = bytes.subarray(stmtStart);
  return {
    kind: 'constant',
    value,
    start: charIndex(statement, token.start - stmtStart),
    end: charIndex(statement, token.end - stmtStart),
  };
}

/** A non-negative integer constant (large ones come as Float with digits only), else undefined. */
function integerOf(c: A_Const): number | undefined {
  if (c.isnull) return undefined; // LIMIT ALL / LIMIT NULL
  if (c.ival !== undefined) {
    const v = c.ival.ival ?? 0; // the tree omits zero values
    return v >= 0 ? v : undefined;
  }
  if (c.fval?.fval !== undefined && /^\d+$/.test(c.fval.fval)) return Number(c.fval.fval);
  return undefined;
}

/** The scanner's integer token that starts at this byte offset. */
function numberTokenAt(bytes: Buffer, location: number): { start: number; end: number } | undefined {
  const tokens = scanSync(bytes.toString('utf8')).tokens;
  const token = tokens.find((t) => t.start === location);
  if (!token || (token.tokenName !== 'ICONST' && token.tokenName !== 'FCONST')) return undefined;
  return { start: token.start, end: token.end };
}

function charIndex(bytes: Buffer, byteOffset: number): number {
  return bytes.subarray(0, byteOffset).toString('utf8').length;
}

function parseRejection(sql: string, err: unknown): CortadoError {
  const e = err as { message?: string; sqlDetails?: { message?: string; cursorPosition?: number } };
  const message = e.sqlDetails?.message ?? e.message ?? 'unknown parser error';
  const extra: Record<string, unknown> = {};
  const cursor = e.sqlDetails?.cursorPosition;
  let where = '';
  if (typeof cursor === 'number' && cursor >= 0) {
    // the parser counts characters (code points) from 0; people count from 1
    const position = Array.from(sql).slice(0, cursor).join('').length + 1;
    extra.position = position;
    where = ` (at character ${position})`;
  }
  return rejected('parse', `the SQL does not parse as PostgreSQL: ${message}${where}`, extra);
}

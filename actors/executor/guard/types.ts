/**
 * What every dialect's SQL guard takes and gives back. A guard is a pure function: it
 * parses the SQL with the dialect's own parser, refuses anything that is not one read-only
 * query, and bounds the rows with a LIMIT edited into the SQL text.
 */
import { CortadoError } from '../../../protocol/errors.js';

/** Why the guard refused a statement: `details.kind` of the SQL_REJECTED error. */
export const RejectKind = {
  Empty: 'empty',
  Parse: 'parse',
  MultipleStatements: 'multiple_statements',
  NotSelect: 'not_select',
  WritableCte: 'writable_cte',
  SelectInto: 'select_into',
  Locking: 'locking',
  DangerousFunction: 'dangerous_function',
  /** a function (or operator, or aggregate) that is not on the dialect's allow-list nor in database.allowed_functions */
  FunctionNotAllowed: 'function_not_allowed',
  /** a relation outside the user's schemas: a system catalog or view that is not in the documented safe set */
  RelationNotAllowed: 'relation_not_allowed',
  /** a type (in a cast or a constructor) that is not a plain type: user-defined types, domains, reg* types, ... */
  TypeNotAllowed: 'type_not_allowed',
  /** an operator that is not on the dialect's allow-list */
  OperatorNotAllowed: 'operator_not_allowed',
  UnsupportedDialect: 'unsupported_dialect',
  /** plugins.auth.enforce_catalog_lock: the SQL names a catalog (or schema) outside its scope (guard/catalog-lock.ts) */
  CatalogLock: 'catalog_lock',
} as const;
export type RejectKind = (typeof RejectKind)[keyof typeof RejectKind];

export interface GuardLimits {
  /** rows when the SQL has no LIMIT of its own */
  defaultLimit: number;
  /** the hard cap on rows, whatever the SQL asks for */
  maxLimit: number;
  /**
   * database.allowed_functions: functions the operator allows beyond the dialect's built-in
   * allow-list (names as written, `schema.fn` or `fn`, compared case-insensitively)
   */
  allowedFunctions?: readonly string[];
  /**
   * The database server's major version (PostgreSQL 15, 16, ...), when the engine could read
   * it. The guard's parser knows the newest grammar; a syntax an older server does not have is
   * judged as that server reads it (guard/postgresql.ts NEWER_SYNTAX). Unknown: the oldest.
   */
  serverVersion?: number;
  /**
   * Called with the statement's parse tree once the guard accepted it (PostgreSQL: the
   * `stmts[0].stmt` of libpg-query), in the thread that parsed it: the lineage for masking is
   * read from the same parse (job.ts). Never sent to a worker (a function does not clone).
   */
  onParsed?: (statement: unknown) => void;
}

export interface GuardResult {
  /** what the user sees: the statement with Cortado's LIMIT */
  sql: string;
  /** what runs: when Cortado's cap applies it asks for one row more, to tell whether rows were cut */
  runSql: string;
  /** rows returned at most */
  limit: number;
  /** true when Cortado's cap (not the user's own smaller LIMIT) bounds the result */
  capped: boolean;
  /** relations the statement reads, as written (e.g. `public.orders`), without CTE names */
  tables: string[];
}

/** One dialect: `prepare` loads what the guard needs (a WASM parser), once, before the first call. */
export interface DialectGuard {
  prepare(): Promise<void>;
  guard(sql: string, limits: GuardLimits): GuardResult;
}

/** The SQL_REJECTED error of a guard, with `details.kind` saying why. */
export function rejected(kind: RejectKind, reason: string, extra: Record<string, unknown> = {}): CortadoError {
  return new CortadoError('SQL_REJECTED', reason, { kind, ...extra });
}

import type { IndexedColumn, IndexedDates } from '../../../protocol/schemas/profile.js';
/**
 * One interface for every database the executor can run SQL on; one file per engine beside
 * this one. An engine is a translation layer: it connects, runs one already-guarded statement
 * read-only with a timeout that really cancels it on the server, turns values into JSON
 * scalars, lists the schema, and maps its driver's errors onto protocol/errors.ts codes:
 * DB_UNAVAILABLE (cannot reach or log in), DB_TIMEOUT (cancelled at the timeout),
 * DB_QUERY_FAILED (the database refused the SQL; message and details for self-correction),
 * RESULT_TOO_LARGE (a value or the result over its cap, stopped while it was read: wire-cap.ts).
 * A question leaves nothing behind on its connection (a rolled-back transaction, then a reset
 * or a dropped connection).
 */
import type { Cell, Column, Dialect } from '../../../protocol/schemas/common.js';
import type { DbTable } from '../../../protocol/schemas/sql.js';
import type { DbProviderName } from '../../../config/schema.js';

export interface ExecuteOptions {
  /** the query is cancelled on the server after this long */
  timeoutMs: number;
  /** rows returned at most (the guard's LIMIT already bounds what the database sends) */
  maxRows: number;
  /** who asked (ctx.user), for engines that pass an end-user identity on (Trino) */
  user?: string;
  /** the result's bytes as read from the wire, at most (query.max_result_mb; default 32 MB): past it, RESULT_TOO_LARGE */
  maxResultBytes?: number;
  /** one value's bytes, at most (query.max_value_kb; default 1024 KB): past it, RESULT_TOO_LARGE */
  maxValueBytes?: number;
}

/** What an engine can tell about the cost of a query (BigQuery's dry run). */
export interface QueryStats {
  bytes_processed?: number;
  /** bytes_processed × price_per_tb_usd, when a price is configured */
  estimated_cost_usd?: number;
}

export interface EngineResult {
  columns: Column[];
  /** JSON scalars only: numbers where exact, booleans, else the database's text */
  rows: Cell[][];
  stats?: QueryStats;
}

export interface DbSchema {
  /** the schema unqualified names resolve in */
  default_schema: string;
  tables: DbTable[];
}

export interface WriteAccess {
  writable: boolean;
  /** why, for the start-up warning: `superuser`, `CREATE on schema public`, ... */
  reasons: string[];
}

/**
 * What a role may do beyond reading its own data (actors/executor/privilege.ts decides what
 * follows): each entry a reason for people, `superuser`, `member of pg_read_server_files (…)`.
 */
export interface RolePrivileges {
  /** the role as the database names it (PostgreSQL current_user, MySQL CURRENT_USER()); never a password */
  role: string;
  /** what lets it change data, schema, roles or server files */
  writes: string[];
  /** what lets it read or do more than its own data: server files, settings, other sessions, replication */
  powers: string[];
}

export interface DbEngine {
  readonly provider: DbProviderName;
  readonly dialect: Dialect;
  /** run one guarded statement read-only */
  execute(sql: string, opts: ExecuteOptions): Promise<EngineResult>;
  /** the tables and views the configured role can read */
  introspect(): Promise<DbSchema>;
  /** a trivial query through the pool; throws a CortadoError when it fails or is slow */
  ping(timeoutMs: number): Promise<void>;
  /** whether the configured role could change data or schema */
  canWrite(): Promise<WriteAccess>;
  /** what the configured role may do beyond reading; absent where the engine cannot tell (Trino, BigQuery) */
  privileges?(): Promise<RolePrivileges>;
  /** what running it would cost, without running it (engines with a dry run: BigQuery) */
  estimate?(sql: string): Promise<QueryStats>;
  /**
   * The low-cardinality text values of every column the role may read, and the first and last
   * date of each date column, from the engine's own statistics, on a connection of their own
   * (never one a question waits for); absent where the engine keeps no value statistics.
   */
  valueIndex?(): Promise<{ columns: IndexedColumn[]; truncated: boolean; dates?: IndexedDates[] }>;
  /**
   * The server's major version (PostgreSQL: 15 for 15.8), read once and kept; undefined while
   * it cannot be read (the guard then takes the oldest grammar). Absent where it does not matter.
   */
  serverMajorVersion?(): Promise<number | undefined>;
  /** release the pool (and whatever the engine started) */
  close(): Promise<void>;
}

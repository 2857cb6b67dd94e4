/**
 * MySQL and MariaDB through `mysql2`: one pool; every connection read-only by default (SET
 * SESSION TRANSACTION READ ONLY), in UTC, lexing SQL the way the guard does (no ANSI_QUOTES,
 * no NO_BACKSLASH_ESCAPES); every query inside its own START TRANSACTION READ ONLY ...
 * ROLLBACK. One statement per call (multipleStatements off; LOCAL INFILE off).
 *
 * Timeouts: the server cancels the query itself (MySQL `max_execution_time` in ms, MariaDB
 * `max_statement_time` in seconds: the flavour is read once from VERSION()); should it not,
 * a client backstop runs KILL QUERY from another connection a little later and drops the
 * connection. Either way the caller gets DB_TIMEOUT.
 *
 * Clean sessions: after each question the connection is reset (COM_RESET_CONNECTION, mysql2's
 * reset(): the transaction rolled back, user variables, temporary tables, prepared statements,
 * GET_LOCK locks and LAST_INSERT_ID gone, session variables back to the global values), then
 * set up again as below; a connection whose reset fails is dropped.
 *
 * Bounded results: a meter in front of mysql2's packet parser (mysql-wire-meter.ts) stops a
 * value or a result over its cap before mysql2 reads it (RESULT_TOO_LARGE, the connection
 * dropped).
 *
 * Values are JSON scalars: integers and decimals as numbers when exact, else their text
 * (BIGINT beyond 2^53, long DECIMALs); dates, times and JSON as the server's text; binary as
 * 0x-hex; BIT as a number.
 */
import mysql from 'mysql2/promise';
import type { FieldPacket, Pool, PoolConnection, PoolOptions, RowDataPacket } from 'mysql2/promise';
import { CortadoError } from '../../../protocol/errors.js';
import type { Logger } from '../../../protocol/log.js';
import type { Cell, Column } from '../../../protocol/schemas/common.js';
import type { DbTable } from '../../../protocol/schemas/sql.js';
import type { Config } from '../../../config/schema.js';
import type { DbEngine, DbSchema, EngineResult, ExecuteOptions, RolePrivileges, WriteAccess } from './engine.js';
import { privilegesFromGrants, rolesNotShown } from './mysql-grants.js';
import { exactNumber } from './postgresql.js';
import { MysqlWireMeter } from './mysql-wire-meter.js';
import { capsOf, meterSocket } from './wire-cap.js';

export interface MysqlEngineOptions {
  host: string;
  port: number;
  /** the default database; empty: none (introspection then lists every user database) */
  database: string;
  user: string;
  password: string;
  /** the session's autocommit (every query runs in an explicit read-only transaction anyway) */
  autocommit: boolean;
  maxConnections: number;
  /** the configured query timeout: each connection's server-side timeout until a query asks for another */
  statementTimeoutMs: number;
  /** how long opening (or waiting for) a connection may take */
  connectTimeoutMs?: number;
  /** how long after the timeout the client kills the query itself (tests set it below zero to see the backstop work) */
  backstopGraceMs?: number;
  log: Logger;
}

export type MysqlFlavour = 'mysql' | 'mariadb';

const BACKSTOP_GRACE_MS = 1_000;
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
const KILL_CONNECT_TIMEOUT_MS = 2_000;

/** The engine for config.database.mysql (the factory of engines/index.ts). */
export async function createMysqlEngineFromConfig(config: Config, log: Logger): Promise<MysqlEngine> {
  const c = config.database.mysql;
  const engine = new MysqlEngine({
    host: c.host,
    port: c.port,
    database: c.database,
    user: c.user,
    password: c.password,
    autocommit: c.autocommit,
    maxConnections: c.max_connections,
    statementTimeoutMs: (c.timeout ?? config.query.timeout) * 1000,
    log,
  });
  await engine.warm();
  return engine;
}

/** Per connection: what the session was set to. */
interface SessionState {
  timeoutMs: number;
  /** the sql_mode the guard's lexing needs, from the server's own (set again after each reset) */
  mode: string;
}

export class MysqlEngine implements DbEngine {
  readonly provider = 'mysql' as const;
  readonly dialect = 'mysql' as const;
  private readonly opts: MysqlEngineOptions;
  private readonly pool: Pool;
  private readonly log: Logger;
  /** keyed by mysql2's core connection object: set up once per physical connection */
  private readonly sessions = new WeakMap<object, SessionState>();
  /** keyed the same way: each connection's wire meter */
  private readonly meters = new WeakMap<object, MysqlWireMeter>();
  private warnedUnmetered = false;
  private flavourValue: MysqlFlavour | undefined;
  private versionValue = '';
  private closed = false;

  constructor(opts: MysqlEngineOptions) {
    this.opts = opts;
    this.log = opts.log;
    this.pool = mysql.createPool({
      ...this.connectionOptions(),
      connectionLimit: opts.maxConnections,
      maxIdle: opts.maxConnections,
      idleTimeout: 30_000,
      waitForConnections: true,
      queueLimit: 0,
    });
    // An idle connection that dies (server restart) must not crash the process.
    this.pool.pool.on('connection', (conn) => {
      conn.on('error', (err: Error) => this.log.warn({ err: err.message }, 'a database connection failed'));
      this.meter(conn);
    });
  }

  /** The wire meter in front of mysql2's packet parser, on the connection's final stream (after TLS). */
  private meter(conn: object): void {
    const stream = (conn as { stream?: unknown }).stream as Parameters<typeof meterSocket>[0] | undefined;
    if (!stream || typeof stream.listeners !== 'function' || typeof stream.destroy !== 'function') {
      if (!this.warnedUnmetered) {
        this.warnedUnmetered = true;
        this.log.error('this mysql2 version hides its socket: query.max_result_mb and query.max_value_kb cannot be enforced while rows are read');
      }
      return;
    }
    const meter = new MysqlWireMeter();
    meterSocket(stream, meter);
    this.meters.set(conn, meter);
  }

  private connectionOptions(): PoolOptions {
    const o = this.opts;
    return {
      host: o.host,
      port: o.port,
      user: o.user,
      password: o.password,
      ...(o.database ? { database: o.database } : {}),
      charset: 'utf8mb4',
      timezone: 'Z',
      connectTimeout: o.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      enableKeepAlive: true,
      multipleStatements: false,
      // no LOAD DATA LOCAL INFILE from this side, whatever the server offers
      flags: ['-LOCAL_FILES'],
      supportBigNumbers: true,
      bigNumberStrings: true,
      decimalNumbers: false,
      dateStrings: true,
      jsonStrings: true,
      // raw bytes for what the default parser would turn into objects; converterFor() does the rest
      typeCast: (field, next) => (field.type === 'GEOMETRY' || field.type === 'BIT' ? field.buffer() : next()),
      connectAttributes: { program_name: `cortado-executor-${process.pid}` },
    };
  }

  /** The server's flavour, once known (after the first connection). */
  get flavour(): MysqlFlavour | undefined {
    return this.flavourValue;
  }

  get serverVersion(): string {
    return this.versionValue;
  }

  /** Open one connection (and learn the flavour); a database that is down only warns. */
  async warm(): Promise<void> {
    let conn: PoolConnection | undefined;
    try {
      conn = await this.acquire();
      await this.session(conn);
    } catch (err) {
      const e = toDbError(err);
      this.log.warn({ code: e.code, err: e.message, host: this.opts.host, port: this.opts.port }, 'the database does not answer yet; queries fail with DB_UNAVAILABLE until it does');
    } finally {
      conn?.release();
    }
  }

  async execute(sql: string, opts: ExecuteOptions): Promise<EngineResult> {
    const conn = await this.acquire();
    const threadId = conn.threadId;
    const meter = this.meters.get(conn.connection as unknown as object);
    let destroy = false;
    let backstop: NodeJS.Timeout | undefined;
    // The server cancels at the timeout; should it not (a stuck server, a lost network),
    // kill the query from another connection a little later and drop this one.
    const stuck = new Promise<never>((_resolve, reject) => {
      backstop = setTimeout(() => {
        destroy = true;
        this.log.warn({ thread: threadId }, 'the server did not end the query at its timeout: killing it from another connection');
        void this.killQuery(threadId).finally(() => reject(timedOut(opts.timeoutMs)));
      }, Math.max(0, opts.timeoutMs + (this.opts.backstopGraceMs ?? BACKSTOP_GRACE_MS)));
    });
    const work = this.run(conn, sql, opts.timeoutMs, meter, capsOf(opts));
    work.catch(() => undefined); // when the backstop wins, the late failure has nobody to tell
    try {
      const [rows, fields] = await Promise.race([work, stuck]);
      const converters = fields.map(converterFor);
      const out: Cell[][] = [];
      // The guard's LIMIT bounds what the server sends; this only keeps the promise of maxRows.
      for (const row of rows.slice(0, opts.maxRows)) out.push(row.map((v, k) => converters[k]!(v)));
      return { columns: fields.map(columnOf), rows: out };
    } catch (err) {
      // mysql2's promise API hands on a copy of the error: the meter keeps the original
      const e = meter?.tripped ?? toDbError(err, opts.timeoutMs);
      if (e.code === 'DB_UNAVAILABLE' || e.code === 'INTERNAL' || e.code === 'RESULT_TOO_LARGE') destroy = true;
      throw e;
    } finally {
      clearTimeout(backstop);
      // Nothing the question did stays on the connection: it is reset (after the caller has its
      // answer) before it goes back to the pool, or dropped.
      if (destroy) conn.destroy();
      else {
        void this.reset(conn)
          .then((clean) => (clean ? conn.release() : conn.destroy()))
          .catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'cannot give a connection back to the pool'));
      }
    }
  }

  /** The statement inside its own read-only transaction, with the server-side timeout; the meter follows its answer. */
  private async run(conn: PoolConnection, sql: string, timeoutMs: number, meter: MysqlWireMeter | undefined, caps: ReturnType<typeof capsOf>): Promise<[unknown[][], FieldPacket[]]> {
    const state = await this.session(conn);
    if (state.timeoutMs !== timeoutMs) {
      await conn.query(this.timeoutStatement(timeoutMs));
      state.timeoutMs = timeoutMs;
    }
    await conn.query('START TRANSACTION READ ONLY');
    meter?.arm(caps);
    try {
      const [rows, fields] = await conn.query<RowDataPacket[]>({ sql, rowsAsArray: true });
      // A statement that is no query answers with an OK packet, not rows: nothing to show.
      if (!Array.isArray(rows)) return [[], []];
      return [rows as unknown as unknown[][], fields ?? []];
    } finally {
      meter?.disarm();
      // the reset (execute()) rolls the transaction back; a dead connection is dropped there
    }
  }

  /**
   * COM_RESET_CONNECTION, then the session set up again (session variables are back to the
   * global values). False when either fails: the caller drops the connection.
   */
  private async reset(conn: PoolConnection): Promise<boolean> {
    const core = conn.connection as unknown as object;
    const state = this.sessions.get(core);
    try {
      await conn.reset();
      if (!state) return true; // never set up: session() does it on the next use
      await this.applySession(conn, state.mode, this.opts.statementTimeoutMs);
      state.timeoutMs = this.opts.statementTimeoutMs;
      return true;
    } catch (err) {
      this.sessions.delete(core);
      if (!this.closed) this.log.warn({ err: toDbError(err).message }, 'cannot reset a database connection: it is dropped');
      return false;
    }
  }

  private timeoutStatement(timeoutMs: number): string {
    const ms = Math.max(1, Math.floor(timeoutMs));
    return this.flavourValue === 'mariadb'
      ? `SET SESSION max_statement_time = ${(ms / 1000).toFixed(3)}`
      : `SET SESSION max_execution_time = ${ms}`;
  }

  /**
   * Set a new connection up, once: the flavour (first time only), read-only transactions by
   * default, UTC, autocommit, the lexing rules the guard assumes, and the configured timeout.
   */
  private async session(conn: PoolConnection): Promise<SessionState> {
    const core = conn.connection as unknown as object;
    const known = this.sessions.get(core);
    if (known) return known;
    const [rows] = await conn.query<RowDataPacket[]>({ sql: 'SELECT VERSION() AS version, @@SESSION.sql_mode AS sql_mode', rowsAsArray: false });
    const version = String(rows[0]?.version ?? '');
    if (!this.flavourValue) {
      this.flavourValue = /mariadb/i.test(version) ? 'mariadb' : 'mysql';
      this.versionValue = version;
    }
    const mode = lexingSafeSqlMode(String(rows[0]?.sql_mode ?? ''));
    const timeoutMs = this.opts.statementTimeoutMs;
    await this.applySession(conn, mode, timeoutMs);
    const state: SessionState = { timeoutMs, mode };
    this.sessions.set(core, state);
    return state;
  }

  /** Read-only transactions by default, UTC, autocommit, the guard's lexing rules, the timeout. */
  private async applySession(conn: PoolConnection, mode: string, timeoutMs: number): Promise<void> {
    await conn.query('SET SESSION TRANSACTION READ ONLY');
    const timeout = this.timeoutStatement(timeoutMs).replace(/^SET SESSION /, '');
    await conn.query(`SET SESSION time_zone = '+00:00', autocommit = ${this.opts.autocommit ? 1 : 0}, sql_mode = ${quoteString(mode)}, ${timeout}`);
  }

  /** KILL QUERY from a connection of its own (the pool may be exhausted by the very query). */
  private async killQuery(threadId: number): Promise<void> {
    let other: mysql.Connection | undefined;
    try {
      other = await mysql.createConnection({ ...this.connectionOptions(), connectTimeout: KILL_CONNECT_TIMEOUT_MS });
      other.on('error', () => undefined); // a failure reaches the query below; unheard, it would end the process
      await other.query(`KILL QUERY ${Math.floor(threadId)}`);
    } catch (err) {
      this.log.warn({ thread: threadId, err: toDbError(err).message }, 'cannot kill the query');
    } finally {
      await other?.end().catch(() => other?.destroy());
    }
  }

  /** A pooled connection, or DB_UNAVAILABLE when none comes within the connect timeout. */
  private async acquire(): Promise<PoolConnection> {
    if (this.closed) throw new CortadoError('DB_UNAVAILABLE', 'the database cannot be reached: the executor is stopping');
    const waitMs = this.opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    const pending = this.pool.getConnection();
    let timer: NodeJS.Timeout | undefined;
    let late = false;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        late = true;
        reject(new CortadoError('DB_UNAVAILABLE', `the database cannot be reached: no connection could be opened within ${waitMs} ms`));
      }, waitMs);
    });
    // a connection that arrives after the caller gave up goes straight back
    pending.then((c) => late && c.release(), () => undefined);
    try {
      return await Promise.race([pending, timeout]);
    } catch (err) {
      throw toDbError(err);
    } finally {
      clearTimeout(timer);
    }
  }

  async ping(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new CortadoError('DB_UNAVAILABLE', `the database cannot be reached: no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    const work = (async () => {
      const conn = await this.acquire();
      try {
        await conn.query('SELECT 1');
      } finally {
        conn.release();
      }
    })();
    work.catch(() => undefined);
    try {
      await Promise.race([work, late]);
    } catch (err) {
      throw toDbError(err);
    } finally {
      clearTimeout(timer);
    }
  }

  async introspect(): Promise<DbSchema> {
    const scope = this.opts.database
      ? { where: 'TABLE_SCHEMA = ?', params: [this.opts.database] }
      : { where: `TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')`, params: [] as string[] };
    const tables = await this.internalQuery<TableRow>(
      `SELECT TABLE_SCHEMA AS table_schema, TABLE_NAME AS table_name, TABLE_TYPE AS table_type,
              TABLE_ROWS AS table_rows, TABLE_COMMENT AS table_comment
       FROM information_schema.TABLES WHERE ${scope.where} AND TABLE_TYPE <> 'SEQUENCE' ORDER BY TABLE_SCHEMA, TABLE_NAME`,
      scope.params,
    );
    const columns = await this.internalQuery<ColumnRow>(
      `SELECT TABLE_SCHEMA AS table_schema, TABLE_NAME AS table_name, COLUMN_NAME AS column_name,
              COLUMN_TYPE AS column_type, IS_NULLABLE AS is_nullable, COLUMN_COMMENT AS column_comment
       FROM information_schema.COLUMNS WHERE ${scope.where} ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION`,
      scope.params,
    );
    const keys = await this.internalQuery<KeyRow>(
      `SELECT TABLE_SCHEMA AS table_schema, TABLE_NAME AS table_name, CONSTRAINT_NAME AS constraint_name,
              COLUMN_NAME AS column_name, REFERENCED_TABLE_SCHEMA AS ref_schema,
              REFERENCED_TABLE_NAME AS ref_table, REFERENCED_COLUMN_NAME AS ref_column
       FROM information_schema.KEY_COLUMN_USAGE
       WHERE ${scope.where} AND REFERENCED_TABLE_NAME IS NOT NULL
       ORDER BY TABLE_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION`,
      scope.params,
    );

    const byName = new Map<string, DbTable>();
    const out: DbTable[] = [];
    for (const row of tables) {
      const view = /VIEW/i.test(row.table_type);
      const table: DbTable = { schema: row.table_schema, name: row.table_name, kind: view ? 'view' : 'table', columns: [] };
      // a view's comment is the word VIEW (or a note about an invalid view)
      if (!view && row.table_comment) table.comment = row.table_comment;
      const estimate = row.table_rows === null ? NaN : Number(row.table_rows);
      if (!view && Number.isFinite(estimate) && estimate >= 0) table.row_estimate = estimate;
      byName.set(`${row.table_schema}.${row.table_name}`, table);
      out.push(table);
    }
    for (const c of columns) {
      const table = byName.get(`${c.table_schema}.${c.table_name}`);
      if (!table) continue;
      table.columns.push({
        name: c.column_name,
        type: c.column_type,
        nullable: c.is_nullable === 'YES',
        ...(c.column_comment ? { comment: c.column_comment } : {}),
      });
    }
    await this.markJsonColumns(byName, scope.params);
    const fks = new Map<string, { table: DbTable; columns: string[]; ref_schema: string; ref_table: string; ref_columns: string[] }>();
    for (const k of keys) {
      const table = byName.get(`${k.table_schema}.${k.table_name}`);
      if (!table || !byName.has(`${k.ref_schema}.${k.ref_table}`)) continue; // only between tables the role sees
      const id = `${k.table_schema}.${k.table_name}.${k.constraint_name}`;
      let fk = fks.get(id);
      if (!fk) {
        fk = { table, columns: [], ref_schema: k.ref_schema, ref_table: k.ref_table, ref_columns: [] };
        fks.set(id, fk);
      }
      fk.columns.push(k.column_name);
      fk.ref_columns.push(k.ref_column);
    }
    for (const fk of fks.values()) {
      (fk.table.foreign_keys ??= []).push({ columns: fk.columns, ref_schema: fk.ref_schema, ref_table: fk.ref_table, ref_columns: fk.ref_columns });
    }
    return { default_schema: this.opts.database, tables: out };
  }

  /**
   * MariaDB's JSON is LONGTEXT with a json_valid() check: name those columns `json`, so the
   * model knows JSON functions apply. Best effort (older servers have no CHECK_CONSTRAINTS).
   */
  private async markJsonColumns(byName: Map<string, DbTable>, params: string[]): Promise<void> {
    if (this.flavourValue !== 'mariadb') return;
    const where = this.opts.database ? 'CONSTRAINT_SCHEMA = ?' : `CONSTRAINT_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')`;
    let checks: Array<{ table_schema: string; table_name: string; clause: string }>;
    try {
      checks = await this.internalQuery(
        `SELECT CONSTRAINT_SCHEMA AS table_schema, TABLE_NAME AS table_name, CHECK_CLAUSE AS clause FROM information_schema.CHECK_CONSTRAINTS WHERE ${where}`,
        params,
      );
    } catch {
      return;
    }
    for (const c of checks) {
      const m = /^json_valid\(`((?:[^`]|``)+)`\)$/i.exec(c.clause.trim());
      if (!m) continue;
      const column = byName.get(`${c.table_schema}.${c.table_name}`)?.columns.find((col) => col.name === m[1]!.replace(/``/g, '`'));
      if (column && /text$/i.test(column.type)) column.type = 'json';
    }
  }

  /**
   * Whether the account could change data or schema, from SHOW GRANTS: a writing privilege
   * on *.*, on the configured database (or a pattern that matches it) or on one of its tables.
   */
  async canWrite(): Promise<WriteAccess> {
    const rows = await this.internalQuery<RowDataPacket>('SHOW GRANTS');
    const grants = rows.map((r) => String(Object.values(r)[0] ?? ''));
    return writeAccessFromGrants(grants, this.opts.database);
  }

  /**
   * What the account may do beyond reading (engines/mysql-grants.ts), from SHOW GRANTS. Roles
   * granted to it whose grants MariaDB does not show are asked for once more with MySQL 8's
   * `SHOW GRANTS … USING` (MariaDB has no USING: they stay unknown, a reason of their own).
   */
  async privileges(): Promise<RolePrivileges> {
    const [who] = await this.internalQuery<RowDataPacket>('SELECT CURRENT_USER() AS account');
    const lines = async (sql: string) => (await this.internalQuery<RowDataPacket>(sql)).map((r) => String(Object.values(r)[0] ?? ''));
    let grants = await lines('SHOW GRANTS');
    let expanded: string[] = [];
    const roles = rolesNotShown(grants).filter((r) => /^`(?:[^`]|``)*`(?:@`(?:[^`]|``)*`)?$/.test(r));
    if (roles.length) {
      try {
        grants = [...grants, ...(await lines(`SHOW GRANTS FOR CURRENT_USER() USING ${roles.join(', ')}`))];
        expanded = roles;
      } catch {
        /* MariaDB: the roles stay unknown */
      }
    }
    return privilegesFromGrants(grants, String(who?.account ?? this.opts.user), expanded);
  }

  /** Our own catalog queries (plain objects, placeholders), on a read-only session like the rest. */
  private async internalQuery<R>(sql: string, params: unknown[] = []): Promise<R[]> {
    let conn: PoolConnection | undefined;
    try {
      conn = await this.acquire();
      const state = await this.session(conn);
      // the connection may carry a shorter timeout a query asked for: ours get the configured one
      if (state.timeoutMs !== this.opts.statementTimeoutMs) {
        await conn.query(this.timeoutStatement(this.opts.statementTimeoutMs));
        state.timeoutMs = this.opts.statementTimeoutMs;
      }
      const [rows] = await conn.query<RowDataPacket[]>({ sql, values: params, rowsAsArray: false });
      return rows as unknown as R[];
    } catch (err) {
      throw toDbError(err);
    } finally {
      conn?.release();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}

// ---- sessions ---------------------------------------------------------------------------------

/**
 * The session's sql_mode without what would make the server lex SQL differently from the
 * guard: ANSI_QUOTES (`"x"` an identifier) and NO_BACKSLASH_ESCAPES (`\'` ends a string), nor
 * the combination modes that include them.
 */
const LEXING_MODES = new Set(['ANSI_QUOTES', 'NO_BACKSLASH_ESCAPES', 'ANSI', 'ORACLE', 'MSSQL', 'DB2', 'POSTGRESQL', 'MAXDB']);

export function lexingSafeSqlMode(mode: string): string {
  return mode
    .split(',')
    .map((m) => m.trim())
    .filter((m) => m !== '' && !LEXING_MODES.has(m.toUpperCase()))
    .join(',');
}

function quoteString(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}

// ---- write access ---------------------------------------------------------------------------

/** Privileges that change data, schema or server files. */
const WRITING = [
  'ALL PRIVILEGES', 'ALL', 'INSERT', 'UPDATE', 'DELETE', 'CREATE', 'DROP', 'ALTER', 'INDEX', 'CREATE VIEW', 'CREATE ROUTINE',
  'ALTER ROUTINE', 'TRIGGER', 'EVENT', 'FILE', 'SUPER', 'DELETE HISTORY',
];

/** `GRANT SELECT, INSERT ON `shop`.* TO `u`@`%`` lines → whether and why the account can write. */
export function writeAccessFromGrants(grants: string[], database: string): WriteAccess {
  const reasons: string[] = [];
  for (const line of grants) {
    const m = /^GRANT\s+(.+?)\s+ON\s+(?:(?:TABLE|FUNCTION|PROCEDURE|PACKAGE(?:\s+BODY)?)\s+)?(\S+)\s+TO\s/i.exec(line);
    if (!m) continue;
    const privileges = splitPrivileges(m[1]!);
    const target = m[2]!;
    if (!appliesTo(target, database)) continue;
    const writing = privileges.filter((p) => WRITING.includes(p));
    if (writing.length) reasons.push(`${writing.join(', ')} on ${target}`);
  }
  return { writable: reasons.length > 0, reasons };
}

/** `SELECT (a, b), INSERT, ALL PRIVILEGES` → ['SELECT', 'INSERT', 'ALL PRIVILEGES'] (column lists dropped). */
function splitPrivileges(list: string): string[] {
  return list
    .replace(/\([^)]*\)/g, '')
    .split(',')
    .map((p) => p.trim().replace(/\s+/g, ' ').toUpperCase())
    .filter(Boolean);
}

/** Whether a grant's `db.table` target covers the configured database (empty: any database). */
function appliesTo(target: string, database: string): boolean {
  const dot = splitTarget(target);
  if (!dot) return false;
  const db = dot.db;
  if (db === '*') return true;
  if (!database) return !['mysql', 'information_schema', 'performance_schema', 'sys'].includes(db.toLowerCase());
  // database names in grants may be LIKE patterns (`shop\_%`): % and _ wildcards, \ escapes
  const pattern = db.replace(/\\(.)|([%_])|([^\\%_]+)/g, (_all, escaped: string | undefined, wild: string | undefined, plain: string | undefined) => {
    if (escaped !== undefined) return escaped.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    if (wild !== undefined) return wild === '%' ? '.*' : '.';
    return (plain ?? '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  });
  return new RegExp(`^${pattern}$`, 'i').test(database) || db === database;
}

/** `` `shop`.`orders` `` / `*.*` / `shop.*` → { db, table }. */
function splitTarget(target: string): { db: string; table: string } | undefined {
  const parts: string[] = [];
  const re = /`((?:[^`]|``)*)`|([^.`]+)|\./g;
  for (let m = re.exec(target); m; m = re.exec(target)) {
    if (m[1] !== undefined) parts.push(m[1].replace(/``/g, '`'));
    else if (m[2] !== undefined) parts.push(m[2]);
  }
  if (parts.length === 1) return { db: '*', table: parts[0]! }; // `GRANT ... ON *` means the default database; treat as any
  if (parts.length !== 2) return undefined;
  return { db: parts[0]!, table: parts[1]! };
}

// ---- values -------------------------------------------------------------------------------

/** MySQL column flags (include/mysql_com.h). */
const FLAG = { UNSIGNED: 32, BINARY: 128, ENUM: 256, SET: 2048 } as const;
const BINARY_CHARSET = 63;

/** Column type codes (include/field_types.h). */
const T = {
  DECIMAL: 0, TINY: 1, SHORT: 2, LONG: 3, FLOAT: 4, DOUBLE: 5, NULL: 6, TIMESTAMP: 7, LONGLONG: 8, INT24: 9, DATE: 10, TIME: 11,
  DATETIME: 12, YEAR: 13, NEWDATE: 14, VARCHAR: 15, BIT: 16, TIMESTAMP2: 17, DATETIME2: 18, TIME2: 19, VECTOR: 242, JSON: 245,
  NEWDECIMAL: 246, ENUM: 247, SET: 248, TINY_BLOB: 249, MEDIUM_BLOB: 250, LONG_BLOB: 251, BLOB: 252, VAR_STRING: 253, STRING: 254,
  GEOMETRY: 255,
} as const;

function flagsOf(f: FieldPacket): number {
  return typeof f.flags === 'number' ? f.flags : 0;
}

function isBinary(f: FieldPacket): boolean {
  return f.characterSet === BINARY_CHARSET;
}

/** A name for the column's type, as a person would write it in DDL (`int unsigned`, `decimal`, `varchar`). */
export function typeName(f: FieldPacket): string {
  const flags = flagsOf(f);
  const unsigned = flags & FLAG.UNSIGNED ? ' unsigned' : '';
  if (f.extendedFormat === 'json') return 'json';
  if (f.extendedTypeName) return f.extendedTypeName; // MariaDB: uuid, inet4, inet6, point...
  switch (f.columnType) {
    case T.TINY: return `tinyint${unsigned}`;
    case T.SHORT: return `smallint${unsigned}`;
    case T.INT24: return `mediumint${unsigned}`;
    case T.LONG: return `int${unsigned}`;
    case T.LONGLONG: return `bigint${unsigned}`;
    case T.DECIMAL:
    case T.NEWDECIMAL: return `decimal${unsigned}`;
    case T.FLOAT: return `float${unsigned}`;
    case T.DOUBLE: return `double${unsigned}`;
    case T.BIT: return 'bit';
    case T.DATE:
    case T.NEWDATE: return 'date';
    case T.DATETIME:
    case T.DATETIME2: return 'datetime';
    case T.TIMESTAMP:
    case T.TIMESTAMP2: return 'timestamp';
    case T.TIME:
    case T.TIME2: return 'time';
    case T.YEAR: return 'year';
    case T.NULL: return 'null';
    case T.JSON: return 'json';
    case T.ENUM: return 'enum';
    case T.SET: return 'set';
    case T.GEOMETRY: return 'geometry';
    case T.VECTOR: return 'vector';
    case T.VARCHAR:
    case T.VAR_STRING: return isBinary(f) ? 'varbinary' : 'varchar';
    case T.STRING:
      if (flags & FLAG.ENUM) return 'enum';
      if (flags & FLAG.SET) return 'set';
      return isBinary(f) ? 'binary' : 'char';
    case T.TINY_BLOB:
    case T.MEDIUM_BLOB:
    case T.LONG_BLOB:
    case T.BLOB: return isBinary(f) ? 'blob' : 'text';
    default: return `type ${String(f.columnType)}`;
  }
}

function columnOf(f: FieldPacket): Column {
  return { name: f.name, type: typeName(f) };
}

type Converter = (v: unknown) => Cell;

const asFloat = (text: string): Cell => {
  const n = Number(text);
  return Number.isFinite(n) ? n : text;
};

/** How a column's values become JSON scalars. */
function converterFor(f: FieldPacket): Converter {
  switch (f.columnType) {
    case T.TINY:
    case T.SHORT:
    case T.INT24:
    case T.LONG:
    case T.YEAR:
    case T.LONGLONG:
    case T.DECIMAL:
    case T.NEWDECIMAL:
      return (v) => (v === null || v === undefined ? null : exactNumber(String(v)));
    case T.FLOAT:
    case T.DOUBLE:
      return (v) => (v === null || v === undefined ? null : typeof v === 'number' ? (Number.isFinite(v) ? v : String(v)) : asFloat(String(v)));
    case T.BIT:
      return (v) => (Buffer.isBuffer(v) ? bitValue(v) : v === null || v === undefined ? null : String(v));
    default:
      return (v) => {
        if (v === null || v === undefined) return null;
        if (Buffer.isBuffer(v)) return `0x${v.toString('hex')}`;
        if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
        return JSON.stringify(v);
      };
  }
}

/** BIT(n) bytes (big-endian) → a number when exact, else its decimal text. */
function bitValue(b: Buffer): Cell {
  let n = 0n;
  for (const byte of b) n = (n << 8n) | BigInt(byte);
  return n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString();
}

// ---- errors -------------------------------------------------------------------------------

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

function timedOut(timeoutMs: number): CortadoError {
  return new CortadoError('DB_TIMEOUT', `the query ran past its timeout of ${seconds(timeoutMs)} and was cancelled`, { timeout_ms: timeoutMs });
}

/** Server errors that mean the query was stopped: its timeout (3024 MySQL, 1969 MariaDB) or KILL QUERY (1317). */
const TIMEOUT_ERRNOS = new Set([3024, 1969, 1317]);

/** Server errors that mean the database is out of reach or refuses the login. */
const UNAVAILABLE_ERRNOS: Record<number, string> = {
  1040: 'the server has too many connections',
  1044: 'the account may not use that database',
  1045: 'the login was refused',
  1049: 'the database does not exist',
  1053: 'the server is shutting down',
  1129: 'the host is blocked by the server',
  1130: 'the host may not connect to the server',
  1203: 'the account has too many connections',
  1226: 'the account ran out of a resource limit',
  1251: 'the server wants an authentication method the client does not offer',
  1698: 'the login was refused',
  1927: 'the connection was killed',
  3159: 'the server requires a secure transport',
};

/** The reason a client-side failure means the database is out of reach, or undefined. */
function clientUnavailable(code: string, message: string): string | undefined {
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'unknown host';
    case 'ECONNRESET':
    case 'EPIPE':
    case 'PROTOCOL_CONNECTION_LOST':
    case 'ER_SERVER_GONE_ERROR':
    case 'ER_SERVER_LOST':
      return 'the connection was closed';
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'the host does not answer';
    case 'ENOENT':
      return 'no server at that socket';
    case 'POOL_CLOSED':
      return 'the executor is stopping';
    case 'HANDSHAKE_NO_SSL_SUPPORT':
    case 'HANDSHAKE_SSL_ERROR':
      return 'the TLS connection failed';
  }
  if (/connect ETIMEDOUT|connection timeout|timeout.*connect/i.test(message)) return 'no connection could be opened in time';
  if (/closed state|connection lost|Can't add new command when connection is in closed state/i.test(message)) return 'the connection was closed';
  return undefined;
}

/** mysql2's errors → DB_UNAVAILABLE, DB_TIMEOUT, DB_QUERY_FAILED (or INTERNAL for what is none of those). */
export function toDbError(err: unknown, timeoutMs?: number): CortadoError {
  if (err instanceof CortadoError) return err;
  const e = (err ?? {}) as { code?: unknown; errno?: unknown; sqlState?: unknown; sqlMessage?: unknown; message?: unknown; fatal?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  const errno = typeof e.errno === 'number' ? e.errno : undefined;
  const message = typeof e.sqlMessage === 'string' && e.sqlMessage ? e.sqlMessage : typeof e.message === 'string' ? e.message : String(err);
  const sqlstate = typeof e.sqlState === 'string' ? e.sqlState : undefined;
  // a server error: an error number and an SQLSTATE (mysql2 names only the codes it knows:
  // MariaDB's own, like 1969, come without `code`); system errors have neither
  if (errno !== undefined && errno > 0 && sqlstate !== undefined) {
    if (TIMEOUT_ERRNOS.has(errno) || (/interrupted/i.test(message) && timeoutMs !== undefined)) {
      return timeoutMs !== undefined ? timedOut(timeoutMs) : new CortadoError('DB_TIMEOUT', 'the query was cancelled', { errno });
    }
    // SQLSTATE class 28: invalid authorization (1045, 1698...); 08: connection exception
    const why = UNAVAILABLE_ERRNOS[errno] ?? (sqlstate.startsWith('28') ? 'the login was refused' : sqlstate.startsWith('08') ? 'the connection failed' : undefined);
    if (why) return new CortadoError('DB_UNAVAILABLE', `the database cannot be reached: ${why}`, { errno, ...(code ? { code } : {}) }, { cause: err });
    const details: Record<string, unknown> = { errno, sqlstate };
    if (code) details.code = code;
    return new CortadoError('DB_QUERY_FAILED', message, details, { cause: err });
  }
  const why = clientUnavailable(code, message);
  if (why) return new CortadoError('DB_UNAVAILABLE', `the database cannot be reached: ${why}`, code ? { reason: code } : {}, { cause: err });
  if (e.fatal === true) return new CortadoError('DB_UNAVAILABLE', 'the database cannot be reached: the connection failed', code ? { reason: code } : {}, { cause: err });
  return new CortadoError('INTERNAL', 'internal error', undefined, { cause: err });
}

// ---- catalog rows -------------------------------------------------------------------------

interface TableRow {
  table_schema: string;
  table_name: string;
  table_type: string;
  table_rows: number | string | null;
  table_comment: string | null;
}

interface ColumnRow {
  table_schema: string;
  table_name: string;
  column_name: string;
  column_type: string;
  is_nullable: string;
  column_comment: string | null;
}

interface KeyRow {
  table_schema: string;
  table_name: string;
  constraint_name: string;
  column_name: string;
  ref_schema: string;
  ref_table: string;
  ref_column: string;
}

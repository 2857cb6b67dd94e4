/**
 * MySQL and MariaDB through `mysql2`: one pool; every connection read-only by default (SET
 * SESSION TRANSACTION READ ONLY), in UTC, lexing SQL the way the guard does (no ANSI_QUOTES,
 * no NO_BACKSLASH_ESCAPES); every query inside its own START TRANSACTION READ ONLY ...
 * ROLLBACK. One statement per call (multipleStatements off; LOCAL INFILE off).
 *
 * Timeouts: the server cancels the query itself (MySQL `max_execution_time` in ms, MariaDB
 * `max_statement_time` in seconds: the flavour is read once from VERSION()); should it not,
 * a client backstop runs KILL QUERY from another connection a little later and drops the
 * connection. Either way the caller gets DB_TIMEOUT. After a KILL QUERY the process list is
 * watched until the thread stops running it, KILL CONNECTION if it does not, and the outcome is
 * counted (cortado_db_cancel_total, cancel-watch.ts).
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
 * Exports (pages()): the same session, transaction, timeout and meter, the rows read as they
 * arrive, the connection paused while a page waits; a reader that stops early has the query
 * killed on the server and the connection dropped.
 *
 * Values are JSON scalars: integers and decimals as numbers when exact, else their text
 * (BIGINT beyond 2^53, long DECIMALs); dates, times and JSON as the server's text; binary as
 * 0x-hex; BIT as a number.
 */
import mysql from 'mysql2/promise';
import type { FieldPacket, Pool, PoolConnection, PoolOptions, RowDataPacket } from 'mysql2/promise';
import { CortadoError } from '../../../protocol/errors.js';
import type { Logger } from '../../../runtime/log.js';
import type { Cell, Column } from '../../../protocol/schemas/common.js';
import type { Config } from '../../../config/schema.js';
import type { DbEngine, DbSchema, EngineResult, ExecuteOptions, RolePrivileges, WriteAccess } from './engine.js';
import { dropsConnection, timedOut } from './errors.js';
import { introspectMysql } from './mysql-catalog.js';
import { toDbError } from './mysql-errors.js';
import { privilegesFromGrants, rolesNotShown, writeAccessFromGrants } from './mysql-grants.js';
import { columnOf, converterFor } from './mysql-values.js';
import { MysqlWireMeter } from './mysql-wire-meter.js';
import { attachMeter, capsOf } from './wire-cap.js';
import { CANCEL_WAIT_MS, TERMINATE_WAIT_MS, recordCancel, stillAfter } from './cancel-watch.js';
import { countDbCancel, type DbCancelOutcome } from '../../../runtime/metrics.js';

export { toDbError } from './mysql-errors.js';
export { writeAccessFromGrants } from './mysql-grants.js';

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
  /** how long a killed query has to stop, then to end once its connection is killed (cancel-watch.ts; tests shorten it) */
  cancelWaitMs?: number;
  log: Logger;
}

export type MysqlFlavour = 'mysql' | 'mariadb';

/** What pages() uses of mysql2's core connection (under the promise wrapper): a row-event query, pause and resume. */
interface CoreConnection extends NodeJS.EventEmitter {
  query(opts: { sql: string; rowsAsArray: boolean }): NodeJS.EventEmitter;
  pause(): void;
  resume(): void;
}

/**
 * Out of the pool, and its socket closed at once. mysql2's destroy() only half-closes (FIN):
 * a server thread still sending a result (a reader that stopped early, a query killed while its
 * rows were on the way) would then block on a full socket, holding its table's metadata lock,
 * until net_write_timeout (60 s); with the socket gone its next write fails and it ends.
 */
function dropConnection(conn: { destroy(): void; connection: unknown }): void {
  conn.destroy();
  (conn.connection as { stream?: { destroy?: () => void } }).stream?.destroy?.();
}

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
    const meter = new MysqlWireMeter();
    if (attachMeter((conn as { stream?: unknown }).stream, meter)) {
      this.meters.set(conn, meter);
    } else if (!this.warnedUnmetered) {
      this.warnedUnmetered = true;
      this.log.error('this mysql2 version hides its socket: query.max_result_mb and query.max_value_kb cannot be enforced while rows are read');
    }
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
    let killing = false;
    let backstop: NodeJS.Timeout | undefined;
    // The server cancels at the timeout; should it not (a stuck server, a lost network),
    // kill the query from another connection a little later, see that it stopped, and drop this one.
    const stuck = new Promise<never>((_resolve, reject) => {
      backstop = setTimeout(() => {
        destroy = true;
        killing = true;
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
      if (dropsConnection(e)) destroy = true;
      // the server ended it at its own timeout (a kill by the backstop counts its own outcome)
      if (e.code === 'DB_TIMEOUT' && !killing) countDbCancel(this.provider, 'stopped');
      throw e;
    } finally {
      clearTimeout(backstop);
      // Nothing the question did stays on the connection: it is reset (after the caller has its
      // answer) before it goes back to the pool, or dropped.
      if (destroy) dropConnection(conn);
      else {
        void this.reset(conn)
          .then((clean) => (clean ? conn.release() : dropConnection(conn)))
          .catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'cannot give a connection back to the pool'));
      }
    }
  }

  /**
   * The statement's rows a page at a time, read as they arrive (mysql2's row events) with the
   * connection paused while a page waits for its reader: nothing holds the whole result. Same
   * session, read-only transaction, timeout (and backstop), wire caps and values as execute().
   * A reader that stops early (or a failure mid-stream) ends the query on the server (KILL
   * QUERY) and drops the connection, so the rest of the result is never read.
   */
  async *pages(sql: string, opts: ExecuteOptions & { pageRows: number }): AsyncGenerator<EngineResult> {
    const conn = await this.acquire();
    const core = conn.connection as unknown as CoreConnection;
    const threadId = conn.threadId;
    const meter = this.meters.get(core);
    const pageRows = Math.max(1, Math.floor(opts.pageRows));
    let destroy = false;
    let columns: Column[] = [];
    let converters: ReturnType<typeof converterFor>[] = [];
    let page: Cell[][] = [];
    const ready: Cell[][][] = [];
    let seen = 0;
    let ended = false;
    let failure: CortadoError | undefined;
    let wake: (() => void) | undefined;
    const notify = (): void => {
      const w = wake;
      wake = undefined;
      w?.();
    };
    // The server cancels at the timeout; should it not (or the reader keep it waiting past it),
    // kill the query from another connection and drop this one.
    const backstop = setTimeout(() => {
      if (ended || failure) return;
      destroy = true;
      this.log.warn({ thread: threadId }, 'the query did not end at its timeout: killing it from another connection');
      failure = timedOut(opts.timeoutMs);
      void this.killQuery(threadId).finally(notify);
    }, Math.max(0, opts.timeoutMs + (this.opts.backstopGraceMs ?? BACKSTOP_GRACE_MS)));
    let any = false;
    const onError = (err: Error): void => {
      failure ??= meter?.tripped ?? toDbError(err, opts.timeoutMs);
      notify();
    };
    try {
      const state = await this.session(conn);
      if (state.timeoutMs !== opts.timeoutMs) {
        await conn.query(this.timeoutStatement(opts.timeoutMs));
        state.timeoutMs = opts.timeoutMs;
      }
      await conn.query('START TRANSACTION READ ONLY');
      meter?.arm(capsOf(opts));
      const query = core.query({ sql, rowsAsArray: true });
      query.on('fields', (fields?: FieldPacket[]) => {
        columns = (fields ?? []).map(columnOf);
        converters = (fields ?? []).map(converterFor);
      });
      query.on('result', (row: unknown) => {
        // a statement that is no query answers with an OK packet, not rows: nothing to show
        if (!Array.isArray(row) || seen >= opts.maxRows) return;
        seen++;
        page.push(row.map((v, k) => converters[k]!(v)));
        if (page.length >= pageRows) {
          ready.push(page);
          page = [];
          core.pause();
          notify();
        }
      });
      query.on('error', onError);
      // a failure of the connection itself (the meter cutting it, a lost network) reaches a
      // query without a callback as the connection's error, not the query's
      core.on('error', onError);
      query.on('end', () => {
        if (page.length) ready.push(page);
        page = [];
        ended = true;
        notify();
      });
      for (;;) {
        if (failure) throw failure;
        const rows = ready.shift();
        if (rows) {
          any = true;
          yield { columns, rows };
          if (ready.length === 0 && !ended) core.resume();
          continue;
        }
        if (ended) break;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
      if (!any) yield { columns, rows: [] };
    } catch (err) {
      const e = meter?.tripped ?? (err instanceof CortadoError ? err : toDbError(err, opts.timeoutMs));
      if (dropsConnection(e)) destroy = true;
      throw e;
    } finally {
      clearTimeout(backstop);
      core.off('error', onError);
      meter?.disarm();
      // stopped before the server finished sending (the reader had enough, or a failure here):
      // the query is ended on the server and the half-read connection dropped
      const cut = !ended && !failure;
      if (cut && !destroy) await this.killQuery(threadId);
      if (cut || destroy) dropConnection(conn);
      else {
        void this.reset(conn)
          .then((clean) => (clean ? conn.release() : dropConnection(conn)))
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
  /**
   * KILL QUERY from another connection; resolves once it was sent (or could not be). Whether the
   * query stopped is then watched on its own (stopThread).
   */
  private killQuery(threadId: number): Promise<void> {
    return new Promise<void>((sent) => void this.stopThread(Math.floor(threadId), sent));
  }

  /**
   * After KILL QUERY, look at the process list for that thread still running a query (COMMAND Query, Execute or Killed), for
   * CANCEL_WAIT_MS: gone → `stopped`; else KILL CONNECTION and look again → `terminated`, or
   * `still_running`. Counted and logged (cancel-watch.ts). The thread's own connection is dropped
   * by the caller, never pooled again.
   */
  private async stopThread(threadId: number, sent: () => void): Promise<DbCancelOutcome | undefined> {
    const started = performance.now();
    const wait = this.opts.cancelWaitMs;
    let other: mysql.Connection | undefined;
    try {
      other = await mysql.createConnection({ ...this.connectionOptions(), connectTimeout: KILL_CONNECT_TIMEOUT_MS });
      other.on('error', () => undefined); // a failure reaches the query below; unheard, it would end the process
      await other.query(`KILL QUERY ${threadId}`);
      sent();
      const c = other;
      const thread = async (busy: boolean): Promise<boolean> => {
        const [rows] = await c.query<RowDataPacket[]>(`SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = ?${busy ? " AND COMMAND IN ('Query', 'Execute', 'Killed')" : ''}`, [threadId]);
        return rows.length > 0;
      };
      const outcome = (o: DbCancelOutcome): DbCancelOutcome => recordCancel({ engine: this.provider, log: this.log, who: { thread: threadId }, outcome: o, started });
      if (!(await stillAfter(() => thread(true), wait ?? CANCEL_WAIT_MS))) return outcome('stopped');
      await other.query(`KILL CONNECTION ${threadId}`);
      if (!(await stillAfter(() => thread(false), wait ?? TERMINATE_WAIT_MS))) return outcome('terminated');
      return outcome('still_running');
    } catch (err) {
      this.log.warn({ thread: threadId, err: toDbError(err).message }, 'cannot kill the query, nor see whether it stopped');
      return undefined;
    } finally {
      sent();
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

  introspect(): Promise<DbSchema> {
    return introspectMysql((sql, params) => this.internalQuery(sql, params), this.opts.database, this.flavourValue === 'mariadb');
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

  /**
   * The stored functions an unqualified call can reach (guard/allow-mysql.ts
   * `restrictMysqlAllowList`): those of the connection's default database, and the loadable
   * ones (mysql.func, global; most accounts may not read it, then only the former).
   */
  async storedFunctions(): Promise<Array<{ schema: string; name: string }>> {
    const stored = await this.internalQuery<{ schema: string; name: string }>(
      "SELECT ROUTINE_SCHEMA AS `schema`, ROUTINE_NAME AS name FROM information_schema.ROUTINES WHERE ROUTINE_TYPE = 'FUNCTION' AND ROUTINE_SCHEMA = DATABASE()",
    );
    const loadable = await this.internalQuery<{ name: string }>('SELECT name FROM mysql.func').catch(() => []);
    return [...stored.map((r) => ({ schema: String(r.schema), name: String(r.name) })), ...loadable.map((r) => ({ schema: '(loadable function)', name: String(r.name) }))];
  }

  /**
   * Which of these names the server has no built-in of (guard/allow-mysql.ts): each is called
   * with no arguments, unquoted, on a read-only session of its own (dropped afterwards), and
   * "FUNCTION db.name does not exist" (1305) means the name would reach a stored function of the
   * default database. Only names no stored function has are given (storedFunctions first), so
   * nothing of the database's own runs; a built-in runs with no arguments or refuses them (the
   * allow-list's names are pure functions). Without a default database, none (nothing is reached).
   */
  async missingBuiltins(names: readonly string[]): Promise<string[]> {
    if (!this.opts.database) return [];
    const conn = await this.acquire();
    const missing: string[] = [];
    try {
      await this.session(conn);
      for (const name of names) {
        if (!/^[a-z_][a-z0-9_]*$/.test(name)) continue;
        try {
          await conn.query(`SELECT ${name}()`);
        } catch (err) {
          if ((err as { errno?: number }).errno === 1305) missing.push(name);
        }
      }
    } finally {
      dropConnection(conn);
    }
    return missing;
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


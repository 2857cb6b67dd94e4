/**
 * PostgreSQL through `pg`: one pool, every connection read-only by default, in UTC, with the
 * configured schema and a statement_timeout; the user's statement goes through the extended
 * protocol (which cannot carry a second statement); values come back as JSON scalars.
 *
 * Clean sessions: every question runs in its own `BEGIN READ ONLY` with `SET LOCAL
 * statement_timeout`, is rolled back, and the connection is reset (`DISCARD ALL`: temporary
 * tables, prepared statements, advisory locks, LISTEN, and every setting back to the
 * connection's start-up values) before it goes back to the pool; a connection whose rollback
 * or reset fails is dropped. The four messages go out together (pg's pipeline mode) and cost
 * one round trip.
 *
 * Queries that outlive their timeout: statement_timeout ends a query on the server; one still
 * running a second later (a lost network, or a function that does not check for interrupts) is
 * cancelled from another connection and watched until it stops, terminated if it ignores the
 * cancel (pg-cancel.ts: counted in cortado_db_cancel_total), and its connection is dropped.
 *
 * Bounded results: a meter in front of pg's parser on each connection's socket
 * (pg-wire-meter.ts) stops a value or a result over its cap before pg reads it
 * (RESULT_TOO_LARGE, the connection dropped).
 */
import pg from 'pg';
import type { FieldDef, PoolClient, QueryArrayConfig, QueryArrayResult } from 'pg';
import { CortadoError } from '../../../protocol/errors.js';
import type { Logger } from '../../../runtime/log.js';
import type { Cell, Column } from '../../../protocol/schemas/common.js';
import type { DbTable } from '../../../protocol/schemas/sql.js';
import type { DbEngine, DbSchema, EngineResult, ExecuteOptions, RolePrivileges, WriteAccess } from './engine.js';
import { dropsConnection, timedOut } from './errors.js';
import { PgWireMeter } from './pg-wire-meter.js';
import { stopBackend } from './pg-cancel.js';
import { countDbCancel } from '../../../runtime/metrics.js';
import { DATE_RANGES, INTROSPECT_FOREIGN_KEYS, INTROSPECT_TABLES, VALUE_INDEX, PRIVILEGES, privilegesOf, WRITE_ACCESS, type ForeignKeyRow, type PrivilegeRow, type TableRow } from './postgresql-catalog.js';
import { toDbError } from './postgresql-errors.js';
import { type IndexedColumn, type IndexedDates, VALUE_INDEX_UNIQUE_ROWS, VALUE_INDEX_COLUMN_VALUES, VALUE_INDEX_MAX_DISTINCT, VALUE_INDEX_MAX_VALUES } from '../../../protocol/schemas/profile.js';
import { RESULT_TYPES } from './postgresql-values.js';
import { attachMeter, capsOf, INTERNAL_CAPS } from './wire-cap.js';

export interface PostgresEngineOptions {
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
  /** the search_path of every connection, and the introspection's default schema */
  schema: string;
  minConnections: number;
  maxConnections: number;
  ssl: boolean;
  /** every connection's statement_timeout: the configured query timeout */
  statementTimeoutMs: number;
  /** how long opening (or waiting for) a connection may take */
  connectTimeoutMs?: number;
  log: Logger;
  /** runs after the pool has ended (stops an embedded server) */
  onClose?: () => Promise<void>;
  /**
   * What puts a connection back the way it started, after each question's ROLLBACK (one
   * simple-protocol message). Default `DISCARD ALL`; the embedded server, whose one session
   * every client shares and whose settings are not start-up values, passes its own.
   */
  resetSql?: string;
  /** how long a cancelled query has to stop, then to end once terminated (pg-cancel.ts; tests shorten it) */
  cancelWaitMs?: number;
}

/** How long after the statement_timeout the client gives up and cancels the query itself. */
const BACKSTOP_GRACE_MS = 1_000;
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
const CANCEL_CONNECT_TIMEOUT_MS = 2_000;
/** How long a question waits for the server's version the first time it is read. */
const VERSION_WAIT_MS = 2_000;

/** Build the engine and warm min_connections connections (a database that is down only warns). */
export async function createPostgresEngine(opts: PostgresEngineOptions): Promise<PostgresEngine> {
  const engine = new PostgresEngine(opts);
  await engine.warm();
  return engine;
}

// `queryMode` is a pg option the @types/pg typings do not list yet.
type ExtendedArrayQuery = QueryArrayConfig & { queryMode: 'extended' };

export class PostgresEngine implements DbEngine {
  readonly provider = 'postgresql' as const;
  readonly dialect = 'postgresql' as const;
  private readonly opts: PostgresEngineOptions;
  private readonly pool: pg.Pool;
  private readonly log: Logger;
  /** oid → format_type(oid, NULL), loaded once per pool (again only for an oid it lacks) */
  private readonly typeNames = new Map<number, string>();
  private readonly typesLookedUp = new Set<number>();
  /** each connection's wire meter */
  private readonly meters = new WeakMap<PoolClient, PgWireMeter>();
  private warnedUnmetered = false;
  private closed = false;

  constructor(opts: PostgresEngineOptions) {
    this.opts = opts;
    this.log = opts.log;
    this.pool = new pg.Pool({
      ...this.connectionConfig(),
      max: opts.maxConnections,
      // pg-pool keeps `min` idle connections from being reaped, but does not open them: warm() does
      min: Math.min(opts.minConnections, opts.maxConnections),
      idleTimeoutMillis: 30_000,
      // BEGIN, the statement, ROLLBACK and the reset go out together (run())
      pipeline: true,
    } as pg.PoolConfig);
    // An idle connection that dies (server restart) must not crash the process.
    this.pool.on('error', (err) => this.log.warn({ err: err.message }, 'an idle database connection failed'));
    this.pool.on('connect', (client) => this.prepare(client));
  }

  /** A new connection: an error listener of its own, and the wire meter in front of pg's parser. */
  private prepare(client: PoolClient): void {
    // pg-pool listens for errors only while a connection is idle; one that fails while checked
    // out (a meter stopping a read, a lost server) emits 'error' to nobody, which would end the
    // process. The query in flight gets the error too: that is where it is handled.
    client.on('error', (err: Error) => this.log.debug({ err: err.message }, 'a database connection failed while in use'));
    const meter = new PgWireMeter();
    if (attachMeter((client as unknown as { connection?: { stream?: unknown } }).connection?.stream, meter)) {
      this.meters.set(client, meter);
    } else if (!this.warnedUnmetered) {
      this.warnedUnmetered = true;
      this.log.error('this pg version hides its socket: query.max_result_mb and query.max_value_kb cannot be enforced while rows are read');
    }
  }

  private connectionConfig(): pg.ClientConfig {
    const o = this.opts;
    return {
      host: o.host,
      port: o.port,
      database: o.database,
      user: o.user,
      password: o.password,
      ssl: o.ssl ? {} : false,
      // the pid tells a DBA (and pg_stat_activity) which executor process holds the connection
      application_name: `cortado-executor-${process.pid}`,
      options: startupOptions(o.schema, o.statementTimeoutMs),
      connectionTimeoutMillis: o.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      keepAlive: true,
      types: RESULT_TYPES,
    };
  }

  async warm(): Promise<void> {
    const n = Math.min(this.opts.minConnections, this.opts.maxConnections);
    const attempts = await Promise.allSettled(Array.from({ length: Math.max(n, 1) }, () => this.pool.connect()));
    const clients = attempts.flatMap((a) => (a.status === 'fulfilled' ? [a.value] : []));
    try {
      const failed = attempts.find((a): a is PromiseRejectedResult => a.status === 'rejected');
      if (failed) {
        const e = toDbError(failed.reason);
        this.log.warn({ code: e.code, err: e.message, host: this.opts.host, port: this.opts.port }, 'the database does not answer yet; queries fail with DB_UNAVAILABLE until it does');
      }
      if (clients[0]) await this.loadTypeNames(clients[0]);
      if (clients.length > 0) void this.readVersion(); // for the guard, before the first question
    } catch (err) {
      this.log.warn({ err: toDbError(err).message }, 'cannot load the type names yet');
    } finally {
      for (const c of clients) c.release();
    }
  }

  async execute(sql: string, opts: ExecuteOptions): Promise<EngineResult> {
    const client = await this.acquire();
    const pid = (client as unknown as { processID?: number | null }).processID ?? null; // not in the typings
    const meter = this.meters.get(client);
    if (meter) meter.caps = capsOf(opts);
    let destroy = false;
    let released = false;
    const release = (drop: boolean): void => {
      if (released) return;
      released = true;
      if (meter) meter.caps = INTERNAL_CAPS;
      client.release(drop ? new Error('connection dropped after a failure') : undefined);
    };
    let backstop: NodeJS.Timeout | undefined;
    let stopping = false;
    // statement_timeout cancels on the server; should it not (a stuck server, a lost network, a
    // function that does not check for interrupts), cancel from another connection a little
    // later, see that it stopped, and drop this one.
    const stuck = new Promise<never>((_resolve, reject) => {
      backstop = setTimeout(() => {
        destroy = true;
        stopping = true;
        this.log.warn({ pid }, 'statement_timeout did not end the query: cancelling it from another connection');
        // the caller has DB_TIMEOUT once the cancel is sent; whether the query stopped is watched after that (pg-cancel.ts)
        this.stopBackend(pid, () => reject(timedOut(opts.timeoutMs)));
      }, opts.timeoutMs + BACKSTOP_GRACE_MS);
    });
    const run = this.run(client, sql, opts.timeoutMs);
    // The caller has its answer as soon as the statement's is in; the connection goes back to
    // the pool only once the ROLLBACK and the reset have answered (dropped when either fails).
    let answered!: () => void;
    const done = new Promise<void>((resolve) => (answered = resolve));
    void Promise.all([run.clean, done])
      .then(([clean]) => release(destroy || !clean || meter?.tripped !== undefined))
      .catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'cannot give a connection back to the pool'));
    try {
      const outcome = await Promise.race([run.outcome, stuck]);
      if (meter?.tripped) throw meter.tripped;
      if (outcome.status === 'rejected') throw outcome.reason;
      const result = outcome.value;
      if (meter) meter.caps = INTERNAL_CAPS; // the type names are ours
      const columns = await this.describe(client, result.fields);
      // The guard's LIMIT bounds what the server sends; this only keeps the promise of maxRows.
      const rows = (result.rows as Cell[][]).slice(0, opts.maxRows);
      return { columns, rows };
    } catch (err) {
      const e = meter?.tripped ?? toDbError(err, opts.timeoutMs);
      if (dropsConnection(e)) destroy = true;
      // the server ended it at its statement_timeout (the backstop's cancel counts its own outcome)
      if (e.code === 'DB_TIMEOUT' && !stopping) countDbCancel('postgresql', 'stopped');
      throw e;
    } finally {
      clearTimeout(backstop);
      // a connection to drop goes at once (what is still pending on it fails with it)
      if (destroy) release(true);
      answered();
    }
  }

  /**
   * Exports (sql.export): the statement's rows a page at a time from a server-side cursor on one
   * of the pool's connections, which it keeps until the last page (or the reader stops):
   *
   *   BEGIN READ ONLY; SET LOCAL statement_timeout = <the timeout>
   *   DECLARE cortado_export NO SCROLL CURSOR FOR <the statement>   (extended protocol)
   *   FETCH <page> FROM cortado_export   … until a page comes back short, or maxRows
   *   ROLLBACK; the reset — or the connection dropped after a failure
   *
   * Each FETCH is metered like a query (its page against query.max_result_mb, each value against
   * max_value_kb). The whole read is bounded by the timeout: past it (and the grace), the query is
   * cancelled from another connection and this one dropped. A plugins.auth scope's own database
   * is read this way; the server's own uses a connection outside the pool (export-pg.ts).
   */
  async *pages(sql: string, opts: ExecuteOptions & { pageRows: number }): AsyncGenerator<EngineResult> {
    const client = await this.acquire();
    const pid = (client as unknown as { processID?: number | null }).processID ?? null;
    const meter = this.meters.get(client);
    const pageRows = Math.max(1, Math.floor(opts.pageRows));
    let destroy = false;
    let timedOutNow = false;
    const backstop = setTimeout(() => {
      destroy = true;
      timedOutNow = true;
      this.log.warn({ pid }, 'an export did not end at its timeout: cancelling it from another connection');
      this.stopBackend(pid);
    }, opts.timeoutMs + BACKSTOP_GRACE_MS);
    let seen = 0;
    try {
      await client.query(`BEGIN READ ONLY; SET LOCAL statement_timeout = ${Math.max(1, Math.floor(opts.timeoutMs))}`);
      await client.query({ text: `DECLARE cortado_export NO SCROLL CURSOR FOR ${sql}`, queryMode: 'extended' } as pg.QueryConfig);
      let columns: Column[] | undefined;
      for (;;) {
        const want = Math.min(pageRows, opts.maxRows - seen);
        if (want <= 0) break;
        if (meter) meter.caps = capsOf(opts);
        const page = await client.query({ text: `FETCH ${want} FROM cortado_export`, rowMode: 'array' });
        if (meter?.tripped) throw meter.tripped;
        if (meter) meter.caps = INTERNAL_CAPS; // the type names are ours
        columns ??= await this.describe(client, page.fields);
        seen += page.rows.length;
        yield { columns, rows: page.rows as Cell[][] };
        if (page.rows.length < want) break;
      }
    } catch (err) {
      const e = meter?.tripped ?? (timedOutNow ? timedOut(opts.timeoutMs) : toDbError(err, opts.timeoutMs));
      if (e.code === 'DB_TIMEOUT' && !timedOutNow) countDbCancel('postgresql', 'stopped');
      destroy = true;
      throw e;
    } finally {
      clearTimeout(backstop);
      if (meter) meter.caps = INTERNAL_CAPS;
      // a reader that stopped early leaves the cursor open: the rollback closes it
      let clean = !destroy;
      if (clean) {
        try {
          await client.query('ROLLBACK');
          await client.query(this.opts.resetSql ?? 'DISCARD ALL');
        } catch {
          clean = false;
        }
      }
      client.release(clean ? undefined : new Error('connection dropped after an export'));
    }
  }

  /**
   * The statement in a read-only transaction of its own, with its own statement_timeout, rolled
   * back, then the session reset: four messages written at once (pipeline mode), answered in
   * order, one round trip. The ROLLBACK and the reset run whatever the statement did (each
   * simple query is its own sync point). `outcome`: the statement's answer (never rejects);
   * `clean`: the connection is as it started.
   */
  private run(client: PoolClient, sql: string, timeoutMs: number): { outcome: Promise<PromiseSettledResult<QueryArrayResult>>; clean: Promise<boolean> } {
    const query: ExtendedArrayQuery = { text: sql, rowMode: 'array', queryMode: 'extended' };
    const begin = client.query(`BEGIN READ ONLY; SET LOCAL statement_timeout = ${Math.max(1, Math.floor(timeoutMs))}`);
    const statement = client.query(query);
    const rollback = client.query('ROLLBACK');
    const reset = client.query(this.opts.resetSql ?? 'DISCARD ALL');
    return {
      // without its transaction the statement's answer is not to be trusted (it ran, read-only by default, and is dropped)
      outcome: Promise.allSettled([begin, statement]).then(([b, s]) => (b.status === 'rejected' ? b : s)),
      clean: Promise.allSettled([begin, rollback, reset]).then((all) => all.every((r) => r.status === 'fulfilled')),
    };
  }

  /**
   * Cancel the backend's query from another connection, then see that it stopped (terminated if
   * it ignores the cancel; counted and logged: pg-cancel.ts). `cancelled` runs once the cancel is
   * sent. Runs on its own: the caller does not wait for the check.
   */
  private stopBackend(pid: number | null, cancelled?: () => void): void {
    if (pid === null) {
      cancelled?.();
      return;
    }
    void stopBackend(pid, {
      connect: () => new pg.Client({ ...this.connectionConfig(), application_name: `cortado-cancel-${process.pid}`, connectionTimeoutMillis: CANCEL_CONNECT_TIMEOUT_MS }),
      log: this.log,
      ...(this.opts.cancelWaitMs !== undefined ? { cancelWaitMs: this.opts.cancelWaitMs, terminateWaitMs: this.opts.cancelWaitMs } : {}),
      ...(cancelled ? { onCancelled: cancelled } : {}),
    });
  }

  private acquire(): Promise<PoolClient> {
    if (this.closed) return Promise.reject(new CortadoError('DB_UNAVAILABLE', 'the database cannot be reached: the executor is stopping'));
    return this.pool.connect().catch((err: unknown) => {
      throw toDbError(err);
    });
  }

  private async describe(client: PoolClient, fields: FieldDef[]): Promise<Column[]> {
    if (fields.some((f) => !this.typeNames.has(f.dataTypeID) && !this.typesLookedUp.has(f.dataTypeID))) {
      for (const f of fields) this.typesLookedUp.add(f.dataTypeID);
      await this.loadTypeNames(client).catch((err: unknown) => this.log.warn({ err: toDbError(err).message }, 'cannot load the type names'));
    }
    return fields.map((f) => ({ name: f.name, type: this.typeNames.get(f.dataTypeID) ?? `oid ${f.dataTypeID}` }));
  }

  private async loadTypeNames(client: PoolClient): Promise<void> {
    // oid is unsigned 32-bit: pg's default parser reads it as a number
    const r = await client.query<{ oid: number; name: string }>({
      text: 'SELECT oid, format_type(oid, NULL) AS name FROM pg_catalog.pg_type',
      types: pg.types,
    });
    for (const row of r.rows) this.typeNames.set(Number(row.oid), row.name);
  }

  async ping(timeoutMs: number): Promise<void> {
    const work = this.pool.query('SELECT 1');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new CortadoError('DB_UNAVAILABLE', `the database cannot be reached: no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    work.catch(() => undefined); // when the timer wins, the late failure has nobody to tell
    try {
      await Promise.race([work, late]);
    } catch (err) {
      throw toDbError(err);
    } finally {
      clearTimeout(timer);
    }
  }

  async introspect(): Promise<DbSchema> {
    const tables = await this.internalQuery<TableRow>(INTROSPECT_TABLES);
    const keys = await this.internalQuery<ForeignKeyRow>(INTROSPECT_FOREIGN_KEYS);
    const byName = new Map<string, DbTable>();
    const out: DbTable[] = [];
    for (const row of tables) {
      const table: DbTable = {
        schema: row.schema,
        name: row.name,
        kind: row.relkind === 'v' || row.relkind === 'm' ? 'view' : 'table',
        columns: row.columns.map((c) => ({
          name: c.name,
          type: c.type,
          nullable: c.nullable,
          ...(c.comment ? { comment: c.comment } : {}),
        })),
      };
      if (row.comment) table.comment = row.comment;
      // reltuples is -1 before the first ANALYZE (PostgreSQL 14+), 0 for views
      if ((row.relkind === 'r' || row.relkind === 'p' || row.relkind === 'm') && row.estimate >= 0) {
        table.row_estimate = Math.round(row.estimate);
      }
      byName.set(`${row.schema}.${row.name}`, table);
      out.push(table);
    }
    for (const fk of keys) {
      const table = byName.get(`${fk.schema}.${fk.name}`);
      if (!table || !byName.has(`${fk.ref_schema}.${fk.ref_table}`)) continue; // only between tables the role sees
      (table.foreign_keys ??= []).push({ columns: fk.columns, ref_schema: fk.ref_schema, ref_table: fk.ref_table, ref_columns: fk.ref_columns });
    }
    return { default_schema: this.opts.schema, tables: out };
  }

  /** server_version_num, once read (a failed read is tried again at the next question) */
  private version: Promise<number | undefined> | undefined;
  /** its major version, once known */
  private major: number | undefined;

  /**
   * The server's major version, for the guard (a syntax the parser knows and this server does
   * not is judged as this server reads it). Read once per pool (warm() asks first); undefined
   * when it cannot be read, or not within VERSION_WAIT_MS (a database that does not answer must
   * not hold up sql.check: the guard then takes the oldest grammar).
   */
  serverMajorVersion(): Promise<number | undefined> {
    // once read, every question gets it without a timer or a race
    if (this.major !== undefined) return Promise.resolve(this.major);
    const reading = this.readVersion();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), VERSION_WAIT_MS);
    });
    return Promise.race([reading, late]).finally(() => clearTimeout(timer));
  }

  private readVersion(): Promise<number | undefined> {
    this.version ??= this.internalQuery<{ v: string }>('SELECT pg_catalog.current_setting(\'server_version_num\') AS v').then(
      (rows) => {
        const n = Number(rows[0]?.v);
        this.major = Number.isInteger(n) && n >= 90000 ? Math.floor(n / 10_000) : undefined;
        return this.major;
      },
      (err: unknown) => {
        this.version = undefined;
        this.log.warn({ err: toDbError(err).message }, 'cannot read the server version: newer SQL syntax is refused unless database.allowed_functions allows it');
        return undefined;
      },
    );
    return this.version;
  }

  async canWrite(): Promise<WriteAccess> {
    const [row] = await this.internalQuery<{ superuser: boolean; create_in: string[]; writable: string[] }>(WRITE_ACCESS);
    const reasons: string[] = [];
    if (row?.superuser) reasons.push('superuser');
    for (const schema of row?.create_in ?? []) reasons.push(`CREATE on schema ${schema}`);
    if (row?.writable.length) reasons.push(`INSERT/UPDATE/DELETE/TRUNCATE on ${row.writable.join(', ')}`);
    return { writable: reasons.length > 0, reasons };
  }

  /**
   * Everything the role may do beyond reading (actors/executor/privilege.ts): superuser and the
   * other role attributes, membership (direct or inherited) in the built-in roles that reach past
   * the database, and whatever it could change: tables, schemas, sequences, large objects.
   */
  async privileges(): Promise<RolePrivileges> {
    const [row] = await this.internalQuery<PrivilegeRow>(PRIVILEGES);
    if (!row) throw new CortadoError('DB_QUERY_FAILED', 'the database did not say what the role may do');
    return privilegesOf(row);
  }

  /** The value index's own connection (one at most, opened when first asked): it never takes one a question waits for. */
  private sidePool: pg.Pool | undefined;

  async valueIndex(): Promise<{ columns: IndexedColumn[]; truncated: boolean; dates: IndexedDates[] }> {
    this.sidePool ??= (() => {
      const side = new pg.Pool({ ...this.connectionConfig(), application_name: `cortado-values-${process.pid}`, max: 1, idleTimeoutMillis: 10_000 } as pg.PoolConfig);
      side.on('error', (err) => this.log.warn({ err: err.message }, 'an idle value-index connection failed'));
      return side;
    })();
    try {
      const r = await this.sidePool.query<{ schema: string; table: string; column: string; distinct: number; values: string[] | null }>({
        text: VALUE_INDEX, values: [VALUE_INDEX_MAX_DISTINCT, VALUE_INDEX_COLUMN_VALUES, VALUE_INDEX_UNIQUE_ROWS], types: pg.types,
      });
      const columns: IndexedColumn[] = [];
      let total = 0;
      let truncated = false;
      for (const row of r.rows) {
        const values = row.values ?? [];
        if (!values.length) continue;
        if (total + values.length > VALUE_INDEX_MAX_VALUES) {
          truncated = true;
          break;
        }
        total += values.length;
        columns.push({ schema: row.schema, table: row.table, column: row.column, distinct: Math.round(row.distinct), values });
      }
      const d = await this.sidePool.query<IndexedDates>({ text: DATE_RANGES, types: pg.types });
      return { columns, truncated, dates: d.rows };
    } catch (err) {
      throw toDbError(err);
    }
  }

  /** Our own catalog queries, with pg's usual parsers (arrays, booleans, JSON). */
  private async internalQuery<R extends pg.QueryResultRow>(text: string): Promise<R[]> {
    try {
      const r = await this.pool.query<R>({ text, types: pg.types });
      return r.rows;
    } catch (err) {
      throw toDbError(err);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.sidePool?.end().catch(() => undefined);
      await this.pool.end();
    } finally {
      await this.opts.onClose?.();
    }
  }

  /**
   * The rows the guard's allow-list is checked against at start (guard/allow-postgresql.ts
   * `restrictPostgresAllowList`): every function (its name, schema, owning extension, and
   * whether a query can call it with one argument, so as `x.f`), every operator outside
   * pg_catalog, and every type outside pg_catalog that is not a table's row type or an array.
   */
  async allowListCatalog(): Promise<Array<{ kind: 'function' | 'operator' | 'type'; schema: string; name: string; one_arg: boolean; extension: string | null }>> {
    return this.internalQuery(`
      SELECT 'function' AS kind, n.nspname AS schema, p.proname AS name,
             COALESCE(((p.pronargs >= 1 AND p.pronargs - p.pronargdefaults <= 1) OR p.provariadic <> 0)
                      AND p.proargtypes[0] NOT IN ('pg_catalog.internal'::regtype, 'pg_catalog.cstring'::regtype), false) AS one_arg,
             x.extname AS extension
      FROM pg_catalog.pg_proc p
      JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
      LEFT JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
      LEFT JOIN pg_catalog.pg_extension x ON x.oid = d.refobjid
      WHERE p.prokind <> 'p'
      UNION ALL
      SELECT 'operator', n.nspname, o.oprname, false, x.extname
      FROM pg_catalog.pg_operator o
      JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace
      LEFT JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_operator'::regclass AND d.objid = o.oid AND d.deptype = 'e'
      LEFT JOIN pg_catalog.pg_extension x ON x.oid = d.refobjid
      WHERE n.nspname <> 'pg_catalog'
      UNION ALL
      SELECT 'type', n.nspname, t.typname, true, x.extname
      FROM pg_catalog.pg_type t
      JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
      LEFT JOIN pg_catalog.pg_class c ON c.oid = t.typrelid
      LEFT JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_type'::regclass AND d.objid = t.oid AND d.deptype = 'e'
      LEFT JOIN pg_catalog.pg_extension x ON x.oid = d.refobjid
      WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_(toast|temp_)'
        AND (t.typrelid = 0 OR c.relkind = 'c') AND NOT (t.typcategory = 'A' AND t.typelem <> 0)`);
  }
}

// ---- connections ----------------------------------------------------------------------------

/** `-c name=value` settings sent at connection start; spaces and backslashes escaped. */
function startupOptions(schema: string, statementTimeoutMs: number): string {
  const settings: Array<[string, string]> = [
    ['default_transaction_read_only', 'on'],
    ['statement_timeout', String(Math.max(1, Math.floor(statementTimeoutMs)))],
    ['TimeZone', 'UTC'],
    ['search_path', quoteIdent(schema)],
  ];
  return settings.map(([k, v]) => `-c ${k}=${v.replace(/[\\\s]/g, (c) => `\\${c}`)}`).join(' ');
}

function quoteIdent(name: string): string {
  return /^[a-z_][a-z0-9_$]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`;
}


/**
 * Trino through `trino-client`: the statement goes to the coordinator (POST /v1/statement) and
 * the rows come back page by page through `nextUri` (the client's iterator).
 *
 * - Identity: the asking user (ExecuteOptions.user) is the Trino user (X-Trino-User), else the
 *   configured user, so Trino's own access control, resource groups and audit see the person.
 *   With a password the configured user is the login (HTTP basic) and Trino must allow it to
 *   impersonate the asking user. Each user has its own client (a small LRU): trino-client
 *   sends the client's user on every request, including the cancel, so the query's owner
 *   also cancels it. (Its BasicAuth would pin X-Trino-User to the login name, so the
 *   Authorization header is built here.)
 * - Rows: collected up to maxRows; when the coordinator still has pages, the query is
 *   cancelled (DELETE) rather than read to the end.
 * - Size: each page's body may be as large as what the result has left (query.max_result_mb,
 *   plus a little for the page's columns and stats): axios stops reading a larger one before
 *   it is parsed (maxContentLength); the pages' bytes add up, and each page's values are
 *   checked against query.max_value_kb once it is parsed. Over either: the query is cancelled
 *   and the answer is RESULT_TOO_LARGE. (Set per request, through a per-query view of the
 *   client whose request method adds them: boundedQuery.)
 * - Timeout: the session property `query_max_execution_time` lets the coordinator stop the
 *   query itself; a client timer a little later (queued time does not count for Trino, and a
 *   coordinator may be stuck) cancels it by its query id. Either way: DB_TIMEOUT.
 * - Read-only: Trino has no read-only transaction Cortado could open here. The Trino guard
 *   (guard/trino.ts) is the defence, with Trino's access control for the asking user behind
 *   it; canWrite cannot tell what that access control allows (see there).
 * - Values: Trino sends JSON. Integers beyond 2^53 are read exactly (as strings), decimals
 *   come as strings and become numbers only when a number means exactly the same (like
 *   postgresql.ts); arrays, maps and rows become their JSON text.
 */
import { Trino, type Columns, type QueryResult } from 'trino-client';
import { CortadoError } from '../../../protocol/errors.js';
import type { Logger } from '../../../runtime/log.js';
import type { Cell, Column } from '../../../protocol/schemas/common.js';
import type { DbTable } from '../../../protocol/schemas/sql.js';
import type { Config } from '../../../config/schema.js';
import type { DbEngine, DbSchema, EngineResult, ExecuteOptions, WriteAccess } from './engine.js';
import { timedOut as timedOutError } from './errors.js';
import { TrinoQueryError, toTrinoError } from './trino-errors.js';
import { boundedQuery, canBoundPages, queryIdOf, readExactly, toCell } from './trino-wire.js';
import { capsOf, INTERNAL_CAPS, PageBudget, type WireCaps } from './wire-cap.js';

export { parseJsonExact } from './trino-wire.js';

export interface TrinoEngineOptions {
  /** `http(s)://host:port` of the coordinator */
  server: string;
  /** the Trino user when nobody asks, and the login when a password is set */
  user: string;
  password: string;
  /** session catalog and schema ('' = none) */
  catalog: string;
  schema: string;
  /** the configured query timeout, for Cortado's own queries (introspection) */
  timeoutMs: number;
  log: Logger;
}

/** How long after the coordinator's own limit the client cancels the query itself. */
const BACKSTOP_GRACE_MS = 1_000;
/** How long a cancel (DELETE) may take before the caller is answered anyway. */
const CANCEL_WAIT_MS = 2_000;
/** Users with a client of their own, at most. */
const MAX_CLIENTS = 64;
/** Rows of Cortado's own catalog queries, at most. */
const MAX_INTROSPECT_ROWS = 200_000;
const SOURCE = 'cortado';
/** What an HTTP header can carry as a user name. */
const HEADER_SAFE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

export async function createTrinoFromConfig(config: Config, log: Logger): Promise<DbEngine> {
  const c = config.database.trino;
  if (!c.user.trim()) throw new CortadoError('CONFIG_INVALID', 'database.trino.user is empty: Trino needs a user name');
  if (c.schema && !c.catalog) throw new CortadoError('CONFIG_INVALID', 'database.trino.schema is set without database.trino.catalog: Trino needs the catalog of the schema');
  const host = c.host.includes(':') && !c.host.startsWith('[') ? `[${c.host}]` : c.host;
  const engine = new TrinoEngine({
    server: `${c.http_scheme}://${host}:${c.port}`,
    user: c.user,
    password: c.password,
    catalog: c.catalog,
    schema: c.schema,
    timeoutMs: (c.timeout ?? config.query.timeout) * 1000,
    log,
  });
  // Tell the operator early; queries fail with DB_UNAVAILABLE until the coordinator answers.
  void engine.ping(5_000).catch((err: unknown) => {
    const e = toTrinoError(err);
    log.warn({ code: e.code, err: e.message, server: engine.server }, 'the Trino coordinator does not answer yet');
  });
  return engine;
}

interface RunOptions {
  timeoutMs: number;
  maxRows: number;
  user: string;
  /** a catalog other than the session's (introspection of every catalog) */
  catalog?: string;
  /** how long after timeoutMs the client cancels (0 for a ping) */
  graceMs: number;
  /** the result's caps (query.max_result_mb, query.max_value_kb) */
  caps: WireCaps;
}

export class TrinoEngine implements DbEngine {
  readonly provider = 'trino' as const;
  readonly dialect = 'trino' as const;
  readonly server: string;
  private readonly opts: TrinoEngineOptions;
  private readonly log: Logger;
  private readonly clients = new Map<string, Trino>();
  /** queries in flight, to cancel on close */
  private readonly running = new Map<string, Trino>();
  private warnedShape = false;
  private warnedWrite = false;
  private closed = false;

  constructor(opts: TrinoEngineOptions) {
    this.opts = opts;
    this.server = opts.server;
    this.log = opts.log;
  }

  async execute(sql: string, opts: ExecuteOptions): Promise<EngineResult> {
    return this.run(sql, {
      timeoutMs: opts.timeoutMs,
      maxRows: opts.maxRows,
      user: opts.user ?? this.opts.user,
      graceMs: BACKSTOP_GRACE_MS,
      caps: capsOf(opts),
    });
  }

  private async run(sql: string, o: RunOptions): Promise<EngineResult> {
    if (this.closed) throw new CortadoError('DB_UNAVAILABLE', 'the database cannot be reached: the executor is stopping');
    const client = this.clientFor(o.user);
    const timeoutMs = Math.max(1, Math.floor(o.timeoutMs));
    let queryId: string | undefined;
    let cancelling: Promise<void> | undefined;
    let timedOut = false;

    const cancel = (why: string): Promise<void> => {
      if (!queryId) return Promise.resolve();
      cancelling ??= client.cancel(queryId).then(
        () => undefined,
        (err: unknown) => this.log.warn({ query_id: queryId, why, err: toTrinoError(err).message }, 'cannot cancel the Trino query'),
      );
      return cancelling;
    };
    const knowId = (id: string | undefined): void => {
      if (!id || queryId) return;
      queryId = id;
      this.running.set(id, client);
      if (timedOut) void cancel('timeout'); // the timer fired before the coordinator named the query
    };

    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        timedOut = true;
        this.log.warn({ query_id: queryId ?? null, timeout_ms: timeoutMs }, 'the Trino query outlived its timeout: cancelling it on the coordinator');
        const waited = new Promise<void>((r) => setTimeout(r, CANCEL_WAIT_MS).unref());
        void Promise.race([cancel('timeout'), waited]).finally(() => reject(timedOutError(timeoutMs)));
      }, timeoutMs + o.graceMs);
    });

    const query = {
      query: sql,
      user: o.user,
      ...(o.catalog ? { catalog: o.catalog } : {}),
      session: { query_max_execution_time: `${timeoutMs}ms` },
    };
    const budget = new PageBudget(o.caps);
    const work = this.collect(client, query, o.maxRows, budget, knowId, () => cancel('enough rows'));
    work.catch(() => undefined); // when the timer wins, the late failure has nobody to tell
    try {
      return await Promise.race([work, late]);
    } catch (err) {
      // past the timeout, the page that says "cancelled" (our own DELETE) may arrive before
      // the timer's promise settles: it is still the timeout that ended the query
      if (timedOut) {
        await cancelling;
        throw timedOutError(timeoutMs);
      }
      if (budget.exceeded) {
        const waited = new Promise<void>((r) => setTimeout(r, CANCEL_WAIT_MS).unref());
        await Promise.race([cancel('result too large'), waited]);
        throw budget.exceeded;
      }
      throw toTrinoError(err, timeoutMs);
    } finally {
      clearTimeout(timer);
      if (queryId) this.running.delete(queryId);
    }
  }

  /**
   * The rows a page (at most pageRows) at a time as the coordinator's nextUri pages arrive: the
   * next page is asked for only when the reader wants more, so nothing holds the whole result.
   * Same identity, session timeout (and client backstop), caps and values as execute(). A
   * reader that stops early, a failure or the timeout cancels the query on the coordinator.
   */
  async *pages(sql: string, opts: ExecuteOptions & { pageRows: number }): AsyncGenerator<EngineResult> {
    if (this.closed) throw new CortadoError('DB_UNAVAILABLE', 'the database cannot be reached: the executor is stopping');
    const user = opts.user ?? this.opts.user;
    const client = this.clientFor(user);
    const timeoutMs = Math.max(1, Math.floor(opts.timeoutMs));
    const pageRows = Math.max(1, Math.floor(opts.pageRows));
    let queryId: string | undefined;
    let cancelling: Promise<void> | undefined;
    let timedOut = false;
    const cancel = (why: string): Promise<void> => {
      if (!queryId) return Promise.resolve();
      cancelling ??= client.cancel(queryId).then(
        () => undefined,
        (err: unknown) => this.log.warn({ query_id: queryId, why, err: toTrinoError(err).message }, 'cannot cancel the Trino query'),
      );
      return cancelling;
    };
    const cancelWaiting = (why: string): Promise<void> => {
      const waited = new Promise<void>((r) => setTimeout(r, CANCEL_WAIT_MS).unref());
      return Promise.race([cancel(why), waited]);
    };
    const knowId = (id: string | undefined): void => {
      if (!id || queryId) return;
      queryId = id;
      this.running.set(id, client);
      if (timedOut) void cancel('timeout');
    };
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        timedOut = true;
        this.log.warn({ query_id: queryId ?? null, timeout_ms: timeoutMs }, 'the Trino query outlived its timeout: cancelling it on the coordinator');
        void cancelWaiting('timeout').finally(() => reject(timedOutError(timeoutMs)));
      }, timeoutMs + BACKSTOP_GRACE_MS);
    });
    late.catch(() => undefined); // read only while a page is awaited
    const query = { query: sql, user, session: { query_max_execution_time: `${timeoutMs}ms` } };
    const budget = new PageBudget(capsOf(opts));
    let finished = false;
    let more = true;
    try {
      const iter = await Promise.race([boundedQuery(client, query, budget), late]);
      knowId(queryIdOf(iter));
      let columns: Column[] | undefined;
      let buffer: Cell[][] = [];
      let seen = 0;
      let any = false;
      for (;;) {
        if (timedOut) throw timedOutError(timeoutMs);
        const step = await Promise.race([iter.next(), late]);
        const page = step.value as QueryResult | undefined;
        knowId(page?.id);
        more = !step.done && Boolean(page?.nextUri);
        if (page?.error) throw new TrinoQueryError(page.error);
        if (budget.exceeded || !budget.checkValues(page?.data ?? [])) throw budget.exceeded;
        columns ??= page?.columns?.map((c) => ({ name: c.name, type: c.type }));
        if (step.done) break; // the value of a done step is the page already read (or the first answer)
        const cols = columns ?? [];
        for (const row of (page?.data ?? []) as unknown[][]) {
          if (seen >= opts.maxRows) break;
          seen++;
          buffer.push(cols.map((c, i) => toCell(c.type, row[i])));
          if (buffer.length >= pageRows) {
            const rows = buffer;
            buffer = [];
            any = true;
            yield { columns: cols, rows };
          }
        }
        if (seen >= opts.maxRows || !more) break;
      }
      if (buffer.length || !any) yield { columns: columns ?? [], rows: buffer };
      finished = true;
    } catch (err) {
      if (timedOut) {
        await cancelling;
        throw timedOutError(timeoutMs);
      }
      if (budget.exceeded) {
        await cancelWaiting('result too large');
        throw budget.exceeded;
      }
      throw toTrinoError(err, timeoutMs);
    } finally {
      clearTimeout(timer);
      // the reader stopped (or maxRows was reached) while the coordinator still had pages
      if (more && !timedOut) await cancelWaiting(finished ? 'enough rows' : 'stopped early');
      if (queryId) this.running.delete(queryId);
    }
  }

  /** Follow nextUri until the last page or maxRows; then cancel what the coordinator still has. */
  private async collect(
    client: Trino,
    query: Parameters<Trino['query']>[0],
    maxRows: number,
    budget: PageBudget,
    knowId: (id: string | undefined) => void,
    cancelRest: () => Promise<void>,
  ): Promise<EngineResult> {
    const iter = await boundedQuery(client, query, budget);
    knowId(queryIdOf(iter));
    let columns: Columns | undefined;
    const rows: unknown[][] = [];
    for (;;) {
      const step = await iter.next();
      const page = step.value as QueryResult | undefined;
      knowId(page?.id);
      if (page?.error) throw new TrinoQueryError(page.error);
      if (budget.exceeded || !budget.checkValues(page?.data ?? [])) throw budget.exceeded;
      columns ??= page?.columns;
      if (step.done) break; // the value of a done step is the page already read (or the first answer)
      for (const row of page?.data ?? []) {
        if (rows.length >= maxRows) break;
        rows.push(row as unknown[]);
      }
      if (rows.length >= maxRows) {
        if (page?.nextUri) await cancelRest();
        break;
      }
    }
    const cols: Column[] = (columns ?? []).map((c) => ({ name: c.name, type: c.type }));
    return { columns: cols, rows: rows.map((row) => cols.map((c, i) => toCell(c.type, row[i]))) };
  }

  /** One client per Trino user, the least recently used dropped first. */
  private clientFor(user: string): Trino {
    if (!HEADER_SAFE.test(user)) {
      throw new CortadoError('DB_UNAVAILABLE', 'the database cannot be reached: the user name cannot be sent to Trino (printable ASCII only, no surrounding spaces)');
    }
    const known = this.clients.get(user);
    if (known) {
      this.clients.delete(user);
      this.clients.set(user, known);
      return known;
    }
    const headers: Record<string, string> = { 'X-Trino-User': user };
    if (this.opts.password) {
      headers.Authorization = `Basic ${Buffer.from(`${this.opts.user}:${this.opts.password}`, 'utf8').toString('base64')}`;
    }
    const client = Trino.create({
      server: this.opts.server,
      source: SOURCE,
      ...(this.opts.catalog ? { catalog: this.opts.catalog } : {}),
      ...(this.opts.schema ? { schema: this.opts.schema } : {}),
      extraHeaders: headers,
    });
    if (!(readExactly(client) && canBoundPages(client)) && !this.warnedShape) {
      this.warnedShape = true;
      this.log.error('this trino-client version hides its HTTP settings: integers beyond 2^53 may lose precision, and query.max_result_mb is not enforced (query.max_value_kb is, once a page is read)');
    }
    this.clients.set(user, client);
    if (this.clients.size > MAX_CLIENTS) {
      const oldest = this.clients.keys().next().value;
      if (oldest !== undefined) this.clients.delete(oldest);
    }
    return client;
  }

  async ping(timeoutMs: number): Promise<void> {
    try {
      await this.run('SELECT 1', { timeoutMs, maxRows: 1, user: this.opts.user, graceMs: 0, caps: INTERNAL_CAPS });
    } catch (err) {
      const e = toTrinoError(err);
      if (e.code === 'DB_TIMEOUT') throw new CortadoError('DB_UNAVAILABLE', `the database cannot be reached: no answer within ${timeoutMs} ms`);
      throw e;
    }
  }

  /**
   * information_schema of the configured catalog (only its schema when one is set); without a
   * configured catalog, of every catalog but `system`, with schemas named `catalog.schema`.
   */
  async introspect(): Promise<DbSchema> {
    const { catalog, schema } = this.opts;
    const catalogs = catalog ? [catalog] : (await this.internal('SHOW CATALOGS')).map((r) => String(r[0])).filter((c) => c !== 'system');
    const tables: DbTable[] = [];
    for (const cat of catalogs) {
      const filter = schema ? ` AND c.table_schema = ${literal(schema)}` : '';
      const rows = await this.internal(INTROSPECT_COLUMNS.replace('$FILTER', filter), catalog ? undefined : cat);
      let current: DbTable | undefined;
      for (const [tableSchema, tableName, tableType, columnName, dataType, isNullable] of rows) {
        const schemaName = catalog ? String(tableSchema) : `${cat}.${String(tableSchema)}`;
        if (!current || current.schema !== schemaName || current.name !== String(tableName)) {
          current = { schema: schemaName, name: String(tableName), kind: String(tableType).toUpperCase() === 'VIEW' ? 'view' : 'table', columns: [] };
          tables.push(current);
        }
        current.columns.push({ name: String(columnName), type: String(dataType), nullable: String(isNullable).toUpperCase() !== 'NO' });
      }
    }
    return { default_schema: schema, tables };
  }

  /**
   * Trino cannot say what its access control would let the user do without trying it, and
   * SHOW GRANTS works only for some connectors: "not known to write" is all Cortado can say.
   * The guard is the defence; a Trino user with read-only access control is the safe setup.
   */
  async canWrite(): Promise<WriteAccess> {
    if (!this.warnedWrite) {
      this.warnedWrite = true;
      this.log.info({ user: this.opts.user }, 'Trino cannot tell whether its user may write; the SQL guard refuses writes, and Trino\'s access control decides the rest');
    }
    return { writable: false, reasons: [] };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const running = [...this.running.entries()];
    this.running.clear();
    await Promise.allSettled(running.map(([id, client]) => client.cancel(id)));
    this.clients.clear();
  }

  /** Cortado's own catalog queries, as the configured user, rows as cells. */
  private async internal(sql: string, catalog?: string): Promise<Cell[][]> {
    const r = await this.run(sql, {
      timeoutMs: Math.max(this.opts.timeoutMs, 30_000),
      maxRows: MAX_INTROSPECT_ROWS,
      user: this.opts.user,
      graceMs: BACKSTOP_GRACE_MS,
      caps: INTERNAL_CAPS,
      ...(catalog ? { catalog } : {}),
    });
    if (r.rows.length >= MAX_INTROSPECT_ROWS) this.log.warn({ rows: r.rows.length }, 'the Trino catalog is larger than Cortado reads: set database.trino.schema');
    return r.rows;
  }
}

const INTROSPECT_COLUMNS = `
SELECT c.table_schema, c.table_name, t.table_type, c.column_name, c.data_type, c.is_nullable
FROM information_schema.columns c
JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
WHERE c.table_schema <> 'information_schema'$FILTER
ORDER BY c.table_schema, c.table_name, c.ordinal_position`;

function literal(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}


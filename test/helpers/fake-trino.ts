/**
 * A local server speaking Trino's client REST protocol, answering from a real PostgreSQL,
 * driven by the real trino-client through database.trino.{host,port}.
 *
 * - POST /v1/statement: the SQL body and the X-Trino-* headers are recorded (user, catalog,
 *   schema, source, session, the basic-auth login); the SQL starts running on its own
 *   PostgreSQL connection (search_path = X-Trino-Schema, time zone UTC). The answer is QUEUED
 *   with a nextUri, as Trino's is.
 * - GET nextUri: waits a little for the result (as Trino's long poll does), then pages it:
 *   `pageSize` rows per page with `columns` (Trino type names) and `data` (Trino's JSON
 *   encoding: bigint as a number with every digit, decimal as a string, timestamps with
 *   millis), and no nextUri on the last page. A failure is `error` {message, errorName,
 *   errorType, errorCode}.
 * - DELETE on the query (/v1/query/{id}, what trino-client's cancel sends, or on nextUri):
 *   recorded, and the backing PostgreSQL query cancelled (pg_cancel_backend).
 * - The session property query_max_execution_time stops the query the way Trino does
 *   (EXCEEDED_TIME_LIMIT), unless `honourTimeLimit: false` plays a coordinator that does not.
 *
 * Translation is trivial on purpose: tests send SQL both accept. `SHOW CATALOGS` answers the
 * one catalog, and `information_schema.` reads views (schema fake_trino_meta) that list what a
 * Trino PostgreSQL connector would: user schemas only, Trino type names.
 *
 * The coordinator's query history, `system.runtime.queries`, is a table of this fake's own
 * (schema fake_trino_sys_<id>, dropped on close) with Trino's columns and types, filled by
 * seedRuntimeQueries(); a statement naming it reads that table, and Trino's
 * `date_diff(unit, a, b)` works there as Trino's does (whole units, truncated).
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import type { FieldDef } from 'pg';

export interface FakeTrinoOptions {
  /** the PostgreSQL database the answers come from */
  databaseUrl: string;
  /** rows per data page */
  pageSize?: number;
  /** the one catalog (SHOW CATALOGS, information_schema's table_catalog) */
  catalog?: string;
  /** require HTTP basic auth with this login */
  auth?: { user: string; password: string };
  /** stop queries at query_max_execution_time as Trino does (default true) */
  honourTimeLimit?: boolean;
  /** how long a GET waits for a result before answering "still running" */
  longPollMs?: number;
}

export interface TrinoErrorBody {
  message: string;
  errorName: string;
  errorType: string;
  errorCode?: number;
}

export interface RecordedStatement {
  id: string;
  sql: string;
  /** X-Trino-User */
  user: string | undefined;
  /** the basic-auth login, when there was one */
  principal: string | undefined;
  catalog: string | undefined;
  schema: string | undefined;
  source: string | undefined;
  session: Record<string, string>;
  state: 'QUEUED' | 'RUNNING' | 'FINISHED' | 'FAILED';
  error?: TrinoErrorBody;
  /** the backing PostgreSQL backend, once connected */
  pid?: number;
  /** data pages handed out */
  pages: number;
}

export interface RecordedDelete {
  id: string;
  path: string;
  /** X-Trino-User of the DELETE */
  user: string | undefined;
}

/** One row of system.runtime.queries (Trino's columns; times as ISO instants, null while unset). */
export interface RuntimeQueryRow {
  query_id: string;
  state: 'QUEUED' | 'RUNNING' | 'FINISHED' | 'FAILED';
  user: string;
  source: string | null;
  query: string;
  created: string;
  started: string | null;
  end: string | null;
  error_type?: string | null;
  error_code?: string | null;
}

export interface FakeTrino {
  url: string;
  host: string;
  port: number;
  statements: RecordedStatement[];
  deletes: RecordedDelete[];
  /** the next statement fails with this error instead of running */
  failNext(error: TrinoErrorBody): void;
  /** answer every request with this HTTP status until set back to undefined */
  httpStatus(status: number | undefined): void;
  /** whether query_max_execution_time stops queries (false: a coordinator that does not) */
  honourTimeLimit(on: boolean): void;
  /** resolves when the statement has ended on PostgreSQL */
  settled(id: string): Promise<void>;
  /** what system.runtime.queries holds from now on (replaces earlier rows) */
  seedRuntimeQueries(rows: readonly RuntimeQueryRow[]): Promise<void>;
  close(): Promise<void>;
}

interface TrinoColumn {
  name: string;
  type: string;
  typeSignature: { rawType: string; arguments: Array<{ kind: string; value: unknown }> };
}

interface Query {
  rec: RecordedStatement;
  slug: string;
  done: boolean;
  settled: Promise<void>;
  cancelled: boolean;
  timedOut: boolean;
  columns?: TrinoColumn[];
  /** each row already as JSON text */
  rows?: string[];
  limitMs?: number;
}

const META_SCHEMA = 'fake_trino_meta';
const DATA_MARK = '__FAKE_TRINO_DATA__';

export async function startFakeTrino(opts: FakeTrinoOptions): Promise<FakeTrino> {
  const pageSize = opts.pageSize ?? 2;
  const catalog = opts.catalog ?? 'postgresql';
  let honour = opts.honourTimeLimit ?? true;
  const longPollMs = opts.longPollMs ?? 100;
  const admin = new pg.Pool({ connectionString: opts.databaseUrl, max: 2 });
  admin.on('error', () => undefined); // an idle connection the server ended: the next query opens another
  await createMetaViews(admin, catalog);

  const statements: RecordedStatement[] = [];
  const deletes: RecordedDelete[] = [];
  const queries = new Map<string, Query>();
  let failing: TrinoErrorBody | undefined;
  let forcedStatus: number | undefined;
  let counter = 0;
  let base = '';
  const sysSchema = `fake_trino_sys_${randomBytes(4).toString('hex')}`;
  let sysReady: Promise<void> | undefined;

  const cancelBackend = async (q: Query): Promise<void> => {
    if (q.rec.pid === undefined || q.done) return;
    await admin.query('SELECT pg_cancel_backend($1)', [q.rec.pid]).catch(() => undefined);
  };

  const run = async (q: Query, sql: string): Promise<void> => {
    const rec = q.rec;
    if (/^\s*SHOW\s+CATALOGS\s*$/i.test(sql)) {
      q.columns = [column('Catalog', 'varchar', 'varchar')];
      q.rows = [JSON.stringify([catalog])];
      q.done = true;
      rec.state = 'FINISHED';
      return;
    }
    const client = new pg.Client({ connectionString: opts.databaseUrl, types: TEXT_TYPES });
    let timer: NodeJS.Timeout | undefined;
    try {
      await client.connect();
      rec.pid = (client as unknown as { processID?: number }).processID;
      await client.query("SET TimeZone = 'UTC'");
      if (rec.schema) await client.query('SELECT set_config($1, $2, false)', ['search_path', quoteIdent(rec.schema)]);
      if (q.cancelled) throw Object.assign(new Error('canceled'), { code: '57014' });
      rec.state = 'RUNNING';
      if (honour && q.limitMs !== undefined) {
        timer = setTimeout(() => {
          q.timedOut = true;
          void cancelBackend(q);
        }, q.limitMs);
      }
      let text = sql.replace(/\binformation_schema\s*\./gi, `${META_SCHEMA}.`);
      if (/\bsystem\s*\.\s*runtime\s*\.\s*queries\b/i.test(text)) {
        if (!sysReady) throw Object.assign(new Error('relation "system.runtime.queries" does not exist'), { code: '42P01' });
        await sysReady;
        text = text.replace(/\bsystem\s*\.\s*runtime\s*\.\s*queries\b/gi, `${sysSchema}.queries`).replace(/\bdate_diff\s*\(/gi, `${sysSchema}.date_diff(`);
      }
      const r = await client.query({ text, rowMode: 'array', queryMode: 'extended' } as pg.QueryArrayConfig);
      const fields = r.fields;
      const rows = r.rows as Array<Array<string | null>>;
      q.columns = fields.map((f, i) => trinoColumn(f, rows.map((row) => row[i] ?? null)));
      q.rows = rows.map((row) => `[${row.map((v, i) => encode(fields[i] as FieldDef, v)).join(',')}]`);
    } catch (err) {
      const e = err as { code?: string; message?: string; position?: string };
      rec.error = q.cancelled
        ? { message: 'Query was canceled', errorName: 'USER_CANCELED', errorType: 'USER_ERROR', errorCode: 3 }
        : q.timedOut
          ? { message: `Query exceeded the maximum execution time limit of ${((q.limitMs ?? 0) / 1000).toFixed(2)}s`, errorName: 'EXCEEDED_TIME_LIMIT', errorType: 'INSUFFICIENT_RESOURCES', errorCode: 131075 }
          : pgToTrino(e, sql);
    } finally {
      clearTimeout(timer);
      await client.end().catch(() => undefined);
      q.done = true;
      if (!rec.error) rec.state = 'FINISHED';
      else rec.state = 'FAILED';
    }
  };

  const infoUri = (id: string) => `${base}/ui/query.html?${id}`;
  const stats = (state: string, q?: Query) => ({
    state, queued: state === 'QUEUED', scheduled: state !== 'QUEUED', nodes: 1, totalSplits: 1, queuedSplits: 0, runningSplits: 0,
    completedSplits: state === 'FINISHED' ? 1 : 0, cpuTimeMillis: 1, wallTimeMillis: 1, queuedTimeMillis: 0, elapsedTimeMillis: 1,
    processedRows: q?.rows?.length ?? 0, processedBytes: 0, physicalInputBytes: 0, peakMemoryBytes: 0, spilledBytes: 0,
  });

  const answer = (res: http.ServerResponse, status: number, body: unknown, data?: string[]): void => {
    let text = JSON.stringify(body);
    if (data) text = text.replace(`"${DATA_MARK}"`, `[${data.join(',')}]`);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };

  const failedPage = (q: Query) => ({
    id: q.rec.id,
    infoUri: infoUri(q.rec.id),
    stats: stats('FAILED'),
    error: { ...q.rec.error, errorCode: q.rec.error?.errorCode ?? 0, failureInfo: { type: 'io.trino.spi.TrinoException', message: q.rec.error?.message, suppressed: [], stack: [] } },
    warnings: [],
  });

  const waitFor = async (q: Query): Promise<void> => {
    if (q.done) return;
    await Promise.race([q.settled, new Promise((r) => setTimeout(r, longPollMs))]);
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse, body: string): Promise<void> => {
    const url = new URL(req.url ?? '/', base);
    const header = (name: string) => {
      const v = req.headers[name];
      return Array.isArray(v) ? v[0] : v;
    };
    if (forcedStatus !== undefined) {
      res.writeHead(forcedStatus, { 'content-type': 'text/plain' }).end(`forced HTTP ${forcedStatus}`);
      return;
    }
    let principal: string | undefined;
    if (opts.auth) {
      const auth = header('authorization') ?? '';
      const [login, ...rest] = auth.startsWith('Basic ') ? Buffer.from(auth.slice(6), 'base64').toString('utf8').split(':') : [];
      if (login !== opts.auth.user || rest.join(':') !== opts.auth.password) {
        res.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Basic realm="Trino"' }).end('Unauthorized');
        return;
      }
      principal = login;
    }

    if (req.method === 'POST' && url.pathname === '/v1/statement') {
      const id = `20240101_000000_${String(++counter).padStart(5, '0')}_${randomBytes(3).toString('hex').slice(0, 5)}`;
      const session: Record<string, string> = {};
      for (const pair of (header('x-trino-session') ?? '').split(',')) {
        const eq = pair.indexOf('=');
        if (eq > 0) session[decodeURIComponent(pair.slice(0, eq).trim())] = decodeURIComponent(pair.slice(eq + 1).trim());
      }
      const rec: RecordedStatement = {
        id, sql: body, user: header('x-trino-user'), principal, catalog: header('x-trino-catalog'), schema: header('x-trino-schema'),
        source: header('x-trino-source'), session, state: 'QUEUED', pages: 0,
      };
      statements.push(rec);
      let settle: () => void = () => undefined;
      const q: Query = { rec, slug: randomBytes(8).toString('hex'), done: false, settled: new Promise<void>((r) => (settle = r)), cancelled: false, timedOut: false };
      const limit = session.query_max_execution_time;
      if (limit) q.limitMs = durationMs(limit);
      queries.set(id, q);
      if (failing) {
        rec.error = failing;
        rec.state = 'FAILED';
        failing = undefined;
        q.done = true;
        settle();
      } else {
        void run(q, body).finally(settle);
      }
      answer(res, 200, { id, infoUri: infoUri(id), nextUri: `${base}/v1/statement/queued/${id}/${q.slug}/1`, stats: stats('QUEUED'), warnings: [] });
      return;
    }

    const paged = /^\/v1\/statement\/(queued|executing)\/([^/]+)\/([^/]+)\/(\d+)$/.exec(url.pathname);
    const killed = /^\/v1\/query\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'DELETE' && (paged || killed)) {
      const id = (paged?.[2] ?? killed?.[1]) as string;
      deletes.push({ id, path: url.pathname, user: header('x-trino-user') });
      const q = queries.get(id);
      if (!q) {
        res.writeHead(404).end();
        return;
      }
      if (!q.done) {
        q.cancelled = true;
        await cancelBackend(q);
      } else if (!q.rec.error) {
        q.cancelled = true; // pages not read yet are gone
      }
      res.writeHead(204).end();
      return;
    }

    if (req.method === 'GET' && paged) {
      const [, phase, id, slug, tokenText] = paged as unknown as [string, string, string, string, string];
      const q = queries.get(id);
      if (!q || q.slug !== slug) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('Query not found');
        return;
      }
      await waitFor(q);
      if (q.cancelled) {
        q.rec.error ??= { message: 'Query was canceled', errorName: 'USER_CANCELED', errorType: 'USER_ERROR', errorCode: 3 };
        answer(res, 200, failedPage(q));
        return;
      }
      if (q.rec.error) {
        answer(res, 200, failedPage(q));
        return;
      }
      if (!q.done) {
        const next = phase === 'queued' ? `${base}/v1/statement/executing/${id}/${slug}/0` : `${base}${url.pathname}`;
        answer(res, 200, { id, infoUri: infoUri(id), nextUri: next, stats: stats(q.rec.state), warnings: [] });
        return;
      }
      const token = phase === 'queued' ? 0 : Number(tokenText);
      const rows = q.rows ?? [];
      const page = rows.slice(token * pageSize, (token + 1) * pageSize);
      const more = (token + 1) * pageSize < rows.length;
      q.rec.pages++;
      answer(res, 200, {
        id,
        infoUri: infoUri(id),
        ...(more ? { nextUri: `${base}/v1/statement/executing/${id}/${slug}/${token + 1}` } : {}),
        columns: q.columns,
        ...(page.length ? { data: DATA_MARK } : {}),
        stats: stats(more ? 'RUNNING' : 'FINISHED', q),
        warnings: [],
      }, page);
      return;
    }

    res.writeHead(404, { 'content-type': 'text/plain' }).end(`no fake for ${req.method} ${url.pathname}`);
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      handle(req, res, Buffer.concat(chunks).toString('utf8')).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(String(err));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  base = `http://127.0.0.1:${port}`;

  return {
    url: base,
    host: '127.0.0.1',
    port,
    statements,
    deletes,
    failNext(error) {
      failing = error;
    },
    httpStatus(status) {
      forcedStatus = status;
    },
    honourTimeLimit(on) {
      honour = on;
    },
    async settled(id) {
      await queries.get(id)?.settled;
    },
    async seedRuntimeQueries(rows) {
      sysReady ??= createRuntimeQueries(admin, sysSchema);
      await sysReady;
      await admin.query(`DELETE FROM ${sysSchema}.queries`);
      for (const r of rows) {
        await admin.query(
          `INSERT INTO ${sysSchema}.queries (query_id, state, "user", source, query, resource_group_id, queued_time_ms, analysis_time_ms, planning_time_ms, created, started, last_heartbeat, "end", error_type, error_code)
           VALUES ($1, $2, $3, $4, $5, ARRAY['global'], 0, 1, 1, $6, $7, COALESCE($8, now()), $8, $9, $10)`,
          [r.query_id, r.state, r.user, r.source, r.query, r.created, r.started, r.end, r.error_type ?? null, r.error_code ?? null],
        );
      }
    },
    async close() {
      for (const q of queries.values()) {
        if (!q.done) {
          q.cancelled = true;
          await cancelBackend(q);
        }
      }
      await Promise.all([...queries.values()].map((q) => q.settled));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (sysReady) await admin.query(`DROP SCHEMA IF EXISTS ${sysSchema} CASCADE`).catch(() => undefined);
      await admin.end();
    },
  };
}

// ---- PostgreSQL → Trino -----------------------------------------------------------------------

/** Every value as PostgreSQL's text; the fake encodes it for Trino itself. */
const TEXT_TYPES = { getTypeParser: () => (text: string) => text } as unknown as pg.CustomTypesConfig;

const OID = {
  bool: 16, bytea: 17, int8: 20, int2: 21, int4: 23, text: 25, json: 114, float4: 700, float8: 701, bpchar: 1042, varchar: 1043,
  date: 1082, time: 1083, timestamp: 1114, timestamptz: 1184, numeric: 1700, uuid: 2950, jsonb: 3802, int4array: 1007, textarray: 1009,
} as const;

function column(name: string, type: string, rawType: string, args: Array<{ kind: string; value: unknown }> = []): TrinoColumn {
  return { name, type, typeSignature: { rawType, arguments: args } };
}

function trinoColumn(f: FieldDef, values: Array<string | null>): TrinoColumn {
  const mod = f.dataTypeModifier;
  const long = (value: number) => ({ kind: 'LONG', value });
  switch (f.dataTypeID) {
    case OID.bool: return column(f.name, 'boolean', 'boolean');
    case OID.int2: return column(f.name, 'smallint', 'smallint');
    case OID.int4: return column(f.name, 'integer', 'integer');
    case OID.int8: return column(f.name, 'bigint', 'bigint');
    case OID.float4: return column(f.name, 'real', 'real');
    case OID.float8: return column(f.name, 'double', 'double');
    case OID.numeric: {
      // numeric(p,s) keeps its typmod; an unbounded numeric (sum, avg) becomes decimal(38, widest scale)
      const p = mod >= 4 ? ((mod - 4) >> 16) & 0xffff : 38;
      const s = mod >= 4 ? (mod - 4) & 0xffff : Math.max(0, ...values.map((v) => (v && v.includes('.') ? v.length - v.indexOf('.') - 1 : 0)));
      return column(f.name, `decimal(${p},${s})`, 'decimal', [long(p), long(s)]);
    }
    case OID.varchar: return mod >= 4 ? column(f.name, `varchar(${mod - 4})`, 'varchar', [long(mod - 4)]) : column(f.name, 'varchar', 'varchar', [long(2147483647)]);
    case OID.bpchar: return column(f.name, `char(${Math.max(1, mod - 4)})`, 'char', [long(Math.max(1, mod - 4))]);
    case OID.date: return column(f.name, 'date', 'date');
    case OID.time: return column(f.name, 'time(3)', 'time', [long(3)]);
    case OID.timestamp: return column(f.name, 'timestamp(3)', 'timestamp', [long(3)]);
    case OID.timestamptz: return column(f.name, 'timestamp(3) with time zone', 'timestamp with time zone', [long(3)]);
    case OID.json:
    case OID.jsonb: return column(f.name, 'json', 'json');
    case OID.uuid: return column(f.name, 'uuid', 'uuid');
    case OID.bytea: return column(f.name, 'varbinary', 'varbinary');
    case OID.int4array: return column(f.name, 'array(integer)', 'array', [{ kind: 'TYPE', value: { rawType: 'integer', arguments: [] } }]);
    case OID.textarray: return column(f.name, 'array(varchar)', 'array', [{ kind: 'TYPE', value: { rawType: 'varchar', arguments: [] } }]);
    default: return column(f.name, 'varchar', 'varchar', [long(2147483647)]);
  }
}

/** Fraction digits to exactly `digits`: Trino prints timestamp(3) as 2024-01-05 08:00:00.000. */
function millis(clock: string, digits = 3): string {
  const m = /^([^.]*)(?:\.(\d+))?$/.exec(clock);
  const whole = m?.[1] ?? clock;
  const fraction = (m?.[2] ?? '').padEnd(digits, '0').slice(0, digits);
  return `${whole}.${fraction}`;
}

/** One PostgreSQL text value as the JSON Trino would send for the column. */
function encode(f: FieldDef, v: string | null): string {
  if (v === null) return 'null';
  switch (f.dataTypeID) {
    case OID.bool: return v === 't' ? 'true' : 'false';
    case OID.int2:
    case OID.int4:
    case OID.int8: return v; // a JSON number with every digit, as Trino writes a bigint
    case OID.float4:
    case OID.float8: return /^-?(?:\d|\.\d)/.test(v) ? JSON.stringify(Number(v)) : JSON.stringify(v); // NaN, Infinity as strings
    case OID.timestamp: return JSON.stringify(millis(v));
    case OID.timestamptz: return JSON.stringify(`${millis(v.replace(/[+-]\d\d(?::\d\d)?$/, ''))} UTC`);
    case OID.time: return JSON.stringify(millis(v));
    case OID.bytea: return JSON.stringify(Buffer.from(v.replace(/^\\x/, ''), 'hex').toString('base64'));
    case OID.int4array:
    case OID.textarray: return JSON.stringify((pg.types.getTypeParser as (oid: number, format: 'text') => (text: string) => unknown)(f.dataTypeID, 'text')(v));
    default: return JSON.stringify(v); // decimal, varchar, date, json, uuid: strings
  }
}

/** A PostgreSQL error as Trino's error object. */
function pgToTrino(e: { code?: string; message?: string; position?: string }, sql: string): TrinoErrorBody {
  const message = e.message ?? 'unknown failure';
  let where = '';
  if (e.position) {
    const before = sql.slice(0, Number(e.position) - 1).split('\n');
    where = `line ${before.length}:${(before.at(-1)?.length ?? 0) + 1}: `;
  }
  const user = (errorName: string, errorCode: number): TrinoErrorBody => ({ message: `${where}${message}`, errorName, errorType: 'USER_ERROR', errorCode });
  switch (e.code) {
    case '42601': return user('SYNTAX_ERROR', 1);
    case '42703': return user('COLUMN_NOT_FOUND', 47);
    case '42P01': return user('TABLE_NOT_FOUND', 46);
    case '42883': return user('FUNCTION_NOT_FOUND', 44);
    case '42804':
    case '42846': return user('TYPE_MISMATCH', 58);
    case '22P02': return user('INVALID_CAST_ARGUMENT', 38);
    case '22012': return user('DIVISION_BY_ZERO', 8);
    case '42501': return { message: `Access Denied: ${message}`, errorName: 'PERMISSION_DENIED', errorType: 'USER_ERROR', errorCode: 4 };
    case '57014': return user('USER_CANCELED', 3);
  }
  if (e.code?.startsWith('42') || e.code?.startsWith('22')) return user('GENERIC_USER_ERROR', 0);
  if (e.code?.startsWith('08') || !/^[0-9A-Z]{5}$/.test(e.code ?? '')) return { message: `Error connecting to the data source: ${message}`, errorName: 'JDBC_ERROR', errorType: 'EXTERNAL', errorCode: 16777216 };
  return { message, errorName: 'GENERIC_INTERNAL_ERROR', errorType: 'INTERNAL_ERROR', errorCode: 65536 };
}

/** Trino's duration syntax: 1500ms, 2s, 1.50s, 5m, 1h, 1d. */
function durationMs(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)\s*(ns|us|ms|s|m|h|d)$/.exec(text.trim());
  if (!m) return undefined;
  const unit = { ns: 1e-6, us: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 'ms'];
  return Number(m[1]) * unit;
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** system.runtime.queries with Trino's column types, and Trino's date_diff for it. */
async function createRuntimeQueries(admin: pg.Pool, schema: string): Promise<void> {
  await admin.query(`
    CREATE SCHEMA ${schema};
    CREATE TABLE ${schema}.queries (
      query_id varchar NOT NULL, state varchar NOT NULL, "user" varchar NOT NULL, source varchar, query varchar NOT NULL,
      resource_group_id text[], queued_time_ms bigint, analysis_time_ms bigint, planning_time_ms bigint,
      created timestamptz(3), started timestamptz(3), last_heartbeat timestamptz(3), "end" timestamptz(3),
      error_type varchar, error_code varchar);
    CREATE FUNCTION ${schema}.date_diff(unit text, a timestamptz, b timestamptz) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
      SELECT trunc(extract(epoch FROM b - a) * CASE lower(unit)
        WHEN 'millisecond' THEN 1000 WHEN 'second' THEN 1 WHEN 'minute' THEN 1.0 / 60 WHEN 'hour' THEN 1.0 / 3600 WHEN 'day' THEN 1.0 / 86400 END)::bigint
    $$;
  `);
}

/** information_schema as a Trino PostgreSQL connector shows it: user schemas, Trino type names. */
async function createMetaViews(admin: pg.Pool, catalog: string): Promise<void> {
  const cat = `'${catalog.replace(/'/g, "''")}'::varchar`;
  const userSchemas = `table_schema NOT IN ('pg_catalog', 'information_schema', '${META_SCHEMA}') AND table_schema NOT LIKE 'pg\\_%'`;
  await admin.query(`
    CREATE SCHEMA IF NOT EXISTS ${META_SCHEMA};
    CREATE OR REPLACE VIEW ${META_SCHEMA}.tables AS
      SELECT ${cat} AS table_catalog, table_schema::varchar AS table_schema, table_name::varchar AS table_name, table_type::varchar AS table_type
      FROM information_schema.tables WHERE ${userSchemas};
    CREATE OR REPLACE VIEW ${META_SCHEMA}.columns AS
      SELECT ${cat} AS table_catalog, table_schema::varchar AS table_schema, table_name::varchar AS table_name,
             column_name::varchar AS column_name, ordinal_position::bigint AS ordinal_position, is_nullable::varchar AS is_nullable,
             (CASE data_type
                WHEN 'integer' THEN 'integer' WHEN 'bigint' THEN 'bigint' WHEN 'smallint' THEN 'smallint'
                WHEN 'numeric' THEN CASE WHEN numeric_precision IS NULL THEN 'decimal(38,0)' ELSE format('decimal(%s,%s)', numeric_precision, numeric_scale) END
                WHEN 'text' THEN 'varchar'
                WHEN 'character varying' THEN CASE WHEN character_maximum_length IS NULL THEN 'varchar' ELSE format('varchar(%s)', character_maximum_length) END
                WHEN 'character' THEN format('char(%s)', character_maximum_length)
                WHEN 'double precision' THEN 'double' WHEN 'real' THEN 'real' WHEN 'boolean' THEN 'boolean' WHEN 'date' THEN 'date'
                WHEN 'timestamp without time zone' THEN format('timestamp(%s)', datetime_precision)
                WHEN 'timestamp with time zone' THEN format('timestamp(%s) with time zone', datetime_precision)
                WHEN 'json' THEN 'json' WHEN 'jsonb' THEN 'json' WHEN 'uuid' THEN 'uuid' WHEN 'bytea' THEN 'varbinary'
                ELSE 'varchar' END)::varchar AS data_type
      FROM information_schema.columns WHERE ${userSchemas};
  `);
}

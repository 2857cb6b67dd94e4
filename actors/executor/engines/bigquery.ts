/**
 * BigQuery through @google-cloud/bigquery: the SDK's authenticated REST calls (auth, endpoint,
 * error parsing), with the job flow written here so every step is ours to bound and cancel:
 *
 * 1. a dry run (jobs.insert, dryRun) before anything runs: its statementType must be SELECT
 *    (defence in depth behind the guard: a script or DML never reaches step 2), and its
 *    totalBytesProcessed is the estimate; the stats returned are step 2's own figure when
 *    BigQuery reports one (0 on a cache hit), else the estimate, priced per TiB;
 * 2. jobs.query (GoogleSQL, the default dataset, the location, a server wait no longer than
 *    the time left, maxResults = min(rows wanted, max_results)), then jobs.getQueryResults
 *    pages (pageToken) until the rows wanted are there;
 * 3. a client timer over all of it: at the timeout the job is cancelled (jobs.cancel), also
 *    when its id only arrives with the late jobs.query answer, and the error is DB_TIMEOUT.
 * The user who asked goes on the job as the label `cortado_user`, for BigQuery's audit.
 *
 * Size: jobs.query's rows are bounded by BigQuery itself (a response is at most 10 MB); every
 * further page (jobs.getQueryResults) is read as a stream and stopped once it is larger than
 * what the result has left (query.max_result_mb), before it is parsed. The pages' bytes add up
 * (jobs.query's counted from its values), and each page's values are checked against
 * query.max_value_kb. Over either: RESULT_TOO_LARGE.
 *
 * Credentials: credentials_json (inline) or credentials_path (read here), parsed and handed to
 * google-auth-library as an object: no temporary files, no environment changes; neither means
 * Application Default Credentials. google-auth-library always asks Google's token endpoint
 * and ignores a service account's `token_uri`; we honour it (private token endpoints,
 * gateways, tests) by giving the JWT client a transport that sends the token request there.
 *
 * Values: BigQuery sends every value as a string. INT64 becomes a number when it is a safe
 * integer, FLOAT64 a number, NUMERIC/BIGNUMERIC a number only when exactly representable,
 * BOOL a boolean, TIMESTAMP an ISO-8601 string in UTC (from the exact epoch microseconds),
 * DATE/DATETIME/TIME/STRING/BYTES (base64)/JSON as sent, arrays and structs JSON text.
 */
import { readFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { BigQuery } from '@google-cloud/bigquery';
import { GoogleAuth, gaxios, type AnyAuthClient, type JWTInput } from 'google-auth-library';
import { CortadoError } from '../../../protocol/errors.js';
import type { Logger } from '../../../protocol/log.js';
import type { Cell, Column } from '../../../protocol/schemas/common.js';
import type { DbTable } from '../../../protocol/schemas/sql.js';
import type { Config } from '../../../config/schema.js';
import { rejected } from '../guard/types.js';
import type { DbEngine, DbSchema, EngineResult, ExecuteOptions, QueryStats, WriteAccess } from './engine.js';
import { exactNumber } from './postgresql.js';
import { capsOf, INTERNAL_CAPS, PAGE_SLACK_BYTES, PageBudget, valueBytes, type WireCaps } from './wire-cap.js';

export interface BigQueryEngineOptions {
  projectId: string;
  /** the default dataset for unqualified table names; '' for none */
  dataset: string;
  /** where jobs run (US, EU, europe-west1, ...); '' lets BigQuery decide */
  location: string;
  /** a parsed key file (service account or another type google-auth-library knows) */
  credentials?: Record<string, unknown>;
  /** a key file that is not JSON (.p12, .pem), left to google-auth-library */
  keyFilename?: string;
  /** rows per page asked of BigQuery, at most */
  maxResults: number;
  /** USD per TiB scanned, for estimated_cost_usd */
  pricePerTbUsd?: number;
  /** another API endpoint (tests, proxies): http://host:port */
  apiEndpoint?: string;
  /** how long our own queries (introspection) may take */
  timeoutMs: number;
  log: Logger;
}

const SCOPES = ['https://www.googleapis.com/auth/bigquery'];
const GOOGLE_TOKEN_URI = 'https://oauth2.googleapis.com/token';
/** BigQuery waits at most this long per jobs.query / getQueryResults call before answering "not done yet". */
const SERVER_WAIT_MS = 10_000;
/** After the timeout: how long we wait to learn the job id and cancel it. */
const CANCEL_GRACE_MS = 3_000;
const BYTES_PER_TIB = 2 ** 40;

// ---- the REST shapes we read --------------------------------------------------------------

interface JobReference {
  projectId?: string;
  jobId?: string;
  location?: string;
}

export interface TableField {
  name?: string;
  type?: string;
  mode?: string;
  fields?: TableField[];
}

interface Row {
  f?: Array<{ v?: unknown }>;
}

interface QueryResponse {
  jobReference?: JobReference;
  jobComplete?: boolean;
  schema?: { fields?: TableField[] };
  rows?: Row[];
  pageToken?: string;
  totalBytesProcessed?: string;
}

interface JobResource {
  jobReference?: JobReference;
  statistics?: { totalBytesProcessed?: string; query?: { statementType?: string; totalBytesProcessed?: string } };
}

interface RequestOptions {
  method?: 'GET' | 'POST';
  uri: string;
  json?: unknown;
  qs?: Record<string, string | number | boolean>;
}

/** What a dry run tells. */
export interface DryRun {
  statementType: string;
  bytesProcessed?: number;
}

// ---- from the configuration ---------------------------------------------------------------

export async function createBigQueryFromConfig(config: Config, log: Logger): Promise<DbEngine> {
  const c = config.database.bigquery;
  if (!c.project_id) throw new CortadoError('CONFIG_INVALID', 'database.bigquery.project_id is empty: set the Google Cloud project the queries run in');
  return new BigQueryEngine({
    projectId: c.project_id,
    dataset: c.dataset,
    location: c.location,
    ...loadCredentials(c.credentials_json, c.credentials_path),
    maxResults: c.max_results,
    ...(c.price_per_tb_usd !== undefined ? { pricePerTbUsd: c.price_per_tb_usd } : {}),
    ...(c.base_url ? { apiEndpoint: c.base_url.replace(/\/+$/, '') } : {}),
    timeoutMs: (c.timeout ?? config.query.timeout) * 1000,
    log,
  });
}

/** The key from credentials_json or credentials_path; neither: Application Default Credentials. */
export function loadCredentials(json: string, path: string): Pick<BigQueryEngineOptions, 'credentials' | 'keyFilename'> {
  if (json.trim() !== '') {
    try {
      return { credentials: asObject(JSON.parse(json)) };
    } catch {
      // never the content: it holds a private key
      throw new CortadoError('CONFIG_INVALID', 'database.bigquery.credentials_json is not a JSON object (paste the whole key file)');
    }
  }
  if (path.trim() === '') return {};
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as { code?: string }).code ?? 'unreadable';
    throw new CortadoError('CONFIG_INVALID', `database.bigquery.credentials_path cannot be read (${path}: ${code})`);
  }
  try {
    return { credentials: asObject(JSON.parse(text)) };
  } catch {
    return { keyFilename: path }; // a .p12 or .pem key: google-auth-library reads those itself
  }
}

function asObject(v: unknown): Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('not an object');
  return v as Record<string, unknown>;
}

/**
 * A transport that sends the service account's token request to its own token_uri:
 * google-auth-library's JWT client posts to Google's endpoint whatever the key says.
 */
class TokenUriTransport extends gaxios.Gaxios {
  constructor(private readonly tokenUri: string) {
    super();
  }

  override request<T = ReturnType<JSON['parse']>>(opts: gaxios.GaxiosOptions = {}): gaxios.GaxiosPromise<T> {
    const url = opts.url instanceof URL ? opts.url.href : opts.url;
    return super.request<T>(url === GOOGLE_TOKEN_URI ? { ...opts, url: this.tokenUri } : opts);
  }
}

/** The auth client for a key given as JSON (a JWT client for a service account); undefined: ADC or a key file. */
function authFor(opts: BigQueryEngineOptions): AnyAuthClient | undefined {
  const credentials = opts.credentials;
  if (!credentials) return undefined;
  const tokenUri = credentials.type === 'service_account' && typeof credentials.token_uri === 'string' ? credentials.token_uri : GOOGLE_TOKEN_URI;
  const auth = new GoogleAuth({ scopes: SCOPES, projectId: opts.projectId });
  return auth.fromJSON(credentials as JWTInput, tokenUri !== GOOGLE_TOKEN_URI ? { transporter: new TokenUriTransport(tokenUri) } : {});
}

// ---- the engine ---------------------------------------------------------------------------

/** Thrown by a Deadline when the time is up (never leaves the engine). */
const TIME_UP = Symbol('time up');

/** One timer for a whole query: races each call against the time left. */
class Deadline {
  private readonly end: number;
  private timer: NodeJS.Timeout | undefined;
  private readonly up: Promise<never>;

  constructor(ms: number) {
    this.end = Date.now() + ms;
    this.up = new Promise<never>((_resolve, reject) => {
      this.timer = setTimeout(() => reject(TIME_UP), ms);
    });
    this.up.catch(() => undefined);
  }

  left(): number {
    return Math.max(1, this.end - Date.now());
  }

  race<T>(work: Promise<T>): Promise<T> {
    work.catch(() => undefined); // when time wins, a late failure has nobody to tell
    return Promise.race([work, this.up]);
  }

  /** Run `stop` when the time is up (a page still being read). */
  onUp(stop: () => void): void {
    this.up.catch(stop);
  }

  clear(): void {
    clearTimeout(this.timer);
  }
}

export class BigQueryEngine implements DbEngine {
  readonly provider = 'bigquery' as const;
  readonly dialect = 'bigquery' as const;
  private readonly opts: BigQueryEngineOptions;
  private readonly client: BigQuery;
  private readonly running = new Map<string, JobReference>();
  private closed = false;

  constructor(opts: BigQueryEngineOptions) {
    this.opts = opts;
    const auth = authFor(opts);
    this.client = new BigQuery({
      projectId: opts.projectId,
      ...(opts.location ? { location: opts.location } : {}),
      ...(opts.apiEndpoint ? { apiEndpoint: opts.apiEndpoint } : {}),
      ...(auth ? { authClient: auth } : opts.keyFilename ? { keyFilename: opts.keyFilename } : {}),
      // one attempt per call: the timeout bounds the whole query, and the caller decides on retries
      retryOptions: { autoRetry: false },
    });
  }

  async execute(sql: string, opts: ExecuteOptions): Promise<EngineResult> {
    const deadline = new Deadline(opts.timeoutMs);
    const job: RunningQuery = {};
    try {
      const dry = await deadline.race(this.dryRun(sql));
      if (dry.statementType !== 'SELECT') {
        throw rejected('not_select', `only a SELECT query may run; BigQuery's dry run says this is ${dry.statementType}`, { statement: dry.statementType });
      }
      const result = await this.query(sql, opts.maxRows, deadline, job, { caps: capsOf(opts), ...(opts.user ? { user: opts.user } : {}) });
      const bytes = result.bytesProcessed ?? dry.bytesProcessed;
      const stats = this.stats(bytes);
      return { columns: result.columns, rows: result.rows, ...(stats ? { stats } : {}) };
    } catch (err) {
      if (err === TIME_UP) {
        await this.cancelLate(job);
        throw timedOut(opts.timeoutMs);
      }
      throw toDbError(err);
    } finally {
      deadline.clear();
    }
  }

  /** The cost of running it, from the dry run (refused like execute() when it is not a SELECT). */
  async estimate(sql: string): Promise<QueryStats> {
    try {
      const dry = await this.dryRun(sql);
      if (dry.statementType !== 'SELECT') {
        throw rejected('not_select', `only a SELECT query may run; BigQuery's dry run says this is ${dry.statementType}`, { statement: dry.statementType });
      }
      return this.stats(dry.bytesProcessed) ?? {};
    } catch (err) {
      throw toDbError(err);
    }
  }

  /** The dry run: what kind of statement BigQuery sees, and the bytes it would scan. Nothing runs. */
  async dryRun(sql: string): Promise<DryRun> {
    const job = await this.call<JobResource>({
      method: 'POST',
      uri: '/jobs',
      json: {
        jobReference: { projectId: this.opts.projectId, jobId: `cortado_dry_${randomUUID().replace(/-/g, '')}`, ...this.locationRef() },
        configuration: { dryRun: true, query: this.queryConfig(sql) },
      },
    });
    const q = job.statistics?.query;
    const bytes = Number(q?.totalBytesProcessed ?? job.statistics?.totalBytesProcessed);
    return { statementType: q?.statementType ?? 'UNKNOWN', ...(Number.isFinite(bytes) ? { bytesProcessed: bytes } : {}) };
  }

  /** jobs.query, then pages until maxRows. `job` learns the job reference as soon as it is known. */
  private async query(sql: string, maxRows: number, deadline: Deadline, job: RunningQuery, o: { caps: WireCaps; user?: string }): Promise<{ columns: Column[]; rows: Cell[][]; bytesProcessed?: number }> {
    if (this.closed) throw new CortadoError('DB_UNAVAILABLE', 'the database cannot be reached: the executor is stopping');
    const { user } = o;
    const budget = new PageBudget(o.caps);
    const pageSize = (wanted: number): number => Math.max(1, Math.min(wanted, this.opts.maxResults));
    job.start = this.call<QueryResponse>({
      method: 'POST',
      uri: '/queries',
      json: {
        ...this.queryConfig(sql),
        ...this.locationRef(),
        requestId: randomUUID(),
        maxResults: pageSize(maxRows),
        timeoutMs: Math.min(SERVER_WAIT_MS, deadline.left()),
        formatOptions: { useInt64Timestamp: true },
        // who asked, on the job for BigQuery's own audit (labels allow [a-z0-9_-], 63 characters)
        ...(user ? { labels: { cortado_user: user.toLowerCase().replace(/[^a-z0-9_-]/g, '_').slice(0, 63) } } : {}),
      },
    });
    let res = await deadline.race(job.start);
    this.track(job, res.jobReference);
    try {
      // jobs.query's own rows: BigQuery bounds its answer; counted from the values
      budget.add(valueBytes(res.rows ?? [], Number.MAX_SAFE_INTEGER));
      while (!res.jobComplete) {
        res = await deadline.race(this.results(job.ref, { timeoutMs: Math.min(SERVER_WAIT_MS, deadline.left()), maxResults: pageSize(maxRows) }, budget, deadline));
      }
      const fields = res.schema?.fields ?? [];
      const rows: Cell[][] = [];
      const take = (page: QueryResponse): void => {
        const cells: Cell[][] = [];
        for (const row of page.rows ?? []) {
          if (rows.length + cells.length >= maxRows) break;
          cells.push(rowCells(fields, row));
        }
        if (budget.exceeded || !budget.checkValues(cells)) throw budget.exceeded;
        rows.push(...cells);
      };
      take(res);
      const bytes = Number(res.totalBytesProcessed);
      while (rows.length < maxRows && res.pageToken) {
        res = await deadline.race(this.results(job.ref, { pageToken: res.pageToken, maxResults: pageSize(maxRows - rows.length) }, budget, deadline));
        take(res);
      }
      return { columns: fields.map(columnOf), rows, ...(Number.isFinite(bytes) ? { bytesProcessed: bytes } : {}) };
    } finally {
      if (job.ref?.jobId) this.running.delete(job.ref.jobId);
    }
  }

  /**
   * jobs.getQueryResults, read as a stream (the SDK's authenticated request): the body is
   * stopped once it is larger than what the result has left, before anything is parsed; a read
   * still going when the time is up is stopped too.
   */
  private results(ref: JobReference | undefined, qs: Record<string, string | number>, budget: PageBudget, deadline: Deadline): Promise<QueryResponse> {
    if (!ref?.jobId) return Promise.reject(new CortadoError('INTERNAL', 'BigQuery did not name the job of the query'));
    const limit = budget.left + PAGE_SLACK_BYTES;
    return new Promise<QueryResponse>((resolve, reject) => {
      const stream = this.client.requestStream({
        uri: `/queries/${encodeURIComponent(ref.jobId!)}`,
        qs: { ...qs, 'formatOptions.useInt64Timestamp': true, ...(ref.location ? { location: ref.location } : {}) },
      }) as unknown as Readable;
      const chunks: Buffer[] = [];
      let bytes = 0;
      let status = 0;
      let settled = false;
      const fail = (err: unknown): void => {
        if (settled) return;
        settled = true;
        stream.destroy();
        reject(err);
      };
      deadline.onUp(() => fail(TIME_UP));
      stream.on('response', (res: { statusCode?: number }) => {
        status = res.statusCode ?? 0;
      });
      stream.on('data', (chunk: Buffer) => {
        if (settled) return;
        bytes += chunk.length;
        if (bytes > limit) return fail(budget.pageStopped());
        chunks.push(chunk);
      });
      stream.on('error', fail);
      stream.on('end', () => {
        if (settled) return;
        settled = true;
        let body: unknown;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          body = undefined;
        }
        if (status >= 400 || body === null || typeof body !== 'object') return reject(apiError(status, body));
        budget.add(bytes);
        resolve(body as QueryResponse);
      });
    });
  }

  private track(job: RunningQuery, ref: JobReference | undefined): void {
    job.ref = ref;
    if (ref?.jobId) this.running.set(ref.jobId, ref);
  }

  /** At the timeout: cancel the job, waiting a little for its id when jobs.query has not answered yet. */
  private async cancelLate(job: RunningQuery): Promise<void> {
    let ref = job.ref;
    if (!ref?.jobId && job.start) {
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), CANCEL_GRACE_MS);
      });
      const res = await Promise.race([job.start.catch(() => undefined), grace]);
      clearTimeout(timer);
      ref = res?.jobReference;
      if (!ref?.jobId) {
        // still unknown: cancel whenever jobs.query answers
        void job.start.then((late) => this.cancel(late.jobReference), () => undefined);
        return;
      }
    }
    await this.cancel(ref);
  }

  private async cancel(ref: JobReference | undefined): Promise<void> {
    if (!ref?.jobId) return;
    try {
      await withTimeout(this.call({
        method: 'POST',
        uri: `/jobs/${encodeURIComponent(ref.jobId)}/cancel`,
        ...(ref.location ? { qs: { location: ref.location } } : {}),
      }), CANCEL_GRACE_MS);
      this.opts.log.info({ job: ref.jobId }, 'cancelled the BigQuery job at its timeout');
    } catch (err) {
      this.opts.log.warn({ job: ref.jobId, err: toDbError(err).message }, 'cannot cancel the BigQuery job');
    } finally {
      this.running.delete(ref.jobId);
    }
  }

  private queryConfig(sql: string): Record<string, unknown> {
    return {
      query: sql,
      useLegacySql: false,
      ...(this.opts.dataset ? { defaultDataset: { projectId: this.opts.projectId, datasetId: this.opts.dataset } } : {}),
    };
  }

  private locationRef(): { location?: string } {
    return this.opts.location ? { location: this.opts.location } : {};
  }

  private stats(bytes: number | undefined): QueryStats | undefined {
    if (bytes === undefined) return undefined;
    const price = this.opts.pricePerTbUsd;
    return { bytes_processed: bytes, ...(price !== undefined ? { estimated_cost_usd: (bytes / BYTES_PER_TIB) * price } : {}) };
  }

  /** An authenticated call of the BigQuery REST API under /projects/{project}. */
  private call<T>(req: RequestOptions): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.client.request(req, (err, body) => (err ? reject(err) : resolve(body as T)));
    });
  }

  async introspect(): Promise<DbSchema> {
    const deadline = new Deadline(this.opts.timeoutMs);
    try {
      const p = quoteIdent(this.opts.projectId);
      const scope = this.opts.dataset
        ? `${p}.${quoteIdent(this.opts.dataset)}`
        : `${p}.${quoteIdent(`region-${(this.opts.location || 'US').toLowerCase()}`)}`;
      const tables = await this.query(INTROSPECT_TABLES(scope), Number.MAX_SAFE_INTEGER, deadline, {}, { caps: INTERNAL_CAPS });
      const columns = await this.query(INTROSPECT_COLUMNS(scope), Number.MAX_SAFE_INTEGER, deadline, {}, { caps: INTERNAL_CAPS });
      const byName = new Map<string, DbTable>();
      const out: DbTable[] = [];
      for (const [schema, name, type, description] of tables.rows) {
        const table: DbTable = { schema: String(schema), name: String(name), kind: type === 'VIEW' || type === 'MATERIALIZED VIEW' ? 'view' : 'table', columns: [] };
        const comment = optionText(description);
        if (comment) table.comment = comment;
        byName.set(`${table.schema}.${table.name}`, table);
        out.push(table);
      }
      for (const [schema, table, name, nullable, type, description] of columns.rows) {
        const t = byName.get(`${String(schema)}.${String(table)}`);
        if (!t) continue;
        t.columns.push({ name: String(name), type: String(type), nullable: nullable !== 'NO', ...(typeof description === 'string' && description ? { comment: description } : {}) });
      }
      return { default_schema: this.opts.dataset, tables: out };
    } catch (err) {
      if (err === TIME_UP) throw new CortadoError('DB_TIMEOUT', `listing the tables took longer than ${seconds(this.opts.timeoutMs)}`);
      throw toDbError(err);
    } finally {
      deadline.clear();
    }
  }

  async ping(timeoutMs: number): Promise<void> {
    try {
      await withTimeout(this.dryRun('SELECT 1'), timeoutMs);
    } catch (err) {
      if (err === TIME_UP) throw new CortadoError('DB_UNAVAILABLE', `the database cannot be reached: no answer within ${timeoutMs} ms`);
      throw toDbError(err);
    }
  }

  /**
   * BigQuery cannot tell cheaply whether the credentials could write: IAM roles sit on the
   * project, datasets and tables, and testing them means a call per resource. We say "not
   * writable" and rely on what does hold: the guard, and the dry run's statementType, which
   * keeps anything but a SELECT from being run at all.
   */
  async canWrite(): Promise<WriteAccess> {
    return { writable: false, reasons: [] };
  }

  /** Cancel what still runs (best effort), then refuse new work. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([...this.running.values()].map((ref) => this.cancel(ref)));
  }
}

interface RunningQuery {
  start?: Promise<QueryResponse>;
  ref?: JobReference | undefined;
}

/** An HTTP error read from a stream, in the shape of the SDK's ApiError (toDbError reads `code` and `errors`). */
function apiError(status: number, body: unknown): Error {
  const e = (body as { error?: { message?: unknown; errors?: unknown } } | undefined)?.error;
  const message = typeof e?.message === 'string' ? e.message : `BigQuery answered HTTP ${status} without a readable body`;
  return Object.assign(new Error(message), { code: status || 502, errors: Array.isArray(e?.errors) ? e.errors : [] });
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(TIME_UP), ms);
  });
  work.catch(() => undefined);
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** `project-id` → `` `project-id` `` (a backtick in a name is escaped). */
function quoteIdent(name: string): string {
  return `\`${name.replace(/[\\`]/g, (c) => `\\${c}`)}\``;
}

// ---- catalog queries ----------------------------------------------------------------------

const INTROSPECT_TABLES = (scope: string): string => `
SELECT t.table_schema, t.table_name, t.table_type, o.option_value AS description
FROM ${scope}.INFORMATION_SCHEMA.TABLES AS t
LEFT JOIN ${scope}.INFORMATION_SCHEMA.TABLE_OPTIONS AS o
  ON o.table_schema = t.table_schema AND o.table_name = t.table_name AND o.option_name = 'description'
ORDER BY t.table_schema, t.table_name`;

const INTROSPECT_COLUMNS = (scope: string): string => `
SELECT c.table_schema, c.table_name, c.column_name, c.is_nullable, c.data_type, p.description
FROM ${scope}.INFORMATION_SCHEMA.COLUMNS AS c
LEFT JOIN ${scope}.INFORMATION_SCHEMA.COLUMN_FIELD_PATHS AS p
  ON p.table_schema = c.table_schema AND p.table_name = c.table_name AND p.column_name = c.column_name AND p.field_path = c.column_name
ORDER BY c.table_schema, c.table_name, c.ordinal_position`;

/** TABLE_OPTIONS values are GoogleSQL literals: `"one row per order"` → one row per order. */
function optionText(v: Cell | undefined): string | undefined {
  if (typeof v !== 'string' || v === '') return undefined;
  if (v.startsWith('"') && v.endsWith('"')) {
    try {
      return JSON.parse(v) as string;
    } catch {
      return v.slice(1, -1);
    }
  }
  return v;
}

// ---- values -------------------------------------------------------------------------------

/** The REST API's (legacy) type names → GoogleSQL's. */
const TYPE_NAMES: Record<string, string> = { INTEGER: 'INT64', FLOAT: 'FLOAT64', BOOLEAN: 'BOOL', RECORD: 'STRUCT' };

function typeName(field: TableField, withMode = true): string {
  const raw = (field.type ?? 'STRING').toUpperCase();
  let name = TYPE_NAMES[raw] ?? raw;
  if (name === 'STRUCT') name = `STRUCT<${(field.fields ?? []).map((f) => `${f.name ?? ''} ${typeName(f)}`).join(', ')}>`;
  return withMode && field.mode === 'REPEATED' ? `ARRAY<${name}>` : name;
}

export function columnOf(field: TableField): Column {
  return { name: field.name ?? '', type: typeName(field) };
}

export function rowCells(fields: TableField[], row: Row): Cell[] {
  return fields.map((field, i) => bigqueryCell(field, row.f?.[i]?.v));
}

/** One value of a row: a JSON scalar; arrays and structs as JSON text. */
export function bigqueryCell(field: TableField, v: unknown): Cell {
  const value = decode(field, v);
  if (value !== null && typeof value === 'object') return JSON.stringify(value);
  return value;
}

type Decoded = Cell | Decoded[] | { [key: string]: Decoded };

function decode(field: TableField, v: unknown): Decoded {
  if (v === null || v === undefined) return null;
  if (field.mode === 'REPEATED') {
    const items = Array.isArray(v) ? (v as Array<{ v?: unknown }>) : [];
    const element = { ...field, mode: 'NULLABLE' };
    return items.map((item) => decode(element, item?.v));
  }
  const type = typeName(field, false);
  if (type.startsWith('STRUCT')) {
    const cells = (v as Row).f ?? [];
    const out: Record<string, Decoded> = {};
    (field.fields ?? []).forEach((f, i) => {
      out[f.name ?? String(i)] = decode(f, cells[i]?.v);
    });
    return out;
  }
  const text = typeof v === 'string' ? v : String(v);
  switch (type) {
    case 'INT64': {
      const n = Number(text);
      return Number.isSafeInteger(n) ? n : text;
    }
    case 'FLOAT64': {
      const n = Number(text);
      return Number.isFinite(n) ? n : text; // NaN and Infinity are not JSON
    }
    case 'NUMERIC':
    case 'BIGNUMERIC':
    case 'DECIMAL':
    case 'BIGDECIMAL':
      return exactNumber(text);
    case 'BOOL':
      return text === 'true';
    case 'TIMESTAMP':
      return isoTimestamp(text);
    default:
      return text; // STRING, BYTES (base64), DATE, DATETIME, TIME, JSON, GEOGRAPHY, INTERVAL, RANGE
  }
}

/**
 * A TIMESTAMP as ISO-8601 in UTC, to the microsecond: from epoch microseconds (what we ask
 * for, exact) or epoch seconds as a float string (BigQuery's other format).
 */
export function isoTimestamp(text: string): string {
  let micros: bigint;
  if (/^-?\d+$/.test(text)) micros = BigInt(text);
  else {
    const seconds = Number(text);
    if (!Number.isFinite(seconds)) return text;
    micros = BigInt(Math.round(seconds * 1e6));
  }
  const MICROS = 1_000_000n;
  let secs = micros / MICROS;
  let frac = micros % MICROS;
  if (frac < 0n) {
    frac += MICROS;
    secs -= 1n;
  }
  const iso = new Date(Number(secs) * 1000).toISOString(); // 2024-01-05T08:00:00.000Z
  const fraction = frac === 0n ? '' : `.${frac.toString().padStart(6, '0')}`;
  return `${iso.slice(0, 19)}${fraction}Z`;
}

// ---- errors -------------------------------------------------------------------------------

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

function timedOut(timeoutMs: number): CortadoError {
  return new CortadoError('DB_TIMEOUT', `the query ran past its timeout of ${seconds(timeoutMs)} and was cancelled`, { timeout_ms: timeoutMs });
}

function unavailable(why: string, details: Record<string, unknown>, cause: unknown): CortadoError {
  return new CortadoError('DB_UNAVAILABLE', `the database cannot be reached: ${why}`, details, { cause });
}

const NETWORK: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'unknown host',
  EAI_AGAIN: 'unknown host',
  ECONNRESET: 'the connection was closed',
  EPIPE: 'the connection was closed',
  ETIMEDOUT: 'the host does not answer',
  EHOSTUNREACH: 'the host does not answer',
  ENETUNREACH: 'the host does not answer',
  CERT_HAS_EXPIRED: 'the TLS connection failed',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'the TLS connection failed',
};

/**
 * The SDK's errors → DB_QUERY_FAILED (BigQuery refused the SQL: 400 invalidQuery and the
 * like, 404 for a table or dataset that is not there), DB_TIMEOUT (a job stopped), and
 * DB_UNAVAILABLE (login refused, access denied, quota, 5xx, the network), else INTERNAL.
 */
export function toDbError(err: unknown): CortadoError {
  if (err instanceof CortadoError) return err;
  const e = (err ?? {}) as { code?: unknown; status?: unknown; errors?: Array<{ reason?: string; message?: string }>; message?: unknown; response?: { data?: { error?: unknown; error_description?: unknown } } };
  const message = typeof e.message === 'string' ? e.message : String(err);

  // google-auth-library (the token endpoint, the metadata server): the API calls themselves do not use gaxios
  if (err instanceof gaxios.GaxiosError) {
    const network = typeof e.code === 'string' ? NETWORK[e.code] : undefined;
    if (network) return unavailable(`the token endpoint cannot be reached (${network})`, { reason: e.code }, err);
    const grant = typeof e.response?.data?.error === 'string' ? e.response.data.error : undefined;
    return unavailable(`the login was refused${grant ? ` (${grant})` : ''}`, grant ? { reason: grant } : {}, err);
  }
  if (/could not load the default credentials/i.test(message)) {
    return unavailable('no credentials: set database.bigquery.credentials_path or credentials_json, or provide Application Default Credentials', {}, err);
  }

  const status = typeof e.code === 'number' ? e.code : typeof e.status === 'number' ? e.status : undefined;
  const first = e.errors?.[0];
  const reason = first?.reason ?? '';
  const said = first?.message ?? message;
  if (status !== undefined) {
    const details = { status, ...(reason ? { reason } : {}) };
    if (status === 400 || status === 404) {
      if (reason === 'stopped') return new CortadoError('DB_TIMEOUT', 'the query was cancelled', details, { cause: err });
      return new CortadoError('DB_QUERY_FAILED', said, details, { cause: err });
    }
    if (status === 401) return unavailable('the login was refused (invalid or expired credentials)', details, err);
    if (status === 403) {
      if (/quota|rateLimit/i.test(reason)) return unavailable(`quota or rate limit exceeded: ${said}`, details, err);
      return unavailable(`access denied: ${said}`, details, err);
    }
    if (status === 429) return unavailable(`rate limited: ${said}`, details, err);
    if (status >= 500) return unavailable(`BigQuery failed (HTTP ${status}${reason ? ` ${reason}` : ''})`, details, err);
  }
  const code = typeof e.code === 'string' ? e.code : '';
  const network = NETWORK[code] ?? (/ECONNREFUSED|ENOTFOUND|ECONNRESET|socket hang up|network/i.test(message) ? 'the network failed' : undefined);
  if (network) return unavailable(network, code ? { reason: code } : {}, err);
  return new CortadoError('INTERNAL', 'internal error', undefined, { cause: err });
}

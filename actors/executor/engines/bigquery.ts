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
import type { Readable } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { BigQuery } from '@google-cloud/bigquery';
import { CortadoError } from '../../../protocol/errors.js';
import type { Logger } from '../../../runtime/log.js';
import type { Cell, Column } from '../../../protocol/schemas/common.js';
import type { DbTable } from '../../../protocol/schemas/sql.js';
import type { Config } from '../../../config/schema.js';
import { rejected } from '../guard/types.js';
import type { DbEngine, DbSchema, EngineResult, ExecuteOptions, QueryStats, WriteAccess } from './engine.js';
import { authFor } from '../../lib/warehouse/bigquery-auth.js';
import { loadCredentials } from './bigquery-auth.js';
import { INTROSPECT_COLUMNS, INTROSPECT_TABLES, optionText } from './bigquery-catalog.js';
import { toDbError } from './bigquery-errors.js';
import { columnOf, rowCells, type Row, type TableField } from './bigquery-values.js';
import { seconds, timedOut } from './errors.js';
import { capsOf, INTERNAL_CAPS, PAGE_SLACK_BYTES, PageBudget, valueBytes, type WireCaps } from './wire-cap.js';

export { loadCredentials } from './bigquery-auth.js';
export { bigqueryCell, columnOf, isoTimestamp, rowCells, type TableField } from './bigquery-values.js';
export { toDbError } from './bigquery-errors.js';

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

  /**
   * The rows a page at a time: the dry run and jobs.query as execute() does, then one
   * jobs.getQueryResults page (maxResults = pageRows, at most database.bigquery.max_results)
   * each time the reader wants more, so nothing holds the whole result. The job is complete
   * before the first row arrives: a reader that stops early leaves only pages not fetched. The
   * timeout covers the reading too (the job cancelled if still running), and the caps add up
   * over the pages.
   */
  async *pages(sql: string, opts: ExecuteOptions & { pageRows: number }): AsyncGenerator<EngineResult> {
    const deadline = new Deadline(opts.timeoutMs);
    const job: RunningQuery = {};
    try {
      const dry = await deadline.race(this.dryRun(sql));
      if (dry.statementType !== 'SELECT') {
        throw rejected('not_select', `only a SELECT query may run; BigQuery's dry run says this is ${dry.statementType}`, { statement: dry.statementType });
      }
      if (this.closed) throw new CortadoError('DB_UNAVAILABLE', 'the database cannot be reached: the executor is stopping');
      const budget = new PageBudget(capsOf(opts));
      const pageRows = Math.max(1, Math.min(Math.floor(opts.pageRows), this.opts.maxResults));
      const size = (wanted: number): number => Math.max(1, Math.min(wanted, pageRows));
      const user = opts.user;
      job.start = this.call<QueryResponse>({
        method: 'POST',
        uri: '/queries',
        json: {
          ...this.queryConfig(sql),
          ...this.locationRef(),
          requestId: randomUUID(),
          maxResults: size(opts.maxRows),
          timeoutMs: Math.min(SERVER_WAIT_MS, deadline.left()),
          formatOptions: { useInt64Timestamp: true },
          ...(user ? { labels: { cortado_user: user.toLowerCase().replace(/[^a-z0-9_-]/g, '_').slice(0, 63) } } : {}),
        },
      });
      let res = await deadline.race(job.start);
      this.track(job, res.jobReference);
      budget.add(valueBytes(res.rows ?? [], Number.MAX_SAFE_INTEGER));
      while (!res.jobComplete) {
        res = await deadline.race(this.results(job.ref, { timeoutMs: Math.min(SERVER_WAIT_MS, deadline.left()), maxResults: size(opts.maxRows) }, budget, deadline));
      }
      const fields = res.schema?.fields ?? [];
      const columns = fields.map(columnOf);
      const stats = this.stats(Number.isFinite(Number(res.totalBytesProcessed)) ? Number(res.totalBytesProcessed) : dry.bytesProcessed);
      let seen = 0;
      let any = false;
      for (;;) {
        const cells: Cell[][] = [];
        for (const row of res.rows ?? []) {
          if (seen + cells.length >= opts.maxRows) break;
          cells.push(rowCells(fields, row));
        }
        if (budget.exceeded || !budget.checkValues(cells)) throw budget.exceeded;
        seen += cells.length;
        if (cells.length > 0) {
          yield { columns, rows: cells, ...(stats && !any ? { stats } : {}) };
          any = true;
        }
        if (seen >= opts.maxRows || !res.pageToken) break;
        res = await deadline.race(this.results(job.ref, { pageToken: res.pageToken, maxResults: size(opts.maxRows - seen) }, budget, deadline));
      }
      if (!any) yield { columns, rows: [], ...(stats ? { stats } : {}) };
    } catch (err) {
      if (err === TIME_UP) {
        await this.cancelLate(job);
        throw timedOut(opts.timeoutMs);
      }
      throw toDbError(err);
    } finally {
      deadline.clear();
      if (job.ref?.jobId) this.running.delete(job.ref.jobId);
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

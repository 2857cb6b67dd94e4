/**
 * A local server speaking the BigQuery REST API (v2) the way @google-cloud/bigquery calls it,
 * answering from a real PostgreSQL so the rows are real:
 *
 *   POST /token                                      OAuth 2 JWT-bearer grant (a service account's token_uri)
 *   POST /bigquery/v2/projects/{p}/queries           jobs.query (also with dryRun)
 *   POST /bigquery/v2/projects/{p}/jobs              jobs.insert (a dry run, or a query job)
 *   GET  /bigquery/v2/projects/{p}/queries/{job}     jobs.getQueryResults (pageToken, maxResults, timeoutMs)
 *   GET  /bigquery/v2/projects/{p}/jobs/{job}        jobs.get
 *   POST /bigquery/v2/projects/{p}/jobs/{job}/cancel jobs.cancel (pg_cancel_backend on the job's backend)
 *   GET  /bigquery/v2/projects/{p}/datasets          datasets.list (maxResults, pageToken)
 *   GET  /bigquery/v2/projects/{p}/datasets/{d}      datasets.get (with `access` entries)
 *
 * The operations console (actors/ops) reads BigQuery's administrative views. A test seeds
 * them per project and region with `fake.ops.seed(...)`; a query that reads
 * `<project>.region-<r>.INFORMATION_SCHEMA.{JOBS, JOBS_BY_PROJECT, JOBS_TIMELINE,
 * JOBS_TIMELINE_BY_PROJECT, RESERVATIONS}` then runs on PostgreSQL over the seeded rows (as a
 * `jsonb_to_recordset` subquery with BigQuery's column names), so the product's own SQL —
 * filters, aggregates, ORDER BY, LIMIT — really runs:
 *
 *   fake.ops.seed({
 *     project: 'acme-prod', region: 'US',            // region default US; view scope region-us
 *     jobs: [{ job_id, user_email, creation_time (ISO), total_bytes_billed, total_slot_ms, query,
 *              statement_type? = 'SELECT', job_type? = 'QUERY', state? = 'DONE', end_time?, cache_hit? }],
 *     timeline: [{ period_start (ISO), period_slot_ms, job_id?, statement_type?, job_type?, reservation_id? }],
 *     reservations: [{ reservation_name, slot_capacity, edition? }],
 *     datasets: [{ dataset_id, location? = region, access: [{ role, specialGroup? | iamMember? | userByEmail? | groupByEmail? | domain? }] }],
 *     denied: 'Access Denied: ...',                  // every call for the project: 403 accessDenied with this message
 *   });
 *
 * Each array given replaces the one seeded before for that project (datasets) or project and
 * region (the rest); `denied: null` lifts a denial. A seeded project is served besides the
 * fake's own `projectId`; any other project is 404. Besides the catalog views, the SQL
 * translation knows `UNIX_SECONDS(x)` (→ EXTRACT(EPOCH FROM x)) and `TIMESTAMP_SECONDS(x)`
 * (→ TO_TIMESTAMP(x)); `DIV`, `SUBSTR`, `DATE(ts)`, `COALESCE` and `TIMESTAMP '… +00'`
 * literals mean the same in both.
 *
 * Every API call needs a bearer token this server issued at /token for a JWT assertion signed
 * with the service account key it made (`serviceAccount()`), checked with the public key.
 *
 * SQL goes to PostgreSQL nearly as written: `backtick` paths become "quoted"."identifiers"
 * (the project part dropped), `#` comments become `--`, the default dataset becomes the
 * search_path, and `<dataset or region-xx>.INFORMATION_SCHEMA.{TABLES, COLUMNS,
 * COLUMN_FIELD_PATHS, TABLE_OPTIONS}` become queries on PostgreSQL's catalog with BigQuery's
 * column names and type names. Tests use SQL both accept. A dry run names the statement type
 * from the first keyword (SCRIPT for several statements) and checks a SELECT with EXPLAIN;
 * totalBytesProcessed is `bytesFor(sql)`, a deterministic number. Results come back the way
 * BigQuery sends them: every value a string in `{f: [{v}]}` rows, legacy type names in
 * schema.fields (INTEGER, FLOAT, BOOLEAN, ...), arrays as mode REPEATED, TIMESTAMP as epoch
 * microseconds with formatOptions.useInt64Timestamp, else epoch seconds. Errors have BigQuery's
 * shape `{error: {code, message, errors: [{reason, message}], status}}`.
 *
 * `calls` records every request as `METHOD path`; `requests` keeps bodies and query strings.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createVerify, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import pg from 'pg';

export interface FakeBigQueryOptions {
  /** the PostgreSQL database the queries run on */
  databaseUrl: string;
  projectId: string;
  /** the location jobs run in (default US) */
  location?: string;
  /** bytes a query processes (dry run and run); default: 1 MiB per character of SQL */
  bytesProcessed?: (sql: string) => number;
}

export interface RecordedCall {
  method: string;
  path: string;
  query: URLSearchParams;
  body: any;
  headers: http.IncomingHttpHeaders;
}

export interface InjectedError {
  status: number;
  reason: string;
  message: string;
}

export interface OpsJobSeed {
  job_id: string;
  user_email: string;
  /** ISO 8601 */
  creation_time: string;
  total_bytes_billed: number | null;
  total_slot_ms: number | null;
  query: string;
  statement_type?: string;
  job_type?: string;
  state?: string;
  end_time?: string;
  cache_hit?: boolean;
}

export interface OpsTimelineSeed {
  /** ISO 8601; BigQuery has one row per job per second */
  period_start: string;
  period_slot_ms: number;
  job_id?: string;
  statement_type?: string;
  job_type?: string;
  reservation_id?: string;
}

export interface OpsReservationSeed {
  reservation_name: string;
  slot_capacity: number;
  edition?: string;
}

export interface OpsAccessEntry {
  role: string;
  specialGroup?: string;
  iamMember?: string;
  userByEmail?: string;
  groupByEmail?: string;
  domain?: string;
}

export interface OpsDatasetSeed {
  dataset_id: string;
  /** default: the seed's region */
  location?: string;
  access: OpsAccessEntry[];
}

export interface OpsSeed {
  project: string;
  /** default US (views under `region-us`) */
  region?: string;
  jobs?: OpsJobSeed[];
  timeline?: OpsTimelineSeed[];
  reservations?: OpsReservationSeed[];
  datasets?: OpsDatasetSeed[];
  /** every call for this project answers 403 accessDenied with this message; null lifts it */
  denied?: string | null;
}

export interface FakeBigQuery {
  /** the apiEndpoint (database.bigquery.base_url) */
  url: string;
  projectId: string;
  /** `METHOD path` of every request, in order */
  calls: string[];
  requests: RecordedCall[];
  /** a service-account key whose token_uri is this server (private key made for this run) */
  serviceAccount(): Record<string, string>;
  /** access tokens issued at /token */
  tokensIssued(): number;
  /** jobs started (not dry runs), with their state */
  jobs(): Array<{ id: string; sql: string; state: string; cancelled: boolean }>;
  /** each job sleeps this long on its PostgreSQL backend before its query (0: off) */
  slow(ms: number): void;
  /** jobs.query answers this much later than it would (0: off): the client learns the job id late */
  delayAnswers(ms: number): void;
  /** the next API calls (not /token) answer with these errors, one each */
  failNext(...errors: InjectedError[]): void;
  bytesFor(sql: string): number;
  /** the administrative views and datasets the operations console reads (see the top of this file) */
  ops: {
    seed(seed: OpsSeed): void;
    /** forget every seed */
    reset(): void;
  };
  close(): Promise<void>;
}

interface OpsRegion {
  jobs: OpsJobSeed[];
  timeline: OpsTimelineSeed[];
  reservations: OpsReservationSeed[];
}

interface OpsProject {
  denied?: string;
  regions: Map<string, OpsRegion>;
  datasets: OpsDatasetSeed[];
  /** the seed's region, the default location of its datasets */
  region: string;
}

/** `US` → `region-us`: the scope of the region's INFORMATION_SCHEMA views. */
function regionScope(region: string): string {
  return `region-${region.toLowerCase()}`;
}

const TOKEN_AUDIENCE = 'https://oauth2.googleapis.com/token';
const DEFAULT_WAIT_MS = 10_000;

interface Field {
  name: string;
  type: string;
  mode: 'NULLABLE' | 'REPEATED';
}

/** A value as BigQuery sends it; timestamps kept as epoch microseconds until a page is rendered. */
type Value = string | null | { ts: bigint } | Value[];

interface Job {
  id: string;
  projectId: string;
  location: string;
  sql: string;
  statementType: string;
  state: 'RUNNING' | 'DONE';
  cancelled: boolean;
  error?: InjectedError;
  fields?: Field[];
  rows?: Value[][];
  pid?: number;
  bytes: number;
  created: number;
  started: number;
  ended?: number;
  done: Promise<void>;
}

const STATUS_NAMES: Record<number, string> = { 400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND', 409: 'ALREADY_EXISTS', 429: 'RESOURCE_EXHAUSTED', 500: 'INTERNAL', 503: 'UNAVAILABLE' };

export async function startFakeBigQuery(opts: FakeBigQueryOptions): Promise<FakeBigQuery> {
  const location = opts.location ?? 'US';
  const bytesFor = opts.bytesProcessed ?? ((sql: string) => sql.length * 1024 * 1024);
  const admin = new pg.Pool({ connectionString: opts.databaseUrl, max: 4, application_name: 'fake-bigquery-admin' });
  admin.on('error', () => undefined); // an idle connection the server ended: the next query opens another
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyId = randomBytes(8).toString('hex');
  const clientEmail = `cortado-test@${opts.projectId}.iam.gserviceaccount.com`;
  const tokens = new Set<string>();
  const jobs = new Map<string, Job>();
  const calls: string[] = [];
  const requests: RecordedCall[] = [];
  const injected: InjectedError[] = [];
  const open = new Set<http.ServerResponse>();
  const opsProjects = new Map<string, OpsProject>();
  let slowMs = 0;
  let answerDelayMs = 0;
  let jobCounter = 0;
  let url = '';

  const server = http.createServer((req, res) => {
    open.add(res);
    res.on('close', () => open.delete(res));
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://fake');
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: any;
      try {
        body = raw === '' ? {} : req.headers['content-type']?.includes('json') ? JSON.parse(raw) : Object.fromEntries(new URLSearchParams(raw));
      } catch {
        sendError(res, 400, 'parseError', 'malformed JSON');
        return;
      }
      calls.push(`${req.method} ${u.pathname}`);
      requests.push({ method: req.method ?? '', path: u.pathname, query: u.searchParams, body, headers: req.headers });
      handle(req.method ?? '', u, body, req.headers, res).catch((err: unknown) => {
        sendError(res, 500, 'backendError', `the fake failed: ${(err as Error).message}`);
      });
    });
  });

  async function handle(method: string, u: URL, body: any, headers: http.IncomingHttpHeaders, res: http.ServerResponse): Promise<void> {
    if (method === 'POST' && u.pathname === '/token') return token(body, res);

    const m = /^\/bigquery\/v2\/projects\/([^/]+)\/(queries|jobs|datasets)(?:\/([^/]+))?(\/cancel)?$/.exec(u.pathname);
    if (!m) return sendError(res, 404, 'notFound', `no route ${method} ${u.pathname}`);
    const auth = headers.authorization ?? '';
    if (!auth.startsWith('Bearer ') || !tokens.has(auth.slice(7))) {
      return sendError(res, 401, 'authError', 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.');
    }
    const failure = injected.shift();
    if (failure) return sendError(res, failure.status, failure.reason, failure.message);

    const projectId = decodeURIComponent(m[1]!);
    const [, , collection, id, cancel] = m;
    const jobId = id ? decodeURIComponent(id) : undefined;
    const seeded = opsProjects.get(projectId);
    if (projectId !== opts.projectId && !seeded) {
      return sendError(res, 404, 'notFound', `Not found: Project ${projectId}`);
    }
    if (seeded?.denied) return sendError(res, 403, 'accessDenied', seeded.denied);
    if (collection === 'datasets' && method === 'GET' && !jobId) return datasetsList(projectId, u.searchParams, res);
    if (collection === 'datasets' && method === 'GET' && jobId && !cancel) return datasetsGet(projectId, jobId, res);
    if (collection === 'queries' && method === 'POST' && !jobId) return jobsQuery(projectId, body, res);
    if (collection === 'queries' && method === 'GET' && jobId) return getQueryResults(jobId, u.searchParams, res);
    if (collection === 'jobs' && method === 'POST' && !jobId) return jobsInsert(projectId, body, res);
    if (collection === 'jobs' && method === 'GET' && jobId && !cancel) return jobsGet(jobId, res);
    if (collection === 'jobs' && method === 'POST' && jobId && cancel) return jobsCancel(jobId, res);
    return sendError(res, 404, 'notFound', `no route ${method} ${u.pathname}`);
  }

  // ---- auth ---------------------------------------------------------------------------------

  function token(body: Record<string, string>, res: http.ServerResponse): void {
    const refuse = (why: string): void => send(res, 400, { error: 'invalid_grant', error_description: why });
    if (body.grant_type !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return refuse('unsupported grant_type');
    const parts = String(body.assertion ?? '').split('.');
    if (parts.length !== 3) return refuse('malformed assertion');
    const [h, p, sig] = parts as [string, string, string];
    const header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as { alg?: string; kid?: string };
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as { iss?: string; aud?: string; exp?: number; scope?: string };
    if (header.alg !== 'RS256') return refuse('assertion not RS256');
    if (!verifies(publicKey, `${h}.${p}`, sig)) return refuse('Invalid JWT Signature.');
    if (claims.iss !== clientEmail) return refuse('Invalid issuer');
    if (claims.aud !== TOKEN_AUDIENCE && claims.aud !== `${url}/token`) return refuse('Invalid audience');
    if (typeof claims.exp !== 'number' || claims.exp * 1000 < Date.now()) return refuse('Token has expired');
    if (!String(claims.scope ?? '').includes('https://www.googleapis.com/auth/bigquery')) return refuse('Invalid scope');
    const access = `ya29.fake-${randomBytes(12).toString('hex')}`;
    tokens.add(access);
    send(res, 200, { access_token: access, expires_in: 3599, token_type: 'Bearer' });
  }

  // ---- jobs ---------------------------------------------------------------------------------

  async function jobsQuery(projectId: string, body: any, res: http.ServerResponse): Promise<void> {
    const sql = String(body.query ?? '');
    if (body.useLegacySql !== false) return sendError(res, 400, 'invalid', 'the fake only speaks GoogleSQL: send useLegacySql false');
    const dataset = body.defaultDataset?.datasetId as string | undefined;
    const loc = String(body.location ?? location);
    if (body.dryRun) {
      const dry = await dryRun(sql, dataset, projectId);
      if ('error' in dry) return sendError(res, dry.error.status, dry.error.reason, dry.error.message);
      return send(res, 200, { kind: 'bigquery#queryResponse', jobReference: { projectId, location: loc }, totalBytesProcessed: String(dry.bytes), jobComplete: true, cacheHit: false, schema: { fields: dry.fields ?? [] } });
    }
    const job = startJob(projectId, sql, dataset, loc);
    const finished = await settles(job, numberOr(body.timeoutMs, DEFAULT_WAIT_MS));
    if (answerDelayMs > 0) await new Promise((r) => setTimeout(r, answerDelayMs));
    if (finished && job.error) return sendError(res, job.error.status, job.error.reason, job.error.message);
    const maxResults = numberOr(body.maxResults, Number.MAX_SAFE_INTEGER);
    send(res, 200, { kind: 'bigquery#queryResponse', ...resultsBody(job, finished, 0, maxResults, body.formatOptions?.useInt64Timestamp === true) });
  }

  async function jobsInsert(projectId: string, body: any, res: http.ServerResponse): Promise<void> {
    const q = body.configuration?.query ?? {};
    const sql = String(q.query ?? '');
    if (q.useLegacySql !== false) return sendError(res, 400, 'invalid', 'the fake only speaks GoogleSQL: send useLegacySql false');
    const dataset = q.defaultDataset?.datasetId as string | undefined;
    const loc = String(body.jobReference?.location ?? location);
    const jobId = String(body.jobReference?.jobId ?? `job_${++jobCounter}`);
    if (body.configuration?.dryRun) {
      const dry = await dryRun(sql, dataset, projectId);
      if ('error' in dry) return sendError(res, dry.error.status, dry.error.reason, dry.error.message);
      const now = Date.now();
      return send(res, 200, {
        kind: 'bigquery#job',
        id: `${projectId}:${loc}.${jobId}`,
        jobReference: { projectId, jobId, location: loc },
        configuration: { ...body.configuration, jobType: 'QUERY' },
        status: { state: 'DONE' },
        statistics: {
          creationTime: String(now),
          totalBytesProcessed: String(dry.bytes),
          query: { totalBytesProcessed: String(dry.bytes), totalBytesProcessedAccuracy: 'PRECISE', statementType: dry.statementType, ...(dry.fields ? { schema: { fields: dry.fields } } : {}) },
        },
      });
    }
    const job = startJob(projectId, sql, dataset, loc, jobId);
    send(res, 200, jobResource(job));
  }

  async function getQueryResults(jobId: string, qs: URLSearchParams, res: http.ServerResponse): Promise<void> {
    const job = jobs.get(jobId);
    if (!job) return sendError(res, 404, 'notFound', `Not found: Job ${opts.projectId}:${qs.get('location') ?? location}.${jobId}`);
    const finished = await settles(job, numberOr(qs.get('timeoutMs'), DEFAULT_WAIT_MS));
    if (finished && job.error) return sendError(res, job.error.status, job.error.reason, job.error.message);
    const token = qs.get('pageToken');
    const offset = token ? Number(Buffer.from(token, 'base64url').toString('utf8').split(':')[1]) : numberOr(qs.get('startIndex'), 0);
    const maxResults = numberOr(qs.get('maxResults'), Number.MAX_SAFE_INTEGER);
    send(res, 200, { kind: 'bigquery#getQueryResultsResponse', ...resultsBody(job, finished, offset, maxResults, qs.get('formatOptions.useInt64Timestamp') === 'true') });
  }

  function jobsGet(jobId: string, res: http.ServerResponse): void {
    const job = jobs.get(jobId);
    if (!job) return sendError(res, 404, 'notFound', `Not found: Job ${opts.projectId}:${location}.${jobId}`);
    send(res, 200, jobResource(job));
  }

  async function jobsCancel(jobId: string, res: http.ServerResponse): Promise<void> {
    const job = jobs.get(jobId);
    if (!job) return sendError(res, 404, 'notFound', `Not found: Job ${opts.projectId}:${location}.${jobId}`);
    if (job.state !== 'DONE') {
      job.cancelled = true;
      if (job.pid !== undefined) await admin.query('SELECT pg_cancel_backend($1)', [job.pid]);
    }
    send(res, 200, { kind: 'bigquery#jobCancelResponse', job: jobResource(job) });
  }

  function jobResource(job: Job): Record<string, unknown> {
    return {
      kind: 'bigquery#job',
      id: `${job.projectId}:${job.location}.${job.id}`,
      jobReference: { projectId: job.projectId, jobId: job.id, location: job.location },
      configuration: { jobType: 'QUERY', query: { query: job.sql, useLegacySql: false } },
      status: { state: job.state, ...(job.error ? { errorResult: { reason: job.error.reason, message: job.error.message }, errors: [{ reason: job.error.reason, message: job.error.message }] } : {}) },
      statistics: {
        creationTime: String(job.created),
        startTime: String(job.started),
        ...(job.ended ? { endTime: String(job.ended) } : {}),
        totalBytesProcessed: String(job.bytes),
        query: { statementType: job.statementType, totalBytesProcessed: String(job.bytes), totalBytesBilled: String(job.bytes) },
      },
    };
  }

  function resultsBody(job: Job, finished: boolean, offset: number, maxResults: number, int64Timestamps: boolean): Record<string, unknown> {
    const ref = { projectId: job.projectId, jobId: job.id, location: job.location };
    if (!finished) return { jobReference: ref, jobComplete: false };
    const rows = job.rows ?? [];
    const page = rows.slice(offset, offset + Math.max(0, maxResults));
    const next = offset + page.length;
    return {
      jobReference: ref,
      jobComplete: true,
      schema: { fields: job.fields ?? [] },
      totalRows: String(rows.length),
      rows: page.map((r) => ({ f: r.map((v) => cell(v, int64Timestamps)) })),
      ...(next < rows.length ? { pageToken: Buffer.from(`${job.id}:${next}`).toString('base64url') } : {}),
      totalBytesProcessed: String(job.bytes),
      cacheHit: false,
    };
  }

  function startJob(projectId: string, sql: string, dataset: string | undefined, loc: string, id = `job_${++jobCounter}_${randomBytes(4).toString('hex')}`): Job {
    const now = Date.now();
    const job: Job = { id, projectId, location: loc, sql, statementType: statementType(sql), state: 'RUNNING', cancelled: false, bytes: bytesFor(sql), created: now, started: now, done: Promise.resolve() };
    jobs.set(id, job);
    job.done = runJob(job, dataset);
    return job;
  }

  async function runJob(job: Job, dataset: string | undefined): Promise<void> {
    const client = new pg.Client({ connectionString: opts.databaseUrl, application_name: 'fake-bigquery', options: '-c TimeZone=UTC' });
    try {
      await client.connect();
      job.pid = (client as unknown as { processID: number }).processID;
      if (dataset) await client.query(`SET search_path TO ${quoteIdent(dataset)}`);
      if (slowMs > 0) await client.query(`SELECT pg_sleep(${slowMs / 1000})`);
      const result = (await client.query({ text: toPostgres(job.sql, job.projectId, opsView), rowMode: 'array', types: RAW_TEXT })) as unknown;
      const last = (Array.isArray(result) ? result.at(-1) : result) as pg.QueryArrayResult;
      job.fields = (last.fields ?? []).map((f) => fieldOf(f.name, f.dataTypeID));
      job.rows = (last.rows ?? []).map((r) => r.map((v, i) => valueOf(v as string | null, last.fields[i]!.dataTypeID)));
    } catch (err) {
      const e = err as { message?: string; code?: string };
      job.error = job.cancelled || e.code === '57014'
        ? { status: 400, reason: 'stopped', message: 'Job execution was cancelled: User requested cancellation' }
        : { status: 400, reason: 'invalidQuery', message: e.message ?? String(err) };
    } finally {
      job.state = 'DONE';
      job.ended = Date.now();
      await client.end().catch(() => undefined);
    }
  }

  // ---- the operations console's reads ----------------------------------------------------------

  function datasetsOf(projectId: string): OpsDatasetSeed[] {
    return opsProjects.get(projectId)?.datasets ?? [];
  }

  function datasetResource(projectId: string, d: OpsDatasetSeed, full: boolean): Record<string, unknown> {
    return {
      kind: 'bigquery#dataset',
      id: `${projectId}:${d.dataset_id}`,
      datasetReference: { datasetId: d.dataset_id, projectId },
      location: d.location ?? opsProjects.get(projectId)?.region ?? location,
      ...(full ? { etag: `"${d.dataset_id}"`, creationTime: '1700000000000', lastModifiedTime: '1700000000000', access: d.access, selfLink: `${url}/bigquery/v2/projects/${projectId}/datasets/${d.dataset_id}` } : {}),
    };
  }

  function datasetsList(projectId: string, qs: URLSearchParams, res: http.ServerResponse): void {
    const all = datasetsOf(projectId);
    const offset = numberOr(qs.get('pageToken'), 0);
    const max = numberOr(qs.get('maxResults'), 50);
    const page = all.slice(offset, offset + max);
    const next = offset + page.length;
    send(res, 200, {
      kind: 'bigquery#datasetList',
      etag: `"${projectId}-${all.length}"`,
      ...(page.length ? { datasets: page.map((d) => datasetResource(projectId, d, false)) } : {}),
      ...(next < all.length ? { nextPageToken: String(next) } : {}),
    });
  }

  function datasetsGet(projectId: string, datasetId: string, res: http.ServerResponse): void {
    const d = datasetsOf(projectId).find((x) => x.dataset_id === datasetId);
    if (!d) return sendError(res, 404, 'notFound', `Not found: Dataset ${projectId}:${datasetId}`);
    send(res, 200, datasetResource(projectId, d, true));
  }

  /** A seeded administrative view as a PostgreSQL subquery; undefined when the view is not one of them. */
  function opsView(project: string, scope: string | undefined, view: string): string | undefined {
    const region = opsProjects.get(project)?.regions.get((scope ?? '').toLowerCase()) ?? { jobs: [], timeline: [], reservations: [] };
    const lit = (rows: unknown[]): string => `'${JSON.stringify(rows).replace(/'/g, "''")}'::jsonb`;
    const p = `'${project.replace(/'/g, "''")}'::text AS project_id`;
    switch (view) {
      case 'JOBS':
      case 'JOBS_BY_PROJECT': {
        const rows = region.jobs.map((j) => ({
          job_type: 'QUERY', statement_type: 'SELECT', state: 'DONE', end_time: j.creation_time, cache_hit: false,
          total_bytes_processed: j.total_bytes_billed, ...j,
        }));
        return `(SELECT ${p}, t.* FROM jsonb_to_recordset(${lit(rows)}) AS t(job_id text, user_email text, creation_time timestamptz, start_time timestamptz,
          end_time timestamptz, job_type text, statement_type text, state text, total_bytes_billed bigint, total_bytes_processed bigint, total_slot_ms bigint,
          query text, cache_hit boolean, reservation_id text))`;
      }
      case 'JOBS_TIMELINE':
      case 'JOBS_TIMELINE_BY_PROJECT': {
        const rows = region.timeline.map((r) => ({ job_type: 'QUERY', statement_type: 'SELECT', job_id: 'job', ...r }));
        return `(SELECT ${p}, t.* FROM jsonb_to_recordset(${lit(rows)}) AS t(period_start timestamptz, period_slot_ms bigint, job_id text,
          job_type text, statement_type text, reservation_id text))`;
      }
      case 'RESERVATIONS':
      case 'RESERVATIONS_BY_PROJECT': {
        const rows = region.reservations.map((r) => ({ edition: 'ENTERPRISE', ...r }));
        return `(SELECT ${p}, t.* FROM jsonb_to_recordset(${lit(rows)}) AS t(reservation_name text, slot_capacity bigint, edition text))`;
      }
      default:
        return undefined;
    }
  }

  async function dryRun(sql: string, dataset: string | undefined, projectId: string): Promise<{ statementType: string; bytes: number; fields?: Field[] } | { error: InjectedError }> {
    const type = statementType(sql);
    if (type !== 'SELECT') return { statementType: type, bytes: 0 };
    const client = await admin.connect();
    try {
      await client.query('BEGIN READ ONLY');
      if (dataset) await client.query(`SET LOCAL search_path TO ${quoteIdent(dataset)}`);
      await client.query(`EXPLAIN ${toPostgres(sql, projectId, opsView)}`);
      return { statementType: type, bytes: bytesFor(sql) };
    } catch (err) {
      return { error: { status: 400, reason: 'invalidQuery', message: (err as Error).message } };
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
    }
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    projectId: opts.projectId,
    calls,
    requests,
    serviceAccount: () => ({
      type: 'service_account',
      project_id: opts.projectId,
      private_key_id: keyId,
      private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      client_email: clientEmail,
      client_id: '100000000000000000001',
      auth_uri: `${url}/auth`,
      token_uri: `${url}/token`,
    }),
    tokensIssued: () => tokens.size,
    jobs: () => [...jobs.values()].map((j) => ({ id: j.id, sql: j.sql, state: j.state, cancelled: j.cancelled })),
    slow: (ms) => {
      slowMs = ms;
    },
    delayAnswers: (ms) => {
      answerDelayMs = ms;
    },
    failNext: (...errors) => {
      injected.push(...errors);
    },
    bytesFor,
    ops: {
      seed(seed) {
        const region = seed.region ?? 'US';
        const p = opsProjects.get(seed.project) ?? { regions: new Map<string, OpsRegion>(), datasets: [], region };
        p.region = region;
        const scope = regionScope(region);
        const r = p.regions.get(scope) ?? { jobs: [], timeline: [], reservations: [] };
        if (seed.jobs) r.jobs = [...seed.jobs];
        if (seed.timeline) r.timeline = [...seed.timeline];
        if (seed.reservations) r.reservations = [...seed.reservations];
        p.regions.set(scope, r);
        if (seed.datasets) p.datasets = seed.datasets.map((d) => ({ ...d, location: d.location ?? region }));
        if (seed.denied === null) delete p.denied;
        else if (seed.denied !== undefined) p.denied = seed.denied;
        opsProjects.set(seed.project, p);
      },
      reset() {
        opsProjects.clear();
      },
    },
    async close() {
      for (const res of open) res.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.allSettled([...jobs.values()].map(async (j) => {
        if (j.state !== 'DONE' && j.pid !== undefined) await admin.query('SELECT pg_cancel_backend($1)', [j.pid]);
        await j.done;
      }));
      await admin.end();
    },
  };
}

// ---- helpers --------------------------------------------------------------------------------

function send(res: http.ServerResponse, status: number, body: unknown): void {
  if (res.writableEnded || res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
  res.end(JSON.stringify(body));
}

function sendError(res: http.ServerResponse, status: number, reason: string, message: string): void {
  send(res, status, { error: { code: status, message, errors: [{ message, domain: 'global', reason }], status: STATUS_NAMES[status] ?? 'UNKNOWN' } });
}

function verifies(key: KeyObject, signed: string, signature: string): boolean {
  const v = createVerify('RSA-SHA256');
  v.update(signed);
  return v.verify(key, Buffer.from(signature, 'base64url'));
}

function numberOr(v: unknown, fallback: number): number {
  const n = typeof v === 'string' && v !== '' ? Number(v) : typeof v === 'number' ? v : NaN;
  return Number.isFinite(n) ? n : fallback;
}

/** Wait until the job ends or `ms` pass; true when it ended. */
async function settles(job: Job, ms: number): Promise<boolean> {
  if (job.state === 'DONE') return true;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const ended = await Promise.race([job.done.then(() => true as const), late]);
  clearTimeout(timer);
  return ended;
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

// ---- SQL ------------------------------------------------------------------------------------

/** The text without strings and comments, for keyword checks. */
function code(sql: string): string {
  return sql
    .replace(/'''[\s\S]*?'''|"""[\s\S]*?"""|'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"|`(?:\\.|[^`\\])*`/g, ' x ')
    .replace(/(#|--)[^\n]*|\/\*[\s\S]*?\*\//g, ' ');
}

/** BigQuery's statementType, told from the first keywords (SCRIPT for several statements). */
export function statementType(sql: string): string {
  const text = code(sql);
  const statements = text.split(';').filter((s) => s.trim() !== '');
  if (statements.length > 1) return 'SCRIPT';
  const words = (statements[0] ?? '').replace(/\(/g, ' ').trim().toUpperCase().split(/\s+/);
  const first = words[0] ?? '';
  if (first === 'SELECT' || first === 'WITH') return 'SELECT';
  if (['DECLARE', 'SET', 'BEGIN', 'IF', 'LOOP', 'WHILE', 'CALL', 'EXECUTE'].includes(first)) return 'SCRIPT';
  const object = words.slice(1).filter((w) => !['OR', 'REPLACE', 'TEMP', 'TEMPORARY', 'IF', 'NOT', 'EXISTS'].includes(w))[0] ?? '';
  if (first === 'CREATE' && object === 'TABLE' && /\bAS\s+(SELECT|WITH)\b/i.test(text)) return 'CREATE_TABLE_AS_SELECT';
  if (['CREATE', 'DROP', 'ALTER'].includes(first)) return `${first}_${object}`;
  if (first === 'TRUNCATE') return 'TRUNCATE_TABLE';
  if (first === 'EXPORT') return 'EXPORT_DATA';
  if (first === 'LOAD') return 'LOAD_DATA';
  return first;
}

const KEYWORDS_AFTER_TABLE = new Set(['WHERE', 'JOIN', 'LEFT', 'RIGHT', 'INNER', 'FULL', 'CROSS', 'ON', 'USING', 'GROUP', 'ORDER', 'LIMIT', 'UNION', 'HAVING', 'WINDOW', 'QUALIFY', 'EXCEPT', 'INTERSECT']);

/**
 * BigQuery SQL → PostgreSQL for what tests use: paths with backticks and the project, `#`
 * comments, and INFORMATION_SCHEMA views. Strings and comments are copied as they are.
 */
export function toPostgres(sql: string, projectId: string, views?: (project: string, scope: string | undefined, view: string) => string | undefined): string {
  let out = '';
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql[i]!;
    if (c === "'") {
      const m = /^'(?:''|\\.|[^'\\])*'/.exec(sql.slice(i));
      const s = m?.[0] ?? sql.slice(i);
      out += s;
      i += s.length;
      continue;
    }
    if (c === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      const stop = end < 0 ? n : end;
      out += sql.slice(i, stop);
      i = stop;
      continue;
    }
    if (c === '#') {
      const end = sql.indexOf('\n', i);
      const stop = end < 0 ? n : end;
      out += `--${sql.slice(i + 1, stop)}`;
      i = stop;
      continue;
    }
    const fn = /^(UNIX_SECONDS|TIMESTAMP_SECONDS)\s*\(/i.exec(sql.slice(i));
    if (fn && !/[A-Za-z0-9_]/.test(sql[i - 1] ?? '')) {
      // BigQuery functions with a one-argument PostgreSQL twin: the closing parenthesis stays
      out += fn[1]!.toUpperCase() === 'UNIX_SECONDS' ? 'EXTRACT(EPOCH FROM ' : 'TO_TIMESTAMP(';
      i += fn[0].length;
      continue;
    }
    if (c === '`' || /[A-Za-z_]/.test(c)) {
      // a path: parts (words or `quoted`) joined by dots
      const parts: Array<{ text: string; quoted: boolean }> = [];
      let j = i;
      for (;;) {
        const m = sql[j] === '`' ? /^`((?:\\.|[^`\\])*)`/.exec(sql.slice(j)) : /^[A-Za-z_][A-Za-z0-9_]*/.exec(sql.slice(j));
        if (!m) break;
        if (sql[j] === '`') for (const p of m[1]!.split('.')) parts.push({ text: p, quoted: true });
        else parts.push({ text: m[0], quoted: false });
        j += m[0].length;
        if (sql[j] === '.' && (sql[j + 1] === '`' || /[A-Za-z_]/.test(sql[j + 1] ?? ''))) {
          j++;
          continue;
        }
        break;
      }
      if (parts.length === 0) {
        out += c;
        i++;
        continue;
      }
      const quoted = parts.some((p) => p.quoted);
      let project = projectId;
      if (parts.length > 1 && parts[0]!.text === projectId) parts.shift();
      else if (parts.length === 4 && parts[2]!.text.toUpperCase() === 'INFORMATION_SCHEMA') project = parts.shift()!.text;
      const upper = parts.map((p) => p.text.toUpperCase());
      const at = upper.indexOf('INFORMATION_SCHEMA');
      if (at >= 0 && at === parts.length - 2) {
        const scope = at === 1 ? parts[0]!.text : undefined;
        const view = views?.(project, scope, upper[at + 1]!) ?? informationSchema(upper[at + 1]!, scope, project);
        const alias = /^\s*(?:AS\b|([A-Za-z_][A-Za-z0-9_]*))/i.exec(sql.slice(j));
        const hasAlias = alias !== null && (alias[1] === undefined || !KEYWORDS_AFTER_TABLE.has(alias[1].toUpperCase()));
        out += hasAlias ? view : `${view} AS ${upper[at + 1]!.toLowerCase()}`;
      } else if (quoted) {
        out += parts.map((p) => quoteIdent(p.text)).join('.');
      } else {
        out += sql.slice(i, j);
      }
      i = j;
      continue;
    }
    out += c;
    i++;
  }
  return out;
}

/** PostgreSQL's catalog as BigQuery's INFORMATION_SCHEMA view for a dataset, or (`region-xx`) all of them. */
function informationSchema(view: string, scope: string | undefined, projectId: string): string {
  const project = `'${projectId.replace(/'/g, "''")}'`;
  const where = scope && !/^region-/i.test(scope)
    ? `table_schema = '${scope.replace(/'/g, "''")}'`
    : `table_schema NOT IN ('pg_catalog', 'information_schema') AND table_schema NOT LIKE 'pg\\_%'`;
  const rel = `(quote_ident(table_schema) || '.' || quote_ident(table_name))::regclass`;
  switch (view) {
    case 'TABLES':
      return `(SELECT ${project}::text AS table_catalog, table_schema::text, table_name::text, CASE table_type WHEN 'VIEW' THEN 'VIEW' ELSE 'BASE TABLE' END AS table_type
        FROM information_schema.tables WHERE ${where})`;
    case 'COLUMNS':
      return `(SELECT ${project}::text AS table_catalog, table_schema::text, table_name::text, column_name::text, ordinal_position::bigint AS ordinal_position,
          is_nullable::text, ${BQ_TYPE} AS data_type
        FROM information_schema.columns WHERE ${where})`;
    case 'COLUMN_FIELD_PATHS':
      return `(SELECT ${project}::text AS table_catalog, table_schema::text, table_name::text, column_name::text, column_name::text AS field_path,
          ${BQ_TYPE} AS data_type, col_description(${rel}, ordinal_position::int) AS description
        FROM information_schema.columns WHERE ${where})`;
    case 'TABLE_OPTIONS':
      return `(SELECT ${project}::text AS table_catalog, table_schema::text, table_name::text, 'description'::text AS option_name, 'STRING'::text AS option_type,
          '"' || replace(replace(obj_description(${rel}, 'pg_class'), '\\', '\\\\'), '"', '\\"') || '"' AS option_value
        FROM information_schema.tables WHERE ${where} AND obj_description(${rel}, 'pg_class') IS NOT NULL)`;
    default:
      throw new Error(`the fake has no INFORMATION_SCHEMA.${view}`);
  }
}

const ELEMENT_TYPE = `CASE udt_name WHEN '_int2' THEN 'INT64' WHEN '_int4' THEN 'INT64' WHEN '_int8' THEN 'INT64' WHEN '_float8' THEN 'FLOAT64'
  WHEN '_numeric' THEN 'NUMERIC' WHEN '_bool' THEN 'BOOL' WHEN '_date' THEN 'DATE' ELSE 'STRING' END`;

const BQ_TYPE = `CASE
  WHEN data_type IN ('smallint', 'integer', 'bigint') THEN 'INT64'
  WHEN data_type IN ('real', 'double precision') THEN 'FLOAT64'
  WHEN data_type = 'numeric' AND numeric_precision IS NOT NULL THEN 'NUMERIC(' || numeric_precision || ', ' || numeric_scale || ')'
  WHEN data_type = 'numeric' THEN 'NUMERIC'
  WHEN data_type = 'boolean' THEN 'BOOL'
  WHEN data_type IN ('text', 'character varying', 'character') THEN 'STRING'
  WHEN data_type = 'date' THEN 'DATE'
  WHEN data_type = 'timestamp with time zone' THEN 'TIMESTAMP'
  WHEN data_type = 'timestamp without time zone' THEN 'DATETIME'
  WHEN data_type LIKE 'time%' THEN 'TIME'
  WHEN data_type = 'bytea' THEN 'BYTES'
  WHEN data_type IN ('json', 'jsonb') THEN 'JSON'
  WHEN data_type = 'ARRAY' THEN 'ARRAY<' || ${ELEMENT_TYPE} || '>'
  ELSE upper(data_type) END`;

// ---- values ---------------------------------------------------------------------------------

const RAW_TEXT = { getTypeParser: () => (v: string) => v } as unknown as pg.CustomTypesConfig;

/** PostgreSQL type oid → BigQuery's (legacy, as the REST API names them) type; arrays → element type. */
const TYPES: Record<number, { type: string; array?: true }> = {
  16: { type: 'BOOLEAN' }, 20: { type: 'INTEGER' }, 21: { type: 'INTEGER' }, 23: { type: 'INTEGER' }, 26: { type: 'INTEGER' },
  700: { type: 'FLOAT' }, 701: { type: 'FLOAT' }, 1700: { type: 'NUMERIC' },
  25: { type: 'STRING' }, 1043: { type: 'STRING' }, 1042: { type: 'STRING' }, 19: { type: 'STRING' },
  1082: { type: 'DATE' }, 1114: { type: 'DATETIME' }, 1184: { type: 'TIMESTAMP' }, 1083: { type: 'TIME' },
  17: { type: 'BYTES' }, 114: { type: 'JSON' }, 3802: { type: 'JSON' },
  1000: { type: 'BOOLEAN', array: true }, 1005: { type: 'INTEGER', array: true }, 1007: { type: 'INTEGER', array: true },
  1016: { type: 'INTEGER', array: true }, 1022: { type: 'FLOAT', array: true }, 1231: { type: 'NUMERIC', array: true },
  1009: { type: 'STRING', array: true }, 1015: { type: 'STRING', array: true }, 1182: { type: 'DATE', array: true },
};

function fieldOf(name: string, oid: number): Field {
  const t = TYPES[oid] ?? { type: 'STRING' };
  return { name, type: t.type, mode: t.array ? 'REPEATED' : 'NULLABLE' };
}

function valueOf(text: string | null, oid: number): Value {
  if (text === null) return null;
  const t = TYPES[oid] ?? { type: 'STRING' };
  if (t.array) return parseArray(text).map((e) => (e === null ? null : scalar(e, t.type)));
  return scalar(text, t.type);
}

function scalar(text: string, type: string): Value {
  switch (type) {
    case 'BOOLEAN':
      return text === 't' || text === 'true' ? 'true' : 'false';
    case 'TIMESTAMP':
      return { ts: epochMicros(text) };
    case 'DATETIME':
      return text.replace(' ', 'T');
    case 'BYTES':
      return Buffer.from(text.replace(/^\\x/, ''), 'hex').toString('base64');
    default:
      return text;
  }
}

/** `2024-01-05 08:00:00.123456+00` (TimeZone UTC) → epoch microseconds. */
function epochMicros(text: string): bigint {
  const m = /^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?([+-]\d\d)(?::?(\d\d))?$/.exec(text);
  if (!m) throw new Error(`the fake cannot read the timestamp ${text}`);
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
  const sign = m[8]!.startsWith('-') ? -1 : 1;
  const offsetMin = sign * (Math.abs(Number(m[8])) * 60 + Number(m[9] ?? 0));
  return BigInt(ms) * 1000n + BigInt((m[7] ?? '').padEnd(6, '0') || '0') - BigInt(offsetMin) * 60_000_000n;
}

/** A one-dimensional PostgreSQL array literal → its elements as text (NULL → null). */
function parseArray(text: string): Array<string | null> {
  const body = text.slice(1, -1);
  const out: Array<string | null> = [];
  let i = 0;
  while (i < body.length) {
    if (body[i] === '"') {
      let j = i + 1;
      let s = '';
      while (j < body.length && body[j] !== '"') {
        if (body[j] === '\\') j++;
        s += body[j];
        j++;
      }
      out.push(s);
      i = j + 2; // closing quote and comma
    } else {
      const end = body.indexOf(',', i);
      const s = body.slice(i, end < 0 ? body.length : end);
      out.push(s === 'NULL' ? null : s);
      i = end < 0 ? body.length : end + 1;
    }
  }
  return out;
}

/** A value in BigQuery's wire shape: `{v: string | null}`, arrays `{v: [{v}]}`. */
function cell(v: Value, int64Timestamps: boolean): { v: unknown } {
  if (v === null || typeof v === 'string') return { v };
  if (Array.isArray(v)) return { v: v.map((e) => cell(e, int64Timestamps)) };
  if (int64Timestamps) return { v: v.ts.toString() };
  // seconds since the epoch, as BigQuery's float format: 1.7044416E9
  const seconds = Number(v.ts) / 1e6;
  return { v: seconds.toExponential().replace('e+', 'E').replace(/\.?0*E/, 'E') };
}

/**
 * A BigQuery project in a region (ops_agent.config.projects): the four operations through the
 * real client, read-only, each a query on the region's INFORMATION_SCHEMA views or the dataset
 * API. One client per project entry, with its own credentials_path (a service account key:
 * its token request goes to the key's token_uri, signed in by actors/lib/warehouse/bigquery-auth.ts as the
 * executor's engine is; an empty path: * Application Default Credentials) and the API endpoint of database.bigquery.base_url when set.
 *
 * - expensive queries: JOBS (= JOBS_BY_PROJECT), query jobs created in the window, scripts'
 *   parent jobs left out (their children are counted), top N by total_bytes_billed and by
 *   total_slot_ms;
 * - forecast: JOBS, billed bytes per UTC day since SPREAD_DAYS days before today (or the 1st);
 * - public datasets: datasets.list then datasets.get of each, the access entries whose
 *   specialGroup or iamMember is allUsers / allAuthenticatedUsers;
 * - saturation: JOBS_TIMELINE period_slot_ms summed per bucket ÷ the bucket's milliseconds =
 *   average slots; capacity = the region's RESERVATIONS slot_capacity summed (baseline slots;
 *   autoscaling is not counted).
 */
import { BigQuery } from '@google-cloud/bigquery';
import { gaxios, type AnyAuthClient } from 'google-auth-library';
import { CortadoError } from '../../protocol/errors.js';
import { clientAuth, loadKey } from '../lib/warehouse/bigquery-auth.js';
import type { OpsOperation, OpsResult, OpsTarget, PublicDataset } from '../../protocol/schemas/ops.js';
import { costUsd, cutQuery, forecast, forecastSince, QUERY_TEXT_CHARS, saturation, saturationWindow, timestampLiteral } from './compute.js';
import { isoTime, normalRegion, num, text, type OpsParams, type OpsTargetRunner } from './target.js';

const PUBLIC_MEMBERS = new Set(['allUsers', 'allAuthenticatedUsers']);
/** datasets.get calls in flight per project, at most */
const DATASET_CONCURRENCY = 8;

export interface BigQueryTargetOptions {
  projectId: string;
  region: string;
  credentialsPath: string;
  apiEndpoint?: string;
  /**
   * public datasets: this entry also reports datasets outside every region configured for its
   * project (the project's first entry), so each public dataset is reported exactly once
   */
  coversOtherRegions: boolean;
  /** the regions configured for this project, lower case */
  projectRegions: readonly string[];
}

function authFor(path: string, projectId: string): { authClient?: AnyAuthClient; keyFilename?: string } {
  return clientAuth(loadKey({ path, where: `ops_agent.config.projects[${projectId}]` }), projectId);
}

/** The client's and the API's errors as a per-project error (the message is BigQuery's, never a key). */
export function bigQueryError(err: unknown, projectId: string): CortadoError {
  if (err instanceof CortadoError) return err;
  const e = (err ?? {}) as { code?: unknown; errors?: Array<{ reason?: string; message?: string }>; message?: unknown; response?: { data?: { error?: unknown } } };
  const said = String(e.errors?.[0]?.message ?? e.message ?? err).slice(0, 300);
  if (err instanceof gaxios.GaxiosError) {
    const grant = typeof e.response?.data?.error === 'string' ? ` (${e.response.data.error})` : '';
    return new CortadoError('DB_UNAVAILABLE', `the login for ${projectId} was refused or its token endpoint cannot be reached${grant}`);
  }
  if (/could not load the default credentials/i.test(said)) {
    return new CortadoError('DB_UNAVAILABLE', `no credentials for ${projectId}: set its credentials_path, or provide Application Default Credentials`);
  }
  const status = typeof e.code === 'number' ? e.code : undefined;
  if (status === 401) return new CortadoError('UNAUTHORIZED', `BigQuery refused the credentials for ${projectId}: ${said}`);
  if (status === 403) return new CortadoError('FORBIDDEN', `permission denied on ${projectId}: ${said}`);
  if (status === 404) return new CortadoError('NOT_FOUND', `not found in ${projectId}: ${said}`);
  if (status === 400) return new CortadoError('DB_QUERY_FAILED', `BigQuery refused the query on ${projectId}: ${said}`);
  if (status !== undefined) return new CortadoError('DB_UNAVAILABLE', `BigQuery failed for ${projectId} (HTTP ${status}): ${said}`);
  return new CortadoError('DB_UNAVAILABLE', `BigQuery cannot be reached for ${projectId}: ${said}`);
}

export class BigQueryTarget implements OpsTargetRunner {
  readonly target: OpsTarget;
  private readonly client: BigQuery;
  private readonly opts: BigQueryTargetOptions;
  private readonly region: string;

  constructor(opts: BigQueryTargetOptions) {
    this.opts = opts;
    this.region = normalRegion(opts.region);
    this.target = { engine: 'bigquery', project_id: opts.projectId, region: opts.region, label: `${opts.projectId}/${opts.region}` };
    const auth = authFor(opts.credentialsPath, opts.projectId);
    this.client = new BigQuery({
      projectId: opts.projectId,
      location: opts.region,
      ...(opts.apiEndpoint ? { apiEndpoint: opts.apiEndpoint } : {}),
      ...auth,
      // the console's caller decides on another try; the per-project timeout bounds each call
      retryOptions: { autoRetry: false },
    });
  }

  /** `project`.`region-xx`.INFORMATION_SCHEMA.<view> */
  private view(name: string): string {
    return `\`${this.opts.projectId}\`.\`region-${this.region}\`.INFORMATION_SCHEMA.${name}`;
  }

  private async rows(sql: string, p: OpsParams): Promise<Array<Record<string, unknown>>> {
    const left = Math.max(1_000, p.deadline - Date.now());
    try {
      const [rows] = await this.client.query({
        query: sql,
        location: this.opts.region,
        useLegacySql: false,
        wrapIntegers: true,
        jobTimeoutMs: left,
        labels: { cortado: 'ops' },
      }, { timeoutMs: left });
      return rows as Array<Record<string, unknown>>;
    } catch (err) {
      throw bigQueryError(err, this.opts.projectId);
    }
  }

  async run(op: OpsOperation, p: OpsParams): Promise<OpsResult> {
    switch (op) {
      case 'get_expensive_queries':
        return this.expensive(p);
      case 'forecast_monthly_costs':
        return this.forecast(p);
      case 'find_public_datasets':
        return this.publicDatasets(p);
      case 'check_slot_saturation':
        return this.saturation(p);
    }
  }

  private async expensive(p: OpsParams): Promise<OpsResult> {
    const since = timestampLiteral(p.now - p.windowDays * 86_400_000);
    const list = (order: string): string => `SELECT job_id, user_email, creation_time, total_bytes_billed, total_slot_ms, SUBSTR(query, 1, ${QUERY_TEXT_CHARS + 1}) AS query, statement_type
FROM ${this.view('JOBS')}
WHERE creation_time >= ${since} AND job_type = 'QUERY' AND (statement_type IS NULL OR statement_type != 'SCRIPT')
ORDER BY COALESCE(${order}, 0) DESC, job_id
LIMIT ${p.limit}`;
    const [byBytes, bySlot] = await Promise.all([this.rows(list('total_bytes_billed'), p), this.rows(list('total_slot_ms'), p)]);
    const shape = (r: Record<string, unknown>) => {
      const bytes = num(r.total_bytes_billed ?? 0);
      const started = isoTime(r.creation_time);
      return {
        job_id: text(r.job_id),
        user: text(r.user_email),
        ...(started ? { started_at: started } : {}),
        bytes_billed: bytes,
        slot_ms: num(r.total_slot_ms ?? 0),
        cost_usd: costUsd(bytes, p.pricePerTib),
        query: cutQuery(text(r.query)),
        calls: 1,
        ...(r.statement_type ? { statement_type: text(r.statement_type) } : {}),
      };
    };
    return { kind: 'get_expensive_queries', window_days: p.windowDays, by_bytes: byBytes.map(shape), by_slot: bySlot.map(shape) };
  }

  private async forecast(p: OpsParams): Promise<OpsResult> {
    const sql = `SELECT DATE(creation_time) AS day, SUM(total_bytes_billed) AS bytes_billed
FROM ${this.view('JOBS')}
WHERE creation_time >= ${timestampLiteral(forecastSince(p.now))} AND job_type = 'QUERY' AND (statement_type IS NULL OR statement_type != 'SCRIPT')
GROUP BY day
ORDER BY day`;
    const rows = await this.rows(sql, p);
    return forecast(rows.map((r) => ({ date: text(r.day).slice(0, 10), bytes_billed: num(r.bytes_billed ?? 0) })), p.pricePerTib, p.now);
  }

  private async publicDatasets(p: OpsParams): Promise<OpsResult> {
    let datasets: Array<{ id?: string; location?: string; getMetadata(): Promise<unknown[]> }>;
    try {
      [datasets] = (await this.client.getDatasets({ all: true })) as unknown as [typeof datasets];
    } catch (err) {
      throw bigQueryError(err, this.opts.projectId);
    }
    const mine = datasets.filter((d) => {
      const loc = normalRegion(String((d as { location?: string }).location ?? (d as { metadata?: { location?: string } }).metadata?.location ?? ''));
      return loc === this.region || (this.opts.coversOtherRegions && !this.opts.projectRegions.includes(loc));
    });
    const found: PublicDataset[] = [];
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < mine.length) {
        if (Date.now() > p.deadline) throw new CortadoError('TIMEOUT', `the dataset checks of ${this.opts.projectId} did not finish in time`);
        const d = mine[next++]!;
        let meta: { location?: string; access?: Array<Record<string, unknown>>; datasetReference?: { datasetId?: string } };
        try {
          [meta] = (await d.getMetadata()) as [typeof meta];
        } catch (err) {
          throw bigQueryError(err, this.opts.projectId);
        }
        const entries = (meta.access ?? [])
          .map((a) => ({ role: text(a.role), member: text(a.specialGroup ?? a.iamMember ?? '') }))
          .filter((a) => PUBLIC_MEMBERS.has(a.member));
        if (entries.length) {
          found.push({ dataset_id: meta.datasetReference?.datasetId ?? text(d.id), ...(meta.location ? { location: meta.location } : {}), entries });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(DATASET_CONCURRENCY, mine.length) }, worker));
    found.sort((a, b) => a.dataset_id.localeCompare(b.dataset_id));
    return { kind: 'find_public_datasets', checked: mine.length, datasets: found };
  }

  private async saturation(p: OpsParams): Promise<OpsResult> {
    // whole buckets only, ending at the last one the view has all of (compute.ts saturationWindow)
    const { since, until, bucketSeconds: step } = saturationWindow(p.now, p.windowHours);
    const timeline = `SELECT TIMESTAMP_SECONDS(DIV(UNIX_SECONDS(period_start), ${step}) * ${step}) AS bucket, SUM(period_slot_ms) AS slot_ms
FROM ${this.view('JOBS_TIMELINE')}
WHERE period_start >= ${timestampLiteral(since)} AND period_start < ${timestampLiteral(until)} AND (statement_type IS NULL OR statement_type != 'SCRIPT')
GROUP BY bucket
ORDER BY bucket`;
    const reservations = `SELECT COUNT(*) AS reservations, SUM(slot_capacity) AS slots FROM ${this.view('RESERVATIONS')}`;
    const [rows, capacityRead] = await Promise.all([
      this.rows(timeline, p),
      this.rows(reservations, p).then((r) => ({ ok: true as const, r }), (err: unknown) => ({ ok: false as const, err: err as CortadoError })),
    ]);
    let capacity: number | null = null;
    let note: string | undefined;
    if (!capacityRead.ok) {
      note = `the reservations of region ${this.opts.region} cannot be read (${capacityRead.err.message}): no share computed`;
    } else {
      const first = capacityRead.r[0] ?? {};
      const slots = num(first.slots ?? 0);
      if (num(first.reservations ?? 0) === 0 || slots <= 0) {
        note = `no reservation in region ${this.opts.region} (on-demand: the slot pool has no fixed capacity): no share computed`;
      } else {
        capacity = slots;
      }
    }
    return saturation(
      rows.map((r) => ({ bucket_ms: Date.parse(isoTime(r.bucket) ?? ''), slot_ms: num(r.slot_ms ?? 0) })),
      { since, until, bucketSeconds: step, capacity, threshold: p.threshold, windowHours: p.windowHours, ...(note ? { note } : {}) },
    );
  }

  async close(): Promise<void> {
    // the client holds no sockets of its own beyond the shared agent
  }
}

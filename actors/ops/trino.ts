/**
 * The configured Trino cluster as an ops target (beyond the spec): expensive queries from
 * `system.runtime.queries`, the queries the coordinator still remembers (a bounded history:
 * query.max-history, 100 by default), created in the window, by elapsed time (end or now minus
 * started). That table keeps no bytes read, so `by_bytes` is empty and the note says so. The
 * console's own queries (source cortado-ops) are left out; queries sent without a source are
 * kept. The query carries the target's deadline as query_max_execution_time, so the
 * coordinator stops it when the console stops waiting.
 * Forecast, public datasets and saturation: not available (each a per-target NOT_FOUND).
 */
import { Trino } from 'trino-client';
import { CortadoError } from '../../protocol/errors.js';
import type { OpsOperation, OpsResult, OpsTarget } from '../../protocol/schemas/ops.js';
import type { Config } from '../../config/schema.js';
import { cutQuery, QUERY_TEXT_CHARS } from './compute.js';
import { isoTime, notAvailable, num, text, type OpsParams, type OpsTargetRunner } from './target.js';

export class TrinoTarget implements OpsTargetRunner {
  readonly target: OpsTarget;
  private readonly client: Trino;

  constructor(c: Config['database']['trino']) {
    this.target = { engine: 'trino', label: `trino/${c.host}` };
    const headers: Record<string, string> = { 'X-Trino-User': c.user };
    if (c.password) headers.Authorization = `Basic ${Buffer.from(`${c.user}:${c.password}`, 'utf8').toString('base64')}`;
    this.client = Trino.create({ server: `${c.http_scheme}://${c.host}:${c.port}`, source: 'cortado-ops', catalog: 'system', schema: 'runtime', extraHeaders: headers });
  }

  async run(op: OpsOperation, p: OpsParams): Promise<OpsResult> {
    if (op === 'forecast_monthly_costs') throw notAvailable(op, 'trino', 'Trino bills no bytes');
    if (op === 'find_public_datasets') throw notAvailable(op, 'trino', 'Trino has no datasets with public access entries');
    if (op === 'check_slot_saturation') throw notAvailable(op, 'trino', 'system.runtime.queries keeps no slot or capacity history');
    const since = new Date(p.now - p.windowDays * 86_400_000).toISOString().slice(0, 19).replace('T', ' ');
    const sql = `SELECT query_id, "user", created, started, "end", substr(query, 1, ${QUERY_TEXT_CHARS + 1}) AS query,
  date_diff('millisecond', started, COALESCE("end", current_timestamp)) AS elapsed_ms
FROM system.runtime.queries
WHERE created >= TIMESTAMP '${since} UTC' AND started IS NOT NULL AND (source IS NULL OR source <> 'cortado-ops')
ORDER BY elapsed_ms DESC, query_id
LIMIT ${p.limit}`;
    const rows = await this.rows(sql, Math.max(1_000, p.deadline - Date.now()));
    const bySlot = rows.map((r) => {
      const started = isoTime(r.started ?? r.created);
      return {
        job_id: text(r.query_id),
        user: text(r.user),
        ...(started ? { started_at: started } : {}),
        bytes_billed: 0,
        slot_ms: num(r.elapsed_ms),
        cost_usd: null,
        query: cutQuery(text(r.query)),
        calls: 1,
      };
    });
    return {
      kind: 'get_expensive_queries',
      window_days: p.windowDays,
      by_bytes: [],
      by_slot: bySlot,
      note: 'system.runtime.queries keeps no bytes read, and only the queries the coordinator still remembers (query.max-history): the list is by elapsed time',
    };
  }

  private async rows(sql: string, limitMs: number): Promise<Array<Record<string, unknown>>> {
    const out: Array<Record<string, unknown>> = [];
    try {
      const iter = await this.client.query({ query: sql, session: { query_max_execution_time: `${limitMs}ms` } });
      let columns: string[] | undefined;
      for await (const page of iter) {
        if (page.error) throw new CortadoError('DB_QUERY_FAILED', `Trino refused the ops query: ${String(page.error.message ?? '').slice(0, 300)}`);
        columns ??= page.columns?.map((c) => c.name);
        for (const row of page.data ?? []) {
          const r: Record<string, unknown> = {};
          (columns ?? []).forEach((name, i) => (r[name] = (row as unknown[])[i]));
          out.push(r);
        }
      }
    } catch (err) {
      if (err instanceof CortadoError) throw err;
      throw new CortadoError('DB_UNAVAILABLE', `Trino cannot be reached: ${(err as Error).message}`);
    }
    return out;
  }

  async close(): Promise<void> {
    // the client keeps no connection between queries
  }
}

/**
 * The configured PostgreSQL database as an ops target (beyond the spec), on a small pool of
 * the ops actor's own (two connections, a read-only transaction per operation, a short
 * statement timeout):
 *
 * - expensive queries: `pg_stat_statements` of this database, the statements with the most
 *   blocks touched (shared_blks_hit + shared_blks_read, × block_size = bytes) and with the most
 *   total execution time. Its counters run since the last reset, not over a window: the result's
 *   note says since when. No extension: the error says how to enable it.
 * - saturation: one point sampled now, the active backends (`pg_stat_activity`, state active)
 *   against max_connections.
 * - forecast and public datasets: not available (nothing is billed; no datasets).
 */
import pg from 'pg';
import { CortadoError } from '../../protocol/errors.js';
import type { OpsOperation, OpsResult, OpsTarget } from '../../protocol/schemas/ops.js';
import type { Config } from '../../config/schema.js';
import { cutQuery, mergePeriods, QUERY_TEXT_CHARS } from './compute.js';
import { isoTime, notAvailable, num, text, type OpsParams, type OpsTargetRunner } from './target.js';

const STATEMENT_TIMEOUT_MS = 10_000;

export class PostgresTarget implements OpsTargetRunner {
  readonly target: OpsTarget;
  private readonly pool: pg.Pool;

  constructor(c: Config['database']['postgresql']) {
    this.target = { engine: 'postgresql', label: `postgresql/${c.database}` };
    this.pool = new pg.Pool({
      host: c.host,
      port: c.port,
      database: c.database,
      user: c.user,
      password: c.password,
      ...(c.ssl ? { ssl: true } : {}),
      max: 2,
      idleTimeoutMillis: 10_000,
      connectionTimeoutMillis: 5_000,
      application_name: 'cortado-ops',
    });
    this.pool.on('error', () => undefined); // an idle connection the server ended: the next operation opens another
  }

  async run(op: OpsOperation, p: OpsParams): Promise<OpsResult> {
    if (op === 'forecast_monthly_costs') throw notAvailable(op, 'postgresql', 'PostgreSQL bills no bytes');
    if (op === 'find_public_datasets') throw notAvailable(op, 'postgresql', 'PostgreSQL has no datasets with public access entries');
    return this.readOnly(async (client) => (op === 'get_expensive_queries' ? this.expensive(client, p) : this.saturation(client, p)));
  }

  private async readOnly<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw new CortadoError('DB_UNAVAILABLE', `the database cannot be reached: ${(err as Error).message}`);
    }
    try {
      await client.query(`BEGIN READ ONLY; SET LOCAL statement_timeout = ${STATEMENT_TIMEOUT_MS}`);
      return await work(client);
    } catch (err) {
      if (err instanceof CortadoError) throw err;
      const e = err as { code?: string; message?: string };
      if (e.code === '57014') throw new CortadoError('DB_TIMEOUT', `the ops query ran past ${STATEMENT_TIMEOUT_MS / 1000} s`);
      if (e.code === '42501') throw new CortadoError('FORBIDDEN', `permission denied: ${e.message ?? ''} (grant the role pg_read_all_stats)`);
      throw new CortadoError('DB_QUERY_FAILED', `the ops query failed: ${e.message ?? String(err)}`);
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
    }
  }

  private async expensive(client: pg.PoolClient, p: OpsParams): Promise<OpsResult> {
    const ext = await client.query(`SELECT extversion FROM pg_extension WHERE extname = 'pg_stat_statements'`);
    if (ext.rowCount === 0) {
      throw new CortadoError(
        'NOT_FOUND',
        'pg_stat_statements is not enabled in this database: add pg_stat_statements to shared_preload_libraries in postgresql.conf, restart PostgreSQL, then run CREATE EXTENSION pg_stat_statements',
      );
    }
    const list = (order: string) =>
      client.query(
        `SELECT s.queryid::text AS job_id, COALESCE(r.rolname, s.userid::text) AS usr, s.calls,
           (s.shared_blks_hit + s.shared_blks_read) * current_setting('block_size')::bigint AS bytes,
           s.total_exec_time AS ms, substr(s.query, 1, ${QUERY_TEXT_CHARS + 1}) AS query
         FROM pg_stat_statements s LEFT JOIN pg_roles r ON r.oid = s.userid
         WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
         ORDER BY ${order} DESC, s.queryid
         LIMIT $1`,
        [p.limit],
      );
    const byBytes = await list('(s.shared_blks_hit + s.shared_blks_read)');
    const bySlot = await list('s.total_exec_time');
    let since = '';
    try {
      const info = await client.query(`SELECT stats_reset FROM pg_stat_statements_info`);
      since = isoTime(info.rows[0]?.stats_reset) ?? '';
    } catch {
      // before PostgreSQL 14 the view does not exist: the note says less
    }
    const shape = (r: Record<string, unknown>) => ({
      job_id: text(r.job_id),
      user: text(r.usr),
      bytes_billed: num(r.bytes),
      slot_ms: Math.round(num(r.ms) * 1000) / 1000,
      cost_usd: null,
      query: cutQuery(text(r.query)),
      calls: num(r.calls),
    });
    return {
      kind: 'get_expensive_queries',
      window_days: p.windowDays,
      by_bytes: byBytes.rows.map(shape),
      by_slot: bySlot.rows.map(shape),
      note: `pg_stat_statements counts since its last reset${since ? ` (${since})` : ''}, not over a window; bytes are blocks touched × block size, time is total execution time over all calls`,
    };
  }

  private async saturation(client: pg.PoolClient, p: OpsParams): Promise<OpsResult> {
    const r = await client.query(
      `SELECT count(*) FILTER (WHERE state = 'active') AS active, current_setting('max_connections')::int AS max_connections FROM pg_stat_activity`,
    );
    const active = num(r.rows[0]?.active);
    const capacity = num(r.rows[0]?.max_connections);
    const share = capacity > 0 ? Math.round((active / capacity) * 10_000) / 10_000 : null;
    const points = [{ period_start: new Date(p.now).toISOString(), avg_slots: active, share }];
    return {
      kind: 'check_slot_saturation',
      window_hours: p.windowHours,
      capacity: capacity > 0 ? capacity : null,
      threshold_share: p.threshold,
      points,
      saturated_periods: mergePeriods(points, p.threshold, 0),
      note: 'one point sampled now: active backends (pg_stat_activity) against max_connections; PostgreSQL keeps no history of it',
    };
  }

  async close(): Promise<void> {
    await this.pool.end().catch(() => undefined);
  }
}

/**
 * Which targets the console runs on, from the configuration:
 * - every entry of ops_agent.config.projects (a BigQuery project in a region);
 * - none listed: the configured database — BigQuery (its project and location), PostgreSQL,
 *   Trino (beyond the spec), or MySQL (which has none of the operations' data: each says so).
 * A target that cannot be set up (an unreadable key file) stays in the list and answers every
 * operation with that error: one project's mistake never hides the others.
 */
import { CortadoError, toCortadoError } from '../../protocol/errors.js';
import type { OpsOperation, OpsResult, OpsTarget } from '../../protocol/schemas/ops.js';
import type { Config } from '../../config/schema.js';
import { OPS_OPERATIONS } from '../../config/ops-checks.js';
import type { BigQueryTargetOptions } from './bigquery.js';
import { PostgresTarget } from './postgresql.js';
import { normalRegion, notAvailable, type OpsParams, type OpsTargetRunner } from './target.js';

export const OPERATIONS: readonly OpsOperation[] = OPS_OPERATIONS;

/** A target whose setup failed: every operation answers the setup's error. */
class BrokenTarget implements OpsTargetRunner {
  constructor(readonly target: OpsTarget, private readonly error: CortadoError) {}
  async run(): Promise<OpsResult> {
    throw this.error;
  }
  async close(): Promise<void> {}
}

/**
 * A target whose engine module is loaded at its first operation: the BigQuery client (with
 * Google's auth library) and trino-client are loaded only by a console that runs on them, not
 * by every process that starts the ops actor. A target that cannot be made (an unreadable key
 * file) answers every operation with that error, as BrokenTarget does.
 */
class LoadedOnUse implements OpsTargetRunner {
  private made: Promise<OpsTargetRunner> | undefined;
  constructor(readonly target: OpsTarget, private readonly make: () => Promise<OpsTargetRunner>) {}
  private runner(): Promise<OpsTargetRunner> {
    return (this.made ??= this.make().catch((err: unknown) => new BrokenTarget(this.target, toCortadoError(err))));
  }
  async run(op: OpsOperation, p: OpsParams): Promise<OpsResult> {
    return (await this.runner()).run(op, p);
  }
  async close(): Promise<void> {
    if (this.made) await (await this.made).close();
  }
}

/** MySQL keeps none of the data the operations read. */
class MysqlTarget implements OpsTargetRunner {
  readonly target: OpsTarget;
  constructor(database: string) {
    this.target = { engine: 'mysql', label: `mysql/${database}` };
  }
  async run(op: OpsOperation): Promise<OpsResult> {
    throw notAvailable(op, 'mysql', 'the console reads BigQuery, PostgreSQL and Trino only');
  }
  async close(): Promise<void> {}
}

/**
 * The operations in force: allowed_operations, or all four when it is empty. Names that are not
 * operations never get this far while the console is on: the configuration refuses them, at
 * start and at run time (config/ops-checks.ts).
 */
export function allowedOperations(config: Config): OpsOperation[] {
  const listed = config.ops_agent.config.allowed_operations;
  return listed.length ? OPERATIONS.filter((o) => listed.includes(o)) : [...OPERATIONS];
}

export function buildTargets(config: Config): OpsTargetRunner[] {
  const projects = config.ops_agent.config.projects;
  const base = config.database.bigquery.base_url.replace(/\/+$/, '');
  const apiEndpoint = base ? { apiEndpoint: base } : {};
  if (projects.length > 0) {
    const seen = new Set<string>();
    return projects.map((p) => {
      const projectRegions = projects.filter((q) => q.project_id === p.project_id).map((q) => normalRegion(q.region));
      const first = !seen.has(p.project_id);
      seen.add(p.project_id);
      return bigquery({ projectId: p.project_id, region: p.region, credentialsPath: p.credentials_path, coversOtherRegions: first, projectRegions, ...apiEndpoint });
    });
  }
  const db = config.database;
  switch (db.provider) {
    case 'bigquery':
      if (!db.bigquery.project_id) return [];
      return [bigquery({ projectId: db.bigquery.project_id, region: db.bigquery.location || 'US', credentialsPath: db.bigquery.credentials_path, coversOtherRegions: true, projectRegions: [normalRegion(db.bigquery.location || 'US')], ...apiEndpoint })];
    case 'postgresql':
      if (db.postgresql.embedded) {
        return [new BrokenTarget({ engine: 'postgresql', label: 'postgresql/embedded' }, new CortadoError('NOT_FOUND', 'the embedded demo database has no pg_stat_statements nor activity to watch'))];
      }
      return [new PostgresTarget(db.postgresql)];
    case 'trino':
      return [new LoadedOnUse({ engine: 'trino', label: `trino/${db.trino.host}` }, async () => new (await import('./trino.js')).TrinoTarget(db.trino))];
    case 'mysql':
      return [new MysqlTarget(db.mysql.database)];
  }
}

function bigquery(opts: BigQueryTargetOptions): OpsTargetRunner {
  const target: OpsTarget = { engine: 'bigquery', project_id: opts.projectId, region: opts.region, label: `${opts.projectId}/${opts.region}` };
  return new LoadedOnUse(target, async () => new (await import('./bigquery.js')).BigQueryTarget(opts));
}

export type { OpsParams, OpsTargetRunner };

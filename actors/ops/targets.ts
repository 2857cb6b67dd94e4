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
import { BigQueryTarget, normalRegion } from './bigquery.js';
import { PostgresTarget } from './postgresql.js';
import { TrinoTarget } from './trino.js';
import { notAvailable, type OpsParams, type OpsTargetRunner } from './target.js';

export const OPERATIONS: readonly OpsOperation[] = OPS_OPERATIONS;

/** A target whose setup failed: every operation answers the setup's error. */
class BrokenTarget implements OpsTargetRunner {
  constructor(readonly target: OpsTarget, private readonly error: CortadoError) {}
  async run(): Promise<OpsResult> {
    throw this.error;
  }
  async close(): Promise<void> {}
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
      return [new TrinoTarget(db.trino)];
    case 'mysql':
      return [new MysqlTarget(db.mysql.database)];
  }
}

function bigquery(opts: ConstructorParameters<typeof BigQueryTarget>[0]): OpsTargetRunner {
  try {
    return new BigQueryTarget(opts);
  } catch (err) {
    return new BrokenTarget({ engine: 'bigquery', project_id: opts.projectId, region: opts.region, label: `${opts.projectId}/${opts.region}` }, toCortadoError(err));
  }
}

export type { OpsParams, OpsTargetRunner };

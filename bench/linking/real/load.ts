/**
 * The real-schema benchmark's PostgreSQL databases: the public sample databases side by side,
 * each in its own schema(s), and at the larger sizes the warehouse noise around them
 * (noise.ts). Made from our own DDL (ddl.ts), then ANALYZE, so statistics exist; created once
 * and reused while the database's comment carries the same DDL hash (as bench.ts's
 * ensureDatabase does for the synthetic catalog).
 *
 * Sizes: 0 = the sources alone (~260 relations); any other number = that many relations in all.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { databaseDdl, type DatabasePlan } from './ddl.js';
import { noisePlan, type NoiseFamily } from './noise.js';
import { ROWS } from './rows.js';
import { SOURCES } from './sources.js';

export const REAL_DB_PREFIX = 'cortado_bench_real';

export interface RealPlan extends DatabasePlan {
  /** relations in all (tables, partitioned tables and views; partitions not counted) */
  relations: number;
  /** the sources' relations, `schema.name` */
  real: string[];
  /** every noise relation, `schema.name` → its family */
  noise: Record<string, NoiseFamily>;
}

/** The relations a plan creates, `schema.name` (partitions excluded: the catalog shows their parent). */
export function planRelations(plan: DatabasePlan): string[] {
  return plan.schemas.flatMap((s) => [...s.tables.map((t) => `${s.name}.${t.name}`), ...(s.views ?? []).map((v) => `${s.name}.${v.name}`)]);
}

/** The sources alone (size 0), or with deterministic warehouse noise up to `size` relations. */
export function realPlan(size: number, seed = 23): RealPlan {
  const sources: DatabasePlan = { schemas: SOURCES.flatMap((s) => s.schemas), rows: [...ROWS] };
  const real = planRelations(sources);
  if (size === 0) return { ...sources, relations: real.length, real, noise: {} };
  if (size < real.length) throw new Error(`a real-schema database of ${size} relations: the sources alone hold ${real.length}`);
  const noise = noisePlan(SOURCES, ROWS, size - real.length, seed);
  const plan: DatabasePlan = { schemas: [...sources.schemas, ...noise.schemas], rows: [...ROWS, ...noise.rows], copies: noise.copies };
  return { ...plan, relations: real.length + Object.keys(noise.families).length, real, noise: noise.families };
}

export function databaseName(size: number): string {
  return size === 0 ? REAL_DB_PREFIX : `${REAL_DB_PREFIX}_${size}`;
}

function dbUrl(adminUrl: string, name: string): string {
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

export interface EnsuredDatabase {
  name: string;
  url: string;
  created: boolean;
  /** time to create, load and analyse it (0 when reused) */
  ms: number;
  relations: number;
  statements: number;
}

/** Create the database of this size unless it already holds this very DDL (its comment carries the hash). */
export async function ensureRealDatabase(size: number, adminUrl: string, plan: RealPlan = realPlan(size)): Promise<EnsuredDatabase> {
  const name = databaseName(size);
  const ddl = databaseDdl(plan);
  const tag = `cortado real linking bench: ${plan.relations} relations, ddl ${createHash('sha256').update(ddl.join(';\n')).digest('hex').slice(0, 16)}`;
  const out: EnsuredDatabase = { name, url: dbUrl(adminUrl, name), created: false, ms: 0, relations: plan.relations, statements: ddl.length };
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const found = await admin.query<{ comment: string | null }>(
      `SELECT shobj_description(oid, 'pg_database') AS comment FROM pg_database WHERE datname = $1`, [name]);
    if (found.rows[0]?.comment === tag) return out;
    const started = performance.now();
    if (found.rows.length) await admin.query(`DROP DATABASE ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)} TEMPLATE template0`);
    const db = new pg.Client({ connectionString: out.url });
    await db.connect();
    try {
      // in batches, each its own transaction (one for all would run out of lock slots)
      for (let i = 0; i < ddl.length; i += 200) await db.query(ddl.slice(i, i + 200).join(';\n'));
      await db.query('ANALYZE');
    } finally {
      await db.end();
    }
    // the tag last: a creation cut short is made again next time
    await admin.query(`COMMENT ON DATABASE ${pg.escapeIdentifier(name)} IS ${pg.escapeLiteral(tag)}`);
    out.created = true;
    out.ms = performance.now() - started;
    return out;
  } finally {
    await admin.end();
  }
}

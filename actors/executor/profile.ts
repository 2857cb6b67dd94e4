/**
 * `sql.profile`: figures about the tables of one schema, for the semantic layer's auto-discover.
 * Read-only and bounded everywhere; only tables the request's role sees (the engine's
 * introspection, less what its scope may not show); a table asked for that is not there is
 * reported in `missing`.
 *
 * - PostgreSQL (and the embedded demo): pg_stats and pg_class.reltuples; the columns without
 *   statistics (a table never analysed, a view) from a sample. Primary keys from pg_constraint.
 * - MySQL / MariaDB: TABLE_ROWS and the keys from information_schema; the figures from a sample.
 * - Trino, BigQuery: a sample. BigQuery bills the columns a query reads, LIMIT or not: the sample
 *   is dry-run first, and over BIGQUERY_TABLE_BYTES it reads a TABLESAMPLE share of the table
 *   instead; past BIGQUERY_TOTAL_BYTES for one profile, the remaining tables get no figures.
 * - A sample is `SELECT <columns> FROM <table> LIMIT 1000` (PROFILE_SAMPLE_ROWS), in the
 *   engine's read-only transaction with the query timeout (at most PROFILE_QUERY_MS).
 * - Value overlap, per pair asked for: at most OVERLAP_VALUES distinct values sampled from the
 *   from-column, then `count(DISTINCT to) … WHERE to IN (<those values as literals>)`.
 *
 * Every identifier is quoted and every value a literal of the dialect (profile-sql.ts).
 */
import type { Ctx } from '../../protocol/headers.js';
import { CortadoError, toCortadoError } from '../../protocol/errors.js';
import type { Cell, Dialect } from '../../protocol/schemas/common.js';
import type { DbTable } from '../../protocol/schemas/sql.js';
import {
  PROFILE_SAMPLE_ROWS, PROFILE_SAMPLE_VALUES,
  type ColumnStats, type OverlapPair, type OverlapResult, type SqlProfileReply, type SqlProfileRequest, type TableProfile,
} from '../../protocol/schemas/profile.js';
import { SqlProfile } from '../../protocol/subjects.js';
import type { DbEngine } from './engines/engine.js';
import { configuredTimeoutMs } from './engines/index.js';
import { capsFromConfig } from './engines/wire-cap.js';
import { primaryKeysSql as pgPrimaryKeys, readStatistics, statisticsSql, statValue, type PgColumnStats } from './engines/postgresql-profile.js';
import { primaryKeysSql as mysqlPrimaryKeys } from './engines/mysql-profile.js';
import { leaseFor, type ExecutorDeps } from './handle.js';
import { distinctValues, less, sampleFigures, shorten } from './profile-sample.js';
import { overlapSql, sampleSql, selectSql, valueLiteral, type TableRef } from './profile-sql.js';
import { sanitizeDbError } from './sanitize.js';
import { maskProfiles } from './mask-values.js';

/** Tables one profile reads when none are named. */
export const PROFILE_MAX_TABLES = 100;
/** Columns of one table sampled, at most. */
const MAX_SAMPLE_COLUMNS = 300;
/** One profiling query's time, at most (less when the configured timeout or the deadline is nearer). */
const PROFILE_QUERY_MS = 30_000;
/** Distinct values of a from-column checked for overlap. */
const OVERLAP_VALUES = 100;
/** Tables profiled at once (each holds one pooled connection while its queries run). */
const CONCURRENCY = 2;
/** Time kept back from the deadline for the reply: 3 s, or a fifth of a short deadline (the catalog's value linking waits 3 s in all). */
const REPLY_MARGIN_MS = 3_000;
const REPLY_MARGIN_SHARE = 0.2;
/** BigQuery: bytes one table's sample may bill before it reads a TABLESAMPLE share instead. */
export const BIGQUERY_TABLE_BYTES = 1024 ** 3;
/** BigQuery: bytes one profile may bill in all. */
export const BIGQUERY_TOTAL_BYTES = 10 * 1024 ** 3;
/** Columns of all profiled tables together, at most (the reply stays well within a bus message). */
export const PROFILE_MAX_COLUMNS = 3000;
/** Types a sample leaves out: never grouped by nor added up, and costly to read (binary, documents, arrays, shapes). */
const SKIPPED_TYPES = /\[\]$|^(bytea|blob|tinyblob|mediumblob|longblob|binary|varbinary|bytes|tsvector|tsquery|xml|json|jsonb|geometry|geography|point|polygon|array|struct|record|row|map|range)\b/i;

interface Located {
  table: DbTable;
  ref: TableRef;
}

/** What one profile run shares: the engine, its clock, BigQuery's byte budget. */
class Run {
  readonly dialect: Dialect;
  bytesLeft = BIGQUERY_TOTAL_BYTES;
  timedOut = false;

  constructor(readonly engine: DbEngine, private readonly deps: ExecutorDeps, private readonly ctx: Ctx, readonly until: number) {
    this.dialect = engine.dialect;
  }

  timeLeft(): number {
    return this.until - Date.now();
  }

  /** One of our statements, read-only with the (shortened) timeout; database errors sanitised. */
  async query(sql: string, maxRows: number, knownBytes?: number): Promise<Cell[][]> {
    const left = this.timeLeft();
    if (left <= 0) {
      this.timedOut = true;
      throw new CortadoError('DB_TIMEOUT', 'not profiled: the time for one profile ran out');
    }
    const timeoutMs = Math.max(1, Math.min(configuredTimeoutMs(this.deps.config), PROFILE_QUERY_MS, left));
    try {
      if (this.dialect === 'bigquery') await this.withinBytes(sql, knownBytes);
      const r = await this.engine.execute(sql, { timeoutMs, maxRows, ...capsFromConfig(this.deps.config.query), ...(this.ctx.user ? { user: this.ctx.user } : {}) });
      return r.rows;
    } catch (err) {
      throw sanitizeDbError(toCortadoError(err), this.dialect, [sql]);
    }
  }

  /**
   * BigQuery: the dry run's bytes (or what the caller already knows a query bills: a dry run
   * does not count a TABLESAMPLE's share), refused past what is left of the budget.
   */
  private async withinBytes(sql: string, knownBytes: number | undefined): Promise<void> {
    const bytes = knownBytes ?? (await this.engine.estimate?.(sql))?.bytes_processed ?? 0;
    if (bytes > Math.min(this.bytesLeft, BIGQUERY_TABLE_BYTES)) {
      throw new CortadoError('LIMIT_EXCEEDED', `not profiled: reading it would bill ${bytes} bytes, over what one profile may (${Math.min(this.bytesLeft, BIGQUERY_TABLE_BYTES)})`);
    }
    this.bytesLeft -= bytes;
  }

  /** BigQuery: what the plain LIMIT sample would bill (0 where nothing is billed). */
  async estimateBytes(sql: string): Promise<number> {
    if (this.dialect !== 'bigquery' || !this.engine.estimate) return 0;
    try {
      return (await this.engine.estimate(sql)).bytes_processed ?? 0;
    } catch (err) {
      throw sanitizeDbError(toCortadoError(err), this.dialect, [sql]);
    }
  }
}

export async function profile(input: SqlProfileRequest, deps: ExecutorDeps, ctx: Ctx): Promise<SqlProfileReply> {
  const started = performance.now();
  const end = Math.min(ctx.deadline ?? Infinity, Date.now() + SqlProfile.timeoutMs);
  const until = end - Math.min(REPLY_MARGIN_MS, Math.max(0, end - Date.now()) * REPLY_MARGIN_SHARE);
  const lease = await leaseFor(deps, ctx);
  let slot: { release(): void } | undefined;
  try {
    if (lease.scoped && deps.scopes) slot = await deps.scopes.workers.acquire(Math.max(1, until - Date.now()));
    if (!lease.scoped) await deps.ensureReadOnly?.();
    const run = new Run(lease.engine, deps, ctx, until);
    const schema = await lease.engine.introspect();
    const seen = lease.visible ? schema.tables.filter(lease.visible) : schema.tables;
    const inSchema = locate(seen, input, lease.engine.dialect);

    const missing: string[] = [];
    let wanted: Located[];
    let truncated = false;
    if (input.tables) {
      wanted = [];
      for (const name of input.tables) {
        const found = find(inSchema, name);
        if (!found) missing.push(name);
        else if (!wanted.includes(found)) wanted.push(found);
      }
    } else {
      wanted = [...inSchema.values()].sort((a, b) => a.table.name.localeCompare(b.table.name));
      truncated = wanted.length > PROFILE_MAX_TABLES;
      wanted = wanted.slice(0, PROFILE_MAX_TABLES);
    }
    // the reply's size: past PROFILE_MAX_COLUMNS columns, the remaining tables wait for another profile
    let columns = 0;
    const fits = wanted.findIndex((w, i) => (columns += w.table.columns.length) > PROFILE_MAX_COLUMNS && i > 0);
    if (fits > 0) {
      wanted = wanted.slice(0, fits);
      truncated = true;
    }

    // the values masked before they leave (mask-values.ts)
    const tables = await maskProfiles(await profileTables(run, wanted), lease.engine.dialect, deps, ctx);
    const overlaps = await checkOverlaps(run, inSchema, input.overlaps ?? []);
    const reply: SqlProfileReply = {
      dialect: lease.engine.dialect,
      provider: lease.engine.provider,
      schema: input.schema,
      tables,
      missing,
      overlaps,
      truncated: truncated || run.timedOut,
      duration_ms: Math.round(performance.now() - started),
    };
    deps.log.info({ rid: ctx.requestId, subj: SqlProfile.subject, tables: tables.length, missing: missing.length, overlaps: overlaps.length, ms: reply.duration_ms }, 'schema profiled');
    return reply;
  } finally {
    slot?.release();
    lease.release();
  }
}

// ---- which tables -----------------------------------------------------------------------------

/**
 * The tables of the asked schema, by name. Trino without a configured catalog names schemas
 * `catalog.schema`: with `catalog` given, those match too (and are named with the catalog).
 */
function locate(tables: readonly DbTable[], input: SqlProfileRequest, dialect: Dialect): Map<string, Located> {
  const out = new Map<string, Located>();
  const qualified = input.catalog ? `${input.catalog}.${input.schema}` : undefined;
  // Trino, the schema asked for as `catalog.schema` (as a catalog-less introspection names it): named with its catalog
  const dot = dialect === 'trino' && !input.catalog ? input.schema.indexOf('.') : -1;
  const asked: TableRef = dot > 0 ? { catalog: input.schema.slice(0, dot), schema: input.schema.slice(dot + 1), name: '' } : { schema: input.schema, name: '' };
  for (const table of tables) {
    if (table.schema === input.schema) out.set(table.name, { table, ref: { ...asked, name: table.name } });
    else if (qualified && table.schema === qualified) out.set(table.name, { table, ref: { catalog: input.catalog!, schema: input.schema, name: table.name } });
  }
  return out;
}

/** By exact name, else by the one name that differs only in case. */
function find(tables: Map<string, Located>, name: string): Located | undefined {
  const exact = tables.get(name);
  if (exact) return exact;
  const folded = [...tables.keys()].filter((n) => n.toLowerCase() === name.toLowerCase());
  return folded.length === 1 ? tables.get(folded[0]!) : undefined;
}

// ---- tables -----------------------------------------------------------------------------------

async function profileTables(run: Run, wanted: Located[]): Promise<TableProfile[]> {
  if (!wanted.length) return [];
  const names = wanted.map((w) => w.table.name);
  const schemaName = wanted[0]!.table.schema;
  let keys = new Map<string, string[]>();
  let stats = new Map<string, Map<string, PgColumnStats>>();
  if (run.dialect === 'postgresql') {
    keys = primaryKeysOf(await run.query(pgPrimaryKeys(schemaName, names), 100_000), true);
    stats = readStatistics(await run.query(statisticsSql(schemaName, names), 1_000_000));
  } else if (run.dialect === 'mysql') {
    keys = primaryKeysOf(await run.query(mysqlPrimaryKeys(schemaName, names), 100_000), false);
  }
  const out: TableProfile[] = new Array(wanted.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < wanted.length) {
      const i = next++;
      const w = wanted[i]!;
      out[i] = await profileTable(run, w, keys.get(w.table.name) ?? [], stats.get(w.table.name));
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, wanted.length) }, worker));
  return out;
}

/** Rows of (table, columns as JSON text) or (table, column), as table → key columns. */
function primaryKeysOf(rows: Cell[][], json: boolean): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [table, cols] of rows) {
    const list = out.get(String(table)) ?? [];
    if (json) {
      try {
        const parsed: unknown = JSON.parse(String(cols));
        if (Array.isArray(parsed)) list.push(...parsed.map(String));
      } catch {
        /* no key then */
      }
    } else list.push(String(cols));
    out.set(String(table), list);
  }
  return out;
}

async function profileTable(run: Run, w: Located, primaryKey: string[], stats: Map<string, PgColumnStats> | undefined): Promise<TableProfile> {
  const { table, ref } = w;
  const columns: ColumnStats[] = table.columns.map((c) => ({
    name: c.name,
    data_type: c.type,
    nullable: c.nullable,
    ...(c.comment ? { comment: c.comment } : {}),
    sample_values: [],
  }));
  const profile: TableProfile = {
    schema: table.schema,
    name: table.name,
    kind: table.kind,
    ...(table.comment ? { comment: table.comment } : {}),
    primary_key: primaryKey,
    foreign_keys: table.foreign_keys ?? [],
    source: 'none',
    select_sql: selectSql(run.dialect, ref, table.columns.map((c) => c.name)),
    columns,
  };
  if (table.row_estimate !== undefined) profile.row_count = table.row_estimate;

  // statistics first (PostgreSQL), then a sample for the columns they leave out
  const unstated: ColumnStats[] = [];
  for (const col of columns) {
    const s = stats?.get(col.name);
    if (s) {
      applyStatistics(col, s);
      if (s.reltuples >= 0) profile.row_count = Math.round(s.reltuples);
    } else unstated.push(col);
  }
  if (!unstated.length) {
    profile.source = columns.length ? 'statistics' : 'none';
    return profile;
  }
  if (run.timeLeft() <= 0) {
    run.timedOut = true;
    profile.note = 'not profiled: the time for one profile ran out';
    return profile;
  }

  const sampled = unstated.filter((c) => !SKIPPED_TYPES.test(c.data_type.trim())).slice(0, MAX_SAMPLE_COLUMNS);
  if (!sampled.length) {
    profile.source = unstated.length < columns.length ? 'statistics' : 'none';
    return profile;
  }
  try {
    const { rows, whole } = await sample(run, ref, sampled.map((c) => ({ name: c.name, type: c.data_type })));
    sampled.forEach((col, k) => Object.assign(col, sampleFigures(rows, k), { source: 'sample' as const }));
    profile.source = 'sample';
    profile.sampled_rows = rows.length;
    // a sample that read fewer rows than it could read the whole table
    if (whole && rows.length < PROFILE_SAMPLE_ROWS && (profile.row_count === undefined || !stats)) profile.row_count = rows.length;
  } catch (err) {
    const e = toCortadoError(err);
    if (stats) profile.source = 'statistics';
    profile.note = e.message.startsWith('not profiled') ? e.message : `not sampled: ${e.message}`;
  }
  if (sampled.length < unstated.length && !profile.note) profile.note = `${unstated.length - sampled.length} column(s) not sampled (binary, document, array or spatial types, or past ${MAX_SAMPLE_COLUMNS} columns)`;
  return profile;
}

function applyStatistics(col: ColumnStats, s: PgColumnStats): void {
  col.source = 'statistics';
  col.null_fraction = s.nullFrac;
  if (s.distinct !== undefined) col.distinct_count = s.distinct;
  const mcv = s.mcv.map((v) => statValue(col.data_type, v));
  const ends = (s.bounds ?? []).map((v) => statValue(col.data_type, v));
  col.sample_values = (mcv.length ? mcv : ends).slice(0, PROFILE_SAMPLE_VALUES).map(shorten);
  let min: Cell | undefined;
  let max: Cell | undefined;
  for (const v of [...ends, ...mcv]) {
    if (v === null || typeof v === 'boolean') continue;
    if (min === undefined || less(v, min)) min = v;
    if (max === undefined || less(max, v)) max = v;
  }
  if (min !== undefined) col.min = shorten(min);
  if (max !== undefined) col.max = shorten(max);
}

/**
 * The sampled rows: the first PROFILE_SAMPLE_ROWS rows (a LIMIT stops the scan early); on
 * BigQuery, when that would bill more than BIGQUERY_TABLE_BYTES, a TABLESAMPLE share of the
 * table's blocks sized to fit. `whole`: the rows are all the table has (no TABLESAMPLE).
 */
async function sample(run: Run, ref: TableRef, columns: Array<{ name: string; type: string }>): Promise<{ rows: Cell[][]; whole: boolean }> {
  const limit = `LIMIT ${PROFILE_SAMPLE_ROWS}`;
  let sql = sampleSql(run.dialect, ref, columns, limit);
  let whole = true;
  let bytes: number | undefined;
  if (run.dialect === 'bigquery') {
    bytes = await run.estimateBytes(sql);
    if (bytes > BIGQUERY_TABLE_BYTES) {
      const percent = Math.max(0.001, Math.floor((BIGQUERY_TABLE_BYTES / bytes) * 100_000) / 1000);
      sql = sampleSql(run.dialect, ref, columns, `TABLESAMPLE SYSTEM (${percent} PERCENT) ${limit}`);
      bytes = Math.ceil((bytes * percent) / 100);
      whole = false;
    }
  }
  return { rows: await run.query(sql, PROFILE_SAMPLE_ROWS, bytes), whole };
}

// ---- value overlap ----------------------------------------------------------------------------

async function checkOverlaps(run: Run, tables: Map<string, Located>, pairs: readonly OverlapPair[]): Promise<OverlapResult[]> {
  const fromValues = new Map<string, Promise<Cell[]>>();
  const out: OverlapResult[] = [];
  for (const pair of pairs) {
    const base = { ...pair, sampled: 0, found: 0, share: 0 };
    const from = find(tables, pair.from_table);
    const to = find(tables, pair.to_table);
    const problem = !from ? `there is no table ${pair.from_table}`
      : !to ? `there is no table ${pair.to_table}`
      : !from.table.columns.some((c) => c.name === pair.from_column) ? `${pair.from_table} has no column ${pair.from_column}`
      : !to.table.columns.some((c) => c.name === pair.to_column) ? `${pair.to_table} has no column ${pair.to_column}`
      : undefined;
    if (problem || !from || !to) {
      out.push({ ...base, error: problem ?? 'not found' });
      continue;
    }
    try {
      const key = `${from.table.name}\u0000${pair.from_column}`;
      let values = fromValues.get(key);
      if (!values) {
        values = run.query(selectSql(run.dialect, from.ref, [pair.from_column], `LIMIT ${PROFILE_SAMPLE_ROWS}`), PROFILE_SAMPLE_ROWS)
          .then((rows) => distinctValues(rows, 0, OVERLAP_VALUES));
        fromValues.set(key, values);
      }
      const literals = (await values).map((v) => valueLiteral(run.dialect, v)).filter((l): l is string => l !== undefined);
      if (!literals.length) {
        out.push(base);
        continue;
      }
      const rows = await run.query(overlapSql(run.dialect, to.ref, pair.to_column, literals), 1);
      const found = Math.min(literals.length, Number(rows[0]?.[0] ?? 0) || 0);
      out.push({ ...base, sampled: literals.length, found, share: found / literals.length });
    } catch (err) {
      out.push({ ...base, error: toCortadoError(err).message });
    }
  }
  return out;
}

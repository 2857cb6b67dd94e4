/**
 * The schema-linking section of `npm run bench` (also alone: `npm run bench:linking`).
 *
 * (a) linking: the generated catalog (bench/linking/generate.ts) at 100, 1,000 and 10,000
 *     tables, every question through the catalog actor's own `context` handler
 *     (actors/catalog/handle.ts, the shipped `catalog.max_tables_in_prompt`), without and with
 *     the semantic layer's synonyms, measured by bench/linking/evaluate.ts: recall of answer
 *     tables, questions complete, noise among the tables sent, prompt tokens mean/p95, and the
 *     handler's time per question;
 * (b) introspection: a real PostgreSQL database holding the 10,000-table catalog
 *     (`cortado_bench_10k`, created once from the generator's DDL and reused while the DDL is
 *     the same), read through the executor's engine (`introspect()`, what sql.introspect runs),
 *     with its time and the memory it takes, then the catalog actor's index and first question.
 *
 * (c) real schemas (`npm run bench:linking` only, not `npm run bench`): public sample databases
 *     side by side in one PostgreSQL database, alone and inside warehouse noise up to 2,000 and
 *     10,000 relations (bench/linking/real/), business questions through the same handler on the
 *     catalog the executor's engine introspects, with values from the executor's sql.profile;
 *     dev, held-out test and all; then the largest size once more without declared foreign keys.
 *
 * (d) catalog.linking: model without a model (bench/linking/real/candidates.ts): the share of
 *     the real-schema questions' answer tables that reach the candidate list the model would be
 *     shown, per list size (BENCH_LINKING_CANDIDATES, "100"; "25,50,100,200" for the curve), at the real sizes —
 *     the ceiling a model could reach; no model is asked.
 *
 * Knobs: BENCH_LINKING_SIZES ("100,1000,10000"), BENCH_LINKING_SEED (13), BENCH_LINKING_DB
 * ("cortado_bench_10k"; "none" skips (b)), BENCH_INTROSPECT_RUNS (3), BENCH_LINKING_MISSES=1 (list the
 * incomplete questions of the largest size with the tables sent, and of each real-schema run),
 * BENCH_LINKING_ONLY ("synthetic" runs (a) and (b), "real" runs (c), "candidates" runs (d)), BENCH_LINKING_REAL_SIZES
 * ("0,2000,10000"; 0 or "bare" is the sources alone), BENCH_LINKING_REAL_NOFK ("1"; "0" skips the run
 * without foreign keys), BENCH_LINKING_REAL_OUT (a file for every run's per-question results, JSON).
 * Needs a PostgreSQL at DATABASE_URL (else 127.0.0.1:5432) for (b) and (c).
 */
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import {
  buildCatalog,
  buildContext,
  context,
  createCatalogCache,
  createSemanticTerms,
  createValueSource,
  type CatalogDeps,
} from '../../actors/catalog/handle.js';
import type { Config } from '../../config/schema.js';
import type { SqlProfileReply, SqlProfileRequest, TableProfile } from '../../protocol/schemas/profile.js';
import type { ContextReply } from '../../protocol/schemas/semantic.js';
import { createEngine } from '../../actors/executor/engines/index.js';
import { createLogger } from '../../runtime/log.js';
import { testConfig } from '../../test/helpers/config.js';
import { ADMIN_URL } from '../../test/helpers/pg.js';
import { benchConfig, evaluateLinking, REPORT_HEADER, reportRow, type LinkingReport, type Selector } from './evaluate.js';
import { catalogDdl, generateCatalog, type GeneratedCatalog } from './generate.js';
import { realSection } from './real/report.js';
import { candidateSection } from './real/candidates.js';

const SIZES = (process.env.BENCH_LINKING_SIZES ?? '100,1000,10000').split(',').map(Number).filter((n) => Number.isInteger(n) && n > 0);
const SEED = Number(process.env.BENCH_LINKING_SEED ?? 13);
const DB_NAME = process.env.BENCH_LINKING_DB ?? 'cortado_bench_10k';
const RUNS = Math.max(1, Number(process.env.BENCH_INTROSPECT_RUNS ?? 3));
const DB_TABLES = 10_000;

export type Setup = 'lexical' | 'semantic';

/**
 * The catalog actor's own `context` handler over a generated catalog. What stands in for the
 * other actors: the generated introspection for the executor's sql.introspect (through the
 * real catalog cache), the generator's known values for sql.profile's statistics, and with
 * `semantic` its entities (synonyms) for the semantic actor's layer. No business-context block
 * (the semantic actor's text) is added to the prompt.
 */
export function actorSelector(setup: Setup, config: Config = benchConfig()): Selector {
  const depsOf = new WeakMap<GeneratedCatalog, CatalogDeps>();
  const deps = (g: GeneratedCatalog): CatalogDeps => {
    let d = depsOf.get(g);
    if (!d) {
      d = {
        config,
        catalog: createCatalogCache({ load: async () => g.introspection, ttlSeconds: 3600 }),
        values: createValueSource(async (input) => profileOf(g, input), 3600),
      };
      if (setup === 'semantic') {
        const layer: ContextReply = { entities: g.semantic.entities, relationships: [], metrics: [], injected: true, block: '', storage: 'memory' };
        d.semanticTerms = createSemanticTerms(async () => layer);
      }
      depsOf.set(g, d);
    }
    return d;
  };
  return async (g, q) => {
    const reply = await context({ question: q.question }, deps(g), { requestId: 'bench-linking' });
    return { tables: reply.tables, schema_text: reply.schema_text, business_context: reply.business_context };
  };
}

/** sql.profile as the executor would answer it from statistics: the generator's known values as the most common ones. */
function profileOf(g: GeneratedCatalog, input: SqlProfileRequest): SqlProfileReply {
  const tables: TableProfile[] = [];
  const missing: string[] = [];
  for (const name of input.tables ?? []) {
    const t = g.introspection.tables.find((x) => x.schema === input.schema && x.name === name);
    if (!t) {
      missing.push(name);
      continue;
    }
    const known = g.values[`${t.schema}.${t.name}`] ?? {};
    tables.push({
      schema: t.schema, name: t.name, kind: t.kind, primary_key: g.primary_keys[`${t.schema}.${t.name}`] ?? [], foreign_keys: [],
      source: 'statistics', select_sql: `SELECT * FROM ${t.schema}.${t.name}`,
      columns: t.columns.map((c) => ({ name: c.name, data_type: c.type, nullable: c.nullable, sample_values: known[c.name] ?? [], source: 'statistics' as const })),
    });
  }
  return { dialect: 'postgresql', provider: 'postgresql', schema: input.schema, tables, missing, overlaps: [], truncated: false, duration_ms: 0 };
}

export async function linkingSection(): Promise<LinkingReport[]> {
  const maxTables = benchConfig().catalog.max_tables_in_prompt;
  const reports: LinkingReport[] = [];
  const rows: string[] = [];
  for (const n of SIZES) {
    const t0 = performance.now();
    const generated = generateCatalog({ tables: n, seed: SEED });
    const t1 = performance.now();
    for (const setup of ['lexical', 'semantic'] as const) {
      const report = await evaluateLinking(generated, actorSelector(setup));
      if (setup === 'lexical') reports.push(report);
      rows.push(`${reportRow(report)} ${setup.padEnd(8)} | ${String(Math.round(t1 - t0)).padStart(6)} |`);
    }
  }
  console.log(`\nSchema linking — generated catalog (seed ${SEED}, ${reports.at(-1)?.questions ?? 0} questions at the largest size), through the catalog actor's context handler (max_tables_in_prompt ${maxTables}); setup lexical: the catalog and known column values only; semantic: plus the semantic layer's synonyms for ${generateCatalog({ tables: 1000, seed: SEED }).semantic.entities.length} entities. Tokens: the whole SQL prompt, ${reports[0]?.tokenizer ?? ''}; ms/q: the handler's time per question (the first one builds the catalog's indexes)\n`);
  console.log(`${REPORT_HEADER[0]} setup    | gen ms |`);
  console.log(`${REPORT_HEADER[1]} -------- | -----: |`);
  for (const row of rows) console.log(row);
  const last = reports.at(-1);
  if (last) {
    const goal = last.recall >= 0.95 && last.complete >= 0.9 && last.tokens_mean <= 3000;
    console.log(`\nlexical at ${last.tables.toLocaleString('en-US')} tables: recall ${(last.recall * 100).toFixed(1)} % (goal ≥ 95 %), complete ${(last.complete * 100).toFixed(1)} % (goal ≥ 90 %), mean prompt ${Math.round(last.tokens_mean)} tokens (goal ≤ 3,000): ${goal ? 'met' : 'not met'}`);
    const missed = new Map<string, number>();
    for (const r of last.results) for (const m of r.missing) missed.set(m, (missed.get(m) ?? 0) + 1);
    const top = [...missed].sort((a, b) => b[1] - a[1]).slice(0, 8);
    if (top.length) console.log(`most missed answer tables: ${top.map(([t, k]) => `${t} (${k})`).join(', ')}`);
    // BENCH_LINKING_MISSES=1: each incomplete question with what was sent instead
    if (process.env.BENCH_LINKING_MISSES) {
      for (const r of last.results.filter((x) => x.missing.length)) console.log(`- ${r.question}\n    missing ${r.missing.join(', ')}; sent ${r.sent.join(', ')}`);
    }
  }
  if (DB_NAME !== 'none') await introspectionSection();
  return reports;
}

// ---- introspection of a real 10,000-table database ---------------------------------------------

function dbUrl(name: string): string {
  const u = new URL(ADMIN_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Create the database from the generator's DDL unless it already holds this very DDL (its comment carries the hash). */
async function ensureDatabase(generated: GeneratedCatalog): Promise<{ created: boolean; ms: number }> {
  const ddl = catalogDdl(generated);
  const tag = `cortado linking bench: ${DB_TABLES} tables, seed ${SEED}, ddl ${createHash('sha256').update(ddl.join(';\n')).digest('hex').slice(0, 16)}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    const found = await admin.query<{ comment: string | null }>(
      `SELECT shobj_description(oid, 'pg_database') AS comment FROM pg_database WHERE datname = $1`, [DB_NAME]);
    if (found.rows[0]?.comment === tag) return { created: false, ms: 0 };
    const started = performance.now();
    if (found.rows.length) await admin.query(`DROP DATABASE ${pg.escapeIdentifier(DB_NAME)} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(DB_NAME)} TEMPLATE template0`);
    const db = new pg.Client({ connectionString: dbUrl(DB_NAME) });
    await db.connect();
    try {
      // statements sent in batches, each its own transaction (one for all would run out of lock slots)
      for (let i = 0; i < ddl.length; i += 200) await db.query(ddl.slice(i, i + 200).join(';\n'));
    } finally {
      await db.end();
    }
    // the tag last: a creation cut short is made again next time
    await admin.query(`COMMENT ON DATABASE ${pg.escapeIdentifier(DB_NAME)} IS ${pg.escapeLiteral(tag)}`);
    return { created: true, ms: performance.now() - started };
  } finally {
    await admin.end();
  }
}

const MB = 1024 * 1024;
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();

async function introspectionSection(): Promise<void> {
  const generated = generateCatalog({ tables: DB_TABLES, seed: SEED });
  let made: { created: boolean; ms: number };
  try {
    made = await ensureDatabase(generated);
  } catch (err) {
    console.log(`\nintrospection: skipped (${(err as Error).message})`);
    return;
  }
  const maxTables = benchConfig().catalog.max_tables_in_prompt;
  const u = new URL(ADMIN_URL);
  const config = testConfig({ natsUrl: 'nats://127.0.0.1:4222', db: { host: u.hostname, port: Number(u.port || 5432), name: DB_NAME, user: decodeURIComponent(u.username || 'postgres') },
    // the introspection is measured, not cut short by the default 10 s statement timeout
    extra: { query: { timeout: 300 } } });
  const engine = await createEngine(config, createLogger({ svc: 'bench', level: 'silent' }));
  try {
    await engine.ping(10_000);
    type Run = { ms: number; indexMs: number; firstMs: number; heldMb: number; peakRssMb: number; tables: number };
    const runs: Run[] = [];
    // memory held is taken on the first load (later ones replace what an earlier load left in caches)
    let firstHeldMb = NaN;
    // the first run warms the connection and PostgreSQL's catalog caches; RUNS measured after it
    for (let i = 0; i <= RUNS; i++) {
      gc();
      gc();
      const before = process.memoryUsage();
      let peak = before.rss;
      const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 5);
      const t0 = performance.now();
      const schema = await engine.introspect();
      const ms = performance.now() - t0;
      const t1 = performance.now();
      const catalog = buildCatalog({ dialect: engine.dialect, provider: engine.provider, ...schema });
      const indexMs = performance.now() - t1;
      // the first question builds what the ranking keeps per catalog (its lazily made indexes)
      const t2 = performance.now();
      buildContext(catalog, { question: generated.questions[0]?.question ?? 'revenue per region' }, maxTables);
      const firstMs = performance.now() - t2;
      clearInterval(sampler);
      peak = Math.max(peak, process.memoryUsage().rss);
      gc();
      gc();
      const after = process.memoryUsage();
      // what the catalog actor holds afterwards: the tables and their index
      const heldMb = (after.heapUsed + after.external - before.heapUsed - before.external) / MB;
      if (catalog.entries.length !== schema.tables.length) throw new Error('the catalog lost tables');
      if (i === 0) firstHeldMb = heldMb;
      if (i > 0) runs.push({ ms, indexMs, firstMs, heldMb, peakRssMb: (peak - before.rss) / MB, tables: schema.tables.length });
    }
    const med = (pick: (r: Run) => number): number => [...runs].map(pick).sort((a, b) => a - b)[Math.floor(runs.length / 2)]!;
    const tables = runs[0]?.tables ?? 0;
    const fks = generated.introspection.tables.reduce((n, t) => n + (t.foreign_keys?.length ?? 0), 0);
    const columns = generated.introspection.tables.reduce((n, t) => n + t.columns.length, 0);
    console.log(`\nIntrospection — PostgreSQL database ${DB_NAME}: ${tables.toLocaleString('en-US')} tables, ${columns.toLocaleString('en-US')} columns, ${fks} foreign keys (${made.created ? `created now in ${(made.ms / 1000).toFixed(1)} s` : 'reused'}); the executor engine's introspect(), then the catalog's index (buildCatalog) and its first question (what the ranking builds lazily); total = all three, the time until a first question is linked; median of ${RUNS} runs after one warm-up${(globalThis as { gc?: unknown }).gc ? '' : ' (run node with --expose-gc for exact memory figures)'}\n`);
    console.log('| introspect ms | index ms | first question ms | total ms | heap held MB | peak RSS growth MB |');
    console.log('| ------------: | -------: | ----------------: | -------: | -----------: | -----------------: |');
    console.log(`| ${med((r) => r.ms).toFixed(0).padStart(13)} | ${med((r) => r.indexMs).toFixed(0).padStart(8)} | ${med((r) => r.firstMs).toFixed(0).padStart(17)} | ${med((r) => r.ms + r.indexMs + r.firstMs).toFixed(0).padStart(8)} | ${firstHeldMb.toFixed(1).padStart(12)} | ${med((r) => r.peakRssMb).toFixed(1).padStart(18)} |`);
    const total = med((r) => r.ms + r.indexMs + r.firstMs);
    const extra = Math.max(firstHeldMb, med((r) => r.peakRssMb));
    console.log(`\nintrospection, index and first question at ${tables.toLocaleString('en-US')} tables: ${total.toFixed(0)} ms (goal < 2,000 ms: ${total < 2000 ? 'met' : 'not met'}); extra memory ${extra.toFixed(1)} MB, the larger of heap held and peak RSS growth (goal < 100 MB: ${extra < 100 ? 'met' : 'not met'})`);
  } finally {
    await engine.close();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const only = process.env.BENCH_LINKING_ONLY;
  if (only && only !== 'synthetic' && only !== 'real' && only !== 'candidates') throw new Error(`BENCH_LINKING_ONLY is "synthetic", "real" or "candidates", not "${only}"`);
  if (only !== 'real' && only !== 'candidates') await linkingSection();
  if (only !== 'synthetic' && only !== 'candidates') await realSection();
  if (only !== 'synthetic') await candidateSection();
}

/**
 * The real-schema linking measurement: every question through the catalog actor's own `context`
 * handler (actors/catalog/handle.ts, the shipped configuration), on the catalog the executor's
 * engine introspects from the benchmark's PostgreSQL database (load.ts), with known values from
 * the executor's own `sql.values` handler (actors/executor/value-index.ts: the value index from
 * PostgreSQL's statistics) and `sql.profile` handler (actors/executor/profile.ts, asked only
 * where the index has no statistics) against that database, with no mask rules (the executor
 * masks their values itself), as the running service wires them over the bus. No semantic layer.
 *
 * Per question: the answer tables sent (against the best of its minimal sets), whether a
 * clarifying question came back, the SQL prompt's tokens, the handler's time. Summaries for dev,
 * test and all: recall and completeness over the clear questions, clarifications asked on clear
 * questions per 100 of them (each is wrong), clarifications on the ambiguous ones, prompt tokens
 * mean and p95, tables sent, ms per question.
 */
import { fixedMasking } from '../../../actors/lib/masking/service.js';
import { context, createCatalogCache, createValueIndex, createValueSource, type CatalogDeps } from '../../../actors/catalog/handle.js';
import { values } from '../../../actors/executor/value-index.js';
import { createEngine } from '../../../actors/executor/engines/index.js';
import type { ExecutorDeps } from '../../../actors/executor/handle.js';
import { profile } from '../../../actors/executor/profile.js';
import type { Config } from '../../../config/schema.js';
import { createLogger } from '../../../runtime/log.js';
import type { SqlIntrospectReply } from '../../../protocol/schemas/sql.js';
import { SchemaContext } from '../../../protocol/subjects.js';
import { testConfig } from '../../../test/helpers/config.js';
import { ADMIN_URL } from '../../../test/helpers/pg.js';
import { benchConfig, mean, percentile, promptTokensFor } from '../evaluate.js';
import { ensureRealDatabase, realPlan, type EnsuredDatabase, type RealPlan } from './load.js';
import { QUESTIONS, type QuestionClass, type RealQuestion } from './questions.js';

export interface RealQuestionResult {
  id: string;
  split: 'dev' | 'test';
  source: string;
  class: QuestionClass;
  clear: boolean;
  question: string;
  /** the minimal set measured: of the question's sets, the one with fewest tables missing */
  answer_tables: string[];
  sent: string[];
  missing: string[];
  /** a clarifying question came back */
  clarified: boolean;
  clarification?: { word: string; choices: string[] };
  tokens: number;
  ms: number;
}

export interface RealSummary {
  /** clear questions */
  questions: number;
  /** 0..1, over the clear questions' answer tables */
  recall: number;
  complete: number;
  /** clarifying questions asked on clear questions */
  wrong_clarifications: number;
  wrong_clarifications_per_100: number;
  ambiguous: number;
  ambiguous_clarified: number;
  tokens_mean: number;
  tokens_p95: number;
  tables_sent_mean: number;
  ms_mean: number;
  ms_p95: number;
}

export interface RealRun {
  size: number;
  relations: number;
  foreign_keys: boolean;
  database: EnsuredDatabase;
  introspect_ms: number;
  /** foreign keys in the catalog the questions ran on */
  catalog_foreign_keys: number;
  results: RealQuestionResult[];
  summary: { dev: RealSummary; test: RealSummary; all: RealSummary };
}

export interface RealRunOptions {
  /** 0: the sources alone; else relations in all */
  size: number;
  /** false: the declared foreign keys are taken out of the introspection */
  foreignKeys?: boolean;
  questions?: readonly RealQuestion[];
  /** only the questions of this split */
  split?: 'dev' | 'test';
  adminUrl?: string;
  /** the catalog actor's configuration (the shipped one by default) */
  config?: Config;
  plan?: RealPlan;
  /** the model call of catalog.linking: model (candidates.ts: a recorder that never picks) */
  complete?: CatalogDeps['complete'];
}

/** Of a question's minimal sets, the one the selection covers best: the largest share present, then fewest missing, then the first. */
export function bestSet(q: Pick<RealQuestion, 'tables' | 'alternatives'>, sent: ReadonlySet<string>): { tables: string[]; missing: string[] } {
  let best: { tables: string[]; missing: string[]; share: number } | undefined;
  for (const set of [q.tables, ...(q.alternatives ?? [])]) {
    const missing = set.filter((t) => !sent.has(t));
    const share = (set.length - missing.length) / set.length;
    if (!best || share > best.share || (share === best.share && missing.length < best.missing.length)) best = { tables: set, missing, share };
  }
  return { tables: best!.tables, missing: best!.missing };
}

/** A table as an introspection without declared foreign keys shows it (most warehouses). */
function withoutForeignKeys<T extends object>(table: T): T {
  const copy: T & { foreign_keys?: unknown } = { ...table };
  delete copy.foreign_keys;
  return copy;
}

export function summarize(results: readonly RealQuestionResult[]): RealSummary {
  const clear = results.filter((r) => r.clear);
  const ambiguous = results.filter((r) => !r.clear);
  const answers = clear.reduce((n, r) => n + r.answer_tables.length, 0);
  const found = clear.reduce((n, r) => n + r.answer_tables.length - r.missing.length, 0);
  const wrong = clear.filter((r) => r.clarified).length;
  return {
    questions: clear.length,
    recall: answers ? found / answers : NaN,
    complete: clear.length ? clear.filter((r) => !r.missing.length).length / clear.length : NaN,
    wrong_clarifications: wrong,
    wrong_clarifications_per_100: clear.length ? (100 * wrong) / clear.length : NaN,
    ambiguous: ambiguous.length,
    ambiguous_clarified: ambiguous.filter((r) => r.clarified).length,
    tokens_mean: mean(clear.map((r) => r.tokens)),
    tokens_p95: percentile(clear.map((r) => r.tokens), 0.95),
    tables_sent_mean: mean(clear.map((r) => r.sent.length)),
    ms_mean: mean(results.map((r) => r.ms)),
    ms_p95: percentile(results.map((r) => r.ms), 0.95),
  };
}

/** The database's catalog as the executor's engine reads it, and the engine for sql.profile. */
async function openEngine(db: EnsuredDatabase, adminUrl: string) {
  const u = new URL(adminUrl);
  const shipped = benchConfig();
  const config = testConfig({
    natsUrl: 'nats://127.0.0.1:4222',
    db: { host: u.hostname, port: Number(u.port || 5432), name: db.name, user: decodeURIComponent(u.username || 'postgres') },
    // the shipped pool, and a query timeout above the test helper's 10 s: the introspection of
    // 10,000 relations takes 6–10 s on a busy machine and was cancelled (the shipped default is 300 s)
    extra: {
      database: { postgresql: { min_connections: shipped.database.postgresql.min_connections, max_connections: shipped.database.postgresql.max_connections } },
      query: { timeout: Math.max(shipped.query.timeout, 120) },
    },
  });
  const log = createLogger({ svc: 'bench', level: 'silent' });
  const engine = await createEngine(config, log);
  return { engine, config, log };
}

/** Run the questions at one size; the database is created first when it is not there yet. */
export async function runRealLinking(opts: RealRunOptions): Promise<RealRun> {
  const adminUrl = opts.adminUrl ?? ADMIN_URL;
  const plan = opts.plan ?? realPlan(opts.size);
  const database = await ensureRealDatabase(opts.size, adminUrl, plan);
  const foreignKeys = opts.foreignKeys !== false;
  const catalogConfig = opts.config ?? benchConfig();
  const { engine, config: engineConfig, log } = await openEngine(database, adminUrl);
  try {
    await engine.ping(10_000);
    const t0 = performance.now();
    const schema = await engine.introspect();
    const introspectMs = performance.now() - t0;
    const tables = foreignKeys ? schema.tables : schema.tables.map((t) => withoutForeignKeys(t));
    const introspection: SqlIntrospectReply = { dialect: engine.dialect, provider: engine.provider, default_schema: schema.default_schema, tables };
    const executor: ExecutorDeps = { config: engineConfig, engine, log, masking: fixedMasking([], log), bus: { publish: async () => undefined } as unknown as ExecutorDeps['bus'] };
    const deps: CatalogDeps = {
      config: catalogConfig,
      catalog: createCatalogCache({ load: async () => introspection, ttlSeconds: 3600 }),
      // as busValues keeps them: max(60, catalog.cache_ttl_seconds)
      values: createValueSource((input, ctx) => profile(input, executor, ctx), Math.max(60, catalogConfig.catalog.cache_ttl_seconds)),
      // as busValueIndex keeps it; built once before the questions (a running service builds it on the first question and keeps it)
      valueIndex: createValueIndex((ctx) => values({}, executor, ctx), Math.max(60, catalogConfig.catalog.cache_ttl_seconds)),
      ...(opts.complete ? { complete: opts.complete } : {}),
      log,
    };
    const warmCatalog = await deps.catalog.get({ requestId: 'bench-real-warm' });
    for (let i = 0; i < 80 && !(await deps.valueIndex?.get(warmCatalog, { requestId: 'bench-real-warm' })); i += 1);
    const results: RealQuestionResult[] = [];
    for (const q of (opts.questions ?? QUESTIONS).filter((x) => !opts.split || x.split === opts.split)) {
      const started = performance.now();
      const reply = await context({ question: q.question }, deps, { requestId: `bench-real-${q.id}`, deadline: Date.now() + SchemaContext.timeoutMs });
      const ms = performance.now() - started;
      const sent = [...new Set(reply.tables)];
      const best = bestSet(q, new Set(sent));
      const r: RealQuestionResult = {
        id: q.id, split: q.split, source: q.source, class: q.class, clear: q.clear, question: q.question,
        answer_tables: best.tables, sent, missing: best.missing, clarified: reply.ambiguity !== undefined,
        tokens: promptTokensFor(reply.dialect, q.question, reply.schema_text, reply.business_context, catalogConfig), ms,
      };
      if (reply.ambiguity) r.clarification = { word: reply.ambiguity.word, choices: reply.ambiguity.choices.map((c) => c.label) };
      results.push(r);
    }
    return {
      size: opts.size,
      relations: tables.length,
      foreign_keys: foreignKeys,
      database,
      introspect_ms: introspectMs,
      catalog_foreign_keys: tables.reduce((n, t) => n + (t.foreign_keys?.length ?? 0), 0),
      results,
      summary: {
        dev: summarize(results.filter((r) => r.split === 'dev')),
        test: summarize(results.filter((r) => r.split === 'test')),
        all: summarize(results),
      },
    };
  } finally {
    await engine.close();
  }
}

/**
 * The parsers section of `npm run bench`: what running the SQL parsers in worker threads costs
 * per question (issue 24, class E; actors/lib/sql/parsers/pool.ts).
 *
 *   guard    the accepted queries of the four guard corpora (test/fixtures/guard-cases*): the
 *            guard in this thread (guard/index.ts guardSql), through its worker (the guard's
 *            worker pool: clone there, check, clone back), and as the executor checks
 *            (guard/isolated.ts guardIsolated: on the event loop what guard/inline.ts proves
 *            small, in the worker the rest), µs per call
 *   lineage  the same queries read for masking: parseForLineage in this thread, and through the
 *            lineage worker (lib/masking/isolated.ts lineageQuery)
 *   replace  a worker replaced after its parser broke: from the refusal to the next answer, ms
 *            (the guard's worker with a 1 MB stack, on which a 22 KB `1+1+…` overflows)
 *   cpu      the CPU the hop costs, not its latency: the bench query's guard 4,000 times with 32
 *            in flight (as the pipeline at 32 clients), in this thread, through the worker and
 *            through guardIsolated, this process's CPU (every thread) per call; the three
 *            alternated, three rounds
 *
 * Calls are sequential (the added latency of one question) except in `cpu`; prints a table,
 * never fails on a time.
 *   node --import tsx bench/parsers.ts
 *   BENCH_ONLY=parsers npm run bench
 */
import type { Dialect } from '../protocol/schemas/common.js';
import { guardSql, prepareGuard } from '../actors/executor/guard/index.js';
import { guardIsolated, startGuardWorkers, stopGuardWorkers } from '../actors/executor/guard/isolated.js';
import { ParserPool } from '../actors/lib/sql/parsers/pool.js';
import { parseForLineage, prepareParsers } from '../actors/lib/masking/dialects.js';
import { lineageQuery, startLineageWorkers, stopLineageWorkers } from '../actors/lib/masking/isolated.js';
import { ACCEPTED_POSTGRESQL, LIMITS } from '../test/fixtures/guard-cases.js';
import { ACCEPTED_MYSQL } from '../test/fixtures/guard-cases-mysql.js';
import { ACCEPTED_BIGQUERY } from '../test/fixtures/guard-cases-bigquery.js';
import { ACCEPTED_TRINO } from '../test/fixtures/guard-cases-trino.js';

const ROUNDS = Number(process.env.BENCH_PARSERS_ROUNDS ?? 5);

interface Stats {
  n: number;
  mean: number;
  p50: number;
  p99: number;
}

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

/** µs per call of `fn` over `sqls`, ROUNDS each after one warm call. */
async function time(sqls: readonly string[], fn: (sql: string) => unknown): Promise<Stats> {
  for (const sql of sqls) await fn(sql);
  const times: number[] = [];
  for (const sql of sqls) {
    const t0 = performance.now();
    for (let r = 0; r < ROUNDS; r++) await fn(sql);
    times.push(((performance.now() - t0) / ROUNDS) * 1000);
  }
  return { n: sqls.length, mean: times.reduce((a, b) => a + b, 0) / times.length, p50: quantile(times, 0.5), p99: quantile(times, 0.99) };
}

const quiet = (fn: () => unknown): unknown => {
  try {
    return fn();
  } catch {
    return undefined; // a refusal costs what it costs
  }
};

/** The guard's worker as guardIsolated uses it, for SQL that guardIsolated itself would check on the event loop. */
function guardPool(): ParserPool {
  return new ParserPool({
    name: 'bench-guard',
    source: new URL('../actors/executor/guard/worker.ts', import.meta.url),
    entry: new URL('../actors/executor/guard/worker-entry.mjs', import.meta.url),
    size: 2,
  });
}

async function replacement(): Promise<Stats> {
  const pool = new ParserPool({
    name: 'bench',
    source: new URL('../actors/executor/guard/worker.ts', import.meta.url),
    entry: new URL('../actors/executor/guard/worker-entry.mjs', import.meta.url),
    size: 1,
    stackMb: 1,
  });
  await pool.start();
  const overflow = `SELECT 1${'+1'.repeat(11_000)}`;
  const times: number[] = [];
  for (let i = 0; i < 10; i++) {
    await pool.run('guard', { sql: overflow, dialect: 'postgresql', limits: LIMITS }).catch(() => undefined);
    const t0 = performance.now();
    await pool.run('guard', { sql: 'SELECT 1', dialect: 'postgresql', limits: LIMITS });
    times.push(performance.now() - t0);
  }
  await pool.close();
  return { n: times.length, mean: times.reduce((a, b) => a + b, 0) / times.length, p50: quantile(times, 0.5), p99: quantile(times, 0.99) };
}

/** µs of this process's CPU (all threads: the workers' too) per call of `fn`, `inFlight` at a time. */
async function cpuPerCall(fn: () => unknown, calls: number, inFlight: number): Promise<number> {
  let started = 0;
  const before = process.cpuUsage();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (started++ < calls) {
        await fn();
        await new Promise((r) => setImmediate(r)); // another turn, as a question's next step would be
      }
    }),
  );
  const used = process.cpuUsage(before);
  return (used.user + used.system) / calls;
}

/** The bench pipeline's own statement (bench/run.ts SQL). */
const BENCH_SQL = 'SELECT id, name, category, price FROM items WHERE id BETWEEN 500 AND 519 ORDER BY id';

export async function parsersSection(): Promise<void> {
  await prepareGuard('postgresql');
  await prepareGuard('mysql');
  await prepareParsers();
  await startGuardWorkers();
  await startLineageWorkers();
  const workers = guardPool();
  await workers.start();
  const inWorker = (sql: string, dialect: Dialect): Promise<unknown> => workers.run('guard', { sql, dialect, limits: LIMITS });
  const corpora: Array<[Dialect, readonly string[]]> = [
    ['postgresql', ACCEPTED_POSTGRESQL.map((c) => c.sql)],
    ['mysql', ACCEPTED_MYSQL.map((c) => c.sql)],
    ['bigquery', ACCEPTED_BIGQUERY.map((c) => c.sql)],
    ['trino', ACCEPTED_TRINO.map((c) => c.sql)],
  ];
  const row = (what: string, s: Stats): string => `| ${what} | ${s.n} | ${s.mean.toFixed(0)} | ${s.p50.toFixed(0)} | ${s.p99.toFixed(0)} |`;
  console.log('\n## SQL parsers: in this thread and in a worker (µs per call, sequential)\n');
  console.log('| what | n | mean | p50 | p99 |');
  console.log('|---|---|---|---|---|');
  for (const [dialect, sqls] of corpora) {
    const inProcess = await time(sqls, (sql) => quiet(() => guardSql(sql, dialect, LIMITS)));
    const isolated = await time(sqls, (sql) => inWorker(sql, dialect).catch(() => undefined));
    const executor = await time(sqls, (sql) => guardIsolated(sql, dialect, LIMITS).catch(() => undefined));
    console.log(row(`guard, ${dialect}, in process`, inProcess));
    console.log(row(`guard, ${dialect}, in its worker`, isolated));
    console.log(row(`guard, ${dialect}, as the executor checks (guardIsolated)`, executor));
    console.log(`| guard, ${dialect}: added by the worker | | ${(isolated.mean - inProcess.mean).toFixed(0)} | ${(isolated.p50 - inProcess.p50).toFixed(0)} | |`);
  }
  for (const [dialect, sqls] of corpora) {
    const inProcess = await time(sqls, (sql) => quiet(() => parseForLineage(sql, dialect)));
    const isolated = await time(sqls, (sql) => lineageQuery(sql, dialect));
    console.log(row(`lineage, ${dialect}, in process`, inProcess));
    console.log(row(`lineage, ${dialect}, in its worker`, isolated));
    console.log(`| lineage, ${dialect}: added by the worker | | ${(isolated.mean - inProcess.mean).toFixed(0)} | ${(isolated.p50 - inProcess.p50).toFixed(0)} | |`);
  }
  const inProcess: number[] = [];
  const isolated: number[] = [];
  const executor: number[] = [];
  await cpuPerCall(() => inWorker(BENCH_SQL, 'postgresql'), 1_000, 32); // warm
  await cpuPerCall(() => guardIsolated(BENCH_SQL, 'postgresql', LIMITS), 1_000, 32);
  for (let round = 0; round < 3; round++) {
    inProcess.push(await cpuPerCall(() => guardSql(BENCH_SQL, 'postgresql', LIMITS), 4_000, 32));
    isolated.push(await cpuPerCall(() => inWorker(BENCH_SQL, 'postgresql'), 4_000, 32));
    executor.push(await cpuPerCall(() => guardIsolated(BENCH_SQL, 'postgresql', LIMITS), 4_000, 32));
  }
  const med = (xs: number[]): number => quantile(xs, 0.5);
  const rounds = inProcess.map((x, i) => `${x.toFixed(0)}/${isolated[i]!.toFixed(0)}/${executor[i]!.toFixed(0)}`).join(', ');
  console.log(`| guard, the bench query, 32 in flight: CPU µs per call (all threads; rounds in process/worker/guardIsolated ${rounds}) | in process ${med(inProcess).toFixed(0)} | in its worker ${med(isolated).toFixed(0)} | guardIsolated ${med(executor).toFixed(0)} | |`);
  await workers.close();
  const r = await replacement();
  console.log(`| a worker replaced after its parser broke, to the next answer (ms) | ${r.n} | ${r.mean.toFixed(0)} | ${r.p50.toFixed(0)} | ${r.p99.toFixed(0)} |`);
  await stopGuardWorkers();
  await stopLineageWorkers();
}

if (import.meta.url === `file://${process.argv[1]}`) await parsersSection();

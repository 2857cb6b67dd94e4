// test-runner: alone (a cancel must land within a second)
/**
 * Issue 24, class F, on the real PostgreSQL 15 test server: a query the database will not cancel.
 *
 * ts_headline choosing MaxFragments fragments among the matches of a document loops without
 * checking for interrupts: statement_timeout, pg_cancel_backend and pg_terminate_backend all wait
 * for the loop (the held-out test held a backend for minutes with a few MB). Here, bounded to a few
 * seconds (HEADLINE: 60,000 matches and fragments, several seconds: its parsing and the search for matches,
 * which do check for interrupts, take a fraction of that):
 * - the guard refuses it through the executor (unless database.allowed_functions lists it);
 * - pg-cancel.ts sees what became of a cancelled query: a sleep stops at the cancel (`stopped`),
 *   the loop ignores it (`still_running` while it runs, `terminated` once it ends after the
 *   terminate), each counted in cortado_db_cancel_total;
 * - the engine, past the timeout, answers DB_TIMEOUT, watches the backend and drops its connection
 *   (the backend is gone once its loop ends, never back in the pool); so does an export's cursor.
 */
import t from 'tap';
import pg from 'pg';
import { Bus } from '../../runtime/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { registry } from '../../runtime/metrics.js';
import { SqlExecute } from '../../protocol/subjects.js';
import { runCortado } from '../../cli/run.js';
import { createPostgresEngine } from '../../actors/executor/engines/postgresql.js';
import { stopBackend } from '../../actors/executor/engines/pg-cancel.js';
import { pgCursorPages } from '../../actors/executor/export-pg.js';
import { testConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';

const N = 60_000;
const HEADLINE = `SELECT length(ts_headline('simple', body, to_tsquery('simple', 'alpha'), 'MaxFragments=${N},MaxWords=2,MinWords=1')) FROM docs`;

const nats = await startNats();
const db = await createTestDb('uncancel');
await db.pool.query(`CREATE TABLE docs AS SELECT repeat('alpha beta gamma delta ', ${N}) AS body`);
const log = createLogger({ svc: 'test', level: 'silent' });
const client = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'uncancel-client', log });

t.teardown(async () => {
  await client.close();
  await db.drop();
  await nats.stop();
});

async function cancels(outcome: string): Promise<number> {
  const m = await registry.getSingleMetric('cortado_db_cancel_total')?.get();
  return m?.values.find((v) => v.labels.engine === 'postgresql' && v.labels.outcome === outcome)?.value ?? 0;
}

/** A session of its own running `sql`; its pid once the statement is active. */
async function running(sql: string): Promise<{ pid: number; done: Promise<unknown>; end: () => Promise<void> }> {
  const c = new pg.Client({ connectionString: db.url });
  c.on('error', () => undefined);
  await c.connect();
  const pid = Number((await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid);
  const done = c.query(sql).then(() => 'finished', (e: Error) => e.message);
  for (let i = 0; i < 50; i++) {
    const r = await db.pool.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND state = 'active'", [pid]);
    if (r.rows.length) break;
    await new Promise((res) => setTimeout(res, 20));
  }
  return { pid, done, end: () => c.end().catch(() => undefined) };
}

async function gone(pid: number, withinMs: number): Promise<boolean> {
  const until = Date.now() + withinMs;
  for (;;) {
    const r = await db.pool.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND state <> 'idle'", [pid]);
    if (r.rows.length === 0) return true;
    if (Date.now() > until) return false;
    await new Promise((res) => setTimeout(res, 100));
  }
}

const connect = () => new pg.Client({ connectionString: db.url });

/** Backends of this database still running HEADLINE, looked at until none does or `withinMs` passes. */
async function loopsRunning(withinMs: number): Promise<number> {
  const until = Date.now() + withinMs;
  for (;;) {
    const r = await db.pool.query(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%MaxFragments=60000%' AND state = 'active' AND pid <> pg_backend_pid()",
    );
    const n = (r.rows[0] as { n: number }).n;
    if (n === 0 || Date.now() > until) return n;
    await new Promise((res) => setTimeout(res, 100));
  }
}

t.test('the guard refuses the unbounded call through the executor, unless allowed_functions lists it', async (t) => {
  for (const allowed of [[], ['ts_headline']]) {
    const config = testConfig({
      natsUrl: nats.url,
      db: { host: db.host, port: db.port, name: db.name, user: db.user },
      extra: { database: { allowed_functions: allowed }, query: { timeout: 1 } },
    });
    const cortado = await runCortado({ config, roles: { edge: false, actors: ['executor', 'settings'] }, log, name: `uncancel-${allowed.length}` });
    try {
      const started = Date.now();
      const err = await client.request(SqlExecute, { sql: HEADLINE }, { requestId: `uncancel-${allowed.length}` }).then(() => undefined, (e: unknown) => e as CortadoError);
      if (allowed.length === 0) {
        t.match(err?.details, { kind: 'function_not_allowed', function: 'ts_headline', reason: 'uncancellable' }, 'refused before it runs');
        t.match(err?.message, /does not stop when a query is cancelled/);
        t.ok(Date.now() - started < 1_000, 'at once');
      } else {
        t.equal(err?.code, 'DB_TIMEOUT', 'listed: it runs, and the caller has DB_TIMEOUT at the timeout (plus the grace)');
        t.ok(Date.now() - started < 4_500, `in ${Date.now() - started} ms, not when the loop ends`);
      }
      const bounded = HEADLINE.replace(`MaxFragments=${N}`, 'MaxFragments=3');
      const reply = await client.request(SqlExecute, { sql: bounded }, { requestId: `uncancel-b-${allowed.length}` });
      t.equal(reply.row_count, 1, 'MaxFragments within the bound runs');
    } finally {
      await cortado.stop(2_000);
    }
  }
  // the allowed run's loop ends before the next test (it holds a backend until then), and the
  // executor's check of it (in the background, after the caller's answer) has counted its outcome
  t.equal(await loopsRunning(30_000), 0);
  await new Promise((res) => setTimeout(res, 1_000));
});

t.test('a query that stops at the cancel: stopped', async (t) => {
  const before = await cancels('stopped');
  const q = await running('SELECT pg_sleep(30)');
  try {
    const outcome = await stopBackend(q.pid, { connect, log, cancelWaitMs: 2_000, terminateWaitMs: 2_000 });
    t.equal(outcome, 'stopped');
    t.match(await q.done, /canceling statement/);
    t.equal(await cancels('stopped'), before + 1, 'counted');
  } finally {
    await q.end();
  }
});

t.test('a query that ignores cancel and terminate: still_running while its loop runs, terminated once it ends', async (t) => {
  const before = { still: await cancels('still_running'), terminated: await cancels('terminated') };
  // the document's parsing and the search for matches do check for interrupts: the cancel
  // comes once the loop over the fragments has begun
  const looping = await running(HEADLINE);
  await new Promise((res) => setTimeout(res, 2_000));
  let cancelled = false;
  const outcome = await stopBackend(looping.pid, { connect, log, cancelWaitMs: 200, terminateWaitMs: 200, onCancelled: () => (cancelled = true) });
  t.ok(cancelled, 'the caller was told once the cancel was sent');
  t.equal(outcome, 'still_running', 'cancel and terminate are both ignored by the loop');
  t.equal(await cancels('still_running'), before.still + 1, 'counted');

  const late = await stopBackend(looping.pid, { connect, log, cancelWaitMs: 200, terminateWaitMs: 60_000 });
  t.equal(late, 'terminated', 'given the time, the terminate ends it once its loop does');
  t.equal(await cancels('terminated'), before.terminated + 1, 'counted');
  t.ok(await gone(looping.pid, 5_000), 'the backend is gone');
  await looping.end();
});

t.test('the engine past its timeout: DB_TIMEOUT at once, the backend watched and its connection dropped', async (t) => {
  const engine = await createPostgresEngine({
    host: db.host, port: db.port, database: db.name, user: db.user, password: '', schema: 'public',
    minConnections: 1, maxConnections: 2, ssl: false, statementTimeoutMs: 300, log, cancelWaitMs: 300,
  });
  t.teardown(() => engine.close());
  const before = { stopped: await cancels('stopped'), still: await cancels('still_running'), terminated: await cancels('terminated') };

  // a query that stops at its statement_timeout: the server ends it, counted as stopped
  const sleep = await engine.execute('SELECT pg_sleep(5)', { timeoutMs: 300, maxRows: 1 }).then(() => undefined, (e: unknown) => e as CortadoError);
  t.equal(sleep?.code, 'DB_TIMEOUT');
  t.equal(await cancels('stopped'), before.stopped + 1, 'statement_timeout ended it: stopped');

  // the timeout and its grace (2 s) leave the document's parsing behind: the cancel finds the loop
  const started = Date.now();
  const err = await engine.execute(HEADLINE, { timeoutMs: 1_000, maxRows: 1 }).then(() => undefined, (e: unknown) => e as CortadoError);
  t.equal(err?.code, 'DB_TIMEOUT');
  t.ok(Date.now() - started < 4_500, `the caller waits for the cancel, not the loop (${Date.now() - started} ms)`);
  const pids = await db.pool.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%MaxFragments=60000%' AND state = 'active' AND pid <> pg_backend_pid()");
  t.equal(pids.rows.length, 1, 'the backend still computes after the caller had its answer');
  const pid = pids.rows[0]!.pid;
  // the check's outcome, within its windows (2 × 300 ms and the polls)
  for (let i = 0; i < 50 && (await cancels('still_running')) + (await cancels('terminated')) === before.still + before.terminated; i++) {
    await new Promise((res) => setTimeout(res, 100));
  }
  t.equal((await cancels('still_running')) - before.still + (await cancels('terminated')) - before.terminated, 1, 'its outcome is counted: not stopped');
  t.ok(await gone(pid, 30_000), 'once its loop ends, its backend is gone: the connection was dropped, not pooled');
  const again = await engine.execute('SELECT 1 AS one', { timeoutMs: 1_000, maxRows: 1 });
  t.same(again.rows, [[1]], 'the engine goes on with another connection');
});

t.test('an export past its timeout (the server\'s own cursor): DB_TIMEOUT, the backend watched, the connection closed', async (t) => {
  const config = testConfig({ natsUrl: nats.url, db: { host: db.host, port: db.port, name: db.name, user: db.user } });
  const before = { still: await cancels('still_running'), terminated: await cancels('terminated') };
  const started = Date.now();
  let err: CortadoError | undefined;
  try {
    for await (const page of pgCursorPages(config, HEADLINE, { timeoutMs: 1_000, pageRows: 10, log })) t.fail(`a page came back (${page.rows.length} rows)`);
  } catch (e) {
    err = e as CortadoError;
  }
  t.equal(err?.code, 'DB_TIMEOUT', 'the reader has DB_TIMEOUT');
  t.ok(Date.now() - started < 4_500, `at the timeout and its grace, not when the loop ends (${Date.now() - started} ms)`);
  for (let i = 0; i < 50 && (await cancels('still_running')) + (await cancels('terminated')) === before.still + before.terminated; i++) {
    await new Promise((res) => setTimeout(res, 100));
  }
  t.equal((await cancels('still_running')) - before.still + (await cancels('terminated')) - before.terminated, 1, 'its outcome is counted: not stopped');
  t.equal(await loopsRunning(60_000), 0, 'the backend ends with its loop');
});

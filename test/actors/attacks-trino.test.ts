/**
 * The Trino attack corpus (test/fixtures/attacks-trino.ts) through the executor's own
 * execute() against the stand-in coordinator (test/helpers/fake-trino.ts, answering from a
 * real PostgreSQL) with the real trino-client: every attack is refused as SQL_REJECTED with
 * its kind, the coordinator receives none of them (it records every POST /v1/statement), each
 * refusal is a query.rejected event, and the database behind it is as it was. The other side
 * of the ledger: every accepted case marked `standIn` runs unchanged through the same path.
 */
import { fixedMasking } from '../../actors/lib/masking/service.js';
import t from 'tap';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { QueryRejectedEvt } from '../../protocol/subjects.js';
import { execute, type ExecutorDeps } from '../../actors/executor/handle.js';
import { createTrinoFromConfig } from '../../actors/executor/engines/trino.js';
import { guardSql } from '../../actors/executor/guard/index.js';
import { GUARD_SCHEMA_SQL, ORDERS_ROWS } from '../fixtures/guard-cases.js';
import { ACCEPTED_TRINO } from '../fixtures/guard-cases-trino.js';
import { ATTACKS_TRINO, AttackClass, attacksByClass } from '../fixtures/attacks-trino.js';
import { testConfig } from '../helpers/config.js';
import { startFakeTrino } from '../helpers/fake-trino.js';
import { createTestDb } from '../helpers/pg.js';

const db = await createTestDb('attacks_trino');
await db.pool.query(GUARD_SCHEMA_SQL);
const fake = await startFakeTrino({ databaseUrl: db.url, pageSize: 50, catalog: 'postgresql' });
const log = createLogger({ svc: 'test', level: 'silent' });
const config = testConfig({
  natsUrl: 'nats://127.0.0.1:1', // the bus is not used: execute() is called with its deps
  extra: {
    database: { provider: 'trino', trino: { host: fake.host, port: fake.port, http_scheme: 'http', user: 'cortado', catalog: 'postgresql', schema: 'public' } },
    query: { default_limit: 10, max_limit: 20, timeout: 10 },
  },
});
const engine = await createTrinoFromConfig(config, log);
// the engine pings the coordinator once when it is made: let that land before counting statements
for (const until = Date.now() + 5_000; !fake.statements.some((s) => s.sql === 'SELECT 1') && Date.now() < until;) {
  await new Promise((r) => setTimeout(r, 10));
}
const published: Array<{ subject: string; data: { code: string; sql: string } }> = [];
const deps: ExecutorDeps = {
  config,
  engine,
  log,
  masking: fixedMasking([], log),
  bus: { publish: ((def: { subject: string }, data: { code: string; sql: string }) => published.push({ subject: def.subject, data })) as ExecutorDeps['bus']['publish'] },
};

t.teardown(async () => {
  await engine.close();
  await fake.close();
  await db.drop();
});

let n = 0;
const ctx = () => ({ requestId: `attack-${++n}`, user: 'mallory' });

/** What the database behind the stand-in holds that an attack would change. */
async function state(): Promise<unknown> {
  const r = await db.pool.query(`
    SELECT (SELECT count(*) FROM orders)::int AS orders,
           (SELECT count(*) FROM orders WHERE note = 'sentinel')::int AS sentinel,
           (SELECT sum(amount)::text FROM orders) AS total,
           (SELECT string_agg(DISTINCT status, ',' ORDER BY status) FROM orders) AS statuses,
           (SELECT count(*) FROM customers)::int AS customers,
           (SELECT string_agg(table_schema || '.' || table_name, ',' ORDER BY 1) FROM information_schema.tables
             WHERE table_schema NOT IN ('pg_catalog', 'information_schema')) AS tables`);
  return r.rows[0];
}

t.test('the corpus: at least 50 attacks, every class present', async (t) => {
  const counts = attacksByClass();
  t.ok(ATTACKS_TRINO.length >= 50, `${ATTACKS_TRINO.length} attacks`);
  for (const c of Object.values(AttackClass)) t.ok(counts[c] > 0, `${c}: ${counts[c]}`);
  t.equal(new Set(ATTACKS_TRINO.map((a) => a.name)).size, ATTACKS_TRINO.length, 'names are unique');
});

t.test('every attack is refused before the coordinator, with its kind and an event', async (t) => {
  const before = await state();
  t.equal((before as { orders: number }).orders, ORDERS_ROWS);
  const sent = fake.statements.length;
  const events = published.length;
  for (const a of ATTACKS_TRINO) {
    const err = await execute({ sql: a.sql }, deps, ctx()).then(() => undefined, (e: unknown) => e);
    t.ok(err instanceof CortadoError, `${a.class} / ${a.name}: refused`);
    if (!(err instanceof CortadoError)) continue;
    t.equal(err.code, 'SQL_REJECTED', `${a.name}: SQL_REJECTED (${err.message})`);
    t.equal(err.details?.kind, a.kind, `${a.name}: kind ${a.kind}`);
    t.ok(err.message.length > 15, `${a.name}: says why`);
  }
  t.same(fake.statements.slice(sent).map((s) => s.sql), [], 'the coordinator received none of them');
  const rejected = published.slice(events).filter((e) => e.subject === QueryRejectedEvt.subject);
  t.equal(rejected.length, ATTACKS_TRINO.length, 'one query.rejected event per attack');
  t.ok(rejected.every((e) => e.data.code === 'SQL_REJECTED'));
  t.same(await state(), before, 'the database behind the coordinator is unchanged');
});

t.test('accepted analytics that PostgreSQL also speaks run through the same path', async (t) => {
  const cases = ACCEPTED_TRINO.filter((c) => c.standIn);
  t.ok(cases.length >= 60, `${cases.length} cases run on the stand-in`);
  const limits = { defaultLimit: 10, maxLimit: 20 };
  for (const c of cases) {
    const sent = fake.statements.length;
    const r = await execute({ sql: c.sql }, deps, ctx()).then((x) => x, (e: unknown) => e as CortadoError);
    if (r instanceof CortadoError) {
      t.fail(`${c.name}: ${r.code} ${r.message}`);
      continue;
    }
    t.equal(fake.statements.length, sent + 1, `${c.name}: one statement reached the coordinator`);
    t.equal(fake.statements.at(-1)?.sql, guardSql(c.sql, 'trino', limits).runSql, `${c.name}: the guarded SQL, as is`);
    t.ok(r.row_count >= 1 && r.columns.length >= 1, `${c.name}: ${r.row_count} rows of ${r.columns.length} columns`);
  }
  t.equal((await state() as { orders: number }).orders, ORDERS_ROWS, 'and they changed nothing');
});

/**
 * Both sides of the BigQuery guard's ledger, through the executor over a real NATS, the real
 * @google-cloud/bigquery SDK and the BigQuery stand-in (a REST server answering from a real
 * PostgreSQL):
 * - every attack of the corpus is refused as SQL_REJECTED with its kind, and nothing of it
 *   reached the API (no jobs or queries call) nor changed the database;
 * - every accepted analytical query the stand-in can run as written runs, with rows;
 * - a user function listed in database.allowed_functions runs, one that is not is refused.
 */
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { SqlExecute } from '../../protocol/subjects.js';
import { runCortado } from '../../cli/run.js';
import { ATTACKS_BIGQUERY, AttackClass } from '../fixtures/attacks-bigquery.js';
import { ACCEPTED_BIGQUERY, STANDIN_SCHEMA_SQL } from '../fixtures/guard-cases-bigquery.js';
import { testConfig } from '../helpers/config.js';
import { startFakeBigQuery } from '../helpers/fake-bigquery.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';

// keeps google-auth-library from probing for a GCE metadata server (test process only)
process.env.METADATA_SERVER_DETECTION = 'none';

const PROJECT = 'cortado-test';

const nats = await startNats();
const db = await createTestDb('attacks_bq');
await db.pool.query(STANDIN_SCHEMA_SQL);
const fake = await startFakeBigQuery({ databaseUrl: db.url, projectId: PROJECT });
const log = createLogger({ svc: 'test', level: 'silent' });
const config = testConfig({
  natsUrl: nats.url,
  extra: {
    database: {
      provider: 'bigquery',
      allowed_functions: ['shop.add_tax'],
      bigquery: { project_id: PROJECT, dataset: 'shop', location: 'US', credentials_json: JSON.stringify(fake.serviceAccount()), base_url: fake.url, timeout: 10 },
    },
    query: { default_limit: 100, max_limit: 200, timeout: 10 },
  },
});
const running = await runCortado({ config, roles: { edge: false, actors: ['executor', 'settings'] }, log, name: 'attacks-bq-test' });
const client = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'attacks-bq-client', log });

t.teardown(async () => {
  await client.close();
  await running.stop(2_000);
  await fake.close();
  await db.drop();
  await nats.stop();
});

let n = 0;
const ctx = () => ({ requestId: `attacks-bq-${++n}` });

/** The calls since `from` that would run or plan something: a query or a job. */
function reachedBigQuery(from: number): string[] {
  return fake.calls.slice(from).filter((c) => /^POST \/bigquery\/v2\/projects\/[^/]+\/(queries|jobs)/.test(c));
}

async function outcome(sql: string): Promise<CortadoError | Awaited<ReturnType<typeof run>>> {
  return run(sql).catch((err: unknown) => {
    if (err instanceof CortadoError) return err;
    throw err;
  });
}
function run(sql: string) {
  return client.request(SqlExecute, { sql }, ctx());
}

async function fingerprint(): Promise<string> {
  const r = await db.pool.query(`SELECT
    (SELECT md5(string_agg(o::text, ',' ORDER BY id)) FROM shop.orders o) AS orders,
    (SELECT md5(string_agg(c::text, ',' ORDER BY id)) FROM shop.customers c) AS customers,
    (SELECT string_agg(schemaname || '.' || tablename, ',' ORDER BY 1) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')) AS tables,
    (SELECT count(*) FROM pg_proc WHERE pronamespace = 'shop'::regnamespace) AS functions`);
  return JSON.stringify(r.rows[0]);
}

t.test('every attack is refused, and nothing of it reaches BigQuery', async (t) => {
  const byClass = new Map<string, number>();
  for (const a of ATTACKS_BIGQUERY) byClass.set(a.class, (byClass.get(a.class) ?? 0) + 1);
  t.ok(ATTACKS_BIGQUERY.length >= 50, `${ATTACKS_BIGQUERY.length} attacks: ${[...byClass].map(([c, k]) => `${c} ${k}`).join(', ')}`);
  t.same([...byClass.keys()].sort(), Object.values(AttackClass).sort(), 'every class has attacks');

  const before = await fingerprint();
  const allCalls = fake.calls.length;
  for (const a of ATTACKS_BIGQUERY) {
    const from = fake.calls.length;
    const r = await outcome(a.sql);
    const err = r instanceof CortadoError ? r : undefined;
    if (a.contract && err?.code === a.contract) {
      t.pass(`${a.class} / ${a.name}: ${a.contract}, refused by the request's contract before the guard`);
    } else {
      t.equal(err?.code, 'SQL_REJECTED', `${a.class} / ${a.name}: SQL_REJECTED${err ? '' : ' (it ran!)'}`);
      t.equal(err?.details?.kind, a.kind, `${a.name}: kind ${a.kind} (${err?.message})`);
      if (a.says) t.match(err?.message.toLowerCase(), a.says.toLowerCase(), `${a.name}: the reason says "${a.says}"`);
    }
    t.same(reachedBigQuery(from), [], `${a.name}: no query or job reached BigQuery`);
  }
  t.same(reachedBigQuery(allCalls), [], 'not one query or job for the whole corpus');
  t.equal(await fingerprint(), before, 'the database is unchanged');
});

t.test('accepted analytics the stand-in understands run through the executor', async (t) => {
  const cases = ACCEPTED_BIGQUERY.filter((c) => c.standIn);
  t.ok(cases.length >= 60, `${cases.length} of ${ACCEPTED_BIGQUERY.length} accepted queries run on the stand-in`);
  for (const c of cases) {
    const from = fake.calls.length;
    const r = await outcome(c.sql);
    if (r instanceof CortadoError) {
      t.fail(`${c.name}: ${r.code} ${r.message}`);
      continue;
    }
    t.ok(r.row_count > 0, `${c.name}: ${r.row_count} rows`);
    t.ok(reachedBigQuery(from).some((x) => x.endsWith('/queries')), `${c.name}: it ran as a BigQuery job`);
  }

  // the rows are PostgreSQL's
  const top = await run(cases.find((c) => c.name === 'top customers by paid revenue')!.sql);
  const direct = await db.pool.query(`SELECT c.name, sum(o.amount)::float8 AS revenue FROM shop.orders o JOIN shop.customers c ON c.id = o.customer_id
    WHERE o.status = 'paid' GROUP BY c.name ORDER BY revenue DESC LIMIT 10`);
  t.same(top.rows, direct.rows.map((x) => [x.name, x.revenue]));
  const chain = await run(cases.find((c) => c.name === 'recursive CTE: referral depth')!.sql);
  t.same(chain.rows, [[0, 3], [1, 2], [2, 2], [3, 1]], 'referral depths: Ada, Barbara, Katherine; Grace, Alan; Linus, Margaret; Edsger');
});

t.test('database.allowed_functions: a listed user function runs, another is refused', async (t) => {
  const listed = await run('SELECT id, shop.add_tax(amount) AS gross FROM shop.orders ORDER BY id LIMIT 3');
  const direct = await db.pool.query('SELECT id, round(amount * 1.2, 2)::float8 AS gross FROM shop.orders ORDER BY id LIMIT 3');
  t.same(listed.rows, direct.rows.map((x) => [x.id, x.gross]), 'shop.add_tax ran');

  const from = fake.calls.length;
  const other = await outcome('SELECT id, shop.add_tip(amount) FROM shop.orders');
  t.match(other, { code: 'SQL_REJECTED', details: { kind: 'function_not_allowed', function: 'shop.add_tip' } });
  t.same(reachedBigQuery(from), []);
});

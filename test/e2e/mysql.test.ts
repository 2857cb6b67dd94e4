/**
 * A question end to end with database.provider mysql: every actor on a private NATS, a real
 * MariaDB (MYSQL_URL), and the local Anthropic-speaking server scripted with MySQL SQL.
 */
import { existsSync } from 'node:fs';
import t from 'tap';
import { GUARD_SCHEMA_SQL_MYSQL } from '../fixtures/guard-cases-mysql.js';
import { testConfig } from '../helpers/config.js';
import { chatAnswer, sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { createTestMysqlDb } from '../helpers/mysql.js';
import { startNats } from '../helpers/nats.js';
import { call, callSse, startStack } from '../helpers/stack.js';

const nats = await startNats();
const db = await createTestMysqlDb('e2e');
await db.pool.query(GUARD_SCHEMA_SQL_MYSQL);
const fake = await startFakeLlm();
const config = testConfig({
  natsUrl: nats.url,
  llmUrl: fake.url,
  extra: {
    bus: { prefer_local: false },
    database: { provider: 'mysql', mysql: db.section() },
    insights: { enabled: true, mode: 'statistical_only', max_insights: 3 },
  },
});
const stack = await startStack(config);
t.teardown(async () => {
  await stack.stop();
  await fake.close();
  await db.drop();
  await nats.stop();
});

const TOP_CUSTOMERS =
  'SELECT c.`name` AS customer, SUM(o.amount) AS revenue FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.`name` ORDER BY revenue DESC';

t.beforeEach(() => {
  fake.requests.length = 0;
  fake.fallback(() => ({ status: 500, message: 'unscripted' }));
});

t.test('sql path: MySQL SQL from the model, its LIMIT, the rows of MariaDB', async (t) => {
  fake.script({ text: sqlAnswer(TOP_CUSTOMERS, 'Revenue per customer, best first.') });
  const res = await call(`${stack.url}/api/query`, { body: { question: 'Which customer brought the most revenue?' } });
  t.equal(res.status, 200, res.text);
  const b = res.body;
  t.equal(b.intent, 'sql');
  t.equal(b.sql, `${TOP_CUSTOMERS}\nLIMIT 100`);
  t.same(b.columns, [{ name: 'customer', type: 'varchar' }, { name: 'revenue', type: 'decimal' }]);
  t.equal(b.row_count, 5);
  t.equal(b.truncated, false);
  const total = b.rows.reduce((s: number, r: [string, number]) => s + r[1], 0);
  const [direct] = await db.pool.query<any[]>('SELECT SUM(amount) AS s FROM orders');
  t.equal(Math.round(total * 100), Math.round(Number(direct[0].s) * 100), "the rows are the database's");
  t.ok(Array.isArray(b.insights), 'insights');

  const prompt = fake.requests[0]!;
  t.match(prompt.system, /MySQL/, 'the dialect is in the prompt');
  t.match(prompt.system, /orders/, 'the schema is in the prompt');
  t.match(prompt.system, /customer_id/);
});

t.test('a MySQL-only query: window function, DATE_FORMAT, backticks, a # comment', async (t) => {
  const sql = "SELECT DATE_FORMAT(ordered_at, '%Y-%m') AS `month`, SUM(amount) AS revenue, RANK() OVER (ORDER BY SUM(amount) DESC) AS r # per month\nFROM orders GROUP BY `month` ORDER BY `month`";
  fake.script({ text: sqlAnswer(sql) });
  const res = await call(`${stack.url}/api/query`, { body: { question: 'revenue by month, ranked' } });
  t.equal(res.status, 200, res.text);
  t.same(res.body.rows.map((r: unknown[]) => r[0]), ['2024-01', '2024-02', '2024-03']);
  t.equal(res.body.sql, `${sql}\nLIMIT 100`);
});

t.test('SSE: the steps stream, then the result', async (t) => {
  fake.script({ text: sqlAnswer(TOP_CUSTOMERS) });
  const { status, events } = await callSse(`${stack.url}/api/query`, { question: 'top customers?' });
  t.equal(status, 200);
  const names = events.map((e) => e.event);
  for (const step of ['sql', 'rows', 'result']) t.ok(names.includes(step), `event ${step}`);
  t.equal(events.at(-1)!.data.row_count, 5);
});

t.test('self-correction: the MariaDB error goes back to the model', async (t) => {
  fake.script({ text: sqlAnswer('SELECT total_amount FROM orders') }, { text: sqlAnswer('SELECT SUM(amount) AS total FROM orders') });
  const res = await call(`${stack.url}/api/query`, { body: { question: 'total sales?' } });
  t.equal(res.status, 200, res.text);
  t.equal(res.body.sql, 'SELECT SUM(amount) AS total FROM orders\nLIMIT 100');
  const [direct] = await db.pool.query<any[]>('SELECT SUM(amount) AS s FROM orders');
  t.same(res.body.rows, [[Number(direct[0].s)]], 'the corrected query ran');
  t.match(fake.requests[1]!.last, /total_amount/, 'the model saw the database error');
});

t.test('the guard stops MySQL tricks the model writes: 422 SQL_REJECTED, nothing executed', async (t) => {
  const [before] = await db.pool.query<any[]>('CHECKSUM TABLE orders, customers');
  for (const sql of ["SELECT * FROM orders INTO OUTFILE '/tmp/cortado-e2e.csv'", 'SELECT 1 /*!50000 , SLEEP(5) */', 'SELECT * FROM orders FOR UPDATE', 'DELETE FROM orders']) {
    fake.fallback(() => ({ text: sqlAnswer(sql) }));
    const res = await call(`${stack.url}/api/query`, { body: { question: 'do something bad' } });
    t.equal(res.status, 422, `${sql}: ${res.text}`);
    t.equal(res.body.error.code, 'SQL_REJECTED');
  }
  const [after] = await db.pool.query<any[]>('CHECKSUM TABLE orders, customers');
  t.same(after, before, 'the tables did not change');
  t.notOk(existsSync('/tmp/cortado-e2e.csv'), 'no file was written');
});

t.test('chat path: no SQL runs', async (t) => {
  fake.script({ text: chatAnswer('Hello! Ask me about your orders.') });
  const res = await call(`${stack.url}/api/query`, { body: { question: 'hi there' } });
  t.equal(res.status, 200, res.text);
  t.equal(res.body.intent, 'chat');
});

t.test('tables and health through the mysql engine', async (t) => {
  const list = await call(`${stack.url}/api/tables`);
  t.equal(list.status, 200, list.text);
  const names = list.body.tables.map((x: { name: string }) => x.name);
  t.ok(names.includes('orders') && names.includes('Mixed Case'), names.join(','));
  const health = await call(`${stack.url}/health`);
  t.equal(health.status, 200, health.text);
  t.equal(health.body.database, 'ok');
});

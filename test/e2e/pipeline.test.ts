/**
 * The whole question pipeline over HTTP, with every actor on a private NATS, a real
 * PostgreSQL, and a local server speaking Anthropic's Messages API.
 */
import t from 'tap';
import { ALL_ACTORS } from '../../protocol/subjects.js';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { testConfig } from '../helpers/config.js';
import { chatAnswer, sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, callSse, startStack } from '../helpers/stack.js';

const nats = await startNats();
const db = await createTestDb('e2e');
await db.pool.query(GUARD_SCHEMA_SQL);
const fake = await startFakeLlm();
const config = testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  // every hop over NATS here, so each contract is exercised on the wire (the default calls in-process actors directly)
  extra: { bus: { prefer_local: false }, insights: { enabled: true, mode: 'statistical_only', max_insights: 3 } },
});
const stack = await startStack(config);
t.teardown(async () => {
  await stack.stop();
  await fake.close();
  await db.drop();
  await nats.stop();
});

const TOP_CUSTOMERS = 'SELECT c.name AS customer, sum(o.amount) AS revenue FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.name ORDER BY revenue DESC';

t.beforeEach(() => {
  fake.requests.length = 0;
  fake.fallback(() => ({ status: 500, message: 'unscripted' }));
});

t.test('sql path: one model call, SQL with its LIMIT, rows, insights, usage and timings', async (t) => {
  fake.script({ text: sqlAnswer(TOP_CUSTOMERS, 'Revenue per customer, best first.') });
  const res = await call(`${stack.url}/api/query`, { body: { question: 'Which customer brought the most revenue?' } });
  t.equal(res.status, 200, res.text);
  const b = res.body;
  t.equal(b.intent, 'sql');
  t.equal(b.request_id, res.headers.get('x-request-id'));
  t.equal(b.sql, `${TOP_CUSTOMERS}\nLIMIT 100`);
  t.equal(b.explanation, 'Revenue per customer, best first.');
  t.same(b.columns, [{ name: 'customer', type: 'text' }, { name: 'revenue', type: 'numeric' }]);
  t.equal(b.row_count, 5);
  t.equal(b.rows.length, 5);
  t.equal(b.truncated, false);
  const total = b.rows.reduce((s: number, r: [string, number]) => s + r[1], 0);
  const direct = await db.pool.query('SELECT sum(amount)::float8 AS s FROM orders');
  t.equal(Math.round(total * 100), Math.round(direct.rows[0].s * 100), 'the rows are the database\'s');
  t.ok(Array.isArray(b.insights) && b.insights.length > 0, 'statistical insights');
  t.equal(b.usage.llm_calls, 1, 'intent and SQL in one model call');
  t.ok(b.usage.input_tokens > 0 && b.usage.output_tokens > 0);
  for (const step of ['context', 'generate', 'execute', 'insights']) t.type(b.timing_ms[step], 'number', `timing of ${step}`);
  t.type(b.timing_ms.total, 'number');

  t.equal(fake.requests.length, 1);
  const prompt = fake.requests[0]!;
  t.match(prompt.last, /Which customer brought the most revenue\?/, 'the question is in the prompt');
  t.match(prompt.system, /orders/, 'the schema is in the prompt');
  t.match(prompt.system, /amount/);
  t.match(prompt.system, /customer_id/);
  t.match(prompt.system, /PostgreSQL/);
  t.ok(prompt.cacheControl, 'the stable part is cacheable');
});

t.test('chat path: the personality answers, no SQL runs', async (t) => {
  fake.script({ text: chatAnswer('Hello! Ask me about your orders.') });
  const res = await call(`${stack.url}/api/query`, { body: { question: 'hi there' } });
  t.equal(res.status, 200, res.text);
  t.equal(res.body.intent, 'chat');
  t.equal(res.body.message, 'Hello! Ask me about your orders.');
  t.notOk(res.body.sql);
  t.equal(fake.requests.length, 1);
});

t.test('SSE: each step streams while it happens, then the result', async (t) => {
  fake.script({ text: sqlAnswer(TOP_CUSTOMERS) });
  const { status, events } = await callSse(`${stack.url}/api/query`, { question: 'top customers?' });
  t.equal(status, 200);
  const names = events.map((e) => e.event);
  for (const step of ['intent', 'sql', 'rows', 'insights', 'result']) t.ok(names.includes(step), `event ${step}`);
  t.equal(names.at(-1), 'result');
  t.ok(names.indexOf('sql') < names.indexOf('rows') && names.indexOf('rows') < names.indexOf('result'), 'in order');
  const result = events.at(-1)!.data;
  t.equal(result.intent, 'sql');
  t.equal(result.row_count, 5);
});

t.test('SSE: a failure arrives as an error event', async (t) => {
  fake.fallback(() => ({ status: 429 }));
  const { events } = await callSse(`${stack.url}/api/query`, { question: 'top customers?' });
  const last = events.at(-1)!;
  t.equal(last.event, 'error');
  t.equal(last.data.error.code, 'LLM_UNAVAILABLE');
});

t.test('legacy POST /query answers in the SQLatte shape', async (t) => {
  fake.script({ text: sqlAnswer(TOP_CUSTOMERS) });
  const res = await call(`${stack.url}/query`, { body: { question: 'top customers?', table_schema: 'Table: orders\nTable: customers' } });
  t.equal(res.status, 200, res.text);
  t.equal(res.body.response_type, 'sql');
  t.same(res.body.columns, ['customer', 'revenue']);
  t.equal(res.body.data.length, 5);
  t.equal(res.body.row_count, 5);
  t.type(res.body.explanation, 'string');
  t.match(fake.requests[0]!.system, /orders/);
});

t.test('a follow-up in the same conversation sees the earlier turn', async (t) => {
  fake.script({ text: sqlAnswer(TOP_CUSTOMERS) }, { text: sqlAnswer("SELECT date_trunc('month', ordered_at) AS month, sum(amount) AS revenue FROM orders GROUP BY 1 ORDER BY 1") });
  const conversation_id = `conv-${Date.now()}`;
  const first = await call(`${stack.url}/api/query`, { body: { question: 'Which customer brought the most revenue?', conversation_id } });
  t.equal(first.status, 200, first.text);
  const second = await call(`${stack.url}/api/query`, { body: { question: 'and by month?', conversation_id } });
  t.equal(second.status, 200, second.text);
  const prompt = fake.requests[1]!;
  const earlier = prompt.messages.map((m) => m.content).join('\n');
  t.match(earlier, /Which customer brought the most revenue\?/, 'the earlier question is in the follow-up prompt');
  t.match(earlier, /sum\(o\.amount\)/, 'and its SQL');
  t.equal(prompt.last.includes('and by month?'), true);
  // another conversation does not see it
  fake.script({ text: sqlAnswer('SELECT 1 AS one') });
  await call(`${stack.url}/api/query`, { body: { question: 'and by month?', conversation_id: `${conversation_id}-other` } });
  t.notMatch(fake.requests[2]!.messages.map((m) => m.content).join('\n'), /most revenue/);
});

t.test('self-correction: the database error goes back to the model once', async (t) => {
  fake.script({ text: sqlAnswer('SELECT total_amount FROM orders') }, { text: sqlAnswer('SELECT sum(amount) AS total FROM orders') });
  const res = await call(`${stack.url}/api/query`, { body: { question: 'total sales?' } });
  t.equal(res.status, 200, res.text);
  t.equal(res.body.sql, 'SELECT sum(amount) AS total FROM orders\nLIMIT 100');
  t.equal(res.body.usage.llm_calls, 2);
  t.match(fake.requests[1]!.last, /total_amount/, 'the model saw the database error');
});

t.test('the guard stops what the model writes: 422 SQL_REJECTED, nothing executed', async (t) => {
  const before = await db.pool.query('SELECT count(*)::int AS n FROM orders');
  fake.fallback(() => ({ text: sqlAnswer('DELETE FROM orders') }));
  const res = await call(`${stack.url}/api/query`, { body: { question: 'delete all orders' } });
  t.equal(res.status, 422, res.text);
  t.equal(res.body.error.code, 'SQL_REJECTED');
  t.match(res.body.error.message, /DELETE/);
  t.equal(res.body.error.request_id, res.headers.get('x-request-id'));
  const after = await db.pool.query('SELECT count(*)::int AS n FROM orders');
  t.equal(after.rows[0].n, before.rows[0].n);
});

t.test('an unparseable model reply is 502 LLM_BAD_REPLY', async (t) => {
  fake.script({ text: 'I am not sure what you mean.' });
  const res = await call(`${stack.url}/api/query`, { body: { question: 'hmm?' } });
  t.equal(res.status, 502, res.text);
  t.equal(res.body.error.code, 'LLM_BAD_REPLY');
});

for (const [name, reply] of [['429', { status: 429 }], ['500', { status: 500 }]] as const) {
  t.test(`LLM ${name} on every attempt: retried, then 503 LLM_UNAVAILABLE`, async (t) => {
    fake.fallback(() => reply);
    const res = await call(`${stack.url}/api/query`, { body: { question: 'top customers?' } });
    t.equal(res.status, 503, res.text);
    t.equal(res.body.error.code, 'LLM_UNAVAILABLE');
    t.equal(fake.requests.length, 2, 'max_retries 1: two attempts');
  });
}

t.test('LLM timeout: retried, then 503 LLM_UNAVAILABLE', async (t) => {
  fake.fallback(() => ({ hang: true }));
  const res = await call(`${stack.url}/api/query`, { body: { question: 'top customers?' } });
  t.equal(res.status, 503, res.text);
  t.equal(res.body.error.code, 'LLM_UNAVAILABLE');
  t.match(res.body.error.message, /no answer within/);
});

t.test('tables: the list and one table\'s columns', async (t) => {
  const list = await call(`${stack.url}/api/tables`);
  t.equal(list.status, 200, list.text);
  const names = list.body.tables.map((x: { name: string }) => x.name);
  t.ok(names.includes('orders') && names.includes('sales.targets'), names.join(','));
  const one = await call(`${stack.url}/api/tables/orders`);
  t.equal(one.status, 200, one.text);
  t.ok(one.body.columns.some((c: { name: string }) => c.name === 'amount'));
  const none = await call(`${stack.url}/api/tables/no_such_table`);
  t.equal(none.status, 404);
  t.equal(none.body.error.code, 'NOT_FOUND');
});

t.test('health: database and LLM, without a model call; the model unreachable after the timeout above, ok again after an answer', async (t) => {
  // the test before left the model hanging until every attempt gave up: /health says so (degraded, still 200)
  const down = await call(`${stack.url}/health`);
  t.equal(down.status, 200, down.text);
  t.equal(down.body.status, 'degraded');
  t.equal(down.body.llm, 'unreachable');
  t.equal(down.body.database, 'ok');
  t.equal(fake.requests.length, 0, 'health made no model call');
  fake.script({ text: sqlAnswer(TOP_CUSTOMERS, 'Revenue per customer, best first.') });
  const answered = await call(`${stack.url}/api/query`, { body: { question: 'Which customer brought the most revenue?' } });
  t.equal(answered.status, 200, answered.text);
  const calls = fake.requests.length;
  const res = await call(`${stack.url}/health`);
  t.equal(res.status, 200, res.text);
  t.equal(res.body.status, 'ok');
  t.equal(res.body.database, 'ok');
  t.equal(res.body.llm, 'ok');
  t.equal(res.body.details.llm.provider, 'anthropic');
  t.equal(fake.requests.length, calls, 'health made no model call');
});

t.test('without an LLM key: health says so, a question is LLM_UNAVAILABLE', async (t) => {
  const nats2 = await startNats();
  const cfg = testConfig({ natsUrl: nats2.url, db: { host: db.host, port: db.port, name: db.name, user: db.user } });
  const s2 = await startStack(cfg, { edge: true, actors: [...ALL_ACTORS] });
  t.teardown(async () => {
    await s2.stop();
    await nats2.stop();
  });
  const health = await call(`${s2.url}/health`);
  t.equal(health.body.llm, 'not_configured');
  t.equal(health.body.status, 'degraded');
  t.match(health.body.details.llm.reason, /API key/);
  const res = await call(`${s2.url}/api/query`, { body: { question: 'top customers?' } });
  t.equal(res.status, 503);
  t.equal(res.body.error.code, 'LLM_UNAVAILABLE');
  t.match(res.body.error.message, /not configured/);
});

/**
 * Model insights end to end, over HTTP with every actor on a private NATS, a real PostgreSQL
 * and a local server speaking Anthropic's Messages API: `llm_only` answers carry the model's
 * insights with their tokens and cost in `usage`; `hybrid` answers come with the statistical
 * insights at once and the model's follow (the SSE event `model_insights` after `result`, or
 * GET /api/insights/{insights_id} for JSON); a bad reply never breaks the answer; a masked value
 * never reaches the model.
 */
import t from 'tap';
import { ALL_ACTORS, MaskRuleCreate } from '../../protocol/subjects.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { closeClient, connectClient, issueToken } from '../helpers/mcp.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, callSse, startStack } from '../helpers/stack.js';

const SCHEMA = `
CREATE TABLE customers (id integer PRIMARY KEY, name text NOT NULL, email text NOT NULL, country text);
INSERT INTO customers VALUES
  (1, 'Ada', 'ada.lovelace@example.com', 'UK'), (2, 'Grace', 'grace.hopper@example.org', 'US'), (3, 'Linus', 'linus.t@example.net', 'FI');
CREATE TABLE orders (id integer PRIMARY KEY, customer_id integer NOT NULL REFERENCES customers(id), amount numeric(10,2) NOT NULL, ordered_at date NOT NULL);
INSERT INTO orders VALUES
  (1, 1, 120.00, '2025-01-10'), (2, 2, 80.50, '2025-02-11'), (3, 3, 42.00, '2025-03-12'), (4, 1, 300.00, '2025-04-13'),
  (5, 2, 99.99, '2025-05-14'), (6, 1, 12.00, '2025-06-15');
`;
const RAW_EMAILS = ['ada.lovelace@example.com', 'grace.hopper@example.org', 'linus.t@example.net'];

const nats = await startNats();
const db = await createTestDb('insllm');
await db.pool.query(SCHEMA);
const fake = await startFakeLlm();
const PRICE = { input_per_mtok: 3, output_per_mtok: 15 };
const stackFor = (mode: 'llm_only' | 'hybrid', prefix: string) => startStack(testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: {
    bus: { prefix, prefer_local: false },
    llm: { pricing: { 'claude-test': PRICE } },
    insights: { enabled: true, mode, max_insights: 3, include_statistical: false },
  },
}), { edge: true, actors: ALL_ACTORS.filter((a) => a !== 'alerts' && a !== 'mailer') });
const llmOnly = await stackFor('llm_only', 'insllm');
const hybrid = await stackFor('hybrid', 'inshyb');
t.teardown(async () => {
  await hybrid.stop();
  await llmOnly.stop();
  await fake.close();
  await db.drop();
  await nats.stop();
});
for (const s of [llmOnly, hybrid]) {
  await s.running.bus.request(MaskRuleCreate, { field_pattern: 'customers.email', strategy: 'redact' }, { requestId: 'setup' });
}

const MONTHLY = "SELECT date_trunc('month', ordered_at)::date AS month, sum(amount) AS revenue FROM orders GROUP BY 1 ORDER BY 1";
const BY_CUSTOMER = 'SELECT c.name, c.email, sum(o.amount) AS spent FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.name, c.email ORDER BY spent DESC';
const INSIGHTS = [
  'TYPE: leader | SEVERITY: info | MESSAGE: April was the strongest month with 300.',
  'TYPE: risk | SEVERITY: warning | MESSAGE: June fell to 12, the weakest month.',
].join('\n');
const SQL_USAGE = { input_tokens: 1000, output_tokens: 100 };
const INSIGHTS_USAGE = { input_tokens: 2000, output_tokens: 200 };
const cost = (...u: Array<{ input_tokens: number; output_tokens: number }>) =>
  Math.round(u.reduce((s, x) => s + x.input_tokens * PRICE.input_per_mtok + x.output_tokens * PRICE.output_per_mtok, 0)) / 1e6;

/** GET /api/insights/{id} until it is no longer pending (the follow-up runs in the background). */
async function settled(id: string): Promise<{ status: number; body: any; text: string }> {
  let got = await call(`${hybrid.url}/api/insights/${id}`);
  for (let i = 0; i < 500 && got.status === 200 && got.body.status === 'pending'; i++) {
    await new Promise((r) => setTimeout(r, 20));
    got = await call(`${hybrid.url}/api/insights/${id}`);
  }
  return got;
}

t.beforeEach(() => {
  fake.requests.length = 0;
  fake.fallback(() => ({ status: 500, message: 'unscripted' }));
});

t.test('llm_only: the answer carries the model insights, with their tokens and cost in usage', async (t) => {
  fake.script({ text: sqlAnswer(MONTHLY), usage: SQL_USAGE }, { text: INSIGHTS, usage: INSIGHTS_USAGE });
  const res = await call(`${llmOnly.url}/api/query`, { body: { question: 'How did revenue develop by month?' } });
  t.equal(res.status, 200, res.text);
  t.equal(res.body.row_count, 6);
  t.same(res.body.insights.map((i: any) => [i.source, i.type, i.message]), [
    ['llm', 'leader', 'April was the strongest month with 300.'],
    ['llm', 'risk', 'June fell to 12, the weakest month.'],
  ]);
  t.notOk(res.body.insights_pending, 'nothing follows');
  t.equal(res.body.usage.llm_calls, 2, 'the SQL call and the insights call');
  t.equal(res.body.usage.input_tokens, 3000);
  t.equal(res.body.usage.output_tokens, 300);
  t.equal(res.body.usage.cost_usd, cost(SQL_USAGE, INSIGHTS_USAGE));
  t.equal(fake.requests.length, 2);
  t.match(fake.requests[1]!.last, /How did revenue develop by month\?/);
  t.match(fake.requests[1]!.last, /2025-04-01 \| 300/, 'the model saw the rows');
});

t.test('llm_only: a masked value never reaches the model', async (t) => {
  fake.script({ text: sqlAnswer(BY_CUSTOMER) }, { text: 'TYPE: leader | SEVERITY: info | MESSAGE: Ada spent the most.' });
  const res = await call(`${llmOnly.url}/api/query`, { body: { question: 'Who spent the most, with their e-mail?' } });
  t.equal(res.status, 200, res.text);
  t.same(res.body.masked, [{ column: 'email', strategy: 'redact' }]);
  t.equal(res.body.insights[0].message, 'Ada spent the most.');
  const toModel = JSON.stringify(fake.requests[1]);
  t.match(fake.requests[1]!.last, /email \(text\): 3 values; masked by policy/);
  t.match(fake.requests[1]!.last, /Ada \| /, 'the unmasked columns are there');
  for (const raw of [...RAW_EMAILS, ...RAW_EMAILS.map((e) => e.split('@')[0]!)]) t.notOk(toModel.includes(raw), `${raw} is not in the request to the model`);
  t.notOk(JSON.stringify(res.body).includes('example.'), 'nor in the answer');
});

t.test('llm_only: a bad reply leaves the answer intact, with the statistical insights', async (t) => {
  fake.script({ text: sqlAnswer(MONTHLY) }, { text: `Here you go:\n${INSIGHTS}` });
  const res = await call(`${llmOnly.url}/api/query`, { body: { question: 'revenue by month?' } });
  t.equal(res.status, 200, res.text);
  t.equal(res.body.rows.length, 6);
  t.ok(res.body.insights.length > 0);
  t.ok(res.body.insights.every((i: any) => i.source === 'statistical'), 'the model insights were dropped');
  t.equal(res.body.usage.llm_calls, 2, 'the call still counts');
});

t.test('hybrid SSE: the answer first, with the statistical insights; then the model insights', async (t) => {
  fake.script({ text: sqlAnswer(MONTHLY), usage: SQL_USAGE }, { text: INSIGHTS, usage: INSIGHTS_USAGE, delayMs: 300 });
  const { status, events } = await callSse(`${hybrid.url}/api/query`, { question: 'How did revenue develop by month?' });
  t.equal(status, 200);
  const names = events.map((e) => e.event);
  const result = names.indexOf('result');
  const later = names.indexOf('model_insights');
  t.ok(result >= 0 && later > result, `result, then model_insights: ${names.join(', ')}`);
  t.equal(names.at(-1), 'model_insights');
  const answer = events[result]!.data;
  t.equal(answer.insights_pending, true);
  t.ok(answer.insights.length > 0 && answer.insights.every((i: any) => i.source === 'statistical'), 'the answer did not wait for the model');
  t.equal(answer.rows.length, 6);
  t.equal(answer.usage.llm_calls, 1, 'only the SQL call is in the answer');
  const follow = events[later]!.data;
  t.equal(follow.status, 'ready');
  t.equal(follow.model_status, 'ok');
  t.same(follow.insights.map((i: any) => i.source), ['llm', 'llm', 'statistical'], 'the whole list: both kinds, max_insights');
  t.equal(follow.insights[0].message, 'April was the strongest month with 300.');
  t.equal(follow.usage.llm_calls, 1);
  t.equal(follow.usage.cost_usd, cost(INSIGHTS_USAGE), 'the follow-up carries its tokens and cost');
  t.equal(events[names.indexOf('insights')]!.data.pending, true, 'the insights step says more will come');
});

t.test('hybrid SSE: a bad reply says so and keeps the statistical insights; the answer is intact', async (t) => {
  fake.script({ text: sqlAnswer(MONTHLY) }, { text: 'I cannot find anything interesting.' });
  const { events } = await callSse(`${hybrid.url}/api/query`, { question: 'revenue by month?' });
  const answer = events.find((e) => e.event === 'result')!.data;
  t.equal(answer.rows.length, 6);
  const follow = events.find((e) => e.event === 'model_insights')!.data;
  t.equal(follow.status, 'failed');
  t.equal(follow.model_status, 'bad_reply');
  t.same(follow.insights, answer.insights, 'the statistical insights stand');
});

t.test('hybrid JSON: insights_pending, then GET /api/insights/{id} has them', async (t) => {
  fake.script({ text: sqlAnswer(MONTHLY) }, { text: INSIGHTS, usage: INSIGHTS_USAGE, delayMs: 200 });
  const res = await call(`${hybrid.url}/api/query`, { body: { question: 'revenue by month?' } });
  t.equal(res.status, 200, res.text);
  t.equal(res.body.insights_pending, true);
  t.type(res.body.insights_id, 'string');
  t.ok(res.body.insights.every((i: any) => i.source === 'statistical'));
  const got = await settled(res.body.insights_id);
  t.equal(got.status, 200, got.text);
  t.equal(got.body.status, 'ready');
  t.equal(got.body.request_id, res.body.request_id);
  t.same(got.body.insights.map((i: any) => i.source), ['llm', 'llm', 'statistical']);
  t.equal(got.body.usage.cost_usd, cost(INSIGHTS_USAGE));

  const unknown = await call(`${hybrid.url}/api/insights/00000000-0000-0000-0000-000000000000`);
  t.equal(unknown.status, 404);
  t.equal(unknown.body.error.code, 'NOT_FOUND');
  const odd = await call(`${hybrid.url}/api/insights/${encodeURIComponent('a.b*c')}`);
  t.equal(odd.status, 404, 'a key that cannot be an id');
});

t.test('hybrid, legacy /query: the SQLatte shape says what follows', async (t) => {
  fake.script({ text: sqlAnswer(MONTHLY) }, { text: INSIGHTS });
  const res = await call(`${hybrid.url}/query`, { body: { question: 'revenue by month?' } });
  t.equal(res.status, 200, res.text);
  t.equal(res.body.insights_pending, true);
  t.type(res.body.insights_id, 'string');
  const got = await settled(res.body.insights_id);
  t.equal(got.body.status, 'ready', 'and GET /api/insights has them');
});

t.test('hybrid, an empty result: nothing for the model, nothing pending', async (t) => {
  fake.script({ text: sqlAnswer("SELECT id, amount FROM orders WHERE amount > 1000000") });
  const res = await call(`${hybrid.url}/api/query`, { body: { question: 'orders over a million?' } });
  t.equal(res.status, 200, res.text);
  t.equal(res.body.row_count, 0);
  t.notOk(res.body.insights_pending);
  t.same(res.body.insights.map((i: any) => i.type), ['empty']);
  t.equal(fake.requests.length, 1, 'only the SQL call');
});

t.test('hybrid over MCP: one whole tool result, the model insights in it', async (t) => {
  const { token } = await issueToken(hybrid.running.bus, 'ins-mcp');
  const client = await connectClient(hybrid.url, 'http', token);
  t.teardown(() => closeClient(client));
  fake.script({ text: sqlAnswer(MONTHLY) }, { text: INSIGHTS });
  const result = (await client.callTool({ name: 'ask_database', arguments: { question: 'revenue by month?' } })) as { structuredContent?: any; isError?: boolean };
  t.notOk(result.isError);
  t.same(result.structuredContent.insights.map((i: any) => i.source), ['llm', 'llm', 'statistical']);
});

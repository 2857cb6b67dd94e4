/**
 * The semantic layer reaches the model: a real stack (every actor, config_db on a fresh
 * PostgreSQL database, the data in another) and a local server speaking Anthropic's Messages
 * API that records each prompt. A metric's exact expression and a relationship's exact join
 * condition are in the prompt of a question about their tables; nothing is injected while the
 * layer is empty, nor with config_db off (memory mode), even with entities defined.
 */
import t from 'tap';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import type { Bus } from '../../runtime/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import {
  ALL_ACTORS, Actor, ConfigReset, ConfigUpdate, SemanticContext, SemanticEntityCreate, SemanticMetricCreate, SemanticRelationshipCreate,
} from '../../protocol/subjects.js';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack, type Stack } from '../helpers/stack.js';

const METRIC_SQL = "SUM(amount) FILTER (WHERE status <> 'cancelled')";
const JOIN = 'orders.customer_id = customers.id';
const ANSWER = 'SELECT c.name, sum(o.amount) AS revenue FROM orders o LEFT JOIN customers c ON o.customer_id = c.id GROUP BY c.name';
// the stack without the analytics actor: this test needs none of it
const ROLES = { edge: true, actors: ALL_ACTORS.filter((a) => a !== Actor.Analytics) };

const nats = await startNats();
const db = await createTestDb('sem_e2e');
await db.pool.query(GUARD_SCHEMA_SQL);
const cfgDb = await createTestDb('sem_e2e_cfg');
const fake = await startFakeLlm();
const dbOpts = { host: db.host, port: db.port, name: db.name, user: db.user };
const persistent = await startStack(testConfig({
  natsUrl: nats.url,
  db: dbOpts,
  llmUrl: fake.url,
  extra: {
    bus: { prefer_local: false },
    config_db: { enabled: true, encryption_key: generateFernetKey(), postgresql: { host: cfgDb.host, port: cfgDb.port, database: cfgDb.name, user: cfgDb.user } },
  },
}), ROLES);
// memory mode: config_db off, on a bus of its own
const nats2 = await startNats();
const memory = await startStack(testConfig({ natsUrl: nats2.url, db: dbOpts, llmUrl: fake.url }), ROLES);

t.teardown(async () => {
  await memory.stop();
  await persistent.stop();
  await fake.close();
  await db.drop();
  await cfgDb.drop();
  await nats2.stop();
  await nats.stop();
});

const ctx = { requestId: 'semantic-e2e', user: 'admin' };

t.beforeEach(() => {
  fake.requests.length = 0;
  fake.fallback(() => ({ text: sqlAnswer(ANSWER) }));
});

/** One question over HTTP; the system prompt the model received. */
async function promptOf(stack: Stack, question: string, tables?: string[]): Promise<string> {
  const res = await call(`${stack.url}/api/query`, { body: { question, ...(tables ? { tables } : {}) } });
  if (res.status !== 200) throw new Error(`the question failed: ${res.status} ${res.text}`);
  const last = fake.requests.at(-1);
  if (!last) throw new Error('the model was not asked');
  return last.system;
}

async function defineLayer(bus: Bus): Promise<void> {
  const orders = await bus.request(SemanticEntityCreate, {
    schema_name: 'public', table_name: 'orders', display_name: 'Orders', description: 'Every order a customer placed', primary_key: 'id',
    synonyms: ['purchases'], by: 'admin',
    columns: [{ name: 'status', role: 'dimension', display_name: 'Order status' }, { name: 'amount', role: 'metric', aggregation: 'sum' }],
  }, ctx);
  const customers = await bus.request(SemanticEntityCreate, {
    schema_name: 'public', table_name: 'customers', display_name: 'Customers', primary_key: 'id', synonyms: ['clients'], by: 'admin',
  }, ctx);
  await bus.request(SemanticRelationshipCreate, {
    name: 'order_customer', from_entity_id: orders.id, from_column: 'customer_id', to_entity_id: customers.id, to_column: 'id',
    relationship_type: 'many_to_one', by: 'admin',
  }, ctx);
  await bus.request(SemanticMetricCreate, {
    name: 'net_revenue', display_name: 'Net revenue', sql_expression: METRIC_SQL, entity_id: orders.id, format_type: 'currency',
    description: 'Revenue without cancelled orders', by: 'admin',
  }, ctx);
}

t.test('an empty layer adds nothing to the prompt', async (t) => {
  const system = await promptOf(persistent, 'What is the revenue per customer from the orders?');
  t.match(system, /orders/, 'the schema is there');
  t.notMatch(system, /Business context/, 'no block');
  const c = await persistent.running.bus.request(SemanticContext, {}, ctx);
  t.equal(c.injected, false);
  t.equal(c.reason, 'no semantic entity is defined');
});

t.test('a defined metric\'s expression and a relationship\'s join condition reach the prompt verbatim', async (t) => {
  await defineLayer(persistent.running.bus);
  const system = await promptOf(persistent, 'What is the net revenue per customer from the orders?');
  t.ok(system.includes(METRIC_SQL), 'the metric\'s exact SQL expression');
  t.ok(system.includes(JOIN), 'the exact join condition');
  t.ok(system.includes(`LEFT JOIN ON ${JOIN}`), 'with its join type');
  t.match(system, /use its SQL expression exactly as written, verbatim; do not recalculate/);
  t.match(system, /Prefer LEFT JOIN unless the question asks otherwise/);
  t.match(system, /- Orders: table orders\n {2}Description: Every order a customer placed\n {2}Primary key: id\n {2}Also called: purchases/);
  t.ok(system.indexOf('Business context') > system.indexOf('Table orders'), 'after the schema, where the prompt puts {business_context}');
  const overHttp = await call(`${persistent.url}/api/semantic/context`);
  t.equal(overHttp.status, 200, overHttp.text);
  t.equal(overHttp.body.injected, true);
  t.ok(overHttp.body.block.includes(METRIC_SQL), 'GET /api/semantic/context shows the block');
  t.ok(overHttp.body.block.includes('public.orders.customer_id = public.customers.id'), 'with every table schema-qualified (no question, no default schema)');

  // a question about other tables (picked by the user): the layer has nothing for them
  const other = await promptOf(persistent, 'Which sales targets per region exist?', ['sales.targets']);
  t.match(other, /sales\.targets/);
  t.notOk(other.includes(METRIC_SQL), 'only what concerns the question\'s tables');
  t.notMatch(other, /Business context/);

  // the orders alone: the metric over them, but no join to a table the prompt does not hold
  const alone = await promptOf(persistent, 'net revenue by status', ['orders']);
  t.ok(alone.includes(METRIC_SQL));
  t.notOk(alone.includes(JOIN));
});

t.test('a runtime sql_generation prompt without {business_context} still gets the block (after its schema)', async (t) => {
  const bus = persistent.running.bus;
  await bus.request(ConfigUpdate, { key: 'prompts.sql_generation', value: 'You write {dialect} SQL.\nTables:\n{schema_info}\nReply as INTENT: sql, SQL: ..., EXPLANATION: ...\nQuestion: {question}', by: 'admin' }, ctx);
  t.teardown(() => bus.request(ConfigReset, { key: 'prompts.sql_generation', by: 'admin' }, ctx));
  await new Promise((r) => setTimeout(r, 200));
  const system = await promptOf(persistent, 'What is the net revenue per customer from the orders?');
  t.match(system, /^You write PostgreSQL SQL\./, 'the edited prompt is the one in force');
  t.ok(system.includes(METRIC_SQL), 'the metric\'s expression, though the prompt names no {business_context}');
  t.ok(system.indexOf('Business context') > system.indexOf('Table orders'), 'after the schema');
  t.notMatch(system, /\{business_context\}/, 'no placeholder left behind');
});

t.test('an answer\'s columns carry the layer\'s display names and a metric\'s format; the SQL keeps its names', async (t) => {
  fake.fallback(() => ({ text: sqlAnswer(`SELECT status, ${METRIC_SQL} AS net_revenue, count(*) AS orders FROM orders GROUP BY status`) }));
  const res = await call(`${persistent.url}/api/query`, { body: { question: 'net revenue per order status' } });
  t.equal(res.status, 200, res.text.slice(0, 300));
  const columns = res.body.columns as Array<{ name: string; label?: string; format?: string }>;
  t.same(columns.map((c) => [c.name, c.label, c.format]), [['status', 'Order status', undefined], ['net_revenue', 'Net revenue', 'currency'], ['orders', undefined, undefined]]);
  t.match(res.body.sql, /AS net_revenue/, 'the SQL as written');
});

t.test('bad metric expressions are refused with the reason', async (t) => {
  const bus = persistent.running.bus;
  const orders = (await bus.request(SemanticContext, {}, ctx)).entities.find((e) => e.table_name === 'orders')!;
  const cases: Array<[string, RegExp]> = [
    ['amount', /^sql_expression: not an aggregate \(it has no aggregate function at its top level; use SUM/],
    ['SUM(amount) / (SELECT count(*) FROM customers)', /^sql_expression: not an aggregate \(it holds a subquery/],
    ['SUM(discount)', /^sql_expression: the database refuses it over public\.orders: .*discount/],
    ['SUM(amount) + pg_sleep(1)', /^sql_expression: the SQL guard refuses it: .*pg_sleep/],
  ];
  for (const [expr, want] of cases) {
    const err = await bus.request(SemanticMetricCreate, { name: 'bad', display_name: 'Bad', sql_expression: expr, entity_id: orders.id, by: 'admin' }, ctx)
      .then(() => undefined, (e: unknown) => e);
    t.ok(err instanceof CortadoError, expr);
    t.equal((err as CortadoError).code, 'VALIDATION_FAILED', expr);
    t.match((err as CortadoError).message, want, expr);
  }
});

t.test('config_db off: the layer is kept in memory and never injected', async (t) => {
  await defineLayer(memory.running.bus);
  const c = await memory.running.bus.request(SemanticContext, {}, ctx);
  t.equal(c.storage, 'memory');
  t.equal(c.injected, false);
  t.match(c.reason ?? '', /config_db is off/);
  t.equal(c.entities.length, 2, 'the records are there, for the admin tab');
  t.equal(c.metrics.length, 1);
  const overHttp = await call(`${memory.url}/api/semantic/context`);
  t.equal(overHttp.status, 200, overHttp.text);
  t.match(overHttp.body, { injected: false, storage: 'memory', block: '' }, 'GET /api/semantic/context says the same');
  const system = await promptOf(memory, 'What is the net revenue per customer from the orders?');
  t.notOk(system.includes(METRIC_SQL));
  t.notMatch(system, /Business context/);
});

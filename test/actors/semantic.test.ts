/**
 * The semantic actor: the business-context block (pure: its text, what is relevant to a
 * question, the budget, SPEC rule 4), then the actor over a real bus with the executor and the
 * catalog on a real PostgreSQL and config_db: every write checked against the database with a
 * message that names the problem, the change announced, the context as the catalog asks for it.
 */
import t from 'tap';
import { buildContext, relevantLayer, renderBlock, REASON_BUDGET, REASON_EMPTY, REASON_MEMORY, type Layer } from '../../actors/semantic/block.js';
import { metricProbe } from '../../actors/semantic/validate.js';
import { aggregateOf } from '../../actors/executor/guard/aggregate.js';
import { prepareGuard } from '../../actors/executor/guard/index.js';
import type { Dialect } from '../../protocol/schemas/common.js';
import { context as catalogContext, createCatalogCache, type CatalogDeps } from '../../actors/catalog/handle.js';
import { CortadoError } from '../../protocol/errors.js';
import type { SemanticEntity, SemanticMetric, SemanticRelationship } from '../../protocol/schemas/semantic.js';
import {
  Actor, SchemaContext, SemanticChangedEvt, SemanticColumnAdd, SemanticContext, SemanticEntityCreate, SemanticEntityDelete,
  SemanticEntityGet, SemanticMetricCreate, SemanticMetricList, SemanticMetricUpdate, SemanticRelationshipCreate, SqlCheck,
} from '../../protocol/subjects.js';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { testConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { startStack } from '../helpers/stack.js';

// ---- records for the pure tests ---------------------------------------------------------------

const TS = '2026-01-01T00:00:00.000Z';

function entity(id: number, table: string, extra: Partial<SemanticEntity> = {}): SemanticEntity {
  return {
    id, catalog: '', schema_name: 'public', table_name: table, display_name: table[0]!.toUpperCase() + table.slice(1), description: '',
    primary_key: 'id', entity_type: 'table', synonyms: [], columns: [], created_at: TS, updated_at: TS, ...extra,
  };
}

function metric(id: number, name: string, sql: string, extra: Partial<SemanticMetric> = {}): SemanticMetric {
  return {
    id, name, display_name: name.replace(/_/g, ' '), sql_expression: sql, format_type: '', category: '', description: '', active: true,
    entity_id: null, synonyms: [], created_at: TS, updated_at: TS, ...extra,
  };
}

function relationship(id: number, from: number, fromColumn: string, to: number, toColumn: string, extra: Partial<SemanticRelationship> = {}): SemanticRelationship {
  return {
    id, name: `r${id}`, from_entity_id: from, from_column: fromColumn, to_entity_id: to, to_column: toColumn,
    relationship_type: 'many_to_one', join_type: 'LEFT', description: '', created_at: TS, updated_at: TS, ...extra,
  };
}

const ORDERS = entity(1, 'orders', {
  display_name: 'Orders', description: 'One row per order.', synonyms: ['purchases'],
  columns: [
    { id: 1, entity_id: 1, name: 'status', display_name: 'Order status', description: '', role: 'dimension', synonyms: ['state'], data_type: 'text', created_at: TS, updated_at: TS },
    { id: 2, entity_id: 1, name: 'amount', display_name: 'Amount', description: 'EUR', role: 'metric', aggregation: 'sum', synonyms: [], data_type: 'numeric', created_at: TS, updated_at: TS },
  ],
});
const CUSTOMERS = entity(2, 'customers', { display_name: 'Customers', synonyms: ['clients'] });
const TARGETS = entity(3, 'targets', { schema_name: 'sales', display_name: 'Sales targets', primary_key: '' });
const LAYER: Layer = {
  entities: [ORDERS, CUSTOMERS, TARGETS],
  relationships: [relationship(1, 1, 'customer_id', 2, 'id', { name: 'order_customer', description: 'each order has one customer' })],
  metrics: [
    metric(1, 'total_revenue', 'SUM(orders.amount)', { entity_id: 1, format_type: 'currency', description: 'Revenue of every order', synonyms: ['turnover'] }),
    metric(2, 'customer_count', 'COUNT(DISTINCT customers.id)', { entity_id: 2, category: 'growth' }),
    metric(3, 'old_metric', 'SUM(orders.quantity)', { entity_id: 1, active: false }),
    metric(4, 'target_total', 'SUM(target)', { entity_id: 3 }),
  ],
};

t.test('the block: entities, the exact join condition, the metric verbatim, the instructions (rules 1-3)', async (t) => {
  const r = buildContext(LAYER, 'postgresql', {});
  t.equal(r.injected, true);
  t.equal(r.storage, 'postgresql');
  const b = r.block;
  t.match(b, /use its exact join condition/);
  t.match(b, /Prefer LEFT JOIN unless the question asks otherwise/);
  t.match(b, /use its SQL expression exactly as written, verbatim; do not recalculate/);
  t.match(b, /- Orders: table public\.orders\n  Description: One row per order\.\n  Primary key: id\n  Also called: purchases/, 'without a default schema, names are schema-qualified');
  t.match(b, /Dimensions \(group by\): status \("Order status"; also: state\)/);
  t.match(b, /Metric columns \(aggregate\): amount \(SUM; EUR\)/);
  t.ok(b.includes('- order_customer: Orders to Customers, many-to-one, LEFT JOIN ON public.orders.customer_id = public.customers.id'), b);
  t.ok(b.includes('  SQL: SUM(orders.amount)\n  Format: currency'), 'the expression as defined, then its format');
  t.match(b, /- total revenue \(total_revenue\)\n  Description: Revenue of every order/);
  t.notOk(b.includes('SUM(orders.quantity)'), 'an inactive metric is not in the block');
  t.same(r.metrics.map((m) => m.id).sort(), [1, 2, 4], 'active metrics only');

  const inDefault = buildContext(LAYER, 'postgresql', { question: 'x', tables: ['orders', 'customers'], default_schema: 'public' });
  t.ok(inDefault.block.includes('LEFT JOIN ON orders.customer_id = customers.id'), 'named as the catalog names them in the default schema');

  const multiLine = buildContext({ ...LAYER, metrics: [metric(9, 'm', 'SUM(amount)\n  / NULLIF(COUNT(*), 0)', { entity_id: 1 })] }, 'postgresql', {});
  t.ok(multiLine.block.includes('SQL: SUM(amount)\n  / NULLIF(COUNT(*), 0)'), 'line breaks of an expression are kept');

  const quoted = buildContext({ entities: [entity(5, 'Mixed Case'), ORDERS], relationships: [relationship(2, 1, 'note', 5, 'Some Column')], metrics: [] }, 'postgresql', { dialect: 'postgresql', default_schema: 'public' });
  t.ok(quoted.block.includes('ON orders.note = "Mixed Case"."Some Column"'), 'names that need quotes are quoted for the dialect');
});

t.test('rule 4: not injected in memory mode nor without entities, the records still returned', async (t) => {
  const memory = buildContext(LAYER, 'memory', {});
  t.equal(memory.injected, false);
  t.equal(memory.block, '');
  t.equal(memory.reason, REASON_MEMORY);
  t.equal(memory.storage, 'memory');
  t.equal(memory.entities.length, 3, 'the admin tab still sees them');
  t.equal(memory.metrics.length, 3);

  const empty = buildContext({ entities: [], relationships: [], metrics: [metric(1, 'n', 'COUNT(*)')] }, 'postgresql', {});
  t.equal(empty.injected, false);
  t.equal(empty.block, '');
  t.equal(empty.reason, REASON_EMPTY, 'a metric alone is no layer: no entity, no block');
});

t.test('relevance: the tables of the question, the joins among them, the metrics over them', async (t) => {
  const onlyOrders = buildContext(LAYER, 'postgresql', { question: 'orders by status', tables: ['orders'], default_schema: 'public' });
  t.same(onlyOrders.entities.map((e) => e.id), [1]);
  t.same(onlyOrders.relationships, [], 'no join to a table the prompt does not hold');
  t.same(onlyOrders.metrics.map((m) => m.id), [1]);
  t.notOk(onlyOrders.block.includes('Customers'));
  t.notOk(onlyOrders.block.includes('COUNT(DISTINCT customers.id)'));

  const both = buildContext(LAYER, 'postgresql', { question: 'how many clients, and the turnover?', tables: ['orders', 'customers'], default_schema: 'public' });
  t.same(both.entities.map((e) => e.id), [2, 1], 'the entity the question names ("clients") first');
  t.same(both.relationships.map((r) => r.id), [1]);
  t.same(both.metrics.map((m) => m.id), [1, 2], '"turnover" is a synonym of total_revenue: first');

  const other = buildContext(LAYER, 'postgresql', { question: 'targets', tables: ['sales.targets'], default_schema: 'public' });
  t.same(other.entities.map((e) => e.id), [3], 'outside the default schema the name is schema-qualified');
  t.match(other.block, /table sales\.targets/);

  const none = buildContext(LAYER, 'postgresql', { question: 'products', tables: ['products'], default_schema: 'public' });
  t.equal(none.injected, false);
  t.match(none.reason ?? '', /nothing in the semantic layer concerns/);

  const ranked = relevantLayer(LAYER, { question: 'customer growth' });
  t.equal(ranked.metrics[0]!.id, 2, 'without tables every entity, ranked by the question\'s words');
});

t.test('budget: whole items, the most relevant first, nothing when even the header does not fit', async (t) => {
  const full = buildContext(LAYER, 'postgresql', { question: 'turnover', tables: ['orders', 'customers'], default_schema: 'public' });
  const metricOnly = buildContext(LAYER, 'postgresql', { question: 'turnover', tables: ['orders', 'customers'], default_schema: 'public', max_chars: full.block.indexOf('\nEntities:') + 200 });
  t.ok(metricOnly.block.length <= full.block.indexOf('\nEntities:') + 200, 'within max_chars');
  t.ok(metricOnly.block.length < full.block.length);
  t.ok(metricOnly.block.includes('SQL: SUM(orders.amount)'), 'the metric the question asks for is kept');
  for (const line of metricOnly.block.split('\n').filter((l) => l.startsWith('- '))) t.ok(full.block.includes(line), 'whole items only');

  const tiny = buildContext(LAYER, 'postgresql', { question: 'x', tables: ['orders'], default_schema: 'public', max_chars: 100 });
  t.equal(tiny.block, '');
  t.equal(tiny.injected, false);
  t.equal(tiny.reason, REASON_BUDGET);

  const byId = new Map(LAYER.entities.map((e) => [e.id, e]));
  const rendered = renderBlock(relevantLayer(LAYER, {}), byId, { maxChars: 2_000 });
  t.ok(rendered.text.length <= 2_000);
});

t.test('the probe a metric is checked with keeps a comment in the expression from hiding the rest', async (t) => {
  t.equal(metricProbe('SUM(amount)', { schema_name: 'public', table_name: 'orders' }, 'postgresql'), 'SELECT\nSUM(amount)\nAS metric_value FROM public.orders');
  t.equal(metricProbe('COUNT(*)', { schema_name: 'shop', table_name: 'Order Lines' }, 'mysql'), 'SELECT\nCOUNT(*)\nAS metric_value FROM shop.`Order Lines`');
  t.equal(metricProbe('1', undefined, 'trino'), 'SELECT\n1\nAS metric_value');
});

t.test('the executor\'s aggregate rule, on each dialect\'s reader', async (t) => {
  await prepareGuard('postgresql');
  const probe = (expr: string, dialect: Dialect) => metricProbe(expr, { schema_name: 'shop', table_name: 'orders' }, dialect);
  const cases: Array<[string, boolean | RegExp]> = [
    ['SUM(amount)', true],
    ['SUM(amount) / NULLIF(COUNT(DISTINCT id), 0)', true],
    ['COALESCE(SUM(amount), 0)', true],
    ['amount', /no aggregate function/],
    ['SUM(amount) OVER ()', /window function/],
    ['(SELECT max(amount) FROM orders)', /subquery/],
    ['SUM(amount) AS metric_value, COUNT(*)', /one expression/],
  ];
  for (const dialect of ['postgresql', 'mysql', 'trino', 'bigquery'] as const) {
    for (const [expr, want] of cases) {
      const v = aggregateOf(probe(expr, dialect), dialect);
      if (want === true) t.same(v, { aggregate: true }, `${dialect}: ${expr}`);
      else {
        t.equal(v.aggregate, false, `${dialect}: ${expr}`);
        t.match(v.reason, want, `${dialect}: ${expr}`);
      }
    }
  }
  for (const dialect of ['postgresql', 'mysql'] as const) {
    t.match(aggregateOf(probe('amount + SUM(tax)', dialect), dialect).reason, /the column amount is read outside an aggregate function/, dialect);
  }
  t.same(aggregateOf(probe("percentile_cont(0.5) WITHIN GROUP (ORDER BY amount)", 'postgresql'), 'postgresql'), { aggregate: true });
  t.same(aggregateOf(probe("COUNT(*) FILTER (WHERE status = 'paid')", 'postgresql'), 'postgresql'), { aggregate: true });
  // an expression that brings a FROM of its own cannot pass as the metric of another table
  t.equal(aggregateOf('SELECT\nSUM(a) AS metric_value FROM other\nAS metric_value FROM orders', 'bigquery').aggregate, false);
  t.equal(aggregateOf('SELECT SUM(a) FROM other UNION SELECT\nSUM(b)\nAS metric_value FROM orders', 'postgresql').aggregate, false);
});

t.test('the catalog puts the block in the context, and answers without it when the semantic actor fails', async (t) => {
  const config = testConfig({ natsUrl: 'nats://127.0.0.1:1' });
  const introspected = {
    dialect: 'postgresql' as const, provider: 'postgresql', default_schema: 'public',
    tables: [
      { schema: 'public', name: 'orders', kind: 'table' as const, columns: [{ name: 'id', type: 'integer', nullable: false }, { name: 'customer_id', type: 'integer', nullable: false }] },
      { schema: 'public', name: 'customers', kind: 'table' as const, columns: [{ name: 'id', type: 'integer', nullable: false }] },
    ],
  };
  const asked: unknown[] = [];
  const deps: CatalogDeps = {
    config,
    catalog: createCatalogCache({ load: async () => introspected, ttlSeconds: 60 }),
    semantic: async (input) => {
      asked.push(input);
      return buildContext(LAYER, 'postgresql', input);
    },
  };
  const ok = await catalogContext({ question: 'turnover per client', tables: ['orders', 'customers'] }, deps, { requestId: 'r1' });
  t.same(asked, [{ question: 'turnover per client', tables: ['customers', 'orders'], default_schema: 'public', dialect: 'postgresql', max_chars: 6000 }], 'asked with the question, its tables and the budget');
  t.ok(ok.business_context.includes('LEFT JOIN ON orders.customer_id = customers.id'));
  t.ok(ok.business_context.includes('SQL: SUM(orders.amount)'));

  const warnings: string[] = [];
  const log = { warn: (_o: unknown, msg: string) => warnings.push(msg) } as unknown as NonNullable<CatalogDeps['log']>;
  const failing: CatalogDeps = { ...deps, log, semantic: async () => { throw new CortadoError('ACTOR_UNAVAILABLE', 'no semantic actor'); } };
  const without = await catalogContext({ question: 'turnover', tables: ['orders'] }, failing, { requestId: 'r2' });
  t.equal(without.business_context, '', 'the question goes on without the block');
  t.match(without.schema_text, /orders/);
  t.equal(warnings.length, 1, 'and a warning says why');

  const memory: CatalogDeps = { ...deps, semantic: async (input) => buildContext(LAYER, 'memory', input) };
  t.equal((await catalogContext({ question: 'turnover', tables: ['orders'] }, memory, { requestId: 'r3' })).business_context, '', 'not injected: nothing');
});

// ---- the actor over a real bus ----------------------------------------------------------------

const nats = await startNats();
const db = await createTestDb('sem');
await db.pool.query(GUARD_SCHEMA_SQL);
const cfgDb = await createTestDb('semcfg');
const config = testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  extra: {
    bus: { prefer_local: false },
    config_db: { enabled: true, postgresql: { host: cfgDb.host, port: cfgDb.port, database: cfgDb.name, user: cfgDb.user } },
  },
});
const stack = await startStack(config, { edge: false, actors: [Actor.Executor, Actor.Settings, Actor.Catalog, Actor.Semantic] });
const bus = stack.running.bus;
const ctx = { requestId: 'semantic-test', user: 'ann' };
t.teardown(async () => {
  await stack.stop();
  await db.drop();
  await cfgDb.drop();
  await nats.stop();
});

async function refusal(p: Promise<unknown>): Promise<CortadoError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  if (!(err instanceof CortadoError)) throw new Error(`expected a CortadoError, got ${String(err)}`);
  return err;
}

t.test('over the bus: entities and relationships checked against the database', async (t) => {
  const changes: unknown[] = [];
  const unlisten = bus.on(SemanticChangedEvt, (e) => {
    changes.push(e);
  });
  t.teardown(unlisten);

  const orders = await bus.request(SemanticEntityCreate, {
    schema_name: 'public', table_name: 'orders', display_name: 'Orders', primary_key: 'id', by: 'ann',
    columns: [{ name: 'status', role: 'dimension' }, { name: 'amount', role: 'metric', aggregation: 'sum' }],
  }, ctx);
  t.equal(orders.columns.length, 2);
  const customers = await bus.request(SemanticEntityCreate, { schema_name: 'public', table_name: 'customers', display_name: 'Customers', by: 'ann' }, ctx);

  let e = await refusal(bus.request(SemanticEntityCreate, { schema_name: 'public', table_name: 'nope', display_name: 'Nope', by: 'ann' }, ctx));
  t.equal(e.code, 'VALIDATION_FAILED');
  t.match(e.message, /^table_name: there is no table public\.nope in the database/);
  e = await refusal(bus.request(SemanticEntityCreate, { schema_name: 'public', table_name: 'products', display_name: 'P', primary_key: 'sku', by: 'ann' }, ctx));
  t.equal(e.message, 'primary_key: public.products has no column "sku"');
  e = await refusal(bus.request(SemanticEntityCreate, { schema_name: 'public', table_name: 'products', display_name: 'P', columns: [{ name: 'colour', role: 'dimension' }], by: 'ann' }, ctx));
  t.equal(e.message, 'columns: public.products has no column "colour"');
  e = await refusal(bus.request(SemanticColumnAdd, { entity_id: orders.id, name: 'discount', role: 'metric', by: 'ann' }, ctx));
  t.equal(e.message, 'name: public.orders has no column "discount"');
  e = await refusal(bus.request(SemanticColumnAdd, { entity_id: 999, name: 'x', role: 'metric', by: 'ann' }, ctx));
  t.equal(e.message, 'entity_id: there is no semantic entity 999');
  e = await refusal(bus.request(SemanticEntityGet, { id: 999 }, ctx));
  t.equal(e.code, 'NOT_FOUND');
  t.equal(e.message, 'there is no semantic entity 999');

  const rel = { name: 'order_customer', from_entity_id: orders.id, from_column: 'customer_id', to_entity_id: customers.id, to_column: 'id', relationship_type: 'many_to_one' as const, by: 'ann' };
  e = await refusal(bus.request(SemanticRelationshipCreate, { ...rel, from_entity_id: 999 }, ctx));
  t.equal(e.code, 'VALIDATION_FAILED');
  t.equal(e.message, 'from_entity_id: there is no semantic entity 999');
  e = await refusal(bus.request(SemanticRelationshipCreate, { ...rel, to_column: 'cust_id' }, ctx));
  t.equal(e.message, 'to_column: public.customers has no column "cust_id"');
  e = await refusal(bus.request(SemanticRelationshipCreate, { ...rel, from_column: 'client' }, ctx));
  t.equal(e.message, 'from_column: public.orders has no column "client"');
  const r = await bus.request(SemanticRelationshipCreate, rel, ctx);
  t.equal(r.join_type, 'LEFT', 'LEFT when not said');

  // a table made after the catalog read the schema: found all the same
  await bus.request(SemanticContext, {}, ctx);
  await db.pool.query('CREATE TABLE refunds (id serial PRIMARY KEY, order_id integer, amount numeric)');
  const refunds = await bus.request(SemanticEntityCreate, { schema_name: 'public', table_name: 'refunds', display_name: 'Refunds', primary_key: 'id', by: 'ann' }, ctx);
  t.equal(refunds.table_name, 'refunds');
  await bus.request(SemanticEntityDelete, { id: refunds.id, by: 'ann' }, ctx);

  await bus.flush();
  // the events come back to this process's listener: wait for them (a round trip, no clock)
  for (let i = 0; i < 100 && changes.length < 5; i += 1) await new Promise((r) => setTimeout(r, 20));
  t.equal(changes.length, 5, 'each write announced (three entities made, one relationship, one deleted), no refused one');
  t.match(changes[0], { kind: 'entity', action: 'create', record_id: orders.id, user: 'ann', request_id: 'semantic-test' });
});

t.test('over the bus: a metric must pass the guard, be an aggregate, and run on its table', async (t) => {
  const [orders] = (await bus.request(SemanticContext, {}, ctx)).entities.filter((x) => x.table_name === 'orders');
  t.ok(orders);
  const m = { name: 'revenue', display_name: 'Revenue', entity_id: orders!.id, by: 'ann' };
  const cases: Array<[string, RegExp]> = [
    ['amount', /^sql_expression: not an aggregate \(it has no aggregate function at its top level; use SUM\(\.\.\.\), COUNT\(\.\.\.\), AVG\(\.\.\.\)/],
    ['amount + SUM(quantity)', /^sql_expression: not an aggregate \(the column amount is read outside an aggregate function/],
    ['SUM(amount) OVER ()', /^sql_expression: not an aggregate \(a window function/],
    ['SUM((SELECT max(price) FROM products))', /^sql_expression: not an aggregate \(it holds a subquery/],
    ['SUM(amount) AS metric_value, 1', /^sql_expression: not an aggregate \(it must be one expression/],
    ['SUM(discount)', /^sql_expression: the database refuses it over public\.orders: .*discount/],
    ['SUM(amount) + pg_sleep(1)', /^sql_expression: the SQL guard refuses it: .*pg_sleep/],
    ['SUM(amount) -- a comment\n', /^sql_expression: no comments in the expression/],
    ["SUM(amount) FILTER (WHERE note <> '--') /* net */", /^sql_expression: no comments in the expression/],
    ['SUM(amount);', /^sql_expression: one expression, without a semicolon/],
  ];
  for (const [expr, want] of cases) {
    const e = await refusal(bus.request(SemanticMetricCreate, { ...m, sql_expression: expr }, ctx));
    t.equal(e.code, 'VALIDATION_FAILED', expr);
    t.match(e.message, want, expr);
  }
  const e = await refusal(bus.request(SemanticMetricCreate, { ...m, sql_expression: 'SUM(amount)', entity_id: 999 }, ctx));
  t.equal(e.message, 'entity_id: there is no semantic entity 999');

  const ok = await bus.request(SemanticMetricCreate, { ...m, sql_expression: 'SUM(amount) FILTER (WHERE status = \'paid\')', format_type: 'currency' }, ctx);
  t.equal(ok.active, true);
  const free = await bus.request(SemanticMetricCreate, { name: 'one', display_name: 'One', sql_expression: 'COUNT(*)', by: 'ann' }, ctx);
  t.equal(free.entity_id, null, 'without an entity: the guard and the aggregate rule only');

  const inactive = await bus.request(SemanticMetricUpdate, { id: free.id, active: false, by: 'ann' }, ctx);
  t.equal(inactive.active, false);
  t.same((await bus.request(SemanticMetricList, {}, ctx)).metrics.map((x) => x.id), [ok.id], 'active only by default');
  t.equal((await bus.request(SemanticMetricList, { active_only: false }, ctx)).metrics.length, 2);

  const check = await bus.request(SqlCheck, { sql: 'SELECT\nAVG(amount)\nAS metric_value FROM orders', expect: 'aggregate' }, ctx);
  t.same(check, { ok: true, sql: 'SELECT\nAVG(amount)\nAS metric_value FROM orders\nLIMIT 100', aggregate: true }, 'the executor says so itself');
  const plain = await bus.request(SqlCheck, { sql: 'SELECT 1' }, ctx);
  t.equal(plain.aggregate, undefined, 'and only when asked');
});

t.test('over the bus: the context, and the cache dropped at each change', async (t) => {
  const all = await bus.request(SemanticContext, {}, ctx);
  t.equal(all.storage, 'postgresql');
  t.equal(all.injected, true);
  t.ok(all.block.includes("SQL: SUM(amount) FILTER (WHERE status = 'paid')"));

  const viaCatalog = await bus.request(SchemaContext, { question: 'revenue per customer', tables: ['orders', 'customers'] }, ctx);
  t.ok(viaCatalog.business_context.includes('LEFT JOIN ON orders.customer_id = customers.id'), viaCatalog.business_context);
  t.ok(viaCatalog.business_context.includes("SQL: SUM(amount) FILTER (WHERE status = 'paid')"));

  const metric = all.metrics.find((x) => x.name === 'revenue')!;
  await bus.request(SemanticMetricUpdate, { id: metric.id, sql_expression: 'SUM(amount)', by: 'ann' }, ctx);
  const after = await bus.request(SemanticContext, { question: 'revenue', tables: ['orders'], default_schema: 'public' }, ctx);
  t.ok(after.block.includes('SQL: SUM(amount)\n'), 'the new expression at once');
  t.notOk(after.block.includes('FILTER'));

  const customers = all.entities.find((x) => x.table_name === 'customers')!;
  const deleted = await bus.request(SemanticEntityDelete, { id: customers.id, by: 'ann' }, ctx);
  t.equal(deleted.ok, true);
  t.equal(deleted.deleted_relationships.length, 1, 'its relationship went with it');
  const without = await bus.request(SemanticContext, {}, ctx);
  t.notOk(without.block.includes('Customers'));
  t.same(without.relationships, []);
});

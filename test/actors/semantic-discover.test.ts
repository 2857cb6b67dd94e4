/**
 * Auto-discover over a real NATS: the executor profiles real PostgreSQL and MariaDB tables
 * (`sql.profile`: pg_stats where ANALYZE ran, a bounded sample where it did not), the semantic
 * actor turns the figures into suggested entities, column roles and relationships (declared
 * foreign keys, names, value overlap), and sample values pass the mask rules first.
 */
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { MaskRuleCreate, SemanticDiscover, SemanticEntityCreate, SqlProfile } from '../../protocol/subjects.js';
import type { ColumnProfile, DiscoverReply, SuggestedEntity } from '../../protocol/schemas/semantic.js';
import { runCortado, type Running } from '../../cli/run.js';
import { discover, displayName, suggestRole } from '../../actors/semantic/discover.js';
import { quoteIdent, quoteString } from '../../actors/executor/profile-sql.js';
import { testConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { createTestMysqlDb } from '../helpers/mysql.js';
import { startFakeTrino } from '../helpers/fake-trino.js';
import { startFakeBigQuery } from '../helpers/fake-bigquery.js';

const log = createLogger({ svc: 'test', level: 'silent' });
const nats = await startNats();
t.teardown(() => nats.stop());

let n = 0;
const ctx = () => ({ requestId: `discover-${++n}`, user: 'admin' });

function entity(r: DiscoverReply, table: string): SuggestedEntity {
  const e = r.entities.find((x) => x.table_name === table);
  if (!e) throw new Error(`no suggested entity for ${table}`);
  return e;
}
function column(e: SuggestedEntity, name: string): ColumnProfile {
  const c = e.columns.find((x) => x.name === name);
  if (!c) throw new Error(`no column ${name} in ${e.table_name}`);
  return c;
}

const SHOP_SQL = `
CREATE TABLE customers (id integer PRIMARY KEY, name text NOT NULL, country text, email text, is_active boolean NOT NULL,
                        created_at timestamptz NOT NULL, notes text);
COMMENT ON TABLE customers IS 'People and companies who buy from us';
INSERT INTO customers SELECT g, 'Customer ' || g, (ARRAY['FR','DE','US'])[1 + g % 3], 'person' || g || '@example.com', g % 2 = 0,
       timestamptz '2024-01-01 00:00:00+00' + g * interval '1 day',
       repeat('A long free-form note about this customer and their habits. ', 3)
FROM generate_series(1, 30) g;
CREATE TABLE products (id integer PRIMARY KEY, sku text NOT NULL, category text NOT NULL, unit_price numeric(10,2) NOT NULL);
INSERT INTO products SELECT 100 + g, 'SKU-' || g, (ARRAY['coffee','tea'])[1 + g % 2], 3.5 + g FROM generate_series(1, 12) g;
CREATE TABLE orders (id integer PRIMARY KEY, customer_id integer NOT NULL REFERENCES customers(id), order_date date NOT NULL,
                     status text NOT NULL, total_amount numeric(12,2) NOT NULL, discount_rate numeric(4,2));
COMMENT ON TABLE orders IS 'One row per order';
INSERT INTO orders SELECT 1000 + g, 1 + g % 30, date '2024-03-01' + g, (ARRAY['new','paid','shipped'])[1 + g % 3], 10 * g + 0.5,
       CASE WHEN g % 4 = 0 THEN NULL ELSE 0.05 END
FROM generate_series(1, 200) g;
-- no foreign keys declared: the name (order_id) and the values (product_ref) tell
CREATE TABLE order_lines (id integer PRIMARY KEY, order_id integer NOT NULL, product_ref integer NOT NULL, quantity integer NOT NULL,
                          line_total numeric(12,2) NOT NULL) WITH (autovacuum_enabled = false);
INSERT INTO order_lines SELECT g, 1000 + 1 + g % 200, 101 + g % 12, 1 + g % 4, 2.5 * g FROM generate_series(1, 400) g;
CREATE TABLE raw_events (id bigint PRIMARY KEY, kind text, amount numeric(10,2), body text, attrs jsonb) WITH (autovacuum_enabled = false);
INSERT INTO raw_events SELECT g, CASE WHEN g % 5 = 0 THEN NULL ELSE 'kind-' || (g % 3) END, g * 1.25, repeat('x', 5000), '{"a": 1}'
FROM generate_series(1, 40) g;
CREATE SCHEMA empty_one;
CREATE SCHEMA "odd ""schema""";
CREATE TABLE "odd ""schema""".";"" ; DROP TABLE customers; --" ("it's" integer);
INSERT INTO "odd ""schema""".";"" ; DROP TABLE customers; --" VALUES (1), (2);
ANALYZE customers;
ANALYZE products;
ANALYZE orders;
`;

t.test('PostgreSQL', async (t) => {
  const db = await createTestDb('semdisc');
  await db.pool.query(SHOP_SQL);
  const config = testConfig({
    natsUrl: nats.url,
    db: { host: db.host, port: db.port, name: db.name, user: db.user },
    extra: { bus: { prefer_local: false }, query: { timeout: 20 } },
  });
  const running: Running = await runCortado({ config, roles: { edge: false, actors: ['executor', 'catalog', 'settings', 'masking', 'semantic'] }, log, name: 'discover-pg' });
  const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'discover-client', log });
  t.teardown(async () => {
    await bus.close();
    await running.stop(3_000);
    await db.drop();
  });
  // before any masking request (the rule cache is empty until the first)
  await bus.request(MaskRuleCreate, { field_pattern: '*email*', strategy: 'redact' }, ctx());
  const existing = await bus.request(SemanticEntityCreate, { schema_name: 'public', table_name: 'products', display_name: 'Catalogue', by: 'admin' }, ctx());

  const r = await bus.request(SemanticDiscover, { schema: 'public' }, ctx());
  t.same(r.entities.map((e) => e.table_name).sort(), ['customers', 'order_lines', 'orders', 'products', 'raw_events'], 'every table of the schema');
  t.same(r.missing, []);
  t.notOk(r.truncated);

  t.test('statistics where ANALYZE ran, a sample where it did not', async (t) => {
    const customers = entity(r, 'customers');
    t.ok(customers.columns.every((c) => c.source === 'statistics'), 'customers: pg_stats');
    t.equal(customers.row_count, 30, 'reltuples');
    t.equal(column(customers, 'country').distinct_count, 3, 'n_distinct');
    t.equal(column(customers, 'id').distinct_count, 30, 'a negative n_distinct is a share of the rows');
    t.equal(column(customers, 'notes').null_fraction, 0);
    const orders = entity(r, 'orders');
    t.equal(column(orders, 'discount_rate').null_fraction, 0.25, 'null_frac');
    t.equal(column(orders, 'total_amount').min, 10.5, 'min from the histogram, a number');
    t.equal(column(orders, 'total_amount').max, 2000.5);
    t.same(column(orders, 'status').sample_values.slice().sort(), ['new', 'paid', 'shipped'], 'the most common values');

    const events = entity(r, 'raw_events');
    t.ok(events.columns.every((c) => c.source === 'sample'), 'raw_events: sampled (never analysed)');
    t.equal(events.row_count, 40, 'the sample read the whole table');
    const kind = column(events, 'kind');
    t.equal(kind.distinct_count, 3);
    t.equal(kind.null_fraction, 8 / 40);
    t.equal(column(events, 'amount').min, 1.25);
    t.equal(column(events, 'amount').max, 50);
    t.ok(kind.sample_values.length > 0 && kind.sample_values.length <= 5);
    const body = column(events, 'body');
    t.equal(body.suggested_role, 'none', 'long text');
    t.ok(body.sample_values.every((v) => typeof v === 'string' && v.length <= 100), 'sample values are cut short');
    const attrs = column(events, 'attrs');
    t.same([attrs.source, attrs.sample_values, attrs.suggested_role], ['sample', [], 'none'], 'a document column is not read');
    t.match(attrs.reason, /no figures/);
    t.equal(entity(r, 'order_lines').columns[0]?.source, 'sample');
  });

  t.test('names, descriptions, keys and the entity already defined', async (t) => {
    t.equal(entity(r, 'order_lines').display_name, 'Order lines');
    t.equal(entity(r, 'customers').description, 'People and companies who buy from us');
    t.equal(entity(r, 'orders').description, 'One row per order');
    t.equal(entity(r, 'orders').primary_key, 'id');
    t.equal(entity(r, 'orders').entity_type, 'table');
    t.equal(column(entity(r, 'orders'), 'customer_id').name, 'customer_id');
    t.equal(entity(r, 'products').existing_entity_id, existing.id, 'products is already an entity');
    t.equal(entity(r, 'orders').existing_entity_id, undefined);
  });

  t.test('column roles, each with a reason', async (t) => {
    const role = (table: string, col: string) => {
      const c = column(entity(r, table), col);
      return [c.suggested_role, c.suggested_aggregation];
    };
    t.same(role('orders', 'total_amount'), ['metric', 'sum'], 'an amount adds up');
    t.same(role('orders', 'discount_rate'), ['metric', 'avg'], 'a rate is averaged');
    t.same(role('products', 'unit_price'), ['metric', 'avg'], 'a price is averaged');
    t.same(role('order_lines', 'quantity'), ['metric', 'sum'], 'a quantity adds up');
    t.same(role('customers', 'country'), ['dimension', undefined]);
    t.same(role('customers', 'is_active'), ['dimension', undefined]);
    t.same(role('orders', 'order_date'), ['dimension', undefined]);
    t.same(role('customers', 'id'), ['none', undefined], 'the primary key');
    t.same(role('orders', 'customer_id'), ['none', undefined], 'a foreign key');
    t.same(role('order_lines', 'order_id'), ['none', undefined], 'an identifier by name');
    t.same(role('customers', 'notes'), ['none', undefined], 'long free text');
    for (const e of r.entities) for (const c of e.columns) t.ok(c.reason.length > 3, `${e.table_name}.${c.name}: ${c.reason}`);
  });

  t.test('relationships: declared keys, then names, then value overlap', async (t) => {
    const rel = (from: string, col: string) => r.relationships.filter((x) => x.from_table === `public.${from}` && x.from_column === col);
    const fk = rel('orders', 'customer_id');
    t.equal(fk.length, 1);
    t.match(fk[0], { to_table: 'public.customers', to_column: 'id', evidence: 'foreign_key', confidence: 1, relationship_type: 'many_to_one', join_type: 'LEFT' });
    const named = rel('order_lines', 'order_id');
    t.equal(named.length, 1);
    t.match(named[0], { to_table: 'public.orders', to_column: 'id', evidence: 'name', confidence: 1 });
    const overlap = rel('order_lines', 'product_ref');
    t.equal(overlap.length, 1, 'only the table whose keys hold the values');
    t.match(overlap[0], { to_table: 'public.products', to_column: 'id', evidence: 'overlap', confidence: 1 });
    t.same(rel('order_lines', 'quantity'), [], 'no relationship from a measure');
  });

  t.test('sample values and min/max pass the mask rules', async (t) => {
    const email = column(entity(r, 'customers'), 'email');
    t.equal(email.masked, true);
    t.ok(email.sample_values.length > 0);
    t.ok(email.sample_values.every((v) => v === '[REDACTED]'), 'masked sample values');
    t.not(email.min, 'person1@example.com');
    t.notOk(JSON.stringify(r).includes('@example.com'), 'no address anywhere in the reply');
    t.notOk(column(entity(r, 'customers'), 'country').masked, 'other columns as they are');
    t.ok(column(entity(r, 'customers'), 'country').sample_values.includes('FR'));
  });

  t.test('tables asked for by name; unknown ones are missing', async (t) => {
    const some = await bus.request(SemanticDiscover, { schema: 'public', tables: ['orders', 'no_such_table', 'pg_class'] }, ctx());
    t.same(some.entities.map((e) => e.table_name), ['orders']);
    t.same(some.missing, ['no_such_table', 'pg_class']);
    t.equal(some.relationships.length, 1, 'the declared key to a table not asked for');
    t.equal(some.relationships[0]?.to_table, 'public.customers');
  });

  t.test('the reply stays bounded: past 3000 columns the rest waits', async (t) => {
    const cols = (n: number) => Array.from({ length: n }, (_, i) => `c${i} integer`).join(', ');
    await db.pool.query(`CREATE SCHEMA wide; CREATE TABLE wide.a_wide (${cols(1500)}); CREATE TABLE wide.b_wide (${cols(1500)}); CREATE TABLE wide.c_small (${cols(3)})`);
    const wide = await bus.request(SemanticDiscover, { schema: 'wide' }, ctx());
    t.same(wide.entities.map((e) => e.table_name), ['a_wide', 'b_wide']);
    t.equal(wide.truncated, true);
    const rest = await bus.request(SemanticDiscover, { schema: 'wide', tables: ['c_small'] }, ctx());
    t.same(rest.entities.map((e) => e.table_name), ['c_small']);
    t.notOk(rest.truncated);
  });

  t.test('a schema with no tables, and one that does not exist', async (t) => {
    const empty = await bus.request(SemanticDiscover, { schema: 'empty_one' }, ctx());
    t.same([empty.entities, empty.relationships, empty.missing], [[], [], []]);
    const none = await bus.request(SemanticDiscover, { schema: 'no_such_schema', tables: ['orders'] }, ctx());
    t.same(none.entities, []);
    t.same(none.missing, ['orders']);
  });

  t.test('names that are SQL are only ever quoted', async (t) => {
    const odd = await bus.request(SemanticDiscover, { schema: 'odd "schema"', tables: [';" ; DROP TABLE customers; --'] }, ctx());
    t.equal(odd.entities.length, 1);
    t.equal(odd.entities[0]?.columns[0]?.name, "it's");
    t.equal(odd.entities[0]?.columns[0]?.distinct_count, 2);
    const still = await db.pool.query('SELECT count(*)::int AS n FROM customers');
    t.equal(still.rows[0].n, 30, 'customers is still there');
    t.equal(quoteIdent('postgresql', 'a"b'), '"a""b"');
    t.equal(quoteString('postgresql', "it's \\"), "E'it''s \\\\'");
    t.equal(quoteString('mysql', "it's \\"), "'it''s \\\\'");
    t.equal(quoteIdent('mysql', 'a`b'), '`a``b`');
    t.equal(quoteString('bigquery', "a'\nb"), "'a\\'\\nb'");
  });

  t.test('sql.profile directly: overlap checks and their errors', async (t) => {
    const p = await bus.request(SqlProfile, {
      schema: 'public',
      tables: [],
      overlaps: [
        { from_table: 'orders', from_column: 'customer_id', to_table: 'customers', to_column: 'id' },
        { from_table: 'order_lines', from_column: 'product_ref', to_table: 'customers', to_column: 'id' },
        { from_table: 'orders', from_column: 'nope', to_table: 'customers', to_column: 'id' },
        { from_table: 'orders', from_column: 'status', to_table: 'customers', to_column: 'id' },
      ],
    }, ctx());
    t.same(p.tables, [], 'tables: [] profiles none');
    t.match(p.overlaps[0], { sampled: 30, found: 30, share: 1 });
    t.match(p.overlaps[1], { sampled: 12, found: 0, share: 0 }, 'product ids are no customer ids');
    t.match(p.overlaps[2], { error: /no column nope/ });
    t.type(p.overlaps[3]?.error, 'string', 'text against integers: the database refuses, said per pair');
    t.equal(p.dialect, 'postgresql');
    const bad = await bus.request(SqlProfile, { schema: '' }, ctx()).catch((e: unknown) => e);
    t.ok(bad instanceof CortadoError && bad.code === 'VALIDATION_FAILED', 'an empty schema is refused');
    const control = await bus.request(SemanticDiscover, { schema: 'public', tables: ['orders', 'a\u0000b'] }, ctx()).catch((e: unknown) => e);
    t.match(control, { code: 'VALIDATION_FAILED', message: /^tables\[1\]: control characters/ }, 'a control character in a name: refused, the field named');
  });
});

t.test('MariaDB: information_schema and a bounded sample', async (t) => {
  const db = await createTestMysqlDb('semdisc');
  await db.pool.query(`
    CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(100) NOT NULL, country CHAR(2), email VARCHAR(200)) COMMENT 'Who buys';
    CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT NOT NULL, placed_at DATETIME NOT NULL, total_amount DECIMAL(12,2) NOT NULL,
                         is_gift TINYINT(1) NOT NULL, CONSTRAINT fk_c FOREIGN KEY (customer_id) REFERENCES customers(id));
    CREATE TABLE payments (id INT PRIMARY KEY, order_id INT NOT NULL, paid DECIMAL(12,2) NOT NULL);
    INSERT INTO customers VALUES (1, 'Ada', 'FR', 'ada@example.com'), (2, 'Grace', 'US', 'grace@example.com'), (3, 'Alan', NULL, 'alan@example.com');
    INSERT INTO orders VALUES (10, 1, '2024-01-02 10:00:00', 12.50, 0), (11, 2, '2024-01-03 11:00:00', 99.00, 1), (12, 1, '2024-02-01 09:30:00', 5.25, 0);
    INSERT INTO payments VALUES (1, 10, 12.50), (2, 11, 99.00);
  `);
  const config = testConfig({ natsUrl: nats.url, extra: { bus: { prefer_local: false }, database: { provider: 'mysql', mysql: db.section() } } });
  const running = await runCortado({ config, roles: { edge: false, actors: ['executor', 'settings', 'masking', 'semantic'] }, log, name: 'discover-my' });
  const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'discover-my-client', log });
  t.teardown(async () => {
    await bus.close();
    await running.stop(3_000);
    await db.drop();
  });
  await bus.request(MaskRuleCreate, { field_pattern: 'customers.email', strategy: 'hash' }, ctx());

  const r = await bus.request(SemanticDiscover, { schema: db.name, tables: ['customers', 'orders', 'payments', 'ghost'] }, ctx());
  t.same(r.missing, ['ghost']);
  const customers = entity(r, 'customers');
  t.equal(customers.description, 'Who buys');
  t.equal(customers.primary_key, 'id', 'from KEY_COLUMN_USAGE');
  t.equal(customers.row_count, 3);
  t.ok(customers.columns.every((c) => c.source === 'sample'));
  t.equal(column(customers, 'country').null_fraction, 1 / 3);
  t.equal(column(customers, 'country').distinct_count, 2);
  const email = column(customers, 'email');
  t.equal(email.masked, true);
  t.notOk(JSON.stringify(r).includes('@example.com'), 'hashed, not shown');
  const orders = entity(r, 'orders');
  t.same([column(orders, 'total_amount').suggested_role, column(orders, 'total_amount').suggested_aggregation], ['metric', 'sum']);
  t.equal(column(orders, 'total_amount').min, 5.25);
  t.equal(column(orders, 'total_amount').max, 99);
  t.equal(column(orders, 'is_gift').suggested_role, 'dimension', 'TINYINT(1) is a flag');
  t.equal(column(orders, 'placed_at').suggested_role, 'dimension');
  t.equal(column(orders, 'placed_at').min, '2024-01-02 10:00:00');
  t.equal(column(entity(r, 'payments'), 'paid').suggested_aggregation, 'sum');
  const fk = r.relationships.find((x) => x.evidence === 'foreign_key');
  t.match(fk, { from_table: `${db.name}.orders`, from_column: 'customer_id', to_table: `${db.name}.customers`, to_column: 'id', confidence: 1 });
  const named = r.relationships.find((x) => x.from_column === 'order_id');
  t.match(named, { from_table: `${db.name}.payments`, to_table: `${db.name}.orders`, to_column: 'id', evidence: 'name', confidence: 1 });
});

const WAREHOUSE_SQL = `
CREATE SCHEMA shop;
CREATE TABLE shop.customers (id integer PRIMARY KEY, country text, email text);
INSERT INTO shop.customers SELECT g, (ARRAY['FR','DE'])[1 + g % 2], 'c' || g || '@example.com' FROM generate_series(1, 20) g;
CREATE TABLE shop.orders (id integer PRIMARY KEY, customer_id integer NOT NULL, total_amount numeric(12,2) NOT NULL, placed date NOT NULL);
INSERT INTO shop.orders SELECT 500 + g, 1 + g % 20, g * 2.5, date '2024-01-01' + g FROM generate_series(1, 60) g;
`;

t.test('Trino (the stand-in): a sample and the overlap check', async (t) => {
  const db = await createTestDb('semdisc_trino');
  await db.pool.query(WAREHOUSE_SQL);
  const fake = await startFakeTrino({ databaseUrl: db.url, catalog: 'postgresql', pageSize: 50 });
  const config = testConfig({
    natsUrl: nats.url,
    extra: { bus: { prefer_local: false }, database: { provider: 'trino', trino: { host: fake.host, port: fake.port, http_scheme: 'http', user: 'cortado', catalog: 'postgresql', schema: 'shop' } } },
  });
  const running = await runCortado({ config, roles: { edge: false, actors: ['executor', 'settings', 'masking', 'semantic'] }, log, name: 'discover-trino' });
  const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'discover-trino-client', log });
  t.teardown(async () => {
    await bus.close();
    await running.stop(3_000);
    await fake.close();
    await db.drop();
  });
  await bus.request(MaskRuleCreate, { field_pattern: 'email', strategy: 'redact' }, ctx());
  const r = await bus.request(SemanticDiscover, { schema: 'shop' }, ctx());
  t.same(r.entities.map((e) => e.table_name), ['customers', 'orders']);
  const orders = entity(r, 'orders');
  t.ok(orders.columns.every((c) => c.source === 'sample'), 'Trino: sampled');
  t.equal(orders.row_count, 60);
  t.equal(orders.primary_key, 'id', 'no declared keys: the id column');
  t.equal(column(orders, 'total_amount').suggested_aggregation, 'sum');
  t.equal(column(orders, 'total_amount').max, 150);
  t.equal(column(entity(r, 'customers'), 'email').masked, true);
  t.notOk(JSON.stringify(r).includes('@example.com'));
  t.match(r.relationships, [{ from_table: 'shop.orders', from_column: 'customer_id', to_table: 'shop.customers', to_column: 'id', evidence: 'name', confidence: 1 }]);
  const samples = fake.statements.map((x) => x.sql).filter((q) => /LIMIT 1000$/.test(q));
  t.ok(samples.includes('SELECT "id", substr("country", 1, 200), substr("email", 1, 200) FROM "shop"."customers" LIMIT 1000'), 'text read only in part, the table named in two parts');
  t.ok(fake.statements.some((x) => /^SELECT count\(DISTINCT "id"\) FROM "shop"\."customers" WHERE "id" IN \(\d+(, \d+)*\)$/.test(x.sql)), 'the overlap check, values as literals');
});

t.test('Trino without a configured catalog: schemas are catalog.schema', async (t) => {
  const db = await createTestDb('semdisc_trino2');
  await db.pool.query(WAREHOUSE_SQL);
  // the stand-in's one catalog is named as the database, so three-part names reach PostgreSQL too
  const fake = await startFakeTrino({ databaseUrl: db.url, catalog: db.name });
  const config = testConfig({
    natsUrl: nats.url,
    extra: { bus: { prefer_local: false }, database: { provider: 'trino', trino: { host: fake.host, port: fake.port, http_scheme: 'http', user: 'cortado', catalog: '', schema: '' } } },
  });
  const running = await runCortado({ config, roles: { edge: false, actors: ['executor', 'settings'] }, log, name: 'discover-trino2' });
  const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'discover-trino2-client', log });
  t.teardown(async () => {
    await bus.close();
    await running.stop(3_000);
    await fake.close();
    await db.drop();
  });
  const byCatalog = await bus.request(SqlProfile, { catalog: db.name, schema: 'shop', tables: ['orders'] }, ctx());
  t.equal(byCatalog.tables[0]?.sampled_rows, 60, 'catalog and schema apart');
  t.equal(byCatalog.tables[0]?.select_sql, `SELECT "id", "customer_id", "total_amount", "placed" FROM "${db.name}"."shop"."orders"`);
  const qualified = await bus.request(SqlProfile, { schema: `${db.name}.shop`, tables: ['customers'] }, ctx());
  t.equal(qualified.tables[0]?.sampled_rows, 20, 'the schema as introspection names it');
  const sql = fake.statements.map((s) => s.sql).filter((q) => /LIMIT 1000/.test(q));
  t.ok(sql.some((q) => q.includes(`FROM "${db.name}"."shop"."customers" LIMIT 1000`)), 'named in three parts');

  // no masking actor runs beside this executor: none is needed, sql.profile answers masked values
  const plain = { bus, log, store: { semantic: { listEntities: async () => [] } } };
  const found = await discover({ catalog: db.name, schema: 'shop', tables: ['customers'] }, plain, ctx());
  t.equal(found.entities.length, 1, 'discovered without a masking actor');
});

t.test('BigQuery (the stand-in): a sample within the byte budget, TABLESAMPLE past it', async (t) => {
  const db = await createTestDb('semdisc_bq');
  await db.pool.query(WAREHOUSE_SQL);
  let huge = false;
  const fake = await startFakeBigQuery({ databaseUrl: db.url, projectId: 'cortado-test', bytesProcessed: (sql) => (huge ? 5 * 1024 ** 4 : sql.length * 1024) });
  const config = testConfig({
    natsUrl: nats.url,
    extra: {
      bus: { prefer_local: false },
      database: { provider: 'bigquery', bigquery: { project_id: 'cortado-test', dataset: 'shop', location: 'US', credentials_json: JSON.stringify(fake.serviceAccount()), base_url: fake.url, timeout: 10 } },
    },
  });
  const running = await runCortado({ config, roles: { edge: false, actors: ['executor', 'settings', 'masking', 'semantic'] }, log, name: 'discover-bq' });
  const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'discover-bq-client', log });
  t.teardown(async () => {
    await bus.close();
    await running.stop(3_000);
    await fake.close();
    await db.drop();
  });
  const r = await bus.request(SemanticDiscover, { schema: 'shop', tables: ['orders'] }, ctx());
  const orders = entity(r, 'orders');
  t.ok(orders.columns.every((c) => c.source === 'sample'), 'BigQuery: sampled');
  t.equal(orders.row_count, 60);
  t.equal(column(orders, 'placed').suggested_role, 'dimension');
  const sampled = fake.requests.filter((q) => /LIMIT 1000/.test(JSON.stringify(q.body ?? '')));
  t.ok(sampled.length > 0, 'the sample has its LIMIT');

  huge = true;
  const before = fake.requests.length;
  const p = await bus.request(SqlProfile, { schema: 'shop', tables: ['orders'] }, ctx());
  const asked = fake.requests.slice(before).map((q) => JSON.stringify(q.body ?? ''));
  t.ok(asked.some((b) => /TABLESAMPLE SYSTEM \(0\.0\d+ PERCENT\) LIMIT 1000/.test(b)), 'over the budget: a TABLESAMPLE share sized to fit');
  const table = p.tables[0];
  t.equal(table?.source, 'none', 'the stand-in cannot run TABLESAMPLE: no figures');
  t.match(table?.note, /^not sampled: /, 'and says why');
  t.ok(table?.columns.every((c) => c.source === undefined && c.sample_values.length === 0));
});

t.test('pure parts: display names and roles', async (t) => {
  t.equal(displayName('order_lines'), 'Order lines');
  t.equal(displayName('customerId'), 'Customer ID');
  t.equal(displayName('ORDER_ITEMS'), 'Order items');
  const ctxRole = { isPrimaryKey: false, foreignKeyTo: undefined, rowCount: 1000 };
  t.equal(suggestRole({ name: 'status_code', data_type: 'integer', distinct_count: 4 }, ctxRole).suggested_role, 'dimension', 'few whole numbers: a code');
  t.equal(suggestRole({ name: 'weight', data_type: 'double precision', distinct_count: 4 }, ctxRole).suggested_aggregation, 'sum');
  t.equal(suggestRole({ name: 'payload', data_type: 'jsonb' }, ctxRole).suggested_role, 'none');
  t.equal(suggestRole({ name: 'conversion_pct', data_type: 'FLOAT64' }, ctxRole).suggested_aggregation, 'avg');
  t.equal(suggestRole({ name: 'city', data_type: 'STRING', distinct_count: 900 }, ctxRole).suggested_role, 'dimension');
  t.equal(suggestRole({ name: 'customerId', data_type: 'INT64' }, ctxRole).suggested_role, 'none', 'camelCase identifier');
  t.equal(suggestRole({ name: 'CUSTOMER_ID', data_type: 'int(11)' }, ctxRole).suggested_role, 'none');
  t.equal(suggestRole({ name: 'paid', data_type: 'decimal(10,2)' }, ctxRole).suggested_role, 'metric', 'paid is no identifier');
  t.equal(suggestRole({ name: 'PAID', data_type: 'int(11)', distinct_count: 500 }, ctxRole).suggested_role, 'metric');
});

import t from 'tap';
import {
  buildCatalog,
  buildContext,
  createCatalogCache,
  describe,
  renderSchemaText,
  renderTable,
  requireTable,
  resolveTable,
  scoreTables,
  selectTables,
  tables,
  tokenize,
  type Catalog,
  type CatalogDeps,
} from '../../actors/catalog/handle.js';
import { CortadoError } from '../../protocol/errors.js';
import type { DbColumn, DbTable, SqlIntrospectReply } from '../../protocol/schemas/sql.js';
import { testConfig } from '../helpers/config.js';

// ---- fixture: a shop with 24 tables over three schemas ------------------------------------

type Fk = NonNullable<DbTable['foreign_keys']>[number];

function col(name: string, type = 'integer', nullable = false, comment?: string): DbColumn {
  return { name, type, nullable, ...(comment ? { comment } : {}) };
}
function fk(column: string, ref: string, refColumn = 'id', refSchema = 'public'): Fk {
  return { columns: [column], ref_schema: refSchema, ref_table: ref, ref_columns: [refColumn] };
}
function table(name: string, columns: DbColumn[], more: Partial<DbTable> = {}): DbTable {
  return { schema: 'public', name, kind: 'table', columns, ...more };
}

const TABLES: DbTable[] = [
  table('customers', [col('id'), col('name', 'text'), col('email', 'text', true), col('city', 'text', true)], { row_estimate: 5000 }),
  table('orders', [
    col('id'), col('customer_id'), col('store_id'), col('ordered_at', 'timestamp with time zone'),
    col('total', 'numeric(12,2)', false, 'order total in EUR,\n incl. VAT'), col('note', 'text', true),
  ], { row_estimate: 52000, comment: 'one row per checkout', foreign_keys: [fk('customer_id', 'customers'), fk('store_id', 'stores')] }),
  table('order_items', [col('order_id'), col('product_id'), col('quantity'), col('unit_price', 'numeric(10,2)')], {
    row_estimate: 180000, foreign_keys: [fk('order_id', 'orders'), fk('product_id', 'products')],
  }),
  table('products', [col('id'), col('name', 'text'), col('category_id'), col('price', 'numeric(10,2)')], {
    row_estimate: 800, foreign_keys: [fk('category_id', 'categories')],
  }),
  table('categories', [col('id'), col('name', 'text'), col('parent_id', 'integer', true)], {
    row_estimate: 40, foreign_keys: [fk('parent_id', 'categories')],
  }),
  table('stores', [col('id'), col('name', 'text'), col('city', 'text'), col('region_id')], {
    row_estimate: 30, foreign_keys: [fk('region_id', 'regions')],
  }),
  table('regions', [col('id'), col('name', 'text')], { row_estimate: 5 }),
  table('employees', [col('id'), col('name', 'text'), col('store_id'), col('hired_at', 'date')], {
    row_estimate: 400, foreign_keys: [fk('store_id', 'stores')],
  }),
  table('shifts', [col('id'), col('employee_id'), col('starts_at', 'timestamp'), col('ends_at', 'timestamp')], {
    row_estimate: 20000, foreign_keys: [fk('employee_id', 'employees')],
  }),
  table('suppliers', [col('id'), col('name', 'text'), col('country', 'text')], { row_estimate: 60 }),
  table('purchase_orders', [col('id'), col('supplier_id'), col('ordered_at', 'date')], {
    row_estimate: 3000, foreign_keys: [fk('supplier_id', 'suppliers')],
  }),
  table('inventory', [col('store_id'), col('product_id'), col('on_hand')], {
    row_estimate: 24000, foreign_keys: [fk('store_id', 'stores'), fk('product_id', 'products')],
  }),
  table('promotions', [col('id'), col('code', 'text'), col('discount_pct', 'numeric')], { row_estimate: 120 }),
  table('web_sessions', [col('id'), col('customer_id', 'integer', true), col('user_agent', 'text', true)], { row_estimate: 900000 }),
  table('page_views', [col('session_id'), col('url', 'text'), col('viewed_at', 'timestamp')], {
    row_estimate: 5000000, foreign_keys: [fk('session_id', 'web_sessions')],
  }),
  table('refunds', [col('id'), col('order_id'), col('amount', 'numeric(12,2)'), col('reason', 'text', true)], {
    row_estimate: 700, foreign_keys: [fk('order_id', 'orders')],
  }),
  table('loyalty_cards', [col('id'), col('customer_id'), col('points')], { row_estimate: 2500 }),
  table('monthly_sales', [col('month', 'date', true), col('store_id', 'integer', true), col('revenue', 'numeric', true)], {
    kind: 'view', comment: 'revenue per store and month',
  }),
  table('audit_log', [col('id'), col('actor', 'text'), col('action', 'text')], { row_estimate: 100 }),
  table('shipment_lines', [col('order_id'), col('product_id'), col('shipped_at', 'timestamp', true)], {
    row_estimate: 150000,
    foreign_keys: [{ columns: ['order_id', 'product_id'], ref_schema: 'public', ref_table: 'order_items', ref_columns: ['order_id', 'product_id'] }],
  }),
  table('events', [col('id')], { row_estimate: 10 }),
  table('Events', [col('id'), col('title', 'text')], { row_estimate: 10 }),
  { schema: 'hr', name: 'payroll', kind: 'table', columns: [col('employee_id'), col('month', 'date'), col('gross', 'numeric')], row_estimate: 4800, foreign_keys: [fk('employee_id', 'employees')] },
  { schema: 'archive', name: 'orders', kind: 'table', columns: [col('id'), col('total', 'numeric')], row_estimate: 1_000_000, comment: 'orders before 2020' },
];

const REPLY: SqlIntrospectReply = { dialect: 'postgresql', provider: 'postgresql', default_schema: 'public', tables: TABLES };
const catalog: Catalog = buildCatalog(REPLY);

function entry(name: string) {
  const e = catalog.entries.find((x) => x.name === name);
  if (!e) throw new Error(`fixture has no ${name}`);
  return e;
}

const config = testConfig({ natsUrl: 'nats://127.0.0.1:1' });
const ctx = { requestId: 'test' };

// ---- names ---------------------------------------------------------------------------------

t.test('tables outside the default schema are schema-qualified, the list is sorted by name', async (t) => {
  const deps: CatalogDeps = { config, catalog: createCatalogCache({ load: async () => REPLY, ttlSeconds: 60 }) };
  const reply = await tables({}, deps, ctx);
  const names = reply.tables.map((x) => x.name);
  t.equal(names.length, TABLES.length);
  t.same(names.slice(0, 4), ['archive.orders', 'audit_log', 'categories', 'customers']);
  t.ok(names.includes('hr.payroll'));
  t.ok(names.includes('orders'));
  t.notOk(names.includes('public.orders'), 'default schema is unqualified');
  t.ok(names.indexOf('Events') < names.indexOf('events') && names.indexOf('events') < names.indexOf('hr.payroll'), 'case-insensitive order');
  t.same(reply.tables.find((x) => x.name === 'orders'), {
    name: 'orders', schema: 'public', kind: 'table', comment: 'one row per checkout', column_count: 6,
  });
  t.same(reply.tables.find((x) => x.name === 'monthly_sales')?.kind, 'view');
});

t.test('describe resolves plain, case-insensitive, qualified and quoted names', async (t) => {
  const cases: Array<[string, string]> = [
    ['orders', 'orders'],
    ['ORDERS', 'orders'],
    ['public.orders', 'orders'],
    ['Public.Orders', 'orders'],
    ['archive.orders', 'archive.orders'],
    ['hr.payroll', 'hr.payroll'],
    ['HR.PAYROLL', 'hr.payroll'],
    ['payroll', 'hr.payroll'],
    ['"hr"."payroll"', 'hr.payroll'],
    ['hr."payroll"', 'hr.payroll'],
    ['events', 'events'],
    ['Events', 'Events'],
    ['"Events"', 'Events'],
    ['"events"', 'events'],
    ['  order_items ', 'order_items'],
  ];
  for (const [input, name] of cases) {
    const r = resolveTable(catalog, input);
    t.equal('found' in r ? r.found.name : JSON.stringify(r), name, input);
  }

  const deps: CatalogDeps = { config, catalog: createCatalogCache({ load: async () => REPLY, ttlSeconds: 60 }) };
  const d = await describe({ table: 'HR.payroll' }, deps, ctx);
  t.same(d, { table: 'hr.payroll', schema: 'hr', kind: 'table', columns: TABLES.find((x) => x.name === 'payroll')?.columns });
  const v = await describe({ table: 'monthly_sales' }, deps, ctx);
  t.equal(v.kind, 'view');
  t.equal(v.comment, 'revenue per store and month');
});

t.test('unknown and ambiguous names are errors with stable codes', async (t) => {
  t.throws(() => requireTable(catalog, 'ordrs'), { code: 'NOT_FOUND', message: 'there is no table "ordrs" (did you mean "orders"?)' });
  t.throws(() => requireTable(catalog, 'custmers'), { code: 'NOT_FOUND', message: /did you mean "customers"/ });
  t.throws(() => requireTable(catalog, 'zzzzzzzz'), { code: 'NOT_FOUND', message: 'there is no table "zzzzzzzz"' });
  t.throws(() => requireTable(catalog, '"ORDERS"'), { code: 'NOT_FOUND' }, 'quoted is exact');
  t.throws(() => requireTable(catalog, '"HR".payroll'), { code: 'NOT_FOUND' }, 'quoted schema is exact');
  t.throws(() => requireTable(catalog, 'nosuch.orders'), { code: 'NOT_FOUND' });
  t.throws(() => requireTable(catalog, '"orders'), { code: 'NOT_FOUND' }, 'unterminated quote');
  t.throws(() => requireTable(catalog, 'EVENTS'), { code: 'VALIDATION_FAILED', message: /ambiguous.*"Events" or "events"/ });

  const deps: CatalogDeps = { config, catalog: createCatalogCache({ load: async () => REPLY, ttlSeconds: 60 }) };
  await t.rejects(describe({ table: 'nope' }, deps, ctx), { code: 'NOT_FOUND' });
});

// ---- schema text ---------------------------------------------------------------------------

t.test('a table renders with row estimate, comments, NOT NULL and foreign keys', async (t) => {
  t.equal(
    renderTable(entry('orders'), 'public'),
    [
      'Table orders (~52000 rows) -- one row per checkout',
      '  id integer NOT NULL',
      '  customer_id integer NOT NULL -> customers.id',
      '  store_id integer NOT NULL -> stores.id',
      '  ordered_at timestamp with time zone NOT NULL',
      '  total numeric(12,2) NOT NULL -- order total in EUR, incl. VAT',
      '  note text',
    ].join('\n'),
  );
  t.equal(
    renderTable(entry('monthly_sales'), 'public'),
    'View monthly_sales -- revenue per store and month\n  month date\n  store_id integer\n  revenue numeric',
  );
  t.equal(
    renderTable(entry('shipment_lines'), 'public'),
    [
      'Table shipment_lines (~150000 rows)',
      '  order_id integer NOT NULL',
      '  product_id integer NOT NULL',
      '  shipped_at timestamp',
      '  FOREIGN KEY (order_id, product_id) -> order_items (order_id, product_id)',
    ].join('\n'),
  );
  t.match(renderTable(entry('hr.payroll'), 'public'), /^Table hr\.payroll \(~4800 rows\)\n {2}employee_id integer NOT NULL -> employees\.id\n/);
});

t.test('the schema text starts with the dialect and is deterministic', async (t) => {
  const text = renderSchemaText(catalog, ['orders', 'monthly_sales']);
  t.match(text, /^Dialect: PostgreSQL\n\n<data source="schema">\nTable orders \(~52000 rows\)/, 'the tables fenced as data');
  t.match(text, /\n<\/data>$/);
  t.match(text, /\n\nView monthly_sales -- revenue per store and month\n/);
  t.notMatch(text, /customers \(/, 'only the named tables');
  t.equal(renderSchemaText(buildCatalog(REPLY), ['orders', 'monthly_sales']), text);
  const mysql = buildCatalog({ ...REPLY, dialect: 'mysql', provider: 'mysql' });
  t.match(renderSchemaText(mysql, ['orders']), /^Dialect: MySQL\n/);
});

// ---- retrieval -----------------------------------------------------------------------------

t.test('words: lowercased, snake_case and camelCase split, plurals folded', async (t) => {
  const words = tokenize('OrderItems order_items Categories boxes status Sales the of');
  for (const w of ['order', 'item', 'category', 'box', 'status', 'sale']) t.ok(words.includes(w), w);
  t.notOk(words.includes('the'));
  t.notOk(words.includes('items'));
});

t.test('retrieval picks the tables a question names, then their foreign-key neighbours', async (t) => {
  const picked = selectTables(catalog, 'How many refunds per region last month?', [], 6);
  t.ok(picked.length <= 6, `at most 6: ${picked.join(', ')}`);
  for (const name of ['refunds', 'regions', 'orders', 'stores']) t.ok(picked.includes(name), `${name} in ${picked.join(', ')}`);
  for (const name of ['page_views', 'audit_log', 'promotions', 'web_sessions']) t.notOk(picked.includes(name), `${name} not in ${picked.join(', ')}`);
  t.same(picked, [...picked].sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase())), 'sorted');

  const scored = scoreTables(catalog, 'How many refunds per region last month?');
  t.ok(['refunds', 'regions'].includes(scored[0]?.name ?? ''), 'a named table scores best');

  const products = selectTables(catalog, 'top selling products by quantity and category', [], 6);
  for (const name of ['products', 'order_items', 'categories']) t.ok(products.includes(name), `${name} in ${products.join(', ')}`);
  t.notOk(products.includes('shifts'));
});

t.test('retrieval keeps to the cap, and uses the conversation history', async (t) => {
  const small = selectTables(catalog, 'refunds per region', [], 2);
  t.same(small, ['refunds', 'regions'], 'no room for neighbours');

  const without = selectTables(catalog, 'and the loyalty points?', [], 4);
  t.ok(without.includes('loyalty_cards'));
  t.notOk(without.includes('promotions'));
  const withHistory = selectTables(catalog, 'and the loyalty points?', ['which promotion codes were used most'], 4);
  t.ok(withHistory.includes('loyalty_cards'));
  t.ok(withHistory.includes('promotions'), withHistory.join(', '));
});

t.test('retrieval falls back to the largest tables, and takes everything from a small schema', async (t) => {
  // archive.orders (1,000,000 rows) was the second largest; it is a copy of orders now (an
  // archive schema, columns orders holds) and copies never stand in for the real tables
  t.same(selectTables(catalog, 'xyzzy plugh', [], 4), ['order_items', 'page_views', 'shipment_lines', 'web_sessions']);
  const few = buildCatalog({ ...REPLY, tables: TABLES.slice(0, 5) });
  t.same(selectTables(few, 'xyzzy', [], 12), ['categories', 'customers', 'order_items', 'orders', 'products']);
});

t.test('schema context: retrieval, or the tables the user picked', async (t) => {
  const auto = buildContext(catalog, { question: 'refunds per region' }, 6);
  t.equal(auto.dialect, 'postgresql');
  t.equal(auto.business_context, '');
  t.ok(auto.tables.includes('refunds'));
  for (const name of auto.tables) t.match(auto.schema_text, new RegExp(`\\n(Table|View) ${name.replace('.', '\\.')}( |\\n)`), name);
  t.notMatch(auto.schema_text, /Table page_views/);

  const picked = buildContext(catalog, { question: 'anything', tables: ['ORDERS', 'hr.payroll', 'orders'] }, 6);
  t.same(picked.tables, ['hr.payroll', 'orders']);
  t.match(picked.schema_text, /Table hr\.payroll/);
  t.notMatch(picked.schema_text, /Table customers/);

  t.throws(() => buildContext(catalog, { question: 'x', tables: ['orders', 'nope', 'custmers'] }, 6), {
    code: 'VALIDATION_FAILED',
    message: /unknown tables: "nope", "custmers".*did you mean "customers"/,
    details: { unknown_tables: ['nope', 'custmers'] },
  });
});

// ---- the cache -----------------------------------------------------------------------------

t.test('the cache: single-flight, TTL, refresh, failures not kept', async (t) => {
  let calls = 0;
  let clock = 1_000;
  let fail: CortadoError | undefined;
  let release: () => void = () => undefined;
  const load = async (): Promise<SqlIntrospectReply> => {
    calls += 1;
    await new Promise<void>((resolve) => { release = resolve; });
    if (fail) throw fail;
    return REPLY;
  };
  const cache = createCatalogCache({ load, ttlSeconds: 60, now: () => clock });

  const a = cache.get(ctx);
  const b = cache.get({ requestId: 'other' });
  release();
  const [ca, cb] = await Promise.all([a, b]);
  t.equal(calls, 1, 'concurrent callers share one load');
  t.equal(ca, cb);

  clock += 59_000;
  t.equal(await cache.get(ctx), ca, 'fresh within the TTL');
  t.equal(calls, 1);

  const r = cache.get(ctx, true);
  release();
  await r;
  t.equal(calls, 2, 'refresh loads again');

  clock += 61_000;
  fail = new CortadoError('DB_UNAVAILABLE', 'the database cannot be reached');
  const failing = cache.get(ctx);
  release();
  await t.rejects(failing, { code: 'DB_UNAVAILABLE' });
  t.equal(calls, 3);

  fail = undefined;
  const again = cache.get(ctx);
  release();
  await again;
  t.equal(calls, 4, 'the failure was not cached');

  const noCache = createCatalogCache({ load: async () => { calls += 1; return REPLY; }, ttlSeconds: 0 });
  calls = 0;
  await noCache.get(ctx);
  await noCache.get(ctx);
  t.equal(calls, 2, 'ttl 0 loads every time');
});

/**
 * The admin panel's Semantic tab in a real browser, with the layer in a config database
 * (PostgreSQL) so its block is injected: entities with columns, a relationship, metrics (a bad
 * one refused with the server's reason, one deactivated and activated again), Auto-Discover over
 * a real schema with one-click accepts, the model's block in How to Use, and an entity delete
 * whose confirmation says what goes with it.
 */
import t from 'tap';
import type { Page } from 'playwright-core';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { launchBrowser } from '../helpers/browser.js';
import { testConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';

const SHOP = `
CREATE SCHEMA shop;
CREATE TABLE shop.customers (id serial PRIMARY KEY, name text NOT NULL, region text NOT NULL);
CREATE TABLE shop.products (id serial PRIMARY KEY, title text NOT NULL, category text NOT NULL, price numeric(10,2) NOT NULL);
CREATE TABLE shop.orders (id serial PRIMARY KEY, customer_id integer NOT NULL REFERENCES shop.customers(id), status text NOT NULL,
  amount numeric(12,2) NOT NULL, ordered_at timestamptz NOT NULL);
CREATE TABLE shop.order_items (id serial PRIMARY KEY, order_id integer NOT NULL REFERENCES shop.orders(id),
  product_id integer NOT NULL REFERENCES shop.products(id), quantity integer NOT NULL);
INSERT INTO shop.customers (name, region) SELECT 'customer ' || g, (ARRAY['north','south','east','west'])[1 + g % 4] FROM generate_series(1, 40) g;
INSERT INTO shop.products (title, category, price) SELECT 'product ' || g, (ARRAY['coffee','tea','cups'])[1 + g % 3], 2 + g FROM generate_series(1, 12) g;
INSERT INTO shop.orders (customer_id, status, amount, ordered_at)
  SELECT 1 + g % 40, (ARRAY['paid','shipped','refunded'])[1 + g % 3], (g * 7) % 300 + 0.5, now() - g * interval '1 day' FROM generate_series(1, 200) g;
INSERT INTO shop.order_items (order_id, product_id, quantity) SELECT 1 + g % 200, 1 + g % 12, 1 + g % 5 FROM generate_series(1, 500) g;
ANALYZE;
`;
const METRIC_SQL = 'SUM(orders.amount)';

const nats = await startNats();
const db = await createTestDb('semui');
await db.pool.query(SHOP);
const cfgDb = await createTestDb('semuicfg');
const config = testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  extra: {
    admin: { enabled: true, username: 'admin', password: 'pw-for-semantic' },
    config_db: { enabled: true, encryption_key: generateFernetKey(), postgresql: { host: cfgDb.host, port: cfgDb.port, database: cfgDb.name, user: cfgDb.user } },
  },
});
const stack = await startStack(config);
const browser = await launchBrowser();
t.teardown(async () => {
  await browser.close();
  await stack.stop();
  await db.drop();
  await cfgDb.drop();
  await nats.stop();
});

/** what the server holds, read over the API as any client would */
async function server(path: string): Promise<any> {
  const res = await call(`${stack.url}/api/semantic/${path}`);
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${res.text}`);
  return res.body;
}

async function addColumn(page: Page, name: string, role: 'dimension' | 'metric', synonyms = ''): Promise<void> {
  await page.fill('#sem-c-name', name);
  await page.selectOption('#sem-c-role', role);
  if (synonyms) await page.fill('#sem-c-synonyms', synonyms);
  await page.click('#sem-column-form button[type=submit]');
  await page.locator(`#sem-columns-table tr[data-column="${name}"]`).waitFor();
}

async function createEntity(page: Page, schema: string, table: string, display: string, pk: string, synonyms = ''): Promise<void> {
  await page.click('#sem-e-new');
  await page.fill('#sem-e-schema', schema);
  await page.fill('#sem-e-table', table);
  await page.fill('#sem-e-display', display);
  await page.fill('#sem-e-pk', pk);
  if (synonyms) await page.fill('#sem-e-synonyms', synonyms);
  await page.click('#sem-e-save');
  await page.locator(`#sem-columns h3:has-text("Columns of ${display}"), #sem-e-error:not([hidden])`).first().waitFor();
  if (await page.isVisible('#sem-e-error')) throw new Error(`${display} was refused: ${await page.textContent('#sem-e-error')}`);
}

t.test('the Semantic tab from an empty layer to an injected block', async (t) => {
  const page = await browser.newPage();
  const errors: string[] = [];
  const dialogs: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.accept();
  });

  await page.goto(`${stack.url}/admin`);
  await page.waitForSelector('#login:not([hidden])');
  await page.fill('#username', 'admin');
  await page.fill('#password', 'pw-for-semantic');
  await page.click('#sign-in');
  await page.waitForSelector('#panel:not([hidden])');

  await page.click('[data-tab=semantic]');
  await page.waitForSelector('#sem-entities:not([hidden])');
  t.same(await page.locator('.subtabs button').allTextContents(), ['Entities', 'Relationships', 'Metrics', 'Auto-Discover', 'How to Use'], 'the spec\'s five sub-tabs');
  await page.locator('#sem-entities-list .sem-empty', { hasText: 'No entities yet' }).waitFor();

  // ---- entities with columns
  await createEntity(page, 'shop', 'customers', 'Customers', 'id', 'clients, buyers');
  await addColumn(page, 'region', 'dimension', 'area');
  await addColumn(page, 'name', 'dimension');
  await createEntity(page, 'shop', 'orders', 'Orders', 'id');
  await addColumn(page, 'status', 'dimension');
  await addColumn(page, 'customer_id', 'dimension');
  await addColumn(page, 'amount', 'dimension');
  // amount is a number that adds up: change its role in place
  const amount = page.locator('#sem-columns-table tr[data-column="amount"]');
  await amount.locator('select.sem-c-role').selectOption('metric');
  await amount.locator('select.sem-c-agg').selectOption('sum');
  await amount.locator('button', { hasText: 'Save' }).click();
  await page.locator('#flash', { hasText: 'Orders.amount saved' }).waitFor();
  t.match(await page.textContent('#sem-entities-table tbody'), /Customers\s*shop\.customers\s*table\s*2.*Orders\s*shop\.orders\s*table\s*3/s, 'both entities listed with their column counts');

  const entities = (await server('entities')).entities as any[];
  const customers = entities.find((e) => e.table_name === 'customers');
  const orders = entities.find((e) => e.table_name === 'orders');
  t.same(customers.synonyms, ['clients', 'buyers'], 'entity synonyms saved');
  t.same(customers.columns.map((c: any) => [c.name, c.role]), [['region', 'dimension'], ['name', 'dimension']]);
  t.same(customers.columns[0].synonyms, ['area'], 'column synonyms saved');
  const amountCol = orders.columns.find((c: any) => c.name === 'amount');
  t.equal(amountCol.role, 'metric', 'the role edit reached the server');
  t.equal(amountCol.aggregation, 'sum');

  // edit an entity, delete a column
  await page.locator('#sem-entities-table tr[data-table="shop.customers"] button', { hasText: 'Edit' }).click();
  t.equal(await page.inputValue('#sem-e-synonyms'), 'clients, buyers', 'the form holds the entity');
  await page.fill('#sem-e-desc', 'people who ordered at least once');
  await page.click('#sem-e-save');
  await page.locator('#flash', { hasText: 'Customers saved' }).waitFor();
  await page.locator('#sem-columns-table tr[data-column="name"] button', { hasText: 'Delete' }).click();
  await page.locator('#flash', { hasText: 'Customers.name deleted' }).waitFor();
  const edited = (await server(`entities/${customers.id}`)) as any;
  t.equal(edited.description, 'people who ordered at least once');
  t.same(edited.columns.map((c: any) => c.name), ['region']);

  // ---- a relationship, with pickers fed by the entities
  await page.click('[data-sub=relationships]');
  await page.locator('#sem-rel-list .sem-empty', { hasText: 'No relationships yet' }).waitFor();
  await page.selectOption('#sem-r-from', String(orders.id));
  await page.fill('#sem-r-from-col', 'customer_id');
  await page.selectOption('#sem-r-to', String(customers.id));
  await page.fill('#sem-r-to-col', 'id');
  await page.fill('#sem-r-name', 'order customer');
  await page.click('#sem-rel-form button[type=submit]');
  await page.locator('#sem-rel-table tbody tr').waitFor();
  t.match(await page.textContent('#sem-rel-table tbody'), /order customer\s*Orders\.customer_id\s*Customers\.id\s*many to one\s*LEFT\s*shop\.orders\.customer_id = shop\.customers\.id/);

  // ---- metrics: a bad one refused with the server's reason, then a good one
  await page.click('[data-sub=metrics]');
  await page.locator('#sem-metric-list .sem-empty', { hasText: 'No metrics yet' }).waitFor();
  await page.fill('#sem-m-name', 'revenue');
  await page.fill('#sem-m-display', 'Revenue');
  await page.fill('#sem-m-sql', 'orders.amount * 2');
  await page.selectOption('#sem-m-format', 'currency');
  await page.fill('#sem-m-category', 'Sales');
  await page.selectOption('#sem-m-entity', String(orders.id));
  await page.click('#sem-m-save');
  await page.waitForSelector('#sem-m-error:not([hidden])');
  const refusal = (await page.textContent('#sem-m-error')) ?? '';
  t.match(refusal, /aggregate/i, 'the server\'s reason is shown next to the form');
  t.notMatch(refusal, /VALIDATION_FAILED/, 'as a sentence, not a code');
  t.same((await server('metrics?active_only=false')).metrics, [], 'nothing was stored');

  await page.fill('#sem-m-sql', METRIC_SQL);
  await page.click('#sem-m-save');
  await page.locator('#sem-metric-table tr[data-name="revenue"]').waitFor();
  t.ok(await page.isHidden('#sem-m-error'), 'the error goes once the metric is accepted');
  const row = page.locator('#sem-metric-table tr[data-name="revenue"]');
  t.match(await row.textContent(), new RegExp(`Revenue\\s*${METRIC_SQL.replace(/[()]/g, '\\$&')}\\s*currency\\s*Sales\\s*Orders\\s*active`));

  await row.locator('button', { hasText: 'Deactivate' }).click();
  await page.locator('#sem-metric-list .sem-empty', { hasText: 'No active metrics' }).waitFor();
  t.equal((await server('metrics')).metrics.length, 0, 'inactive: not listed by default');
  await page.uncheck('#sem-m-active-only');
  await page.locator('#sem-metric-table tr[data-name="revenue"]', { hasText: 'inactive' }).waitFor();
  await page.locator('#sem-metric-table tr[data-name="revenue"] button', { hasText: 'Activate' }).click();
  await page.locator('#sem-metric-table tr[data-name="revenue"] button', { hasText: 'Deactivate' }).waitFor();
  t.equal((await server('metrics')).metrics[0]?.active, true, 'active again');

  // ---- Auto-Discover over the real schema; accept one, then the rest in one click
  await page.click('[data-sub=discover]');
  await page.fill('#sem-d-schema', 'shop');
  await page.click('#sem-d-run');
  await page.locator('#sem-d-summary, #sem-d-error:not([hidden])').first().waitFor({ timeout: 90_000 });
  t.equal(await page.isHidden('#sem-d-error') ? '' : await page.textContent('#sem-d-error'), '', 'discover answered without an error');
  t.match(await page.textContent('#sem-d-summary'), /^4 tables profiled/);
  const defined = page.locator('.suggestion[data-table="shop.orders"] .badge');
  t.match(await defined.textContent(), /already defined as Orders/, 'a defined table is marked');
  t.ok(await page.locator('.suggestion[data-table="shop.orders"] .sem-d-accept').isDisabled(), 'and cannot be accepted twice');
  const products = page.locator('.suggestion[data-table="shop.products"]');
  t.match(await products.locator('tr[data-column="category"]').textContent(), /text.*coffee|text.*tea|text.*cups/s, 'the profile shows the type and samples');
  t.match(await page.textContent('#sem-d-rels'), /shop\.order_items\.product_id\s*shop\.products\.id/, 'the declared key is suggested');

  await products.locator('.sem-d-accept').click();
  await page.locator('.suggestion[data-table="shop.products"] .badge', { hasText: 'already defined' }).waitFor();
  const afterOne = (await server('entities')).entities as any[];
  const prod = afterOne.find((e) => e.table_name === 'products');
  t.ok(prod, 'one click defined the table');
  t.ok(prod.columns.length > 0, 'with its columns');
  t.ok(prod.columns.every((c: any) => c.role === 'dimension' || c.role === 'metric'));

  await page.click('#sem-d-accept-all');
  await page.locator('.suggestion[data-table="shop.order_items"] .badge', { hasText: 'already defined' }).waitFor();
  const all = (await server('entities')).entities as any[];
  t.same(all.map((e) => e.table_name).sort(), ['customers', 'order_items', 'orders', 'products'], 'accept all defined the rest');
  const items = all.find((e) => e.table_name === 'order_items');
  const rels = (await server('relationships')).relationships as any[];
  t.ok(rels.some((r) => r.from_entity_id === items.id && r.from_column === 'product_id' && r.to_entity_id === prod.id && r.to_column === 'id'),
    'and the suggested relationship whose two ends are now entities');
  t.equal(rels.filter((r) => r.from_entity_id === orders.id && r.from_column === 'customer_id').length, 1, 'the hand-made relationship is not duplicated');
  t.ok(await page.isDisabled('#sem-d-accept-all'), 'nothing left to accept');

  // ---- How to Use: the block the model sees
  await page.click('[data-sub=howto]');
  await page.waitForSelector('#sem-context-block:not([hidden])');
  const block = (await page.textContent('#sem-context-block')) ?? '';
  t.ok(block.includes(METRIC_SQL), 'the metric\'s exact expression is in the block');
  t.ok(block.includes('LEFT JOIN ON shop.orders.customer_id = shop.customers.id'), 'and the relationship\'s exact join');
  t.match(block, /Customers/);
  t.equal(await page.textContent('#sem-context-status .badge'), 'injected');
  t.equal(await page.locator('#sem-context-reason').count(), 0);
  t.equal(await page.locator('#sem-memory-note').count(), 0, 'no memory-mode note with a config database');

  // ---- delete an entity: the confirmation says what goes with it
  await page.click('[data-sub=entities]');
  await page.locator('#sem-entities-table tr[data-table="shop.products"] button', { hasText: 'Delete' }).click();
  await page.locator('#flash', { hasText: `${prod.display_name} deleted` }).waitFor();
  const confirmText = dialogs.at(-1) ?? '';
  const prodRels = rels.filter((r) => r.from_entity_id === prod.id || r.to_entity_id === prod.id).length;
  t.ok(confirmText.includes(`Delete the entity ${prod.display_name} (shop.products)?`), 'a confirmation names the entity');
  t.match(confirmText, new RegExp(`its ${prod.columns.length} columns? and ${prodRels} relationships? naming it`), 'the columns and the relationships that go with it');
  t.equal(await page.locator('#sem-entities-table tr[data-table="shop.products"]').count(), 0);
  t.notOk(((await server('relationships')).relationships as any[]).some((r) => r.to_entity_id === prod.id), 'its relationship went with it');

  t.same(errors, [], 'no script errors');
  await page.close();
});

t.test('memory mode: defined and shown, not injected, and said so', async (t) => {
  const nats2 = await startNats();
  const memory = await startStack(testConfig({
    natsUrl: nats2.url,
    db: { host: db.host, port: db.port, name: db.name, user: db.user },
    extra: { admin: { enabled: true, username: 'admin', password: 'pw-for-memory' } },
  }));
  t.teardown(async () => {
    await memory.stop();
    await nats2.stop();
  });
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${memory.url}/admin`);
  await page.waitForSelector('#login:not([hidden])');
  await page.fill('#username', 'admin');
  await page.fill('#password', 'pw-for-memory');
  await page.click('#sign-in');
  await page.waitForSelector('#panel:not([hidden])');
  await page.click('[data-tab=semantic]');
  await createEntity(page, 'shop', 'products', 'Products', 'id');

  // the same table twice: refused, and said in words next to the form
  await page.click('#sem-e-new');
  await page.fill('#sem-e-schema', 'shop');
  await page.fill('#sem-e-table', 'products');
  await page.fill('#sem-e-display', 'Products again');
  await page.click('#sem-e-save');
  await page.waitForSelector('#sem-e-error:not([hidden])');
  t.match(await page.textContent('#sem-e-error'), /^Already defined: /, 'a conflict as a sentence');
  t.equal(await page.locator('#sem-entities-table tbody tr').count(), 1);

  await page.click('[data-sub=howto]');
  await page.waitForSelector('#sem-memory-note');
  t.match(await page.textContent('#sem-context-status'), /1 entity, 0 relationships and 0 active metrics defined; stored in memory/, 'the layer is shown');
  t.equal(await page.textContent('#sem-context-status .badge'), 'not injected');
  const reason = ((await call(`${memory.url}/api/semantic/context`)).body as any).reason as string;
  t.ok(reason && (await page.textContent('#sem-context-reason'))?.includes(reason), 'the server\'s reason is shown');
  t.match(await page.textContent('#sem-memory-note'), /lost on restart and never added to prompts/);
  t.ok(await page.isHidden('#sem-context-block'), 'no block');
  t.same(errors, [], 'no script errors');
  await page.close();
});

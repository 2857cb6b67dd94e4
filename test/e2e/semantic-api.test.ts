/**
 * The semantic layer's HTTP API (/api/semantic/*) end to end, against a real stack (NATS, the
 * semantic actor, the catalog and executor on a real PostgreSQL holding the tables): every route,
 * first with the layer in memory, then with config_db on a fresh PostgreSQL database, where the
 * records survive the stack being stopped and started again. Bad input (bad enums, unknown ids in
 * the path and in bodies, duplicates, ids that are no positive integers, missing fields, a metric
 * that is no aggregate) is answered with the right 4xx and a message naming the field; writes
 * need the admin session and its CSRF header; reads take the admin session, an API token, or
 * nobody — unless query.require_session, where they need a session or a token.
 */
import t from 'tap';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import type { SemanticChanged } from '../../protocol/schemas/semantic.js';
import { SemanticChangedEvt } from '../../protocol/subjects.js';
import { testConfig } from '../helpers/config.js';
import { startNats, type NatsServer } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack, type Stack } from '../helpers/stack.js';

type T = Pick<typeof t, 'ok' | 'equal' | 'same' | 'match'>;

const API = '/api/semantic';
const ADMIN = { enabled: true, username: 'admin', password: 'semantic horse' };

const db = await createTestDb('semapi');
await db.pool.query(`
  CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL, country text);
  CREATE TABLE orders (id int PRIMARY KEY, customer_id int REFERENCES customers (id), total numeric(10, 2), status text, created_at timestamptz);
  INSERT INTO customers VALUES (1, 'Ada', 'UK'), (2, 'Grace', 'US');
  INSERT INTO orders VALUES (1, 1, 10.50, 'paid', now()), (2, 2, 20, 'open', now()), (3, 1, 5, 'paid', now());
  CREATE VIEW paid_orders AS SELECT * FROM orders WHERE status = 'paid';
`);
const dbRef = { host: db.host, port: db.port, name: db.name, user: db.user };
const cleanups: Array<() => Promise<unknown>> = [];
t.teardown(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await db.drop();
});

async function natsServer(): Promise<NatsServer> {
  const n = await startNats();
  cleanups.push(() => n.stop());
  return n;
}

async function stackOn(nats: NatsServer, extra: Record<string, unknown> = {}): Promise<Stack> {
  const s = await startStack(testConfig({ natsUrl: nats.url, db: dbRef, extra: { admin: ADMIN, ...extra } }));
  cleanups.push(() => s.stop());
  return s;
}

interface Admin {
  cookie: string;
  /** cookie and CSRF header: what a write needs */
  h: Record<string, string>;
}

async function signIn(url: string): Promise<Admin> {
  const res = await call(`${url}/admin/login`, { body: { username: ADMIN.username, password: ADMIN.password } });
  if (res.status !== 200) throw new Error(`admin login: ${res.status} ${res.text}`);
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  return { cookie, h: { cookie, 'x-csrf-token': res.body.csrf_token as string } };
}

type Reply = Awaited<ReturnType<typeof call>>;

/** The answer is this status with this error code, and its message matches. */
function refused(t: T, r: Reply, status: number, code: string, message: RegExp, what: string): void {
  t.equal(r.status, status, `${what}: ${status} (${r.text.slice(0, 300)})`);
  t.equal(r.body?.error?.code, code, `${what}: ${code}`);
  t.match(r.body?.error?.message, message, `${what}: the message says why`);
}

interface Built {
  customers: any;
  orders: any;
  relationship: any;
  revenue: any;
  paidCount: any;
}

/** Every route that creates, reads and changes, with the bad input each one refuses. Leaves a small layer behind. */
async function build(t: T, url: string, a: Admin): Promise<Built> {
  const post = (path: string, body: unknown, headers = a.h) => call(`${url}${API}${path}`, { body, headers });
  const send = (method: string, path: string, body: unknown, headers = a.h) => call(`${url}${API}${path}`, { method, body, headers });
  const get = (path: string, headers: Record<string, string> = { cookie: a.cookie }) => call(`${url}${API}${path}`, { headers });

  // ---- who may write ----
  const customersBody = {
    schema_name: 'public', table_name: 'customers', display_name: 'Customers', primary_key: 'id', synonyms: ['clients'],
    description: 'People who buy.\nOne row each.',
    columns: [{ name: 'country', role: 'dimension', display_name: 'Country', description: 'ISO\tcode' }, { name: 'name', role: 'dimension' }],
  };
  refused(t, await post('/entities', customersBody, {}), 401, 'UNAUTHORIZED', /sign in/, 'a write without a session');
  refused(t, await post('/entities', customersBody, { cookie: a.cookie }), 403, 'FORBIDDEN', /x-csrf-token/, 'a write without the CSRF header');

  // ---- entities ----
  const c = await post('/entities', customersBody);
  t.equal(c.status, 201, c.text);
  const customers = c.body;
  t.ok(Number.isInteger(customers.id) && customers.id > 0, 'an integer id');
  t.match(customers, { catalog: '', schema_name: 'public', table_name: 'customers', display_name: 'Customers', entity_type: 'table', primary_key: 'id', synonyms: ['clients'] });
  t.equal(customers.description, 'People who buy.\nOne row each.', 'descriptions keep their line breaks');
  t.same(customers.columns.map((x: any) => [x.name, x.role, x.entity_id]), [['country', 'dimension', customers.id], ['name', 'dimension', customers.id]], 'the columns, in order');
  t.equal(customers.columns[0].description, 'ISO\tcode', 'a column description is text (tabs allowed)');

  const o = await post('/entities', {
    schema_name: 'public', table_name: 'orders', display_name: 'Orders',
    columns: [{ name: 'total', role: 'metric', aggregation: 'sum' }, { name: 'status', role: 'dimension' }],
  });
  t.equal(o.status, 201, o.text);
  const orders = o.body;
  t.ok(orders.id > customers.id, 'ids grow in creation order');

  refused(t, await post('/entities', { ...customersBody, columns: [] }), 409, 'CONFLICT', /./, 'a second entity for one table');
  refused(t, await post('/entities', { ...customersBody, table_name: 'orders', entity_type: 'tabel' }), 400, 'VALIDATION_FAILED', /entity_type/, 'a bad entity_type');
  const { display_name: _d, ...noName } = customersBody;
  refused(t, await post('/entities', noName), 400, 'VALIDATION_FAILED', /display_name/, 'a missing display_name');
  refused(t, await post('/entities', { schema_name: 'public', table_name: 'nope', display_name: 'Nope' }), 400, 'VALIDATION_FAILED', /table_name.*nope/, 'a table the database does not have');
  refused(t, await post('/entities', { schema_name: 'public', table_name: 'nope2', display_name: 'X', columns: [{ name: 'a', role: 'measure' }] }), 400, 'VALIDATION_FAILED', /role/, 'a bad column role');
  refused(t, await post('/entities', { schema_name: 'public', table_name: 'orders', display_name: 'X\u0001' }), 400, 'VALIDATION_FAILED', /display_name.*control/, 'a control character in a name');
  const bad = await call(`${url}${API}/entities`, { method: 'POST', raw: '{"schema_name":', headers: { ...a.h, 'content-type': 'application/json' } });
  refused(t, bad, 400, 'MALFORMED_BODY', /JSON/, 'a body that is no JSON');

  const list = await get('/entities');
  t.equal(list.status, 200);
  t.same(list.body.entities.map((e: any) => e.table_name), ['customers', 'orders'], 'listed by id, refused ones absent');
  t.same((await get('/entities?schema_name=public')).body.entities.length, 2, 'filtered by schema');
  t.same((await get('/entities?schema_name=sales')).body.entities, [], 'another schema: none');
  t.same((await get('/entities?catalog=')).body.entities.length, 2, "catalog '' matches entities without one");
  refused(t, await get(`/entities?schema_name=${'x'.repeat(300)}`), 400, 'VALIDATION_FAILED', /schema_name/, 'a schema filter too long');

  const one = await get(`/entities/${customers.id}`);
  t.equal(one.status, 200);
  t.same(one.body, customers, 'read back as created');
  refused(t, await get('/entities/9999'), 404, 'NOT_FOUND', /no semantic entity 9999/, 'an unknown entity id');
  for (const id of ['abc', '0', '-1', '1.5', '1e3', '99999999999', '%20']) {
    refused(t, await get(`/entities/${id}`), 400, 'VALIDATION_FAILED', /path parameter id: a positive integer/, `entity id ${JSON.stringify(id)}`);
  }

  const patched = await send('PATCH', `/entities/${orders.id}`, { description: 'one row per order', synonyms: ['purchases'] });
  t.equal(patched.status, 200, patched.text);
  t.match(patched.body, { id: orders.id, display_name: 'Orders', description: 'one row per order', synonyms: ['purchases'] });
  t.equal(patched.body.columns.length, 2, 'the columns come with it');
  refused(t, await send('PATCH', `/entities/${orders.id}`, { entity_type: 'cube' }), 400, 'VALIDATION_FAILED', /entity_type/, 'PATCH with a bad enum');
  refused(t, await send('PATCH', '/entities/9999', { description: 'x' }), 404, 'NOT_FOUND', /no semantic entity 9999/, 'PATCH of an unknown entity');
  const view = await post('/entities', { schema_name: 'public', table_name: 'paid_orders', display_name: 'Paid orders', entity_type: 'view' });
  t.equal(view.status, 201, view.text);
  t.equal(view.body.entity_type, 'view');
  refused(t, await send('PATCH', `/entities/${view.body.id}`, { table_name: 'orders' }), 409, 'CONFLICT', /./, 'PATCH onto a table that has an entity');
  const viewGone = await send('DELETE', `/entities/${view.body.id}`, undefined);
  t.same([viewGone.status, viewGone.body], [200, { ok: true, deleted_columns: 0, deleted_relationships: [], detached_metrics: [] }], 'an entity deleted');
  const put = await send('PUT', `/entities/${orders.id}`, { ...patched.body, display_name: 'Sales orders', primary_key: 'id', id: 12345, created_at: 'whenever' });
  t.equal(put.status, 200, put.text);
  t.match(put.body, { id: orders.id, display_name: 'Sales orders', primary_key: 'id', description: 'one row per order', created_at: orders.created_at }, 'PUT of a record read back: its id and times are not the body’s');
  refused(t, await send('PUT', `/entities/${orders.id}`, { schema_name: 'public', table_name: 'orders' }), 400, 'VALIDATION_FAILED', /display_name/, 'PUT without a required field');
  refused(t, await send('PUT', '/entities/x', { schema_name: 'public', table_name: 'orders', display_name: 'O' }), 400, 'VALIDATION_FAILED', /path parameter id/, 'PUT on a non-integer id');

  // ---- columns ----
  const col = await post(`/entities/${orders.id}/columns`, { name: 'customer_id', role: 'dimension', synonyms: ['buyer'] });
  t.equal(col.status, 201, col.text);
  t.match(col.body, { entity_id: orders.id, name: 'customer_id', role: 'dimension', synonyms: ['buyer'] });
  refused(t, await post(`/entities/${orders.id}/columns`, { name: 'customer_id', role: 'dimension' }), 409, 'CONFLICT', /customer_id/, 'a column twice');
  refused(t, await post(`/entities/${orders.id}/columns`, { name: 'created_at', role: 'time' }), 400, 'VALIDATION_FAILED', /role/, 'a bad role');
  refused(t, await post(`/entities/${orders.id}/columns`, { name: 'created_at', role: 'dimension', aggregation: 'median' }), 400, 'VALIDATION_FAILED', /aggregation/, 'a bad aggregation');
  refused(t, await post(`/entities/${orders.id}/columns`, { role: 'dimension' }), 400, 'VALIDATION_FAILED', /name/, 'a column without its name');
  refused(t, await post(`/entities/${orders.id}/columns`, { name: 'no_such_column', role: 'dimension' }), 400, 'VALIDATION_FAILED', /no_such_column/, 'a column the table does not have');
  const unknownEntity = await post('/entities/9999/columns', { name: 'x', role: 'dimension' });
  t.ok([400, 404].includes(unknownEntity.status), `a column for an unknown entity: ${unknownEntity.status}`);
  t.match(unknownEntity.body?.error?.message, /no semantic entity 9999/);
  refused(t, await post('/entities/zero/columns', { name: 'x', role: 'dimension' }), 400, 'VALIDATION_FAILED', /path parameter id/, 'a column for a non-integer entity id');

  const colPatch = await send('PATCH', `/entities/${orders.id}/columns/${col.body.id}`, { display_name: 'Customer', description: 'who\nbought' });
  t.equal(colPatch.status, 200, colPatch.text);
  t.match(colPatch.body, { id: col.body.id, name: 'customer_id', display_name: 'Customer', description: 'who\nbought', synonyms: ['buyer'] });
  const colPut = await send('PUT', `/entities/${orders.id}/columns/${col.body.id}`, { name: 'customer_id', role: 'dimension', synonyms: [] });
  t.equal(colPut.status, 200, colPut.text);
  t.match(colPut.body, { display_name: 'Customer', synonyms: [] });
  refused(t, await send('PUT', `/entities/${orders.id}/columns/${col.body.id}`, { name: 'customer_id' }), 400, 'VALIDATION_FAILED', /role/, 'PUT of a column without its role');
  refused(t, await send('PATCH', `/entities/${orders.id}/columns/9999`, { display_name: 'x' }), 404, 'NOT_FOUND', /no column 9999/, 'an unknown column');
  refused(t, await send('PATCH', `/entities/${customers.id}/columns/${col.body.id}`, { display_name: 'x' }), 404, 'NOT_FOUND', /no column/, 'a column of another entity');
  refused(t, await send('PATCH', `/entities/${orders.id}/columns/1.5`, { display_name: 'x' }), 400, 'VALIDATION_FAILED', /path parameter column_id/, 'a non-integer column id');
  const status = orders.columns.find((x: any) => x.name === 'status');
  const delCol = await send('DELETE', `/entities/${orders.id}/columns/${status.id}`, undefined);
  t.equal(delCol.status, 200, delCol.text);
  t.same(delCol.body, { ok: true });
  refused(t, await send('DELETE', `/entities/${orders.id}/columns/${status.id}`, undefined), 404, 'NOT_FOUND', /no column/, 'a column deleted twice');
  t.same((await get(`/entities/${orders.id}`)).body.columns.map((x: any) => x.name), ['total', 'customer_id'], 'the columns now');

  // ---- relationships ----
  const relBody = { name: 'order customer', from_entity_id: orders.id, from_column: 'customer_id', to_entity_id: customers.id, to_column: 'id', relationship_type: 'many_to_one' };
  const r = await post('/relationships', relBody);
  t.equal(r.status, 201, r.text);
  const relationship = r.body;
  t.match(relationship, { ...relBody, join_type: 'LEFT', description: '' }, 'LEFT when not said');
  refused(t, await post('/relationships', relBody), 409, 'CONFLICT', /./, 'the same relationship twice');
  refused(t, await post('/relationships', { ...relBody, to_entity_id: 9999 }), 400, 'VALIDATION_FAILED', /to_entity_id.*9999/, 'an unknown entity in the body');
  refused(t, await post('/relationships', { ...relBody, from_entity_id: 'one' }), 400, 'VALIDATION_FAILED', /from_entity_id/, 'an entity id that is no integer');
  refused(t, await post('/relationships', { ...relBody, relationship_type: 'many_to_many' }), 400, 'VALIDATION_FAILED', /relationship_type/, 'a bad relationship_type');
  refused(t, await post('/relationships', { ...relBody, join_type: 'OUTER' }), 400, 'VALIDATION_FAILED', /join_type/, 'a bad join_type');
  refused(t, await post('/relationships', { ...relBody, to_column: 'no_such' }), 400, 'VALIDATION_FAILED', /to_column/, 'a column the table does not have');
  const { name: _n, ...noRelName } = relBody;
  refused(t, await post('/relationships', noRelName), 400, 'VALIDATION_FAILED', /name/, 'a relationship without its name');
  t.same((await get('/relationships')).body, { relationships: [relationship] }, 'the list');
  t.same((await get(`/relationships/${relationship.id}`)).body, relationship, 'one');
  refused(t, await get('/relationships/9999'), 404, 'NOT_FOUND', /no semantic relationship 9999/, 'an unknown relationship');
  refused(t, await get('/relationships/x'), 400, 'VALIDATION_FAILED', /path parameter id/, 'a non-integer relationship id');
  const rp = await send('PATCH', `/relationships/${relationship.id}`, { join_type: 'INNER', description: 'every order has a customer' });
  t.equal(rp.status, 200, rp.text);
  t.match(rp.body, { id: relationship.id, join_type: 'INNER', name: 'order customer' });
  refused(t, await send('PATCH', `/relationships/${relationship.id}`, { to_entity_id: 9999 }), 400, 'VALIDATION_FAILED', /to_entity_id.*9999/, 'PATCH to an unknown entity');
  const rput = await send('PUT', `/relationships/${relationship.id}`, { ...relBody, name: 'customer of an order', join_type: 'LEFT' });
  t.equal(rput.status, 200, rput.text);
  t.match(rput.body, { name: 'customer of an order', join_type: 'LEFT', description: 'every order has a customer' });
  refused(t, await send('PUT', `/relationships/${relationship.id}`, { name: 'x' }), 400, 'VALIDATION_FAILED', /from_entity_id|from_column|to_|relationship_type/, 'PUT without the required fields');
  refused(t, await send('PATCH', '/relationships/9999', { name: 'x' }), 404, 'NOT_FOUND', /no semantic relationship 9999/, 'PATCH of an unknown relationship');

  // ---- metrics ----
  const revenueBody = { name: 'revenue', display_name: 'Revenue', sql_expression: 'SUM(orders.total)', entity_id: orders.id, format_type: 'currency', category: 'sales', synonyms: ['turnover'] };
  const m = await post('/metrics', revenueBody);
  t.equal(m.status, 201, m.text);
  const revenue = m.body;
  t.match(revenue, { ...revenueBody, active: true, description: '' });
  const pc = await post('/metrics', { name: 'paid_count', display_name: 'Paid orders', sql_expression: "COUNT(*) FILTER (WHERE status = 'paid')\n", entity_id: orders.id, active: false });
  t.equal(pc.status, 201, pc.text);
  const paidCount = pc.body;
  t.equal(paidCount.active, false);
  t.equal(paidCount.sql_expression, "COUNT(*) FILTER (WHERE status = 'paid')\n", 'the expression kept verbatim, line break and all');
  refused(t, await post('/metrics', revenueBody), 409, 'CONFLICT', /./, 'a metric name twice');
  refused(t, await post('/metrics', { ...revenueBody, name: 'plain', sql_expression: 'total' }), 400, 'VALIDATION_FAILED', /sql_expression.*aggregate/, 'no aggregate at the top');
  refused(t, await post('/metrics', { ...revenueBody, name: 'sub', sql_expression: 'SUM((SELECT max(total) FROM orders))' }), 400, 'VALIDATION_FAILED', /sql_expression/, 'a subquery');
  refused(t, await post('/metrics', { ...revenueBody, name: 'broken', sql_expression: 'SUM(total' }), 400, 'VALIDATION_FAILED', /sql_expression/, 'an expression the parser rejects');
  refused(t, await post('/metrics', { ...revenueBody, name: 'nocol', sql_expression: 'SUM(no_such_column)' }), 400, 'VALIDATION_FAILED', /sql_expression/, 'a column the table does not have');
  refused(t, await post('/metrics', { ...revenueBody, name: 'two', sql_expression: 'SUM(total); DROP TABLE orders' }), 400, 'VALIDATION_FAILED', /sql_expression/, 'a second statement');
  refused(t, await post('/metrics', { ...revenueBody, name: 'fmt', format_type: 'euro' }), 400, 'VALIDATION_FAILED', /format_type/, 'a bad format_type');
  refused(t, await post('/metrics', { ...revenueBody, name: 'ent', entity_id: 9999 }), 400, 'VALIDATION_FAILED', /entity_id.*9999/, 'an unknown entity in the body');
  refused(t, await post('/metrics', { ...revenueBody, name: 'net revenue' }), 400, 'VALIDATION_FAILED', /name/, 'a metric name that is no identifier');
  const { sql_expression: _s, ...noExpr } = revenueBody;
  refused(t, await post('/metrics', { ...noExpr, name: 'noexpr' }), 400, 'VALIDATION_FAILED', /sql_expression/, 'a metric without its expression');

  t.same((await get('/metrics')).body.metrics.map((x: any) => x.name), ['revenue'], 'active only by default');
  t.same((await get('/metrics?active_only=false')).body.metrics.map((x: any) => x.name), ['revenue', 'paid_count'], 'all');
  t.same((await get('/metrics?active_only=0')).body.metrics.length, 2, '0 is false');
  t.same((await get('/metrics?active_only=1')).body.metrics.length, 1, '1 is true');
  refused(t, await get('/metrics?active_only=maybe'), 400, 'VALIDATION_FAILED', /active_only/, 'active_only neither true nor false');
  t.same((await get(`/metrics/${paidCount.id}`)).body, paidCount, 'one, inactive too');
  refused(t, await get('/metrics/9999'), 404, 'NOT_FOUND', /no semantic metric 9999/, 'an unknown metric');

  const on = await post(`/metrics/${paidCount.id}/activate`, {});
  t.equal(on.status, 200, on.text);
  t.equal(on.body.active, true, 'activated');
  const off = await post(`/metrics/${paidCount.id}/deactivate`, {});
  t.equal(off.body.active, false, 'deactivated');
  refused(t, await post('/metrics/9999/activate', {}), 404, 'NOT_FOUND', /no semantic metric 9999/, 'activating an unknown metric');
  refused(t, await post('/metrics/abc/deactivate', {}), 400, 'VALIDATION_FAILED', /path parameter id/, 'deactivating a non-integer id');
  const patchOn = await send('PATCH', `/metrics/${paidCount.id}`, { active: true });
  t.equal(patchOn.body.active, true, 'PATCH {active} works too');
  refused(t, await send('PATCH', `/metrics/${paidCount.id}`, { active: 'yes' }), 400, 'VALIDATION_FAILED', /active/, 'active that is no boolean');
  refused(t, await send('PATCH', `/metrics/${paidCount.id}`, { sql_expression: 'status' }), 400, 'VALIDATION_FAILED', /sql_expression/, 'PATCH to a non-aggregate');
  const mput = await send('PUT', `/metrics/${revenue.id}`, { ...revenueBody, display_name: 'Net revenue', description: 'before refunds' });
  t.equal(mput.status, 200, mput.text);
  t.match(mput.body, { id: revenue.id, display_name: 'Net revenue', description: 'before refunds', sql_expression: 'SUM(orders.total)' });
  refused(t, await send('PUT', `/metrics/${revenue.id}`, { name: 'revenue' }), 400, 'VALIDATION_FAILED', /display_name|sql_expression/, 'PUT without the required fields');

  return { customers, orders, relationship: rput.body, revenue: mput.body, paidCount: patchOn.body };
}

/** The context route and the deletes (with what an entity's delete takes with it). */
async function contextAndDeletes(t: T, url: string, a: Admin, b: Built, storage: 'memory' | 'postgresql'): Promise<void> {
  const send = (method: string, path: string) => call(`${url}${API}${path}`, { method, headers: a.h });
  const ctx = await call(`${url}${API}/context`, { headers: { cookie: a.cookie } });
  t.equal(ctx.status, 200, ctx.text);
  t.equal(ctx.body.storage, storage);
  t.same(ctx.body.entities.map((e: any) => e.id), [b.customers.id, b.orders.id], 'the entities, in memory mode too');
  t.same(ctx.body.relationships.map((r: any) => r.id), [b.relationship.id]);
  t.same(ctx.body.metrics.map((m: any) => m.name).sort(), ['paid_count', 'revenue'], 'the active metrics');
  if (storage === 'memory') {
    t.equal(ctx.body.injected, false, 'memory: nothing goes into prompts');
    t.equal(ctx.body.block, '');
    t.match(ctx.body.reason, /config_db/, 'and it says why');
  } else {
    t.equal(ctx.body.injected, true, ctx.text);
    t.ok(ctx.body.block.includes('SUM(orders.total)'), 'the metric’s expression, verbatim');
    t.match(ctx.body.block, /customer_id/, 'the relationship’s join');
  }
  const q = await call(`${url}${API}/context?question=${encodeURIComponent('revenue by country')}`, { headers: { cookie: a.cookie } });
  t.equal(q.status, 200, q.text);

  // relationships and metrics go; an entity takes its columns and relationships with it, its metrics stay detached
  const extra = await call(`${url}${API}/relationships`, {
    body: { name: 'self', from_entity_id: b.orders.id, from_column: 'id', to_entity_id: b.orders.id, to_column: 'id', relationship_type: 'one_to_one' }, headers: a.h,
  });
  t.equal(extra.status, 201, extra.text);
  const dr = await send('DELETE', `/relationships/${extra.body.id}`);
  t.same([dr.status, dr.body], [200, { ok: true }], 'a relationship deleted');
  refused(t, await send('DELETE', `/relationships/${extra.body.id}`), 404, 'NOT_FOUND', /no semantic relationship/, 'deleted twice');
  const dm = await send('DELETE', `/metrics/${b.paidCount.id}`);
  t.same([dm.status, dm.body], [200, { ok: true }], 'a metric deleted');
  refused(t, await send('DELETE', `/metrics/${b.paidCount.id}`), 404, 'NOT_FOUND', /no semantic metric/, 'deleted twice');
  refused(t, await send('DELETE', '/metrics/0'), 400, 'VALIDATION_FAILED', /path parameter id/, 'a zero id');

  const de = await send('DELETE', `/entities/${b.orders.id}`);
  t.equal(de.status, 200, de.text);
  t.same(de.body, { ok: true, deleted_columns: 2, deleted_relationships: [b.relationship.id], detached_metrics: [b.revenue.id] }, 'what went with it');
  refused(t, await send('DELETE', `/entities/${b.orders.id}`), 404, 'NOT_FOUND', /no semantic entity/, 'deleted twice');
  t.same((await call(`${url}${API}/relationships`)).body, { relationships: [] }, 'its relationship is gone');
  t.equal((await call(`${url}${API}/metrics/${b.revenue.id}`)).body.entity_id, null, 'its metric is kept, detached');
  t.same((await call(`${url}${API}/entities`)).body.entities.map((e: any) => e.table_name), ['customers']);
}

t.test('in memory (config_db off): every route, bad input, who may read and write', async (t) => {
  const nats = await natsServer();
  const stack = await stackOn(nats);
  const a = await signIn(stack.url);
  const changes: SemanticChanged[] = [];
  t.teardown(stack.running.bus.on(SemanticChangedEvt, (e) => {
    changes.push(e);
  }));
  const built = await build(t, stack.url, a);
  t.ok(changes.length >= 10, `every write announced (${changes.length} changes)`);
  t.same([...new Set(changes.map((c) => c.user))], [ADMIN.username], 'each change is the signed-in admin’s');

  // reads without any session: the legacy `any` callers (an anonymous widget) when require_session is off
  const anon = await call(`${stack.url}${API}/entities`);
  t.equal(anon.status, 200, 'an anonymous read while query.require_session is off');
  t.equal(anon.body.entities.length, 2);
  refused(t, await call(`${stack.url}${API}/metrics/${built.revenue.id}`, { method: 'DELETE' }), 401, 'UNAUTHORIZED', /sign in/, 'an anonymous delete');
  refused(t, await call(`${stack.url}${API}/metrics/${built.revenue.id}`, { method: 'PATCH', body: { active: false } }), 401, 'UNAUTHORIZED', /sign in/, 'an anonymous PATCH');
  refused(t, await call(`${stack.url}${API}/discover`, { body: { schema: 'public' } }), 401, 'UNAUTHORIZED', /sign in/, 'an anonymous discover');
  // a stale admin cookie on a read is no refusal: the read is answered as the legacy routes answer it
  const stale = await call(`${stack.url}${API}/entities`, { headers: { cookie: 'cortado_admin=not-a-session' } });
  t.equal(stale.status, 200, 'a stale admin cookie on a read');
  refused(t, await call(`${stack.url}${API}/entities/${built.orders.id}`, { method: 'PATCH', body: { description: 'x' }, headers: { cookie: 'cortado_admin=not-a-session', 'x-csrf-token': 'x' } }), 401, 'UNAUTHORIZED', /./, 'a stale admin cookie on a write');
  refused(t, await call(`${stack.url}${API}/nope`), 404, 'NOT_FOUND', /no route/, 'an unknown route');
  const method = await call(`${stack.url}${API}/context`, { method: 'DELETE', headers: a.h });
  t.equal(method.status, 405, 'a known route, another method');

  await contextAndDeletes(t, stack.url, a, built, 'memory');
});

t.test('on PostgreSQL (config_db on): every route, and the layer survives a restart', async (t) => {
  const cfgDb = await createTestDb('semcfg');
  cleanups.push(() => cfgDb.drop());
  const extra = { config_db: { enabled: true, encryption_key: generateFernetKey(), postgresql: { host: cfgDb.host, port: cfgDb.port, database: cfgDb.name, user: cfgDb.user } } };
  const nats = await natsServer();
  const first = await stackOn(nats, extra);
  let a = await signIn(first.url);
  const built = await build(t, first.url, a);
  const before = {
    entities: (await call(`${first.url}${API}/entities`)).body,
    relationships: (await call(`${first.url}${API}/relationships`)).body,
    metrics: (await call(`${first.url}${API}/metrics?active_only=false`)).body,
  };
  const rows = await cfgDb.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM cortado_semantic_entities');
  t.equal(rows.rows[0]?.n, 2, 'the entities are rows of config_db');
  await first.stop();

  const second = await stackOn(nats, extra);
  a = await signIn(second.url);
  t.same((await call(`${second.url}${API}/entities`)).body, before.entities, 'entities and their columns survive the restart');
  t.same((await call(`${second.url}${API}/relationships`)).body, before.relationships, 'relationships too');
  t.same((await call(`${second.url}${API}/metrics?active_only=false`)).body, before.metrics, 'metrics too, active or not');
  const next = await call(`${second.url}${API}/metrics`, { body: { name: 'customer_count', display_name: 'Customers', sql_expression: 'COUNT(DISTINCT customers.id)', entity_id: built.customers.id }, headers: a.h });
  t.equal(next.status, 201, next.text);
  t.ok(next.body.id > built.paidCount.id, 'ids go on from where they were');
  const gone = await call(`${second.url}${API}/metrics/${next.body.id}`, { method: 'DELETE', headers: a.h });
  t.equal(gone.status, 200);
  await contextAndDeletes(t, second.url, a, built, 'postgresql');
});

t.test('query.require_session: reads need a session or an API token', async (t) => {
  const nats = await natsServer();
  const stack = await stackOn(nats, { query: { require_session: true } });
  const a = await signIn(stack.url);
  for (const path of ['/entities', '/entities/1', '/relationships', '/relationships/1', '/metrics', '/metrics/1', '/context']) {
    refused(t, await call(`${stack.url}${API}${path}`), 401, 'UNAUTHORIZED', /sign in|token/, `GET ${path} without a session or token`);
  }
  const issued = await call(`${stack.url}/admin/tokens`, { body: { label: 'semantic reader', ttl_hours: 1 }, headers: a.h });
  t.equal(issued.status, 201, issued.text);
  const bearer = { authorization: `Bearer ${issued.body.token as string}` };
  for (const path of ['/entities', '/relationships', '/metrics', '/context']) {
    const r = await call(`${stack.url}${API}${path}`, { headers: bearer });
    t.equal(r.status, 200, `GET ${path} with an API token (${r.text.slice(0, 200)})`);
  }
  t.equal((await call(`${stack.url}${API}/entities`, { headers: { cookie: a.cookie } })).status, 200, 'with the admin session');
  refused(t, await call(`${stack.url}${API}/entities/9`, { headers: bearer }), 404, 'NOT_FOUND', /no semantic entity 9/, 'an unknown id, with a token');
  refused(t, await call(`${stack.url}${API}/entities`, { headers: { authorization: 'Bearer ctd_not-a-token' } }), 401, 'UNAUTHORIZED', /./, 'an unknown token');
  refused(t, await call(`${stack.url}${API}/metrics`, { body: { name: 'm', display_name: 'M', sql_expression: 'COUNT(*)' }, headers: bearer }), 401, 'UNAUTHORIZED', /sign in/, 'a token cannot write');
});

t.test('discover: admin only, profiles the real tables and suggests what to define', async (t) => {
  const nats = await natsServer();
  const stack = await stackOn(nats);
  const a = await signIn(stack.url);
  const discover = (body: unknown, headers = a.h) => call(`${stack.url}${API}/discover`, { body, headers });
  refused(t, await discover({ schema: 'public' }, {}), 401, 'UNAUTHORIZED', /sign in/, 'without a session');
  refused(t, await discover({ schema: 'public' }, { cookie: a.cookie }), 403, 'FORBIDDEN', /x-csrf-token/, 'without the CSRF header');
  refused(t, await discover({}), 400, 'VALIDATION_FAILED', /schema/, 'without a schema');
  refused(t, await discover({ schema: 'public', tables: 'orders' }), 400, 'VALIDATION_FAILED', /tables/, 'tables that are no list');

  const r = await discover({ schema: 'public', tables: ['orders', 'customers', 'no_such_table'] });
  t.equal(r.status, 200, r.text.slice(0, 500));
  t.same(r.body.entities?.map((e: any) => e.table_name).sort(), ['customers', 'orders'], 'the tables asked for');
  t.same(r.body.missing, ['no_such_table'], 'and the one that is not there');
  const orders = r.body.entities?.find((e: any) => e.table_name === 'orders');
  t.match(orders?.columns?.find((c: any) => c.name === 'total'), { suggested_role: 'metric' }, 'a numeric column suggested as a metric');
  t.match(r.body.relationships, [{ from_column: 'customer_id', to_column: 'id', evidence: 'foreign_key' }], 'the declared foreign key');
});

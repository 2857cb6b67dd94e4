/**
 * plugins.auth.enforce_catalog_lock end to end on Trino: a user logs in with their own Trino
 * login (a local coordinator that speaks the client protocol and checks basic auth, answering
 * from a real PostgreSQL), and whatever the model writes that reaches outside the session's
 * catalog — however it is spelt — is refused with SQL_REJECTED (catalog_lock) over HTTP and
 * over MCP, and never reaches the coordinator. SQL the lock cannot read is refused too.
 */
import t from 'tap';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startFakeTrino } from '../helpers/fake-trino.js';
import { closeClient, connectClient, until } from '../helpers/mcp.js';
import { ConfigReset, ConfigUpdate } from '../../protocol/subjects.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';

const nats = await startNats();
const db = await createTestDb('lock');
await db.pool.query(`CREATE TABLE orders (id int PRIMARY KEY, amount numeric); INSERT INTO orders VALUES (1, 10), (2, 32);
  CREATE SCHEMA hidden; CREATE TABLE hidden.salaries (id int, pay numeric); INSERT INTO hidden.salaries VALUES (1, 999);`);
const trino = await startFakeTrino({ databaseUrl: db.url, catalog: 'postgresql', auth: { user: 'dana', password: 'dana-pw' } });
const llm = await startFakeLlm();
let nextSql = 'SELECT 1';
llm.fallback(() => ({ text: sqlAnswer(nextSql) }));
const config = testConfig({
  natsUrl: nats.url,
  llmUrl: llm.url,
  extra: {
    config_db: { encryption_key: generateFernetKey() },
    database: { provider: 'trino', trino: { host: trino.host, port: trino.port, http_scheme: 'http', user: 'dana', password: 'dana-pw', catalog: 'postgresql', schema: 'public' } },
    plugins: { auth: { enabled: true, enforce_catalog_lock: true, enable_discovery_tokens: true, allowed_db_types: ['trino'], allowed_catalogs: [{ name: 'postgresql', allowed_schemas: ['public'] }] } },
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

const login = await call(`${stack.url}/auth/login`, { body: { username: 'dana', password: 'dana-pw', db_type: 'trino', catalog: 'postgresql', schema: 'public' } });
const sessionHeaders = { 'x-session-id': String(login.body?.session_id) };

/** Ask over /auth/query with the model writing `sql`; the reply and how many statements reached the coordinator. */
async function ask(sql: string): Promise<{ status: number; body: any; reached: number }> {
  nextSql = sql;
  const before = trino.statements.length;
  const r = await call(`${stack.url}/auth/query`, { body: { question: 'lock test' }, headers: sessionHeaders });
  const reached = trino.statements.slice(before).filter((s) => s.sql.includes(sql)).length;
  return { status: r.status, body: r.body, reached };
}

t.test('the login reached the coordinator with the user\'s own credentials', async (t) => {
  t.equal(login.status, 200, JSON.stringify(login.body));
  const ok = await ask('SELECT sum(amount) AS total FROM orders');
  t.equal(ok.status, 200, JSON.stringify(ok.body));
  t.same(ok.body.data, [[42]]);
  t.equal(ok.reached, 1);
  t.equal(trino.statements.at(-1)?.principal, 'dana', 'basic auth as the session\'s user');
  const qualified = await ask('SELECT count(*) AS n FROM POSTGRESQL.Public.ORDERS');
  // the lock lets its own catalog through, however spelt (this fake coordinator runs on
  // PostgreSQL and cannot resolve three-part names itself: only that it got the statement counts)
  t.not(qualified.body.error?.code, 'SQL_REJECTED', JSON.stringify(qualified.body));
  t.ok(qualified.reached >= 1, 'its own catalog, however spelt, reaches the coordinator (a second time: self-correction)');
});

const REFUSED: Array<[string, RegExp]> = [
  ['SELECT * FROM iceberg.db.t', /catalog "iceberg"/],
  ['SELECT * FROM "Iceberg"."db"."t"', /catalog "iceberg"/],
  ['SELECT o.id FROM orders o JOIN hive.sales.customers c ON c.id = o.id', /catalog "hive"/],
  ['SELECT * FROM orders WHERE id IN (SELECT id FROM system.runtime.queries)', /system/],
  ['WITH x AS (SELECT * FROM other.s.t) SELECT * FROM x', /catalog "other"/],
  ['SELECT * FROM postgresql.hidden.salaries', /schema "hidden"/],
  ['SELECT * FROM hidden.salaries', /schema "hidden"/],
  ["SELECT * FROM orders WHERE note = 'unterminated", /cannot be read|cannot be parsed|not/i],
];

t.test('/auth/query: outside the session\'s catalog and schemas, refused before the coordinator sees it', async (t) => {
  for (const [sql, why] of REFUSED) {
    const r = await ask(sql);
    t.equal(r.status, 422, `${sql}: ${JSON.stringify(r.body)}`);
    t.equal(r.body.error?.code, 'SQL_REJECTED', sql);
    t.match(r.body.error?.message, why, sql);
    t.equal(r.reached, 0, `${sql}: nothing reached the coordinator`);
  }
});

t.test('MCP: a token minted by the session carries its catalog, and the lock with it', async (t) => {
  const mint = await call(`${stack.url}/auth/tokens`, { body: { label: 'lock' }, headers: sessionHeaders });
  t.equal(mint.status, 201, mint.text);
  const client = await connectClient(stack.url, 'http', mint.body.token as string);
  t.teardown(() => closeClient(client));
  nextSql = 'SELECT count(*) AS n FROM orders';
  const ok = (await client.callTool({ name: 'ask_database', arguments: { question: 'how many orders' } })) as { isError?: boolean; structuredContent: any };
  t.notOk(ok.isError, JSON.stringify(ok.structuredContent));
  t.same(ok.structuredContent.rows, [[2]]);
  t.equal(trino.statements.at(-1)?.principal, 'dana', 'the token runs with the session\'s credentials');
  const before = trino.statements.length;
  nextSql = 'SELECT * FROM iceberg.db.t';
  const refused = (await client.callTool({ name: 'ask_database', arguments: { question: 'reach out' } })) as { isError?: boolean; structuredContent: any };
  t.equal(refused.isError, true);
  t.equal(refused.structuredContent.error.code, 'SQL_REJECTED');
  t.match(refused.structuredContent.error.message, /catalog "iceberg"/);
  t.equal(trino.statements.length, before, 'nothing reached the coordinator');
});

t.test('without a session, the server\'s own catalog is locked too (plugins.auth on)', async (t) => {
  nextSql = 'SELECT * FROM iceberg.db.t';
  const r = await call(`${stack.url}/api/query`, { body: { question: 'anything' } });
  t.equal(r.status, 422, r.text);
  t.match(r.body.error.message, /catalog "iceberg"/);
});

t.test('discovery with a catalog-less login: the tables /auth/tables lists, under their own catalog and schema', async (t) => {
  // two allowed catalogs: a login that names none is catalog-less, its connection reads every
  // catalog the coordinator has (schemas named catalog.schema), while the server's own names one
  const bus = stack.running.bus;
  await bus.request(ConfigUpdate, { key: 'plugins.auth.allowed_catalogs', value: [{ name: 'postgresql', allowed_schemas: ['public'] }, { name: 'hive', allowed_schemas: [] }], by: 'admin' }, { requestId: 'disc' });
  t.teardown(() => bus.request(ConfigReset, { key: 'plugins.auth.allowed_catalogs', by: 'admin' }, { requestId: 'disc' }));
  await until(() => config.plugins.auth.allowed_catalogs.length === 2, 5_000, 'the catalogs to apply');
  const open = await call(`${stack.url}/auth/login`, { body: { username: 'dana', password: 'dana-pw', db_type: 'trino' } });
  t.equal(open.status, 200, open.text);
  t.notOk(open.body.db?.catalog, 'no catalog of its own');
  const headers = { 'x-session-id': String(open.body.session_id) };
  const tables = await call(`${stack.url}/auth/tables`, { headers });
  t.equal(tables.status, 200, tables.text);
  t.match(tables.text, /postgresql\.public/, '/auth/tables lists the table');
  const found = await call(`${stack.url}/auth/discover?q=order`, { headers });
  t.equal(found.status, 200, found.text);
  t.same(found.body.tables, [{ catalog: 'postgresql', schema: 'public', name: 'orders', kind: 'table' }], 'found in its catalog, its schema allowed');
  const hidden = await call(`${stack.url}/auth/discover?q=salar`, { headers });
  t.same(hidden.body.tables, [], 'a schema allowed_schemas does not list stays out');

  // the session's discovery token, over MCP: the same
  const mint = await call(`${stack.url}/auth/tokens`, { body: { label: 'discovery', discovery: true }, headers });
  t.equal(mint.status, 201, mint.text);
  const client = await connectClient(stack.url, 'http', mint.body.token as string);
  t.teardown(() => closeClient(client));
  const tool = (await client.callTool({ name: 'discover_tables', arguments: { query: 'order' } })) as { isError?: boolean; structuredContent: any };
  t.notOk(tool.isError, JSON.stringify(tool.structuredContent));
  t.same(tool.structuredContent.tables, [{ catalog: 'postgresql', schema: 'public', name: 'orders', kind: 'table' }]);
});

/**
 * plugins.auth.require_login, end to end on both HTTP servers (uWebSockets.js where it loads, and
 * the node:http twin), against a real PostgreSQL where a tenant's role may read customers' names
 * but not their e-mail addresses.
 *
 * Off (the default, as SPEC.md keeps /api/query open): an anonymous /api/query runs as the
 * server's own role and reads the e-mails the tenant's grants forbid — the documented open door,
 * which the start-up warning names. On: nobody reaches the database without a login — anonymous
 * callers of /api/query (JSON and SSE), /api/tables, /tables and the legacy /query get 401 before
 * any model or database is asked, auto sessions are refused everywhere, and a signed-in tenant's
 * /api/query runs in the tenant's own scope (permission denied on the e-mails; the names come
 * back). Switched at run time through the admin API, so every process applies it.
 */
import t from 'tap';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { advice, parseConfig } from '../../config/load.js';
import { uwsAvailable } from '../../edge/http/server.js';
import { testConfig, testConfigObject } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb, dropRoles } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';
import YAML from 'yaml';

const tag = `${process.pid}_${Date.now().toString(36)}`;
const tenant = `tenant_${tag}`;
const nats = await startNats();
const db = await createTestDb('reqlogin');
await db.pool.query(`
  CREATE TABLE customers (id int PRIMARY KEY, name text, email text);
  INSERT INTO customers VALUES (1, 'Ada', 'ada@example.test'), (2, 'Grace', 'grace@example.test');
  CREATE ROLE ${tenant} LOGIN PASSWORD 'tenant-pw';
  GRANT CONNECT ON DATABASE ${db.name} TO ${tenant};
  GRANT USAGE ON SCHEMA public TO ${tenant};
  GRANT SELECT (id, name) ON customers TO ${tenant};
`);
const fake = await startFakeLlm();
let modelCalls = 0;
fake.fallback((req) => {
  modelCalls++;
  return { text: sqlAnswer(req.last.includes('QEMAIL') ? 'SELECT email FROM customers ORDER BY id' : 'SELECT name FROM customers ORDER BY id') };
});
const key = generateFernetKey();
const dbRef = { host: db.host, port: db.port, name: db.name, user: db.user };
const extra = (httpServer?: string) => ({
  ...(httpServer ? { app: { http_server: httpServer } } : {}),
  admin: { enabled: true, username: 'admin', password: 'local-pw' },
  // a refused query is an answer here, not something for the model to write around
  query: { max_corrections: 0 },
  config_db: { encryption_key: key },
  plugins: { auth: { enabled: true, auto_session: { enabled: true } } },
});
const config = testConfig({ natsUrl: nats.url, db: dbRef, llmUrl: fake.url, extra: extra() });
const stack = await startStack(config);
const otherKind = stack.running.edge?.kind === 'uws' || !uwsAvailable() ? 'node' : 'uws';
const otherConfig = testConfig({ natsUrl: nats.url, db: dbRef, llmUrl: fake.url, extra: extra(otherKind) });
const other = await startStack(otherConfig, { edge: true, actors: [] });
const servers = [
  { name: stack.running.edge!.kind, url: stack.url },
  { name: other.running.edge!.kind, url: other.url },
];
t.teardown(async () => {
  await other.stop();
  await stack.stop();
  await fake.close();
  await db.drop();
  await dropRoles(tenant);
  await nats.stop();
});
t.comment(`HTTP servers: ${servers.map((s) => s.name).join(' and ')}`);

// the callers: the admin panel, a tenant's session, the tenant's own API token, an admin's token
// without a database of its own, an auto session (opened while they are allowed)
const adminLogin = await call(`${stack.url}/admin/login`, { body: { username: 'admin', password: 'local-pw' } });
const ADMIN = { cookie: (adminLogin.headers.get('set-cookie') ?? '').split(';')[0]!, 'x-csrf-token': adminLogin.body.csrf_token as string };
const tenantLogin = await call(`${stack.url}/auth/login`, { body: { username: tenant, password: 'tenant-pw' } });
if (tenantLogin.status !== 200) throw new Error(`tenant login: ${tenantLogin.text}`);
const TENANT = { 'x-session-id': tenantLogin.body.session_id as string };
const TENANT_COOKIE = { cookie: (tenantLogin.headers.get('set-cookie') ?? '').split(';')[0]!, 'x-csrf-token': tenantLogin.body.csrf_token as string };
const tenantToken = (await call(`${stack.url}/auth/tokens`, { body: { label: 'tenant' }, headers: TENANT })).body.token as string;
const adminToken = (await call(`${stack.url}/admin/tokens`, { body: { label: 'service' }, headers: ADMIN })).body.token as string;
const auto = await call(`${stack.url}/auth/auto-session`, { body: {} });
const AUTO = { 'x-session-id': auto.body.session_id as string };

/** Set a runtime override through the admin API, and wait until both edges apply it. */
async function setting(key: string, value: unknown): Promise<void> {
  const r = await call(`${stack.url}/admin/config/${key}`, { method: 'PUT', body: { value }, headers: ADMIN });
  if (r.status !== 200) throw new Error(`${key}: ${r.text}`);
  const read = (c: typeof config) => key.split('.').reduce<any>((o, k) => o?.[k], c);
  for (const end = Date.now() + 5_000; JSON.stringify(read(otherConfig)) !== JSON.stringify(value); ) {
    if (Date.now() > end) throw new Error(`${key} did not reach the second edge`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const ask = (url: string, question: string, headers: Record<string, string> = {}) => call(`${url}/api/query`, { body: { question }, headers });

t.test('off (the default): an anonymous question runs as the server\'s role and reads what the tenant may not', async (t) => {
  t.equal(config.plugins.auth.require_login, false);
  const said = advice(config);
  t.ok(said.some((w) => /plugins\.auth is on but plugins\.auth\.require_login is false: anonymous callers of \/api\/query/.test(w)), 'the start-up warning names the open door');
  for (const { name, url } of servers) {
    const anon = await ask(url, 'QEMAIL: the customers\' e-mail addresses');
    t.equal(anon.status, 200, `${name}: ${anon.text}`);
    t.same(anon.body.rows, [['ada@example.test'], ['grace@example.test']], `${name}: the e-mails, read as the server's role`);
    t.equal((await call(`${url}/api/tables`)).status, 200);
    // the tenant's own route keeps to the tenant's grants
    const own = await call(`${url}/auth/query`, { body: { question: 'QEMAIL: e-mails' }, headers: TENANT });
    t.equal(own.status, 422, `${name}: /auth/query as the tenant: ${own.text}`);
    t.match(own.body.error.message, /permission denied/);
  }
});

t.test('on: nothing reaches the database without a login', async (t) => {
  await setting('plugins.auth.auto_session.enabled', false);
  await setting('plugins.auth.require_login', true);
  t.notOk(advice(config).some((w) => /require_login is false/.test(w)), 'no warning any more');
  for (const { name, url } of servers) {
    const calls = modelCalls;
    const refused: Array<[string, Promise<{ status: number; body: any }>]> = [
      ['POST /api/query', ask(url, 'QEMAIL: e-mails')],
      ['POST /api/query (SSE)', fetch(`${url}/api/query`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: JSON.stringify({ question: 'QEMAIL' }) }).then(async (r) => ({ status: r.status, body: await r.json().catch(() => undefined) }))],
      ['GET /api/tables', call(`${url}/api/tables`)],
      ['GET /api/tables/customers', call(`${url}/api/tables/customers`)],
      ['GET /tables', call(`${url}/tables`)],
      ['POST /query (an anonymous widget)', call(`${url}/query`, { body: { question: 'QEMAIL', session_id: 'w1' } })],
      ['POST /api/query with a wrong token', ask(url, 'QEMAIL', { authorization: 'Bearer ctd_nope' })],
    ];
    for (const [what, p] of refused) {
      const r = await p;
      t.equal(r.status, 401, `${name}: ${what}`);
      t.equal(r.body?.error?.code, 'UNAUTHORIZED');
    }
    // an auto session opened before is no login either, on any route
    for (const [what, p] of [
      ['POST /api/query', ask(url, 'QEMAIL', AUTO)],
      ['POST /query', call(`${url}/query`, { body: { question: 'QEMAIL' }, headers: AUTO })],
      ['POST /auth/query', call(`${url}/auth/query`, { body: { question: 'QEMAIL' }, headers: AUTO })],
      ['GET /api/workspace', call(`${url}/api/workspace`, { headers: AUTO })],
    ] as const) {
      t.equal((await p).status, 401, `${name}: an auto session on ${what}`);
    }
    const open = await call(`${url}/auth/auto-session`, { body: {} });
    t.equal(open.status, 403, `${name}: no new auto session`);
    t.equal(modelCalls, calls, `${name}: the model was not asked`);
  }
});

t.test('on: a signed-in tenant\'s /api/query runs in the tenant\'s own scope', async (t) => {
  for (const { name, url } of servers) {
    for (const [who, headers] of [['session header', TENANT], ['session cookie', TENANT_COOKIE], ['its API token', { authorization: `Bearer ${tenantToken}` }]] as const) {
      const emails = await ask(url, 'QEMAIL: e-mails', headers);
      t.equal(emails.status, 422, `${name}, ${who}: the e-mails are the tenant's to be refused: ${emails.text}`);
      t.match(emails.body.error.message, /permission denied/);
      const names = await ask(url, 'QNAME: names', headers);
      t.equal(names.status, 200, `${name}, ${who}: ${names.text}`);
      t.same(names.body.rows, [['Ada'], ['Grace']]);
    }
    const tables = await call(`${url}/api/tables/customers`, { headers: TENANT });
    t.equal(tables.status, 200, tables.text);
    // the admin panel and an admin's token without a database run as the server's role, as the admin decided
    t.equal((await ask(url, 'QEMAIL', ADMIN)).status, 200, `${name}: the admin panel`);
    t.equal((await ask(url, 'QEMAIL', { authorization: `Bearer ${adminToken}` })).status, 200, `${name}: an admin's token`);
    // a cookie write without its CSRF token is refused, as everywhere
    t.equal((await ask(url, 'QNAME', { cookie: TENANT_COOKIE.cookie })).status, 403, `${name}: cookie without x-csrf-token`);
  }
});

t.test('the two settings that disagree are refused, at start and at run time', async (t) => {
  const both = { plugins: { auth: { enabled: true, require_login: true, auto_session: { enabled: true } } }, config_db: { encryption_key: key } };
  t.throws(() => parseConfig(YAML.stringify(testConfigObject({ natsUrl: nats.url, extra: both })), 'x.yaml', {}), { code: 'CONFIG_INVALID', message: /auto_session\.enabled: an auto session is a session without a login/ });
  const without = { plugins: { auth: { enabled: false, require_login: true } } };
  t.throws(() => parseConfig(YAML.stringify(testConfigObject({ natsUrl: nats.url, extra: without })), 'x.yaml', {}), { code: 'CONFIG_INVALID', message: /require_login: requires plugins\.auth\.enabled/ });
  const r = await call(`${stack.url}/admin/config/plugins.auth.auto_session.enabled`, { method: 'PUT', body: { value: true }, headers: ADMIN });
  t.equal(r.status, 400, r.text);
});

t.test('off again at run time: the open door is back', async (t) => {
  await setting('plugins.auth.require_login', false);
  for (const { name, url } of servers) t.equal((await ask(url, 'QNAME')).status, 200, name);
});

/**
 * Multi-user sessions (plugins.auth) end to end on PostgreSQL: two database roles with
 * different grants sign in with their own credentials; each session's questions, tables and
 * tokens run on a pool of its own (pg_stat_activity shows a connection per role, gone at
 * logout); the allowed lists refuse logins outside them; max_workers queues database work
 * across sessions; /auth/config leaks nothing; auto sessions follow their origin rules and
 * cannot mint tokens; a held confirmation runs only for the session that asked.
 */
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import { ConfigReset, ConfigUpdate, SqlExecute, TokenRevoke } from '../../protocol/subjects.js';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { closeClient, connectClient, until, type TransportKind } from '../helpers/mcp.js';
import { call, startStack } from '../helpers/stack.js';

const nats = await startNats();
const db = await createTestDb('auth');
const fake = await startFakeLlm();
const key = generateFernetKey();
const tag = `${process.pid}_${Date.now().toString(36)}`;
const roleA = `auth_a_${tag}`;
const roleB = `auth_b_${tag}`;
const roleC = `auth_c_${tag}`;
const PASS_A = 'pa-Secret-1';
const PASS_B = 'pb-Secret-2';

await db.pool.query(`
  CREATE TABLE alpha_orders (id int PRIMARY KEY, amount numeric);
  INSERT INTO alpha_orders VALUES (1, 10), (2, 20), (3, 30);
  CREATE TABLE beta_customers (id int PRIMARY KEY, name text);
  INSERT INTO beta_customers VALUES (1, 'Ada'), (2, 'Grace');
  CREATE VIEW slow_v AS SELECT pg_sleep(1.2)::text AS slept, 1 AS one;
  CREATE ROLE ${roleA} LOGIN PASSWORD '${PASS_A}';
  CREATE ROLE ${roleB} LOGIN PASSWORD '${PASS_B}';
  CREATE ROLE ${roleC} NOLOGIN;
  GRANT CONNECT ON DATABASE ${db.name} TO ${roleA}, ${roleB}, ${roleC};
  GRANT USAGE ON SCHEMA public TO ${roleA}, ${roleB};
  GRANT SELECT ON alpha_orders, slow_v TO ${roleA};
  GRANT SELECT ON beta_customers, slow_v TO ${roleB};
`);

/** The SQL the fake model writes, by a word of the question. */
const SQL: Record<string, string> = {
  alpha: 'SELECT count(*) AS n FROM alpha_orders',
  beta: 'SELECT count(*) AS n FROM beta_customers',
  slow: 'SELECT one FROM slow_v',
};
fake.fallback((req) => {
  const text = req.messages.map((m) => m.content).join('\n').toLowerCase();
  const word = Object.keys(SQL).find((w) => text.includes(`question-${w}`));
  return word ? { text: sqlAnswer(SQL[word]!) } : { status: 500, message: 'no script' };
});

const dbRef = { host: db.host, port: db.port, name: db.name, user: db.user };
const ORIGIN = 'https://widget.example';
const auth = {
  enabled: true,
  session_ttl_minutes: 30,
  max_workers: 1,
  allowed_db_types: ['postgresql'],
  allowed_catalogs: [{ name: db.name, allowed_schemas: ['public'] }],
  auto_session: { enabled: true, ttl_hours: 1, label: 'Kiosk', allowed_origins: [ORIGIN] },
};
const config = testConfig({ natsUrl: nats.url, db: dbRef, llmUrl: fake.url, extra: { config_db: { encryption_key: key }, plugins: { auth } } });
const stack = await startStack(config);
// a second Cortado on the same NATS (its own prefix) holding SQL for confirmation
const confirmStack = await startStack(testConfig({
  natsUrl: nats.url, db: dbRef, llmUrl: fake.url,
  extra: { bus: { prefix: 'authconfirm' }, config_db: { encryption_key: key }, plugins: { auth }, query: { confirm_before_execute: true } },
}));
const offStack = await startStack(testConfig({ natsUrl: nats.url, db: dbRef, llmUrl: fake.url, extra: { bus: { prefix: 'authoff' } } }));
const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'auth-test', log: createLogger({ svc: 'test', level: 'silent' }) });

t.teardown(async () => {
  await bus.close();
  await offStack.stop();
  await confirmStack.stop();
  await stack.stop();
  await fake.close();
  await db.drop();
  await db.pool.end().catch(() => undefined);
  const { default: pg } = await import('pg');
  const { ADMIN_URL } = await import('../helpers/pg.js');
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  for (const r of [roleA, roleB, roleC]) await admin.query(`DROP ROLE IF EXISTS ${r}`).catch(() => undefined);
  await admin.end();
  await nats.stop();
});

interface Session {
  cookie: string;
  csrf: string;
  token: string;
  body: any;
}

async function login(base: string, username: string, password: string, extra: Record<string, unknown> = {}): Promise<{ status: number; body: any; session?: Session }> {
  const r = await call(`${base}/auth/login`, { body: { username, password, ...extra } });
  if (r.status !== 200) return { status: r.status, body: r.body };
  const cookie = (r.headers.get('set-cookie') ?? '').split(';')[0]!;
  return { status: 200, body: r.body, session: { cookie, csrf: r.body.csrf_token, token: r.body.session_id, body: r.body } };
}

/** A request with the session cookie (and its CSRF token on writes). */
function as(s: Session, init: { body?: unknown; method?: string } = {}) {
  return { ...init, headers: { cookie: s.cookie, 'x-csrf-token': s.csrf } };
}

async function connectionsOf(role: string): Promise<number> {
  const r = await db.pool.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND usename = $2', [db.name, role]);
  return r.rows[0].n as number;
}

async function eventually(check: () => Promise<boolean>, ms = 3_000): Promise<boolean> {
  const until = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
}

const a = await login(stack.url, roleA, PASS_A);
const b = await login(stack.url, roleB, PASS_B);

t.test('login with database credentials: a session per user, cookie HttpOnly SameSite=Strict, nothing secret in the reply', async (t) => {
  t.equal(a.status, 200, JSON.stringify(a.body));
  t.equal(b.status, 200, JSON.stringify(b.body));
  const r = await call(`${stack.url}/auth/login`, { body: { username: roleA, password: PASS_A } });
  const cookie = r.headers.get('set-cookie') ?? '';
  t.match(cookie, /^cortado_auth=[^;]+; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+/);
  t.equal(r.body.username, roleA);
  t.equal(r.body.kind, 'auth');
  t.equal(r.body.source, 'database');
  t.same(r.body.db, { provider: 'postgresql', database: db.name, schema: 'public' });
  t.notOk(r.text.includes(PASS_A), 'the password never comes back');
  t.notOk('db_config' in r.body, 'nor the stored db_config');
  t.notOk('id' in r.body, 'the scope id stays inside');
  await call(`${stack.url}/auth/logout`, { method: 'POST', headers: { 'x-session-id': r.body.session_id } });
});

t.test('each session queries with its own credentials: grants differ, so answers differ', async (t) => {
  const ra = await call(`${stack.url}/auth/query`, as(a.session!, { body: { question: 'question-alpha: how many orders?' } }));
  t.equal(ra.status, 200, ra.text);
  t.same(ra.body.data, [[3]]);
  t.equal(ra.body.response_type, 'sql');

  const rb = await call(`${stack.url}/auth/query`, as(b.session!, { body: { question: 'question-alpha: how many orders?' } }));
  t.equal(rb.status, 422, 'role B may not read alpha_orders');
  t.equal(rb.body.error.code, 'DB_QUERY_FAILED');
  t.match(rb.body.error.message, /permission denied/);

  const rb2 = await call(`${stack.url}/auth/query`, { body: { question: 'question-beta: how many customers?' }, headers: { 'x-session-id': b.session!.token } });
  t.equal(rb2.status, 200, 'X-Session-ID works too, and needs no CSRF token');
  t.same(rb2.body.data, [[2]]);

  const noCsrf = await call(`${stack.url}/auth/query`, { body: { question: 'question-alpha' }, headers: { cookie: a.session!.cookie } });
  t.equal(noCsrf.status, 403, 'a cookie write without x-csrf-token is refused');
  const anon = await call(`${stack.url}/auth/query`, { body: { question: 'question-alpha' } });
  t.equal(anon.status, 401);
});

t.test('tables and schemas are the session\'s own', async (t) => {
  const ta = await call(`${stack.url}/auth/tables`, as(a.session!));
  t.equal(ta.status, 200, ta.text);
  t.same(ta.body.tables.sort(), ['alpha_orders', 'slow_v']);
  const tb = await call(`${stack.url}/auth/tables`, as(b.session!));
  t.same(tb.body.tables.sort(), ['beta_customers', 'slow_v']);
  const sa = await call(`${stack.url}/auth/schema/alpha_orders`, as(a.session!));
  t.equal(sa.status, 200);
  t.same(sa.body.columns.map((c: { name: string }) => c.name), ['id', 'amount']);
  const sb = await call(`${stack.url}/auth/schema/alpha_orders`, as(b.session!));
  t.equal(sb.status, 404, 'B does not see A\'s table');
});

t.test('per-user pools: pg_stat_activity shows each role; logout closes that pool at once', async (t) => {
  t.ok(await eventually(async () => (await connectionsOf(roleA)) > 0), 'A has a connection of its own');
  t.ok(await eventually(async () => (await connectionsOf(roleB)) > 0), 'B has a connection of its own');
  const second = await login(stack.url, roleA, PASS_A);
  await call(`${stack.url}/auth/query`, as(second.session!, { body: { question: 'question-alpha' } }));
  const out = await call(`${stack.url}/auth/logout`, as(a.session!, { method: 'POST' }));
  t.equal(out.status, 200);
  t.match(out.headers.get('set-cookie') ?? '', /cortado_auth=; .*Max-Age=0/);
  const after = await call(`${stack.url}/auth/query`, as(a.session!, { body: { question: 'question-alpha' } }));
  t.equal(after.status, 401, 'the session is gone');
  // the second session of the same role keeps its own pool: close it too, then none of A is left
  await call(`${stack.url}/auth/logout`, as(second.session!, { method: 'POST' }));
  t.ok(await eventually(async () => (await connectionsOf(roleA)) === 0), 'every connection of role A closed after logout');
  t.ok((await connectionsOf(roleB)) > 0, 'B keeps its pool');
});

t.test('logins outside the rules are refused', async (t) => {
  const nologin = await login(stack.url, roleC, 'whatever');
  t.equal(nologin.status, 401, 'a role that may not log in');
  t.equal(nologin.body.error.message, 'the database refused these credentials');
  const unknown = await login(stack.url, `nobody_${tag}`, 'x');
  t.equal(unknown.status, 401, 'an unknown role');
  const type = await login(stack.url, roleB, PASS_B, { db_type: 'mysql' });
  t.equal(type.status, 403, 'allowed_db_types');
  t.match(type.body.error.message, /allowed_db_types/);
  const database = await login(stack.url, roleB, PASS_B, { database: 'postgres' });
  t.equal(database.status, 403, 'allowed_catalogs (the database, on PostgreSQL)');
  const schema = await login(stack.url, roleB, PASS_B, { schema: 'pg_catalog' });
  t.equal(schema.status, 403, 'allowed_schemas');
  const host = await login(stack.url, roleB, PASS_B, { host: '10.0.0.1' });
  t.equal(host.status, 403, 'the host is the server\'s to choose');
  const bad = await call(`${stack.url}/auth/login`, { body: { username: roleB } });
  t.equal(bad.status, 400);
});

t.test('max_workers: with 1 worker, a second slow query waits for the first', async (t) => {
  const c = await login(stack.url, roleA, PASS_A);
  const ask = async (s: Session) => {
    const started = Date.now();
    const r = await call(`${stack.url}/auth/query`, as(s, { body: { question: 'question-slow' } }));
    return { r, ms: Date.now() - started, done: Date.now() };
  };
  // warm both sessions' catalogs so only the slow statements compete
  await call(`${stack.url}/auth/tables`, as(c.session!));
  await call(`${stack.url}/auth/tables`, as(b.session!));
  const [x, y] = await Promise.all([ask(c.session!), ask(b.session!)]);
  t.equal(x.r.status, 200, x.r.text);
  t.equal(y.r.status, 200, y.r.text);
  const [fast, slow] = x.ms < y.ms ? [x, y] : [y, x];
  t.ok(fast.ms >= 1_100, `the first ran (${fast.ms} ms)`);
  t.ok(slow.ms >= 2_300, `the second waited for a worker, then ran (${slow.ms} ms)`);
  await call(`${stack.url}/auth/logout`, as(c.session!, { method: 'POST' }));
});

t.test('/auth/config: the rules, never a host or a secret', async (t) => {
  const r = await call(`${stack.url}/auth/config`);
  t.equal(r.status, 200);
  t.same(r.body, {
    enabled: true,
    discovery_enabled: false,
    allowed_db_types: ['postgresql'],
    allowed_catalogs: [{ name: db.name, allowed_schemas: ['public'] }],
    db_provider: 'postgresql',
    enforce_catalog_lock: true,
    session_ttl_minutes: 30,
    auto_session: { enabled: true, label: 'Kiosk' },
  });
  for (const secret of [key, db.host, String(db.port), 'password', 'host', PASS_A]) t.notOk(r.text.includes(secret), `no ${secret === key ? 'encryption key' : secret}`);
  const off = await call(`${offStack.url}/auth/config`);
  t.equal(off.status, 200);
  t.equal(off.body.enabled, false);
  for (const path of ['/auth/login', '/auth/query', '/auth/auto-session', '/auth/tokens']) {
    const r2 = await call(`${offStack.url}${path}`, { body: {} });
    t.equal(r2.status, 404, `${path} does not exist while plugins.auth is off`);
  }
  t.equal((await call(`${offStack.url}/auth/tables`)).status, 404);
});

t.test('auto sessions: only from allowed origins, labelled, on the server\'s own database, no tokens', async (t) => {
  t.equal((await call(`${stack.url}/auth/auto-session`, { method: 'POST' })).status, 403, 'no Origin');
  t.equal((await call(`${stack.url}/auth/auto-session`, { method: 'POST', headers: { origin: 'https://evil.example' } })).status, 403, 'another origin');
  const r = await call(`${stack.url}/auth/auto-session`, { method: 'POST', headers: { origin: `${ORIGIN}/` } });
  t.equal(r.status, 200, r.text);
  t.equal(r.body.auto, true);
  t.equal(r.body.label, 'Kiosk');
  t.equal(r.body.username, 'Kiosk');
  t.equal(r.body.ttl_minutes, 60);
  const token = r.body.session_id as string;
  const q = await call(`${stack.url}/auth/query`, { body: { question: 'question-beta' }, headers: { 'x-session-id': token } });
  t.equal(q.status, 200, 'runs on the server\'s database config');
  t.same(q.body.data, [[2]]);
  const mint = await call(`${stack.url}/auth/tokens`, { body: { label: 'x' }, headers: { 'x-session-id': token } });
  t.equal(mint.status, 403, 'an auto session cannot mint API tokens');
});

t.test('a session mints an API token scoped to its own db_config; revoking it closes that scope', async (t) => {
  const mint = await call(`${stack.url}/auth/tokens`, as(b.session!, { body: { label: 'mcp', ttl_hours: 2 } }));
  t.equal(mint.status, 201, mint.text);
  t.match(mint.body.token, /^ctd_/);
  t.equal(mint.body.info.username, roleB);
  t.equal(mint.body.info.db_config.password, '********');
  const id = mint.body.info.id as string;
  const scope = `t:${id}`;
  const ok = await bus.request(SqlExecute, { sql: 'SELECT count(*) AS n FROM beta_customers' }, { requestId: 'tok-1', scope });
  t.same(ok.rows, [[2]], 'the token runs as its session\'s role');
  await t.rejects(bus.request(SqlExecute, { sql: 'SELECT count(*) FROM alpha_orders' }, { requestId: 'tok-2', scope }), { code: 'DB_QUERY_FAILED', message: /permission denied/ });
  // the same scope when the token is used where a user would use it: MCP and the legacy /query
  for (const kind of ['http', 'sse'] as TransportKind[]) {
    const client = await connectClient(stack.url, kind, mint.body.token as string);
    const beta = (await client.callTool({ name: 'ask_database', arguments: { question: 'question-beta' } })) as { isError?: boolean; structuredContent: { rows?: unknown[] } };
    t.notOk(beta.isError, `${kind}: ask_database answers`);
    t.same(beta.structuredContent.rows, [[2]], `${kind}: MCP runs as the token's role`);
    const alpha = (await client.callTool({ name: 'ask_database', arguments: { question: 'question-alpha' } })) as { isError?: boolean; structuredContent: { error?: { code: string; message: string } } };
    t.equal(alpha.isError, true, `${kind}: not with the server's credentials`);
    t.match(alpha.structuredContent.error, { code: 'DB_QUERY_FAILED', message: /permission denied/ });
    await closeClient(client);
  }
  const bearer = { headers: { authorization: `Bearer ${mint.body.token as string}` } };
  const legacyBeta = await call(`${stack.url}/query`, { ...bearer, body: { question: 'question-beta' } });
  t.same(legacyBeta.body.data, [[2]], 'the legacy /query with the token runs as its role');
  const legacyAlpha = await call(`${stack.url}/query`, { ...bearer, body: { question: 'question-alpha' } });
  t.equal(legacyAlpha.status, 422, legacyAlpha.text);
  t.match(legacyAlpha.body.error.message, /permission denied/);
  await bus.request(TokenRevoke, { id }, { requestId: 'tok-3' });
  await t.rejects(bus.request(SqlExecute, { sql: 'SELECT 1' }, { requestId: 'tok-4', scope }), { code: 'UNAUTHORIZED' }, 'a revoked token\'s scope is refused');
});

t.test('confirm over /auth/query/confirm is bound to the session that asked', async (t) => {
  const s1 = await login(confirmStack.url, roleB, PASS_B);
  const s2 = await login(confirmStack.url, roleB, PASS_B);
  t.equal(s1.status, 200, JSON.stringify(s1.body));
  const asked = await call(`${confirmStack.url}/auth/query`, as(s1.session!, { body: { question: 'question-beta' } }));
  t.equal(asked.status, 200, asked.text);
  t.equal(asked.body.requires_confirmation, true);
  t.equal(asked.body.executed, false);
  const id = asked.body.confirmation_id as string;
  const other = await call(`${confirmStack.url}/auth/query/confirm`, as(s2.session!, { body: { confirmation_id: id } }));
  t.equal(other.status, 403, 'another session of the same user cannot confirm it');
  const ran = await call(`${confirmStack.url}/auth/query/confirm`, as(s1.session!, { body: { confirmation_id: id } }));
  t.equal(ran.status, 200, ran.text);
  t.same(ran.body.data, [[2]]);
  t.equal(ran.body.executed, true);
  const again = await call(`${confirmStack.url}/auth/query/confirm`, as(s1.session!, { body: { confirmation_id: id } }));
  t.equal(again.status, 404, 'single use');
  // the confirmation runs with the session's own credentials too
  const heldAlpha = await call(`${confirmStack.url}/auth/query`, as(s1.session!, { body: { question: 'question-alpha' } }));
  const denied = await call(`${confirmStack.url}/auth/query/confirm`, as(s1.session!, { body: { confirmation_id: heldAlpha.body.confirmation_id } }));
  t.equal(denied.status, 422);
  t.match(denied.body.error.message, /permission denied/);
});

t.test('/auth/discover: off by default; on, the session\'s own database, as its role sees it, never rows', async (t) => {
  const s = await login(stack.url, roleB, PASS_B);
  t.equal(s.status, 200);
  const off = await call(`${stack.url}/auth/discover?q=beta`, as(s.session!));
  t.equal(off.status, 404, off.text);
  t.equal((await call(`${stack.url}/auth/config`)).body.discovery_enabled, false);

  await bus.request(ConfigUpdate, { key: 'plugins.auth.enable_discovery_tokens', value: true, by: 'admin' }, { requestId: 'disc-on' });
  t.teardown(() => bus.request(ConfigReset, { key: 'plugins.auth.enable_discovery_tokens', by: 'admin' }, { requestId: 'disc-off' }));
  await until(() => config.plugins.auth.enable_discovery_tokens, 5_000, 'discovery to be on');
  t.equal((await call(`${stack.url}/auth/config`)).body.discovery_enabled, true);

  const found = await call(`${stack.url}/auth/discover?q=CUSTOM`, as(s.session!));
  t.equal(found.status, 200, found.text);
  t.same(found.body, { tables: [{ catalog: db.name, schema: 'public', name: 'beta_customers', kind: 'table' }], truncated: false });
  t.notOk(found.text.includes('Grace'), 'names only');
  const hidden = await call(`${stack.url}/auth/discover?q=alpha`, as(s.session!));
  t.same(hidden.body.tables, [], 'a table the role may not read is not found');
  const bad = await call(`${stack.url}/auth/discover`, as(s.session!));
  t.equal(bad.status, 400);
  const anonymous = await call(`${stack.url}/auth/discover?q=beta`);
  t.equal(anonymous.status, 401);
});

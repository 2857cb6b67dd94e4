/**
 * The admin panel's API over HTTP with a real config database (PostgreSQL): login and the
 * fail-closed rule, cookie flags, CSRF, lockout shared through NATS, runtime config (seen by
 * a second process), secrets masked and stored encrypted, prompts, API tokens, mask rules,
 * the audit log and its CSV export.
 */
import t from 'tap';
import { createLogger } from '../../runtime/log.js';
import { TokenCheck } from '../../protocol/subjects.js';
import { runCortado } from '../../cli/run.js';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';

const nats = await startNats();
const db = await createTestDb('adm');
await db.pool.query(GUARD_SCHEMA_SQL);
const cfgDb = await createTestDb('cfg');
const fake = await startFakeLlm();
const key = generateFernetKey();
const dbRef = { host: db.host, port: db.port, name: db.name, user: db.user };
const extra = {
  admin: { enabled: true, username: 'admin', password: 'correct horse' },
  config_db: { enabled: true, encryption_key: key, postgresql: { host: cfgDb.host, port: cfgDb.port, database: cfgDb.name, user: cfgDb.user } },
};
const config = testConfig({ natsUrl: nats.url, db: dbRef, llmUrl: fake.url, extra });
const stack = await startStack(config);
const log = createLogger({ svc: 'test', level: 'silent' });
t.teardown(async () => {
  await stack.stop();
  await fake.close();
  await db.drop();
  await cfgDb.drop();
  await nats.stop();
});

async function signIn(url = stack.url, username = 'admin', password = 'correct horse') {
  const res = await call(`${url}/admin/login`, { body: { username, password } });
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  return { res, cookie, csrf: res.body?.csrf_token as string };
}

t.test('login: cookie flags, session, CSRF on writes, logout', async (t) => {
  const { res, cookie, csrf } = await signIn();
  t.equal(res.status, 200, res.text);
  const setCookie = res.headers.get('set-cookie') ?? '';
  t.match(setCookie, /^cortado_admin=[^;]+; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+/);
  t.notMatch(setCookie, /Secure/, 'no Secure flag without TLS');
  t.equal(res.body.username, 'admin');
  t.equal(res.body.source, 'local');
  t.notOk(res.text.includes('correct horse'));

  const session = await call(`${stack.url}/admin/session`, { headers: { cookie } });
  t.equal(session.status, 200);
  t.equal(session.body.csrf_token, csrf);

  const noCsrf = await call(`${stack.url}/admin/config/query.max_limit`, { method: 'PUT', body: { value: 900 }, headers: { cookie } });
  t.equal(noCsrf.status, 403, 'a write without the CSRF header is refused');
  const wrongCsrf = await call(`${stack.url}/admin/config/query.max_limit`, { method: 'PUT', body: { value: 900 }, headers: { cookie, 'x-csrf-token': 'nope' } });
  t.equal(wrongCsrf.status, 403);
  const anon = await call(`${stack.url}/admin/config`);
  t.equal(anon.status, 401);
  t.equal(anon.body.error.code, 'UNAUTHORIZED');

  const out = await call(`${stack.url}/admin/logout`, { method: 'POST', body: {}, headers: { cookie, 'x-csrf-token': csrf } });
  t.equal(out.status, 200);
  t.match(out.headers.get('set-cookie'), /Max-Age=0/);
  t.equal((await call(`${stack.url}/admin/session`, { headers: { cookie } })).status, 401, 'the session is gone');
});

t.test('a form post signs in and redirects (the page without script)', async (t) => {
  const res = await fetch(`${stack.url}/admin/login`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'username=admin&password=correct+horse' });
  t.equal(res.status, 303);
  t.equal(res.headers.get('location'), '/admin');
  t.match(res.headers.get('set-cookie'), /cortado_admin=/);
  const bad = await fetch(`${stack.url}/admin/login`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'username=admin&password=nope' });
  t.equal(bad.status, 303);
  t.equal(bad.headers.get('location'), '/admin?error=UNAUTHORIZED');
});

t.test('runtime config: validated, applied, kept with history, seen by a second process; secrets masked and encrypted', async (t) => {
  const { cookie, csrf } = await signIn();
  const h = { cookie, 'x-csrf-token': csrf };
  const secondConfig = testConfig({ natsUrl: nats.url, db: dbRef, extra: { admin: extra.admin, config_db: extra.config_db } });
  const second = await runCortado({ config: secondConfig, roles: { edge: false, actors: ['insights'] }, log, name: 'second' });
  t.teardown(() => second.stop(1_000));
  const eventually = async (check: () => boolean) => {
    const end = Date.now() + 3_000;
    while (Date.now() < end && !check()) await new Promise((r) => setTimeout(r, 50));
    return check();
  };

  const bad = await call(`${stack.url}/admin/config/query.max_limit`, { method: 'PUT', body: { value: 'lots' }, headers: h });
  t.equal(bad.status, 400);
  t.match(bad.body.error.message, /query\.max_limit/);
  const fixed = await call(`${stack.url}/admin/config/database.provider`, { method: 'PUT', body: { value: 'mysql' }, headers: h });
  t.equal(fixed.status, 403, 'start-up keys cannot change at run time');
  const unknown = await call(`${stack.url}/admin/config/query.nonsense`, { method: 'PUT', body: { value: 1 }, headers: h });
  t.equal(unknown.status, 400);

  const tooBig = await call(`${stack.url}/admin/config/query.default_limit`, { method: 'PUT', body: { value: 5000 }, headers: h });
  t.equal(tooBig.status, 400, 'cross-checks apply too (default_limit above max_limit)');
  const ok = await call(`${stack.url}/admin/config/query.default_limit`, { method: 'PUT', body: { value: 7 }, headers: h });
  t.equal(ok.status, 200, ok.text);
  t.equal(config.query.default_limit, 7, 'applied in this process');
  t.ok(await eventually(() => secondConfig.query.default_limit === 7), 'a second process sees the change without a restart');

  // the change takes effect: a query without LIMIT now gets LIMIT 7
  fake.script({ text: sqlAnswer('SELECT id FROM orders ORDER BY id') });
  const q = await call(`${stack.url}/api/query`, { body: { question: 'all orders' } });
  t.equal(q.body.row_count, 7, q.text);
  t.equal(q.body.truncated, true);

  const view = await call(`${stack.url}/admin/config`, { headers: { cookie } });
  t.equal(view.body.config.query.default_limit, 7);
  t.equal(view.body.config.admin.password, '********', 'secrets masked, never partially');
  t.equal(view.body.config.config_db.encryption_key, '********');
  t.equal(view.body.persistent, true);
  t.ok(view.body.overrides.some((o: { key: string; updated_by: string }) => o.key === 'query.default_limit' && o.updated_by === 'admin'));
  t.notOk(view.text.includes('correct horse'));

  const secret = await call(`${stack.url}/admin/config/ldap.bind_password`, { method: 'PUT', body: { value: 's3cret-bind' }, headers: h });
  t.equal(secret.status, 200, secret.text);
  t.equal(secret.body.value, '********');
  const stored = await allText();
  t.notMatch(stored, /s3cret-bind/, 'the secret is stored encrypted');
  t.match(stored, /ldap\.bind_password/, 'yet it is stored');
  t.equal(config.ldap.bind_password, 's3cret-bind', 'and applied in clear in memory');
  t.ok(await eventually(() => secondConfig.ldap.bind_password === 's3cret-bind'), 'the second process opens the sealed value');
  const ldapView = await call(`${stack.url}/admin/ldap`, { headers: { cookie } });
  t.equal(ldapView.body.settings.bind_password, '********');

  const history = await call(`${stack.url}/admin/config-history?key=query.default_limit`, { headers: { cookie } });
  t.equal(history.body.changes[0].new_value, 7, history.text);
  t.equal(history.body.changes[0].changed_by, 'admin');

  const reset = await call(`${stack.url}/admin/config/query.default_limit`, { method: 'DELETE', headers: h });
  t.equal(reset.status, 200, reset.text);
  t.equal(config.query.default_limit, 100, 'reset to the file value');
  t.ok(await eventually(() => secondConfig.query.default_limit === 100));
});

t.test('run-time overrides take effect where the code uses them, or are refused as start-only (catalog.cache_ttl_seconds, conversation.max_turns)', async (t) => {
  const { cookie, csrf } = await signIn();
  const h = { cookie, 'x-csrf-token': csrf };
  const tables = async (): Promise<string[]> => ((await call(`${stack.url}/api/tables`)).body.tables as Array<{ name: string }>).map((x) => x.name.split('.').at(-1)!);
  t.equal(config.catalog.cache_ttl_seconds, 300, 'the file\'s TTL: the catalog keeps an introspection five minutes');
  t.notOk((await tables()).includes('ttl_probe'));
  await db.pool.query('CREATE TABLE ttl_probe (id int)');
  t.teardown(() => db.pool.query('DROP TABLE IF EXISTS ttl_probe'));
  t.notOk((await tables()).includes('ttl_probe'), 'a new table is not seen while the introspection is kept');
  // before issue 26 this was accepted and did nothing until a restart (the TTL was read once)
  const put = await call(`${stack.url}/admin/config/catalog.cache_ttl_seconds`, { method: 'PUT', body: { value: 0 }, headers: h });
  t.equal(put.status, 200, put.text);
  t.teardown(() => call(`${stack.url}/admin/config/catalog.cache_ttl_seconds`, { method: 'DELETE', headers: h }));
  t.ok((await tables()).includes('ttl_probe'), 'with the TTL at 0 the next request introspects again: the new table is there, no restart');

  const refused = await call(`${stack.url}/admin/config/conversation.max_turns`, { method: 'PUT', body: { value: 3 }, headers: h });
  t.equal(refused.status, 403, refused.text);
  t.equal(refused.body.error.code, 'FORBIDDEN');
  t.match(refused.body.error.message, /conversation\.max_turns is read at start-up only \(the conversation store is sized/, 'says why and what to do');
  t.equal(config.conversation.max_turns, 5, 'nothing changed');
  const view = await call(`${stack.url}/admin/config`, { headers: { cookie } });
  t.notOk(view.body.overrides.some((o: { key: string }) => o.key === 'conversation.max_turns'), 'and nothing was stored');
});

/** Every row of every table of the config database, as text. */
async function allText(): Promise<string> {
  const tables = await cfgDb.pool.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`);
  let out = '';
  for (const { table_name } of tables.rows) {
    const r = await cfgDb.pool.query(`SELECT t::text AS row FROM "${table_name}" t`);
    out += r.rows.map((x) => x.row).join('\n');
  }
  return out;
}

t.test('prompts: list with their source, override, reset', async (t) => {
  const { cookie, csrf } = await signIn();
  const h = { cookie, 'x-csrf-token': csrf };
  const list = await call(`${stack.url}/admin/prompts`, { headers: { cookie } });
  t.equal(list.status, 200);
  const sql = list.body.prompts.find((p: { key: string }) => p.key === 'sql_generation');
  t.equal(sql.source, 'default');
  t.match(sql.text, /\{question\}/);
  const put = await call(`${stack.url}/admin/prompts/sql_generation`, { method: 'PUT', body: { text: 'CUSTOM PROMPT {schema_info}\nQuestion: {question}' }, headers: h });
  t.equal(put.status, 200, put.text);
  fake.script({ text: sqlAnswer('SELECT 1 AS one') });
  await call(`${stack.url}/api/query`, { body: { question: 'one?' } });
  t.match(fake.requests.at(-1)!.system, /CUSTOM PROMPT/, 'the next question uses the new prompt');
  const after = await call(`${stack.url}/admin/prompts`, { headers: { cookie } });
  t.equal(after.body.prompts.find((p: { key: string }) => p.key === 'sql_generation').source, 'override');
  const bad = await call(`${stack.url}/admin/prompts/no_such_prompt`, { method: 'PUT', body: { text: 'x' }, headers: h });
  t.equal(bad.status, 400);
  t.equal((await call(`${stack.url}/admin/prompts/sql_generation`, { method: 'DELETE', headers: h })).status, 200);
  fake.script({ text: sqlAnswer('SELECT 1 AS one') });
  await call(`${stack.url}/api/query`, { body: { question: 'one?' } });
  t.notMatch(fake.requests.at(-1)!.system, /CUSTOM PROMPT/, 'back to the default');
});

t.test('API tokens: shown once, stored hashed, TTL capped, checked, revoked, deleted', async (t) => {
  const { cookie, csrf } = await signIn();
  const h = { cookie, 'x-csrf-token': csrf };
  const issued = await call(`${stack.url}/admin/tokens`, { body: { label: 'claude desktop', ttl_hours: 24, db_config: { catalog: 'sales', password: 'db-pass' } }, headers: h });
  t.equal(issued.status, 201, issued.text);
  const token = issued.body.token as string;
  t.match(token, /^ctd_[A-Za-z0-9_-]{40,}$/);
  t.equal(issued.body.info.db_config.password, '********');
  t.equal(issued.body.info.status, 'active');
  const stored = await allText();
  t.notOk(stored.includes(token), 'the token itself is not stored');
  t.notOk(stored.includes('db-pass'), 'the db password is stored encrypted');

  const list = await call(`${stack.url}/admin/tokens`, { headers: { cookie } });
  t.equal(list.body.tokens.length, 1);
  t.notOk(list.text.includes(token));
  t.equal(list.body.tokens[0].prefix, token.slice(0, 10));

  const checked = await stack.running.bus.request(TokenCheck, { token }, { requestId: 't' });
  t.equal(checked.info.username, 'admin');
  await t.rejects(stack.running.bus.request(TokenCheck, { token: `${token}x` }, { requestId: 't' }), { code: 'UNAUTHORIZED' });

  const tooLong = await call(`${stack.url}/admin/tokens`, { body: { ttl_hours: 100_000 }, headers: h });
  t.equal(tooLong.status, 400, 'the TTL is capped by plugins.auth.token_max_ttl_hours');

  const id = issued.body.info.id as string;
  t.equal((await call(`${stack.url}/admin/tokens/${id}/revoke`, { method: 'POST', body: {}, headers: h })).status, 200);
  await t.rejects(stack.running.bus.request(TokenCheck, { token }, { requestId: 't' }), { code: 'UNAUTHORIZED' }, 'a revoked token no longer works');
  t.equal((await call(`${stack.url}/admin/tokens`, { headers: { cookie } })).body.tokens[0].status, 'revoked');
  t.equal((await call(`${stack.url}/admin/tokens/${id}`, { method: 'DELETE', headers: h })).status, 200);
  t.equal((await call(`${stack.url}/admin/tokens/${id}`, { method: 'DELETE', headers: h })).status, 404);
});

t.test('mask rules: create, list, update, delete, validation', async (t) => {
  const { cookie, csrf } = await signIn();
  const h = { cookie, 'x-csrf-token': csrf };
  const made = await call(`${stack.url}/admin/mask-rules`, { body: { field_pattern: '*email*', strategy: 'partial', description: 'contact data' }, headers: h });
  t.equal(made.status, 201, made.text);
  t.equal(made.body.enabled, true);
  const bad = await call(`${stack.url}/admin/mask-rules`, { body: { field_pattern: 'x', strategy: 'shred' }, headers: h });
  t.equal(bad.status, 400);
  const upd = await call(`${stack.url}/admin/mask-rules/${made.body.id}`, { method: 'PUT', body: { enabled: false }, headers: h });
  t.equal(upd.body.enabled, false);
  t.equal((await call(`${stack.url}/admin/mask-rules`, { headers: { cookie } })).body.rules.length, 1);
  t.equal((await call(`${stack.url}/admin/mask-rules/${made.body.id}`, { method: 'DELETE', headers: h })).status, 200);
  t.equal((await call(`${stack.url}/admin/mask-rules/${made.body.id}`, { method: 'PUT', body: { enabled: true }, headers: h })).status, 404);
});

t.test('audit log: logins and questions are recorded; filters; CSV export', async (t) => {
  const { cookie } = await signIn();
  fake.script({ text: sqlAnswer('SELECT count(*) AS n FROM orders') });
  const q = await call(`${stack.url}/api/query`, { body: { question: 'how many orders?' } });
  const rid = q.body.request_id as string;
  const end = Date.now() + 5_000;
  let entries: Array<{ type: string; code?: string; request_id?: string }> = [];
  while (Date.now() < end) {
    const r = await call(`${stack.url}/admin/audit?request_id=${rid}`, { headers: { cookie } });
    entries = r.body.entries;
    if (entries.some((e) => e.type === 'query.executed')) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  t.ok(entries.some((e) => e.type === 'query.generated'), 'query.generated audited');
  t.ok(entries.some((e) => e.type === 'query.executed' && e.code === 'OK'), 'query.executed audited');
  const logins = await call(`${stack.url}/admin/audit?type=identity.login&limit=5`, { headers: { cookie } });
  t.ok(logins.body.total >= 1);
  t.ok(logins.body.entries.length <= 5);
  t.equal(logins.body.entries[0].type, 'identity.login');
  const badDate = await call(`${stack.url}/admin/audit?from=yesterday`, { headers: { cookie } });
  t.equal(badDate.status, 400);
  const csv = await fetch(`${stack.url}/admin/audit.csv?request_id=${rid}`, { headers: { cookie } });
  t.equal(csv.status, 200);
  t.match(csv.headers.get('content-type'), /text\/csv/);
  t.match(csv.headers.get('content-disposition'), /attachment; filename="cortado-audit-/);
  const text = await csv.text();
  t.match(text, /^ts,type,code,user,channel,request_id,event_id,payload\r\n/);
  t.ok(text.includes('query.executed'));
});

t.test('lockout after repeated failures, shared by a second edge', async (t) => {
  const other = await startStack(testConfig({ natsUrl: nats.url, db: dbRef, extra: { admin: extra.admin, config_db: extra.config_db } }), { edge: true, actors: [] });
  t.teardown(() => other.stop());
  for (let i = 0; i < 5; i++) {
    const r = await call(`${stack.url}/admin/login`, { body: { username: 'admin', password: `wrong-${i}` } });
    t.equal(r.status, 401, `failure ${i + 1}`);
  }
  const locked = await call(`${stack.url}/admin/login`, { body: { username: 'admin', password: 'correct horse' } });
  t.equal(locked.status, 429, 'locked even with the right password');
  t.equal(locked.body.error.code, 'RATE_LIMITED');
  const elsewhere = await call(`${other.url}/admin/login`, { body: { username: 'admin', password: 'correct horse' } });
  t.equal(elsewhere.status, 429, 'the other edge sees the same lockout');
});

t.test('fail closed: an empty admin.password refuses every local login', async (t) => {
  const nats2 = await startNats();
  const s2 = await startStack(testConfig({ natsUrl: nats2.url, db: dbRef, extra: { admin: { enabled: true, username: 'admin', password: '' } } }));
  t.teardown(async () => {
    await s2.stop();
    await nats2.stop();
  });
  for (const password of ['', 'anything', 'admin']) {
    const r = await call(`${s2.url}/admin/login`, { body: { username: 'admin', password } });
    t.equal(r.status, 401, `password "${password}" refused`);
  }
  const view = await call(`${s2.url}/admin/config`);
  t.equal(view.status, 401);
});

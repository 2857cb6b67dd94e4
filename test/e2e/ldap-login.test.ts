/**
 * Directory login through the HTTP API against a real slapd: the admin panel tries the
 * directory first (for members of its own group, admin.ldap_group_dn) and falls back to the
 * local admin account when the directory is down or the bind fails; each login's group is
 * enforced (the gate's is not the admin panel's); LDAP settings are viewed masked, tested and
 * updated at run time; the assistant login gate protects the legacy /query.
 */
import t from 'tap';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { ADMINS_DN, ANALYSTS_DN, PEOPLE_DN, startSlapd, SVC_DN, SVC_PASSWORD, USERS } from '../helpers/slapd.js';
import { call, startStack } from '../helpers/stack.js';

const slapd = await startSlapd();
const nats = await startNats();
const db = await createTestDb('ldapx');
await db.pool.query(GUARD_SCHEMA_SQL);
const fake = await startFakeLlm();
const config = testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: {
    admin: { enabled: true, username: 'admin', password: 'local-pw', ldap_group_dn: ADMINS_DN },
    ldap: {
      enabled: true, server: slapd.url, connect_timeout: 1, bind_dn: SVC_DN, bind_password: SVC_PASSWORD,
      base_dn: PEOPLE_DN, user_search_filter: '(uid={username})', required_group_dn: ANALYSTS_DN, group_member_attr: 'member',
    },
    plugins: { assistant_login: { enabled: true, ttl_hours: 8 } },
  },
});
const stack = await startStack(config);
t.teardown(async () => {
  await stack.stop();
  await fake.close();
  await db.drop();
  await nats.stop();
  await slapd.stop();
});

const login = (path: string, username: string, password: string) => call(`${stack.url}${path}`, { body: { username, password } });

t.test('admin: a member of the admin group signs in through LDAP; gate users and others are refused; a wrong password too', async (t) => {
  const oneil = await login('/admin/login', "o'neil", USERS.oneil.password);
  t.equal(oneil.status, 200, oneil.text);
  t.equal(oneil.body.source, 'ldap');
  t.equal(oneil.body.kind, 'admin');
  const alice = await login('/admin/login', 'alice', 'alice-pw');
  t.equal(alice.status, 403, 'alice passes the assistant gate (analysts) but is not in the admin group');
  t.match(alice.body.error.message, /not an administrator/);
  const bob = await login('/admin/login', 'bob', 'bob-pw');
  t.equal(bob.status, 403, 'bob is in no group');
  const gate = await login('/assistant/login', "o'neil", USERS.oneil.password);
  t.equal(gate.status, 403, 'and the admin group is not the gate\'s: o\'neil is no analyst');
  const wrong = await login('/admin/login', "o'neil", 'nope');
  t.equal(wrong.status, 401);
  const inject = await login('/admin/login', '*)(uid=*', 'alice-pw');
  t.equal(inject.status, 401, 'filter injection matches nobody');
});

t.test('admin: the local account works when the bind fails, and the settings are masked, tested, changed', async (t) => {
  const local = await login('/admin/login', 'admin', 'local-pw');
  t.equal(local.status, 200, local.text);
  t.equal(local.body.source, 'local', 'no such directory user: the local admin account is tried');
  const cookie = (local.headers.get('set-cookie') ?? '').split(';')[0]!;
  const h = { cookie, 'x-csrf-token': local.body.csrf_token as string };

  const view = await call(`${stack.url}/admin/ldap`, { headers: { cookie } });
  t.equal(view.body.settings.bind_password, '********');
  t.equal(view.body.settings.server, slapd.url);
  const test = await call(`${stack.url}/admin/ldap/test`, { body: {}, headers: h });
  t.equal(test.body.ok, true, test.text);
  const badTest = await call(`${stack.url}/admin/ldap/test`, { body: { settings: { bind_password: 'wrong' } }, headers: h });
  t.equal(badTest.body.ok, false);
  t.notMatch(badTest.text, /wrong|svc-pw/, 'no password in the answer');

  // the masked placeholder keeps the stored secret; other settings change at run time
  const upd = await call(`${stack.url}/admin/ldap`, { method: 'PUT', body: { settings: { bind_password: '********', group_member_attr: 'memberOf' } }, headers: h });
  t.equal(upd.status, 200, upd.text);
  t.equal(config.ldap.bind_password, SVC_PASSWORD, 'the secret is unchanged');
  t.equal(config.ldap.group_member_attr, 'memberOf');
  t.equal((await login('/admin/login', "o'neil", USERS.oneil.password)).status, 200, 'memberOf works too');
  t.equal((await login('/admin/login', 'alice', 'alice-pw')).status, 403, 'and still keeps the gate\'s members out');
  const unknown = await call(`${stack.url}/admin/ldap`, { method: 'PUT', body: { settings: { colour: 'blue' } }, headers: h });
  t.equal(unknown.status, 400);
});

t.test('assistant gate: /query needs a directory session; the session names the asker', async (t) => {
  const anon = await call(`${stack.url}/query`, { body: { question: 'how many orders?' } });
  t.equal(anon.status, 401);
  t.equal(anon.body.error.code, 'UNAUTHORIZED');
  const local = await login('/assistant/login', 'admin', 'local-pw');
  t.equal(local.status, 401, 'the assistant gate takes directory accounts only');
  const alice = await login('/assistant/login', 'alice', 'alice-pw');
  t.equal(alice.status, 200, alice.text);
  t.equal(alice.body.kind, 'assistant');
  const cookie = (alice.headers.get('set-cookie') ?? '').split(';')[0]!;
  t.match(cookie, /^cortado_assistant=/);
  fake.script({ text: sqlAnswer('SELECT count(*) AS n FROM orders') });
  const q = await call(`${stack.url}/query`, { body: { question: 'how many orders?' }, headers: { cookie } });
  t.equal(q.status, 200, q.text);
  t.same(q.body.data, [[40]]);
  const adminCookie = await call(`${stack.url}/admin/session`, { headers: { cookie } });
  t.equal(adminCookie.status, 401, 'an assistant session is not an admin session');
});

t.test('directory down: the admin falls back to the local account; directory users cannot sign in', async (t) => {
  await slapd.stop();
  const started = Date.now();
  const local = await login('/admin/login', 'admin', 'local-pw');
  t.equal(local.status, 200, local.text);
  t.equal(local.body.source, 'local');
  t.ok(Date.now() - started < 3_000, 'quickly');
  const oneil = await login('/admin/login', "o'neil", USERS.oneil.password);
  t.equal(oneil.status, 401);
  const gate = await login('/assistant/login', 'alice', 'alice-pw');
  t.equal(gate.status, 401);
});

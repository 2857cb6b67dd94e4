/**
 * Who may be an admin, over HTTP against a real slapd, with the directory configured the way
 * the operations guide showed it before (one `ldap` section whose `required_group_dn` lets
 * analysts through the assistant gate, and no admin group): a person the gate admits is NOT an
 * admin — the directory is not asked at /admin/login unless `admin.ldap_group_dn` names a group
 * of its own — only the local account signs in to the panel, the start-up log says so, and the
 * admin group cannot be set at run time. The guide's example config is read too: it must name
 * an admin group that is not the gate's.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import t from 'tap';
import YAML from 'yaml';
import { adminIdentities } from '../../actors/identity/handle.js';
import { ROOT } from '../../config/load.js';
import { createLogger } from '../../runtime/log.js';
import { ALL_ACTORS } from '../../protocol/subjects.js';
import { runCortado } from '../../cli/run.js';
import { testConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { ADMINS_DN, ANALYSTS_DN, PEOPLE_DN, startSlapd, SVC_DN, SVC_PASSWORD, USERS } from '../helpers/slapd.js';
import { call } from '../helpers/stack.js';

const slapd = await startSlapd();
const nats = await startNats();
const ldap = {
  enabled: true, server: slapd.url, connect_timeout: 2, bind_dn: SVC_DN, bind_password: SVC_PASSWORD,
  base_dn: PEOPLE_DN, user_search_filter: '(uid={username})', required_group_dn: ANALYSTS_DN, group_member_attr: 'member',
};
const config = testConfig({
  natsUrl: nats.url,
  extra: {
    admin: { enabled: true, username: 'admin', password: 'local-pw' },
    ldap,
    plugins: { assistant_login: { enabled: true, ttl_hours: 8 } },
  },
});
const lines: string[] = [];
const log = createLogger({ svc: 'admins', level: 'info', destination: new Writable({ write(c, _e, cb) { lines.push(String(c)); cb(); } }) });
const running = await runCortado({ config, roles: { edge: true, actors: [...ALL_ACTORS] }, log, port: 0, host: '127.0.0.1', name: 'admins' });
const url = `http://127.0.0.1:${running.edge!.port}`;
t.teardown(async () => {
  await running.stop(3_000);
  await nats.stop();
  await slapd.stop();
});

const login = (route: string, username: string, password: string) => call(`${url}${route}`, { body: { username, password } });
const cookieOf = (r: { headers: Headers }) => (r.headers.get('set-cookie') ?? '').split(';')[0]!;

t.test('a person the assistant gate admits is not an admin, with the same password', async (t) => {
  const gate = await login('/assistant/login', 'alice', USERS.alice.password);
  t.equal(gate.status, 200, `alice passes the gate: ${gate.text}`);
  const binds = slapd.binds();
  const panel = await login('/admin/login', 'alice', USERS.alice.password);
  t.equal(panel.status, 401, `and is refused at the panel: ${panel.text}`);
  t.equal(panel.body.error.code, 'UNAUTHORIZED');
  t.equal(panel.headers.get('set-cookie'), null, 'no cookie');
  t.equal(slapd.binds(), binds, 'the directory was not even asked');
  // a form post from the panel's own page: the same
  const form = await fetch(`${url}/admin/login`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `username=alice&password=${USERS.alice.password}` });
  t.equal(form.status, 303);
  t.match(form.headers.get('location') ?? '', /error=UNAUTHORIZED/);
  t.equal(form.headers.get('set-cookie'), null);
  // the gate's cookie opens nothing of the panel
  const cookie = cookieOf(gate);
  for (const route of ['/admin/session', '/admin/config', '/admin/tokens', '/admin/audit']) {
    t.equal((await call(`${url}${route}`, { headers: { cookie } })).status, 401, route);
  }
});

t.test('the assistant gate\'s session in X-Session-ID is taken by its own routes, as the other signed-in routes take it', async (t) => {
  const gate = await login('/assistant/login', 'alice', USERS.alice.password);
  t.equal(gate.status, 200, gate.text);
  const id = gate.body.session_id as string;
  const viaHeader = await call(`${url}/assistant/session`, { headers: { 'x-session-id': id } });
  t.equal(viaHeader.status, 200, `an embedded widget reads its session: ${viaHeader.text}`);
  t.equal(viaHeader.body.username, 'alice');
  const stale = await call(`${url}/assistant/session`, { headers: { 'x-session-id': 'not-a-session' } });
  t.equal(stale.status, 401, 'a header that holds no session is refused, never ignored');
  const out = await call(`${url}/assistant/logout`, { method: 'POST', headers: { 'x-session-id': id } });
  t.equal(out.status, 200, `and signs out with it, no CSRF token (no ambient credential): ${out.text}`);
  t.equal((await call(`${url}/assistant/session`, { headers: { 'x-session-id': id } })).status, 401, 'ended');
});

t.test('no directory user is an admin without admin.ldap_group_dn, whatever groups they are in', async (t) => {
  for (const [name, password] of [["o'neil", USERS.oneil.password], ['bob', USERS.bob.password], ['doe, jane', USERS.doe.password]] as const) {
    const r = await login('/admin/login', name, password);
    t.equal(r.status, 401, `${name}: ${r.text}`);
  }
  const local = await login('/admin/login', 'admin', 'local-pw');
  t.equal(local.status, 200, local.text);
  t.equal(local.body.source, 'local', 'the local account still signs in');
});

t.test('the start-up log says who may sign in to the panel', async (t) => {
  const said = lines.map((l) => JSON.parse(l) as { msg: string; level: number; admins?: string }).filter((l) => l.admins);
  t.equal(said.length, 1, 'one line from the identity actor');
  t.match(said[0]!.msg, /^admin panel sign-in: the local account "admin"; no directory user is an admin/);
  t.notMatch(lines.join('\n'), /local-pw|svc-pw/, 'no password in the log');
});

t.test('the admin group is read at start only: no runtime override, not an LDAP setting', async (t) => {
  const local = await login('/admin/login', 'admin', 'local-pw');
  const h = { cookie: cookieOf(local), 'x-csrf-token': local.body.csrf_token as string };
  const put = await call(`${url}/admin/config/admin.ldap_group_dn`, { method: 'PUT', body: { value: ANALYSTS_DN }, headers: h });
  t.equal(put.status, 403, put.text);
  const viaLdap = await call(`${url}/admin/ldap`, { method: 'PUT', body: { settings: { admin_group_dn: ANALYSTS_DN } }, headers: h });
  t.equal(viaLdap.status, 400, viaLdap.text);
  t.equal(config.admin.ldap_group_dn, '');
  t.equal((await login('/admin/login', 'alice', USERS.alice.password)).status, 401, 'alice is still no admin');
});

t.test('what the start-up log says, for other configs', async (t) => {
  const make = (admin: Record<string, unknown>, over: Record<string, unknown> = {}) => testConfig({ natsUrl: 'nats://127.0.0.1:1', extra: { admin: { enabled: true, ...admin }, ldap: { ...ldap, ...over } } });
  let said = adminIdentities(make({ password: 'x', ldap_group_dn: ADMINS_DN }));
  t.equal(said.warn, false);
  t.match(said.text, `the local account "admin" and members of the directory group ${ADMINS_DN}`);
  said = adminIdentities(make({ password: '', ldap_group_dn: ADMINS_DN }));
  t.notMatch(said.text, /local account/, 'no local account without a password');
  said = adminIdentities(make({ password: '' }));
  t.equal(said.warn, true, 'nobody can sign in: a warning');
  t.match(said.text, /nobody/);
  said = adminIdentities(make({ password: 'x', ldap_group_dn: 'CN=Analysts, OU=Groups, DC=cortado, DC=test' }));
  t.equal(said.warn, true, 'the gate\'s group as the admin group (however it is spelt): a warning');
  t.match(said.text, /every user the gate lets in is an admin/);
  said = adminIdentities(make({ password: 'x', ldap_group_dn: ADMINS_DN }, { enabled: false }));
  t.equal(said.warn, true, 'an admin group with the directory off does nothing: a warning');
  said = adminIdentities(make({ enabled: false, password: 'x' }));
  t.match(said.text, /admin panel is off/);
});

t.test('the operations guide\'s example names an admin group of its own', async (t) => {
  const guide = readFileSync(path.join(ROOT, 'docs/operations.md'), 'utf8');
  const block = [...guide.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => /^ldap:/m.test(b) && /^admin:/m.test(b));
  t.ok(block, 'the example with admin and ldap sections');
  const parsed = YAML.parse(block!.replace(/\$\{[A-Z_]+:?[^}]*\}/g, 'x')) as Record<string, Record<string, unknown>>;
  const example = testConfig({ natsUrl: 'nats://127.0.0.1:1', extra: { admin: parsed.admin!, ldap: parsed.ldap!, plugins: parsed.plugins! } });
  t.ok(example.admin.ldap_group_dn, 'admin.ldap_group_dn is set');
  t.not(example.admin.ldap_group_dn, example.ldap.required_group_dn, 'and is not the gate\'s group');
  t.equal(adminIdentities(example).warn, false);
});

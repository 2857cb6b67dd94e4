/**
 * Directory login (actors/lib/ldap/client.ts) against a real OpenLDAP slapd: direct bind,
 * search-and-bind, the group requirement through member / memberOf / memberUid, the empty
 * password hole, filter injection, an unreachable directory, and the connection test.
 */
import net from 'node:net';
import t from 'tap';
import { Client } from 'ldapts';
import {
  escapeDnValue, escapeFilterValue, ldapLogin, normalizeDn, testLdapConnection, type LdapResult, type LdapSettings,
} from '../../actors/lib/ldap/client.js';
import {
  ADMINS_DN, ANALYSTS_DN, BASE_DN, PEOPLE_DN, POSIX_ADMINS_DN, POSIX_ANALYSTS_DN, SVC_DN, SVC_PASSWORD, USERS, startSlapd,
} from '../helpers/slapd.js';

const slapd = await startSlapd();
t.teardown(() => slapd.stop());

const PASSWORDS = [SVC_PASSWORD, ...Object.values(USERS).map((u) => u.password)];

function settings(over: Partial<LdapSettings> = {}): LdapSettings {
  return {
    enabled: true,
    server: slapd.url,
    use_ssl: false,
    connect_timeout: 2,
    user_dn_template: '',
    bind_dn: '',
    bind_password: '',
    base_dn: '',
    user_search_filter: '(uid={username})',
    required_group_dn: '',
    group_member_attr: 'member',
    ...over,
  };
}
const direct = (over: Partial<LdapSettings> = {}): LdapSettings =>
  settings({ user_dn_template: `uid={username},${PEOPLE_DN}`, ...over });
const search = (over: Partial<LdapSettings> = {}): LdapSettings =>
  settings({ bind_dn: SVC_DN, bind_password: SVC_PASSWORD, base_dn: BASE_DN, ...over });

/** Every result is checked for leaked passwords on the way. */
async function login(s: LdapSettings, username: string, password: string, group = s.required_group_dn): Promise<LdapResult> {
  const r = await ldapLogin(s, username, password, group);
  const text = JSON.stringify(r);
  for (const pw of PASSWORDS) if (text.includes(pw)) throw new Error(`a password leaked into the result: ${text}`);
  return r;
}
const reason = (r: LdapResult): string => (r.ok ? 'ok' : r.reason);

t.test('escaping and DN comparison', async (t) => {
  t.equal(escapeFilterValue('*'), '\\2a');
  t.equal(escapeFilterValue('alice)(uid=*'), 'alice\\29\\28uid=\\2a');
  t.equal(escapeFilterValue('a\\b\u0000c'), 'a\\5cb\\00c');
  t.equal(escapeFilterValue("o'neil jürgen"), "o'neil jürgen", 'nothing else is touched');
  t.equal(escapeDnValue('doe, jane'), 'doe\\, jane');
  t.equal(escapeDnValue('a+b=c;d<e>f"g\\h'), 'a\\+b\\=c\\;d\\<e\\>f\\"g\\\\h');
  t.equal(escapeDnValue(' #lead trail '), '\\ #lead trail\\ ');
  t.equal(escapeDnValue('#x'), '\\#x');
  t.equal(escapeDnValue('nul\u0000'), 'nul\\00');
  t.equal(normalizeDn('CN=Analysts, OU=Groups,DC=cortado, DC=test'), normalizeDn(ANALYSTS_DN));
  t.equal(normalizeDn('uid=doe\\2C jane,ou=people,dc=cortado,dc=test'), normalizeDn(USERS.doe.dn), 'hex escape = char escape');
  t.equal(normalizeDn('cn=b+uid=a,dc=x'), normalizeDn('UID=a+CN=b,dc=x'), 'multi-valued RDN order');
  t.not(normalizeDn('uid=alice,ou=people,dc=cortado,dc=test'), normalizeDn('uid=alice2,ou=people,dc=cortado,dc=test'));
  t.not(normalizeDn('uid=a\\,b,dc=x'), normalizeDn('uid=a,b=,dc=x'), 'an escaped comma is not a separator');
});

t.test('direct bind', async (t) => {
  const ok = await login(direct(), 'alice', USERS.alice.password);
  t.same(ok, { ok: true, dn: USERS.alice.dn, username: 'alice', displayName: USERS.alice.cn, mail: USERS.alice.mail });
  const upper = await login(direct(), 'Alice', USERS.alice.password);
  t.ok(upper.ok && upper.username === 'alice', 'the canonical uid comes back whatever the case typed');
  t.equal(reason(await login(direct(), 'alice', 'wrong')), 'invalid_credentials', 'wrong password');
  t.equal(reason(await login(direct(), 'alice', USERS.bob.password)), 'invalid_credentials', "another user's password");
  t.equal(reason(await login(direct(), 'nobody', 'x')), 'invalid_credentials', 'unknown user');
  const doe = await login(direct(), 'doe, jane', USERS.doe.password);
  t.ok(doe.ok, 'a comma in the username is escaped in the DN');
  t.equal(doe.ok && normalizeDn(doe.dn), normalizeDn(USERS.doe.dn));
  t.ok((await login(direct(), "o'neil", USERS.oneil.password)).ok);
});

t.test('search-and-bind', async (t) => {
  const ok = await login(search(), 'alice', USERS.alice.password);
  t.same(ok, { ok: true, dn: USERS.alice.dn, username: 'alice', displayName: USERS.alice.cn, mail: USERS.alice.mail });
  t.equal(reason(await login(search(), 'alice', 'wrong')), 'invalid_credentials', 'wrong password');
  t.equal(reason(await login(search(), 'nobody', 'x')), 'invalid_credentials', 'unknown user');
  t.ok((await login(search(), "o'neil", USERS.oneil.password)).ok, 'a quote in the uid');
  t.ok((await login(search(), 'star*man', USERS.starman.password)).ok, 'a literal * in the uid matches only itself');
  t.ok((await login(search(), 'doe, jane', USERS.doe.password)).ok);
  t.ok((await login(search({ user_search_filter: '(&(objectClass=inetOrgPerson)(|(uid={username})(mail={username})))' }),
    USERS.bob.mail, USERS.bob.password)).ok, 'a richer filter with {username} twice');

  const badSvc = await login(search({ bind_password: 'not-the-svc-pw' }), 'alice', USERS.alice.password);
  t.equal(reason(badSvc), 'misconfigured', 'a refused service account is a configuration problem, not the user’s');
  t.notMatch(JSON.stringify(badSvc), /not-the-svc-pw/);
  t.equal(reason(await login(search({ base_dn: 'dc=nowhere,dc=test' }), 'alice', USERS.alice.password)), 'misconfigured');
  t.equal(reason(await login(search({ user_search_filter: '(objectClass=inetOrgPerson)(uid={username}' }), 'alice', 'x')), 'misconfigured');
  const ambiguous = await login(search({ user_search_filter: '(|(uid={username})(objectClass=inetOrgPerson))' }), 'alice', USERS.alice.password);
  t.equal(reason(ambiguous), 'misconfigured', 'a filter matching several entries is refused');
});

t.test('required group through member, memberOf and memberUid', async (t) => {
  const cases = [
    { attr: 'member', group: ANALYSTS_DN },
    { attr: 'memberOf', group: ANALYSTS_DN },
    { attr: 'memberUid', group: POSIX_ANALYSTS_DN },
  ] as const;
  for (const { attr, group } of cases) {
    for (const [mode, make] of [['search', search], ['direct', direct]] as const) {
      const s = make({ required_group_dn: group, group_member_attr: attr });
      const alice = await login(s, 'alice', USERS.alice.password);
      t.ok(alice.ok, `${attr} (${mode}): alice is in the group`);
      const bob = await login(s, 'bob', USERS.bob.password);
      t.equal(reason(bob), 'not_in_group', `${attr} (${mode}): bob is not`);
      t.equal(reason(await login(s, 'bob', 'wrong')), 'invalid_credentials',
        `${attr} (${mode}): a wrong password says nothing about the group`);
      t.equal(reason(await login(s, 'o\'neil', USERS.oneil.password)), 'not_in_group', `${attr} (${mode}): o'neil is not`);
    }
  }
  // The group DN as an admin might type it: other case, spaces after commas.
  for (const attr of ['member', 'memberOf'] as const) {
    const typed = 'CN=Analysts, OU=Groups, DC=cortado, DC=test';
    t.ok((await login(search({ required_group_dn: typed, group_member_attr: attr }), 'alice', USERS.alice.password)).ok,
      `${attr}: the group DN compares normalised`);
  }
  // memberUid compares the entry's uid, not what was typed
  t.ok((await login(direct({ required_group_dn: POSIX_ANALYSTS_DN, group_member_attr: 'memberUid' }), 'ALICE', USERS.alice.password)).ok);
  t.equal(reason(await login(search({ required_group_dn: `cn=ghosts,${BASE_DN}` }), 'alice', USERS.alice.password)), 'misconfigured',
    'a group that does not exist');
});

t.test('the group is the login\'s to name, not the settings\': the admin group and the gate\'s are separate', async (t) => {
  const cases = [
    { attr: 'member', gate: ANALYSTS_DN, admins: ADMINS_DN },
    { attr: 'memberOf', gate: ANALYSTS_DN, admins: ADMINS_DN },
    { attr: 'memberUid', gate: POSIX_ANALYSTS_DN, admins: POSIX_ADMINS_DN },
  ] as const;
  for (const { attr, gate, admins } of cases) {
    for (const [mode, make] of [['search', search], ['direct', direct]] as const) {
      // the settings name the gate's group; the admin login asks for the admin group
      const s = make({ required_group_dn: gate, group_member_attr: attr });
      t.ok((await login(s, 'alice', USERS.alice.password, gate)).ok, `${attr} (${mode}): alice passes the gate`);
      t.equal(reason(await login(s, 'alice', USERS.alice.password, admins)), 'not_in_group', `${attr} (${mode}): alice is no admin`);
      t.ok((await login(s, "o'neil", USERS.oneil.password, admins)).ok, `${attr} (${mode}): o'neil is an admin`);
      t.equal(reason(await login(s, "o'neil", USERS.oneil.password, gate)), 'not_in_group', `${attr} (${mode}): o'neil is not at the gate`);
      t.ok((await login(s, 'bob', USERS.bob.password, '')).ok, `${attr} (${mode}): no group asked: any directory user`);
    }
  }
});

t.test('an empty password is refused without a bind', async (t) => {
  // This directory accepts a DN with an empty password as an unauthenticated bind: the hole.
  const raw = new Client({ url: slapd.url, timeout: 2000 });
  await raw.bind(USERS.alice.dn, '');
  await raw.unbind();
  t.pass('the server itself would have accepted the empty-password bind');

  const before = slapd.binds();
  for (const s of [direct(), search(), direct({ required_group_dn: ANALYSTS_DN })]) {
    const r = await login(s, 'alice', '');
    t.equal(reason(r), 'invalid_credentials');
  }
  t.equal(slapd.binds(), before, 'no BIND reached the directory');
  t.equal(reason(await login(search({ bind_password: '' }), 'alice', USERS.alice.password)), 'misconfigured',
    'an empty service password is refused too');
  t.equal(slapd.binds(), before);
});

t.test('usernames that try to inject into the filter or the DN', async (t) => {
  const logStart = slapd.log().length;
  const injections = ['*', 'alice)(uid=*', '*)(|(uid=*', 'al*', 'alice*', '*)(uid=*))(|(uid=*', '\\2a', 'alice\\29'];
  for (const name of injections) {
    for (const pw of [USERS.alice.password, USERS.bob.password]) {
      const r = await login(search(), name, pw);
      t.equal(reason(r), 'invalid_credentials', `search: ${JSON.stringify(name)} matches nobody`);
    }
    t.equal(reason(await login(direct(), name, USERS.alice.password)), 'invalid_credentials', `direct: ${JSON.stringify(name)}`);
  }
  t.equal(reason(await login(search(), 'star*', USERS.starman.password)), 'invalid_credentials', 'star* is not a wildcard for star*man');
  const seen = slapd.log().slice(logStart);
  t.match(seen, /filter="\(uid=\\2A\)"/, 'the server saw the escaped value');
  t.notMatch(seen, /filter="\(uid=\*\)"/, 'no presence filter reached the server');
  t.notMatch(seen, /filter="\(\|/, 'no injected OR reached the server');
  t.notMatch(seen, /filter="\(&/, 'no injected AND reached the server');

  for (const name of ['ali\u0000ce', 'alice\n', 'a\tb', '\u007f', 'x'.repeat(257), '', '   ']) {
    t.equal(reason(await login(search(), name, USERS.alice.password)), 'invalid_username', `refused: ${JSON.stringify(name.slice(0, 20))}`);
  }
  t.ok((await login(search(), 'alice', USERS.alice.password)).ok, '256 is the limit, normal names pass');
  t.equal(reason(await login(settings({ user_dn_template: '{username}' }), 'EXTERNAL', 'x')), 'invalid_username',
    'a username that would turn the bind into SASL');
});

t.test('directory down: unreachable, quickly', async (t) => {
  const gone = await startSlapd();
  const goneUrl = gone.url;
  await gone.stop();
  let started = Date.now();
  let r = await login(search({ server: goneUrl, connect_timeout: 1 }), 'alice', USERS.alice.password);
  t.equal(reason(r), 'unreachable', 'stopped server');
  t.ok(Date.now() - started < 1500, `refused connection answered in ${Date.now() - started} ms`);

  // A server that accepts TCP and never answers: the connect_timeout bounds the wait.
  const silent = net.createServer(() => undefined);
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
  const sockets = new Set<net.Socket>();
  silent.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  t.teardown(() => { for (const s of sockets) s.destroy(); silent.close(); });
  const silentUrl = `ldap://127.0.0.1:${(silent.address() as net.AddressInfo).port}`;
  for (const s of [search({ server: silentUrl, connect_timeout: 1 }), direct({ server: silentUrl, connect_timeout: 1 })]) {
    started = Date.now();
    r = await login(s, 'alice', USERS.alice.password);
    const took = Date.now() - started;
    t.equal(reason(r), 'unreachable', 'silent server');
    t.ok(took >= 900 && took < 2500, `gave up after ${took} ms (connect_timeout 1 s)`);
  }

  // use_ssl against a plain LDAP port: TLS fails, no fallback to clear text.
  const before = slapd.binds();
  r = await login(search({ use_ssl: true }), 'alice', USERS.alice.password);
  t.equal(reason(r), 'unreachable', 'use_ssl never falls back to a clear-text bind');
  t.equal(slapd.binds(), before, 'nothing was bound in clear');
  r = await login(search({ server: slapd.url.replace('ldap://', 'ldaps://') }), 'alice', USERS.alice.password);
  t.equal(reason(r), 'unreachable', 'an ldaps:// URL is honoured');
  t.ok((await login(search({ server: slapd.url.replace('ldap://', '') }), 'alice', USERS.alice.password)).ok,
    'a bare host:port means ldap://');
});

t.test('testLdapConnection', async (t) => {
  let r = await testLdapConnection(search());
  t.ok(r.ok, r.message);
  t.match(r.message, /bound as cn=svc/);
  t.type(r.latency_ms, 'number');
  t.ok(r.latency_ms >= 0 && r.latency_ms < 2000);

  r = await testLdapConnection(settings());
  t.ok(r.ok, `anonymous: ${r.message}`);

  r = await testLdapConnection(search({ bind_password: 'nope-nope' }));
  t.notOk(r.ok);
  t.match(r.message, /refused the service account/);
  t.notMatch(r.message, /nope-nope/);

  r = await testLdapConnection(search({ base_dn: 'dc=elsewhere,dc=test' }));
  t.notOk(r.ok, 'a base_dn that does not exist');
  t.match(r.message, /base_dn/);

  const started = Date.now();
  r = await testLdapConnection(search({ server: 'ldap://127.0.0.1:1', connect_timeout: 1 }));
  t.notOk(r.ok);
  t.match(r.message, /unreachable/);
  t.ok(Date.now() - started < 1500);

  r = await testLdapConnection(settings({ server: '' }));
  t.notOk(r.ok);
  r = await testLdapConnection(settings({ server: 'http://example.test' }));
  t.notOk(r.ok);
  t.match(r.message, /ldap:\/\/ or ldaps:\/\//);
});

t.test('settings checked before contacting the server', async (t) => {
  const before = slapd.binds();
  t.equal(reason(await login(settings({ enabled: false, user_dn_template: `uid={username},${PEOPLE_DN}` }), 'alice', 'x')), 'misconfigured');
  t.equal(reason(await login(direct({ user_dn_template: `uid=alice,${PEOPLE_DN}` }), 'alice', 'x')), 'misconfigured', 'template without {username}');
  t.equal(reason(await login(settings({ base_dn: '' }), 'alice', 'x')), 'misconfigured', 'neither template nor base_dn');
  t.equal(reason(await login(search({ user_search_filter: '(uid=alice)' }), 'alice', 'x')), 'misconfigured', 'filter without {username}');
  t.equal(reason(await login(search({ server: 'ftp://x' }), 'alice', 'x')), 'misconfigured');
  t.equal(slapd.binds(), before);
});

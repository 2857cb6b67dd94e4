/**
 * One user, one lockout, however the name is spelt: over HTTP against a real slapd (the admin
 * panel and the assistant gate) and a real PostgreSQL (plugins.auth). slapd matches `ａｌｉｃｅ`,
 * `ＡＬＩＣＥ`, `alice ` and `o＇neil` to the users `alice` and `o'neil` (its matching rules fold
 * compatibility characters, case and spaces), so each other spelling used to get a lockout
 * counter of its own and a fresh five guesses. Now a name that is not written the one way an
 * authority compares it (NFKC, no invisible characters, no outer or doubled spaces) is refused
 * with 400 before any counter or password check, on every login route and at the identity
 * actor's own door, and the spellings that remain (case) share one counter.
 */
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import { loginKey, loginNameProblem } from '../../protocol/schemas/text.js';
import { AuthLogin, IdentityLogin } from '../../protocol/subjects.js';
import { LOCKOUT } from '../../actors/identity/sessions.js';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { testConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { ADMINS_DN, ANALYSTS_DN, PEOPLE_DN, startSlapd, SVC_DN, SVC_PASSWORD, USERS } from '../helpers/slapd.js';
import { call, startStack } from '../helpers/stack.js';
import { startTcpCounter } from '../helpers/tcp-counter.js';

const tag = `${process.pid}_${Date.now().toString(36)}`;
const slapd = await startSlapd();
const nats = await startNats();
const db = await createTestDb('names');
const pgCounter = await startTcpCounter({ host: db.host, port: db.port });
const config = testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  extra: {
    // the test client is the trusted proxy: X-Forwarded-For names the client of each request
    app: { trusted_proxies: ['127.0.0.1'] },
    admin: { enabled: true, username: 'admin', password: 'local-pw', ldap_group_dn: ADMINS_DN },
    ldap: {
      enabled: true, server: slapd.url, connect_timeout: 2, bind_dn: SVC_DN, bind_password: SVC_PASSWORD,
      base_dn: PEOPLE_DN, user_search_filter: '(uid={username})', required_group_dn: ANALYSTS_DN, group_member_attr: 'member',
    },
    config_db: { encryption_key: generateFernetKey() },
    plugins: { assistant_login: { enabled: true }, auth: { enabled: true, db_host: '127.0.0.1', db_port: pgCounter.port } },
  },
});
const stack = await startStack(config);
const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'names-test', log: createLogger({ svc: 'test', level: 'silent' }) });
t.teardown(async () => {
  await bus.close();
  await stack.stop();
  await pgCounter.close();
  await db.drop();
  await nats.stop();
  await slapd.stop();
});

/** A count read until it stops moving (slapd logs, and sockets close, a little after the answer). */
async function settled(read: () => number): Promise<number> {
  let last = read();
  for (let still = 0; still < 5; ) {
    await new Promise((r) => setTimeout(r, 60));
    const now = read();
    still = now === last ? still + 1 : 0;
    last = now;
  }
  return last;
}
const bindsOf = (dn: string) => () => (slapd.log().match(new RegExp(`BIND dn="${dn.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"`, 'gi')) ?? []).length;

/** Other spellings of a name that a directory folds onto it (and its case spellings, which stay allowed). */
function spellings(name: string): { refused: string[]; folded: string[] } {
  const fullwidth = (s: string) => [...s].map((c) => (c >= '!' && c <= '~' ? String.fromCodePoint(c.codePointAt(0)! + 0xfee0) : c)).join('');
  const refused = [
    fullwidth(name), fullwidth(name.toUpperCase()), fullwidth(name[0]!) + name.slice(1), name.slice(0, -1) + fullwidth(name.at(-1)!),
    `${name} `, ` ${name}`, `${name}\u3000`, `${name[0]}\u200b${name.slice(1)}`, `${name[0]}\u00ad${name.slice(1)}`,
    `\ufeff${name}`, `${name}\u2060`, `${name}\ufe0f`, `${name[0]}\u034f${name.slice(1)}`,
  ];
  const folded = [name.toUpperCase(), name[0]!.toUpperCase() + name.slice(1), [...name].map((c, i) => (i % 2 ? c.toUpperCase() : c)).join('')];
  return { refused, folded };
}

const routes = [
  { route: '/admin/login', user: "o'neil", password: USERS.oneil.password, dn: USERS.oneil.dn, extra: ['o\uff07neil', "o'nei\u200cl"] },
  { route: '/assistant/login', user: 'alice', password: USERS.alice.password, dn: USERS.alice.dn, extra: ['\u1d43lice'] },
  // the test cluster trusts loopback connections (any password of an existing role is right): a
  // role that does not exist is refused, which is all a lockout needs
  { route: '/auth/login', user: `ghost_${tag}`, password: 'x', dn: '', extra: [] },
] as const;

t.test('every other spelling of a locked user is refused, never a fresh counter', async (t) => {
  for (const [i, r] of routes.entries()) {
    const client = { 'x-forwarded-for': `10.25.2.${i + 1}` };
    const send = (username: string, password: string) => call(`${stack.url}${r.route}`, { body: { username, password }, headers: client });
    for (let n = 0; n < LOCKOUT.perClient; n++) t.equal((await send(r.user, 'wrong')).status, 401, `${r.route}: failure ${n + 1}`);
    t.equal((await send(r.user, r.password)).status, 429, `${r.route}: locked`);
    const checks = r.dn ? bindsOf(r.dn) : pgCounter.connections;
    const before = await settled(checks);
    const { refused, folded } = spellings(r.user);
    for (const name of [...refused, ...r.extra]) {
      const res = await send(name, r.password);
      t.equal(res.status, 400, `${r.route} ${JSON.stringify(name)}: ${res.text}`);
      t.equal(res.body?.error?.code, 'VALIDATION_FAILED');
      t.match(res.body?.error?.message, /^\/username: (not in Unicode normal form NFKC|invisible characters|spaces before or after)/);
      t.equal(res.headers.get('set-cookie'), null);
    }
    for (const name of folded) {
      const res = await send(name, r.password);
      t.equal(res.status, 429, `${r.route} ${name}: the same counter (${res.text})`);
    }
    t.equal((await settled(checks)) - before, 0, `${r.route}: no spelling reached the ${r.dn ? 'directory' : 'database'}`);
  }
});

t.test('many spellings at once: at most perClient password checks for the one user', async (t) => {
  // bob: a directory user the gate refuses (no group), so every wrong password is a plain failure
  const client = { 'x-forwarded-for': '10.25.3.1' };
  const before = await settled(bindsOf(USERS.bob.dn));
  const { refused, folded } = spellings('bob');
  const cases = [...refused, ...folded, 'bob', 'BoB', 'bOb', 'boB', 'BOb'];
  const rs = await Promise.all(Array.from({ length: 60 }, (_, i) => call(`${stack.url}/assistant/login`, { body: { username: cases[i % cases.length], password: 'wrong' }, headers: client })));
  const by: Record<number, number> = {};
  for (const r of rs) by[r.status] = (by[r.status] ?? 0) + 1;
  t.equal(by[401], LOCKOUT.perClient, `exactly ${LOCKOUT.perClient} wrong passwords were judged: ${JSON.stringify(by)}`);
  t.equal((by[400] ?? 0) + (by[429] ?? 0) + (by[401] ?? 0), 60, 'the others refused (spelling) or locked');
  t.equal((await settled(bindsOf(USERS.bob.dn))) - before, LOCKOUT.perClient, 'counted in slapd\'s log of BIND operations');
});

t.test('the form login of the panel refuses the spellings too', async (t) => {
  const res = await fetch(`${stack.url}/admin/login`, {
    method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': '10.25.4.1' },
    body: new URLSearchParams({ username: 'ｏ\'neil', password: USERS.oneil.password }).toString(),
  });
  t.equal(res.status, 400);
  const body = await res.json() as { error: { message: string } };
  t.match(body.error.message, /^\/username: not in Unicode normal form NFKC .*type it as "o'neil"/);
  t.equal(res.headers.get('set-cookie'), null);
});

t.test('the session carries the directory\'s spelling, whatever case was typed', async (t) => {
  const r = await call(`${stack.url}/assistant/login`, { body: { username: 'ALICE', password: USERS.alice.password }, headers: { 'x-forwarded-for': '10.25.5.1' } });
  t.equal(r.status, 200, r.text);
  t.equal(r.body.username, 'alice');
});

t.test('the identity actor refuses the spellings itself, whichever edge (or bus client) sent them', async (t) => {
  for (const username of ['ａｌｉｃｅ', 'al\u00adice', 'alice ']) {
    const err = await bus.request(IdentityLogin, { kind: 'assistant', username, password: USERS.alice.password, client: '10.25.6.1' }, { requestId: `names-${tag}` }).then(() => undefined, (e: unknown) => e as { code?: string });
    t.equal(err?.code, 'VALIDATION_FAILED', `identity.login ${JSON.stringify(username)}`);
    const auth = await bus.request(AuthLogin, { username, password: 'x', client: '10.25.6.1' }, { requestId: `names-${tag}` }).then(() => undefined, (e: unknown) => e as { code?: string });
    t.equal(auth?.code, 'VALIDATION_FAILED', `auth.login ${JSON.stringify(username)}`);
  }
});

t.test('loginKey and loginNameProblem', async (t) => {
  for (const [a, b] of [['ALICE', 'alice'], ['Straße', 'STRASSE'], ['ΣΑΣ', 'σας'], ['doe, jane', 'DOE, JANE'], ['ａｌｉｃｅ', 'alice'], ['a\u200blice', 'alice'], ['e\u0301', '\u00e9']] as const) {
    t.equal(loginKey(a), loginKey(b), `${JSON.stringify(a)} and ${JSON.stringify(b)} share a counter`);
  }
  t.not(loginKey('alice'), loginKey('alicia'));
  t.not(loginKey("o'neil"), loginKey('oneil'));
  for (const ok of ['alice', 'ALICE', "o'neil", 'doe, jane', 'jürgen', '山田', 'Ελένη', 'star*man']) t.equal(loginNameProblem(ok), undefined, ok);
  for (const bad of ['ａｌｉｃｅ', 'e\u0301', 'ﬁnn', 'a\u00a0b', 'alice ', 'doe,  jane', 'al\u00adice', '\u2126mega', 'x\u0000']) {
    t.type(loginNameProblem(bad), 'string', JSON.stringify(bad));
  }
});

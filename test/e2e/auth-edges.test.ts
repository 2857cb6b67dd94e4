/**
 * The edges of authentication, over HTTP against real servers: login lockouts counted
 * atomically (a hundred parallel guesses get exactly as many password checks as the lockout
 * allows: counted at the database through a TCP counter, and at slapd by its BIND log), the
 * same across two Cortado processes on one NATS; an attempt with no verdict is not a failure
 * and a success clears the client's count; tokens in URLs redacted from the log however the
 * query is encoded; control characters, deep JSON and unconfigured database types answered 400.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import t from 'tap';
import YAML from 'yaml';
import { ROOT } from '../../config/load.js';
import { createLogger } from '../../runtime/log.js';
import { ALL_ACTORS } from '../../protocol/subjects.js';
import { runCortado } from '../../cli/run.js';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { createSecretBox, MAX_WALK_DEPTH } from '../../actors/lib/crypto/secrets.js';
import { LOCKOUT } from '../../actors/identity/sessions.js';
import { testConfig, testConfigObject } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { endWithProcess } from '../helpers/leftovers.js';
import { openRawSse } from '../helpers/mcp.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { ADMINS_DN, ANALYSTS_DN, PEOPLE_DN, startSlapd, SVC_DN, SVC_PASSWORD, USERS } from '../helpers/slapd.js';
import { call } from '../helpers/stack.js';
import { startTcpCounter } from '../helpers/tcp-counter.js';

const tag = `${process.pid}_${Date.now().toString(36)}`;
const nats = await startNats();
const db = await createTestDb('edges');
const reader = `edges_${tag}`;
await db.pool.query(`
  CREATE TABLE orders (id int PRIMARY KEY, amount numeric); INSERT INTO orders VALUES (1, 10), (2, 20);
  CREATE ROLE ${reader} LOGIN PASSWORD 'reader-pw'; GRANT CONNECT ON DATABASE ${db.name} TO ${reader};
`);
const fake = await startFakeLlm();
// the model writes SQL with a NUL when the question asks for it
fake.fallback((req) => {
  const text = req.messages.map((m) => m.content).join('\n');
  return { text: sqlAnswer(text.includes('nul-sql') ? 'SELECT count(*) AS n FROM orders -- \u0000' : 'SELECT count(*) AS n FROM orders') };
});
const slapd = await startSlapd();
// every password check of a database login opens a connection through this counter
const pgCounter = await startTcpCounter({ host: db.host, port: db.port });
const key = generateFernetKey();
const dbRef = { host: db.host, port: db.port, name: db.name, user: db.user };
const extra = {
  // the test client is the trusted proxy: X-Forwarded-For names the client address of a request
  app: { trusted_proxies: ['127.0.0.1'] },
  admin: { enabled: true, username: 'admin', password: 'local-pw', ldap_group_dn: ADMINS_DN },
  ldap: {
    enabled: true, server: slapd.url, connect_timeout: 2, bind_dn: SVC_DN, bind_password: SVC_PASSWORD,
    base_dn: PEOPLE_DN, user_search_filter: '(uid={username})', required_group_dn: ANALYSTS_DN, group_member_attr: 'member',
  },
  config_db: { encryption_key: key },
  plugins: { auth: { enabled: true, db_host: '127.0.0.1', db_port: pgCounter.port } },
};

// process A: this one, every role, its log captured
const lines: string[] = [];
const log = createLogger({ svc: 'edges', level: 'info', destination: new Writable({ write(c, _e, cb) { lines.push(String(c)); cb(); } }) });
const a = await runCortado({ config: testConfig({ natsUrl: nats.url, db: dbRef, llmUrl: fake.url, extra }), roles: { edge: true, actors: [...ALL_ACTORS] }, log, port: 0, host: '127.0.0.1', name: 'edges-a' });
const A = `http://127.0.0.1:${a.edge!.port}`;

// process B: the `cortado` command in a child process, an edge with its own identity and executor
const dir = mkdtempSync(path.join(tmpdir(), 'cortado-edges-'));
async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((r) => srv.close(r));
  return port;
}
const portB = await freePort();
const objB = testConfigObject({ natsUrl: nats.url, db: dbRef, llmUrl: fake.url, extra });
(objB.app as Record<string, unknown>).port = portB;
writeFileSync(path.join(dir, 'b.yaml'), YAML.stringify(objB));
const procB: ChildProcess = endWithProcess(spawn(process.execPath, [path.join(ROOT, 'bin/cortado.js'), '--config', path.join(dir, 'b.yaml'), '--role', 'edge', '--role', 'actors:identity,executor'], {
  cwd: ROOT, env: { ...process.env, CORTADO_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'pipe'],
}));
let stderrB = '';
procB.stderr?.on('data', (d: Buffer) => { stderrB += d.toString(); });
const B = `http://127.0.0.1:${portB}`;

t.teardown(async () => {
  if (procB.exitCode === null) {
    const exited = new Promise((r) => procB.once('exit', r));
    procB.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
    if (procB.exitCode === null) procB.kill('SIGKILL');
  }
  await a.stop(3_000);
  await pgCounter.close();
  await slapd.stop();
  await fake.close();
  await db.drop();
  const { default: pg } = await import('pg');
  const { ADMIN_URL } = await import('../helpers/pg.js');
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`DROP ROLE IF EXISTS ${reader}`).catch(() => undefined);
  await admin.end();
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
});

for (const end = Date.now() + 30_000; ;) {
  const up = await call(`${B}/auth/config`).then((r) => r.status === 200, () => false);
  if (up) break;
  if (Date.now() > end || procB.exitCode !== null) throw new Error(`the second process did not start: ${stderrB}`);
  await new Promise((r) => setTimeout(r, 100));
}

/** Statuses of a set of answers, counted: { 401: 5, 429: 95 }. */
function tally(rs: Array<{ status: number }>): Record<number, number> {
  const out: Record<number, number> = {};
  for (const r of rs) out[r.status] = (out[r.status] ?? 0) + 1;
  return out;
}

/** A count read until it stops moving (a log or a socket reports a little after the answer). */
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

const adminBinds = () => (slapd.log().match(new RegExp(`BIND dn="${USERS.oneil.dn}"`, 'g')) ?? []).length;

/** connections one password check of a database login opens (the driver may try more than once) */
let perCheck = 1;

t.test('/auth/login: 100 parallel wrong passwords from one client reach the database exactly perClient times', async (t) => {
  const base = await settled(pgCounter.connections);
  const one = await call(`${A}/auth/login`, { body: { username: `ghost_${tag}_cal`, password: 'wrong' } });
  t.equal(one.status, 401, one.text);
  perCheck = (await settled(pgCounter.connections)) - base;
  t.ok(perCheck >= 1, `one password check opens ${perCheck} connection(s) to the database`);

  const before = pgCounter.connections();
  const user = `ghost_${tag}_one`;
  const rs = await Promise.all(Array.from({ length: 100 }, () => call(`${A}/auth/login`, { body: { username: user, password: 'wrong' } })));
  t.same(tally(rs), { 401: LOCKOUT.perClient, 429: 100 - LOCKOUT.perClient });
  t.ok(rs.filter((r) => r.status === 429).every((r) => r.body.error.code === 'RATE_LIMITED'));
  const wait = Number(rs.find((r) => r.status === 429)?.headers.get('retry-after'));
  t.ok(wait > 0 && wait <= LOCKOUT.windowMs / 1000, `a locked login says when to come back (Retry-After: ${wait})`);
  t.equal((await settled(pgCounter.connections)) - before, LOCKOUT.perClient * perCheck, `exactly ${LOCKOUT.perClient} password checks reached PostgreSQL`);
});

t.test('/auth/login across two Cortado processes sharing the KV: still exactly perClient checks', async (t) => {
  const before = await settled(pgCounter.connections);
  const user = `ghost_${tag}_two`;
  const rs = await Promise.all(Array.from({ length: 100 }, (_, i) => call(`${i % 2 ? A : B}/auth/login`, { body: { username: user, password: 'wrong' } })));
  t.same(tally(rs), { 401: LOCKOUT.perClient, 429: 100 - LOCKOUT.perClient });
  t.equal((await settled(pgCounter.connections)) - before, LOCKOUT.perClient * perCheck, 'counted at the database');
});

t.test('/auth/login from 100 addresses: the per-user count caps them at perUser checks', async (t) => {
  const before = await settled(pgCounter.connections);
  const user = `ghost_${tag}_many`;
  const rs = await Promise.all(Array.from({ length: 100 }, (_, i) => call(`${i % 2 ? A : B}/auth/login`, {
    body: { username: user, password: 'wrong' }, headers: { 'x-forwarded-for': `10.9.${i}.1` },
  })));
  t.same(tally(rs), { 401: LOCKOUT.perUser, 429: 100 - LOCKOUT.perUser });
  t.equal((await settled(pgCounter.connections)) - before, LOCKOUT.perUser * perCheck);
});

t.test('/auth/login: an attempt the database could not judge is not a failure', async (t) => {
  const user = `ghost_${tag}_down`;
  pgCounter.refuse(true);
  for (let i = 0; i < LOCKOUT.perClient + 2; i++) {
    const r = await call(`${A}/auth/login`, { body: { username: user, password: 'wrong' } });
    t.equal(r.status, 503, `database away: ${r.text}`);
  }
  pgCounter.refuse(false);
  for (let i = 0; i < LOCKOUT.perClient; i++) t.equal((await call(`${A}/auth/login`, { body: { username: user, password: 'wrong' } })).status, 401, `failure ${i + 1} counts`);
  t.equal((await call(`${A}/auth/login`, { body: { username: user, password: 'wrong' } })).status, 429);
});

t.test('/admin/login (LDAP): 100 parallel wrong passwords on two processes → exactly perClient binds as the user', async (t) => {
  const before = await settled(adminBinds);
  const rs = await Promise.all(Array.from({ length: 100 }, (_, i) => call(`${i % 2 ? A : B}/admin/login`, { body: { username: "o'neil", password: 'nope' } })));
  t.same(tally(rs), { 401: LOCKOUT.perClient, 429: 100 - LOCKOUT.perClient });
  t.equal((await settled(adminBinds)) - before, LOCKOUT.perClient, 'counted in slapd\'s log of BIND operations');
  const right = await call(`${A}/admin/login`, { body: { username: "o'neil", password: USERS.oneil.password } });
  t.equal(right.status, 429, 'locked even with the right password');
  t.equal((await settled(adminBinds)) - before, LOCKOUT.perClient, 'and that one was not checked either');
});

t.test('/admin/login: a success clears the client\'s count', async (t) => {
  const login = (password: string) => call(`${A}/admin/login`, { body: { username: 'admin', password }, headers: { 'x-forwarded-for': '10.7.0.1' } });
  for (let i = 0; i < LOCKOUT.perClient - 1; i++) t.equal((await login('wrong')).status, 401);
  t.equal((await login('local-pw')).status, 200, 'the right password before the lock');
  for (let i = 0; i < LOCKOUT.perClient; i++) t.equal((await login('wrong')).status, 401, `failure ${i + 1} after the success`);
  t.equal((await login('local-pw')).status, 429);
});

t.test('tokens in URLs never reach the log, however the query is encoded', async (t) => {
  const signIn = await call(`${A}/admin/login`, { body: { username: 'admin', password: 'local-pw' } });
  t.equal(signIn.status, 200, signIn.text);
  const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!;
  const issued = await call(`${A}/admin/tokens`, { body: { label: 'redaction' }, headers: { cookie, 'x-csrf-token': signIn.body.csrf_token } });
  t.equal(issued.status, 201, issued.text);
  const token = issued.body.token as string;
  const secret = token.slice(4);
  const encoded = token.replace('_', '%5F');
  const urls: Array<[string, number]> = [
    [`/mcp/sse?%74oken=${token}`, 200],
    [`/mcp/sse?t%6Fken=${encoded}`, 200],
    [`/mcp/sse?token=${token}&token=${token}`, 200],
    [`/mcp/sse?%54OKEN=${token}`, 401],
    [`/mcp/sse?%2574oken=${token}`, 401],
    [`/mcp/sse?to+ken=${token}`, 401],
    [`/mcp/sse?a=1;token=${token}`, 401],
    [`/mcp/sse?token=ctd_other&token=${token}`, 401],
    [`/mcp/sse?q=${encodeURIComponent(encoded)}`, 401],
    [`/mcp/${token}`, 404],
  ];
  const before = lines.length;
  for (const [url, status] of urls) {
    const sse = await openRawSse(`${A}${url}`);
    t.equal(sse.status, status, url);
    sse.close();
  }
  await new Promise((r) => setTimeout(r, 200));
  const logged = lines.slice(before).filter((l) => l.includes('"msg":"http"'));
  t.equal(logged.length, urls.length, 'every request has its log line');
  t.notOk(lines.some((l) => l.includes(secret)), 'the token is in no log line');
  t.ok(logged.every((l) => l.includes('[redacted]')), 'each line says something was redacted');
});

t.test('control characters and NUL: 400 naming the field, on every login and name', async (t) => {
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['/auth/login', { username: 'a\u0000b', password: 'x' }, /\/username: control characters/],
    ['/auth/login', { username: 'ann', password: 'p\u0000w' }, /\/password/],
    ['/auth/login', { username: 'ann', password: 'x', database: 'd\tb' }, /\/database/],
    ['/admin/login', { username: 'a\u0000b', password: 'x' }, /\/username/],
    ['/admin/login', { username: 'ann\n', password: 'x' }, /\/username/],
    ['/assistant/login', { username: 'ann', password: '\u0007' }, /\/password/],
    ['/api/query', { question: 'how many\u0000 orders?' }, /\/question: control characters other than tab/],
    ['/api/query', { question: 'x', tables: ['or\u0000ders'] }, /\/tables\/0/],
    ['/query', { question: 'x', session_id: 'a\u0000' }, /\/session_id/],
    ['/api/query', { question: 'lone \ud800 surrogate' }, /\/question: not valid Unicode/],
  ];
  for (const [route, body, message] of cases) {
    const r = await call(`${A}${route}`, { body });
    t.equal(r.status, 400, `${route} ${JSON.stringify(body)}`);
    t.equal(r.body?.error?.code, 'VALIDATION_FAILED');
    t.match(r.body?.error?.message, message);
  }
  const form = await fetch(`${A}/admin/login`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'username=a%00b&password=x' });
  t.equal(form.status, 400, 'a form login too');
  const table = await call(`${A}/api/tables/or%00ders`);
  t.equal(table.status, 400);
  t.match(table.body.error.message, /path parameter name/);
  const audit = await call(`${A}/api/tables?refresh=%01`);
  t.equal(audit.status, 400);
  t.match(audit.body.error.message, /query parameter refresh/);

  const nul = await call(`${A}/api/query`, { body: { question: 'nul-sql: how many orders?' } });
  t.equal(nul.status, 400, 'SQL with a NUL from the model is refused before any database sees it');
  t.same(nul.body?.error?.details?.errors?.[0]?.path, '/sql', nul.text);
  const fine = await call(`${A}/api/query`, { body: { question: 'tabs\tand\nnewlines are fine in a question' } });
  t.equal(fine.status, 200, fine.text);
});

t.test('deep JSON and inherited keys: refused while reading the body, by the config key check and by the secrets walk itself', async (t) => {
  const signIn = await call(`${A}/admin/login`, { body: { username: 'admin', password: 'local-pw' }, headers: { 'x-forwarded-for': '10.7.0.2' } });
  const h = { cookie: (signIn.headers.get('set-cookie') ?? '').split(';')[0]!, 'x-csrf-token': signIn.body.csrf_token as string, 'content-type': 'application/json' };
  const nested = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
  const deep = await call(`${A}/admin/tokens`, { raw: `{"label":"deep","db_config":{"x":${nested(10_000)}}}`, headers: h });
  t.equal(deep.status, 400, deep.text);
  t.match(deep.body.error.message, /more than 64 levels deep/);
  const edge = await call(`${A}/admin/tokens`, { raw: `{"label":"deep","db_config":{"x":${nested(62)}}}`, headers: h });
  t.equal(edge.status, 201, `64 levels in all are fine: ${edge.text}`);
  const arrays = await call(`${A}/api/query`, { raw: `${'['.repeat(100_000)}${']'.repeat(100_000)}`, headers: { 'content-type': 'application/json' } });
  t.equal(arrays.status, 400);
  const mcp = await call(`${A}/mcp`, { raw: `{"jsonrpc":"2.0","id":1,"method":"x","params":${nested(70)}}`, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } });
  t.equal(mcp.status, 400, 'the MCP endpoint reads its body the same way');

  for (const k of ['__proto__', 'constructor', 'toString', 'query.__proto__', 'admin.constructor', 'query.hasOwnProperty']) {
    const r = await call(`${A}/admin/config/${k}`, { method: 'PUT', raw: '{"value":{"polluted":1}}', headers: h });
    t.equal(r.status, 400, `config key ${k}: ${r.text}`);
  }
  t.equal(({} as Record<string, unknown>).polluted, undefined);

  const box = createSecretBox({ config_db: { encryption_key: key } });
  let value: unknown = { password: 'x' };
  for (let i = 0; i < MAX_WALK_DEPTH + 1; i++) value = { a: value };
  t.throws(() => box.sealSecretsIn(value), { code: 'VALIDATION_FAILED' }, 'a walk past the limit is refused, not a stack overflow');
  const copy = box.sealSecretsIn(JSON.parse('{"__proto__": {"password": "p"}, "user": "u"}') as Record<string, unknown>);
  t.ok(Object.hasOwn(copy, '__proto__'), 'a field named __proto__ stays a field of the copy');
  t.equal(Object.getPrototypeOf(copy), Object.prototype);
});

t.test('database types and names: an unknown or unconfigured db_type, or a database that is not there, is 400, never 503', async (t) => {
  for (const db_type of ['mysql', 'trino', 'MySQL', 'nosuchdb', 'bigquery']) {
    const r = await call(`${A}/auth/login`, { body: { username: `ghost_${tag}_type`, password: 'x', db_type } });
    t.equal(r.status, 400, `${db_type}: ${r.text}`);
    t.match(r.body.error.message, /db_type|BigQuery/);
  }
  const ok = await call(`${A}/auth/login`, { body: { username: reader, password: 'reader-pw' } });
  t.equal(ok.status, 200, `the role signs in: ${ok.text}`);
  for (const name of ['nope', 'catalog']) {
    const r = await call(`${A}/auth/login`, { body: { username: reader, password: 'reader-pw', [name === 'nope' ? 'database' : 'catalog']: `no_db_${tag}` } });
    t.equal(r.status, 400, r.text);
    t.match(r.body.error.message, /^database: there is no database/);
  }
});

t.test('both processes still answer', async (t) => {
  t.equal((await call(`${A}/health`)).status, 200);
  t.equal((await call(`${B}/auth/config`)).status, 200);
  t.equal(procB.exitCode, null);
});

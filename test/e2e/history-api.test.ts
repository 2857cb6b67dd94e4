/**
 * Each person's history, favourites and dashboards over HTTP (/api/history, /api/dashboards),
 * and a plugins.auth user's own API tokens (/auth/tokens), against a real stack: owners never
 * see one another's, the history is bounded (200 plus every favourite), bad input is a 400 with
 * its field, and where it is kept is said (`stored`): config_db (PostgreSQL, surviving a new
 * stack) or memory.
 */
import t from 'tap';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb, dropRoles } from '../helpers/pg.js';
import { call, startStack, type Stack } from '../helpers/stack.js';

const tag = `${process.pid}_${Date.now().toString(36)}`;
const role = `hist_${tag}`;
const other = `hist2_${tag}`;
const PASSWORD = 'hist-pw-1';
const nats = await startNats();
const db = await createTestDb('histapi');
const cfgDb = await createTestDb('histcfg');
await db.pool.query(`
  CREATE TABLE items (id int PRIMARY KEY, name text);
  INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 5) g;
  CREATE ROLE ${role} LOGIN PASSWORD '${PASSWORD}';
  CREATE ROLE ${other} LOGIN PASSWORD '${PASSWORD}';
  GRANT CONNECT ON DATABASE ${db.name} TO ${role}, ${other};
  GRANT USAGE ON SCHEMA public TO ${role}, ${other};
  GRANT SELECT ON items TO ${role}, ${other};
`);
const fake = await startFakeLlm();
fake.fallback(() => ({ text: sqlAnswer('SELECT count(*) AS n FROM items') }));
const key = generateFernetKey();
const base = (configDb: boolean) => testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: {
    admin: { enabled: true, username: 'admin', password: 'hist-admin-pw' },
    plugins: { auth: { enabled: true } },
    config_db: configDb
      ? { enabled: true, encryption_key: key, postgresql: { host: cfgDb.host, port: cfgDb.port, database: cfgDb.name, user: cfgDb.user } }
      : { encryption_key: key },
  },
});
const stacks: Stack[] = [];
t.teardown(async () => {
  for (const s of stacks) await s.stop().catch(() => undefined);
  await fake.close();
  await db.drop();
  await cfgDb.drop();
  await dropRoles(role, other);
  await nats.stop();
});

async function start(configDb: boolean): Promise<Stack> {
  const s = await startStack(base(configDb));
  stacks.push(s);
  return s;
}

async function adminOf(url: string): Promise<Record<string, string>> {
  const login = await call(`${url}/admin/login`, { body: { username: 'admin', password: 'hist-admin-pw' } });
  if (login.status !== 200) throw new Error(login.text);
  return { cookie: (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '', 'x-csrf-token': login.body.csrf_token as string };
}

async function tokenFor(url: string, admin: Record<string, string>, username: string): Promise<Record<string, string>> {
  const r = await call(`${url}/admin/tokens`, { body: { username, label: `${username} history` }, headers: admin });
  if (r.status !== 201) throw new Error(r.text);
  return { authorization: `Bearer ${r.body.token as string}` };
}

const mem = await start(false);

t.test('memory: owners isolated, favourites, delete, and the API says stored: memory', async (t) => {
  const url = mem.url;
  const anon = await call(`${url}/api/history`);
  t.equal(anon.status, 401, 'an anonymous visitor keeps history in the browser');
  t.equal(anon.body.error.code, 'UNAUTHORIZED');

  const admin = await adminOf(url);
  const alice = await tokenFor(url, admin, 'alice');
  const bob = await tokenFor(url, admin, 'bob');

  const who = await call(`${url}/api/workspace`, { headers: admin });
  t.match(who.body, { kind: 'admin', user: 'admin', stored: 'memory' });
  t.equal(who.body.csrf_token, admin['x-csrf-token'], 'the CSRF token of the session it found');

  const a1 = await call(`${url}/api/history`, { body: { question: 'How many items?', sql: 'SELECT count(*) FROM items', row_count: 1, request_id: 'r-1' }, headers: alice });
  t.equal(a1.status, 201, a1.text);
  t.match(a1.body, { question: 'How many items?', sql: 'SELECT count(*) FROM items', row_count: 1, request_id: 'r-1', favourite: false });
  t.notOk('owner' in a1.body, 'the owner string stays on the server');
  const a2 = await call(`${url}/api/history`, { body: { question: 'Newest item?' }, headers: alice });
  await call(`${url}/api/history`, { body: { question: 'Bob asks' }, headers: bob });
  const noCsrf = await call(`${url}/api/history`, { body: { question: 'admin asks' }, headers: { cookie: admin.cookie! } });
  t.equal(noCsrf.status, 403, 'a cookie write needs the CSRF header');
  t.equal((await call(`${url}/api/history`, { body: { question: 'admin asks' }, headers: admin })).status, 201);

  const list = await call(`${url}/api/history`, { headers: alice });
  t.equal(list.status, 200);
  t.equal(list.body.stored, 'memory');
  t.same(list.body.entries.map((e: { question: string }) => e.question), ['Newest item?', 'How many items?'], 'newest first, only hers');
  t.same((await call(`${url}/api/history`, { headers: bob })).body.entries.map((e: { question: string }) => e.question), ['Bob asks']);
  t.same((await call(`${url}/api/history`, { headers: admin })).body.entries.map((e: { question: string }) => e.question), ['admin asks']);

  const steal = await call(`${url}/api/history/${a1.body.id as string}`, { method: 'PUT', body: { favourite: true }, headers: bob });
  t.equal(steal.status, 404, 'another owner\'s entry does not exist for bob');
  const fav = await call(`${url}/api/history/${a1.body.id as string}`, { method: 'PUT', body: { favourite: true }, headers: alice });
  t.equal(fav.status, 200, fav.text);
  t.equal(fav.body.favourite, true);
  const favs = await call(`${url}/api/history?favourites=true`, { headers: alice });
  t.same(favs.body.entries.map((e: { id: string }) => e.id), [a1.body.id]);
  t.equal((await call(`${url}/api/history/${a2.body.id as string}`, { method: 'DELETE', headers: bob })).status, 404);
  t.equal((await call(`${url}/api/history/${a2.body.id as string}`, { method: 'DELETE', headers: alice })).status, 200);
  t.same((await call(`${url}/api/history?limit=10`, { headers: alice })).body.entries.map((e: { id: string }) => e.id), [a1.body.id]);
});

t.test('bounds and bad input', async (t) => {
  const url = mem.url;
  const admin = await adminOf(url);
  const carol = await tokenFor(url, admin, 'carol');
  const post = (body: unknown) => call(`${url}/api/history`, { body, headers: carol });

  const long = await post({ question: 'x'.repeat(4001) });
  t.equal(long.status, 400, 'a question over 4000 characters');
  t.match(long.body.error.message, /question/);
  t.equal((await post({ question: 'x'.repeat(4000) })).status, 201, '4000 is fine');
  t.equal((await post({})).status, 400, 'no question');
  t.equal((await post({ question: '   ' })).status, 400, 'a blank question');
  t.equal((await post({ question: 'q', row_count: -1 })).status, 400, 'a negative row count');
  t.equal((await post({ question: 'q', at: 'yesterday' })).status, 400, 'not a time');
  const future = await post({ question: 'q', at: new Date(Date.now() + 86_400_000).toISOString() });
  t.equal(future.status, 400, 'a time in the future');
  t.match(future.body.error.message, /^at:/);
  t.equal((await call(`${url}/api/history`, { raw: '{"question":', headers: { ...carol, 'content-type': 'application/json' } })).status, 400, 'broken JSON');
  t.equal((await call(`${url}/api/history/x`, { method: 'PUT', body: { favourite: 'yes' }, headers: carol })).status, 400, 'favourite must be a boolean');
  t.equal((await call(`${url}/api/history/not%20an%20id`, { method: 'DELETE', headers: carol })).status, 400, 'a bad id');
  t.equal((await call(`${url}/api/history?limit=0`, { headers: carol })).status, 400);
  t.equal((await call(`${url}/api/history?favourites=maybe`, { headers: carol })).status, 400);

  // the last 200 plain entries and every favourite
  const first = await post({ question: 'the first, a favourite', favourite: true, at: new Date(Date.now() - 3_600_000).toISOString() });
  t.equal(first.status, 201);
  for (let i = 0; i < 205; i++) {
    const r = await post({ question: `question ${i}` });
    if (r.status !== 201) t.fail(r.text);
  }
  const all = await call(`${url}/api/history?limit=500`, { headers: carol });
  t.equal(all.body.entries.length, 201, '200 plain entries and the favourite');
  t.equal(all.body.entries[0].question, 'question 204');
  t.equal(all.body.entries[199].question, 'question 5', 'the oldest plain entries went');
  t.equal(all.body.entries[200].question, 'the first, a favourite', 'the favourite stayed');
});

t.test('dashboards: tiles with a question or pinned SQL, cron refresh from the scheduler\'s cron, per owner', async (t) => {
  const url = mem.url;
  const admin = await adminOf(url);
  const dave = await tokenFor(url, admin, 'dave');
  const erin = await tokenFor(url, admin, 'erin');
  const tiles = [
    { title: 'Items', question: 'How many items?' },
    { title: 'Pinned', sql: 'SELECT count(*) AS n FROM items', refresh: '0 8 * * *', timezone: 'UTC' },
  ];
  const made = await call(`${url}/api/dashboards`, { body: { name: 'Stock', tiles }, headers: dave });
  t.equal(made.status, 201, made.text);
  t.equal(made.body.tiles.length, 2);
  t.match(made.body.tiles[0], { title: 'Items', question: 'How many items?', refresh: 'on_open' });
  t.notOk(made.body.tiles[0].next_refresh_at, 'on_open has no next time');
  t.match(made.body.tiles[1], { refresh: '0 8 * * *', next_refresh_at: /^\d{4}-\d\d-\d\dT08:00:00Z$/, refresh_description: /08:00/ });
  t.ok(Date.parse(made.body.tiles[1].next_refresh_at) > Date.now(), 'the next refresh is ahead');

  t.equal((await call(`${url}/api/dashboards/${made.body.id as string}`, { headers: erin })).status, 404, 'another owner');
  t.same((await call(`${url}/api/dashboards`, { headers: erin })).body.dashboards, []);
  const put = await call(`${url}/api/dashboards/${made.body.id as string}`, { method: 'PUT', body: { name: 'Stock 2', tiles: [{ ...tiles[0], id: made.body.tiles[0].id }] }, headers: dave });
  t.equal(put.status, 200, put.text);
  t.same([put.body.name, put.body.tiles.length, put.body.tiles[0].id], ['Stock 2', 1, made.body.tiles[0].id], 'replaced; a tile keeps its id');
  const putOther = await call(`${url}/api/dashboards/${made.body.id as string}`, { method: 'PUT', body: { name: 'mine now', tiles: [] }, headers: erin });
  t.equal(putOther.status, 404);

  const bad = async (tile: unknown, re: RegExp, what: string) => {
    const r = await call(`${url}/api/dashboards`, { body: { name: 'Bad', tiles: [tile] }, headers: dave });
    t.equal(r.status, 400, `${what}: ${r.text}`);
    t.match(r.body.error.message, re, what);
  };
  await bad({ title: 'x', question: 'q', refresh: '61 * * * *' }, /tiles\[0\]\.refresh/, 'a wrong cron');
  await bad({ title: 'x', question: 'q', sql: 'SELECT 1' }, /either a question or pinned sql/, 'both');
  await bad({ title: 'x' }, /either a question or pinned sql/, 'neither');
  await bad({ title: 'x', question: 'q', timezone: 'UTC' }, /only a cron refresh/, 'a zone without a cron');
  await bad({ title: '', question: 'q' }, /title/, 'no title');
  const tooMany = await call(`${url}/api/dashboards`, { body: { name: 'Big', tiles: Array.from({ length: 25 }, (_, i) => ({ title: `t${i}`, question: 'q' })) }, headers: dave });
  t.equal(tooMany.status, 400, 'at most 24 tiles');

  t.equal((await call(`${url}/api/dashboards/${made.body.id as string}`, { method: 'DELETE', headers: erin })).status, 404);
  t.equal((await call(`${url}/api/dashboards/${made.body.id as string}`, { method: 'DELETE', headers: dave })).status, 200);
  t.same((await call(`${url}/api/dashboards`, { headers: dave })).body, { dashboards: [], stored: 'memory' });
});

t.test('a database user lists and revokes their own API tokens only; a revoked one stops working', async (t) => {
  const url = mem.url;
  const login = async (username: string) => {
    const r = await call(`${url}/auth/login`, { body: { username, password: PASSWORD } });
    t.equal(r.status, 200, r.text);
    return { 'x-session-id': r.body.session_id as string };
  };
  const me = await login(role);
  const meAgain = await login(role);
  const them = await login(other);
  const mint = async (h: Record<string, string>, label: string) => {
    const r = await call(`${url}/auth/tokens`, { body: { label }, headers: h });
    t.equal(r.status, 201, r.text);
    return r.body as { token: string; info: { id: string } };
  };
  const mine = await mint(me, 'laptop');
  const theirs = await mint(them, 'theirs');
  const admin = await adminOf(url);
  await call(`${url}/admin/tokens`, { body: { username: role, label: 'an admin-made token of the same name' }, headers: admin });

  const list = await call(`${url}/auth/tokens`, { headers: meAgain });
  t.equal(list.status, 200, list.text);
  t.same(list.body.tokens.map((x: { label: string }) => x.label), ['laptop'], 'the same user in another session sees their token, not another\'s nor one without their database');
  t.notOk(JSON.stringify(list.body).includes(PASSWORD), 'no password in the list');
  t.notOk(JSON.stringify(list.body).includes(mine.token), 'nor the token itself');

  const works = await call(`${url}/api/history`, { headers: { authorization: `Bearer ${mine.token}` } });
  t.equal(works.status, 200, 'the token works');
  t.equal((await call(`${url}/auth/tokens/${theirs.info.id}`, { method: 'DELETE', headers: me })).status, 404, 'another user\'s token cannot be revoked');
  t.equal((await call(`${url}/auth/tokens/${mine.info.id}`, { method: 'DELETE', headers: me })).status, 200);
  t.equal((await call(`${url}/api/history`, { headers: { authorization: `Bearer ${mine.token}` } })).status, 401, 'revoked: refused');
  t.equal((await call(`${url}/api/history`, { headers: { authorization: `Bearer ${theirs.token}` } })).status, 200, 'the other user\'s still works');
  const after = await call(`${url}/auth/tokens`, { headers: me });
  t.equal(after.body.tokens[0].status, 'revoked');
  t.equal((await call(`${url}/auth/tokens`)).status, 401, 'a stranger');
});

t.test('config_db: kept in PostgreSQL, stored: config_db, found again by a new stack and after signing in again', async (t) => {
  const first = await start(true);
  const admin = await adminOf(first.url);
  const r = await call(`${first.url}/api/history`, { body: { question: 'Kept in config_db?' }, headers: admin });
  t.equal(r.status, 201, r.text);
  await call(`${first.url}/api/history/${r.body.id as string}`, { method: 'PUT', body: { favourite: true }, headers: admin });
  const d = await call(`${first.url}/api/dashboards`, { body: { name: 'Kept', tiles: [{ title: 'Items', question: 'How many items?' }] }, headers: admin });
  t.equal(d.status, 201, d.text);
  const rows = await cfgDb.pool.query<{ question: string; favourite: boolean }>('SELECT question, favourite FROM cortado_history');
  t.same(rows.rows, [{ question: 'Kept in config_db?', favourite: true }], 'in the cortado_history table');
  await first.stop();
  stacks.splice(stacks.indexOf(first), 1);

  const second = await start(true);
  const again = await adminOf(second.url);
  const list = await call(`${second.url}/api/history`, { headers: again });
  t.equal(list.body.stored, 'config_db');
  t.same(list.body.entries.map((e: { question: string; favourite: boolean }) => [e.question, e.favourite]), [['Kept in config_db?', true]], 'a new sign-in on a new stack finds it');
  t.same((await call(`${second.url}/api/dashboards`, { headers: again })).body.dashboards.map((x: { name: string }) => x.name), ['Kept']);
});

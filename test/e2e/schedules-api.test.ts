/**
 * The schedules' HTTP API (/api/schedules) end to end, against a real stack (NATS, the scheduler
 * actor, the catalog, sqlgen and executor on a real PostgreSQL holding the tables, the LLM a
 * local server speaking Anthropic's API): every route, first with the schedules in memory, then
 * with config_db on a fresh PostgreSQL database where they survive the stack being stopped and
 * started again.
 *
 * - Pinned SQL: creating a schedule asks the model once for SQL (the scripted model's SQL is
 *   what is saved, with its explanation); the creator's own SQL is used instead, without a
 *   model call; SQL the guard refuses (the model's or the creator's) is SQL_REJECTED and
 *   nothing is saved; changing the question, or `regenerate`, asks again.
 * - Bad input: cron fields, time zones, e-mail addresses (each named), too many recipients
 *   (LIMIT_EXCEEDED), a format export.formats does not offer, duplicate names (CONFLICT), bad
 *   path ids, `sql` with `regenerate`.
 * - Who: two API-token users see, change and delete only their own (somebody else's is 404),
 *   the admin all of them; anonymous callers are refused (401), cookie writes need CSRF. A
 *   plugins.auth session may not create one (403, telling to mint an API token); a token minted
 *   from the session may, and its runs use the session's database login (no more rights).
 */
import t from 'tap';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { issueToken } from '../helpers/mcp.js';
import { startNats, type NatsServer } from '../helpers/nats.js';
import { ADMIN_URL, createTestDb, type TestDb } from '../helpers/pg.js';
import { call, startStack, type Stack } from '../helpers/stack.js';

type T = Pick<typeof t, 'ok' | 'equal' | 'same' | 'match' | 'notOk' | 'not'>;

const API = '/api/schedules';
const ADMIN = { enabled: true, username: 'admin', password: 'schedule horse' };
const ZONE = 'Europe/Berlin';
const MAX_RECIPIENTS = 3;
const COUNT_SQL = 'SELECT status, count(*) AS n FROM orders GROUP BY status';

const db = await createTestDb('schapi');
await db.pool.query(`
  CREATE TABLE orders (id int PRIMARY KEY, total numeric(10, 2), status text, created_at timestamptz);
  INSERT INTO orders VALUES (1, 10.50, 'paid', now()), (2, 20, 'open', now()), (3, 5, 'paid', now());
`);
const dbRef = { host: db.host, port: db.port, name: db.name, user: db.user };
const fake = await startFakeLlm();
fake.fallback(() => ({ text: sqlAnswer(COUNT_SQL, 'Counts the orders by status.') }));
const cleanups: Array<() => Promise<unknown>> = [];
t.teardown(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await fake.close();
  await db.drop();
});

async function natsServer(): Promise<NatsServer> {
  const n = await startNats();
  cleanups.push(() => n.stop());
  return n;
}

async function stackOn(nats: NatsServer, extra: Record<string, unknown> = {}): Promise<Stack> {
  const s = await startStack(testConfig({
    natsUrl: nats.url, db: dbRef, llmUrl: fake.url,
    extra: {
      admin: ADMIN,
      config_db: { encryption_key: generateFernetKey() },
      scheduler: { timezone: ZONE },
      email: { max_recipients_per_email: MAX_RECIPIENTS },
      export: { formats: ['csv', 'excel'] },
      ...extra,
    },
  }));
  cleanups.push(() => s.stop());
  return s;
}

type Reply = Awaited<ReturnType<typeof call>>;

function refused(t: T, r: Reply, status: number, code: string, message: RegExp, what: string): void {
  t.equal(r.status, status, `${what}: ${status} (${r.text.slice(0, 300)})`);
  t.equal(r.body?.error?.code, code, `${what}: ${code}`);
  t.match(r.body?.error?.message, message, `${what}: the message says why`);
}

interface Who {
  h: Record<string, string>;
  user: string;
}

async function signIn(url: string): Promise<Who> {
  const res = await call(`${url}/admin/login`, { body: { username: ADMIN.username, password: ADMIN.password } });
  if (res.status !== 200) throw new Error(`admin login: ${res.status} ${res.text}`);
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  return { user: 'admin', h: { cookie, 'x-csrf-token': res.body.csrf_token as string } };
}

async function tokenUser(stack: Stack, user: string): Promise<Who & { id: string }> {
  const { token, id } = await issueToken(stack.running.bus, user);
  return { user, id, h: { authorization: `Bearer ${token}` } };
}

function client(url: string) {
  return {
    post: (path: string, body: unknown, who: Who) => call(`${url}${API}${path}`, { body, headers: who.h }),
    send: (method: string, path: string, body: unknown, who: Who) => call(`${url}${API}${path}`, { method, ...(body === undefined ? {} : { body }), headers: who.h }),
    get: (path: string, who: Who) => call(`${url}${API}${path}`, { headers: who.h }),
  };
}

const base = {
  name: 'Orders by status',
  question: 'How many orders are there per status?',
  tables: ['orders'],
  cron: '0 9 * * 1-5',
  email_recipients: ['ops@example.com', 'Lead@Example.org'],
  format: 'csv',
  subject: 'Orders {{date}}',
};

interface Made {
  alice: Who & { id: string };
  bob: Who & { id: string };
  admin: Who;
  mine: any;
  bobs: any;
  ranId: string;
}

/** Every route, its bad input and who may use it; leaves alice's and bob's schedules behind. */
async function exercise(t: T, stack: Stack, storage: 'memory' | 'postgresql'): Promise<Made> {
  const url = stack.url;
  const api = client(url);
  const admin = await signIn(url);
  const alice = await tokenUser(stack, 'alice');
  const bob = await tokenUser(stack, 'bob');
  const nobody: Who = { user: '', h: {} };

  // ---- who may come in ----
  refused(t, await api.post('', base, nobody), 401, 'UNAUTHORIZED', /sign in/, 'an anonymous create');
  refused(t, await api.get('', nobody), 401, 'UNAUTHORIZED', /sign in/, 'an anonymous list');
  refused(t, await api.post('/cron-preview', { cron: '* * * * *' }, nobody), 401, 'UNAUTHORIZED', /sign in/, 'an anonymous cron preview');
  refused(t, await api.post('', base, { user: 'admin', h: { cookie: admin.h.cookie as string } }), 403, 'FORBIDDEN', /x-csrf-token/, 'an admin cookie write without CSRF');
  refused(t, await api.post('', base, { user: 'x', h: { authorization: 'Bearer ctd_not-a-token' } }), 401, 'UNAUTHORIZED', /./, 'an unknown token');

  // ---- the cron helper ----
  const preview = await api.post('/cron-preview', { cron: '*/15 9-17 * * mon-fri' }, alice);
  t.equal(preview.status, 200, preview.text);
  t.match(preview.body, { valid: true, timezone: ZONE, description: /every|minute/ });
  t.equal(preview.body.next_runs.length, 5, 'the next five runs');
  t.ok(preview.body.next_runs.every((r: string) => /^\d{4}-\d\d-\d\dT\d\d:(00|15|30|45):00[+-]\d\d:\d\d$/.test(r)), 'ISO with the zone\'s offset');
  const bad = await api.post('/cron-preview', { cron: '61 * * * *' }, alice);
  t.match(bad.body, { valid: false, error: /minute: 61 is out of range/, next_runs: [] }, 'an invalid cron is an answer, naming the field');
  const badZone = await api.post('/cron-preview', { cron: '* * * * *', timezone: 'Moon/Base' }, alice);
  t.match(badZone.body, { valid: false, error: /timezone/ });
  const utc = await api.post('/cron-preview', { cron: '0 0 * * 7', timezone: 'UTC' }, admin);
  t.ok(utc.body.next_runs.every((r: string) => r.endsWith('T00:00:00Z') && new Date(r).getUTCDay() === 0), '7 is Sunday, in UTC');

  // ---- create: the SQL is generated once and pinned ----
  const asked = fake.requests.length;
  fake.script({ text: sqlAnswer(COUNT_SQL, 'Counts the orders by status.') });
  const c = await api.post('', base, alice);
  t.equal(c.status, 201, c.text);
  const mine = c.body;
  t.equal(fake.requests.length, asked + 1, 'the model was asked once');
  t.match(fake.requests.at(-1)?.last ?? '', /How many orders are there per status\?/, 'about the question');
  t.match(mine, {
    name: base.name, question: base.question, tables: ['orders'], cron: '0 9 * * 1-5', timezone: ZONE, own_timezone: null, format: 'csv', subject: 'Orders {{date}}',
    sql: COUNT_SQL, explanation: 'Counts the orders by status.', enabled: true, missed: 'once', owner_user: 'alice', owner: `t:${alice.id}`,
  }, 'the schedule with its pinned SQL and explanation');
  t.same(mine.email_recipients, ['ops@example.com', 'Lead@Example.org'], 'recipients as given');
  t.equal(mine.next_runs.length, 5, 'the next five runs shown on create');
  t.ok(mine.next_runs.every((r: string) => /T09:00:00\+0[12]:00$/.test(r) && ![0, 6].includes(new Date(r).getUTCDay())), `09:00 Berlin time on weekdays: ${mine.next_runs.join(', ')}`);
  t.notOk('last_run' in mine, 'never ran');
  t.notOk('fired_through' in mine, 'the leader\'s bookkeeping is not shown');

  // ---- bad input ----
  const { name: _n, ...noName } = base;
  refused(t, await api.post('', noName, alice), 400, 'VALIDATION_FAILED', /name/, 'no name');
  refused(t, await api.post('', { ...base, name: '   ' }, alice), 400, 'VALIDATION_FAILED', /^name: must not be blank/, 'a blank name');
  refused(t, await api.post('', { ...base, name: 'x', cron: '0 25 * * *' }, alice), 400, 'VALIDATION_FAILED', /^cron: hour: 25 is out of range/, 'an hour out of range');
  refused(t, await api.post('', { ...base, name: 'x', cron: '0 9 * * * *' }, alice), 400, 'VALIDATION_FAILED', /five fields/, 'six fields');
  refused(t, await api.post('', { ...base, name: 'x', timezone: 'Europe/Atlantis' }, alice), 400, 'VALIDATION_FAILED', /^timezone: "Europe\/Atlantis" is not an IANA time zone/, 'an unknown zone');
  const badMail = await api.post('', { ...base, name: 'x', email_recipients: ['ok@example.com', 'not-an-address', 'a@b', 'x@example.com>'] }, alice);
  refused(t, badMail, 400, 'VALIDATION_FAILED', /^email_recipients: "not-an-address" is not an e-mail address; "a@b" is not an e-mail address; "x@example.com>" is not an e-mail address$/, 'each bad address named');
  refused(t, await api.post('', { ...base, name: 'x', email_recipients: [] }, alice), 400, 'VALIDATION_FAILED', /email_recipients/, 'no recipient');
  const many = ['a@example.com', 'b@example.com', 'c@example.com', 'd@example.com'];
  refused(t, await api.post('', { ...base, name: 'x', email_recipients: many }, alice), 422, 'LIMIT_EXCEEDED', /at most 3 recipients.*max_recipients_per_email/, 'over email.max_recipients_per_email');
  refused(t, await api.post('', { ...base, name: 'x', format: 'html' }, alice), 400, 'VALIDATION_FAILED', /^format: html is not offered here \(export.formats: csv, excel\)/, 'a format export.formats does not offer');
  refused(t, await api.post('', { ...base, name: 'x', format: 'pdf' }, alice), 400, 'VALIDATION_FAILED', /format/, 'no such format');
  refused(t, await api.post('', { ...base, name: 'x', subject: 'a\r\nBcc: evil@example.com' }, alice), 400, 'VALIDATION_FAILED', /subject/, 'no line break in a subject (no header injection)');
  refused(t, await api.post('', { ...base, name: 'x', missed: 'always' }, alice), 400, 'VALIDATION_FAILED', /missed/, 'a bad missed policy');
  refused(t, await api.post('', base, alice), 409, 'CONFLICT', /named "Orders by status" already/, 'one name per owner');
  const raw = await call(`${url}${API}`, { method: 'POST', raw: '{"name":', headers: { ...alice.h, 'content-type': 'application/json' } });
  refused(t, raw, 400, 'MALFORMED_BODY', /JSON/, 'a body that is no JSON');

  // ---- the guard: the model's SQL, and the creator's own ----
  const before = fake.requests.length;
  fake.script({ text: sqlAnswer('DELETE FROM orders') });
  refused(t, await api.post('', { ...base, name: 'Cleanup' }, alice), 422, 'SQL_REJECTED', /generated for the question: the SQL guard refuses it/, 'the model\'s SQL refused by the guard');
  refused(t, await api.post('', { ...base, name: 'Own', sql: 'DROP TABLE orders' }, alice), 422, 'SQL_REJECTED', /^sql: the SQL guard refuses it/, 'own SQL refused by the guard');
  refused(t, await api.post('', { ...base, name: 'Own', sql: 'SELECT 1; SELECT 2' }, alice), 422, 'SQL_REJECTED', /^sql: /, 'two statements');
  const own = await api.post('', { ...base, name: 'Own', sql: 'SELECT id, total FROM orders ORDER BY id', format: 'excel', missed: 'skip', enabled: false, timezone: 'utc' }, alice);
  t.equal(own.status, 201, own.text);
  t.match(own.body, { sql: 'SELECT id, total FROM orders ORDER BY id', explanation: '', format: 'excel', missed: 'skip', enabled: false, timezone: 'UTC', own_timezone: 'UTC' }, 'own SQL used as sent; zone names canonical, and its own');
  t.same(own.body.next_runs, [], 'paused: no next runs');
  t.equal(fake.requests.length, before + 1, 'own SQL needs no model call (the one call was the refused Cleanup)');
  const names = (await api.get('', alice)).body.schedules.map((s: any) => s.name);
  t.same(names, [base.name, 'Own'], 'nothing refused was saved');

  // ---- who sees what ----
  const bc = await api.post('', { ...base, email_recipients: ['bob@example.com'] }, bob);
  t.equal(bc.status, 201, `bob may use the same name: ${bc.text}`);
  const bobs = bc.body;
  const aliceList = await api.get('', alice);
  t.equal(aliceList.body.storage, storage, `the list says where schedules are kept (${storage})`);
  t.same(aliceList.body.schedules.map((s: any) => s.id), [mine.id, own.body.id], 'alice: her own');
  t.same((await api.get('', bob)).body.schedules.map((s: any) => s.id), [bobs.id], 'bob: his own');
  t.same((await api.get('', admin)).body.schedules.map((s: any) => s.id), [mine.id, own.body.id, bobs.id], 'the admin: every one');
  const one = await api.get(`/${mine.id}`, alice);
  t.equal(one.status, 200, one.text);
  t.same(one.body, mine, 'read back as created');
  t.equal((await api.get(`/${mine.id}`, admin)).status, 200, 'the admin reads it');
  refused(t, await api.get(`/${mine.id}`, bob), 404, 'NOT_FOUND', /no schedule/, 'bob cannot read alice\'s');
  refused(t, await api.send('PATCH', `/${mine.id}`, { cron: '* * * * *' }, bob), 404, 'NOT_FOUND', /no schedule/, 'nor change it');
  refused(t, await api.post(`/${mine.id}/pause`, {}, bob), 404, 'NOT_FOUND', /no schedule/, 'nor pause it');
  refused(t, await api.get(`/${mine.id}/history`, bob), 404, 'NOT_FOUND', /no schedule/, 'nor read its history');
  refused(t, await api.send('DELETE', `/${mine.id}`, undefined, bob), 404, 'NOT_FOUND', /no schedule/, 'nor delete it');
  refused(t, await api.get('/no-such-id', alice), 404, 'NOT_FOUND', /no schedule no-such-id/, 'an unknown id');
  for (const id of ['bad$id', 'x'.repeat(65), 'a.b']) {
    refused(t, await api.get(`/${encodeURIComponent(id)}`, alice), 400, 'VALIDATION_FAILED', /path parameter id/, `id ${JSON.stringify(id.slice(0, 10))}`);
  }

  // ---- edit ----
  const moved = await api.send('PATCH', `/${mine.id}`, { cron: '30 7 1 * *', email_recipients: ['ops@example.com', 'OPS@example.com', 'new@example.com'] }, alice);
  t.equal(moved.status, 200, moved.text);
  t.equal(moved.body.cron, '30 7 1 * *');
  t.same(moved.body.email_recipients, ['ops@example.com', 'new@example.com'], 'a repeated address once');
  t.ok(moved.body.next_runs.length === 5 && moved.body.next_runs.every((r: string) => /-01T07:30:00\+0[12]:00$/.test(r)), 'the next runs follow the new cron');
  t.equal(moved.body.sql, COUNT_SQL, 'the SQL is kept when the question is');
  refused(t, await api.send('PATCH', `/${mine.id}`, { cron: 'every day' }, alice), 400, 'VALIDATION_FAILED', /^cron: /, 'a bad cron on edit');
  refused(t, await api.send('PATCH', `/${mine.id}`, { name: 'Own' }, alice), 409, 'CONFLICT', /Own/, 'renamed onto another of hers');
  refused(t, await api.send('PATCH', `/${mine.id}`, { sql: 'SELECT 1', regenerate: true }, alice), 400, 'VALIDATION_FAILED', /not both/, 'own SQL and regenerate');

  const reworded = 'How many paid orders are there?';
  fake.script({ text: sqlAnswer("SELECT count(*) AS paid FROM orders WHERE status = 'paid'", 'Counts paid orders.') });
  const rq = await api.send('PATCH', `/${mine.id}`, { question: reworded }, alice);
  t.equal(rq.status, 200, rq.text);
  t.match(rq.body, { question: reworded, sql: "SELECT count(*) AS paid FROM orders WHERE status = 'paid'", explanation: 'Counts paid orders.' }, 'a new question: new SQL');
  t.match(fake.requests.at(-1)?.last ?? '', /paid orders/);
  fake.script({ text: sqlAnswer('SELECT count(*) AS n FROM orders', 'Counts all orders.') });
  const regen = await api.send('PATCH', `/${mine.id}`, { regenerate: true }, admin);
  t.match(regen.body, { sql: 'SELECT count(*) AS n FROM orders', explanation: 'Counts all orders.', owner: `t:${alice.id}`, owner_user: 'alice' }, 'the admin regenerates it; it stays alice\'s');
  const edited = await api.send('PATCH', `/${mine.id}`, { sql: 'SELECT status FROM orders' }, alice);
  t.match(edited.body, { sql: 'SELECT status FROM orders', explanation: '' }, 'the creator edits the SQL');
  refused(t, await api.send('PATCH', `/${mine.id}`, { sql: 'UPDATE orders SET total = 0' }, alice), 422, 'SQL_REJECTED', /^sql: the SQL guard refuses it/, 'an edit the guard refuses');
  t.equal((await api.get(`/${mine.id}`, alice)).body.sql, 'SELECT status FROM orders', 'and nothing changed');

  const { next_runs: _r, ...readBack } = (await api.get(`/${mine.id}`, alice)).body;
  const put = await api.send('PUT', `/${mine.id}`, { ...readBack, name: 'Orders (put)', cron: '0 8 * * *', format: 'excel' }, alice);
  t.equal(put.status, 200, put.text);
  t.match(put.body, { name: 'Orders (put)', cron: '0 8 * * *', format: 'excel', sql: 'SELECT status FROM orders', id: mine.id, created_at: mine.created_at }, 'a record read back, changed and PUT; its id and creation time are not editable');
  t.match(put.body, { timezone: ZONE, own_timezone: null }, 'the zone in effect sent back is no zone of its own');
  fake.script({ text: sqlAnswer('SELECT status, total FROM orders', 'Lists the orders.') });
  const form = await api.send('PUT', `/${mine.id}`, { ...readBack, question: 'List the orders', name: 'Orders (put)', cron: '0 8 * * *', format: 'excel' }, alice);
  t.match(form.body, { question: 'List the orders', sql: 'SELECT status, total FROM orders', explanation: 'Lists the orders.' }, 'a form sending the saved SQL back with a new question: the SQL follows the question');
  refused(t, await api.send('PUT', `/${mine.id}`, { cron: '0 8 * * *' }, alice), 400, 'VALIDATION_FAILED', /name|question|email_recipients|format/, 'PUT needs every required field');

  // ---- pause, resume ----
  const paused = await api.post(`/${mine.id}/pause`, {}, alice);
  t.match(paused.body, { enabled: false, next_runs: [] }, 'paused');
  const resumed = await api.post(`/${mine.id}/resume`, {}, admin);
  t.equal(resumed.body.enabled, true, 'resumed (by the admin)');
  t.equal(resumed.body.next_runs.length, 5);

  // ---- history ----
  const h = await api.get(`/${mine.id}/history`, alice);
  t.equal(h.status, 200, h.text);
  t.same(h.body, { executions: [] }, 'no run yet');
  refused(t, await api.get(`/${mine.id}/history?limit=0`, alice), 400, 'VALIDATION_FAILED', /limit/, 'a limit of 0');
  refused(t, await api.get(`/${mine.id}/history?offset=-1`, alice), 400, 'VALIDATION_FAILED', /offset/, 'a negative offset');

  // ---- Run Now: queued at once (202), then run by the runner; History shows it ----
  refused(t, await api.post(`/${mine.id}/run`, {}, bob), 404, 'NOT_FOUND', /no schedule/, 'bob cannot run alice\'s');
  const run = await api.post(`/${mine.id}/run`, {}, alice);
  t.equal(run.status, 202, run.text);
  t.match(run.body, { schedule_id: mine.id, schedule_name: 'Orders (put)', trigger: 'manual' }, 'the queued execution');
  let ran: any;
  for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
    ran = (await api.get(`/${mine.id}/history`, alice)).body.executions?.find((e: any) => e.id === run.body.id);
    if (ran?.status === 'done') break;
    await new Promise((r) => setTimeout(r, 200));
  }
  t.match(ran, { id: run.body.id, status: 'done', success: true, rows_returned: 3, error_message: null }, `the run is in History with its outcome (${JSON.stringify(ran)})`);
  t.same((await api.get(`/${mine.id}`, alice)).body.last_run, { at: ran.execution_time, success: true }, 'and is the last run');

  // ---- no zone of its own: the schedule follows scheduler.timezone, changed at run time ----
  const setZone = await call(`${url}/admin/config/scheduler.timezone`, { method: 'PUT', body: { value: 'America/New_York' }, headers: admin.h });
  t.equal(setZone.status, 200, setZone.text);
  const followed = (await api.get(`/${mine.id}`, alice)).body;
  t.match(followed, { own_timezone: null, timezone: 'America/New_York' }, 'the zone in effect is the new setting');
  t.ok(followed.next_runs.length === 5 && followed.next_runs.every((r: string) => /T08:00:00-0[45]:00$/.test(r)), `the next runs follow: 08:00 New York time (${followed.next_runs.join(', ')})`);
  t.match((await api.get(`/${own.body.id}`, alice)).body, { own_timezone: 'UTC', timezone: 'UTC' }, 'a schedule with its own zone keeps it');
  const dropped = await api.send('PATCH', `/${own.body.id}`, { timezone: null }, alice);
  t.match(dropped.body, { own_timezone: null, timezone: 'America/New_York' }, 'timezone null: no zone of its own any more');
  const pinned = await api.send('PATCH', `/${mine.id}`, { timezone: 'Asia/Tokyo' }, alice);
  t.match(pinned.body, { own_timezone: 'Asia/Tokyo', timezone: 'Asia/Tokyo' }, 'a zone given on edit is its own');
  t.ok(pinned.body.next_runs.every((r: string) => r.endsWith('T08:00:00+09:00')));
  t.equal((await call(`${url}/admin/config/scheduler.timezone`, { method: 'DELETE', headers: admin.h })).status, 200, 'the setting back');
  const back = await api.send('PATCH', `/${mine.id}`, { timezone: null }, alice);
  t.match(back.body, { own_timezone: null, timezone: ZONE });

  // ---- delete ----
  const gone = await api.send('DELETE', `/${own.body.id}`, undefined, alice);
  t.equal(gone.status, 200, gone.text);
  t.same(gone.body, { ok: true });
  refused(t, await api.get(`/${own.body.id}`, alice), 404, 'NOT_FOUND', /no schedule/, 'deleted');
  refused(t, await api.send('DELETE', `/${own.body.id}`, undefined, alice), 404, 'NOT_FOUND', /no schedule/, 'deleted twice');
  t.equal((await api.send('GET', '/x', undefined, alice)).status, 404);
  t.equal((await call(`${url}${API}`, { method: 'DELETE', headers: alice.h })).status, 405, 'a known route, another method');

  return { alice, bob, admin, mine: (await api.get(`/${mine.id}`, alice)).body, bobs, ranId: run.body.id };
}

t.test('in memory (config_db off): every route, bad input, who may see what', async (t) => {
  const nats = await natsServer();
  const stack = await stackOn(nats);
  await exercise(t, stack, 'memory');
});

t.test('on PostgreSQL (config_db on): schedules and their history survive a restart; delete removes the history', async (t) => {
  const cfgDb: TestDb = await createTestDb('schcfg');
  cleanups.push(() => cfgDb.drop());
  const extra = { config_db: { enabled: true, encryption_key: generateFernetKey(), postgresql: { host: cfgDb.host, port: cfgDb.port, database: cfgDb.name, user: cfgDb.user } } };
  const nats = await natsServer();
  const first = await stackOn(nats, extra);
  const made = await exercise(t, first, 'postgresql');
  const rows = await cfgDb.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM cortado_schedules');
  t.equal(rows.rows[0]?.n, 2, 'the schedules are rows of config_db');
  // two runs as the runner records them (store/schedules.ts), to read them back through the API
  await cfgDb.pool.query(`
    INSERT INTO cortado_schedule_executions (id, schedule_id, schedule_name, execution_time, trigger, status, started_at, finished_at, success, email_sent, email_error, error_message, rows_returned, duration_ms, created_at)
    VALUES ('e1', $1, 'Orders (put)', '2026-01-05T08:00:00Z', 'cron', 'done', '2026-01-05T08:00:00Z', '2026-01-05T08:00:01Z', true, true, NULL, NULL, 2, 812.5, now()),
           ('e2', $1, 'Orders (put)', '2026-01-06T08:00:00Z', 'cron', 'done', '2026-01-06T08:00:00Z', '2026-01-06T08:00:03Z', false, false, 'authentication failed', 'relation "orders" does not exist', NULL, 40, now())`,
  [made.mine.id]);
  const strip = (s: any) => {
    const { next_runs: _n, ...rest } = s;
    return rest;
  };
  const before = (await call(`${first.url}${API}`, { headers: made.admin.h })).body.schedules.map(strip);
  await first.stop();

  const second = await stackOn(nats, extra);
  const api = client(second.url);
  const admin = await signIn(second.url);
  const after = (await api.get('', admin)).body.schedules;
  t.same(after.map(strip), before, 'every schedule survives the restart, with its last run');
  t.same((await api.get('', made.alice)).body.schedules.map((s: any) => s.id), [made.mine.id], 'alice\'s token still finds hers');
  const h = await api.get(`/${made.mine.id}/history`, made.alice);
  t.equal(h.status, 200, h.text);
  const recorded = h.body.executions.filter((e: any) => e.id === 'e1' || e.id === 'e2');
  t.same(h.body.executions.map((e: any) => e.id), [made.ranId, 'e2', 'e1'], 'newest first (Run Now\'s, then the two)');
  t.match(recorded[0], {
    schedule_id: made.mine.id, schedule_name: 'Orders (put)', execution_time: '2026-01-06T08:00:00.000Z', trigger: 'cron', status: 'done',
    success: false, email_sent: false, email_error: 'authentication failed', error_message: 'relation "orders" does not exist', rows_returned: null, duration_ms: 40,
  }, 'every field of the record');
  t.match(recorded[1], { success: true, email_sent: true, email_error: null, error_message: null, rows_returned: 2, duration_ms: 812.5 });
  t.same((await api.get(`/${made.mine.id}/history?limit=1&offset=2`, made.alice)).body.executions.map((e: any) => e.id), ['e1'], 'paged');
  refused(t, await api.get(`/${made.mine.id}/history`, made.bob), 404, 'NOT_FOUND', /no schedule/, 'not bob\'s');

  const gone = await api.send('DELETE', `/${made.mine.id}`, undefined, made.alice);
  t.equal(gone.status, 200, gone.text);
  const left = await cfgDb.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM cortado_schedule_executions');
  t.equal(left.rows[0]?.n, 0, 'its history is gone with it');
  t.same((await api.get('', admin)).body.schedules.map((s: any) => s.id), [made.bobs.id], 'bob\'s is untouched');
});

t.test('a plugins.auth session is told to use an API token; a token minted from it creates a schedule that runs as its database user', async (t) => {
  const role = `sched_${process.pid}_${Date.now().toString(36)}`;
  const password = 'sched-role-pw';
  await db.pool.query(`
    CREATE ROLE ${role} LOGIN PASSWORD '${password}';
    GRANT CONNECT ON DATABASE ${db.name} TO ${role};
    GRANT USAGE ON SCHEMA public TO ${role};
    GRANT SELECT ON orders TO ${role};
    CREATE TABLE IF NOT EXISTS payroll (name text, salary int);
    INSERT INTO payroll VALUES ('ceo', 1000000);
  `);
  cleanups.push(async () => {
    const { default: pg } = await import('pg');
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query(`DROP OWNED BY ${role}`).catch(() => undefined);
    await admin.end();
  });
  const nats = await natsServer();
  const stack = await stackOn(nats, { plugins: { auth: { enabled: true } } });
  cleanups.push(async () => {
    // after the stack and the database are gone (cleanups run in reverse)
    const { default: pg } = await import('pg');
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
    await admin.end();
  });
  const url = stack.url;
  const api = client(url);
  const login = await call(`${url}/auth/login`, { body: { username: role, password } });
  t.equal(login.status, 200, login.text);
  const session: Who = { user: role, h: { 'x-session-id': login.body.session_id as string } };

  const own = { ...base, name: 'From a session', sql: 'SELECT count(*) AS n FROM orders' };
  refused(t, await api.post('', own, session), 403, 'FORBIDDEN', /cannot belong to a sign-in session[\s\S]*Create an API token from this session \(POST \/auth\/tokens/, 'a schedule from a plugins.auth session');
  t.same((await api.get('', session)).body.schedules, [], 'nothing was saved');

  const minted = await call(`${url}/auth/tokens`, { body: { label: 'reports' }, headers: session.h });
  t.equal(minted.status, 201, minted.text);
  const token: Who = { user: role, h: { authorization: `Bearer ${minted.body.token as string}` } };
  const made = await api.post('', own, token);
  t.equal(made.status, 201, made.text);
  t.match(made.body, { owner: `t:${minted.body.info.id}`, scope: `t:${minted.body.info.id}`, owner_user: role }, 'the token\'s schedule, in the token\'s scope');
  const sneaky = await api.post('', { ...base, name: 'Payroll', sql: 'SELECT name, salary FROM payroll' }, token);
  t.equal(sneaky.status, 201, `the guard does not know privileges: ${sneaky.text}`);

  async function runOnce(id: string): Promise<any> {
    const run = await api.post(`/${id}/run`, {}, token);
    t.equal(run.status, 202, run.text);
    for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
      const e = (await api.get(`/${id}/history`, token)).body.executions?.find((x: any) => x.id === run.body.id);
      if (e?.status === 'done') return e;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error('the run did not finish');
  }
  t.match(await runOnce(made.body.id), { success: true, rows_returned: 1 }, 'it runs with the token');
  const denied = await runOnce(sneaky.body.id);
  // the token's database user cannot see payroll: its catalog has no such table, so the run fails before the query
  t.match(denied, { success: false, rows_returned: null, error_message: /payroll/ }, `never with more rights than its creator: ${denied.error_message}`);
});

/**
 * The interactive query flows: SQL generated but not run (execute_generated_sql: false), SQL
 * held for confirmation (single use, bound to the session that asked, kept in KV), and
 * query.require_session on the legacy endpoint.
 */
import t from 'tap';
import { createLogger } from '../../runtime/log.js';
import { Bus } from '../../runtime/bus.js';
import { Bucket, TokenIssue } from '../../protocol/subjects.js';
import { Confirmations, type PendingSql } from '../../actors/assistant/confirmations.js';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';

const nats = await startNats();
const db = await createTestDb('flows');
await db.pool.query(GUARD_SCHEMA_SQL);
const fake = await startFakeLlm();
const dbRef = { host: db.host, port: db.port, name: db.name, user: db.user };
const confirmStack = await startStack(testConfig({ natsUrl: nats.url, db: dbRef, llmUrl: fake.url, extra: { query: { confirm_before_execute: true } } }));
t.teardown(async () => {
  await confirmStack.stop();
  await fake.close();
  await db.drop();
  await nats.stop();
});
const COUNT = 'SELECT count(*) AS n FROM orders';

t.test('confirm_before_execute: the SQL is held; confirming runs exactly it, once, for the same session', async (t) => {
  fake.script({ text: sqlAnswer(COUNT, 'Counts the orders.') });
  const asked = await call(`${confirmStack.url}/query`, { body: { question: 'how many orders?', session_id: 'widget-1' } });
  t.equal(asked.status, 200, asked.text);
  t.equal(asked.body.requires_confirmation, true);
  t.equal(asked.body.executed, false);
  t.same(asked.body.data, [], 'nothing ran');
  t.equal(asked.body.sql, `${COUNT}\nLIMIT 100`, 'the SQL as it would run, guarded');
  const id = asked.body.confirmation_id as string;
  t.match(id, /^cf_/);

  const stranger = await call(`${confirmStack.url}/query/confirm-execute`, { body: { confirmation_id: id, session_id: 'widget-2' } });
  t.equal(stranger.status, 403, 'another session cannot confirm it');

  const ran = await call(`${confirmStack.url}/query/confirm-execute`, { body: { confirmation_id: id, session_id: 'widget-1' } });
  t.equal(ran.status, 200, ran.text);
  t.same(ran.body.data, [[40]]);
  t.equal(ran.body.sql, `${COUNT}\nLIMIT 100`);
  t.equal(ran.body.executed, true);

  const again = await call(`${confirmStack.url}/query/confirm-execute`, { body: { confirmation_id: id, session_id: 'widget-1' } });
  t.equal(again.status, 404, 'single use');
  const bogus = await call(`${confirmStack.url}/query/confirm-execute`, { body: { confirmation_id: 'cf_nope', session_id: 'widget-1' } });
  t.equal(bogus.status, 404);
  t.equal(fake.requests.length, 1, 'confirming asks the model nothing');
});

t.test('confirm_before_execute: a guard refusal comes at once, never as a confirmation', async (t) => {
  fake.script({ text: sqlAnswer('DELETE FROM orders') });
  const asked = await call(`${confirmStack.url}/query`, { body: { question: 'delete', session_id: 'widget-1' } });
  t.equal(asked.status, 422);
  t.equal(asked.body.error.code, 'SQL_REJECTED');
});

t.test('confirm_before_execute does not apply to /api/query (not an interactive widget)', async (t) => {
  fake.script({ text: sqlAnswer(COUNT) });
  const r = await call(`${confirmStack.url}/api/query`, { body: { question: 'how many orders?' } });
  t.equal(r.status, 200);
  t.same(r.body.rows, [[40]]);
  t.notOk(r.body.confirmation);
});

t.test('confirm_before_execute does not apply to an API token: POST /query with a Bearer token runs at once', async (t) => {
  const { token } = await confirmStack.running.bus.request(TokenIssue, { username: 'script-user', ttl_hours: 1 }, { requestId: 't' });
  fake.script({ text: sqlAnswer(COUNT) });
  const r = await call(`${confirmStack.url}/query`, { body: { question: 'how many orders?' }, headers: { authorization: `Bearer ${token}` } });
  t.equal(r.status, 200, r.text);
  t.notOk(r.body.requires_confirmation, 'nothing held');
  t.equal(r.body.executed, true);
  t.same(r.body.data, [[40]], 'the SQL ran');
});

t.test('legacy /query without a session_id gets one, and the next question with it continues the conversation', async (t) => {
  fake.script({ text: sqlAnswer(COUNT) });
  const { token } = await confirmStack.running.bus.request(TokenIssue, { username: 'script-user', ttl_hours: 1 }, { requestId: 't' });
  const first = await call(`${confirmStack.url}/query`, { body: { question: 'how many orders?' }, headers: { authorization: `Bearer ${token}` } });
  t.equal(first.status, 200, first.text);
  const id = first.body.session_id as string;
  t.type(id, 'string', 'a session_id, never null');
  t.match(id, /^[A-Za-z0-9_.:-]{1,128}$/, 'one the endpoint takes back');
  const before = fake.requests.length;
  fake.script({ text: sqlAnswer(COUNT) });
  const next = await call(`${confirmStack.url}/query`, { body: { question: 'and the ones from last week?', session_id: id }, headers: { authorization: `Bearer ${token}` } });
  t.equal(next.status, 200, next.text);
  t.equal(next.body.session_id, id);
  t.match(JSON.stringify(fake.requests[before]), /how many orders\?/, 'the first question is the second one\'s context');
});

t.test('confirmations expire, and a second edge sees them (KV)', async (t) => {
  const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'conf-test', log: createLogger({ svc: 'test', level: 'silent' }) });
  t.teardown(() => bus.close());
  const c = new Confirmations(await bus.bucket<PendingSql>(Bucket.Confirmations, { ttlMs: 600_000 }));
  const now = Date.parse('2026-11-23T10:00:00Z');
  const base = { sql: 'SELECT 1', question: 'q', owner: 'o', channel: 'legacy' as const, dialect: 'postgresql' as const, tables: [] };
  const a = await c.hold(base, now);
  await t.rejects(c.take(a.id, 'o', now + 11 * 60_000), { code: 'NOT_FOUND' }, 'expired');
  const b = await c.hold(base, Date.now());
  const other = new Confirmations(await bus.bucket<PendingSql>(Bucket.Confirmations, { ttlMs: 600_000 }));
  const [x, y] = await Promise.allSettled([c.take(b.id, 'o'), other.take(b.id, 'o')]);
  t.equal([x, y].filter((r) => r.status === 'fulfilled').length, 1, 'two takers at once: exactly one runs it');
});

t.test('execute_generated_sql: false returns the SQL without running it (interactive only)', async (t) => {
  const nats2 = await startNats();
  const s = await startStack(testConfig({ natsUrl: nats2.url, db: dbRef, llmUrl: fake.url, extra: { query: { execute_generated_sql: false } } }));
  t.teardown(async () => {
    await s.stop();
    await nats2.stop();
  });
  fake.script({ text: sqlAnswer(COUNT) });
  const legacy = await call(`${s.url}/query`, { body: { question: 'how many orders?' } });
  t.equal(legacy.status, 200);
  t.equal(legacy.body.executed, false);
  t.equal(legacy.body.sql, `${COUNT}\nLIMIT 100`, 'the SQL as Cortado would have run it, guarded');
  t.same(legacy.body.data, []);
  fake.script({ text: sqlAnswer(COUNT) });
  const api = await call(`${s.url}/api/query`, { body: { question: 'how many orders?' } });
  t.same(api.body.rows, [[40]], '/api/query still executes');

  // SQL a person would copy is checked as if it ran: the guard's refusal, never an answer
  fake.script({ text: sqlAnswer('DROP TABLE orders') });
  const drop = await call(`${s.url}/query`, { body: { question: 'drop the orders' } });
  t.equal(drop.status, 422, drop.text);
  t.equal(drop.body.error.code, 'SQL_REJECTED');
  t.notMatch(drop.text, /DROP TABLE/, 'the statement is not handed back');
  const stillThere = await db.pool.query('SELECT count(*)::int AS n FROM orders');
  t.equal(stillThere.rows[0].n, 40);
});

t.test('require_session: the legacy endpoint needs a session or an API token', async (t) => {
  const nats3 = await startNats();
  const s = await startStack(testConfig({ natsUrl: nats3.url, db: dbRef, llmUrl: fake.url, extra: { query: { require_session: true } } }));
  t.teardown(async () => {
    await s.stop();
    await nats3.stop();
  });
  const anon = await call(`${s.url}/query`, { body: { question: 'how many orders?' } });
  t.equal(anon.status, 401);
  t.equal(anon.body.error.code, 'UNAUTHORIZED');
  const bad = await call(`${s.url}/query`, { body: { question: 'how many orders?' }, headers: { authorization: 'Bearer ctd_invalid' } });
  t.equal(bad.status, 401);
  const { token } = await s.running.bus.request(TokenIssue, { username: 'widget-user', ttl_hours: 1 }, { requestId: 't' });
  fake.script({ text: sqlAnswer(COUNT) });
  const ok = await call(`${s.url}/query`, { body: { question: 'how many orders?' }, headers: { authorization: `Bearer ${token}` } });
  t.equal(ok.status, 200, ok.text);
  t.same(ok.body.data, [[40]]);
});

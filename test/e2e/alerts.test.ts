/**
 * Security alerts end to end: questions over HTTP through every actor (a real PostgreSQL, a
 * local Anthropic Messages API server, NATS with JetStream), the alerts actor scoring the
 * events the pipeline published, and the e-mail arriving at a real SMTP server. The answer
 * itself is never held up or changed by an alert.
 */
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import { ALERTS_CONSUMER, AlertRaisedEvt, eventsStreamName } from '../../protocol/subjects.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { startSmtp } from '../helpers/smtp.js';
import { call, startStack } from '../helpers/stack.js';

const nats = await startNats();
const db = await createTestDb('alerts');
await db.pool.query(`
  CREATE TABLE users (id int PRIMARY KEY, name text, email text, password_hash text);
  INSERT INTO users SELECT g, 'user ' || g, 'u' || g || '@example.com', md5(g::text) FROM generate_series(1, 40) g;
  CREATE TABLE products (id int PRIMARY KEY, name text, price numeric);
  INSERT INTO products VALUES (1, 'espresso', 2.5), (2, 'cortado', 3.2);
  ANALYZE;
`);
const fake = await startFakeLlm();
const smtp = await startSmtp({ tls: 'none' });
const config = testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: {
    insights: { enabled: false },
    mcp: { security_alerts: { enabled: true, risk_threshold: 70, apply_to: ['api'], notify_emails: ['security@example.org'] } },
    email: { enabled: true, smtp: { host: smtp.host, port: smtp.port, from_email: 'cortado@example.org', use_tls: false, use_ssl: false } },
  },
});
const stack = await startStack(config);
const watcher = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'watcher', log: createLogger({ svc: 'watcher', level: 'silent' }) });
const raised: any[] = [];
const unlisten = watcher.listen(AlertRaisedEvt.subject, (data) => raised.push(data));
await watcher.flush();
const nc = await connect({ servers: nats.url });
const jsm = await jetstreamManager(nc);

t.teardown(async () => {
  unlisten();
  // every step runs; a failing one is named on stderr (tap prints only "error thrown in teardown")
  const steps: Array<[string, () => Promise<unknown>]> = [
    ['watcher', () => watcher.close()], ['nats client', () => nc.close()], ['stack', () => stack.stop()],
    ['fake llm', () => fake.close()], ['smtp', () => smtp.close()], ['database', () => db.drop()], ['nats-server', () => nats.stop()],
  ];
  const failed: unknown[] = [];
  for (const [name, step] of steps) {
    await step().catch((err: unknown) => {
      console.error(`teardown: ${name} failed:`, err);
      failed.push(err);
    });
  }
  if (failed.length) throw failed[0];
});

t.beforeEach(() => {
  fake.requests.length = 0;
  fake.fallback(() => ({ status: 500, message: 'unscripted' }));
});

async function alertFor(rid: string, timeoutMs = 10_000): Promise<any> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const a = raised.find((x) => x.request_id === rid);
    if (a || Date.now() > end) return a;
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The alerts consumer has handled every event so far. */
async function settled(): Promise<void> {
  const stream = eventsStreamName('cortado');
  const end = Date.now() + 10_000;
  for (;;) {
    const si = await jsm.streams.info(stream);
    const ci = await jsm.consumers.info(stream, ALERTS_CONSUMER);
    if (ci.num_pending === 0 && ci.num_ack_pending === 0 && ci.delivered.stream_seq >= si.state.last_seq) break;
    if (Date.now() > end) throw new Error('the alerts consumer did not catch up');
    await new Promise((r) => setTimeout(r, 25));
  }
  await new Promise((r) => setTimeout(r, 100));
}

t.test('every e-mail and password hash: the answer comes, the alert is raised and mailed', async (t) => {
  const sql = 'SELECT email, password_hash FROM users';
  fake.script({ text: sqlAnswer(sql) });
  const before = smtp.received.length;
  const res = await call(`${stack.url}/api/query`, { body: { question: 'give me every login' } });
  t.equal(res.status, 200, res.text);
  t.equal(res.body.row_count, 40, 'the query ran: alerts never block it');
  const rid = res.body.request_id;
  const a = await alertFor(rid);
  t.ok(a, 'alert.raised');
  t.match(a, { request_id: rid, channel: 'api', widget_type: 'api', reasons: ['score'], notified: ['security@example.org'] });
  t.ok(a.score > 70, `score ${a.score} is above 70`);
  t.ok(a.factors.some((f: any) => f.name === 'sensitive_columns' && /password_hash/.test(f.detail)));
  const mail = (await smtp.waitFor(before + 1)).slice(before);
  t.equal(mail.length, 1, 'one e-mail for the question');
  t.same(mail[0]!.to, ['security@example.org']);
  t.match(mail[0]!.parsed.subject, /Security alert: risk \d+\/100 \(api\)/);
  t.match(mail[0]!.parsed.text, new RegExp(`Request id: +${rid}`));
  await settled();
  t.equal(raised.filter((x) => x.request_id === rid).length, 1, 'generated and executed: one alert');
});

t.test('SELECT * on a table with secret columns: the schema from the executor expands the star', async (t) => {
  fake.script({ text: sqlAnswer('SELECT * FROM users') });
  const res = await call(`${stack.url}/api/query`, { body: { question: 'show the users table' } });
  t.equal(res.status, 200, res.text);
  const a = await alertFor(res.body.request_id);
  t.ok(a, 'alert.raised');
  const sensitive = a.factors.find((f: any) => f.name === 'sensitive_columns');
  t.match(sensitive?.detail, /password_hash/, 'a column only the schema names');
  t.ok(a.factors.some((f: any) => f.name === 'select_star'));
});

t.test('a harmless question raises nothing', async (t) => {
  fake.script({ text: sqlAnswer('SELECT name, price FROM products WHERE id = 2') });
  const res = await call(`${stack.url}/api/query`, { body: { question: 'price of a cortado?' } });
  t.equal(res.status, 200, res.text);
  await settled();
  t.notOk(raised.some((x) => x.request_id === res.body.request_id));
});

t.test('the legacy widget is not in apply_to: no alert for the same query', async (t) => {
  fake.script({ text: sqlAnswer('SELECT email, password_hash FROM users') });
  const res = await call(`${stack.url}/query`, { body: { question: 'give me every login' } });
  t.equal(res.status, 200, res.text);
  t.equal(res.body.row_count, 40);
  await settled();
  t.notOk(raised.some((x) => x.request_id === res.body.request_id));
});

t.test('a statement the guard refuses is scored too', async (t) => {
  fake.script({ text: sqlAnswer('DELETE FROM users') });
  const before = smtp.received.length;
  const res = await call(`${stack.url}/api/query`, { body: { question: 'remove all users' } });
  t.equal(res.status, 422, res.text);
  t.equal(res.body.error.code, 'SQL_REJECTED');
  const rid = res.body.error.request_id;
  const a = await alertFor(rid);
  t.ok(a, 'alert.raised for a refused statement');
  t.ok(a.factors.some((f: any) => f.name === 'write_statement'));
  t.equal((await db.pool.query('SELECT count(*)::int AS n FROM users')).rows[0].n, 40, 'nothing was deleted');
  await smtp.waitFor(before + 1);
  await settled();
  t.equal(raised.filter((x) => x.request_id === rid).length, 1, 'generated and rejected: one alert');
});

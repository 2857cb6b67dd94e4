/**
 * audit.required (default true): a question whose events could not reach the audit trail is
 * refused with 503 AUDIT_UNAVAILABLE before any work — when JetStream cannot keep the event
 * stream at start ("insufficient storage resources available"), and when the event outbox is
 * full because the broker is away — and answered again once the trail can be written. Turned
 * off, questions are answered unaudited.
 */
import t from 'tap';
import { AuditQuery } from '../../protocol/subjects.js';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { startBroker } from '../helpers/broker.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';

const db = await createTestDb('auditreq');
await db.pool.query(GUARD_SCHEMA_SQL);
const fake = await startFakeLlm();
fake.fallback(() => ({ text: sqlAnswer('SELECT count(*) AS orders FROM orders') }));
t.teardown(async () => {
  await fake.close();
  await db.drop();
});

const configFor = (natsUrl: string, extra: Record<string, unknown> = {}) =>
  testConfig({ natsUrl, db: { host: db.host, port: db.port, name: db.name, user: db.user }, llmUrl: fake.url, extra });
const ask = (url: string, question: string) => call(`${url}/api/query`, { body: { question } });

t.test('JetStream cannot keep the event stream at start', async (t) => {
  const broker = await startBroker({ maxFileStore: '1MB' }); // the stream asks for 1 GB
  t.teardown(() => broker.stop());

  await t.test('audit.required (the default): every question is refused, clearly, before any work', async (t) => {
    const stack = await startStack(configFor(broker.url));
    t.teardown(() => stack.stop());
    fake.requests.length = 0;
    const res = await ask(stack.url, 'how many orders?');
    t.equal(res.status, 503, res.text);
    t.equal(res.body.error.code, 'AUDIT_UNAVAILABLE');
    t.match(res.body.error.message, /audit trail cannot be written/);
    t.match(res.body.error.message, /insufficient storage/, 'with what the broker said');
    t.equal(res.body.error.request_id, res.headers.get('x-request-id'));
    t.equal(fake.requests.length, 0, 'the model was not asked: nothing ran unaudited');
  });

  await t.test('audit.required: false: answered, unaudited', async (t) => {
    const stack = await startStack(configFor(broker.url, { audit: { required: false } }));
    t.teardown(() => stack.stop());
    const res = await ask(stack.url, 'how many orders?');
    t.equal(res.status, 200, res.text);
    t.same(res.body.rows, [[40]]);
  });
});

t.test('the outbox full while the broker is away: refused until it stored what waits', { timeout: 60_000 }, async (t) => {
  const broker = await startBroker();
  t.teardown(() => broker.stop());
  // each question has three events (query.generated, query.executed, question.completed): room for two questions
  const stack = await startStack(configFor(broker.url, { bus: { outbox_max_events: 6 } }));
  t.teardown(() => stack.stop());
  const bus = stack.running.bus;
  t.equal((await ask(stack.url, 'before')).status, 200);
  // its events are stored a moment after the answer (the broker's acknowledgement): let them be
  for (let i = 0; i < 100 && bus.outboxStats().waiting > 0; i++) await new Promise((r) => setTimeout(r, 20));
  t.equal(bus.outboxStats().waiting, 0, 'the first question\'s events are stored');

  await broker.kill();
  // the one-process deployment answers without the broker; its events wait in the outbox
  const answered: string[] = [];
  for (const q of ['first while away', 'second while away']) {
    const res = await ask(stack.url, q);
    t.equal(res.status, 200, `"${q}" answered: ${res.text}`);
    answered.push(res.body.request_id);
  }
  t.equal(bus.outboxStats().waiting, 6, 'their six events wait for the broker');
  const refused = await ask(stack.url, 'third while away');
  t.equal(refused.status, 503, refused.text);
  t.equal(refused.body.error.code, 'AUDIT_UNAVAILABLE');
  t.match(refused.body.error.message, /6 events wait/);

  await broker.start();
  const back = Date.now();
  let res = await ask(stack.url, 'after');
  while (res.status !== 200 && Date.now() - back < 20_000) {
    await new Promise((r) => setTimeout(r, 200));
    res = await ask(stack.url, 'after');
  }
  t.equal(res.status, 200, `answered again ${Date.now() - back} ms after the broker came back`);
  answered.push(res.body.request_id);

  // every answered question is in the audit trail
  const end = Date.now() + 15_000;
  let missing = answered;
  while (missing.length && Date.now() < end) {
    const found = await Promise.all(missing.map((rid) => bus.request(AuditQuery, { request_id: rid, type: 'query.executed' }, { requestId: 't' })));
    missing = missing.filter((_rid, i) => found[i]!.total !== 1);
    if (missing.length) await new Promise((r) => setTimeout(r, 100));
  }
  t.same(missing, [], 'each answered question has its query.executed entry, once');
  const refusedRid = refused.body.error.request_id as string;
  const none = await bus.request(AuditQuery, { request_id: refusedRid }, { requestId: 't' });
  t.equal(none.total, 0, 'the refused one did nothing worth auditing');
});

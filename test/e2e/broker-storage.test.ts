/**
 * A broker whose JetStream offers little file storage (issue 31 item 2), as an operator runs
 * one: nats-server with `max_file_store` in its config, and `cortado` as a process. The event
 * stream used to reserve 1 GiB up front, so under ~1 GiB every question was refused
 * (AUDIT_UNAVAILABLE) while `/health` said "ok". Now the streams are sized to what the server
 * offers, with a warning saying what to change; and where even that is too little, `/health`
 * (the edge's and the process's own on metrics.listen) says the audit trail cannot be written.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import YAML from 'yaml';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { freePort, startBroker, type Broker } from '../helpers/broker.js';
import { testConfigObject } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { createTestDb } from '../helpers/pg.js';
import { cortado, until } from '../helpers/processes.js';
import { call } from '../helpers/stack.js';

const db = await createTestDb('bstorage');
await db.pool.query(GUARD_SCHEMA_SQL);
const fake = await startFakeLlm();
fake.fallback(() => ({ text: sqlAnswer('SELECT count(*) AS orders FROM orders') }));
const dir = mkdtempSync(path.join(tmpdir(), 'cortado-bstorage-'));
t.teardown(async () => {
  await fake.close();
  await db.drop();
  rmSync(dir, { recursive: true, force: true });
});

async function start(t: Test, name: string, broker: Broker): Promise<{ url: string; metrics: string; output: () => string }> {
  const httpPort = await freePort();
  const metricsPort = await freePort();
  const obj = testConfigObject({
    natsUrl: broker.url,
    db: { host: db.host, port: db.port, name: db.name, user: db.user },
    llmUrl: fake.url,
    extra: { metrics: { enabled: true, listen: `127.0.0.1:${metricsPort}` } },
  });
  (obj.app as Record<string, unknown>).port = httpPort;
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(file, YAML.stringify(obj));
  const p = cortado(['--config', file], { logLevel: 'info' });
  t.teardown(async () => { p.child.kill('SIGTERM'); await p.exited; });
  const url = `http://127.0.0.1:${httpPort}`;
  await until('the edge to answer /health', async () => (await call(`${url}/health`)).body?.database === 'ok', 90_000);
  return { url, metrics: `http://127.0.0.1:${metricsPort}`, output: p.output };
}

t.test('max_file_store 256MB: the streams fit, questions are answered and audited, /health is ok', async (t) => {
  const broker = await startBroker({ maxFileStore: '256MB' });
  t.teardown(() => broker.stop());
  const c = await start(t, 'room256', broker);
  const res = await call(`${c.url}/api/query`, { body: { question: 'how many orders?' } });
  t.equal(res.status, 200, res.text);
  t.same(res.body.rows, [[40]]);
  const health = await call(`${c.url}/health`);
  t.equal(health.body.status, 'ok', JSON.stringify(health.body));
  t.equal(health.body.audit, 'ok');
  t.match(c.output(), /JetStream offers 256 MB of file storage.*max_file_store/, 'the start-up check says what was sized down and what to change');

  const nc = await connect({ servers: broker.url });
  t.teardown(() => nc.close());
  const jsm = await jetstreamManager(nc);
  const events = await jsm.streams.info('CORTADO_EVENTS');
  t.ok(events.config.max_bytes > 32 * 1024 * 1024 && events.config.max_bytes < 256 * 1024 * 1024, `the event stream reserves ${events.config.max_bytes} bytes`);
  await until('the question\'s events stored', async () => (await jsm.streams.info('CORTADO_EVENTS')).state.messages >= 3, 10_000);
});

t.test('max_file_store 32MB, too little for the event stream: refused, and /health (edge and process) says why', async (t) => {
  const broker = await startBroker({ maxFileStore: '32MB' });
  t.teardown(() => broker.stop());
  const c = await start(t, 'room32', broker);
  const res = await call(`${c.url}/api/query`, { body: { question: 'how many orders?' } });
  t.equal(res.status, 503, res.text);
  t.equal(res.body.error.code, 'AUDIT_UNAVAILABLE');
  const health = await call(`${c.url}/health`);
  t.not(health.body.status, 'ok', `the edge's /health is not ok: ${JSON.stringify(health.body)}`);
  t.equal(health.body.audit, 'unavailable');
  t.match(health.body.details.audit.error, /max_file_store/, 'and says what to change');
  const own = await call(`${c.metrics}/health`);
  t.equal(own.status, 200, 'the process runs: a restart would not help');
  t.equal(own.body.status, 'degraded', JSON.stringify(own.body));
  t.equal(own.body.audit, 'unavailable');
  t.match(c.output(), /too little file storage for the event stream.*max_file_store/, 'the start-up check says what to change');
});

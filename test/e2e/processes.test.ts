/**
 * Cortado as an operator runs it: the `cortado` command in child processes. NATS started
 * on demand, several processes sharing the work through the queue groups, and SIGTERM
 * draining without dropping an answer already under way.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import YAML from 'yaml';
import { ROOT } from '../../config/load.js';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { testConfigObject } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { cortado, until } from '../helpers/processes.js';
import { call } from '../helpers/stack.js';

const db = await createTestDb('proc');
await db.pool.query(GUARD_SCHEMA_SQL);
const fake = await startFakeLlm();
const dir = mkdtempSync(path.join(tmpdir(), 'cortado-proc-'));
t.teardown(async () => {
  await fake.close();
  await db.drop();
  rmSync(dir, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((r) => srv.close(r));
  return port;
}

async function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

function writeConfig(name: string, natsUrl: string, httpPort: number, extra: Record<string, unknown> = {}): string {
  const obj = testConfigObject({ natsUrl, db: { host: db.host, port: db.port, name: db.name, user: db.user }, llmUrl: fake.url, extra });
  (obj.app as Record<string, unknown>).port = httpPort;
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(file, YAML.stringify(obj));
  return file;
}

const healthy = (port: number) => async () => (await call(`http://127.0.0.1:${port}/health`)).body?.database === 'ok';

t.test('no NATS at bus.url: cortado starts nats-server itself, and stops it on SIGTERM', async (t) => {
  const natsPort = await freePort();
  const httpPort = await freePort();
  const file = writeConfig('autostart', `nats://127.0.0.1:${natsPort}`, httpPort, { bus: { autostart: true } });
  const p = cortado(['--config', file]);
  await until('health', healthy(httpPort));
  t.ok(await portOpen(natsPort), 'a nats-server listens on bus.url');
  fake.script({ text: sqlAnswer('SELECT count(*) AS orders FROM orders') });
  const res = await call(`http://127.0.0.1:${httpPort}/api/query`, { body: { question: 'how many orders?' } });
  t.equal(res.status, 200, res.text);
  t.same(res.body.rows, [[40]]);
  p.child.kill('SIGTERM');
  t.equal(await p.exited, 0, 'exit 0');
  await until('nats-server to stop', async () => !(await portOpen(natsPort)), 10_000);
  t.pass('the nats-server it started is gone');
  rmSync(path.join(ROOT, 'data', `nats-${natsPort}`), { recursive: true, force: true });
});

t.test('no NATS and no autostart: a message that says what to do', async (t) => {
  const file = writeConfig('nonats', `nats://127.0.0.1:${await freePort()}`, await freePort(), { bus: { autostart: false } });
  const p = cortado(['--config', file]);
  t.not(await p.exited, 0);
  t.match(p.output(), /cannot reach NATS/);
});

t.test('edge and actors in separate processes; two executors share the queries', async (t) => {
  const nats = await startNats();
  t.teardown(() => nats.stop());
  const httpPort = await freePort();
  const file = writeConfig('split', nats.url, httpPort);
  const ex1 = cortado(['--config', file, '--role', 'actors:executor']);
  const ex2 = cortado(['--config', file, '--role', 'actors:executor']);
  const rest = cortado(['--config', file, '--role', 'edge', '--role', 'actors:assistant,intent,sqlgen,catalog,llm,insights,masking,identity,settings']);
  await until('health', healthy(httpPort));
  await until('both executors', () => /executor ready/.test(ex1.output()) && /executor ready/.test(ex2.output()));

  fake.fallback(() => ({ text: sqlAnswer("SELECT current_setting('application_name') AS app") }));
  const seen = new Map<string, number>();
  await Promise.all(Array.from({ length: 24 }, async () => {
    const res = await call(`http://127.0.0.1:${httpPort}/api/query`, { body: { question: 'which process?' } });
    if (res.status !== 200) t.fail(res.text);
    const app = String(res.body.rows?.[0]?.[0]);
    seen.set(app, (seen.get(app) ?? 0) + 1);
  }));
  t.same([...seen.keys()].sort(), [`cortado-executor-${ex1.child.pid}`, `cortado-executor-${ex2.child.pid}`].sort(), `both served: ${JSON.stringify([...seen])}`);

  // one executor goes away: the other carries on alone
  ex1.child.kill('SIGTERM');
  t.equal(await ex1.exited, 0);
  const after = await call(`http://127.0.0.1:${httpPort}/api/query`, { body: { question: 'which process?' } });
  t.equal(after.status, 200);
  t.same(after.body.rows, [[`cortado-executor-${ex2.child.pid}`]]);

  // and with none left: 503 ACTOR_UNAVAILABLE
  ex2.child.kill('SIGTERM');
  t.equal(await ex2.exited, 0);
  const none = await call(`http://127.0.0.1:${httpPort}/api/query`, { body: { question: 'which process?' } });
  t.equal(none.status, 503, none.text);
  t.equal(none.body.error.code, 'ACTOR_UNAVAILABLE');
  rest.child.kill('SIGTERM');
  t.equal(await rest.exited, 0);
});

t.test('SIGTERM drains: the answer under way is delivered, new requests get 503, exit 0', async (t) => {
  const nats = await startNats();
  t.teardown(() => nats.stop());
  const httpPort = await freePort();
  const file = writeConfig('drain', nats.url, httpPort);
  const p = cortado(['--config', file]);
  await until('health', healthy(httpPort));
  fake.requests.length = 0;
  fake.script({ text: sqlAnswer('SELECT count(*) AS orders FROM orders'), delayMs: 1_500 });
  const inflight = call(`http://127.0.0.1:${httpPort}/api/query`, { body: { question: 'how many orders, slowly?' } })
    .catch((err: Error) => ({ status: -1, body: undefined, text: `${err.message}: ${String((err.cause as Error | undefined)?.message)}\n${p.output()}` }));
  await until('the model call to start', () => fake.requests.some((r) => r.last.includes('how many orders, slowly?')), 5_000);
  p.child.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 200));
  const late = await call(`http://127.0.0.1:${httpPort}/api/query`, { body: { question: 'another?' } }).catch(() => ({ status: 0, body: undefined, text: 'refused' }));
  t.ok(late.status === 503 || late.status === 0, `a new request is refused (${late.status})`);
  if (late.status === 503) t.equal(late.body.error.code, 'SHUTTING_DOWN');
  const res = await inflight;
  t.equal(res.status, 200, res.text);
  t.same(res.body.rows, [[40]], 'the in-flight answer arrived whole');
  t.equal(await p.exited, 0);
});

/**
 * No answer can end the process: a real `cortado` process whose database driver fails inside
 * its own socket callback (test/fixtures/driver-fault.mjs, loaded with `node --import`) logs
 * the failure with the request it belongs to, answers that request with its timeout, and
 * keeps answering the next questions; a rejection nobody handles is logged the same way.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import YAML from 'yaml';
import { ROOT } from '../../config/load.js';
import { testConfigObject } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { cortado } from '../helpers/processes.js';
import { call } from '../helpers/stack.js';

const db = await createTestDb('crash');
const nats = await startNats();
const fake = await startFakeLlm();
const dir = mkdtempSync(path.join(tmpdir(), 'cortado-crash-'));
t.teardown(async () => {
  await fake.close();
  await nats.stop();
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

const port = await freePort();
const obj = testConfigObject({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  // a short timeout: the question whose answer the driver lost ends at it (plus the backstop's second)
  extra: { app: { port, log_level: 'info' }, query: { timeout: 2, max_corrections: 0 } },
});
const file = path.join(dir, 'crash.yaml');
writeFileSync(file, YAML.stringify(obj));

const proc = cortado(['--config', file], { nodeArgs: ['--import', path.join(ROOT, 'test/fixtures/driver-fault.mjs')] });
const { child, exited } = proc;

const url = `http://127.0.0.1:${port}`;
const until = Date.now() + 60_000;
for (;;) {
  if (child.exitCode !== null) throw new Error(`cortado exited at start: ${proc.output()}`);
  if (await call(`${url}/health`).then((r) => r.body?.database === 'ok', () => false)) break;
  if (Date.now() > until) throw new Error(`cortado did not become healthy: ${proc.output()}`);
  await new Promise((r) => setTimeout(r, 200));
}

function logLines(): Array<Record<string, unknown>> {
  return proc.output().split('\n').flatMap((l) => {
    try {
      return [JSON.parse(l) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
}

/** The first log line whose message starts with `prefix`, waited for a little (the child's output comes through a pipe). */
async function logLine(prefix: string): Promise<Record<string, unknown> | undefined> {
  const end = Date.now() + 5_000;
  for (;;) {
    const line = logLines().find((l) => String(l.msg).startsWith(prefix));
    if (line || Date.now() > end) return line;
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function ask(sql: string): Promise<{ status: number; body: any; text: string }> {
  fake.script({ text: sqlAnswer(sql) });
  return call(`${url}/api/query`, { body: { question: 'what does the driver say?' } });
}

t.test('a throw inside the driver\'s socket callback: logged with its request, the process answers on', async (t) => {
  const lost = await ask("SELECT 'cortado-driver-fault' AS x");
  t.equal(lost.status, 504, `the lost answer ends at the timeout: ${lost.text}`);
  t.equal(lost.body?.error?.code, 'DB_TIMEOUT');
  t.equal(child.exitCode, null, 'the process is alive');
  const rid = String(lost.body?.error?.request_id ?? '');
  t.ok(rid, 'the error names its request');
  const contained = await logLine('an unexpected failure was contained');
  t.ok(contained, 'the failure is logged');
  t.equal(contained?.level, 'error', 'at error');
  t.match(JSON.stringify(contained), /driver fault: a socket handler threw/, 'with what failed');
  t.ok(JSON.stringify(contained).includes(rid), `with the request it belongs to (${rid})`);

  const next = await ask('SELECT 42 AS answer');
  t.equal(next.status, 200, next.text);
  t.same(next.body.rows, [[42]], 'the next question is answered');
});

t.test('a rejection nobody handles inside a driver callback: logged, the question answered', async (t) => {
  const res = await ask("SELECT 'cortado-driver-reject' AS x");
  t.equal(res.status, 200, res.text);
  t.same(res.body.rows, [['cortado-driver-reject']]);
  const logged = await logLine('a promise was rejected and nobody handled it');
  t.ok(logged, 'the rejection is logged');
  t.match(JSON.stringify(logged), /a promise nobody awaits rejected/);
  t.equal(child.exitCode, null, 'the process is alive');
});

t.test('and it still stops cleanly', async (t) => {
  child.kill('SIGTERM');
  t.equal(await exited, 0, 'exit 0 on SIGTERM');
});

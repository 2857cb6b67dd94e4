/**
 * bus.autostart belongs to the one-process demo (issue 31 item 3). A process that runs part of a
 * deployment (`--role actors`, `--role edge`) started while the real broker is down must not
 * start a broker of its own on that port: the real one could not start again ("address already
 * in use") and stopping that process would be a second outage. And a broker the demo started
 * ends with it, even when the demo is killed with SIGKILL (no chance to stop it in order).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import YAML from 'yaml';
import { ROOT } from '../../config/load.js';
import { freePort } from '../helpers/broker.js';
import { testConfigObject } from '../helpers/config.js';
import { cortado, until } from '../helpers/processes.js';
import net from 'node:net';

const dir = mkdtempSync(path.join(tmpdir(), 'cortado-autostart-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

function writeConfig(name: string, natsPort: number): string {
  // the default bus.autostart (true); no database is needed to see what happens to the broker
  const obj = testConfigObject({ natsUrl: `nats://127.0.0.1:${natsPort}`, extra: { bus: { autostart: true } } });
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(file, YAML.stringify(obj));
  return file;
}

/** the exit code, or 'still running' after `ms` (then killed) */
async function exitWithin(p: ReturnType<typeof cortado>, ms: number): Promise<number | null | 'still running'> {
  const timer = new Promise<'still running'>((r) => setTimeout(() => r('still running'), ms).unref());
  const got = await Promise.race([p.exited, timer]);
  if (got === 'still running') p.child.kill('SIGKILL');
  return got;
}

for (const role of [['--role', 'actors'], ['--role', 'actors:executor'], ['--role', 'edge']]) {
  t.test(`${role.join(' ')} with the broker down: no broker of its own, and a message that says so`, async (t) => {
    const natsPort = await freePort();
    t.teardown(() => rmSync(path.join(ROOT, 'data', `nats-${natsPort}`), { recursive: true, force: true }));
    const p = cortado(['--config', writeConfig(role.join('-').replace(/\W+/g, '_'), natsPort), ...role]);
    const code = await exitWithin(p, 20_000);
    t.not(code, 0, `it does not run (${code})`);
    t.not(code, 'still running', 'it exits by itself');
    t.notOk(await portOpen(natsPort), 'nothing listens on bus.url: the real broker can start there');
    t.match(p.output(), /cannot reach NATS/);
    t.match(p.output(), /does not start a broker of its own/, 'says why it did not start one');
    t.notMatch(p.output(), /started nats-server/);
  });
}

t.test('the demo (every role) starts one; killed with SIGKILL, its broker goes too', async (t) => {
  const natsPort = await freePort();
  t.teardown(() => rmSync(path.join(ROOT, 'data', `nats-${natsPort}`), { recursive: true, force: true }));
  const p = cortado(['--config', writeConfig('demo', natsPort), '--port', '0']);
  await until('the demo to start its broker', async () => /started nats-server/.test(p.output()) && (await portOpen(natsPort)), 30_000);
  p.child.kill('SIGKILL');
  await p.exited;
  await until('the broker to stop with it', async () => !(await portOpen(natsPort)), 15_000).then(
    () => t.pass('nothing listens on bus.url any more'),
    () => t.fail(`a nats-server still listens on ${natsPort} after its starter was killed`),
  );
});

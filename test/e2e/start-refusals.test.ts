/**
 * A start that cannot succeed says why, at once, naming the key to change (issue 31 item 4).
 * The port: with app.port taken by another program, `cortado` exited 1 only after every actor had
 * started (~20 s), with "cannot listen on 127.0.0.1:N" and no word of app.port.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import YAML from 'yaml';
import { testConfigObject } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { cortado } from '../helpers/processes.js';

const dir = mkdtempSync(path.join(tmpdir(), 'cortado-refusals-'));
const nats = await startNats();
t.teardown(async () => {
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
});

t.test('app.port in use: exit 2 before anything starts, naming app.port', async (t) => {
  const other = net.createServer();
  await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => other.close(() => r())));
  const taken = (other.address() as net.AddressInfo).port;
  const obj = testConfigObject({ natsUrl: nats.url });
  (obj.app as Record<string, unknown>).port = taken;
  const file = path.join(dir, 'taken.yaml');
  writeFileSync(file, YAML.stringify(obj));
  const p = cortado(['--config', file]);
  const code = await Promise.race([p.exited, new Promise<'running'>((r) => setTimeout(() => r('running'), 60_000).unref())]);
  t.equal(code, 2, 'exit 2, as for a bad configuration');
  t.match(p.output(), new RegExp(`app\\.port: 127\\.0\\.0\\.1:${taken} is in use`), 'names the key and the address');
  t.match(p.output(), /set app\.port to a free port/, 'and what to do');
  t.notMatch(p.output(), /actors started|ready"/, 'refused before any actor started');
});

/**
 * A test file whose set-up throws leaves no server behind (issue 26: three failed runs had left
 * six cortado processes, three nats-servers and a PostgreSQL running). The fixture starts a
 * nats-server, a broker and a cortado process through the helpers, then throws before any
 * teardown; once it has exited, none of the three runs.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';

// compiled beside this file when the tests run from .build/ (npm test), else through tsx
const compiled = fileURLToPath(new URL('../fixtures/failed-setup.js', import.meta.url));
const argv = existsSync(compiled) ? [compiled] : ['--import', 'tsx', fileURLToPath(new URL('../fixtures/failed-setup.ts', import.meta.url))];

/** the process runs (a zombie, ended and not yet reaped by whoever adopted it, does not) */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
};

t.test('a set-up that throws after starting servers leaves none of them running', async (t) => {
  const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr.on('data', (d: Buffer) => { err += d.toString(); });
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  t.not(code, 0, 'the file failed');
  t.match(out + err, /the set-up failed/, 'with its own error');
  const pids = JSON.parse(out.split('\n').find((l) => l.startsWith('{')) ?? '{}') as Record<string, number | undefined>;
  t.same(Object.keys(pids).sort(), ['broker', 'cortado', 'nats'], `it had started three servers (${out.trim()})`);
  // a SIGKILLed child is gone at once; give a loaded machine a moment to reap it
  const end = Date.now() + 5_000;
  while (Object.values(pids).some((p) => p && alive(p)) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  for (const [what, pid] of Object.entries(pids)) {
    t.ok(pid, `${what}: a PID`);
    t.notOk(pid && alive(pid), `${what} (PID ${pid}) no longer runs`);
  }
  // on failure, do not leave them to the next run either
  t.teardown(() => { for (const pid of Object.values(pids)) if (pid && alive(pid)) process.kill(pid, 'SIGKILL'); });
});

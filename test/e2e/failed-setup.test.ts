/**
 * A test file whose set-up throws leaves no server behind (issue 26: three failed runs had left
 * six cortado processes, three nats-servers and a PostgreSQL running). The fixture starts a
 * nats-server, a broker and a cortado process through the helpers, then throws before any
 * teardown; once it has exited, none of the three runs. That holds for every process a test
 * starts only if each is handed to endWithProcess (test/helpers/leftovers.ts): a rule below.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { endWithProcess } from '../helpers/leftovers.js';

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
  const child = endWithProcess(spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] }));
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

/** Where `text` starts a process (spawn, fork) without handing it to endWithProcess at once, as "file:line". */
function unguardedStarts(file: string, text: string): string[] {
  // comments blanked, line numbers kept
  const code = text.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' '));
  const found: string[] = [];
  code.split('\n').forEach((line, i) => {
    const l = line.replace(/(^|[^:])\/\/.*$/, '$1');
    for (const m of l.matchAll(/\b(?:spawn|fork)\(/g)) if (!l.slice(0, m.index).endsWith('endWithProcess(')) found.push(`${file}:${i + 1}`);
  });
  return found;
}

t.test('every process a test starts is handed to endWithProcess', async (t) => {
  // the samples are put together, or this file would break the rule it states
  const call = (name: string): string => `${name}('x', [])`;
  t.same(unguardedStarts('a.ts', `const c = ${call('spawn')};\nconst d = ${call('fork')};`), ['a.ts:1', 'a.ts:2'], 'the rule fails on a bare spawn and fork');
  t.same(unguardedStarts('b.ts', `const c = endWithProcess(${call('spawn')});\n// ${call('spawn')}\n/* ${call('fork')} */\nimport { spawn } from 'node:child_process';`), [], 'and passes a handed-over one, comments and imports');
  const root = fileURLToPath(new URL('..', import.meta.url));
  const walk = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    return e.isDirectory() ? walk(full) : /\.(?:[cm]?ts|mjs)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [full] : [];
  });
  const files = walk(root);
  t.ok(files.length > 150, `${files.length} files of test/ read`);
  t.same(files.flatMap((f) => unguardedStarts(path.relative(root, f), readFileSync(f, 'utf8'))), [], 'none starts a process it could leave behind');
});

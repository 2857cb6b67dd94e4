// Runs compiled test files (scripts/test.sh hands them over), each in a plain `node` process, a few
// at a time, and prints what tap's runner prints: each file's TAP as a subtest of one stream, then
// the counts of every file together (`# { total: …, pass: … }`).
//
// Why not tap's runner: it starts each file with two module hooks of its own (@tapjs/mock, for
// t.mockImport, which no test uses, and @tapjs/processinfo, for coverage, which is off), and every
// module a file loads then goes through them: 0.25 s more CPU for a file of plain logic, 1 to 2 s
// for a file that starts a stack (issue 26). A tap test file runs on its own and says its counts
// itself; this runner only starts the files, bounds their time and adds up.
//
//   node scripts/run-tests.mjs [--jobs N] [--timeout SECONDS] [--node-arg ARG]... FILE...
//
// The time limit is each file's (tap's default of this project, 300 s): the file itself stops at
// it (its root test's timeout, TAP_TIMEOUT); a file that sets a longer one (t.setTimeout at the top)
// says so over the IPC channel, as it does to tap's runner. One that has not stopped 10 s after its
// limit gets SIGALRM (tap's signal for "timed out": it prints what was still running), then SIGKILL.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
let jobs = 2;
let timeoutS = 300;
const nodeArgs = [];
const files = [];
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  const value = () => {
    const v = a.includes('=') ? a.slice(a.indexOf('=') + 1) : args[++i];
    if (v === undefined) throw new Error(`${a} needs a value`);
    return v;
  };
  if (a.startsWith('--jobs')) jobs = Math.max(1, Number(value()) || 1);
  else if (a.startsWith('--timeout')) timeoutS = Number(value()) || 300;
  else if (a.startsWith('--node-arg')) nodeArgs.push(value());
  else files.push(a);
}

const started = Date.now();
const total = { total: 0, pass: 0, fail: 0, skip: 0, todo: 0 };
let point = 0;
let failedFiles = 0;
const indent = (text) => text.split('\n').map((l) => (l ? `    ${l}` : l)).join('\n');

function runFile(file) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const child = spawn(process.execPath, [...nodeArgs, file], {
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      env: { ...process.env, TAP_TIMEOUT: String(timeoutS) },
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => process.stderr.write(d));
    let limitMs = timeoutS * 1000;
    let killed = '';
    let alarm;
    let last;
    const arm = () => {
      clearTimeout(alarm);
      clearTimeout(last);
      alarm = setTimeout(() => {
        killed = `it did not stop within 10 s of its time limit (${Math.round(limitMs / 1000)} s)`;
        child.kill('SIGALRM');
        last = setTimeout(() => child.kill('SIGKILL'), 10_000);
      }, Math.max(0, t0 + limitMs + 10_000 - Date.now()));
    };
    arm();
    // a file that sets its own time limit tells its runner (tap's handshake: { setTimeout: ms })
    child.on('message', (msg) => {
      if (msg && typeof msg === 'object' && typeof msg.setTimeout === 'number' && msg.setTimeout > 0) {
        limitMs = msg.setTimeout + (Date.now() - t0);
        arm();
      }
    });
    child.on('close', (code, signal) => {
      clearTimeout(alarm);
      clearTimeout(last);
      resolve({ file, out, code, signal, killed, ms: Date.now() - t0 });
    });
  });
}

function report({ file, out, code, signal, killed, ms }) {
  // the file's own counts: the last `# { total: … }` at the start of a line of its output
  const lines = out.replace(/\n$/, '').split('\n');
  let counts;
  for (const line of lines) {
    const m = line.match(/^# \{ (total: .*) \}$/);
    if (m) counts = Object.fromEntries(m[1].split(', ').map((kv) => kv.split(': ')).map(([k, v]) => [k, Number(v)]));
  }
  const body = lines.filter((l) => !/^TAP version \d+$/.test(l)).join('\n');
  // what its own counts do not say: it crashed, was killed, or exited non-zero with nothing failed
  const why = [];
  if (!counts) why.push('it ended without its counts');
  if (code !== 0 && !(counts?.fail > 0)) why.push(signal ? `it was ended by ${signal}` : `it exited ${code}`);
  if (killed) why.push(killed);
  for (const k of Object.keys(total)) total[k] += counts?.[k] ?? 0;
  const ok = why.length === 0 && (counts?.fail ?? 0) === 0;
  if (!ok && why.length) total.fail += 1; // the file itself, as tap's runner counts one that crashed
  if (!ok) failedFiles += 1;
  point += 1;
  const lines2 = [`# Subtest: ${file}`, indent(body)];
  lines2.push(`${ok ? 'ok' : 'not ok'} ${point} - ${file} # time=${ms}ms`);
  if (why.length) lines2.push('  ---', `  failure: ${JSON.stringify(why.join('; '))}`, '  ...');
  process.stdout.write(lines2.join('\n') + '\n\n');
}

/**
 * A file whose source (the .ts beside its compiled .js, or the file itself) says, near its top,
 * `// test-runner: alone` measures time against a bound (a timing side channel, a parser's time
 * limit, a cancel that must land within a second): it runs after the others, with nothing beside
 * it, so a neighbour's load cannot decide its verdict.
 */
function alone(file) {
  for (const source of [file.replace(/\.js$/, '.ts'), file]) {
    try {
      return /^\/\/ test-runner: alone\b/m.test(readFileSync(source, 'utf8').slice(0, 4000));
    } catch { /* not there: the next candidate */ }
  }
  return false;
}

process.stdout.write('TAP version 14\n');
const serial = files.filter(alone);
const queue = files.filter((f) => !serial.includes(f));
await Promise.all(Array.from({ length: Math.min(jobs, queue.length) }, async () => {
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) report(await runFile(file));
}));
for (const file of serial) report(await runFile(file));
const shown = Object.entries(total).filter(([k, v]) => k === 'total' || k === 'pass' || v > 0).map(([k, v]) => `${k}: ${v}`);
process.stdout.write(`1..${point}\n# { ${shown.join(', ')} }\n# time=${Date.now() - started}ms\n`);
process.exitCode = failedFiles > 0 || total.fail > 0 ? 1 : 0;

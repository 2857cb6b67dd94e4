/**
 * `npm run bench`: the full question pipeline over HTTP against the composed floor, in one run.
 *
 *   (a) pipeline: POST /api/query → assistant → catalog (cached) → sqlgen → llm (through
 *       @anthropic-ai/sdk to a scripted Anthropic server in its own process, answering at once)
 *       → executor (guard, read-only run) → masking → insights → reply; events to JetStream,
 *       read by the audit actor
 *   (b) floor:    POST → one NATS request/reply to the same executor → the same query on the
 *       same pool → reply
 *   (c) mfloor, the with-model floor: the floor plus one model call through the same SDK and
 *       HTTP client to the same scripted model (HTTP → model call → one NATS request → query →
 *       reply): the least any pipeline that asks a model once can cost
 *
 * Each at 1 and 32 concurrent keep-alive clients, in interleaved passes; prints req/s, p50,
 * p90, p99, CPU per request of every process, and the ratios the goal is stated in (p50 added
 * ≤ 1 ms, throughput ≥ 50 % of the floor). Needs nats-server on PATH and a PostgreSQL
 * (DATABASE_URL, else 127.0.0.1:5432).
 *   BENCH_SECONDS=10 BENCH_WARMUP=2 BENCH_PASSES=3 npm run bench
 * Other knobs: BENCH_CONNS ("1,32"), BENCH_PATHS ("floor,mfloor,pipeline"), BENCH_TOPOLOGIES (how
 * cortado runs: ";" between shapes, "|" between the processes of one shape, roles as on the
 * command line; default "all;edge|actors"), BENCH_ROLES (one process with these roles),
 * BENCH_CPU_PROF=<dir> (CPU profiles of the cortado processes), BENCH_HTTP_SERVERS (the pipeline
 * edge's app.http_server, comma-separated, each measured in full: "node,uws"; the floors run on
 * the same server). Unset, the edge runs node:http (the default), measured in full, and where
 * uWebSockets.js loads (Node 20) the opt-in uws edge too: the pipeline alone, one process, 32
 * clients (about 45 s more).
 *
 * Then the schema-linking section (bench/linking/bench.ts): recall, complete questions, noise
 * and prompt tokens at 100, 1,000 and 10,000 generated tables, and the introspection of a real
 * 10,000-table PostgreSQL database. Then the export section (bench/export.ts): csv and xlsx
 * writers, and the edge's event-loop delay during a 100,000-row export. Then the latency section
 * (bench/latency.ts): 500 and 2,000 questions in flight with the model answering after 1.5 s,
 * and 1,000 MCP SSE sessions held. Then the browser section (bench/ui.ts): the widget script's
 * gzipped size and Chart.js's, and the time from a 1,000-row reply's arrival to its table and chart
 * drawn, in Chromium on /demo. Then the masking section (bench/masking.ts): lineage per question on
 * the accepted queries of the four dialects, and masking 1,000 rows with and without JSON
 * documents. Then the parsers section (bench/parsers.ts): µs per guard call and per lineage parse in
 * process and through their worker threads, and the time to replace a worker whose parser broke.
 * BENCH_ONLY=pipeline, linking, export, latency, ui, masking or parsers runs one part.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { uwsAvailable } from '../edge/http/server.js';
import YAML from 'yaml';
import { ROOT } from '../config/load.js';
import { testConfigObject } from '../test/helpers/config.js';
import { startNats } from '../test/helpers/nats.js';
import { createTestDb } from '../test/helpers/pg.js';
import { perRequest, snapshot, type Snapshot } from './cpu.js';
import { linkingSection } from './linking/bench.js';
import { exportSection } from './export.js';
import { latencySection } from './latency.js';
import { uiSection } from './ui.js';
import { maskingSection } from './masking.js';
import { parsersSection } from './parsers.js';
import { load, type LoadResult } from './load.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
/** BENCH_PASSES: interleaved passes over every cell (medians are reported) */
const PASSES = Math.max(1, Number(process.env.BENCH_PASSES ?? 3));
const SQL = 'SELECT id, name, category, price FROM items WHERE id BETWEEN 500 AND 519 ORDER BY id';

const children: ChildProcess[] = [];
const cleanups: Array<() => Promise<void>> = [];

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((r) => srv.close(r));
  return port;
}

/** Start a tsx script and wait for its first JSON line on stdout. */
function child<T>(args: string[], env: Record<string, string> = {}): Promise<T & { pid: number | undefined }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(proc);
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: proc.stdout! });
    lines.once('line', (line) => resolve({ ...(JSON.parse(line) as T), pid: proc.pid }));
    proc.once('exit', (code) => reject(new Error(`${args[0]} exited with ${code}`)));
  });
}

async function waitHealthy(url: string): Promise<void> {
  const end = Date.now() + 60_000;
  while (Date.now() < end) {
    const ok = await fetch(`${url}/health`).then((r) => r.json() as Promise<{ database?: string }>).then((b) => b.database === 'ok', () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('cortado did not become healthy');
}

function row(name: string, c: number, r: LoadResult): string {
  const f = (n: number) => n.toFixed(2).padStart(8);
  return `| ${name.padEnd(8)} | ${String(c).padStart(5)} | ${r.rps.toFixed(0).padStart(7)} | ${f(r.p50)} | ${f(r.p90)} | ${f(r.p99)} | ${String(r.errors).padStart(6)} |`;
}

/** BENCH_CONNS="1,32": the client counts measured */
const CONNS = (process.env.BENCH_CONNS ?? '1,32').split(',').map(Number).filter((n) => Number.isInteger(n) && n > 0);
/** BENCH_PATHS="pipeline": measure only these paths (profiling one of them) */
const PATHS = (process.env.BENCH_PATHS ?? 'floor,mfloor,pipeline').split(',');
const NAMES = ['floor', 'mfloor', 'pipeline'] as const;
type PathName = (typeof NAMES)[number];

async function main(): Promise<void> {
  const nats = await startNats();
  cleanups.push(() => nats.stop());
  const db = await createTestDb('bench');
  cleanups.push(() => db.drop());
  await db.pool.query(`CREATE TABLE items (id integer PRIMARY KEY, name text NOT NULL, category text NOT NULL, price numeric(8,2) NOT NULL);
    INSERT INTO items SELECT i, 'item ' || i, (ARRAY['coffee','tea','pastry','beans'])[1 + i % 4], round((1 + i % 17) * 1.25, 2) FROM generate_series(1, 1000) AS i;
    ANALYZE items;`);

  const fake = await child<{ url: string }>(['bench/fake-llm.ts', SQL]);
  const dir = mkdtempSync(path.join(tmpdir(), 'cortado-bench-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const httpPort = await freePort();
  const cfg = testConfigObject({
    natsUrl: nats.url,
    db: { host: db.host, port: db.port, name: db.name, user: db.user },
    llmUrl: fake.url,
    extra: {
      // the operator's default level (one access line per request), to /dev/null; BENCH_LOG_LEVEL changes it
      app: { port: httpPort, log_level: process.env.BENCH_LOG_LEVEL ?? 'info' },
      database: { postgresql: { min_connections: 4, max_connections: 10 } },
      insights: { enabled: true, mode: 'statistical_only' },
    },
  });
  const file = path.join(dir, 'bench.yaml');
  writeFileSync(file, YAML.stringify(cfg));

  // BENCH_CPU_PROF=<dir>: write a CPU profile of the cortado process there (open it in Chrome DevTools)
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  // BENCH_TOPOLOGIES: how the pipeline's cortado runs, ';' between the shapes measured, '|'
  // between the processes of one shape, roles as on the command line. The default measures
  // the one process of `npm start`, then an edge process beside an actors process (the shape
  // of the floor, whose edge is its own process too). BENCH_ROLES="edge actors:a,b" alone
  // runs one process with only those roles (to see what an actor costs).
  const topologies = (process.env.BENCH_TOPOLOGIES ?? process.env.BENCH_ROLES ?? 'all;edge|actors').split(';').map((t) => t.trim()).filter(Boolean);
  // BENCH_HTTP_SERVERS: the pipeline edge's app.http_server, one measurement each ("node,uws"
  // reports both; uws is skipped on a Node it has no native build for: 22, 24). The floors run
  // on the same server as the pipeline they are compared with.
  const servers = (process.env.BENCH_HTTP_SERVERS ?? 'node').split(',').map((s) => s.trim()).filter(Boolean);
  // unset where uWebSockets.js loads: the opt-in uws edge as well, in one short cell (the
  // pipeline at 32 clients in the first shape), so both servers are reported
  const twin = process.env.BENCH_HTTP_SERVERS === undefined && uwsAvailable();
  if (twin) servers.push('uws');
  for (const server of servers) {
    if (server === 'uws' && !uwsAvailable()) {
      console.log(`\n(uWebSockets.js has no native build for Node ${process.version}: the uws edge is not measured)`);
      continue;
    }
    const kind = server === 'uws' ? 'uws' : 'node';
    const serverFile = path.join(dir, `bench-${server}.yaml`);
    writeFileSync(serverFile, YAML.stringify({ ...cfg, app: { ...(cfg.app as object), http_server: server } }));
    console.log(`\npipeline edge: app.http_server ${server}${server === 'auto' ? ' (node)' : ''}`);
    if (twin && server === 'uws') await measure(topologies[0]!, { file: serverFile, kind, httpPort, prof, nats, fake }, { conns: [32], paths: ['pipeline'] });
    else for (const topology of topologies) await measure(topology, { file: serverFile, kind, httpPort, prof, nats, fake });
  }
}

async function measure(
  topology: string,
  env: { file: string; kind: 'node' | 'uws'; httpPort: number; prof: string[]; nats: { url: string; proc: ChildProcess }; fake: { pid: number | undefined; url: string } },
  only: { conns?: number[]; paths?: PathName[] } = {},
): Promise<void> {
  const { file, kind, httpPort, prof, nats, fake } = env;
  const conns = only.conns ?? CONNS;
  const paths: readonly string[] = only.paths ?? PATHS;
  const groups = topology.split('|').map((g) => g.split(/\s+/).filter((r) => r && r !== 'all').flatMap((r) => ['--role', r]));
  const mine: ChildProcess[] = [];
  const cortados = groups.map((roles) => {
    const proc = spawn(process.execPath, [...prof, path.join(ROOT, 'bin/cortado.js'), '--config', file, ...roles], { cwd: ROOT, env: { ...process.env, CORTADO_LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info' }, stdio: ['ignore', 'ignore', 'inherit'] });
    children.push(proc);
    mine.push(proc);
    return proc;
  });
  const pipelineUrl = `http://127.0.0.1:${httpPort}`;
  await waitHealthy(pipelineUrl);
  const floor = await child<{ port: number; kind: string }>(['bench/floor.ts', nats.url, '0', SQL], { BENCH_FLOOR_SERVER: kind });
  mine.push(children.at(-1)!);
  const floorUrl = `http://127.0.0.1:${floor.port}`;
  const mfloor = await child<{ port: number; kind: string }>(['bench/floor.ts', nats.url, '0', SQL, fake.url], { BENCH_FLOOR_SERVER: kind });
  mine.push(children.at(-1)!);
  const mfloorUrl = `http://127.0.0.1:${mfloor.port}`;

  // both paths return the same 20 rows before anything is measured
  const check = (text: string) => (JSON.parse(text) as { rows?: unknown[] }).rows?.length === 20;
  for (const url of [`${pipelineUrl}/api/query`, floorUrl, mfloorUrl]) {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ question: 'the twenty items from 500?' }) });
    const text = await res.text();
    if (res.status !== 200 || !check(text)) throw new Error(`${url} answered ${res.status}: ${text.slice(0, 300)}`);
  }

  // Passes interleave the cells (floor then pipeline at each client count, again and again),
  // so a drift of the machine's speed during the run falls on both paths alike; every figure
  // printed is the median over the passes, and each pass's ratio compares cells measured
  // side by side.
  type Cell = { load: LoadResult; cpu: Record<string, number> };
  const cells: Record<PathName, Record<number, Cell[]>> = { floor: {}, mfloor: {}, pipeline: {} };
  const pids: Record<string, Array<number | undefined>> = { cortado: cortados.map((p) => p.pid), floor: [floor.pid, mfloor.pid], nats: [nats.proc.pid], model: [fake.pid], loader: [process.pid] };
  if (cortados.length > 1) cortados.forEach((p, i) => { pids[`cortado${i + 1}`] = [p.pid]; });
  for (let pass = 0; pass < PASSES; pass++) {
    for (const c of conns) {
      for (const [name, url] of [['floor', floorUrl], ['mfloor', mfloorUrl], ['pipeline', `${pipelineUrl}/api/query`]] as const) {
        if (!paths.includes(name)) continue;
        let before: Snapshot = {};
        let after: Snapshot = {};
        const r = await load({
          url, body: { question: 'the twenty items from 500?' }, connections: c, seconds: SECONDS, warmupSeconds: WARMUP, check: (_s, b) => check(b),
          onMeasure: (phase) => { if (phase === 'start') before = snapshot(pids); else after = snapshot(pids); },
        });
        (cells[name][c] ??= []).push({ load: r, cpu: perRequest(before, after, r.requests) });
      }
    }
  }

  // where the pipeline's time goes, one question at a time (the reply's own timing_ms), warm:
  // after the load cells, so the JIT has settled
  const steps = new Map<string, number[]>();
  for (let i = 0; i < 200; i++) {
    const res = await fetch(`${pipelineUrl}/api/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ question: 'the twenty items from 500?' }) });
    const body = (await res.json()) as { timing_ms: Record<string, number> };
    if (i < 50) continue;
    for (const [k, v] of Object.entries(body.timing_ms)) steps.set(k, [...(steps.get(k) ?? []), v]);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  const breakdown = [...steps].map(([k, xs]) => `${k} ${median(xs).toFixed(2)}`).join(', ');
  const med = (list: Cell[], pick: (x: Cell) => number) => median(list.map(pick));
  const summary = (list: Cell[]): LoadResult => ({
    requests: list.reduce((n, x) => n + x.load.requests, 0),
    errors: list.reduce((n, x) => n + x.load.errors, 0),
    seconds: list.reduce((n, x) => n + x.load.seconds, 0),
    rps: med(list, (x) => x.load.rps),
    p50: med(list, (x) => x.load.p50),
    p90: med(list, (x) => x.load.p90),
    p99: med(list, (x) => x.load.p99),
  });

  const shape = groups.length === 1 ? `one process (${groups[0]!.filter((x) => x !== '--role').join(' + ') || 'all roles'})` : `${groups.length} processes: ${groups.map((g) => g.filter((x) => x !== '--role').join(' + ') || 'all roles').join(' | ')}`;
  console.log(`\nCortado benchmark — cortado as ${shape}; ${PASSES} interleaved passes of ${SECONDS} s per cell (after ${WARMUP} s warm-up), medians; edge server: ${floor.kind}; query: 20 rows by primary key\n`);
  console.log('| path     | conns |   req/s |  p50 ms |  p90 ms |  p99 ms | errors |');
  console.log('| -------- | ----: | ------: | ------: | ------: | ------: | -----: |');
  for (const c of conns) {
    for (const name of NAMES) if (cells[name][c]) console.log(row(name, c, summary(cells[name][c]!)));
  }
  console.log('\nCPU ms per request, and busy cores ("machine": every process on the box, foreign load included)\n');
  const parts = ['cortado', ...(cortados.length > 1 ? cortados.map((_p, i) => `cortado${i + 1}`) : []), 'floor', 'nats', 'model', 'postgres', 'loader', 'machine'];
  console.log(`| path     | conns |      | ${parts.map((p) => p.padStart(8)).join(' | ')} |`);
  console.log(`| -------- | ----: | ---- | ${parts.map(() => '-------:').join(' | ')} |`);
  for (const c of conns) {
    for (const name of NAMES) {
      const list = cells[name][c];
      if (!list) continue;
      const shown = (p: string, v: number) => (name === 'pipeline' && p === 'floor') || (name !== 'pipeline' && p.startsWith('cortado') && p !== 'cortado') ? '' : v.toFixed(3);
      console.log(`| ${name.padEnd(8)} | ${String(c).padStart(5)} | ms   | ${parts.map((p) => shown(p, med(list, (x) => x.cpu[p] ?? NaN)).padStart(8)).join(' | ')} |`);
      console.log(`| ${name.padEnd(8)} | ${String(c).padStart(5)} | busy | ${parts.map((p) => shown(p, med(list, (x) => ((x.cpu[p] ?? NaN) * x.load.rps) / 1000)).padStart(8)).join(' | ')} |`);
    }
  }
  console.log(`\npipeline steps at 1 client, median ms (inside the assistant): ${breakdown}`);
  console.log('');
  for (const c of conns) {
    const p = cells.pipeline[c];
    if (!p) continue;
    for (const [floorName, label, goal] of [['floor', 'the floor', 0.5], ['mfloor', 'the with-model floor', 0.7]] as const) {
      const f = cells[floorName][c];
      if (!f) continue;
      const added = p.map((x, i) => x.load.p50 - f[i]!.load.p50);
      const share = p.map((x, i) => x.load.rps / f[i]!.load.rps);
      const a = median(added);
      const sh = median(share);
      const p50Goal = floorName === 'floor' ? `; goal ≤ 1 ms: ${a <= 1 ? 'met' : 'not met'}` : '';
      console.log(`c=${c}: against ${label}, the pipeline adds ${a.toFixed(2)} ms at p50 (passes: ${added.map((x) => x.toFixed(2)).join(', ')}${p50Goal}); keeps ${(sh * 100).toFixed(0)} % of its throughput (passes: ${share.map((x) => (x * 100).toFixed(0)).join(', ')}; goal ≥ ${goal * 100} %: ${sh >= goal ? 'met' : 'not met'})`);
    }
    const cpu = median(p.map((x) => x.cpu.cortado ?? NaN));
    console.log(`c=${c}: cortado CPU per question ${cpu.toFixed(3)} ms (goal ≤ 0.6 ms at the default log level: ${cpu <= 0.6 ? 'met' : 'not met'})`);
  }
  // this shape's processes go before the next shape starts
  for (const p of mine) if (p.exitCode === null) p.kill('SIGTERM');
  await Promise.all(mine.map((p) => (p.exitCode === null ? new Promise((r) => p.once('exit', r)) : undefined)));
}

try {
  if (!process.env.BENCH_ONLY || process.env.BENCH_ONLY === 'pipeline') await main();
  if (!process.env.BENCH_ONLY || process.env.BENCH_ONLY === 'linking') await linkingSection();
  if (!process.env.BENCH_ONLY || process.env.BENCH_ONLY === 'export') await exportSection();
  if (!process.env.BENCH_ONLY || process.env.BENCH_ONLY === 'latency') await latencySection();
  if (!process.env.BENCH_ONLY || process.env.BENCH_ONLY === 'ui') await uiSection();
  if (!process.env.BENCH_ONLY || process.env.BENCH_ONLY === 'masking') await maskingSection();
  if (!process.env.BENCH_ONLY || process.env.BENCH_ONLY === 'parsers') await parsersSection();
} finally {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  for (const fn of cleanups.reverse()) await fn().catch(() => undefined);
}

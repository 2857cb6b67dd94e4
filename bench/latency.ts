/**
 * Load at a real model's latency (`BENCH_ONLY=latency npm run bench`): one cortado process
 * (all roles, the default log level), the scripted model in its own process answering every call
 * after BENCH_MODEL_DELAY_MS (1,500 by default), and N clients each asking a question, waiting
 * for the answer and asking again (N questions in flight all the time), for BENCH_LATENCY_SECONDS
 * per level. Per level: questions answered and failed, req/s, p50 / p95 / max, p50 above the
 * model's delay, the RSS cortado grew by per question in flight (peak over idle), the heap it
 * holds per question in flight (after a full collection, near the end of the level, against the
 * same with every client connected and nothing in flight), its longest event-loop stall and p99
 * (monitorEventLoopDelay, bench/loop-probe.mjs) beside the longest part of a stall it spent on
 * its own CPU (a delay on a shared machine may be other processes' turn), the same for the
 * warm-up burst (every client's first question at once), the slowest /health meanwhile, and its
 * log lines per question. Then BENCH_SSE_SESSIONS MCP SSE sessions held open at once: KB of RSS
 * each and /health latency while they are held.
 * Knobs: BENCH_MODEL_DELAY_MS (1500), BENCH_LATENCY_LEVELS ("500,2000"), BENCH_LATENCY_SECONDS
 * (10), BENCH_SSE_SESSIONS (1000; 0 skips), BENCH_CPU_PROF=<dir> (a CPU profile of cortado).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import YAML from 'yaml';
import { generateFernetKey } from '../actors/lib/crypto/fernet.js';
import { ROOT } from '../config/load.js';
import { Bus } from '../runtime/bus.js';
import { createLogger } from '../runtime/log.js';
import { testConfigObject } from '../test/helpers/config.js';
import { issueToken, openRawSse, type RawSse } from '../test/helpers/mcp.js';
import { startNats } from '../test/helpers/nats.js';
import { createTestDb } from '../test/helpers/pg.js';

const DELAY_MS = Number(process.env.BENCH_MODEL_DELAY_MS ?? 1500);
const LEVELS = (process.env.BENCH_LATENCY_LEVELS ?? '500,2000').split(',').map(Number).filter((n) => Number.isInteger(n) && n > 0);
const SECONDS = Number(process.env.BENCH_LATENCY_SECONDS ?? 10);
const SSE_SESSIONS = Number(process.env.BENCH_SSE_SESSIONS ?? 1000);
const SQL = 'SELECT id, name, category, price FROM items WHERE id BETWEEN 500 AND 519 ORDER BY id';

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((r) => srv.close(r));
  return port;
}

function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

const pct = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : NaN);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function healthMs(url: string): Promise<number> {
  const t0 = performance.now();
  await fetch(`${url}/health`).then((r) => r.arrayBuffer()).catch(() => undefined);
  return performance.now() - t0;
}

export async function latencySection(): Promise<void> {
  const children: ChildProcess[] = [];
  const nats = await startNats();
  const db = await createTestDb('benchlat');
  const dir = mkdtempSync(path.join(tmpdir(), 'cortado-benchlat-'));
  let bus: Bus | undefined;
  try {
    await db.pool.query(`CREATE TABLE items (id integer PRIMARY KEY, name text NOT NULL, category text NOT NULL, price numeric(8,2) NOT NULL);
      INSERT INTO items SELECT i, 'item ' || i, (ARRAY['coffee','tea','pastry','beans'])[1 + i % 4], round((1 + i % 17) * 1.25, 2) FROM generate_series(1, 1000) AS i;`);
    const fakeProc = spawn(process.execPath, ['--import', 'tsx', 'bench/fake-llm.ts', SQL], { cwd: ROOT, env: { ...process.env, BENCH_MODEL_DELAY_MS: String(DELAY_MS) }, stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(fakeProc);
    const fake = await new Promise<{ url: string }>((resolve, reject) => {
      createInterface({ input: fakeProc.stdout! }).once('line', (l) => resolve(JSON.parse(l) as { url: string }));
      fakeProc.once('exit', (c) => reject(new Error(`the scripted model exited with ${c}`)));
    });
    const port = await freePort();
    const cfg = testConfigObject({
      natsUrl: nats.url,
      db: { host: db.host, port: db.port, name: db.name, user: db.user },
      llmUrl: fake.url,
      extra: {
        // as an operator runs it: the default log level, written to a pipe we count
        app: { port, log_level: 'info' },
        llm: { anthropic: { timeout: 60, max_retries: 2 } },
        database: { postgresql: { min_connections: 4, max_connections: 10 } },
        config_db: { encryption_key: generateFernetKey() },
        insights: { enabled: true, mode: 'statistical_only' },
      },
    });
    const file = path.join(dir, 'latency.yaml');
    writeFileSync(file, YAML.stringify(cfg));
    const loopFile = path.join(dir, 'loop.json');
    const heapFile = path.join(dir, 'heap.json');
    const env: NodeJS.ProcessEnv = { ...process.env, BENCH_LOOP_FILE: loopFile, BENCH_HEAP_FILE: heapFile };
    delete env.CORTADO_LOG_LEVEL;
    // BENCH_CPU_PROF=<dir>: a CPU profile of the cortado process (Chrome DevTools); --expose-gc lets
    // the probe measure the heap after a full collection (BENCH_HEAP_FILE)
    const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
    const proc = spawn(process.execPath, [...prof, '--expose-gc', '--import', path.join(ROOT, 'bench/loop-probe.mjs'), path.join(ROOT, 'bin/cortado.js'), '--config', file], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(proc);
    let lines = 0;
    proc.stdout!.on('data', (d: Buffer) => { for (const b of d) if (b === 10) lines++; });
    const url = `http://127.0.0.1:${port}`;
    const end = Date.now() + 60_000;
    for (;;) {
      const ok = await fetch(`${url}/health`).then((r) => r.json() as Promise<{ database?: string }>).then((b) => b.database === 'ok', () => false);
      if (ok) break;
      if (Date.now() > end || proc.exitCode !== null) throw new Error('cortado did not become healthy');
      await sleep(200);
    }
    const loop = async (): Promise<{ max_ms: number; p99_ms: number; own_max_ms: number } | undefined> => {
      rmSync(loopFile, { force: true });
      proc.kill('SIGUSR2');
      for (let i = 0; i < 50; i++) {
        try {
          return JSON.parse(readFileSync(loopFile, 'utf8')) as { max_ms: number; p99_ms: number; own_max_ms: number };
        } catch { await sleep(20); }
      }
      return undefined;
    };
    /** bytes of heap (and external memory) held after a full collection in cortado */
    const heap = async (): Promise<number> => {
      rmSync(heapFile, { force: true });
      proc.kill('SIGWINCH');
      for (let i = 0; i < 100; i++) {
        try {
          return (JSON.parse(readFileSync(heapFile, 'utf8')) as { heap_bytes: number }).heap_bytes;
        } catch { await sleep(20); }
      }
      return NaN;
    };

    console.log(`\nLoad at a real model's latency — one cortado process (all roles, log level info), the scripted model answering after ${DELAY_MS} ms; N clients each keeping one question in flight for ${SECONDS} s\n`);
    console.log('| in flight | answered | failed | req/s | p50 ms | p95 ms | max ms | p50 − model | RSS KB / question in flight | heap KB / question in flight | loop stall max ms (p99) / own CPU | warm-up stall max / own CPU | /health max ms | log lines / question |');
    console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    const body = Buffer.from(JSON.stringify({ question: 'the twenty items from 500?' }));
    for (const n of LEVELS) {
      const agent = new http.Agent({ keepAlive: true, maxSockets: n });
      const ask = (): Promise<{ ok: boolean; ms: number; status: number }> => new Promise((resolve) => {
        const t0 = performance.now();
        const req = http.request({ host: '127.0.0.1', port, path: '/api/query', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const ok = res.statusCode === 200 && (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { rows?: unknown[] }).rows?.length === 20;
            resolve({ ok, ms: performance.now() - t0, status: res.statusCode ?? 0 });
          });
        });
        req.on('error', () => resolve({ ok: false, ms: performance.now() - t0, status: -1 }));
        req.end(body);
      });
      // warm-up: every client's socket opened and one question each
      await loop();
      await Promise.all(Array.from({ length: n }, ask));
      const warmStall = await loop();
      await sleep(1_000);
      // idle: every client's socket open, nothing in flight
      const heap0 = await heap();
      const rss0 = rssOf(proc.pid!);
      await loop();
      const lines0 = lines;
      let peak = rss0;
      let healthMax = 0;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          peak = Math.max(peak, rssOf(proc.pid!));
          healthMax = Math.max(healthMax, await healthMs(url));
          await sleep(100);
        }
      })();
      const lat: number[] = [];
      const failures = new Map<number, number>();
      const until = performance.now() + SECONDS * 1000;
      const started = performance.now();
      // shortly before the end, with n questions still in flight: the loop's stalls so far, then
      // the heap held (the full collection stalls the loop itself, so it comes after)
      let stall: { max_ms: number; p99_ms: number; own_max_ms: number } | undefined;
      let heapBusy = NaN;
      const probe = (async () => {
        await sleep(Math.max(0, SECONDS * 1000 - 500));
        stall = await loop();
        heapBusy = await heap();
      })();
      await Promise.all(Array.from({ length: n }, async () => {
        while (performance.now() < until) {
          const r = await ask();
          if (r.ok) lat.push(r.ms);
          else failures.set(r.status, (failures.get(r.status) ?? 0) + 1);
        }
      }));
      const seconds = (performance.now() - started) / 1000;
      sampling = false;
      await sampler;
      await probe;
      const logLines = lines - lines0;
      agent.destroy();
      lat.sort((a, b) => a - b);
      const failed = [...failures.values()].reduce((a, b) => a + b, 0);
      const f = (x: number) => x.toFixed(0);
      console.log(`| ${n} | ${lat.length} | ${failed}${failed ? ` (${[...failures].map(([s, c]) => `${s}: ${c}`).join(', ')})` : ''} | ${f(lat.length / seconds)} | ${f(pct(lat, 50))} | ${f(pct(lat, 95))} | ${f(lat.at(-1) ?? NaN)} | ${f(pct(lat, 50) - DELAY_MS)} | ${f((peak - rss0) / 1024 / n)} | ${((heapBusy - heap0) / 1024 / n).toFixed(1)} | ${stall ? `${stall.max_ms} (${stall.p99_ms}) / ${stall.own_max_ms}` : 'n/a'} | ${warmStall ? `${warmStall.max_ms} / ${warmStall.own_max_ms}` : 'n/a'} | ${healthMax.toFixed(1)} | ${(logLines / Math.max(1, lat.length + failed)).toFixed(2)} |`);
      await sleep(2_000);
    }

    if (SSE_SESSIONS > 0) {
      bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'bench-latency', log: createLogger({ svc: 'bench', level: 'silent' }) });
      const { token } = await issueToken(bus, 'bench');
      await sleep(1_000);
      const rss0 = rssOf(proc.pid!);
      const streams: RawSse[] = [];
      for (let i = 0; i < SSE_SESSIONS; i += 100) {
        streams.push(...await Promise.all(Array.from({ length: Math.min(100, SSE_SESSIONS - i) }, () => openRawSse(`${url}/mcp/sse`, { 'x-mcp-token': token }))));
      }
      await Promise.all(streams.map((s) => s.next('endpoint', 30_000)));
      const open = streams.filter((s) => s.status === 200).length;
      await sleep(1_000);
      const rss1 = rssOf(proc.pid!);
      const health: number[] = [];
      for (let i = 0; i < 20; i++) health.push(await healthMs(url));
      health.sort((a, b) => a - b);
      console.log(`\n${SSE_SESSIONS} MCP SSE sessions held: ${open} open; cortado RSS +${((rss1 - rss0) / 1024 / Math.max(1, open)).toFixed(1)} KB per session; /health while held p50 ${pct(health, 50).toFixed(1)} ms, max ${health.at(-1)!.toFixed(1)} ms`);
      for (const s of streams) s.close();
    }
  } finally {
    await bus?.close().catch(() => undefined);
    for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
    await sleep(500);
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await nats.stop();
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

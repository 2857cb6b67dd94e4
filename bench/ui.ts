/**
 * The browser section of `npm run bench` (issue 15's budgets):
 *
 *   first answer rendered within 100 ms of the reply arriving, for 1,000 rows: Chromium
 *     (playwright-core, headless) opens the real /demo page of a real Cortado process, asks the
 *     Assistant widget a question whose answer is a 1,000-row daily series (a line chart and the
 *     table), and measures from the arrival of the reply's `result` event (the stream chunk that
 *     completes it, seen by a probe wrapped round the page's fetch) to the answer view's
 *     `cortado:answer-drawn` mark (the table in the page and the chart drawn on its canvas), and to
 *     the next animation frame. The scripted model answers after BENCH_UI_MODEL_MS (1,500 ms, a real
 *     model's latency). The first question draws the page's first real chart (Chart.js is fetched
 *     and warmed up off screen while the question is answered): reported alone, and judged on its
 *     own against the goal too; the median is of the others.
 *   the widget script ≤ 150 KB gzipped: /widget.js as served, gzipped (level 9); Chart.js, which
 *     the first chart loads from /vendor/chart.umd.min.js, beside it.
 *
 * Prints a table; never fails on a time.
 *   BENCH_ONLY=ui npm run bench       BENCH_UI_RUNS: questions measured (default 9, the first the
 *                                     page's first chart); BENCH_UI_MODEL_MS: the model's latency (1500)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { gzipSync } from 'node:zlib';
import type { Page } from 'playwright-core';
import YAML from 'yaml';
import { ROOT } from '../config/load.js';
import { launchBrowser } from '../test/helpers/browser.js';
import { testConfigObject } from '../test/helpers/config.js';
import { startNats } from '../test/helpers/nats.js';
import { createTestDb } from '../test/helpers/pg.js';

const RUNS = Math.max(2, Number(process.env.BENCH_UI_RUNS ?? 9) || 9);
const SQL = 'SELECT day, revenue FROM daily ORDER BY day';
/** the scripted model's latency per call, ms (a hosted model takes seconds) */
const MODEL_MS = Math.max(0, Number(process.env.BENCH_UI_MODEL_MS ?? 1500) || 0);

/**
 * A page script (addInitScript) timing an answer: the reply's arrival, taken where the page's
 * fetch receives it (the chunk that completes the `result` event of a stream, or the last chunk
 * of a JSON reply, of a question route), and the answer view's `cortado:answer-drawn` mark after
 * it, then the next frame. `window.__ctdProbe.reset()` before a question; `.result` after:
 * {arrived, drawn, frame} (performance.now() times).
 */
export const ANSWER_PROBE = `(() => {
  const probe = window.__ctdProbe = { arrived: undefined, result: undefined, reset() { this.arrived = undefined; this.result = undefined; } };
  const original = window.fetch.bind(window);
  window.fetch = async (...args) => {
    const res = await original(...args);
    const url = new URL(String(args[0] && args[0].url ? args[0].url : args[0]), location.href);
    if (!/\\/(api\\/query|query|auth\\/query|query\\/confirm-execute|auth\\/query\\/confirm)$/.test(url.pathname) || !res.body) return res;
    const stream = (res.headers.get('content-type') || '').includes('event-stream');
    const decoder = new TextDecoder();
    let text = '';
    let last;
    const tap = new TransformStream({
      transform(chunk, ctl) {
        last = performance.now();
        if (stream && probe.arrived === undefined) {
          text += decoder.decode(chunk, { stream: true });
          const at = text.indexOf('event: result');
          if (at >= 0 && text.indexOf('\\n\\n', at) >= 0) probe.arrived = last;
          else if (at < 0) text = text.slice(-64);
        }
        ctl.enqueue(chunk);
      },
      flush() { if (!stream && probe.arrived === undefined) probe.arrived = last; },
    });
    return new Response(res.body.pipeThrough(tap), { status: res.status, statusText: res.statusText, headers: res.headers });
  };
  new PerformanceObserver((list) => {
    for (const m of list.getEntries()) {
      if (m.name !== 'cortado:answer-drawn' || probe.arrived === undefined || probe.result || m.startTime < probe.arrived) continue;
      const arrived = probe.arrived;
      const drawn = m.startTime;
      requestAnimationFrame(() => { probe.result = { arrived, drawn, frame: performance.now(), rows: m.detail && m.detail.rows }; });
    }
  }).observe({ type: 'mark' });
})()`;

export interface AnswerTiming {
  /** reply arrived → table and chart drawn, ms */
  drawnMs: number;
  /** reply arrived → the next animation frame after that, ms */
  frameMs: number;
  rows: number;
}

/** Ask through `ask()` on a page with ANSWER_PROBE and wait for the answer's timing. */
export async function timeAnswer(page: Page, ask: () => Promise<void>, timeoutMs = 60_000): Promise<AnswerTiming> {
  await page.evaluate('window.__ctdProbe.reset()');
  await ask();
  // polled from here (the times are taken in the page): waitForFunction evaluates a string, which
  // a page's strict CSP forbids
  const end = Date.now() + timeoutMs;
  let r: { arrived: number; drawn: number; frame: number; rows: number } | undefined;
  while (!(r = (await page.evaluate('window.__ctdProbe.result')) as typeof r)) {
    if (Date.now() > end) throw new Error(`no answer drawn within ${timeoutMs} ms`);
    await new Promise((res) => setTimeout(res, 20));
  }
  return { drawnMs: r.drawn - r.arrived, frameMs: r.frame - r.arrived, rows: r.rows };
}

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((r) => srv.close(r));
  return port;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const kb = (n: number): string => `${(n / 1024).toFixed(1)} KB`;

export async function uiSection(): Promise<void> {
  const children: ChildProcess[] = [];
  const nats = await startNats();
  const db = await createTestDb('benchui');
  const dir = mkdtempSync(path.join(tmpdir(), 'cortado-benchui-'));
  let browser: Awaited<ReturnType<typeof launchBrowser>> | undefined;
  try {
    await db.pool.query(`CREATE TABLE daily (day date PRIMARY KEY, revenue numeric(12,2) NOT NULL);
      INSERT INTO daily SELECT d::date, 1000 + (extract(doy FROM d) * 7919)::int % 500 FROM generate_series('2023-01-01'::date, '2023-01-01'::date + 999, '1 day') d;`);
    // the scripted model answers after a real model's latency, so the first question is timed as
    // a real first answer is: Chart.js fetched and warmed up while the question is answered
    const fakeProc = spawn(process.execPath, ['--import', 'tsx', 'bench/fake-llm.ts', SQL], { cwd: ROOT, env: { ...process.env, BENCH_MODEL_DELAY_MS: String(MODEL_MS) }, stdio: ['ignore', 'pipe', 'inherit'] });
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
        app: { port, log_level: 'warn' },
        query: { default_limit: 1000, max_limit: 1000 },
        insights: { enabled: true, mode: 'statistical_only' },
      },
    });
    const file = path.join(dir, 'ui.yaml');
    writeFileSync(file, YAML.stringify(cfg));
    const proc = spawn(process.execPath, [path.join(ROOT, 'bin/cortado.js'), '--config', file], { cwd: ROOT, env: process.env, stdio: ['ignore', 'ignore', 'inherit'] });
    children.push(proc);
    const url = `http://127.0.0.1:${port}`;
    const end = Date.now() + 60_000;
    for (;;) {
      const ok = await fetch(`${url}/health`).then((r) => r.json() as Promise<{ database?: string }>).then((b) => b.database === 'ok', () => false);
      if (ok) break;
      if (Date.now() > end || proc.exitCode !== null) throw new Error('cortado did not become healthy');
      await new Promise((r) => setTimeout(r, 200));
    }

    const size = async (p: string): Promise<{ bytes: number; gzip: number }> => {
      const res = await fetch(`${url}${p}`);
      if (res.status !== 200) throw new Error(`${p} answered ${res.status}`);
      const body = Buffer.from(await res.arrayBuffer());
      return { bytes: body.length, gzip: gzipSync(body, { level: 9 }).length };
    };
    const widget = await size('/widget.js');
    const chart = await size('/vendor/chart.umd.min.js');

    browser = await launchBrowser();
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    await page.addInitScript(ANSWER_PROBE);
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${url}/demo`);
    await page.click('[data-cortado-widget="assistant"] .ctd-launch');
    await page.waitForSelector('[data-cortado-widget="assistant"] textarea.question');
    const w = '[data-cortado-widget="assistant"]';
    const runs: AnswerTiming[] = [];
    for (let i = 0; i < RUNS; i++) {
      // each question alone in the panel (New conversation clears the earlier answers)
      if (i > 0) await page.click(`${w} button.new-conv`);
      const timing = await timeAnswer(page, async () => {
        await page.fill(`${w} textarea.question`, `Revenue per day, run ${i + 1}`);
        await page.click(`${w} button.go`);
      });
      const answer = page.locator(`${w} .answer`).first();
      const shown = await answer.locator('tbody tr').count();
      const canvas = await answer.locator('.chart canvas').count();
      if (timing.rows !== 1000 || shown === 0 || canvas !== 1) throw new Error(`run ${i + 1}: ${timing.rows} rows, ${shown} table rows shown, ${canvas} canvas (${errors.join('; ')})`);
      runs.push(timing);
    }
    const warm = runs.slice(1);
    const drawn = median(warm.map((r) => r.drawnMs));
    const frame = median(warm.map((r) => r.frameMs));
    const ms = (n: number) => `${n.toFixed(1)} ms`;
    console.log(`\nThe browser's budgets — Chromium headless (${browser.version()}), one cortado process, the Assistant widget on /demo (SSE), an answer of 1,000 rows (a daily series: a line chart and the paged table); the model answering after ${MODEL_MS} ms; ${RUNS} questions, the first loading Chart.js\n`);
    console.log('| measure | value | goal |');
    console.log('| --- | --- | --- |');
    console.log(`| /widget.js (the widgets and the answer view) | ${widget.bytes.toLocaleString('en')} bytes, ${kb(widget.gzip)} gzipped | ≤ 150 KB gzipped: ${widget.gzip <= 150 * 1024 ? 'met' : 'not met'} |`);
    console.log(`| Chart.js (/vendor/chart.umd.min.js, loaded by the first chart) | ${chart.bytes.toLocaleString('en')} bytes, ${kb(chart.gzip)} gzipped | not in the widget script |`);
    console.log(`| reply → table and chart drawn, first question (the page's first chart: Chart.js fetched and warmed up while the question was answered) | ${ms(runs[0]!.drawnMs)} (next frame ${ms(runs[0]!.frameMs)}) | ≤ 100 ms: ${runs[0]!.drawnMs <= 100 ? 'met' : 'not met'} |`);
    console.log(`| reply → table and chart drawn, median of ${warm.length} | ${ms(drawn)} (min ${ms(Math.min(...warm.map((r) => r.drawnMs)))}, max ${ms(Math.max(...warm.map((r) => r.drawnMs)))}) | ≤ 100 ms: ${drawn <= 100 ? 'met' : 'not met'} |`);
    console.log(`| reply → the next frame after it, median | ${ms(frame)} | |`);
    if (errors.length) console.log(`\npage errors: ${errors.join('; ')}`);
  } finally {
    await browser?.close().catch(() => undefined);
    for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
    await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => { c.once('exit', r); setTimeout(r, 5000); }) : undefined)));
    rmSync(dir, { recursive: true, force: true });
    await db.drop().catch(() => undefined);
    await nats.stop();
  }
}

// run alone: node --import tsx bench/ui.ts
if (import.meta.url === `file://${process.argv[1]}`) await uiSection();

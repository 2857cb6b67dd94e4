/**
 * The README's start command on the shipped config/config.yaml, as a newcomer runs it: the
 * embedded demo database, the page (its question box, in Chromium), /health, and a question
 * answered from the demo data (with a scripted Anthropic endpoint through ANTHROPIC_BASE_URL);
 * without a key, a clear LLM_UNAVAILABLE.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { ROOT } from '../../config/load.js';
import { launchBrowser } from '../helpers/browser.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { endWithProcess } from '../helpers/leftovers.js';
import { startNats } from '../helpers/nats.js';
import { call } from '../helpers/stack.js';

// each part's teardown right after it started (tap runs them last first): a set-up that throws
// half-way still stops what it had started
const dir = mkdtempSync(path.join(tmpdir(), 'cortado-start-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const nats = await startNats();
t.teardown(() => nats.stop());
const fake = await startFakeLlm();
t.teardown(() => fake.close());

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((r) => srv.close(r));
  return port;
}

/** `npm start` as a child of the subtest `t`: it ends with that subtest (or with this process), however either ends. */
async function start(t: Test, env: Record<string, string>) {
  const port = await freePort();
  // the shipped config, as `npm start` reads it; only the environment differs
  const child = endWithProcess(spawn(process.execPath, [path.join(ROOT, 'bin/cortado.js')], {
    cwd: ROOT,
    env: { ...process.env, CORTADO_CONFIG: '', CORTADO_PORT: String(port), CORTADO_HOST: '127.0.0.1', NATS_URL: nats.url, CORTADO_DEMO_DIR: path.join(dir, 'demo-pg'), CORTADO_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  }));
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); });
  let out = '';
  child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr.on('data', (d: Buffer) => { out += d.toString(); });
  const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  const url = `http://127.0.0.1:${port}`;
  const end = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`cortado exited: ${out}`);
    const ok = await call(`${url}/health`).then((r) => r.body?.database === 'ok', () => false);
    if (ok) break;
    if (Date.now() > end) throw new Error(`cortado did not become healthy: ${out}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  return { url, child, exited, output: () => out };
}

t.test('with an LLM: the demo database answers "which store sold the most last month?"', async (t) => {
  const app = await start(t, { ANTHROPIC_API_KEY: 'sk-test-not-real', ANTHROPIC_BASE_URL: fake.url });
  const page = await call(`${app.url}/`);
  t.equal(page.status, 200);
  // `/` is the dashboard: its Assistant tab draws the question box (the answer view) in the browser
  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const tab = await browser.newPage();
  const errors: string[] = [];
  tab.on('pageerror', (e) => errors.push(e.message));
  await tab.goto(`${app.url}/#assistant`);
  await tab.locator('#assistant-root form textarea.question').waitFor();
  t.ok(await tab.locator('#assistant-root form textarea.question').isVisible(), 'the first page has a question box');
  t.ok(await tab.locator('#assistant-root button.go').isEnabled(), 'and an Ask button');
  t.same(errors, [], 'no script errors');
  await browser.close();
  const health = await call(`${app.url}/health`);
  t.equal(health.body.status, 'ok');

  const tables = await call(`${app.url}/api/tables`);
  t.same(tables.body.tables.map((x: { name: string }) => x.name).sort(), ['customers', 'order_lines', 'orders', 'products', 'stores']);

  const sql = `SELECT s.name AS store, round(sum(o.total), 2) AS revenue
FROM orders o JOIN stores s ON s.id = o.store_id
WHERE o.ordered_at >= date_trunc('month', DATE '2026-10-15') AND o.ordered_at < date_trunc('month', DATE '2026-10-15') + interval '1 month'
GROUP BY s.name ORDER BY revenue DESC`;
  fake.script({ text: sqlAnswer(sql, 'Revenue per store last month, best first.') });
  const res = await call(`${app.url}/api/query`, { body: { question: 'which store sold the most last month?' } });
  t.equal(res.status, 200, res.text);
  t.equal(res.body.intent, 'sql');
  t.ok(res.body.rows.length >= 10, `one row per store (${res.body.rows.length})`);
  t.type(res.body.rows[0][0], 'string');
  t.ok(res.body.rows[0][1] >= res.body.rows[1][1], 'best first');
  t.ok(res.body.insights.some((i: { type: string }) => i.type === 'top'), 'a top-contributor insight');
  const prompt = fake.requests.at(-1)!;
  t.match(prompt.system, /order_lines/, 'the demo schema is in the prompt');
  t.match(prompt.last, /which store sold the most last month\?/);
  t.notMatch(app.output(), /sk-test-not-real/, 'the key is never logged');

  app.child.kill('SIGTERM');
  t.equal(await app.exited, 0);
});

t.test('without a key: it starts, /health says so, a question is LLM_UNAVAILABLE', async (t) => {
  const app = await start(t, { ANTHROPIC_API_KEY: '', ANTHROPIC_BASE_URL: '' });
  const health = await call(`${app.url}/health`);
  t.equal(health.body.llm, 'not_configured');
  t.equal(health.body.database, 'ok');
  const res = await call(`${app.url}/api/query`, { body: { question: 'which store sold the most last month?' } });
  t.equal(res.status, 503);
  t.equal(res.body.error.code, 'LLM_UNAVAILABLE');
  t.match(res.body.error.message, /ANTHROPIC_API_KEY|api_key/);
  app.child.kill('SIGTERM');
  t.equal(await app.exited, 0);
});

/**
 * The accuracy harness end to end: a real stack (every actor, the eval actor among them, real
 * PostgreSQL data, a local server speaking Anthropic's Messages API scripted to answer some
 * golden questions right and some wrong), `cortado eval FILE` run as the command a person runs
 * (bin/cortado.js, asking `eval.run` over the same NATS), the admin panel's POST /admin/eval
 * trying a candidate prompt without saving it, and a run that meets its deadline.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import YAML from 'yaml';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { DEFAULT_PROMPTS } from '../../config/prompts.js';
import { parseGolden } from '../../actors/eval/golden.js';
import { REPLY_MARGIN_MS, sameRows } from '../../actors/eval/handle.js';
import { parseMinAccuracy } from '../../cli/eval.js';
import { ALL_ACTORS, Actor, EvalRun } from '../../protocol/subjects.js';
import { launchBrowser } from '../helpers/browser.js';
import { testConfig, testConfigObject } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ROLES = { edge: true, actors: ALL_ACTORS.filter((a) => a !== Actor.Analytics) };
const MARK = 'CANDIDATE-PROMPT-7f3';

const nats = await startNats();
const db = await createTestDb('evalh');
await db.pool.query(`
  CREATE TABLE orders (id int PRIMARY KEY, status text NOT NULL, amount numeric(10,2) NOT NULL);
  COMMENT ON TABLE orders IS 'Every order placed';
  INSERT INTO orders VALUES (1, 'open', 100.50), (2, 'open', 50), (3, 'shipped', 200), (4, 'cancelled', 10);
`);
const cfgDb = await createTestDb('evalh_cfg');
const fake = await startFakeLlm();
const dbRef = { host: db.host, port: db.port, name: db.name, user: db.user };
const extra = {
  admin: { enabled: true, username: 'admin', password: 'correct horse' },
  config_db: { enabled: true, encryption_key: generateFernetKey(), postgresql: { host: cfgDb.host, port: cfgDb.port, database: cfgDb.name, user: cfgDb.user } },
};
const stack = await startStack(testConfig({ natsUrl: nats.url, db: dbRef, llmUrl: fake.url, extra }), ROLES);
const dir = mkdtempSync(path.join(tmpdir(), 'cortado-eval-'));

t.teardown(async () => {
  rmSync(dir, { recursive: true, force: true });
  await stack.stop();
  await fake.close();
  await db.drop();
  await cfgDb.drop();
  await nats.stop();
});

/** What the scripted model writes for each question: right, or (marked) wrong unless the candidate prompt is in force. */
const ANSWERS: Array<{ word: string; sql: string; wrong?: string }> = [
  { word: 'how many orders', sql: 'SELECT count(*) AS orders FROM orders' },
  { word: 'amount per status', sql: 'SELECT status, sum(amount) AS total FROM orders GROUP BY status ORDER BY total' },
  { word: 'statuses by amount', sql: 'SELECT status FROM orders GROUP BY status ORDER BY sum(amount) DESC', wrong: 'SELECT status FROM orders GROUP BY status ORDER BY sum(amount) ASC' },
  { word: 'largest order', sql: 'SELECT max(amount) AS largest FROM orders', wrong: 'SELECT min(amount) AS largest FROM orders' },
  { word: 'which statuses', sql: 'SELECT DISTINCT status FROM orders' },
];
/** how long the model takes over each answer (the long-run tests slow it down) */
let modelMs = 0;
fake.fallback((req) => {
  const q = req.last.toLowerCase();
  const a = ANSWERS.find((x) => q.includes(x.word));
  if (!a) return { status: 500, message: 'unscripted' };
  return { text: sqlAnswer(req.system.includes(MARK) || !a.wrong ? a.sql : a.wrong), ...(modelMs ? { delayMs: modelMs } : {}) };
});

const GOLDEN = [
  { id: 'count', question: 'How many orders are there?', expected_sql: 'SELECT count(*) FROM orders', expected_tables: ['orders'] },
  // the rows in another order: still correct (the question does not order them)
  { id: 'per-status', question: 'Total amount per status', expected_sql: 'SELECT status, sum(amount) FROM orders GROUP BY status ORDER BY status DESC', expected_tables: ['public.orders'] },
  { id: 'ranked', question: 'Order the statuses by amount, biggest first', expected_sql: 'SELECT status FROM orders GROUP BY status ORDER BY sum(amount) DESC', ordered: true },
  { id: 'largest', question: 'What is the largest order?', expected_sql: 'SELECT max(amount) FROM orders', expected_tables: ['orders', 'customers'] },
  { id: 'statuses', question: 'Which statuses exist?', expected_rows: [['open'], ['shipped'], ['cancelled']] },
];

const goldenFile = path.join(dir, 'golden.yaml');
writeFileSync(goldenFile, YAML.stringify({ questions: GOLDEN }));
const configFile = path.join(dir, 'config.yaml');
writeFileSync(configFile, YAML.stringify(testConfigObject({ natsUrl: nats.url, db: dbRef, llmUrl: fake.url })));

/** `cortado eval …` as a person runs it; its exit code and output. */
function cortado(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [path.join(ROOT, 'bin/cortado.js'), ...args], { cwd: ROOT, timeout: 120_000, env: { ...process.env, CORTADO_CONFIG: '' } }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

t.test('the pieces: golden files and result-set comparison', async (t) => {
  t.equal(parseGolden('- {question: q, expected_rows: [[1]]}').length, 1, 'a YAML list');
  t.equal(parseGolden('{"questions": [{"question": "q", "expected_sql": "SELECT 1"}]}').length, 1, 'JSON with questions');
  t.throws(() => parseGolden('- {question: q}'), { code: 'VALIDATION_FAILED', message: /neither expected_sql nor expected_rows/ });
  t.throws(() => parseGolden('- {question: q, expected_sql: x, bogus: 1}'), { code: 'VALIDATION_FAILED' });
  t.throws(() => parseGolden('[unclosed'), { code: 'VALIDATION_FAILED', message: /neither YAML nor JSON/ });
  t.ok(sameRows([['a', '1.50'], ['b', 2]], [['b', '2'], ['a', 1.5]], false).same, 'order-insensitive; numbers by value');
  t.notOk(sameRows([['a'], ['b']], [['b'], ['a']], true).same, 'ordered');
  t.notOk(sameRows([['a'], ['a'], ['b']], [['a'], ['b'], ['b']], false).same, 'multisets, not sets');
  t.notOk(sameRows([[null]], [['null']], false).same, 'NULL is not the text null');
  t.equal(parseMinAccuracy('0.8'), 0.8);
  t.equal(parseMinAccuracy('80'), 0.8);
  t.equal(parseMinAccuracy('75%'), 0.75);
  t.throws(() => parseMinAccuracy('lots'));
});

t.test('cortado eval --json: per question and in total, right and wrong answers counted', async (t) => {
  const r = await cortado('eval', goldenFile, '--config', configFile, '--json', '--min-accuracy', '0.5');
  t.equal(r.code, 0, `exit 0 at 60 % with a 50 % minimum (${r.stderr})`);
  const report = JSON.parse(r.stdout);
  const verdicts = Object.fromEntries(report.results.map((x: { id: string; verdict: string }) => [x.id, x.verdict]));
  t.same(verdicts, { count: 'correct', 'per-status': 'correct', ranked: 'wrong', largest: 'wrong', statuses: 'correct' });
  t.equal(report.totals.questions, 5);
  t.equal(report.totals.correct, 3);
  t.equal(report.totals.accuracy, 0.6);
  const byId = Object.fromEntries(report.results.map((x: { id: string }) => [x.id, x]));
  t.equal(byId.count.recall, 1, 'the expected table was in the prompt');
  t.equal(byId['per-status'].recall, 1, 'public.orders is orders');
  t.equal(byId.largest.recall, 0.5, 'one of two expected tables (there is no customers table)');
  t.equal(byId.ranked.recall, undefined, 'no expected tables, no recall');
  t.equal(report.totals.recall, 0.8333, 'the mean over the questions that name tables');
  t.match(byId.ranked.reason, /row 1 differs/);
  t.match(byId.largest.sql, /min\(amount\)/, 'the SQL the pipeline wrote');
  t.ok(report.totals.input_tokens > 0 && report.totals.output_tokens > 0, 'tokens');
  t.ok(byId.count.latency_ms > 0, 'latency');
  t.equal(report.passed, true);
  t.equal(report.min_accuracy, 0.5);
});

t.test('cortado eval as a table; below --min-accuracy it fails', async (t) => {
  const r = await cortado('eval', goldenFile, '--config', configFile, '--min-accuracy', '80%');
  t.equal(r.code, 1, 'exit 1 below the minimum');
  t.match(r.stdout, /^id\s+question\s+result\s+recall\s+tokens\s+ms\s+why/m);
  t.match(r.stdout, /^ranked\s+Order the statuses by amount, biggest first\s+wrong/m);
  t.match(r.stdout, /execution accuracy: 60\.0 % \(3 of 5\)/);
  t.match(r.stdout, /schema-linking recall: 83\.3 %/);
  t.match(r.stdout, /FAILED: minimum accuracy 80\.0 %/);

  const bad = path.join(dir, 'bad.yaml');
  writeFileSync(bad, '- question: no answer given\n');
  const b = await cortado('eval', bad, '--config', configFile);
  t.equal(b.code, 2, 'a bad golden file');
  t.match(b.stderr, /neither expected_sql nor expected_rows/);
  t.equal((await cortado('eval', '--config', configFile)).code, 2, 'no file');
  t.equal((await cortado('eval', goldenFile, '--config', configFile, '--min-accuracy', 'lots')).code, 2, 'a bad minimum');
});

t.test('cortado eval --in-process: the actors in the command\'s own process', async (t) => {
  // a bus prefix no running Cortado serves: only the command's own actors can answer
  const own = path.join(dir, 'own.yaml');
  writeFileSync(own, YAML.stringify(testConfigObject({ natsUrl: nats.url, db: dbRef, llmUrl: fake.url, extra: { bus: { prefix: 'evalown' } } })));
  const r = await cortado('eval', goldenFile, '--config', own, '--json', '--in-process');
  t.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout);
  t.equal(report.totals.correct, 3);
  t.equal(report.passed, true);
});

async function signIn(): Promise<Record<string, string>> {
  const res = await call(`${stack.url}/admin/login`, { body: { username: 'admin', password: 'correct horse' } });
  return { cookie: (res.headers.get('set-cookie') ?? '').split(';')[0] ?? '', 'x-csrf-token': res.body?.csrf_token as string };
}

t.test('POST /admin/eval: a candidate prompt tried on the golden set, never saved', async (t) => {
  const h = await signIn();
  const candidate = DEFAULT_PROMPTS.sql_generation.replace('Question: {question}', `${MARK}\nQuestion: {question}`);
  const r = await call(`${stack.url}/admin/eval`, { body: { golden: GOLDEN, prompts: { sql_generation: candidate } }, headers: h });
  t.equal(r.status, 200, r.text);
  t.equal(r.body.before.totals.correct, 3, 'as configured');
  t.equal(r.body.after.totals.correct, 5, 'with the candidate prompt');
  t.equal(r.body.difference.accuracy, 0.4);
  t.equal(r.body.difference.correct, 2);
  t.ok(fake.requests.some((q) => q.system.includes(MARK)), 'the model read the candidate');

  const prompts = await call(`${stack.url}/admin/prompts`, { headers: { cookie: h.cookie! } });
  const sql = prompts.body.prompts.find((p: { key: string }) => p.key === 'sql_generation');
  t.equal(sql.source, 'default', 'nothing was saved');
  fake.requests.length = 0;
  await call(`${stack.url}/api/query`, { body: { question: 'What is the largest order?' } });
  t.notOk(fake.requests.at(-1)!.system.includes(MARK), 'the next question uses the configured prompt');

  const yamlText = await call(`${stack.url}/admin/eval`, { body: { golden: YAML.stringify(GOLDEN.slice(0, 2)) }, headers: h });
  t.equal(yamlText.status, 200, yamlText.text);
  t.equal(yamlText.body.before.totals.accuracy, 1, 'a YAML text, without prompts: one run');
  t.equal(yamlText.body.after, undefined);

  const unknown = await call(`${stack.url}/admin/eval`, { body: { golden: GOLDEN, prompts: { nope: 'x' } }, headers: h });
  t.equal(unknown.status, 400);
  t.match(unknown.body.error.message, /there is no prompt "nope"/);
  const badGolden = await call(`${stack.url}/admin/eval`, { body: { golden: [{ question: 'x' }] }, headers: h });
  t.equal(badGolden.status, 400);
  t.match(badGolden.body.error.message, /neither expected_sql nor expected_rows/, 'the eval actor names the question at fault');
  // a text is not counted by the body's schema: the eval actor holds the panel's bound, before asking anything
  const asked = fake.requests.length;
  const tooMany = await call(`${stack.url}/admin/eval`, { body: { golden: YAML.stringify(Array.from({ length: 51 }, (_, i) => ({ ...GOLDEN[0], id: `q${i}` }))) }, headers: h });
  t.equal(tooMany.status, 400, tooMany.text);
  t.match(tooMany.body.error.message, /51 questions; this run takes at most 50/);
  t.equal(fake.requests.length, asked, 'no question of it was asked');
  t.equal((await call(`${stack.url}/admin/eval`, { body: { golden: GOLDEN } })).status, 401, 'admins only');
});

t.test('the prompts tab: golden questions, and "Evaluate before saving" shows before and after', async (t) => {
  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${stack.url}/admin`);
  await page.waitForSelector('#login:not([hidden])');
  await page.fill('#username', 'admin');
  await page.fill('#password', 'correct horse');
  await page.click('#sign-in');
  await page.waitForSelector('#panel:not([hidden])');
  await page.click('[data-tab=prompts]');
  await page.waitForSelector('#golden');
  await page.fill('#golden', YAML.stringify(GOLDEN));
  const editor = page.locator('.prompt', { has: page.locator('[data-eval=sql_generation]') });
  await editor.locator('textarea').fill(DEFAULT_PROMPTS.sql_generation.replace('Question: {question}', `${MARK}\nQuestion: {question}`));
  await editor.locator('[data-eval=sql_generation]').click();
  await editor.locator('.eval-summary').waitFor({ timeout: 60_000 });
  t.match(await editor.locator('.eval-summary').textContent(), /Accuracy 60\.0 % → 100\.0 % \(\+40\.0 points; 5 of 5 correct\).*Not saved/);
  t.match(await editor.locator('.eval-result tbody').textContent(), /Order the statuses by amount, biggest first\s*wrong\s*correct/);
  const prompts = await call(`${stack.url}/admin/prompts`, { headers: { cookie: (await signIn()).cookie! } });
  t.equal(prompts.body.prompts.find((p: { key: string }) => p.key === 'sql_generation').source, 'default', 'still not saved');
  t.same(errors, [], 'no script errors');
});

t.test('a run longer than the broker\'s silence window completes, with progress on the way', async (t) => {
  // 5 questions at 1.5 s each: past the 6 s after which a requester gives up on a silent long
  // request (runtime/bus-requests.ts), so the report arrives only because the eval actor's process
  // says it is still working; the command shows each judged question meanwhile
  modelMs = 1_500;
  t.teardown(() => { modelMs = 0; });
  const started = Date.now();
  const r = await cortado('eval', goldenFile, '--config', configFile, '--min-accuracy', '0.5');
  t.ok(Date.now() - started > 7_000, `the run took ${Date.now() - started} ms`);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /execution accuracy: 60\.0 % \(3 of 5\)/);
  for (const [i, v] of ['correct', 'correct', 'wrong', 'wrong', 'correct'].entries()) t.match(r.stderr, new RegExp(`^  ${i + 1}/5 ${v}$`, 'm'), `progress of question ${i + 1}`);
});

t.test('a run meets its deadline: the report in time, the questions it did not reach said so', async (t) => {
  modelMs = 1_500;
  t.teardown(() => { modelMs = 0; });
  // room for about two questions before the run must answer (the reply margin kept back)
  const deadline = Date.now() + REPLY_MARGIN_MS + 4_000;
  const r = await stack.running.bus.request(EvalRun, { golden: GOLDEN }, { requestId: 'e2e-eval-deadline', user: 'admin', deadline });
  t.ok(Date.now() <= deadline, 'answered before the deadline, not at it');
  const results = r.report.results;
  t.equal(results.length, 5, 'every question is in the report');
  t.equal(r.report.totals.questions, 5);
  t.equal(results[0]?.verdict, 'correct', 'the first question, asked in time, is judged');
  t.match(results[4]?.reason, /^TIMEOUT: not asked, the request's deadline was reached$/, 'the last one was not reached');
  for (const x of results) t.ok(x.verdict === 'correct' || x.verdict === 'wrong' || /^TIMEOUT/.test(x.reason ?? ''), `${x.id}: judged, or cut by the deadline (${x.verdict}: ${x.reason ?? ''})`);
});

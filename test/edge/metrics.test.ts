/**
 * GET /metrics over a real stack (runtime/metrics.ts): after a question the Prometheus text
 * parses and holds the series an operator reads — HTTP by route pattern, the bus per subject and
 * side, the model's calls and tokens, database time and rows, guard rejections, masking hits,
 * rate-limit refusals, the outbox, event-consumer lag, Node's own; each event a counter is for,
 * caused for real, moves it (a model answering 500, a query PostgreSQL refuses, calls beyond
 * llm.max_concurrency, a schedule run now and a cron tick run late, mail through a real SMTP
 * server and with that server gone). Protected on the edge's port
 * (metrics.token or the admin session); on its own listener (metrics.listen) unauthenticated, in
 * an actor-only process too, which shows only what it did itself.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import YAML from 'yaml';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { startScheduler } from '../../actors/scheduler/actor.js';
import { ROOT } from '../../config/load.js';
import { createLogger } from '../../runtime/log.js';
import { ALL_ACTORS, AUDIT_CONSUMER, MaskRuleCreate } from '../../protocol/subjects.js';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { testConfig, testConfigObject } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { endWithProcess } from '../helpers/leftovers.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { until } from '../helpers/processes.js';
import { startSmtp } from '../helpers/smtp.js';
import { call, startStack } from '../helpers/stack.js';

const TOKEN = 'metrics-scrape-token-1';
const nats = await startNats();
const db = await createTestDb('metrics');
await db.pool.query(GUARD_SCHEMA_SQL);
const fake = await startFakeLlm();
const dbRef = { host: db.host, port: db.port, name: db.name, user: db.user };
const dir = mkdtempSync(path.join(tmpdir(), 'cortado-metrics-'));
const config = testConfig({
  natsUrl: nats.url,
  db: dbRef,
  llmUrl: fake.url,
  extra: {
    metrics: { token: TOKEN },
    admin: { enabled: true, username: 'admin', password: 'metrics-admin-pw' },
    config_db: { encryption_key: generateFernetKey() },
    rate_limiting: { enabled: true, protected_paths: ['/tables'], requests_per_window: 1, window_seconds: 60 },
  },
});
const stack = await startStack(config);
t.teardown(async () => {
  await stack.stop();
  await fake.close();
  await db.drop();
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
});

// ---- a small reader of the Prometheus text format ----------------------------------------------

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

// Prometheus reads NaN in any case (prom-client writes `Nan`)
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (-?[0-9.e+-]+|[Nn]a[Nn]|[+-]Inf)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Every sample; throws on a line that is neither a comment nor a sample. */
function parseProm(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# TYPE ')) {
      const [, , name, type] = line.split(' ');
      types.set(name!, type!);
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not Prometheus text: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, '$1');
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return { samples, types };
}

/** The sum of the samples of `name` whose labels include `labels`. */
function sum(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);
}

function has(samples: Sample[], name: string, labels: Record<string, string> = {}): boolean {
  return samples.some((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

async function scrape(url: string, headers: Record<string, string> = {}): Promise<{ status: number; type: string; samples: Sample[]; types: Map<string, string>; text: string }> {
  const res = await fetch(url, { headers });
  const text = await res.text();
  if (res.status !== 200) return { status: res.status, type: res.headers.get('content-type') ?? '', samples: [], types: new Map(), text };
  return { status: res.status, type: res.headers.get('content-type') ?? '', text, ...parseProm(text) };
}

// ---- on the edge's port -------------------------------------------------------------------------

t.test('after a question, /metrics holds what happened, by pattern and subject', async (t) => {
  await stack.running.bus.request(MaskRuleCreate, { field_pattern: 'customers.name', strategy: 'redact' }, { requestId: 'metrics-setup' });
  fake.script(
    { text: sqlAnswer('SELECT name, country FROM customers ORDER BY id'), usage: { input_tokens: 321, output_tokens: 45 } },
    { text: sqlAnswer('DELETE FROM orders') },
  );
  const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  const ok = await call(`${stack.url}/api/query`, { body: { question: 'who are the customers?' }, headers: { traceparent } });
  t.equal(ok.status, 200, ok.text);
  t.ok(ok.body.rows.length > 0);
  t.equal(ok.headers.get('traceparent'), traceparent, 'tracing off: the caller\'s traceparent is echoed as it came');
  const refused = await call(`${stack.url}/api/query`, { body: { question: 'remove the orders' } });
  t.equal(refused.status, 422, refused.text);
  t.equal(refused.body.error.code, 'SQL_REJECTED');
  t.match(refused.headers.get('traceparent') ?? '', /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/, 'no traceparent sent: a new one is made and echoed');
  t.equal((await call(`${stack.url}/api/tables/customers`)).status, 200);
  t.equal((await call(`${stack.url}/api/tables/orders`)).status, 200);
  t.equal((await call(`${stack.url}/tables`)).status, 200);
  t.equal((await call(`${stack.url}/tables`)).status, 429, 'the second /tables is over the limit');
  t.equal((await call(`${stack.url}/no/such/page/123`)).status, 404);

  const m = await scrape(`${stack.url}/metrics`, { authorization: `Bearer ${TOKEN}` });
  t.equal(m.status, 200, m.text);
  t.match(m.type, /^text\/plain; version=0\.0\.4/);
  const s = m.samples;

  // HTTP: route patterns, never raw paths
  t.ok(sum(s, 'cortado_http_requests_total', { route: '/api/query', method: 'POST', status: '200' }) >= 1, 'the question, by its route');
  t.equal(sum(s, 'cortado_http_requests_total', { route: '/api/tables/:name', method: 'GET', status: '200' }), 2, 'two tables, one pattern');
  t.equal(sum(s, 'cortado_http_requests_total', { route: '(none)', status: '429' }), 1, 'the refusal came before routing');
  t.ok(sum(s, 'cortado_http_requests_total', { route: '(unmatched)', status: '404' }) >= 1);
  t.notOk(s.some((x) => x.labels.route?.includes('customers') || x.labels.route?.includes('123')), 'no raw path is a label');
  t.ok(sum(s, 'cortado_http_request_duration_seconds_count', { route: '/api/query' }) >= 2);
  t.equal(m.types.get('cortado_http_request_duration_seconds'), 'histogram');

  // the bus, per subject and side; no subject holds a request id
  t.ok(sum(s, 'cortado_bus_request_duration_seconds_count', { subject: 'ask', side: 'server' }) >= 2);
  t.ok(sum(s, 'cortado_bus_request_duration_seconds_count', { subject: 'sql.execute', side: 'client' }) >= 2);
  t.ok(sum(s, 'cortado_bus_request_duration_seconds_count', { subject: 'llm.complete', side: 'server' }) >= 2);
  t.ok(has(s, 'cortado_bus_in_flight', { subject: 'sql.execute', side: 'server' }));
  t.equal(sum(s, 'cortado_bus_in_flight', { subject: 'sql.execute' }), 0, 'nothing in flight once answered');
  t.ok(sum(s, 'cortado_bus_errors_total', { subject: 'sql.execute', side: 'server', code: 'SQL_REJECTED' }) >= 1);
  t.notOk(s.some((x) => x.labels.subject?.startsWith('progress.')), 'progress subjects (request ids) are not labels');

  // the model
  t.ok(sum(s, 'cortado_llm_calls_total', { provider: 'anthropic', model: 'claude-test', outcome: 'ok' }) >= 2);
  t.ok(sum(s, 'cortado_llm_tokens_total', { provider: 'anthropic', model: 'claude-test', kind: 'input' }) >= 321);
  t.ok(sum(s, 'cortado_llm_tokens_total', { kind: 'output' }) >= 45);
  t.ok(sum(s, 'cortado_llm_call_duration_seconds_count', { provider: 'anthropic' }) >= 2);
  t.ok(has(s, 'cortado_llm_queue_depth') || m.types.has('cortado_llm_queue_depth'), 'the queue depth is declared');

  // the database, the guard, masking, the rate limit
  t.ok(sum(s, 'cortado_db_query_duration_seconds_count', { engine: 'postgresql' }) >= 1);
  t.ok(sum(s, 'cortado_db_rows_total', { engine: 'postgresql' }) >= ok.body.rows.length);
  t.equal(sum(s, 'cortado_guard_rejections_total', { reason: 'not_select' }), 1);
  t.ok(sum(s, 'cortado_masking_hits_total', { strategy: 'redact' }) >= 1);
  t.equal(sum(s, 'cortado_rate_limit_refusals_total', { rule: '/tables' }), 1);

  // the outbox, the consumers' lag, Node
  t.ok(has(s, 'cortado_outbox_depth'));
  t.ok(has(s, 'cortado_paced_waiting'));
  t.ok(has(s, 'cortado_event_consumer_pending', { consumer: AUDIT_CONSUMER }), 'the audit consumer\'s lag');
  t.ok(has(s, 'nodejs_eventloop_lag_seconds'));
  t.ok(has(s, 'nodejs_heap_size_used_bytes'));

  // the example dashboard reads only series that exist
  const dashboard = readFileSync(path.join(ROOT, 'deploy/grafana-dashboard.json'), 'utf8');
  const used = new Set([...dashboard.matchAll(/\b((?:cortado|nodejs)_[a-z0-9_]+)/g)].map((x) => x[1]!.replace(/_(bucket|sum|count)$/, '')));
  t.ok(used.size >= 20, `the dashboard reads ${used.size} series`);
  for (const name of used) t.ok(m.types.has(name), `the dashboard's ${name} is exposed`);
});

t.test('protected on the edge\'s port: 401 without the token, the token or the admin session let in', async (t) => {
  const none = await call(`${stack.url}/metrics`);
  t.equal(none.status, 401);
  t.equal(none.body.error.code, 'UNAUTHORIZED');
  t.notMatch(none.text, /cortado_/);
  const wrong = await call(`${stack.url}/metrics`, { headers: { authorization: 'Bearer not-the-token' } });
  t.equal(wrong.status, 401);
  const login = await call(`${stack.url}/admin/login`, { body: { username: 'admin', password: 'metrics-admin-pw' } });
  t.equal(login.status, 200, login.text);
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  // an e-mail while email.enabled is false: logged, not sent, and counted so
  const mail = await call(`${stack.url}/admin/test-email`, { body: { to: 'ops@example.com', subject: 'hello', body: 'test' }, headers: { cookie, 'x-csrf-token': login.body.csrf_token } });
  t.equal(mail.status, 200, mail.text);
  t.equal(mail.body.sent, false);
  const admin = await scrape(`${stack.url}/metrics`, { cookie });
  t.equal(admin.status, 200);
  t.ok(has(admin.samples, 'cortado_http_requests_total'));
  t.equal(sum(admin.samples, 'cortado_mail_total', { outcome: 'logged' }), 1);
  t.equal(sum(admin.samples, 'cortado_mail_total', { outcome: 'sent' }), 0);
});

// ---- each event counted when it happens ---------------------------------------------------------

/** The values of some series, read before and after: what changed (the registry is the process's, shared by every stack of this file). */
async function counter(url: string): Promise<(name: string, labels?: Record<string, string>) => Promise<number>> {
  const before = (await scrape(`${url}/metrics`, { authorization: `Bearer ${TOKEN}` })).samples;
  return async (name, labels = {}) => {
    const now = (await scrape(`${url}/metrics`, { authorization: `Bearer ${TOKEN}` })).samples;
    return sum(now, name, labels) - sum(before, name, labels);
  };
}

t.test('counted when it happens: model and database errors, the model\'s queue, scheduled runs and their lateness, mail sent and failed', async (t) => {
  const nats2 = await startNats();
  t.teardown(() => nats2.stop());
  const smtp = await startSmtp();
  let smtpOpen = true;
  t.teardown(() => (smtpOpen ? smtp.close() : undefined));
  const cfg = testConfig({
    natsUrl: nats2.url, db: dbRef, llmUrl: fake.url,
    extra: {
      metrics: { token: TOKEN },
      admin: { enabled: true, username: 'admin', password: 'metrics-admin-pw' },
      config_db: { encryption_key: generateFernetKey() },
      scheduler: { enabled: true },
      email: { enabled: true, smtp: { host: smtp.host, port: smtp.port, from_email: 'cortado@example.org', use_tls: false } },
      // one model call on the wire at a time: the rest wait in the queue
      llm: { max_concurrency: 1 },
    },
  });
  const s = await startStack(cfg, { edge: true, actors: ALL_ACTORS.filter((a) => a !== 'scheduler') });
  t.teardown(() => s.stop());
  // the scheduler on a clock the test can move (a cron tick comes due without waiting for it)
  let offset = 0;
  const scheduler = await startScheduler({ bus: s.running.bus, config: cfg, log: createLogger({ svc: 'test', level: 'silent' }) }, { now: () => Date.now() + offset });
  t.teardown(() => scheduler.stop());
  const delta = await counter(s.url);
  const metric = async (name: string, labels: Record<string, string> = {}): Promise<number> =>
    sum((await scrape(`${s.url}/metrics`, { authorization: `Bearer ${TOKEN}` })).samples, name, labels);

  // the model answers 500 (with its retry): one failed call, by its error code
  fake.script({ status: 500, message: 'overloaded today' }, { status: 500, message: 'overloaded today' });
  const down = await call(`${s.url}/api/query`, { body: { question: 'who are the customers?' } });
  t.equal(down.status, 503, down.text);
  const llmCode = down.body.error.code as string;
  t.equal(llmCode, 'LLM_UNAVAILABLE');
  t.equal(await delta('cortado_llm_errors_total', { provider: 'anthropic', model: 'claude-test', code: llmCode }), 1, 'the failed model call, by provider, model and code');
  t.equal(await delta('cortado_llm_calls_total', { provider: 'anthropic', outcome: 'error' }), 1, 'and as a call that ended in an error');

  // SQL the guard lets through and PostgreSQL refuses while running it (division by zero), each
  // time the model is asked (a failed query is shown to the model once to mend)
  const asked = fake.requests.length;
  fake.fallback(() => ({ text: sqlAnswer('SELECT count(*) / (count(*) - count(*)) AS n FROM orders') }));
  const bad = await call(`${s.url}/api/query`, { body: { question: 'orders per nothing?' } });
  fake.fallback(() => ({ status: 500, message: 'the fake LLM has no script for this request' }));
  t.not(bad.status, 200, bad.text);
  const dbCode = bad.body.error.code as string;
  const runs = fake.requests.length - asked;
  t.ok(runs >= 1);
  t.equal(await delta('cortado_db_errors_total', { engine: 'postgresql', code: dbCode }), runs, `each refused run, by engine and code (${dbCode}; ${runs} runs)`);
  t.equal(await delta('cortado_db_errors_total'), runs, 'and no other');

  // three questions, one model slot: while the first is answered the others wait, and the gauge says so
  const slow = { text: sqlAnswer('SELECT count(*) AS n FROM orders'), delayMs: 1_500 };
  fake.script(slow, slow, slow);
  fake.resetPeak();
  const asks = [1, 2, 3].map((i) => call(`${s.url}/api/query`, { body: { question: `how many orders, ${i}?` } }));
  let deepest = 0;
  let settled = false;
  void Promise.allSettled(asks).then(() => { settled = true; });
  while (!settled) {
    deepest = Math.max(deepest, await metric('cortado_llm_queue_depth', { provider: 'anthropic' }));
    await new Promise((r) => setTimeout(r, 100));
  }
  for (const r of await Promise.all(asks)) t.equal(r.status, 200, r.text);
  t.equal(fake.peakOpen, 1, 'one call on the wire at a time');
  t.equal(deepest, 2, 'two calls waited for the one slot');
  t.equal(await metric('cortado_llm_queue_depth', { provider: 'anthropic' }), 0, 'none wait once all are answered');

  // a scheduled report run now: a run (manual, no lateness) and its e-mail through the SMTP server
  const login = await call(`${s.url}/admin/login`, { body: { username: 'admin', password: 'metrics-admin-pw' } });
  t.equal(login.status, 200, login.text);
  const admin = { cookie: (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '', 'x-csrf-token': login.body.csrf_token as string };
  const made = await call(`${s.url}/api/schedules`, {
    body: { name: 'Orders every minute', question: 'How many orders?', sql: 'SELECT count(*) AS n FROM orders', cron: '* * * * *', email_recipients: ['ops@example.com'], format: 'csv' },
    headers: admin,
  });
  t.equal(made.status, 201, made.text);
  const run = await call(`${s.url}/api/schedules/${made.body.id}/run`, { method: 'POST', headers: admin });
  t.equal(run.status, 202, run.text);
  await smtp.waitFor(1, 30_000);
  await until('the run now counted', async () => (await delta('cortado_scheduler_runs_total', { outcome: 'success', trigger: 'manual' })) === 1);
  t.equal(await delta('cortado_scheduler_runs_total', { outcome: 'success', trigger: 'manual' }), 1, 'the run now, by outcome and trigger');
  t.equal(await delta('cortado_scheduler_lateness_seconds_count'), 0, 'a run now is not late');
  t.equal(await delta('cortado_mail_total', { outcome: 'sent' }), 1, 'its report, sent');

  // the scheduler's clock 5 s past the next minute: that tick is due, and runs 5 s late
  const tick = Math.ceil((Date.now() + 1_000) / 60_000) * 60_000;
  offset = tick + 5_000 - Date.now();
  await smtp.waitFor(2, 30_000);
  await until('the cron run counted', async () => (await delta('cortado_scheduler_runs_total', { trigger: 'cron' })) === 1);
  t.equal(await delta('cortado_scheduler_runs_total', { outcome: 'success', trigger: 'cron' }), 1, 'the cron run');
  t.equal(await delta('cortado_scheduler_lateness_seconds_count'), 1, 'its lateness observed once');
  const late = await delta('cortado_scheduler_lateness_seconds_sum');
  t.ok(late >= 5 && late < 30, `it started ${late.toFixed(2)} s after its tick`);
  t.equal(await delta('cortado_scheduler_lateness_seconds_bucket', { le: '1' }), 0, 'not in the buckets below its lateness');
  t.equal(await delta('cortado_scheduler_lateness_seconds_bucket', { le: '30' }), 1, 'in the ones above it');
  t.equal(await delta('cortado_mail_total', { outcome: 'sent' }), 2, 'its report, sent too');

  // the SMTP server gone: the next e-mail fails, and is counted so
  await smtp.close();
  smtpOpen = false;
  const failed = await call(`${s.url}/admin/test-email`, { body: { to: 'ops@example.com', subject: 'hello', body: 'test' }, headers: admin });
  t.equal(failed.status, 200, failed.text);
  t.match(failed.body, { ok: false, sent: false, smtp: 'connection' });
  t.equal(await delta('cortado_mail_total', { outcome: 'failed' }), 1, 'the failed e-mail');
  t.equal(await delta('cortado_mail_total', { outcome: 'sent' }), 2, 'not counted as sent');
});

// ---- on a listener of its own -------------------------------------------------------------------

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((r) => srv.close(r));
  return port;
}

/** A cortado process of one role with its metrics on a listener of its own, on the given NATS. */
async function spawnRole(t: { teardown(fn: () => unknown): void }, natsUrl: string, role: string): Promise<{ port: number; child: ReturnType<typeof spawn>; out: () => string; exited: Promise<number | null>; ready: (re: RegExp) => Promise<void> }> {
  const port = await freePort();
  const obj = testConfigObject({ natsUrl, db: dbRef, llmUrl: fake.url, extra: { metrics: { listen: `127.0.0.1:${port}` } } });
  const file = path.join(dir, `${role.replace(/\W/g, '-')}.yaml`);
  writeFileSync(file, YAML.stringify(obj));
  const child = endWithProcess(spawn(process.execPath, [path.join(ROOT, 'bin/cortado.js'), '--config', file, '--role', role], {
    cwd: ROOT, env: { ...process.env, CORTADO_LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'],
  }));
  let out = '';
  child.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL'); });
  const ready = async (re: RegExp) => {
    const end = Date.now() + 60_000;
    while (!re.test(out) && Date.now() < end && child.exitCode === null) await new Promise((r) => setTimeout(r, 100));
  };
  return { port, child, out: () => out, exited, ready };
}

t.test('metrics.listen: a listener of its own, in an actor-only process too', async (t) => {
  const nats2 = await startNats();
  t.teardown(() => nats2.stop());
  const { port: childPort, child, out: output, exited, ready } = await spawnRole(t, nats2.url, 'actors:executor');

  const edgeConfig = testConfig({ natsUrl: nats2.url, db: dbRef, llmUrl: fake.url, extra: { metrics: { listen: '127.0.0.1:0', token: TOKEN } } });
  const edge = await startStack(edgeConfig, { edge: true, actors: ALL_ACTORS.filter((a) => a !== 'executor') });
  t.teardown(() => edge.stop());
  await ready(/executor ready/);
  const out = output();
  t.match(out, /executor ready/, 'the actor-only process started');

  fake.script({ text: sqlAnswer('SELECT count(*) AS n FROM orders') });
  const res = await call(`${edge.url}/api/query`, { body: { question: 'how many orders?' } });
  t.equal(res.status, 200, res.text);

  const onMain = await call(`${edge.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  t.equal(onMain.status, 404, 'not on the main port once it has a listener of its own');
  const own = await scrape(`http://127.0.0.1:${edge.running.metrics!.port}/metrics`);
  t.equal(own.status, 200, 'the listener needs no credential');
  t.ok(sum(own.samples, 'cortado_bus_request_duration_seconds_count', { subject: 'sql.execute', side: 'client' }) >= 1);
  t.equal((await fetch(`http://127.0.0.1:${edge.running.metrics!.port}/other`)).status, 404, 'only /metrics and /health are served there');

  const actor = await scrape(`http://127.0.0.1:${childPort}/metrics`);
  t.equal(actor.status, 200, out);
  t.equal(sum(actor.samples, 'cortado_bus_request_duration_seconds_count', { subject: 'sql.execute', side: 'server' }), 1, 'the executor process counted the query it ran');
  t.ok(sum(actor.samples, 'cortado_db_rows_total', { engine: 'postgresql' }) >= 1);
  t.equal(sum(actor.samples, 'cortado_http_requests_total'), 0, 'an actor-only process has no HTTP of its own');
  t.equal(sum(actor.samples, 'cortado_llm_calls_total'), 0, 'nor the model calls another process made');

  // the actor pod's probe: the process's own health on the same listener
  const health = await fetch(`http://127.0.0.1:${childPort}/health`);
  t.equal(health.status, 200);
  t.same(await health.json(), { status: 'ok', roles: ['executor'], bus: 'up', audit: 'ok' });
  t.equal((await fetch(`http://127.0.0.1:${childPort}/health`, { method: 'POST' })).status, 405);

  child.kill('SIGTERM');
  t.equal(await exited, 0);
});

t.test('metrics.listen /health: the process itself, alive while NATS is away (the client reconnects)', async (t) => {
  const nats3 = await startNats();
  t.teardown(() => nats3.stop());
  const { port, child, out, ready } = await spawnRole(t, nats3.url, 'actors:llm');
  // the listener is the last thing a process starts (after its actors say they are ready)
  await ready(/metrics on http/);
  const up = await fetch(`http://127.0.0.1:${port}/health`);
  t.equal(up.status, 200, out());
  t.same(await up.json(), { status: 'ok', roles: ['llm'], bus: 'up', audit: 'ok' });

  await nats3.stop();
  let away: { status?: string; bus?: string; bus_down_for_ms?: number } = {};
  for (let i = 0; i < 100 && away.bus !== 'reconnecting'; i++) {
    await new Promise((r) => setTimeout(r, 100));
    const r = await fetch(`http://127.0.0.1:${port}/health`);
    t.equal(r.status, 200, 'a broker away is no reason to restart the pod');
    away = await r.json() as typeof away;
  }
  t.equal(away.bus, 'reconnecting', 'the probe says the bus is reconnecting');
  t.type(away.bus_down_for_ms, 'number');
  child.kill('SIGKILL');
});

t.test('metrics.enabled: false: no /metrics at all', async (t) => {
  const off = await startStack(testConfig({ natsUrl: nats.url, extra: { metrics: { enabled: false, token: TOKEN } } }), { edge: true, actors: [] });
  t.teardown(() => off.stop());
  const res = await call(`${off.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  t.equal(res.status, 404);
  t.match(res.body.error.message, /metrics\.enabled/);
});

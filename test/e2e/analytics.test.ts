/**
 * Analytics end to end: every actor on a private NATS, a real PostgreSQL to question, a fresh
 * PostgreSQL database for analytics, and a local server speaking Anthropic's API. A hundred
 * questions from three channels (HTTP /api/query, the legacy /query, the MCP tool ask_database),
 * some answered with chat, some failing; then the report (over the bus: the /api/analytics
 * routes are the page's) is checked against the stored rows themselves, and against what each
 * caller was told. Feedback is stored; with analytics off nothing is.
 */
import t from 'tap';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { AnalyticsFeedback, AnalyticsReportGet } from '../../protocol/subjects.js';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { testConfig } from '../helpers/config.js';
import { chatAnswer, sqlAnswer, startFakeLlm, type FakeLlm, type RecordedRequest } from '../helpers/fake-llm.js';
import { closeClient, connectClient, issueToken } from '../helpers/mcp.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb, type TestDb } from '../helpers/pg.js';
import { call, startStack, type Stack } from '../helpers/stack.js';

const app = await createTestDb('an_app');
await app.pool.query(GUARD_SCHEMA_SQL);
const fake = await startFakeLlm();
t.teardown(async () => {
  await fake.close();
  await app.drop();
});

/** the tokens the model server says each call took (told by question number) */
function usageOf(req: RecordedRequest): { said: string; usage: { input_tokens: number; output_tokens: number } } {
  // the whole conversation: a correction's last message is the database's error, not the question
  const said = [req.system, ...req.messages.map((m) => m.content)].join('\n');
  const n = Number(/#(\d+)/.exec(said)?.[1] ?? 0);
  return { said, usage: { input_tokens: 100 + n, output_tokens: 10 + (n % 7) } };
}
/** llm.pricing for the test model: USD per million tokens */
const PRICE = { input_per_mtok: 1000, output_per_mtok: 2000 };

/** The model's script, by the marker in the question: fail → SQL the database refuses, chat → chat. */
function script(llm: FakeLlm): void {
  llm.fallback((req) => {
    const { said, usage } = usageOf(req);
    if (said.includes('[fail]')) return { text: sqlAnswer('SELECT missing_column FROM orders'), usage };
    if (said.includes('[chat]')) return { text: chatAnswer('Hello! Ask me about orders.'), usage };
    return { text: sqlAnswer('SELECT status, count(*) AS n FROM orders GROUP BY status ORDER BY status'), usage };
  });
}

async function stackWith(analytics: Record<string, unknown>, db: TestDb, extra: Record<string, unknown> = {}): Promise<{ stack: Stack; stop(): Promise<void> }> {
  const nats = await startNats();
  const config = testConfig({
    natsUrl: nats.url,
    db: { host: app.host, port: app.port, name: app.name, user: app.user },
    llmUrl: fake.url,
    extra: {
      config_db: { encryption_key: generateFernetKey() },
      insights: { mode: 'statistical_only' },
      llm: { pricing: { 'claude-test': PRICE } },
      analytics: { postgresql: { host: db.host, port: db.port, database: db.name, user: db.user }, ...analytics },
      ...extra,
    },
  });
  const stack = await startStack(config);
  return { stack, stop: async () => { await stack.stop(); await nats.stop(); } };
}

interface Asked { rid: string; channel: 'api' | 'legacy' | 'mcp'; kind: 'sql' | 'chat' | 'fail'; code?: string; total_ms?: number; input_tokens?: number }

/** The i-th question: its channel and what the model does with it. */
function plan(i: number): { channel: Asked['channel']; kind: Asked['kind']; text: string } {
  const channel = i % 10 < 4 ? 'api' : i % 10 < 7 ? 'legacy' : 'mcp';
  const kind = i % 9 === 4 ? 'fail' : i % 11 === 3 ? 'chat' : 'sql';
  return { channel, kind, text: `How many orders per status? #${i}${kind === 'sql' ? '' : ` [${kind}]`}` };
}

/** a percentile as PostgreSQL's percentile_cont computes it, here in JavaScript */
function percentile(values: number[], p: number): number {
  const v = [...values].sort((a, b) => a - b);
  const pos = p * (v.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return v[lo]! + (v[hi]! - v[lo]!) * (pos - lo);
}

async function waitForRows(db: TestDb, n: number): Promise<number> {
  const until = Date.now() + 60_000;
  let count = 0;
  while (Date.now() < until) {
    count = (await db.pool.query('SELECT count(*)::int AS n FROM cortado_analytics_questions').catch(() => ({ rows: [{ n: 0 }] }))).rows[0].n as number;
    if (count >= n) return count;
    await new Promise((r) => setTimeout(r, 200));
  }
  return count;
}

t.test('a hundred questions from three channels, in the report and in the database alike', { timeout: 240_000 }, async (t) => {
  const adb = await createTestDb('an_store');
  t.teardown(() => adb.drop());
  script(fake);
  fake.requests.length = 0;
  const { stack, stop } = await stackWith({ enabled: true, backend: 'postgresql' }, adb);
  t.teardown(stop);
  const bus = stack.running.bus;
  const mcpToken = await issueToken(bus, 'mia');
  const legacyToken = await issueToken(bus, 'leo');
  const client = await connectClient(stack.url, 'http', mcpToken.token);
  t.teardown(() => closeClient(client));

  const asked: Asked[] = [];
  const ask = async (i: number): Promise<void> => {
    const { channel, kind, text } = plan(i);
    if (channel === 'mcp') {
      const r = await client.callTool({ name: 'ask_database', arguments: { question: text } }) as { isError?: boolean; structuredContent?: any };
      const rid = r.isError ? r.structuredContent?.error?.request_id : r.structuredContent?.request_id;
      asked.push({ rid: String(rid), channel, kind, ...(r.isError ? { code: r.structuredContent?.error?.code } : {}) });
      return;
    }
    const res = channel === 'api'
      ? await call(`${stack.url}/api/query`, { body: { question: text } })
      : await call(`${stack.url}/query`, { body: { question: text }, headers: { authorization: `Bearer ${legacyToken.token}` } });
    const rid = res.headers.get('x-request-id') ?? '';
    asked.push({
      rid, channel, kind,
      ...(res.status >= 400 ? { code: res.body?.error?.code } : {}),
      ...(channel === 'api' && res.status === 200 ? { total_ms: res.body.timing_ms.total, input_tokens: res.body.usage.input_tokens } : {}),
    });
  };
  for (let i = 0; i < 100; i += 10) await Promise.all(Array.from({ length: 10 }, (_, k) => ask(i + k)));
  // the page at `/`: a same-origin browser fetch
  const page = await call(`${stack.url}/api/query`, { body: { question: 'How many orders per status? #100' }, headers: { 'sec-fetch-site': 'same-origin' } });
  t.equal(page.status, 200);

  t.equal(asked.length, 100);
  const failed = asked.filter((a) => a.kind === 'fail');
  t.ok(failed.length >= 10, `${failed.length} questions meant to fail`);
  t.ok(failed.every((a) => a.code), 'and each failed for its caller');
  t.ok(asked.filter((a) => a.kind !== 'fail').every((a) => !a.code), 'the others were answered');
  t.equal(new Set(asked.map((a) => a.rid)).size, 100, 'every question has its own request id');

  t.equal(await waitForRows(adb, 101), 101, 'every question is stored, once');

  const rows = (await adb.pool.query(`SELECT request_id, channel, widget, username, intent, code, tables, total_ms, durations, input_tokens::int AS input_tokens,
    output_tokens::int AS output_tokens, question, row_count FROM cortado_analytics_questions`)).rows as Array<Record<string, any>>;
  const byRid = new Map(rows.map((r) => [r.request_id as string, r]));
  for (const a of asked) {
    const r = byRid.get(a.rid);
    if (!r) { t.fail(`${a.rid} (${a.channel}) is not stored`); continue; }
    if (r.channel !== a.channel || (r.code ?? undefined) !== a.code) t.fail(`${a.rid}: stored ${r.channel}/${r.code}, asked ${a.channel}/${a.code}`);
    if (a.total_ms !== undefined && r.total_ms !== a.total_ms) t.fail(`${a.rid}: stored total ${r.total_ms} ms, the caller was told ${a.total_ms}`);
    if (a.input_tokens !== undefined && r.input_tokens !== a.input_tokens) t.fail(`${a.rid}: stored ${r.input_tokens} input tokens, the caller was told ${a.input_tokens}`);
  }
  t.pass('each stored question matches what its caller was told (channel, error code, total time, tokens)');
  t.same([...new Set(rows.map((r) => `${r.channel}:${r.widget}`))].sort(), ['api:api', 'api:dashboard', 'legacy:assistant', 'mcp:mcp'], 'the widget of each route');
  t.same([...new Set(rows.map((r) => r.username ?? '-'))].sort(), ['-', 'leo', 'mia'], 'the token labels; /api/query asks anonymously');
  t.equal(rows.filter((r) => r.question !== null).length, 0, 'no question text kept (analytics.store_questions off)');
  t.equal(rows.filter((r) => r.intent === 'chat').length, asked.filter((a) => a.kind === 'chat').length, 'the chat answers');
  t.ok(rows.filter((r) => r.intent === 'sql' && !r.code).every((r) => r.row_count > 0 && r.tables.length > 0), 'answered SQL questions have rows and tables');

  const report = await bus.request(AnalyticsReportGet, {}, { requestId: 'report' });
  t.equal(report.enabled, true);
  t.equal(report.totals.questions, 101);
  t.equal(report.totals.errors, failed.length);
  t.equal(report.totals.input_tokens, rows.reduce((s, r) => s + r.input_tokens, 0));
  t.equal(report.totals.output_tokens, rows.reduce((s, r) => s + r.output_tokens, 0));
  t.equal(report.totals.users, 2);
  const perChannel = Object.fromEntries(report.channels.map((c) => [c.channel, c.questions]));
  t.same(perChannel, {
    api: asked.filter((a) => a.channel === 'api').length + 1,
    legacy: asked.filter((a) => a.channel === 'legacy').length,
    mcp: asked.filter((a) => a.channel === 'mcp').length,
  }, 'questions per channel: the dashboard\'s question is on the api channel');
  t.same(Object.fromEntries(report.widgets.map((w) => [w.widget, w.questions])), {
    api: asked.filter((a) => a.channel === 'api').length,
    dashboard: 1,
    assistant: asked.filter((a) => a.channel === 'legacy').length,
    mcp: asked.filter((a) => a.channel === 'mcp').length,
  }, 'questions per widget: the dashboard\'s apart from the plain API calls');
  const dashboardOnly = await bus.request(AnalyticsReportGet, { widget: 'dashboard' }, { requestId: 'report-dashboard' });
  t.equal(dashboardOnly.totals.questions, 1, 'the widget filter: the dashboard\'s question alone');
  t.same(dashboardOnly.slowest.map((s) => [s.request_id, s.channel, s.widget]), [[page.headers.get('x-request-id'), 'api', 'dashboard']]);
  const apiOnly = await bus.request(AnalyticsReportGet, { widget: 'api' }, { requestId: 'report-api' });
  t.equal(apiOnly.totals.questions, asked.filter((a) => a.channel === 'api').length, 'and the plain API calls without it');
  const codes = new Map<string, number>();
  for (const r of rows) if (r.code) codes.set(r.code, (codes.get(r.code) ?? 0) + 1);
  t.same(Object.fromEntries(report.errors.map((e) => [e.code, e.count])), Object.fromEntries(codes), 'errors by code');
  const today = new Date().toISOString().slice(0, 10);
  t.equal(report.per_day.length, 31);
  t.equal(report.per_day.at(-1)?.day, today);
  t.equal(report.per_day.at(-1)?.questions, 101, 'all of them today');
  t.equal(report.per_day.slice(0, -1).reduce((s, d) => s + d.questions, 0), 0, 'the other days are zeros');

  // the percentiles of each step, from the stored durations, computed here
  const steps = new Map<string, number[]>();
  for (const r of rows) for (const [step, ms] of Object.entries(r.durations as Record<string, number>)) steps.set(step, [...(steps.get(step) ?? []), ms]);
  t.ok(['schema', 'generate', 'execute', 'mask', 'total'].every((s) => steps.has(s)), 'the pipeline steps are timed');
  t.same(report.steps.map((s) => s.step).sort(), [...steps.keys()].sort());
  for (const s of report.steps) {
    const values = steps.get(s.step) ?? [];
    t.equal(s.count, values.length, `${s.step}: count`);
    t.ok(Math.abs(s.p50_ms - percentile(values, 0.5)) < 1e-6, `${s.step}: p50 ${s.p50_ms}`);
    t.ok(Math.abs(s.p95_ms - percentile(values, 0.95)) < 1e-6, `${s.step}: p95 ${s.p95_ms}`);
  }
  // and the channel filter against SQL over the stored rows
  const mcpOnly = await bus.request(AnalyticsReportGet, { channel: 'mcp' }, { requestId: 'report-mcp' });
  const sqlMcp = (await adb.pool.query(`SELECT count(*)::int AS n, count(code)::int AS e,
      percentile_cont(0.95) WITHIN GROUP (ORDER BY total_ms) AS p95 FROM cortado_analytics_questions WHERE channel = 'mcp'`)).rows[0];
  t.equal(mcpOnly.totals.questions, sqlMcp.n);
  t.equal(mcpOnly.totals.errors, sqlMcp.e);
  t.equal(mcpOnly.steps.find((s) => s.step === 'total')?.p95_ms, sqlMcp.p95);
  t.equal(mcpOnly.users.length, 1);
  t.equal(mcpOnly.users[0]?.user, 'mia');

  const sumModels = (await adb.pool.query('SELECT model, sum(calls)::int AS calls, sum(input_tokens)::int AS i FROM cortado_analytics_models GROUP BY model')).rows;
  t.same(report.models.map((m) => ({ model: m.model, calls: m.calls, i: m.input_tokens })), sumModels, 'tokens by model');
  t.equal(report.models[0]?.model, 'anthropic:claude-test');
  t.equal(report.models.reduce((n, m) => n + m.calls, 0), fake.requests.length, 'every call the model server received, counted once');
  const expectedCost = fake.requests.reduce((sum, req) => {
    const { usage } = usageOf(req);
    return sum + Math.round((usage.input_tokens * PRICE.input_per_mtok + usage.output_tokens * PRICE.output_per_mtok)) / 1e6;
  }, 0);
  t.ok(Math.abs(report.totals.cost_usd - expectedCost) < 1e-6, `the estimated cost (llm.pricing): ${report.totals.cost_usd} ≈ ${expectedCost}`);
  const sqlCost = (await adb.pool.query('SELECT sum(cost_usd)::float8 AS c FROM cortado_analytics_models')).rows[0].c as number;
  t.ok(Math.abs(report.totals.cost_usd - sqlCost) < 1e-9, 'and the same as the stored models say');
  t.ok(report.tables.length > 0 && report.tables.some((x) => /orders/.test(x.table)), 'the busiest tables');
  t.equal(report.slowest.length, 10);
  t.equal(report.slowest[0]?.total_ms, Math.max(...rows.map((r) => r.total_ms)));

  // feedback from whoever asked: two /api/query answers (asked from this address), one legacy answer (its token)
  const [first, second] = asked.filter((a) => a.kind === 'sql' && a.channel === 'api');
  const legacy = asked.find((a) => a.kind === 'sql' && a.channel === 'legacy');
  const rate = (body: Record<string, unknown>, headers: Record<string, string> = {}) => call(`${stack.url}/api/feedback`, { body, headers });
  t.same((await rate({ request_id: first!.rid, rating: 'up' })).body, { ok: true });
  t.same((await rate({ request_id: second!.rid, rating: 'down', comment: 'wrong statuses' })).body, { ok: true });
  const bearer = { authorization: `Bearer ${legacyToken.token}` };
  const foreign = await rate({ request_id: first!.rid, rating: 'down', comment: 'not mine' }, bearer);
  t.equal(foreign.status, 403, `another caller cannot rate the answer: ${foreign.text}`);
  t.same((await rate({ request_id: legacy!.rid, rating: 'up' }, bearer)).body, { ok: true }, 'the token rates its own answer');
  const fb = (await adb.pool.query('SELECT request_id, rating, comment, username FROM cortado_analytics_feedback ORDER BY rating DESC, username')).rows;
  t.same(fb, [
    { request_id: first!.rid, rating: 'up', comment: null, username: '' },
    { request_id: legacy!.rid, rating: 'up', comment: null, username: 'leo' },
    { request_id: second!.rid, rating: 'down', comment: 'wrong statuses', username: '' },
  ], 'feedback stored');
  const after = await bus.request(AnalyticsReportGet, {}, { requestId: 'report-2' });
  t.match(after.totals, { likes: 2, dislikes: 1 });
  t.same(after.disliked.map((d) => [d.request_id, d.comment]), [[second!.rid, 'wrong statuses']]);
});

t.test('hybrid insights: the model call made after the answer is in the question\'s record', { timeout: 120_000 }, async (t) => {
  const adb = await createTestDb('an_hybrid');
  t.teardown(() => adb.drop());
  script(fake);
  fake.requests.length = 0;
  const { stack, stop } = await stackWith({ enabled: true }, adb, { insights: { mode: 'hybrid' } });
  t.teardown(stop);
  const rids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await call(`${stack.url}/api/query`, { body: { question: `How many orders per status? #${i}` } });
    t.equal(res.status, 200);
    t.equal(res.body.insights_pending, true, 'the model insights follow the answer');
    rids.push(res.headers.get('x-request-id') ?? '');
  }
  t.equal(await waitForRows(adb, 3), 3);
  const rows = (await adb.pool.query('SELECT request_id, sum(calls)::int AS calls FROM cortado_analytics_models GROUP BY request_id')).rows as Array<{ request_id: string; calls: number }>;
  t.same(rows.map((r) => r.calls), [2, 2, 2], 'two model calls each: the SQL, and the insights after the answer');
  t.equal(rows.reduce((n, r) => n + r.calls, 0), fake.requests.length, 'as many as the model server received');
});

t.test('analytics off: questions answered, nothing stored, no table made', { timeout: 120_000 }, async (t) => {
  const adb = await createTestDb('an_off');
  t.teardown(() => adb.drop());
  script(fake);
  const { stack, stop } = await stackWith({ enabled: false }, adb);
  t.teardown(stop);
  for (let i = 0; i < 5; i++) {
    const res = await call(`${stack.url}/api/query`, { body: { question: `How many orders per status? #${i}` } });
    t.equal(res.status, 200);
  }
  const bus = stack.running.bus;
  const report = await bus.request(AnalyticsReportGet, {}, { requestId: 'off' });
  t.match(report, { enabled: false, totals: { questions: 0 } });
  t.same(await bus.request(AnalyticsFeedback, { request_id: 'x', rating: 'up', owner: 'c:someone' }, { requestId: 'off-fb' }), { ok: false });
  const tables = await adb.pool.query(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name LIKE 'cortado_analytics%'`);
  t.equal(tables.rows[0].n, 0);
});

/**
 * Analytics storage and its report on a real PostgreSQL: known questions in, the report's
 * counts, per-day zeros, percentiles and top lists checked against figures computed here from
 * the same rows; dedupe, feedback that replaces or races its question, retention, the question
 * texts kept only when asked; and the actor over a real bus, on and off.
 */
import { randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import { start } from '../../actors/analytics/actor.js';
import { feedback, purge, range, record, report, type AnalyticsDeps } from '../../actors/analytics/handle.js';
import { Bus } from '../../runtime/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import type { QuestionCompleted } from '../../protocol/schemas/analytics.js';
import { AnalyticsFeedback, AnalyticsReportGet, QuestionCompletedEvt } from '../../protocol/subjects.js';
import { ANALYTICS_MIGRATIONS, ANALYTICS_VERSION_TABLE, AnalyticsStore, analyticsConnection } from '../../store/analytics.js';
import { migrate } from '../../store/migrations.js';
import { testConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb, type TestDb } from '../helpers/pg.js';

const log = createLogger({ svc: 'test', level: 'silent' });
const db = await createTestDb('analytics');
const store = AnalyticsStore.open({ host: db.host, port: db.port, database: db.name, user: db.user, password: '' }, log);
t.teardown(async () => {
  await store.close();
  await db.drop();
});

const analyticsSection = (over: Partial<{ store_questions: boolean; retention_days: number }> = {}) => ({
  enabled: true, backend: 'postgresql', postgresql: { host: db.host, port: db.port, database: db.name, user: db.user, password: '' },
  store_questions: false, retention_days: 90, ...over,
});

function q(request_id: string, ts: string, over: Partial<QuestionCompleted> = {}): QuestionCompleted {
  return {
    id: `evt-${request_id}`, ts, request_id, question: `question ${request_id}`, tables: [], durations: { total: 1 }, models: [], intent: 'sql', ...over,
  };
}

const M_A = 'anthropic:claude-a';
const M_B = 'anthropic:claude-b';
/** the fixture: five questions inside 2026-03-01 .. 2026-03-04 and one before it */
const ROWS: QuestionCompleted[] = [
  q('q1', '2026-03-02T10:00:00Z', { channel: 'api', widget: 'api', user: 'alice', tables: ['public.orders'], row_count: 5,
    durations: { schema: 10, generate: 50, execute: 30, total: 100 }, models: [{ model: M_A, calls: 1, input_tokens: 100, output_tokens: 20, cost_usd: 0.01 }] }),
  q('q2', '2026-03-02T11:00:00Z', { channel: 'api', widget: 'dashboard', user: 'bob', tables: ['public.orders', 'public.customers'], row_count: 7,
    durations: { schema: 12, generate: 120, execute: 60, total: 200 }, models: [{ model: M_A, calls: 1, input_tokens: 200, output_tokens: 40, cost_usd: 0.02 }] }),
  q('q3', '2026-03-02T23:59:59Z', { channel: 'mcp', widget: 'mcp', user: 'alice', tables: ['public.orders'], code: 'DB_TIMEOUT',
    durations: { schema: 8, generate: 100, execute: 290, total: 400 }, models: [{ model: M_A, calls: 1, input_tokens: 50, output_tokens: 10 }] }),
  q('q4', '2026-03-04T00:00:00Z', { channel: 'legacy', widget: 'assistant', intent: 'chat',
    durations: { schema: 5, chat: 40, total: 50 }, models: [{ model: M_B, calls: 2, input_tokens: 30, output_tokens: 5, cost_usd: 0.001 }] }),
  q('q5', '2026-03-04T12:00:00Z', { channel: 'mcp', widget: 'mcp', user: 'carol', tables: ['public.customers'], code: 'LLM_BAD_REPLY',
    durations: { schema: 20, generate: 900, total: 1000 },
    models: [{ model: M_A, calls: 1, input_tokens: 10, output_tokens: 0 }, { model: M_B, calls: 1, input_tokens: 10, output_tokens: 0, cost_usd: 0.002 }] }),
  q('q0', '2026-02-28T12:00:00Z', { channel: 'api', user: 'alice', tables: ['public.orders'], durations: { total: 5 }, models: [{ model: M_A, calls: 1, input_tokens: 999, output_tokens: 999 }] }),
];
const IN_RANGE = ROWS.filter((r) => r.request_id !== 'q0');

/** percentile_cont: linear interpolation between the closest ranks */
function percentile(values: number[], p: number): number {
  const v = [...values].sort((a, b) => a - b);
  const pos = p * (v.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return v[lo]! + (v[hi]! - v[lo]!) * (pos - lo);
}

const close = (t: Test, actual: number, expected: number, what: string): void => {
  t.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual} ≈ ${expected}`);
};

const filter = { from: '2026-03-01', to: '2026-03-04' };
const deps = (over: Partial<{ store_questions: boolean; retention_days: number }> = {}, now = new Date('2026-03-05T00:00:00Z')): AnalyticsDeps =>
  ({ store, config: { analytics: analyticsSection(over) } as AnalyticsDeps['config'], now: () => now });

async function tableNames(target: TestDb): Promise<string[]> {
  const r = await target.pool.query(`SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'cortado_analytics%' ORDER BY 1`);
  return r.rows.map((x: { table_name: string }) => x.table_name);
}

t.test('the tables are made when missing, with their own version table, twice without harm', async (t) => {
  await store.init();
  await store.init();
  t.same(await tableNames(db), ['cortado_analytics_feedback', 'cortado_analytics_models', 'cortado_analytics_questions', 'cortado_analytics_schema_version']);
  const v = await db.pool.query('SELECT version FROM cortado_analytics_schema_version ORDER BY version');
  t.same(v.rows, [{ version: 1 }, { version: 2 }]);
  const cfg = await db.pool.query(`SELECT to_regclass('cortado_schema_version') AS r`);
  t.equal(cfg.rows[0].r, null, "config_db's version table is not touched");
});

t.test('version 2 keeps the ratings given before it, one per user as they were', async (t) => {
  const old = await createTestDb('analytics_v1');
  t.teardown(() => old.drop());
  await migrate(old.pool, log, ANALYTICS_MIGRATIONS.filter((m) => m.version === 1), ANALYTICS_VERSION_TABLE);
  await old.pool.query(`INSERT INTO cortado_analytics_feedback (request_id, username, rating, ts) VALUES ('r1', 'alice', 'up', now()), ('r1', 'bob', 'down', now()), ('r2', '', 'up', now())`);
  const upgraded = AnalyticsStore.open({ host: old.host, port: old.port, database: old.name, user: old.user, password: '' }, log);
  t.teardown(() => upgraded.close());
  await upgraded.init();
  const rows = await old.pool.query('SELECT request_id, username, owner FROM cortado_analytics_feedback ORDER BY request_id, username');
  t.same(rows.rows, [
    { request_id: 'r1', username: 'alice', owner: 'user:alice' },
    { request_id: 'r1', username: 'bob', owner: 'user:bob' },
    { request_id: 'r2', username: '', owner: 'user:' },
  ]);
});

t.test('each question is kept once; the text only when store_questions', async (t) => {
  for (const r of ROWS) t.ok(await record(r, deps()), `${r.request_id} recorded`);
  t.notOk(await record(ROWS[0]!, deps()), 'the same question again (a redelivery) is not');
  t.notOk(await record({ ...ROWS[0]!, id: 'another-event-id' }, deps()), 'nor under another event id');
  const n = await db.pool.query('SELECT count(*)::int AS n FROM cortado_analytics_questions');
  t.equal(n.rows[0].n, ROWS.length);
  const m = await db.pool.query(`SELECT calls, input_tokens::int AS i FROM cortado_analytics_models WHERE request_id = 'q1'`);
  t.same(m.rows, [{ calls: 1, i: 100 }], 'the models of a redelivered question are not counted twice');
  const texts = await db.pool.query('SELECT count(*)::int AS n FROM cortado_analytics_questions WHERE question IS NOT NULL');
  t.equal(texts.rows[0].n, 0, 'no question text with store_questions off');
});

t.test('the report, computed by the database, against the same figures computed here', async (t) => {
  const r = await report(filter, deps());
  t.equal(r.enabled, true);
  t.equal(r.store_questions, false);
  t.same(r.range, { from: '2026-03-01T00:00:00.000Z', to: '2026-03-05T00:00:00.000Z' }, 'a bare date as `to` includes that day');
  const inTokens = IN_RANGE.flatMap((x) => x.models).reduce((s, m) => s + m.input_tokens, 0);
  const outTokens = IN_RANGE.flatMap((x) => x.models).reduce((s, m) => s + m.output_tokens, 0);
  t.match(r.totals, { questions: 5, errors: 2, users: 3, input_tokens: inTokens, output_tokens: outTokens, likes: 0, dislikes: 0, clarifications: 0 });
  close(t, r.totals.cost_usd, 0.033, 'cost of the priced models');

  t.same(r.per_day.map((d) => [d.day, d.questions, d.errors]), [
    ['2026-03-01', 0, 0], ['2026-03-02', 3, 1], ['2026-03-03', 0, 0], ['2026-03-04', 2, 1],
  ], 'every day of the range, the empty ones as zeros, a question at 23:59:59 UTC on its own day');
  t.same(r.per_day.find((d) => d.day === '2026-03-02')?.input_tokens, 350);

  for (const step of ['schema', 'generate', 'execute', 'chat', 'total']) {
    const values = IN_RANGE.map((x) => x.durations[step]).filter((v): v is number => v !== undefined);
    const s = r.steps.find((x) => x.step === step);
    t.equal(s?.count, values.length, `${step}: count`);
    close(t, s?.p50_ms ?? NaN, percentile(values, 0.5), `${step}: p50`);
    close(t, s?.p95_ms ?? NaN, percentile(values, 0.95), `${step}: p95`);
  }
  t.same(r.steps.map((s) => s.step), ['schema', 'generate', 'execute', 'total', 'chat'], 'the steps in pipeline order, others after');

  t.same(r.errors, [{ code: 'DB_TIMEOUT', count: 1 }, { code: 'LLM_BAD_REPLY', count: 1 }]);
  t.same(r.channels, [{ channel: 'api', questions: 2 }, { channel: 'mcp', questions: 2 }, { channel: 'legacy', questions: 1 }]);
  t.same(r.widgets, [{ widget: 'mcp', questions: 2 }, { widget: 'api', questions: 1 }, { widget: 'assistant', questions: 1 }, { widget: 'dashboard', questions: 1 }],
    'by widget, the dashboard\'s question apart from the plain API call on the same channel');
  t.same(r.slowest.map((s) => [s.request_id, s.widget]), [['q5', 'mcp'], ['q3', 'mcp'], ['q2', 'dashboard'], ['q1', 'api'], ['q4', 'assistant']]);
  t.same(r.tables, [{ table: 'public.orders', questions: 3 }, { table: 'public.customers', questions: 2 }]);
  t.same(r.users, [{ user: 'alice', questions: 2, errors: 1 }, { user: 'bob', questions: 1, errors: 0 }, { user: 'carol', questions: 1, errors: 1 }]);
  t.same(r.slowest.map((s) => [s.request_id, s.total_ms]), [['q5', 1000], ['q3', 400], ['q2', 200], ['q1', 100], ['q4', 50]]);
  t.notOk(r.slowest.some((s) => 'question' in s), 'no question texts');

  const a = r.models.find((m) => m.model === M_A);
  const b = r.models.find((m) => m.model === M_B);
  t.match(a, { calls: 4, input_tokens: 360, output_tokens: 70 });
  close(t, a?.cost_usd ?? NaN, 0.03, 'model A cost');
  t.match(b, { calls: 3, input_tokens: 40, output_tokens: 5 });
  t.same(r.models_per_day.map((x) => [x.day, x.model, x.input_tokens]), [
    ['2026-03-02', M_A, 350], ['2026-03-04', M_A, 10], ['2026-03-04', M_B, 40],
  ]);
});

t.test('filters: channel, widget, user, top; bad filters are VALIDATION_FAILED', async (t) => {
  const mcp = await report({ ...filter, channel: 'mcp' }, deps());
  t.equal(mcp.totals.questions, 2);
  t.same(mcp.channels, [{ channel: 'mcp', questions: 2 }]);
  t.same(mcp.per_day.map((d) => d.questions), [0, 1, 0, 1], 'the days of the range still all there');
  const dashboard = await report({ ...filter, widget: 'dashboard' }, deps());
  t.equal(dashboard.totals.questions, 1, 'the widget filter: the dashboard\'s question only');
  t.same(dashboard.channels, [{ channel: 'api', questions: 1 }]);
  t.same(dashboard.users.map((u) => u.user), ['bob']);
  const api = await report({ ...filter, channel: 'api', widget: 'api' }, deps());
  t.same(api.slowest.map((s) => s.request_id), ['q1'], 'channel and widget together');
  const wideApi = await report({ from: '2026-02-01T00:00:00Z', to: '2026-03-05T00:00:00Z', widget: 'api' }, deps());
  t.equal(wideApi.totals.questions, 1, 'a question recorded without a widget is not any widget\'s');
  const wide0 = await report({ from: '2026-02-01T00:00:00Z', to: '2026-03-05T00:00:00Z' }, deps());
  t.same(wide0.widgets.find((w) => w.widget === 'unknown'), { widget: 'unknown', questions: 1 }, 'it counts as unknown');
  const alice = await report({ ...filter, user: 'alice' }, deps());
  t.same(alice.slowest.map((s) => s.request_id), ['q3', 'q1']);
  t.equal(alice.totals.users, 1);
  const top1 = await report({ ...filter, top: 1 }, deps());
  t.same(top1.tables, [{ table: 'public.orders', questions: 3 }]);
  t.equal(top1.slowest.length, 1);
  const wide = await report({ from: '2026-02-01T00:00:00Z', to: '2026-03-05T00:00:00Z' }, deps());
  t.equal(wide.totals.questions, 6, 'the question before the first range counts in a wider one');
  const def = await report({}, deps({}, new Date('2026-03-10T00:00:00Z')));
  t.same(def.range, { from: '2026-02-08T00:00:00.000Z', to: '2026-03-10T00:00:00.000Z' }, 'the last 30 days by default');
  t.equal(def.per_day.length, 30);

  for (const bad of [{ from: 'yesterday' }, { to: '2026-13-45' }, { from: '2026-03-05', to: '2026-03-01' }, { from: '2000-01-01', to: '2026-01-01' }]) {
    const err = await report(bad, deps()).then(() => undefined, (e: unknown) => e);
    t.ok(err instanceof CortadoError && err.code === 'VALIDATION_FAILED', `${JSON.stringify(bad)}: VALIDATION_FAILED`);
  }
  t.throws(() => range({ from: 'x' }, new Date()), /from/);
});

t.test('feedback: one per rater and question, the later replaces the earlier; it may come before its question', async (t) => {
  const at = (iso: string) => deps({}, new Date(iso));
  t.same(await feedback({ request_id: 'q1', rating: 'down', user: 'alice', owner: 'a:alice' }, at('2026-03-04T01:00:00Z')), { ok: true });
  await feedback({ request_id: 'q1', rating: 'up', user: 'alice', owner: 'a:alice' }, at('2026-03-04T01:01:00Z'));
  await feedback({ request_id: 'q2', rating: 'down', user: 'bob', owner: 'a:bob', comment: '  wrong totals  ' }, at('2026-03-04T01:02:00Z'));
  await feedback({ request_id: 'q2', rating: 'down', user: 'carol', owner: 'a:carol' }, at('2026-03-04T01:03:00Z'));
  await feedback({ request_id: 'q3', rating: 'down', user: 'alice', owner: 'a:alice', comment: 'too slow' }, at('2026-03-04T01:04:00Z'));
  // before its question arrives
  await feedback({ request_id: 'q-late', rating: 'down', user: 'dave', owner: 'a:dave', comment: 'late' }, at('2026-03-04T13:00:00Z'));

  let r = await report(filter, deps());
  t.match(r.totals, { likes: 1, dislikes: 3 }, "alice's later thumbs replaced her first; the early one is not counted yet");
  t.same(r.disliked.map((d) => [d.request_id, d.comment]), [['q2', 'wrong totals'], ['q3', 'too slow']], 'the most disliked first, the latest comment');

  await record(q('q-late', '2026-03-04T12:59:00Z', { channel: 'api', durations: { total: 10 } }), deps());
  r = await report(filter, deps());
  t.match(r.totals, { questions: 6, dislikes: 4 }, 'once the question is there, its feedback joins');
  t.ok(r.disliked.some((d) => d.request_id === 'q-late' && d.comment === 'late'));
});

t.test('question texts: kept and shown only with store_questions; switched off, forgotten', async (t) => {
  await record(q('q-text', '2026-03-03T09:00:00Z', { channel: 'api', question: 'revenue of ACME for jane@example.com', durations: { total: 5000 } }), deps({ store_questions: true }));
  let r = await report(filter, deps({ store_questions: true }));
  t.equal(r.store_questions, true);
  t.equal(r.slowest[0]?.question, 'revenue of ACME for jane@example.com');
  r = await report(filter, deps());
  t.notOk('question' in (r.slowest[0] ?? {}), 'not shown while the key is off');
  await purge(deps({}, new Date('2026-03-05T00:00:00Z')));
  const kept = await db.pool.query(`SELECT question FROM cortado_analytics_questions WHERE request_id = 'q-text'`);
  t.same(kept.rows, [{ question: null }], 'the purge erases texts kept while the key was on');
});

t.test('retention: older questions, their models and feedback go; feedback whose question never came goes after a day', async (t) => {
  await feedback({ request_id: 'never-asked', rating: 'up', user: 'x', owner: 'a:x' }, deps({}, new Date('2026-03-03T12:00:00Z')));
  // now = 2026-03-05, retention 2 days: everything before 2026-03-03 goes
  const removed = await purge(deps({ retention_days: 2 }, new Date('2026-03-05T00:00:00Z')));
  t.equal(removed, 4, 'q0, q1, q2, q3');
  const left = await db.pool.query('SELECT request_id FROM cortado_analytics_questions ORDER BY request_id');
  t.same(left.rows.map((x: { request_id: string }) => x.request_id), ['q-late', 'q-text', 'q4', 'q5']);
  const models = await db.pool.query(`SELECT count(*)::int AS n FROM cortado_analytics_models WHERE request_id IN ('q0', 'q1', 'q2', 'q3')`);
  t.equal(models.rows[0].n, 0, 'their models with them');
  const fb = await db.pool.query('SELECT request_id FROM cortado_analytics_feedback ORDER BY request_id');
  t.same(fb.rows.map((x: { request_id: string }) => x.request_id), ['q-late'], 'feedback of removed questions and the orphan gone');
  const r = await report(filter, deps());
  t.equal(r.totals.questions, 4);
});

t.test('feedback is the asker\'s: a question with an owner takes only its owner\'s rating, also when the rating came first', async (t) => {
  const at = deps({}, new Date('2026-03-03T10:00:00Z'));
  const OWNER = 'c:0123abcd';
  await record(q('q-own', '2026-03-03T09:00:00Z', { channel: 'api', owner: OWNER, durations: { total: 7 } }), at);
  const foreign = await feedback({ request_id: 'q-own', rating: 'down', owner: 'c:ffff0000', comment: 'not mine' }, at).then(() => undefined, (e: unknown) => e);
  t.ok(foreign instanceof CortadoError && foreign.code === 'FORBIDDEN', 'another caller\'s rating is refused');
  const asTokenOfSameUser = await feedback({ request_id: 'q-own', rating: 'down', user: 'alice', owner: 't:other-token' }, at).then(() => undefined, (e: unknown) => e);
  t.ok(asTokenOfSameUser instanceof CortadoError && asTokenOfSameUser.code === 'FORBIDDEN', 'a user name is no owner');
  t.same(await feedback({ request_id: 'q-own', rating: 'up', owner: OWNER }, at), { ok: true }, 'the asker\'s is kept');
  // a rating that raced its question: kept, but it counts only when the owners match
  await feedback({ request_id: 'q-raced', rating: 'down', owner: 'c:ffff0000', comment: 'raced, not mine' }, at);
  await feedback({ request_id: 'q-raced-own', rating: 'down', owner: OWNER, comment: 'raced, mine' }, at);
  await record(q('q-raced', '2026-03-03T09:01:00Z', { channel: 'api', owner: OWNER, durations: { total: 7 } }), at);
  await record(q('q-raced-own', '2026-03-03T09:02:00Z', { channel: 'api', owner: OWNER, durations: { total: 7 } }), at);
  const r = await report({ from: '2026-03-03', to: '2026-03-03' }, deps());
  const ours = await db.pool.query(`SELECT request_id, rating, owner FROM cortado_analytics_feedback WHERE request_id LIKE 'q-own%' OR request_id LIKE 'q-raced%' ORDER BY request_id, owner`);
  t.same(ours.rows.map((x: { request_id: string; owner: string }) => [x.request_id, x.owner]), [['q-own', OWNER], ['q-raced', 'c:ffff0000'], ['q-raced-own', OWNER]]);
  t.ok(r.disliked.some((d) => d.request_id === 'q-raced-own' && d.comment === 'raced, mine'), 'the asker\'s early rating joins its question');
  t.notOk(r.disliked.some((d) => d.request_id === 'q-raced'), 'a stranger\'s early rating never does');
  t.notOk(r.disliked.some((d) => d.request_id === 'q-own'), 'nor the refused one');
});

t.test('the backend must be PostgreSQL', async (t) => {
  const err = (() => { try { analyticsConnection({ ...analyticsSection(), backend: 'mysql' }); } catch (e) { return e; } return undefined; })();
  t.ok(err instanceof CortadoError && err.code === 'CONFIG_INVALID' && /analytics\.backend/.test(err.message), 'CONFIG_INVALID naming the key');
  const alias = (() => { try { analyticsConnection({ ...analyticsSection(), storage: 'sqlite' }); } catch (e) { return e; } return undefined; })();
  t.ok(alias instanceof CortadoError && /analytics\.storage/.test(alias.message), 'the alias key `storage` wins and is named');
  t.same(analyticsConnection({ ...analyticsSection(), storage: 'PostgreSQL' }).database, db.name);
});

t.test('the actor over a real bus', async (t) => {
  const nats = await startNats();
  t.teardown(() => nats.stop());
  /** a bus of its own per actor: a stopped actor's handlers go with it */
  const busFor = async (t: Test, name: string): Promise<Bus> => {
    const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name, log });
    await bus.ensureEventStream();
    t.teardown(() => bus.close());
    return bus;
  };
  const fact = (rid: string, over: Partial<QuestionCompleted> = {}): QuestionCompleted =>
    q(rid, new Date().toISOString(), { id: randomUUID(), channel: 'api', user: 'ann', durations: { total: 12 }, ...over });

  t.test('off: consumes nothing, stores nothing, creates nothing', async (t) => {
    const bus = await busFor(t, 'analytics-off');
    const off = await createTestDb('analytics_off');
    t.teardown(() => off.drop());
    const config = testConfig({ natsUrl: nats.url, extra: { analytics: { enabled: false, postgresql: { host: off.host, port: off.port, database: off.name, user: off.user } } } });
    const actor = await start({ bus, config, log });
    t.teardown(() => actor.stop());
    bus.publish(QuestionCompletedEvt, fact('off-1'), { requestId: 'off-1' });
    await bus.flush();
    const r = await bus.request(AnalyticsReportGet, {}, { requestId: 'off-report' });
    t.equal(r.enabled, false);
    t.equal(r.totals.questions, 0);
    t.same(await bus.request(AnalyticsFeedback, { request_id: 'off-1', rating: 'up', owner: 'c:someone' }, { requestId: 'off-fb' }), { ok: false }, 'feedback is not kept');
    t.same(await tableNames(off), [], 'no table made in the analytics database');
  });

  t.test('on: each question once, feedback and the report over the bus', async (t) => {
    const bus = await busFor(t, 'analytics-on');
    const on = await createTestDb('analytics_on');
    t.teardown(() => on.drop());
    const config = testConfig({ natsUrl: nats.url, extra: { analytics: { enabled: true, backend: 'postgresql', postgresql: { host: on.host, port: on.port, database: on.name, user: on.user } } } });
    const actor = await start({ bus, config, log });
    t.teardown(() => actor.stop());
    const one = fact('on-1', { tables: ['public.orders'] });
    bus.publish(QuestionCompletedEvt, one, { requestId: 'on-1' });
    bus.publish(QuestionCompletedEvt, { ...one, id: randomUUID() }, { requestId: 'on-1' }); // the same question told twice
    bus.publish(QuestionCompletedEvt, fact('on-2', { code: 'DB_TIMEOUT' }), { requestId: 'on-2' });
    bus.publish(QuestionCompletedEvt, fact('on-3', { intent: 'clarify' }), { requestId: 'on-3' });
    await bus.flush();
    const until = Date.now() + 20_000;
    let n = 0;
    while (Date.now() < until) {
      n = (await on.pool.query('SELECT count(*)::int AS n FROM cortado_analytics_questions').catch(() => ({ rows: [{ n: 0 }] }))).rows[0].n as number;
      if (n >= 3) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    t.equal(n, 3, 'three questions, the one told twice kept once');
    t.same(await bus.request(AnalyticsFeedback, { request_id: 'on-2', rating: 'down', user: 'ann', owner: 'a:ann', comment: 'slow' }, { requestId: 'fb' }), { ok: true });
    const r = await bus.request(AnalyticsReportGet, { channel: 'api' }, { requestId: 'report' });
    t.match(r, { enabled: true, totals: { questions: 3, errors: 1, users: 1, dislikes: 1, clarifications: 1 }, errors: [{ code: 'DB_TIMEOUT', count: 1 }] });
    t.equal(r.per_day.length, 31, 'the last 30 days, today included');
    const bad = await bus.request(AnalyticsReportGet, { from: 'not a date' }, { requestId: 'bad' }).then(() => undefined, (e: unknown) => e);
    t.ok(bad instanceof CortadoError && bad.code === 'VALIDATION_FAILED', 'a bad date is VALIDATION_FAILED over the bus');
    const texts = await on.pool.query('SELECT count(*)::int AS n FROM cortado_analytics_questions WHERE question IS NOT NULL');
    t.equal(texts.rows[0].n, 0, 'texts not kept by default');
  });

  t.test('a backend other than PostgreSQL stops the start with CONFIG_INVALID', async (t) => {
    const bus = await busFor(t, 'analytics-bad');
    const config = testConfig({ natsUrl: nats.url, extra: { analytics: { enabled: true, backend: 'mysql' } } });
    const err = await start({ bus, config, log }).then(() => undefined, (e: unknown) => e);
    t.ok(err instanceof CortadoError && err.code === 'CONFIG_INVALID');
  });
});

/**
 * The ops console's targets beyond one healthy BigQuery project:
 * - Trino (beyond the spec): expensive queries from system.runtime.queries through the real
 *   trino-client, against the Trino protocol stand-in (test/helpers/fake-trino.ts) whose
 *   coordinator history is seeded here; the operations Trino keeps no data for answer a clear
 *   per-target "not available"; a refused query is that target's error.
 * - ops_agent.project_timeout_seconds: a project whose sign-in hangs answers TIMEOUT after the
 *   configured time while the other project answers its rows (real BigQuery client, BigQuery
 *   REST stand-in).
 * - the shared BigQuery sign-in (actors/lib/warehouse/bigquery-auth.ts): an unreadable key names the
 *   project's configuration key.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import type { Bus } from '../../runtime/bus.js';
import type { OpsRunReply } from '../../protocol/schemas/ops.js';
import { run } from '../../actors/ops/handle.js';
import { allowedOperations, buildTargets } from '../../actors/ops/targets.js';
import { loadCredentials } from '../../actors/executor/engines/bigquery-auth.js';
import { testConfig } from '../helpers/config.js';
import { startFakeBigQuery } from '../helpers/fake-bigquery.js';
import { startFakeTrino } from '../helpers/fake-trino.js';
import { createTestDb } from '../helpers/pg.js';

process.env.METADATA_SERVER_DETECTION = 'none';

const HOUR = 3_600_000;
const DAY = 86_400_000;
const db = await createTestDb('ops_targets');
const trino = await startFakeTrino({ databaseUrl: db.url, pageSize: 2 });
const bq = await startFakeBigQuery({ databaseUrl: db.url, projectId: 'acme-prod' });
const dir = mkdtempSync(path.join(tmpdir(), 'ops-targets-'));

// a token endpoint that accepts the request and never answers: a project that hangs
const hanging = new Set<Socket>();
const tarpit = http.createServer(() => undefined);
tarpit.on('connection', (s) => hanging.add(s));
await new Promise<void>((resolve) => tarpit.listen(0, '127.0.0.1', resolve));

t.teardown(async () => {
  for (const s of hanging) s.destroy();
  await new Promise<void>((resolve) => tarpit.close(() => resolve()));
  await trino.close();
  await bq.close();
  await db.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** the bus is asked only for model insights, which these runs leave off */
const noBus = { request: () => Promise.reject(new Error('no bus call expected')) } as unknown as Pick<Bus, 'request'>;
let n = 0;
const ctx = () => ({ requestId: `ops-targets-${++n}` });
const iso = (ms: number): string => new Date(ms).toISOString();

function trinoConfig(extra: Record<string, unknown> = {}) {
  return testConfig({
    natsUrl: 'nats://127.0.0.1:1',
    extra: {
      database: { provider: 'trino', trino: { host: trino.host, port: trino.port, http_scheme: 'http', user: 'ops-reader', catalog: 'postgresql', schema: 'public' } },
      ops_agent: { enabled: true, ...extra },
    },
  });
}

t.test('Trino: expensive queries from system.runtime.queries, by elapsed time, in the window, the console\'s own left out', async (t) => {
  const now = Date.now();
  const long = `SELECT ${'col, '.repeat(200)}1 FROM hive.web.events`;
  await trino.seedRuntimeQueries([
    { query_id: 'q_batch', state: 'FINISHED', user: 'etl', source: 'trino-cli', query: long, created: iso(now - 2 * HOUR), started: iso(now - 2 * HOUR + 500), end: iso(now - 2 * HOUR + 500 + 300_000) },
    // still running, sent without a source (a bare REST client): kept, timed up to now
    { query_id: 'q_running', state: 'RUNNING', user: 'ana', source: null, query: 'SELECT count(*) FROM hive.web.clicks', created: iso(now - 10 * 60_000), started: iso(now - 10 * 60_000), end: null },
    { query_id: 'q_quick', state: 'FINISHED', user: 'bo', source: 'trino-jdbc', query: 'SELECT 1', created: iso(now - HOUR), started: iso(now - HOUR), end: iso(now - HOUR + 2_000) },
    // none of these is listed: older than the window, the console's own query, one never started
    { query_id: 'q_old', state: 'FINISHED', user: 'cy', source: 'trino-cli', query: 'SELECT old', created: iso(now - 9 * DAY), started: iso(now - 9 * DAY), end: iso(now - 8 * DAY) },
    { query_id: 'q_ops', state: 'FINISHED', user: 'ops-reader', source: 'cortado-ops', query: 'SELECT … FROM system.runtime.queries', created: iso(now - HOUR), started: iso(now - HOUR), end: iso(now) },
    { query_id: 'q_queued', state: 'QUEUED', user: 'dee', source: 'trino-cli', query: 'SELECT waiting', created: iso(now - HOUR), started: null, end: null },
  ]);
  const config = trinoConfig();
  const targets = buildTargets(config);
  t.teardown(() => Promise.all(targets.map((x) => x.close())));
  t.same(targets.map((x) => x.target), [{ engine: 'trino', label: `trino/${trino.host}` }]);
  const from = trino.statements.length;
  const r: OpsRunReply = await run({ operation: 'get_expensive_queries', window_days: 7, limit: 3, insights: false }, { bus: noBus, config, targets, allowed: allowedOperations(config), now: () => now }, ctx());
  const p = r.projects[0]!;
  t.notOk(p.error, JSON.stringify(p.error));
  if (p.result?.kind !== 'get_expensive_queries') throw new Error(JSON.stringify(p));
  t.same(p.result.by_slot.map((q) => q.job_id), ['q_running', 'q_batch', 'q_quick'], 'longest first, window and source filters applied');
  const [running, batch, quick] = [p.result.by_slot[0]!, p.result.by_slot[1]!, p.result.by_slot[2]!];
  t.ok(running.slot_ms >= 600_000 && running.slot_ms < 700_000, `a running query counts until now (${running.slot_ms} ms)`);
  t.equal(running.user, 'ana');
  t.equal(batch.slot_ms, 300_000, 'end − started, in milliseconds');
  t.equal(batch.started_at, iso(now - 2 * HOUR + 500), 'Trino\'s "… UTC" timestamp read as an instant');
  t.equal([...batch.query].length, 500, 'the text cut to 500 characters');
  t.ok(batch.query.endsWith('…'));
  t.equal(quick.slot_ms, 2_000);
  t.same([batch.bytes_billed, batch.cost_usd, batch.calls], [0, null, 1]);
  t.same(p.result.by_bytes, [], 'no bytes in system.runtime.queries');
  t.match(p.result.note, /keeps no bytes read/);

  const sent = trino.statements.slice(from);
  t.equal(sent.length, 1, 'one statement');
  t.match(sent[0]!.sql, /FROM system\.runtime\.queries/);
  t.equal(sent[0]!.source, 'cortado-ops');
  t.equal(sent[0]!.catalog, 'system');
  t.equal(sent[0]!.user, 'ops-reader');
  t.match(sent[0]!.session.query_max_execution_time, /^\d+ms$/, 'the target\'s deadline goes to the coordinator');
  t.ok(sent[0]!.pages >= 2, 'read page after page (2 rows a page)');
});

t.test('Trino: forecast, public datasets and saturation answer "not available" for the target, not for the view', async (t) => {
  const config = trinoConfig();
  const targets = buildTargets(config);
  t.teardown(() => Promise.all(targets.map((x) => x.close())));
  const from = trino.statements.length;
  for (const [op, why] of [['check_slot_saturation', /check_slot_saturation is not available on trino: system\.runtime\.queries keeps no slot or capacity history/], ['forecast_monthly_costs', /not available on trino: Trino bills no bytes/], ['find_public_datasets', /not available on trino/]] as const) {
    const r = await run({ operation: op, insights: false }, { bus: noBus, config, targets, allowed: allowedOperations(config) }, ctx());
    t.equal(r.operation, op);
    t.equal(r.projects[0]!.error?.code, 'NOT_FOUND', op);
    t.match(r.projects[0]!.error?.message, why);
    t.notOk(r.projects[0]!.result);
  }
  t.equal(trino.statements.length, from, 'nothing sent to the coordinator');
});

t.test('Trino: a refused query is the target\'s DB_QUERY_FAILED, with Trino\'s message', async (t) => {
  const config = trinoConfig();
  const targets = buildTargets(config);
  t.teardown(() => Promise.all(targets.map((x) => x.close())));
  trino.failNext({ message: 'Access Denied: Cannot select from table system.runtime.queries', errorName: 'PERMISSION_DENIED', errorType: 'USER_ERROR', errorCode: 4 });
  const r = await run({ operation: 'get_expensive_queries', insights: false }, { bus: noBus, config, targets, allowed: allowedOperations(config) }, ctx());
  t.equal(r.projects[0]!.error?.code, 'DB_QUERY_FAILED');
  t.match(r.projects[0]!.error?.message, /Trino refused the ops query: Access Denied: Cannot select from table system\.runtime\.queries/);
});

t.test('ops_agent.project_timeout_seconds: a hanging project answers TIMEOUT, the other its rows', async (t) => {
  const now = Date.now();
  bq.ops.seed({ project: 'acme-prod', region: 'US', jobs: [{ job_id: 'job_one', user_email: 'ana@acme.test', creation_time: iso(now - HOUR), total_bytes_billed: 2 ** 40, total_slot_ms: 1_000, query: 'SELECT 1' }] });
  const goodKey = path.join(dir, 'good.json');
  const hangKey = path.join(dir, 'hang.json');
  writeFileSync(goodKey, JSON.stringify(bq.serviceAccount()));
  writeFileSync(hangKey, JSON.stringify({ ...bq.serviceAccount(), token_uri: `http://127.0.0.1:${(tarpit.address() as AddressInfo).port}/token` }));
  const config = testConfig({
    natsUrl: 'nats://127.0.0.1:1',
    extra: {
      database: { provider: 'bigquery', bigquery: { project_id: 'acme-prod', base_url: bq.url } },
      ops_agent: {
        enabled: true,
        project_timeout_seconds: 1,
        config: { projects: [{ project_id: 'acme-prod', region: 'US', credentials_path: goodKey }, { project_id: 'acme-hang', region: 'US', credentials_path: hangKey }] },
      },
    },
  });
  t.equal(config.ops_agent.project_timeout_seconds, 1);
  const targets = buildTargets(config);
  t.teardown(() => Promise.all(targets.map((x) => x.close())));
  const started = Date.now();
  const r = await run({ operation: 'get_expensive_queries', insights: false }, { bus: noBus, config, targets, allowed: allowedOperations(config), now: () => now }, ctx());
  const took = Date.now() - started;
  const good = r.projects.find((p) => p.target.project_id === 'acme-prod')!;
  const hang = r.projects.find((p) => p.target.project_id === 'acme-hang')!;
  if (good.result?.kind !== 'get_expensive_queries') throw new Error(JSON.stringify(good));
  t.same(good.result.by_bytes.map((q) => q.job_id), ['job_one']);
  t.equal(hang.error?.code, 'TIMEOUT');
  t.match(hang.error?.message, /acme-hang\/US did not answer within 1 s \(ops_agent\.project_timeout_seconds\)/);
  t.ok(hanging.size >= 1, 'the hanging project did reach its token endpoint');
  t.ok(took < 60_000, 'the configured second, not the 60 s default');
  t.ok(hang.duration_ms >= 900, `it was given its second (${hang.duration_ms} ms)`);
});

t.test('the key setting: only 1..100 s is accepted', async (t) => {
  t.throws(() => trinoConfig({ project_timeout_seconds: 0 }), /project_timeout_seconds/);
  t.throws(() => trinoConfig({ project_timeout_seconds: 101 }), /project_timeout_seconds/);
  t.equal(trinoConfig().ops_agent.project_timeout_seconds, 60, 'the default');
});

t.test('the shared BigQuery sign-in names the configuration key an unreadable key file belongs to', async (t) => {
  const missing = path.join(dir, 'nope.json');
  const config = testConfig({ natsUrl: 'nats://127.0.0.1:1', extra: { ops_agent: { enabled: true, config: { projects: [{ project_id: 'acme-x', region: 'EU', credentials_path: missing }] } } } });
  const targets = buildTargets(config);
  const r = await run({ operation: 'find_public_datasets', insights: false }, { bus: noBus, config, targets, allowed: allowedOperations(config) }, ctx());
  t.equal(r.projects[0]!.error?.code, 'CONFIG_INVALID');
  t.match(r.projects[0]!.error?.message, /^ops_agent\.config\.projects\[acme-x\]\.credentials_path cannot be read \(.*nope\.json: ENOENT\)$/);
  t.throws(() => loadCredentials('', missing), { code: 'CONFIG_INVALID', message: /^database\.bigquery\.credentials_path cannot be read/ }, 'the executor\'s, with its own key');
  t.throws(() => loadCredentials('{"private_key": "-----BEGIN', ''), { message: /^database\.bigquery\.credentials_json is not a JSON object \(paste the whole key file\)$/ });
});

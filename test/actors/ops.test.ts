/**
 * The ops actor over a real NATS, through @google-cloud/bigquery, against the BigQuery REST
 * stand-in (test/helpers/fake-bigquery.ts) whose INFORMATION_SCHEMA views and datasets are
 * seeded here: each operation's numbers, two projects where one is denied, the price per TiB,
 * saturation periods, allowed_operations, and the model's insights read strictly (fake
 * Anthropic API, routed by model_routing.ops_insights). The arithmetic (forecast interval,
 * period merging) is checked by hand on the plain functions.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { ConfigReset, ConfigUpdate, OpsRun, OpsStatus } from '../../protocol/subjects.js';
import type { OpsRunReply } from '../../protocol/schemas/ops.js';
import { forecast, mergePeriods, TIMELINE_LAG_MS } from '../../actors/ops/compute.js';
import * as alarms from '../../actors/alarms/handle.js';
import { jiraTracker } from '../../actors/alarms/tracker.js';
import { FileAlarms } from '../../store/index.js';
import { pricePerTib, run } from '../../actors/ops/handle.js';
import { parseOpsInsights } from '../../actors/ops/insights.js';
import { parseInsightsReply } from '../../actors/insights/llm.js';
import { allowedOperations } from '../../actors/ops/targets.js';
import { testConfig } from '../helpers/config.js';
import { startFakeBigQuery } from '../helpers/fake-bigquery.js';
import { startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { startStack } from '../helpers/stack.js';

process.env.METADATA_SERVER_DETECTION = 'none';

const TIB = 2 ** 40;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const PROD = 'acme-prod';
const DENIED = 'acme-locked';

const nats = await startNats();
const db = await createTestDb('ops');
const fake = await startFakeBigQuery({ databaseUrl: db.url, projectId: PROD });
const llm = await startFakeLlm();
const dir = mkdtempSync(path.join(tmpdir(), 'ops-test-'));
const keyPath = path.join(dir, 'key.json');
writeFileSync(keyPath, JSON.stringify(fake.serviceAccount()));
const log = createLogger({ svc: 'test', level: 'silent' });

const now = Date.now();
const iso = (ms: number): string => new Date(ms).toISOString();
const longQuery = `SELECT ${'x, '.repeat(300)}1 FROM big`;

fake.ops.seed({
  project: PROD,
  region: 'US',
  jobs: [
    { job_id: 'job_big', user_email: 'ana@acme.test', creation_time: iso(now - 2 * HOUR), total_bytes_billed: 4 * TIB, total_slot_ms: 1_000, query: longQuery },
    { job_id: 'job_slow', user_email: 'bo@acme.test', creation_time: iso(now - 3 * HOUR), total_bytes_billed: TIB, total_slot_ms: 9_000_000, query: 'SELECT slow()' },
    { job_id: 'job_small', user_email: 'ana@acme.test', creation_time: iso(now - 4 * HOUR), total_bytes_billed: TIB / 2, total_slot_ms: 5_000, query: 'SELECT 1' },
    // outside the 7-day window, and a script's parent job (its children are counted): neither listed
    { job_id: 'job_old', user_email: 'cy@acme.test', creation_time: iso(now - 9 * DAY), total_bytes_billed: 100 * TIB, total_slot_ms: 1e9, query: 'SELECT old' },
    { job_id: 'job_script', user_email: 'cy@acme.test', creation_time: iso(now - HOUR), total_bytes_billed: 50 * TIB, total_slot_ms: 1e9, query: 'BEGIN SELECT 1; END', statement_type: 'SCRIPT' },
  ],
  reservations: [{ reservation_name: 'prod', slot_capacity: 60 }, { reservation_name: 'batch', slot_capacity: 40 }],
  datasets: [
    { dataset_id: 'open_data', access: [{ role: 'OWNER', specialGroup: 'projectOwners' }, { role: 'READER', iamMember: 'allUsers' }] },
    { dataset_id: 'eu_shared', location: 'EU', access: [{ role: 'READER', specialGroup: 'allAuthenticatedUsers' }] },
    { dataset_id: 'private', access: [{ role: 'OWNER', userByEmail: 'ana@acme.test' }, { role: 'READER', groupByEmail: 'team@acme.test' }] },
  ],
});
fake.ops.seed({ project: DENIED, region: 'EU', denied: `Access Denied: Project ${DENIED}: User does not have bigquery.jobs.create permission in project ${DENIED}.` });

const config = testConfig({
  natsUrl: nats.url,
  llmUrl: llm.url,
  extra: {
    database: { provider: 'bigquery', bigquery: { project_id: PROD, base_url: fake.url } },
    model_routing: { ops_insights: 'claude-ops' },
    ops_agent: {
      enabled: true,
      ai_insights: true,
      ai_insights_max: 2,
      price_per_tb_usd: 5,
      config: {
        projects: [
          { project_id: PROD, region: 'US', credentials_path: keyPath },
          { project_id: DENIED, region: 'EU', credentials_path: keyPath },
        ],
        allowed_operations: [],
      },
    },
  },
});
const stack = await startStack(config, { edge: false, actors: ['ops', 'llm', 'settings'] });
const client = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'ops-test-client', log });

t.teardown(async () => {
  await client.close();
  await stack.stop();
  await fake.close();
  await llm.close();
  await db.drop();
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
});

let n = 0;
const ctx = () => ({ requestId: `ops-${++n}` });
const prodOf = (r: OpsRunReply) => r.projects.find((p) => p.target.project_id === PROD)!;
const deniedOf = (r: OpsRunReply) => r.projects.find((p) => p.target.project_id === DENIED)!;

t.test('status: the targets, the operations in force (empty list = all four), the price', async (t) => {
  const s = await client.request(OpsStatus, {}, ctx());
  t.equal(s.enabled, true);
  t.same(s.targets.map((x) => x.label), [`${PROD}/US`, `${DENIED}/EU`]);
  t.same(s.allowed_operations, ['get_expensive_queries', 'forecast_monthly_costs', 'find_public_datasets', 'check_slot_saturation']);
  t.equal(s.price_per_tb_usd, 5);
  t.equal(s.saturation_threshold, 0.9);
  const priced = (ops?: number, db?: number) => pricePerTib(testConfig({ natsUrl: nats.url, extra: { ops_agent: ops === undefined ? {} : { price_per_tb_usd: ops }, database: { bigquery: db === undefined ? {} : { price_per_tb_usd: db } } } }));
  t.same([priced(5, 8), priced(undefined, 8), priced()], [5, 8, 6.25], 'the console\'s own price, else the database\'s, else the list price');
});

t.test('expensive queries: top by bytes and by slot time in the window, priced per TiB, text cut; the denied project fails alone', async (t) => {
  const r = await client.request(OpsRun, { operation: 'get_expensive_queries', insights: false, window_days: 7, limit: 2 }, ctx());
  const prod = prodOf(r);
  t.notOk(prod.error);
  if (prod.result?.kind !== 'get_expensive_queries') throw new Error('wrong kind');
  t.same(prod.result.by_bytes.map((q) => q.job_id), ['job_big', 'job_slow'], 'most bytes first, LIMIT 2, old and script jobs left out');
  t.same(prod.result.by_slot.map((q) => q.job_id), ['job_slow', 'job_small']);
  const big = prod.result.by_bytes[0]!;
  t.equal(big.cost_usd, 20, '4 TiB at $5 per TiB');
  t.equal(big.user, 'ana@acme.test');
  t.equal(big.bytes_billed, 4 * TIB);
  t.equal([...big.query].length, 500, 'cut to 500 characters');
  t.ok(big.query.endsWith('…'));
  t.equal(big.started_at, iso(now - 2 * HOUR));
  t.equal(prod.result.by_slot[0]!.slot_ms, 9_000_000);

  const denied = deniedOf(r);
  t.equal(denied.error?.code, 'FORBIDDEN');
  t.match(denied.error?.message, /permission denied on acme-locked: Access Denied/);
  t.notOk(denied.result);
  t.equal(r.insights.status, 'off', 'insights: false');

  const sent = fake.requests.filter((x) => x.method === 'POST' && /^\/bigquery\/v2\/projects\/acme-prod\/(queries|jobs)$/.test(x.path));
  const sql = sent.map((x) => String(x.body.query ?? x.body.configuration?.query?.query));
  t.ok(sql.some((q) => q.includes('`acme-prod`.`region-us`.INFORMATION_SCHEMA.JOBS')), 'the region\'s JOBS view');
  t.ok(sent.every((x) => (x.body.useLegacySql ?? x.body.configuration?.query?.useLegacySql) === false), 'GoogleSQL');
});

t.test('only one project: project_id picks it; an unknown one is NOT_FOUND', async (t) => {
  const r = await client.request(OpsRun, { operation: 'get_expensive_queries', insights: false, project_id: PROD }, ctx());
  t.same(r.projects.map((p) => p.target.project_id), [PROD]);
  const err = await client.request(OpsRun, { operation: 'get_expensive_queries', insights: false, project_id: 'nope' }, ctx()).catch((e: unknown) => e);
  t.ok(err instanceof CortadoError && err.code === 'NOT_FOUND');
});

t.test('forecast through BigQuery: daily billed bytes, month to date, the method stated', async (t) => {
  const today = Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), new Date(now).getUTCDate());
  // one job a day for the last 40 days, 1 TiB each; today's too
  const jobs = Array.from({ length: 41 }, (_, i) => ({ job_id: `d${i}`, user_email: 'x@acme.test', creation_time: iso(today - i * DAY + HOUR), total_bytes_billed: TIB, total_slot_ms: 1, query: 'SELECT 1' }));
  fake.ops.seed({ project: 'acme-forecast', region: 'US', jobs });
  const cfg = testConfig({ natsUrl: nats.url, extra: { database: { provider: 'bigquery', bigquery: { project_id: PROD, base_url: fake.url } }, ops_agent: { enabled: true, price_per_tb_usd: 5, config: { projects: [{ project_id: 'acme-forecast', region: 'US', credentials_path: keyPath }] } } } });
  const { buildTargets } = await import('../../actors/ops/targets.js');
  const targets = buildTargets(cfg);
  const r = await run({ operation: 'forecast_monthly_costs' }, { bus: client, config: cfg, targets, allowed: allowedOperations(cfg), now: () => now }, ctx());
  const f = r.projects[0]!.result;
  if (f?.kind !== 'forecast_monthly_costs') throw new Error(JSON.stringify(r.projects[0]));
  const d = new Date(now);
  t.equal(f.days_in_month, new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate());
  t.equal(f.days_observed, d.getUTCDate() - 1);
  t.equal(f.month_to_date_usd, 5 * d.getUTCDate(), '$5 a day, today included');
  t.equal(f.forecast_usd, 5 * f.days_in_month, 'a flat $5 a day forecasts $5 × days in the month');
  t.equal(f.low_usd, f.forecast_usd, 'no spread: no interval');
  t.equal(f.high_usd, f.forecast_usd);
  t.match(f.method, /days after today \(\d+ days in the month\); 80 % interval/);
  t.equal(f.daily.at(-1)!.date, iso(today).slice(0, 10));
  t.equal(f.daily.at(-1)!.cost_usd, 5);
  await Promise.all(targets.map((x) => x.close()));
});

t.test('the forecast, by hand: mean of complete days × days in month, 80 % interval from the daily spread', async (t) => {
  // 11 March 2024 (31 days), price $1/TiB: 1–10 March cost 10, 20, 10, 20… (mean 15), today 7 so far,
  // 10–29 February cost 15 a day. The last 30 complete days: twenty 15s, five 10s, five 20s.
  const rows: Array<{ date: string; bytes_billed: number }> = [];
  for (let day = 10; day <= 29; day++) rows.push({ date: `2024-02-${String(day).padStart(2, '0')}`, bytes_billed: 15 * TIB });
  for (let day = 1; day <= 10; day++) rows.push({ date: `2024-03-${String(day).padStart(2, '0')}`, bytes_billed: (day % 2 ? 10 : 20) * TIB });
  rows.push({ date: '2024-03-11', bytes_billed: 7 * TIB });
  const f = forecast(rows, 1, Date.UTC(2024, 2, 11, 12));
  t.equal(f.month, '2024-03');
  t.equal(f.days_in_month, 31);
  t.equal(f.days_observed, 10);
  t.equal(f.month_to_date_usd, 157, '150 over ten days + 7 today');
  t.equal(f.forecast_usd, 465, '15 × 31');
  // σ = √(250 / 29) = 2.93610; half width = 1.2816 × 2.93610 × √21 = 17.24
  t.equal(f.low_usd, 447.76);
  t.equal(f.high_usd, 482.24);
  t.match(f.method, /daily mean \$15 from 10 complete days this month/);
  t.match(f.method, /complete days' cost \(\$150\).*the mean × 20 days after today \(31 days in the month\)/);
  t.match(f.method, /σ = \$2\.94\/day/);
  t.equal(f.daily.length, 31, '10 February to 11 March');

  // today already cost more than a usual day: it counts as it is, and the low end is at least the month to date
  rows[rows.length - 1] = { date: '2024-03-11', bytes_billed: 40 * TIB };
  const busy = forecast(rows, 1, Date.UTC(2024, 2, 11, 12));
  t.equal(busy.month_to_date_usd, 190);
  t.equal(busy.forecast_usd, 490, '150 + 40 today + 15 × 20');
  t.equal(busy.low_usd, 472.76, '490 − 17.24');
  t.equal(busy.high_usd, 507.24);

  const first = forecast([{ date: '2024-02-20', bytes_billed: 30 * TIB }], 1, Date.UTC(2024, 2, 1, 6));
  t.equal(first.days_observed, 0);
  t.equal(first.forecast_usd, 31, 'on the 1st: the mean of the last 30 days ($1) × 31');
  t.match(first.method, /daily mean \$1 from the last 30 days \(no complete day this month yet\)/);
  t.ok(first.low_usd >= 0);
});

t.test('public datasets: allUsers and allAuthenticatedUsers entries, a region without its own entry covered once', async (t) => {
  const r = await client.request(OpsRun, { operation: 'find_public_datasets', insights: false }, ctx());
  const prod = prodOf(r);
  if (prod.result?.kind !== 'find_public_datasets') throw new Error(JSON.stringify(prod));
  t.equal(prod.result.checked, 3);
  t.same(prod.result.datasets, [
    { dataset_id: 'eu_shared', location: 'EU', entries: [{ role: 'READER', member: 'allAuthenticatedUsers' }] },
    { dataset_id: 'open_data', location: 'US', entries: [{ role: 'READER', member: 'allUsers' }] },
  ]);
  t.equal(deniedOf(r).error?.code, 'FORBIDDEN');
  t.ok(fake.calls.includes(`GET /bigquery/v2/projects/${PROD}/datasets/open_data`), 'datasets.get per dataset');
});

t.test('saturation: slots per bucket against the reservations, consecutive saturated points merged', async (t) => {
  const step = 300_000;
  const b = Math.floor(now / step) * step;
  // 100 slots reserved; 95 and 97 slots on average in two buckets in a row, 50 before, 92 later
  const slots = (avg: number) => avg * step;
  fake.ops.seed({
    project: PROD,
    region: 'US',
    timeline: [
      { period_start: iso(b - 10 * step), period_slot_ms: slots(50) },
      { period_start: iso(b - 9 * step), period_slot_ms: slots(60) },
      { period_start: iso(b - 9 * step + 1000), period_slot_ms: slots(35) },
      { period_start: iso(b - 8 * step), period_slot_ms: slots(97) },
      { period_start: iso(b - 5 * step), period_slot_ms: slots(92) },
      { period_start: iso(b - 30 * HOUR), period_slot_ms: slots(500) },
    ],
  });
  const r = await client.request(OpsRun, { operation: 'check_slot_saturation', insights: false, window_hours: 24 }, ctx());
  const prod = prodOf(r);
  if (prod.result?.kind !== 'check_slot_saturation') throw new Error(JSON.stringify(prod));
  const s = prod.result;
  t.equal(s.capacity, 100, 'the reservations\' slots summed');
  t.equal(s.threshold_share, 0.9);
  t.equal(s.points.length, 288, '24 h in whole 5-minute points');
  const last = Date.parse(s.points.at(-1)!.period_start);
  t.ok(last + step <= now - TIMELINE_LAG_MS && last + 2 * step > now - TIMELINE_LAG_MS, 'the newest point is the last bucket that ended a lag ago: none still under way');
  const at = (ms: number) => s.points.find((p) => p.period_start === iso(ms));
  t.same(at(b - 9 * step), { period_start: iso(b - 9 * step), avg_slots: 95, share: 0.95 }, 'two rows in one bucket add up');
  t.same(at(b - 7 * step), { period_start: iso(b - 7 * step), avg_slots: 0, share: 0 }, 'a bucket without rows used nothing');
  t.same(s.saturated_periods, [
    { start: iso(b - 9 * step), end: iso(b - 7 * step), minutes: 10, peak_share: 0.97 },
    { start: iso(b - 5 * step), end: iso(b - 4 * step), minutes: 5, peak_share: 0.92 },
  ]);
  t.notOk(s.points.some((p) => p.avg_slots === 500), 'outside the window');

  fake.ops.seed({ project: PROD, region: 'US', reservations: [] });
  const onDemand = prodOf(await client.request(OpsRun, { operation: 'check_slot_saturation', insights: false, window_hours: 2 }, ctx())).result;
  if (onDemand?.kind !== 'check_slot_saturation') throw new Error('wrong kind');
  t.equal(onDemand.capacity, null);
  t.ok(onDemand.points.every((p) => p.share === null));
  t.same(onDemand.saturated_periods, []);
  t.match(onDemand.note, /no reservation in region US \(on-demand/);
  t.equal(onDemand.points.length, 120, '2 h in whole 1-minute points');
  fake.ops.seed({ project: PROD, region: 'US', reservations: [{ reservation_name: 'prod', slot_capacity: 100 }] });
});

t.test('a saturation alarm through this ops actor fires when "now" is inside a minute', async (t) => {
  // the real clock, a few seconds into a minute (never on a boundary): the minute under way is
  // partly over, and must not count as a nearly idle point
  while (new Date().getUTCSeconds() < 8 || new Date().getUTCSeconds() > 40) await new Promise((r) => setTimeout(r, 500));
  const t0 = Date.now();
  const timeline = [];
  // 95 of 100 reserved slots, one row every 10 s for the last 30 minutes, up to now
  for (let at = t0 - 30 * 60_000; at <= t0; at += 10_000) timeline.push({ period_start: iso(at), period_slot_ms: 95 * 10_000 });
  fake.ops.seed({ project: PROD, region: 'US', timeline, reservations: [{ reservation_name: 'prod', slot_capacity: 100 }] });
  const acfg = testConfig({ natsUrl: nats.url, extra: { alarms: { enabled: true, storage_path: path.join(dir, 'sat-alarms.json'), default_recipients: ['oncall@acme.test'] } } });
  const d: alarms.AlarmsDeps = { bus: client, config: acfg, log, store: new FileAlarms(path.join(dir, 'sat-alarms.json'), log), tracker: jiraTracker(() => acfg.jira), now: () => t0 };
  const a = await alarms.create({ name: 'Slots', condition: { kind: 'saturation_above', threshold: 0.9, minutes: 15, project_id: PROD }, cron: '* * * * *', by: 'admin' }, d, ctx());
  const change = await alarms.evaluate(a.id, new Date(Math.floor(t0 / 60_000) * 60_000).toISOString(), d);
  t.equal(change, 'fired', `fired at ${iso(t0)}`);
  const cur = await alarms.get({ id: a.id }, d);
  t.equal(cur.state, 'firing');
  t.ok((cur.value ?? 0) >= 15 && (cur.value ?? 0) <= 30, `the whole minutes at 95 % count (${cur.value} min)`);
  t.match(cur.history.at(-1)?.message, /at or above 90 % of capacity for \d+ min in acme-prod\/US \(peak 95 %\)/);
  fake.ops.seed({ project: PROD, region: 'US', timeline: [] });
});

t.test('merging periods by hand', async (t) => {
  const p = (i: number, share: number | null) => ({ period_start: iso(Date.UTC(2024, 0, 1, 0, i * 5)), avg_slots: 0, share });
  const points = [p(0, 0.5), p(1, 0.95), p(2, 0.97), p(3, 0.5), p(4, 0.92), p(5, 0.9), p(6, 0.93), p(7, null)];
  t.same(mergePeriods(points, 0.9, 300), [
    { start: iso(Date.UTC(2024, 0, 1, 0, 5)), end: iso(Date.UTC(2024, 0, 1, 0, 15)), minutes: 10, peak_share: 0.97 },
    { start: iso(Date.UTC(2024, 0, 1, 0, 20)), end: iso(Date.UTC(2024, 0, 1, 0, 35)), minutes: 15, peak_share: 0.93 },
  ], 'the threshold itself counts; a point without a share ends a period');
  t.same(mergePeriods([p(0, 1.2)], 0.9, 300).length, 1);
});

t.test('allowed_operations: only the listed run (FORBIDDEN otherwise); an unknown name stops the start; off refuses all', async (t) => {
  const only = testConfig({ natsUrl: nats.url, extra: { database: { provider: 'bigquery', bigquery: { project_id: PROD } }, ops_agent: { enabled: true, config: { allowed_operations: ['get_expensive_queries'] } } } });
  const allowed = allowedOperations(only);
  t.same(allowed, ['get_expensive_queries']);
  const err = await run({ operation: 'find_public_datasets' }, { bus: client, config: only, targets: [], allowed }, ctx()).catch((e: unknown) => e);
  t.ok(err instanceof CortadoError && err.code === 'FORBIDDEN');
  t.match((err as Error).message, /find_public_datasets is not in ops_agent\.config\.allowed_operations \(allowed: get_expensive_queries\)/);

  t.throws(
    () => testConfig({ natsUrl: nats.url, extra: { database: { provider: 'bigquery', bigquery: { project_id: PROD } }, ops_agent: { enabled: true, config: { allowed_operations: ['drop_everything'] } } } }),
    { code: 'CONFIG_INVALID', message: /ops_agent\.config\.allowed_operations: drop_everything is not an operation/ },
  );

  const off = testConfig({ natsUrl: nats.url, extra: { database: { provider: 'bigquery', bigquery: { project_id: PROD } } } });
  const offErr = await run({ operation: 'get_expensive_queries' }, { bus: client, config: off, targets: [], allowed: allowedOperations(off) }, ctx()).catch((e: unknown) => e);
  t.ok(offErr instanceof CortadoError && offErr.code === 'FORBIDDEN');
  t.match((offErr as Error).message, /ops_agent\.enabled/);
});

t.test('run-time changes: allowed_operations and the projects apply at the next request; bad values are refused when saved', async (t) => {
  const change = (key: string, value: unknown) => client.request(ConfigUpdate, { key, value, by: 'admin' }, ctx());
  const refused = async (key: string, value: unknown) => change(key, value).then(() => { throw new Error(`${key} accepted`); }, (e: CortadoError) => e);

  await change('ops_agent.config.allowed_operations', ['find_public_datasets']);
  t.same((await client.request(OpsStatus, {}, ctx())).allowed_operations, ['find_public_datasets'], 'the status says the new list');
  const forbidden = await client.request(OpsRun, { operation: 'get_expensive_queries', insights: false }, ctx()).catch((e: CortadoError) => e);
  t.match(forbidden, { code: 'FORBIDDEN', message: /not in ops_agent\.config\.allowed_operations \(allowed: find_public_datasets\)/ }, 'and the operations obey it');
  await client.request(ConfigReset, { key: 'ops_agent.config.allowed_operations', by: 'admin' }, ctx());

  await change('ops_agent.config.projects', [{ project_id: PROD, region: 'US', credentials_path: keyPath }]);
  t.same((await client.request(OpsStatus, {}, ctx())).targets.map((x) => x.label), [`${PROD}/US`], 'the targets are made again');
  const one = await client.request(OpsRun, { operation: 'find_public_datasets', insights: false }, ctx());
  t.same(one.projects.map((p) => [p.target.label, p.error?.code]), [[`${PROD}/US`, undefined]], 'the denied project is no longer asked');
  await client.request(ConfigReset, { key: 'ops_agent.config.projects', by: 'admin' }, ctx());
  t.same((await client.request(OpsStatus, {}, ctx())).targets.map((x) => x.label), [`${PROD}/US`, `${DENIED}/EU`], 'and back');

  for (const [key, value, why] of [
    ['ops_agent.config.allowed_operations', ['get_expensive_queries', 'drop_everything'], /ops_agent\.config\.allowed_operations: drop_everything is not an operation/],
    ['ops_agent.provider', 'aws_ops', /ops_agent\.provider must be bigquery_ops/],
  ] as const) {
    const e = await refused(key, value);
    t.same([e.code, why.test(e.message)], ['VALIDATION_FAILED', true], `${key}: ${e.message}`);
  }
  const fixed = await refused('alarms.enabled', true);
  t.same([fixed.code, fixed.message], ['FORBIDDEN', 'alarms.enabled is read at start-up only (the alarms actor opens its store (and serves or refuses every request) at start): change it in config/config.yaml and restart'], 'a key read at start only is refused, not silently kept');
  t.equal((await refused('alarms.storage_path', '/tmp/other.json')).code, 'FORBIDDEN');
  t.same((await client.request(OpsStatus, {}, ctx())).allowed_operations.length, 4, 'nothing of the refused values applied');
});

t.test('AI insights: routed as ops_insights, fed aggregates only, at most ai_insights_max, read strictly', async (t) => {
  llm.script({ text: [
    'TYPE: cost | SEVERITY: warning | MESSAGE: ana@acme.test spent $22.5 of $27.5; review her largest scans.',
    'TYPE: performance | SEVERITY: info | MESSAGE: One query used 2.5 slot-hours.',
    'TYPE: capacity | SEVERITY: info | MESSAGE: A third finding beyond the maximum.',
  ].join('\n') });
  const from = llm.requests.length;
  const r = await client.request(OpsRun, { operation: 'get_expensive_queries', window_days: 7 }, ctx());
  t.equal(r.insights.status, 'ok');
  t.same(r.insights.items.map((i) => [i.type, i.severity]), [['cost', 'warning'], ['performance', 'info']], 'at most ai_insights_max (2)');
  t.ok(r.insights.items.every((i) => i.source === 'llm' && i.icon === undefined));
  const req = llm.requests[from]!;
  t.equal(req.model, 'claude-ops', 'model_routing.ops_insights');
  const prompt = [req.system, ...req.messages.map((m) => m.content)].join('\n');
  t.match(prompt, /acme-prod\/US \(bigquery, last 7 days\): 3 top queries \(by bytes and by slot time; not every query\); cost of these top queries \$27\.5/);
  t.match(prompt, /top users by cost: ana@acme\.test \$22\.5, bo@acme\.test \$5/);
  t.notMatch(prompt, /acme-locked|FORBIDDEN|failed/, 'a target that failed is not put to the model: its box says so');
  t.notMatch(prompt, /SELECT|job_big|job_slow/, 'no query text, no job id');
  t.match(prompt, /up to 2 short/);

  // the format every insights prompt asks for, with a type the console does not know: shown, as general
  llm.script({ text: 'TYPE: trend | SEVERITY: info | MESSAGE: Spend rose each day this week.' });
  const other = await client.request(OpsRun, { operation: 'get_expensive_queries', window_days: 7 }, ctx());
  t.equal(other.insights.status, 'ok', 'not dropped');
  t.same(other.insights.items.map((i) => [i.type, i.message]), [['general', 'Spend rose each day this week.']]);

  // a view with nothing shown (its one target failed): the model is not asked about the error
  const asked = llm.requests.length;
  const failed = await client.request(OpsRun, { operation: 'get_expensive_queries', window_days: 7, project_id: DENIED }, ctx());
  t.ok(failed.projects.every((p) => p.error), 'the target failed');
  t.equal(failed.insights.status, 'off', 'no findings about an error');
  t.equal(llm.requests.length, asked, 'the model was not asked');

  llm.script({ text: 'Here are my thoughts:\nTYPE: cost | SEVERITY: warning | MESSAGE: fine' });
  const bad = await client.request(OpsRun, { operation: 'find_public_datasets' }, ctx());
  t.equal(bad.insights.status, 'bad_reply');
  t.same(bad.insights.items, []);
  t.equal(prodOf(bad).result?.kind, 'find_public_datasets', 'the view stands');
  t.notMatch([llm.requests.at(-1)!.system, llm.requests.at(-1)!.last].join('\n'), /open_data|eu_shared/, 'no dataset names');

  llm.script({ status: 500, message: 'down' }, { status: 500, message: 'down' });
  const down = await client.request(OpsRun, { operation: 'forecast_monthly_costs' }, ctx());
  t.equal(down.insights.status, 'unavailable');
  t.equal(prodOf(down).result?.kind, 'forecast_monthly_costs');
});

t.test('the reply parser: the one format of every insights prompt; a type the console does not know is general', async (t) => {
  t.same(parseOpsInsights('type: Security | severity: CRITICAL | message: Two datasets are public.'), { ok: true, insights: [{ type: 'security', severity: 'critical', message: 'Two datasets are public.', source: 'llm' }] });
  // a reply the assistant's parser takes is taken here too: shown, its type as the general one
  const reply = 'TYPE: trend | SEVERITY: success | MESSAGE: Costs fell for three weeks.';
  t.ok(parseInsightsReply(reply).ok, 'the assistant takes it');
  t.same(parseOpsInsights(reply), { ok: true, insights: [{ type: 'general', severity: 'success', message: 'Costs fell for three weeks.', source: 'llm' }] });
  t.match(parseOpsInsights('TYPE: cost | SEVERITY: high | MESSAGE: x'), { ok: false, reason: /line 1/ });
  t.match(parseOpsInsights('- TYPE: cost | SEVERITY: info | MESSAGE: x'), { ok: false, reason: /line 1/ });
  t.match(parseOpsInsights('  \n'), { ok: false, reason: /empty/ });
  t.match(parseOpsInsights(`TYPE: cost | SEVERITY: info | MESSAGE: ${'x'.repeat(401)}`), { ok: false, reason: /longer than 400/ });
});

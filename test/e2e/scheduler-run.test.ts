/**
 * Scheduled runs as an operator runs them: two real `cortado` processes (every actor each)
 * sharing one NATS (JetStream: the leader lease, the work queue) and one config database, a
 * real SMTP server counting the reports, and the cron driven by a clock the test moves forward
 * (test/fixtures/scheduler-clock.mjs, loaded with `node --import`; the product reads the real
 * one). Every due run runs exactly once across a restart; a missed tick runs once (or not) on
 * recovery; a dropped table fails with the drift message; max_concurrent_jobs holds across the
 * processes; job_timeout_seconds cancels the query on the database; Run Now.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import YAML from 'yaml';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { ROOT } from '../../config/load.js';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import type { Execution, Schedule } from '../../protocol/schemas/schedules.js';
import { ALL_ACTORS, ScheduleCreate, ScheduleHistory, ScheduleRanEvt, ScheduleRunNow, ScheduleUpdate } from '../../protocol/subjects.js';
import { testConfig, testConfigObject } from '../helpers/config.js';
import { startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { backendsStillRunning, createTestDb } from '../helpers/pg.js';
import { startSmtp } from '../helpers/smtp.js';
import { startStack } from '../helpers/stack.js';
import { cortado as spawnCortado, until, type Proc } from '../helpers/processes.js';

const HOUR = 3_600_000;
const db = await createTestDb('schedrun');
const cfgDb = await createTestDb('schedcfg');
await db.pool.query(`
  CREATE TABLE sales (region text, amount numeric);
  INSERT INTO sales VALUES ('north', 10), ('south', 20), ('north', 5);
  CREATE TABLE drift_t (id int, label text);
  INSERT INTO drift_t VALUES (1, 'one');
`);
const nats = await startNats();
const smtp = await startSmtp();
const fake = await startFakeLlm();
const dir = mkdtempSync(path.join(tmpdir(), 'cortado-schedrun-'));
const clockFile = path.join(dir, 'clock');
const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'scheduler-test', log: createLogger({ svc: 'test', level: 'silent' }) });
const ran: Array<{ schedule_id: string; execution_id: string }> = [];
const unlisten = bus.listen(ScheduleRanEvt.subject, (data) => ran.push(data as { schedule_id: string; execution_id: string }));

t.teardown(async () => {
  unlisten();
  await bus.close();
  await fake.close();
  await smtp.close();
  await nats.stop();
  await db.drop();
  await cfgDb.drop();
  rmSync(dir, { recursive: true, force: true });
});

// the virtual clock: real time plus an offset; `jump(T)` makes it read T now
function jump(to: number): void {
  writeFileSync(clockFile, String(Math.round(to - Date.now())));
}
// an even hour a day ahead: every schedule below is created before it
const V = (Math.ceil(Date.now() / (2 * HOUR)) + 12) * 2 * HOUR;
jump(V - 5 * 60_000);

const config = testConfigObject({
  natsUrl: nats.url, db: { host: db.host, port: db.port, name: db.name, user: db.user }, llmUrl: fake.url,
  extra: {
    config_db: { enabled: true, encryption_key: generateFernetKey(), postgresql: { host: cfgDb.host, port: cfgDb.port, database: cfgDb.name, user: cfgDb.user } },
    // a run whose process was killed goes to the other after 6 s, not the default 30
    scheduler: { enabled: true, timezone: 'UTC', max_concurrent_jobs: 2, job_timeout_seconds: 8, redelivery_seconds: 6 },
    email: { enabled: true, smtp: { host: smtp.host, port: smtp.port, from_email: 'reports@example.org', use_tls: false, use_ssl: false } },
    export: { max_rows: 1000 },
    catalog: { cache_ttl_seconds: 300 },
  },
});
const configFile = path.join(dir, 'cortado.yaml');
writeFileSync(configFile, YAML.stringify(config));

function cortado(): Proc {
  return spawnCortado(['--config', configFile, '--role', 'actors'], {
    nodeArgs: ['--import', path.join(ROOT, 'test/fixtures/scheduler-clock.mjs')],
    env: { CORTADO_TEST_CLOCK_FILE: clockFile },
  });
}

// the process is up (its signal handlers are set once every actor has started), and its scheduler with it
const ready = (p: Proc) => () => /scheduler ready/.test(p.output()) && /actors started/.test(p.output());
const leading = (p: Proc) => (p.output().match(/this process fires the schedules/g) ?? []).length > (p.output().match(/another process took over/g) ?? []).length;
const admin = { user: 'admin', admin: true };
const ctx = () => ({ requestId: `t-${Math.random().toString(36).slice(2)}` });

async function create(name: string, cron: string, sql: string, extra: Record<string, unknown> = {}): Promise<Schedule> {
  return bus.request(ScheduleCreate, {
    name, question: `report ${name}`, cron, sql, email_recipients: [`${name}@example.org`], format: 'csv', asker: admin, ...extra,
  }, ctx());
}

async function history(id: string): Promise<Execution[]> {
  return (await bus.request(ScheduleHistory, { id, asker: admin, limit: 1000 }, ctx())).executions;
}

async function done(id: string, n: number): Promise<Execution[]> {
  let list: Execution[] = [];
  await until(`${n} finished run(s) of ${id}`, async () => {
    list = await history(id);
    return list.filter((e) => e.status === 'done').length >= n;
  });
  return list;
}

const mailsTo = (name: string) => smtp.received.filter((m) => m.to.includes(`${name}@example.org`));

let p1 = cortado();
let p2 = cortado();
await until('both schedulers', () => ready(p1)() && ready(p2)());

// hourly, and every two hours (at even hours: V is one)
const hourly = await create('hourly', '0 * * * *', 'SELECT region, sum(amount) AS total FROM sales GROUP BY region ORDER BY region');
const twoHourly = await create('two_hourly', '0 */2 * * *', 'SELECT count(*) AS n FROM sales', { missed: 'skip' });

t.test('due runs run exactly once across two processes and a restart of one', async (t) => {
  await until('a leader', () => leading(p1) || leading(p2));

  jump(V + 1_000);
  await done(hourly.id, 1);
  await done(twoHourly.id, 1);

  // the leader restarts while the next tick is due: the other process takes over
  jump(V + HOUR + 1_000);
  const leader = leading(p1) ? p1 : p2;
  leader.child.kill('SIGTERM');
  t.equal(await leader.exited, 0, 'the stopped process exits 0');
  await done(hourly.id, 2);
  const restarted = cortado();
  if (leader === p1) p1 = restarted;
  else p2 = restarted;
  await until('the restarted scheduler', ready(restarted));

  jump(V + 2 * HOUR + 1_000);
  const h = await done(hourly.id, 3);
  const two = await done(twoHourly.id, 2);
  // a moment for anything fired twice to show
  await new Promise((r) => setTimeout(r, 3_000));

  const times = (list: Execution[]) => list.map((e) => e.execution_time).sort();
  t.same(times(await history(hourly.id)), [V, V + HOUR, V + 2 * HOUR].map((ms) => new Date(ms).toISOString()), 'hourly: each tick once');
  t.same(times(await history(twoHourly.id)), [V, V + 2 * HOUR].map((ms) => new Date(ms).toISOString()), 'two-hourly: each tick once');
  for (const e of [...h, ...two]) {
    t.equal(e.trigger, 'cron');
    t.ok(e.success, `${e.schedule_name} ${e.execution_time}: ${e.error_message ?? ''}`);
    t.ok(e.email_sent, 'e-mailed');
    t.equal(e.email_error, null);
    t.equal(typeof e.duration_ms, 'number');
  }
  t.equal(h[0]?.rows_returned, 2, 'rows returned recorded');
  await smtp.waitFor(5);
  t.equal(mailsTo('hourly').length, 3, 'three hourly reports e-mailed');
  t.equal(mailsTo('two_hourly').length, 2, 'two two-hourly reports e-mailed');
  const mail = mailsTo('hourly')[0];
  const att = mail?.parsed.attachments[0];
  t.match(att?.filename, /^hourly_.*\.csv$/, 'the report is attached as csv');
  t.match(att?.content.toString('utf8'), /region,total[\s\S]*north,15[\s\S]*south,20/, 'with the rows');
  t.equal(ran.filter((r) => r.schedule_id === hourly.id).length, 3, 'schedule.ran once per run');
});

t.test('missed runs while every scheduler was down: once runs one, skip runs none', async (t) => {
  const before = { hourly: (await history(hourly.id)).length, two: (await history(twoHourly.id)).length };
  p1.child.kill('SIGTERM');
  p2.child.kill('SIGTERM');
  t.equal(await p1.exited, 0);
  t.equal(await p2.exited, 0);
  // 2h30 later: two hourly ticks and one two-hourly tick went by
  jump(V + 4 * HOUR + 30 * 60_000);
  p1 = cortado();
  await until('a scheduler back', ready(p1));
  const h = await done(hourly.id, before.hourly + 1);
  const after = await history(hourly.id);
  t.equal(after.length, before.hourly + 1, 'missed: once → one run for every missed tick together');
  t.equal(h[0]?.trigger, 'recovery');
  t.equal(h[0]?.execution_time, new Date(V + 4 * HOUR).toISOString(), 'the newest missed tick');
  t.equal((await history(twoHourly.id)).length, before.two, 'missed: skip → no run');

  // the next tick runs as usual
  jump(V + 6 * HOUR + 1_000);
  const h2 = await done(hourly.id, before.hourly + 2);
  const two = await done(twoHourly.id, before.two + 1);
  // the leader fires in order, each tick once it is due: by the time it fired this tick, a second
  // recovery run (or one for the skipped two-hourly tick) would have been fired and recorded
  t.equal((await history(hourly.id)).length, before.hourly + 2, 'no second recovery run came before the next tick');
  t.equal((await history(twoHourly.id)).length, before.two + 1, 'the skipped tick never ran');
  t.equal(h2[0]?.trigger, 'cron');
  t.equal(two[0]?.execution_time, new Date(V + 6 * HOUR).toISOString());
  p2 = cortado();
  await until('the second scheduler', ready(p2));
});

t.test('Run Now, and a dropped table fails with the drift message', async (t) => {
  // paused: it never fires on its own
  const s = await create('drift', '0 0 1 1 *', 'SELECT id, label FROM drift_t', { enabled: false });
  const queued = await bus.request(ScheduleRunNow, { id: s.id, asker: admin }, ctx());
  t.equal(queued.status, 'queued');
  t.equal(queued.trigger, 'manual');
  const [ok] = await done(s.id, 1);
  t.ok(ok?.success, ok?.error_message ?? '');
  t.equal(ok?.rows_returned, 1);
  t.ok(ok?.email_sent);

  await db.pool.query('DROP TABLE drift_t');
  await bus.request(ScheduleRunNow, { id: s.id, asker: admin }, ctx());
  const [failed] = await done(s.id, 2);
  t.notOk(failed?.success, 'the run failed');
  t.match(failed?.error_message, /the table drift_t no longer exists/);
  t.match(failed?.error_message, /Regenerate/, 'and offers regeneration');
  t.equal(failed?.drift, true, 'recorded as drift');
  t.notOk(ok?.drift, 'a run that worked is no drift');
  t.equal(failed?.rows_returned, null);
  t.ok(failed?.email_sent, 'the failure e-mail went out');
  await until('the failure e-mail', () => mailsTo('drift').length >= 2);
  t.match(mailsTo('drift')[1]?.parsed.subject, /^Failed: drift/);
  t.match(mailsTo('drift')[1]?.parsed.text, /no longer exists/);

  // a column gone is drift too
  await db.pool.query('CREATE TABLE drift_c (id int, label text)');
  const c = await create('drift_col', '0 0 1 1 *', 'SELECT drift_c.id, drift_c.label FROM drift_c', { enabled: false });
  await db.pool.query('ALTER TABLE drift_c DROP COLUMN label');
  await bus.request(ScheduleRunNow, { id: c.id, asker: admin }, ctx());
  const [col] = await done(c.id, 1);
  t.notOk(col?.success);
  t.match(col?.error_message, /label/);
  t.match(col?.error_message, /Regenerate/);

  // excel attached, html embedded
  const xl = await create('as_excel', '0 0 1 1 *', 'SELECT region, amount FROM sales ORDER BY amount', { enabled: false, format: 'excel' });
  const html = await create('as_html', '0 0 1 1 *', "SELECT '<b>' || region || '</b>' AS region FROM sales ORDER BY amount", { enabled: false, format: 'html' });
  await bus.request(ScheduleRunNow, { id: xl.id, asker: admin }, ctx());
  await bus.request(ScheduleRunNow, { id: html.id, asker: admin }, ctx());
  t.ok((await done(xl.id, 1))[0]?.success);
  t.ok((await done(html.id, 1))[0]?.success);
  await until('the excel and html reports', () => mailsTo('as_excel').length === 1 && mailsTo('as_html').length === 1);
  t.match(mailsTo('as_excel')[0]?.parsed.attachments[0]?.filename, /^as_excel_.*\.xlsx$/, 'excel: attached');
  t.equal(mailsTo('as_html')[0]?.parsed.attachments.length, 0, 'html: not attached');
  t.match(String(mailsTo('as_html')[0]?.parsed.html), /&lt;b&gt;north&lt;\/b&gt;/, 'html: embedded, escaped');

  // somebody else's schedule cannot be run
  await t.rejects(bus.request(ScheduleRunNow, { id: s.id, asker: { user: 'eve', admin: false, owner: 'a:eve' } }, ctx()), { code: 'NOT_FOUND' });
});

t.test('max_concurrent_jobs holds across both processes; job_timeout_seconds cancels the query', async (t) => {
  const slow = await create('slow', '0 0 1 1 *', 'SELECT count(*) AS n FROM generate_series(1, 1500000) g, generate_series(1, 2) h', { enabled: false });
  for (let i = 0; i < 6; i++) await bus.request(ScheduleRunNow, { id: slow.id, asker: admin }, ctx());
  const list = (await done(slow.id, 6)).filter((e) => e.status === 'done');
  t.equal(list.length, 6);
  for (const e of list) t.ok(e.success, e.error_message ?? '');
  // the most runs at once, from their records
  const edges = list.flatMap((e) => [{ at: Date.parse(e.started_at as string), d: 1 }, { at: Date.parse(e.finished_at as string), d: -1 }])
    .sort((a, b) => a.at - b.at || a.d - b.d);
  let now = 0;
  let most = 0;
  for (const x of edges) most = Math.max(most, (now += x.d));
  t.ok(most <= 2, `at most 2 runs at once (max_concurrent_jobs), saw ${most}`);

  const endless = await create('endless', '0 0 1 1 *', 'SELECT count(*) AS n FROM generate_series(1, 2000000000) g', { enabled: false });
  await bus.request(ScheduleRunNow, { id: endless.id, asker: admin }, ctx());
  const [timedOut] = await done(endless.id, 1);
  t.notOk(timedOut?.success);
  t.match(timedOut?.error_message, /job timeout \(scheduler\.job_timeout_seconds: 8 s\) and was cancelled/);
  // the export reads through a cursor: the statement running is its FETCH
  t.equal(await backendsStillRunning(db, 'cortado_export'), 0, 'no backend still runs the query');
});

t.test('pausing stops the firing', async (t) => {
  await bus.request(ScheduleUpdate, { id: hourly.id, enabled: false, asker: admin }, ctx());
  const before = (await history(hourly.id)).length;
  // checked once the leader has looked at the schedules at V + 7 h, not after a few seconds: it
  // goes through them in the order they were made, so once it has fired this later one (due
  // every minute) for V + 7 h, it has passed over hourly then too
  const pulse = await create('pulse', '* * * * *', 'SELECT 1 AS one');
  jump(V + 7 * HOUR + 1_000);
  await until('the leader\'s pass at V + 7 h', async () => {
    const r = await cfgDb.pool.query<{ fired_through: Date | null }>('SELECT fired_through FROM cortado_schedules WHERE id = $1', [pulse.id]);
    return (r.rows[0]?.fired_through?.getTime() ?? 0) >= V + 7 * HOUR;
  });
  t.equal((await history(hourly.id)).length, before, 'a paused schedule does not run');
  // out of the way of the next test, which finds its run among the exports running
  await done(pulse.id, 1);
  await bus.request(ScheduleUpdate, { id: pulse.id, enabled: false, asker: admin }, ctx());
});

t.test('a process killed mid-run: its run is delivered to the other and runs once to the end', async (t) => {
  const s = await create('crashy', '0 0 1 1 *', 'SELECT count(*) AS n FROM generate_series(1, 20000001) g', { enabled: false });
  await bus.request(ScheduleRunNow, { id: s.id, asker: admin }, ctx());
  // which process runs it: its export connection says (application_name cortado-export-<pid>)
  let pid = 0;
  await until('the query running', async () => {
    const r = await db.pool.query(`SELECT application_name FROM pg_stat_activity
      WHERE datname = current_database() AND state = 'active' AND application_name LIKE 'cortado-export-%' AND pid <> pg_backend_pid()`);
    pid = Number(/cortado-export-(\d+)/.exec(String(r.rows[0]?.application_name ?? ''))?.[1] ?? 0);
    return pid > 0;
  }, 20_000);
  const victim = p1.child.pid === pid ? p1 : p2;
  t.equal(victim.child.pid, pid, 'one of the two runs it');
  victim.child.kill('SIGKILL');
  await victim.exited;
  const [e] = await done(s.id, 1);
  t.ok(e?.success, e?.error_message ?? '');
  t.equal((await history(s.id)).length, 1, 'one execution');
  await until('the report', () => mailsTo('crashy').length >= 1);
  await new Promise((r) => setTimeout(r, 2_000));
  t.equal(mailsTo('crashy').length, 1, 'one e-mail');
  if (victim === p1) p1 = cortado();
  else p2 = cortado();
  await until('the scheduler back', () => ready(p1)() && ready(p2)());
});

t.test('stop', async (t) => {
  p1.child.kill('SIGTERM');
  p2.child.kill('SIGTERM');
  t.equal(await p1.exited, 0);
  t.equal(await p2.exited, 0);
});

t.test('config_db off: the schedules live in the process, which runs them itself', async (t) => {
  const memCfg = testConfig({
    natsUrl: nats.url, db: { host: db.host, port: db.port, name: db.name, user: db.user }, llmUrl: fake.url,
    extra: {
      bus: { prefix: 'memsched' },
      scheduler: { enabled: false },
      email: { enabled: true, smtp: { host: smtp.host, port: smtp.port, from_email: 'reports@example.org', use_tls: false, use_ssl: false } },
    },
  });
  const stack = await startStack(memCfg, { edge: false, actors: [...ALL_ACTORS] });
  t.teardown(() => stack.stop());
  const mem = await Bus.connect({ url: nats.url, prefix: 'memsched', name: 'memsched-test', log: createLogger({ svc: 'test', level: 'silent' }) });
  t.teardown(() => mem.close());
  const s = await mem.request(ScheduleCreate, {
    name: 'in_memory', question: 'sales', cron: '0 0 1 1 *', sql: 'SELECT count(*) AS n FROM sales', email_recipients: ['in_memory@example.org'], format: 'csv', asker: admin,
  }, ctx());
  const queued = await mem.request(ScheduleRunNow, { id: s.id, asker: admin }, ctx());
  t.equal(queued.status, 'queued', 'Run Now works with scheduler.enabled false');
  let list: Execution[] = [];
  await until('the run', async () => {
    list = (await mem.request(ScheduleHistory, { id: s.id, asker: admin }, ctx())).executions;
    return list[0]?.status === 'done';
  });
  t.ok(list[0]?.success, list[0]?.error_message ?? '');
  t.equal(list[0]?.rows_returned, 1);
  await until('the report', () => mailsTo('in_memory').length === 1);
});

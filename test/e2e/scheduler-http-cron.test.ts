/**
 * The "done when", as an operator would see it: one real `cortado` process (the edge and
 * every actor) on a real NATS (JetStream lease and work queue), config_db on PostgreSQL, a real
 * SMTP server. A schedule created over HTTP by the admin session with the cron `* * * * *` fires
 * by its cron through the leader (the clock moved by the test: test/fixtures/scheduler-clock.mjs;
 * the product reads the real one), e-mails its report with the csv attached, and shows in
 * History over HTTP. Then daylight saving through the leader: a schedule at 02:30 in
 * Europe/Berlin runs once on the spring-forward day (02:30 does not exist: at 03:00 CEST) and
 * once on the fall-back day (the first 02:30, CEST; not the second, CET).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import YAML from 'yaml';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { ROOT } from '../../config/load.js';
import { testConfigObject } from '../helpers/config.js';
import { startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { cortado, until } from '../helpers/processes.js';
import { startSmtp } from '../helpers/smtp.js';
import { call } from '../helpers/stack.js';

const MINUTE = 60_000;
const db = await createTestDb('schhttp');
const cfgDb = await createTestDb('schhttpcfg');
await db.pool.query("CREATE TABLE sales (region text, amount numeric); INSERT INTO sales VALUES ('north', 10), ('south', 20), ('north', 5)");
const nats = await startNats();
const smtp = await startSmtp({ tls: 'none' });
const fake = await startFakeLlm();
const dir = mkdtempSync(path.join(tmpdir(), 'cortado-schhttp-'));
const clockFile = path.join(dir, 'clock');
t.teardown(async () => {
  await fake.close();
  await smtp.close();
  await nats.stop();
  await db.drop();
  await cfgDb.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** The virtual clock of the process: `jump(T)` makes it read T now (forward only). */
function jump(to: number): void {
  writeFileSync(clockFile, String(Math.round(to - Date.now())));
}

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((r) => srv.close(r));
  return port;
}

jump(Date.now());

const port = await freePort();
const ADMIN = { enabled: true, username: 'admin', password: 'http-cron-admin-pw' };
const config = testConfigObject({
  natsUrl: nats.url, db: { host: db.host, port: db.port, name: db.name, user: db.user }, llmUrl: fake.url,
  extra: {
    admin: ADMIN,
    config_db: { enabled: true, encryption_key: generateFernetKey(), postgresql: { host: cfgDb.host, port: cfgDb.port, database: cfgDb.name, user: cfgDb.user } },
    // history kept long: the clock jumps months ahead below
    scheduler: { enabled: true, timezone: 'UTC', keep_history_days: 3650 },
    email: { enabled: true, smtp: { host: smtp.host, port: smtp.port, from_email: 'reports@example.org', use_tls: false, use_ssl: false } },
  },
});
(config.app as Record<string, unknown>).port = port;
const configFile = path.join(dir, 'cortado.yaml');
writeFileSync(configFile, YAML.stringify(config));
const url = `http://127.0.0.1:${port}`;

const p = cortado(['--config', configFile], {
  nodeArgs: ['--import', path.join(ROOT, 'test/fixtures/scheduler-clock.mjs')],
  env: { CORTADO_TEST_CLOCK_FILE: clockFile },
});
t.teardown(async () => {
  p.child.kill('SIGTERM');
  await p.exited;
});
await until('cortado up, its scheduler leading', async () => /this process fires the schedules/.test(p.output()) && (await call(`${url}/health`)).status === 200, 90_000);
// a whole minute ten minutes ahead, the clock 30 s before it: the schedule is created before it
const M = (Math.ceil(Date.now() / MINUTE) + 10) * MINUTE;
jump(M - 30_000);
await new Promise((r) => setTimeout(r, 200)); // read by the process within 50 ms (see below)

/** A fresh admin session each time (the clock jumps past a session's lifetime). */
async function admin(): Promise<Record<string, string>> {
  const r = await call(`${url}/admin/login`, { body: { username: ADMIN.username, password: ADMIN.password } });
  if (r.status !== 200) throw new Error(`admin login: ${r.status} ${r.text}`);
  return { cookie: (r.headers.get('set-cookie') ?? '').split(';')[0] ?? '', 'x-csrf-token': r.body.csrf_token as string };
}

async function history(id: string): Promise<any[]> {
  const r = await call(`${url}/api/schedules/${id}/history`, { headers: await admin() });
  if (r.status !== 200) throw new Error(`history: ${r.status} ${r.text}`);
  return r.body.executions as any[];
}

async function finished(id: string, n: number): Promise<any[]> {
  let list: any[] = [];
  await until(`${n} finished run(s)`, async () => {
    list = (await history(id)).filter((e) => e.status === 'done');
    return list.length >= n;
  }, 60_000);
  return list;
}

const mailsTo = (name: string) => smtp.received.filter((m) => m.to.includes(`${name}@example.org`));

t.test('a schedule created over HTTP with a one-minute cron fires by its cron, e-mails its report, and shows in History', async (t) => {
  const h = await admin();
  const made = await call(`${url}/api/schedules`, {
    body: { name: 'minutely', question: 'sales by region', cron: '* * * * *', sql: 'SELECT region, sum(amount) AS total FROM sales GROUP BY region ORDER BY region', email_recipients: ['minutely@example.org'], format: 'csv' },
    headers: h,
  });
  t.equal(made.status, 201, made.text);
  const id = made.body.id as string;
  t.equal(made.body.next_runs[0], new Date(M).toISOString().replace('.000Z', 'Z'), 'the next run is the coming minute');

  jump(M + 1_000);
  const [first] = await finished(id, 1);
  t.match(first, { execution_time: new Date(M).toISOString(), trigger: 'cron', success: true, email_sent: true, email_error: null, rows_returned: 2 }, 'fired by its cron, recorded in History');
  await until('the report e-mail', () => mailsTo('minutely').length >= 1);
  const mail = mailsTo('minutely')[0];
  const att = mail?.parsed.attachments[0];
  t.match(att?.filename, /^minutely_.*\.csv$/, 'the csv attached');
  t.match(att?.content.toString('utf8'), /region,total[\s\S]*north,15[\s\S]*south,20/, 'with the rows');

  jump(M + MINUTE + 1_000);
  const runs = await finished(id, 2);
  t.same(runs.map((e) => e.execution_time), [new Date(M + MINUTE).toISOString(), new Date(M).toISOString()], 'the next minute too, once each');
  await until('the second e-mail', () => mailsTo('minutely').length >= 2);
  const listed = await call(`${url}/api/schedules/${id}`, { headers: await admin() });
  t.same(listed.body.last_run, { at: new Date(M + MINUTE).toISOString(), success: true }, 'the list shows the last run');
  const paused = await call(`${url}/api/schedules/${id}/pause`, { body: {}, headers: await admin() });
  t.equal(paused.status, 200, paused.text);
});

t.test('daylight saving through the leader: 02:30 in Europe/Berlin runs once on each transition day', async (t) => {
  // the Saturday evening before the spring-forward night of 2027 (28 March: 02:00 CET becomes 03:00 CEST)
  jump(Date.parse('2027-03-27T20:00:00Z'));
  // the process reads the clock file at most every 50 ms (test/fixtures/scheduler-clock.mjs):
  // the create below must see the jump, or its next runs start from the old time
  await new Promise((r) => setTimeout(r, 200));
  const made = await call(`${url}/api/schedules`, {
    body: { name: 'berlin', question: 'sales', cron: '30 2 * * *', timezone: 'Europe/Berlin', sql: 'SELECT count(*) AS n FROM sales', email_recipients: ['berlin@example.org'], format: 'csv' },
    headers: await admin(),
  });
  t.equal(made.status, 201, made.text);
  const id = made.body.id as string;
  t.equal(made.body.next_runs[0], '2027-03-28T03:00:00+02:00', 'the 02:30 that does not exist runs at 03:00 CEST');

  // "no other run" is checked once the leader has looked at berlin at the time in question, not
  // after a few seconds: the leader goes through the schedules in the order they were made, so
  // once it has fired this later one (due every minute) for a minute, it has looked at berlin then
  const pulse = await call(`${url}/api/schedules`, {
    body: { name: 'pulse', question: 'one', cron: '* * * * *', sql: 'SELECT 1 AS one', email_recipients: ['pulse@example.org'], format: 'csv' },
    headers: await admin(),
  });
  t.equal(pulse.status, 201, pulse.text);
  const lookedAt = (at: number) => until(`the leader's pass at ${new Date(at).toISOString()}`, async () => {
    const r = await cfgDb.pool.query<{ fired_through: Date | null }>('SELECT fired_through FROM cortado_schedules WHERE id = $1', [pulse.body.id]);
    return (r.rows[0]?.fired_through?.getTime() ?? 0) >= at;
  }, 60_000);

  jump(Date.parse('2027-03-28T01:00:01Z'));
  const [spring] = await finished(id, 1);
  t.match(spring, { execution_time: '2027-03-28T01:00:00.000Z', trigger: 'cron', success: true }, 'spring forward: once, at 03:00 CEST');
  jump(Date.parse('2027-03-28T02:00:00Z'));
  await lookedAt(Date.parse('2027-03-28T02:00:00Z'));
  t.equal((await history(id)).length, 1, 'and once only that day');

  // the fall-back night (31 October 2027: 03:00 CEST becomes 02:00 CET, 02:30 happens twice)
  jump(Date.parse('2027-10-31T00:30:01Z'));
  const fall = await finished(id, 2);
  t.match(fall[0], { execution_time: '2027-10-31T00:30:00.000Z', trigger: 'cron', success: true }, 'fall back: the first 02:30 (CEST)');
  jump(Date.parse('2027-10-31T01:30:01Z'));
  await lookedAt(Date.parse('2027-10-31T01:30:00Z'));
  t.equal((await history(id)).length, 2, 'not the second 02:30 (CET)');

  jump(Date.parse('2027-11-01T01:30:01Z'));
  const next = await finished(id, 3);
  t.equal(next[0]?.execution_time, '2027-11-01T01:30:00.000Z', 'the day after, 02:30 CET as usual');
  await until('three e-mails', () => mailsTo('berlin').length >= 3);
  t.equal(mailsTo('berlin').length, 3, 'one e-mail per run');
});

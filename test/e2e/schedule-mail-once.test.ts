/**
 * A scheduler process killed between sending a run's e-mail and recording the run: a real
 * `cortado` process (every actor but the mailer) on one NATS and one config database, the
 * mailer in this process, and a real SMTP server that has the message but holds its "250
 * accepted" until the scheduler process is SIGKILLed. The run is delivered again to a new
 * process (after the work queue's ack wait), which finishes it from what the run kept and what
 * the mailer recorded: one e-mail, one execution record with the first run's rows, one
 * schedule.ran, and no second query.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import YAML from 'yaml';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { startMailer } from '../../actors/mailer/actor.js';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import type { Execution } from '../../protocol/schemas/schedules.js';
import { ALL_ACTORS, ScheduleCreate, ScheduleHistory, ScheduleRanEvt, ScheduleRunNow } from '../../protocol/subjects.js';
import { testConfig, testConfigObject } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { cortado, until, type Proc } from '../helpers/processes.js';
import { startSmtp } from '../helpers/smtp.js';

const db = await createTestDb('mailonce');
const cfgDb = await createTestDb('mailoncecfg');
await db.pool.query(`
  CREATE TABLE sales (region text, amount numeric);
  INSERT INTO sales VALUES ('north', 10), ('south', 20), ('north', 5);
`);
const nats = await startNats();
let release: () => void = () => undefined;
const held = new Promise<void>((r) => { release = r; });
const smtp = await startSmtp({ hold: () => held });
const dir = mkdtempSync(path.join(tmpdir(), 'cortado-mailonce-'));
const log = createLogger({ svc: 'test', level: 'silent' });

const extra = {
  config_db: { enabled: true, encryption_key: generateFernetKey(), postgresql: { host: cfgDb.host, port: cfgDb.port, database: cfgDb.name, user: cfgDb.user } },
  // a run whose process was killed goes to the next one after 6 s, not the default 30
  scheduler: { enabled: false, job_timeout_seconds: 8, redelivery_seconds: 6 },
  email: { enabled: true, smtp: { host: smtp.host, port: smtp.port, from_email: 'reports@example.org', use_tls: false, use_ssl: false } },
};
const dbRef = { host: db.host, port: db.port, name: db.name, user: db.user };
const configFile = path.join(dir, 'cortado.yaml');
writeFileSync(configFile, YAML.stringify(testConfigObject({ natsUrl: nats.url, db: dbRef, extra })));

// the mailer here, so that killing the scheduler's process does not kill the send
const mailerBus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'mailer', log });
const mailer = await startMailer({ bus: mailerBus, config: testConfig({ natsUrl: nats.url, db: dbRef, extra }), log });
const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'mail-once-test', log });
const ran: any[] = [];
const unlisten = bus.listen(ScheduleRanEvt.subject, (d) => ran.push(d));

t.teardown(async () => {
  release();
  unlisten();
  await mailerBus.stopServing(['mailer'], Date.now() + 2_000);
  await mailer.stop();
  await mailerBus.close();
  await bus.close();
  await smtp.close();
  await nats.stop();
  await db.drop();
  await cfgDb.drop();
  rmSync(dir, { recursive: true, force: true });
});

const roles = `actors:${ALL_ACTORS.filter((a) => a !== 'mailer').join(',')}`;
const start = (): Proc => cortado(['--config', configFile, '--role', roles]);
const ready = (p: Proc) => () => /scheduler ready/.test(p.output()) && /actors started/.test(p.output());
const admin = { user: 'admin', admin: true };
const ctx = () => ({ requestId: `t-${Math.random().toString(36).slice(2)}` });

t.test('killed after the e-mail went, before the run was recorded: one e-mail, one record', { timeout: 150_000 }, async (t) => {
  const first = start();
  await until('the scheduler', ready(first));
  const s = await bus.request(ScheduleCreate, {
    name: 'once', question: 'sales by region', cron: '0 0 1 1 *', enabled: false, format: 'csv', email_recipients: ['once@example.org'],
    sql: 'SELECT region, sum(amount) AS total FROM sales GROUP BY region ORDER BY region', asker: admin,
  }, ctx());
  const queued = await bus.request(ScheduleRunNow, { id: s.id, asker: admin }, ctx());

  // the SMTP server has the message; its answer is held
  await smtp.waitFor(1, 30_000);
  first.child.kill('SIGKILL');
  await first.exited;
  release();
  const history = async (): Promise<Execution[]> => (await bus.request(ScheduleHistory, { id: s.id, asker: admin }, ctx())).executions;
  const row = await cfgDb.pool.query('SELECT status, email_sent FROM cortado_schedule_executions WHERE id = $1', [queued.id]);
  t.match(row.rows[0], { status: 'running', email_sent: false }, 'the run was not recorded: its process died first');

  const second = start();
  await until('the scheduler back', ready(second));
  let list: Execution[] = [];
  await until('the run finished by the new process', async () => {
    list = await history();
    return list[0]?.status === 'done';
  }, 90_000);
  await new Promise((r) => setTimeout(r, 2_000));
  list = await history();
  t.equal(list.length, 1, 'one execution record');
  const e = list[0]!;
  t.equal(e.id, queued.id);
  t.equal(e.success, true, e.error_message ?? '');
  t.equal(e.email_sent, true);
  t.equal(e.email_error, null);
  t.equal(e.rows_returned, 2, 'the first run\'s rows');
  t.equal(smtp.received.length, 1, 'one e-mail');
  t.equal(smtp.received[0]?.parsed.messageId, `<cortado.${e.id}@example.org>`);
  t.match(second.output(), /a run delivered again after its e-mail: recorded from what it kept and the mailer recorded, not run or e-mailed again/);
  t.notMatch(second.output(), /a run whose worker stopped before it finished: run again/, 'not run again');
  t.equal(ran.filter((r) => r.execution_id === e.id).length, 1, 'one schedule.ran');
  second.child.kill('SIGTERM');
  t.equal(await second.exited, 0);
});

/**
 * A scheduled run's e-mail exactly once when the run is delivered again (actors/scheduler/run.ts
 * with the mailer's idempotency keys), over a real NATS — the JetStream work queue the scheduler
 * takes runs from, the mailer's KV bucket, the exports object store — and a real SMTP server:
 *
 * - recording the run fails after the e-mail went (the work item is nak'ed and comes again):
 *   one e-mail, one execution record, the query ran once, one schedule.ran;
 * - a run delivered again after its worker died before any e-mail: run again, one e-mail;
 * - a run whose e-mail a mailer began and never finished (`sending`): not e-mailed again, its
 *   execution says delivery is unknown.
 * The executor is a stub on the bus (SqlCheck, SqlExport storing a real csv) that counts the queries.
 *
 * No wait for "no second e-mail": the SMTP server (test/helpers/smtp.ts) counts a message before
 * it answers 250, the mailer answers mail.send after that 250, and a run is recorded done after
 * its mail.send answered; so once the execution reads done, every e-mail any of its deliveries
 * sent is already counted.
 */
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import { EXPORT_TTL_MS } from '../../protocol/schemas/export.js';
import { Bucket, ScheduleRanEvt, SqlCheck, SqlExport } from '../../protocol/subjects.js';
import { startMailer } from '../../actors/mailer/actor.js';
import { SEND_MAX_MS, type SendRecord } from '../../actors/mailer/handle.js';
import { jetstreamQueue } from '../../actors/scheduler/queue.js';
import { runJob, type RunDeps } from '../../actors/scheduler/run.js';
import { MemorySchedules, type ExecutionsRepository, type ScheduleRecord } from '../../store/schedules.js';
import { testConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { startSmtp } from '../helpers/smtp.js';

const nats = await startNats();
const smtp = await startSmtp({ tls: 'none' });
const log = createLogger({ svc: 'test', level: 'silent' });
const config = testConfig({
  natsUrl: nats.url,
  extra: {
    email: { enabled: true, smtp: { host: smtp.host, port: smtp.port, from_email: 'reports@example.org', use_tls: false, use_ssl: false } },
    scheduler: { job_timeout_seconds: 8 },
  },
});

const mailerBus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'mailer', log, strict: true });
const mailer = await startMailer({ bus: mailerBus, config, log });
// the executor, as a stub: the guard says yes, the export stores a small csv and is counted
const execBus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'executor-stub', log, strict: true });
const exportsBucket = await execBus.objects(Bucket.Exports, { ttlMs: EXPORT_TTL_MS });
const queries: string[] = [];
execBus.serve(SqlCheck, async (input) => ({ ok: true, sql: input.sql, tables: [] }));
execBus.serve(SqlExport, async (input, ctx) => {
  queries.push(ctx.requestId);
  const csv = Buffer.from('region,total\r\nnorth,15\r\nsouth,20\r\n');
  const object = `test-${ctx.requestId}-${queries.length}.csv`;
  await exportsBucket.putBytes(object, csv);
  return {
    object, filename: `${input.title}.csv`, content_type: 'text/csv', bytes: csv.length, rows: 2, truncated: false, too_large: false,
    columns: [{ name: 'region', type: 'text' }, { name: 'total', type: 'numeric' }], sql: input.sql, masked: [], duration_ms: 1,
  };
});
const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'scheduler', log, strict: true });
const ran: any[] = [];
const unlisten = bus.listen(ScheduleRanEvt.subject, (d) => ran.push(d));
const records = await bus.bucket<SendRecord>(Bucket.Mail);
await bus.flush();

const store = new MemorySchedules();
const queue = await jetstreamQueue(bus, log, 2);

t.teardown(async () => {
  unlisten();
  await queue.stop(1_000);
  await mailerBus.stopServing(['mailer'], Date.now() + 2_000);
  await mailer.stop();
  await mailerBus.close();
  await execBus.close();
  await bus.close();
  await smtp.close();
  await nats.stop();
});

/** the executions, with markDone failing while `failDone` says so (the database went away after the e-mail) */
let failDone = 0;
const executions: ExecutionsRepository = new Proxy(store.executions, {
  get(target, prop, receiver) {
    if (prop === 'markDone') {
      return async (...args: Parameters<ExecutionsRepository['markDone']>) => {
        if (failDone > 0) {
          failDone--;
          throw new Error('the config database went away');
        }
        return target.markDone(...args);
      };
    }
    const v = Reflect.get(target, prop, receiver);
    return typeof v === 'function' ? v.bind(target) : v;
  },
});
const deps: RunDeps = { bus, config, log, schedules: store, executions, now: Date.now };
await queue.work((job, deliveries) => runJob(job, deliveries, deps));

let made = 0;
async function schedule(name: string): Promise<ScheduleRecord> {
  made++;
  return store.create({
    name, question: `report ${name}`, tables: [], cron: '0 0 1 1 *', own_timezone: 'UTC', email_recipients: [`${name}@example.org`], format: 'csv',
    subject: '', sql: 'SELECT region, sum(amount) AS total FROM sales GROUP BY region', explanation: '', enabled: false, missed: 'once', owner_user: 'admin',
  });
}
const mailsTo = (name: string) => smtp.received.filter((m) => m.to.includes(`${name}@example.org`));

/**
 * The run's schedule.ran event, once it has arrived (it is published after the record), then a
 * round trip to the server on the connection that published it: whatever it published before
 * (a second schedule.ran) has been delivered by then.
 */
async function ranEvent(id: string, ms = 10_000) {
  const end = Date.now() + ms;
  for (;;) {
    const r = ran.find((x) => x.execution_id === id);
    if (r) {
      await bus.flush();
      return r;
    }
    if (Date.now() > end) throw new Error(`no schedule.ran for ${id}`);
    await new Promise((res) => setTimeout(res, 20));
  }
}

async function doneRun(id: string, ms = 30_000) {
  const end = Date.now() + ms;
  for (;;) {
    const e = await store.executions.get(id);
    if (e?.status === 'done') return e;
    if (Date.now() > end) throw new Error(`execution ${id} not done: ${JSON.stringify(e)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

t.test('recording the run fails after its e-mail: delivered again, one e-mail, one record, one query', async (t) => {
  const s = await schedule('db_blip');
  const e = (await store.executions.enqueue({ schedule_id: s.id, schedule_name: s.name, execution_time: new Date().toISOString(), trigger: 'manual' }))!;
  failDone = 1;
  await queue.put({ execution_id: e.id, schedule_id: s.id }, { requestId: e.id });
  const done = await doneRun(e.id);
  t.equal(failDone, 0, 'the first recording failed (the work item was nak\'ed and came again)');
  t.equal(done.success, true, done.error_message ?? '');
  t.equal(done.email_sent, true);
  t.equal(done.email_error, null);
  t.equal(done.rows_returned, 2, 'the first run\'s rows, kept before the e-mail');
  t.match(done.attachment, { filename: 'db_blip.csv', sent: true });
  await ranEvent(e.id);
  t.equal(mailsTo('db_blip').length, 1, 'one e-mail');
  t.equal(mailsTo('db_blip')[0]?.parsed.messageId, `<cortado.${e.id}@example.org>`, 'its Message-ID is the execution\'s');
  t.equal(queries.filter((q) => q === e.id).length, 1, 'the query ran once');
  t.equal((await store.executions.list(s.id)).length, 1, 'one execution record');
  t.equal(ran.filter((r) => r.execution_id === e.id).length, 1, 'one schedule.ran');
  t.match(ran.find((r) => r.execution_id === e.id), { success: true, email_sent: true, rows_returned: 2 });
});

t.test('a worker that died before the e-mail: the run is run again, and e-mailed once', async (t) => {
  const s = await schedule('died_early');
  const e = (await store.executions.enqueue({ schedule_id: s.id, schedule_name: s.name, execution_time: new Date().toISOString(), trigger: 'manual' }))!;
  // what the dead worker left: running, its outcome kept, no e-mail claimed
  await store.executions.markRunning(e.id);
  await store.executions.markMailing(e.id, { success: true, error_message: null, rows_returned: 2, duration_ms: 5 });
  await runJob({ execution_id: e.id, schedule_id: s.id }, 2, deps);
  const done = await doneRun(e.id);
  t.equal(done.email_sent, true);
  t.equal(queries.filter((q) => q === e.id).length, 1, 'run again (no e-mail had gone)');
  t.equal(mailsTo('died_early').length, 1, 'one e-mail');
});

t.test('a worker that died after its e-mail was sent: finished from the records, not run or e-mailed again', async (t) => {
  const s = await schedule('died_late');
  const e = (await store.executions.enqueue({ schedule_id: s.id, schedule_name: s.name, execution_time: new Date().toISOString(), trigger: 'manual' }))!;
  await store.executions.markRunning(e.id);
  await store.executions.markMailing(e.id, { success: true, error_message: null, rows_returned: 7, duration_ms: 40, attachment: { filename: 'died_late.csv', bytes: 30, sent: true } });
  await records.put(`sent.${e.id}`, { state: 'sent', at: new Date().toISOString(), message_id: `<cortado.${e.id}@example.org>` });
  // a first delivery of a running execution is somebody else's run: left alone
  await runJob({ execution_id: e.id, schedule_id: s.id }, 1, deps);
  t.equal((await store.executions.get(e.id))?.status, 'running');
  await runJob({ execution_id: e.id, schedule_id: s.id }, 2, deps);
  const done = await doneRun(e.id);
  t.match(done, { success: true, email_sent: true, email_error: null, rows_returned: 7, duration_ms: 40, attachment: { filename: 'died_late.csv', sent: true } });
  t.equal(queries.filter((q) => q === e.id).length, 0, 'no query');
  await ranEvent(e.id);
  t.equal(mailsTo('died_late').length, 0, 'no e-mail');
  t.equal(ran.filter((r) => r.execution_id === e.id).length, 1, 'one schedule.ran');
});

t.test('a mailer that died mid-send (`sending`): no second e-mail, the execution says delivery is unknown', async (t) => {
  const s = await schedule('mid_send');
  const e = (await store.executions.enqueue({ schedule_id: s.id, schedule_name: s.name, execution_time: new Date().toISOString(), trigger: 'manual' }))!;
  await store.executions.markRunning(e.id);
  await store.executions.markMailing(e.id, { success: true, error_message: null, rows_returned: 2, duration_ms: 12, attachment: { filename: 'mid_send.csv', bytes: 30, sent: true } });
  await records.put(`sent.${e.id}`, { state: 'sending', at: new Date(Date.now() - SEND_MAX_MS - 1_000).toISOString(), request_id: e.id });
  await runJob({ execution_id: e.id, schedule_id: s.id }, 2, deps);
  const done = await doneRun(e.id);
  t.equal(done.success, true, 'the query itself succeeded');
  t.equal(done.email_sent, false);
  t.match(done.email_error, /^delivery unknown: a mailer began sending this e-mail at .* and stopped before it recorded the outcome; it is not sent again/);
  t.match(done.attachment, { sent: false });
  t.equal(queries.filter((q) => q === e.id).length, 0, 'no query');
  await ranEvent(e.id);
  t.equal(mailsTo('mid_send').length, 0, 'no e-mail');
  t.match(ran.find((r) => r.execution_id === e.id), { email_sent: false, email_error: /delivery unknown/ });

  // the same through mail.send: a whole run again (its outcome was never kept) finds the claim
  const s2 = await schedule('mid_send_2');
  const e2 = (await store.executions.enqueue({ schedule_id: s2.id, schedule_name: s2.name, execution_time: new Date().toISOString(), trigger: 'manual' }))!;
  await records.put(`sent.${e2.id}`, { state: 'sending', at: new Date(Date.now() - SEND_MAX_MS - 1_000).toISOString(), request_id: 'dead' });
  await runJob({ execution_id: e2.id, schedule_id: s2.id }, 1, deps);
  const done2 = await doneRun(e2.id);
  t.equal(done2.email_sent, false);
  t.match(done2.email_error, /^delivery unknown/);
  t.equal(mailsTo('mid_send_2').length, 0, 'no e-mail');
  t.ok(made > 0);
});

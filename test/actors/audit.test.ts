/**
 * The audit actor reads the event stream through a durable consumer: killed (SIGKILL) in the
 * middle of a backlog and started again, it writes every event exactly once to config_db. The
 * scheduled reports' events (schedule.ran, mail.sent, mail.failed) are among them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import YAML from 'yaml';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import { MailSend, QueryExecutedEvt, ScheduleRanEvt } from '../../protocol/subjects.js';
import { startMailer } from '../../actors/mailer/actor.js';
import { ROOT } from '../../config/load.js';
import { toEntry } from '../../actors/audit/handle.js';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { testConfig, testConfigObject, setConfig } from '../helpers/config.js';
import { endWithProcess } from '../helpers/leftovers.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { startSmtp } from '../helpers/smtp.js';

const N = 1500;
// each part's teardown right after it started (tap runs them last first)
const nats = await startNats();
t.teardown(() => nats.stop());
const cfgDb = await createTestDb('audit');
t.teardown(() => cfgDb.drop());
const dir = mkdtempSync(path.join(tmpdir(), 'cortado-audit-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const log = createLogger({ svc: 'test', level: 'silent' });

const obj = testConfigObject({ natsUrl: nats.url });
Object.assign(obj, { config_db: { enabled: true, encryption_key: generateFernetKey(), postgresql: { host: cfgDb.host, port: cfgDb.port, database: cfgDb.name, user: cfgDb.user } } });
const file = path.join(dir, 'audit.yaml');
writeFileSync(file, YAML.stringify(obj));

/** The audit actor in a process of its own, ended with the subtest `t` that started it (or with this process). */
function auditProcess(t: Test): { proc: ChildProcess; exited: Promise<number | null> } {
  const proc = endWithProcess(spawn(process.execPath, [path.join(ROOT, 'bin/cortado.js'), '--config', file, '--role', 'actors:audit'], { cwd: ROOT, stdio: 'ignore' }));
  const exited = new Promise<number | null>((r) => proc.once('exit', (c) => r(c)));
  t.teardown(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); });
  return { proc, exited };
}

async function count(): Promise<{ rows: number; distinct: number }> {
  const r = await cfgDb.pool.query('SELECT count(*)::int AS rows, count(DISTINCT event_id)::int AS distinct FROM cortado_audit_log').catch(() => ({ rows: [{ rows: 0, distinct: 0 }] }));
  return r.rows[0] as { rows: number; distinct: number };
}

t.test('the audit entry of an event', async (t) => {
  const e = toEntry('evt.query.executed', { id: 'e1', ts: '2026-11-01T00:00:00Z', request_id: 'r1', user: 'ann', channel: 'api', sql: 'SELECT 1' });
  t.match(e, { event_id: 'e1', type: 'query.executed', code: 'OK', request_id: 'r1', user: 'ann', channel: 'api' });
  const a = toEntry('evt.other', { no: 'id' });
  const b = toEntry('evt.other', { no: 'id' });
  t.equal(a.event_id, b.event_id, 'an event without id gets a stable one');
});

t.test('killed mid-stream and restarted: nothing lost, nothing duplicated', { timeout: 150_000 }, async (t) => {
  const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'publisher', log });
  t.teardown(() => bus.close());
  await bus.ensureEventStream();
  const ids: string[] = [];
  for (let i = 0; i < N; i++) {
    const id = randomUUID();
    ids.push(id);
    bus.publish(QueryExecutedEvt, {
      id, ts: new Date().toISOString(), request_id: `r${i}`, sql: 'SELECT 1', duration_ms: 1, row_count: 1, truncated: false,
      usage: { input_tokens: 1, output_tokens: 1, cached_input_tokens: 0, llm_calls: 1 }, attempt: 0,
    }, { requestId: `r${i}` });
  }
  await bus.flush();

  const first = auditProcess(t);
  const end = Date.now() + 60_000;
  while ((await count()).rows < 100 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  first.proc.kill('SIGKILL');
  await first.exited;
  const mid = await count();
  t.ok(mid.rows > 0 && mid.rows < N, `killed part way (${mid.rows} of ${N} written)`);

  const second = auditProcess(t);
  const end2 = Date.now() + 90_000;
  while ((await count()).rows < N && Date.now() < end2) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 500)); // anything redelivered late would show now
  const after = await count();
  t.equal(after.rows, N, 'every event written');
  t.equal(after.distinct, N, 'each once');
  const missing = await cfgDb.pool.query('SELECT count(*)::int AS n FROM unnest($1::text[]) AS id WHERE id NOT IN (SELECT event_id FROM cortado_audit_log)', [ids]);
  t.equal(missing.rows[0].n, 0, 'the very events published');
  second.proc.kill('SIGTERM');
  t.equal(await second.exited, 0);
});

t.test('schedule.ran, mail.sent and mail.failed reach the audit log', { timeout: 90_000 }, async (t) => {
  const PASSWORD = 'audit-smtp-Pw-7781';
  const smtp = await startSmtp({ tls: 'none', auth: { user: 'mailer', pass: PASSWORD } });
  t.teardown(() => smtp.close());
  const cfg = testConfig({
    natsUrl: nats.url,
    extra: {
      email: {
        enabled: true, max_recipients_per_email: 1,
        smtp: { host: smtp.host, port: smtp.port, user: 'mailer', password: PASSWORD, from_email: 'reports@example.org', use_tls: false, use_ssl: false },
      },
    },
  });
  const mailerBus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'mailer', log });
  const mailer = await startMailer({ bus: mailerBus, config: cfg, log });
  const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'scheduler', log });
  t.teardown(async () => {
    await mailerBus.stopServing(['mailer'], Date.now() + 2_000);
    await mailer.stop();
    await mailerBus.close();
    await bus.close();
  });
  const audit = auditProcess(t);

  const run = randomUUID();
  // a report e-mailed, one refused (two recipients over a cap of one), one failed at the SMTP login
  t.equal((await bus.request(MailSend, { to: ['boss@example.org'], subject: 'Report', text: 'attached', idempotency_key: run }, { requestId: run, user: 'ann' })).sent, true);
  await t.rejects(bus.request(MailSend, { to: ['a@example.org', 'b@example.org'], subject: 'Report', text: 't' }, { requestId: `${run}-cap`, user: 'ann' }), { code: 'LIMIT_EXCEEDED' });
  setConfig(cfg, 'email.smtp.password', `${PASSWORD}-wrong`);
  await t.rejects(bus.request(MailSend, { to: ['boss@example.org'], subject: 'Report', text: 't' }, { requestId: `${run}-auth`, user: 'ann' }), { code: 'INTERNAL' });
  bus.publish(ScheduleRanEvt, {
    id: randomUUID(), ts: new Date().toISOString(), request_id: run, user: 'ann', schedule_id: 's1', schedule_name: 'Daily sales', execution_id: run,
    execution_time: new Date().toISOString(), trigger: 'manual', success: true, rows_returned: 2, duration_ms: 12, email_sent: true,
  }, { requestId: run, user: 'ann' });
  await bus.flush();

  type Row = { type: string; request_id: string; user: string | null; code: string | null; payload: any };
  let rows: Row[] = [];
  const end = Date.now() + 60_000;
  while (Date.now() < end) {
    const r = await cfgDb.pool.query<Row>(`SELECT type, request_id, username AS "user", code, payload FROM cortado_audit_log WHERE request_id LIKE $1 || '%' ORDER BY type`, [run]).catch(() => ({ rows: [] as Row[] }));
    rows = r.rows;
    if (rows.length >= 4) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const of = (type: string, rid: string) => rows.find((r) => r.type === type && r.request_id === rid);
  t.match(of('mail.sent', run), { user: 'ann', payload: { sent: true, to: ['boss@example.org'], idempotency_key: run } }, 'mail.sent');
  t.match(of('mail.failed', `${run}-cap`), { user: 'ann', code: 'LIMIT_EXCEEDED', payload: { reason: 'max_recipients_per_email' } }, 'mail.failed: a refusal');
  t.match(of('mail.failed', `${run}-auth`), { code: 'INTERNAL', payload: { reason: 'smtp_auth', error: /refused the login/ } }, 'mail.failed: an SMTP failure');
  t.match(of('schedule.ran', run), { user: 'ann', payload: { schedule_name: 'Daily sales', success: true, email_sent: true } }, 'schedule.ran');
  t.equal(rows.length, 4, 'each once');
  t.notOk(JSON.stringify(rows).includes(PASSWORD), 'the SMTP password is in no audit entry');
  audit.proc.kill('SIGTERM');
  t.equal(await audit.exited, 0);
});

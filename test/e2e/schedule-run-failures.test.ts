/**
 * A scheduled run's e-mail failing for real, read back in History: Cortado running whole (edge,
 * scheduler, executor, catalog, mailer over NATS; PostgreSQL holding the table), a schedule
 * created and Run Now over HTTP, against real SMTP servers that refuse the login, refuse the
 * connection, or offer a certificate Cortado does not trust. Each run succeeds (the query ran)
 * and its execution records `email_sent: false` with the SMTP error as `email_error`; the
 * password is nowhere in it. Then, with the right password, the same schedule's run is e-mailed.
 * And a job timeout over the query timeout: the query is cancelled at the query timeout, and
 * the run's error says that one applied.
 */
import t from 'tap';
import { testConfig, setConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { until } from '../helpers/processes.js';
import { startSmtp } from '../helpers/smtp.js';
import { call, startStack } from '../helpers/stack.js';

const PASSWORD = 'sched-smtp-Pw-4410';
const ADMIN = { enabled: true, username: 'admin', password: 'mail error horse' };
const nats = await startNats();
const db = await createTestDb('schmailerr');
await db.pool.query(`
  CREATE TABLE sales (region text, amount numeric);
  INSERT INTO sales VALUES ('north', 10), ('south', 20);
`);
const smtp = await startSmtp({ tls: 'none', auth: { user: 'reports', pass: PASSWORD } });
const tlsSmtp = await startSmtp({ tls: 'starttls', auth: { user: 'reports', pass: PASSWORD } });
const gone = await startSmtp({ tls: 'none' });
const closedPort = gone.port;
await gone.close();

const config = testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  extra: {
    admin: ADMIN,
    scheduler: { job_timeout_seconds: 8 },
    email: {
      enabled: true,
      smtp: { host: smtp.host, port: smtp.port, user: 'reports', password: `${PASSWORD}-wrong`, from_email: 'reports@example.org', use_tls: false, use_ssl: false },
    },
  },
});
const smtp0 = structuredClone(config.email.smtp);
const stack = await startStack(config);
t.teardown(async () => {
  await stack.stop();
  await smtp.close();
  await tlsSmtp.close();
  await db.drop();
  await nats.stop();
});

const login = await call(`${stack.url}/admin/login`, { body: { username: ADMIN.username, password: ADMIN.password } });
const admin = { cookie: (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '', 'x-csrf-token': login.body.csrf_token as string };
const api = (path: string, body?: unknown) => call(`${stack.url}/api/schedules${path}`, { headers: admin, ...(body !== undefined ? { body } : {}) });

const created = await api('', {
  name: 'Sales by region', question: 'sales by region', tables: ['sales'], cron: '0 9 * * 1-5', format: 'csv',
  email_recipients: ['boss@example.org'], sql: 'SELECT region, sum(amount) AS total FROM sales GROUP BY region ORDER BY region',
});
/** Run Now over HTTP; the finished execution as History shows it. */
async function runNow(id = created.body.id as string): Promise<any> {
  const queued = await api(`/${id}/run`, {});
  if (queued.status !== 202) throw new Error(`run now: ${queued.status} ${queued.text}`);
  let found: any;
  await until('the run in History', async () => {
    const h = await api(`/${id}/history`);
    found = h.body.executions.find((e: any) => e.id === queued.body.id && e.status === 'done');
    return found !== undefined;
  }, 30_000);
  return found;
}

t.test('the schedule is there', async (t) => {
  t.equal(login.status, 200, login.text);
  t.equal(created.status, 201, created.text);
});

t.test('the SMTP server refuses the login: email_sent false, the auth error in History', async (t) => {
  const e = await runNow();
  t.equal(e.success, true, 'the query itself ran');
  t.equal(e.rows_returned, 2);
  t.equal(e.email_sent, false);
  t.match(e.email_error, new RegExp(`^the SMTP server 127\\.0\\.0\\.1:${smtp.port} refused the login of "reports" \\(535`));
  t.notMatch(e.email_error, PASSWORD, 'no password');
  t.match(e.attachment, { sent: false });
  t.equal(smtp.received.length, 0);
  t.ok(smtp.authFailures >= 1, 'the server saw the login');
});

t.test('the connection refused: its own email_error', async (t) => {
  setConfig(config, 'email.smtp', { ...smtp0, port: closedPort });
  t.teardown(() => { setConfig(config, 'email.smtp', structuredClone(smtp0)); });
  const e = await runNow();
  t.equal(e.email_sent, false);
  t.equal(e.email_error, `cannot connect to the SMTP server 127.0.0.1:${closedPort}: connection refused`);
});

t.test('a certificate Cortado does not trust (STARTTLS): a TLS email_error', async (t) => {
  setConfig(config, 'email.smtp', { ...smtp0, host: 'localhost', port: tlsSmtp.port, password: PASSWORD, use_tls: true });
  t.teardown(() => { setConfig(config, 'email.smtp', structuredClone(smtp0)); });
  const e = await runNow();
  t.equal(e.email_sent, false);
  t.match(e.email_error, new RegExp(`^TLS with the SMTP server localhost:${tlsSmtp.port} failed: .*certificate`));
  t.equal(tlsSmtp.received.length, 0, 'nothing sent in the clear');
});

t.test('with the right password the next run is e-mailed', async (t) => {
  setConfig(config, 'email.smtp', { ...smtp0, password: PASSWORD });
  t.teardown(() => { setConfig(config, 'email.smtp', structuredClone(smtp0)); });
  const e = await runNow();
  t.equal(e.email_sent, true, e.email_error ?? '');
  t.equal(e.email_error, null);
  const [got] = await smtp.waitFor(1);
  t.equal(got?.user, 'reports');
  t.equal(got?.parsed.messageId, `<cortado.${e.id}@example.org>`, 'the execution id is the Message-ID');
  t.match(got?.parsed.attachments[0]?.content.toString('utf8'), /north,10[\s\S]*south,20/);
});

t.test('job_timeout_seconds over query.timeout: cancelled at the query timeout, and the error says so', async (t) => {
  setConfig(config, 'query.timeout', 2);
  setConfig(config, 'scheduler.job_timeout_seconds', 30);
  t.teardown(() => {
    setConfig(config, 'query.timeout', 10);
    setConfig(config, 'scheduler.job_timeout_seconds', 8);
  });
  const endless = await api('', {
    name: 'Endless', question: 'count forever', tables: [], cron: '0 9 * * 1-5', format: 'csv',
    email_recipients: ['boss@example.org'], sql: 'SELECT count(*) AS n FROM generate_series(1, 2000000000) g',
  });
  t.equal(endless.status, 201, endless.text);
  const started = Date.now();
  const e = await runNow(endless.body.id);
  t.equal(e.success, false);
  t.equal(e.error_message, 'The query ran longer than the query timeout (query.timeout: 2 s) and was cancelled on the database. '
    + 'scheduler.job_timeout_seconds (30 s) is over it, and no query runs longer than query.timeout.');
  t.ok(Date.now() - started < 20_000, 'cancelled after the query timeout, not the job\'s 30 s');
});

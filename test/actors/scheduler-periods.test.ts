/**
 * A scheduled report means the same relative period at every run (issue 28 §1,
 * actors/scheduler/periods.ts): "revenue by store last month", pinned in mid-November while the
 * model writes October's dates as literals, reports November when it runs on 1 December and
 * December when it runs on 1 January, in the schedule's zone (Asia/Tokyo: both runs are still
 * the day before in UTC, where "last month" would be a month earlier). On PostgreSQL, MariaDB,
 * and through the Trino and BigQuery stand-ins (test/helpers/fake-*.ts), with the real
 * executor, masking, mailer and SMTP: the report read is the csv the e-mail carried.
 * The run's clock is the execution's planned time (as a cron tick sets it); creation reads the
 * clock SchedulesDeps.now gives it.
 */
import t from 'tap';
import { createLogger } from '../../runtime/log.js';
import { runCortado } from '../../cli/run.js';
import { create, type SchedulesDeps } from '../../actors/scheduler/schedules.js';
import { runExecution, type RunDeps } from '../../actors/scheduler/run.js';
import { openStorage } from '../../store/index.js';
import { Bus } from '../../runtime/bus.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startFakeBigQuery } from '../helpers/fake-bigquery.js';
import { startFakeTrino } from '../helpers/fake-trino.js';
import { createTestMysqlDb } from '../helpers/mysql.js';
import { createTestDb } from '../helpers/pg.js';
import { startNats } from '../helpers/nats.js';
import { startSmtp } from '../helpers/smtp.js';

const log = createLogger({ svc: 'test', level: 'silent' });
const nats = await startNats();
const smtp = await startSmtp({ tls: 'none' });
const llm = await startFakeLlm();
t.teardown(async () => {
  await llm.close();
  await smtp.close();
  await nats.stop();
});

/** one row per month: the store's name says which month the report read */
const ROWS = "('oct store', 10, '2026-10-15'), ('nov store', 20, '2026-11-01'), ('nov store', 1, '2026-11-30'), ('dec store', 30, '2026-12-31'), ('jan store', 40, '2027-01-01')";
const CREATED = Date.parse('2026-11-15T12:00:00Z');
/** 00:30 on 1 December and 1 January in Tokyo; still 30 November and 31 December in UTC */
const DECEMBER_RUN = '2026-11-30T15:30:00.000Z';
const JANUARY_RUN = '2026-12-31T15:30:00.000Z';

interface Target {
  name: string;
  table: string;
  /** the database section of the config */
  database: Record<string, unknown>;
  close(): Promise<void>;
}

async function postgres(): Promise<Target> {
  const db = await createTestDb('period_pg');
  await db.pool.query(`CREATE TABLE orders (store text, amount numeric, ordered_at date); INSERT INTO orders VALUES ${ROWS}`);
  return {
    name: 'postgresql', table: 'orders',
    database: { provider: 'postgresql', postgresql: { host: db.host, port: db.port, database: db.name, user: db.user, min_connections: 1, max_connections: 4 } },
    close: () => db.drop(),
  };
}

async function mariadb(): Promise<Target> {
  const db = await createTestMysqlDb('period_my');
  await db.pool.query('CREATE TABLE orders (store VARCHAR(40), amount DECIMAL(10,2), ordered_at DATE)');
  await db.pool.query(`INSERT INTO orders VALUES ${ROWS}`);
  return { name: 'mariadb', table: 'orders', database: { provider: 'mysql', mysql: db.section() }, close: () => db.drop() };
}

async function trino(): Promise<Target> {
  const db = await createTestDb('period_trino');
  await db.pool.query(`CREATE TABLE orders (store text, amount numeric, ordered_at date); INSERT INTO orders VALUES ${ROWS}`);
  const fake = await startFakeTrino({ databaseUrl: db.url, catalog: 'postgresql' });
  return {
    name: 'trino (stand-in)', table: 'orders',
    database: { provider: 'trino', trino: { host: fake.host, port: fake.port, http_scheme: 'http', user: 'cortado', catalog: 'postgresql', schema: 'public' } },
    close: async () => {
      await fake.close();
      await db.drop();
    },
  };
}

async function bigquery(): Promise<Target> {
  const PROJECT = 'period-project';
  const db = await createTestDb('period_bq');
  await db.pool.query(`CREATE SCHEMA shop; CREATE TABLE shop.orders (store text, amount numeric, ordered_at date); INSERT INTO shop.orders VALUES ${ROWS}`);
  const fake = await startFakeBigQuery({ databaseUrl: db.url, projectId: PROJECT });
  return {
    name: 'bigquery (stand-in)', table: 'shop.orders',
    database: {
      provider: 'bigquery',
      bigquery: { project_id: PROJECT, dataset: 'shop', location: 'US', credentials_json: JSON.stringify(fake.serviceAccount()), max_results: 1_000, base_url: fake.url, timeout: 10 },
    },
    close: async () => {
      await fake.close();
      await db.drop();
    },
  };
}

let mails = 0;
for (const start of [postgres, mariadb, trino, bigquery]) {
  const target = await start();
  t.test(`${target.name}: a "last month" schedule reports November in December and December in January`, async (t) => {
    const config = testConfig({
      natsUrl: nats.url, llmUrl: llm.url,
      extra: {
        database: { ...target.database, allow_privileged_role: true },
        email: { enabled: true, smtp: { host: smtp.host, port: smtp.port, from_email: 'reports@example.org', use_tls: false, use_ssl: false } },
      },
    });
    const running = await runCortado({ config, roles: { edge: false, actors: ['executor', 'masking', 'settings', 'catalog', 'semantic', 'sqlgen', 'llm', 'mailer'] }, log, name: `period-${target.name}` });
    const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'period-test', log });
    const store = await openStorage(config, log);
    t.teardown(async () => {
      await bus.close();
      await running.stop();
      await store.close();
      await target.close();
    });

    // the model writes the literal dates of the month before creation (October), as models do
    llm.script({ text: sqlAnswer(`SELECT store, SUM(amount) AS revenue FROM ${target.table} WHERE ordered_at >= DATE '2026-10-01' AND ordered_at < DATE '2026-11-01' GROUP BY store ORDER BY store`) });
    const sd: SchedulesDeps = { bus, config, log, store, now: () => new Date(CREATED) };
    const made = await create({
      name: `revenue ${target.name}`, question: 'revenue by store last month', tables: [], cron: '30 0 1 * *', timezone: 'Asia/Tokyo',
      email_recipients: ['boss@example.org'], format: 'csv', asker: { user: 'admin', admin: true },
    }, sd, { requestId: `create-${target.name}` });
    t.match(llm.requests.at(-1)?.system ?? '', /'2026-10-01' \(inclusive\) to '2026-11-01' \(exclusive\)/, 'the model was told which literals stand for "last month"');
    t.notMatch(made.sql, /2026-1[01]-01/, 'no literal date of the day it was made is pinned');
    t.match(made.sql, /\{\{period_start\}\}.*\{\{period_end\}\}/);
    t.same(made.period, { kind: 'relative', phrase: 'last month', start: '2026-11-01', last: '2026-11-30', label: '1 Nov – 30 Nov 2026' }, 'the page: the next run (1 Dec, Tokyo) covers November');

    const record = (await store.schedules.get(made.id))!;
    const rd: RunDeps = { bus, config, log, schedules: store.schedules, executions: store.executions, now: Date.now };
    for (const [when, want] of [[DECEMBER_RUN, 'nov store,21'], [JANUARY_RUN, 'dec store,30']] as const) {
      const e = (await store.executions.enqueue({ schedule_id: made.id, schedule_name: made.name, execution_time: when, trigger: 'cron' }))!;
      const running = (await store.executions.markRunning(e.id))!;
      const done = await runExecution(record, running, rd);
      t.equal(done?.success, true, `${when}: ran (${done?.error_message ?? ''})`);
      const mail = (await smtp.waitFor(++mails, 15_000)).at(-1)!;
      const csv = mail.parsed.attachments[0]!.content.toString('utf8').replace(/^\ufeff/, '').trim().split(/\r?\n/);
      t.same(csv.slice(1), [want], `the run planned for ${when} (Tokyo) reports ${want.split(' ')[0]}`);
    }

    // a question that names a fixed period keeps its literals: every run reports October
    llm.script({ text: sqlAnswer(`SELECT store, SUM(amount) AS revenue FROM ${target.table} WHERE ordered_at >= DATE '2026-10-01' AND ordered_at < DATE '2026-11-01' GROUP BY store ORDER BY store`) });
    const fixed = await create({
      name: `october ${target.name}`, question: 'revenue by store in October 2026', tables: [], cron: '30 0 1 * *', timezone: 'Asia/Tokyo',
      email_recipients: ['boss@example.org'], format: 'csv', asker: { user: 'admin', admin: true },
    }, sd, { requestId: `create-fixed-${target.name}` });
    t.match(fixed.sql, /DATE '2026-10-01' AND ordered_at < DATE '2026-11-01'/, 'a fixed period stays literal');
    t.same(fixed.period, { kind: 'fixed', start: '2026-10-01', last: '2026-10-31', label: '1 Oct – 31 Oct 2026' }, 'the page: it always covers October 2026');
    const e = (await store.executions.enqueue({ schedule_id: fixed.id, schedule_name: fixed.name, execution_time: JANUARY_RUN, trigger: 'cron' }))!;
    const done = await runExecution((await store.schedules.get(fixed.id))!, (await store.executions.markRunning(e.id))!, rd);
    t.equal(done?.success, true);
    const mail = (await smtp.waitFor(++mails, 15_000)).at(-1)!;
    t.same(mail.parsed.attachments[0]!.content.toString('utf8').replace(/^\ufeff/, '').trim().split(/\r?\n/).slice(1), ['oct store,10'], 'run in January, it reports October');
  });
}

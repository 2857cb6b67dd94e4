/**
 * The executor on BigQuery, over a real NATS, through @google-cloud/bigquery, against a local
 * server speaking the BigQuery REST API that answers from a real PostgreSQL: the dry run comes
 * before the run, a statement the dry run does not call SELECT never runs (even with the guard
 * bypassed), results are paged, the LIMIT holds, values become JSON, the cost is estimated,
 * a query past its timeout is cancelled as a job and is gone from the database, errors map to
 * Cortado's codes, and the service-account key gets its token from its own token_uri.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { SqlCheck, SqlExecute, SqlIntrospect, SqlPing } from '../../protocol/subjects.js';
import { runCortado } from '../../cli/run.js';
import { bigqueryCell, columnOf, createBigQueryFromConfig, isoTimestamp, type BigQueryEngine } from '../../actors/executor/engines/bigquery.js';
import { REJECTED_BIGQUERY } from '../fixtures/guard-cases-bigquery.js';
import { testConfig } from '../helpers/config.js';
import { startFakeBigQuery } from '../helpers/fake-bigquery.js';
import { startNats } from '../helpers/nats.js';
import { backendsStillRunning, createTestDb } from '../helpers/pg.js';

// keeps google-auth-library from probing for a GCE metadata server (test process only)
process.env.METADATA_SERVER_DETECTION = 'none';

const PROJECT = 'cortado-test';
const PRICE = 6.25;

/** The dataset `shop` is a PostgreSQL schema; `sales` another one (for introspection without a dataset). */
const SCHEMA_SQL = `
CREATE SCHEMA shop;
CREATE TABLE shop.customers (id integer PRIMARY KEY, name text NOT NULL, country text);
COMMENT ON TABLE shop.customers IS 'people and companies who order';
CREATE TABLE shop.orders (
  id integer PRIMARY KEY, customer_id integer NOT NULL, amount numeric(12,2) NOT NULL, status text NOT NULL,
  ordered_at timestamptz NOT NULL, tags text[]
);
COMMENT ON TABLE shop.orders IS 'one "row" per order';
COMMENT ON COLUMN shop.orders.amount IS 'order total in EUR';
CREATE VIEW shop.paid_orders AS SELECT * FROM shop.orders WHERE status = 'paid';
CREATE TABLE shop.numbers (n bigint NOT NULL);
CREATE TABLE shop.kinds (i bigint, big bigint, money numeric(10,2), f double precision, b boolean, ts timestamptz, d date, dt timestamp, tags text[], nothing text);
CREATE SCHEMA sales;
CREATE TABLE sales.targets (region text NOT NULL, target numeric NOT NULL);

INSERT INTO shop.customers VALUES (1, 'Ada', 'UK'), (2, 'Grace', 'US'), (3, 'Linus', 'FI'), (4, 'Margaret', 'US');
INSERT INTO shop.orders
  SELECT i, 1 + (i % 4), round((1 + (i % 3)) * 2.5, 2), CASE WHEN i % 4 = 0 THEN 'refunded' ELSE 'paid' END,
         timestamptz '2024-01-01 00:00:00+00' + i * interval '37 hours', ARRAY['t' || (i % 2), 'all']
  FROM generate_series(1, 30) AS i;
INSERT INTO shop.numbers SELECT generate_series(1, 50);
INSERT INTO shop.kinds VALUES (1, 9007199254740993, 12.50, 0.1, true, '2024-01-05 08:00:00.5+00', '2024-02-29', '2024-01-05 08:00:00', ARRAY['a', 'b'], NULL);
INSERT INTO sales.targets VALUES ('EU', 100);
`;

const nats = await startNats();
const db = await createTestDb('exec_bq');
await db.pool.query(SCHEMA_SQL);
const fake = await startFakeBigQuery({ databaseUrl: db.url, projectId: PROJECT });
const log = createLogger({ svc: 'test', level: 'silent' });

function bigquery(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    project_id: PROJECT,
    dataset: 'shop',
    location: 'US',
    credentials_json: JSON.stringify(fake.serviceAccount()),
    max_results: 7,
    price_per_tb_usd: PRICE,
    base_url: fake.url,
    timeout: 10,
    ...extra,
  };
}

function configWith(bq: Record<string, unknown> = {}, natsUrl = nats.url) {
  return testConfig({ natsUrl, extra: { database: { provider: 'bigquery', bigquery: bigquery(bq) }, query: { default_limit: 10, max_limit: 20, timeout: 10 } } });
}

const config = configWith();
const envBefore = JSON.stringify(process.env);
const running = await runCortado({ config, roles: { edge: false, actors: ['executor', 'settings'] }, log, name: 'exec-bq-test' });
const client = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'exec-bq-client', log });
const events: Array<{ subject: string; data: any }> = [];
client.listen('evt.>', (data, subject) => events.push({ subject, data }));

t.teardown(async () => {
  await client.close();
  await running.stop(2_000);
  await fake.close();
  await db.drop();
  await nats.stop();
});

let n = 0;
const ctx = () => ({ requestId: `exec-bq-${++n}` });
const API = `/bigquery/v2/projects/${PROJECT}`;

/** API calls since `from`, without the token endpoint, with the project prefix cut and job ids generalised. */
function apiCalls(from: number): string[] {
  return fake.calls.slice(from).filter((c) => !c.endsWith('/token')).map((c) => c.replace(API, '').replace(/\/(queries|jobs)\/[^/]+/, '/$1/{id}'));
}

async function fails(sql: string, extra: Record<string, unknown> = {}): Promise<CortadoError> {
  const err = await client.request(SqlExecute, { sql, ...extra }, ctx()).then(() => undefined, (e: unknown) => e);
  if (!(err instanceof CortadoError)) throw new Error(`expected an error for ${sql}`);
  return err;
}

async function engineWith(bq: Record<string, unknown> = {}): Promise<BigQueryEngine> {
  return (await createBigQueryFromConfig(configWith(bq), log)) as BigQueryEngine;
}

async function fingerprint(): Promise<string> {
  const r = await db.pool.query(`SELECT (SELECT count(*) FROM shop.numbers) AS numbers, (SELECT md5(string_agg(o::text, ',' ORDER BY id)) FROM shop.orders o) AS orders,
    (SELECT string_agg(schemaname || '.' || tablename, ',' ORDER BY 1) FROM pg_tables WHERE schemaname IN ('shop', 'sales', 'public')) AS tables`);
  return JSON.stringify(r.rows[0]);
}

t.test('a query: dry run first, then jobs.query and result pages, with the cost', async (t) => {
  const from = fake.calls.length;
  const fromReq = fake.requests.length;
  const r = await client.request(SqlExecute, { sql: 'SELECT n FROM numbers ORDER BY n' }, ctx());
  t.same(r.rows, Array.from({ length: 10 }, (_, i) => [i + 1]), 'the database\'s rows, INT64 as numbers');
  t.same(r.columns, [{ name: 'n', type: 'INT64' }]);
  t.equal(r.truncated, true);
  t.equal(r.sql, 'SELECT n FROM numbers ORDER BY n\nLIMIT 10');
  t.same(apiCalls(from), ['POST /jobs', 'POST /queries', 'GET /queries/{id}'], 'dry run, run, then one more page (max_results 7, 11 rows wanted)');

  const reqs = fake.requests.slice(fromReq).filter((x) => x.path !== '/token');
  const [dry, run, page] = reqs;
  t.equal(dry?.body.configuration.dryRun, true, 'the first call is a dry run');
  t.equal(dry?.body.configuration.query.useLegacySql, false);
  t.same(dry?.body.configuration.query.defaultDataset, { projectId: PROJECT, datasetId: 'shop' });
  t.equal(dry?.body.jobReference.location, 'US');
  t.equal(run?.body.query, 'SELECT n FROM numbers ORDER BY n\nLIMIT 11', 'one row more than the cap, to tell truncation');
  t.equal(run?.body.useLegacySql, false);
  t.equal(run?.body.maxResults, 7, 'the first page: max_results');
  t.equal(run?.body.location, 'US');
  t.ok(run?.body.timeoutMs > 0 && run?.body.timeoutMs <= 10_000, 'the server waits no longer than the time left');
  t.same(run?.body.defaultDataset, { projectId: PROJECT, datasetId: 'shop' });
  t.equal(page?.query.get('maxResults'), '4', 'the next page asks only for what is still wanted');
  t.ok(page?.query.get('pageToken'), 'with the page token');
  t.equal(page?.query.get('location'), 'US');

  const bytes = fake.bytesFor(run?.body.query);
  t.equal(r.bytes_processed, bytes, 'bytes_processed from BigQuery');
  t.equal(r.estimated_cost_usd, (bytes / 2 ** 40) * PRICE, 'priced per TiB with price_per_tb_usd');
});

t.test('LIMIT: kept, clamped across pages, truncated told right', async (t) => {
  const own = await client.request(SqlExecute, { sql: 'SELECT n FROM shop.numbers ORDER BY n LIMIT 5' }, ctx());
  t.same(own.rows.map((r) => r[0]), [1, 2, 3, 4, 5]);
  t.equal(own.truncated, false);

  const from = fake.calls.length;
  const clamped = await client.request(SqlExecute, { sql: 'SELECT n FROM `cortado-test.shop.numbers` ORDER BY n LIMIT 1000' }, ctx());
  t.equal(clamped.row_count, 20);
  t.equal(clamped.truncated, true);
  t.match(clamped.sql, /LIMIT 20$/);
  t.same(clamped.rows.at(-1), [20]);
  t.equal(apiCalls(from).filter((c) => c === 'GET /queries/{id}').length, 2, '21 rows in pages of 7: two more pages');

  const exact = await client.request(SqlExecute, { sql: 'SELECT n FROM numbers WHERE n <= 10 ORDER BY n' }, ctx());
  t.equal(exact.row_count, 10);
  t.equal(exact.truncated, false, 'exactly the default limit is not truncated');
});

t.test('BigQuery-and-PostgreSQL analytics run through the guard', async (t) => {
  const cases = [
    'SELECT status, COUNT(*) AS n, SUM(amount) AS revenue FROM shop.orders GROUP BY status ORDER BY status',
    'SELECT c.country, COUNT(*) AS orders FROM `cortado-test.shop.orders` AS o JOIN `cortado-test`.shop.customers AS c ON c.id = o.customer_id GROUP BY c.country ORDER BY orders DESC, c.country',
    'SELECT id, amount, RANK() OVER (PARTITION BY customer_id ORDER BY amount DESC) AS r FROM orders ORDER BY id',
    'WITH spend AS (SELECT customer_id, SUM(amount) AS total FROM orders GROUP BY customer_id) SELECT s.customer_id, s.total FROM spend AS s ORDER BY s.total DESC',
    'SELECT EXTRACT(MONTH FROM ordered_at) AS m, COUNT(*) AS n FROM orders GROUP BY m ORDER BY m',
    'SELECT x FROM UNNEST(ARRAY[3, 1, 2]) AS x ORDER BY x',
    "SELECT id, CASE WHEN amount > 5 THEN 'big' ELSE 'small' END AS size FROM orders WHERE status IN ('paid') AND amount BETWEEN 1 AND 10",
    'SELECT COUNT(DISTINCT customer_id) AS buyers FROM paid_orders',
    '(SELECT id FROM orders WHERE id < 3) UNION ALL (SELECT id FROM orders WHERE id > 28) ORDER BY id',
    'SELECT * FROM orders WHERE id IN (SELECT MAX(id) FROM orders) # the last one',
  ];
  for (const sql of cases) {
    const r = await client.request(SqlExecute, { sql }, ctx()).catch((e: CortadoError) => e);
    t.notOk(r instanceof Error, `${sql}: ran${r instanceof Error ? ` (${r.code}: ${r.message})` : ''}`);
  }
  const months = await client.request(SqlExecute, { sql: cases[4]! }, ctx());
  const direct = await db.pool.query('SELECT count(*)::int AS n FROM shop.orders WHERE extract(month FROM ordered_at) = 1');
  t.same(months.rows[0], [1, direct.rows[0].n], 'the rows are PostgreSQL\'s');
});

t.test('values become JSON scalars, typed with GoogleSQL names', async (t) => {
  const r = await client.request(SqlExecute, { sql: 'SELECT i, big, money, f, b, ts, d, dt, tags, nothing FROM kinds' }, ctx());
  t.same(r.rows[0], [1, '9007199254740993', 12.5, 0.1, true, '2024-01-05T08:00:00.500000Z', '2024-02-29', '2024-01-05T08:00:00', '["a","b"]', null]);
  t.same(r.columns.map((c) => c.type), ['INT64', 'INT64', 'NUMERIC', 'FLOAT64', 'BOOL', 'TIMESTAMP', 'DATE', 'DATETIME', 'ARRAY<STRING>', 'STRING']);
});

t.test('values the fake cannot produce: structs, nested arrays, big numerics, float timestamps', async (t) => {
  const struct = { name: 's', type: 'RECORD', mode: 'NULLABLE', fields: [{ name: 'a', type: 'INTEGER' }, { name: 'b', type: 'STRING' }, { name: 'c', type: 'TIMESTAMP', mode: 'REPEATED' }] };
  t.equal(bigqueryCell(struct, { f: [{ v: '1' }, { v: 'x' }, { v: [{ v: '0' }, { v: '1704441600000000' }] }] }), '{"a":1,"b":"x","c":["1970-01-01T00:00:00Z","2024-01-05T08:00:00Z"]}');
  t.equal(columnOf(struct).type, 'STRUCT<a INT64, b STRING, c ARRAY<TIMESTAMP>>');
  const repeatedStruct = { name: 'items', type: 'RECORD', mode: 'REPEATED', fields: [{ name: 'sku', type: 'STRING' }, { name: 'qty', type: 'INT64' }] };
  t.equal(bigqueryCell(repeatedStruct, [{ v: { f: [{ v: 'A1' }, { v: '2' }] } }, { v: { f: [{ v: 'B2' }, { v: null }] } }]), '[{"sku":"A1","qty":2},{"sku":"B2","qty":null}]');
  t.equal(columnOf(repeatedStruct).type, 'ARRAY<STRUCT<sku STRING, qty INT64>>');
  t.equal(bigqueryCell({ type: 'BIGNUMERIC' }, '123456789012345678901234.123456789'), '123456789012345678901234.123456789', 'exact: kept as text');
  t.equal(bigqueryCell({ type: 'NUMERIC' }, '0.1'), 0.1);
  t.equal(bigqueryCell({ type: 'FLOAT' }, 'NaN'), 'NaN', 'not JSON: text');
  t.equal(bigqueryCell({ type: 'FLOAT64' }, '-Infinity'), '-Infinity');
  t.equal(bigqueryCell({ type: 'INTEGER' }, '-9007199254740993'), '-9007199254740993');
  t.equal(bigqueryCell({ type: 'BOOLEAN' }, 'false'), false);
  t.equal(bigqueryCell({ type: 'BYTES' }, 'AAE='), 'AAE=');
  t.equal(bigqueryCell({ type: 'JSON' }, '{"a":1}'), '{"a":1}');
  t.equal(bigqueryCell({ type: 'INTEGER' }, null), null);
  t.equal(isoTimestamp('1.7044416E9'), '2024-01-05T08:00:00Z', 'epoch seconds as a float string');
  t.equal(isoTimestamp('1704441600123456'), '2024-01-05T08:00:00.123456Z', 'epoch microseconds, exact');
  t.equal(isoTimestamp('-1'), '1969-12-31T23:59:59.999999Z', 'before 1970');
});

t.test('every guard refusal: SQL_REJECTED with an event, and nothing reaches BigQuery', async (t) => {
  const before = await fingerprint();
  const from = fake.calls.length;
  const fromEvents = events.length;
  for (const c of REJECTED_BIGQUERY) {
    const err = await fails(c.sql);
    t.equal(err.code, 'SQL_REJECTED', `${c.name}: SQL_REJECTED`);
    t.equal(err.details?.kind, c.kind, `${c.name}: kind`);
  }
  t.same(apiCalls(from), [], 'not one API call');
  t.equal(await fingerprint(), before, 'the database is unchanged');
  await client.flush();
  await new Promise((r) => setTimeout(r, 200));
  t.equal(events.slice(fromEvents).filter((e) => e.subject.endsWith('evt.query.rejected')).length, REJECTED_BIGQUERY.length, 'one query.rejected event each');
});

t.test('with the guard bypassed, the dry run still keeps anything but a SELECT from running', async (t) => {
  const engine = await engineWith();
  t.teardown(() => engine.close());
  const before = await fingerprint();
  for (const [sql, statement] of [
    ['DELETE FROM numbers WHERE TRUE', 'DELETE'],
    ['INSERT INTO numbers (n) VALUES (999)', 'INSERT'],
    ["UPDATE orders SET status = 'x' WHERE TRUE", 'UPDATE'],
    ['CREATE TABLE shop.evil AS SELECT 1 AS x', 'CREATE_TABLE_AS_SELECT'],
    ['DROP TABLE shop.kinds', 'DROP_TABLE'],
    ['SELECT 1; DELETE FROM numbers WHERE TRUE', 'SCRIPT'],
  ] as const) {
    const from = fake.calls.length;
    const err = await engine.execute(sql, { timeoutMs: 5_000, maxRows: 10 }).then(() => undefined, (e: CortadoError) => e);
    t.equal(err?.code, 'SQL_REJECTED', `${sql}: refused`);
    t.match(err?.details, { kind: 'not_select', statement }, `${sql}: the dry run says ${statement}`);
    t.same(apiCalls(from), ['POST /jobs'], `${sql}: only the dry run was sent`);
  }
  t.equal(await fingerprint(), before, 'the database is unchanged');
  t.same(await engine.canWrite(), { writable: false, reasons: [] }, 'BigQuery cannot tell: not writable, the dry run is the guarantee');

  const fromReq = fake.requests.length;
  await engine.execute('SELECT 1 AS one', { timeoutMs: 5_000, maxRows: 1, user: 'Ada.Lovelace@Example.com' });
  const run = fake.requests.slice(fromReq).find((x) => x.path.endsWith('/queries') && x.method === 'POST');
  t.same(run?.body.labels, { cortado_user: 'ada_lovelace_example_com' }, 'the user who asked is a label on the job');
});

t.test('a query past its timeout: the job is cancelled and gone from the database', async (t) => {
  // valid GoogleSQL (the guard allows only BigQuery's functions) that PostgreSQL takes minutes over
  const slow = 'WITH RECURSIVE slow_rows AS (SELECT 1 AS i UNION ALL SELECT i + 1 FROM slow_rows WHERE i < 100000000) SELECT COUNT(*) AS n FROM slow_rows';
  const from = fake.calls.length;
  const started = Date.now();
  const err = await fails(slow, { timeout_ms: 800 });
  t.equal(err.code, 'DB_TIMEOUT');
  t.match(err.message, /800 ms/);
  t.ok(Date.now() - started < 4_000, `answered in ${Date.now() - started} ms`);
  const calls = apiCalls(from);
  t.equal(calls[0], 'POST /jobs', 'the dry run first');
  t.equal(calls[1], 'POST /queries');
  t.equal(calls.at(-1), 'POST /jobs/{id}/cancel', 'then jobs.cancel');
  const job = fake.jobs().find((j) => j.sql.includes('FROM slow_rows'));
  t.equal(job?.cancelled, true, 'the fake saw the cancel of that job');
  t.equal(await backendsStillRunning(db, 'FROM slow_rows'), 0, 'no backend still runs the query');
  const ok = await client.request(SqlExecute, { sql: 'SELECT 1 AS one' }, ctx());
  t.same(ok.rows, [[1]], 'and the next query runs');
});

t.test('a timeout before jobs.query answers: the job is cancelled once its id arrives', async (t) => {
  fake.slow(5_000);
  fake.delayAnswers(1_000);
  t.teardown(() => {
    fake.slow(0);
    fake.delayAnswers(0);
  });
  const from = fake.calls.length;
  const err = await fails('SELECT n FROM numbers WHERE n = 42', { timeout_ms: 500 });
  t.equal(err.code, 'DB_TIMEOUT');
  t.equal(apiCalls(from).at(-1), 'POST /jobs/{id}/cancel');
  const job = fake.jobs().find((j) => j.sql.startsWith('SELECT n FROM numbers WHERE n = 42'));
  t.equal(job?.cancelled, true);
  await new Promise((r) => setTimeout(r, 200));
  const active = await db.pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'fake-bigquery' AND state = 'active'`);
  t.equal(active.rows[0].n, 0, 'the sleeping backend was cancelled');
});

t.test('errors map to Cortado\'s codes', async (t) => {
  const fromEvents = events.length;
  const bad = await fails('SELECT no_such_column FROM orders');
  t.equal(bad.code, 'DB_QUERY_FAILED');
  t.match(bad.message, /no_such_column/, 'BigQuery\'s message, for self-correction');
  t.match(bad.details, { status: 400, reason: 'invalidQuery' });
  const missing = await fails('SELECT * FROM shop.no_such_table');
  t.equal(missing.code, 'DB_QUERY_FAILED');
  await client.flush();
  await new Promise((r) => setTimeout(r, 100));
  t.ok(events.slice(fromEvents).some((e) => e.subject.endsWith('evt.query.rejected') && e.data.code === 'DB_QUERY_FAILED'), 'a query.rejected event');

  const cases: Array<[{ status: number; reason: string; message: string }, RegExp]> = [
    [{ status: 403, reason: 'accessDenied', message: 'Access Denied: Project cortado-test: User does not have bigquery.jobs.create permission' }, /access denied: Access Denied/],
    [{ status: 403, reason: 'quotaExceeded', message: 'Quota exceeded: Your project exceeded quota for free query bytes scanned' }, /quota or rate limit/],
    [{ status: 429, reason: 'rateLimitExceeded', message: 'Exceeded rate limits' }, /rate limited/],
    [{ status: 401, reason: 'authError', message: 'Invalid Credentials' }, /login was refused/],
    [{ status: 500, reason: 'backendError', message: 'Backend error' }, /BigQuery failed \(HTTP 500 backendError\)/],
    [{ status: 503, reason: 'backendError', message: 'Service unavailable' }, /HTTP 503/],
  ];
  for (const [failure, message] of cases) {
    fake.failNext(failure);
    const err = await fails('SELECT 1 AS one');
    t.equal(err.code, 'DB_UNAVAILABLE', `${failure.status} ${failure.reason}: DB_UNAVAILABLE`);
    t.match(err.message, message);
  }
  fake.failNext({ status: 400, reason: 'stopped', message: 'Job execution was cancelled: Job timed out after 1 sec' });
  t.equal((await fails('SELECT 1 AS one')).code, 'DB_TIMEOUT', 'a job stopped by BigQuery');
});

t.test('the network and the login', async (t) => {
  const nowhere = await engineWith({ base_url: 'http://127.0.0.1:1' });
  t.teardown(() => nowhere.close());
  const down = await nowhere.execute('SELECT 1', { timeoutMs: 5_000, maxRows: 1 }).then(() => undefined, (e: CortadoError) => e);
  t.equal(down?.code, 'DB_UNAVAILABLE');
  t.match(down?.message, /connection refused/);
  await t.rejects(nowhere.ping(1_500), { code: 'DB_UNAVAILABLE' });

  // a key the token endpoint does not know: the login is refused, and no secret is in the message
  const stranger = { ...fake.serviceAccount(), private_key: generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
  const refused = await engineWith({ credentials_json: JSON.stringify(stranger) });
  t.teardown(() => refused.close());
  const from = fake.calls.length;
  const login = await refused.execute('SELECT 1', { timeoutMs: 5_000, maxRows: 1 }).then(() => undefined, (e: CortadoError) => e);
  t.equal(login?.code, 'DB_UNAVAILABLE');
  t.match(login?.message, /login was refused \(invalid_grant\)/);
  t.notMatch(login?.message, /PRIVATE KEY|ya29/);
  t.same(apiCalls(from), [], 'no API call without a token');

  const badJson = await engineWith({ credentials_json: '{"private_key": "-----BEGIN PRIVATE KEY----- oops' }).then(() => undefined, (e: CortadoError) => e);
  t.equal(badJson?.code, 'CONFIG_INVALID');
  t.match(badJson?.message, /credentials_json/);
  t.notMatch(badJson?.message, /PRIVATE KEY/, 'the key is not in the message');
  await t.rejects(engineWith({ credentials_json: '', credentials_path: '/nonexistent/key.json' }), { code: 'CONFIG_INVALID', message: /credentials_path/ });
  await t.rejects(engineWith({ project_id: '' }), { code: 'CONFIG_INVALID', message: /project_id/ });
});

t.test('credentials: the service-account key gets its token from its token_uri', async (t) => {
  const fromReq = fake.requests.length;
  const dir = mkdtempSync(path.join(tmpdir(), 'cortado-bq-key-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const keyFile = path.join(dir, 'key.json');
  writeFileSync(keyFile, JSON.stringify(fake.serviceAccount()));
  const issued = fake.tokensIssued();
  const engine = await engineWith({ credentials_json: '', credentials_path: keyFile });
  t.teardown(() => engine.close());
  const r = await engine.execute('SELECT 2 AS two', { timeoutMs: 5_000, maxRows: 1 });
  t.same(r.rows, [[2]]);
  t.equal(fake.tokensIssued(), issued + 1, 'credentials_path: a token from the fake\'s token_uri');
  const reqs = fake.requests.slice(fromReq);
  const tokenReq = reqs.find((x) => x.path === '/token');
  t.equal(tokenReq?.body.grant_type, 'urn:ietf:params:oauth:grant-type:jwt-bearer', 'a JWT-bearer grant, signed with the key (the fake verified it)');
  const api = reqs.filter((x) => x.path !== '/token');
  t.ok(api.length >= 2 && api.every((x) => /^Bearer ya29\.fake-/.test(String(x.headers.authorization))), 'every API call carries the issued token');
  t.equal(JSON.stringify(process.env), envBefore, 'the process environment is untouched');
});

t.test('introspection: INFORMATION_SCHEMA of the dataset, or of the region without one', async (t) => {
  const schema = await client.request(SqlIntrospect, {}, ctx());
  t.equal(schema.dialect, 'bigquery');
  t.equal(schema.provider, 'bigquery');
  t.equal(schema.default_schema, 'shop');
  t.same(schema.tables.map((x) => x.name).sort(), ['customers', 'kinds', 'numbers', 'orders', 'paid_orders']);
  const orders = schema.tables.find((x) => x.name === 'orders');
  t.equal(orders?.schema, 'shop');
  t.equal(orders?.kind, 'table');
  t.equal(orders?.comment, 'one "row" per order');
  t.same(orders?.columns.map((c) => c.name), ['id', 'customer_id', 'amount', 'status', 'ordered_at', 'tags'], 'in column order');
  t.match(orders?.columns.find((c) => c.name === 'amount'), { type: 'NUMERIC(12, 2)', nullable: false, comment: 'order total in EUR' });
  t.match(orders?.columns.find((c) => c.name === 'tags'), { type: 'ARRAY<STRING>', nullable: true });
  t.equal(schema.tables.find((x) => x.name === 'paid_orders')?.kind, 'view');

  const noDataset = await engineWith({ dataset: '' });
  t.teardown(() => noDataset.close());
  const from = fake.requests.length;
  const all = await noDataset.introspect();
  t.equal(all.default_schema, '');
  t.ok(all.tables.some((x) => x.schema === 'sales' && x.name === 'targets'), 'tables of every dataset in the location');
  t.ok(all.tables.some((x) => x.schema === 'shop' && x.name === 'orders'));
  t.ok(fake.requests.slice(from).some((x) => String(x.body.query ?? '').includes('`region-us`.INFORMATION_SCHEMA.TABLES')), 'the region-qualified views');
  t.notOk(fake.requests.slice(from).some((x) => x.body.defaultDataset), 'no default dataset');
});

t.test('check and ping', async (t) => {
  t.same(await client.request(SqlCheck, { sql: 'SELECT 1 AS x' }, ctx()), { ok: true, sql: 'SELECT 1 AS x\nLIMIT 10' });
  t.equal((await client.request(SqlCheck, { sql: "EXPORT DATA OPTIONS (uri = 'gs://x/*') AS SELECT 1" }, ctx())).ok, false);
  const from = fake.calls.length;
  const ping = await client.request(SqlPing, {}, ctx());
  t.equal(ping.ok, true);
  t.equal(ping.provider, 'bigquery');
  t.same(apiCalls(from), ['POST /jobs'], 'a dry run of SELECT 1: nothing runs, nothing is billed');
});

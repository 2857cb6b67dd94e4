/**
 * The executor with database.provider trino, over a real NATS, against a local server that
 * speaks Trino's client protocol (test/helpers/fake-trino.ts) and answers from a real
 * PostgreSQL, through the real trino-client: refusals never reach the coordinator, rows come
 * across pages, the LIMIT is injected and clamped, enough rows cancel the rest, a timeout
 * cancels the query on the coordinator (and the query behind it), the asking user is the
 * Trino user, errors map to the error table, and the schema is introspected.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { SqlExecute, SqlIntrospect, SqlPing } from '../../protocol/subjects.js';
import { runCortado } from '../../cli/run.js';
import { createTrinoFromConfig, parseJsonExact, type TrinoEngine } from '../../actors/executor/engines/trino.js';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { REJECTED_TRINO } from '../fixtures/guard-cases-trino.js';
import { testConfig } from '../helpers/config.js';
import { startFakeTrino } from '../helpers/fake-trino.js';
import { startNats } from '../helpers/nats.js';
import { backendsStillRunning, createTestDb } from '../helpers/pg.js';

const nats = await startNats();
const db = await createTestDb('trino');
await db.pool.query(GUARD_SCHEMA_SQL);
await db.pool.query('CREATE TABLE numbers (n integer NOT NULL)');
await db.pool.query('INSERT INTO numbers SELECT generate_series(1, 50)');
const fake = await startFakeTrino({ databaseUrl: db.url, pageSize: 2, catalog: 'postgresql' });
const log = createLogger({ svc: 'test', level: 'silent' });

function trinoConfig(trino: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return testConfig({
    natsUrl: nats.url,
    extra: {
      database: { provider: 'trino', trino: { host: fake.host, port: fake.port, http_scheme: 'http', user: 'cortado', catalog: 'postgresql', schema: 'public', ...trino } },
      query: { default_limit: 10, max_limit: 20, timeout: 10 },
      ...extra,
    },
  });
}

const config = trinoConfig({});
const running = await runCortado({ config, roles: { edge: false, actors: ['executor', 'settings'] }, log, name: 'exec-trino-test' });
const client = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'exec-trino-client', log });
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
const ctx = (user?: string) => ({ requestId: `trino-${++n}`, ...(user ? { user } : {}) });

async function fails(sql: string, extra: Record<string, unknown> = {}, user?: string): Promise<CortadoError> {
  const err = await client.request(SqlExecute, { sql, ...extra }, ctx(user)).then(() => undefined, (e: unknown) => e);
  if (!(err instanceof CortadoError)) throw new Error(`expected an error for ${sql}`);
  return err;
}

const last = () => fake.statements.at(-1)!;


t.test('every rejected case is refused over the bus, nothing reaches the coordinator, one event each', async (t) => {
  const before = fake.statements.length;
  const from = events.length;
  for (const c of REJECTED_TRINO) {
    const err = await fails(c.sql);
    t.equal(err.code, 'SQL_REJECTED', `${c.name}: SQL_REJECTED`);
    t.equal(err.details?.kind, c.kind, `${c.name}: kind`);
  }
  t.equal(fake.statements.length, before, 'the coordinator received no statement');
  await client.flush();
  await new Promise((r) => setTimeout(r, 200));
  const rejected = events.slice(from).filter((e) => e.subject.endsWith('evt.query.rejected'));
  t.equal(rejected.length, REJECTED_TRINO.length, 'one query.rejected event per refusal');
});

t.test('rows come across pages, with the headers Trino needs', async (t) => {
  const r = await client.request(SqlExecute, { sql: 'SELECT n FROM numbers ORDER BY n' }, ctx());
  t.same(r.rows, Array.from({ length: 10 }, (_, i) => [i + 1]), 'the first ten numbers, in order');
  t.equal(r.truncated, true);
  t.same(r.columns, [{ name: 'n', type: 'integer' }]);
  const s = last();
  t.equal(s.sql, 'SELECT n FROM numbers ORDER BY n\nLIMIT 11', 'one row more than returned, to tell truncation');
  t.ok(s.pages >= 6, `read across ${s.pages} pages of 2 rows`);
  t.equal(s.catalog, 'postgresql');
  t.equal(s.schema, 'public');
  t.equal(s.source, 'cortado');
  t.equal(s.user, 'cortado', 'nobody asked: the configured user');
  t.equal(s.session.query_max_execution_time, '10000ms', 'the coordinator knows the timeout');
  t.notOk(fake.deletes.some((d) => d.id === s.id), 'a query read to its end is not cancelled');
});

t.test('the asking user is the Trino user (X-Trino-User); nobody asking: the configured user', async (t) => {
  await client.request(SqlExecute, { sql: 'SELECT count(*) AS n FROM orders' }, ctx('alice@example.com'));
  t.equal(last().user, 'alice@example.com');
  await client.request(SqlExecute, { sql: 'SELECT count(*) AS n FROM orders' }, ctx('bob'));
  t.equal(last().user, 'bob');
  await client.request(SqlExecute, { sql: 'SELECT count(*) AS n FROM orders' }, ctx());
  t.equal(last().user, 'cortado');
});

t.test('LIMIT: injected, kept, clamped, LIMIT ALL and FETCH FIRST', async (t) => {
  const own = await client.request(SqlExecute, { sql: 'SELECT n FROM numbers ORDER BY n LIMIT 5' }, ctx());
  t.equal(own.row_count, 5);
  t.equal(own.truncated, false);
  t.equal(last().sql, 'SELECT n FROM numbers ORDER BY n LIMIT 5');

  const clamped = await client.request(SqlExecute, { sql: 'SELECT n FROM numbers ORDER BY n LIMIT 1000' }, ctx());
  t.equal(clamped.row_count, 20);
  t.equal(clamped.truncated, true);
  t.equal(clamped.sql, 'SELECT n FROM numbers ORDER BY n LIMIT 20');
  t.equal(last().sql, 'SELECT n FROM numbers ORDER BY n LIMIT 21');

  const all = await client.request(SqlExecute, { sql: 'SELECT n FROM numbers ORDER BY n DESC LIMIT ALL' }, ctx());
  t.equal(all.row_count, 20);
  t.same(all.rows[0], [50], 'ORDER BY still applies');

  const fetch = await client.request(SqlExecute, { sql: 'SELECT n FROM numbers ORDER BY n FETCH FIRST 3 ROWS ONLY' }, ctx());
  t.same(fetch.rows, [[1], [2], [3]]);
  t.equal(fetch.truncated, false);

  const exact = await client.request(SqlExecute, { sql: 'SELECT n FROM numbers WHERE n <= 10 ORDER BY n' }, ctx());
  t.equal(exact.row_count, 10);
  t.equal(exact.truncated, false, 'exactly the default limit of rows is not truncated');
});

t.test('values keep their exactness; types are Trino\'s', async (t) => {
  const r = await client.request(SqlExecute, {
    sql: `SELECT 1 AS i, CAST(9007199254740993 AS bigint) AS big, CAST(12.50 AS decimal(10,2)) AS money,
                 CAST(12345678901234567.89 AS decimal(20,2)) AS huge, CAST(0.5 AS real) AS f, true AS b,
                 DATE '2024-02-29' AS d, TIMESTAMP '2024-01-05 08:00:00' AS ts, CAST(NULL AS varchar) AS nothing, ARRAY[1, 2] AS arr`,
  }, ctx());
  t.same(r.rows[0], [1, '9007199254740993', 12.5, '12345678901234567.89', 0.5, true, '2024-02-29', '2024-01-05 08:00:00.000', null, '[1,2]']);
  t.same(r.columns.map((c) => c.type), ['integer', 'bigint', 'decimal(10,2)', 'decimal(20,2)', 'real', 'boolean', 'date', 'timestamp(3)', 'varchar', 'array(integer)']);
});

t.test('a database error is DB_QUERY_FAILED with Trino\'s message, and an event', async (t) => {
  const from = events.length;
  const err = await fails('SELECT no_such_column FROM orders');
  t.equal(err.code, 'DB_QUERY_FAILED');
  t.match(err.message, /no_such_column/);
  t.match(err.details, { error_name: 'COLUMN_NOT_FOUND', error_type: 'USER_ERROR' });
  await client.flush();
  await new Promise((r) => setTimeout(r, 100));
  t.ok(events.slice(from).some((e) => e.subject.endsWith('evt.query.rejected') && e.data.code === 'DB_QUERY_FAILED'));
});

t.test('Trino error types map onto the error table', async (t) => {
  const cases: Array<[string, string, string, RegExp?]> = [
    ['EXCEEDED_LOCAL_MEMORY_LIMIT', 'INSUFFICIENT_RESOURCES', 'DB_QUERY_FAILED', /memory/],
    ['EXCEEDED_TIME_LIMIT', 'INSUFFICIENT_RESOURCES', 'DB_TIMEOUT'],
    ['QUERY_QUEUE_FULL', 'INSUFFICIENT_RESOURCES', 'DB_UNAVAILABLE'],
    ['NO_NODES_AVAILABLE', 'INTERNAL_ERROR', 'DB_UNAVAILABLE'],
    ['GENERIC_INTERNAL_ERROR', 'INTERNAL_ERROR', 'DB_QUERY_FAILED', /broke/],
    ['HIVE_METASTORE_ERROR', 'EXTERNAL', 'DB_UNAVAILABLE'],
    ['HIVE_BAD_DATA', 'EXTERNAL', 'DB_QUERY_FAILED', /broke/],
    ['PERMISSION_DENIED', 'USER_ERROR', 'DB_QUERY_FAILED', /Access Denied/],
    ['ADMINISTRATIVELY_KILLED', 'USER_ERROR', 'DB_TIMEOUT'],
  ];
  for (const [errorName, errorType, code, message] of cases) {
    const text = errorName === 'PERMISSION_DENIED' ? 'Access Denied: Cannot select from table orders' : errorName.includes('MEMORY') ? 'Query exceeded per-node memory limit of 1GB' : 'it broke';
    fake.failNext({ message: text, errorName, errorType, errorCode: 1 });
    const err = await fails('SELECT 1 AS one');
    t.equal(err.code, code, `${errorType}/${errorName} → ${code}`);
    if (message) t.match(err.message, message, `${errorName}: the message says why`);
  }
});

t.test('HTTP failures are DB_UNAVAILABLE', async (t) => {
  fake.httpStatus(503);
  try {
    const err = await fails('SELECT 1 AS one');
    t.equal(err.code, 'DB_UNAVAILABLE');
    t.match(err.message, /503/);
    const ping = await client.request(SqlPing, {}, ctx());
    t.equal(ping.ok, false);
  } finally {
    fake.httpStatus(undefined);
  }
  const ping = await client.request(SqlPing, {}, ctx());
  t.equal(ping.ok, true);
  t.equal(ping.dialect, 'trino');
});

t.test('a query past its timeout is stopped by the coordinator, and the query behind it ends', async (t) => {
  // SQL both Trino's guard and PostgreSQL accept (no generate_series: not a Trino function): 50^6 rows
  const slow = 'SELECT count(*) FROM numbers a CROSS JOIN numbers b CROSS JOIN numbers c CROSS JOIN numbers d CROSS JOIN numbers e CROSS JOIN numbers slow_f';
  const started = Date.now();
  const err = await fails(slow, { timeout_ms: 600 });
  t.equal(err.code, 'DB_TIMEOUT');
  t.ok(Date.now() - started < 3_000, `answered in ${Date.now() - started} ms`);
  t.equal(last().session.query_max_execution_time, '600ms');
  t.equal(last().error?.errorName, 'EXCEEDED_TIME_LIMIT', 'the coordinator\'s own limit stopped it');
  await fake.settled(last().id);
  t.equal(await backendsStillRunning(db, 'numbers slow_f'), 0, 'nothing of it still runs on PostgreSQL');
});

t.test('when the coordinator does not stop it, the client cancels it by its id', async (t) => {
  fake.honourTimeLimit(false);
  t.teardown(() => fake.honourTimeLimit(true));
  const slow = 'SELECT count(*) FROM numbers a CROSS JOIN numbers b CROSS JOIN numbers c CROSS JOIN numbers d CROSS JOIN numbers e CROSS JOIN numbers slow_g';
  const started = Date.now();
  const err = await fails(slow, { timeout_ms: 500 }, 'carol');
  const took = Date.now() - started;
  t.equal(err.code, 'DB_TIMEOUT');
  t.match(err.message, /timeout of 500 ms/);
  t.ok(took >= 1_400 && took < 4_000, `answered in ${took} ms (the timeout plus a grace second)`);
  const s = last();
  const del = fake.deletes.find((d) => d.id === s.id);
  t.ok(del, 'the query was cancelled on the coordinator (DELETE)');
  t.equal(del?.path, `/v1/query/${s.id}`);
  t.equal(del?.user, 'carol', 'by its owner');
  await fake.settled(s.id);
  t.equal(s.error?.errorName, 'USER_CANCELED');
  t.equal(await backendsStillRunning(db, 'numbers slow_g'), 0, 'nothing of it still runs on PostgreSQL');
  const ok = await client.request(SqlExecute, { sql: 'SELECT 1 AS one' }, ctx());
  t.same(ok.rows, [[1]], 'and the next query runs');
});

t.test('introspection lists the configured catalog and schema, with Trino types', async (t) => {
  const r = await client.request(SqlIntrospect, {}, ctx());
  t.equal(r.dialect, 'trino');
  t.equal(r.provider, 'trino');
  t.equal(r.default_schema, 'public');
  const names = r.tables.map((x) => x.name);
  for (const name of ['customers', 'orders', 'products', 'paid_orders', 'numbers', 'Mixed Case']) t.ok(names.includes(name), `${name} listed`);
  t.ok(r.tables.every((x) => x.schema === 'public'), 'only the configured schema');
  const orders = r.tables.find((x) => x.name === 'orders')!;
  t.equal(orders.kind, 'table');
  t.equal(r.tables.find((x) => x.name === 'paid_orders')?.kind, 'view');
  t.same(orders.columns.slice(0, 5).map((c) => [c.name, c.type, c.nullable]), [
    ['id', 'integer', false], ['customer_id', 'integer', false], ['product_id', 'integer', false], ['quantity', 'integer', false], ['amount', 'decimal(12,2)', false],
  ]);
  t.same(orders.columns.find((c) => c.name === 'note')?.nullable, true);
});

// ---- the engine on its own: what the guard's LIMIT never lets happen over the bus ----------

async function engine(trino: Record<string, unknown>): Promise<TrinoEngine> {
  return (await createTrinoFromConfig(trinoConfig(trino), log)) as TrinoEngine;
}

t.test('enough rows: the engine stops reading and cancels the rest', async (t) => {
  const e = await engine({});
  t.teardown(() => e.close());
  const r = await e.execute('SELECT n FROM numbers ORDER BY n', { timeoutMs: 5_000, maxRows: 3, user: 'dave' });
  t.same(r.rows, [[1], [2], [3]]);
  const s = last();
  t.equal(s.pages, 2, 'two pages of 2 rows read, of 25');
  const del = fake.deletes.find((d) => d.id === s.id);
  t.ok(del, 'the rest was cancelled (DELETE)');
  t.equal(del?.user, 'dave');
});

t.test('without a configured catalog, every catalog is introspected with qualified schemas', async (t) => {
  const e = await engine({ catalog: '', schema: '' });
  t.teardown(() => e.close());
  const r = await e.introspect();
  t.equal(r.default_schema, '');
  const names = r.tables.map((x) => `${x.schema}.${x.name}`);
  t.ok(names.includes('postgresql.public.orders'), 'catalog.schema.table');
  t.ok(names.includes('postgresql.sales.targets'), 'other schemas too');
  t.notOk(names.some((x) => /pg_catalog|information_schema|fake_trino_meta/.test(x)), 'no system schemas');
  const perCatalog = fake.statements.filter((s) => /information_schema\.columns/.test(s.sql)).at(-1);
  t.equal(perCatalog?.catalog, 'postgresql', 'the catalog travels as X-Trino-Catalog');
});

t.test('a coordinator that is down is DB_UNAVAILABLE', async (t) => {
  const closed = http.createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const e = await engine({ port });
  t.teardown(() => e.close());
  const err = await e.execute('SELECT 1', { timeoutMs: 2_000, maxRows: 1 }).then(() => undefined, (x: unknown) => x as CortadoError);
  t.equal(err?.code, 'DB_UNAVAILABLE');
  t.match(err?.message, /connection refused/);
  const ping = await e.ping(1_000).then(() => undefined, (x: unknown) => x as CortadoError);
  t.equal(ping?.code, 'DB_UNAVAILABLE');
  t.equal((await e.introspect().catch((x: CortadoError) => x) as CortadoError).code, 'DB_UNAVAILABLE');
});

t.test('a password logs in as the configured user, who runs queries as the asking user; a wrong one is refused', async (t) => {
  const secured = await startFakeTrino({ databaseUrl: db.url, catalog: 'postgresql', auth: { user: 'cortado', password: 's3cret' } });
  t.teardown(() => secured.close());
  const good = (await createTrinoFromConfig(trinoConfig({ port: secured.port, password: 's3cret' }), log)) as TrinoEngine;
  const bad = (await createTrinoFromConfig(trinoConfig({ port: secured.port, password: 'wrong' }), log)) as TrinoEngine;
  t.teardown(() => Promise.all([good.close(), bad.close()]));
  const r = await good.execute('SELECT 42 AS answer', { timeoutMs: 5_000, maxRows: 10, user: 'erin' });
  t.same(r.rows, [[42]]);
  const s = secured.statements.at(-1)!;
  t.equal(s.principal, 'cortado', 'logged in as the configured user');
  t.equal(s.user, 'erin', 'the query runs as the asking user');
  const err = await bad.execute('SELECT 1', { timeoutMs: 5_000, maxRows: 1 }).then(() => undefined, (x: unknown) => x as CortadoError);
  t.equal(err?.code, 'DB_UNAVAILABLE');
  t.match(err?.message, /login was refused/);
  t.notMatch(err?.message, /wrong/, 'the password is not in the message');
});

t.test('a user name HTTP cannot carry is refused before anything is sent', async (t) => {
  const e = await engine({});
  t.teardown(() => e.close());
  const before = fake.statements.length;
  const err = await e.execute('SELECT 1', { timeoutMs: 1_000, maxRows: 1, user: 'eve\r\nX-Trino-User: admin' }).then(() => undefined, (x: unknown) => x as CortadoError);
  t.equal(err?.code, 'DB_UNAVAILABLE');
  t.equal(fake.statements.length, before);
});

t.test('JSON is read without losing big integers', async (t) => {
  t.same(parseJsonExact('{"a":[9007199254740993,-9223372036854775808,12,1.5e300,"12345678901234567890"],"b":"x\\"9007199254740993"}'), {
    a: ['9007199254740993', '-9223372036854775808', 12, 1.5e300, '12345678901234567890'],
    b: 'x"9007199254740993',
  });
});

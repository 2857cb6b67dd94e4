/**
 * The executor over a real NATS on a real PostgreSQL: every guard case is refused with nothing
 * executed (the database is compared before and after), accepted queries run, the LIMIT is
 * injected and clamped with `truncated` told right, values come back as JSON, a query past its
 * timeout is cancelled on the server, and a database that is down is DB_UNAVAILABLE.
 */
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { SqlExecute, SqlIntrospect, SqlPing, SqlCheck } from '../../protocol/subjects.js';
import { runCortado } from '../../cli/run.js';
import { ACCEPTED_POSTGRESQL, GUARD_SCHEMA_EXTRA_SQL, GUARD_SCHEMA_SQL, ORDERS_ROWS, REJECTED_POSTGRESQL } from '../fixtures/guard-cases.js';
import { testConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { backendsStillRunning, createTestDb } from '../helpers/pg.js';

const nats = await startNats();
const db = await createTestDb('exec');
await db.pool.query(GUARD_SCHEMA_SQL);
await db.pool.query(GUARD_SCHEMA_EXTRA_SQL);
await db.pool.query('CREATE TABLE numbers (n integer NOT NULL)');
await db.pool.query('INSERT INTO numbers SELECT generate_series(1, 50)');
const log = createLogger({ svc: 'test', level: 'silent' });
const config = testConfig({ natsUrl: nats.url, db: { host: db.host, port: db.port, name: db.name, user: db.user }, extra: { query: { default_limit: 10, max_limit: 20, timeout: 10 } } });
const running = await runCortado({ config, roles: { edge: false, actors: ['executor', 'settings'] }, log, name: 'exec-test' });
const client = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'exec-client', log });
const events: Array<{ subject: string; data: any }> = [];
client.listen('evt.>', (data, subject) => events.push({ subject, data }));

t.teardown(async () => {
  await client.close();
  await running.stop(2_000);
  await db.drop();
  await nats.stop();
});

let n = 0;
const ctx = () => ({ requestId: `exec-${++n}` });

async function fails(sql: string, extra: Record<string, unknown> = {}): Promise<CortadoError> {
  const err = await client.request(SqlExecute, { sql, ...extra }, ctx()).then(() => undefined, (e: unknown) => e);
  if (!(err instanceof CortadoError)) throw new Error(`expected an error for ${sql}`);
  return err;
}

/** Everything a statement could change: row counts and checksums, sequences, relations, settings. */
async function fingerprint(): Promise<string> {
  const r = await db.pool.query(`
    SELECT (SELECT count(*) FROM orders) AS orders, (SELECT md5(string_agg(o::text, ',' ORDER BY id)) FROM orders o) AS orders_md5,
           (SELECT count(*) FROM customers) AS customers, (SELECT md5(string_agg(c::text, ',' ORDER BY id)) FROM customers c) AS customers_md5,
           (SELECT count(*) FROM products) AS products, (SELECT count(*) FROM sales.targets) AS targets,
           (SELECT last_value FROM invoice_numbers) AS invoice_seq, (SELECT last_value FROM orders_id_seq) AS orders_seq,
           (SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname NOT IN ('pg_catalog','information_schema','pg_toast')) AS relations,
           (SELECT string_agg(rolname, ',' ORDER BY rolname) FROM pg_roles) AS roles,
           (SELECT count(*) FROM pg_largeobject_metadata) AS large_objects`);
  return JSON.stringify(r.rows[0]);
}

t.test('every rejected case is refused over the bus, with an event, and the database is unchanged', async (t) => {
  const before = await fingerprint();
  const from = events.length;
  for (const c of REJECTED_POSTGRESQL) {
    const err = await fails(c.sql);
    t.equal(err.code, 'SQL_REJECTED', `${c.name}: SQL_REJECTED`);
    t.equal(err.details?.kind, c.kind, `${c.name}: kind`);
  }
  t.equal(await fingerprint(), before, 'nothing changed in the database');
  await client.flush();
  await new Promise((r) => setTimeout(r, 200));
  const rejected = events.slice(from).filter((e) => e.subject.endsWith('evt.query.rejected'));
  t.equal(rejected.length, REJECTED_POSTGRESQL.length, 'one query.rejected event per refusal');
  t.equal(rejected[0]?.data.code, 'SQL_REJECTED');
  t.type(rejected[0]?.data.reason, 'string');
});

t.test('every accepted case runs on the database', async (t) => {
  t.ok(ACCEPTED_POSTGRESQL.length >= 150, `${ACCEPTED_POSTGRESQL.length} real analytical queries`);
  for (const c of ACCEPTED_POSTGRESQL) {
    const reply = await client.request(SqlExecute, { sql: c.sql }, ctx()).catch((e: CortadoError) => e);
    t.notOk(reply instanceof Error, `${c.name}: ran${reply instanceof Error ? ` (${reply.code}: ${reply.message})` : ''}`);
  }
});

t.test('LIMIT: injected at default_limit, user limit kept, clamped at max_limit, truncated told right', async (t) => {
  const injected = await client.request(SqlExecute, { sql: 'SELECT n FROM numbers ORDER BY n' }, ctx());
  t.equal(injected.row_count, 10);
  t.equal(injected.truncated, true);
  t.match(injected.sql, /LIMIT 10$/);
  t.same(injected.rows.slice(0, 3), [[1], [2], [3]]);

  const exact = await client.request(SqlExecute, { sql: 'SELECT n FROM numbers WHERE n <= 10 ORDER BY n' }, ctx());
  t.equal(exact.row_count, 10);
  t.equal(exact.truncated, false, 'exactly the default limit of rows is not truncated');

  const own = await client.request(SqlExecute, { sql: 'SELECT n FROM numbers ORDER BY n LIMIT 5' }, ctx());
  t.equal(own.row_count, 5);
  t.equal(own.truncated, false, 'the user\'s own smaller LIMIT is not a truncation');

  const clamped = await client.request(SqlExecute, { sql: 'SELECT n FROM numbers ORDER BY n LIMIT 1000' }, ctx());
  t.equal(clamped.row_count, 20);
  t.equal(clamped.truncated, true);
  t.match(clamped.sql, /LIMIT 20$/);

  const all = await client.request(SqlExecute, { sql: 'SELECT n FROM numbers LIMIT ALL' }, ctx());
  t.equal(all.row_count, 20);
  t.equal(all.truncated, true);
});

t.test('values are JSON scalars with their types named', async (t) => {
  const r = await client.request(SqlExecute, {
    sql: `SELECT 1::int AS i, 9007199254740993::bigint AS big, 12.50::numeric(10,2) AS money, 0.1::float8 AS f, true AS b,
                 date '2024-02-29' AS d, NULL::text AS nothing, 'NaN'::numeric AS nan, '{1,2}'::int[] AS arr`,
  }, ctx());
  t.same(r.rows[0], [1, '9007199254740993', 12.5, 0.1, true, '2024-02-29', null, 'NaN', '{1,2}']);
  t.same(r.columns.map((c) => c.type), ['integer', 'bigint', 'numeric', 'double precision', 'boolean', 'date', 'text', 'numeric', 'integer[]']);
});

t.test('a database error is DB_QUERY_FAILED with its message, and an event', async (t) => {
  const from = events.length;
  const err = await fails('SELECT no_such_column FROM orders');
  t.equal(err.code, 'DB_QUERY_FAILED');
  t.match(err.message, /no_such_column/);
  t.equal(err.details?.sqlstate, '42703');
  await client.flush();
  await new Promise((r) => setTimeout(r, 100));
  t.ok(events.slice(from).some((e) => e.subject.endsWith('evt.query.rejected') && e.data.code === 'DB_QUERY_FAILED'));
});

t.test('a query past its timeout is cancelled on the server', async (t) => {
  const slow = 'SELECT count(*) FROM generate_series(1, 200000) a CROSS JOIN generate_series(1, 200000) b';
  const started = Date.now();
  const err = await fails(slow, { timeout_ms: 500 });
  t.equal(err.code, 'DB_TIMEOUT');
  t.ok(Date.now() - started < 3_000, `answered in ${Date.now() - started} ms`);
  // nothing of it is still running on the server
  t.equal(await backendsStillRunning(db, 'CROSS JOIN generate_series'), 0, 'no backend still runs the query');
  // and the pool still works
  const ok = await client.request(SqlExecute, { sql: 'SELECT 1 AS one' }, ctx());
  t.same(ok.rows, [[1]]);
});

t.test('a transaction runs read-only even for what the guard lets through', async (t) => {
  const r = await client.request(SqlExecute, { sql: "SELECT current_setting('transaction_read_only') AS ro" }, ctx());
  t.same(r.rows, [['on']]);
  const r2 = await client.request(SqlExecute, { sql: "SELECT current_setting('transaction_read_only') AS ro" }, ctx(), {});
  t.same(r2.rows, [['on']]);
  const shorter = await client.request(SqlExecute, { sql: "SELECT current_setting('transaction_read_only') AS ro, current_setting('statement_timeout') AS st", timeout_ms: 2500 }, ctx());
  t.same(shorter.rows, [['on', '2500ms']], 'a shorter timeout runs in its own read-only transaction');
});

t.test('check, introspect and ping', async (t) => {
  t.same(await client.request(SqlCheck, { sql: 'SELECT 1' }, ctx()), { ok: true, sql: 'SELECT 1\nLIMIT 10' });
  const no = await client.request(SqlCheck, { sql: 'DROP TABLE orders' }, ctx());
  t.equal(no.ok, false);
  const schema = await client.request(SqlIntrospect, {}, ctx());
  t.equal(schema.default_schema, 'public');
  const orders = schema.tables.find((x) => x.name === 'orders');
  t.ok(orders, 'orders listed');
  t.equal(orders?.comment, 'one row per order');
  t.ok(orders?.columns.some((c) => c.name === 'amount' && c.type === 'numeric(12,2)' && c.comment === 'order total in EUR'));
  t.same(orders?.foreign_keys?.map((f) => f.ref_table).sort(), ['customers', 'products']);
  t.ok(schema.tables.some((x) => x.schema === 'sales' && x.name === 'targets'));
  t.notOk(schema.tables.some((x) => x.name === 'events_2024'), 'partitions only through their parent');
  const ping = await client.request(SqlPing, {}, ctx());
  t.equal(ping.ok, true);
  t.equal(ORDERS_ROWS, 40);
});

t.test('a database that is down: DB_UNAVAILABLE, and ping says so', async (t) => {
  const nats2 = await startNats();
  t.teardown(() => nats2.stop());
  const down = testConfig({ natsUrl: nats2.url, db: { host: '127.0.0.1', port: 1, name: 'nothing', user: 'nobody' } });
  const other = await runCortado({ config: down, roles: { edge: false, actors: ['executor', 'settings'] }, log, name: 'exec-down' });
  t.teardown(() => other.stop(1_000));
  const c2 = await Bus.connect({ url: nats2.url, prefix: 'cortado', name: 'c2', log });
  t.teardown(() => c2.close());
  const err = await c2.request(SqlExecute, { sql: 'SELECT 1' }, ctx()).then(() => undefined, (e: unknown) => e as CortadoError);
  t.equal(err?.code, 'DB_UNAVAILABLE');
  t.match(err?.message, /cannot be reached/);
  const ping = await c2.request(SqlPing, {}, ctx());
  t.equal(ping.ok, false);
  t.match(ping.error, /cannot be reached/);
});

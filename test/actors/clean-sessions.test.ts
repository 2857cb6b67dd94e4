/**
 * Clean sessions: nothing a question does outlives it. Each engine runs on ONE pooled
 * connection here, so whatever a question left on its session the next one would see:
 * settings changed with set_config(…, false), advisory and GET_LOCK locks, large objects,
 * LAST_INSERT_ID, user variables. On PostgreSQL the connection's start-up settings survive
 * the reset (DISCARD ALL restores them, it does not drop them); on the embedded demo
 * database (one PGlite session shared by every client) the reset restores the reader role.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { createLogger } from '../../runtime/log.js';
import { startEmbeddedPostgres } from '../../actors/executor/embedded/pglite.js';
import { embeddedReset } from '../../actors/executor/engines/index.js';
import { MysqlEngine } from '../../actors/executor/engines/mysql.js';
import { createPostgresEngine, type PostgresEngine } from '../../actors/executor/engines/postgresql.js';
import { createTestMysqlDb } from '../helpers/mysql.js';
import { createTestDb } from '../helpers/pg.js';

const log = createLogger({ svc: 'test', level: 'silent' });
const TIMEOUT_MS = 10_000;
const run = { timeoutMs: TIMEOUT_MS, maxRows: 100 };

t.test('PostgreSQL', async (t) => {
  const db = await createTestDb('clean');
  t.teardown(() => db.drop());
  await db.pool.query('CREATE SCHEMA shop; CREATE TABLE shop.orders (id int); INSERT INTO shop.orders VALUES (1), (2)');
  const options = { host: db.host, port: db.port, database: db.name, user: db.user, password: '', schema: 'shop', minConnections: 1, maxConnections: 1, ssl: false, statementTimeoutMs: TIMEOUT_MS, log };
  const engine = await createPostgresEngine(options);
  t.teardown(() => engine.close());
  const one = async (e: PostgresEngine, sql: string, timeoutMs = TIMEOUT_MS) => (await e.execute(sql, { ...run, timeoutMs })).rows[0]!;
  const SESSION = `SELECT pg_backend_pid(), current_setting('search_path'), current_setting('statement_timeout'), current_setting('TimeZone'),
    current_setting('default_transaction_read_only'), current_setting('transaction_read_only'), current_setting('cortado.x', true)`;

  t.test('settings a question changes are back at their start-up values for the next', async (t) => {
    const [pid, ...startup] = await one(engine, SESSION);
    t.same(startup, ['shop', '10s', 'UTC', 'on', 'on', null], 'the start-up settings (schema, timeout, UTC, read-only)');
    const changed = await one(engine, `SELECT set_config('search_path', 'pg_catalog', false), set_config('statement_timeout', '1', false),
      set_config('TimeZone', 'Asia/Tokyo', false), set_config('default_transaction_read_only', 'off', false), set_config('cortado.x', '42', false)`);
    t.same(changed, ['pg_catalog', '1ms', 'Asia/Tokyo', 'off', '42'], 'the question changed them (inside its transaction)');
    const [pidAfter, ...after] = await one(engine, SESSION);
    t.equal(pidAfter, pid, 'on the same connection (reset, not replaced)');
    t.equal(after[0], 'shop', 'search_path: the start-up value');
    t.equal(after[1], '10s', 'statement_timeout: the start-up value');
    t.equal(after[2], 'UTC', 'TimeZone: the start-up value');
    t.equal(after[3], 'on', 'default_transaction_read_only: on again');
    t.equal(after[4], 'on', 'the question runs read-only');
    t.not(after[5], '42', 'a setting of its own is gone');
  });

  t.test('a question has its own timeout, in its own read-only transaction; the next has the configured one', async (t) => {
    t.same(await one(engine, "SELECT current_setting('statement_timeout'), current_setting('transaction_read_only'), now() = statement_timestamp()", 1234), ['1234ms', 'on', false],
      'SET LOCAL statement_timeout, read-only, an explicit transaction (BEGIN came before the statement)');
    t.same(await one(engine, "SELECT current_setting('statement_timeout')"), ['10s']);
  });

  t.test('locks and large objects do not outlive the question', async (t) => {
    const [pid] = await one(engine, 'SELECT pg_backend_pid()');
    const held = await one(engine, 'SELECT pg_advisory_lock(424242), pg_try_advisory_lock(424243)');
    t.same(held, ['', true], 'the question took two session-level advisory locks');
    // the reset (ROLLBACK, DISCARD ALL) goes out with the statement and may still be on the wire when the reply is read: looked at for 2 s at most
    let n = -1;
    for (const until = Date.now() + 2000; ;) {
      const { rows: locks } = await db.pool.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = $1", [pid]);
      n = locks[0].n;
      if (n === 0 || Date.now() > until) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    t.equal(n, 0, 'none is held once the question is answered');
    const lo = await engine.execute("SELECT lo_from_bytea(0, 'cortado')", run).then(() => 'ran', (e: Error) => e.message);
    const { rows: objects } = await db.pool.query('SELECT count(*)::int AS n FROM pg_largeobject_metadata');
    t.equal(objects[0].n, 0, `no large object stays (the question: ${lo})`);
  });

  t.test('a failed question leaves the connection clean and in use', async (t) => {
    const [pid] = await one(engine, 'SELECT pg_backend_pid()');
    const err = await engine.execute("SELECT set_config('search_path', 'pg_catalog', false), 1 / 0", run).then(() => undefined, (e: { code?: string }) => e);
    t.equal(err?.code, 'DB_QUERY_FAILED');
    t.same(await one(engine, "SELECT pg_backend_pid(), current_setting('search_path'), count(*) FROM orders"), [pid, 'shop', 2]);
  });

  t.test('a connection whose reset fails is dropped, not reused', async (t) => {
    const broken = await createPostgresEngine({ ...options, resetSql: 'SELECT 1 / 0' });
    t.teardown(() => broken.close());
    const [first] = await one(broken, 'SELECT pg_backend_pid()');
    const [second] = await one(broken, 'SELECT pg_backend_pid()');
    t.not(second, first, 'the next question has a new connection');
    const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1', [first]);
    t.equal(rows[0].n, 0, 'the old one is closed');
  });
});

t.test('MariaDB', async (t) => {
  const db = await createTestMysqlDb('clean');
  t.teardown(() => db.drop());
  const engine = new MysqlEngine({ ...db, database: db.name, autocommit: true, maxConnections: 1, statementTimeoutMs: TIMEOUT_MS, log });
  await engine.warm();
  t.teardown(() => engine.close());
  const one = async (sql: string, timeoutMs = TIMEOUT_MS) => (await engine.execute(sql, { ...run, timeoutMs })).rows[0]!;
  const readOnly = engine.flavour === 'mariadb' ? '@@SESSION.tx_read_only' : '@@SESSION.transaction_read_only';

  t.test('LAST_INSERT_ID, user variables and GET_LOCK do not reach the next question', async (t) => {
    const [id, ...set] = await one("SELECT CONNECTION_ID(), LAST_INSERT_ID(424242), @cortado := 5, GET_LOCK('cortado_clean', 0)");
    t.same(set, [424242, 5, 1], 'the question set them');
    const [idAfter, ...after] = await one("SELECT CONNECTION_ID(), LAST_INSERT_ID(), @cortado, IS_USED_LOCK('cortado_clean')");
    t.equal(idAfter, id, 'on the same connection (reset, not replaced)');
    t.same(after, [0, null, null], 'LAST_INSERT_ID 0, the variable gone, the lock free');
  });

  t.test('the session is set up again after the reset: read-only, UTC, the lexing sql_mode, the timeout', async (t) => {
    const [ro, zone, mode, autocommit, timeout] = await one(`SELECT ${readOnly}, @@SESSION.time_zone, @@SESSION.sql_mode, @@SESSION.autocommit, @@SESSION.max_statement_time`);
    t.equal(Number(ro), 1, 'read-only transactions by default');
    t.equal(zone, '+00:00');
    t.notMatch(String(mode), /ANSI_QUOTES|NO_BACKSLASH_ESCAPES/);
    t.equal(Number(autocommit), 1);
    t.equal(Number(timeout), 10, 'the configured timeout');
    t.equal(Number((await one('SELECT @@SESSION.max_statement_time', 1500))[0]), 1.5, 'a question with its own timeout has it');
    t.equal(Number((await one('SELECT @@SESSION.max_statement_time'))[0]), 10, 'and the next one the configured timeout again');
  });

  t.test('a failed question leaves the connection clean and in use', async (t) => {
    const [id] = await one('SELECT CONNECTION_ID()');
    const err = await engine.execute('SELECT @cortado := 7, nosuch FROM nowhere', run).then(() => undefined, (e: { code?: string }) => e);
    t.equal(err?.code, 'DB_QUERY_FAILED');
    t.same(await one('SELECT CONNECTION_ID(), @cortado'), [id, null]);
  });
});

t.test('the embedded demo database: the shared session is restored after each question', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cortado-clean-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const server = await startEmbeddedPostgres({ dir, maxConnections: 2, log });
  const engine = await createPostgresEngine({
    host: server.host, port: server.port, database: server.database, user: server.user, password: '', schema: 'public',
    minConnections: 1, maxConnections: 2, ssl: false, statementTimeoutMs: TIMEOUT_MS, log,
    resetSql: embeddedReset(server.user), onClose: () => server.stop(),
  });
  t.teardown(() => engine.close());
  const one = async (sql: string) => (await engine.execute(sql, run)).rows[0]!;
  const SESSION = "SELECT current_user, current_setting('TimeZone'), current_setting('default_transaction_read_only'), current_setting('search_path')";

  t.same(await one(SESSION), ['cortado_reader', 'UTC', 'on', 'public'], 'the reader role, UTC, read-only');
  const changed = await one("SELECT set_config('role', 'postgres', false), set_config('TimeZone', 'Asia/Tokyo', false), set_config('search_path', 'pg_catalog', false), pg_advisory_lock(7)");
  t.equal(changed[0], 'postgres', 'the question became the superuser of the shared session');
  t.same(await one(SESSION), ['cortado_reader', 'UTC', 'on', 'public'], 'the next question is the reader again, with the same settings');
  t.same(await one("SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory'"), [0], 'the lock is gone');
  const [orders] = await one('SELECT count(*) FROM orders');
  t.ok(Number(orders) > 0, 'the demo data still answers');
  const writes = await engine.execute('SELECT 1', { ...run }).then(() => engine.execute("SELECT set_config('default_transaction_read_only', 'off', false)", run)).then(() => one("SELECT current_setting('default_transaction_read_only')"));
  t.same(writes, ['on'], 'read-only by default again after a question turned it off');
});

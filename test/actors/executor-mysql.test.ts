/**
 * The executor over a real NATS on a real MariaDB (the private one of scripts/services-up.sh,
 * MYSQL_URL): every MySQL guard case is refused with nothing executed (the tables are
 * checksummed before and after), every accepted case runs, the LIMIT is injected and clamped
 * with `truncated` told right, values come back as JSON with their types named, a query past
 * its timeout is cancelled on the server (and by the client's KILL QUERY when the server does
 * not), transactions are read-only, and a database that is down is DB_UNAVAILABLE.
 */
import { existsSync } from 'node:fs';
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { SqlCheck, SqlExecute, SqlIntrospect, SqlPing } from '../../protocol/subjects.js';
import { runCortado } from '../../cli/run.js';
import { registry } from '../../runtime/metrics.js';
import { MysqlEngine, lexingSafeSqlMode, toDbError, writeAccessFromGrants } from '../../actors/executor/engines/mysql.js';
import { ACCEPTED_MYSQL, GUARD_SCHEMA_SQL_MYSQL, LIMIT_CASES_MYSQL, LIMITS, ORDERS_ROWS_MYSQL, REJECTED_MYSQL } from '../fixtures/guard-cases-mysql.js';
import { testConfig } from '../helpers/config.js';
import { createMysqlUser, createTestMysqlDb } from '../helpers/mysql.js';
import { startNats } from '../helpers/nats.js';

const nats = await startNats();
const db = await createTestMysqlDb('exec');
await db.pool.query(GUARD_SCHEMA_SQL_MYSQL);
await db.pool.query(`INSERT INTO numbers (n) VALUES ${Array.from({ length: 50 }, (_, i) => `(${i + 1})`).join(', ')}`);
const [versionRows] = await db.pool.query<any[]>('SELECT VERSION() AS v');
const mariadb = /mariadb/i.test(String(versionRows[0].v));

const log = createLogger({ svc: 'test', level: 'silent' });
const config = testConfig({
  natsUrl: nats.url,
  extra: { database: { provider: 'mysql', mysql: db.section() }, query: { default_limit: 10, max_limit: 20, timeout: 10 } },
});
const running = await runCortado({ config, roles: { edge: false, actors: ['executor', 'settings'] }, log, name: 'exec-mysql-test' });
const client = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'exec-mysql-client', log });
const events: Array<{ subject: string; data: any }> = [];
client.listen('evt.>', (data, subject) => events.push({ subject, data }));

t.teardown(async () => {
  await client.close();
  await running.stop(2_000);
  await db.drop();
  await nats.stop();
});

let n = 0;
const ctx = () => ({ requestId: `exec-mysql-${++n}` });

async function fails(sql: string, extra: Record<string, unknown> = {}): Promise<CortadoError> {
  const err = await client.request(SqlExecute, { sql, ...extra }, ctx()).then(() => undefined, (e: unknown) => e);
  if (!(err instanceof CortadoError)) throw new Error(`expected an error for ${sql}`);
  return err;
}

const TABLES = ['customers', 'products', 'orders', 'shipments', 'returns_log', 'numbers', 'Mixed Case'];

/** Everything a statement could change: table checksums, the relations, users, databases, server files, read_only. */
async function fingerprint(): Promise<string> {
  const [sums] = await db.pool.query<any[]>(`CHECKSUM TABLE ${TABLES.map((x) => `\`${x}\``).join(', ')} EXTENDED`);
  const [counts] = await db.pool.query<any[]>(TABLES.map((x) => `SELECT '${x}' AS t, COUNT(*) AS n FROM \`${x}\``).join(' UNION ALL '));
  const [rels] = await db.pool.query<any[]>('SELECT GROUP_CONCAT(TABLE_NAME ORDER BY TABLE_NAME) AS r FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()');
  const [cols] = await db.pool.query<any[]>('SELECT COUNT(*) AS c FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()');
  const [users] = await db.pool.query<any[]>("SELECT GROUP_CONCAT(CONCAT(User, '@', Host) ORDER BY User, Host) AS u FROM mysql.user");
  const [dbs] = await db.pool.query<any[]>('SELECT GROUP_CONCAT(SCHEMA_NAME ORDER BY SCHEMA_NAME) AS d FROM information_schema.SCHEMATA');
  const [ro] = await db.pool.query<any[]>('SELECT @@GLOBAL.read_only AS ro');
  const files = ['/tmp/cortado-customers.csv', '/tmp/cortado-x.csv', '/tmp/cortado-x.bin', '/tmp/cortado-u.csv', '/tmp/cortado-pwned'].filter((f) => existsSync(f));
  // other test files create and drop their own databases meanwhile: only these must stay
  const kept = String(dbs[0].d).split(',').filter((d) => ['mysql', 'information_schema', 'performance_schema', 'sys', db.name].includes(d));
  return JSON.stringify({ sums, counts, rels, cols, users, kept, ro, files });
}

t.test('every rejected case is refused over the bus, with an event, and the database is unchanged', async (t) => {
  const before = await fingerprint();
  const from = events.length;
  for (const c of REJECTED_MYSQL) {
    const err = await fails(c.sql);
    t.equal(err.code, 'SQL_REJECTED', `${c.name}: SQL_REJECTED`);
    t.equal(err.details?.kind, c.kind, `${c.name}: kind`);
  }
  t.equal(await fingerprint(), before, 'nothing changed in the database');
  await client.flush();
  await new Promise((r) => setTimeout(r, 200));
  const rejected = events.slice(from).filter((e) => e.subject.endsWith('evt.query.rejected'));
  t.equal(rejected.length, REJECTED_MYSQL.length, 'one query.rejected event per refusal');
  t.equal(rejected[0]?.data.code, 'SQL_REJECTED');
});

t.test('every accepted case runs on the database', async (t) => {
  // the allow-list's other side: every one runs on the real server, 0 false rejections
  t.ok(ACCEPTED_MYSQL.length >= 150, `${ACCEPTED_MYSQL.length} accepted cases`);
  for (const c of ACCEPTED_MYSQL) {
    const reply = await client.request(SqlExecute, { sql: c.sql }, ctx()).catch((e: CortadoError) => e);
    t.notOk(reply instanceof Error, `${c.name}: ran${reply instanceof Error ? ` (${reply.code}: ${reply.message})` : ''}`);
  }
});

t.test('every LIMIT case the guard writes runs as written', async (t) => {
  for (const c of LIMIT_CASES_MYSQL) {
    if (c.runnable === false) continue;
    const limits = c.limits ?? LIMITS;
    const reply = await client.request(SqlExecute, { sql: c.sql, default_limit: limits.defaultLimit, max_limit: limits.maxLimit }, ctx()).catch((e: CortadoError) => e);
    t.notOk(reply instanceof Error, `${c.name}: ran${reply instanceof Error ? ` (${reply.code}: ${reply.message})` : ''}`);
    if (!(reply instanceof Error)) t.equal(reply.sql, c.expect.sql, `${c.name}: as the guard test expects`);
  }
});

t.test('LIMIT: injected at default_limit, user limit kept, clamped at max_limit, truncated told right', async (t) => {
  const injected = await client.request(SqlExecute, { sql: 'SELECT n FROM numbers ORDER BY n' }, ctx());
  t.equal(injected.row_count, 10);
  t.equal(injected.truncated, true);
  t.match(injected.sql, /\nLIMIT 10$/);
  t.same(injected.rows.slice(0, 3), [[1], [2], [3]]);

  const exact = await client.request(SqlExecute, { sql: 'SELECT n FROM numbers WHERE n <= 10 ORDER BY n' }, ctx());
  t.equal(exact.row_count, 10);
  t.equal(exact.truncated, false, 'exactly the default limit of rows is not truncated');

  const own = await client.request(SqlExecute, { sql: 'SELECT n FROM numbers ORDER BY n LIMIT 5' }, ctx());
  t.equal(own.row_count, 5);
  t.equal(own.truncated, false, "the user's own smaller LIMIT is not a truncation");

  const clamped = await client.request(SqlExecute, { sql: 'SELECT n FROM numbers ORDER BY n LIMIT 1000' }, ctx());
  t.equal(clamped.row_count, 20);
  t.equal(clamped.truncated, true);
  t.match(clamped.sql, /LIMIT 20$/);

  const offset = await client.request(SqlExecute, { sql: 'SELECT n FROM numbers ORDER BY n LIMIT 45, 1000' }, ctx());
  t.same(offset.rows, [[46], [47], [48], [49], [50]], 'LIMIT offset, count: the offset is kept');
  t.equal(offset.truncated, false);

  const union = await client.request(SqlExecute, { sql: 'SELECT n FROM numbers UNION ALL SELECT n FROM numbers LIMIT 1000' }, ctx());
  t.equal(union.row_count, 20, 'a trailing LIMIT bounds the whole UNION');
  t.equal(union.truncated, true);
});

t.test('values are JSON scalars with their types named', async (t) => {
  const r = await client.request(SqlExecute, {
    sql: `SELECT 1 AS i, 9007199254740993 AS big, CAST(12.50 AS DECIMAL(10,2)) AS money, CAST(0.1 AS DOUBLE) AS f,
                 DATE '2024-02-29' AS d, TIMESTAMP '2024-01-02 03:04:05' AS ts, NULL AS nothing,
                 CAST(18446744073709551615 AS UNSIGNED) AS u64, CAST(123456789012345678.25 AS DECIMAL(30,2)) AS long_decimal, X'ff00' AS bin`,
  }, ctx());
  t.same(r.rows[0], [1, '9007199254740993', 12.5, 0.1, '2024-02-29', '2024-01-02 03:04:05', null, '18446744073709551615', '123456789012345678.25', '0xff00']);
  t.same(r.columns.map((c) => c.type), ['int', 'bigint', 'decimal', 'double', 'date', 'datetime', 'null', 'bigint unsigned', 'decimal', 'varbinary']);

  const p = await client.request(SqlExecute, { sql: "SELECT name, price, attributes, ordered_at, quantity, `Some Column` FROM products JOIN orders ON orders.product_id = products.id JOIN `Mixed Case` ON `Some Column` = 1 WHERE note = 'sentinel'" }, ctx());
  t.same(p.rows, [['Cortado', 3.2, '{"size": "medium", "tags": ["hot"]}', '2024-01-05 08:00:00', 1, 1]]);
  t.same(p.columns, [
    { name: 'name', type: 'varchar' }, { name: 'price', type: 'decimal' }, { name: 'attributes', type: 'json' },
    { name: 'ordered_at', type: 'datetime' }, { name: 'quantity', type: 'int' }, { name: 'Some Column', type: 'int' },
  ]);
});

t.test('a database error is DB_QUERY_FAILED with the server message, and an event', async (t) => {
  const from = events.length;
  const err = await fails('SELECT no_such_column FROM orders');
  t.equal(err.code, 'DB_QUERY_FAILED');
  t.match(err.message, /no_such_column/);
  t.match(err.details, { errno: 1054, code: 'ER_BAD_FIELD_ERROR', sqlstate: '42S22' });
  await client.flush();
  await new Promise((r) => setTimeout(r, 100));
  t.ok(events.slice(from).some((e) => e.subject.endsWith('evt.query.rejected') && e.data.code === 'DB_QUERY_FAILED'));
  const syntax = await fails('SELECT 1 FROM orders WHERE id = ?');
  t.equal(syntax.code, 'DB_QUERY_FAILED', 'what the guard lets through but the server refuses');
});

/** A query that keeps the server busy for minutes: a cross join of four information_schema tables (SLEEP is refused). */
const SLOW = 'SELECT COUNT(*) AS n FROM information_schema.COLLATIONS a, information_schema.COLLATIONS b, information_schema.COLLATIONS c, information_schema.COLLATIONS d';

async function stillRunning(): Promise<number> {
  const deadline = Date.now() + 3_000;
  for (;;) {
    const [rows] = await db.pool.query<any[]>("SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE INFO LIKE '%COLLATIONS d%' AND INFO NOT LIKE '%PROCESSLIST%' AND ID <> CONNECTION_ID()");
    const count = Number(rows[0].n);
    if (count === 0 || Date.now() > deadline) return count;
    await new Promise((r) => setTimeout(r, 50));
  }
}

t.test('a query past its timeout is cancelled on the server', async (t) => {
  const started = Date.now();
  const stoppedBefore = await cancels('stopped');
  const err = await fails(SLOW, { timeout_ms: 500 });
  const took = Date.now() - started;
  t.equal(err.code, 'DB_TIMEOUT');
  t.match(err.message, /500 ms/);
  t.ok(took >= 450 && took < 1_400, `answered in ${took} ms (the server's own timeout, before the client's backstop)`);
  t.equal(await stillRunning(), 0, 'the query no longer runs (PROCESSLIST)');
  t.equal(await cancels('stopped'), stoppedBefore + 1, 'cortado_db_cancel_total{outcome="stopped"}: the server ended it');
  const ok = await client.request(SqlExecute, { sql: 'SELECT 1 AS one' }, ctx());
  t.same(ok.rows, [[1]], 'the pool still works');
});

/** cortado_db_cancel_total{engine="mysql",outcome} of this process */
async function cancels(outcome: string): Promise<number> {
  const m = await registry.getSingleMetric('cortado_db_cancel_total')?.get();
  return m?.values.find((v) => v.labels.engine === 'mysql' && v.labels.outcome === outcome)?.value ?? 0;
}

t.test('the client backstop kills a query the server does not stop', async (t) => {
  // the server-side timeout is 5 s; the backstop fires at 5 s - 4.6 s = 400 ms
  const engine = new MysqlEngine({ ...db, database: db.name, autocommit: true, maxConnections: 2, statementTimeoutMs: 5_000, backstopGraceMs: -4_600, log });
  t.teardown(() => engine.close());
  const started = Date.now();
  const stoppedBefore = await cancels('stopped');
  const err = await engine.execute(SLOW, { timeoutMs: 5_000, maxRows: 10 }).then(() => undefined, (e: unknown) => e as CortadoError);
  const took = Date.now() - started;
  t.equal(err?.code, 'DB_TIMEOUT');
  t.ok(took < 2_500, `answered in ${took} ms, long before the server's 5 s`);
  t.equal(await stillRunning(), 0, 'KILL QUERY ended it (PROCESSLIST)');
  // the kill is watched on the process list after the caller's answer (issue 24, class F)
  for (let i = 0; i < 30 && (await cancels('stopped')) === stoppedBefore; i++) await new Promise((r) => setTimeout(r, 100));
  t.equal(await cancels('stopped'), stoppedBefore + 1, 'cortado_db_cancel_total{outcome="stopped"}: seen gone from the process list');
  const again = await engine.execute('SELECT 2 AS two', { timeoutMs: 5_000, maxRows: 10 });
  t.same(again.rows, [[2]], 'the engine goes on with a fresh connection');
});

t.test('transactions are read-only even for what the guard would refuse', async (t) => {
  const engine = new MysqlEngine({ ...db, database: db.name, autocommit: false, maxConnections: 2, statementTimeoutMs: 5_000, log });
  t.teardown(() => engine.close());
  const before = await fingerprint();
  for (const sql of ['INSERT INTO numbers VALUES (999)', "UPDATE orders SET status = 'x'", 'DELETE FROM orders']) {
    const err = await engine.execute(sql, { timeoutMs: 5_000, maxRows: 10 }).then(() => undefined, (e: unknown) => e as CortadoError);
    t.equal(err?.code, 'DB_QUERY_FAILED', `${sql}: refused by the server`);
    t.match(err?.message, /READ ONLY/i);
    t.equal(err?.details?.errno, 1792);
  }
  t.equal(await fingerprint(), before, 'nothing changed');
  const [mode] = (await engine.execute('SELECT @@autocommit, @@SESSION.sql_mode, @@SESSION.time_zone', { timeoutMs: 5_000, maxRows: 1 })).rows;
  t.equal(mode?.[0], 0, 'database.mysql.autocommit: false is the session autocommit');
  t.notMatch(String(mode?.[1]), /ANSI_QUOTES|NO_BACKSLASH_ESCAPES/);
  t.equal(mode?.[2], '+00:00');

  const ro = await client.request(SqlExecute, { sql: mariadb ? 'SELECT @@SESSION.tx_read_only AS ro, @@SESSION.max_statement_time AS st' : 'SELECT @@SESSION.transaction_read_only AS ro, @@SESSION.max_execution_time AS st', timeout_ms: 2500 }, ctx());
  t.same(ro.rows, [[1, mariadb ? 2.5 : 2500]], 'read-only by default, with the asked timeout on the server');
});

t.test('a session that lexes differently is put right', async (t) => {
  t.equal(lexingSafeSqlMode('ANSI,REAL_AS_FLOAT,PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,NO_BACKSLASH_ESCAPES,STRICT_TRANS_TABLES'), 'REAL_AS_FLOAT,PIPES_AS_CONCAT,IGNORE_SPACE,STRICT_TRANS_TABLES');
  const engine = new MysqlEngine({ ...db, database: db.name, autocommit: true, maxConnections: 1, statementTimeoutMs: 5_000, log });
  t.teardown(() => engine.close());
  // A server whose default sql_mode has ANSI_QUOTES and NO_BACKSLASH_ESCAPES, for as long as the
  // engine takes to open its one connection (new sessions copy the global mode when they start)
  const [[global]] = await db.pool.query<any[]>('SELECT @@GLOBAL.sql_mode AS m');
  await db.pool.query("SET GLOBAL sql_mode = CONCAT(@@GLOBAL.sql_mode, ',ANSI_QUOTES,NO_BACKSLASH_ESCAPES')");
  try {
    await engine.warm();
  } finally {
    await db.pool.query('SET GLOBAL sql_mode = ?', [global.m]);
  }
  const r = await engine.execute(`SELECT 'it\\'s' AS s, "q" AS d`, { timeoutMs: 5_000, maxRows: 1 });
  t.same(r.rows, [["it's", 'q']], 'backslash escapes and double-quoted strings, as the guard reads them');
});

t.test('check, introspect and ping', async (t) => {
  t.same(await client.request(SqlCheck, { sql: 'SELECT 1' }, ctx()), { ok: true, sql: 'SELECT 1\nLIMIT 10' });
  const no = await client.request(SqlCheck, { sql: 'SELECT SLEEP(1)' }, ctx());
  t.equal(no.ok, false);
  const schema = await client.request(SqlIntrospect, {}, ctx());
  t.equal(schema.dialect, 'mysql');
  t.equal(schema.provider, 'mysql');
  t.equal(schema.default_schema, db.name);
  const orders = schema.tables.find((x) => x.name === 'orders');
  t.ok(orders, 'orders listed');
  t.equal(orders?.kind, 'table');
  t.equal(orders?.schema, db.name);
  t.equal(orders?.comment, 'one row per order');
  t.type(orders?.row_estimate, 'number');
  t.ok(orders?.columns.some((c) => c.name === 'amount' && c.type === 'decimal(12,2)' && c.comment === 'order total in EUR' && c.nullable === false));
  t.ok(orders?.columns.some((c) => c.name === 'note' && c.type === 'text' && c.nullable === true));
  t.same(orders?.foreign_keys?.map((f) => f.ref_table).sort(), ['customers', 'products']);
  t.same(schema.tables.find((x) => x.name === 'returns_log')?.foreign_keys, [{ columns: ['order_id', 'customer_id'], ref_schema: db.name, ref_table: 'shipments', ref_columns: ['order_id', 'customer_id'] }], 'a composite key');
  const view = schema.tables.find((x) => x.name === 'paid_orders');
  t.equal(view?.kind, 'view');
  t.notOk(view?.comment, 'a view has no comment of "VIEW"');
  t.equal(schema.tables.find((x) => x.name === 'products')?.columns.find((c) => c.name === 'attributes')?.type, 'json');
  t.ok(schema.tables.some((x) => x.name === 'Mixed Case'));
  t.notOk(schema.tables.some((x) => x.schema !== db.name), 'only the configured database');
  const ping = await client.request(SqlPing, {}, ctx());
  t.equal(ping.ok, true);
  t.equal(ping.provider, 'mysql');
  t.equal(ORDERS_ROWS_MYSQL, 40);
});

t.test('write access: a role that may only SELECT, and one that may write', async (t) => {
  const reader = await createMysqlUser(db, [`GRANT SELECT ON \`${db.name}\`.* TO {user}`]);
  t.teardown(() => reader.drop());
  const ro = new MysqlEngine({ ...db, user: reader.user, password: reader.password, database: db.name, autocommit: true, maxConnections: 1, statementTimeoutMs: 5_000, log });
  t.teardown(() => ro.close());
  t.same(await ro.canWrite(), { writable: false, reasons: [] });
  t.same((await ro.execute('SELECT COUNT(*) FROM orders', { timeoutMs: 5_000, maxRows: 1 })).rows, [[40]], 'the reader reads');

  const admin = await client.request(SqlPing, {}, ctx());
  t.equal(admin.ok, true);
  const writer = new MysqlEngine({ ...db, database: db.name, autocommit: true, maxConnections: 1, statementTimeoutMs: 5_000, log });
  t.teardown(() => writer.close());
  const access = await writer.canWrite();
  t.equal(access.writable, true);
  t.match(access.reasons.join('; '), /ALL PRIVILEGES on \*\.\*/);

  // require_read_only refuses to start with the writing account
  const nats2 = await startNats();
  t.teardown(() => nats2.stop());
  const strict = testConfig({ natsUrl: nats2.url, extra: { database: { provider: 'mysql', require_read_only: true, mysql: db.section() } } });
  const failed = await runCortado({ config: strict, roles: { edge: false, actors: ['executor', 'settings'] }, log, name: 'exec-mysql-strict' }).then(
    async (r) => {
      await r.stop(1_000);
      return undefined;
    },
    (e: unknown) => e as CortadoError,
  );
  t.equal(failed?.code, 'CONFIG_INVALID');
  t.match(failed?.message, /require_read_only/);
});

t.test('grants are read right', async (t) => {
  const w = (lines: string[], database = 'shop') => writeAccessFromGrants(lines, database);
  t.same(w(["GRANT USAGE ON *.* TO `u`@`%`", 'GRANT SELECT ON `shop`.* TO `u`@`%`']), { writable: false, reasons: [] });
  t.same(w(['GRANT SELECT, INSERT ON `shop`.* TO `u`@`%`']), { writable: true, reasons: ['INSERT on `shop`.*'] });
  t.same(w(['GRANT SELECT, INSERT ON `other`.* TO `u`@`%`']), { writable: false, reasons: [] }, 'another database');
  t.same(w(['GRANT UPDATE (`status`) ON `shop`.`orders` TO `u`@`%`']).writable, true, 'a column privilege on a table');
  t.same(w(['GRANT DELETE ON `sh\\_%`.* TO `u`@`%`'], 'sh_op').writable, true, 'a database pattern that matches');
  t.same(w(['GRANT DELETE ON `s%`.* TO `u`@`%`']).writable, true, 'a wildcard pattern that matches');
  t.same(w(['GRANT DELETE ON `sh\\_%`.* TO `u`@`%`'], 'shop').writable, false, 'an escaped underscore does not match "o"');
  t.same(w(['GRANT FILE ON *.* TO `u`@`%`']).reasons, ['FILE on *.*']);
  t.same(w(["GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION"]).reasons, ['ALL PRIVILEGES on *.*']);
  t.same(w(['GRANT EXECUTE ON PROCEDURE `shop`.`p` TO `u`@`%`']).writable, false);
});

t.test('errors map to the error table', async (t) => {
  t.equal(toDbError({ code: 'ECONNREFUSED', errno: -111, message: 'connect ECONNREFUSED' }).code, 'DB_UNAVAILABLE');
  t.equal(toDbError({ code: 'ER_ACCESS_DENIED_ERROR', errno: 1045, sqlState: '28000', sqlMessage: 'Access denied' }).code, 'DB_UNAVAILABLE');
  t.equal(toDbError({ code: 'ER_QUERY_TIMEOUT', errno: 3024, sqlState: 'HY000', sqlMessage: 'maximum statement execution time exceeded' }, 1000).code, 'DB_TIMEOUT');
  t.equal(toDbError({ errno: 1969, sqlState: '70100', sqlMessage: 'Query execution was interrupted (max_statement_time exceeded)' }, 1000).code, 'DB_TIMEOUT');
  t.equal(toDbError({ code: 'ER_QUERY_INTERRUPTED', errno: 1317, sqlState: '70100', sqlMessage: 'Query execution was interrupted' }).code, 'DB_TIMEOUT');
  const q = toDbError({ code: 'ER_PARSE_ERROR', errno: 1064, sqlState: '42000', sqlMessage: 'You have an error in your SQL syntax' });
  t.equal(q.code, 'DB_QUERY_FAILED');
  t.equal(q.message, 'You have an error in your SQL syntax');
  t.equal(toDbError({ code: 'PROTOCOL_CONNECTION_LOST', fatal: true, message: 'Connection lost' }).code, 'DB_UNAVAILABLE');
  t.equal(toDbError(new TypeError('bug')).code, 'INTERNAL');
});

t.test('a database that is down or refuses the login: DB_UNAVAILABLE, and ping says so', async (t) => {
  const nats2 = await startNats();
  t.teardown(() => nats2.stop());
  const down = testConfig({ natsUrl: nats2.url, extra: { database: { provider: 'mysql', mysql: { host: '127.0.0.1', port: 1, user: 'nobody', database: 'nothing' } } } });
  const other = await runCortado({ config: down, roles: { edge: false, actors: ['executor', 'settings'] }, log, name: 'exec-mysql-down' });
  t.teardown(() => other.stop(1_000));
  const c2 = await Bus.connect({ url: nats2.url, prefix: 'cortado', name: 'c2', log });
  t.teardown(() => c2.close());
  const err = await c2.request(SqlExecute, { sql: 'SELECT 1' }, ctx()).then(() => undefined, (e: unknown) => e as CortadoError);
  t.equal(err?.code, 'DB_UNAVAILABLE');
  t.match(err?.message, /cannot be reached: connection refused/);
  const ping = await c2.request(SqlPing, {}, ctx());
  t.equal(ping.ok, false);
  t.match(ping.error, /cannot be reached/);

  const wrong = new MysqlEngine({ ...db, password: 'not-the-password', user: 'cortado_nobody', database: db.name, autocommit: true, maxConnections: 1, statementTimeoutMs: 5_000, log });
  t.teardown(() => wrong.close());
  const login = await wrong.execute('SELECT 1', { timeoutMs: 5_000, maxRows: 1 }).then(() => undefined, (e: unknown) => e as CortadoError);
  t.equal(login?.code, 'DB_UNAVAILABLE');
  t.match(login?.message, /login was refused/);
  t.notMatch(login?.message, /not-the-password/, 'no password in the message');
});

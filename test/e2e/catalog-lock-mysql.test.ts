/**
 * plugins.auth.enforce_catalog_lock end to end on MariaDB, where the catalog is the database: a
 * user signs in with their own MariaDB account, which the server itself lets read two databases
 * (the session's and another one holding a secret). Whatever the model writes that names the
 * other database — however it is spelt, wherever it sits — is refused over HTTP with
 * SQL_REJECTED (catalog_lock), and nothing reaches the server: the session's connections run no
 * statement (information_schema.PROCESSLIST.QUERY_ID stays put) and no new one is opened. The
 * same account without the lock does read the secret: the lock, not the grants, stops it.
 */
import t from 'tap';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { createMysqlUser, createTestMysqlDb } from '../helpers/mysql.js';
import { startNats } from '../helpers/nats.js';
import { call, startStack } from '../helpers/stack.js';

const SECRET = 'TOP-SECRET-4242';
const nats = await startNats();
const shop = await createTestMysqlDb('lockshop');
const other = await createTestMysqlDb('lockother');
await shop.pool.query(`
  CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(40), country CHAR(2));
  INSERT INTO customers VALUES (1, 'Ada', 'DE'), (2, 'Grace', 'US');
  CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT, amount DECIMAL(10,2), created_at DATETIME);
  INSERT INTO orders VALUES (1, 1, 10.00, '2024-01-05 10:00:00'), (2, 2, 32.00, '2024-02-07 11:00:00');`);
await other.pool.query(`CREATE TABLE secrets (id INT PRIMARY KEY, secret VARCHAR(40)); INSERT INTO secrets VALUES (1, '${SECRET}');`);
const user = await createMysqlUser(shop, [`GRANT SELECT ON \`${shop.name}\`.* TO {user}`, `GRANT SELECT ON \`${other.name}\`.* TO {user}`]);

const llm = await startFakeLlm();
let nextSql = 'SELECT 1';
llm.fallback(() => ({ text: sqlAnswer(nextSql) }));
const key = generateFernetKey();
const stackConfig = (prefix: string, lock: boolean) => testConfig({
  natsUrl: nats.url,
  llmUrl: llm.url,
  extra: {
    bus: { prefix },
    config_db: { encryption_key: key },
    database: { provider: 'mysql', mysql: shop.section() },
    plugins: { auth: { enabled: true, enforce_catalog_lock: lock, allowed_db_types: ['mysql'], allowed_catalogs: [{ name: shop.name, allowed_schemas: [] }] } },
  },
});
const stack = await startStack(stackConfig('cortado', true));
const unlocked = await startStack(stackConfig('lockoff', false));
t.teardown(async () => {
  await unlocked.stop();
  await stack.stop();
  await llm.close();
  await user.drop();
  await other.drop();
  await shop.drop();
  await nats.stop();
});

async function signIn(base: string): Promise<Record<string, string>> {
  const r = await call(`${base}/auth/login`, { body: { username: user.user, password: user.password, db_type: 'mysql', database: shop.name } });
  if (r.status !== 200) throw new Error(`login: ${r.status} ${r.text}`);
  return { 'x-session-id': String(r.body.session_id) };
}
const session = await signIn(stack.url);

async function ask(sql: string, base = stack.url, headers = session): Promise<{ status: number; body: any; text: string }> {
  nextSql = sql;
  return call(`${base}/auth/query`, { body: { question: 'lock test' }, headers });
}

/** The session account's connections and the id of the last statement each ran. */
async function connections(): Promise<string> {
  const [rows] = await shop.pool.query<any[]>('SELECT ID, QUERY_ID FROM information_schema.PROCESSLIST WHERE USER = ? ORDER BY ID', [user.user]);
  return JSON.stringify(rows);
}

/** Analytical SQL in the session's own database, run on MariaDB through the lock. */
const OK: Array<[string, unknown[][]]> = [
  ['SELECT SUM(amount) AS total FROM orders', [[42]]],
  [`SELECT c.name, SUM(o.amount) AS total FROM \`${shop.name}\`.orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.name ORDER BY total DESC`, [['Grace', 32], ['Ada', 10]]],
  ['WITH m AS (SELECT DATE_FORMAT(o.created_at, \'%Y-%m\') AS month, SUM(o.amount) AS total FROM orders o GROUP BY month) SELECT m.month, m.total FROM m ORDER BY m.month', [['2024-01', 10], ['2024-02', 32]]],
  ['SELECT o.id, SUM(o.amount) OVER (ORDER BY o.created_at) AS running FROM orders o ORDER BY o.id', [[1, 10], [2, 42]]],
  ["SELECT id FROM orders WHERE customer_id IN (SELECT c.id FROM customers c WHERE c.country = 'US')", [[2]]],
  [`SELECT ${shop.name}.orders.id FROM ${shop.name}.orders WHERE ${shop.name}.orders.amount > 20`, [[2]]],
];

t.test('the session\'s own database answers, however its tables are named', async (t) => {
  for (const [sql, rows] of OK) {
    const r = await ask(sql);
    t.equal(r.status, 200, `${sql}: ${r.text}`);
    t.same(r.body.data, rows, sql);
  }
});

t.test('another database is refused before the server sees it, however written', async (t) => {
  const o = other.name;
  const refused: Array<[string, string]> = [
    [`SELECT * FROM ${o}.secrets`, o],
    [`SELECT * FROM \`${o}\`.\`secrets\``, o],
    [`SELECT * FROM ${o.toUpperCase()}.secrets`, o.toUpperCase()],
    [`SELECT s.secret FROM orders o JOIN ${o}.secrets s ON s.id = o.id`, o],
    [`SELECT * FROM orders AS ${o}, ${o}.secrets`, o],
    [`SELECT id FROM orders WHERE id IN (SELECT id FROM ${o}.secrets)`, o],
    [`SELECT (SELECT MAX(secret) FROM ${o}.secrets) AS s FROM orders`, o],
    [`WITH x AS (SELECT secret FROM ${o}.secrets) SELECT * FROM x`, o],
    [`SELECT name FROM customers UNION SELECT secret FROM ${o}.secrets`, o],
    [`SELECT ${o}.secrets.secret FROM orders`, o],
    [`SELECT * FROM ${o} . secrets`, o],
    ['SELECT table_name FROM information_schema.tables', 'information_schema'],
  ];
  // the guard's own allow-list refuses the server's schemas first, the lock would otherwise
  const mysqlUser = await ask('SELECT user, password FROM mysql.user');
  t.equal(mysqlUser.status, 422, mysqlUser.text);
  t.equal(mysqlUser.body.error?.code, 'SQL_REJECTED');
  const before = await connections();
  t.not(before, '[]', 'the session has a connection open (the questions above used it)');
  for (const [sql, database] of refused) {
    const r = await ask(sql);
    t.equal(r.status, 422, `${sql}: ${r.text}`);
    t.equal(r.body.error?.code, 'SQL_REJECTED', sql);
    t.match(r.body.error?.message, `in database "${database}", but this session is locked to database "${shop.name}"`, sql);
    t.notMatch(r.text, SECRET, `${sql}: no secret in the reply`);
  }
  t.equal(await connections(), before, 'no statement reached the server on the session\'s connections, and none was opened');
  await ask('SELECT COUNT(*) AS n FROM orders');
  t.not(await connections(), before, 'a question that runs moves QUERY_ID: the probe sees work when there is some');
});

t.test('without a session the server\'s own database is locked too (plugins.auth on)', async (t) => {
  nextSql = `SELECT * FROM ${other.name}.secrets`;
  const r = await call(`${stack.url}/api/query`, { body: { question: 'anything' } });
  t.equal(r.status, 422, r.text);
  t.match(r.body.error.message, `in database "${other.name}"`);
  t.notMatch(r.text, SECRET);
});

t.test('the same account without the lock reads the other database: the grants allow it, the lock is what stops it', async (t) => {
  const headers = await signIn(unlocked.url);
  const r = await ask(`SELECT secret FROM ${other.name}.secrets`, unlocked.url, headers);
  t.equal(r.status, 200, r.text);
  t.same(r.body.data, [[SECRET]]);
});

t.test('logins: a wrong password is 401 (the privilege check asks the database as the login), an empty one 400 before any connection', async (t) => {
  const wrong = await call(`${stack.url}/auth/login`, { body: { username: user.user, password: 'not-the-password', db_type: 'mysql', database: shop.name } });
  t.equal(wrong.status, 401, wrong.text);
  t.equal(wrong.body.error.message, 'the database refused these credentials');
  const r = await call(`${stack.url}/auth/login`, { body: { username: 'root', password: '', db_type: 'mysql', database: shop.name } });
  t.equal(r.status, 400, r.text);
  t.equal(r.body.error.code, 'VALIDATION_FAILED');
  t.match(r.body.error.message, /password: required/);
});

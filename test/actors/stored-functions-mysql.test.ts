/**
 * Issue 24, class D on MySQL/MariaDB, on the real MariaDB test server: an unqualified call reaches
 * the server's built-in when it has one of that name, and else a stored function of the default
 * database. The MySQL allow-list holds names only one of the two servers has as built-ins
 * (MariaDB 10.11 has no any_value, regexp_like, json_storage_size), so a stored `any_value` was
 * called by `any_value(x)` and returned a secret. Through the executor as it runs in production:
 * the start-up check drops an allowed name a stored function of the database has (refused, the
 * message names the function) and every allowed name the server has no built-in of (a stored
 * function created later is refused too), database.allowed_functions allows it again, and a
 * built-in the server has stays the built-in.
 */
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { SqlExecute } from '../../protocol/subjects.js';
import { runCortado } from '../../cli/run.js';
import { testConfig } from '../helpers/config.js';
import { createTestMysqlDb } from '../helpers/mysql.js';
import { startNats } from '../helpers/nats.js';

const SECRET = 'planted-secret-9c1e';

const nats = await startNats();
const db = await createTestMysqlDb('stored');
await db.pool.query(`
  CREATE TABLE people (id INT PRIMARY KEY, name VARCHAR(40));
  INSERT INTO people VALUES (1, 'ada'), (2, 'bob');
  CREATE FUNCTION json_value(doc TEXT, path TEXT) RETURNS TEXT DETERMINISTIC RETURN '${SECRET}';`);
const [versionRows] = await db.pool.query<any[]>('SELECT VERSION() AS v');
const mariadb = /mariadb/i.test(String(versionRows[0].v));
// a name on the allow-list this server has no built-in for (MySQL 8 has any_value; MariaDB has median)
const missing = mariadb ? 'any_value' : 'median';
await db.pool.query(`CREATE FUNCTION ${missing}(x TEXT) RETURNS TEXT DETERMINISTIC RETURN '${SECRET}'`);

const log = createLogger({ svc: 'test', level: 'silent' });
const client = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'stored-client', log });

t.teardown(async () => {
  await client.close();
  await db.drop();
  await nats.stop();
});

let n = 0;
const ctx = () => ({ requestId: `stored-${++n}` });

async function withExecutor(allowedFunctions: string[], run: () => Promise<void>): Promise<void> {
  const config = testConfig({
    natsUrl: nats.url,
    extra: { database: { provider: 'mysql', mysql: db.section(), allowed_functions: allowedFunctions } },
  });
  const running = await runCortado({ config, roles: { edge: false, actors: ['executor', 'settings'] }, log, name: `stored-${allowedFunctions.length}` });
  try {
    await run();
  } finally {
    await running.stop(2_000);
  }
}

const CALL = `SELECT ${missing}(name) AS v FROM people`;

t.test('the server calls the stored function for a name it has no built-in of, and the built-in for one it has', async (t) => {
  const [stored] = await db.pool.query<any[]>(CALL);
  t.equal(stored[0].v, SECRET, `${missing}(x) is the stored function on this server`);
  const [builtin] = await db.pool.query<any[]>(`SELECT json_value('{"a": 1}', '$.a') AS v`);
  t.equal(String(builtin[0].v), '1', 'json_value(x) is the built-in, a stored json_value notwithstanding');
});

t.test('refused once the start-up check saw the stored function, and the secret never comes back', async (t) => {
  await withExecutor([], async () => {
    const err = await client.request(SqlExecute, { sql: CALL }, ctx()).then((r) => r, (e: unknown) => e);
    t.ok(err instanceof CortadoError, 'refused');
    t.notMatch(JSON.stringify(err instanceof CortadoError ? { m: err.message, d: err.details } : err), SECRET);
    t.match((err as CortadoError).details, { kind: 'function_not_allowed', function: missing });
    t.match((err as CortadoError).message, new RegExp(`stored function of that name \\(${db.name}\\.${missing}\\)`));
    // fail closed: a stored function named like a built-in the server has is refused too (the
    // check cannot ask the server which of its names are built-ins without calling them)
    const shadowed = await client.request(SqlExecute, { sql: `SELECT json_value('{"a": 1}', '$.a') AS v` }, ctx()).then(() => undefined, (e: unknown) => e as CortadoError);
    t.match(shadowed?.details, { kind: 'function_not_allowed', function: 'json_value' });
    const other = await client.request(SqlExecute, { sql: 'SELECT upper(name) AS v FROM people ORDER BY id' }, ctx());
    t.same(other.rows, [['ADA'], ['BOB']], 'names no stored function has stay allowed');

    // a stored function created after the check, named like an allowed built-in this server
    // lacks: the check found the server lacks it, so the name was refused already
    const lacking = mariadb ? 'regexp_like' : 'natural_sort_key';
    await db.pool.query(`CREATE FUNCTION ${lacking}(a TEXT, b TEXT) RETURNS TEXT DETERMINISTIC RETURN '${SECRET}'`);
    const [direct] = await db.pool.query<any[]>(`SELECT ${lacking}(name, 'a') AS v FROM people LIMIT 1`);
    t.equal(direct[0].v, SECRET, `the server calls the stored ${lacking}`);
    const later = await client.request(SqlExecute, { sql: `SELECT ${lacking}(name, 'a') AS v FROM people` }, ctx()).then((r) => r, (e: unknown) => e);
    t.ok(later instanceof CortadoError, 'refused');
    t.match((later as CortadoError).details, { kind: 'function_not_allowed', function: lacking });
    t.match((later as CortadoError).message, /no built-in of that name/);
    t.notMatch(JSON.stringify(later instanceof CortadoError ? { m: later.message, d: later.details } : later), SECRET);
    await db.pool.query(`DROP FUNCTION ${lacking}`);
  });
});

t.test('database.allowed_functions allows the name again: it is then the database\'s own', async (t) => {
  await withExecutor([missing], async () => {
    const reply = await client.request(SqlExecute, { sql: CALL }, ctx());
    t.same(reply.rows, [[SECRET], [SECRET]], 'the operator listed it: the stored function runs');
  });
});

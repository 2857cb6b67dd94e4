/**
 * Issue 24, class D, end to end: the guard's parser knows PostgreSQL 18's grammar, where
 * `json_value(doc, path)` is SQL/JSON syntax; the test server is PostgreSQL 15, which reads the
 * same text as a call of a function named json_value, so a `public.json_value` of the database
 * would run (the held-out test planted one that returned a secret). Through the executor as it
 * runs in production (the actor over a real NATS, on the real server): refused, with the
 * secret nowhere in the answer, unless database.allowed_functions lists the name; then it runs
 * (and is that function: the server is older than the syntax).
 */
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { SqlCheck, SqlExecute } from '../../protocol/subjects.js';
import { runCortado } from '../../cli/run.js';
import { testConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';

const SECRET = 'planted-secret-7f3a';

const nats = await startNats();
const db = await createTestDb('pgver');
const major = Math.floor(Number((await db.pool.query<{ v: string }>("SELECT current_setting('server_version_num') AS v")).rows[0]?.v) / 10_000);
// as the superuser: functions the SQL/JSON syntax of newer servers shadows on this one
await db.pool.query(`
  CREATE FUNCTION public.json_value(text, text) RETURNS text LANGUAGE sql AS $$ SELECT '${SECRET}'::text $$;
  CREATE FUNCTION public.json_scalar(integer) RETURNS text LANGUAGE sql AS $$ SELECT '${SECRET}'::text $$;
  CREATE FUNCTION public.json_array(integer, integer) RETURNS text LANGUAGE sql AS $$ SELECT '${SECRET}'::text $$;`);
const log = createLogger({ svc: 'test', level: 'silent' });
const client = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'pgver-client', log });

t.teardown(async () => {
  await client.close();
  await db.drop();
  await nats.stop();
});

let n = 0;
const ctx = () => ({ requestId: `pgver-${++n}` });

async function withExecutor(allowedFunctions: string[], run: () => Promise<void>): Promise<void> {
  const config = testConfig({
    natsUrl: nats.url,
    db: { host: db.host, port: db.port, name: db.name, user: db.user },
    extra: { database: { allowed_functions: allowedFunctions } },
  });
  const running = await runCortado({ config, roles: { edge: false, actors: ['executor', 'settings'] }, log, name: `pgver-${allowedFunctions.length}` });
  try {
    await run();
  } finally {
    await running.stop(2_000);
  }
}

const CALLS = ["SELECT json_value('{}', '$.a') AS v", 'SELECT json_scalar(1) AS v', 'SELECT json_array(1, 2) AS v'];

t.test('the test server is older than the syntax', async (t) => {
  t.ok(major > 0 && major < 16, `PostgreSQL ${major}: json_value, json_scalar and json_array are calls there`);
  // what the guard must not let through: the server runs the planted function
  const direct = await db.pool.query("SELECT json_value('{}', '$.a') AS v");
  t.equal(direct.rows[0]?.v, SECRET);
});

t.test('refused as calls of functions that are not allowed, and the secret never comes back', async (t) => {
  await withExecutor([], async () => {
    for (const sql of CALLS) {
      const err = await client.request(SqlExecute, { sql }, ctx()).then(
        (reply) => reply,
        (e: unknown) => e,
      );
      t.ok(err instanceof CortadoError, `${sql}: refused`);
      if (!(err instanceof CortadoError)) {
        t.notMatch(JSON.stringify(err), SECRET, 'the secret came back');
        continue;
      }
      t.equal(err.code, 'SQL_REJECTED', sql);
      t.equal(err.details?.kind, 'function_not_allowed', sql);
      t.match(err.message, new RegExp(`PostgreSQL ${major}`), 'the reason names the server');
      t.notMatch(JSON.stringify({ message: err.message, details: err.details }), SECRET);
    }
    const check = await client.request(SqlCheck, { sql: CALLS[0]! }, ctx());
    t.equal(check.ok, false, 'sql.check says so too');

    // the function form of the same class: any_value is on the allow-list and a built-in only
    // since PostgreSQL 16; here the call reaches the database's own any_value, even one created
    // after the executor's start-up check of the catalog
    await db.pool.query(`CREATE FUNCTION public.any_value(text) RETURNS text LANGUAGE sql AS $$ SELECT '${SECRET}'::text $$`);
    t.equal((await db.pool.query("SELECT any_value('x') AS v")).rows[0]?.v, SECRET, 'the server calls it');
    const later = await client.request(SqlExecute, { sql: "SELECT any_value('x') AS v" }, ctx()).then((r) => r, (e: unknown) => e);
    t.ok(later instanceof CortadoError, 'refused');
    t.match((later as CortadoError).details, { kind: 'function_not_allowed', function: 'any_value' });
    t.match((later as CortadoError).message, /no built-in of that name/);
    t.notMatch(JSON.stringify(later instanceof CortadoError ? { m: later.message, d: later.details } : later), SECRET);
    await db.pool.query('DROP FUNCTION public.any_value(text)');
  });
});

t.test('database.allowed_functions allows the call, which is then the database\'s own', async (t) => {
  await withExecutor(['json_value'], async () => {
    const reply = await client.request(SqlExecute, { sql: CALLS[0]! }, ctx());
    t.same(reply.rows, [[SECRET]], 'the operator trusted it: it runs');
    const other = await client.request(SqlExecute, { sql: CALLS[1]! }, ctx()).then(() => undefined, (e: unknown) => e);
    t.match((other as CortadoError | undefined)?.details, { kind: 'function_not_allowed', function: 'json_scalar' }, 'only the name listed');
  });
});

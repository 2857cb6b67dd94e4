/**
 * The MySQL attack corpus (test/fixtures/attacks-mysql.ts) through the executor's own execute()
 * on a real MariaDB, twice: as a user that may only SELECT in its database, and as the test's
 * privileged login (database.allow_privileged_role: true). Every attack is refused with the
 * kind the corpus names, or is harmless; after each one the real state is checked: the canary
 * rows, the sequence, the users, the tables, no file written, no named lock held, no session
 * state (LAST_INSERT_ID, @x, sql_mode...) left for the next question on the same connection,
 * the other session still alive, and no canary secret in any answer or error.
 */
import { fixedMasking } from '../../actors/lib/masking/service.js';
import { existsSync, readdirSync, unlinkSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import t from 'tap';
import mysql from 'mysql2/promise';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import type { Ctx } from '../../runtime/bus.js';
import { MysqlEngine } from '../../actors/executor/engines/mysql.js';
import { prepareGuard } from '../../actors/executor/guard/index.js';
import { execute, type ExecutorDeps } from '../../actors/executor/handle.js';
import { ATTACKS_MYSQL, AttackClass } from '../fixtures/attacks-mysql.js';
import { testConfig } from '../helpers/config.js';
import { createMysqlUser, createTestMysqlDb } from '../helpers/mysql.js';

await prepareGuard('mysql');
const log = createLogger({ svc: 'test', level: 'silent' });
const db = await createTestMysqlDb('attacks');
const [[{ v: version }]] = await db.pool.query<any[]>('SELECT VERSION() AS v');
const mariadb = /mariadb/i.test(String(version));
await db.pool.query(`
  CREATE TABLE canary (id INT PRIMARY KEY, secret VARCHAR(100) NOT NULL);
  INSERT INTO canary VALUES (1, 'canary-secret-one'), (2, 'canary-secret-two'), (3, 'canary-secret-three');
  ${mariadb ? 'CREATE SEQUENCE attack_seq START WITH 100;' : 'CREATE TABLE attack_seq (next_not_cached_value BIGINT);'}
`);
const reader = await createMysqlUser(db, [`GRANT SELECT ON \`${db.name}\`.* TO {user}`]);
// another session the attacks try to reach (KILL): it must still answer after every one
const bystander = await db.pool.getConnection();
const bystanderId = bystander.threadId;
const tmp = `/tmp/cortado-attack-${process.pid}-${Math.floor(Math.random() * 1e9).toString(36)}`;

t.teardown(async () => {
  bystander.release();
  await reader.drop();
  await db.drop();
});

const fill = (sql: string) => sql.replace(/\{tmp\}/g, tmp).replace(/\{bystander\}/g, String(bystanderId)).replace(/\{db\}/g, db.name);

/** Every file an attack names (`{tmp}-suffix`). */
const FILES = [...new Set(ATTACKS_MYSQL.flatMap((a) => [...a.sql.matchAll(/\{tmp\}([^'\s)]*)/g)].map((m) => `${tmp}${m[1]}`)))];

/** Files with the prefix on this machine, and (for a server elsewhere) which of `paths` the server itself can read. */
async function filesWritten(prefix: string, paths: readonly string[]): Promise<string[]> {
  const dir = dirname(prefix);
  const local = existsSync(dir) ? readdirSync(dir).filter((f) => f.startsWith(basename(prefix))).map((f) => `${dir}/${f}`) : [];
  const [rows] = await db.pool.query<any[]>(paths.map(() => 'SELECT ? AS p, LOAD_FILE(?) IS NOT NULL AS readable').join(' UNION ALL ') || 'SELECT NULL AS p, 0 AS readable', paths.flatMap((p) => [p, p]));
  const remote = rows.filter((r) => Number(r.readable) === 1).map((r) => String(r.p));
  return [...new Set([...local, ...remote])].sort();
}

/** What an attack could change in the database, seen from the admin's own connection. */
async function serverState(): Promise<string> {
  const [rows] = await db.pool.query<any[]>('SELECT GROUP_CONCAT(id, \':\', secret ORDER BY id) AS r, COUNT(*) AS n FROM canary');
  const [seq] = await db.pool.query<any[]>('SELECT next_not_cached_value AS v FROM attack_seq');
  // the users of this server but those other test files make and drop while this one runs
  // (createMysqlUser: u<pid>_…); this process's own are counted
  const [users] = await db.pool.query<any[]>("SELECT GROUP_CONCAT(CONCAT(User, '@', Host) ORDER BY User, Host) AS n FROM mysql.user WHERE User NOT REGEXP '^u[0-9]+_' OR User LIKE ?", [`u${process.pid}\\_%`]);
  const [tables] = await db.pool.query<any[]>('SELECT GROUP_CONCAT(TABLE_NAME ORDER BY TABLE_NAME) AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?', [db.name]);
  const [lock] = await db.pool.query<any[]>("SELECT IS_USED_LOCK('cortado_attack') AS holder");
  return JSON.stringify({ rows: rows[0], seq: seq[0]?.v ?? null, users: users[0].n, tables: tables[0].t, lock: lock[0].holder });
}

/** The session state a question could leave on its connection for the next one. */
const SESSION_PROBE = `SELECT LAST_INSERT_ID() AS lid, @x AS x, @@SESSION.sql_mode AS mode, @@SESSION.time_zone AS tz,
  @@SESSION.character_set_client AS cs, @@SESSION.autocommit AS ac, ${mariadb ? '@@SESSION.tx_read_only, @@SESSION.max_statement_time' : '@@SESSION.transaction_read_only, @@SESSION.max_execution_time'} AS lim`;

type Runner = (sql: string) => Promise<unknown[][]>;

async function sessionState(run: Runner): Promise<string> {
  return JSON.stringify(await run(SESSION_PROBE));
}

t.test('the corpus', async (t) => {
  t.ok(ATTACKS_MYSQL.length >= 90, `${ATTACKS_MYSQL.length} attacks`);
  const classes = new Set(ATTACKS_MYSQL.map((a) => a.class));
  t.same([...classes].sort(), Object.values(AttackClass).sort(), 'every class has attacks');
  t.equal(new Set(ATTACKS_MYSQL.map((a) => a.name)).size, ATTACKS_MYSQL.length, 'names are unique');
  t.ok(FILES.length >= 5, `${FILES.length} file paths checked`);
});

t.test('the checks see what an attack would leave behind (done here without the guard)', async (t) => {
  const raw = await mysql.createConnection({ host: db.host, port: db.port, user: db.user, password: db.password, database: db.name });
  t.teardown(() => raw.end());
  const run: Runner = async (sql) => (await raw.query({ sql, rowsAsArray: true }))[0] as unknown[][];
  const session = await sessionState(run);
  await raw.query('SELECT LAST_INSERT_ID(424242)');
  t.not(await sessionState(run), session, 'LAST_INSERT_ID(424242) is seen on the same connection');
  await raw.query('SELECT LAST_INSERT_ID(0)');
  await raw.query('SET @x = 1');
  t.not(await sessionState(run), session, '@x is seen');
  await raw.query('SET @x = NULL');
  await raw.query("SET SESSION sql_mode = CONCAT(@@SESSION.sql_mode, ',ANSI_QUOTES')");
  t.not(await sessionState(run), session, 'a changed sql_mode is seen');

  const server = await serverState();
  await raw.query("SELECT GET_LOCK('cortado_attack', 0)");
  t.not(await serverState(), server, 'a named lock held is seen');
  await raw.query("SELECT RELEASE_LOCK('cortado_attack')");
  if (mariadb) {
    await raw.query('SELECT NEXTVAL(attack_seq)');
    t.not(await serverState(), server, 'an advanced sequence is seen');
    await db.pool.query('DROP SEQUENCE attack_seq; CREATE SEQUENCE attack_seq START WITH 100');
  }
  t.equal(await serverState(), server, 'and put back');

  // a name of its own: should it stay behind (a file of the server's user), the attack checks do not see it
  const control = `${dirname(tmp)}/cortado-control-${process.pid}-${Math.floor(Math.random() * 1e9).toString(36)}.txt`;
  const wrote = await raw.query(`SELECT 'x' INTO OUTFILE '${control}'`).then(() => true, () => false);
  if (wrote) {
    t.same(await filesWritten(control, [control]), [control], 'a file the server wrote is seen');
    try {
      unlinkSync(control);
    } catch {
      // another machine's file, or owned by the server's user: it has a fresh name anyway
    }
  } else {
    t.comment('this login cannot write server files: the file check is not proven here');
  }
});

const roles = [
  { name: 'a user that may only SELECT', user: reader.user, password: reader.password, privileged: false },
  { name: 'the privileged login (allow_privileged_role)', user: db.user, password: db.password, privileged: true },
];

for (const role of roles) {
  t.test(`every attack is refused or harmless: ${role.name}`, async (t) => {
    const config = testConfig({
      natsUrl: 'nats://127.0.0.1:1',
      extra: {
        database: { provider: 'mysql', allow_privileged_role: role.privileged, mysql: db.section({ user: role.user, password: role.password }) },
        query: { default_limit: 10, max_limit: 20, timeout: 5 },
      },
    });
    // one connection: the next question runs where the attack ran
    const engine = new MysqlEngine({
      host: db.host, port: db.port, user: role.user, password: role.password, database: db.name,
      autocommit: true, maxConnections: 1, statementTimeoutMs: 5_000, log,
    });
    t.teardown(() => engine.close());
    const events: Array<{ code?: string }> = [];
    const deps: ExecutorDeps = { config, engine, log, masking: fixedMasking([], log), bus: { publish: (_def, payload) => void events.push(payload as { code?: string }) } };
    const probe: Runner = async (sql) => (await engine.execute(sql, { timeoutMs: 5_000, maxRows: 10 })).rows;

    const warm = await execute({ sql: 'SELECT COUNT(*) AS n FROM canary' }, deps, { requestId: 'warm' });
    t.same(warm.rows, [[3]], 'the role reads its database');
    const server = await serverState();
    const session = await sessionState(probe);
    const files = await filesWritten(tmp, FILES);
    t.same(files, [], 'no attack file before the attacks');

    let n = 0;
    for (const attack of ATTACKS_MYSQL) {
      const ctx: Ctx = { requestId: `attack-${role.privileged ? 'p' : 'r'}-${++n}` };
      const before = events.length;
      const outcome = await execute({ sql: fill(attack.sql) }, deps, ctx).then((reply) => reply, (err: unknown) => err);
      const label = `${attack.name}`;
      if (attack.expect === 'harmless') {
        const refused = outcome instanceof CortadoError && outcome.code === 'SQL_REJECTED';
        t.notOk(refused, `${label}: not refused by the guard${refused ? ` (${outcome.message})` : ''}`);
        if (outcome instanceof Error) t.ok(outcome instanceof CortadoError && ['DB_QUERY_FAILED', 'DB_TIMEOUT'].includes(outcome.code), `${label}: ran, or the database refused it (${outcome.message})`);
      } else {
        const err = outcome instanceof CortadoError ? outcome : undefined;
        t.equal(err?.code, 'SQL_REJECTED', `${label}: SQL_REJECTED`);
        t.equal(err?.details?.kind, attack.expect, `${label}: ${attack.expect}${err ? ` (${String(err.details?.kind)}: ${err.message})` : ''}`);
        t.equal(events.slice(before).filter((e) => e.code === 'SQL_REJECTED').length, 1, `${label}: a query.rejected event`);
      }
      const said = outcome instanceof Error ? `${outcome.message} ${JSON.stringify((outcome as CortadoError).details ?? {})}` : JSON.stringify(outcome);
      t.notMatch(said, /canary-secret/, `${label}: no canary secret in the answer`);

      t.equal(await serverState(), server, `${label}: canary rows, sequence, users, tables and named locks unchanged`);
      t.equal(await sessionState(probe), session, `${label}: no session state left for the next question`);
      t.same((await bystander.query<any[]>('SELECT 1 AS alive'))[0], [{ alive: 1 }], `${label}: the other session is alive`);
    }
    t.same(await filesWritten(tmp, FILES), [], 'no file written by any attack');
    const next = await execute({ sql: 'SELECT COUNT(*) AS n FROM canary' }, deps, { requestId: 'after' });
    t.same(next.rows, [[3]], 'the next question runs normally');
  });
}

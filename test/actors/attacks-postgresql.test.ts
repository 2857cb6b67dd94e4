/**
 * The PostgreSQL attack corpus (test/fixtures/attacks-postgresql.ts) against a real database,
 * through the executor as it runs in production (the actor over a real NATS, its start-up check
 * of the allow-list against the catalog included), twice: as a role that may only SELECT, and
 * as the superuser (database.allow_privileged_role). Every attack is refused by the guard with
 * the expected kind, or is refused by the database, or runs and is harmless. Then the database
 * itself says nothing happened: canary rows and sequences unchanged, no large object, no file
 * written, no advisory lock held, no other session ended, the same settings on the next
 * question of the same pooled connection.
 */
import { Writable } from 'node:stream';
import t from 'tap';
import pg from 'pg';
import { Bus } from '../../runtime/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { SqlExecute } from '../../protocol/subjects.js';
import { runCortado } from '../../cli/run.js';
import { ATTACKS_POSTGRESQL, ATTACK_SCHEMA_POSTGRESQL, AttackClass } from '../fixtures/attacks-postgresql.js';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { testConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { ADMIN_URL, createTestDb } from '../helpers/pg.js';

const nats = await startNats();
const db = await createTestDb('attacks');
const suffix = `${process.pid}_${Math.floor(Math.random() * 1e6)}`;
const readOnlyRole = `cortado_attack_ro_${suffix}`;
const readOnlyPassword = `ro-${suffix}`;
await db.pool.query(GUARD_SCHEMA_SQL);
await db.pool.query(ATTACK_SCHEMA_POSTGRESQL);
await db.pool.query(`
  CREATE ROLE ${readOnlyRole} LOGIN PASSWORD '${readOnlyPassword}';
  GRANT USAGE ON SCHEMA public, sales TO ${readOnlyRole};
  GRANT SELECT ON ALL TABLES IN SCHEMA public, sales TO ${readOnlyRole};`);

// another session that must survive every attack
const bystander = new pg.Client({ connectionString: db.url });
let bystanderError: Error | undefined;
bystander.on('error', (err) => (bystanderError = err));
await bystander.connect();
const bystanderPid = Number((await bystander.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid);

const silent = createLogger({ svc: 'test', level: 'silent' });
const client = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'attacks-client', log: silent });

t.teardown(async () => {
  await client.close();
  await bystander.end().catch(() => undefined);
  await db.drop();
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`DROP ROLE IF EXISTS ${readOnlyRole}`).catch((err: unknown) => console.error(`cleanup: cannot drop ${readOnlyRole}:`, err));
  await admin.end();
  await nats.stop();
});

let n = 0;
const ctx = () => ({ requestId: `attack-${++n}` });

type Outcome = { ok: true } | { ok: false; error: CortadoError };

async function ask(sql: string): Promise<Outcome> {
  return client.request(SqlExecute, { sql }, ctx()).then(
    (): Outcome => ({ ok: true }),
    (e: unknown): Outcome => ({ ok: false, error: e instanceof CortadoError ? e : new CortadoError('INTERNAL', String(e)) }),
  );
}

/** What the next question sees on the (single) pooled connection. */
const SETTINGS_SQL = `SELECT current_setting('default_transaction_read_only') AS default_ro, current_setting('transaction_read_only') AS ro,
  current_setting('statement_timeout') AS timeout, current_setting('TimeZone') AS tz, current_setting('search_path') AS path,
  current_setting('DateStyle') AS style, current_setting('application_name') AS app`;

async function settings(): Promise<unknown[]> {
  const r = await client.request(SqlExecute, { sql: SETTINGS_SQL }, ctx());
  return r.rows[0] ?? [];
}

/** The database's state, read by the superuser's own pool: everything an attack could change. */
async function state(files: string[]): Promise<Record<string, unknown>> {
  const r = await db.pool.query(`
    SELECT (SELECT string_agg(id || ':' || secret, ',' ORDER BY id) FROM canary) AS canary,
           (SELECT string_agg(id || ':' || label, ',' ORDER BY id) FROM boxed) AS boxed,
           (SELECT count(*) FROM orders) AS orders,
           (SELECT last_value || '/' || is_called FROM canary_seq) AS canary_seq,
           (SELECT last_value || '/' || is_called FROM invoice_numbers) AS invoice_seq,
           (SELECT count(*) FROM pg_largeobject_metadata) AS large_objects,
           (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())) AS advisory_locks,
           (SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
             WHERE s.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')) AS relations,
           (SELECT count(*) FROM pg_proc p JOIN pg_namespace s ON s.oid = p.pronamespace WHERE s.nspname = 'public') AS functions,
           (SELECT row(rolsuper, rolcreaterole, rolcreatedb, rolbypassrls, rolconfig)::text FROM pg_roles WHERE rolname = $1) AS role,
           (SELECT count(*) FROM pg_db_role_setting WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())) AS db_settings,
           (SELECT count(*) FROM pg_stat_activity WHERE pid = $2) AS bystander_alive,
           (SELECT count(*) FROM unnest($3::text[]) AS f WHERE pg_stat_file(f, true) IS NOT NULL) AS files_written`,
    [readOnlyRole, bystanderPid, files],
  );
  return r.rows[0] as Record<string, unknown>;
}

const FILES: string[] = [];
const initial = await state([]);
t.same(
  { canary: initial.canary, canary_seq: initial.canary_seq, large_objects: initial.large_objects, advisory_locks: initial.advisory_locks, bystander_alive: initial.bystander_alive },
  { canary: '1:alpha,2:beta,3:gamma', canary_seq: '1/false', large_objects: '0', advisory_locks: '0', bystander_alive: '1' },
  'the database before the attacks',
);

t.test('the corpus', async (t) => {
  t.ok(ATTACKS_POSTGRESQL.length >= 120, `${ATTACKS_POSTGRESQL.length} attacks`);
  t.equal(new Set(ATTACKS_POSTGRESQL.map((a) => a.name)).size, ATTACKS_POSTGRESQL.length, 'every attack has its own name');
  const classes = new Set(ATTACKS_POSTGRESQL.map((a) => a.class));
  for (const c of Object.values(AttackClass)) t.ok(classes.has(c), `class ${c} has attacks`);
});

for (const login of [
  { label: 'a SELECT-only role', user: readOnlyRole, password: readOnlyPassword, privileged: false },
  { label: 'the superuser', user: db.user, password: '', privileged: true },
]) {
  t.test(`every attack, as ${login.label}`, async (t) => {
    const file = `/tmp/cortado-attack-${suffix}-${login.privileged ? 'super' : 'ro'}.out`;
    FILES.push(file);
    const lines: string[] = [];
    const log = createLogger({
      svc: 'attacks',
      level: 'info',
      destination: new Writable({
        write(chunk, _enc, done) {
          lines.push(...String(chunk).split('\n').filter(Boolean));
          done();
        },
      }),
    });
    const config = testConfig({
      natsUrl: nats.url,
      db: { host: db.host, port: db.port, name: db.name, user: login.user },
      extra: {
        // one connection: every attack and the questions after it share the same session
        database: { allow_privileged_role: login.privileged, postgresql: { password: login.password, min_connections: 1, max_connections: 1 } },
        query: { default_limit: 10, max_limit: 20, timeout: 10 },
      },
    });
    const running = await runCortado({ config, roles: { edge: false, actors: ['executor', 'settings'] }, log, name: `attacks-${login.privileged ? 'super' : 'ro'}` });
    t.teardown(() => running.stop(2_000));

    // the start-up check found what shadows allowed names, and said so
    const warning = lines.map((l) => JSON.parse(l) as { msg?: string; dropped?: string[] }).find((l) => l.dropped);
    t.ok(warning, 'a warning lists the names the catalog check dropped');
    t.ok(warning?.dropped?.some((d) => d.startsWith('upper (public.upper')), 'public.upper(text, integer) drops upper');
    t.ok(warning?.dropped?.some((d) => d.startsWith('+ (public.+')), 'public.+(text, text) drops +');

    const before = await settings();
    t.equal(before[0], 'on', 'default_transaction_read_only is on before');
    const startedAt = Date.now();
    for (const attack of ATTACKS_POSTGRESQL) {
      const sql = attack.sql.replaceAll('__FILE__', file).replaceAll('__PID__', String(bystanderPid));
      const outcome = await ask(sql);
      const what = outcome.ok ? 'ran' : `${outcome.error.code}${outcome.error.details?.kind ? ` ${String(outcome.error.details.kind)}` : ''}: ${outcome.error.message}`;
      switch (attack.expect) {
        case 'runs':
          t.ok(outcome.ok, `${attack.name}: runs, harmless (${what})`);
          break;
        case 'database_refuses':
          t.equal(outcome.ok ? 'ran' : outcome.error.code, 'DB_QUERY_FAILED', `${attack.name}: the database refuses it (${what})`);
          break;
        default:
          t.equal(outcome.ok ? 'ran' : outcome.error.details?.kind, attack.expect, `${attack.name}: refused by the guard (${what})`);
      }
    }
    t.ok(Date.now() - startedAt < 30_000, `the corpus took ${Date.now() - startedAt} ms: nothing slept`);

    // the next question on the same connection sees the same session
    t.same(await settings(), before, 'the settings of the next question are unchanged');
    t.same(await state(FILES), initial, 'the database is as it was: canary rows, sequences, large objects, locks, files, roles, the other session');
    t.notOk(bystanderError, 'the other session was not ended');
    t.same((await bystander.query('SELECT 1 AS one')).rows, [{ one: 1 }], 'the other session still answers');
  });
}

/**
 * Least privilege, checked (actors/executor/privilege.ts): the database role Cortado connects
 * as, and each plugins.auth login, may only read. Real PostgreSQL roles and MariaDB accounts
 * with one privilege each show what every engine reports; executors started on them show the
 * refusal (CONFIG_INVALID, exit code 2, every reason, the role named and never a password), the
 * warning database.allow_privileged_role trades it for, require_read_only holding against it,
 * the check moved to the first query when the database is away at start, and logins refused
 * (403 with the reasons; 400 for an empty password, before any connection is tried).
 *
 * The rest of the suite runs with allow_privileged_role: true (test/helpers/config.ts): its
 * servers are reached as superuser / admin. Every config here sets the key itself.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import t from 'tap';
import YAML from 'yaml';
import pg from 'pg';
import { ROOT } from '../../config/load.js';
import { Bus } from '../../runtime/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { SqlExecute } from '../../protocol/subjects.js';
import { runCortado } from '../../cli/run.js';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import type { RolePrivileges } from '../../actors/executor/engines/engine.js';
import { MysqlEngine } from '../../actors/executor/engines/mysql.js';
import { privilegesFromGrants, rolesNotShown } from '../../actors/executor/engines/mysql-grants.js';
import { createPostgresEngine } from '../../actors/executor/engines/postgresql.js';
import { judge } from '../../actors/executor/privilege.js';
import { testConfig, testConfigObject } from '../helpers/config.js';
import { createMysqlUser, createTestMysqlDb } from '../helpers/mysql.js';
import { startNats } from '../helpers/nats.js';
import { ADMIN_URL, createTestDb } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';

const nats = await startNats();
const db = await createTestDb('priv');
const my = await createTestMysqlDb('priv');
const quiet = createLogger({ svc: 'privilege-test', level: 'silent' });
const tag = `${process.pid}_${Date.now().toString(36)}`;

// ---- PostgreSQL roles, one privilege each ---------------------------------------------------

/** role → the statements that give it its privilege (the role exists, LOGIN, with password `pw-<name>`) */
const PG_ROLES: Record<string, string[]> = {
  reader: ['GRANT USAGE ON SCHEMA public TO {r}', 'GRANT SELECT ON ALL TABLES IN SCHEMA public TO {r}'],
  writer: ['GRANT USAGE ON SCHEMA public TO {r}', 'GRANT SELECT, INSERT ON orders TO {r}'],
  files: ['GRANT pg_read_server_files TO {r}'],
  program: ['GRANT pg_execute_server_program TO {r}'],
  settings: ['GRANT pg_read_all_settings TO {r}'],
  monitor: ['GRANT pg_monitor TO {r}'],
  signal: ['ALTER ROLE {r} NOINHERIT', 'GRANT pg_signal_backend TO {r}'],
  nested: [`GRANT priv_group_${tag} TO {r}`],
  creator: ['ALTER ROLE {r} CREATEROLE'],
  dbmaker: ['ALTER ROLE {r} CREATEDB'],
  rls: ['ALTER ROLE {r} BYPASSRLS'],
  replicator: ['ALTER ROLE {r} REPLICATION'],
  owner: ['GRANT USAGE ON SCHEMA public TO {r}', 'ALTER TABLE owned_by_role OWNER TO {r}'],
  schema: ['GRANT USAGE, CREATE ON SCHEMA public TO {r}'],
  sequence: ['GRANT USAGE ON SCHEMA public TO {r}', 'GRANT USAGE ON SEQUENCE order_ids TO {r}'],
};
const pgRole = (name: string): string => `priv_${name}_${tag}`;
const pgPassword = (name: string): string => `pw-${name}-Secret`;

await db.pool.query(`
  CREATE TABLE orders (id int PRIMARY KEY, amount numeric);
  INSERT INTO orders VALUES (1, 10), (2, 32);
  CREATE TABLE owned_by_role (id int);
  CREATE SEQUENCE order_ids;
  CREATE ROLE priv_group_${tag} NOLOGIN;
  GRANT pg_read_server_files TO priv_group_${tag};
`);
for (const [name, grants] of Object.entries(PG_ROLES)) {
  await db.pool.query(`CREATE ROLE ${pgRole(name)} LOGIN PASSWORD '${pgPassword(name)}'`);
  for (const g of grants) await db.pool.query(g.replace(/\{r\}/g, pgRole(name)));
}

// ---- MariaDB accounts -------------------------------------------------------------------------

const roleW = `privrw_${tag}`;
const roleHidden = `privrh_${tag}`;
await my.pool.query(`CREATE TABLE orders (id INT PRIMARY KEY, amount DECIMAL(10,2)); INSERT INTO orders VALUES (1, 10), (2, 32);
  CREATE ROLE ${roleW}; GRANT INSERT ON \`${my.name}\`.* TO ${roleW}; CREATE ROLE ${roleHidden}; GRANT FILE ON *.* TO ${roleHidden};`);
const myUsers = {
  reader: await createMysqlUser(my, [`GRANT SELECT, SHOW VIEW ON \`${my.name}\`.* TO {user}`]),
  process: await createMysqlUser(my, [`GRANT SELECT ON \`${my.name}\`.* TO {user}`, 'GRANT PROCESS ON *.* TO {user}']),
  mysqlSchema: await createMysqlUser(my, [`GRANT SELECT ON \`${my.name}\`.* TO {user}`, 'GRANT SELECT ON mysql.user TO {user}']),
  everything: await createMysqlUser(my, ['GRANT SELECT ON *.* TO {user}']),
  file: await createMysqlUser(my, [`GRANT SELECT ON \`${my.name}\`.* TO {user}`, 'GRANT FILE ON *.* TO {user}']),
  defaultRole: await createMysqlUser(my, [`GRANT SELECT ON \`${my.name}\`.* TO {user}`, `GRANT ${roleW} TO {user}`, `SET DEFAULT ROLE ${roleW} FOR {user}`]),
  hiddenRole: await createMysqlUser(my, [`GRANT SELECT ON \`${my.name}\`.* TO {user}`, `GRANT ${roleHidden} TO {user}`]),
};

t.teardown(async () => {
  for (const u of Object.values(myUsers)) await u.drop();
  await my.pool.query(`DROP ROLE IF EXISTS ${roleW}; DROP ROLE IF EXISTS ${roleHidden}`).catch(() => undefined);
  await my.drop();
  await db.drop();
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  for (const name of Object.keys(PG_ROLES)) await admin.query(`DROP ROLE IF EXISTS ${pgRole(name)}`).catch(() => undefined);
  await admin.query(`DROP ROLE IF EXISTS priv_group_${tag}`).catch(() => undefined);
  await admin.end();
  await nats.stop();
});

async function pgPrivileges(user: string, password: string): Promise<RolePrivileges> {
  const engine = await createPostgresEngine({
    host: db.host, port: db.port, database: db.name, user, password, schema: 'public', minConnections: 0, maxConnections: 1, ssl: false, statementTimeoutMs: 10_000, log: quiet,
  });
  try {
    return await engine.privileges();
  } finally {
    await engine.close();
  }
}

async function mysqlPrivileges(user: string, password: string): Promise<RolePrivileges> {
  const engine = new MysqlEngine({ host: my.host, port: my.port, database: my.name, user, password, autocommit: true, maxConnections: 1, statementTimeoutMs: 10_000, log: quiet });
  try {
    return await engine.privileges();
  } finally {
    await engine.close();
  }
}

// ---- what each engine reports ----------------------------------------------------------------

t.test('PostgreSQL: a role that may only SELECT has nothing to report; each privilege beyond it is named', async (t) => {
  const reader = await pgPrivileges(pgRole('reader'), pgPassword('reader'));
  t.same(reader, { role: pgRole('reader'), writes: [], powers: [] }, 'USAGE on the schema and SELECT on its tables: nothing');

  const expect: Record<string, { writes?: RegExp; powers?: RegExp }> = {
    writer: { writes: /^INSERT\/UPDATE\/DELETE\/TRUNCATE on public\.orders$/ },
    files: { powers: /member of pg_read_server_files \(may read any file the server can\)/ },
    program: { writes: /member of pg_execute_server_program/ },
    settings: { powers: /member of pg_read_all_settings/ },
    monitor: { powers: /member of pg_read_all_stats \(may read every session's activity, the query text of others too\)/ },
    signal: { powers: /member of pg_signal_backend/ },
    nested: { powers: /member of pg_read_server_files/ },
    creator: { writes: /^CREATEROLE/ },
    dbmaker: { writes: /^CREATEDB/ },
    rls: { powers: /^BYPASSRLS/ },
    replicator: { powers: /^REPLICATION/ },
    owner: { writes: /^owns public\.owned_by_role \(may ALTER or DROP them\)$/ },
    schema: { writes: /^CREATE on schema public$/ },
    sequence: { writes: /sequence public\.order_ids \(nextval\/setval change them\)/ },
  };
  const reports = await Promise.all(Object.keys(expect).map((name) => pgPrivileges(pgRole(name), pgPassword(name))));
  Object.entries(expect).forEach(([name, want], i) => {
    const p = reports[i]!;
    t.equal(p.role, pgRole(name), `${name}: the role is named`);
    if (want.writes) t.ok(p.writes.some((w) => want.writes!.test(w)), `${name}: ${JSON.stringify(p)}`);
    else t.same(p.writes, [], `${name}: writes nothing`);
    if (want.powers) t.ok(p.powers.some((w) => want.powers!.test(w)), `${name}: ${JSON.stringify(p)}`);
    else t.same(p.powers, [], `${name}: no powers`);
  });
  t.equal(reports[Object.keys(expect).indexOf('monitor')]!.powers.length, 4, 'pg_monitor brings pg_read_all_settings, pg_read_all_stats and pg_stat_scan_tables with it');

  const superuser = await pgPrivileges(db.user, new URL(ADMIN_URL).password);
  t.match(superuser.writes, [/^superuser/], 'the suite\'s own account is a superuser: that alone is said');
});

t.test('MariaDB: SELECT and SHOW VIEW on its database is reading; every other grant is named', async (t) => {
  t.same((await mysqlPrivileges(myUsers.reader.user, myUsers.reader.password)).writes, []);
  t.same((await mysqlPrivileges(myUsers.reader.user, myUsers.reader.password)).powers, []);
  const cases: Array<[keyof typeof myUsers, 'writes' | 'powers', RegExp]> = [
    ['process', 'powers', /^PROCESS on \*\.\* \(sees every session's statements\)$/],
    ['mysqlSchema', 'powers', /^SELECT on `mysql`\.`user` \(reads the server's own schema/],
    ['everything', 'powers', /^SELECT on \*\.\* \(reads every database, the mysql schema's accounts and password hashes too\)$/],
    ['file', 'writes', /^FILE on \*\.\* \(reads and writes files on the database server\)$/],
    ['defaultRole', 'writes', new RegExp(`^INSERT on \`${my.name}\`\\.\\*$`)],
    ['hiddenRole', 'powers', new RegExp(`^may enable role \`${roleHidden}\`, whose privileges SHOW GRANTS does not show`)],
  ];
  for (const [who, kind, want] of cases) {
    const p = await mysqlPrivileges(myUsers[who].user, myUsers[who].password);
    t.match(p.role, new RegExp(`^${myUsers[who].user}@`), `${who}: the account is named as the server names it`);
    t.ok(p[kind].some((r) => want.test(r)), `${who}: ${JSON.stringify(p)}`);
    t.notMatch(JSON.stringify(p), /PASSWORD|\*[0-9A-F]{40}/, `${who}: no password hash from SHOW GRANTS`);
  }
  const admin = await mysqlPrivileges(my.user, my.password);
  t.ok(admin.writes.some((w) => /^ALL PRIVILEGES/.test(w)), 'the suite\'s admin account may do anything');
});

t.test('SHOW GRANTS lines, as MySQL 8 and MariaDB write them', async (t) => {
  const p = (lines: string[]) => privilegesFromGrants(lines, 'u@%');
  t.same(p(['GRANT USAGE ON *.* TO `u`@`%`', 'GRANT SELECT, SHOW VIEW ON `shop`.* TO `u`@`%`', 'GRANT SELECT (`a`, `b`) ON `shop`.`t` TO `u`@`%`']), { role: 'u@%', writes: [], powers: [] });
  t.same(p(['GRANT SELECT ON `other_db`.* TO `u`@`%`']).powers, [], 'reading another user database is the grants\' business (the catalog lock keeps scopes to theirs)');
  t.same(p(['GRANT UPDATE (`status`) ON `shop`.`orders` TO `u`@`%`']).writes, ['UPDATE on `shop`.`orders`']);
  t.same(p(['GRANT EXECUTE ON PROCEDURE `shop`.`p` TO `u`@`%`']).writes, ['EXECUTE on `shop`.`p` (may call routines, which may write with their definer\'s rights)']);
  t.same(p(['GRANT CREATE TEMPORARY TABLES, LOCK TABLES ON `shop`.* TO `u`@`%`']).writes, ['CREATE TEMPORARY TABLES, LOCK TABLES on `shop`.*']);
  t.same(p(['GRANT SELECT ON `shop`.* TO `u`@`%` WITH GRANT OPTION']).writes, ['GRANT OPTION on `shop`.* (may pass its privileges on)']);
  t.same(p(['GRANT RELOAD, SHUTDOWN ON *.* TO `u`@`%`']).powers, ['RELOAD, SHUTDOWN on *.* (may flush logs, caches and the privilege tables; may stop the server)']);
  t.same(p(['GRANT SELECT ON `performance_schema`.* TO `u`@`%`']).powers.length, 1, 'performance_schema: other sessions\' statements');
  t.same(p(['GRANT SELECT ON `my%`.* TO `u`@`%`']).powers.length, 1, 'a pattern that covers the mysql schema');
  t.same(p(['GRANT SELECT ON `my\\_db`.* TO `u`@`%`']).powers, [], 'an escaped pattern that does not');
  t.same(p(['GRANT SYSTEM_VARIABLES_ADMIN,BACKUP_ADMIN ON *.* TO `u`@`%`']).writes, ['SYSTEM_VARIABLES_ADMIN on *.*'], 'MySQL 8 dynamic privileges');
  t.same(p(['GRANT SYSTEM_VARIABLES_ADMIN,BACKUP_ADMIN ON *.* TO `u`@`%`']).powers, ['BACKUP_ADMIN on *.*'], 'a privilege this list does not know is a power');
  t.same(p(["GRANT PROXY ON ''@'%' TO 'u'@'%'"]).powers, ["PROXY on ''@'%' (may act as another account)"]);
  t.same(p(['GRANT `r1`@`%` TO `u`@`%`']).powers, ['may enable role `r1`@`%`, whose privileges SHOW GRANTS does not show (make it the account\'s default role, or revoke it)']);
  t.same(privilegesFromGrants(['GRANT `r1`@`%` TO `u`@`%`'], 'u@%', ['`r1`@`%`']).powers, [], 'a role MySQL 8 expanded with USING is known');
  t.same(rolesNotShown(['GRANT `r` TO `u`@`%`', 'GRANT USAGE ON *.* TO `r`']), [], 'MariaDB shows the current role\'s grants');
  t.same(p(['GRANT `r` TO `u`@`%` WITH ADMIN OPTION', 'GRANT USAGE ON *.* TO `r`']).writes, ['ADMIN OPTION on role `r` (may grant it to others)']);
  t.same(p(["GRANT USAGE ON *.* TO `u`@`%` IDENTIFIED BY PASSWORD '*D821809F681A40A6E379B50D0463EFAE20BDD122'"]), { role: 'u@%', writes: [], powers: [] }, 'a password hash is no privilege');
  t.same(p(['GRANT SOMETHING NEW']).powers, ['a grant Cortado cannot read (line 1 of SHOW GRANTS)'], 'a line it cannot read: fail closed, without repeating it');
  t.same(p(['SET DEFAULT ROLE `r` FOR `u`@`%`', 'REVOKE INSERT ON `mysql`.* FROM `u`@`%`']), { role: 'u@%', writes: [], powers: [] });
});

t.test('the two keys: allow_privileged_role trades a refusal for a warning; require_read_only still refuses writes', async (t) => {
  const p: RolePrivileges = { role: 'r', writes: ['INSERT on t'], powers: ['member of pg_read_all_settings'] };
  const none: RolePrivileges = { role: 'r', writes: [], powers: [] };
  const v = (allow: boolean, strict: boolean, role = p) => judge(role, { allow_privileged_role: allow, require_read_only: strict });
  t.same(v(false, false), { refused: ['INSERT on t', 'member of pg_read_all_settings'], warned: [], readOnlyRequired: false }, 'the default: every reason refuses');
  t.same(v(true, false), { refused: [], warned: ['INSERT on t', 'member of pg_read_all_settings'], readOnlyRequired: false }, 'allowed: every reason warns');
  t.same(v(true, true), { refused: ['INSERT on t'], warned: ['member of pg_read_all_settings'], readOnlyRequired: true }, 'require_read_only: writes refused even when allowed');
  t.same(v(false, true), { refused: ['INSERT on t', 'member of pg_read_all_settings'], warned: [], readOnlyRequired: true });
  t.same(v(false, true, none), { refused: [], warned: [], readOnlyRequired: false }, 'a reader passes whatever the keys');
});

// ---- executors started on these roles ---------------------------------------------------------

let prefixes = 0;

function pgConfig(user: string, password: string, database: Record<string, unknown>, extra: Record<string, unknown> = {}, llmUrl?: string) {
  return testConfig({
    natsUrl: nats.url,
    ...(llmUrl ? { llmUrl } : {}),
    db: { host: db.host, port: db.port, name: db.name, user },
    extra: { bus: { prefix: `priv${++prefixes}` }, ...extra, database: { ...database, postgresql: { password, min_connections: 0 } } },
  });
}

/** Start an executor; its warnings and the start error, if any. */
async function startExecutor(config: ReturnType<typeof testConfig>): Promise<{ error?: CortadoError; warnings: string[]; lines: any[]; stop: () => Promise<void>; bus?: Bus }> {
  const lines: any[] = [];
  const sink = new Writable({ write(chunk: Buffer, _e, cb) { for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l)); cb(); } });
  const log = createLogger({ svc: 'privilege-exec', level: 'info', destination: sink });
  try {
    const running = await runCortado({ config, roles: { edge: false, actors: ['executor', 'settings'] }, log, name: `priv-${prefixes}` });
    const bus = await Bus.connect({ url: nats.url, prefix: config.bus.prefix, name: 'priv-client', log: quiet });
    return {
      warnings: lines.filter((l) => l.level === 'warn').map((l) => l.msg as string),
      lines,
      bus,
      stop: async () => {
        await bus.close();
        await running.stop(2_000);
      },
    };
  } catch (err) {
    return { error: err as CortadoError, warnings: lines.filter((l) => l.level === 'warn').map((l) => l.msg as string), lines, stop: async () => undefined };
  }
}

const adminPassword = new URL(ADMIN_URL).password;

t.test('PostgreSQL at start: a superuser is refused with every reason and what to do', async (t) => {
  const r = await startExecutor(pgConfig(db.user, adminPassword, { allow_privileged_role: false }));
  t.teardown(r.stop);
  t.equal(r.error?.code, 'CONFIG_INVALID');
  t.match(r.error?.message, new RegExp(`^the database role "${db.user}" has more privileges than reading needs, and database\\.allow_privileged_role is false: superuser \\(may do anything`));
  t.match(r.error?.message, /Connect with a role that may only read \(on PostgreSQL: CREATE ROLE reader LOGIN/);
  t.match(r.error?.message, /or set database\.allow_privileged_role to true to start anyway \(with a warning\); see docs\/security\.md$/);
});

t.test('PostgreSQL at start: the reasons of a non-superuser, the role named, its password never', async (t) => {
  const r = await startExecutor(pgConfig(pgRole('files'), pgPassword('files'), { allow_privileged_role: false }));
  t.teardown(r.stop);
  t.equal(r.error?.code, 'CONFIG_INVALID');
  t.match(r.error?.message, `the database role "${pgRole('files')}" has more privileges than reading needs`);
  t.match(r.error?.message, 'member of pg_read_server_files (may read any file the server can)');
  t.notMatch(r.error?.message, pgPassword('files'));
  t.notMatch(JSON.stringify(r.lines), pgPassword('files'), 'nor in the log');
});

t.test('PostgreSQL at start: a role that may only SELECT starts and answers', async (t) => {
  const r = await startExecutor(pgConfig(pgRole('reader'), pgPassword('reader'), { allow_privileged_role: false, require_read_only: true }));
  t.teardown(r.stop);
  t.equal(r.error, undefined, r.error?.message ?? 'started');
  t.same(r.warnings, []);
  const rows = await r.bus!.request(SqlExecute, { sql: 'SELECT sum(amount) AS total FROM orders' }, { requestId: 'priv-reader' });
  t.same(rows.rows, [[42]]);
});

t.test('PostgreSQL at start: allow_privileged_role starts a writer with a loud warning naming each reason', async (t) => {
  const r = await startExecutor(pgConfig(pgRole('writer'), pgPassword('writer'), { allow_privileged_role: true }));
  t.teardown(r.stop);
  t.equal(r.error, undefined, r.error?.message ?? 'started');
  const line = r.lines.find((l) => l.level === 'warn' && /^PRIVILEGED DATABASE ROLE/.test(l.msg));
  t.ok(line, JSON.stringify(r.warnings));
  t.match(line?.msg, `"${pgRole('writer')}" has more privileges than reading needs, accepted because database.allow_privileged_role is true: INSERT/UPDATE/DELETE/TRUNCATE on public.orders`);
  t.same(line?.reasons, ['INSERT/UPDATE/DELETE/TRUNCATE on public.orders']);
  t.equal(line?.role, pgRole('writer'));
});

t.test('PostgreSQL at start: require_read_only refuses a writer even with allow_privileged_role; powers alone pass it with a warning', async (t) => {
  const w = await startExecutor(pgConfig(pgRole('writer'), pgPassword('writer'), { allow_privileged_role: true, require_read_only: true }));
  t.teardown(w.stop);
  t.equal(w.error?.code, 'CONFIG_INVALID');
  t.match(w.error?.message, `database.require_read_only is true, but the database role "${pgRole('writer')}" can write: INSERT/UPDATE/DELETE/TRUNCATE on public.orders`);
  t.match(w.error?.message, /or set database\.require_read_only to false \(database\.allow_privileged_role does not override it\)/);

  const s = await startExecutor(pgConfig(pgRole('settings'), pgPassword('settings'), { allow_privileged_role: true, require_read_only: true }));
  t.teardown(s.stop);
  t.equal(s.error, undefined, s.error?.message ?? 'started');
  t.ok(s.warnings.some((m) => /member of pg_read_all_settings/.test(m)), JSON.stringify(s.warnings));

  const both = await startExecutor(pgConfig(pgRole('settings'), pgPassword('settings'), { allow_privileged_role: false, require_read_only: true }));
  t.teardown(both.stop);
  t.equal(both.error?.code, 'CONFIG_INVALID', 'powers refused by default');
  t.match(both.error?.message, /member of pg_read_all_settings/);
});

/** A TCP port that forwards to PostgreSQL once open() is called (nothing listens before). */
async function laterProxy(): Promise<{ port: number; open(): Promise<void>; connections: number; close(): Promise<void> }> {
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((r) => probe.close(r));
  const sockets = new Set<net.Socket>();
  const state = { connections: 0 };
  const server = net.createServer((client) => {
    state.connections++;
    const upstream = net.connect(db.port, db.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  return {
    port,
    get connections() {
      return state.connections;
    },
    open: () => new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r())),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

t.test('PostgreSQL away at start: the check runs before the first query, and refuses it', async (t) => {
  const proxy = await laterProxy();
  t.teardown(() => proxy.close());
  const config = testConfig({
    natsUrl: nats.url,
    extra: {
      bus: { prefix: `priv${++prefixes}` },
      database: { allow_privileged_role: false, postgresql: { host: '127.0.0.1', port: proxy.port, database: db.name, user: db.user, password: adminPassword, min_connections: 0, max_connections: 2 } },
    },
  });
  const r = await startExecutor(config);
  t.teardown(r.stop);
  t.equal(r.error, undefined, 'the start does not wait for the database');
  t.ok(r.warnings.includes('cannot check what the database role may do yet: checking before the first query'), JSON.stringify(r.warnings));
  await proxy.open();
  const err = await r.bus!.request(SqlExecute, { sql: 'SELECT 1 AS one' }, { requestId: 'priv-deferred' }).then(() => undefined, (e: unknown) => e as CortadoError);
  t.equal(err?.code, 'FORBIDDEN');
  t.match(err?.message, /has more privileges than reading needs, and database\.allow_privileged_role is false: superuser/);
});

t.test('MariaDB at start: the admin account is refused, an account that may only SELECT starts', async (t) => {
  const mysqlConfig = (section: Record<string, unknown>) => testConfig({
    natsUrl: nats.url,
    extra: { bus: { prefix: `priv${++prefixes}` }, database: { provider: 'mysql', allow_privileged_role: false, mysql: section } },
  });
  const admin = await startExecutor(mysqlConfig(my.section()));
  t.teardown(admin.stop);
  t.equal(admin.error?.code, 'CONFIG_INVALID');
  t.match(admin.error?.message, new RegExp(`^the database role "${my.user}@[^"]+" has more privileges than reading needs, and database\\.allow_privileged_role is false: `));
  t.match(admin.error?.message, /ALL PRIVILEGES/);
  t.match(admin.error?.message, /on MySQL\/MariaDB: CREATE USER 'reader'@'%'/);

  const reader = await startExecutor(mysqlConfig(my.section({ user: myUsers.reader.user, password: myUsers.reader.password })));
  t.teardown(reader.stop);
  t.equal(reader.error, undefined, reader.error?.message ?? 'started');
  const rows = await reader.bus!.request(SqlExecute, { sql: 'SELECT SUM(amount) AS total FROM orders' }, { requestId: 'priv-my-reader' });
  t.same(rows.rows, [[42]]);
});

t.test('the cortado command exits with code 2 and says why', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'cortado-priv-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'config.yaml');
  const obj = testConfigObject({ natsUrl: nats.url, db: { host: db.host, port: db.port, name: db.name, user: pgRole('files') } });
  (obj.database as Record<string, any>).allow_privileged_role = false;
  (obj.database as Record<string, any>).postgresql.password = pgPassword('files');
  (obj.bus as Record<string, any>).prefix = `priv${++prefixes}`;
  writeFileSync(file, YAML.stringify(obj));
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bin/cortado.js'), '--config', file, '--role', 'actors:executor'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  t.equal(r.status, 2, r.stderr);
  t.match(r.stderr, `cortado: the database role "${pgRole('files')}" has more privileges than reading needs`);
  t.notMatch(r.stderr + r.stdout, pgPassword('files'));
});

// ---- plugins.auth logins ----------------------------------------------------------------------

t.test('logins: a privileged role is 403 with the reasons, an empty password 400 before any connection, a reader signs in', async (t) => {
  const proxy = await laterProxy();
  await proxy.open();
  t.teardown(() => proxy.close());
  const auth = { enabled: true, db_host: '127.0.0.1', db_port: proxy.port };
  const llm = await startFakeLlm();
  llm.fallback(() => ({ text: sqlAnswer('SELECT 1 AS one') }));
  t.teardown(() => llm.close());
  // the server's own connection is a reader (allow_privileged_role false holds for it too); logins go through the counting proxy
  const strict = await startStack(pgConfig(pgRole('reader'), pgPassword('reader'), { allow_privileged_role: false }, {
    config_db: { encryption_key: generateFernetKey() }, plugins: { auth }, admin: { enabled: true, username: 'admin', password: 'correct horse' },
  }, llm.url));
  t.teardown(() => strict.stop());
  const login = (username: string, password: string) => call(`${strict.url}/auth/login`, { body: { username, password } });

  const empty = await login(pgRole('reader'), '');
  t.equal(empty.status, 400, empty.text);
  t.equal(empty.body.error.code, 'VALIDATION_FAILED');
  t.match(empty.body.error.message, /password: required/);
  const rootless = await login('postgres', '');
  t.equal(rootless.status, 400, 'a password-less superuser login too');
  t.equal(proxy.connections, 0, 'no connection was tried');

  const files = await login(pgRole('files'), pgPassword('files'));
  t.equal(files.status, 403, files.text);
  t.equal(files.body.error.code, 'FORBIDDEN');
  t.match(files.body.error.message, `the database role "${pgRole('files')}" has more privileges than reading needs, and this server does not accept such roles (database.allow_privileged_role is false): member of pg_read_server_files`);
  t.notMatch(files.text, pgPassword('files'));
  t.ok(proxy.connections > 0, 'the database was asked');
  const creator = await login(pgRole('creator'), pgPassword('creator'));
  t.equal(creator.status, 403);
  t.match(creator.body.error.message, /CREATEROLE/);

  const reader = await login(pgRole('reader'), pgPassword('reader'));
  t.equal(reader.status, 200, reader.text);

  // an API token an administrator gave a db_config had no login: its connections are checked when they open
  const admin = await call(`${strict.url}/admin/login`, { body: { username: 'admin', password: 'correct horse' } });
  const cookie = (admin.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const issued = await call(`${strict.url}/admin/tokens`, {
    body: { label: 'privileged', db_config: { user: pgRole('files'), password: pgPassword('files') } },
    headers: { cookie, 'x-csrf-token': admin.body?.csrf_token as string },
  });
  t.equal(issued.status, 201, issued.text);
  const asked = await call(`${strict.url}/query`, { body: { question: 'one?' }, headers: { authorization: `Bearer ${issued.body.token as string}` } });
  t.equal(asked.status, 403, asked.text);
  t.match(asked.body.error?.message, /member of pg_read_server_files/);

  // allow_privileged_role: the same login signs in (the warning is the executor's log)
  const lenient = await startStack(pgConfig(pgRole('reader'), pgPassword('reader'), { allow_privileged_role: true }, { config_db: { encryption_key: generateFernetKey() }, plugins: { auth } }));
  t.teardown(() => lenient.stop());
  const allowed = await call(`${lenient.url}/auth/login`, { body: { username: pgRole('files'), password: pgPassword('files') } });
  t.equal(allowed.status, 200, allowed.text);
  // require_read_only still refuses a login that can write
  const readOnly = await startStack(pgConfig(pgRole('reader'), pgPassword('reader'), { allow_privileged_role: true, require_read_only: true }, { config_db: { encryption_key: generateFernetKey() }, plugins: { auth } }));
  t.teardown(() => readOnly.stop());
  const writer = await call(`${readOnly.url}/auth/login`, { body: { username: pgRole('writer'), password: pgPassword('writer') } });
  t.equal(writer.status, 403, writer.text);
  t.match(writer.body.error.message, `this server accepts only database roles that cannot write (database.require_read_only), and "${pgRole('writer')}" can: INSERT/UPDATE/DELETE/TRUNCATE on public.orders`);
});

/**
 * A throwaway PostgreSQL database per test file, on the server the test run uses:
 * DATABASE_URL (scripts/test.sh starts a private cluster and sets it), else the
 * machine's server on 127.0.0.1:5432.
 */
import { execFile } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import pg from 'pg';

export const ADMIN_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDb {
  url: string;
  name: string;
  host: string;
  port: number;
  user: string;
  /** a small pool for the test's own setup and assertions */
  pool: pg.Pool;
  drop(): Promise<void>;
}

/** Drop roles a test made, as the admin (a role that is gone or still in use is left: cleanup never fails a test). */
export async function dropRoles(...roles: string[]): Promise<void> {
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    for (const r of roles) await admin.query(`DROP ROLE IF EXISTS ${r}`).catch(() => undefined);
  } finally {
    await admin.end();
  }
}

export async function createTestDb(prefix = 't'): Promise<TestDb> {
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  const name = `${prefix}_${process.pid}_${Date.now().toString(36)}_${Math.floor(Math.random() * 1e6)}`.toLowerCase();
  await admin.query(`CREATE DATABASE ${name} TEMPLATE template0`);
  await admin.end();
  const u = new URL(ADMIN_URL);
  u.pathname = `/${name}`;
  const pool = new pg.Pool({ connectionString: u.toString(), max: 4 });
  // an idle connection ended by the server (the FORCE drop below, a restart) is not a test failure:
  // without a listener, pg-pool's 'error' event would crash the test process
  pool.on('error', () => undefined);
  return {
    url: u.toString(),
    name,
    host: u.hostname,
    port: Number(u.port || 5432),
    user: decodeURIComponent(u.username || 'postgres'),
    pool,
    // cleanup of a throwaway database: a failure is said on stderr, never fails the test file
    // (its results are in by then; the cluster is private to the run and removed after it)
    async drop() {
      await pool.end().catch(() => undefined);
      const a = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 10_000 });
      try {
        await a.connect();
        await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } catch (err) {
        console.error(`cleanup: cannot drop the test database ${name}:`, err);
      } finally {
        await a.end().catch(() => undefined);
      }
    },
  };
}

/**
 * How many backends of this test's database still run a statement containing `fragment`,
 * looked at until none does or `withinMs` passes (a loaded machine takes a moment to reap a
 * cancelled backend; other test files share the cluster, so only this database counts).
 */
export async function backendsStillRunning(db: TestDb, fragment: string, withinMs = 3_000): Promise<number> {
  const until = Date.now() + withinMs;
  for (;;) {
    const r = await db.pool.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE $1 AND state = 'active' AND pid <> pg_backend_pid()`,
      [`%${fragment}%`],
    );
    const n = (r.rows[0] as { n: number }).n;
    if (n === 0 || Date.now() >= until) return n;
    await new Promise((res) => setTimeout(res, 100));
  }
}

/**
 * A PostgreSQL server of the test's own (initdb in a temporary directory, trust auth, no fsync,
 * 127.0.0.1 on a free port), for tests that stop and start the database under Cortado. Run as
 * the `postgres` OS user when the test runs as root (initdb refuses root).
 */
export interface PrivatePg {
  host: string;
  port: number;
  user: string;
  url: string;
  /** a fast shutdown: open connections are ended, as when a server goes down */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** stop and remove the data directory */
  remove(): Promise<void>;
}

export async function startPrivatePg(): Promise<PrivatePg> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((r) => srv.close(r));
  const dir = mkdtempSync(path.join(tmpdir(), 'cortado-pg-'));
  const data = path.join(dir, 'data');
  const asRoot = userInfo().uid === 0;
  if (asRoot) {
    const { uid, gid } = await new Promise<{ uid: number; gid: number }>((resolve, reject) => execFile('id', ['-u', 'postgres'], (e1, u) => e1 ? reject(e1) : execFile('id', ['-g', 'postgres'], (e2, g) => e2 ? reject(e2) : resolve({ uid: Number(u), gid: Number(g) }))));
    chownSync(dir, uid, gid);
  }
  const run = (cmd: string, args: string[]) => new Promise<void>((resolve, reject) => {
    const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] as const : [cmd, args] as const;
    execFile(file, argv, { timeout: 60_000 }, (err, _out, stderr) => (err ? reject(new Error(`${cmd} failed: ${stderr || err.message}`)) : resolve()));
  });
  await run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync']);
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=60`;
  const server: PrivatePg = {
    host: '127.0.0.1', port, user: 'postgres', url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start: () => run('pg_ctl', ['-D', data, '-l', path.join(dir, 'log'), '-o', opts, '-w', '-t', '30', 'start']),
    stop: () => run('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '30', 'stop']),
    async remove() {
      await server.stop().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}

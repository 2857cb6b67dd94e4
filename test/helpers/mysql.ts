/**
 * A throwaway MySQL/MariaDB database per test file, on the server the test run uses:
 * MYSQL_URL (scripts/services-up.sh starts a private MariaDB and sets it), else the machine's
 * server on 127.0.0.1:3306 as root without a password.
 */
import mysql from 'mysql2/promise';

export const MYSQL_ADMIN_URL = process.env.MYSQL_URL || 'mysql://root@127.0.0.1:3306/';

export interface TestMysqlDb {
  name: string;
  host: string;
  port: number;
  user: string;
  password: string;
  /** a small pool on the database for the test's own setup and assertions (multiple statements allowed) */
  pool: mysql.Pool;
  /** a database.mysql config section for this database, as the admin account */
  section(extra?: Record<string, unknown>): Record<string, unknown>;
  drop(): Promise<void>;
}

function adminOptions(): { host: string; port: number; user: string; password: string } {
  const u = new URL(MYSQL_ADMIN_URL);
  return {
    host: u.hostname,
    port: Number(u.port || 3306),
    user: decodeURIComponent(u.username || 'root'),
    password: decodeURIComponent(u.password || ''),
  };
}

export async function createTestMysqlDb(prefix = 't'): Promise<TestMysqlDb> {
  const admin = adminOptions();
  const name = `${prefix}_${process.pid}_${Date.now().toString(36)}_${Math.floor(Math.random() * 1e6)}`.toLowerCase();
  const conn = await mysql.createConnection(admin);
  await conn.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci`);
  await conn.end();
  const pool = mysql.createPool({ ...admin, database: name, connectionLimit: 4, multipleStatements: true, dateStrings: true, supportBigNumbers: true, bigNumberStrings: true });
  return {
    name,
    ...admin,
    pool,
    section(extra = {}) {
      return { host: admin.host, port: admin.port, user: admin.user, password: admin.password, database: name, max_connections: 4, ...extra };
    },
    async drop() {
      await pool.end().catch(() => undefined);
      const c = await mysql.createConnection(admin);
      await c.query(`DROP DATABASE IF EXISTS \`${name}\``).catch(() => undefined);
      await c.end();
    },
  };
}

/** A user of the test server (dropped by the returned function), e.g. one that may only SELECT. */
export async function createMysqlUser(db: TestMysqlDb, grants: string[]): Promise<{ user: string; password: string; drop(): Promise<void> }> {
  const user = `u${process.pid}_${Math.floor(Math.random() * 1e9).toString(36)}`;
  const password = `pw-${Math.random().toString(36).slice(2)}`;
  const host = db.host === 'localhost' ? 'localhost' : '%';
  await db.pool.query(`CREATE USER '${user}'@'${host}' IDENTIFIED BY '${password}'`);
  // some servers run with --skip-name-resolve, where only the numeric host matches TCP clients
  if (db.host === '127.0.0.1') await db.pool.query(`CREATE USER '${user}'@'127.0.0.1' IDENTIFIED BY '${password}'`);
  for (const g of grants) {
    await db.pool.query(g.replace(/\{user\}/g, `'${user}'@'${host}'`));
    if (db.host === '127.0.0.1') await db.pool.query(g.replace(/\{user\}/g, `'${user}'@'127.0.0.1'`));
  }
  return {
    user,
    password,
    async drop() {
      await db.pool.query(`DROP USER IF EXISTS '${user}'@'${host}'`).catch(() => undefined);
      if (db.host === '127.0.0.1') await db.pool.query(`DROP USER IF EXISTS '${user}'@'127.0.0.1'`).catch(() => undefined);
    },
  };
}

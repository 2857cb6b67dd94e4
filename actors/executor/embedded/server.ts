/**
 * The embedded demo database: a persistent PGlite (PostgreSQL 18 compiled to WASM, in this
 * process) holding the coffee-chain demo data, served to `pg` clients on a unix socket by
 * pglite-socket, which multiplexes up to maxConnections clients onto PGlite's single session.
 *
 * Layout of `dir`:
 *   pgdata/          the cluster (PGlite's data directory)
 *   embedded.pid     the lock: the pid of the process serving it
 *   .s.PGSQL.5432    the socket (`host` = dir, `port` = 5432, as `pg` addresses unix sockets);
 *                    in a fresh directory under os.tmpdir() when that path would be too long
 *
 * The data is generated on the first start, and again only when the version marker
 * (cortado.demo_meta) is missing or older than DEMO_DATA_VERSION; later starts take the
 * PGlite boot time only.
 *
 * Read-only. PGlite has one session, logged in as its superuser, and it ignores the settings a
 * client sends at start-up: the executor's `-c default_transaction_read_only=on`,
 * `statement_timeout`, `TimeZone` and `search_path` do not reach it. So once the data is in,
 * this module sets the shared session itself: TimeZone UTC, default_transaction_read_only on,
 * and SET ROLE cortado_reader (USAGE on schema public, SELECT on its tables, nothing else).
 * Both are session settings that a statement could undo (RESET ROLE, SET ...); the executor's
 * SQL guard refuses SET/RESET, set_config() and every non-read statement, so the guard and
 * these settings together keep the demo data read-only.
 *
 * Limits of the multiplexer to know: one query runs at a time (the others queue), an open
 * transaction holds the queue for its client until it ends, cancel requests are ignored, and
 * statement_timeout does not fire in PGlite: a slow query delays every client.
 *
 * This module runs inside a worker thread (worker.ts; pglite.ts starts it): a query blocks
 * the thread PGlite runs on, and that must not be the thread of the bus and the executor.
 */
import { lstatSync, mkdtempSync, rmSync, unlinkSync } from 'node:fs';
import { mkdir, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { CortadoError } from '../../../protocol/errors.js';
import type { Logger } from '../../../runtime/log.js';
import { readerSessionSql } from './session.js';
import { DEMO_DATA_VERSION, DEMO_META_TABLE, DEMO_TABLES, generateDemoData, loadDemoData } from './demo-data.js';

const PORT = 5432;
const SOCKET_NAME = `.s.PGSQL.${PORT}`;
/** sun_path holds 108 bytes on Linux, 104 on macOS; stay clear of both */
const MAX_SOCKET_PATH = 100;
const LOCK_NAME = 'embedded.pid';
const DATA_NAME = 'pgdata';
const DATABASE = 'postgres';
const READER_ROLE = 'cortado_reader';
/** pg's cancel connections and a stray client get a little room above the pool's size */
const EXTRA_CONNECTIONS = 2;

/** Directories this process serves, so a second start here fails even though the pid is ours. */
const held = new Set<string>();

export async function startEmbeddedPostgres(opts: { dir: string; maxConnections: number; log: Logger }): Promise<{
  host: string;
  port: number;
  database: string;
  user: string;
  stop(): Promise<void>;
}> {
  const dir = path.resolve(opts.dir);
  const log = opts.log;
  await mkdir(dir, { recursive: true }).catch((err: unknown) => {
    throw new CortadoError('CONFIG_INVALID', `cannot create the embedded database directory ${dir}: ${(err as Error).message}`, undefined, { cause: err });
  });
  const lockPath = path.join(dir, LOCK_NAME);
  await acquireLock(dir, lockPath);

  let db: PGlite | undefined;
  let server: PGLiteSocketServer | undefined;
  let socketDir: string | undefined; // a temporary directory of ours, when the socket is not in dir
  let socketPath: string | undefined;
  let listening = false; // the socket file is ours to remove

  const release = async (): Promise<void> => {
    await server?.stop().catch((err: unknown) => log.warn({ err: (err as Error).message }, 'embedded database: closing the socket server failed'));
    server = undefined;
    if (db && !db.closed) await db.close().catch((err: unknown) => log.warn({ err: (err as Error).message }, 'embedded database: closing PGlite failed'));
    db = undefined;
    if (listening && socketPath) await unlink(socketPath).catch(() => undefined);
    if (socketDir) await rm(socketDir, { recursive: true, force: true }).catch(() => undefined);
    await releaseLock(dir, lockPath);
  };

  try {
    const started = performance.now();
    const dataDir = path.join(dir, DATA_NAME);
    try {
      db = await PGlite.create({ dataDir });
    } catch (err) {
      throw new CortadoError(
        'CONFIG_INVALID',
        `cannot open the embedded database in ${dataDir} (${(err as Error).message}); delete the directory to have it rebuilt`,
        undefined,
        { cause: err },
      );
    }
    const bootMs = Math.round(performance.now() - started);

    const outdated = await whyOutdated(db);
    if (outdated) {
      const t0 = performance.now();
      const data = generateDemoData();
      const generatedMs = Math.round(performance.now() - t0);
      const counts = await loadDemoData(db, data);
      log.info(
        { dir, reason: outdated, version: DEMO_DATA_VERSION, counts, generate_ms: generatedMs, ms: Math.round(performance.now() - t0) },
        'embedded database: demo data generated',
      );
    }
    await restrictSession(db);

    ({ socketPath, socketDir } = socketLocation(dir));
    removeStaleSocket(socketPath);
    server = new PGLiteSocketServer({ db, path: socketPath, maxConnections: Math.max(1, opts.maxConnections) + EXTRA_CONNECTIONS });
    await server.start();
    listening = true;
    log.info({ dir, socket: socketPath, boot_ms: bootMs, ms: Math.round(performance.now() - started) }, 'embedded database: ready');
  } catch (err) {
    await release();
    throw err;
  }

  let stopping: Promise<void> | undefined;
  return {
    host: path.dirname(socketPath),
    port: PORT,
    database: DATABASE,
    user: READER_ROLE,
    stop: () => (stopping ??= release()),
  };
}

// ---- the data -------------------------------------------------------------------------------

/** Why the demo data must be (re)built, or undefined when it is current. */
async function whyOutdated(db: PGlite): Promise<string | undefined> {
  const present = DEMO_TABLES.map((t) => `to_regclass('public.${t}') IS NOT NULL`).join(' AND ');
  const { rows } = await db.query<{ meta: boolean; tables: boolean }>(
    `SELECT to_regclass('${DEMO_META_TABLE}') IS NOT NULL AS meta, ${present} AS tables`,
  );
  if (!rows[0]?.meta) return 'missing';
  if (!rows[0].tables) return 'tables missing';
  const meta = await db.query<{ version: number }>(`SELECT version FROM ${DEMO_META_TABLE} ORDER BY version DESC LIMIT 1`);
  const version = meta.rows[0]?.version;
  if (version !== DEMO_DATA_VERSION) return `version ${version ?? 'none'} (current ${DEMO_DATA_VERSION})`;
  return undefined;
}

/** The single session every client shares: UTC, read-only by default, as a role that may only SELECT. */
async function restrictSession(db: PGlite): Promise<void> {
  const role = await db.query(`SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = '${READER_ROLE}'`);
  if (role.rows.length === 0) await db.exec(`CREATE ROLE ${READER_ROLE} NOLOGIN`);
  await db.exec(`
    REVOKE CREATE ON SCHEMA public FROM PUBLIC;
    GRANT USAGE ON SCHEMA public TO ${READER_ROLE};
    GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${READER_ROLE};
    ${readerSessionSql(READER_ROLE)};`);
}


// ---- the socket -----------------------------------------------------------------------------
// Synchronous on purpose: right after PGlite boots the libuv thread pool stays busy for a
// while, and an async lstat here waited ~0.7 s for a thread (a third of a restart).

function socketLocation(dir: string): { socketPath: string; socketDir?: string } {
  const inDir = path.join(dir, SOCKET_NAME);
  if (Buffer.byteLength(inDir) <= MAX_SOCKET_PATH) return { socketPath: inDir };
  const socketDir = mkdtempSync(path.join(os.tmpdir(), 'cortado-pg-'));
  const socketPath = path.join(socketDir, SOCKET_NAME);
  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH) {
    rmSync(socketDir, { recursive: true, force: true });
    throw new CortadoError('CONFIG_INVALID', `no short enough path for the embedded database's socket (${socketPath}); set TMPDIR to a shorter directory`);
  }
  return { socketPath, socketDir };
}

/** A socket left by a process that died; we hold the lock, so nobody else is listening on it. */
function removeStaleSocket(socketPath: string): void {
  const st = lstatSync(socketPath, { throwIfNoEntry: false });
  if (!st) return;
  if (!st.isSocket()) throw new CortadoError('CONFIG_INVALID', `${socketPath} exists and is not a socket; remove it`);
  unlinkSync(socketPath);
}

// ---- the lock -------------------------------------------------------------------------------

async function acquireLock(dir: string, lockPath: string): Promise<void> {
  const inUse = (who: string): CortadoError =>
    new CortadoError(
      'CONFIG_INVALID',
      `the embedded database directory ${dir} is in use by ${who}; stop it, or set database.postgresql.embedded_dir to another directory ` +
        `(if no such process runs, delete ${lockPath})`,
    );
  // claimed before the first await, so two starts in this process cannot both get past here
  if (held.has(dir)) throw inUse('this process');
  held.add(dir);
  try {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await writeFile(lockPath, `${process.pid}\n`, { flag: 'wx' });
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
          throw new CortadoError('CONFIG_INVALID', `cannot write ${lockPath}: ${(err as Error).message}`, undefined, { cause: err });
        }
      }
      const pid = Number.parseInt(await readFile(lockPath, 'utf8').catch(() => ''), 10);
      if (await isOtherLiveProcess(pid)) throw inUse(`process ${pid}`);
      await unlink(lockPath).catch(() => undefined); // stale: its process is gone
    }
    throw inUse('another process (it took the lock as this one started)');
  } catch (err) {
    held.delete(dir);
    throw err;
  }
}

/**
 * Whether `pid` is a running process other than this one (our own pid in the file is stale
 * here, since `held` has no entry: a restarted container often gets the same pid). Where
 * /proc tells, a live pid that is not a node process counts as reused, so stale.
 */
async function isOtherLiveProcess(pid: number): Promise<boolean> {
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => undefined);
  return cmdline === undefined || /node/i.test(cmdline);
}

async function releaseLock(dir: string, lockPath: string): Promise<void> {
  const pid = Number.parseInt(await readFile(lockPath, 'utf8').catch(() => ''), 10);
  if (pid === process.pid) await unlink(lockPath).catch(() => undefined);
  held.delete(dir);
}

/**
 * The one connection to config_db (PostgreSQL) that every repository of a Storage shares: a
 * small pool, statements and transactions, the schema migrated by init() (migrations.ts), and
 * one translation of pg's failures.
 *
 * Failures to reach the server are DB_UNAVAILABLE naming config_db and where it points (never
 * the password); a duplicate key is CONFLICT; anything else the server refuses is INTERNAL
 * with the cause kept for the logs.
 */
import pg from 'pg';
import { CortadoError } from '../protocol/errors.js';
import type { Logger } from '../runtime/log.js';
import { isoTime } from './values.js';
import { migrate, type Migration } from './migrations.js';

export interface PgOptions {
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
  log: Logger;
  /** pool size (default 5) */
  maxConnections?: number;
  /** how long opening a connection may take (default 5 s) */
  connectTimeoutMs?: number;
  /** what this database is, in messages and as application_name (default config_db) */
  label?: string;
  /** its own schema and version table (default: config_db's, migrations.ts) */
  migrations?: { list: readonly Migration[]; versionTable: string };
}

const DEFAULT_MAX_CONNECTIONS = 5;
const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;

// ---- values in and out ----------------------------------------------------------------------

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Text PostgreSQL accepts: no NUL, no lone surrogate (each becomes U+FFFD). */
export function clean(text: string): string {
  return text.replace(/\u0000/g, '\uFFFD').replace(LONE_SURROGATE, '\uFFFD');
}

/** JSON text for a jsonb parameter. */
export function json(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'string' ? clean(v) : v));
}

export function optText(value: string | undefined): string | null {
  return value === undefined ? null : clean(value);
}

/** A timestamptz as the repositories return it. */
export function iso(value: Date | string): string {
  return isoTime(value, 'time');
}

// ---- errors ---------------------------------------------------------------------------------

const SQLSTATE = /^[0-9A-Z]{5}$/;

/** Why the server is out of reach, or undefined when the failure is something else. */
function unreachable(err: unknown): string | undefined {
  const e = (err ?? {}) as { code?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  const message = typeof e.message === 'string' ? e.message : '';
  if (SQLSTATE.test(code)) {
    if (code.startsWith('28')) return 'the login was refused';
    if (code === '3D000') return 'the database does not exist';
    if (code.startsWith('08')) return 'the connection failed';
    if (code.startsWith('53')) return 'the server is out of resources';
    if (code === '57P01' || code === '57P02' || code === '57P03') return 'the server is shutting down or starting up';
    return undefined;
  }
  switch (code) {
    case 'ECONNREFUSED': return 'connection refused';
    case 'ENOTFOUND': case 'EAI_AGAIN': return 'unknown host';
    case 'ECONNRESET': case 'EPIPE': return 'the connection was closed';
    case 'ETIMEDOUT': case 'EHOSTUNREACH': case 'ENETUNREACH': return 'the host does not answer';
  }
  if (/timeout exceeded when trying to connect|connection timeout/i.test(message)) return 'no connection could be opened in time';
  if (/terminated|not queryable|connection error|after calling end on the pool/i.test(message)) return 'the connection was closed';
  if (/password|sasl|scram/i.test(message)) return 'the login was refused';
  return undefined;
}

// ---- the database -----------------------------------------------------------------------------

export class PgDatabase {
  private readonly pool: pg.Pool;
  private readonly log: Logger;
  private readonly where: string;
  private readonly label: string;
  private readonly migrations: PgOptions['migrations'];
  private closed = false;

  constructor(opts: PgOptions) {
    this.log = opts.log;
    this.where = `${opts.user}@${opts.host}:${opts.port}/${opts.database}`;
    this.label = opts.label ?? 'config_db';
    this.migrations = opts.migrations;
    this.pool = new pg.Pool({
      host: opts.host,
      port: opts.port,
      database: opts.database,
      user: opts.user,
      password: opts.password,
      max: opts.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
      connectionTimeoutMillis: opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      idleTimeoutMillis: 30_000,
      application_name: `cortado-${this.label.replace(/_/g, '-')}`,
    });
    // An idle connection that dies (server restart) must not crash the process.
    this.pool.on('error', (err) => this.log.warn({ err: err.message }, `${this.label}: an idle connection failed`));
  }

  /** pg's failures → DB_UNAVAILABLE (naming config_db and where, never the password), CONFLICT, INTERNAL. */
  toError(err: unknown): CortadoError {
    if (err instanceof CortadoError) return err;
    const why = unreachable(err);
    if (why) {
      return new CortadoError('DB_UNAVAILABLE', `${this.label} (${this.label}.postgresql: ${this.where}) cannot be reached: ${why}`, { store: this.label }, { cause: err });
    }
    const e = (err ?? {}) as { code?: unknown; message?: unknown };
    const sqlstate = typeof e.code === 'string' && SQLSTATE.test(e.code) ? e.code : undefined;
    if (sqlstate === '23505') return new CortadoError('CONFLICT', 'the record exists already', undefined, { cause: err });
    this.log.error({ err: typeof e.message === 'string' ? e.message : String(err), sqlstate }, `${this.label}: a statement failed`);
    return new CortadoError('INTERNAL', 'internal error', sqlstate ? { sqlstate } : undefined, { cause: err });
  }

  /** One statement on any connection of the pool. */
  async query<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
    try {
      return await this.pool.query<R>(text, values);
    } catch (err) {
      throw this.toError(err);
    }
  }

  /** Run fn in a transaction on one connection. */
  async tx<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw this.toError(err);
    }
    let broken = false;
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw this.toError(err);
    } finally {
      client.release(broken ? new Error('connection left in a failed state') : undefined);
    }
  }

  /** Create or migrate the tables; idempotent, safe with several processes starting at once. */
  async init(): Promise<void> {
    try {
      await (this.migrations ? migrate(this.pool, this.log, this.migrations.list, this.migrations.versionTable) : migrate(this.pool, this.log));
    } catch (err) {
      throw this.toError(err);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}

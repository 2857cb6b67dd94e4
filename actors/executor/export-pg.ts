/**
 * A PostgreSQL export read from a server-side cursor, a page at a time: the executor never holds
 * more than one page of a large report (sql.export, export.ts). A connection of its own (not one
 * of the pool: a cursor keeps its connection for the whole export), with the settings every
 * pool connection starts with — read-only by default, UTC, the configured search_path — and:
 *
 *   BEGIN READ ONLY; SET LOCAL statement_timeout = <the query timeout>
 *   DECLARE cortado_export NO SCROLL CURSOR FOR <the guarded SQL>
 *   FETCH <page> FROM cortado_export   … until a page comes back short
 *   ROLLBACK; the connection closed
 *
 * The statement timeout covers each FETCH; the whole export, from the moment it is connected,
 * is bounded by the same timeout on the client side as well: past it the query is cancelled from another connection, watched until
 * it stops (terminated if it ignores the cancel: engines/pg-cancel.ts), and this one closed.
 * Values are decoded exactly as the engine decodes them (postgresql-values.ts). Used for the
 * server's own database (not a plugins.auth scope's, not the embedded one). A scope's own
 * connection, whatever its engine, is read a page at a time too, by the engine's `pages` on a
 * pooled connection (engines/postgresql.ts for PostgreSQL); only the embedded database (one
 * connection) is read in one piece and paged in memory.
 */
import pg from 'pg';
import { CortadoError } from '../../protocol/errors.js';
import type { Column } from '../../protocol/schemas/common.js';
import type { Config } from '../../config/schema.js';
import type { EngineResult } from './engines/engine.js';
import { toDbError } from './engines/postgresql-errors.js';
import { RESULT_TYPES } from './engines/postgresql-values.js';
import { stopBackend } from './engines/pg-cancel.js';
import { timedOut } from './engines/errors.js';
import { countDbCancel } from '../../runtime/metrics.js';
import type { Logger } from '../../runtime/log.js';

function quoteIdent(name: string): string {
  return /^[a-z_][a-z0-9_$]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`;
}

function startupOptions(schema: string, statementTimeoutMs: number): string {
  const settings: Array<[string, string]> = [
    ['default_transaction_read_only', 'on'],
    ['statement_timeout', String(Math.max(1, Math.floor(statementTimeoutMs)))],
    ['TimeZone', 'UTC'],
    ['search_path', quoteIdent(schema)],
  ];
  return settings.map(([k, v]) => `-c ${k}=${v.replace(/[\\\s]/g, (c) => `\\${c}`)}`).join(' ');
}

/** Whether this executor's own database can be read with a cursor here. */
export function cursorAvailable(config: Config): boolean {
  return config.database.provider === 'postgresql' && !config.database.postgresql.embedded;
}

export async function* pgCursorPages(config: Config, sql: string, opts: { timeoutMs: number; pageRows: number; log: Logger }): AsyncGenerator<EngineResult> {
  const c = config.database.postgresql;
  const connection = { host: c.host, port: c.port, database: c.database, user: c.user, password: c.password, ssl: c.ssl ? {} : false };
  const client = new pg.Client({
    ...connection,
    application_name: `cortado-export-${process.pid}`,
    options: startupOptions(c.schema, opts.timeoutMs),
    connectionTimeoutMillis: 10_000,
    types: RESULT_TYPES,
  });
  client.on('error', () => undefined);
  let late = false;
  let deadline: NodeJS.Timeout | undefined;
  let columns: Column[] | undefined;
  try {
    try {
      await client.connect();
    } catch (err) {
      throw toDbError(err);
    }
    // past the timeout (and a grace for statement_timeout to act): cancel from another connection,
    // see that the query stopped (engines/pg-cancel.ts), and close this one. Started once
    // connected, as the database's statement_timeout starts with the statement: started before,
    // a slow connect (a loaded server) let it fire first and close the connection under the
    // query, and the run said "the database cannot be reached" instead of naming its timeout
    deadline = setTimeout(() => {
      late = true;
      const pid = (client as unknown as { processID?: number | null }).processID ?? null;
      const close = (): void => void client.end().catch(() => undefined);
      if (pid === null) return close();
      void stopBackend(pid, {
        connect: () => new pg.Client({ ...connection, application_name: `cortado-cancel-${process.pid}`, connectionTimeoutMillis: 2_000 }),
        log: opts.log,
        onCancelled: close,
      });
    }, opts.timeoutMs + 1_000);
    try {
      await client.query(`BEGIN READ ONLY`);
      await client.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(opts.timeoutMs))}`);
      // the extended protocol, as the engine runs a question: one statement, never a second
      await client.query({ text: `DECLARE cortado_export NO SCROLL CURSOR FOR ${sql}`, queryMode: 'extended' } as pg.QueryConfig);
      const typeNames = new Map<number, string>();
      for (;;) {
        const page = await client.query({ text: `FETCH ${opts.pageRows} FROM cortado_export`, rowMode: 'array' });
        if (!columns) {
          const oids = [...new Set(page.fields.map((f) => f.dataTypeID))];
          const names = await client.query<{ oid: number; name: string }>('SELECT oid::int AS oid, format_type(oid, NULL) AS name FROM pg_type WHERE oid = ANY($1::oid[])', [oids]);
          for (const r of names.rows) typeNames.set(r.oid, r.name);
          columns = page.fields.map((f) => ({ name: f.name, type: typeNames.get(f.dataTypeID) ?? String(f.dataTypeID) }));
        }
        yield { columns, rows: page.rows as EngineResult['rows'] };
        if (page.rows.length < opts.pageRows) break;
      }
    } catch (err) {
      if (late) throw timedOut(opts.timeoutMs);
      const e = err instanceof CortadoError ? err : toDbError(err, opts.timeoutMs);
      if (e.code === 'DB_TIMEOUT') countDbCancel('postgresql', 'stopped'); // the server ended it at its statement_timeout
      throw e;
    }
  } finally {
    if (deadline) clearTimeout(deadline);
    await client.query('ROLLBACK').catch(() => undefined);
    await client.end().catch(() => undefined);
  }
}

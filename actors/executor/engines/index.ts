/**
 * The engine for config.database.provider. PostgreSQL is the only one so far; the embedded
 * demo database (PGlite served on a unix socket) is PostgreSQL too, reached the same way.
 */
import path from 'node:path';
import { CortadoError } from '../../../protocol/errors.js';
import type { Logger } from '../../../runtime/log.js';
import { ROOT } from '../../../config/load.js';
import type { Config, DbProviderName } from '../../../config/schema.js';
import type { DbEngine } from './engine.js';
import { readerSessionSql } from '../embedded/session.js';
import { createPostgresEngine } from './postgresql.js';

/** The provider's timeout when set (seconds), else query.timeout, in ms. */
export function configuredTimeoutMs(config: Config): number {
  const provider = config.database[config.database.provider];
  return (provider.timeout ?? config.query.timeout) * 1000;
}

type EngineFactory = (config: Config, log: Logger) => Promise<DbEngine>;

/**
 * One line per engine: provider → factory (each engine's file exports its own). The others are
 * loaded when configured, not before: each brings its driver (trino-client, mysql2, the BigQuery
 * client and Google's auth library), which a process on another database would load for nothing.
 */
const ENGINES: Partial<Record<DbProviderName, EngineFactory>> = {
  postgresql: createPostgresFromConfig,
  trino: async (config, log) => (await import('./trino.js')).createTrinoFromConfig(config, log),
  mysql: async (config, log) => (await import('./mysql.js')).createMysqlEngineFromConfig(config, log),
  bigquery: async (config, log) => (await import('./bigquery.js')).createBigQueryFromConfig(config, log),
};

export async function createEngine(config: Config, log: Logger): Promise<DbEngine> {
  const provider = config.database.provider;
  const factory = ENGINES[provider];
  if (!factory) {
    throw new CortadoError('CONFIG_INVALID', `database.provider "${provider}" is not supported by the executor yet (supported: ${Object.keys(ENGINES).join(', ')})`);
  }
  return factory(config, log);
}

/**
 * The reset after each question on the embedded server. PGlite has one session, shared by
 * every client, set up by embedded/server.ts (restrictSession: UTC, read-only by default, SET
 * ROLE to the reader role), not by start-up options: DISCARD ALL would reset it to the
 * superuser. So: what DISCARD ALL does, then that set-up again, in one message (one statement
 * list the multiplexer runs whole, so no other client's query sees the session in between).
 */
export function embeddedReset(readerRole: string): string {
  return [
    'CLOSE ALL',
    'RESET ALL',
    'DEALLOCATE ALL',
    'UNLISTEN *',
    'SELECT pg_catalog.pg_advisory_unlock_all()',
    'DISCARD PLANS',
    'DISCARD TEMP',
    'DISCARD SEQUENCES',
    readerSessionSql(readerRole),
  ].join('; ');
}

async function createPostgresFromConfig(config: Config, log: Logger): Promise<DbEngine> {
  const pgc = config.database.postgresql;
  const common = {
    schema: pgc.schema,
    minConnections: pgc.min_connections,
    maxConnections: pgc.max_connections,
    statementTimeoutMs: configuredTimeoutMs(config),
    log,
  };

  if (!pgc.embedded) {
    return createPostgresEngine({
      ...common,
      host: pgc.host,
      port: pgc.port,
      database: pgc.database,
      user: pgc.user,
      password: pgc.password,
      ssl: pgc.ssl,
    });
  }

  // loaded only here: a process on a real database never starts PGlite
  const mod = await import('../embedded/pglite.js');
  const server = await mod.startEmbeddedPostgres({
    dir: path.resolve(ROOT, pgc.embedded_dir),
    maxConnections: pgc.max_connections,
    log,
  });
  try {
    return await createPostgresEngine({
      ...common,
      host: server.host,
      port: server.port,
      database: server.database,
      user: server.user,
      password: '',
      ssl: false,
      onClose: () => server.stop(),
      resetSql: embeddedReset(server.user),
    });
  } catch (err) {
    await server.stop().catch(() => undefined);
    throw err;
  }
}

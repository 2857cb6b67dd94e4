/**
 * The store a process uses: PostgreSQL when config_db.enabled (tables created or migrated
 * before this returns), else memory (lost on restart).
 */
import type { Config } from '../../../config/schema.js';
import type { Logger } from '../../../protocol/log.js';
import { createMemoryStore } from './memory.js';
import { createPostgresStore } from './postgres.js';
import type { Store } from './store.js';

export type * from './store.js';
export { MemoryStore, MEMORY_AUDIT_CAP } from './memory.js';
export { PostgresStore } from './postgres.js';

/** Open and initialise the configured store; DB_UNAVAILABLE when config_db is on and cannot be reached. */
export async function openStore(config: Pick<Config, 'config_db'>, log: Logger): Promise<Store> {
  const c = config.config_db;
  if (!c.enabled) {
    log.info('config_db is off: runtime changes, API tokens and the audit log are kept in memory and lost on restart');
    return createMemoryStore();
  }
  const pgc = c.postgresql;
  const store = createPostgresStore({ host: pgc.host, port: pgc.port, database: pgc.database, user: pgc.user, password: pgc.password, log });
  try {
    await store.init();
  } catch (err) {
    await store.close().catch(() => undefined);
    throw err;
  }
  log.info({ host: pgc.host, port: pgc.port, database: pgc.database }, 'config_db ready (PostgreSQL)');
  return store;
}

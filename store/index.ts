/**
 * What Cortado keeps at run time, one repository per domain, each with a memory and a
 * PostgreSQL implementation that pass the same test suite (test/store/store.test.ts). No actor
 * owns this folder: an actor opens a Storage and uses the repositories of the domains it owns;
 * another actor that needs the data asks the owner over the bus.
 *
 *   domain        file               owner      tables (store/migrations.ts)
 *   tokens        tokens.ts          identity   cortado_api_tokens
 *   overrides     overrides.ts       settings   cortado_config_overrides, _override_history
 *   prompts       prompts.ts         settings   (the overrides `prompts.*`: section.ts says why)
 *   ldap          ldap-settings.ts   settings   (the overrides `ldap.*`)
 *   maskRules     mask-rules.ts      settings   cortado_mask_rules
 *   audit         audit.ts           audit      cortado_audit_log
 *   semantic      semantic.ts        semantic   cortado_semantic_entities, _columns, _relationships, _metrics
 *   schedules     schedules.ts       scheduler  cortado_schedules
 *   executions    schedules.ts       scheduler  cortado_schedule_executions
 *   workspace     workspace.ts       workspace  cortado_history, cortado_dashboards
 *   alarms        alarms.ts          alarms     cortado_alarms (config_db off: the file FileAlarms keeps)
 *
 * config_db.enabled: PostgreSQL (one small pool per Storage, postgres.ts; the tables created or
 * migrated before openStorage returns); otherwise memory (lost on restart). Values are kept as
 * given: callers seal secrets before they reach a repository (actors/lib/crypto/secrets.ts) and hash
 * tokens (only the SHA-256 of an API token is stored).
 *
 * Adding a repository (semantic layer, schedules, executions, analytics, alarms …):
 *   1. `store/<domain>.ts`: the record types, an `XxxRepository` interface, `MemoryXxx` and
 *      `PostgresXxx` (its constructor takes the PgDatabase; `db.query`, `db.tx`, and `clean` /
 *      `json` / `iso` for values in and out). Times ISO 8601 with milliseconds (values.ts),
 *      copies in and out of memory, the same ordering in both.
 *   2. The next version in store/migrations.ts MIGRATIONS creating `cortado_<domain>…` tables
 *      (never edit a released migration; move data in SQL, never drop it).
 *   3. A field in `Storage` below and one line in each of memoryStorage and postgresStorage.
 *   4. A `t.test` in the shared suite of test/store/store.test.ts (it runs against both), and
 *      the table in its "every table, prefixed" list.
 *   5. The owning actor reads `storage.<domain>`; nothing else touches it (the import-rule test,
 *      test/protocol/imports.test.ts, keeps `pg` in this folder and the executor).
 */
import type { Config } from '../config/schema.js';
import type { Logger } from '../runtime/log.js';
import { MemoryAlarms, PostgresAlarms, type AlarmsRepository } from './alarms.js';
import { MemoryAudit, PostgresAudit, type AuditRepository } from './audit.js';
import { ldapSettingsIn, type LdapSettingsRepository } from './ldap-settings.js';
import { MemoryMaskRules, PostgresMaskRules, type MaskRulesRepository } from './mask-rules.js';
import { MemoryOverrides, PostgresOverrides, type OverridesRepository } from './overrides.js';
import { PgDatabase, type PgOptions } from './postgres.js';
import { promptsIn, type PromptsRepository } from './prompts.js';
import { MemorySchedules, PostgresSchedules, type ExecutionsRepository, type SchedulesRepository } from './schedules.js';
import { MemorySemantic, PostgresSemantic, type SemanticRepository } from './semantic.js';
import { MemoryTokens, PostgresTokens, type TokensRepository } from './tokens.js';
import { MemoryWorkspace, PostgresWorkspace, type WorkspaceRepository } from './workspace.js';

export type * from './alarms.js';
export { FileAlarms, LOCK_STALE_MS } from './alarms.js';
export type * from './audit.js';
export type * from './mask-rules.js';
export type * from './overrides.js';
export type * from './section.js';
export type * from './schedules.js';
export type * from './semantic.js';
export type * from './tokens.js';
export type * from './workspace.js';
export type { LdapSettingsRepository } from './ldap-settings.js';
export type { PgOptions } from './postgres.js';
export type { PromptsRepository } from './prompts.js';
export { MEMORY_AUDIT_CAP } from './audit.js';
export { MIGRATIONS, migrate } from './migrations.js';

export interface Storage {
  readonly kind: 'postgresql' | 'memory';
  readonly tokens: TokensRepository;
  readonly overrides: OverridesRepository;
  readonly prompts: PromptsRepository;
  readonly ldap: LdapSettingsRepository;
  readonly maskRules: MaskRulesRepository;
  readonly audit: AuditRepository;
  readonly semantic: SemanticRepository;
  readonly schedules: SchedulesRepository;
  /** the runs of the schedules (deleted with their schedule) */
  readonly executions: ExecutionsRepository;
  /** each person's question history and dashboards */
  readonly workspace: WorkspaceRepository;
  /** the alarms (config_db on; off, the alarms actor keeps them in the alarms.storage_path file) */
  readonly alarms: AlarmsRepository;
  /** create or migrate the tables (PostgreSQL); idempotent, safe with several processes starting at once */
  init(): Promise<void>;
  close(): Promise<void>;
}

export interface MemoryStorageOptions {
  /** how many audit entries to keep (default MEMORY_AUDIT_CAP, 10,000) */
  auditCap?: number;
}

/** Everything in this process, lost on restart. */
export function memoryStorage(opts: MemoryStorageOptions = {}): Storage {
  const overrides = new MemoryOverrides();
  const schedules = new MemorySchedules();
  return {
    kind: 'memory',
    tokens: new MemoryTokens(),
    overrides,
    prompts: promptsIn(overrides),
    ldap: ldapSettingsIn(overrides),
    maskRules: new MemoryMaskRules(),
    audit: new MemoryAudit(opts.auditCap),
    semantic: new MemorySemantic(),
    schedules,
    executions: schedules.executions,
    workspace: new MemoryWorkspace(),
    alarms: new MemoryAlarms(),
    init: async () => {},
    close: async () => {},
  };
}

/** On config_db: nothing is opened until the first statement; init() migrates. */
export function postgresStorage(opts: PgOptions): Storage {
  const db = new PgDatabase(opts);
  const overrides = new PostgresOverrides(db);
  const schedules = new PostgresSchedules(db);
  return {
    kind: 'postgresql',
    tokens: new PostgresTokens(db),
    overrides,
    prompts: promptsIn(overrides),
    ldap: ldapSettingsIn(overrides),
    maskRules: new PostgresMaskRules(db),
    audit: new PostgresAudit(db),
    semantic: new PostgresSemantic(db),
    schedules,
    executions: schedules.executions,
    workspace: new PostgresWorkspace(db),
    alarms: new PostgresAlarms(db),
    init: () => db.init(),
    close: () => db.close(),
  };
}

/** Open and initialise the configured storage; DB_UNAVAILABLE when config_db is on and cannot be reached. */
export async function openStorage(config: Pick<Config, 'config_db'>, log: Logger): Promise<Storage> {
  const c = config.config_db;
  if (!c.enabled) {
    log.info('config_db is off: runtime changes, API tokens, schedules and their history and the audit log are kept in memory and lost on restart');
    return memoryStorage();
  }
  const pgc = c.postgresql;
  const storage = postgresStorage({ host: pgc.host, port: pgc.port, database: pgc.database, user: pgc.user, password: pgc.password, log });
  try {
    await storage.init();
  } catch (err) {
    await storage.close().catch(() => undefined);
    throw err;
  }
  log.info({ host: pgc.host, port: pgc.port, database: pgc.database }, 'config_db ready (PostgreSQL)');
  return storage;
}

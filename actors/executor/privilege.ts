/**
 * Least privilege, checked: the database role Cortado connects as (database.<provider>), and
 * every plugins.auth login and scope with credentials of its own, may only read.
 *
 * What counts is the engine's to say (`DbEngine.privileges()`): **writes** (tables, schemas,
 * sequences, large objects, databases, roles, server files, programs) and **powers** (reading
 * server files, every setting or other sessions' activity, replication, bypassing row security,
 * ending other sessions, …). Trino and BigQuery cannot say: their check has nothing to look at
 * (Trino's access control and BigQuery's IAM stay the operator's), and only what their
 * `canWrite()` reports (nothing today) counts.
 *
 * The two keys:
 * - `database.allow_privileged_role` false (the default): any write or power refuses the role;
 *   true: the role is accepted with a loud warning naming each reason.
 * - `database.require_read_only` true: a role that can write is refused whatever
 *   allow_privileged_role says (allow_privileged_role then admits powers only).
 *
 * At start a refusal is CONFIG_INVALID (the process exits with code 2); when the database cannot
 * be asked at start, the check runs before the first query of the server's own connection and
 * refuses it (FORBIDDEN) until it passes. A login or scope that is refused is FORBIDDEN. The
 * messages name the role, never a password, and say what to do.
 */
import { CortadoError, toCortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/log.js';
import type { Config, DbProviderName } from '../../config/schema.js';
import type { DbEngine, RolePrivileges } from './engines/engine.js';

/** What the two keys make of a role's privileges. */
export interface Verdict {
  /** why it is refused (empty: accepted) */
  refused: string[];
  /** why it is accepted only with a warning */
  warned: string[];
  /** the refusal comes from require_read_only (the role can write) */
  readOnlyRequired: boolean;
}

export function judge(p: RolePrivileges, db: Pick<Config['database'], 'allow_privileged_role' | 'require_read_only'>): Verdict {
  const writesRefused = db.require_read_only || !db.allow_privileged_role;
  const refused = [...(writesRefused ? p.writes : []), ...(db.allow_privileged_role ? [] : p.powers)];
  const warned = [...(writesRefused ? [] : p.writes), ...(db.allow_privileged_role ? p.powers : [])];
  return { refused, warned, readOnlyRequired: db.require_read_only && p.writes.length > 0 };
}

/** How to make a role that may only read, per provider. */
const HOW: Readonly<Partial<Record<DbProviderName, string>>> = {
  postgresql: 'on PostgreSQL: CREATE ROLE reader LOGIN PASSWORD …; GRANT CONNECT ON DATABASE … TO reader; GRANT USAGE ON SCHEMA … TO reader; GRANT SELECT ON ALL TABLES IN SCHEMA … TO reader',
  mysql: "on MySQL/MariaDB: CREATE USER 'reader'@'%' IDENTIFIED BY …; GRANT SELECT, SHOW VIEW ON `db`.* TO 'reader'@'%'",
};

function quoted(role: string): string {
  return `"${role}"`;
}

/** The start-up refusal (CONFIG_INVALID): every reason, and what to do. */
export function startRefusal(p: RolePrivileges, v: Verdict, config: Config): CortadoError {
  const db = config.database;
  const role = quoted(p.role || configuredUser(config));
  const writes = v.refused.filter((r) => p.writes.includes(r));
  const powers = v.refused.filter((r) => p.powers.includes(r));
  const what = v.readOnlyRequired
    ? `database.require_read_only is true, but the database role ${role} can write: ${writes.join('; ')}` +
      (powers.length ? `; and it has more privileges than reading needs: ${powers.join('; ')}` : '')
    : `the database role ${role} has more privileges than reading needs, and database.allow_privileged_role is false: ${v.refused.join('; ')}`;
  const how = HOW[db.provider];
  const fix = v.readOnlyRequired
    ? db.allow_privileged_role
      ? 'or set database.require_read_only to false (database.allow_privileged_role does not override it)'
      : 'or set database.require_read_only to false and database.allow_privileged_role to true to start anyway'
    : 'or set database.allow_privileged_role to true to start anyway (with a warning)';
  return new CortadoError('CONFIG_INVALID', `${what}. Connect with a role that may only read${how ? ` (${how})` : ''}, ${fix}; see docs/security.md`);
}

/** The refusal of a login or of a scope's own connection (FORBIDDEN). */
export function scopeRefusal(p: RolePrivileges, v: Verdict, user: string): CortadoError {
  const role = quoted(p.role || user);
  const what = v.readOnlyRequired
    ? `this server accepts only database roles that cannot write (database.require_read_only), and ${role} can`
    : `the database role ${role} has more privileges than reading needs, and this server does not accept such roles (database.allow_privileged_role is false)`;
  return new CortadoError('FORBIDDEN', `${what}: ${v.refused.join('; ')}. Sign in with a role that may only read`, { reasons: v.refused });
}

function warn(log: Logger, p: RolePrivileges, v: Verdict, who: string): void {
  log.warn(
    { role: p.role || who, reasons: v.warned },
    `PRIVILEGED DATABASE ROLE: ${quoted(p.role || who)} has more privileges than reading needs, accepted because database.allow_privileged_role is true: ` +
      `${v.warned.join('; ')}. Every query still runs through the guard in a read-only transaction, but a role that may only read is the safe setup (docs/security.md)`,
  );
}

/** The engine's report; an engine without one says only what canWrite() knows. */
async function privilegesOf(engine: DbEngine): Promise<RolePrivileges> {
  if (engine.privileges) return engine.privileges();
  const access = await engine.canWrite();
  return { role: '', writes: access.writable ? access.reasons : [], powers: [] };
}

function configuredUser(config: Config): string {
  const db = config.database;
  switch (db.provider) {
    case 'postgresql': return db.postgresql.user;
    case 'mysql': return db.mysql.user;
    case 'trino': return db.trino.user;
    default: return '';
  }
}

/**
 * The check at start, on the server's own engine: throws CONFIG_INVALID, warns, or (the database
 * cannot be asked yet) returns the check to run before each query until it once passes.
 */
export async function checkRoleAtStart(engine: DbEngine, config: Config, log: Logger): Promise<(() => Promise<void>) | undefined> {
  if (!engine.privileges) {
    log.info({ provider: engine.provider }, `${engine.provider} cannot say what its user may do beyond the writes it reports: database.allow_privileged_role has nothing more to check, and the database's own access control decides the rest`);
  }
  let p: RolePrivileges;
  try {
    p = await privilegesOf(engine);
  } catch (err) {
    const e = toCortadoError(err);
    log.warn({ code: e.code, err: e.message }, 'cannot check what the database role may do yet: checking before the first query');
    return deferredCheck(engine, config, log);
  }
  const v = judge(p, config.database);
  if (v.refused.length) throw startRefusal(p, v, config);
  if (v.warned.length) warn(log, p, v, configuredUser(config));
  return undefined;
}

/** The start-up check, run before queries until it once passes; a refusal is FORBIDDEN (the process is running by then). */
function deferredCheck(engine: DbEngine, config: Config, log: Logger): () => Promise<void> {
  let passed = false;
  let running: Promise<void> | undefined;
  const once = async (): Promise<void> => {
    const p = await privilegesOf(engine);
    const v = judge(p, config.database);
    if (v.refused.length) throw new CortadoError('FORBIDDEN', startRefusal(p, v, config).message);
    if (v.warned.length) warn(log, p, v, configuredUser(config));
    passed = true;
  };
  return async () => {
    if (passed) return;
    running ??= once().finally(() => {
      running = undefined;
    });
    await running;
  };
}

/**
 * A login's or a scope's own connection (plugins.auth): FORBIDDEN with every reason when the
 * role is refused; a warning when accepted only by allow_privileged_role. Engines that cannot
 * say (Trino, BigQuery) pass.
 */
export async function checkScopeRole(engine: DbEngine, config: Config, log: Logger, user: string): Promise<void> {
  if (!engine.privileges) return;
  const p = await engine.privileges();
  const v = judge(p, config.database);
  if (v.refused.length) throw scopeRefusal(p, v, user);
  if (v.warned.length) warn(log, p, v, user);
}

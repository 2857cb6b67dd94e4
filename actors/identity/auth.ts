/**
 * Multi-user sessions (plugins.auth): a person signs in with their own DATABASE credentials;
 * Cortado checks them by connecting (the executor's `sql.connect.test`), then keeps an auth
 * session in KV with the connection fields sealed (config_db.encryption_key) for
 * session_ttl_minutes. The session's queries run on a connection of its own: the edge puts
 * `s:<session id>` in the bus context, the executor resolves it here (`identity.scope.resolve`).
 * API tokens with a db_config are scopes too (`t:<token id>`).
 *
 * What a login may reach is the server's decision, not the client's: the host and port are
 * plugins.auth.db_host/db_port (else the database section's), the provider must be in
 * allowed_db_types, the catalog (Trino) or database (PostgreSQL, MySQL) in allowed_catalogs and
 * the schema in that catalog's allowed_schemas, when those lists are set.
 *
 * auto_session: a labelled session without a login, for embedded widgets, on the server's own
 * database config (no scope), only from allowed_origins when that list is set; it cannot mint
 * API tokens.
 */
import { parseScope, scopeOf as scopeId } from '../../protocol/scope.js';
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import { CortadoError, toCortadoError } from '../../protocol/errors.js';
import type * as I from '../../protocol/schemas/identity.js';
import type { ScopeInfo } from '../../protocol/schemas/scope.js';
import { LoginEvt, ScopeEndedEvt, SqlConnectTest } from '../../protocol/subjects.js';
import type { Config, DbProviderName } from '../../config/schema.js';
import { event, failureFloor, now, tokenIssue, type IdentityDeps } from './handle.js';
import { lockedOut, publicSession, type SessionRecord } from './sessions.js';

export interface AuthDeps extends IdentityDeps {
  bus: Pick<Bus, 'publish' | 'request'>;
}

const PROVIDERS: readonly DbProviderName[] = ['trino', 'postgresql', 'mysql', 'bigquery'];
const REFUSED = 'the database refused these credentials';

function enabled(config: Config): void {
  if (!config.plugins.auth.enabled) throw new CortadoError('NOT_FOUND', 'multi-user sessions are off (plugins.auth.enabled is false)');
}

function same(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/**
 * The db_config of a login: the server's host/port, the user's credentials, a catalog/database
 * and schema within the allowed lists. Throws FORBIDDEN (outside the lists) or
 * VALIDATION_FAILED (incomplete).
 */
export function loginDbConfig(input: I.AuthLoginRequest, config: Config): { db: Record<string, unknown>; view: NonNullable<I.SessionInfo['db']> } {
  const auth = config.plugins.auth;
  const provider = (input.db_type || auth.db_provider || config.database.provider).toLowerCase() as DbProviderName;
  if (!PROVIDERS.includes(provider)) throw new CortadoError('VALIDATION_FAILED', `db_type: one of ${PROVIDERS.join(', ')}`);
  if (auth.allowed_db_types.length && !auth.allowed_db_types.some((t) => same(t, provider))) {
    throw new CortadoError('FORBIDDEN', `database type "${provider}" is not allowed here (plugins.auth.allowed_db_types: ${auth.allowed_db_types.join(', ')})`);
  }
  // without a list, a login reaches only the provider the server is configured for: another one's
  // section holds defaults (localhost, root) no operator chose
  const configured = (auth.db_provider || config.database.provider).toLowerCase();
  if (!auth.allowed_db_types.length && provider !== configured) {
    throw new CortadoError('VALIDATION_FAILED', `db_type: this server takes ${configured} logins; "${provider}" is not configured here (plugins.auth.allowed_db_types lists the providers a login may choose)`);
  }
  if (provider === 'bigquery') {
    throw new CortadoError('VALIDATION_FAILED', 'BigQuery has no username/password login: ask an administrator for an API token scoped to your project');
  }
  const section = config.database[provider];
  const host = auth.db_host || section.host;
  const port = auth.db_port ?? section.port;
  if (input.host !== undefined && !same(input.host.trim(), host)) {
    throw new CortadoError('FORBIDDEN', 'the database host is set by the server (plugins.auth.db_host), not by the login');
  }
  if (input.port !== undefined && input.port !== port) {
    throw new CortadoError('FORBIDDEN', 'the database port is set by the server (plugins.auth.db_port), not by the login');
  }

  // the catalog: Trino's catalog; PostgreSQL's and MySQL's database
  const allowed = auth.allowed_catalogs;
  const asked = provider === 'trino' ? input.catalog : input.database ?? input.catalog;
  const serverCatalog = provider === 'trino' ? config.database.trino.catalog : provider === 'postgresql' ? config.database.postgresql.database : config.database.mysql.database;
  let catalog = asked ?? (allowed.length === 1 ? allowed[0]!.name : serverCatalog);
  const discovery = provider === 'trino' && !asked && allowed.length > 1 && auth.enable_discovery_tokens;
  let schemas: readonly string[] = [];
  if (allowed.length) {
    if (discovery) {
      catalog = '';
    } else {
      if (!catalog) throw new CortadoError('VALIDATION_FAILED', `${provider === 'trino' ? 'catalog' : 'database'}: one of ${allowed.map((c) => c.name).join(', ')}`);
      const spec = allowed.find((c) => same(c.name, catalog));
      if (!spec) throw new CortadoError('FORBIDDEN', `${provider === 'trino' ? 'catalog' : 'database'} "${catalog}" is not allowed here (plugins.auth.allowed_catalogs: ${allowed.map((c) => c.name).join(', ')})`);
      catalog = spec.name;
      schemas = spec.allowed_schemas;
    }
  }
  const serverSchema = provider === 'trino' ? config.database.trino.schema : provider === 'postgresql' ? config.database.postgresql.schema : '';
  let schema = input.schema ?? (schemas.length ? schemas[0] : same(catalog, serverCatalog) ? serverSchema : '');
  if (schemas.length && input.schema !== undefined) {
    const hit = schemas.find((s) => same(s, input.schema!));
    if (!hit) throw new CortadoError('FORBIDDEN', `schema "${input.schema}" is not allowed in ${catalog} (allowed_schemas: ${schemas.join(', ')})`);
    schema = hit;
  }
  if (provider === 'trino' && !catalog && !discovery) throw new CortadoError('VALIDATION_FAILED', 'catalog: Trino needs one');
  if (provider === 'trino' && !catalog) schema = '';

  const db: Record<string, unknown> = { provider, host, port, user: input.username, password: input.password };
  if (provider === 'trino') {
    db.http_scheme = config.database.trino.http_scheme;
    if (catalog) db.catalog = catalog;
    if (schema) db.schema = schema;
  } else {
    if (catalog) db.database = catalog;
    if (schema && provider === 'postgresql') db.schema = schema;
  }
  const view: NonNullable<I.SessionInfo['db']> = { provider };
  if (provider === 'trino' && catalog) view.catalog = catalog;
  if (provider !== 'trino' && catalog) view.database = catalog;
  if (schema && provider !== 'mysql') view.schema = schema;
  return { db, view };
}

export async function authLogin(input: I.AuthLoginRequest, deps: AuthDeps, ctx: Ctx): Promise<I.LoginReply> {
  const { config, log } = deps;
  const record = (ok: boolean, reason?: string) =>
    deps.bus.publish(LoginEvt, { ...event(ctx, deps), user: input.username, kind: 'auth', client: input.client, ok, ...(ok ? { source: 'database' as const } : {}), ...(reason ? { reason } : {}) }, ctx);
  try {
    enabled(config);
  } catch (err) {
    record(false, 'disabled');
    throw err;
  }
  // no connection is tried without a password: a password-less account (root) proves nothing about who signs in
  if (input.password === '') {
    record(false, 'empty_password');
    throw new CortadoError('VALIDATION_FAILED', 'password: required (an empty password is refused: sign in with a database role that has one)');
  }
  const locked = await deps.lockouts.lockedFor('auth', input.username, input.client, now(deps));
  if (locked > 0) {
    record(false, 'locked');
    throw new CortadoError('RATE_LIMITED', `too many failed logins: try again in ${Math.ceil(locked / 60_000)} min`, { retry_after_s: Math.ceil(locked / 1000) });
  }
  let built: ReturnType<typeof loginDbConfig>;
  try {
    built = loginDbConfig(input, config);
  } catch (err) {
    record(false, 'not_allowed');
    throw err;
  }
  const sealed = deps.box.sealSecretsIn(built.db);
  // counted before the database checks the password (compare-and-set): parallel guesses cannot all get a check
  const reserved = await deps.lockouts.reserve('auth', input.username, input.client, now(deps));
  if (!reserved.attempt) {
    record(false, 'locked');
    throw lockedOut(reserved.lockedMs);
  }
  const attempt = reserved.attempt;
  const started = performance.now();
  try {
    await deps.bus.request(SqlConnectTest, { db_config: sealed }, ctx);
  } catch (err) {
    const e = toCortadoError(err);
    if (e.code === 'UNAUTHORIZED') {
      await attempt.failed();
      record(false, 'invalid_credentials');
      // the database may take longer to refuse a role it has than one it has not
      await failureFloor(started);
      throw new CortadoError('UNAUTHORIZED', REFUSED);
    }
    await attempt.released();
    // the credentials were good (PostgreSQL checks them first), the database named is not there: the login's mistake, no outage
    if (e.code === 'DB_UNAVAILABLE' && (e.details?.sqlstate === '3D000' || /the database does not exist/i.test(e.message))) {
      record(false, 'no_such_database');
      throw new CortadoError('VALIDATION_FAILED', `database: there is no database "${String(built.view.database ?? '').slice(0, 64)}" on the server`);
    }
    // FORBIDDEN: the role may do more than read (executor/privilege.ts); the reasons are in the message
    record(false, e.code === 'FORBIDDEN' ? 'privileged_role' : 'unreachable');
    throw e;
  }
  await attempt.succeeded();
  const ttlMs = config.plugins.auth.session_ttl_minutes * 60_000;
  const { token, session } = await deps.sessions.create({ username: input.username, kind: 'auth', source: 'database', db: built.view, db_config: sealed }, ttlMs, now(deps));
  record(true);
  log.info({ user: input.username, kind: 'auth', provider: built.view.provider }, 'database login');
  return { token, session: publicSession(session) };
}

function normalOrigin(o: string): string {
  return o.trim().toLowerCase().replace(/\/+$/, '');
}

export async function autoSession(input: I.AutoSessionRequest, deps: AuthDeps, ctx: Ctx): Promise<I.LoginReply> {
  const { config } = deps;
  enabled(config);
  const auto = config.plugins.auth.auto_session;
  if (!auto.enabled) throw new CortadoError('FORBIDDEN', 'auto sessions are off (plugins.auth.auto_session.enabled is false)');
  if (config.plugins.auth.require_login) throw new CortadoError('FORBIDDEN', 'auto sessions are off while plugins.auth.require_login is on: sign in (POST /auth/login)');
  if (auto.allowed_origins.length) {
    const origin = input.origin ? normalOrigin(input.origin) : '';
    if (!origin || !auto.allowed_origins.some((o) => normalOrigin(o) === origin)) {
      throw new CortadoError('FORBIDDEN', 'this page may not open an auto session (its Origin is not in plugins.auth.auto_session.allowed_origins)');
    }
  }
  const label = auto.label || 'auto-session';
  const { token, session } = await deps.sessions.create(
    { username: label, kind: 'auth', source: 'auto', auto: true, label, db: { provider: config.database.provider } },
    auto.ttl_hours * 3_600_000,
    now(deps),
  );
  deps.bus.publish(LoginEvt, { ...event(ctx, deps), user: label, kind: 'auth', client: input.client, ok: true, source: 'auto' }, ctx);
  return { token, session: publicSession(session) };
}

export async function authLogout(input: { token: string }, deps: AuthDeps, ctx: Ctx): Promise<{ ok: boolean }> {
  const s = await deps.sessions.get(input.token, 'auth', now(deps));
  await deps.sessions.remove(input.token);
  if (s?.id) deps.bus.publish(ScopeEndedEvt, { ...event(ctx, deps), user: s.username, scope: scopeId('session', s.id), reason: 'logout' }, ctx);
  return { ok: true };
}

/** An auth session mints an API token with its own db_config (a discovery token: without its catalog). */
export async function authToken(input: I.AuthTokenRequest, deps: AuthDeps, ctx: Ctx) {
  enabled(deps.config);
  const s = await deps.sessions.get(input.token, 'auth', now(deps));
  if (!s) throw new CortadoError('UNAUTHORIZED', 'not signed in, or the session expired');
  if (s.auto || !s.db_config) throw new CortadoError('FORBIDDEN', 'an auto session cannot mint API tokens: sign in with POST /auth/login');
  let db = s.db_config;
  if (input.discovery) {
    const auth = deps.config.plugins.auth;
    if (!auth.enable_discovery_tokens || db.provider !== 'trino') {
      throw new CortadoError('FORBIDDEN', 'discovery tokens need plugins.auth.enable_discovery_tokens and a Trino session');
    }
    const { catalog: _c, schema: _s, ...rest } = db;
    db = { ...rest, discovery: true };
  }
  return tokenIssue({
    username: s.username,
    label: input.label ?? (input.discovery ? 'discovery token' : 'auth session token'),
    ...(input.ttl_hours !== undefined ? { ttl_hours: input.ttl_hours } : {}),
    db_config: db,
  }, deps, ctx);
}

function scopeOf(scope: string, kind: ScopeInfo['kind'], username: string, expiresAt: string, db: Record<string, unknown>, config: Config): ScopeInfo {
  const provider = typeof db.provider === 'string' && db.provider ? db.provider.toLowerCase() : config.database.provider;
  const raw = provider === 'trino' ? db.catalog : provider === 'bigquery' ? db.project_id : db.database;
  const catalog = typeof raw === 'string' && raw ? raw : undefined;
  const connects = ['host', 'user', 'password', 'catalog', 'schema', 'database', 'project_id', 'credentials_json'].some((k) => db[k] !== undefined && db[k] !== '');
  const discovery = provider === 'trino' && !catalog && config.plugins.auth.enable_discovery_tokens && (db.discovery === true || connects);
  return { scope, kind, username, expires_at: expiresAt, provider, db_config: db, ...(catalog ? { catalog } : {}), discovery };
}

/** `s:<id>` (an auth session) or `t:<id>` (an API token): its db_config (sealed), or UNAUTHORIZED. */
export async function scopeResolve(input: { scope: string }, deps: AuthDeps): Promise<ScopeInfo> {
  const gone = new CortadoError('UNAUTHORIZED', 'the session or token of this request ended (expired, signed out or revoked)');
  const at = now(deps);
  const parsed = parseScope(input.scope);
  const id = parsed?.id ?? '';
  if (parsed?.kind === 'session') {
    const s: SessionRecord | undefined = await deps.sessions.byId(id, at);
    if (!s || s.auto || !s.db_config) throw gone;
    return scopeOf(input.scope, 'session', s.username, s.expires_at, s.db_config, deps.config);
  }
  if (parsed?.kind === 'token') {
    const r = id ? await deps.store.tokens.get(id) : undefined;
    if (!r || r.revoked_at || Date.parse(r.expires_at) <= at) throw gone;
    return scopeOf(input.scope, 'token', r.username, r.expires_at, r.db_config, deps.config);
  }
  throw new CortadoError('VALIDATION_FAILED', 'a scope is s:<session id> or t:<token id>');
}

/**
 * Per-scope database connections (plugins.auth): a request whose context carries a scope
 * (`s:<auth session id>`, `t:<token id>`) runs on an engine of its own, built by the same
 * engine factories from a copy of the config whose database section is overlaid with the
 * scope's db_config (the user's own credentials, catalog, schema). The identity actor resolves
 * a scope (cached here briefly); the db_config arrives sealed and is opened with this process's
 * own SecretBox (config_db.encryption_key), so no password crosses the bus in clear.
 *
 * - One engine per scope, created on first use (concurrent first uses share it), closed when
 *   the scope expires (a timer at its expires_at), when it has been idle for `idleMs`, when the
 *   identity actor says it ended (logout, token revoked or deleted: the ScopeEndedEvt event,
 *   heard by every executor copy), and on stop. An engine still in use closes when its last
 *   user is done.
 * - At most plugins.auth.max_workers database operations of scoped requests run at once, in
 *   this process, across every scope; the others queue, and the wait counts against the
 *   query's timeout (past it: DB_TIMEOUT, nothing ran).
 * - The catalog lock (guard/catalog-lock.ts; MySQL: guard/catalog-lock-mysql.ts) of a request:
 *   for a scope, its catalog or MySQL database (a discovery token: any of allowed_catalogs);
 *   without a scope, the server's, only when plugins.auth.enabled.
 * - The role of a login (probe) and of a scope's own connections (when they open) is checked
 *   like the server's at start (privilege.ts): one that may do more than read is FORBIDDEN
 *   unless database.allow_privileged_role.
 */
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import { CortadoError, toCortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/log.js';
import { dbWorkers } from '../../runtime/metrics.js';
import type { ScopeInfo } from '../../protocol/schemas/scope.js';
import type { DbTable } from '../../protocol/schemas/sql.js';
import { ScopeResolve } from '../../protocol/subjects.js';
import type { Config, DbProviderName } from '../../config/schema.js';
import type { SecretBox } from '../lib/crypto/secrets.js';
import type { DbEngine } from './engines/engine.js';
import { createEngine as defaultCreateEngine } from './engines/index.js';
import { catalogLockFor, type CatalogLock } from './guard/catalog-lock.js';
import { startGuardWorkers } from './guard/isolated.js';
import { mysqlCatalogLockFor } from './guard/catalog-lock-mysql.js';
import { checkScopeRole } from './privilege.js';
import { PostgresEngine } from './engines/postgresql.js';
import { checkPostgresAllowList } from './guard/allow-postgresql.js';
import { checkMysqlAllowList, hasStoredFunctions } from './guard/allow-mysql.js';

/** How long a resolved scope is reused before the identity actor is asked again. */
export const RESOLVE_CACHE_MS = 10_000;
/** A scope's engine unused this long is closed (its pool with it). */
export const SCOPE_IDLE_MS = 10 * 60_000;
const SWEEP_MS = 30_000;
/** setTimeout's largest delay */
const MAX_TIMER_MS = 2_147_483_647;

const PROVIDERS: readonly DbProviderName[] = ['trino', 'postgresql', 'mysql', 'bigquery'];

/** The db_config fields a scope may set, per provider (never a file path, an embedded server or an endpoint). */
const OVERLAY: Readonly<Record<DbProviderName, readonly string[]>> = {
  trino: ['host', 'port', 'user', 'password', 'catalog', 'schema', 'http_scheme'],
  postgresql: ['host', 'port', 'database', 'user', 'password', 'schema'],
  mysql: ['host', 'port', 'database', 'user', 'password'],
  bigquery: ['project_id', 'dataset', 'location', 'credentials_json'],
};

export function providerOf(db: Record<string, unknown>, config: Config): DbProviderName {
  const p = typeof db.provider === 'string' ? db.provider.toLowerCase() : config.database.provider;
  if (!PROVIDERS.includes(p as DbProviderName)) throw new CortadoError('DB_UNAVAILABLE', `the database cannot be reached: the scope names an unknown provider "${String(db.provider)}"`);
  return p as DbProviderName;
}

/** Whether a db_config sets any connection field (an empty scope runs on the server's own engine). */
export function hasConnectionFields(db: Record<string, unknown>, provider: DbProviderName): boolean {
  return OVERLAY[provider].some((k) => db[k] !== undefined && db[k] !== null && db[k] !== '');
}

/**
 * A copy of the config for one scope: database.provider and its section overlaid with the
 * (opened) db_config. Pools are small and open nothing ahead: the scope's own queries fill them.
 */
export function scopedConfig(base: Config, db: Record<string, unknown>, opts: { discovery: boolean }): Config {
  const provider = providerOf(db, base);
  const copy = structuredClone(base);
  copy.database.provider = provider;
  const section = { ...copy.database[provider] } as Record<string, unknown>;
  for (const key of OVERLAY[provider]) {
    const v = db[key];
    if (key === 'port') {
      const n = Number(v);
      if (v !== undefined && v !== null && v !== '' && Number.isInteger(n) && n > 0 && n < 65536) section.port = n;
    } else if (typeof v === 'string') {
      section[key] = v;
    }
  }
  const workers = base.plugins.auth.max_workers;
  if (provider === 'trino' && opts.discovery) {
    section.catalog = '';
    section.schema = '';
  }
  if (provider === 'postgresql') {
    section.embedded = false;
    section.min_connections = 0;
    section.max_connections = Math.max(1, Math.min(Number(section.max_connections) || 1, workers));
  }
  if (provider === 'mysql') section.max_connections = Math.max(1, Math.min(Number(section.max_connections) || 1, workers));
  (copy.database as Record<string, unknown>)[provider] = section;
  return copy;
}

/** The catalog a connection of this config runs in: Trino's catalog, PostgreSQL/MySQL's database, BigQuery's project. */
export function catalogOfConfig(config: Config): string {
  const db = config.database;
  switch (db.provider) {
    case 'trino': return db.trino.catalog;
    case 'postgresql': return db.postgresql.database;
    case 'mysql': return db.mysql.database;
    case 'bigquery': return db.bigquery.project_id;
    default: return '';
  }
}

/** Counting semaphore with a timeout: plugins.auth.max_workers across scopes. */
export class Workers {
  private active = 0;
  private readonly queue: Array<{ grant: () => void }> = [];

  constructor(private readonly max: () => number) {}

  get running(): number {
    return this.active;
  }

  get waiting(): number {
    return this.queue.length;
  }

  /** A slot, within timeoutMs (DB_TIMEOUT otherwise); `waitedMs` is how long the queue took. */
  acquire(timeoutMs: number): Promise<{ release: () => void; waitedMs: number }> {
    const started = Date.now();
    let released = false;
    const slot = () => ({
      waitedMs: Date.now() - started,
      release: () => {
        if (released) return;
        released = true;
        this.active--;
        this.next();
      },
    });
    if (this.active < Math.max(1, this.max())) {
      this.active++;
      return Promise.resolve(slot());
    }
    return new Promise((resolve, reject) => {
      const entry = {
        grant: () => {
          clearTimeout(timer);
          this.active++;
          resolve(slot());
        },
      };
      const timer = setTimeout(() => {
        const i = this.queue.indexOf(entry);
        if (i >= 0) this.queue.splice(i, 1);
        dbWorkers.waiting(this.queue.length);
        reject(new CortadoError('DB_TIMEOUT', `the query waited ${Math.round(timeoutMs)} ms for a free database worker (plugins.auth.max_workers = ${this.max()}) and did not run`, { timeout_ms: timeoutMs, reason: 'max_workers' }));
      }, Math.max(1, timeoutMs));
      this.queue.push(entry);
      dbWorkers.waiting(this.queue.length);
    });
  }

  private next(): void {
    let granted = false;
    while (this.active < Math.max(1, this.max()) && this.queue.length > 0) {
      this.queue.shift()?.grant();
      granted = true;
    }
    if (granted) dbWorkers.waiting(this.queue.length);
  }
}

/** What a request runs on. */
export interface Lease {
  readonly engine: DbEngine;
  /** the catalog lock, when it applies (Trino or MySQL, enforce_catalog_lock, allowed_catalogs) */
  readonly lock: CatalogLock | undefined;
  /** the resolved scope, when the request has one */
  readonly scope: ScopeInfo | undefined;
  /** true when the engine is the scope's own (its database operations count against max_workers) */
  readonly scoped: boolean;
  /** the schemas (lower-cased) introspection may show, by catalog; undefined: no filter */
  readonly visible: ((table: DbTable) => boolean) | undefined;
  release(): void;
}

export interface ScopeRegistryOptions {
  config: Config;
  log: Logger;
  bus: Pick<Bus, 'request'>;
  box: SecretBox;
  /** the server's own engine */
  base: DbEngine;
  createEngine?: (config: Config, log: Logger) => Promise<DbEngine>;
  idleMs?: number;
  sweepMs?: number;
  resolveCacheMs?: number;
  now?: () => number;
}

interface Entry {
  engine: Promise<DbEngine>;
  users: number;
  lastUsed: number;
  ended: boolean;
  timer: NodeJS.Timeout | undefined;
}

export class ScopeRegistry {
  readonly workers: Workers;
  private readonly entries = new Map<string, Entry>();
  private readonly resolved = new Map<string, { info: ScopeInfo; at: number }>();
  private readonly sweeper: NodeJS.Timeout;
  private readonly now: () => number;
  private closed = false;

  constructor(private readonly o: ScopeRegistryOptions) {
    this.now = o.now ?? Date.now;
    this.workers = new Workers(() => o.config.plugins.auth.max_workers);
    this.sweeper = setInterval(() => void this.sweep(), o.sweepMs ?? SWEEP_MS);
    this.sweeper.unref();
  }

  /** How many scopes have an engine open now. */
  get size(): number {
    return this.entries.size;
  }

  has(scope: string): boolean {
    return this.entries.has(scope);
  }

  /** The engine, lock and visibility of a request; release() when done with the engine. */
  async lease(ctx: Ctx): Promise<Lease> {
    if (!ctx.scope) return baseLease(this.o.config, this.o.base);
    if (this.closed) throw new CortadoError('DB_UNAVAILABLE', 'the database cannot be reached: the executor is stopping');
    const info = await this.resolve(ctx.scope, ctx);
    const db = this.open(info);
    const provider = providerOf(db, this.o.config);
    const own = hasConnectionFields(db, provider) || info.discovery || provider !== this.o.config.database.provider;
    const catalog = info.discovery ? '' : info.catalog ?? catalogOfConfig(this.o.config);
    const lock = lockOf(this.o.config, provider, catalog, info.discovery);
    const visible = visibility(this.o.config, provider, catalog, info.discovery);
    if (!own) return { engine: this.o.base, lock, scope: info, scoped: false, visible, release: () => undefined };

    let entry = this.entries.get(ctx.scope);
    if (!entry) {
      entry = this.create(ctx.scope, info, db);
      this.entries.set(ctx.scope, entry);
    }
    entry.users++;
    entry.lastUsed = this.now();
    let engine: DbEngine;
    try {
      engine = await entry.engine;
    } catch (err) {
      this.done(ctx.scope, entry);
      throw err;
    }
    const e = entry;
    const key = ctx.scope;
    let released = false;
    return {
      engine, lock, scope: info, scoped: true, visible,
      release: () => {
        if (released) return;
        released = true;
        this.done(key, e);
      },
    };
  }

  /** Close a scope's engine now (or when its last user is done), and forget its resolution. */
  async end(scope: string, reason: string): Promise<void> {
    this.resolved.delete(scope);
    const entry = this.entries.get(scope);
    if (!entry) return;
    this.entries.delete(scope);
    entry.ended = true;
    clearTimeout(entry.timer);
    this.o.log.info({ scope: scopeLabel(scope), reason }, 'closing the connections of a scope');
    if (entry.users === 0) await this.closeEngine(entry);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    const all = [...this.entries.keys()];
    await Promise.all(all.map((s) => this.end(s, 'stopping')));
  }

  /** An engine for a db_config that is not a scope yet (a login's connection test). */
  async probe(db: Record<string, unknown>): Promise<{ engine: DbEngine; provider: DbProviderName }> {
    const opened = this.openConfig(db);
    const provider = providerOf(opened, this.o.config);
    const cfg = scopedConfig(this.o.config, opened, { discovery: false });
    const quiet = this.o.log.child({ probe: true }, { level: 'error' });
    const engine = await (this.o.createEngine ?? defaultCreateEngine)(cfg, quiet);
    try {
      // a login whose role may do more than read is refused here, before it becomes a session
      await checkScopeRole(engine, this.o.config, this.o.log, String(opened.user ?? ''));
    } catch (err) {
      await engine.close().catch(() => undefined);
      throw err;
    }
    return { engine, provider };
  }

  private async resolve(scope: string, ctx: Ctx): Promise<ScopeInfo> {
    const hit = this.resolved.get(scope);
    const at = this.now();
    if (hit && at - hit.at < (this.o.resolveCacheMs ?? RESOLVE_CACHE_MS) && Date.parse(hit.info.expires_at) > at) return hit.info;
    const info = await this.o.bus.request(ScopeResolve, { scope }, { requestId: ctx.requestId, ...(ctx.user ? { user: ctx.user } : {}) });
    this.resolved.set(scope, { info, at });
    return info;
  }

  private open(info: ScopeInfo): Record<string, unknown> {
    return this.openConfig(info.db_config);
  }

  private openConfig(db: Record<string, unknown>): Record<string, unknown> {
    try {
      return this.o.box.openSecretsIn(db);
    } catch (err) {
      const e = toCortadoError(err);
      // CONFIG_INVALID never crosses the wire: say what is wrong in a code that does
      throw new CortadoError('DB_UNAVAILABLE', `the database cannot be reached: this executor cannot open the scope's credentials (${e.message})`);
    }
  }

  private create(scope: string, info: ScopeInfo, db: Record<string, unknown>): Entry {
    const cfg = scopedConfig(this.o.config, db, { discovery: info.discovery });
    const log = this.o.log.child({ scope: scopeLabel(scope) });
    const engine = (async () => {
      const built = await (this.o.createEngine ?? defaultCreateEngine)(cfg, log);
      try {
        await startGuardWorkers();
        // checked again when the scope's connections open: grants change, and tokens with a db_config had no login
        await checkScopeRole(built, this.o.config, log, String(db.user ?? ''));
        // the scope's database may have functions that shadow allowed names: the allow-list only ever tightens
        if (built instanceof PostgresEngine) await checkPostgresAllowList(() => built.allowListCatalog(), log);
        if (hasStoredFunctions(built)) await checkMysqlAllowList(() => built.storedFunctions(), log, (names) => built.missingBuiltins(names));
      } catch (err) {
        await built.close().catch(() => undefined);
        throw err;
      }
      return built;
    })();
    const entry: Entry = { engine, users: 0, lastUsed: this.now(), ended: false, timer: undefined };
    // a scope whose engine cannot be built is forgotten, so the next request tries again
    engine.catch((err: unknown) => {
      if (this.entries.get(scope) === entry) this.entries.delete(scope);
      clearTimeout(entry.timer);
      log.warn({ err: toCortadoError(err).message }, 'cannot open the connections of a scope');
    });
    const left = Date.parse(info.expires_at) - this.now();
    if (Number.isFinite(left)) {
      entry.timer = setTimeout(() => void this.end(scope, 'expired'), Math.min(Math.max(0, left), MAX_TIMER_MS));
      entry.timer.unref();
    }
    log.info({ provider: cfg.database.provider, expires_at: info.expires_at }, 'opening connections for a scope');
    return entry;
  }

  private done(scope: string, entry: Entry): void {
    entry.users = Math.max(0, entry.users - 1);
    entry.lastUsed = this.now();
    if (entry.ended && entry.users === 0) void this.closeEngine(entry);
    else if (this.entries.get(scope) !== entry && entry.users === 0) void this.closeEngine(entry); // forgotten after a failed open
  }

  private async closeEngine(entry: Entry): Promise<void> {
    try {
      const engine = await entry.engine;
      await engine.close();
    } catch {
      /* an engine that never opened has nothing to close */
    }
  }

  /** Close engines idle for longer than idleMs. */
  async sweep(): Promise<void> {
    const idle = this.o.idleMs ?? SCOPE_IDLE_MS;
    const at = this.now();
    const stale = [...this.entries.entries()].filter(([, e]) => e.users === 0 && at - e.lastUsed >= idle).map(([s]) => s);
    await Promise.all(stale.map((s) => this.end(s, 'idle')));
  }
}

/** The server's own engine, with the lock of requests without a scope (only when plugins.auth.enabled). */
export function baseLease(config: Config, engine: DbEngine): Lease {
  const on = config.plugins.auth.enabled;
  const catalog = catalogOfConfig(config);
  const catalogLess = engine.provider === 'trino' && !catalog;
  return {
    engine,
    lock: on ? lockOf(config, engine.provider, catalog, catalogLess) : undefined,
    scope: undefined,
    scoped: false,
    visible: on ? visibility(config, engine.provider, catalog, catalogLess) : undefined,
    release: () => undefined,
  };
}

function lockOf(config: Config, provider: DbProviderName, catalog: string, discovery: boolean): CatalogLock | undefined {
  const auth = config.plugins.auth;
  if (provider === 'mysql') return mysqlCatalogLockFor({ enforce: auth.enforce_catalog_lock, allowed: auth.allowed_catalogs, database: catalog });
  if (provider !== 'trino') return undefined;
  return catalogLockFor({ enforce: auth.enforce_catalog_lock, allowed: auth.allowed_catalogs, catalog, discovery });
}

/**
 * Which introspected tables a scope may see: with allowed_catalogs, a catalog-less Trino
 * connection sees the allowed catalogs (and their allowed schemas) only; a connection in an
 * allowed catalog (Trino) or database (PostgreSQL, MySQL) sees its allowed_schemas only.
 */
function visibility(config: Config, provider: DbProviderName, catalog: string, catalogLess: boolean): ((t: DbTable) => boolean) | undefined {
  const allowed = config.plugins.auth.allowed_catalogs;
  if (allowed.length === 0) return undefined;
  const specs = new Map(allowed.map((c) => [c.name.toLowerCase(), new Set(c.allowed_schemas.map((s) => s.toLowerCase()))]));
  if (provider === 'trino' && catalogLess) {
    return (t) => {
      const dot = t.schema.indexOf('.');
      if (dot <= 0) return false;
      const schemas = specs.get(t.schema.slice(0, dot).toLowerCase());
      return schemas !== undefined && (schemas.size === 0 || schemas.has(t.schema.slice(dot + 1).toLowerCase()));
    };
  }
  const schemas = specs.get(catalog.toLowerCase());
  if (!schemas || schemas.size === 0) return undefined;
  return (t) => schemas.has(t.schema.toLowerCase());
}

/** A scope as logs show it: its kind and the first characters of its id. */
export function scopeLabel(scope: string): string {
  return scope.length > 12 ? `${scope.slice(0, 12)}…` : scope;
}

/**
 * The catalog cache: one introspection per scope kept for catalog.cache_ttl_seconds; callers
 * that arrive while it loads share the one load.
 */
import type { Ctx } from '../../protocol/headers.js';
import type { SqlIntrospectReply } from '../../protocol/schemas/sql.js';
import { buildCatalog, type Catalog } from './catalog.js';

export interface CatalogSource {
  /** the catalog, from the cache while it is fresh; `refresh` loads it again */
  get(ctx: Ctx, refresh?: boolean): Promise<Catalog>;
}

export interface CatalogCacheOptions {
  load: (ctx: Ctx) => Promise<SqlIntrospectReply>;
  /** 0: load on every call (concurrent calls still share one load) */
  /** a function: read at each use, so a run-time change of catalog.cache_ttl_seconds applies at once */
  ttlSeconds: number | (() => number);
  now?: () => number;
  /**
   * What the loaded tables depend on besides the database: a cached catalog made under another
   * value is not used (the executor hides tables outside plugins.auth.allowed_catalogs, which an
   * admin may change at run time).
   */
  epoch?: () => string;
}

/**
 * Loads through `load`, keeps the result for ttlSeconds, and lets every caller that arrives
 * while a load runs wait for that one (a refresh too: that load started after it was asked).
 * A failed load is not kept: its error goes to the callers that waited for it, the next call
 * tries again. The shared load carries no caller's deadline, so one impatient caller does not
 * fail the others; it is still bounded by the introspection's own timeout.
 */
export function createCatalogCache(opts: CatalogCacheOptions): CatalogSource {
  const now = opts.now ?? Date.now;
  const ttlSeconds = opts.ttlSeconds;
  const ttlOf = (): number => (typeof ttlSeconds === 'function' ? ttlSeconds() : ttlSeconds) * 1000;
  // one cache per database scope (ctx.scope: a plugins.auth session or token sees its own tables); '' = the server's
  const slots = new Map<string, { cached?: { catalog: Catalog; at: number; epoch: string }; inFlight?: Promise<Catalog> }>();

  return {
    get(ctx: Ctx, refresh = false): Promise<Catalog> {
      const key = ctx.scope ?? '';
      let slot = slots.get(key);
      if (!slot) {
        if (slots.size >= MAX_SCOPE_CACHES) {
          const idle = [...slots.entries()].find(([, v]) => !v.inFlight);
          if (idle) slots.delete(idle[0]);
        }
        slots.set(key, (slot = {}));
      }
      const s = slot;
      const epoch = opts.epoch?.() ?? '';
      const ttlMs = ttlOf();
      if (!refresh && s.cached && ttlMs > 0 && now() - s.cached.at < ttlMs && s.cached.epoch === epoch) return Promise.resolve(s.cached.catalog);
      if (s.inFlight) return s.inFlight;
      const shared: Ctx = { requestId: ctx.requestId };
      if (ctx.user !== undefined) shared.user = ctx.user;
      if (ctx.hop !== undefined) shared.hop = ctx.hop;
      if (ctx.scope !== undefined) shared.scope = ctx.scope;
      const load = (async () => {
        try {
          const catalog = buildCatalog(await opts.load(shared));
          if (ttlOf() > 0) s.cached = { catalog, at: now(), epoch };
          else delete s.cached;
          return catalog;
        } finally {
          delete s.inFlight;
        }
      })();
      s.inFlight = load;
      return load;
    },
  };
}

/** Scopes whose catalog is cached at once, at most (the oldest idle one is dropped first). */
const MAX_SCOPE_CACHES = 500;

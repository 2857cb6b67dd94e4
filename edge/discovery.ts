/**
 * Table discovery (plugins.auth.enable_discovery_tokens), one rule for `/auth/discover` and the
 * MCP tool `discover_tables`:
 *
 * - on when plugins.auth is enabled and enable_discovery_tokens is true (what `GET /auth/config`
 *   says as `discovery_enabled`, and what an MCP connection checks when it opens). SPEC.md calls
 *   discovery a distributed-engine (Trino) feature; Cortado offers it on every provider, where
 *   the level above the tables stands for the catalog (see actors/catalog/discover.ts).
 * - a caller whose database scope names its own catalog (a session or token with a catalog, a
 *   database or a project) searches that one only, with its allowed_schemas when it is in
 *   allowed_catalogs; a catalog-less caller (a discovery token) searches every allowed catalog.
 */
import type { Config } from '../config/schema.js';

export interface DiscoverTargets {
  catalogs: Array<{ name: string; allowed_schemas: string[] }>;
  /** the catalog the caller's own tables live in, when its scope names one */
  own_catalog?: string;
}

export function discoveryEnabled(config: Config): boolean {
  const auth = config.plugins.auth;
  return auth.enabled && auth.enable_discovery_tokens;
}

const CATALOG_KEY = { trino: 'catalog', postgresql: 'database', mysql: 'database', bigquery: 'project_id' } as const;

/** The catalog a db_config (a scope) names, for its provider: the Trino catalog, the database, or the BigQuery project. */
export function scopeCatalog(config: Config, db: Readonly<Record<string, unknown>> | undefined): string {
  if (!db) return '';
  const provider = typeof db.provider === 'string' && db.provider.toLowerCase() in CATALOG_KEY ? (db.provider.toLowerCase() as keyof typeof CATALOG_KEY) : config.database.provider;
  const v = db[CATALOG_KEY[provider]];
  return typeof v === 'string' ? v.trim() : '';
}

export function discoverTargets(config: Config, own: string): DiscoverTargets {
  const allowed = config.plugins.auth.allowed_catalogs.map((c) => ({ name: c.name, allowed_schemas: [...c.allowed_schemas] }));
  if (!own) return { catalogs: allowed };
  const spec = allowed.find((c) => c.name.toLowerCase() === own.toLowerCase());
  return { catalogs: [spec ?? { name: own, allowed_schemas: [] }], own_catalog: own };
}

/**
 * Table discovery (`schema.discover`, the MCP tool discover_tables): table names that contain a
 * search text, across the catalogs a discovery token may see. Metadata only: names and kinds
 * from the executor's introspection (the catalog cache), never a row.
 *
 * What a "catalog" is depends on the provider. On Trino it is the Trino catalog (the
 * introspection names schemas `catalog.schema` when no catalog is configured, plain `schema`
 * when one is). Elsewhere the level above the tables stands in for it: an allowed catalog
 * matches the database (PostgreSQL, MySQL) or project (BigQuery) Cortado is connected to, and
 * then its allowed_schemas restrict the schemas; it also matches a schema (MySQL database,
 * BigQuery dataset) of that name directly.
 */
import type { Ctx } from '../../protocol/headers.js';
import type { SchemaDiscoverReply, SchemaDiscoverRequest } from '../../protocol/schemas/policy.js';
import type { Config } from '../../config/schema.js';
import type { CatalogSource } from './cache.js';
import { compareNames, type Catalog, type CatalogEntry } from './catalog.js';

export const DISCOVER_DEFAULT_LIMIT = 100;

/** The catalog and schema a table lives in, as discovery names them. */
export function placeOf(entry: CatalogEntry, catalog: Pick<Catalog, 'provider'>, config: Config, own = '', scoped = false): { catalog: string; schema: string } {
  const schema = entry.table.schema;
  const db = config.database;
  switch (catalog.provider) {
    case 'trino': {
      // a scope with its own catalog introspects only that one: its tables live there
      if (own) return { catalog: own, schema };
      // the server's catalog is where the server's own connection reads; a scope without a
      // catalog (a catalog-less login, a discovery token) reads every catalog, its schemas named
      // `catalog.schema`: labelled with the server's catalog, none of them was ever allowed
      if (db.trino.catalog && !scoped) return { catalog: db.trino.catalog, schema };
      const dot = schema.indexOf('.');
      return dot > 0 ? { catalog: schema.slice(0, dot), schema: schema.slice(dot + 1) } : { catalog: '', schema };
    }
    case 'postgresql':
      return { catalog: own || db.postgresql.database, schema };
    case 'mysql':
      return { catalog: own || db.mysql.database || schema, schema };
    case 'bigquery':
      return { catalog: own || db.bigquery.project_id, schema };
    default:
      return { catalog: '', schema };
  }
}

function allowedIn(place: { catalog: string; schema: string }, spec: SchemaDiscoverRequest['catalogs'][number], trino: boolean): boolean {
  // names compare as login and the catalog lock compare them: case-insensitively
  const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
  if (place.catalog && same(place.catalog, spec.name)) return spec.allowed_schemas.length === 0 || spec.allowed_schemas.some((s) => same(s, place.schema));
  // outside Trino, a catalog may also name the schema level itself
  return !trino && same(place.schema, spec.name);
}

/** The tables of a loaded catalog whose name contains the query, within the allowed catalogs. */
export function discoverIn(catalog: Catalog, input: SchemaDiscoverRequest, config: Config, scoped = false): SchemaDiscoverReply {
  const query = input.query.trim().toLowerCase();
  const limit = input.limit ?? DISCOVER_DEFAULT_LIMIT;
  const trino = catalog.provider === 'trino';
  const found: SchemaDiscoverReply['tables'] = [];
  if (!query || input.catalogs.length === 0) return { tables: [], truncated: false };
  for (const entry of catalog.entries) {
    if (!entry.table.name.toLowerCase().includes(query)) continue;
    const place = placeOf(entry, catalog, config, input.own_catalog?.trim() ?? '', scoped);
    const spec = input.catalogs.find((c) => allowedIn(place, c, trino));
    if (!spec) continue;
    found.push({ catalog: place.catalog || spec.name, schema: place.schema, name: entry.table.name, kind: entry.table.kind });
  }
  found.sort((a, b) => compareNames(a.catalog, b.catalog) || compareNames(a.schema, b.schema) || compareNames(a.name, b.name));
  return { tables: found.slice(0, limit), truncated: found.length > limit };
}

export async function discover(input: SchemaDiscoverRequest, deps: { config: Config; catalog: CatalogSource }, ctx: Ctx): Promise<SchemaDiscoverReply> {
  const catalog = await deps.catalog.get(ctx);
  // the catalog read is the scope's own connection's when the request has a scope
  return discoverIn(catalog, input, deps.config, ctx.scope !== undefined);
}

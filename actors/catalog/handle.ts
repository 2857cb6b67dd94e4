/**
 * The catalog: what the database holds, for people (the table list, one table's columns) and
 * for the model (the schema text of the tables a question needs). The handlers are here; the
 * parts they use are pure and tested on their own:
 *
 * - catalog.ts: one introspection, each table named and indexed by its words;
 * - retrieval.ts: on a large schema, the tables a question needs (scored by the words they share
 *   with it, rarer words counting more, foreign-key neighbours added while there is room);
 * - names.ts: table names as people type them, resolved against the catalog;
 * - schema-text.ts: the schema text the model reads;
 * - cache.ts: the schema from the executor (`sql.introspect`), kept for
 *   catalog.cache_ttl_seconds, one load shared by the callers that arrive while it runs.
 */
import type { Bus, Ctx } from '../../protocol/bus.js';
import type {
  SchemaContextReply,
  SchemaContextRequest,
  SchemaDescribeReply,
  SchemaDescribeRequest,
  SchemaTablesReply,
  SchemaTablesRequest,
  TableSummary,
} from '../../protocol/schemas/catalog.js';
import type { Logger } from '../../protocol/log.js';
import type { ContextReply, ContextRequest } from '../../protocol/schemas/semantic.js';
import { SemanticContext, SqlIntrospect } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import { createCatalogCache, type CatalogSource } from './cache.js';
import type { Catalog, CatalogEntry } from './catalog.js';
import { requireTable, resolveTables } from './names.js';
import { selectTables } from './retrieval.js';
import { renderSchemaText } from './schema-text.js';

export { createCatalogCache, type CatalogCacheOptions, type CatalogSource } from './cache.js';
export { buildCatalog, compareNames, displayName, stem, tokenize, type Catalog, type CatalogEntry } from './catalog.js';
export { closestName, editDistance, parseTableName, requireTable, resolveTable, resolveTables, type Resolution } from './names.js';
export { neighbours, scoreTables, selectTables, type ScoredTable } from './retrieval.js';
export { renderSchemaText, renderTable } from './schema-text.js';


export interface CatalogDeps {
  config: Config;
  catalog: CatalogSource;
  /** the semantic layer's business context of a question (the semantic actor); without it the block stays empty */
  semantic?: (input: ContextRequest, ctx: Ctx) => Promise<ContextReply>;
  log?: Logger;
}

/** The cache the actor uses: introspection asked of the executor over the bus. */
export function busCatalogSource(bus: Pick<Bus, 'request'>, config: Config): CatalogSource {
  return createCatalogCache({
    load: (ctx) => bus.request(SqlIntrospect, {}, ctx),
    ttlSeconds: config.catalog.cache_ttl_seconds,
    epoch: visibilityEpoch(config),
  });
}

/** The settings that decide which tables the executor shows (see CatalogCacheOptions.epoch), as a string that changes with them. */
export function visibilityEpoch(config: Config): () => string {
  let seen: unknown;
  let key = '';
  return () => {
    const auth = config.plugins.auth;
    if (!auth.enabled) return '';
    // a runtime override replaces the array, so the string is made again only then
    if (auth.allowed_catalogs !== seen) {
      seen = auth.allowed_catalogs;
      key = JSON.stringify(auth.allowed_catalogs);
    }
    return key;
  };
}

export function summarize(entry: CatalogEntry): TableSummary {
  const t = entry.table;
  const out: TableSummary = { name: entry.name, schema: t.schema, kind: t.kind, column_count: t.columns.length };
  if (t.comment) out.comment = t.comment;
  return out;
}

export async function tables(input: SchemaTablesRequest, deps: CatalogDeps, ctx: Ctx): Promise<SchemaTablesReply> {
  const catalog = await deps.catalog.get(ctx, input.refresh === true);
  return { tables: catalog.entries.map(summarize) };
}

export async function describe(input: SchemaDescribeRequest, deps: CatalogDeps, ctx: Ctx): Promise<SchemaDescribeReply> {
  const catalog = await deps.catalog.get(ctx);
  const { name, table } = requireTable(catalog, input.table);
  const out: SchemaDescribeReply = { table: name, schema: table.schema, kind: table.kind, columns: table.columns };
  if (table.comment) out.comment = table.comment;
  return out;
}

/** The schema context of one question, from a loaded catalog. */
export function buildContext(catalog: Catalog, input: SchemaContextRequest, maxTables: number): SchemaContextReply {
  const names = input.tables?.length
    ? resolveTables(catalog, input.tables)
    : selectTables(catalog, input.question, input.history ?? [], maxTables);
  return {
    dialect: catalog.dialect,
    schema_text: renderSchemaText(catalog, names),
    business_context: '',
    tables: names,
  };
}

export async function context(input: SchemaContextRequest, deps: CatalogDeps, ctx: Ctx): Promise<SchemaContextReply> {
  const catalog = await deps.catalog.get(ctx);
  const reply = buildContext(catalog, input, deps.config.catalog.max_tables_in_prompt);
  return { ...reply, business_context: await businessContext(catalog, input, reply.tables, deps, ctx) };
}

/**
 * The semantic layer's block for the question and its tables, within catalog.semantic_max_chars.
 * A semantic actor that is absent or fails costs the block, never the question: a warning, and ''.
 */
export async function businessContext(catalog: Catalog, input: SchemaContextRequest, tables: readonly string[], deps: CatalogDeps, ctx: Ctx): Promise<string> {
  const maxChars = deps.config.catalog.semantic_max_chars;
  if (!deps.semantic || maxChars === 0) return '';
  try {
    const reply = await deps.semantic({
      question: input.question.slice(0, 4000),
      tables: tables.slice(0, 500),
      default_schema: catalog.defaultSchema,
      dialect: catalog.dialect,
      max_chars: maxChars,
    }, ctx);
    return reply.injected ? reply.block : '';
  } catch (err) {
    deps.log?.warn({ rid: ctx.requestId, err: (err as Error).message }, 'the semantic layer did not answer: the question goes on without its business context');
    return '';
  }
}

/** The semantic actor asked over the bus. */
export function busSemantic(bus: Pick<Bus, 'request'>): NonNullable<CatalogDeps['semantic']> {
  return (input, ctx) => bus.request(SemanticContext, input, ctx);
}

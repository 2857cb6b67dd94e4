/**
 * The catalog: what the database holds, for people (the table list, one table's columns) and
 * for the model (the schema text of the tables a question needs). The handlers are here; the
 * parts they use are pure and tested on their own:
 *
 * - catalog.ts: one introspection, each table named and indexed by its words;
 * - retrieval.ts: on a large schema, the tables a question needs (field-weighted BM25 over
 *   names, columns, comments and the semantic layer's words in lexical.ts; copies folded onto
 *   their originals in families.ts; dates and literals apart in question.ts; literals matched
 *   to known values in values.ts; room kept for the foreign-key paths that join the tables);
 * - model-pick.ts: with catalog.linking: model, the model picks the tables from the ranking's
 *   best ones (a compact candidate list), the ranking's choice standing on any failure;
 * - names.ts: table names as people type them, resolved against the catalog;
 * - schema-text.ts: the schema text the model reads;
 * - cache.ts: the schema from the executor (`sql.introspect`), kept for
 *   catalog.cache_ttl_seconds, one load shared by the callers that arrive while it runs.
 */
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import type {
  Ambiguity,
  SchemaContextReply,
  SchemaContextRequest,
  SchemaDescribeReply,
  SchemaDescribeRequest,
  SchemaTablesReply,
  SchemaTablesRequest,
  TableSummary,
} from '../../protocol/schemas/catalog.js';
import type { Logger } from '../../runtime/log.js';
import type { ContextReply, ContextRequest, SemanticEntity, SemanticMetric } from '../../protocol/schemas/semantic.js';
import type { ColumnLabel } from '../../protocol/schemas/common.js';
import { SemanticContext, SqlIntrospect, SqlProfile, SqlValues } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import { createCatalogCache, type CatalogSource } from './cache.js';
import type { Catalog, CatalogEntry } from './catalog.js';
import { metricAmbiguity } from './metric-ambiguity.js';
import { editDistance, requireTable, resolveTables } from './names.js';
import { linkTables, originalName, type Linked, type LinkOptions } from './retrieval.js';
import { candidateTables, pickTables, type PickOutcome } from './model-pick.js';
import { readQuestion } from './question.js';
import { renderSchemaText } from './schema-text.js';
import { buildThesaurus, defaultThesaurus, type Thesaurus } from './thesaurus.js';
import { createSemanticTerms, type SemanticTermsSource } from './semantic-terms.js';
import {
  createValueIndex, createValueSource, literalMisses, lookupDates, lookupValues, matchLiterals, VALUE_TABLES,
  type KnownValues, type ValueHit, type ValueIndex, type ValueIndexSource, type ValueSource, type WholeColumns,
} from './values.js';
import { lexicalIndex } from './lexical.js';
import { stem } from './catalog.js';
import type { LlmCompleteReply, LlmCompleteRequest } from '../../protocol/schemas/llm.js';

export { createCatalogCache, type CatalogCacheOptions, type CatalogSource } from './cache.js';
export { buildCatalog, compareNames, displayName, stem, tokenize, type Catalog, type CatalogEntry } from './catalog.js';
export { closestName, editDistance, parseTableName, requireTable, resolveTable, resolveTables, type Resolution } from './names.js';
export { linkTables, neighbours, scoreTables, selectTables, type Linked, type LinkOptions, type ScoredTable } from './retrieval.js';
export { createSemanticTerms, injectable, semanticTerms, type KeptTerms, type SemanticTerms, type SemanticTermsSource } from './semantic-terms.js';
export { createValueIndex, createValueSource, literalMisses, lookupDates, lookupValues, periodsOf, matchLiterals, valueMatches, type ValueIndex, type ValueIndexSource, type KnownValues, type ValueHit, type ValueMiss, type ValueSource, type WholeColumns } from './values.js';
export { renderSchemaText, renderTable } from './schema-text.js';
export { candidateLine, candidateTables, dataLine, pickPrompt, pickTables, renderCandidates, withJoinPaths, type PickOutcome, type PickSettings } from './model-pick.js';


export interface CatalogDeps {
  config: Config;
  catalog: CatalogSource;
  /** the semantic layer's business context of a question (the semantic actor); without it the block stays empty */
  semantic?: (input: ContextRequest, ctx: Ctx) => Promise<ContextReply>;
  /** the semantic layer's synonyms and descriptions by table, for the ranking (kept until evt.semantic.changed) */
  semanticTerms?: SemanticTermsSource;
  /** known column values (sql.profile), for the question's literals where the value index has no statistics */
  values?: ValueSource;
  /** every table's low-cardinality values (sql.values), for any phrase of the question */
  valueIndex?: ValueIndexSource;
  /** the LLM actor (llm.complete): catalog.linking: model asks it to pick the tables; absent, the ranking's choice stands */
  complete?: (input: LlmCompleteRequest, ctx: Ctx) => Promise<LlmCompleteReply>;
  log?: Logger;
}

/** The ranking's inputs besides the catalog: the semantic layer's words, the literals found among known values. */
export interface ContextOptions extends LinkOptions {
  valueHits?: ReadonlyMap<string, readonly ValueHit[]>;
  /** a literal that no known value holds, while a column known whole has values close to it: asked, not guessed */
  valueAmbiguity?: Ambiguity;
}

/** The cache the actor uses: introspection asked of the executor over the bus. */
export function busCatalogSource(bus: Pick<Bus, 'request'>, config: Config): CatalogSource {
  return createCatalogCache({
    load: (ctx) => bus.request(SqlIntrospect, {}, ctx),
    ttlSeconds: () => config.catalog.cache_ttl_seconds,
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

/** The ranking's choice for a question, or undefined when the caller named the tables. */
export function linkFor(catalog: Catalog, input: SchemaContextRequest, maxTables: number, opts: ContextOptions = {}): Linked | undefined {
  return input.tables?.length
    ? undefined
    : linkTables(catalog, input.question, input.history ?? [], maxTables, { ...opts, clarified: [...(opts.clarified ?? []), ...(input.clarified ?? [])] });
}

/**
 * The schema context of one question, from a loaded catalog: the tables the caller named, else
 * `linked` (the ranking's choice), else `chosen` when given (the model's picks, model-pick.ts).
 */
export function buildContext(
  catalog: Catalog,
  input: SchemaContextRequest,
  maxTables: number,
  opts: ContextOptions = {},
  linked: Linked | undefined = linkFor(catalog, input, maxTables, opts),
  chosen?: readonly string[],
): SchemaContextReply {
  const names = linked ? [...(chosen ?? linked.tables)] : resolveTables(catalog, input.tables ?? []);
  // beside a column, the known values that matched a literal of the question
  const values = new Map<string, Map<string, string[]>>();
  for (const hits of opts.valueHits?.values() ?? []) {
    for (const h of hits) {
      if (!names.includes(h.table)) continue;
      const cols = values.get(h.table) ?? new Map<string, string[]>();
      cols.set(h.column, [...new Set([...(cols.get(h.column) ?? []), ...h.values])].slice(0, 5));
      values.set(h.table, cols);
    }
  }
  const reply: SchemaContextReply = {
    dialect: catalog.dialect,
    schema_text: renderSchemaText(catalog, names, values),
    business_context: '',
    tables: names,
  };
  // a tie between two tables the model settled (it chose one of them) is asked no more
  const tie = linked?.ambiguity;
  const settled = chosen && tie && tie.choices.every((c) => c.kind === 'table') && tie.choices.filter((c) => chosen.includes(c.value)).length === 1;
  if (tie && !settled) reply.ambiguity = tie;
  return reply;
}

/**
 * What the ranking needs besides the catalog: the semantic layer's words, and where the
 * question's literals occur among the best tables' known values (asked only when it has some).
 */
/** The thesaurus of a configuration: the shipped one, with catalog.synonyms added (made again when they change). */
const thesauri = new WeakMap<object, Thesaurus>();
export function thesaurusOf(config: Config): Thesaurus {
  const extra = config.catalog.synonyms ?? {};
  if (!Object.keys(extra).length) return defaultThesaurus();
  let t = thesauri.get(extra);
  if (!t) {
    t = buildThesaurus(extra);
    thesauri.set(extra, t);
  }
  return t;
}

export async function contextOptions(catalog: Catalog, input: SchemaContextRequest, deps: CatalogDeps, ctx: Ctx): Promise<ContextOptions> {
  const opts: ContextOptions = { thesaurus: thesaurusOf(deps.config), lexicon: deps.config.catalog.lexicon !== false };
  const terms = await deps.semanticTerms?.get(ctx, catalog.defaultSchema);
  if (terms) opts.semantic = terms.docs;
  // the value index, where the catalog is too large to send whole: a phrase of the question that
  // some table holds as a value ("Speedy Express", "seafood") brings that table, wherever it ranks
  let index: ValueIndex | undefined;
  if (deps.valueIndex && !input.tables?.length && catalog.entries.length > deps.config.catalog.max_tables_in_prompt) {
    index = await deps.valueIndex.get(catalog, ctx);
    if (index) {
      const words = lexicalIndex(catalog);
      // a word the schema uses, or one the business thesaurus maps to a word it uses ("movies" where
      // tables say film), names tables: it is not looked up alone as a value
      const thesaurus = opts.thesaurus;
      const schemaWord = (w: string): boolean =>
        words.has(stem(w)) || [stem(w), stem(w.replace(/s$/, ''))].some((k) => thesaurus?.get(k)?.some((r) => words.has(r.term)));
      const hits = lookupValues(input.question, index, schemaWord, (t) => originalName(catalog, t));
      if (hits.size) opts.valueHits = hits;
      // the question's years and months among the tables' date ranges ("orders placed in 1995":
      // the source whose data covers 1995)
      const dates = lookupDates(input.question, index, (t) => originalName(catalog, t));
      if (dates.size) opts.dateHits = dates;
    }
  }
  // where the engine keeps value statistics, the index holds what a profile of the best tables
  // would read from them: the literals are looked up there, with no sql.profile (which reads the
  // database's whole catalog at every call: seconds on thousands of tables)
  const byIndex = index?.statistics === true;
  if ((!deps.values && !byIndex) || !readQuestion(input.question).literals.length) return opts;
  const first = linkTables(catalog, input.question, input.history ?? [], deps.config.catalog.max_tables_in_prompt, opts);
  if (!first.literals.length) return opts;
  const pinned = input.tables?.length ? resolveTables(catalog, input.tables) : [];
  const tables = pinned.length ? pinned : first.candidates;
  let known: KnownValues;
  let whole: WholeColumns;
  if (index && byIndex) {
    known = new Map();
    for (const name of tables.slice(0, VALUE_TABLES)) {
      const columns = index.known.get(name);
      if (columns) known.set(name, columns);
    }
    whole = index.whole;
  } else {
    known = await deps.values!.get(catalog, tables, ctx);
    whole = deps.values!.whole(ctx);
  }
  const hits = matchLiterals(first.literals, known);
  // the index's hits and the best tables' stay together: the best tables alone would drop a
  // source the index found the value in
  if (opts.valueHits) {
    for (const [lit, h] of opts.valueHits) {
      const had = hits.get(lit) ?? [];
      const seen = new Set(had.map((x) => `${x.table}\u0000${x.column}`));
      hits.set(lit, [...had, ...h.filter((x) => !seen.has(`${x.table}\u0000${x.column}`))]);
    }
  }
  if (hits.size) opts.valueHits = hits;
  // a literal whose words are all settled (clarified, or the words of a meaning the assistant pinned into the question) is no typo
  const clarified = new Set((input.clarified ?? []).map((w) => w.toLowerCase()));
  const settled = (lit: string): boolean => clarified.has(lit.toLowerCase())
    || lit.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((w) => w.length > 1).every((w) => clarified.has(w));
  const misses = literalMisses(first.literals, hits, known, whole, editDistance).filter((m) => !settled(m.literal));
  // never a masked column's value: the executor leaves those out of what the catalog knows (values.ts)
  const miss = misses[0];
  if (miss) {
    const shown = miss.near.map((n) => `'${n.value}'`).join(', ');
    opts.valueAmbiguity = {
      word: miss.literal,
      choices: miss.near.map((n) => ({ label: `${n.value} (${n.table}.${n.column})`, value: n.value, kind: 'value' as const })),
      question: `I found no '${miss.literal}' in the data. Did you mean ${miss.near.length === 1 ? shown : `one of ${shown}`}?`,
    };
  }
  return opts;
}

export async function context(input: SchemaContextRequest, deps: CatalogDeps, ctx: Ctx): Promise<SchemaContextReply> {
  const catalog = await deps.catalog.get(ctx);
  const opts = await contextOptions(catalog, input, deps, ctx);
  const cfg = deps.config.catalog;
  const maxTables = cfg.max_tables_in_prompt;
  // catalog.linking: model asks the ranking for a longer list of its best tables, for the model to pick from
  const byModel = cfg.linking === 'model' && !input.tables?.length && catalog.entries.length > maxTables;
  const linked = linkFor(catalog, input, maxTables, byModel ? { ...opts, candidates: cfg.linking_max_candidates } : opts);
  let picked: PickOutcome | undefined;
  if (byModel && linked) {
    const candidates = candidateTables(catalog, linked.tables, linked.candidates, cfg.linking_max_candidates);
    picked = await pickTables(catalog, candidates, input, {
      maxTables, maxCandidates: cfg.linking_max_candidates, maxChars: cfg.linking_max_chars, timeoutMs: cfg.linking_timeout_ms,
    }, { ...(deps.complete ? { complete: deps.complete } : {}), ...(deps.log ? { log: deps.log } : {}) }, ctx);
  }
  const reply = buildContext(catalog, input, maxTables, opts, linked, picked?.linking === 'model' ? picked.tables : undefined);
  const semantic = await semanticPart(catalog, input, reply.tables, deps, ctx);
  // a word two tables tie for (the ranking's), else a literal no value holds, else one two defined metrics tie for
  const ambiguity = reply.ambiguity ?? opts.valueAmbiguity ?? metricAmbiguity(input.question, semantic.metrics, input.clarified);
  const how = linked ? { linking: picked?.linking ?? 'lexical' as const } : {};
  const spent = picked && picked.usage.llm_calls > 0 ? { usage: picked.usage } : {};
  const labels = semantic.labels?.length ? { column_labels: semantic.labels } : {};
  return { ...reply, business_context: semantic.block, ...labels, ...(ambiguity ? { ambiguity } : {}), ...how, ...spent };
}

/**
 * The semantic layer's block for the question and its tables, within catalog.semantic_max_chars.
 * A semantic actor that is absent or fails costs the block, never the question: a warning, and ''.
 */
export async function businessContext(catalog: Catalog, input: SchemaContextRequest, tables: readonly string[], deps: CatalogDeps, ctx: Ctx): Promise<string> {
  return (await semanticPart(catalog, input, tables, deps, ctx)).block;
}

/** The block, and the active metrics it shows (for metricAmbiguity): none when the block is not injected. */
/**
 * The names for people of the columns an answer may hold: each column of the layer's entities
 * whose display name says more than its name, and each metric (display name, format_type), by
 * column name. A name two entities label differently is left out (the page humanises it).
 */
export function columnLabels(entities: readonly SemanticEntity[], metrics: readonly SemanticMetric[]): ColumnLabel[] {
  const out = new Map<string, ColumnLabel | null>();
  const add = (l: ColumnLabel): void => {
    const had = out.get(l.name);
    if (had === undefined) out.set(l.name, l);
    else if (had && (had.label !== l.label || had.format !== l.format)) out.set(l.name, null);
  };
  for (const e of entities) {
    for (const c of e.columns) if (c.display_name && c.display_name !== c.name) add({ name: c.name, label: c.display_name });
  }
  for (const m of metrics) {
    add({ name: m.name, ...(m.display_name && m.display_name !== m.name ? { label: m.display_name } : {}), ...(m.format_type ? { format: m.format_type } : {}) });
  }
  return [...out.values()].filter((l): l is ColumnLabel => l !== null && (l.label !== undefined || l.format !== undefined)).slice(0, 2000);
}

async function semanticPart(catalog: Catalog, input: SchemaContextRequest, tables: readonly string[], deps: CatalogDeps, ctx: Ctx): Promise<{ block: string; metrics: SemanticMetric[]; labels?: ColumnLabel[] }> {
  const none = { block: '', metrics: [] };
  const maxChars = deps.config.catalog.semantic_max_chars;
  if (!deps.semantic || maxChars === 0) return none;
  // the whole layer (kept; asked once) says whether any block can be injected: when not (memory
  // storage, no entity), asking for this question's block is a bus request for ''
  const kept = await deps.semanticTerms?.get(ctx, catalog.defaultSchema);
  if (kept && !kept.injectable) return none;
  try {
    const reply = await deps.semantic({
      question: input.question.slice(0, 4000),
      tables: tables.slice(0, 500),
      default_schema: catalog.defaultSchema,
      dialect: catalog.dialect,
      max_chars: maxChars,
    }, ctx);
    return reply.injected ? { block: reply.block, metrics: reply.metrics, labels: columnLabels(reply.entities, reply.metrics) } : none;
  } catch (err) {
    deps.log?.warn({ rid: ctx.requestId, err: (err as Error).message }, 'the semantic layer did not answer: the question goes on without its business context');
    return none;
  }
}

/** The whole semantic layer's words, asked over the bus (the actor drops them on evt.semantic.changed). */
export function busSemanticTerms(bus: Pick<Bus, 'request'>, config?: Config): SemanticTermsSource {
  // kept until evt.semantic.changed, and at most catalog.cache_ttl_seconds (5 min when 0): an event missed while the broker was away
  const ttlMs = (): number => (config?.catalog.cache_ttl_seconds || 300) * 1000;
  return createSemanticTerms((input, ctx) => bus.request(SemanticContext, input, ctx), { ttlMs });
}

/** Known column values from the executor's sql.profile, kept for catalog.cache_ttl_seconds. */
export function busValues(bus: Pick<Bus, 'request'>, config: Config): ValueSource {
  return createValueSource((input, ctx) => bus.request(SqlProfile, input, ctx), () => Math.max(60, config.catalog.cache_ttl_seconds));
}

/** The value index from the executor's sql.values, kept for catalog.cache_ttl_seconds (a minute at least). */
export function busValueIndex(bus: Pick<Bus, 'request'>, config: Config): ValueIndexSource {
  return createValueIndex((ctx) => bus.request(SqlValues, {}, ctx), () => Math.max(60, config.catalog.cache_ttl_seconds));
}

/** The semantic actor asked over the bus. */
export function busSemantic(bus: Pick<Bus, 'request'>): NonNullable<CatalogDeps['semantic']> {
  return (input, ctx) => bus.request(SemanticContext, input, ctx);
}

/**
 * The catalog: what the database holds, for people (the table list, one table's columns) and
 * for the model (the schema text of the tables a question needs).
 *
 * The schema comes from the executor (`sql.introspect`) and is kept for
 * catalog.cache_ttl_seconds; callers that arrive while it loads share the one load. On a large
 * schema, retrieval keeps the prompt small: each table is scored by the words it shares with the
 * question (name, columns, comments; rarer words count more), the best ones are taken and their
 * foreign-key neighbours added while there is room.
 *
 * Everything below the handlers is pure and exported for the unit tests.
 */
import type { Bus, Ctx } from '../../protocol/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import type { Dialect } from '../../protocol/schemas/common.js';
import type {
  SchemaContextReply,
  SchemaContextRequest,
  SchemaDescribeReply,
  SchemaDescribeRequest,
  SchemaTablesReply,
  SchemaTablesRequest,
  TableSummary,
} from '../../protocol/schemas/catalog.js';
import type { DbTable, SqlIntrospectReply } from '../../protocol/schemas/sql.js';
import { SqlIntrospect } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import { DIALECT_NAMES } from '../lib/prompting.js';

// ---- the catalog: one introspection, named and indexed ------------------------------------

export interface CatalogEntry {
  /** the name to use in SQL: unqualified in the default schema, `schema.name` elsewhere */
  readonly name: string;
  readonly table: DbTable;
  /** search term → weight of the best field it appears in (name 3, column 1, comment 0.5) */
  readonly terms: ReadonlyMap<string, number>;
}

export interface Catalog {
  readonly dialect: Dialect;
  readonly provider: string;
  readonly defaultSchema: string;
  /** sorted by name */
  readonly entries: readonly CatalogEntry[];
  /** in how many tables each search term appears */
  readonly docFreq: ReadonlyMap<string, number>;
}

const WEIGHT_NAME = 3;
const WEIGHT_COLUMN = 1;
const WEIGHT_COMMENT = 0.5;
/** words of earlier questions count for less than the question's own */
const WEIGHT_HISTORY = 0.5;
/** a table is a primary pick when it scores at least this share of the best table's score */
const RELEVANCE_CUTOFF = 0.2;

export function displayName(table: Pick<DbTable, 'schema' | 'name'>, defaultSchema: string): string {
  return table.schema === defaultSchema ? table.name : `${table.schema}.${table.name}`;
}

/** Order by name, case-insensitively, then by code point: the same for every locale. */
export function compareNames(a: string, b: string): number {
  const la = a.toLowerCase();
  const lb = b.toLowerCase();
  if (la !== lb) return la < lb ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

export function buildCatalog(reply: SqlIntrospectReply): Catalog {
  const entries: CatalogEntry[] = reply.tables.map((table) => ({
    name: displayName(table, reply.default_schema),
    table,
    terms: tableTerms(table),
  }));
  entries.sort((a, b) => compareNames(a.name, b.name));
  const docFreq = new Map<string, number>();
  for (const e of entries) for (const term of e.terms.keys()) docFreq.set(term, (docFreq.get(term) ?? 0) + 1);
  return { dialect: reply.dialect, provider: reply.provider, defaultSchema: reply.default_schema, entries, docFreq };
}

function tableTerms(table: DbTable): Map<string, number> {
  const terms = new Map<string, number>();
  const add = (text: string | undefined, weight: number): void => {
    if (!text) return;
    for (const term of termSet(text)) if ((terms.get(term) ?? 0) < weight) terms.set(term, weight);
  };
  add(table.name, WEIGHT_NAME);
  add(table.comment, WEIGHT_COMMENT);
  for (const c of table.columns) {
    add(c.name, WEIGHT_COLUMN);
    add(c.comment, WEIGHT_COMMENT);
  }
  return terms;
}

// ---- words ----------------------------------------------------------------------------------

/** Words too common in questions to say anything about a table. */
const STOP_WORDS: ReadonlySet<string> = new Set([
  'a', 'all', 'an', 'and', 'any', 'are', 'as', 'at', 'be', 'by', 'can', 'did', 'do', 'does', 'each', 'for', 'from',
  'give', 'had', 'has', 'have', 'how', 'i', 'in', 'is', 'it', 'its', 'list', 'many', 'me', 'much', 'my', 'of', 'on',
  'or', 'our', 'per', 'please', 'show', 'tell', 'than', 'that', 'the', 'their', 'them', 'there', 'these', 'this',
  'those', 'to', 'us', 'was', 'we', 'were', 'what', 'when', 'where', 'which', 'who', 'whose', 'why', 'with', 'you',
]);

/**
 * A word reduced to a rough common form: `orders` and `order`, `categories` and `category`,
 * `boxes` and `box` meet; `status`, `address` and `analysis` stay whole.
 */
export function stem(word: string): string {
  const w = word.toLowerCase();
  if (w.length <= 3) return w;
  if (w.endsWith('ies')) return `${w.slice(0, -3)}y`;
  if (w.endsWith('sses') || w.endsWith('uses')) return w.slice(0, -2);
  if (/(?:ch|sh|x|z)es$/.test(w)) return w.slice(0, -2);
  if (w.endsWith('ss') || w.endsWith('us') || w.endsWith('is')) return w;
  if (w.endsWith('s')) return w.slice(0, -1);
  return w;
}

/**
 * The search terms of a text: split on anything not a letter or digit (so snake_case splits)
 * and at camelCase humps, lowercased, stemmed, without stop words and one-letter words.
 */
export function tokenize(text: string): string[] {
  return [...termSet(text)];
}

function termSet(text: string): Set<string> {
  const out = new Set<string>();
  const spaced = text.replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2').replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1 $2');
  for (const raw of spaced.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (raw.length < 2 || STOP_WORDS.has(raw)) continue;
    out.add(stem(raw));
  }
  return out;
}

// ---- retrieval ------------------------------------------------------------------------------

export interface ScoredTable {
  name: string;
  score: number;
}

/**
 * How well each table matches the words: for every word the table holds, the weight of the
 * best field it is in (name, column, comment) times how rare the word is across the schema.
 * Tables that share no word are left out; the rest come best first.
 */
export function scoreTables(catalog: Catalog, question: string, history: readonly string[] = []): ScoredTable[] {
  const wanted = new Map<string, number>();
  for (const h of history) for (const term of termSet(h)) wanted.set(term, Math.max(wanted.get(term) ?? 0, WEIGHT_HISTORY));
  for (const term of termSet(question)) wanted.set(term, 1);
  const n = catalog.entries.length;
  const out: ScoredTable[] = [];
  for (const e of catalog.entries) {
    let score = 0;
    for (const [term, queryWeight] of wanted) {
      const fieldWeight = e.terms.get(term);
      if (fieldWeight === undefined) continue;
      const idf = Math.log(1 + n / (catalog.docFreq.get(term) ?? 1));
      score += queryWeight * fieldWeight * idf;
    }
    if (score > 0) out.push({ name: e.name, score });
  }
  out.sort((a, b) => b.score - a.score || compareNames(a.name, b.name));
  return out;
}

/** Tables this one points at (outgoing) and tables that point at it (incoming), by name. */
export function neighbours(catalog: Catalog, name: string): { outgoing: string[]; incoming: string[] } {
  const entry = catalog.entries.find((e) => e.name === name);
  if (!entry) return { outgoing: [], incoming: [] };
  const outgoing = new Set<string>();
  for (const fk of entry.table.foreign_keys ?? []) {
    const target = displayName({ schema: fk.ref_schema, name: fk.ref_table }, catalog.defaultSchema);
    if (target !== name) outgoing.add(target);
  }
  const incoming = new Set<string>();
  for (const e of catalog.entries) {
    if (e.name === name) continue;
    if ((e.table.foreign_keys ?? []).some((fk) => fk.ref_schema === entry.table.schema && fk.ref_table === entry.table.name)) {
      incoming.add(e.name);
    }
  }
  return { outgoing: [...outgoing], incoming: [...incoming] };
}

/**
 * The tables to put in the prompt for a question, by name, sorted.
 *
 * - the whole schema when it fits in `max` tables;
 * - else the tables that match the question well (at least a fifth of the best score), at most
 *   `max`, then their foreign-key neighbours (the ones they point at first) while under `max`;
 * - when no table shares a word with the question, the `max` largest tables.
 */
export function selectTables(catalog: Catalog, question: string, history: readonly string[], max: number): string[] {
  const all = catalog.entries;
  if (all.length <= max) return all.map((e) => e.name);
  const scored = scoreTables(catalog, question, history);
  const best = scored[0];
  if (!best) {
    const bySize = [...all].sort((a, b) => (b.table.row_estimate ?? -1) - (a.table.row_estimate ?? -1) || compareNames(a.name, b.name));
    return bySize.slice(0, max).map((e) => e.name).sort(compareNames);
  }
  const scoreOf = new Map(scored.map((s) => [s.name, s.score]));
  const sizeOf = new Map(all.map((e) => [e.name, e.table.row_estimate ?? -1]));
  const chosen = scored.filter((s) => s.score >= best.score * RELEVANCE_CUTOFF).slice(0, max).map((s) => s.name);
  const picked = new Set(chosen);

  const byPriority = (a: string, b: string): number =>
    (scoreOf.get(b) ?? 0) - (scoreOf.get(a) ?? 0) || (sizeOf.get(b) ?? -1) - (sizeOf.get(a) ?? -1) || compareNames(a, b);
  const outgoing = new Set<string>();
  const incoming = new Set<string>();
  for (const name of chosen) {
    const n = neighbours(catalog, name);
    for (const o of n.outgoing) if (!picked.has(o)) outgoing.add(o);
    for (const i of n.incoming) if (!picked.has(i)) incoming.add(i);
  }
  for (const candidate of [...[...outgoing].sort(byPriority), ...[...incoming].sort(byPriority)]) {
    if (picked.size >= max) break;
    picked.add(candidate);
  }
  return [...picked].sort(compareNames);
}

// ---- names ------------------------------------------------------------------------------------

interface NamePart {
  text: string;
  /** quoted: matches exactly; bare: case-insensitively */
  quoted: boolean;
}

/** `sales."Orders"` → [{sales, bare}, {Orders, quoted}]; "" or `` ` `` quote, doubled to escape. */
export function parseTableName(input: string): NamePart[] | undefined {
  const s = input.trim();
  const parts: NamePart[] = [];
  let i = 0;
  while (i <= s.length) {
    const q = s[i];
    if (q === '"' || q === '`') {
      let text = '';
      let j = i + 1;
      for (;;) {
        if (j >= s.length) return undefined; // unterminated
        if (s[j] === q) {
          if (s[j + 1] === q) {
            text += q;
            j += 2;
            continue;
          }
          break;
        }
        text += s[j];
        j += 1;
      }
      parts.push({ text, quoted: true });
      i = j + 1;
    } else {
      let j = i;
      while (j < s.length && s[j] !== '.') j += 1;
      const text = s.slice(i, j).trim();
      if (!text) return undefined;
      parts.push({ text, quoted: false });
      i = j;
    }
    if (i >= s.length) break;
    if (s[i] !== '.') return undefined;
    i += 1;
    if (i >= s.length) return undefined; // trailing dot
  }
  return parts.length ? parts : undefined;
}

export type Resolution =
  | { found: CatalogEntry }
  | { missing: true; suggestion?: string }
  | { ambiguous: string[] };

function same(part: NamePart, actual: string): boolean {
  return part.quoted ? part.text === actual : part.text.toLowerCase() === actual.toLowerCase();
}

/**
 * Which table a name means: `orders`, `sales.orders` or quoted identifiers (`"Orders"`,
 * `sales."Order Lines"`: exact case). Bare words match case-insensitively; when that leaves
 * several, the one spelt exactly wins, and an unqualified name prefers the default schema.
 */
export function resolveTable(catalog: Catalog, input: string): Resolution {
  const exact = catalog.entries.find((e) => e.name === input.trim());
  if (exact) return { found: exact };
  const parts = parseTableName(input);
  const last = parts?.at(-1);
  if (!parts || !last) return missing(catalog, input);
  const schemaParts = parts.slice(0, -1);
  const schema: NamePart | undefined = schemaParts.length
    ? { text: schemaParts.map((p) => p.text).join('.'), quoted: schemaParts.every((p) => p.quoted) }
    : undefined;

  let hits = catalog.entries.filter((e) => same(last, e.table.name) && (!schema || same(schema, e.table.schema)));
  if (hits.length > 1 && !schema) {
    const inDefault = hits.filter((e) => e.table.schema === catalog.defaultSchema);
    if (inDefault.length) hits = inDefault;
  }
  if (hits.length > 1) {
    const spelt = hits.filter((e) => e.table.name === last.text && (!schema || e.table.schema === schema.text));
    if (spelt.length) hits = spelt;
  }
  const [only] = hits;
  if (only && hits.length === 1) return { found: only };
  if (hits.length > 1) return { ambiguous: hits.map((e) => e.name) };
  return missing(catalog, input);
}

function missing(catalog: Catalog, input: string): Resolution {
  const suggestion = closestName(catalog, input);
  return suggestion === undefined ? { missing: true } : { missing: true, suggestion };
}

/** The table name nearest to a mistyped one (edit distance, case-insensitive), if near enough. */
export function closestName(catalog: Catalog, input: string): string | undefined {
  const want = input.trim().replace(/["`]/g, '').toLowerCase();
  if (!want) return undefined;
  let best: { name: string; d: number } | undefined;
  for (const e of catalog.entries) {
    const d = Math.min(editDistance(want, e.name.toLowerCase()), editDistance(want, e.table.name.toLowerCase()));
    // on a tie, the shorter name: the table in the default schema over its namesakes elsewhere
    if (!best || d < best.d || (d === best.d && e.name.length < best.name.length)) best = { name: e.name, d };
  }
  if (!best) return undefined;
  return best.d <= Math.max(2, Math.floor(want.length / 3)) ? best.name : undefined;
}

export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const cur = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      cur[j] = Math.min((prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost);
    }
    prev = cur;
  }
  return prev[b.length] ?? 0;
}

/** A name's resolution as an error, or the entry. */
export function requireTable(catalog: Catalog, input: string): CatalogEntry {
  const r = resolveTable(catalog, input);
  if ('found' in r) return r.found;
  if ('ambiguous' in r) {
    throw new CortadoError('VALIDATION_FAILED', `the table name "${input}" is ambiguous: ${r.ambiguous.map((n) => `"${n}"`).join(' or ')}`, {
      candidates: r.ambiguous,
    });
  }
  const hint = r.suggestion === undefined ? '' : ` (did you mean "${r.suggestion}"?)`;
  throw new CortadoError('NOT_FOUND', `there is no table "${input}"${hint}`, r.suggestion === undefined ? undefined : { suggestion: r.suggestion });
}

/** The tables a user picked, resolved; every name that is unknown or ambiguous is named in one error. */
export function resolveTables(catalog: Catalog, names: readonly string[]): string[] {
  const out: string[] = [];
  const bad: string[] = [];
  const hints: string[] = [];
  for (const name of names) {
    const r = resolveTable(catalog, name);
    if ('found' in r) {
      if (!out.includes(r.found.name)) out.push(r.found.name);
      continue;
    }
    bad.push(name);
    if ('ambiguous' in r) hints.push(`"${name}" could be ${r.ambiguous.map((n) => `"${n}"`).join(' or ')}`);
    else if (r.suggestion !== undefined) hints.push(`did you mean "${r.suggestion}" for "${name}"?`);
  }
  if (bad.length) {
    const list = bad.map((n) => `"${n}"`).join(', ');
    throw new CortadoError(
      'VALIDATION_FAILED',
      `unknown table${bad.length > 1 ? 's' : ''}: ${list}${hints.length ? ` (${hints.join('; ')})` : ''}`,
      { unknown_tables: bad },
    );
  }
  return out.sort(compareNames);
}

// ---- schema text ----------------------------------------------------------------------------

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function fkTarget(catalog: Pick<Catalog, 'defaultSchema'>, fk: NonNullable<DbTable['foreign_keys']>[number]): string {
  return displayName({ schema: fk.ref_schema, name: fk.ref_table }, catalog.defaultSchema);
}

/** One table as prompt text: header, one line per column, composite foreign keys last. */
export function renderTable(entry: Pick<CatalogEntry, 'name' | 'table'>, defaultSchema: string): string {
  const t = entry.table;
  let head = `${t.kind === 'view' ? 'View' : 'Table'} ${entry.name}`;
  if (t.row_estimate !== undefined && t.row_estimate >= 0) head += ` (~${Math.round(t.row_estimate)} rows)`;
  if (t.comment && oneLine(t.comment)) head += ` -- ${oneLine(t.comment)}`;
  const lines = [head];
  const single = new Map<string, string>();
  const composite: string[] = [];
  for (const fk of t.foreign_keys ?? []) {
    const target = fkTarget({ defaultSchema }, fk);
    const [col] = fk.columns;
    const [ref] = fk.ref_columns;
    if (fk.columns.length === 1 && col !== undefined && ref !== undefined) {
      if (!single.has(col)) single.set(col, `${target}.${ref}`);
    } else {
      composite.push(`  FOREIGN KEY (${fk.columns.join(', ')}) -> ${target} (${fk.ref_columns.join(', ')})`);
    }
  }
  for (const c of t.columns) {
    let line = `  ${c.name} ${c.type}`;
    if (!c.nullable) line += ' NOT NULL';
    const ref = single.get(c.name);
    if (ref !== undefined) line += ` -> ${ref}`;
    if (c.comment && oneLine(c.comment)) line += ` -- ${oneLine(c.comment)}`;
    lines.push(line);
  }
  lines.push(...composite);
  return lines.join('\n');
}

/** The prompt's schema block: the dialect, then each named table (in the order given). */
export function renderSchemaText(catalog: Catalog, names: readonly string[]): string {
  const byName = new Map(catalog.entries.map((e) => [e.name, e]));
  const blocks = [`Dialect: ${DIALECT_NAMES[catalog.dialect]}`];
  for (const name of names) {
    const e = byName.get(name);
    if (e) blocks.push(renderTable(e, catalog.defaultSchema));
  }
  return blocks.join('\n\n');
}

// ---- the cache --------------------------------------------------------------------------------

export interface CatalogSource {
  /** the catalog, from the cache while it is fresh; `refresh` loads it again */
  get(ctx: Ctx, refresh?: boolean): Promise<Catalog>;
}

export interface CatalogCacheOptions {
  load: (ctx: Ctx) => Promise<SqlIntrospectReply>;
  /** 0: load on every call (concurrent calls still share one load) */
  ttlSeconds: number;
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
  const ttlMs = opts.ttlSeconds * 1000;
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
      if (!refresh && s.cached && ttlMs > 0 && now() - s.cached.at < ttlMs && s.cached.epoch === epoch) return Promise.resolve(s.cached.catalog);
      if (s.inFlight) return s.inFlight;
      const shared: Ctx = { requestId: ctx.requestId };
      if (ctx.user !== undefined) shared.user = ctx.user;
      if (ctx.hop !== undefined) shared.hop = ctx.hop;
      if (ctx.scope !== undefined) shared.scope = ctx.scope;
      const load = (async () => {
        try {
          const catalog = buildCatalog(await opts.load(shared));
          if (ttlMs > 0) s.cached = { catalog, at: now(), epoch };
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

// ---- handlers -----------------------------------------------------------------------------

export interface CatalogDeps {
  config: Config;
  catalog: CatalogSource;
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
  return buildContext(catalog, input, deps.config.catalog.max_tables_in_prompt);
}

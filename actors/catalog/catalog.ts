/**
 * The catalog: one introspection, each table named as the user writes it; the words of its
 * name, columns and comments (stemmed, stop words dropped) are indexed by lexical.ts on first use.
 */
import type { Dialect } from '../../protocol/schemas/common.js';
import type { DbTable, SqlIntrospectReply } from '../../protocol/schemas/sql.js';

export interface CatalogEntry {
  /** the name to use in SQL: unqualified in the default schema, `schema.name` elsewhere */
  readonly name: string;
  readonly table: DbTable;
}

export interface Catalog {
  readonly dialect: Dialect;
  readonly provider: string;
  readonly defaultSchema: string;
  /** sorted by name */
  readonly entries: readonly CatalogEntry[];
}

/** words of earlier questions count for less than the question's own */
export const WEIGHT_HISTORY = 0.5;
/** a table is a primary pick when it scores at least this share of the best table's score */
export const RELEVANCE_CUTOFF = 0.2;

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
  const entries: CatalogEntry[] = reply.tables.map((table) => ({ name: displayName(table, reply.default_schema), table }));
  entries.sort((a, b) => compareNames(a.name, b.name));
  return { dialect: reply.dialect, provider: reply.provider, defaultSchema: reply.default_schema, entries };
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
 * `boxes` and `box`, `returned` and `return` meet; `status`, `address` and `analysis` stay whole.
 */
export function stem(word: string): string {
  const w = word.toLowerCase();
  if (w.length <= 3) return w;
  if (w.endsWith('ies')) return `${w.slice(0, -3)}y`;
  if (w.endsWith('sses') || w.endsWith('uses')) return w.slice(0, -2);
  if (/(?:ch|sh|x|z)es$/.test(w)) return w.slice(0, -2);
  if (w.endsWith('ss') || w.endsWith('us') || w.endsWith('is')) return w;
  if (w.endsWith('s')) return w.slice(0, -1);
  // a past tense meets its noun: breached/breach, returned/return, shipped/ship, cancelled/cancel
  if (w.length > 5 && w.endsWith('ed') && !w.endsWith('eed')) {
    const root = w.slice(0, -2);
    return /([b-df-hj-np-tv-z])\1$/.test(root) ? root.slice(0, -1) : root;
  }
  return w;
}

/**
 * The search terms of a text: split on anything not a letter or digit (so snake_case splits)
 * and at camelCase humps, lowercased, stemmed, without stop words and one-letter words.
 */
export function tokenize(text: string): string[] {
  return [...termSet(text)];
}

export function termSet(text: string): Set<string> {
  const out = new Set<string>();
  const spaced = text.replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2').replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1 $2');
  for (const raw of spaced.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (raw.length < 2 || STOP_WORDS.has(raw)) continue;
    out.add(stem(raw));
  }
  return out;
}

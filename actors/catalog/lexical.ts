/**
 * The lexical index of a catalog: every table a document with fields (its name, its columns'
 * names, its comment, its columns' comments, and what the semantic layer says of it; names with
 * their run-together words cut, split.ts), scored
 * per field with BM25+ by MiniSearch: field weights, and each field's length normalised, so a
 * wide report table no longer wins by holding many columns. Built once per loaded catalog; the
 * semantic field is re-indexed for the tables whose entity changed only.
 */
import MiniSearch from 'minisearch';
import { type Catalog, type CatalogEntry, stem } from './catalog.js';
import { splitIdentifier } from './split.js';

/** How much a word counts by where it is found. */
export const FIELD_BOOST = {
  name: 3,
  /**
   * the words a run-together name is made of (split.ts): `salesorderheader`'s sales, order,
   * header — half a name's weight, so a schema of long compound names does not outrank the
   * tables named by the question's word alone
   */
  name_parts: 1.5,
  semantic: 3,
  comment: 2,
  columns: 1,
  /** the words of run-together column names (`extendedprice`, `custkey`), as the words of other columns */
  column_parts: 1,
  column_comments: 0.8,
  schema: 0.5,
} as const;
type Field = keyof typeof FIELD_BOOST;
const FIELDS = Object.keys(FIELD_BOOST) as Field[];

interface Doc {
  id: number;
  name: string;
  name_parts: string;
  schema: string;
  columns: string;
  column_parts: string;
  comment: string;
  column_comments: string;
  semantic: string;
}

/** Words too common in comments and questions to say anything about a table. */
const STOP: ReadonlySet<string> = new Set([
  'a', 'all', 'an', 'and', 'any', 'are', 'as', 'at', 'be', 'by', 'can', 'did', 'do', 'does', 'each', 'for', 'from', 'give',
  'had', 'has', 'have', 'how', 'i', 'in', 'is', 'it', 'its', 'list', 'many', 'me', 'much', 'my', 'of', 'on', 'or', 'our', 'per',
  'please', 'show', 'tell', 'than', 'that', 'the', 'their', 'them', 'there', 'these', 'this', 'those', 'to', 'us', 'was', 'we',
  'were', 'what', 'when', 'where', 'which', 'who', 'whose', 'why', 'with', 'you', 'one', 'row', 'rows', 'table', 'column', 'id',
  'ids', 'key', 'not', 'null', 'no', 'be', 'been', 'into', 'also', 'used', 'use',
]);

/** Words of an identifier or a text: snake_case and camelCase split, lowercased. */
export function words(text: string): string[] {
  // plain ASCII lower case (most identifiers): the fast path
  if (/^[a-z0-9_ .,;:()'"/-]*$/.test(text)) return text.split(/[^a-z0-9]+/).filter(Boolean);
  return text
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1 $2')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

/** The dictionary words of an identifier's run-together words (split.ts: `salesorderheader` → sales order header), none when it has none. */
export function identifierParts(text: string): string[] {
  const out: string[] = [];
  for (const w of words(text)) {
    const parts = splitIdentifier(w);
    if (parts) out.push(...parts);
  }
  return out;
}

/**
 * The index terms of a text, joined by spaces (what the index splits again), remembered in
 * `memo`; `parts`: of an identifier's run-together words' parts only.
 */
function termsOf(text: string | undefined, memo: Map<string, string>, parts = false): string {
  if (!text) return '';
  const key = parts ? `\u0000${text}` : text;
  let out = memo.get(key);
  if (out === undefined) {
    out = (parts ? identifierParts(text) : words(text)).map(indexTerm).filter((t): t is string => t !== null).join(' ');
    if (memo.size < 200_000) memo.set(key, out);
  }
  return out;
}

/** One word as indexed and searched: stemmed; stop words and single letters dropped. */
export function indexTerm(word: string): string | null {
  if (word.length < 2 || STOP.has(word)) return null;
  return stem(word);
}

/** A word of the question and the index terms that stand for it (its own term at 1, related ones lower). */
export interface TermGroup {
  /** the question's term (stemmed): what a hit reports as matched */
  key: string;
  /** how much the word counts (earlier questions' words less) */
  weight: number;
  /** index term → how much a match through it counts (the key itself at 1) */
  terms: ReadonlyMap<string, number>;
}

export interface LexicalIndex {
  search(terms: ReadonlyMap<string, number>): Map<number, { score: number; terms: string[] }>;
  /**
   * Each group counts once per table, by its best term: a table matching `film` and `movie`
   * for the one word "movies" gets the better of the two, not their sum. Scores add across groups.
   */
  searchGroups(groups: readonly TermGroup[]): Map<number, { score: number; terms: string[] }>;
  /** whether any table uses this index term */
  has(term: string): boolean;
  /** set what the semantic layer says of each table (by catalog name); only the changed ones are re-indexed */
  setSemantic(docs: ReadonlyMap<string, string>): void;
  /** entries by document id */
  readonly entries: readonly CatalogEntry[];
}

function docOf(e: CatalogEntry, id: number, semantic: string, memo: Map<string, string>): Doc {
  const t = e.table;
  // each word once per field: a wide table's hundred `amount_*` columns say `amount` once
  const columns = new Set<string>();
  const columnParts = new Set<string>();
  const comments = new Set<string>();
  for (const c of t.columns) {
    for (const term of termsOf(c.name, memo).split(' ')) if (term) columns.add(term);
    for (const term of termsOf(c.name, memo, true).split(' ')) if (term) columnParts.add(term);
    if (c.comment) for (const term of termsOf(c.comment, memo).split(' ')) if (term) comments.add(term);
  }
  return {
    id,
    name: termsOf(t.name, memo),
    name_parts: termsOf(t.name, memo, true),
    schema: termsOf(t.schema, memo),
    columns: [...columns].join(' '),
    column_parts: [...columnParts].filter((term) => !columns.has(term)).join(' '),
    comment: termsOf(t.comment, memo),
    column_comments: [...comments].join(' '),
    semantic: termsOf(semantic, memo),
  };
}

const cache = new WeakMap<Catalog, LexicalIndex>();

/**
 * Indexes of recent catalogs by the names of their tables: a refresh of the cache that finds
 * the same tables re-indexes only those whose columns or comments changed (a signature per
 * table) instead of building the index again. An index serves one catalog at a time: the
 * catalog it is taken from loses it.
 */
const recent = new Map<string, { index: Built; sigs: Uint32Array; catalog: Catalog }>();
const MAX_RECENT = 4;

/** FNV-1a, 32 bits: a cheap fingerprint (a changed table re-indexed; a collision only keeps an old document). */
function fnv(text: string, h = 0x811c9dc5): number {
  for (let i = 0; i < text.length; i += 1) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

function namesKey(catalog: Catalog): string {
  let h = fnv(catalog.defaultSchema);
  for (const e of catalog.entries) h = fnv(`\u0000${e.name}`, h);
  return `${catalog.entries.length}:${h}`;
}

/** The catalog's index, built on first use (or patched from the index of the same tables loaded before) and kept with the catalog. */
export function lexicalIndex(catalog: Catalog): LexicalIndex {
  let index = cache.get(catalog);
  if (index) return index;
  const key = namesKey(catalog);
  const sigs = Uint32Array.from(catalog.entries, (e) => fnv(JSON.stringify(e.table)));
  const prev = recent.get(key);
  let built: Built;
  if (prev) {
    built = prev.index;
    const changed: number[] = [];
    sigs.forEach((sig, i) => {
      if (prev.sigs[i] !== sig) changed.push(i);
    });
    built.refresh(catalog.entries, changed);
    // the index is the new catalog's now: the old one (another scope's, or the copy being replaced) builds its own if asked again
    cache.delete(prev.catalog);
    recent.delete(key);
  } else {
    built = buildIndex(catalog);
    if (recent.size >= MAX_RECENT) recent.delete(recent.keys().next().value ?? '');
  }
  recent.set(key, { index: built, sigs, catalog });
  index = built;
  cache.set(catalog, index);
  return index;
}

interface Built extends LexicalIndex {
  /** the same tables loaded again: take the new entries, re-index the ones at `changed` */
  refresh(entries: readonly CatalogEntry[], changed: readonly number[]): void;
}

function buildIndex(catalog: Catalog): Built {
  let entries = catalog.entries;
  const mini = new MiniSearch<Doc>({
    fields: FIELDS,
    idField: 'id',
    // documents hold their terms already (docOf): the index only splits them
    tokenize: (text) => (text ? text.split(' ') : []),
    processTerm: (term) => term || null,
    searchOptions: { tokenize: (s) => [s], processTerm: (s) => s },
  });
  const memo = new Map<string, string>();
  const vocab = new Set<string>();
  const remember = (d: Doc): Doc => {
    for (const f of FIELDS) for (const term of d[f].split(' ')) if (term) vocab.add(term);
    return d;
  };
  mini.addAll(entries.map((e, i) => remember(docOf(e, i, '', memo))));
  memo.clear();
  /** one term's scores, kept while the index is unchanged (a term searched for many questions) */
  const perTerm = new Map<string, Map<number, number>>();
  const termScores = (term: string): Map<number, number> => {
    let m = perTerm.get(term);
    if (m) return m;
    m = new Map();
    if (vocab.has(term)) for (const h of mini.search(term, { boost: FIELD_BOOST })) m.set(h.id as number, h.score);
    if (perTerm.size >= 5000) perTerm.clear();
    perTerm.set(term, m);
    return m;
  };
  const byName = new Map(entries.map((e, i) => [e.name, i]));
  let semantic = new Map<string, string>();

  return {
    get entries() {
      return entries;
    },
    refresh(next, changed) {
      entries = next;
      const m = new Map<string, string>();
      for (const i of changed) {
        const e = entries[i];
        if (e) mini.replace(remember(docOf(e, i, semantic.get(e.name) ?? '', m)));
      }
      perTerm.clear();
    },
    has(term) {
      return vocab.has(term);
    },
    searchGroups(groups) {
      const out = new Map<number, { score: number; terms: string[] }>();
      for (const g of groups) {
        const best = new Map<number, number>();
        for (const [term, w] of g.terms) {
          for (const [id, score] of termScores(term)) {
            const v = score * w;
            if (v > (best.get(id) ?? 0)) best.set(id, v);
          }
        }
        for (const [id, v] of best) {
          const had = out.get(id);
          if (had) {
            had.score += v * g.weight;
            had.terms.push(g.key);
          } else out.set(id, { score: v * g.weight, terms: [g.key] });
        }
      }
      // as MiniSearch scores an OR query: the sum times the number of the question's words matched
      for (const hit of out.values()) hit.score *= hit.terms.length;
      return out;
    },
    search(terms) {
      const out = new Map<number, { score: number; terms: string[] }>();
      if (terms.size === 0) return out;
      const list = [...terms.keys()];
      const hits = mini.search({ queries: list, combineWith: 'OR' }, {
        boost: FIELD_BOOST,
        boostTerm: (term) => terms.get(term) ?? 1,
      });
      for (const h of hits) out.set(h.id as number, { score: h.score, terms: h.queryTerms });
      return out;
    },
    setSemantic(docs) {
      const changed = new Set<string>();
      for (const [name, text] of docs) if (semantic.get(name) !== text) changed.add(name);
      for (const name of semantic.keys()) if (!docs.has(name)) changed.add(name);
      for (const name of changed) {
        const id = byName.get(name);
        const e = id === undefined ? undefined : entries[id];
        if (id === undefined || !e) continue;
        mini.replace(remember(docOf(e, id, docs.get(name) ?? '', new Map())));
      }
      if (changed.size) perTerm.clear();
      semantic = new Map(docs);
    },
  };
}

/**
 * Retrieval: the tables a question needs, on a catalog of any size, with no model call.
 *
 * 1. Words: the question's words without dates (filters, not table words) and filler, its
 *    literals noted apart (question.ts); earlier questions count for half.
 * 2. Lexical score: BM25+ per field with field weights and length normalisation (lexical.ts,
 *    MiniSearch), over names, columns, comments and what the semantic layer says of a table.
 * 3. Structure: copies (`orders_old`, `stg_orders`, `archive.orders` …) fold onto their original
 *    and reports (`rpt_`, `agg_`, `_daily`) rank below real tables unless the question asks for
 *    them (families.ts); tables that many foreign keys point at rank a little higher.
 * 4. Values: literals found among a column's known values lift its table (values.ts).
 * 5. Selection: the best tables, then room kept for the foreign-key paths that join them
 *    (join tables the question never names: `order_lines` between `orders` and `products`),
 *    then their neighbours while there is room.
 */
import type { Ambiguity } from '../../protocol/schemas/catalog.js';
import type { DbTable } from '../../protocol/schemas/sql.js';
import { type Catalog, type CatalogEntry, compareNames, displayName, RELEVANCE_CUTOFF, termSet, WEIGHT_HISTORY } from './catalog.js';
import { askedFor, type Family, familyOf } from './families.js';
import { inferKeys } from './joins.js';
import { identifierParts, indexTerm, lexicalIndex, type TermGroup, words } from './lexical.js';
import { relatedWords } from './lexicon.js';
import type { Thesaurus } from './thesaurus.js';
import { readQuestion, type QuestionWords } from './question.js';

export interface ScoredTable {
  name: string;
  score: number;
}

/** A report or roll-up the question does not ask for counts this share of its score. */
const REPORT_FACTOR = 0.15;
/** A marked table (tmp_, _v2 …) with no original in the catalog, not asked for. */
const LONE_COPY_FACTOR = 0.6;
/** A copy the question asks for scores this share of its original's score, at least. */
const ASKED_COPY_FACTOR = 1.05;
/** A table no foreign key joins, in a catalog that declares them. */
const ISOLATED_FACTOR = 0.6;
/** Each doubling of the foreign keys pointing at a table adds this share to its score. */
const HUB_BONUS = 0.08;
/** A table holding one of the question's literals among a column's known values: its score is lifted by this share of the best. */
const VALUE_BONUS = 0.5;
/** A table whose dates cover a period the question names: its score is lifted by this share of the best. */
const DATE_BONUS = 0.25;
/** A weaker match joined to a chosen table comes in while there is room when it scores at least this share of the best. */
const WEAK_CUTOFF = 0.05;
/** With room left at the end, matches down to this share of the best score fill it. */
const FILL_CUTOFF = 0.02;
/** Weaker matches tried for a join path to the chosen tables, at most. */
const WEAK_TRIES = 10;
/** Foreign-key hops a join path may take between two chosen tables. */
const MAX_PATH_HOPS = 3;
/** Top tables connected by join paths. */
const PATH_SEEDS = 5;
/** A related word counts this share of its weight when some table uses the question's own word. */
const OWN_WORD_DAMPING = 0.3;
/** A table whose name of two words or more the question says as written ("store sales") scores this many times more. */
const PHRASE_FACTOR = 1.5;
/** Two tables tie for a word when their scores differ by less than this share. */
const TIE = 0.05;

// ---- structure, once per catalog ------------------------------------------------------------

interface Structure {
  index: Map<string, number>;
  families: Family[];
  /** copy → its original (a table of the same base whose columns it mostly holds) */
  originalOf: Map<number, number>;
  /** foreign keys pointing at each table, from other tables */
  incoming: number[];
  /** undirected foreign-key graph, copies left out */
  adjacent: number[][];
  /** outgoing foreign-key targets */
  outgoing: number[][];
  /** a foreign key leaves or reaches the table */
  joined: boolean[];
  /** the catalog declares foreign keys (at least ten tables take part) */
  anyJoined: boolean;
}

const structures = new WeakMap<Catalog, Structure>();

function structureOf(catalog: Catalog): Structure {
  const cached = structures.get(catalog);
  if (cached) return cached;
  const entries = catalog.entries;
  const index = new Map(entries.map((e, i) => [e.name, i]));
  // joined: a foreign key leaves or reaches the table
  const joined = entries.map((e) => (e.table.foreign_keys?.length ?? 0) > 0);
  entries.forEach((e) => {
    for (const fk of e.table.foreign_keys ?? []) {
      const j = index.get(displayName({ schema: fk.ref_schema, name: fk.ref_table }, catalog.defaultSchema));
      if (j !== undefined) joined[j] = true;
    }
  });
  const families = entries.map((e, i) => familyOf(e.table, joined[i] ?? false));
  // a sibling schema's same-named table (northwind_eu.orders beside northwind.orders, sales_dev.x
  // beside sales.x) is a copy: the schema's name carries the marker
  const schemaNames = new Set(entries.map((e) => e.table.schema.toLowerCase()));
  const schemaSpelt = new Map(entries.map((e) => [e.table.schema.toLowerCase(), e.table.schema]));
  const siblingOf = new Map<string, Family>();
  for (const schema of schemaNames) {
    const f = familyOf({ schema: '', name: schema });
    if (f.kind && f.base && f.base !== schema && schemaNames.has(f.base)) {
      siblingOf.set(schema, f);
      continue;
    }
    // a schema named after another one and more (tpch_sf100 beside tpch, analytics_153293282
    // beside analytics): its same-named tables are copies too when they hold the same columns
    const cut = schema.indexOf('_');
    for (let at = cut; at > 0; at = schema.indexOf('_', at + 1)) {
      const base = schema.slice(0, at);
      if (!schemaNames.has(base)) continue;
      siblingOf.set(schema, { base, markers: schema.slice(at + 1).split('_').filter(Boolean), kind: 'copy' });
      break;
    }
  }
  entries.forEach((e, i) => {
    const f = siblingOf.get(e.table.schema.toLowerCase());
    if (!f || families[i]?.kind) return;
    const original = index.get(displayName({ schema: schemaSpelt.get(f.base) ?? f.base, name: e.table.name }, catalog.defaultSchema));
    if (original !== undefined) families[i] = { base: e.table.name.toLowerCase(), markers: f.markers, kind: 'copy', sibling: original };
  });
  // originals: unmarked tables by name and by schema_name (lowercased); the default schema's first
  const byBase = new Map<string, number[]>();
  const note = (key: string, i: number, first: boolean): void => {
    const list = byBase.get(key) ?? [];
    if (first) list.unshift(i);
    else list.push(i);
    byBase.set(key, list);
  };
  entries.forEach((e, i) => {
    if (families[i]?.kind) return;
    note(e.table.name.toLowerCase(), i, e.table.schema === catalog.defaultSchema);
    note(`${e.table.schema}_${e.table.name}`.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '_'), i, true);
  });
  const originalOf = new Map<number, number>();
  // the columns a loader, a CDC feed or a snapshot adds (_loaded_at, _batch_id, dbt_valid_from, op, lsn …) say nothing of what a copy copies
  const business = (t: DbTable): string[] => t.columns.map((c) => c.name.toLowerCase()).filter((c) => !isLoadColumn(c));
  const copyOf = (i: number, candidates: readonly number[]): number | undefined => {
    const cols = new Set(business(entries[i]!.table));
    for (const o of candidates) {
      if (o === i) continue;
      const orig = entries[o]?.table;
      if (!orig) continue;
      // a copy holds most of its original's columns (or the original most of the copy's)
      const own = business(orig);
      const shared = own.filter((c) => cols.has(c)).length;
      if (shared / Math.max(1, own.length) >= 0.6 && shared / Math.max(1, cols.size) >= 0.5) return o;
    }
    return undefined;
  };
  entries.forEach((_e, i) => {
    const f = families[i];
    if (!f?.kind || !f.base) return;
    if (f.sibling !== undefined && copyOf(i, [f.sibling]) !== undefined) {
      originalOf.set(i, f.sibling);
      return;
    }
    // the base, then (copies) without leading parts (a sandbox owner: jdoe_orders → orders; a dbt
    // model named by its source: stg_dvdrental__payments → payments), singular or plural
    const p = f.base.split('_').filter(Boolean);
    for (let k = 0; k < (f.kind === 'copy' ? p.length : 1); k += 1) {
      const key = p.slice(k).join('_');
      const o = copyOf(i, byBase.get(key) ?? byBase.get(`${key}s`) ?? byBase.get(singular(key)) ?? []);
      if (o !== undefined) {
        originalOf.set(i, o);
        return;
      }
    }
  });
  // copies with no original in the catalog (ml_features_v2 … _v5): the family's first name stands for the rest
  const lone = new Map<string, number>();
  entries.forEach((_e, i) => {
    const f = families[i];
    if (f?.kind !== 'copy' || originalOf.has(i) || !f.base) return;
    const key = f.base;
    const first = lone.get(key);
    if (first === undefined) lone.set(key, i);
    else if (copyOf(i, [first]) !== undefined) originalOf.set(i, first);
  });
  const incoming = entries.map(() => 0);
  const adjacentSets = entries.map(() => new Set<number>());
  const outgoing = entries.map(() => [] as number[]);
  const edge = (i: number, j: number): void => {
    if (j === i) return;
    if (!outgoing[i]?.includes(j)) outgoing[i]?.push(j);
    else return;
    if (originalOf.has(i) || originalOf.has(j)) return;
    incoming[j] = (incoming[j] ?? 0) + 1;
    adjacentSets[i]?.add(j);
    adjacentSets[j]?.add(i);
  };
  entries.forEach((e, i) => {
    for (const fk of e.table.foreign_keys ?? []) {
      const j = index.get(displayName({ schema: fk.ref_schema, name: fk.ref_table }, catalog.defaultSchema));
      if (j !== undefined) edge(i, j);
    }
  });
  // the references no key declares, read from column names (joins.ts): copies neither point nor are pointed at
  // isolation says something only where the schema declares its keys (inferred ones do not count)
  const declaredJoined = joined.filter(Boolean).length >= 10;
  const inferred = inferKeys(entries, (i) => originalOf.has(i) || families[i]?.kind === 'copy');
  // where keys are declared, a table only names can join stays loose (an export, a log, a shard
  // holding a `customer_id`); where none are, inferred joins are all there is
  inferred.forEach((list, i) => {
    for (const k of list) {
      edge(i, k.target);
      if (declaredJoined) continue;
      joined[i] = true;
      joined[k.target] = true;
    }
  });
  const s: Structure = { index, families, originalOf, incoming, adjacent: adjacentSets.map((x) => [...x]), outgoing, joined, anyJoined: declaredJoined };
  structures.set(catalog, s);
  return s;
}

/** A plural's singular as table names write it: categories → category, boxes → box, payments → payment. */
function singular(name: string): string {
  if (name.endsWith('ies') && name.length > 4) return `${name.slice(0, -3)}y`;
  if (/(?:ch|sh|x|ss)es$/.test(name)) return name.slice(0, -2);
  if (name.endsWith('s') && !name.endsWith('ss')) return name.slice(0, -1);
  return name;
}

/** Columns a loader, a change feed or a snapshot adds to a copy. */
const LOAD_COLUMN = /^_|^(?:etl|dbt|fivetran|airbyte|stitch|meltano|dlt|sdc)_|_(?:loaded_at|load_ts|load_date|ingested_at|batch_id|file_name|source_file|row_hash|record_hash)$|^(?:loaded_at|load_ts|load_date|ingested_at|batch_id|source_file|source_system|row_hash|record_hash|op|operation|op_type|change_type|lsn|scn|commit_ts|valid_from|valid_to|is_current|is_deleted|deleted_at|cdc_\w+|audit_\w+|changed_at|changed_by)$/;
function isLoadColumn(name: string): boolean {
  return LOAD_COLUMN.test(name);
}

// ---- scoring ----------------------------------------------------------------------------------

export interface RankOptions {
  /** the business thesaurus (thesaurus.ts, with the administrator's catalog.synonyms) */
  thesaurus?: Thesaurus;
  /** WordNet's related words (lexicon.ts); on unless false */
  lexicon?: boolean;
  /** what the semantic layer says of each table (semantic-terms.ts) */
  semantic?: ReadonlyMap<string, string>;
  /** literal → the tables (and columns) whose known values hold it (values.ts) */
  valueHits?: ReadonlyMap<string, ReadonlyArray<{ table: string; column: string }>>;
  /** a period of the question (its term, values.ts dateTerm) → the tables whose dates cover it (values.ts lookupDates) */
  dateHits?: ReadonlyMap<string, ReadonlyArray<{ table: string; column: string }>>;
}

interface Ranked {
  i: number;
  score: number;
  /** a report, a copy with no original, or a table no foreign key joins, not asked for: chosen after the others */
  demoted?: boolean;
  /** the question's terms it matched */
  terms: string[];
  /** of those, the ones its name says (the word itself or a word standing for it: `client` for `customers`) */
  named?: string[];
}

/**
 * The question's words as search groups: each term with the index terms that stand for it —
 * the business thesaurus's (and the administrator's) words, WordNet's synonyms, broader words
 * and nouns of its verbs — kept only where some table uses them. Earlier questions' words count
 * for WEIGHT_HISTORY.
 */
function searchGroups(q: QuestionWords, history: readonly string[], has: (term: string) => boolean, opts: RankOptions): TermGroup[] {
  const groups = new Map<string, TermGroup>();
  const add = (words: QuestionWords, weight: number): void => {
    for (const key of words.terms) {
      const had = groups.get(key);
      if (had && had.weight >= weight) continue;
      const terms = new Map<string, number>([[key, 1]]);
      // the schema uses the user's own word: the related words only break ties
      const damp = has(key) ? OWN_WORD_DAMPING : 1;
      const relate = (term: string, w: number): void => {
        if (term !== key && has(term) && (terms.get(term) ?? 0) < w * damp) terms.set(term, w * damp);
      };
      for (const r of opts.thesaurus?.get(key) ?? []) relate(r.term, r.weight);
      const word = words.surface.get(key);
      if (opts.lexicon !== false && word) {
        for (const r of relatedWords(word)) for (const term of termSet(r.word)) relate(term, r.weight);
      }
      groups.set(key, { key, weight, terms });
    }
  };
  for (const h of history) add(readQuestion(h), WEIGHT_HISTORY);
  add(q, 1);
  return [...groups.values()];
}

function rank(catalog: Catalog, q: QuestionWords, history: readonly string[], opts: RankOptions): Ranked[] {
  const s = structureOf(catalog);
  const index = lexicalIndex(catalog);
  if (opts.semantic) index.setSemantic(opts.semantic);
  const groups = searchGroups(q, history, (term) => index.has(term), opts);
  const hits = index.searchGroups(groups);
  const scores = new Map<number, Ranked>();
  const demote = new Set<number>();
  const put = (i: number, score: number, terms: string[]): void => {
    const had = scores.get(i);
    if (!had) scores.set(i, { i, score, terms });
    else if (score > had.score) scores.set(i, { i, score, terms: [...new Set([...had.terms, ...terms])] });
  };
  const said = ` ${q.terms.join(' ')} `;
  for (const [i, hit] of hits) {
    const f = s.families[i];
    const asked = f ? askedFor(f, q.words) : false;
    let score = hit.score * (1 + HUB_BONUS * Math.log2(1 + (s.incoming[i] ?? 0)));
    // the question says the table's name of two words or more as it is written ("store sales",
    // "line items", "credit card"): the words belong together, not to two tables that each hold one
    if (saysName(catalog, i, said)) score *= PHRASE_FACTOR;
    const original = s.originalOf.get(i);
    if (original !== undefined && !asked) {
      // a copy stands for its original: the original takes its score when it is better
      put(original, score, hit.terms);
      continue;
    }
    let demoted = false;
    if (f?.kind === 'report' && !asked) {
      score *= REPORT_FACTOR;
      demoted = true;
    } else if (f?.kind === 'copy' && !asked && original === undefined) {
      score *= LONE_COPY_FACTOR;
      demoted = true;
    }
    // where the catalog declares foreign keys, a table none joins is an export, a log or a leftover more often than not
    if (s.anyJoined && !s.joined[i]) {
      score *= ISOLATED_FACTOR;
      demoted = true;
    }
    put(i, score, hit.terms);
    if (demoted) demote.add(i);
  }
  // a copy the question asks for ("archived orders") ranks with its original at least
  {
    for (const [copy, original] of s.originalOf) {
      const base = scores.get(original);
      const f = s.families[copy];
      if (!base || !f || !askedFor(f, q.words)) continue;
      put(copy, base.score * ASKED_COPY_FACTOR, base.terms);
    }
  }
  let best = 0;
  for (const r of scores.values()) best = Math.max(best, r.score);
  best = Math.max(best, 1);
  /** `term` lifts each table in `hits` by `bonus` of the best score, once per original (a value in two columns, or in copies too, lifts it once) */
  const lift = (term: string, hits: ReadonlyArray<{ table: string }>, bonus: number): void => {
    const lifted = new Set<number>();
    for (const h of hits) {
      const i = s.index.get(h.table);
      if (i === undefined) continue;
      const target = s.originalOf.get(i) ?? i;
      if (lifted.has(target)) continue;
      lifted.add(target);
      const had = scores.get(target);
      const terms = had?.terms ?? [];
      scores.set(target, { i: target, score: (had?.score ?? 0) + best * bonus, terms: terms.includes(term) ? terms : [...terms, term] });
    }
  };
  // a literal counts as a word the table covers: the source holding the question's values is the one it asks about
  for (const [literal, hits] of opts.valueHits ?? []) lift(valueTerm(literal), hits, VALUE_BONUS);
  // the tables whose data covers the question's years ("orders placed in 1995"): a clue to the
  // source, weaker than a value the question names (dates run through every table of it)
  for (const [term, hits] of opts.dateHits ?? []) lift(term, hits, DATE_BONUS);
  const out = [...scores.values()];
  for (const r of out) if (demote.has(r.i)) r.demoted = true;
  const byKey = new Map(groups.map((g) => [g.key, g]));
  for (const r of out) {
    const name = nameTerms(catalog, r.i);
    r.named = r.terms.filter((t) => isValueTerm(t) || isDateTerm(t) || [...(byKey.get(t)?.terms.keys() ?? [])].some((x) => name.has(x)));
  }
  const names = catalog.entries;
  out.sort((a, b) => b.score - a.score || compareNames(names[a.i]?.name ?? '', names[b.i]?.name ?? ''));
  return out;
}

/** `f` of a catalog's table i, worked out once per catalog and table. */
function perTable<T>(f: (name: string) => T): (catalog: Catalog, i: number) => T {
  const memo = new WeakMap<Catalog, Map<number, T>>();
  return (catalog, i) => {
    let m = memo.get(catalog);
    if (!m) {
      m = new Map();
      memo.set(catalog, m);
    }
    let v = m.get(i);
    if (v === undefined) {
      v = f(catalog.entries[i]?.table.name ?? '');
      m.set(i, v);
    }
    return v;
  };
}

const termsOf = (ws: string[]): string[] => ws.map(indexTerm).filter((x): x is string => x !== null);

/** A table's names of two words or more (` a b `), as written and split by the catalog's words. */
const namePhrases = perTable((name) =>
  [termsOf(words(name)), termsOf(identifierParts(name))].filter((p) => p.length >= 2).map((p) => ` ${p.join(' ')} `));

/** Whether the question's terms (` a b c `) hold one of the table's names of two words or more, its words in order. */
function saysName(catalog: Catalog, i: number, said: string): boolean {
  return namePhrases(catalog, i).some((p) => said.includes(p));
}

/** The index terms of a table's name, its run-together words' parts included (lexical.ts). */
const nameTerms = perTable((name) => new Set(termsOf([...words(name), ...identifierParts(name)])));

/**
 * The question's words less those of the phrases found among the data's values: "the Sales
 * department" names a department, not the tables called `sales…`; "people in Customer Service"
 * asks for no customers. The phrase counts as the value it is (its tables are lifted by
 * VALUE_BONUS); a word also said outside the phrase stays.
 */
function withoutValueWords(q: QuestionWords, question: string, hits: ReadonlyMap<string, unknown> | undefined): QuestionWords {
  if (!hits?.size) return q;
  let rest = question;
  for (const literal of hits.keys()) {
    const parts = literal.split(/[^\p{L}\p{N}]+/u).filter(Boolean).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    if (!parts.length) continue;
    rest = rest.replace(new RegExp(`(?<![\\p{L}\\p{N}])${parts.join('[^\\p{L}\\p{N}]+')}(?![\\p{L}\\p{N}])`, 'giu'), ' ');
  }
  if (rest === question) return q;
  const kept = new Set(readQuestion(rest).terms);
  const terms = q.terms.filter((t) => kept.has(t));
  return terms.length === q.terms.length ? q : { ...q, terms };
}

/** The term a literal found among a table's values counts as (never a word of the index: it starts with a quote). */
function valueTerm(literal: string): string {
  return `"${literal.toLowerCase()}`;
}
function isValueTerm(term: string): boolean {
  return term.startsWith('"');
}
/** A period of the question found among a table's dates (values.ts dateTerm). */
function isDateTerm(term: string): boolean {
  return term.startsWith('@');
}

/**
 * How well each table matches the question (and, for half, the earlier ones): best first,
 * tables that share no word left out, copies folded onto their originals.
 */
export function scoreTables(catalog: Catalog, question: string, history: readonly string[] = [], opts: RankOptions = {}): ScoredTable[] {
  return rank(catalog, withoutValueWords(readQuestion(question), question, opts.valueHits), history, opts).map((r) => ({ name: catalog.entries[r.i]?.name ?? '', score: r.score }));
}

/** The table a copy copies (`raw_tpch.region` → `tpch.region`), by name; any other table is its own. */
export function originalName(catalog: Catalog, name: string): string {
  const s = structureOf(catalog);
  const i = s.index.get(name);
  const o = i === undefined ? undefined : s.originalOf.get(i);
  return o === undefined ? name : (catalog.entries[o]?.name ?? name);
}

/** Tables this one points at (outgoing) and tables that point at it (incoming), by name. */
export function neighbours(catalog: Catalog, name: string): { outgoing: string[]; incoming: string[] } {
  const s = structureOf(catalog);
  const i = s.index.get(name);
  if (i === undefined) return { outgoing: [], incoming: [] };
  const nameOf = (j: number): string => catalog.entries[j]?.name ?? '';
  const outgoing = (s.outgoing[i] ?? []).map(nameOf);
  const incoming: string[] = [];
  catalog.entries.forEach((e, j) => {
    if (j !== i && (s.outgoing[j] ?? []).includes(i)) incoming.push(e.name);
  });
  return { outgoing, incoming };
}

// ---- selection --------------------------------------------------------------------------------

export interface Linked {
  /** the tables for the prompt, sorted by name */
  tables: string[];
  /** the question's dates and periods (filters for the model) */
  filters: string[];
  /** the question's literals */
  literals: string[];
  /** the best tables, best first (value linking looks for the literals in these) */
  candidates: string[];
  ambiguity?: Ambiguity;
}

export interface LinkOptions extends RankOptions {
  /** words the user already clarified: never ambiguous again */
  clarified?: readonly string[];
  /** how many of the best tables `candidates` holds (30 when absent; catalog.linking: model asks for more) */
  candidates?: number;
}

/** Each table's component: the tables joined to it by keys (declared or inferred), else its schema's loose tables. */
const componentsOf = new WeakMap<Structure, Array<number | string>>();
function components(s: Structure, catalog: Catalog): Array<number | string> {
  const had = componentsOf.get(s);
  if (had) return had;
  const parent = s.adjacent.map((_, i) => i);
  const find = (i: number): number => {
    while (parent[i] !== i) {
      parent[i] = parent[parent[i]!]!;
      i = parent[i]!;
    }
    return i;
  };
  s.adjacent.forEach((list, i) => {
    for (const j of list) {
      const a = find(i);
      const b = find(j);
      if (a !== b) parent[a] = b;
    }
  });
  const out = s.adjacent.map((list, i) => (list.length ? find(i) : `schema:${catalog.entries[i]?.table.schema ?? ''}`));
  componentsOf.set(s, out);
  return out;
}

/**
 * The matches ordered for one source: the component (tables joined by keys, or a schema's loose
 * tables) that covers the question best — the literals found among its values, then the sum,
 * over the words, of its best table's score for the word — comes first, with its weaker matches
 * (`weaker`: under the relevance cutoff) that bring a word its strong ones lack; tables of other
 * components follow when they bring a word the first does not cover, then the rest. A generic
 * word ("customers", "orders") matched in six sources no longer fills the prompt with five of
 * them.
 */
function coherent(s: Structure, catalog: Catalog, relevant: readonly Ranked[], weaker: readonly Ranked[] = []): { lead: Ranked[]; adds: Ranked[]; rest: Ranked[] } {
  if (relevant.length < 2 && !weaker.length) return { lead: [...relevant], adds: [], rest: [] };
  const comp = components(s, catalog);
  const [first] = sourceStrengths(s, catalog, relevant);
  if (!first) return { lead: [...relevant], adds: [], rest: [] };
  const lead = relevant.filter((r) => (comp[r.i] ?? r.i) === first.comp);
  // the words the lead's tables are named by (`region` matched in a column is no territories table)
  const covered = new Set(lead.flatMap((r) => r.named ?? r.terms));
  // the lead source's weaker matches whose name says a word its strong ones lack ("customers" of
  // a question whose line items and returns scored far higher): the source's own table for the
  // word, before another source's; a column that happens to hold the word ("actual") is no such table
  for (const r of weaker) {
    if ((comp[r.i] ?? r.i) !== first.comp || (r.named ?? r.terms).every((t) => covered.has(t))) continue;
    lead.push(r);
    for (const t of r.terms) covered.add(t);
  }
  const adds: Ranked[] = [];
  const rest: Ranked[] = [];
  for (const r of relevant) {
    if ((comp[r.i] ?? r.i) === first.comp) continue;
    if (r.terms.some((t) => !covered.has(t))) adds.push(r);
    else rest.push(r);
  }
  return { lead, adds, rest };
}

/** Words that ask for an amount or a count of events ("revenue", "sold", "spend"): the fact tables holding them are wanted. */
const MEASURE_WORDS: ReadonlySet<string> = new Set([
  'revenue', 'sales', 'sold', 'sell', 'selling', 'turnover', 'takings', 'income', 'earnings', 'earned', 'proceeds', 'spend', 'spent', 'spending',
  'paid', 'pay', 'payments', 'bought', 'buy', 'purchased', 'ordered', 'profit', 'profits', 'margin', 'cost', 'costs', 'money', 'value',
  'quantity', 'units', 'volume', 'invoiced', 'billed', 'grossed', 'brought', 'made', 'booked',
]);
function measureAsked(q: QuestionWords): boolean {
  for (const w of q.words) if (MEASURE_WORDS.has(w)) return true;
  return false;
}
/** A calendar table (a star schema's date dimension): `date_dim`, `dim_date`, `calendar`, `d_date`. */
const DATE_TABLE = /^(?:(?:dim|d)_?)?(?:date|dates|calendar|day|days)(?:_?dim|_?dimension)?$/i;
/** A column that holds an amount or a quantity. */
const MEASURE_COLUMN = /(?:amount|amt|price|prc|total|revenue|sales|cost|paid|charge|fee|freight|quantity|qty|units|extendedprice|discount|profit|subtotal|due|value)/i;
const NUMERIC = /int|numeric|decimal|money|real|double|float|number/i;
function holdsMeasure(t: DbTable): boolean {
  return t.columns.some((c) => NUMERIC.test(c.type) && MEASURE_COLUMN.test(c.name) && !/_?(?:id|key|sk)$/i.test(c.name));
}

/**
 * The facts no word names, best scored first: tables that point at two or more of the chosen ones
 * (facts, bridges), and — when the question asks for an amount ("revenue", "sold") — tables
 * holding an amount or a quantity that point at one of them (invoice lines under the tracks).
 */
function factsOf(s: Structure, picked: readonly number[], scoreOf: ReadonlyMap<number, number>, measures: boolean, catalog?: Catalog): number[] {
  const chosen = new Set(picked);
  const count = new Map<number, number>();
  for (const i of picked) {
    for (const j of s.adjacent[i] ?? []) {
      if (chosen.has(j) || !(s.outgoing[j] ?? []).includes(i)) continue;
      count.set(j, (count.get(j) ?? 0) + 1);
    }
  }
  const wanted = (j: number, n: number): boolean => {
    if (n >= 2) return true;
    if (!measures || !catalog) return false;
    const t = catalog.entries[j]?.table;
    return t !== undefined && holdsMeasure(t);
  };
  return [...count].filter(([j, n]) => wanted(j, n)).sort((a, b) => b[1] - a[1] || (scoreOf.get(b[0]) ?? 0) - (scoreOf.get(a[0]) ?? 0) || a[0] - b[0]).map(([j]) => j);
}

/** The shortest foreign-key path from `from` to any table of `to` (the tables between, in order), within MAX_PATH_HOPS. */
function pathBetween(s: Structure, from: number, to: ReadonlySet<number>): number[] | undefined {
  const prev = new Map<number, number>([[from, -1]]);
  let frontier = [from];
  for (let depth = 0; depth < MAX_PATH_HOPS && frontier.length; depth += 1) {
    const next: number[] = [];
    for (const n of frontier) {
      for (const m of s.adjacent[n] ?? []) {
        if (prev.has(m)) continue;
        prev.set(m, n);
        if (to.has(m)) {
          const path: number[] = [];
          let at = prev.get(m) ?? -1;
          while (at !== from && at !== -1) {
            path.push(at);
            at = prev.get(at) ?? -1;
          }
          return path.reverse();
        }
        next.push(m);
      }
    }
    frontier = next;
  }
  return undefined;
}

/**
 * The tables to put in the prompt for a question, with what retrieval found on the way.
 *
 * - the whole schema when it fits in `max` tables;
 * - else the tables that match well (at least RELEVANCE_CUTOFF of the best score), up to
 *   `max` less the room kept for join paths; then the tables on the shortest foreign-key paths
 *   between the best ones; then more matches and the tables the chosen ones point at, while
 *   under `max`;
 * - when no table shares a word with the question, the `max` largest tables (copies left out).
 */
export function linkTables(catalog: Catalog, question: string, history: readonly string[], max: number, opts: LinkOptions = {}): Linked {
  const q = withoutValueWords(readQuestion(question), question, opts.valueHits);
  const base = { filters: q.filters, literals: q.literals };
  const all = catalog.entries;
  if (all.length <= max) {
    // everything fits; the best tables are still where value linking looks for the literals
    const candidates = q.literals.length ? rank(catalog, q, history, opts).slice(0, opts.candidates ?? 30).map((r) => all[r.i]?.name ?? '') : [];
    return { ...base, tables: all.map((e) => e.name), candidates };
  }
  const s = structureOf(catalog);
  const ranked = rank(catalog, q, history, opts);
  const best = ranked[0];
  if (!best) {
    const bySize = all
      .map((e, i) => ({ e, i }))
      .filter(({ i }) => !s.originalOf.has(i) && !s.families[i]?.kind)
      .sort((a, b) => (b.e.table.row_estimate ?? -1) - (a.e.table.row_estimate ?? -1) || compareNames(a.e.name, b.e.name));
    return { ...base, tables: bySize.slice(0, max).map(({ e }) => e.name).sort(compareNames), candidates: [] };
  }
  const nameOf = (i: number): string => all[i]?.name ?? '';
  const scoreOf = new Map(ranked.map((r) => [r.i, r.score]));
  // reports, lone copies and loose tables come after the rest (when nothing else matches, they
  // are the rest), unless one still outscores every other table after its penalty: a view the
  // question names ("routes") is not pushed below matches far weaker than it
  const firstKept = ranked.find((r) => !r.demoted);
  const main = firstKept ? ranked.filter((r) => !r.demoted || r.score >= firstKept.score) : ranked;
  const top = main[0] ?? best;
  const weaker = main.filter((r) => r.score < top.score * RELEVANCE_CUTOFF && r.score >= top.score * WEAK_CUTOFF);
  const ordered = coherent(s, catalog, main.filter((r) => r.score >= top.score * RELEVANCE_CUTOFF), weaker);
  const relevant = [...ordered.lead, ...ordered.adds, ...ordered.rest];
  const reserve = max >= 6 ? Math.floor(max / 3) : max >= 4 ? 1 : 0;
  const picked: number[] = [];
  const has = new Set<number>();
  const add = (i: number): void => {
    if (has.has(i) || picked.length >= max) return;
    has.add(i);
    picked.push(i);
  };
  // the best source's matches and what other sources add; their rivals for the same words wait
  for (const r of [...ordered.lead, ...ordered.adds].slice(0, max - reserve)) add(r.i);

  // join paths: connect the best tables one by one to the ones already connected
  const seeds = picked.slice(0, PATH_SEEDS);
  const tree = new Set<number>(seeds.slice(0, 1));
  for (const seed of seeds.slice(1)) {
    if (picked.length >= max) break;
    const path = pathBetween(s, seed, tree);
    tree.add(seed);
    if (!path) continue;
    if (picked.length + path.length > max) continue;
    for (const p of path) {
      add(p);
      tree.add(p);
    }
  }
  // the facts no word names: a table pointing at two chosen ones ("film categories by rental
  // revenue": payment points at rental and customer), best matches first
  for (const f of factsOf(s, picked, scoreOf, measureAsked(q), catalog)) add(f);
  // and the facts under those ("revenue by category": the order lines under the products)
  const measures = measureAsked(q);
  if (measures) {
    const before = new Set(picked);
    for (const f of factsOf(s, picked, scoreOf, true, catalog)) if (!before.has(f)) add(f);
  }
  // a question filtered by dates ("per month in 2001", "on weekends") needs the calendar table the
  // chosen facts point at (a star schema's `date_dim`), which no word of it names
  if (q.filters.length) for (const i of [...picked]) for (const o of s.outgoing[i] ?? []) if (DATE_TABLE.test(all[o]?.table.name ?? '')) add(o);
  // more of the matches, then what the chosen tables point at (their dimensions), then what points at them
  for (const r of relevant) add(r.i);
  const byPriority = (a: number, b: number): number =>
    (scoreOf.get(b) ?? 0) - (scoreOf.get(a) ?? 0) || (s.incoming[b] ?? 0) - (s.incoming[a] ?? 0) || compareNames(nameOf(a), nameOf(b));
  const chosen = [...picked];
  const out = new Set<number>();
  const inc = new Set<number>();
  for (const i of chosen) {
    for (const o of s.outgoing[i] ?? []) if (!has.has(o) && !s.originalOf.has(o)) out.add(o);
    for (const j of s.adjacent[i] ?? []) if (!has.has(j) && !out.has(j)) inc.add(j);
  }
  for (const o of [...out].sort(byPriority)) add(o);
  // weaker matches that join what is chosen (with the tables between), then what points at the chosen tables
  let tries = 0;
  for (const r of main) {
    if (picked.length >= max || tries >= WEAK_TRIES || r.score < top.score * WEAK_CUTOFF) break;
    if (has.has(r.i)) continue;
    tries += 1;
    const path = pathBetween(s, r.i, has);
    if (!path || picked.length + path.length + 1 > max) continue;
    for (const p of path) add(p);
    add(r.i);
  }
  for (const j of [...inc].sort(byPriority)) add(j);
  // then the demoted tables that match as well as the chosen ones
  for (const r of ranked) if (r.demoted && r.score >= top.score * RELEVANCE_CUTOFF) add(r.i);
  // room left (a small source, a question of few words): the next matches by score, down to FILL_CUTOFF of the best
  for (const r of main) if (r.score >= top.score * FILL_CUTOFF) add(r.i);

  const result: Linked = {
    ...base,
    tables: picked.map(nameOf).sort(compareNames),
    candidates: ranked.slice(0, opts.candidates ?? 30).map((r) => nameOf(r.i)),
  };
  const ambiguity = tieFor(catalog, s, q, ranked, opts.clarified ?? []);
  if (ambiguity) result.ambiguity = ambiguity;
  return result;
}

/** The tables to put in the prompt for a question, by name, sorted (linkTables without the rest). */
export function selectTables(catalog: Catalog, question: string, history: readonly string[], max: number, opts: LinkOptions = {}): string[] {
  return linkTables(catalog, question, history, max, opts).tables;
}

/**
 * A word the question leaves open between sources: the two best tables match the same single
 * word of the question in their name or description, no other word tells them apart (their
 * scores differ by less than TIE), they are not copies, and they belong to different sources
 * (join components, else schemas) that cover the question's words equally well — a word shared
 * by unrelated tables of one source, or by a table and its detail, is no question to ask. The
 * choices are the sources, each named by its best table and where it lives (up to four).
 */
function tieFor(catalog: Catalog, s: Structure, q: QuestionWords, ranked: readonly Ranked[], clarified: readonly string[]): Ambiguity | undefined {
  const main = ranked.filter((r) => !r.demoted);
  const [a, b] = main;
  if (!a || !b || a.score <= 0) return undefined;
  if ((a.score - b.score) / a.score >= TIE) return undefined;
  const comp = components(s, catalog);
  if (comp[a.i] === comp[b.i]) return undefined;
  const fa = s.families[a.i];
  const fb = s.families[b.i];
  if (fa?.kind || fb?.kind) return undefined;
  const shared = a.terms.filter((t) => b.terms.includes(t) && q.terms.includes(t));
  if (shared.length !== 1 || a.terms.length !== 1 || b.terms.length !== 1) return undefined;
  // a question naming a value or a person ("Jane Peacock", 'Berlin') is about what the data holds, where the value settles the source
  if (q.literals.length) return undefined;
  const term = shared[0] ?? '';
  const done = new Set(clarified.map((w) => w.toLowerCase()));
  const word = [...q.words].find((w) => readQuestion(w).terms.includes(term)) ?? term;
  if (done.has(word) || done.has(term)) return undefined;
  // the sources' strengths over every word of the question: one that covers more is the answer
  const strengths = sourceStrengths(s, catalog, main.filter((r) => r.score >= a.score * RELEVANCE_CUTOFF));
  const first = strengths[0];
  if (!first || (first.comp !== comp[a.i] && first.comp !== comp[b.i])) return undefined;
  const rivals = strengths.filter((x) => x.keys.size === first.keys.size && x.value >= first.value * (1 - TIE) && x.best.terms.includes(term));
  if (rivals.length < 2) return undefined;
  const chosen = rivals.slice(0, 4).map((x) => catalog.entries[x.best.i]).filter((e): e is CatalogEntry => e !== undefined && !s.families[s.index.get(e.name) ?? -1]?.kind);
  if (chosen.length < 2) return undefined;
  const label = (e: CatalogEntry): string => {
    const where = e.table.schema && e.name.includes('.') ? ` in ${e.table.schema}` : '';
    return e.table.comment ? `${e.name}${where} (${e.table.comment.replace(/\s+/g, ' ').slice(0, 80)})` : `${e.name}${where}`;
  };
  const names = chosen.map((e) => e.name);
  return {
    word,
    choices: chosen.map((e) => ({ label: label(e), value: e.name, kind: 'table' as const })),
    question: `Which "${word}" do you mean: ${names.slice(0, -1).join(', ')} or ${names.at(-1)}?`,
  };
}

interface SourceStrength {
  comp: number | string;
  /** the sum over the question's words of the source's best score for the word */
  value: number;
  keys: Set<string>;
  /** the question's literals found among its tables' values */
  literals: number;
  /** the question's periods its tables' dates cover */
  dates: number;
  /** its best table */
  best: Ranked;
}

/**
 * The sources (components) of the matches by how well they cover the question: the literals
 * found among their values first, then the question's words (the sum of each word's best score).
 */
function sourceStrengths(s: Structure, catalog: Catalog, relevant: readonly Ranked[]): SourceStrength[] {
  const comp = components(s, catalog);
  const by = new Map<number | string, { m: Map<string, number>; best: Ranked }>();
  for (const r of relevant) {
    const c = comp[r.i] ?? r.i;
    const had = by.get(c) ?? { m: new Map<string, number>(), best: r };
    for (const term of r.terms) had.m.set(term, Math.max(had.m.get(term) ?? 0, r.score / Math.max(1, r.terms.length)));
    by.set(c, had);
  }
  const out: SourceStrength[] = [];
  for (const [c, { m, best }] of by) {
    let value = 0;
    for (const x of m.values()) value += x;
    const keys = new Set(m.keys());
    out.push({ comp: c, value, keys, literals: [...keys].filter(isValueTerm).length, dates: [...keys].filter(isDateTerm).length, best });
  }
  // a source holding more of the question's values is the one asked about, whatever its names
  // say; then one whose data covers the question's years
  return out.sort((x, y) => y.literals - x.literals || y.dates - x.dates || y.value - x.value || y.best.score - x.best.score);
}

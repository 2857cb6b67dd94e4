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
import { type Catalog, compareNames, displayName, RELEVANCE_CUTOFF, WEIGHT_HISTORY } from './catalog.js';
import { askedFor, type Family, familyOf } from './families.js';
import { lexicalIndex } from './lexical.js';
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
/** A weaker match joined to a chosen table comes in while there is room when it scores at least this share of the best. */
const WEAK_CUTOFF = 0.05;
/** Weaker matches tried for a join path to the chosen tables, at most. */
const WEAK_TRIES = 10;
/** Foreign-key hops a join path may take between two chosen tables. */
const MAX_PATH_HOPS = 3;
/** Top tables connected by join paths. */
const PATH_SEEDS = 5;
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
  const copyOf = (i: number, candidates: readonly number[]): number | undefined => {
    const cols = new Set((entries[i]?.table.columns ?? []).map((c) => c.name.toLowerCase()));
    for (const o of candidates) {
      if (o === i) continue;
      const orig = entries[o]?.table;
      if (!orig) continue;
      // a copy holds most of its original's columns (or the original most of the copy's)
      const shared = orig.columns.filter((c) => cols.has(c.name.toLowerCase())).length;
      if (shared / Math.max(1, orig.columns.length) >= 0.6 && shared / Math.max(1, cols.size) >= 0.5) return o;
    }
    return undefined;
  };
  entries.forEach((e, i) => {
    const f = families[i];
    if (!f?.kind || !f.base) return;
    // the base, then (copies) without leading parts (a sandbox owner: jdoe_orders → orders)
    const p = f.base.split('_');
    for (let k = 0; k < (f.kind === 'copy' ? p.length : 1); k += 1) {
      const key = p.slice(k).join('_');
      const o = copyOf(i, byBase.get(key) ?? byBase.get(`${key}s`) ?? []);
      if (o !== undefined) {
        originalOf.set(i, o);
        return;
      }
    }
  });
  // copies with no original in the catalog (ml_features_v2 … _v5): the family's first name stands for the rest
  const lone = new Map<string, number>();
  entries.forEach((e, i) => {
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
  entries.forEach((e, i) => {
    for (const fk of e.table.foreign_keys ?? []) {
      const j = index.get(displayName({ schema: fk.ref_schema, name: fk.ref_table }, catalog.defaultSchema));
      if (j === undefined || j === i) continue;
      if (!outgoing[i]?.includes(j)) outgoing[i]?.push(j);
      if (originalOf.has(i) || originalOf.has(j)) continue;
      incoming[j] = (incoming[j] ?? 0) + 1;
      adjacentSets[i]?.add(j);
      adjacentSets[j]?.add(i);
    }
  });
  const s: Structure = { index, families, originalOf, incoming, adjacent: adjacentSets.map((x) => [...x]), outgoing, joined, anyJoined: joined.filter(Boolean).length >= 10 };
  structures.set(catalog, s);
  return s;
}

// ---- scoring ----------------------------------------------------------------------------------

export interface RankOptions {
  /** what the semantic layer says of each table (semantic-terms.ts) */
  semantic?: ReadonlyMap<string, string>;
  /** literal → the tables (and columns) whose known values hold it (values.ts) */
  valueHits?: ReadonlyMap<string, ReadonlyArray<{ table: string; column: string }>>;
}

interface Ranked {
  i: number;
  score: number;
  /** a report, a copy with no original, or a table no foreign key joins, not asked for: chosen after the others */
  demoted?: boolean;
  /** the question's terms it matched */
  terms: string[];
}

function searchTerms(q: QuestionWords, history: readonly string[]): Map<string, number> {
  const wanted = new Map<string, number>();
  for (const h of history) for (const term of readQuestion(h).terms) wanted.set(term, Math.max(wanted.get(term) ?? 0, WEIGHT_HISTORY));
  for (const term of q.terms) wanted.set(term, 1);
  return wanted;
}

function rank(catalog: Catalog, q: QuestionWords, history: readonly string[], opts: RankOptions): Ranked[] {
  const s = structureOf(catalog);
  const index = lexicalIndex(catalog);
  if (opts.semantic) index.setSemantic(opts.semantic);
  const hits = index.search(searchTerms(q, history));
  const scores = new Map<number, Ranked>();
  const demote = new Set<number>();
  const put = (i: number, score: number, terms: string[]): void => {
    const had = scores.get(i);
    if (!had) scores.set(i, { i, score, terms });
    else if (score > had.score) scores.set(i, { i, score, terms: [...new Set([...had.terms, ...terms])] });
  };
  for (const [i, hit] of hits) {
    const f = s.families[i];
    const asked = f ? askedFor(f, q.words) : false;
    let score = hit.score * (1 + HUB_BONUS * Math.log2(1 + (s.incoming[i] ?? 0)));
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
  if (opts.valueHits) {
    for (const hits of opts.valueHits.values()) {
      for (const h of hits) {
        const i = s.index.get(h.table);
        if (i === undefined) continue;
        const target = s.originalOf.get(i) ?? i;
        const had = scores.get(target);
        scores.set(target, { i: target, score: (had?.score ?? 0) + best * VALUE_BONUS, terms: had?.terms ?? [] });
      }
    }
  }
  const out = [...scores.values()];
  for (const r of out) if (demote.has(r.i)) r.demoted = true;
  const names = catalog.entries;
  out.sort((a, b) => b.score - a.score || compareNames(names[a.i]?.name ?? '', names[b.i]?.name ?? ''));
  return out;
}

/**
 * How well each table matches the question (and, for half, the earlier ones): best first,
 * tables that share no word left out, copies folded onto their originals.
 */
export function scoreTables(catalog: Catalog, question: string, history: readonly string[] = [], opts: RankOptions = {}): ScoredTable[] {
  return rank(catalog, readQuestion(question), history, opts).map((r) => ({ name: catalog.entries[r.i]?.name ?? '', score: r.score }));
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
  const q = readQuestion(question);
  const base = { filters: q.filters, literals: q.literals };
  const all = catalog.entries;
  if (all.length <= max) {
    // everything fits; the best tables are still where value linking looks for the literals
    const candidates = q.literals.length ? rank(catalog, q, history, opts).slice(0, 30).map((r) => all[r.i]?.name ?? '') : [];
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
  // reports, lone copies and loose tables come after the rest (when nothing else matches, they are the rest)
  const main = ranked.some((r) => !r.demoted) ? ranked.filter((r) => !r.demoted) : ranked;
  const top = main[0] ?? best;
  const relevant = main.filter((r) => r.score >= top.score * RELEVANCE_CUTOFF);
  const reserve = max >= 6 ? Math.floor(max / 3) : max >= 4 ? 1 : 0;
  const picked: number[] = [];
  const has = new Set<number>();
  const add = (i: number): void => {
    if (has.has(i) || picked.length >= max) return;
    has.add(i);
    picked.push(i);
  };
  for (const r of relevant.slice(0, max - reserve)) add(r.i);

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

  const result: Linked = {
    ...base,
    tables: picked.map(nameOf).sort(compareNames),
    candidates: ranked.slice(0, 30).map((r) => nameOf(r.i)),
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
 * Two tables tie for a word: the two best tables both match the same word of the question in
 * their name or semantic description, no other word tells them apart (their scores differ by
 * less than TIE), they are not copies of each other, and no foreign key joins them (a table and
 * its detail are not rivals).
 */
function tieFor(catalog: Catalog, s: Structure, q: QuestionWords, ranked: readonly Ranked[], clarified: readonly string[]): Ambiguity | undefined {
  const [a, b] = ranked;
  if (!a || !b || a.score <= 0) return undefined;
  if ((a.score - b.score) / a.score >= TIE) return undefined;
  if ((s.adjacent[a.i] ?? []).includes(b.i)) return undefined;
  const fa = s.families[a.i];
  const fb = s.families[b.i];
  if (fa?.kind || fb?.kind) return undefined;
  const shared = a.terms.filter((t) => b.terms.includes(t) && q.terms.includes(t));
  if (shared.length !== 1 || a.terms.length !== 1 || b.terms.length !== 1) return undefined;
  const term = shared[0] ?? '';
  const done = new Set(clarified.map((w) => w.toLowerCase()));
  const word = [...q.words].find((w) => readQuestion(w).terms.includes(term)) ?? term;
  if (done.has(word) || done.has(term)) return undefined;
  const ea = catalog.entries[a.i];
  const eb = catalog.entries[b.i];
  if (!ea || !eb) return undefined;
  const label = (e: typeof ea): string => (e.table.comment ? `${e.name} (${e.table.comment.replace(/\s+/g, ' ').slice(0, 80)})` : e.name);
  return {
    word,
    choices: [
      { label: label(ea), value: ea.name, kind: 'table' },
      { label: label(eb), value: eb.name, kind: 'table' },
    ],
    question: `Which "${word}" do you mean: ${ea.name} or ${eb.name}?`,
  };
}

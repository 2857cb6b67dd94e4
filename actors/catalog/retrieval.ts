/**
 * Retrieval: the tables a question needs, scored by the words they share with it (rarer words
 * count more), the best ones taken and their foreign-key neighbours added while there is room.
 */
import { type Catalog, compareNames, displayName, RELEVANCE_CUTOFF, termSet, WEIGHT_HISTORY } from './catalog.js';

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

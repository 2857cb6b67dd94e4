/**
 * Identifiers that run words together with no separator and no capital: TPC-H's `lineitem` and
 * `partsupp`, AdventureWorks' `salesorderheader` and `productsubcategory`, the world database's
 * `countrylanguage`, columns such as `extendedprice`, `custkey` or `billofmaterials`. The
 * tokenizer (lexical.ts) splits snake_case and camelCase only, so a question's "line items",
 * "order header" or "credit card" never met these names.
 *
 * A word of an identifier is cut into dictionary words when it is not a word itself: WordNet's
 * lemmas (lexicon.ts, any part of speech, plurals and verb forms included) and the business
 * thesaurus's words (thesaurus.ts: `cust`, `supp`, `qty` …). The cut with the fewest parts wins,
 * then the one with the longest parts (the sum of their squared lengths): `partsupp` is
 * part + supp, never par + tsu + pp. Every part must be a known word of three letters or more,
 * or one of a few short joining words (`of`, `id`, `no` …: bill of materials, customer id);
 * a word that cannot be cut whole (`acctbal`, `kna1`, cryptic ERP names) stays as it is.
 *
 * The index keeps the whole word beside its parts (a question may say `lineitem`).
 */
import { knownWord } from './lexicon.js';
import { thesaurusWords } from './thesaurus.js';

/** Shortest word worth cutting (`custkey`, `shipto`; `ordno` stays whole). */
const MIN_LENGTH = 6;
/** Longest word cut (longer ones are hashes or encoded names). */
const MAX_LENGTH = 48;
/** Most parts a cut may have. */
const MAX_PARTS = 6;
/** Shortest part that is a dictionary word. */
const MIN_PART = 3;
/** Short joining words a part may be: `billofmaterials`, `headofstate`, `customerid`, `orderno`, `shipto`, `createdby`. */
const SHORT_PARTS: ReadonlySet<string> = new Set(['of', 'id', 'no', 'to', 'by', 'at', 'on']);
/** Words whose cut is kept, at most. */
const MAX_KEPT = 100_000;

const kept = new Map<string, readonly string[] | null>();

/** 2: a word as the dictionary or the thesaurus writes it; 1: a plural or a verb form of one; 0: no word. */
function gradeOf(part: string, thesaurus: ReadonlySet<string>): number {
  if (SHORT_PARTS.has(part)) return 2;
  if (part.length < MIN_PART) return 0;
  if (thesaurus.has(part)) return 2;
  const known = knownWord(part) ?? 0;
  if (known) return known;
  return thesaurus.has(singular(part)) ? 1 : 0;
}

function singular(w: string): string {
  if (w.endsWith('ies')) return `${w.slice(0, -3)}y`;
  if (w.endsWith('s') && !w.endsWith('ss')) return w.slice(0, -1);
  return w;
}

/**
 * The dictionary words a run-together identifier word is made of (`salesorderheader` → sales,
 * order, header), or undefined when it is a word itself, too short or long, not all letters,
 * or cannot be cut into known words whole. Lower-case input.
 */
export function splitIdentifier(word: string): readonly string[] | undefined {
  if (word.length < MIN_LENGTH || word.length > MAX_LENGTH || !/^[a-z]+$/.test(word)) return undefined;
  const had = kept.get(word);
  if (had !== undefined) return had ?? undefined;
  const thesaurus = thesaurusWords();
  let out: readonly string[] | null = null;
  const whole = knownWord(word);
  // no dictionary installed: nothing to cut by
  if (whole === undefined) return undefined;
  if (!whole && !thesaurus.has(word) && !thesaurus.has(singular(word))) out = cut(word, thesaurus);
  if (kept.size >= MAX_KEPT) kept.clear();
  kept.set(word, out);
  return out ?? undefined;
}

interface Cut {
  parts: number;
  /** parts that are plurals or verb forms */
  inflected: number;
  /** three-letter dictionary words (WordNet holds many rare ones: `ate`, `alt`, `tor`) */
  short: number;
  /** the sum of the parts' squared lengths */
  weight: number;
  /** where the last part starts */
  from: number;
}

function better(a: Cut, b: Cut): boolean {
  if (a.parts !== b.parts) return a.parts < b.parts;
  if (a.inflected !== b.inflected) return a.inflected < b.inflected;
  if (a.short !== b.short) return a.short < b.short;
  return a.weight > b.weight;
}

/**
 * The best cut of the whole word, by dynamic programming over its prefixes; null when none.
 * Best: the fewest parts, then the fewest parts that are plurals or verb forms (`create date`,
 * not `created ate`; `marital status`, not `maritals tatus`), then the fewest three-letter
 * words (`hire date`, not `hired ate`), then the longest parts.
 */
function cut(word: string, thesaurus: ReadonlySet<string>): string[] | null {
  const n = word.length;
  // best[i]: the best cut of word[0..i)
  const best: Array<Cut | undefined> = [{ parts: 0, inflected: 0, short: 0, weight: 0, from: -1 }];
  for (let i = 1; i <= n; i += 1) {
    for (let j = 0; j < i; j += 1) {
      const before = best[j];
      if (!before || before.parts >= MAX_PARTS) continue;
      const part = word.slice(j, i);
      const grade = gradeOf(part, thesaurus);
      if (!grade) continue;
      const next: Cut = {
        parts: before.parts + 1,
        inflected: before.inflected + (grade === 1 ? 1 : 0),
        short: before.short + (part.length <= MIN_PART && !SHORT_PARTS.has(part) && !thesaurus.has(part) ? 1 : 0),
        weight: before.weight + part.length * part.length,
        from: j,
      };
      const had = best[i];
      if (!had || better(next, had)) best[i] = next;
    }
  }
  const end = best[n];
  if (!end || end.parts < 2) return null;
  const parts: string[] = [];
  for (let i = n; i > 0; i = best[i]!.from) parts.unshift(word.slice(best[i]!.from, i));
  return parts;
}

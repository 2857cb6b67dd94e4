/**
 * Masking inside the documents a result returns (the rule's meaning for JSON: rules.ts).
 *
 * Every text cell of a column that is not masked whole, that holds a JSON object or array (JSON
 * and JSONB columns, MySQL JSON, MariaDB's JSON text, BigQuery STRUCT, ARRAY and JSON values, a
 * document cast to text, `json_agg(...)`), is walked: the value of every member whose key a rule
 * matches is masked in place, at any depth, with that rule's strategy (an object or array under
 * such a key becomes one masked value; `partial` hashes those, it keeps a part of a value only);
 * the rest stays readable. A string value that itself holds a document is walked too.
 *
 * Text that looks like a document's but does not parse (a document cut with substr, several
 * documents joined by string_agg, PostgreSQL's array or record text with its quotes doubled or
 * escaped) is searched for quoted keys (`"email":`, `\"email\":`, `""email"":`): one a rule
 * matches masks the whole cell (never partially). What this cannot see: a document turned into
 * text whose keys were renamed or dropped (`replace(payload::text, 'email', 'x')`) when nothing
 * says the column holds documents (handle.ts: a dotted rule naming it, or a read inside it in the
 * same statement, masks such a value whole).
 *
 * Cost: a cell is parsed only when it holds a quoted key some rule could match (or a backslash,
 * which could hide one); a document is written back (JSON.stringify: compact, numbers as
 * JavaScript reads them) only when a member was masked.
 */
import type { Cell, Column } from '../../../protocol/schemas/common.js';
import type { MaskedColumn } from '../../../protocol/schemas/policy.js';
import type { Lineage } from './lineage.js';
import { baseNames, keyMatches, type CompiledRule } from './rules.js';
import { masker, strongest, type Hasher, type Strategy } from './strategies.js';

/** Nesting deeper than this is not walked: the cell is masked whole instead. */
const MAX_NESTING = 200;

const KEY_TOKEN = /\\*"+([^"\\\n]{1,200}?)\\*"+\s*:/g;

interface Walker {
  rules: readonly CompiledRule[];
  bases: string[][];
  anyTable: boolean;
  hasher: Hasher;
  /** one masker per strategy for the whole column (hash remembers what it hashed) */
  maskers: Map<Strategy, (cell: Cell) => Cell>;
  /** what was masked in this column: rule → strongest strategy */
  used: Map<string, Strategy>;
  /** the keys masked, as paths (for the report) */
  paths: Set<string>;
}

function ruleFor(w: Walker, key: string, inner: readonly string[]): { strategy: Strategy; pattern: string } | undefined {
  let best: { strategy: Strategy; pattern: string } | undefined;
  for (const r of w.rules) {
    if (!keyMatches(r, key, inner, w.bases, w.anyTable)) continue;
    if (!best || strongest([best.strategy, r.rule.strategy]) !== best.strategy) best = { strategy: r.rule.strategy, pattern: r.rule.field_pattern };
  }
  return best;
}

function note(w: Walker, strategy: Strategy, pattern: string, path: () => string): void {
  const before = w.used.get(pattern);
  if (before !== strategy) w.used.set(pattern, before === undefined ? strategy : strongest([before, strategy])!);
  if (w.paths.size < 20) w.paths.add(path());
}

function maskerFor(w: Walker, strategy: Strategy): (cell: Cell) => Cell {
  let m = w.maskers.get(strategy);
  if (!m) w.maskers.set(strategy, (m = masker(strategy, w.hasher)));
  return m;
}

/** A member's value masked whole: scalars by the strategy, objects and arrays as their text (never partially). */
function maskValue(v: unknown, strategy: Strategy, w: Walker): unknown {
  if (v === null) return null;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return maskerFor(w, strategy)(v);
  return maskerFor(w, strategy === 'partial' ? 'hash' : strategy)(JSON.stringify(v));
}

/** Walk a parsed document; true when something in it was masked. Iterative: no stack to overflow. */
function walk(doc: unknown, w: Walker): boolean {
  let changed = false;
  const stack: Array<{ node: unknown; inner: string[]; depth: number }> = [{ node: doc, inner: [], depth: 0 }];
  for (let t = stack.pop(); t !== undefined; t = stack.pop()) {
    const { node, inner, depth } = t;
    if (depth > MAX_NESTING) throw new TooDeep();
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const v = node[i];
        if (typeof v === 'string') {
          const m = maskText(v, w, inner);
          if (m !== v) {
            node[i] = m;
            changed = true;
          }
        } else if (v !== null && typeof v === 'object') stack.push({ node: v, inner, depth: depth + 1 });
      }
      continue;
    }
    if (node === null || typeof node !== 'object') continue;
    const obj = node as Record<string, unknown>;
    for (const key of Object.keys(obj)) {
      // a key made of a document's text (jsonb_object_agg(payload::text, …)) shows what it holds
      if (key.indexOf('"') >= 0 && key.indexOf(':') >= 0 && key !== maskText(key, w, inner)) throw new KeyHolds();
      const v = obj[key];
      const hit = ruleFor(w, key, inner);
      if (hit) {
        obj[key] = maskValue(v, hit.strategy, w);
        note(w, hit.strategy, hit.pattern, () => [...inner, key].join('.'));
        changed = true;
        continue;
      }
      if (typeof v === 'string') {
        const m = maskText(v, w, [...inner, key]);
        if (m !== v) {
          obj[key] = m;
          changed = true;
        }
      } else if (v !== null && typeof v === 'object') stack.push({ node: v, inner: [...inner, key], depth: depth + 1 });
    }
  }
  return changed;
}

class TooDeep extends Error {}
class KeyHolds extends Error {}

/** A text value: a document in it walked, or the whole text masked when it shows a masked key it cannot be parsed around. */
function maskText(text: string, w: Walker, inner: readonly string[]): string {
  if (text.indexOf('"') < 0 || text.indexOf(':') < 0) return text;
  // no key a rule could match: nothing to parse (an escaped character could hide a key: parse)
  if (text.indexOf('\\') < 0 && !keyTokens(text, w)) return text;
  const start = firstChar(text);
  if (start === '{' || start === '[') {
    let doc: unknown;
    let parsed = false;
    try {
      doc = JSON.parse(text);
      parsed = true;
    } catch {
      // not JSON: searched for keys below
    }
    if (parsed && doc !== null && typeof doc === 'object') {
      try {
        return walk(doc, w) ? JSON.stringify(doc) : text;
      } catch (err) {
        if (!(err instanceof TooDeep) && !(err instanceof KeyHolds)) throw err;
        return wholeText(text, w, { strategy: strongest(w.rules.map((r) => r.rule.strategy))!, pattern: w.rules[0]!.rule.field_pattern }, () => inner.join('.'));
      }
    }
  }
  // text that holds quoted keys but is no document: a masked key anywhere masks it all
  for (const m of text.matchAll(KEY_TOKEN)) {
    const hit = ruleFor(w, m[1]!, inner);
    if (hit) return wholeText(text, w, hit, () => [...inner, m[1]!].join('.'));
  }
  return text;
}

function wholeText(text: string, w: Walker, hit: { strategy: Strategy; pattern: string }, path: () => string): string {
  const strategy = hit.strategy === 'partial' ? 'hash' : hit.strategy;
  note(w, strategy, hit.pattern, path);
  return String(maskerFor(w, strategy)(text));
}

const PLAIN_KEY = /"([^"]{1,200})"\s*:/g;

/** Whether the text has a quoted key some rule's column part matches (what T says is checked later). */
function keyTokens(text: string, w: Walker): boolean {
  for (const m of text.matchAll(PLAIN_KEY)) if (w.rules.some((r) => r.column.test(m[1]!))) return true;
  return false;
}

/** Whether a text shows a document's shape: quoted keys (plain, escaped or doubled), in JSON or cut from it. */
export function looksLikeDocument(text: string): boolean {
  if (text.indexOf('"') < 0 || text.indexOf(':') < 0) return false;
  KEY_TOKEN.lastIndex = 0;
  const found = KEY_TOKEN.test(text);
  KEY_TOKEN.lastIndex = 0;
  return found;
}

/** Whether a document holds, as a string somewhere in it, text shaped like a document (a document turned into text and put in). */
export function nestedDocument(text: string): boolean {
  if (text.indexOf('\\"') < 0) return false; // a nested document's quotes are escaped
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return looksLikeDocument(text);
  }
  const stack: unknown[] = [doc];
  for (let n = stack.pop(), guard = 0; n !== undefined && guard < 100_000; n = stack.pop(), guard++) {
    if (typeof n === 'string') {
      if (looksLikeDocument(n)) return true;
    } else if (Array.isArray(n)) stack.push(...(n as unknown[]));
    else if (n !== null && typeof n === 'object') {
      for (const [k, v] of Object.entries(n)) {
        if (looksLikeDocument(k)) return true;
        stack.push(v);
      }
    }
  }
  return false;
}

/** The first character that is not white space, without copying the text. */
function firstChar(text: string): string | undefined {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 32 && c !== 9 && c !== 10 && c !== 13) return text[i];
  }
  return undefined;
}

/**
 * The rows with masked keys masked inside the documents of the columns `plan` leaves alone, and
 * what was masked (one entry per column changed, in the shape of the plan's).
 */
export function maskDocuments(
  rows: Cell[][],
  columns: readonly Column[],
  plan: readonly MaskedColumn[],
  lineages: readonly Lineage[],
  rules: readonly CompiledRule[],
  hasher: Hasher,
): { rows: Cell[][]; masked: MaskedColumn[] } {
  if (rules.length === 0 || rows.length === 0) return { rows, masked: [] };
  const whole = new Set(plan.map((m) => m.index));
  const masked: MaskedColumn[] = [];
  let out = rows;
  for (let c = 0; c < columns.length; c++) {
    if (whole.has(c)) continue;
    const lin = lineages[c];
    const bases: string[][] = [];
    let anyTable = !lin || lin.opaque;
    for (const s of lin?.sources.values() ?? []) {
      if (s.column === null || s.table === undefined) anyTable = true;
      else bases.push(baseNames(s));
    }
    const w: Walker = { rules, bases, anyTable, hasher, maskers: new Map(), used: new Map(), paths: new Set() };
    for (let r = 0; r < out.length; r++) {
      const cell = out[r]![c];
      if (typeof cell !== 'string') continue;
      const m = maskText(cell, w, []);
      if (m === cell) continue;
      if (out === rows) out = rows.map((row) => row.slice());
      out[r]![c] = m;
    }
    if (w.used.size > 0) {
      const strategy = strongest(w.used.values())!;
      const rule = [...w.used].find(([, s]) => s === strategy)![0];
      masked.push({ index: c, column: columns[c]!.name, strategy, rule, sources: [...w.paths].map((p) => `${columns[c]!.name}.${p || '(text)'}`) });
    }
  }
  return { rows: out, masked };
}

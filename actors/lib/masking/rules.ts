/**
 * Mask rules against names: columns, and keys inside documents.
 *
 * `field_pattern` is a glob, case-insensitive: `*` any run of characters (also none), `?` one
 * character, everything else literal. Without a dot it names columns and keys of that name
 * anywhere. With a dot, the part after the last dot (K) names a column or a key and the part
 * before it (T) where it sits:
 * - a column K of a table T (`users.email`, `*.ssn`; `public.users` is tried as `public.users`
 *   and `users`; a table written without its schema may be in any: `public.users.email` matches
 *   `FROM users`); a source whose table is not known matches on K alone (the safe side);
 * - a key K inside a document, where T names any part of the way to it: the table, the document
 *   column, keys above it (`customers.email`, `payload.email`, `customers.payload.email`,
 *   `contact.email` all reach `{"contact": {"email": …}}` in `customers.payload`).
 * A dotted rule whose T ends at a column (`payload.email`, `customers.payload.*`) also says
 * that column holds documents: a value made from the whole of it is masked (handle.ts).
 */
import type { MaskRuleLite } from '../../../protocol/schemas/policy.js';
import { INDEX } from './json.js';
import type { Source } from './lineage.js';

export interface CompiledRule {
  rule: MaskRuleLite;
  /** K: the column or key */
  column: RegExp;
  /** T, part by part (right-aligned against what it names); absent for a pattern without a dot */
  table?: RegExp[];
  /** T whole, for patterns whose `*` spans dots (`*` = any table, `a*b`) */
  tableWhole?: RegExp;
  /** T's last part is a name, not a glob: it can name a document column */
  namesColumn?: boolean;
}

const compiled = new Map<string, CompiledRule>();

function globSource(glob: string): string {
  let re = '';
  for (const ch of glob) {
    if (ch === '*') re += '.*';
    else if (ch === '?') re += '.';
    else re += ch.replace(/[\\^$.|+()[\]{}]/g, '\\$&');
  }
  return re;
}

export function globRegExp(glob: string): RegExp {
  return new RegExp(`^${globSource(glob)}$`, 'is');
}

/** Whether a glob matches a name (case-insensitive; `*` and `?`). */
export function globMatch(glob: string, name: string): boolean {
  return globRegExp(glob).test(name);
}

export function compileRule(rule: MaskRuleLite): CompiledRule {
  const key = `${rule.strategy}\u0000${rule.field_pattern}`;
  let c = compiled.get(key);
  if (!c) {
    const dot = rule.field_pattern.lastIndexOf('.');
    if (dot < 0) c = { rule, column: globRegExp(rule.field_pattern) };
    else {
      const t = rule.field_pattern.slice(0, dot);
      const last = t.slice(t.lastIndexOf('.') + 1);
      c = { rule, column: globRegExp(rule.field_pattern.slice(dot + 1)), table: t.split('.').map(globRegExp), tableWhole: globRegExp(t), namesColumn: last !== '' && !/[*?]/.test(last) };
    }
    if (compiled.size > 1_000) compiled.clear();
    compiled.set(key, c);
  }
  return c;
}

/**
 * Whether T names the names `seq` ends with at `end` (T right-aligned: `public.users` against
 * [users] matches, the schema not written; against [crm, users] it does not).
 */
function endsAt(r: CompiledRule, seq: readonly string[], end: number): boolean {
  const t = r.table!;
  let matched = true;
  for (let k = 0; k < t.length; k++) {
    const idx = end - k;
    if (idx < 0) break; // names not written (a schema): any
    if (!t[t.length - 1 - k]!.test(seq[idx]!)) {
      matched = false;
      break;
    }
  }
  if (matched) return true;
  // T as one glob (its `*` may span dots) against the names up to `end`
  for (let start = end; start >= 0; start--) if (r.tableWhole!.test(seq.slice(start, end + 1).join('.'))) return true;
  return false;
}

function tableParts(s: Source): string[] {
  return s.table !== undefined ? s.table.split('.') : [];
}

function keysOf(s: Source): string[] {
  return (s.path ?? []).filter((k) => k !== INDEX);
}

/** Whether a rule matches a source: its column, or a key on its path. */
export function sourceMatches(r: CompiledRule, s: Source): boolean {
  if (s.column === null) return false;
  const keys = keysOf(s);
  if (!r.table) return r.column.test(s.column) || keys.some((k) => r.column.test(k));
  // a source whose table is not known: on K alone
  if (s.table === undefined) return r.column.test(s.column) || keys.some((k) => r.column.test(k));
  const seq = [...tableParts(s), s.column, ...keys];
  const columnAt = seq.length - keys.length - 1;
  if (r.column.test(s.column) && endsAt(r, seq, columnAt - 1)) return true;
  for (let i = 0; i < keys.length; i++) {
    if (!r.column.test(keys[i]!)) continue;
    for (let end = columnAt + i; end >= 0; end--) if (endsAt(r, seq, end)) return true;
  }
  return false;
}

/** Whether a dotted rule says the value at this source is a document holding its K (T ends at the column or a key on the path). */
export function namesDocument(r: CompiledRule, s: Source): boolean {
  if (!r.table || !r.namesColumn || s.column === null) return false;
  const seq = [...tableParts(s), s.column, ...keysOf(s)];
  return endsAt(r, seq, seq.length - 1);
}

/**
 * Whether a rule matches the key `key` at `inner` (the keys above it, outermost first) inside a
 * document whose value comes from `bases` (each: table parts, column, path; empty: made in the
 * statement). `anyTable`: the document's origin is not fully known, so T is taken as matching.
 */
export function keyMatches(r: CompiledRule, key: string, inner: readonly string[], bases: readonly string[][], anyTable: boolean): boolean {
  if (!r.column.test(key)) return false;
  if (!r.table || anyTable) return true;
  const candidates = bases.length ? bases : [[]];
  for (const base of candidates) {
    const seq = [...base, ...inner];
    for (let end = seq.length - 1; end >= 0; end--) if (endsAt(r, seq, end)) return true;
  }
  return false;
}

/** A source for people: `table.column` and the path (`customers.payload.contact.email`). */
export function display(s: Source): string {
  const base = s.table !== undefined ? `${s.table}.${s.column ?? '*'}` : (s.column ?? '*');
  return s.path?.length ? `${base}.${s.path.join('.')}` : base;
}

/** The names a document's value comes from, for keyMatches. */
export function baseNames(s: Source): string[] {
  return s.column === null ? [] : [...tableParts(s), s.column, ...keysOf(s)];
}

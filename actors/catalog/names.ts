/** Table names as people type them: parsed, resolved against the catalog (case and quoting as SQL does), the closest name suggested. */
import { CortadoError } from '../../protocol/errors.js';
import { type Catalog, type CatalogEntry, compareNames } from './catalog.js';

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

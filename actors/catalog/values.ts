/**
 * Value linking: the literals of a question ('Berlin', "SPRING20", Acme) looked up among the
 * known values of the best tables' text columns, from the executor's `sql.profile` (the
 * engine's statistics where it keeps them, else a bounded sample), asked lazily for the tables
 * not yet known and kept per scope for the catalog's cache TTL.
 *
 * The schema text then names, beside a matching column, the values that matched: the model
 * learns which column holds 'Berlin' and how it is spelt there. Only values the user typed are
 * shown (never the other sampled values, which no mask rule has seen).
 */
import type { Ctx } from '../../protocol/bus.js';
import type { SqlProfileReply, SqlProfileRequest } from '../../protocol/schemas/profile.js';
import type { Catalog } from './catalog.js';

/** table (catalog name) → column → known values (text) */
export type KnownValues = Map<string, Map<string, string[]>>;

/**
 * The columns whose known values are ALL their values (the profile's distinct count is no more
 * than the values it gave: a status, a tier, a region), as `table\u0000column`. Only there does
 * "no known value matches" mean the value is not in the data.
 */
export type WholeColumns = Set<string>;

export interface ValueHit {
  table: string;
  column: string;
  /** the known values that matched, as the database spells them */
  values: string[];
}

/** Tables asked of the profile per question, at most. */
export const VALUE_TABLES = 12;
/** How long a question waits for values, at most. */
export const VALUE_WAIT_MS = 3000;
/** Tables whose values are kept per scope, at most. */
const MAX_KEPT = 5000;

const norm = (s: string): string => s.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();

/** Whether a known value holds the literal: equal, or the literal a whole word of it (`Dallas` in `Dallas DC`). */
export function valueMatches(literal: string, value: string): boolean {
  const l = norm(literal);
  const v = norm(value);
  if (!l || !v) return false;
  if (l === v) return true;
  if (l.length < 3) return false;
  const at = v.indexOf(l);
  if (at < 0) return false;
  const before = at === 0 ? '' : v[at - 1] ?? '';
  const after = v[at + l.length] ?? '';
  return !/[\p{L}\p{N}]/u.test(before) && !/[\p{L}\p{N}]/u.test(after);
}

/** Each literal → the columns whose known values hold it. */
export function matchLiterals(literals: readonly string[], known: KnownValues): Map<string, ValueHit[]> {
  const out = new Map<string, ValueHit[]>();
  for (const lit of literals) {
    const hits: ValueHit[] = [];
    for (const [table, columns] of known) {
      for (const [column, values] of columns) {
        const matched = values.filter((v) => valueMatches(lit, v));
        if (matched.length) hits.push({ table, column, values: [...new Set(matched)].slice(0, 5) });
      }
    }
    if (hits.length) out.set(lit, hits);
  }
  return out;
}

export interface ValueSource {
  /** the known text values of these tables (catalog names), from the cache or asked now */
  get(catalog: Catalog, tables: readonly string[], ctx: Ctx): Promise<KnownValues>;
  /** of what `get` answered for this scope, the columns known whole (WholeColumns) */
  whole(ctx: Ctx): WholeColumns;
}

/** A literal no known value holds, and the values of columns known whole that it is close to: what to ask. */
export interface ValueMiss {
  literal: string;
  near: Array<{ table: string; column: string; value: string }>;
}

/**
 * Literals that match no known value, with the close values (a typo away: edit distance at most
 * a quarter of the literal, at least 1) of columns whose values are all known. A literal with no
 * close value anywhere is no miss: it may be an id, a name or free text that no profile lists.
 */
export function literalMisses(literals: readonly string[], hits: ReadonlyMap<string, unknown>, known: KnownValues, whole: WholeColumns, distance: (a: string, b: string) => number): ValueMiss[] {
  const out: ValueMiss[] = [];
  for (const lit of literals) {
    if (hits.has(lit)) continue;
    const l = norm(lit);
    if (l.length < 3) continue;
    const limit = Math.max(1, Math.floor(l.length / 4));
    const near: ValueMiss['near'] = [];
    for (const [table, columns] of known) {
      for (const [column, values] of columns) {
        if (!whole.has(`${table}\u0000${column}`)) continue;
        for (const v of new Set(values)) {
          if (Math.abs(norm(v).length - l.length) <= limit && distance(l, norm(v)) <= limit) near.push({ table, column, value: v });
        }
      }
    }
    if (near.length) out.push({ literal: lit, near: near.slice(0, 5) });
  }
  return out;
}

/**
 * Known values through `profile` (sql.profile over the bus), kept per scope and table for
 * ttlSeconds. A profile that fails or is late costs the value links, never the question.
 */
export function createValueSource(profile: (input: SqlProfileRequest, ctx: Ctx) => Promise<SqlProfileReply>, ttlSeconds: number, now: () => number = Date.now): ValueSource {
  const kept = new Map<string, { at: number; columns: Map<string, string[]>; whole: Set<string> }>();
  return {
    whole(ctx) {
      const scope = `${ctx.scope ?? ''}\u0000`;
      const out: WholeColumns = new Set();
      for (const [key, entry] of kept) {
        if (!key.startsWith(scope)) continue;
        const table = key.slice(scope.length);
        for (const column of entry.whole) out.add(`${table}\u0000${column}`);
      }
      return out;
    },
    async get(catalog, tables, ctx) {
      const out: KnownValues = new Map();
      const bySchema = new Map<string, Array<{ name: string; table: string }>>();
      const scope = ctx.scope ?? '';
      for (const name of tables.slice(0, VALUE_TABLES)) {
        const entry = catalog.entries.find((e) => e.name === name);
        if (!entry) continue;
        const key = `${scope}\u0000${name}`;
        const hit = kept.get(key);
        if (hit && now() - hit.at < ttlSeconds * 1000) {
          out.set(name, hit.columns);
          continue;
        }
        if (!entry.table.columns.some((c) => isText(c.type))) continue;
        const list = bySchema.get(entry.table.schema) ?? [];
        list.push({ name, table: entry.table.name });
        bySchema.set(entry.table.schema, list);
      }
      const deadline = Math.min(ctx.deadline ?? Infinity, now() + VALUE_WAIT_MS);
      await Promise.all([...bySchema].map(async ([schema, list]) => {
        try {
          const reply = await profile({ schema, tables: list.map((l) => l.table) }, { ...ctx, deadline });
          for (const t of reply.tables) {
            const name = list.find((l) => l.table === t.name)?.name;
            if (name === undefined) continue;
            const columns = new Map<string, string[]>();
            const whole = new Set<string>();
            for (const c of t.columns) {
              const values = c.sample_values.filter((v): v is string => typeof v === 'string');
              if (values.length) columns.set(c.name, values);
              if (values.length && c.distinct_count !== undefined && c.distinct_count <= new Set(values).size) whole.add(c.name);
            }
            if (kept.size >= MAX_KEPT) kept.delete(kept.keys().next().value ?? '');
            kept.set(`${scope}\u0000${name}`, { at: now(), columns, whole });
            out.set(name, columns);
          }
        } catch {
          // no values for these tables this time: the question goes on without them
        }
      }));
      return out;
    },
  };
}

function isText(type: string): boolean {
  return /char|text|string|varchar|enum|citext|name/i.test(type);
}

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
}

/**
 * Known values through `profile` (sql.profile over the bus), kept per scope and table for
 * ttlSeconds. A profile that fails or is late costs the value links, never the question.
 */
export function createValueSource(profile: (input: SqlProfileRequest, ctx: Ctx) => Promise<SqlProfileReply>, ttlSeconds: number, now: () => number = Date.now): ValueSource {
  const kept = new Map<string, { at: number; columns: Map<string, string[]> }>();
  return {
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
            for (const c of t.columns) {
              const values = c.sample_values.filter((v): v is string => typeof v === 'string');
              if (values.length) columns.set(c.name, values);
            }
            if (kept.size >= MAX_KEPT) kept.delete(kept.keys().next().value ?? '');
            kept.set(`${scope}\u0000${name}`, { at: now(), columns });
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

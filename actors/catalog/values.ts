/**
 * Value linking: the literals of a question ('Berlin', "SPRING20", Acme) looked up among the
 * known values of the best tables' text columns. Where the engine keeps value statistics
 * (PostgreSQL), from the value index (`sql.values`, below: one read of pg_stats for the whole
 * database, kept); elsewhere from the executor's `sql.profile` (a bounded sample), asked lazily
 * for the tables not yet known and kept per scope for the catalog's cache TTL.
 *
 * The schema text then names, beside a matching column, the values that matched: the model
 * learns which column holds 'Berlin' and how it is spelt there. Only values the user typed are
 * shown (never the other sampled values). The executor leaves out (sql.values) or masks
 * (sql.profile, `masked`) the values of columns a mask rule covers, and such a column is never
 * looked up here: a masked value is neither matched nor offered in a clarifying question. A mask
 * rule change drops what is kept (`drop`, on evt.mask.changed).
 */
import type { Ctx } from '../../protocol/headers.js';
import type { SqlProfileReply, SqlProfileRequest, SqlValuesReply } from '../../protocol/schemas/profile.js';
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
  /** forget every kept value (a mask rule changed) */
  drop(): void;
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
export function createValueSource(profile: (input: SqlProfileRequest, ctx: Ctx) => Promise<SqlProfileReply>, ttl: number | (() => number), now: () => number = Date.now): ValueSource {
  const kept = new Map<string, { at: number; columns: Map<string, string[]>; whole: Set<string> }>();
  // One profile of a table at a time, per scope: after an idle spell, 32 questions about the same
  // table would each profile it (a sample scan of several hundred ms each). A question that finds
  // a profile under way waits for it (bounded by that profile's own VALUE_WAIT_MS) and reads what
  // it kept.
  const pending = new Map<string, Promise<void>>();
  // Bumped by drop(): a profile that began before a mask rule changed keeps nothing.
  let generation = 0;
  return {
    drop() {
      generation += 1;
      kept.clear();
      pending.clear();
    },
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
      const waits: Array<Promise<void>> = [];
      const scope = ctx.scope ?? '';
      const fresh = (key: string) => {
        const hit = kept.get(key);
        return hit && now() - hit.at < secondsOf(ttl) * 1000 ? hit : undefined;
      };
      for (const name of tables.slice(0, VALUE_TABLES)) {
        const entry = catalog.entries.find((e) => e.name === name);
        if (!entry) continue;
        const key = `${scope}\u0000${name}`;
        const hit = fresh(key);
        if (hit) {
          out.set(name, hit.columns);
          continue;
        }
        const running = pending.get(key);
        if (running) {
          waits.push(running.then(() => {
            const got = kept.get(key);
            if (got) out.set(name, got.columns);
          }));
          continue;
        }
        if (!entry.table.columns.some((c) => isText(c.type))) continue;
        const list = bySchema.get(entry.table.schema) ?? [];
        list.push({ name, table: entry.table.name });
        bySchema.set(entry.table.schema, list);
      }
      const deadline = Math.min(ctx.deadline ?? Infinity, now() + VALUE_WAIT_MS);
      const began = generation;
      const asked = [...bySchema].map(([schema, list]) => {
        const run = (async () => {
          try {
            const reply = await profile({ schema, tables: list.map((l) => l.table) }, { ...ctx, deadline });
            for (const t of reply.tables) {
              const name = list.find((l) => l.table === t.name)?.name;
              if (name === undefined) continue;
              const columns = new Map<string, string[]>();
              const whole = new Set<string>();
              for (const c of t.columns) {
                if (c.masked) continue; // its values are masked: nothing to match or offer
                const values = c.sample_values.filter((v): v is string => typeof v === 'string');
                if (values.length) columns.set(c.name, values);
                if (values.length && c.distinct_count !== undefined && c.distinct_count <= new Set(values).size) whole.add(c.name);
              }
              if (generation !== began) continue; // a mask rule changed meanwhile: neither kept nor used
              if (kept.size >= MAX_KEPT) kept.delete(kept.keys().next().value ?? '');
              kept.set(`${scope}\u0000${name}`, { at: now(), columns, whole });
              out.set(name, columns);
            }
          } catch {
            // no values for these tables this time: the question goes on without them
          }
        })();
        for (const l of list) {
          const key = `${scope}\u0000${l.name}`;
          pending.set(key, run);
          void run.then(() => { if (pending.get(key) === run) pending.delete(key); });
        }
        return run;
      });
      await Promise.all([...asked, ...waits]);
      return out;
    },
  };
}

function isText(type: string): boolean {
  return /char|text|string|varchar|enum|citext|name/i.test(type);
}

// ---- the value index: every table's low-cardinality values (sql.values) ----------------------

/** How long a question waits for the index being built, at most: the next questions get it. */
export const VALUE_INDEX_WAIT_MS = 1500;
/**
 * A value held by more tables than this is a generic word ('Other', 'Unknown'), not a link. The
 * copies of a table (`raw_tpch.region`, `landing.tpch_region`, `world_old.country`) count as
 * their original: a warehouse's landing and staging layers repeat every value of the sources.
 */
const MAX_COLUMNS_PER_VALUE = 6;
/** Columns kept per value in the index (copies included): enough for the cap above to count originals. */
const MAX_KEPT_PER_VALUE = 64;
/** Words in a phrase looked up, at most. */
const MAX_PHRASE_WORDS = 5;

/**
 * value (normalised: lower case, words joined by single spaces) → the columns holding it; with
 * the same values by table and column, for the literal lookups that `sql.profile` answers where
 * the engine keeps no value statistics.
 */
export interface ValueIndex extends Map<string, Array<{ table: string; column: string; value: string }>> {
  /**
   * The engine's own statistics answered (PostgreSQL): every low-cardinality text column of
   * every table is here, so the question's literals are looked up here, not profiled table by
   * table. False where the engine keeps none (MySQL, Trino, BigQuery: the index is empty).
   */
  statistics: boolean;
  /** table (catalog name) → column → its values */
  known: KnownValues;
  /** the columns whose values are all here (the statistics' distinct count is no more than the values listed) */
  whole: WholeColumns;
  /** table (catalog name) → its date columns and the first and last day each holds (`YYYY-MM-DD`) */
  dates: Map<string, DateRange[]>;
}

export interface DateRange {
  column: string;
  first: string;
  last: string;
}

export interface ValueIndexSource {
  /** the index of this scope and catalog: built on first use (waiting VALUE_INDEX_WAIT_MS at most), refreshed after the TTL in the background */
  get(catalog: Catalog, ctx: Ctx): Promise<ValueIndex | undefined>;
  /** forget every index (a mask rule changed): the next question builds it again */
  drop(): void;
}

const phrase = (s: string): string => s.normalize('NFKC').toLowerCase().split(/[^\p{L}\p{N}#&]+/u).filter(Boolean).join(' ');

/** A TTL given as a number, or as a function read at each use (a run-time config change applies at once). */
function secondsOf(ttl: number | (() => number)): number {
  return typeof ttl === 'function' ? ttl() : ttl;
}

/**
 * The value index through `ask` (sql.values over the bus), kept per scope for ttlSeconds. A
 * failure costs the index, never the question: asked again after a minute.
 */
export function createValueIndex(ask: (ctx: Ctx) => Promise<SqlValuesReply>, ttl: number | (() => number), now: () => number = Date.now): ValueIndexSource {
  const kept = new Map<string, { at: number; index?: ValueIndex; building?: Promise<ValueIndex | undefined>; schema: string }>();
  const build = (catalog: Catalog, ctx: Ctx): Promise<ValueIndex | undefined> =>
    ask({ requestId: ctx.requestId, ...(ctx.scope ? { scope: ctx.scope } : {}), ...(ctx.user ? { user: ctx.user } : {}) })
      .then((reply) => {
        const index: ValueIndex = Object.assign(new Map<string, Array<{ table: string; column: string; value: string }>>(), {
          statistics: reply.source === 'statistics',
          known: new Map() as KnownValues,
          whole: new Set() as WholeColumns,
          dates: new Map<string, DateRange[]>(),
        });
        for (const d of reply.dates ?? []) {
          const table = d.schema === catalog.defaultSchema ? d.table : `${d.schema}.${d.table}`;
          const list = index.dates.get(table) ?? [];
          list.push({ column: d.column, first: d.first, last: d.last });
          index.dates.set(table, list);
        }
        for (const c of reply.columns) {
          if (c.masked) continue; // its values were left out by the executor
          const table = c.schema === catalog.defaultSchema ? c.table : `${c.schema}.${c.table}`;
          if (c.values.length) {
            const columns = index.known.get(table) ?? new Map<string, string[]>();
            columns.set(c.column, c.values);
            index.known.set(table, columns);
            if (c.distinct <= c.values.length) index.whole.add(`${table}\u0000${c.column}`);
          }
          for (const v of c.values) {
            const key = phrase(v);
            if (!key || key.length > 80) continue;
            const list = index.get(key) ?? [];
            if (list.length < MAX_KEPT_PER_VALUE) list.push({ table, column: c.column, value: v });
            index.set(key, list);
          }
        }
        return index;
      })
      .catch(() => undefined);
  return {
    drop() {
      kept.clear();
    },
    async get(catalog, ctx) {
      const key = ctx.scope ?? '';
      let entry = kept.get(key);
      const ttlSeconds = secondsOf(ttl);
      const stale = !entry || now() - entry.at >= ttlSeconds * 1000 || entry.schema !== catalog.defaultSchema;
      if (stale && !entry?.building) {
        const e = entry ?? { at: now(), schema: catalog.defaultSchema };
        e.building = build(catalog, ctx).then((index) => {
          e.building = undefined;
          // a failed build is tried again after a minute, not at every question
          e.at = index ? now() : now() - Math.max(0, ttlSeconds * 1000 - 60_000);
          e.schema = catalog.defaultSchema;
          if (index) e.index = index;
          return index;
        });
        kept.set(key, e);
        entry = e;
      }
      if (entry?.index) return entry.index;
      if (!entry?.building) return undefined;
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<undefined>((r) => {
        timer = setTimeout(() => r(undefined), Math.max(0, Math.min(VALUE_INDEX_WAIT_MS, (ctx.deadline ?? Infinity) - now())));
      });
      try {
        return await Promise.race([entry.building, late]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/**
 * The phrases of a question found in the value index: every run of one to five words, each
 * looked up whole ("Speedy Express", "OVERSEAS - DELUXE", "seafood"), a plural's last word also
 * singular ("Senior Engineers"). A single lower-case word counts only when no table or column
 * uses it (`isSchemaWord`): "sales" is a table word, "seafood" a value. A phrase inside a longer
 * one that matched is not looked up again. A phrase held by more than MAX_COLUMNS_PER_VALUE
 * tables is too common to say which table is meant; `originalOf` names the table a copy copies,
 * so that a value's copies in the landing, raw and staging layers count once.
 */
export function lookupValues(question: string, index: ValueIndex, isSchemaWord: (word: string) => boolean, originalOf: (table: string) => string = (t) => t): Map<string, ValueHit[]> {
  const out = new Map<string, ValueHit[]>();
  const tokens = question.normalize('NFKC').split(/[^\p{L}\p{N}#&]+/u).filter(Boolean);
  const used = new Set<number>();
  for (let n = Math.min(MAX_PHRASE_WORDS, tokens.length); n >= 1; n -= 1) {
    for (let i = 0; i + n <= tokens.length; i += 1) {
      if ([...Array(n).keys()].some((k) => used.has(i + k))) continue;
      const words = tokens.slice(i, i + n);
      const raw = words.join(' ');
      const lower = raw.toLowerCase();
      if (n === 1) {
        if (lower.length < 3 || /^\d+$/.test(lower) || STOP.has(lower)) continue;
        if (FUNCTION_WORDS.has(lower) && raw !== raw.toUpperCase()) continue;
        const capital = /^\p{Lu}/u.test(raw) && i > 0;
        if (!capital && !/\p{Lu}.*\p{Lu}/u.test(raw) && isSchemaWord(lower)) continue;
      } else if (STOP.has(words[0]!.toLowerCase()) || STOP.has(words[n - 1]!.toLowerCase())) continue;
      const keys = [phrase(raw)];
      const last = lower.split(' ').at(-1) ?? '';
      if (last.endsWith('s') && last.length > 3) keys.push(phrase(raw.slice(0, -1)));
      if (last.endsWith('es') && last.length > 4) keys.push(phrase(raw.slice(0, -2)));
      for (const key of keys) {
        const hits = index.get(key);
        if (!hits || hits.length >= MAX_KEPT_PER_VALUE || new Set(hits.map((h) => originalOf(h.table))).size > MAX_COLUMNS_PER_VALUE) continue;
        const byColumn = new Map<string, ValueHit>();
        for (const h of hits) {
          const k = `${h.table}\u0000${h.column}`;
          const had = byColumn.get(k);
          if (had) had.values.push(h.value);
          else byColumn.set(k, { table: h.table, column: h.column, values: [h.value] });
        }
        out.set(raw, [...byColumn.values()]);
        for (let k = 0; k < n; k += 1) used.add(i + k);
        break;
      }
    }
  }
  return out;
}

/** Words never looked up alone. */
const STOP: ReadonlySet<string> = new Set([
  'the', 'and', 'for', 'with', 'from', 'that', 'this', 'which', 'what', 'who', 'how', 'many', 'much', 'are', 'was', 'were', 'our', 'all', 'any',
  'each', 'per', 'by', 'in', 'of', 'on', 'to', 'at', 'or', 'a', 'an', 'is', 'be', 'do', 'did', 'does', 'have', 'has', 'had', 'not', 'no',
  'show', 'list', 'give', 'tell', 'top', 'most', 'least', 'more', 'less', 'than', 'over', 'under', 'total', 'average', 'number', 'count',
  'year', 'month', 'week', 'day', 'today', 'last', 'next', 'this', 'there', 'their', 'they', 'them', 'when', 'where', 'why', 'other',
  'none', 'yes', 'new', 'old', 'all', 'one', 'two', 'other', 'unknown', 'true', 'false', 'null', 'default', 'active', 'open', 'closed',
]);
/**
 * Modal verbs, pronouns and other function words: never a value alone unless written in capitals
 * ("which vendors can supply" asks nothing of Canada's code 'CAN'; "customers in CAN" does).
 */
const FUNCTION_WORDS: ReadonlySet<string> = new Set([
  'can', 'could', 'will', 'would', 'shall', 'should', 'may', 'might', 'must', 'its', 'you', 'your', 'his', 'her', 'him', 'she', 'ours',
  'theirs', 'these', 'those', 'but', 'then', 'also', 'just', 'very', 'into', 'onto', 'via', 'been', 'being',
]);

// ---- dates: which tables' data covers the question's years -----------------------------------

/** A period the question names, as the first and last day it covers (`YYYY-MM-DD`). */
export interface Period {
  /** as the question says it ("1995", "July 2022", "since 1995") */
  label: string;
  from: string;
  to: string;
}

/**
 * A period held by more tables than this (copies counted once) is no clue to the source: every
 * table of a live warehouse holds this year.
 */
const MAX_TABLES_PER_PERIOD = 12;
/**
 * Columns that say when a row was written or loaded, not what the data is about: their dates are
 * the load's, the same in every source.
 */
const ROW_UPKEEP = /^_|(?:^|_)(?:modified|modify|updated?|last_update|last_modified|loaded|load|ingested|synced|inserted|extracted|etl|dbt|valid_from|valid_to|rec_start|rec_end)(?:_|$)|modifieddate|lastupdate/i;

const MONTH_NAMES = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
/** A month's number less one, by its name or a short form of three or four letters ("Aug", "Sept."); -1 for any other word. */
const monthOf = (word: string): number => {
  const w = word.toLowerCase().replace(/\.$/, '');
  if (w.length < 3) return -1;
  return MONTH_NAMES.findIndex((m) => w === m || (w.length <= 4 && m.startsWith(w)));
};
const pad = (n: number): string => String(n).padStart(2, '0');
const lastDay = (y: number, m: number): number => new Date(Date.UTC(y, m, 0)).getUTCDate();

/**
 * The periods a question names: ISO dates and months ("2017-08-15", "2017-08"), a month and its
 * year ("July 2022", "Aug 2017"), a quarter ("Q3 2001"), and years alone ("in 1995"), which
 * "since", "after", "before" or "until" open on one side. Relative periods ("last year") are not
 * dates of the data and are left out.
 */
export function periodsOf(question: string): Period[] {
  const out: Period[] = [];
  const taken: Array<[number, number]> = [];
  const free = (at: number, end: number): boolean => taken.every(([a, b]) => end <= a || at >= b);
  const take = (m: RegExpExecArray, label: string, from: string, to: string): void => {
    taken.push([m.index, m.index + m[0].length]);
    out.push({ label, from, to });
  };
  for (const m of question.matchAll(/\b((?:19|20)\d{2})-(\d{1,2})(?:-(\d{1,2}))?\b/g)) {
    const y = Number(m[1]);
    const mo = Number(m[2]);
    if (mo < 1 || mo > 12) continue;
    const d = m[3] ? Number(m[3]) : 0;
    const from = `${y}-${pad(mo)}-${pad(d || 1)}`;
    take(m as RegExpExecArray, m[0], from, d ? from : `${y}-${pad(mo)}-${pad(lastDay(y, mo))}`);
  }
  for (const m of question.matchAll(/\b([A-Za-z]{3,9}\.?)\s+(?:(\d{1,2})(?:st|nd|rd|th)?,?\s+)?((?:19|20)\d{2})\b/g)) {
    const mo = monthOf(m[1] ?? '') + 1;
    if (mo < 1 || !free(m.index, m.index + m[0].length)) continue;
    const y = Number(m[3]);
    take(m as RegExpExecArray, m[0], `${y}-${pad(mo)}-01`, `${y}-${pad(mo)}-${pad(lastDay(y, mo))}`);
  }
  for (const m of question.matchAll(/\b(?:q([1-4])\s*((?:19|20)\d{2})|((?:19|20)\d{2})\s*q([1-4]))\b/gi)) {
    if (!free(m.index, m.index + m[0].length)) continue;
    const q = Number(m[1] ?? m[4]);
    const y = Number(m[2] ?? m[3]);
    take(m as RegExpExecArray, m[0], `${y}-${pad(3 * q - 2)}-01`, `${y}-${pad(3 * q)}-${pad(lastDay(y, 3 * q))}`);
  }
  for (const m of question.matchAll(/\b(?:(since|from|after|before|until|till|through|prior to)\s+)?((?:19|20)\d{2})\b/gi)) {
    const at = m.index + m[0].length - 4;
    if (!free(at, at + 4)) continue;
    const y = Number(m[2]);
    const open = (m[1] ?? '').toLowerCase();
    const from = open === 'after' ? `${y + 1}-01-01` : ['before', 'until', 'till', 'through', 'prior to'].includes(open) ? '0001-01-01' : `${y}-01-01`;
    const to = ['since', 'from', 'after'].includes(open) ? '9999-12-31' : open === 'before' || open === 'prior to' ? `${y - 1}-12-31` : `${y}-12-31`;
    take(m as RegExpExecArray, m[0], from, to);
  }
  return out;
}

/** The term a period found among a table's dates counts as (never a word of the index: it starts with @). */
export function dateTerm(period: Pick<Period, 'label'>): string {
  return `@${period.label.toLowerCase()}`;
}

/**
 * The question's periods (periodsOf) found among the tables' date ranges: each period → the
 * tables (originals: `originalOf` folds a copy onto the table it copies) with a date column whose
 * first and last day overlap it. Columns that record when rows were written or loaded
 * (`modifieddate`, `last_update`, `_loaded_at`) are not the data's dates and do not count. A
 * period held by more than MAX_TABLES_PER_PERIOD tables, or by more than half of the tables with
 * dates, tells no source from another and is left out.
 */
export function lookupDates(question: string, index: Pick<ValueIndex, 'dates'>, originalOf: (table: string) => string = (t) => t): Map<string, Array<{ table: string; column: string }>> {
  const out = new Map<string, Array<{ table: string; column: string }>>();
  const periods = periodsOf(question);
  if (!periods.length || !index.dates.size) return out;
  const dated = new Set<string>();
  for (const [table, ranges] of index.dates) if (ranges.some((r) => !ROW_UPKEEP.test(r.column))) dated.add(originalOf(table));
  for (const p of periods) {
    const hits = new Map<string, string>();
    for (const [table, ranges] of index.dates) {
      const original = originalOf(table);
      if (hits.has(original)) continue;
      const r = ranges.find((x) => !ROW_UPKEEP.test(x.column) && x.first <= p.to && x.last >= p.from);
      if (r) hits.set(original, r.column);
    }
    if (!hits.size || hits.size > MAX_TABLES_PER_PERIOD || hits.size * 2 > dated.size) continue;
    out.set(dateTerm(p), [...hits].map(([table, column]) => ({ table, column })));
  }
  return out;
}

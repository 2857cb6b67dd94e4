/**
 * Masking: the rows of a result, with the columns the mask rules cover replaced by their masked
 * values, before the result goes anywhere (HTTP, MCP, exports, insights, the model).
 *
 * Rules: `field_pattern` is a glob over column names, case-insensitive: `*` any run of
 * characters (also none), `?` one character, everything else literal. The active rules are the
 * rule store's enabled ones (asked from the settings actor, cached RULES_TTL_MS), unless the
 * request brings its own.
 *
 * Which columns a rule covers (lineage.ts traces every output column to its source columns):
 * - a pattern without a dot is matched against the name of every SOURCE column of the output
 *   column, AND against the output column's own name: an alias called `email` over a harmless
 *   column is masked too (the name promises an e-mail address to whoever reads the result, and
 *   masking more is the safe side);
 * - a pattern with a dot (`users.email`, `*.ssn`) is `table.column`: the part after the last dot
 *   is matched against a source column's name, the part before against the source's table
 *   (`public.users` is tried as `public.users` and `users`); a source whose table is not known
 *   (an unqualified column over two tables) matches on the column part alone. Output names are
 *   not matched by dotted patterns (they have no table).
 * - several rules cover a column: the strongest strategy wins (redact, then hash, then partial),
 *   reported with the first such rule's pattern.
 * - `partial` applies only to the column's own values (plain references through aliases, CTEs,
 *   subqueries, UNION, LATERAL): a value made from a masked column (an expression, a cast, an
 *   aggregate such as string_agg/array_agg/json_agg/GROUP_CONCAT/JSON_ARRAYAGG/min/max/mode/
 *   any_value, a window such as first_value, a table function over it) gets `hash` instead,
 *   because partial keeps the part of an address it takes for the domain, and a made-up value
 *   puts anything there. `count(email)` and `count(DISTINCT email)` are not masked: a count is
 *   no value of the column (what a count, a filter or an order reveals about values is not
 *   something column masking can hide; see docs/security.md).
 *
 * Failing closed, the exact rule: an output column whose lineage is not fully known (the SQL
 * does not parse with the dialect's parsers, is not one SELECT, or this column's expression
 * reaches something the lineage cannot read: see lineage.ts, "Opaque") is masked whenever at
 * least one rule is active, even if none of the names it could trace matches: with the strategy
 * of a rule its names match if there is one (never `partial`: hash instead), else with the
 * strongest strategy among all active rules and `hash`, reported as rule `(lineage unknown)`.
 * So SQL nobody can parse, with any rule active, has every column masked; columns fully traced
 * and matching no rule are never touched. mask() reads the statement in a worker thread
 * (isolated.ts: bounded in size, time and memory); a parse that fails there, runs too long or
 * breaks its parser is the same unknown lineage.
 */
import type { Ctx } from '../../../protocol/headers.js';
import { CortadoError } from '../../../protocol/errors.js';
import type { Logger } from '../../../runtime/log.js';
import type { Cell, Column, Dialect } from '../../../protocol/schemas/common.js';
import type { MaskedColumn, MaskRuleLite, ResultMaskReply, ResultMaskRequest } from '../../../protocol/schemas/policy.js';
import { parseForLineage } from './dialects.js';
import { lineageQuery } from './isolated.js';
import { looksLikeDocument, maskDocuments, nestedDocument } from './documents.js';
import { opaqueFunctions, type OpaqueFunction } from './functions.js';
import { Lineage, OPAQUE_QUERY, resolveColumns, type Query } from './lineage.js';
import { compileRule, display, namesDocument, sourceMatches, type CompiledRule } from './rules.js';
import { masker, strongest, type Hasher, type Strategy } from './strategies.js';

export { globMatch } from './rules.js';

/** How long the rule store's answer is used before it is asked again. */
export const RULES_TTL_MS = 3_000;
/** How long a stored answer still serves when the rule store cannot be reached. */
export const RULES_STALE_MAX_MS = 10 * 60_000;

export const UNKNOWN_LINEAGE_RULE = '(lineage unknown)';

/** No function of the deployment's (database.allowed_functions) listed. */
const DEFAULT_OPAQUE = opaqueFunctions();

export interface RuleSource {
  get(ctx: Ctx): Promise<MaskRuleLite[]>;
}

export interface MaskingDeps {
  rules: RuleSource;
  hasher: Hasher;
  log: Logger;
  /** functions whose values are not traced through their arguments (database.allowed_functions) */
  opaqueFn?: OpaqueFunction;
}

/**
 * The rows masked. `parsed`: the statement's lineage model when the caller already has it (the
 * executor reads it from the guard's own parse of a PostgreSQL statement: executor/guard/job.ts).
 */
export async function mask(input: ResultMaskRequest, deps: MaskingDeps, ctx: Ctx, parsed?: Query): Promise<ResultMaskReply> {
  const rules = input.rules ?? (await deps.rules.get(ctx));
  // the statement is read in a worker (isolated.ts): never on this event loop; unreadable → opaque
  const query = rules.length && input.columns.length ? (parsed ?? (await lineageQuery(input.sql, input.dialect))) : OPAQUE_QUERY;
  const p = plan(() => query, input.dialect, input.columns, rules, deps.opaqueFn ?? DEFAULT_OPAQUE);
  // a value made from a whole column that comes out shaped like a document: the column held one
  p.masked.push(...transformedDocuments(input.columns, input.rows, p, rules));
  p.masked.sort((a, b) => a.index - b.index);
  const rows = applyMasks(input.rows, p.masked, deps.hasher);
  // the keys inside the documents of the columns left whole (documents.ts)
  const docs = maskDocuments(rows, input.columns, p.masked, p.lineages, p.active, deps.hasher);
  const masked = [...p.masked, ...docs.masked].sort((a, b) => a.index - b.index);
  if (masked.length) {
    deps.log.debug({ rid: ctx.requestId, masked: masked.map((m) => `${m.column}:${m.strategy}`), rows: input.rows.length }, 'result masked');
  }
  return { rows: docs.rows, masked };
}

// ---- the plan ---------------------------------------------------------------------------------

/**
 * The strategy a rule gets on one column: `partial` keeps a part of the value on the assumption
 * that the value is the column's own (an e-mail address shows its domain); a value made from the
 * column (`'x@' || replace(email, '@', '#')`, `reverse(email)`, `string_agg(email, ',')`) or one
 * of unknown make would show what partial means to hide, so it is hashed instead.
 */
function effective(strategy: Strategy, viaSources: boolean, lin: Lineage): Strategy {
  return strategy === 'partial' && (lin.opaque || (viaSources && lin.derived)) ? 'hash' : strategy;
}

/** Which columns to mask, how, and why (the SQL parsed in this thread: tests and the bench; mask() parses in a worker). */
export function planMasks(
  sql: string,
  dialect: Dialect,
  columns: readonly Column[],
  rules: readonly MaskRuleLite[],
  opaqueFn: OpaqueFunction = DEFAULT_OPAQUE,
): MaskedColumn[] {
  return plan(() => parseForLineage(sql, dialect), dialect, columns, rules, opaqueFn).masked;
}

interface Plan {
  masked: MaskedColumn[];
  lineages: Lineage[];
  active: CompiledRule[];
}

function plan(parse: () => Query, dialect: Dialect, columns: readonly Column[], rules: readonly MaskRuleLite[], opaqueFn: OpaqueFunction): Plan {
  if (rules.length === 0 || columns.length === 0) return { masked: [], lineages: [], active: [] };
  const names = columns.map((c) => c.name);
  let lineages: Lineage[];
  try {
    lineages = resolveColumns(parse(), columns.length, names, opaqueFn, dialect);
  } catch {
    // a parser failure of ours is an unknown lineage like any other
    lineages = columns.map(() => Lineage.opaque());
  }
  const active = rules.map(compileRule);
  // columns the statement itself reads inside (a path on them): documents, wherever else they appear
  const documents = new Set<string>();
  for (const lin of lineages) for (const s of lin.sources.values()) if (s.path?.length && s.column !== null) documents.add(`${s.table ?? ''}\u0000${s.column}`);
  // a value of unknown make is never masked with `partial` (see effective)
  const fallback = strongest([...rules.map((r) => r.strategy), 'hash'])!;
  const out: MaskedColumn[] = [];
  columns.forEach((col, index) => {
    const lin = lineages[index] ?? Lineage.opaque();
    const hits: Array<{ rule: MaskRuleLite; strategy: Strategy; via: string[] }> = [];
    let unknown = lin.opaque;
    for (const s of lin.sources.values()) {
      // a document turned into another value: its keys are out of sight
      if (s.flat && s.column !== null && !s.path?.length && documents.has(`${s.table ?? ''}\u0000${s.column}`)) unknown = true;
    }
    for (const r of active) {
      const via: string[] = [];
      for (const s of lin.sources.values()) {
        // a dotted rule naming the column as a document (`payload.email`): a value made from it all
        if (sourceMatches(r, s) || (s.flat && !s.leaf && namesDocument(r, s))) via.push(display(s));
      }
      const byName = !r.table && r.column.test(col.name);
      if (via.length || byName) hits.push({ rule: r.rule, strategy: effective(r.rule.strategy, via.length > 0, lin), via: via.length ? [...new Set(via)] : [col.name] });
    }
    if (hits.length) {
      const strategy: Strategy = strongest(hits.map((h) => (unknown && h.strategy === 'partial' ? 'hash' : h.strategy)))!;
      const rule = hits.find((h) => (unknown && h.strategy === 'partial' ? 'hash' : h.strategy) === strategy)!.rule;
      const sources = [...new Set(hits.flatMap((h) => h.via))];
      out.push({ index, column: col.name, strategy, rule: rule.field_pattern, sources });
      return;
    }
    if (unknown) {
      out.push({ index, column: col.name, strategy: fallback, rule: UNKNOWN_LINEAGE_RULE, sources: [...new Set([...lin.sources.values()].map(display))] });
    }
  });
  return { masked: out, lineages, active };
}

/**
 * Columns made from the whole of a column (a function, an operator, a cast over it: `flat`)
 * whose values come out shaped like a document (JSON, or text showing quoted keys): the column
 * held documents, and whatever was done to them may have renamed or dropped the keys a rule
 * names (`regexp_replace(payload::text, 'email', 'mail')`), so the walk cannot be trusted: the
 * column is masked whole, as of unknown lineage.
 */
function transformedDocuments(columns: readonly Column[], rows: readonly Cell[][], p: Plan, rules: readonly MaskRuleLite[]): MaskedColumn[] {
  if (p.active.length === 0) return [];
  const planned = new Set(p.masked.map((m) => m.index));
  const out: MaskedColumn[] = [];
  columns.forEach((col, index) => {
    if (planned.has(index)) return;
    const lin = p.lineages[index];
    const flat = lin ? [...lin.sources.values()].filter((s) => s.flat && s.column !== null && !s.path?.length) : [];
    if (flat.length === 0) return;
    // a document the statement built has the statement's keys: only what is nested in it as text counts
    const shaped = (v: Cell): boolean => typeof v === 'string' && (lin!.built && !lin!.reparsed ? nestedDocument(v) : looksLikeDocument(v));
    if (!rows.some((r) => shaped(r[index] ?? null))) return;
    out.push({ index, column: col.name, strategy: strongest([...rules.map((r) => r.strategy), 'hash'])!, rule: UNKNOWN_LINEAGE_RULE, sources: flat.map(display) });
  });
  return out;
}

/** The rows with the planned columns masked (new arrays; the input is not changed). */
export function applyMasks(rows: Cell[][], plan: readonly MaskedColumn[], hasher: Hasher): Cell[][] {
  if (plan.length === 0) return rows;
  const idx = plan.map((m) => m.index);
  const fns = plan.map((m) => masker(m.strategy, hasher));
  const k = idx.length;
  const out = new Array<Cell[]>(rows.length);
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r]!.slice();
    for (let j = 0; j < k; j++) {
      const i = idx[j]!;
      if (i < row.length) row[i] = fns[j]!(row[i] ?? null);
    }
    out[r] = row;
  }
  return out;
}

// ---- the rule store ---------------------------------------------------------------------------

/**
 * The active rules, asked at most once per `ttlMs` (concurrent requests share one question).
 * `invalidate()` (on evt.mask.changed) drops them at once: the next request asks the store, and
 * an answer asked for before the change is not kept (it may predate it); the TTL stays as the
 * backstop for a change whose event was lost. When the store cannot be reached, the last answer
 * serves for up to `staleMaxMs`; after that (or with no answer yet) masking fails: no rules known
 * is not the same as no rules.
 */
export class RuleCache implements RuleSource {
  private value: MaskRuleLite[] | undefined;
  private at = 0;
  /** the stored answer may be older than a change (invalidate): used only when the store is away */
  private dropped = false;
  /** counts invalidations: an answer is kept only if none came while it was asked for */
  private generation = 0;
  private pending: Promise<MaskRuleLite[]> | undefined;

  constructor(
    private readonly fetchRules: (ctx: Ctx) => Promise<MaskRuleLite[]>,
    private readonly log: Logger,
    private readonly ttlMs = RULES_TTL_MS,
    private readonly staleMaxMs = RULES_STALE_MAX_MS,
    private readonly now: () => number = Date.now,
  ) {}

  get(ctx: Ctx): Promise<MaskRuleLite[]> {
    if (this.value && !this.dropped && this.now() - this.at < this.ttlMs) return Promise.resolve(this.value);
    if (!this.pending) {
      const p: Promise<MaskRuleLite[]> = this.refresh(ctx).finally(() => {
        if (this.pending === p) this.pending = undefined;
      });
      this.pending = p;
    }
    return this.pending;
  }

  /** Forget the stored answer: the next request asks the store (a question already under way is not reused). */
  invalidate(): void {
    this.generation++;
    this.dropped = true;
    this.pending = undefined;
  }

  private async refresh(ctx: Ctx): Promise<MaskRuleLite[]> {
    try {
      // a change announced while the store was being asked: ask again (bounded: changes in a burst)
      for (let attempt = 0; ; attempt++) {
        const generation = this.generation;
        const rules = await this.fetchRules(ctx);
        if (generation === this.generation || attempt >= 2) {
          if (generation === this.generation) {
            this.value = rules;
            this.at = this.now();
            this.dropped = false;
          }
          return rules;
        }
      }
    } catch (err) {
      const age = this.now() - this.at;
      if (this.value && age < this.staleMaxMs) {
        this.log.warn({ err: (err as Error).message, age_ms: age }, 'the mask rules could not be refreshed: using the last ones');
        return this.value;
      }
      if (err instanceof CortadoError) throw err;
      throw new CortadoError('ACTOR_UNAVAILABLE', 'the mask rules cannot be read, so the result cannot be masked', undefined, { cause: err });
    }
  }
}

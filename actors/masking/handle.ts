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
 * and matching no rule are never touched.
 */
import type { Ctx } from '../../protocol/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../protocol/log.js';
import type { Cell, Column, Dialect } from '../../protocol/schemas/common.js';
import type { MaskedColumn, MaskRuleLite, ResultMaskReply, ResultMaskRequest } from '../../protocol/schemas/policy.js';
import { parseForLineage } from './dialects.js';
import { opaqueFunctions, type OpaqueFunction } from './functions.js';
import { Lineage, resolveColumns, type Source } from './lineage.js';
import { masker, strongest, type Hasher, type Strategy } from './strategies.js';

/** How long the rule store's answer is used before it is asked again. */
export const RULES_TTL_MS = 3_000;
/** How long a stored answer still serves when the rule store cannot be reached. */
export const RULES_STALE_MAX_MS = 10 * 60_000;

export const UNKNOWN_LINEAGE_RULE = '(lineage unknown)';

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

export async function mask(input: ResultMaskRequest, deps: MaskingDeps, ctx: Ctx): Promise<ResultMaskReply> {
  const rules = input.rules ?? (await deps.rules.get(ctx));
  const masked = planMasks(input.sql, input.dialect, input.columns, rules, deps.opaqueFn);
  if (masked.length) {
    deps.log.debug({ rid: ctx.requestId, masked: masked.map((m) => `${m.column}:${m.strategy}`), rows: input.rows.length }, 'result masked');
  }
  return { rows: applyMasks(input.rows, masked, deps.hasher), masked };
}

// ---- rules ------------------------------------------------------------------------------------

interface CompiledRule {
  rule: MaskRuleLite;
  column: RegExp;
  /** dotted patterns: the table part */
  table?: RegExp;
}

const compiled = new Map<string, CompiledRule>();

function globRegExp(glob: string): RegExp {
  let re = '';
  for (const ch of glob) {
    if (ch === '*') re += '.*';
    else if (ch === '?') re += '.';
    else re += ch.replace(/[\\^$.|+()[\]{}]/g, '\\$&');
  }
  return new RegExp(`^${re}$`, 'is');
}

/** Whether a glob matches a name (case-insensitive; `*` and `?`). */
export function globMatch(glob: string, name: string): boolean {
  return globRegExp(glob).test(name);
}

function compile(rule: MaskRuleLite): CompiledRule {
  const key = `${rule.strategy}\u0000${rule.field_pattern}`;
  let c = compiled.get(key);
  if (!c) {
    const dot = rule.field_pattern.lastIndexOf('.');
    c = dot < 0
      ? { rule, column: globRegExp(rule.field_pattern) }
      : { rule, column: globRegExp(rule.field_pattern.slice(dot + 1)), table: globRegExp(rule.field_pattern.slice(0, dot)) };
    if (compiled.size > 1_000) compiled.clear();
    compiled.set(key, c);
  }
  return c;
}

function tableMatches(re: RegExp, table: string | undefined): boolean {
  if (table === undefined) return true; // not known which table: the safe side
  const parts = table.split('.');
  for (let i = 0; i < parts.length; i++) if (re.test(parts.slice(i).join('.'))) return true;
  return false;
}

function sourceMatches(r: CompiledRule, s: Source): boolean {
  if (s.column === null || !r.column.test(s.column)) return false;
  return r.table ? tableMatches(r.table, s.table) : true;
}

function display(s: Source): string {
  return s.table !== undefined ? `${s.table}.${s.column ?? '*'}` : (s.column ?? '*');
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

/** Which columns to mask, how, and why. */
export function planMasks(
  sql: string,
  dialect: Dialect,
  columns: readonly Column[],
  rules: readonly MaskRuleLite[],
  opaqueFn: OpaqueFunction = opaqueFunctions(),
): MaskedColumn[] {
  if (rules.length === 0 || columns.length === 0) return [];
  const names = columns.map((c) => c.name);
  let lineages: Lineage[];
  try {
    lineages = resolveColumns(parseForLineage(sql, dialect), columns.length, names, opaqueFn);
  } catch {
    // a parser failure of ours is an unknown lineage like any other
    lineages = columns.map(() => Lineage.opaque());
  }
  const active = rules.map(compile);
  // a value of unknown make is never masked with `partial` (see effective)
  const fallback = strongest([...rules.map((r) => r.strategy), 'hash'])!;
  const out: MaskedColumn[] = [];
  columns.forEach((col, index) => {
    const lin = lineages[index] ?? Lineage.opaque();
    const hits: Array<{ rule: MaskRuleLite; strategy: Strategy; via: string[] }> = [];
    for (const r of active) {
      const via: string[] = [];
      for (const s of lin.sources.values()) if (sourceMatches(r, s)) via.push(display(s));
      const byName = !r.table && r.column.test(col.name);
      if (via.length || byName) hits.push({ rule: r.rule, strategy: effective(r.rule.strategy, via.length > 0, lin), via: via.length ? via : [col.name] });
    }
    if (hits.length) {
      const strategy: Strategy = strongest(hits.map((h) => h.strategy))!;
      const rule = hits.find((h) => h.strategy === strategy)!.rule;
      const sources = [...new Set(hits.flatMap((h) => h.via))];
      out.push({ index, column: col.name, strategy, rule: rule.field_pattern, sources });
      return;
    }
    if (lin.opaque) {
      out.push({ index, column: col.name, strategy: fallback, rule: UNKNOWN_LINEAGE_RULE, sources: [...lin.sources.values()].map(display) });
    }
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
 * When the store cannot be reached, the last answer serves for up to `staleMaxMs`; after that
 * (or with no answer yet) masking fails: no rules known is not the same as no rules.
 */
export class RuleCache implements RuleSource {
  private value: MaskRuleLite[] | undefined;
  private at = 0;
  private pending: Promise<MaskRuleLite[]> | undefined;

  constructor(
    private readonly fetchRules: (ctx: Ctx) => Promise<MaskRuleLite[]>,
    private readonly log: Logger,
    private readonly ttlMs = RULES_TTL_MS,
    private readonly staleMaxMs = RULES_STALE_MAX_MS,
    private readonly now: () => number = Date.now,
  ) {}

  get(ctx: Ctx): Promise<MaskRuleLite[]> {
    if (this.value && this.now() - this.at < this.ttlMs) return Promise.resolve(this.value);
    this.pending ??= this.refresh(ctx).finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  /** Forget the stored answer (the next request asks the store). */
  invalidate(): void {
    this.value = undefined;
    this.at = 0;
  }

  private async refresh(ctx: Ctx): Promise<MaskRuleLite[]> {
    try {
      const rules = await this.fetchRules(ctx);
      this.value = rules;
      this.at = this.now();
      return rules;
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

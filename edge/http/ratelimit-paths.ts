/**
 * Which requests a rate limit applies to, and with which quota (SPEC rate_limiting).
 *
 * A path pattern is a PREFIX of whole path segments: `/query` covers `/query`, `/query/` and
 * `/query/confirm-execute`, but not `/query-log`. `*` inside a segment matches any characters of
 * that one segment (`/auth/schema/*`, `/static*`). `/` covers every path. Paths are compared the
 * way the router sees them: empty segments are ignored (`//query` is `/query`), case counts.
 *
 * Order, first that applies wins:
 * 1. `path_overrides`: the most specific matching pattern (most segments, then most literal
 *    characters) with its own requests_per_window and window_seconds. An override need not be
 *    in protected_paths, and it wins even inside an excluded prefix (exclude `/admin` but
 *    limit `/admin/login`): it is an explicit rule for that path.
 * 2. `exclude_paths`: not limited.
 * 3. `protected_paths`: limited with the section's defaults. An EMPTY protected_paths list
 *    protects every path that is not excluded (as SQLatte does).
 * 4. Anything else: not limited.
 *
 * Each rule (pattern + quota + strategy) has its own counters: `/query` and `/auth/query` under
 * the defaults are two budgets of L each, and `/auth/schema/*` is one budget for all tables.
 */
import { createHash } from 'node:crypto';
import type { Config } from '../../config/schema.js';
import type { Quota, Strategy } from './ratelimit-strategy.js';

export interface Rule extends Quota {
  /** the pattern as configured (for messages) */
  pattern: string;
  /** short stable id of strategy + pattern + quota: the counters' key prefix */
  id: string;
}

interface Pattern {
  text: string;
  segments: Array<string | RegExp>;
  /** for "most specific": segment count, then literal characters */
  weight: [number, number];
}

export function pathSegments(path: string): string[] {
  return path.split('/').filter((s) => s !== '');
}

export function compilePattern(text: string): Pattern {
  const segments = pathSegments(text).map((seg) => (seg.includes('*')
    ? new RegExp(`^${seg.split('*').map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('[^/]*')}$`)
    : seg));
  const literal = segments.reduce<number>((n, s) => n + (typeof s === 'string' ? s.length : 0), 0);
  return { text, segments, weight: [segments.length, literal] };
}

export function patternMatches(p: Pattern, parts: readonly string[]): boolean {
  if (parts.length < p.segments.length) return false;
  return p.segments.every((s, i) => (typeof s === 'string' ? s === parts[i] : s.test(parts[i]!)));
}

function mostSpecific(patterns: readonly Pattern[], parts: readonly string[]): Pattern | undefined {
  let best: Pattern | undefined;
  for (const p of patterns) {
    if (!patternMatches(p, parts)) continue;
    if (!best || p.weight[0] > best.weight[0] || (p.weight[0] === best.weight[0] && p.weight[1] > best.weight[1])) best = p;
  }
  return best;
}

function ruleId(strategy: Strategy, pattern: string, q: Quota): string {
  return createHash('sha256').update(`${strategy}|${pattern}|${q.limit}|${q.windowMs}`).digest('hex').slice(0, 16);
}

export interface RuleSet {
  /** the rule for this path, or undefined when it is not limited */
  ruleFor(path: string): Rule | undefined;
  /** the longest window of any rule (the store keeps counters at least this long) */
  readonly maxWindowMs: number;
  /** the largest requests_per_window of any rule */
  readonly maxLimit: number;
}

export function compileRules(rl: Config['rate_limiting']): RuleSet {
  const strategy = rl.strategy as Strategy;
  const defaults: Quota = { limit: rl.requests_per_window, windowMs: rl.window_seconds * 1000 };
  const overrides = Object.entries(rl.path_overrides).map(([text, o]) => ({
    pattern: compilePattern(text),
    quota: { limit: o.requests_per_window, windowMs: o.window_seconds * 1000 },
  }));
  const excluded = rl.exclude_paths.map(compilePattern);
  const gates = (rl.protected_paths.length ? rl.protected_paths : ['/']).map(compilePattern);
  const overridePatterns = overrides.map((o) => o.pattern);
  const rule = (pattern: string, q: Quota): Rule => ({ pattern, ...q, id: ruleId(strategy, pattern, q) });
  // rules are few and fixed: build them once, not per request
  const overrideRules = new Map(overrides.map((o) => [o.pattern, rule(o.pattern.text, o.quota)]));
  const gateRules = new Map(gates.map((g) => [g, rule(g.text, defaults)]));
  return {
    maxWindowMs: Math.max(defaults.windowMs, ...overrides.map((o) => o.quota.windowMs)),
    maxLimit: Math.max(defaults.limit, ...overrides.map((o) => o.quota.limit)),
    ruleFor(path) {
      const parts = pathSegments(path);
      const o = mostSpecific(overridePatterns, parts);
      if (o) return overrideRules.get(o);
      if (excluded.some((p) => patternMatches(p, parts))) return undefined;
      const g = mostSpecific(gates, parts);
      return g ? gateRules.get(g) : undefined;
    },
  };
}

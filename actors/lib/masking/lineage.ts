/**
 * Column lineage: which source columns each output column of a query is made from.
 *
 * The parsers (lineage-pg.ts for PostgreSQL's own grammar, lineage-nsp.ts for node-sql-parser's
 * MySQL/BigQuery/Trino grammars) turn a statement into the small query model below; this file
 * resolves it, the same way for every dialect. Masking then matches rules against the column
 * names the lineage finds, so an alias, a CTE or a subquery cannot hide `email` from a rule.
 *
 * What counts as a source of an output column (the values it is made from):
 * - every column referenced in its expression: `lower(email)`, `concat(first, email)`,
 *   `coalesce(email, '')`, CASE (its conditions too), casts, operators, aggregates such as
 *   min/max/string_agg/array_agg, window functions' arguments, scalar subqueries (their output
 *   columns), and any expression node the parser produces that these rules do not name;
 * - NOT sources: the arguments of `count(...)` (it returns a number, whatever it counts), and
 *   the parts that only choose, filter or order rows: an aggregate's FILTER (WHERE ...) and
 *   ORDER BY (except WITHIN GROUP (ORDER BY x), whose x IS the value: percentile_cont, mode),
 *   a window's OVER (PARTITION BY / ORDER BY), and WHERE/GROUP BY/HAVING/ORDER BY/JOIN ON.
 * - through a relation in FROM: a CTE (recursive ones too: resolved to a fixed point), a
 *   subquery, a join, a set operation (UNION/INTERSECT/EXCEPT: the union of every branch's
 *   sources at that position), VALUES, a known table function (`unnest(u.emails) AS e(x)`,
 *   `jsonb_to_record(doc) AS r(email text)`, JSON_TABLE: functions.ts and json.ts list them),
 *   and LATERAL references to the relations before it.
 * - a base table's column is the source `table.column`; a name that cannot be pinned to one
 *   relation (an unqualified column with two tables in FROM) gets every candidate.
 *
 * Inside a value (a document: JSON, a struct, a composite): a source has a `path`, the keys read
 * inside the column (`payload->'contact'->>'email'` is `customers.payload` at `contact.email`),
 * through CTEs and subqueries (`WITH s AS (SELECT payload->'contact' AS c ...) SELECT c->>'email'`
 * reads `payload.contact.email`). How each part of an expression is used (json.ts `Use`) decides
 * what becomes of it: a part of a document (a non-empty path) that is turned into another value
 * (`upper(payload->>'contact')`, `split_part(...)`, string_agg) may carry any key below it, so
 * the column is opaque, unless a cast to a number, date or boolean (or a scalar-only reader such
 * as JSON_VALUE) proved it no document; a whole column turned into another value is marked
 * `flat` (masking decides whether it was a document: handle.ts). A path that cannot be read (a
 * computed key, a wildcard, a function that turns members into rows) is opaque.
 *
 * Names resolve as the dialect's server resolves them (NameRules): PostgreSQL compares the
 * names its parser gives exactly (unquoted names are folded to lower case by the parser, quoted
 * ones are kept: `"CUSTOMERS"` is not `customers`); Trino folds everything; MySQL and BigQuery
 * compare columns without case, but relation names (tables, aliases, CTEs) depend on the server
 * (lower_case_table_names, dataset settings) and the lexical translation folds unquoted names, so
 * a relation name that matches only without case is a "maybe": every candidate is taken (an
 * inner alias and an outer one of the same name, a CTE and the table it might shadow). A
 * subquery in FROM sees the FROM items before it only when it is LATERAL (BigQuery: always),
 * otherwise its names reach past them to the enclosing query. `SELECT *` over a USING or
 * NATURAL join is traced by name (the merged columns come first, and RIGHT/FULL joins take the
 * right side's value). `schema.table.column` matches only an unaliased table of that name.
 *
 * Whole-row references: `to_json(u)`, `row_to_json(u.*)`, `SELECT u FROM users u`, and
 * PostgreSQL's attribute notation `u.row_to_json`, `u.json_agg` (a call of a function on the
 * whole row: functions.ts lists the functions that take a row) read every column of the
 * relation: a base table's columns are not known here, so that is opaque.
 *
 * `SELECT *` / `t.*`: the columns of a base table are not known here, so the output columns a
 * star produces are traced by their output names (for a star the output name IS the source
 * name), through CTEs and subqueries down to the base table. Stars over relations whose columns
 * are known (a subquery with an explicit list) expand exactly, by position.
 *
 * Opaque (lineage unknown, masking fails closed on it): the statement does not parse, is not
 * one SELECT, or holds a part the model cannot read; a whole-row reference to a base table;
 * a column renamed by a column-alias list whose original name is unknown (`FROM users AS u(a, b)`);
 * the star columns of a second set-operation branch (positional: their names are not the
 * output's); a star region whose width does not fit the result; a reference into a subquery
 * that does not expose that name; nesting deeper than MAX_DEPTH; a function in FROM that is not
 * a known table function (`FROM f() AS t(a text)`, a SETOF record function, `EXTERNAL_QUERY`);
 * a call of a function whose value is not made from its arguments (SQL held in a string:
 * `ts_rewrite`, `query_to_xml`; a function listed in `database.allowed_functions`, which may
 * read any table) or a user-defined PostgreSQL operator (functions.ts); a document part turned
 * into another value, an unreadable path (above).
 *
 * Derived: a lineage whose value went through anything but plain references (a function, an
 * operator, an aggregate, a cast, CASE...) is `derived`; masking never applies `partial` to it
 * (handle.ts): `'x@' || replace(email, '@', '#')` is an e-mail address to `partial`, whose
 * "domain" would be the whole value.
 *
 * Not traced: what the database itself hides behind a name. Lineage stops at the relations the
 * statement names, so a view (or a function) that renames `email` to `contact` is, to masking, a
 * table with a column `contact`: rules must name such columns too (the output-name match and a
 * rule like `contact*` cover it).
 */

import type { Dialect } from '../../../protocol/schemas/common.js';
import { isTableFunction, isWholeRowFunction, opaqueFunctions, type OpaqueFunction } from './functions.js';
import type { Use } from './json.js';

export type { Use } from './json.js';

export interface Source {
  /** the relation as written (`public.users`), when known */
  table?: string;
  /** the column; null for "some column of this table" (a whole-row reference) */
  column: string | null;
  /** keys read inside the column's value (JSON keys, struct and composite fields; json.ts INDEX for array positions), outermost first */
  path?: readonly string[];
  /** the value (the column's, or the part at `path`) was turned into another value */
  flat?: boolean;
  /** proven no document (cast to a number, date...): nothing is nested in it */
  leaf?: boolean;
}

function sourceKey(s: Source): string {
  const base = s.table !== undefined ? `${s.table}.${s.column ?? '*'}` : (s.column ?? '*');
  const path = s.path?.length ? `\u0001${s.path.join('\u0001')}` : '';
  return `${base}${path}${s.flat ? '\u0002f' : ''}${s.leaf ? '\u0002l' : ''}`;
}

export class Lineage {
  readonly sources = new Map<string, Source>();
  opaque = false;
  /** some value went through more than plain references (a function, an operator, an aggregate, a cast...) */
  derived = false;
  /** the value is a document the statement builds (json_build_object, jsonb_agg, to_jsonb...): its keys are the statement's */
  built = false;
  /** text made from stored values was parsed back into a document (`replace(payload::text, …)::jsonb`): its keys are not the statement's */
  reparsed = false;

  static opaque(): Lineage {
    const l = new Lineage();
    l.opaque = true;
    return l;
  }

  add(s: Source): this {
    const key = sourceKey(s);
    if (!this.sources.has(key)) this.sources.set(key, s);
    return this;
  }

  merge(other: Lineage | undefined): this {
    if (!other) return this;
    if (other.opaque) this.opaque = true;
    if (other.derived) this.derived = true;
    if (other.built) this.built = true;
    if (other.reparsed) this.reparsed = true;
    for (const [k, s] of other.sources) if (!this.sources.has(k)) this.sources.set(k, s);
    return this;
  }

  withOpaque(): Lineage {
    const l = new Lineage().merge(this);
    l.opaque = true;
    return l;
  }

  signature(): string {
    return `${this.opaque ? '?' : ''}${this.derived ? '~' : ''}${[...this.sources.keys()].sort().join(',')}`;
  }
}

/** The lineage of the parts at `keys` inside each source's value. */
export function extendPath(lin: Lineage, keys: readonly string[] | undefined): Lineage {
  if (!keys || keys.length === 0) return lin;
  const out = new Lineage();
  out.opaque = lin.opaque;
  out.derived = lin.derived;
  out.built = lin.built;
  out.reparsed = lin.reparsed;
  for (const s of lin.sources.values()) {
    // a whole-row source stays what it is: every column, unknown which (opaque already)
    if (s.column === null) out.add(s);
    else out.add({ ...s, path: [...(s.path ?? []), ...keys], leaf: false });
  }
  return out;
}

/** What a use (json.ts) does to the lineage of the part used that way. */
export function applyUse(lin: Lineage, use: Use): Lineage {
  if (use === 'value') return lin;
  const out = new Lineage();
  out.opaque = lin.opaque;
  out.derived = true;
  for (const s of lin.sources.values()) {
    if (use === 'test') out.add(s);
    else if (use === 'leaf') out.add(s.path?.length ? { ...s, leaf: true } : s);
    else {
      // a part of a document, turned into another value: it may hold any key below it
      if (s.path?.length && !s.leaf) out.opaque = true;
      out.add({ ...s, flat: true });
    }
  }
  return out;
}

// ---- the query model ---------------------------------------------------------------------------

/** A name path as written: `email`, `u.email`, `public.users.email`. */
export type NamePath = string[];

/** A column reference in an expression, how its value is used, and the keys read inside it. */
export interface Ref {
  path: NamePath;
  use: Use;
  /** keys read inside the value after the name (`payload->'contact'`): json.ts INDEX for positions */
  keys?: string[];
}

/** An expression, reduced to what lineage needs: what it reads, and how. */
export interface Expr {
  /** column references */
  refs: Ref[];
  /** whole-row references (`u.*` inside an expression); [] for a bare `*` */
  rows: Array<{ qual: NamePath; use: Use }>;
  /** subqueries whose output values flow into the expression */
  subs: Array<{ query: Query; use: Use; keys?: string[] }>;
  /** names read inside a value that is no column (a key of a document an expression built): sources without a table */
  keys: string[];
  /** something in it could not be read */
  opaque: boolean;
  /** the expression is one plain column reference, or a JSON path read on one (its value is the column's, unchanged) */
  direct: boolean;
  /** the expression builds a document (a JSON constructor or aggregate at its top) */
  built?: boolean;
  /** somewhere in it, a value made from stored values is parsed into a document (a cast of it to JSON) */
  reparsed?: boolean;
  /** the functions it calls, lower-cased as written (`upper`, `pg_catalog.upper`, `ds.f`) */
  calls: string[];
}

export type Item =
  | { kind: 'expr'; name: string; /** an alias or a plain column name; else a guess of the default name */ certain: boolean; expr: Expr }
  | { kind: 'star'; qual?: NamePath; /** BigQuery `* REPLACE (expr AS name)` */ replace?: Array<{ name: string; expr: Expr }> };

/** A column a table function returns, when known: its name (else the alias list's) and its value. */
export interface FuncColumn {
  name?: string;
  expr: Expr;
}

interface FromCommon {
  alias?: string;
  cols?: string[];
  /** the items of one USING or NATURAL join share a group: `*` over them is traced by name */
  group?: number;
}

export type From =
  | (FromCommon & { kind: 'table'; name: NamePath })
  | (FromCommon & { kind: 'query'; query: Query; /** LATERAL: it sees the FROM items before it */ lateral?: boolean })
  | (FromCommon & {
      kind: 'func';
      expr: Expr;
      /** the table functions it calls at its top (unnest...) */
      fns?: string[];
      /** its columns, in order, when known (JSON table functions) */
      outputs?: FuncColumn[];
      /** any other name n: the key n read inside this (json_populate_record: the columns are the type's, unknown here) */
      byName?: Expr;
    })
  | (FromCommon & { kind: 'opaque' });

export interface With {
  recursive: boolean;
  ctes: Array<{ name: string; cols?: string[]; query: Query }>;
}

export type Query =
  | { kind: 'select'; with?: With; items: Item[]; from: From[] }
  | { kind: 'setop'; with?: With; branches: Query[] }
  | { kind: 'values'; with?: With; rows: Expr[][] }
  | { kind: 'opaque' };

export const OPAQUE_QUERY: Query = { kind: 'opaque' };

export function emptyExpr(): Expr {
  return { refs: [], rows: [], subs: [], keys: [], opaque: false, direct: false, calls: [] };
}

// ---- names ------------------------------------------------------------------------------------

/** How two names compare: not the same, maybe the same (the server's settings decide), the same. */
export const Match = { No: 0, Maybe: 1, Same: 2 } as const;
export type Match = (typeof Match)[keyof typeof Match];

/** How a dialect's server resolves names (see the top of this file). */
export interface NameRules {
  /** relation names: tables, aliases, CTEs */
  relation(a: string, b: string): Match;
  column(a: string, b: string): Match;
  /** `x.f` may be a call f(x) (PostgreSQL's attribute notation) */
  attributeCalls: boolean;
  /** a subquery in FROM sees the FROM items before it without LATERAL (BigQuery) */
  implicitLateral: boolean;
}

const exact = (a: string, b: string): Match => (a === b ? Match.Same : Match.No);
const folded = (a: string, b: string): Match => (a.toLowerCase() === b.toLowerCase() ? Match.Same : Match.No);
const maybeFolded = (a: string, b: string): Match => (a.toLowerCase() === b.toLowerCase() ? Match.Maybe : Match.No);

const NAME_RULES: Readonly<Record<Dialect, NameRules>> = {
  postgresql: { relation: exact, column: exact, attributeCalls: true, implicitLateral: false },
  trino: { relation: folded, column: folded, attributeCalls: false, implicitLateral: false },
  mysql: { relation: maybeFolded, column: folded, attributeCalls: false, implicitLateral: false },
  bigquery: { relation: maybeFolded, column: folded, attributeCalls: false, implicitLateral: true },
};

export function nameRules(dialect: Dialect): NameRules {
  return NAME_RULES[dialect];
}

// ---- resolution ---------------------------------------------------------------------------------

const DEFAULT_OPAQUE = opaqueFunctions();

/** Deeper nesting than this (subqueries in subqueries...) is opaque rather than a stack overflow. */
export const MAX_DEPTH = 64;
/** Rounds of a recursive WITH before it is declared opaque (lineage sets only grow, so 2-3 suffice). */
const MAX_ROUNDS = 12;

interface Hit {
  lin: Lineage;
  /** the relation certainly has this column (a base table only maybe has it) */
  certain: boolean;
}

/** A relation in a FROM list. */
interface Rel {
  /** the name a one-part qualifier uses for it (its alias, else a table's or CTE's name) */
  refName?: string;
  /** a base table without an alias: its name as written (a `schema.table.column` qualifier may name it) */
  written?: string[];
  lookup(name: string): Hit | undefined;
  /** every column of it */
  all(): Lineage;
  /** its columns when they are known (subqueries, CTEs) */
  shape?: Shape;
  group?: number;
}

type Entry =
  | { kind: 'col'; name: string; certain: boolean; lin: Lineage }
  | { kind: 'star'; rel: Rel };

/** The output columns of a query; `branches`: a set operation's branches, for exact alignment. */
interface Shape {
  entries: Entry[];
  branches?: Shape[];
}

/** The CTEs one WITH defines, and the WITH around it. */
interface CteFrame {
  entries: ReadonlyArray<{ name: string; shape: Shape }>;
  parent?: CteFrame;
}

interface Scope {
  /** innermost first */
  levels: Rel[][];
  ctes?: CteFrame;
  depth: number;
  /** functions whose values are not traced through their arguments (functions.ts) */
  opaqueFn: OpaqueFunction;
  names: NameRules;
}

const OPAQUE_REL: Rel = {
  lookup: () => ({ lin: Lineage.opaque(), certain: false }),
  all: () => Lineage.opaque(),
};
const OPAQUE_SHAPE: Shape = { entries: [{ kind: 'star', rel: OPAQUE_REL }] };

/** A recursive CTE before its first round: has every column, made of nothing yet. */
const EMPTY_REL: Rel = { lookup: () => ({ lin: new Lineage(), certain: true }), all: () => new Lineage() };
const EMPTY_SHAPE: Shape = { entries: [{ kind: 'star', rel: EMPTY_REL }] };

function known(shape: Shape): boolean {
  return shape.entries.every((e) => e.kind === 'col');
}

function shapeAll(shape: Shape): Lineage {
  const out = new Lineage();
  for (const e of shape.entries) out.merge(e.kind === 'col' ? e.lin : e.rel.all());
  return out;
}

function shapeSignature(shape: Shape): string {
  return shape.entries.map((e) => (e.kind === 'col' ? `${e.name.toLowerCase()}=${e.lin.signature()}` : `*=${e.rel.all().signature()}`)).join('|');
}

/** The query's output columns, resolved in `scope`. */
function shapeOf(q: Query, outer: Scope): Shape {
  if (q.kind === 'opaque' || outer.depth > MAX_DEPTH) return OPAQUE_SHAPE;
  const scope = q.with ? withScope(q.with, { ...outer, depth: outer.depth + 1 }) : { ...outer, depth: outer.depth + 1 };
  switch (q.kind) {
    case 'select':
      return selectShape(q, scope);
    case 'values': {
      const width = Math.max(0, ...q.rows.map((r) => r.length));
      const entries: Entry[] = [];
      for (let i = 0; i < width; i++) {
        const lin = new Lineage();
        for (const row of q.rows) {
          const e = row[i];
          if (e) lin.merge(exprLineage(e, scope));
          else lin.opaque = true;
        }
        entries.push({ kind: 'col', name: `column${i + 1}`, certain: false, lin });
      }
      return { entries };
    }
    case 'setop':
      return mergeBranches(q.branches.map((b) => shapeOf(b, scope)));
  }
}

/** A set operation: position by position when every branch's columns are known, else opaque. */
function mergeBranches(shapes: Shape[]): Shape {
  const [first, ...rest] = shapes;
  if (!first) return OPAQUE_SHAPE;
  const width = first.entries.length;
  if (shapes.every((s) => known(s) && s.entries.length === width)) {
    const entries: Entry[] = first.entries.map((e, i) => {
      const col = e as Extract<Entry, { kind: 'col' }>;
      const lin = new Lineage();
      for (const s of shapes) lin.merge((s.entries[i] as Extract<Entry, { kind: 'col' }>).lin);
      return { kind: 'col', name: col.name, certain: col.certain, lin };
    });
    return { entries, branches: shapes };
  }
  // the other branches cannot be lined up with the first's columns: everything they hold, opaque
  const others = new Lineage();
  for (const s of rest) others.merge(shapeAll(s));
  others.opaque = true;
  const entries: Entry[] = first.entries.map((e) =>
    e.kind === 'col' ? { ...e, lin: new Lineage().merge(e.lin).merge(others) } : { kind: 'star', rel: widen(e.rel, others) },
  );
  return { entries, branches: shapes };
}

/** A relation whose every column also carries `extra`. */
function widen(rel: Rel, extra: Lineage): Rel {
  return {
    ...(rel.refName !== undefined ? { refName: rel.refName } : {}),
    lookup: (n) => {
      const hit = rel.lookup(n);
      return { lin: new Lineage().merge(hit?.lin).merge(extra), certain: hit?.certain ?? false };
    },
    all: () => new Lineage().merge(rel.all()).merge(extra),
  };
}

/** One relation that may be any of `rels` (a name the server may resolve to either). */
function unionRel(rels: Rel[], refName: string | undefined): Rel {
  if (rels.length === 1) return { ...rels[0]!, ...(refName !== undefined ? { refName } : {}) };
  return {
    ...(refName !== undefined ? { refName } : {}),
    lookup: (n) => {
      const lin = new Lineage();
      let any = false;
      let certain = false;
      for (const r of rels) {
        const hit = r.lookup(n);
        if (!hit) continue;
        any = true;
        certain ||= hit.certain;
        lin.merge(hit.lin);
      }
      return any ? { lin, certain } : undefined;
    },
    all: () => {
      const lin = new Lineage();
      for (const r of rels) lin.merge(r.all());
      return lin;
    },
  };
}

/** Union of two shapes of the same query (rounds of a recursive CTE). */
function unionShapes(a: Shape, b: Shape): Shape {
  if (a === EMPTY_SHAPE) return b;
  if (b === EMPTY_SHAPE) return a;
  if (known(a) && known(b) && a.entries.length === b.entries.length) {
    return {
      entries: a.entries.map((e, i) => {
        const x = e as Extract<Entry, { kind: 'col' }>;
        const y = b.entries[i] as Extract<Entry, { kind: 'col' }>;
        return { kind: 'col', name: y.name, certain: y.certain, lin: new Lineage().merge(x.lin).merge(y.lin) };
      }),
    };
  }
  const all = new Lineage().merge(shapeAll(a)).merge(shapeAll(b));
  all.opaque = true;
  return { entries: [{ kind: 'star', rel: { lookup: () => ({ lin: all, certain: false }), all: () => all } }] };
}

/** Column-alias lists (`AS s(a, b)`, `WITH t(n) AS`): rename by position. */
function renamed(shape: Shape, cols: string[] | undefined): Shape {
  if (!cols || cols.length === 0) return shape;
  const star = shape.entries.findIndex((e) => e.kind === 'star');
  if (star >= 0 && star < cols.length) {
    // which column gets which name is not known: every name may be any column
    const all = shapeAll(shape).withOpaque();
    return { entries: [{ kind: 'star', rel: { lookup: () => ({ lin: all, certain: false }), all: () => all } }] };
  }
  return { entries: shape.entries.map((e, i) => (e.kind === 'col' && i < cols.length ? { ...e, name: cols[i]!, certain: true } : e)) };
}

function withScope(w: With, scope: Scope): Scope {
  if (!w.recursive) {
    // each CTE sees the ones before it; its own name still means what it meant outside
    const entries: Array<{ name: string; shape: Shape }> = [];
    for (const cte of w.ctes) {
      const seen: CteFrame = { entries: entries.slice(), ...(scope.ctes ? { parent: scope.ctes } : {}) };
      entries.push({ name: cte.name, shape: renamed(shapeOf(cte.query, { ...scope, ctes: seen }), cte.cols) });
    }
    return { ...scope, ctes: { entries, ...(scope.ctes ? { parent: scope.ctes } : {}) } };
  }
  // WITH RECURSIVE: every CTE sees every other and itself; iterate to a fixed point
  const entries = w.ctes.map((c) => ({ name: c.name, shape: EMPTY_SHAPE }));
  const frame: CteFrame = { entries, ...(scope.ctes ? { parent: scope.ctes } : {}) };
  let before = '';
  for (let round = 0; round < MAX_ROUNDS; round++) {
    w.ctes.forEach((cte, i) => {
      const next = renamed(shapeOf(cte.query, { ...scope, ctes: frame }), cte.cols);
      entries[i] = { name: cte.name, shape: unionShapes(entries[i]!.shape, next) };
    });
    const now = entries.map((e) => shapeSignature(e.shape)).join('#');
    if (now === before) return { ...scope, ctes: frame };
    before = now;
  }
  for (const e of entries) e.shape = OPAQUE_SHAPE;
  return { ...scope, ctes: frame };
}

/** The CTEs a one-part name in FROM may mean, and whether it may also (or only) mean a table. */
function findCte(name: string, scope: Scope): { shapes: Shape[]; table: boolean } {
  const shapes: Shape[] = [];
  for (let f = scope.ctes; f; f = f.parent) {
    let same: Shape | undefined;
    for (const e of f.entries) {
      const m = scope.names.relation(e.name, name);
      if (m === Match.Same) same ??= e.shape;
      else if (m === Match.Maybe) shapes.push(e.shape);
    }
    // the innermost WITH that certainly defines the name shadows the outer ones and the table
    if (same) return { shapes: [...shapes, same], table: false };
  }
  return { shapes, table: true };
}

function selectShape(q: Extract<Query, { kind: 'select' }>, scope: Scope): Shape {
  const rels: Rel[] = [];
  // each FROM item sees the ones before it when it is LATERAL (a function always), then the enclosing queries
  for (const f of q.from) {
    const lateral = f.kind !== 'query' || f.lateral === true || scope.names.implicitLateral;
    rels.push(relOf(f, { ...scope, levels: [lateral ? rels.slice() : [], ...scope.levels] }));
  }
  const here: Scope = { ...scope, levels: [rels, ...scope.levels] };
  const entries: Entry[] = [];
  for (const item of q.items) {
    if (item.kind === 'expr') {
      entries.push({ kind: 'col', name: item.name, certain: item.certain, lin: exprLineage(item.expr, here) });
      continue;
    }
    const expanded: Entry[] = [];
    if (item.qual?.length) {
      const targets = qualified(item.qual, here);
      const [only] = targets;
      if (targets.length === 0) expanded.push({ kind: 'star', rel: OPAQUE_REL });
      else if (targets.length > 1) expanded.push({ kind: 'star', rel: unionRel(targets, undefined) }); // a name that may mean several: by name
      else if (only!.shape && known(only!.shape)) expanded.push(...only!.shape.entries);
      else expanded.push({ kind: 'star', rel: only! });
    } else {
      if (rels.length === 0) expanded.push({ kind: 'star', rel: OPAQUE_REL });
      const groups = new Set<number>();
      for (const r of rels) {
        if (r.group !== undefined) {
          // USING / NATURAL: the merged columns first, RIGHT/FULL joins the right side's values: by name
          if (groups.has(r.group)) continue;
          groups.add(r.group);
          expanded.push({ kind: 'star', rel: unionRel(rels.filter((x) => x.group === r.group), undefined) });
        } else if (r.shape && known(r.shape)) expanded.push(...r.shape.entries);
        else expanded.push({ kind: 'star', rel: r });
      }
    }
    if (!item.replace?.length) {
      entries.push(...expanded);
      continue;
    }
    const replacements = item.replace.map((r) => ({ name: r.name, lin: exprLineage(r.expr, here) }));
    const extraFor = (n: string): Lineage => {
      const l = new Lineage();
      for (const r of replacements) if (scope.names.column(r.name, n) !== Match.No) l.merge(r.lin);
      return l;
    };
    for (const e of expanded) {
      if (e.kind === 'col') entries.push({ ...e, lin: new Lineage().merge(e.lin).merge(extraFor(e.name)) });
      else {
        const rel = e.rel;
        const all = new Lineage().merge(rel.all());
        for (const r of replacements) all.merge(r.lin);
        entries.push({
          kind: 'star',
          rel: { lookup: (n) => { const h = rel.lookup(n); return { lin: new Lineage().merge(h?.lin).merge(extraFor(n)), certain: h?.certain ?? false }; }, all: () => all },
        });
      }
    }
  }
  return { entries };
}

/** Whether a qualifier (`c`, `public.customers`) may name a relation. */
function qualifierMatch(rel: Rel, qual: NamePath, names: NameRules): Match {
  if (qual.length === 1) return rel.refName !== undefined ? names.relation(rel.refName, qual[0]!) : Match.No;
  // schema.table (catalog.schema.table): only a table without an alias, by its name
  const written = rel.written;
  if (!written) return Match.No;
  let m: Match = written.length >= qual.length ? Match.Same : Match.Maybe; // unwritten parts: the search path decides
  for (let i = 1; i <= qual.length; i++) {
    const w = written[written.length - i];
    if (w === undefined) break;
    const here = names.relation(w, qual[qual.length - i]!);
    if (here === Match.No) return Match.No;
    if (here === Match.Maybe) m = Match.Maybe;
  }
  return m;
}

/** The relations a star's or whole-row qualifier names: innermost level first, every "maybe" taken. */
function qualified(qual: NamePath, scope: Scope): Rel[] {
  const out: Rel[] = [];
  for (const level of scope.levels) {
    let same = false;
    for (const r of level) {
      const m = qualifierMatch(r, qual, scope.names);
      if (m !== Match.No) out.push(r);
      if (m === Match.Same) same = true;
    }
    if (same) break;
  }
  return out;
}

function relOf(f: From, scope: Scope): Rel {
  const alias = f.alias;
  const group = f.group !== undefined ? { group: f.group } : {};
  switch (f.kind) {
    case 'table': {
      const parts = f.name.flatMap((p) => p.split('.')).filter((p) => p !== '');
      const cte = parts.length === 1 ? findCte(parts[0]!, scope) : { shapes: [], table: true };
      const table = tableRel(parts, alias, f.cols);
      if (cte.shapes.length === 0) return { ...table, ...group };
      const refName = alias ?? parts[0]!;
      const rels = cte.shapes.map((s) => shapeRel(renamed(s, f.cols), refName, scope.names));
      // a name the server may resolve to the CTE or to the table: both
      if (cte.table) rels.push(table);
      return { ...unionRel(rels, refName), ...group };
    }
    case 'query':
      return { ...shapeRel(renamed(shapeOf(f.query, scope), f.cols), alias, scope.names), ...group };
    case 'func':
      return { ...funcRel(f, scope), ...group };
    case 'opaque':
      return { ...OPAQUE_REL, ...(alias !== undefined ? { refName: alias } : {}), ...group };
  }
}

function funcRel(f: Extract<From, { kind: 'func' }>, scope: Scope): Rel {
  const alias = f.alias;
  const lin = exprLineage(f.expr, scope);
  // rows made of the arguments only when every function at its top is a known table function
  const fns = f.fns ?? [];
  const unknown = fns.length === 0 || fns.some((n) => !isTableFunction(n) || scope.opaqueFn(n));
  if (unknown) lin.opaque = true;
  const refName = alias !== undefined ? { refName: alias } : {};
  if (!f.outputs) {
    const cols = f.cols;
    return {
      ...refName,
      lookup: (n) => (cols?.some((c) => scope.names.column(c, n) === Match.Same) ? { lin, certain: true } : { lin, certain: false }),
      all: () => lin,
    };
  }
  // JSON table functions: each column its own value; an alias list renames them by position
  const outputs = f.outputs.map((o, i) => {
    const l = exprLineage(o.expr, scope);
    if (unknown) l.opaque = true;
    return { name: f.cols?.[i] ?? o.name, lin: l };
  });
  const byName = f.byName;
  const lookup = (n: string): Hit | undefined => {
    const out = new Lineage();
    let certain = false;
    let found = false;
    for (const o of outputs) {
      const m = o.name === undefined ? Match.Maybe : scope.names.column(o.name, n);
      if (m === Match.No) continue;
      out.merge(o.lin);
      found = true;
      certain ||= m === Match.Same;
    }
    if (byName && !certain) {
      const doc = extendPath(exprLineage(byName, scope), [n]);
      if (unknown) doc.opaque = true;
      out.merge(doc);
      found = true;
    }
    return found ? { lin: out, certain } : undefined;
  };
  const all = (): Lineage => {
    const l = new Lineage();
    for (const o of outputs) l.merge(o.lin);
    // the record's columns are not known (json_populate_record): every key of the document
    if (byName) l.merge(exprLineage(byName, scope)).opaque = true;
    return l;
  };
  const shape: Shape | undefined = !byName && outputs.every((o) => o.name !== undefined)
    ? { entries: outputs.map((o) => ({ kind: 'col', name: o.name!, certain: true, lin: o.lin })) }
    : undefined;
  return { ...refName, lookup, all, ...(shape ? { shape } : {}) };
}

function tableRel(parts: string[], alias: string | undefined, cols: string[] | undefined): Rel {
  const table = parts.join('.');
  const last = parts.at(-1) ?? table;
  return {
    refName: alias ?? last,
    ...(alias === undefined ? { written: parts } : {}),
    lookup: (n) => {
      if (cols?.some((c) => c.toLowerCase() === n.toLowerCase())) {
        // renamed by an alias list: some column of the table, unknown which
        return { lin: new Lineage().add({ table, column: null }).withOpaque(), certain: true };
      }
      return { lin: new Lineage().add({ table, column: n }), certain: false };
    },
    all: () => new Lineage().add({ table, column: null }).withOpaque(),
  };
}

function shapeRel(shape: Shape, refName: string | undefined, names: NameRules): Rel {
  return {
    ...(refName !== undefined ? { refName } : {}),
    shape,
    lookup: (n) => lookupIn(shape, n, names),
    all: () => shapeAll(shape),
  };
}

function lookupIn(shape: Shape, n: string, names: NameRules): Hit | undefined {
  const certain = new Lineage();
  const maybe = new Lineage();
  let found = false;
  let guessed = false;
  for (const e of shape.entries) {
    if (e.kind === 'col') {
      const m = names.column(e.name, n);
      if (e.certain && m === Match.Same) {
        certain.merge(e.lin);
        found = true;
      } else if (!e.certain || m === Match.Maybe) {
        // a default name we may have guessed wrong, or a name the server may take for this one
        if (m !== Match.No) found = true;
        maybe.merge(e.lin);
        guessed = true;
      }
    } else {
      const hit = e.rel.lookup(n);
      if (hit) {
        maybe.merge(hit.lin);
        guessed = true;
      }
    }
  }
  if (found) return { lin: certain.merge(maybe), certain: true };
  return guessed ? { lin: maybe, certain: false } : undefined;
}

function exprLineage(e: Expr, scope: Scope): Lineage {
  const out = new Lineage();
  if (e.opaque || e.calls.some(scope.opaqueFn)) out.opaque = true;
  if (!e.direct) out.derived = true;
  if (e.built) out.built = true;
  if (e.reparsed) out.reparsed = true;
  for (const ref of e.refs) out.merge(applyUse(extendPath(resolveRef(ref.path, scope), ref.keys), ref.use));
  for (const row of e.rows) out.merge(applyUse(resolveRow(row.qual, scope), row.use));
  for (const sub of e.subs) out.merge(applyUse(extendPath(shapeAll(shapeOf(sub.query, scope)), sub.keys), sub.use));
  for (const key of e.keys) out.add({ column: key });
  return out;
}

/** The whole row of a relation, as a value: every column, unknown which. */
function wholeRow(r: Rel): Lineage {
  const l = new Lineage().merge(r.all());
  l.derived = true;
  return l;
}

/** `u.*` / `*` inside an expression: every column of the relation(s). */
function resolveRow(qual: NamePath, scope: Scope): Lineage {
  if (qual.length === 0) {
    const level = scope.levels[0] ?? [];
    if (level.length === 0) return Lineage.opaque();
    const out = new Lineage();
    for (const r of level) out.merge(wholeRow(r));
    return out;
  }
  const rels = qualified(qual, scope);
  if (rels.length === 0) return Lineage.opaque();
  const out = new Lineage();
  for (const r of rels) out.merge(wholeRow(r));
  return out;
}

/** The value of a column of a relation, by name; PostgreSQL's `rel.f` may be f(rel) (attribute notation). */
function columnOf(r: Rel, name: string, scope: Scope): Lineage {
  const hit = r.lookup(name);
  const out = new Lineage();
  if (hit) out.merge(hit.lin);
  const listed = scope.opaqueFn.listed?.(name) === true;
  if (scope.names.attributeCalls && (isWholeRowFunction(name) || listed) && !(hit?.certain && r.shape)) {
    // not a column of it (a base table's columns are unknown here): the function of the whole row
    out.merge(wholeRow(r));
    if (listed) out.opaque = true;
  } else if (!hit) {
    // the relation does not expose that name: our reading of it is wrong somewhere
    out.add({ column: name }).opaque = true;
  }
  return out;
}

/** The fields after a column (`u.address.email`, `payload.contact.email`): a path inside its value. */
function withFields(lin: Lineage, fields: string[], scope: Scope): Lineage {
  if (fields.length === 0) return lin;
  const out = extendPath(lin, fields);
  // PostgreSQL reads `x.f` as f(x) when x has no field f: the value may be a function's
  if (scope.names.attributeCalls) out.derived = true;
  return out;
}

function resolveRef(path: NamePath, scope: Scope): Lineage {
  const parts = path.filter((p) => p !== '');
  if (parts.length === 0) return Lineage.opaque();
  // qualified: the parts before the column name a relation (the longest qualifier first, at every level)
  const out = new Lineage();
  for (let k = parts.length - 1; k >= 1; k--) {
    const qual = parts.slice(0, k);
    let found = false;
    for (const level of scope.levels) {
      let same = false;
      for (const r of level) {
        const m = qualifierMatch(r, qual, scope.names);
        if (m === Match.No) continue;
        out.merge(withFields(columnOf(r, parts[k]!, scope), parts.slice(k + 1), scope));
        found = true;
        if (m === Match.Same) same = true;
      }
      // a relation certainly of that name: the innermost one is the one (a "maybe" looks further out too)
      if (same) break;
    }
    // the qualifier names a relation (which one may be open): not a column and its fields
    if (found) return out;
  }
  // unqualified (or the qualifier is not a relation: a composite, struct or JSON column and its fields)
  const name = parts[0]!;
  const col = new Lineage();
  let hits = 0;
  for (const level of scope.levels) {
    let certain = false;
    for (const r of level) {
      const hit = r.lookup(name);
      if (hit) {
        col.merge(hit.lin);
        hits++;
        certain ||= hit.certain;
      }
      if (r.refName !== undefined && scope.names.relation(r.refName, name) !== Match.No) {
        // PostgreSQL and BigQuery read a bare relation name as the whole row
        col.merge(wholeRow(r));
        hits++;
      }
    }
    // a certain hit stops the search; a base table only maybe has the column, so look further out too
    if (certain) break;
  }
  if (hits === 0) col.add({ column: name });
  return out.merge(withFields(col, parts.slice(1), scope));
}

// ---- the answer ---------------------------------------------------------------------------------

/**
 * The lineage of each of the `width` result columns, named `names` (the result's names).
 * A whole-statement failure is `Lineage.opaque()` for every column.
 */
export function resolveColumns(
  q: Query,
  width: number,
  names: readonly string[],
  opaqueFn: OpaqueFunction = DEFAULT_OPAQUE,
  dialect: Dialect = 'postgresql',
): Lineage[] {
  const rules = nameRules(dialect);
  const scope: Scope = { levels: [], depth: 0, opaqueFn, names: rules };
  return align(shapeOf(q, scope), width, names, rules);
}

/**
 * Line the shape up with the result: entries before the first star and after the last take
 * their positions; the columns in between come from the stars, found by name (the first
 * branch of a set operation only: a later branch's columns match by position, their names are
 * not the result's, so its star columns are opaque).
 */
function align(shape: Shape, width: number, names: readonly string[] | undefined, rules: NameRules): Lineage[] {
  if (shape.branches && shape.branches.length > 1) {
    const out = Array.from({ length: width }, () => new Lineage());
    shape.branches.forEach((b, i) => {
      align(b, width, i === 0 ? names : undefined, rules).forEach((l, j) => out[j]!.merge(l));
    });
    return out;
  }
  const entries = shape.entries;
  const first = entries.findIndex((e) => e.kind === 'star');
  if (first < 0) {
    if (entries.length === width) return entries.map((e) => new Lineage().merge((e as Extract<Entry, { kind: 'col' }>).lin));
    return mismatch(shape, width);
  }
  let last = entries.length - 1;
  while (entries[last]!.kind !== 'star') last--;
  const prefix = entries.slice(0, first);
  const suffix = entries.slice(last + 1);
  const middle = entries.slice(first, last + 1);
  if (prefix.length + suffix.length > width) return mismatch(shape, width);
  const out: Lineage[] = [];
  for (const e of prefix) out.push(new Lineage().merge((e as Extract<Entry, { kind: 'col' }>).lin));
  const region = width - prefix.length - suffix.length;
  for (let i = 0; i < region; i++) {
    const name = names?.[prefix.length + i];
    const lin = new Lineage();
    if (name === undefined) {
      for (const e of middle) lin.merge(e.kind === 'col' ? e.lin : e.rel.all());
      lin.opaque = true;
    } else {
      let hits = 0;
      for (const e of middle) {
        if (e.kind === 'col') {
          if (rules.column(e.name, name) !== Match.No || !e.certain) {
            lin.merge(e.lin);
            hits++;
          }
        } else {
          const hit = e.rel.lookup(name);
          if (hit) {
            lin.merge(hit.lin);
            hits++;
          }
        }
      }
      if (hits === 0) lin.add({ column: name }).opaque = true;
    }
    out.push(lin);
  }
  for (const e of suffix) out.push(new Lineage().merge((e as Extract<Entry, { kind: 'col' }>).lin));
  return out;
}

/** The statement does not have the result's shape: every column may be anything it reads. */
function mismatch(shape: Shape, width: number): Lineage[] {
  const all = shapeAll(shape).withOpaque();
  return Array.from({ length: width }, () => new Lineage().merge(all));
}

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
 * - the names of fields read inside a value, as if they were columns: `u.address.email`,
 *   `(addr).city`, JSON keys and paths (`data->>'email'`, `data #>> '{contact,email}'`,
 *   `json_extract(data, '$.contact.email')`: each word of a string operand of a JSON operator or
 *   of a function whose name contains `json`);
 * - NOT sources: the arguments of `count(...)` (it returns a number, whatever it counts), and
 *   the parts that only choose, filter or order rows: an aggregate's FILTER (WHERE ...) and
 *   ORDER BY (except WITHIN GROUP (ORDER BY x), whose x IS the value: percentile_cont, mode),
 *   a window's OVER (PARTITION BY / ORDER BY), and WHERE/GROUP BY/HAVING/ORDER BY/JOIN ON.
 * - through a relation in FROM: a CTE (recursive ones too: resolved to a fixed point), a
 *   subquery, a join, a set operation (UNION/INTERSECT/EXCEPT: the union of every branch's
 *   sources at that position), VALUES, a known table function (`unnest(u.emails) AS e(x)`,
 *   `jsonb_each(doc)`, `json_to_recordset(...)`, JSON_TABLE: its columns come from the
 *   function's arguments; functions.ts lists them), and LATERAL references to the relations
 *   before it (a LATERAL subquery is a subquery like any other);
 * - a base table's column is the source `table.column`; a name that cannot be pinned to one
 *   relation (an unqualified column with two tables in FROM) gets every candidate.
 *
 * `SELECT *` / `t.*`: the columns of a base table are not known here, so the output columns a
 * star produces are traced by their output names (for a star the output name IS the source
 * name), through CTEs and subqueries down to the base table. Stars over relations whose columns
 * are known (a subquery with an explicit list) expand exactly, by position.
 *
 * Opaque (lineage unknown, masking fails closed on it): the statement does not parse, is not
 * one SELECT, or holds a part the model cannot read; a whole-row reference to a base table
 * (`to_json(u)`, `row_to_json(u.*)`, `SELECT u FROM users u`: every column of it, unknown which);
 * a column renamed by a column-alias list whose original name is unknown (`FROM users AS u(a, b)`);
 * the star columns of a second set-operation branch (positional: their names are not the
 * output's); a star region whose width does not fit the result; a reference into a subquery
 * that does not expose that name; nesting deeper than MAX_DEPTH; a function in FROM that is not
 * a known table function (`FROM f() AS t(a text)`, a SETOF record function, `EXTERNAL_QUERY`);
 * a call of a function whose value is not made from its arguments (SQL held in a string:
 * `ts_rewrite`, `query_to_xml`; a function listed in `database.allowed_functions`, which may
 * read any table) or a user-defined PostgreSQL operator (functions.ts).
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
 *
 * Names compare case-insensitively (PostgreSQL folds unquoted names, and a quoted "Email" must
 * still meet a rule on `email`), which can only add candidates.
 */

import { isTableFunction, opaqueFunctions, type OpaqueFunction } from './functions.js';

export interface Source {
  /** the relation as written (`public.users`), when known */
  table?: string;
  /** the column; null for "some column of this table" (a whole-row reference) */
  column: string | null;
}

export class Lineage {
  readonly sources = new Map<string, Source>();
  opaque = false;
  /** some value went through more than plain references (a function, an operator, an aggregate, a cast...) */
  derived = false;

  static opaque(): Lineage {
    const l = new Lineage();
    l.opaque = true;
    return l;
  }

  add(s: Source): this {
    const key = s.table !== undefined ? `${s.table}.${s.column ?? '*'}` : (s.column ?? '*');
    if (!this.sources.has(key)) this.sources.set(key, s);
    return this;
  }

  merge(other: Lineage | undefined): this {
    if (!other) return this;
    if (other.opaque) this.opaque = true;
    if (other.derived) this.derived = true;
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

// ---- the query model ---------------------------------------------------------------------------

/** A name path as written: `email`, `u.email`, `public.users.email`. */
export type NamePath = string[];

/** An expression, reduced to what lineage needs: what it reads. */
export interface Expr {
  /** column references */
  refs: NamePath[];
  /** whole-row references (`u.*` inside an expression); [] for a bare `*` */
  rows: NamePath[];
  /** subqueries whose output values flow into the expression */
  subs: Query[];
  /** names of fields read inside a value: struct/composite fields, JSON keys and path steps */
  keys: string[];
  /** something in it could not be read */
  opaque: boolean;
  /** the expression is one plain column reference (its value is the column's, unchanged) */
  direct: boolean;
  /** the functions it calls, lower-cased as written (`upper`, `pg_catalog.upper`, `ds.f`) */
  calls: string[];
}

export type Item =
  | { kind: 'expr'; name: string; /** an alias or a plain column name; else a guess of the default name */ certain: boolean; expr: Expr }
  | { kind: 'star'; qual?: NamePath; /** BigQuery `* REPLACE (expr AS name)` */ replace?: Array<{ name: string; expr: Expr }> };

export type From =
  | { kind: 'table'; name: NamePath; alias?: string; cols?: string[] }
  | { kind: 'query'; query: Query; alias?: string; cols?: string[] }
  | { kind: 'func'; expr: Expr; alias?: string; cols?: string[]; /** the table functions it calls at its top (unnest...) */ fns?: string[] }
  | { kind: 'opaque'; alias?: string };

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

// ---- resolution ---------------------------------------------------------------------------------

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
  /** lower-cased names a qualifier may use for it */
  names: string[];
  lookup(name: string): Hit | undefined;
  /** every column of it */
  all(): Lineage;
  /** its columns when they are known (subqueries, CTEs) */
  shape?: Shape;
}

type Entry =
  | { kind: 'col'; name: string; certain: boolean; lin: Lineage }
  | { kind: 'star'; rel: Rel };

/** The output columns of a query; `branches`: a set operation's branches, for exact alignment. */
interface Shape {
  entries: Entry[];
  branches?: Shape[];
}

interface Scope {
  /** innermost first */
  levels: Rel[][];
  ctes: ReadonlyMap<string, Shape>;
  depth: number;
  /** functions whose values are not traced through their arguments (functions.ts) */
  opaqueFn: OpaqueFunction;
}

const lower = (s: string): string => s.toLowerCase();
const same = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase();

const OPAQUE_REL: Rel = {
  names: [],
  lookup: () => ({ lin: Lineage.opaque(), certain: false }),
  all: () => Lineage.opaque(),
};
const OPAQUE_SHAPE: Shape = { entries: [{ kind: 'star', rel: OPAQUE_REL }] };

/** A recursive CTE before its first round: has every column, made of nothing yet. */
const EMPTY_REL: Rel = { names: [], lookup: () => ({ lin: new Lineage(), certain: true }), all: () => new Lineage() };
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
  return shape.entries.map((e) => (e.kind === 'col' ? `${lower(e.name)}=${e.lin.signature()}` : `*=${e.rel.all().signature()}`)).join('|');
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
    names: rel.names,
    lookup: (n) => {
      const hit = rel.lookup(n);
      return { lin: new Lineage().merge(hit?.lin).merge(extra), certain: hit?.certain ?? false };
    },
    all: () => new Lineage().merge(rel.all()).merge(extra),
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
  return { entries: [{ kind: 'star', rel: { names: [], lookup: () => ({ lin: all, certain: false }), all: () => all } }] };
}

/** Column-alias lists (`AS s(a, b)`, `WITH t(n) AS`): rename by position. */
function renamed(shape: Shape, cols: string[] | undefined): Shape {
  if (!cols || cols.length === 0) return shape;
  const star = shape.entries.findIndex((e) => e.kind === 'star');
  if (star >= 0 && star < cols.length) {
    // which column gets which name is not known: every name may be any column
    const all = shapeAll(shape).withOpaque();
    return { entries: [{ kind: 'star', rel: { names: [], lookup: () => ({ lin: all, certain: false }), all: () => all } }] };
  }
  return { entries: shape.entries.map((e, i) => (e.kind === 'col' && i < cols.length ? { ...e, name: cols[i]!, certain: true } : e)) };
}

function withScope(w: With, scope: Scope): Scope {
  const env = new Map(scope.ctes);
  if (!w.recursive) {
    // each CTE sees the ones before it; its own name still means the table of that name
    for (const cte of w.ctes) env.set(lower(cte.name), renamed(shapeOf(cte.query, { ...scope, ctes: new Map(env) }), cte.cols));
    return { ...scope, ctes: env };
  }
  // WITH RECURSIVE: every CTE sees every other and itself; iterate to a fixed point
  for (const cte of w.ctes) env.set(lower(cte.name), EMPTY_SHAPE);
  let before = '';
  for (let round = 0; round < MAX_ROUNDS; round++) {
    for (const cte of w.ctes) {
      const key = lower(cte.name);
      const next = renamed(shapeOf(cte.query, { ...scope, ctes: env }), cte.cols);
      env.set(key, unionShapes(env.get(key)!, next));
    }
    const now = w.ctes.map((c) => shapeSignature(env.get(lower(c.name))!)).join('#');
    if (now === before) return { ...scope, ctes: env };
    before = now;
  }
  for (const cte of w.ctes) env.set(lower(cte.name), OPAQUE_SHAPE);
  return { ...scope, ctes: env };
}

function selectShape(q: Extract<Query, { kind: 'select' }>, scope: Scope): Shape {
  const rels: Rel[] = [];
  // each FROM item sees the ones before it (LATERAL), then the enclosing queries
  for (const f of q.from) rels.push(relOf(f, { ...scope, levels: [rels.slice(), ...scope.levels] }));
  const here: Scope = { ...scope, levels: [rels, ...scope.levels] };
  const entries: Entry[] = [];
  for (const item of q.items) {
    if (item.kind === 'expr') {
      entries.push({ kind: 'col', name: item.name, certain: item.certain, lin: exprLineage(item.expr, here) });
      continue;
    }
    const qual = item.qual?.at(-1);
    const targets = qual === undefined ? rels : rels.filter((r) => r.names.includes(lower(qual)));
    const expanded: Entry[] = [];
    if (targets.length === 0) expanded.push({ kind: 'star', rel: OPAQUE_REL });
    for (const r of targets) {
      if (r.shape && known(r.shape)) expanded.push(...r.shape.entries);
      else expanded.push({ kind: 'star', rel: r });
    }
    if (!item.replace?.length) {
      entries.push(...expanded);
      continue;
    }
    const replacements = item.replace.map((r) => ({ name: r.name, lin: exprLineage(r.expr, here) }));
    const extraFor = (n: string): Lineage => {
      const l = new Lineage();
      for (const r of replacements) if (same(r.name, n)) l.merge(r.lin);
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
          rel: { names: rel.names, lookup: (n) => { const h = rel.lookup(n); return { lin: new Lineage().merge(h?.lin).merge(extraFor(n)), certain: h?.certain ?? false }; }, all: () => all },
        });
      }
    }
  }
  return { entries };
}

function relOf(f: From, scope: Scope): Rel {
  const alias = f.alias;
  switch (f.kind) {
    case 'table': {
      const parts = f.name.flatMap((p) => p.split('.')).filter((p) => p !== '');
      const cte = parts.length === 1 ? scope.ctes.get(lower(parts[0]!)) : undefined;
      if (cte) return shapeRel(renamed(cte, f.cols), [lower(alias ?? parts[0]!)]);
      return tableRel(parts, alias, f.cols);
    }
    case 'query':
      return shapeRel(renamed(shapeOf(f.query, scope), f.cols), alias !== undefined ? [lower(alias)] : []);
    case 'func': {
      const lin = exprLineage(f.expr, scope);
      // rows made of the arguments only when every function at its top is a known table function
      const fns = f.fns ?? [];
      if (fns.length === 0 || fns.some((n) => !isTableFunction(n) || scope.opaqueFn(n))) lin.opaque = true;
      const cols = f.cols;
      return {
        names: alias !== undefined ? [lower(alias)] : [],
        lookup: (n) => (cols?.some((c) => same(c, n)) ? { lin, certain: true } : { lin, certain: false }),
        all: () => lin,
      };
    }
    case 'opaque':
      return { ...OPAQUE_REL, names: alias !== undefined ? [lower(alias)] : [] };
  }
}

function tableRel(parts: string[], alias: string | undefined, cols: string[] | undefined): Rel {
  const table = parts.join('.');
  const last = parts.at(-1) ?? table;
  return {
    names: alias !== undefined ? [lower(alias)] : [lower(last), lower(table)],
    lookup: (n) => {
      if (cols?.some((c) => same(c, n))) {
        // renamed by an alias list: some column of the table, unknown which
        return { lin: new Lineage().add({ table, column: null }).withOpaque(), certain: true };
      }
      return { lin: new Lineage().add({ table, column: n }), certain: false };
    },
    all: () => new Lineage().add({ table, column: null }).withOpaque(),
  };
}

function shapeRel(shape: Shape, names: string[]): Rel {
  return {
    names,
    shape,
    lookup: (n) => {
      const certain = new Lineage();
      const maybe = new Lineage();
      let found = false;
      let guessed = false;
      for (const e of shape.entries) {
        if (e.kind === 'col') {
          if (e.certain && same(e.name, n)) {
            certain.merge(e.lin);
            found = true;
          } else if (!e.certain) {
            // a default name we may have guessed wrong: it may be this one
            if (same(e.name, n)) found = true;
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
    },
    all: () => shapeAll(shape),
  };
}

function exprLineage(e: Expr, scope: Scope): Lineage {
  const out = new Lineage();
  if (e.opaque || e.calls.some(scope.opaqueFn)) out.opaque = true;
  if (!e.direct) out.derived = true;
  for (const ref of e.refs) out.merge(resolveRef(ref, scope));
  for (const row of e.rows) out.merge(resolveRow(row, scope));
  for (const sub of e.subs) out.merge(shapeAll(shapeOf(sub, scope)));
  for (const key of e.keys) out.add({ column: key });
  return out;
}

/** `u.*` / `*` inside an expression: every column of the relation(s). */
function resolveRow(qual: NamePath, scope: Scope): Lineage {
  const level = scope.levels[0] ?? [];
  if (qual.length === 0) {
    if (level.length === 0) return Lineage.opaque();
    const out = new Lineage();
    for (const r of level) out.merge(r.all());
    return out;
  }
  const q = lower(qual.at(-1)!);
  for (const lv of scope.levels) {
    const rels = lv.filter((r) => r.names.includes(q));
    if (rels.length) {
      const out = new Lineage();
      for (const r of rels) out.merge(r.all());
      return out;
    }
  }
  return Lineage.opaque();
}

function resolveRef(path: NamePath, scope: Scope): Lineage {
  const parts = path.filter((p) => p !== '');
  if (parts.length === 0) return Lineage.opaque();
  // qualified: the part before the column names a relation (innermost scope first)
  for (let k = parts.length - 1; k >= 1; k--) {
    const q = lower(parts[k - 1]!);
    for (const level of scope.levels) {
      const rels = level.filter((r) => r.names.includes(q));
      if (rels.length === 0) continue;
      const out = new Lineage();
      for (const r of rels) {
        const hit = r.lookup(parts[k]!);
        // the relation does not expose that name: our reading of it is wrong somewhere
        out.merge(hit ? hit.lin : new Lineage().add({ column: parts[k]! }).withOpaque());
      }
      // `u.address.email`: the fields of the column are names too
      for (let i = k + 1; i < parts.length; i++) out.add({ table: parts.slice(0, i).join('.'), column: parts[i]! });
      return out;
    }
  }
  // unqualified (or the qualifier is not a relation: a composite or struct column and its fields)
  const name = parts[0]!;
  const out = new Lineage();
  let hits = 0;
  for (const level of scope.levels) {
    let certain = false;
    for (const r of level) {
      const hit = r.lookup(name);
      if (hit) {
        out.merge(hit.lin);
        hits++;
        certain ||= hit.certain;
      }
      if (r.names.includes(lower(name))) {
        // PostgreSQL and BigQuery read a bare relation name as the whole row
        out.merge(r.all());
        hits++;
      }
    }
    // a certain hit stops the search; a base table only maybe has the column, so look further out too
    if (certain) break;
  }
  if (hits === 0) out.add({ column: name });
  // `u.email` where u is no relation: the struct or composite column u, and its field email
  for (let i = 1; i < parts.length; i++) out.add({ table: parts.slice(0, i).join('.'), column: parts[i]! });
  return out;
}

// ---- the answer ---------------------------------------------------------------------------------

/**
 * The lineage of each of the `width` result columns, named `names` (the result's names).
 * A whole-statement failure is `Lineage.opaque()` for every column.
 */
export function resolveColumns(q: Query, width: number, names: readonly string[], opaqueFn: OpaqueFunction = opaqueFunctions()): Lineage[] {
  const scope: Scope = { levels: [], ctes: new Map(), depth: 0, opaqueFn };
  return align(shapeOf(q, scope), width, names);
}

/**
 * Line the shape up with the result: entries before the first star and after the last take
 * their positions; the columns in between come from the stars, found by name (the first
 * branch of a set operation only: a later branch's columns match by position, their names are
 * not the result's, so its star columns are opaque).
 */
function align(shape: Shape, width: number, names: readonly string[] | undefined): Lineage[] {
  if (shape.branches && shape.branches.length > 1) {
    const out = Array.from({ length: width }, () => new Lineage());
    shape.branches.forEach((b, i) => {
      align(b, width, i === 0 ? names : undefined).forEach((l, j) => out[j]!.merge(l));
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
          if (same(e.name, name) || !e.certain) {
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

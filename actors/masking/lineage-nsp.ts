/**
 * MySQL, BigQuery and Trino statements into the lineage model (lineage.ts), on node-sql-parser's
 * grammar for the dialect. The second reader for those dialects (dialects.ts tries PostgreSQL's
 * parser first): it knows BigQuery's `* EXCEPT (...)` / `* REPLACE (...)`, MySQL's MariaDB
 * flavour, and other syntax PostgreSQL refuses.
 *
 * node-sql-parser's trees are loosely typed (a name is a string, or `{ type, value }`, or
 * `{ expr: { type, value } }` depending on grammar and position), so every name goes through
 * `nameOf`, expressions are walked generically (a node kind not named here still gives up its
 * column references), and a SELECT item or FROM item of a shape not named here is opaque.
 */
import { createRequire } from 'node:module';
import type { Dialect } from '../../protocol/schemas/common.js';
import { emptyExpr, OPAQUE_QUERY, type Expr, type From, type Item, type NamePath, type Query, type With } from './lineage.js';

interface Parser {
  astify(sql: string, opts?: { database?: string }): unknown;
}
type ParserModule = { Parser: new () => Parser };

const GRAMMARS: Record<Exclude<Dialect, 'postgresql'>, Array<{ build: string; database: string }>> = {
  mysql: [{ build: 'mysql', database: 'MySQL' }, { build: 'mariadb', database: 'MariaDB' }],
  bigquery: [{ build: 'bigquery', database: 'BigQuery' }],
  trino: [{ build: 'trino', database: 'trino' }],
};

const parsers = new Map<string, Parser>();

function parserFor(build: string): Parser {
  let p = parsers.get(build);
  if (!p) {
    // CommonJS bundles, one per grammar (a fraction of the all-dialects bundle), loaded on first use
    const require = createRequire(import.meta.url);
    const mod = require(`node-sql-parser/build/${build}.js`) as ParserModule;
    p = new mod.Parser();
    parsers.set(build, p);
  }
  return p;
}

/** The statement through the dialect's grammars; undefined when none of them parses it. */
export function nspQuery(sql: string, dialect: Exclude<Dialect, 'postgresql'>): Query | undefined {
  for (const g of GRAMMARS[dialect]) {
    let ast: unknown;
    try {
      ast = parserFor(g.build).astify(sql, { database: g.database });
    } catch {
      continue;
    }
    if (Array.isArray(ast)) {
      if (ast.length !== 1) return OPAQUE_QUERY;
      ast = ast[0];
    }
    return query(ast);
  }
  return undefined;
}

type Node = Record<string, unknown>;
const isObj = (v: unknown): v is Node => v !== null && typeof v === 'object' && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** A name in any of the shapes the grammars use. */
function nameOf(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (!isObj(v)) return undefined;
  if (typeof v.value === 'string') return v.value;
  if (v.expr !== undefined) return nameOf(v.expr);
  return undefined;
}

function query(ast: unknown): Query {
  if (!isObj(ast) || ast.type !== 'select') return OPAQUE_QUERY;
  const w = withClause(ast.with);
  const branches: Query[] = [];
  for (let node: unknown = ast; isObj(node); node = node._next) branches.push(select(node));
  if (branches.length === 1) return w ? { ...(branches[0] as Exclude<Query, { kind: 'opaque' }>), with: w } : branches[0]!;
  return { kind: 'setop', ...(w ? { with: w } : {}), branches };
}

function withClause(v: unknown): With | undefined {
  const ctes = list(v);
  if (ctes.length === 0) return undefined;
  let recursive = false;
  const out = ctes.map((c) => {
    const cte = isObj(c) ? c : {};
    if (cte.recursive === true) recursive = true;
    const stmt = isObj(cte.stmt) ? cte.stmt : {};
    const cols = list(cte.columns).map((col) => (isObj(col) && col.type === 'column_ref' ? nameOf(col.column) : nameOf(col))).filter((n): n is string => n !== undefined);
    return { name: nameOf(cte.name) ?? '', ...(cols.length ? { cols } : {}), query: query(stmt.ast ?? stmt) };
  });
  return { recursive, ctes: out };
}

/** One SELECT (without its set-operation successors and WITH, handled by `query`). */
function select(node: Node): Query {
  if (node.type !== 'select') return OPAQUE_QUERY;
  const items: Item[] = node.columns === '*' ? [{ kind: 'star' }] : list(node.columns).map(item);
  const from: From[] = list(node.from).map(fromItem);
  return { kind: 'select', items, from };
}

function refPath(ref: Node): NamePath {
  const parts: string[] = [];
  for (const k of ['db', 'schema', 'table']) {
    const n = nameOf(ref[k]);
    if (n !== undefined && n !== '') parts.push(n);
  }
  const col = nameOf(ref.column);
  if (col !== undefined) parts.push(col);
  return parts;
}

function isStar(v: unknown): v is Node {
  return isObj(v) && ((v.type === 'column_ref' && nameOf(v.column) === '*') || v.type === 'star');
}

function starItem(ref: Node): Item {
  const qual = ref.type === 'column_ref' ? refPath(ref).slice(0, -1) : [];
  return qual.length ? { kind: 'star', qual } : { kind: 'star' };
}

function item(v: unknown): Item {
  if (!isObj(v)) return { kind: 'expr', name: '?column?', certain: false, expr: { ...emptyExpr(), opaque: true } };
  if ((v.type === 'except' || v.type === 'replace') && isStar(v.expr)) {
    const star = starItem(v.expr);
    if (v.type === 'except' || star.kind !== 'star') return star;
    const replace = list(v.expr_list).flatMap((r) => {
      if (!isObj(r)) return [];
      const name = nameOf(r.as);
      return name !== undefined ? [{ name, expr: expr(r.expr) }] : [];
    });
    return { ...star, replace };
  }
  if (v.expr === undefined) return { kind: 'expr', name: '?column?', certain: false, expr: { ...emptyExpr(), opaque: true } };
  if (isStar(v.expr)) return starItem(v.expr);
  const alias = nameOf(v.as);
  if (alias !== undefined) return { kind: 'expr', name: alias, certain: true, expr: expr(v.expr) };
  if (isObj(v.expr) && v.expr.type === 'column_ref') {
    const col = nameOf(v.expr.column);
    if (col !== undefined) return { kind: 'expr', name: col, certain: true, expr: expr(v.expr) };
  }
  // MySQL names an unaliased expression by its text; a guess either way
  return { kind: 'expr', name: '?column?', certain: false, expr: expr(v.expr) };
}

function fromItem(v: unknown): From {
  if (!isObj(v)) return { kind: 'opaque' };
  const alias = nameOf(v.as);
  const a = alias !== undefined ? { alias } : {};
  const sub = isObj(v.expr) ? (v.expr.ast ?? (v.expr.type === 'select' ? v.expr : undefined)) : undefined;
  if (sub !== undefined) return { kind: 'query', query: query(sub), ...a };
  if (v.type === 'unnest') return { kind: 'func', expr: expr(v.expr), ...a, fns: ['unnest'] };
  const table = nameOf(v.table);
  if (table !== undefined && v.expr === undefined) {
    // BigQuery: catalog (project), schema (dataset); MySQL: db
    const name: string[] = [];
    const catalog = nameOf(v.catalog);
    const schema = nameOf(v.schema);
    const db = nameOf(v.db);
    if (catalog) name.push(catalog);
    if (schema) name.push(schema);
    else if (db && db !== catalog) name.push(db);
    name.push(table);
    return { kind: 'table', name, ...a };
  }
  if (v.expr !== undefined) {
    // a table function or another expression in FROM: its columns come from what it reads
    const ex = expr(v.expr);
    ex.opaque = true;
    return { kind: 'func', expr: ex, ...a };
  }
  return { kind: 'opaque', ...a };
}

function isCount(node: Node): boolean {
  return functionName(node).toUpperCase() === 'COUNT';
}

const JSON_OPERATORS = new Set(['->', '->>', '#>', '#>>']);

/** The words of every string literal in a subtree (JSON keys and paths). */
function stringWords(node: unknown, into: string[]): void {
  const stack: unknown[] = [node];
  while (stack.length) {
    const n = stack.pop();
    if (Array.isArray(n)) {
      stack.push(...n);
      continue;
    }
    if (!isObj(n)) continue;
    if (typeof n.type === 'string' && n.type.endsWith('_string') && typeof n.value === 'string') {
      into.push(...n.value.split(/[^A-Za-z0-9_$-]+/).filter((w) => w !== '' && w !== '$'));
      continue;
    }
    for (const child of Object.values(n)) if (child !== null && typeof child === 'object') stack.push(child);
  }
}

function functionName(node: Node): string {
  if (typeof node.name === 'string') return node.name;
  if (!isObj(node.name)) return '';
  const parts = [nameOf(node.name.schema), ...list(node.name.name).map(nameOf)];
  return parts.filter((p): p is string => p !== undefined).join('.');
}

/** An expression's column references, whole-row references, subqueries and calls. */
function expr(node: unknown, out: Expr = emptyExpr()): Expr {
  if (isObj(node) && node.type === 'column_ref' && nameOf(node.column) !== '*' && list(node.subFields).length === 0) out.direct = true;
  const stack: unknown[] = [node];
  while (stack.length) {
    const n = stack.pop();
    if (Array.isArray(n)) {
      for (const c of n) stack.push(c);
      continue;
    }
    if (!isObj(n)) continue;
    if (isObj(n.ast)) {
      out.subs.push(query(n.ast));
      continue;
    }
    switch (n.type) {
      case 'select':
        out.subs.push(query(n));
        continue;
      case 'column_ref': {
        const path = refPath(n);
        if (path.at(-1) === '*') out.rows.push(path.slice(0, -1));
        else out.refs.push(path);
        // BigQuery struct fields: u.address.email
        for (const f of list(n.subFields)) {
          const name = nameOf(f);
          if (name !== undefined) out.keys.push(name);
        }
        continue;
      }
      case 'binary_expr':
        if (typeof n.operator === 'string' && JSON_OPERATORS.has(n.operator)) stringWords(n.right, out.keys);
        stack.push(n.left, n.right);
        continue;
      case 'star':
        out.rows.push([]);
        continue;
      case 'aggr_func':
        out.calls.push(functionName(n).toLowerCase());
        // count(...) returns a number; an aggregate's ORDER BY and OVER order rows, they are not values
        if (!isCount(n) && isObj(n.args)) stack.push({ ...n.args, orderby: undefined });
        continue;
      case 'function':
        out.calls.push(functionName(n).toLowerCase());
        if (functionName(n).toLowerCase().includes('json')) stringWords(n.args, out.keys);
        if (!isCount(n)) stack.push(n.args);
        continue;
      default:
        for (const [k, child] of Object.entries(n)) {
          if (k === 'over' || k === 'name') continue;
          if (child !== null && typeof child === 'object') stack.push(child);
        }
    }
  }
  return out;
}

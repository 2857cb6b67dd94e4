/**
 * MySQL, BigQuery and Trino statements into the lineage model (lineage.ts), on node-sql-parser's
 * grammar for the dialect. The second reader for those dialects (dialects.ts tries PostgreSQL's
 * parser first): it knows BigQuery's `* EXCEPT (...)` / `* REPLACE (...)`, MySQL's MariaDB
 * flavour, and other syntax PostgreSQL refuses.
 *
 * node-sql-parser's trees are loosely typed (a name is a string, or `{ type, value }`, or
 * `{ expr: { type, value } }` depending on grammar and position), so every name goes through
 * `nameOf`, expressions are walked generically (a node kind not named here still gives up its
 * column references, as derived values), and a SELECT item or FROM item of a shape not named here
 * is opaque. Uses and reads inside documents follow lineage-pg.ts, with the same tables (json.ts):
 * MySQL's `->`/`->>` and JSON functions take paths, BigQuery's `payload.contact.email` and
 * `payload['contact']` are reads inside `payload`. `SELECT AS STRUCT` / `AS VALUE` is one column
 * made of every item.
 */
import { createRequire } from 'node:module';
import type { Dialect } from '../../../protocol/schemas/common.js';
import { castUse, functionShape, INDEX, looksLikeJson, parseJsonPath, within, type Use } from './json.js';
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
  let items: Item[] = node.columns === '*' ? [{ kind: 'star' }] : list(node.columns).map(item);
  if (typeof node.as_struct_val === 'string' && node.as_struct_val !== '') {
    // SELECT AS STRUCT / AS VALUE: one column holding every item
    const one = emptyExpr();
    for (const it of items) {
      if (it.kind === 'star') one.rows.push({ qual: it.qual ?? [], use: 'value' });
      else merge(one, it.expr);
    }
    items = [{ kind: 'expr', name: '?column?', certain: false, expr: one }];
  }
  const from: From[] = [];
  let group = 0;
  for (const f of list(node.from)) {
    const item = fromItem(f);
    // USING / NATURAL: nsp flattens joins, so the group is this item and every one before it (more, never fewer)
    if (isObj(f) && (list(f.using).length > 0 || /natural/i.test(String(f.join ?? '')))) {
      group++;
      for (const p of from) p.group = group;
      item.group = group;
    }
    from.push(item);
  }
  return { kind: 'select', items, from };
}

function merge(into: Expr, e: Expr): void {
  into.refs.push(...e.refs);
  into.rows.push(...e.rows);
  into.subs.push(...e.subs);
  into.keys.push(...e.keys);
  into.calls.push(...e.calls);
  if (e.opaque) into.opaque = true;
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
  if (sub !== undefined) return { kind: 'query', query: query(sub), ...a, ...(v.lateral === true || /lateral/i.test(String(v.prefix ?? '')) ? { lateral: true } : {}) };
  if (v.type === 'unnest') return { kind: 'func', expr: expr(v.expr, 'value'), ...a, fns: ['unnest'] };
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
    const ex = expr(v.expr, 'derived');
    ex.opaque = true;
    return { kind: 'func', expr: ex, ...a };
  }
  return { kind: 'opaque', ...a };
}

function isCount(node: Node): boolean {
  return functionName(node).toUpperCase() === 'COUNT';
}

function functionName(node: Node): string {
  if (typeof node.name === 'string') return node.name;
  if (!isObj(node.name)) return '';
  const parts = [nameOf(node.name.schema), ...list(node.name.name).map(nameOf)];
  return parts.filter((p): p is string => p !== undefined).join('.');
}

/** A string literal's text, or undefined. */
function constText(node: unknown): string | undefined {
  if (!isObj(node)) return undefined;
  if (node.type === 'cast') return constText(node.expr);
  if (typeof node.type === 'string' && (node.type === 'string' || node.type.endsWith('_string')) && typeof node.value === 'string') return node.value;
  return undefined;
}

const isNumber = (node: unknown): boolean => isObj(node) && node.type === 'number';

/** The arguments of a call. */
function argsOf(node: Node): unknown[] {
  const a = node.args;
  if (Array.isArray(a)) return a;
  if (isObj(a)) {
    if (a.type === 'expr_list') return list(a.value);
    if (a.expr !== undefined) return isObj(a.expr) && a.expr.type === 'expr_list' ? list(a.expr.value) : [a.expr];
  }
  return [];
}

/** A path argument's steps (its filters' keys into `tested`); undefined when not a readable constant. */
function pathArg(node: unknown, tested: string[]): string[] | undefined {
  const text = constText(node);
  if (text === undefined) return undefined;
  const p = parseJsonPath(text);
  if (!p) return undefined;
  tested.push(...p.tested);
  return p.steps;
}

/** BigQuery subscripts (`payload['contact']`, `arr[OFFSET(1)]`): their keys; undefined when computed. */
function offsetKeys(offsets: unknown[]): string[] | undefined {
  const keys: string[] = [];
  for (const o of offsets) {
    const v = isObj(o) ? o.value : undefined;
    const text = constText(v);
    if (text !== undefined) keys.push(text);
    else if (isNumber(v) || (isObj(v) && v.type === 'function' && /^(safe_)?(offset|ordinal)$/i.test(functionName(v)))) keys.push(INDEX);
    else return undefined;
  }
  return keys;
}

const TEST_OPERATORS = new Set([
  '=', '!=', '<>', '<', '>', '<=', '>=', '<=>', 'LIKE', 'NOT LIKE', 'ILIKE', 'NOT ILIKE', 'REGEXP', 'NOT REGEXP', 'RLIKE', 'NOT RLIKE',
  'IN', 'NOT IN', 'BETWEEN', 'NOT BETWEEN', 'IS', 'IS NOT', 'AND', 'OR', 'XOR', '&&', '||-or', 'MEMBER OF', 'SOUNDS LIKE', 'IS DISTINCT FROM', 'IS NOT DISTINCT FROM',
]);

type Task = { node: unknown; use: Use };

/** A read of `keys` inside the document `doc` (undefined: not known), unwinding reads of reads. */
function readInside(doc: unknown, keys: string[] | undefined, use: Use, out: Expr, stack: Task[]): void {
  let node = doc;
  let path = keys;
  const tested: string[] = [];
  for (;;) {
    const inner = innerRead(node, tested);
    if (!inner) break;
    path = inner.keys && path ? [...inner.keys, ...path] : undefined;
    node = inner.doc;
  }
  out.keys.push(...tested);
  if (path === undefined) out.opaque = true;
  if (isObj(node) && node.type === 'column_ref' && nameOf(node.column) !== '*') {
    const { ref, offsets } = columnPath(node);
    const all = offsets && path ? [...offsets, ...path] : undefined;
    if (all === undefined) out.opaque = true;
    out.refs.push({ path: ref, use, ...(all?.length ? { keys: all } : {}) });
    return;
  }
  if (isObj(node) && isObj(node.ast)) {
    out.subs.push({ query: query(node.ast), use, ...(path?.length ? { keys: path } : {}) });
    return;
  }
  for (const k of path ?? []) if (k !== INDEX) out.keys.push(k);
  if (use === 'derived' && path?.length) out.opaque = true;
  stack.push({ node, use });
}

/** A column reference's name path (BigQuery's struct and JSON fields included) and its subscripts' keys. */
function columnPath(node: Node): { ref: NamePath; offsets: string[] | undefined } {
  const ref = [...refPath(node), ...list(node.subFields).map(nameOf).filter((n): n is string => n !== undefined)];
  const offsets = isObj(node.column) && Array.isArray(node.column.offset) ? offsetKeys(node.column.offset) : [];
  return { ref, offsets };
}

function innerRead(node: unknown, tested: string[]): { doc: unknown; keys: string[] | undefined } | undefined {
  if (!isObj(node)) return undefined;
  if (node.type === 'binary_expr' && (node.operator === '->' || node.operator === '->>')) {
    // MySQL: the right side is a path
    return { doc: node.left, keys: pathArg(node.right, tested) };
  }
  if (node.type === 'function') {
    const shape = functionShape(functionName(node));
    const args = argsOf(node);
    if (shape?.kind === 'path' && !shape.scalar) {
      const paths = shape.paths === 'rest' ? args.slice(shape.doc + 1) : shape.paths.map((i) => args[i]);
      if (paths.length === 1) return { doc: args[shape.doc], keys: pathArg(paths[0], tested) };
    }
    if (shape?.kind === 'keys') {
      const keys: string[] | undefined = [];
      for (const a of args.slice(shape.doc + 1)) {
        const t = constText(a);
        if (t !== undefined) keys.push(t);
        else if (isNumber(a)) keys.push(INDEX);
        else return { doc: args[shape.doc], keys: undefined };
      }
      return { doc: args[shape.doc], keys };
    }
    if (shape?.kind === 'elements') return { doc: args[shape.doc], keys: [INDEX] };
  }
  return undefined;
}

/** An expression's column references (with their uses and paths), whole-row references, subqueries and calls. */
function expr(node: unknown, use: Use = 'value', out: Expr = emptyExpr()): Expr {
  if (out.refs.length + out.rows.length + out.subs.length === 0) {
    out.direct = isDirect(node);
    if (isObj(node) && (node.type === 'function' || node.type === 'aggr_func')) {
      const name = functionName(node);
      const kind = functionShape(name)?.kind;
      out.built = looksLikeJson(name) && (kind === 'keep' || kind === 'object' || kind === 'modify');
    }
  }
  const stack: Task[] = [{ node, use }];
  for (let t = stack.pop(); t !== undefined; t = stack.pop()) visit(t.node, t.use, stack, out);
  return out;
}

function isDirect(node: unknown): boolean {
  for (let n = node; ; ) {
    if (!isObj(n)) return false;
    if (n.type === 'column_ref') return nameOf(n.column) !== '*';
    if (n.type === 'binary_expr' && (n.operator === '->' || n.operator === '->>')) {
      n = n.left;
      continue;
    }
    return false;
  }
}

function visit(n: unknown, u: Use, stack: Task[], out: Expr): void {
  const push = (node: unknown, inner: 'keep' | 'derive' | 'test' | 'leaf'): void => {
    if (node !== undefined && node !== null) stack.push({ node, use: within(u, inner) });
  };
  if (Array.isArray(n)) {
    for (const c of n) stack.push({ node: c, use: u });
    return;
  }
  if (!isObj(n)) return;
  if (isObj(n.ast)) {
    out.subs.push({ query: query(n.ast), use: u });
    return;
  }
  switch (n.type) {
    case 'select':
      out.subs.push({ query: query(n), use: u });
      return;
    case 'column_ref': {
      if (nameOf(n.column) === '*') {
        out.rows.push({ qual: refPath(n).slice(0, -1), use: u });
        return;
      }
      readInside(n, [], u, out, stack);
      return;
    }
    case 'star':
      out.rows.push({ qual: [], use: u });
      return;
    case 'expr_list':
      for (const c of list(n.value)) stack.push({ node: c, use: u });
      return;
    case 'binary_expr': {
      const op = typeof n.operator === 'string' ? n.operator.toUpperCase() : '';
      if (op === '->' || op === '->>') {
        readInside(n, [], u, out, stack);
        return;
      }
      const test = TEST_OPERATORS.has(op);
      push(n.left, test ? 'test' : 'derive');
      push(n.right, test ? 'test' : 'derive');
      return;
    }
    case 'unary_expr':
      push(n.expr, n.operator === 'NOT' || n.operator === '!' || n.operator === 'EXISTS' ? 'test' : 'derive');
      return;
    case 'case':
      push(n.expr, 'test');
      for (const w of list(n.args)) {
        if (!isObj(w)) continue;
        push(w.cond, 'test');
        push(w.result, 'keep');
      }
      return;
    case 'cast': {
      const target = list(n.target)[0];
      const type = isObj(target) && typeof target.dataType === 'string' ? target.dataType.replace(/\(.*$/, '').trim() : '';
      if (/^json/i.test(type) && !isDirect(n.expr) && isObj(n.expr) && !String(n.expr.type ?? '').endsWith('string')) out.reparsed = true;
      push(n.expr, castUse(type, /\[\]|^array/i.test(type)));
      return;
    }
    case 'aggr_func':
    case 'function': {
      const name = functionName(n);
      out.calls.push(name.toLowerCase());
      // count(...) returns a number; an aggregate's ORDER BY and OVER order rows, they are not values
      if (isCount(n)) return;
      visitCall(name, argsOf(n), u, stack, out, push);
      return;
    }
    case 'struct':
    case 'array':
      push(n.expr_list, 'keep');
      return;
    case 'single_quote_string':
    case 'double_quote_string':
    case 'number':
    case 'bool':
    case 'null':
      return;
    default:
      for (const [k, child] of Object.entries(n)) {
        if (k === 'over' || k === 'name' || k === 'orderby') continue;
        if (child !== null && typeof child === 'object') push(child, 'derive');
      }
  }
}

function visitCall(name: string, args: unknown[], u: Use, stack: Task[], out: Expr, push: (node: unknown, inner: 'keep' | 'derive' | 'test' | 'leaf') => void): void {
  const shape = functionShape(name);
  switch (shape?.kind) {
    case 'keys':
    case 'elements':
      readInside({ type: 'function', name, args: { type: 'expr_list', value: args } }, [], u, out, stack);
      return;
    case 'path': {
      // a path argument left out (BigQuery JSON_VALUE(doc)): the root
      const paths: unknown[] = (shape.paths === 'rest' ? args.slice(shape.doc + 1) : shape.paths.map((i) => args[i])).filter((a) => a !== undefined);
      const use = shape.scalar ? within(u, 'leaf') : u;
      if (paths.length === 0) readInside(args[shape.doc], [], use, out, stack); // JSON_VALUE(doc): the root
      for (const p of paths) readInside(args[shape.doc], pathArg(p, out.keys), use, out, stack);
      args.forEach((a, i) => {
        if (i !== shape.doc && !paths.includes(a)) push(a, 'test');
      });
      return;
    }
    case 'unpack':
      out.opaque = true;
      push(args, 'derive');
      return;
    case 'test':
      push(args, 'test');
      return;
    case 'keep':
      push(args, 'keep');
      return;
    case 'object':
      args.forEach((a, i) => push(a, i % 2 === 0 ? 'derive' : 'keep'));
      return;
    case 'modify': {
      const isPath = (i: number): boolean => i > 0 && (shape.paths === 'rest' ? true : shape.paths === 'odd' ? i % 2 === 1 : shape.paths.includes(i));
      args.forEach((a, i) => push(a, isPath(i) ? 'test' : 'keep'));
      return;
    }
    case 'ifelse':
      args.forEach((a, i) => push(a, i === 0 ? 'test' : 'keep'));
      return;
    case 'first':
      args.forEach((a, i) => push(a, i === 0 ? 'keep' : 'test'));
      return;
    case 'scalar':
      push(args, 'leaf');
      return;
    default:
      if (looksLikeJson(name)) {
        for (const a of args) {
          const text = constText(a);
          if (text === undefined || !/^\s*(lax\s+|strict\s+)?\$/i.test(text)) continue;
          const p = parseJsonPath(text);
          if (!p) out.opaque = true;
          else out.keys.push(...p.steps.filter((k) => k !== INDEX), ...p.tested);
        }
      }
      push(args, 'derive');
  }
}

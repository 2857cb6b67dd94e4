/**
 * PostgreSQL statements into the lineage model (lineage.ts), on PostgreSQL's own parser
 * (libpg-query, WASM). Also used for Trino (ANSI quoting, the same shape of query), and for
 * MySQL and BigQuery text when their own grammars refuse it (see lineage-nsp.ts).
 *
 * Expressions are walked generically, so a node kind not named here still gives up its column
 * references (as derived values); the walk carries how each part is used (json.ts `Use`): kept
 * whole, derived, only tested, or cast to a scalar. Only the parts that carry no values
 * (count's arguments, FILTER, OVER, an aggregate's ORDER BY) are skipped on purpose.
 *
 * Reads inside documents become paths on the column they start from: `->`, `->>`, `#>`, `#>>`,
 * subscripts (`payload['contact']['email']`), jsonb_extract_path, the jsonpath functions,
 * JSON_VALUE / JSON_QUERY / JSON_TABLE, and MySQL's JSON_EXTRACT and `->` (whose right side is a
 * path, in MySQL text). A key that is not a constant, or a path this reader cannot follow
 * (json.ts), is opaque. A FROM item of a kind not named here is an opaque relation. Anything
 * that is not exactly one SELECT statement is an opaque query.
 */
import { loadModule, parseSync } from 'libpg-query';
import type { Dialect } from '../../../protocol/schemas/common.js';
import { parserBroke } from '../sql/parsers/failure.js';
import { isPgOperator } from './functions.js';
import { castUse, functionShape, INDEX, looksLikeJson, parseJsonPath, parsePgTextArray, within, type Use } from './json.js';
import { emptyExpr, OPAQUE_QUERY, type Expr, type From, type FuncColumn, type Item, type Query, type With } from './lineage.js';

let loading: Promise<void> | undefined;
let ready = false;

/** Load the WASM parser once. */
export function preparePgParser(): Promise<void> {
  loading ??= loadModule().then(() => {
    ready = true;
  });
  return loading;
}

type Node = Record<string, unknown>;

const isObj = (v: unknown): v is Node => v !== null && typeof v === 'object' && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** `{ SelectStmt: {...} }` → ['SelectStmt', {...}]; a plain structure (`{ raw_expr, format }`) is no node */
function entry(node: unknown): [string, Node] | undefined {
  if (!isObj(node)) return undefined;
  const keys = Object.keys(node);
  if (keys.length !== 1) return undefined;
  const k = keys[0]!;
  const body = node[k];
  return k.charCodeAt(0) >= 65 && k.charCodeAt(0) <= 90 && isObj(body) ? [k, body] : undefined;
}

/** The sval of a `{ String: { sval } }` node. */
function str(node: unknown): string | undefined {
  const e = entry(node);
  return e && e[0] === 'String' && typeof e[1].sval === 'string' ? e[1].sval : undefined;
}

function strings(v: unknown): string[] {
  return list(v).map(str).filter((s): s is string => s !== undefined);
}

/** How the text was written: MySQL and BigQuery text (translated) writes JSON paths where PostgreSQL writes keys. */
interface Cx {
  dialect: Dialect;
  /** USING / NATURAL joins seen so far (their group ids) */
  groups: number;
}

/** The statement as a query; OPAQUE_QUERY when it does not parse or is not one SELECT. */
export function pgQuery(sql: string, dialect: Dialect = 'postgresql'): Query {
  return pgQueryOrUndefined(sql, dialect) ?? OPAQUE_QUERY;
}

/**
 * The lineage model of one statement PostgreSQL's parser already read (`stmts[0].stmt` of
 * parseSync): the executor's guard hands over its own parse (executor/guard/job.ts), so a
 * PostgreSQL statement is parsed once for both.
 */
export function pgQueryOfStatement(stmt: unknown, dialect: Dialect = 'postgresql'): Query {
  return statement(stmt, { dialect, groups: 0 });
}

/** Like pgQuery, but undefined when the text does not parse (so another grammar may try). */
export function pgQueryOrUndefined(sql: string, dialect: Dialect = 'postgresql'): Query | undefined {
  if (!ready) throw new Error('the PostgreSQL parser is not loaded (call preparePgParser first)');
  let stmts: unknown[];
  try {
    stmts = list((parseSync(sql) as { stmts?: unknown[] }).stmts);
  } catch (err) {
    if (parserBroke(err)) throw err; // the parser itself broke: its worker is replaced (isolated.ts)
    return undefined;
  }
  if (stmts.length !== 1) return OPAQUE_QUERY;
  return statement((stmts[0] as { stmt?: unknown }).stmt, { dialect, groups: 0 });
}

function statement(node: unknown, cx: Cx): Query {
  const e = entry(node);
  return e && e[0] === 'SelectStmt' ? select(e[1], cx) : OPAQUE_QUERY;
}

function withClause(w: unknown, cx: Cx): With | undefined {
  if (!isObj(w)) return undefined;
  const ctes = list(w.ctes).map((c) => {
    const e = entry(c);
    const body = e && e[0] === 'CommonTableExpr' ? e[1] : {};
    const cols = strings(body.aliascolnames);
    return { name: typeof body.ctename === 'string' ? body.ctename : '', ...(cols.length ? { cols } : {}), query: statement(body.ctequery, cx) };
  });
  return { recursive: w.recursive === true, ctes };
}

/** A SelectStmt body (set-operation branches come without the `SelectStmt` wrapper). */
function select(s: Node, cx: Cx): Query {
  const w = withClause(s.withClause, cx);
  const withPart = w ? { with: w } : {};
  const op = s.op;
  if (op !== undefined && op !== 'SETOP_NONE') {
    const branches: Query[] = [];
    for (const side of [s.larg, s.rarg]) {
      if (!isObj(side)) branches.push(OPAQUE_QUERY);
      else if (side.op !== undefined && side.op !== 'SETOP_NONE' && !side.withClause) {
        const inner = select(side, cx);
        if (inner.kind === 'setop') branches.push(...inner.branches);
        else branches.push(inner);
      } else branches.push(select(side, cx));
    }
    return { kind: 'setop', ...withPart, branches };
  }
  if (s.valuesLists !== undefined) {
    const rows = list(s.valuesLists).map((row) => {
      const e = entry(row);
      return list(e && e[0] === 'List' ? e[1].items : []).map((v) => expr(v, cx));
    });
    return { kind: 'values', ...withPart, rows };
  }
  const items: Item[] = list(s.targetList).map((t) => target(t, cx));
  const from: From[] = list(s.fromClause).flatMap((f) => fromItem(f, cx));
  return { kind: 'select', ...withPart, items, from };
}

function target(node: unknown, cx: Cx): Item {
  const e = entry(node);
  const rt = e && e[0] === 'ResTarget' ? e[1] : {};
  const val = rt.val;
  const ve = entry(val);
  if (ve && ve[0] === 'ColumnRef') {
    const fields = list(ve[1].fields);
    const lastField = entry(fields.at(-1));
    if (lastField && lastField[0] === 'A_Star') {
      const qual = strings(fields.slice(0, -1));
      return qual.length ? { kind: 'star', qual } : { kind: 'star' };
    }
  }
  const alias = typeof rt.name === 'string' ? rt.name : undefined;
  const [name, certain] = alias !== undefined ? [alias, true] : defaultName(val);
  return { kind: 'expr', name, certain, expr: expr(val, cx) };
}

/** PostgreSQL's name for an unaliased output column; certain only for a plain column reference. */
function defaultName(node: unknown): [string, boolean] {
  const e = entry(node);
  if (!e) return ['?column?', false];
  const [kind, body] = e;
  switch (kind) {
    case 'ColumnRef': {
      const last = str(list(body.fields).at(-1));
      return last !== undefined ? [last, true] : ['?column?', false];
    }
    case 'FuncCall':
      return [strings(body.funcname).at(-1) ?? '?column?', false];
    case 'TypeCast': {
      const inner = entry(body.arg);
      if (inner && (inner[0] === 'ColumnRef' || inner[0] === 'FuncCall')) return [defaultName(body.arg)[0], false];
      const typeName = isObj(body.typeName) ? strings(body.typeName.names).at(-1) : undefined;
      return [typeName ?? '?column?', false];
    }
    case 'A_Indirection':
      return [strings(body.indirection).at(-1) ?? defaultName(body.arg)[0], false];
    case 'CaseExpr':
      return ['case', false];
    case 'CoalesceExpr':
      return ['coalesce', false];
    case 'MinMaxExpr':
      return [body.op === 'IS_LEAST' ? 'least' : 'greatest', false];
    case 'A_ArrayExpr':
      return ['array', false];
    case 'RowExpr':
      return ['row', false];
    default:
      return ['?column?', false];
  }
}

const JSON_OPERATORS = new Set(['->', '->>', '#>', '#>>']);
/** Operators whose result only says something about their operands (a comparison, a match, a containment test). */
const TEST_OPERATORS = new Set([
  '=', '<>', '!=', '<', '>', '<=', '>=', '~~', '~~*', '!~~', '!~~*', '~', '~*', '!~', '!~*',
  '?', '?|', '?&', '@>', '<@', '@?', '@@', '@@@', '&&',
]);
const TEST_KINDS = new Set([
  'AEXPR_OP_ANY', 'AEXPR_OP_ALL', 'AEXPR_DISTINCT', 'AEXPR_NOT_DISTINCT', 'AEXPR_IN', 'AEXPR_LIKE', 'AEXPR_ILIKE', 'AEXPR_SIMILAR',
  'AEXPR_BETWEEN', 'AEXPR_NOT_BETWEEN', 'AEXPR_BETWEEN_SYM', 'AEXPR_NOT_BETWEEN_SYM',
]);

/** The functions whose arguments are not sources of the value (count returns a number). */
function isCount(funcname: unknown): boolean {
  const names = strings(funcname).map((n) => n.toLowerCase());
  return (names.length === 1 && names[0] === 'count') || (names.length === 2 && names[0] === 'pg_catalog' && names[1] === 'count');
}

/** A function's name as written, lower-cased (`upper`, `pg_catalog.upper`). */
function funcName(funcname: unknown): string {
  return strings(funcname).map((n) => n.toLowerCase()).join('.');
}

/** The node under casts to text or JSON and COLLATE (a constant written `'a'::text`). */
function unwrap(node: unknown): unknown {
  for (let n = node; ; ) {
    const e = entry(n);
    if (e && e[0] === 'TypeCast') n = e[1].arg;
    else if (e && e[0] === 'CollateClause') n = e[1].arg;
    else return n;
  }
}

/** A string constant's text, or undefined. */
function constText(node: unknown): string | undefined {
  const e = entry(unwrap(node));
  if (!e || e[0] !== 'A_Const') return undefined;
  const s = e[1].sval;
  return isObj(s) && typeof s.sval === 'string' ? s.sval : undefined;
}

function isConstInt(node: unknown): boolean {
  const e = entry(unwrap(node));
  return !!e && e[0] === 'A_Const' && isObj(e[1].ival);
}

/** A path written as a string: a path in MySQL/BigQuery/Trino text or when asked to, else one key. */
function keysOfString(text: string, cx: Cx, asPath: boolean): string[] | undefined {
  if (asPath || (cx.dialect !== 'postgresql' && /^\s*(lax\s+|strict\s+)?\$/i.test(text))) return parseJsonPath(text)?.steps;
  return [text];
}

/** The keys the right side of a JSON operator reads; undefined when they are not constants. */
function operatorKeys(op: string, right: unknown, cx: Cx): string[] | undefined {
  if (op === '->' || op === '->>') {
    const text = constText(right);
    if (text !== undefined) return keysOfString(text, cx, false);
    return isConstInt(right) ? [INDEX] : undefined;
  }
  // #> / #>>: a text array
  const text = constText(right);
  if (text !== undefined) return parsePgTextArray(text);
  const e = entry(unwrap(right));
  if (e && e[0] === 'A_ArrayExpr') {
    const out: string[] = [];
    for (const el of list(e[1].elements)) {
      const t = constText(el);
      if (t !== undefined) out.push(t);
      else if (isConstInt(el)) out.push(INDEX);
      else return undefined;
    }
    return out;
  }
  return undefined;
}

/** A JSON operator's symbol (`->`, also written `OPERATOR(pg_catalog.->)`), or undefined (Trino's `x -> ...` is a lambda). */
function jsonOperator(body: Node, cx: Cx): string | undefined {
  if (body.kind !== undefined && body.kind !== 'AEXPR_OP') return undefined;
  const op = strings(body.name);
  const symbol = op.length === 1 ? op[0] : op.length === 2 && op[0]!.toLowerCase() === 'pg_catalog' ? op[1] : undefined;
  if (cx.dialect === 'trino') return undefined;
  return symbol !== undefined && JSON_OPERATORS.has(symbol) ? symbol : undefined;
}

/** The keys of subscripts and fields (`x['a'][0]`, `(x).f`): undefined for a computed subscript. */
function indirectionKeys(items: unknown[]): { keys: string[] | undefined; fields: boolean } {
  const keys: string[] = [];
  let fields = false;
  for (const i of items) {
    const s = str(i);
    if (s !== undefined) {
      keys.push(s);
      fields = true;
      continue;
    }
    const e = entry(i);
    if (!e || e[0] !== 'A_Indices') return { keys: undefined, fields };
    if (e[1].is_slice === true) {
      keys.push(INDEX);
      continue;
    }
    const text = constText(e[1].uidx);
    if (text !== undefined) keys.push(text);
    else if (isConstInt(e[1].uidx)) keys.push(INDEX);
    else return { keys: undefined, fields };
  }
  return { keys, fields };
}

type Task = { node: unknown; use: Use };

/**
 * A read inside a document: the document node, the keys read in it (undefined: not known), how
 * the value read is used. Unwinds chains (`payload->'a'->>'b'`, `jsonb_extract_path(x->'a', 'b')`)
 * down to the column, subquery or expression the document comes from.
 */
function readInside(doc: unknown, keys: string[] | undefined, use: Use, out: Expr, stack: Task[], cx: Cx): void {
  let node = doc;
  let path = keys;
  const tested: string[] = [];
  for (;;) {
    const inner = innerRead(node, cx, tested);
    if (!inner) break;
    path = inner.keys && path ? [...inner.keys, ...path] : undefined;
    node = inner.doc;
  }
  for (const k of tested) out.keys.push(k);
  // a key this reader cannot know, in a document made of data (a constant one holds nothing to hide)
  if (path === undefined && readsData(node)) out.opaque = true;
  const e = entry(node);
  if (e && e[0] === 'ColumnRef') {
    const fields = list(e[1].fields);
    const last = entry(fields.at(-1));
    if (!(last && last[0] === 'A_Star')) {
      out.refs.push({ path: strings(fields), use, ...(path?.length ? { keys: path } : {}) });
      return;
    }
  }
  if (e && e[0] === 'SubLink' && e[1].subLinkType === 'EXPR_SUBLINK') {
    out.subs.push({ query: statement(e[1].subselect, cx), use, ...(path?.length ? { keys: path } : {}) });
    return;
  }
  // a document an expression makes: the keys are names without a table
  for (const k of path ?? []) if (k !== INDEX) out.keys.push(k);
  // a part of it turned into another value may hold any key below it
  if (use === 'derived' && path?.length && readsData(node)) out.opaque = true;
  stack.push({ node, use });
}

/** Whether an expression reads anything stored (a column, a subquery), rather than only constants. */
function readsData(node: unknown): boolean {
  const stack: unknown[] = [node];
  while (stack.length) {
    const n = stack.pop();
    if (Array.isArray(n)) {
      stack.push(...n);
      continue;
    }
    if (!isObj(n)) continue;
    for (const [k, v] of Object.entries(n)) {
      if (k === 'ColumnRef' || k === 'SubLink' || k === 'SelectStmt') return true;
      if (v !== null && typeof v === 'object') stack.push(v);
    }
  }
  return false;
}

/** When `node` itself reads inside a document: that document and the keys (undefined: unknown). */
function innerRead(node: unknown, cx: Cx, tested: string[]): { doc: unknown; keys: string[] | undefined } | undefined {
  const e = entry(node);
  if (!e) return undefined;
  const [kind, body] = e;
  if (kind === 'A_Expr') {
    const op = jsonOperator(body, cx);
    return op ? { doc: body.lexpr, keys: operatorKeys(op, body.rexpr, cx) } : undefined;
  }
  if (kind === 'A_Indirection') {
    const { keys, fields } = indirectionKeys(list(body.indirection));
    // PostgreSQL: `(x).f` may be a call f(x): not a read inside x
    if (fields && cx.dialect === 'postgresql') return undefined;
    return { doc: body.arg, keys };
  }
  if (kind === 'TypeCast' && isObj(body.typeName) && castUse(strings(body.typeName.names).at(-1) ?? '', list(body.typeName.arrayBounds).length > 0) === 'keep') {
    // (payload->>'contact')::jsonb->>'email': the same document
    return { doc: body.arg, keys: [] };
  }
  if (kind === 'FuncCall') {
    const shape = functionShape(funcName(body.funcname));
    const args = list(body.args).map(namedArg);
    if (shape?.kind === 'keys') return { doc: args[shape.doc], keys: constKeys(args.slice(shape.doc + 1), body.func_variadic === true) };
    if (shape?.kind === 'elements') return { doc: args[shape.doc], keys: [INDEX] };
    if (shape?.kind === 'path' && !shape.scalar) {
      const paths = shape.paths === 'rest' ? args.slice(shape.doc + 1) : shape.paths.map((i) => args[i]);
      // JSON_EXTRACT(doc, p1, p2) returns an array of both: not one read
      if (paths.length === 1) return { doc: args[shape.doc], keys: pathArg(paths[0], tested) };
    }
    return undefined;
  }
  if (kind === 'JsonFuncExpr' && body.op === 'JSON_QUERY_OP') {
    const p = pathArg(body.pathspec, tested);
    return { doc: isObj(body.context_item) ? body.context_item.raw_expr : undefined, keys: p };
  }
  return undefined;
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

/** Constant keys (jsonb_extract_path's); undefined when one is not a constant. */
function constKeys(args: unknown[], variadic: boolean): string[] | undefined {
  const items = variadic && args.length === 1 ? elementsOf(args[0]) : args;
  if (!items) return undefined;
  const out: string[] = [];
  for (const a of items) {
    const t = constText(a);
    if (t !== undefined) out.push(t);
    else if (isConstInt(a)) out.push(INDEX);
    else return undefined;
  }
  return out;
}

function elementsOf(node: unknown): unknown[] | undefined {
  const e = entry(unwrap(node));
  if (e && e[0] === 'A_ArrayExpr') return list(e[1].elements);
  const text = constText(node);
  const arr = text !== undefined ? parsePgTextArray(text) : undefined;
  return arr?.map((s) => ({ A_Const: { sval: { sval: s } } }));
}

/** `f(a => x)`: the argument's value. */
function namedArg(node: unknown): unknown {
  const e = entry(node);
  return e && e[0] === 'NamedArgExpr' ? e[1].arg : node;
}

const CONSTRUCTORS = new Set(['JsonObjectConstructor', 'JsonArrayConstructor', 'JsonObjectAgg', 'JsonArrayAgg', 'JsonArrayQueryConstructor']);

/** Whether the value is a document the statement builds: a JSON constructor or aggregate at the top (under casts to text or JSON). */
function isBuilt(node: unknown): boolean {
  const e = entry(unwrap(node));
  if (!e) return false;
  if (CONSTRUCTORS.has(e[0])) return true;
  if (e[0] !== 'FuncCall') return false;
  const name = funcName(e[1].funcname);
  const kind = functionShape(name)?.kind;
  return looksLikeJson(name) && (kind === 'keep' || kind === 'object' || kind === 'modify');
}

/** Whether the value is the column's own (a plain reference, or a JSON read on one). */
function isDirect(node: unknown, cx: Cx): boolean {
  for (let n = node; ; ) {
    const e = entry(n);
    if (!e) return false;
    const [kind, body] = e;
    if (kind === 'ColumnRef') {
      const last = entry(list(body.fields).at(-1));
      return !(last && last[0] === 'A_Star');
    }
    if (kind === 'A_Expr' && jsonOperator(body, cx)) {
      n = body.lexpr;
      continue;
    }
    if (kind === 'A_Indirection' && !indirectionKeys(list(body.indirection)).fields) {
      n = body.arg;
      continue;
    }
    if (kind === 'A_Indirection' && cx.dialect !== 'postgresql') {
      n = body.arg;
      continue;
    }
    return false;
  }
}

/** An expression's column references (with their uses and paths), whole-row references, subqueries and calls. */
export function expr(node: unknown, cx: Cx, use: Use = 'value', out: Expr = emptyExpr()): Expr {
  if (out.refs.length + out.rows.length + out.subs.length === 0) {
    out.direct = isDirect(node, cx);
    out.built = isBuilt(node);
  }
  const stack: Task[] = [{ node, use }];
  for (let t = stack.pop(); t !== undefined; t = stack.pop()) visit(t.node, t.use, stack, out, cx);
  return out;
}

function visit(n: unknown, u: Use, stack: Task[], out: Expr, cx: Cx): void {
  const push = (node: unknown, inner: 'keep' | 'derive' | 'test' | 'leaf'): void => {
    if (node !== undefined && node !== null) stack.push({ node, use: within(u, inner) });
  };
  if (Array.isArray(n)) {
    for (const c of n) stack.push({ node: c, use: u });
    return;
  }
  const e = entry(n);
  if (!e) {
    if (!isObj(n)) return;
    // a plain structure (not a node): a JSON value expression holds its value as it is; otherwise derived
    if (n.raw_expr !== undefined) push(n.raw_expr, 'keep');
    else for (const v of Object.values(n)) if (v !== null && typeof v === 'object') push(v, 'derive');
    return;
  }
  const [kind, body] = e;
  switch (kind) {
    case 'ColumnRef': {
      const fields = list(body.fields);
      const last = entry(fields.at(-1));
      if (last && last[0] === 'A_Star') out.rows.push({ qual: strings(fields.slice(0, -1)), use: u });
      else out.refs.push({ path: strings(fields), use: u });
      return;
    }
    case 'A_Const':
    case 'ParamRef':
    case 'SQLValueFunction':
    case 'SetToDefault':
      return;
    case 'TypeCast': {
      const tn = isObj(body.typeName) ? body.typeName : {};
      const type = (strings(tn.names).at(-1) ?? '').toLowerCase();
      // text made from stored values, parsed into a document: its keys are whatever the text said
      if ((type === 'json' || type === 'jsonb') && !isDirect(body.arg, cx) && entry(body.arg)?.[0] !== 'A_Const' && readsData(body.arg)) out.reparsed = true;
      push(body.arg, castUse(type, list(tn.arrayBounds).length > 0));
      return;
    }
    case 'CollateClause':
      push(body.arg, 'keep');
      return;
    case 'A_Expr': {
      const op = strings(body.name);
      const opKind = body.kind ?? 'AEXPR_OP';
      // a user-defined operator runs a function of its own: its value cannot be traced
      if (op.length > 0 && (opKind === 'AEXPR_OP' || opKind === 'AEXPR_OP_ANY' || opKind === 'AEXPR_OP_ALL') && !isPgOperator(op)) out.opaque = true;
      const symbol = op.at(-1) ?? '';
      if (jsonOperator(body, cx)) {
        readInside(n, [], u, out, stack, cx);
        return;
      }
      if (opKind === 'AEXPR_NULLIF') {
        push(body.lexpr, 'keep');
        push(body.rexpr, 'test');
        return;
      }
      const test = TEST_KINDS.has(opKind as string) || (opKind === 'AEXPR_OP' && TEST_OPERATORS.has(symbol));
      if (opKind === 'AEXPR_OP' && (symbol === '#-' || symbol === '-') && op.length === 1 && body.lexpr !== undefined) {
        push(body.lexpr, 'keep');
        push(body.rexpr, 'test');
        return;
      }
      // `||` joins texts, arrays or documents: each side is in the result as it was
      const inner = test ? 'test' : symbol === '||' && opKind === 'AEXPR_OP' ? 'keep' : 'derive';
      push(body.lexpr, inner);
      push(body.rexpr, inner);
      return;
    }
    case 'BoolExpr':
    case 'NullTest':
    case 'BooleanTest':
    case 'GroupingFunc':
    case 'JsonIsPredicate':
      for (const v of Object.values(body)) if (v !== null && typeof v === 'object') push(v, 'test');
      return;
    case 'CaseExpr':
      push(body.arg, 'test');
      for (const w of list(body.args)) {
        const we = entry(w);
        if (!we) continue;
        push(we[1].expr, 'test');
        push(we[1].result, 'keep');
      }
      push(body.defresult, 'keep');
      return;
    case 'CoalesceExpr':
    case 'MinMaxExpr':
      push(body.args, 'keep');
      return;
    case 'SubLink': {
      const t = body.subLinkType;
      const q = statement(body.subselect, cx);
      if (t === 'EXPR_SUBLINK') out.subs.push({ query: q, use: u });
      else if (t === 'EXISTS_SUBLINK' || t === 'ANY_SUBLINK' || t === 'ALL_SUBLINK' || t === 'ROWCOMPARE_SUBLINK') out.subs.push({ query: q, use: within(u, 'test') });
      else out.subs.push({ query: q, use: within(u, 'derive') });
      push(body.testexpr, 'test');
      return;
    }
    case 'SelectStmt':
      out.subs.push({ query: select(body, cx), use: within(u, 'derive') });
      return;
    case 'A_Indirection': {
      const { keys, fields } = indirectionKeys(list(body.indirection));
      if (fields && cx.dialect === 'postgresql') {
        // (x).f: a composite's field, or f(x) in attribute notation: a derived value, the field a name
        for (const k of keys ?? []) if (k !== INDEX) out.keys.push(k);
        if (!keys) out.opaque = true;
        push(body.arg, 'derive');
        return;
      }
      readInside(n, [], u, out, stack, cx);
      return;
    }
    case 'FuncCall':
      visitCall(body, u, stack, out, cx, push);
      return;
    case 'JsonFuncExpr': {
      const op = body.op;
      out.calls.push(op === 'JSON_VALUE_OP' ? 'json_value' : op === 'JSON_QUERY_OP' ? 'json_query' : op === 'JSON_EXISTS_OP' ? 'json_exists' : 'json_table');
      const doc = isObj(body.context_item) ? body.context_item.raw_expr : undefined;
      push(body.passing, 'test');
      push(body.on_empty, 'keep');
      push(body.on_error, 'keep');
      if (op === 'JSON_EXISTS_OP') {
        push(doc, 'test');
        return;
      }
      const tested: string[] = [];
      const steps = pathArg(body.pathspec, tested);
      out.keys.push(...tested);
      // JSON_VALUE returns scalars only: what it read is no document
      readInside(doc, steps, op === 'JSON_VALUE_OP' ? within(u, 'leaf') : u, out, stack, cx);
      return;
    }
    case 'JsonObjectConstructor':
    case 'JsonArrayConstructor':
    case 'JsonObjectAgg':
    case 'JsonArrayAgg':
    case 'JsonArrayQueryConstructor':
    case 'JsonParseExpr':
    case 'JsonScalarExpr':
    case 'JsonSerializeExpr':
    case 'JsonValueExpr':
    case 'JsonAggConstructor': {
      const names: Record<string, string> = {
        JsonObjectConstructor: 'json_object', JsonArrayConstructor: 'json_array', JsonObjectAgg: 'json_objectagg', JsonArrayAgg: 'json_arrayagg',
        JsonArrayQueryConstructor: 'json_array', JsonParseExpr: 'json', JsonScalarExpr: 'json_scalar', JsonSerializeExpr: 'json_serialize',
      };
      if (names[kind]) out.calls.push(names[kind]);
      for (const [k, v] of Object.entries(body)) {
        if (v === null || typeof v !== 'object') continue;
        // an aggregate's FILTER and ORDER BY choose rows, they are no values
        if (k === 'constructor' || k === 'agg_filter' || k === 'agg_order' || k === 'over' || k === 'output' || k === 'format') continue;
        if (k === 'query') {
          out.subs.push({ query: statement(v, cx), use: u });
          continue;
        }
        push(v, 'keep');
      }
      return;
    }
    case 'JsonKeyValue':
      // a key built from a value is a name in the document: what it was is shown, unmasked by key rules
      push(body.key, 'derive');
      push(body.value, 'keep');
      return;
    case 'NamedArgExpr':
      push(body.arg, 'keep');
      return;
    case 'List':
      // a list (IN (...), ROWS FROM's items): its items, as the list is used
      push(body.items, 'keep');
      return;
    default:
      for (const v of Object.values(body)) if (v !== null && typeof v === 'object') push(v, 'derive');
  }
}

function visitCall(body: Node, u: Use, stack: Task[], out: Expr, cx: Cx, push: (node: unknown, inner: 'keep' | 'derive' | 'test' | 'leaf') => void): void {
  const name = funcName(body.funcname);
  out.calls.push(name);
  if (isCount(body.funcname)) return; // a number, whatever it counts
  const args = list(body.args).map(namedArg);
  // WITHIN GROUP (ORDER BY x): x is the value (percentile_disc, mode) or made from it (percentile_cont)
  const ordered = body.agg_within_group === true ? list(body.agg_order).map((s) => (entry(s)?.[1] ?? {}).node) : [];
  const shape = functionShape(name);
  // agg_filter, agg_order (without WITHIN GROUP), over: which rows and in what order, not what values
  switch (shape?.kind) {
    case 'keys':
      readInside(args[shape.doc], constKeys(args.slice(shape.doc + 1), body.func_variadic === true), within(u, 'keep'), out, stack, cx);
      args.slice(0, shape.doc).forEach((a) => push(a, 'derive'));
      return;
    case 'path': {
      // a path argument left out (BigQuery JSON_VALUE(doc)): the root
      const paths: unknown[] = (shape.paths === 'rest' ? args.slice(shape.doc + 1) : shape.paths.map((i) => args[i])).filter((a) => a !== undefined);
      const use = shape.scalar ? within(u, 'leaf') : u;
      const doc = args[shape.doc];
      if (paths.length === 0) readInside(doc, [], use, out, stack, cx); // BigQuery JSON_VALUE(doc): the root
      for (const p of paths) readInside(doc, pathArg(p, out.keys), use, out, stack, cx);
      // variables and flags (jsonb_path_query's vars, silent): tested
      args.forEach((a, i) => {
        if (i !== shape.doc && !paths.includes(a)) push(a, 'test');
      });
      return;
    }
    case 'elements':
      readInside(args[shape.doc], [INDEX], u, out, stack, cx);
      return;
    case 'unpack':
      // members become rows or a record without naming their keys: any key
      if (readsData(args)) out.opaque = true;
      push(args, 'derive');
      return;
    case 'test':
      push(args, 'test');
      return;
    case 'keep':
      push(args, 'keep');
      for (const o of ordered) push(o, 'keep');
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
        // a JSON function this reader does not know: its paths must still be readable
        for (const a of args) {
          const text = constText(a);
          if (text === undefined || !/^\s*(lax\s+|strict\s+)?\$/i.test(text)) continue;
          const p = parseJsonPath(text);
          if (!p) out.opaque = true;
          else out.keys.push(...p.steps.filter((k) => k !== INDEX), ...p.tested);
        }
      }
      push(args, 'derive');
      for (const o of ordered) push(o, 'derive');
  }
}

function aliasOf(body: Node): { alias?: string; cols?: string[] } {
  const a = isObj(body.alias) ? body.alias : undefined;
  const out: { alias?: string; cols?: string[] } = {};
  if (a && typeof a.aliasname === 'string') out.alias = a.aliasname;
  const cols = a ? strings(a.colnames) : [];
  if (cols.length) out.cols = cols;
  return out;
}

/** A read of `keys` inside the document `doc`, as an expression of its own (a table function's column). */
function docRead(doc: unknown, keys: string[] | undefined, use: Use, cx: Cx): Expr {
  const out = emptyExpr();
  const stack: Task[] = [];
  readInside(doc, keys, use, out, stack, cx);
  for (let t = stack.pop(); t !== undefined; t = stack.pop()) visit(t.node, t.use, stack, out, cx);
  return out;
}

/** The columns of a JSON table function in FROM, when it has them (lineage.ts FuncColumn). */
function jsonTableColumns(call: Node, defs: string[], alias: string | undefined, ordinality: boolean, cx: Cx): { outputs?: FuncColumn[]; byName?: Expr } {
  const name = funcName(call.funcname);
  const last = name.slice(name.lastIndexOf('.') + 1);
  const args = list(call.args).map(namedArg);
  const doc = args[0];
  const extra: FuncColumn[] = ordinality ? [{ name: 'ordinality', expr: emptyExpr() }] : [];
  const opaque = (): Expr => ({ ...emptyExpr(), opaque: true });
  switch (last) {
    case 'jsonb_each':
    case 'jsonb_each_text':
    case 'json_each':
    case 'json_each_text':
      // the keys are names; the values sit under keys nobody named: unknown
      return { outputs: [{ name: 'key', expr: docRead(doc, [], 'test', cx) }, { name: 'value', expr: { ...docRead(doc, [], 'derived', cx), opaque: readsData(doc) } }, ...extra] };
    case 'jsonb_object_keys':
    case 'json_object_keys':
      return { outputs: [{ name: alias ?? last, expr: docRead(doc, [], 'test', cx) }, ...extra] };
    case 'jsonb_array_elements':
    case 'jsonb_array_elements_text':
    case 'json_array_elements':
    case 'json_array_elements_text':
      return { outputs: [{ name: 'value', expr: docRead(doc, [INDEX], 'value', cx) }, ...extra] };
    case 'jsonb_to_record':
    case 'jsonb_to_recordset':
    case 'json_to_record':
    case 'json_to_recordset':
      // each defined column reads the key of its name (PostgreSQL matches the name exactly)
      if (defs.length === 0) return { outputs: [{ expr: opaque() }] };
      return { outputs: [...defs.map((d) => ({ name: d, expr: docRead(doc, last.endsWith('set') ? [INDEX, d] : [d], 'value', cx) })), ...extra] };
    case 'jsonb_populate_record':
    case 'jsonb_populate_recordset':
    case 'json_populate_record':
    case 'json_populate_recordset': {
      // the columns are the type's (unknown here): a column n reads the key n, or the base record's n
      const byName = docRead(args[1], last.endsWith('set') ? [INDEX] : [], 'value', cx);
      expr(args[0], cx, 'value', byName);
      return { byName };
    }
    case 'jsonb_path_query':
    case 'jsonb_path_query_tz': {
      const tested: string[] = [];
      const steps = pathArg(args[1], tested);
      const read = docRead(doc, steps, 'value', cx);
      read.keys.push(...tested);
      for (const a of args.slice(2)) expr(a, cx, 'test', read);
      return { outputs: [{ name: alias ?? last, expr: read }, ...extra] };
    }
    default:
      return {};
  }
}

/** JSON_TABLE's columns: each reads its path (its name, without one) under the row path. */
function jsonTableNodeColumns(columns: unknown[], doc: unknown, prefix: string[] | undefined, cx: Cx, into: FuncColumn[]): void {
  for (const c of columns) {
    const ce = entry(c);
    if (!ce) continue;
    const col = ce[1];
    const tested: string[] = [];
    const own = isObj(col.pathspec) ? pathArg(col.pathspec.string, tested) : typeof col.name === 'string' ? [col.name] : undefined;
    const steps = prefix && own ? [...prefix, ...own] : undefined;
    switch (col.coltype) {
      case 'JTC_NESTED':
        jsonTableNodeColumns(list(col.columns), doc, steps, cx, into);
        break;
      case 'JTC_FOR_ORDINALITY':
        if (typeof col.name === 'string') into.push({ name: col.name, expr: emptyExpr() });
        break;
      case 'JTC_EXISTS': {
        const read = docRead(doc, steps, 'test', cx);
        if (typeof col.name === 'string') into.push({ name: col.name, expr: read });
        break;
      }
      default: {
        const read = docRead(doc, steps, 'value', cx);
        read.keys.push(...tested);
        for (const d of [col.on_empty, col.on_error]) if (d) expr(d, cx, 'value', read);
        if (typeof col.name === 'string') into.push({ name: col.name, expr: read });
      }
    }
  }
}

function fromItem(node: unknown, cx: Cx): From[] {
  const e = entry(node);
  if (!e) return [{ kind: 'opaque' }];
  const [kind, body] = e;
  switch (kind) {
    case 'RangeVar': {
      const name = [body.catalogname, body.schemaname, body.relname].filter((p): p is string => typeof p === 'string' && p !== '');
      return [{ kind: 'table', name, ...aliasOf(body) }];
    }
    case 'RangeSubselect':
      return [{ kind: 'query', query: statement(body.subquery, cx), ...aliasOf(body), ...(body.lateral === true ? { lateral: true } : {}) }];
    case 'RangeFunction': {
      const a = aliasOf(body);
      // ROWS FROM (f() AS (a int, ...)) / f() AS t(a int, ...): the column definition list
      const defs: string[] = [];
      const collect = (v: unknown): void => {
        for (const c of list(v)) {
          const ce = entry(c);
          if (ce && ce[0] === 'ColumnDef' && typeof ce[1].colname === 'string') defs.push(ce[1].colname);
        }
      };
      collect(body.coldeflist);
      const calls = list(body.functions).map((f) => {
        const fe = entry(f);
        const items = fe && fe[0] === 'List' ? list(fe[1].items) : [];
        collect(items[1]);
        return entry(items[0]);
      });
      if (!a.cols && defs.length) a.cols = defs;
      // the function of each ROWS FROM item (a non-call there, like a cast, is no table function)
      const fns = calls.map((call) => (call && call[0] === 'FuncCall' ? funcName(call[1].funcname) : ''));
      const [only] = calls;
      const json = calls.length === 1 && only && only[0] === 'FuncCall' ? jsonTableColumns(only[1], defs, a.alias, body.ordinality === true, cx) : {};
      // unnest gives the array's elements as they are; other table functions make new values
      const use = fns.length === 1 && fns[0]!.replace(/^.*\./, '') === 'unnest' ? 'value' : 'derived';
      return [{ kind: 'func', expr: expr(body.functions, cx, use), ...a, fns, ...json }];
    }
    case 'JsonTable': {
      const a = aliasOf(body);
      const doc = isObj(body.context_item) ? body.context_item.raw_expr : undefined;
      const tested: string[] = [];
      const rowPath = isObj(body.pathspec) ? pathArg(body.pathspec.string, tested) : undefined;
      const outputs: FuncColumn[] = [];
      jsonTableNodeColumns(list(body.columns), doc, rowPath, cx, outputs);
      const ex = expr(doc, cx, 'derived');
      ex.keys.push(...tested);
      for (const o of outputs) o.expr.keys.push(...tested);
      expr(body.passing, cx, 'test', ex);
      ex.calls.push('json_table');
      return [{ kind: 'func', expr: ex, ...(a.alias !== undefined ? { alias: a.alias } : {}), ...(a.cols ? { cols: a.cols } : {}), fns: ['json_table'], outputs }];
    }
    case 'RangeTableFunc': {
      // XMLTABLE: rows made of the document argument; the row and column paths name what is read
      const cols = list(body.columns).flatMap((c) => {
        const ce = entry(c);
        const n = ce ? (ce[1].colname ?? ce[1].name) : undefined;
        return typeof n === 'string' ? [n] : [];
      });
      const a = aliasOf(body);
      // the values come from inside the document, read by the XPath names (keys without a table)
      const ex = expr(body.docexpr, cx, 'value');
      expr({ ...body, alias: undefined, docexpr: undefined }, cx, 'derived', ex);
      ex.direct = false;
      constWords({ ...body, alias: undefined, docexpr: undefined }, ex.keys);
      return [{ kind: 'func', expr: ex, ...(a.alias !== undefined ? { alias: a.alias } : {}), ...(cols.length ? { cols } : {}), fns: ['xmltable'] }];
    }
    case 'RangeTableSample':
      return fromItem(body.relation, cx);
    case 'JoinExpr': {
      const parts = [...fromItem(body.larg, cx), ...fromItem(body.rarg, cx)];
      if (list(body.usingClause).length > 0 || body.isNatural === true) {
        // USING / NATURAL: merged columns (a RIGHT or FULL join's from the right side): `*` by name
        const group = ++cx.groups;
        const inner = new Set(parts.map((p) => p.group).filter((g): g is number => g !== undefined));
        for (const p of parts) if (p.group === undefined || inner.has(p.group)) p.group = group;
      }
      const a = aliasOf(body);
      if (a.alias === undefined) return parts;
      // (a JOIN b) AS j: only j is visible outside
      return [{ kind: 'query', query: { kind: 'select', items: [{ kind: 'star' }], from: parts }, ...a }];
    }
    default: {
      const a = aliasOf(body);
      const ex = expr(body, cx, 'derived');
      ex.opaque = true;
      return [{ kind: 'func', expr: ex, ...(a.alias !== undefined ? { alias: a.alias } : {}) }];
    }
  }
}

/** The words of every string constant in a subtree (XPath names of XMLTABLE). */
function constWords(node: unknown, into: string[]): void {
  const stack: unknown[] = [node];
  while (stack.length) {
    const n = stack.pop();
    if (Array.isArray(n)) {
      stack.push(...n);
      continue;
    }
    if (!isObj(n)) continue;
    for (const [key, value] of Object.entries(n)) {
      if (key === 'A_Const' && isObj(value) && isObj(value.sval) && typeof value.sval.sval === 'string') into.push(...value.sval.sval.split(/[^A-Za-z0-9_$-]+/).filter((w) => w !== '' && w !== '$'));
      else if (value !== null && typeof value === 'object') stack.push(value);
    }
  }
}

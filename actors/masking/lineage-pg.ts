/**
 * PostgreSQL statements into the lineage model (lineage.ts), on PostgreSQL's own parser
 * (libpg-query, WASM). Also used for Trino (ANSI quoting, the same shape of query), and for
 * MySQL and BigQuery text when their own grammars refuse it (see lineage-nsp.ts).
 *
 * Expressions are walked generically, so a node kind not named here still gives up its column
 * references; only the parts that carry no values (count's arguments, FILTER, OVER, an
 * aggregate's ORDER BY) are skipped on purpose. A FROM item of a kind not named here is an
 * opaque relation. Anything that is not exactly one SELECT statement is an opaque query.
 */
import { loadModule, parseSync } from 'libpg-query';
import { isPgOperator } from './functions.js';
import { emptyExpr, OPAQUE_QUERY, type Expr, type From, type Item, type Query, type With } from './lineage.js';

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

/** `{ SelectStmt: {...} }` → ['SelectStmt', {...}] */
function entry(node: unknown): [string, Node] | undefined {
  if (!isObj(node)) return undefined;
  const e = Object.entries(node)[0];
  return e && isObj(e[1]) ? [e[0], e[1]] : undefined;
}

/** The sval of a `{ String: { sval } }` node. */
function str(node: unknown): string | undefined {
  const e = entry(node);
  return e && e[0] === 'String' && typeof e[1].sval === 'string' ? e[1].sval : undefined;
}

function strings(v: unknown): string[] {
  return list(v).map(str).filter((s): s is string => s !== undefined);
}

/** The statement as a query; OPAQUE_QUERY when it does not parse or is not one SELECT. */
export function pgQuery(sql: string): Query {
  return pgQueryOrUndefined(sql) ?? OPAQUE_QUERY;
}

/** Like pgQuery, but undefined when the text does not parse (so another grammar may try). */
export function pgQueryOrUndefined(sql: string): Query | undefined {
  if (!ready) throw new Error('the PostgreSQL parser is not loaded (call preparePgParser first)');
  let stmts: unknown[];
  try {
    stmts = list((parseSync(sql) as { stmts?: unknown[] }).stmts);
  } catch {
    return undefined;
  }
  if (stmts.length !== 1) return OPAQUE_QUERY;
  return statement((stmts[0] as { stmt?: unknown }).stmt);
}

function statement(node: unknown): Query {
  const e = entry(node);
  return e && e[0] === 'SelectStmt' ? select(e[1]) : OPAQUE_QUERY;
}

function withClause(w: unknown): With | undefined {
  if (!isObj(w)) return undefined;
  const ctes = list(w.ctes).map((c) => {
    const e = entry(c);
    const body = e && e[0] === 'CommonTableExpr' ? e[1] : {};
    const cols = strings(body.aliascolnames);
    return { name: typeof body.ctename === 'string' ? body.ctename : '', ...(cols.length ? { cols } : {}), query: statement(body.ctequery) };
  });
  return { recursive: w.recursive === true, ctes };
}

/** A SelectStmt body (set-operation branches come without the `SelectStmt` wrapper). */
function select(s: Node): Query {
  const w = withClause(s.withClause);
  const withPart = w ? { with: w } : {};
  const op = s.op;
  if (op !== undefined && op !== 'SETOP_NONE') {
    const branches: Query[] = [];
    for (const side of [s.larg, s.rarg]) {
      if (!isObj(side)) branches.push(OPAQUE_QUERY);
      else if (side.op !== undefined && side.op !== 'SETOP_NONE' && !side.withClause) {
        const inner = select(side);
        if (inner.kind === 'setop') branches.push(...inner.branches);
        else branches.push(inner);
      } else branches.push(select(side));
    }
    return { kind: 'setop', ...withPart, branches };
  }
  if (s.valuesLists !== undefined) {
    const rows = list(s.valuesLists).map((row) => {
      const e = entry(row);
      return list(e && e[0] === 'List' ? e[1].items : []).map((v) => expr(v));
    });
    return { kind: 'values', ...withPart, rows };
  }
  const items: Item[] = list(s.targetList).map(target);
  const from: From[] = list(s.fromClause).flatMap(fromItem);
  return { kind: 'select', ...withPart, items, from };
}

function target(node: unknown): Item {
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
  return { kind: 'expr', name, certain, expr: expr(val) };
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
      return [strings(body.indirection).at(-1) ?? '?column?', false];
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

/** The words of every string constant in a subtree (JSON keys and paths). */
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
      if (key === 'A_Const' && isObj(value) && isObj(value.sval) && typeof value.sval.sval === 'string') into.push(...keyWords(value.sval.sval));
      else if (value !== null && typeof value === 'object') stack.push(value);
    }
  }
}

/** `$.contact.email` → contact, email; `{a,email}` → a, email. */
export function keyWords(text: string): string[] {
  return text.split(/[^A-Za-z0-9_$-]+/).filter((w) => w !== '' && w !== '$');
}

/** The functions whose arguments are not sources of the value (count returns a number). */
function isCount(funcname: unknown): boolean {
  const names = strings(funcname).map((n) => n.toLowerCase());
  return (names.length === 1 && names[0] === 'count') || (names.length === 2 && names[0] === 'pg_catalog' && names[1] === 'count');
}

/** A function's name as written, lower-cased (`upper`, `pg_catalog.upper`). */
function funcName(funcname: unknown): string {
  return strings(funcname).map((n) => n.toLowerCase()).join('.');
}

/** An expression's column references, whole-row references, subqueries and calls. */
export function expr(node: unknown, out: Expr = emptyExpr()): Expr {
  const top = entry(node);
  if (top && top[0] === 'ColumnRef' && out.refs.length + out.rows.length + out.subs.length === 0) {
    const last = entry(list(top[1].fields).at(-1));
    out.direct = !(last && last[0] === 'A_Star');
  }
  const stack: unknown[] = [node];
  for (let n = stack.pop(); n !== undefined || stack.length > 0; n = stack.pop()) {
    if (Array.isArray(n)) {
      for (const c of n) stack.push(c);
      continue;
    }
    if (!isObj(n)) continue;
    for (const [key, value] of Object.entries(n)) {
      if (value === null || typeof value !== 'object') continue;
      if (!isObj(value)) {
        stack.push(value);
        continue;
      }
      switch (key) {
        case 'ColumnRef': {
          const fields = list(value.fields);
          const lastField = entry(fields.at(-1));
          if (lastField && lastField[0] === 'A_Star') out.rows.push(strings(fields.slice(0, -1)));
          else out.refs.push(strings(fields));
          break;
        }
        case 'SubLink':
          out.subs.push(statement(value.subselect));
          if (value.testexpr !== undefined) stack.push(value.testexpr);
          break;
        case 'SelectStmt':
          out.subs.push(select(value));
          break;
        case 'A_Indirection':
          // (addr).city: the field is a name too
          out.keys.push(...strings(value.indirection));
          stack.push(value.arg);
          for (const i of list(value.indirection)) if (str(i) === undefined) stack.push(i);
          break;
        case 'A_Expr': {
          const op = strings(value.name);
          if (op.some((o) => JSON_OPERATORS.has(o))) constWords(value.rexpr, out.keys);
          // a user-defined operator runs a function of its own: its value cannot be traced
          if (op.length > 0 && (value.kind === undefined || value.kind === 'AEXPR_OP' || value.kind === 'AEXPR_OP_ANY' || value.kind === 'AEXPR_OP_ALL') && !isPgOperator(op)) out.opaque = true;
          stack.push(value);
          break;
        }
        case 'JsonFuncExpr':
        case 'JsonTable':
          constWords(value.pathspec, out.keys);
          stack.push(value);
          break;
        case 'FuncCall':
          out.calls.push(funcName(value.funcname));
          if (strings(value.funcname).some((f) => f.toLowerCase().includes('json'))) constWords(value.args, out.keys);
          if (!isCount(value.funcname)) {
            stack.push(value.args);
            // WITHIN GROUP (ORDER BY x): x is the value (percentile_cont, mode)
            if (value.agg_within_group === true) stack.push(value.agg_order);
          }
          // agg_filter, agg_order, over: which rows and in what order, not what values
          break;
        default:
          stack.push(value);
      }
    }
  }
  return out;
}

function aliasOf(body: Node): { alias?: string; cols?: string[] } {
  const a = isObj(body.alias) ? body.alias : undefined;
  const out: { alias?: string; cols?: string[] } = {};
  if (a && typeof a.aliasname === 'string') out.alias = a.aliasname;
  const cols = a ? strings(a.colnames) : [];
  if (cols.length) out.cols = cols;
  return out;
}

function fromItem(node: unknown): From[] {
  const e = entry(node);
  if (!e) return [{ kind: 'opaque' }];
  const [kind, body] = e;
  switch (kind) {
    case 'RangeVar': {
      const name = [body.catalogname, body.schemaname, body.relname].filter((p): p is string => typeof p === 'string' && p !== '');
      return [{ kind: 'table', name, ...aliasOf(body) }];
    }
    case 'RangeSubselect':
      return [{ kind: 'query', query: statement(body.subquery), ...aliasOf(body) }];
    case 'RangeFunction': {
      const a = aliasOf(body);
      if (!a.cols) {
        // ROWS FROM (f() AS (a int, ...)) / f() AS t(a int, ...): the column definition list
        const defs: string[] = [];
        const collect = (v: unknown): void => {
          for (const c of list(v)) {
            const ce = entry(c);
            if (ce && ce[0] === 'ColumnDef' && typeof ce[1].colname === 'string') defs.push(ce[1].colname);
          }
        };
        collect(body.coldeflist);
        for (const f of list(body.functions)) {
          const fe = entry(f);
          if (fe && fe[0] === 'List') collect(list(fe[1].items)[1]);
        }
        if (defs.length) a.cols = defs;
      }
      // the function of each ROWS FROM item (a non-call there, like a cast, is no table function)
      const fns = list(body.functions).map((f) => {
        const fe = entry(f);
        const call = entry(fe && fe[0] === 'List' ? list(fe[1].items)[0] : undefined);
        return call && call[0] === 'FuncCall' ? funcName(call[1].funcname) : '';
      });
      return [{ kind: 'func', expr: expr(body.functions), ...a, fns }];
    }
    case 'RangeTableFunc': // XMLTABLE
    case 'JsonTable': {
      const cols = list(body.columns).flatMap((c) => {
        const ce = entry(c);
        const n = ce ? (ce[1].colname ?? ce[1].name) : undefined;
        return typeof n === 'string' ? [n] : [];
      });
      const a = aliasOf(body);
      const ex = expr({ ...body, alias: undefined });
      // the row and column paths name what is read
      constWords({ ...body, alias: undefined, docexpr: undefined, context_item: undefined }, ex.keys);
      // rows made of the document argument only
      const fns = [kind === 'JsonTable' ? 'json_table' : 'xmltable'];
      return [{ kind: 'func', expr: ex, ...(a.alias !== undefined ? { alias: a.alias } : {}), ...(cols.length ? { cols } : {}), fns }];
    }
    case 'RangeTableSample':
      return fromItem(body.relation);
    case 'JoinExpr': {
      const parts = [...fromItem(body.larg), ...fromItem(body.rarg)];
      const a = aliasOf(body);
      if (a.alias === undefined) return parts;
      // (a JOIN b) AS j: only j is visible outside
      return [{ kind: 'query', query: { kind: 'select', items: [{ kind: 'star' }], from: parts }, ...a }];
    }
    default: {
      const a = aliasOf(body);
      const ex = expr(body);
      ex.opaque = true;
      return [{ kind: 'func', expr: ex, ...(a.alias !== undefined ? { alias: a.alias } : {}) }];
    }
  }
}

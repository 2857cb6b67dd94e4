/**
 * Is the first item of a SELECT list an aggregate expression? Asked for a semantic metric's
 * `SELECT <expr> AS metric_value FROM <table>` (sql.check with expect 'aggregate'), after the
 * guard accepted the statement, so the SQL is known to parse.
 *
 * The statement must have the shape `SELECT <expr> AS metric_value [FROM <table>]`: one SELECT
 * item aliased metric_value, no set operation or WITH (an expression that brings a FROM or a
 * second item of its own is refused). An aggregate expression here: at least one aggregate call (SUM, COUNT, AVG, … not followed by
 * OVER) at its top level, no subquery anywhere, and no column read outside an aggregate call
 * (`amount + SUM(tax)` needs a GROUP BY, so it is no metric). A window function alone
 * (`SUM(x) OVER ()`) is not an aggregate: it gives one value per row.
 *
 * PostgreSQL and MySQL are read on their real parsers (libpg-query, node-sql-parser); Trino and
 * BigQuery on their lexers: calls, brackets and SELECT words (column reads outside an aggregate
 * are left to the database's own check there, as the words of a type or a keyword cannot be
 * told from a column name without a parser).
 */
import { createRequire } from 'node:module';
import { parseSync } from 'libpg-query';
import type { Parser as ParserType } from 'node-sql-parser';
import type { Dialect } from '../../../protocol/schemas/common.js';
import { parserBroke } from '../../lib/sql/parsers/failure.js';
import { lexBigQuery } from '../../lib/sql/lexer/bigquery.js';
import { lexTrino } from '../../lib/sql/lexer/trino.js';

export interface AggregateVerdict {
  aggregate: boolean;
  /** why not, for people */
  reason?: string;
}

/** Aggregate functions of the four dialects (lower case). A name here followed by OVER is a window call. */
export const AGGREGATE_FUNCTIONS: ReadonlySet<string> = new Set([
  'count', 'sum', 'avg', 'min', 'max', 'stddev', 'stddev_pop', 'stddev_samp', 'std', 'variance', 'var_pop', 'var_samp',
  'string_agg', 'array_agg', 'bool_and', 'bool_or', 'every', 'bit_and', 'bit_or', 'bit_xor', 'json_agg', 'jsonb_agg',
  'json_object_agg', 'jsonb_object_agg', 'json_arrayagg', 'json_objectagg', 'xmlagg', 'percentile_cont', 'percentile_disc',
  'mode', 'corr', 'covar_pop', 'covar_samp', 'regr_avgx', 'regr_avgy', 'regr_count', 'regr_intercept', 'regr_r2',
  'regr_slope', 'regr_sxx', 'regr_sxy', 'regr_syy', 'group_concat', 'listagg', 'count_if', 'countif', 'approx_distinct',
  'approx_count_distinct', 'approx_percentile', 'approx_quantiles', 'approx_top_count', 'approx_top_sum', 'approx_set',
  'any_value', 'arbitrary', 'max_by', 'min_by', 'logical_and', 'logical_or', 'array_concat_agg', 'geometric_mean',
  'checksum', 'histogram', 'map_agg', 'multimap_agg', 'median', 'kurtosis', 'skewness', 'entropy', 'bitwise_and_agg',
  'bitwise_or_agg', 'bitwise_xor_agg', 'range_agg', 'range_intersect_agg',
]);

const YES: AggregateVerdict = { aggregate: true };
const SUBQUERY: AggregateVerdict = { aggregate: false, reason: 'it holds a subquery' };
const WINDOW: AggregateVerdict = { aggregate: false, reason: 'a window function (… OVER (…)) gives one value per row, not one per group' };
const NONE: AggregateVerdict = { aggregate: false, reason: 'it has no aggregate function at its top level' };
const UNREADABLE: AggregateVerdict = { aggregate: false, reason: 'it cannot be read as one expression' };
const NOT_ONE: AggregateVerdict = { aggregate: false, reason: 'it must be one expression (no second item, FROM, UNION or WITH of its own)' };
const outside = (column: string): AggregateVerdict => ({ aggregate: false, reason: `the column ${column} is read outside an aggregate function` });

/** The verdict on the first SELECT item of `sql` (which the dialect's guard accepted). */
export function aggregateOf(sql: string, dialect: Dialect): AggregateVerdict {
  try {
    return verdictFor(sql, dialect);
  } catch (err) {
    if (parserBroke(err)) throw err; // the parser itself broke: its worker is replaced (isolated.ts)
    // the guard parsed it already; a reader here that cannot is a refusal all the same
    return UNREADABLE;
  }
}

function verdictFor(sql: string, dialect: Dialect): AggregateVerdict {
  switch (dialect) {
    case 'postgresql':
      return postgresAggregate(sql);
    case 'mysql':
      return mysqlAggregate(sql);
    case 'trino':
      return tokenAggregate(lexTrino(sql).map((t) => ({ word: t.kind === 'word', name: t.kind === 'word' || t.kind === 'quoted', v: t.value.toLowerCase() })));
    case 'bigquery':
      return tokenAggregate(lexBigQuery(sql).tokens.map((t) => ({ word: t.type === 'word', name: t.type === 'word' || t.type === 'quoted', v: t.value.toLowerCase() })));
  }
}

// ---- PostgreSQL (libpg-query's tree) ---------------------------------------------------------

interface Tally {
  aggregates: number;
  window: boolean;
  subquery: boolean;
  /** the first column read outside an aggregate call */
  bare?: string;
}

function verdictOf(t: Tally): AggregateVerdict {
  if (t.subquery) return SUBQUERY;
  if (t.aggregates === 0) return t.window ? WINDOW : NONE;
  if (t.bare !== undefined) return outside(t.bare);
  return YES;
}

function postgresAggregate(sql: string): AggregateVerdict {
  const stmt = parseSync(sql).stmts?.[0]?.stmt as Record<string, any> | undefined;
  const select = stmt?.SelectStmt;
  const items = select?.targetList;
  if (!Array.isArray(items) || items.length !== 1 || items[0]?.ResTarget?.name !== 'metric_value' || select.withClause || (select.op && select.op !== 'SETOP_NONE')) return NOT_ONE;
  const target = items[0].ResTarget.val;
  if (target === undefined) return NONE;
  const tally: Tally = { aggregates: 0, window: false, subquery: false };
  const walk = (node: unknown, inAggregate: boolean): void => {
    if (Array.isArray(node)) {
      for (const child of node) walk(child, inAggregate);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node as Record<string, any>)) {
      if (key === 'SubLink' || key === 'SelectStmt') {
        tally.subquery = true;
        continue;
      }
      if (key === 'FuncCall') {
        const name = String(value.funcname?.at(-1)?.String?.sval ?? '').toLowerCase();
        const isAggregate = AGGREGATE_FUNCTIONS.has(name) || value.agg_star === true || value.agg_within_group === true
          || value.agg_filter !== undefined || value.agg_distinct === true || value.agg_order !== undefined;
        if (value.over !== undefined) {
          tally.window = true;
          walk(value, inAggregate);
        } else if (isAggregate) {
          if (!inAggregate) tally.aggregates += 1;
          walk(value, true);
        } else {
          walk(value, inAggregate);
        }
        continue;
      }
      if (key === 'ColumnRef') {
        if (!inAggregate && tally.bare === undefined) {
          tally.bare = (value.fields ?? []).map((f: any) => f.String?.sval ?? '*').join('.');
        }
        continue;
      }
      walk(value, inAggregate);
    }
  };
  walk(target, false);
  return verdictOf(tally);
}

// ---- MySQL / MariaDB (node-sql-parser's tree) ------------------------------------------------

let parsers: ParserType[] | undefined;

function mysqlParsers(): ParserType[] {
  if (!parsers) {
    // CommonJS bundles, as the MySQL guard loads them
    const require = createRequire(import.meta.url);
    const mysql = require('node-sql-parser/build/mysql.js') as { Parser: new () => ParserType };
    const mariadb = require('node-sql-parser/build/mariadb.js') as { Parser: new () => ParserType };
    parsers = [new mysql.Parser(), new mariadb.Parser()];
  }
  return parsers;
}

function mysqlFunctionName(node: Record<string, any>): string {
  const n = node.name;
  if (typeof n === 'string') return n.toLowerCase();
  const parts = n?.name;
  if (Array.isArray(parts)) return String(parts.at(-1)?.value ?? '').toLowerCase();
  return '';
}

function mysqlAggregate(sql: string): AggregateVerdict {
  let first: unknown;
  for (const [i, p] of mysqlParsers().entries()) {
    try {
      const ast = p.astify(sql, { database: i === 0 ? 'MySQL' : 'MariaDB' });
      const root = (Array.isArray(ast) ? ast[0] : ast) as Record<string, any> | undefined;
      const columns = root?.columns;
      if (!root || root._next || root.with || !Array.isArray(columns) || columns.length !== 1) return NOT_ONE;
      const alias = typeof columns[0].as === 'string' ? columns[0].as : columns[0].as?.value;
      if (String(alias ?? '').toLowerCase() !== 'metric_value') return NOT_ONE;
      first = columns[0].expr;
      break;
    } catch {
      // the other grammar
    }
  }
  if (first === undefined) return UNREADABLE;
  const tally: Tally = { aggregates: 0, window: false, subquery: false };
  const walk = (node: unknown, inAggregate: boolean): void => {
    if (Array.isArray(node)) {
      for (const child of node) walk(child, inAggregate);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    const n = node as Record<string, any>;
    if (n.type === 'select' || n.ast !== undefined) {
      tally.subquery = true;
      return;
    }
    if (n.type === 'aggr_func' || n.type === 'function') {
      const windowed = n.over !== null && n.over !== undefined;
      const isAggregate = n.type === 'aggr_func' || AGGREGATE_FUNCTIONS.has(mysqlFunctionName(n));
      if (windowed) {
        tally.window = true;
        walk(n.args, inAggregate);
        walk(n.over, inAggregate);
      } else if (isAggregate) {
        if (!inAggregate) tally.aggregates += 1;
        walk(n.args, true);
      } else {
        walk(n.args, inAggregate);
      }
      return;
    }
    if (n.type === 'column_ref') {
      if (!inAggregate && tally.bare === undefined) {
        const column = typeof n.column === 'string' ? n.column : String(n.column?.expr?.value ?? '');
        tally.bare = n.table ? `${n.table}.${column}` : column;
      }
      return;
    }
    for (const value of Object.values(n)) walk(value, inAggregate);
  };
  walk(first, false);
  return verdictOf(tally);
}

// ---- Trino / BigQuery (tokens) ---------------------------------------------------------------

interface Tok {
  /** a keyword or bare name */
  word: boolean;
  /** a word or a quoted name */
  name: boolean;
  /** lower case */
  v: string;
}

/** The tokens of the SELECT item: from after the first SELECT to a top-level `,`, AS or FROM; undefined when no `AS metric_value` follows it. */
function firstItem(tokens: readonly Tok[]): Tok[] | undefined {
  const start = tokens.findIndex((t) => t.word && t.v === 'select');
  if (start !== 0) return undefined;
  let i = start + 1;
  if (tokens[i]?.word && (tokens[i]!.v === 'distinct' || tokens[i]!.v === 'all')) i += 1;
  const out: Tok[] = [];
  let depth = 0;
  for (; i < tokens.length; i += 1) {
    const t = tokens[i]!;
    if (!t.name && (t.v === '(' || t.v === '[')) depth += 1;
    if (!t.name && (t.v === ')' || t.v === ']')) depth -= 1;
    if (depth === 0 && ((!t.name && (t.v === ',' || t.v === ';')) || (t.word && (t.v === 'as' || t.v === 'from')))) break;
    out.push(t);
  }
  if (!(tokens[i]?.word && tokens[i]!.v === 'as' && tokens[i + 1]?.name && tokens[i + 1]!.v === 'metric_value')) return undefined;
  // after the alias: the end, or FROM and one name (dotted)
  const rest = tokens.slice(i + 2).filter((t) => !(!t.name && t.v === ';'));
  if (rest.length === 0) return out;
  if (!(rest[0]!.word && rest[0]!.v === 'from')) return undefined;
  const tail = rest.slice(1);
  const dotted = tail.length % 2 === 1 && tail.every((t, k) => (k % 2 === 0 ? t.name : !t.name && t.v === '.'));
  return dotted ? out : undefined;
}

function closing(tokens: readonly Tok[], open: number): number {
  let depth = 0;
  for (let i = open; i < tokens.length; i += 1) {
    const t = tokens[i]!;
    if (!t.name && t.v === '(') depth += 1;
    if (!t.name && t.v === ')') {
      depth -= 1;
      if (depth === 0) return i;
    }
  }
  return tokens.length - 1;
}

function tokenAggregate(all: readonly Tok[]): AggregateVerdict {
  const tokens = firstItem(all);
  if (tokens === undefined) return NOT_ONE;
  const tally: Tally = { aggregates: 0, window: false, subquery: false };
  if (tokens.some((t) => t.word && t.v === 'select')) return SUBQUERY;
  for (let i = 0; i < tokens.length; i += 1) {
    const t = tokens[i]!;
    const next = tokens[i + 1];
    if (!t.name || next === undefined || next.name || next.v !== '(') continue;
    const end = closing(tokens, i + 1);
    // FILTER (WHERE …) between the call and OVER
    let after = end + 1;
    if (tokens[after]?.word && tokens[after]!.v === 'filter') after = closing(tokens, after + 1) + 1;
    const windowed = tokens[after]?.word === true && tokens[after]!.v === 'over';
    if (windowed) {
      tally.window = true;
      continue;
    }
    if (AGGREGATE_FUNCTIONS.has(t.v)) {
      tally.aggregates += 1;
      i = end;
    }
  }
  return verdictOf(tally);
}

/**
 * sql.profile on PostgreSQL (and the embedded PGlite demo): primary keys from pg_constraint,
 * and the planner's statistics from pg_stats (which shows only the columns the role may read)
 * with pg_class.reltuples. The schema and table names are E'' literals (profile-sql.ts).
 *
 * n_distinct: positive, a count; negative, minus the share of rows (-1: every row differs).
 * min/max: the ends of histogram_bounds when there is one, merged with the most common values
 * (the histogram leaves them out); the values come as text and are read back as numbers for
 * numeric columns.
 */
import type { Cell } from '../../../protocol/schemas/common.js';
import { quoteString } from '../profile-sql.js';
import { exactNumber } from './values.js';

const inList = (names: readonly string[]): string => names.map((n) => quoteString('postgresql', n)).join(', ');

/** table name, then the primary key's columns as JSON text (in key order). */
export function primaryKeysSql(schema: string, tables: readonly string[]): string {
  return `
SELECT c.relname::text AS table_name,
       array_to_json(ARRAY(SELECT a.attname::text FROM unnest(con.conkey) WITH ORDINALITY AS k(attnum, ord)
                           JOIN pg_catalog.pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum
                           ORDER BY k.ord))::text AS columns
FROM pg_catalog.pg_constraint con
JOIN pg_catalog.pg_class c ON c.oid = con.conrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE con.contype = 'p' AND n.nspname = ${quoteString('postgresql', schema)} AND c.relname IN (${inList(tables)})`;
}

/** One row per column with statistics: table, column, inherited, null_frac, n_distinct, MCVs (JSON), histogram ends (JSON), reltuples. */
export function statisticsSql(schema: string, tables: readonly string[]): string {
  const hist = 's.histogram_bounds::text::text[]';
  return `
SELECT s.tablename::text, s.attname::text, s.inherited, s.null_frac::float8, s.n_distinct::float8,
       array_to_json(s.most_common_vals::text::text[])::text AS mcv,
       CASE WHEN s.histogram_bounds IS NULL THEN NULL
            ELSE array_to_json(ARRAY[(${hist})[1], (${hist})[array_length(${hist}, 1)]])::text END AS bounds,
       c.reltuples::float8
FROM pg_catalog.pg_stats s
JOIN pg_catalog.pg_namespace n ON n.nspname = s.schemaname
JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = s.tablename
WHERE s.schemaname = ${quoteString('postgresql', schema)} AND s.tablename IN (${inList(tables)})
ORDER BY s.tablename, s.attname, s.inherited`;
}

export interface PgColumnStats {
  nullFrac: number;
  /** the estimate, as a count */
  distinct: number | undefined;
  mcv: string[];
  bounds: [string, string] | undefined;
  reltuples: number;
}

/** Rows of statisticsSql by table, then column; the non-inherited row wins where both exist. */
export function readStatistics(rows: readonly Cell[][]): Map<string, Map<string, PgColumnStats>> {
  const out = new Map<string, Map<string, PgColumnStats>>();
  for (const [table, column, inherited, nullFrac, nDistinct, mcv, bounds, reltuples] of rows) {
    const t = String(table);
    let cols = out.get(t);
    if (!cols) out.set(t, (cols = new Map()));
    if (inherited === true && cols.has(String(column))) continue;
    const tuples = typeof reltuples === 'number' && reltuples >= 0 ? reltuples : 0;
    const nd = typeof nDistinct === 'number' ? nDistinct : undefined;
    cols.set(String(column), {
      nullFrac: typeof nullFrac === 'number' ? Math.min(1, Math.max(0, nullFrac)) : 0,
      distinct: nd === undefined ? undefined : nd >= 0 ? nd : Math.round(-nd * tuples),
      mcv: jsonTexts(mcv),
      bounds: pair(jsonTexts(bounds)),
      reltuples: typeof reltuples === 'number' ? reltuples : -1,
    });
  }
  return out;
}

function jsonTexts(v: Cell | undefined): string[] {
  if (typeof v !== 'string') return [];
  try {
    const parsed: unknown = JSON.parse(v);
    return Array.isArray(parsed) ? parsed.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

function pair(v: string[]): [string, string] | undefined {
  return v.length === 2 ? [v[0]!, v[1]!] : undefined;
}

const NUMERIC_TYPE = /^(smallint|integer|bigint|int[248]?|numeric|decimal|real|double precision|float[48]?|money|oid)\b/i;

/** A statistics value (text) as a cell of the column's type: exact numbers for numeric columns, booleans, else the text. */
export function statValue(type: string, text: string): Cell {
  if (NUMERIC_TYPE.test(type) && !/^money/i.test(type)) return exactNumber(text);
  if (/^boolean\b/i.test(type)) return text === 'true' || text === 't';
  return text;
}

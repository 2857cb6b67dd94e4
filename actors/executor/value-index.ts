/**
 * `sql.values`: the catalog's value index — the low-cardinality text values of every table the
 * caller sees (statuses, categories, shippers, genres, countries), so a question's "Speedy
 * Express", "seafood" or "Mountain Bikes" finds the table that holds it wherever it is, not only
 * among the best-ranked tables; and the first and last date of each date column, so a question's
 * "in 1995" tells the source whose data covers 1995 from the one whose data starts in 2010.
 *
 * From the engine's own statistics only (PostgreSQL's pg_stats: two queries, no table read), on a
 * connection of the engine's own that no question waits for; an engine without value statistics
 * (MySQL, Trino, BigQuery) answers `source: none` and the catalog keeps looking literals up among
 * its best tables through `sql.profile`. The scope's visibility applies, as to introspection; the
 * values and dates of a column a mask rule covers are left out (mask-values.ts).
 */
import type { Ctx } from '../../protocol/headers.js';
import type { SqlValuesReply, SqlValuesRequest } from '../../protocol/schemas/profile.js';
import type { DbTable } from '../../protocol/schemas/sql.js';
import { leaseFor, type ExecutorDeps } from './handle.js';
import { maskIndex } from './mask-values.js';

export async function values(_input: SqlValuesRequest, deps: ExecutorDeps, ctx: Ctx): Promise<SqlValuesReply> {
  const started = performance.now();
  const lease = await leaseFor(deps, ctx);
  try {
    if (!lease.engine.valueIndex) return { source: 'none', columns: [], truncated: false, duration_ms: performance.now() - started };
    const { columns, truncated, dates } = await lease.engine.valueIndex();
    const visible = lease.visible;
    const shown = visible
      ? columns.filter((c) => visible({ schema: c.schema, name: c.table, kind: 'table', columns: [] } satisfies DbTable))
      : columns;
    const seen = visible ? (dates ?? []).filter((c) => visible({ schema: c.schema, name: c.table, kind: 'table', columns: [] } satisfies DbTable)) : (dates ?? []);
    // masked columns' values and dates are left out before they leave (mask-values.ts)
    const masked = await maskIndex(lease.engine.dialect, shown, seen, deps, ctx);
    return { source: 'statistics', columns: masked.columns, ...(dates ? { dates: masked.dates } : {}), truncated, duration_ms: performance.now() - started };
  } finally {
    lease.release();
  }
}

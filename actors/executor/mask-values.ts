/**
 * The values of sql.profile and sql.values, masked here before they leave the executor, as the
 * rows of sql.execute are (handle.ts): a table's values are masked as the result of a plain
 * `SELECT <its columns> FROM <table>` (so the rules' lineage and names apply as to any query),
 * and a column a rule covers says so (`masked`).
 *
 * - sql.profile: min, max and sample values come back masked (semantic discovery shows them).
 * - sql.values: a masked column's values and date range are left out (the catalog's value index
 *   matches a question's words against them and offers them in clarifying questions: a masked
 *   value can do neither).
 */
import type { Ctx } from '../../protocol/headers.js';
import type { Cell, Dialect } from '../../protocol/schemas/common.js';
import type { IndexedColumn, IndexedDates, TableProfile } from '../../protocol/schemas/profile.js';
import type { MaskRuleLite } from '../../protocol/schemas/policy.js';
import { maskCounted } from '../lib/masking/service.js';
import { rulesFor, type ExecutorDeps } from './handle.js';
import { selectSql } from './profile-sql.js';

/** Tables masked at once. */
const CONCURRENCY = 4;

/** Each profiled table's values masked: row 0 the minimums, row 1 the maximums, then the sample values. */
export async function maskProfiles(tables: TableProfile[], dialect: Dialect, deps: Pick<ExecutorDeps, 'masking'>, ctx: Ctx): Promise<TableProfile[]> {
  const rules = await rulesFor(deps, ctx);
  if (rules.length === 0) return tables;
  return inTurns(tables, async (t) => {
    const cols = t.columns;
    if (!cols.length) return t;
    const depth = Math.max(0, ...cols.map((c) => c.sample_values.length));
    const rows: Cell[][] = [
      cols.map((c) => c.min ?? null),
      cols.map((c) => c.max ?? null),
      ...Array.from({ length: depth }, (_, k) => cols.map((c) => c.sample_values[k] ?? null)),
    ];
    const r = await maskCounted({ sql: t.select_sql, dialect, columns: cols.map((c) => ({ name: c.name, type: c.data_type })), rows, rules }, deps.masking, ctx);
    if (r.masked.length === 0) return t;
    const columns = cols.map((c) => ({ ...c }));
    for (const m of r.masked) {
      const c = columns[m.index];
      if (!c) continue;
      const cell = (row: number): Cell => r.rows[row]?.[m.index] ?? null;
      c.masked = true;
      if (c.min !== undefined) c.min = cell(0);
      if (c.max !== undefined) c.max = cell(1);
      c.sample_values = c.sample_values.map((_, k) => cell(2 + k));
    }
    return { ...t, columns };
  });
}

/** The value index less the values and dates of masked columns (those columns stay, `masked`, without values). */
export async function maskIndex(
  dialect: Dialect, columns: IndexedColumn[], dates: IndexedDates[], deps: Pick<ExecutorDeps, 'masking'>, ctx: Ctx,
): Promise<{ columns: IndexedColumn[]; dates: IndexedDates[] }> {
  const rules = await rulesFor(deps, ctx);
  if (rules.length === 0) return { columns, dates };
  const byTable = new Map<string, { schema: string; table: string; names: Set<string> }>();
  for (const c of [...columns, ...dates]) {
    const key = `${c.schema}\u0000${c.table}`;
    const t = byTable.get(key) ?? { schema: c.schema, table: c.table, names: new Set<string>() };
    t.names.add(c.column);
    byTable.set(key, t);
  }
  const maskedNames = new Set<string>();
  await inTurns([...byTable.values()], async (t) => {
    for (const name of await maskedColumns(dialect, t.schema, t.table, [...t.names], rules, deps, ctx)) maskedNames.add(`${t.schema}\u0000${t.table}\u0000${name}`);
  });
  if (maskedNames.size === 0) return { columns, dates };
  const covered = (c: { schema: string; table: string; column: string }): boolean => maskedNames.has(`${c.schema}\u0000${c.table}\u0000${c.column}`);
  return {
    columns: columns.map((c) => (covered(c) ? { ...c, values: [], masked: true } : c)),
    dates: dates.filter((d) => !covered(d)),
  };
}

/** The columns of `SELECT <names> FROM <schema.table>` the rules mask (no values needed to know). */
async function maskedColumns(dialect: Dialect, schema: string, table: string, names: string[], rules: MaskRuleLite[], deps: Pick<ExecutorDeps, 'masking'>, ctx: Ctx): Promise<string[]> {
  const sql = selectSql(dialect, { schema, name: table }, names);
  const r = await maskCounted({ sql, dialect, columns: names.map((name) => ({ name, type: 'text' })), rows: [], rules }, deps.masking, ctx);
  return r.masked.map((m) => m.column);
}

async function inTurns<T, R>(items: readonly T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await work(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, items.length) }, worker));
  return out;
}

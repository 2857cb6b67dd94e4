/**
 * Join edges a schema does not declare, inferred from names: most warehouses (Snowflake,
 * BigQuery, dbt models) declare no foreign keys, and every structural rule of retrieval —
 * join paths, the fact tables that point at the chosen ones, coherence of one source — needs
 * the edges. A column that names another table's key is taken for a reference to it:
 *
 * - `customer_id`, `customerid`, `customer_key`, `customer_sk` → the table whose key column is
 *   named so (its first column), or the table named `customer`/`customers`;
 * - TPC-style prefixes come off both sides: `o_custkey` → `c_custkey` of `customer`;
 * - a key that opens several tables (a parent and its children: `ticket_no` first in tickets,
 *   boarding_passes and ticket_flights) names the one called after it (tickets);
 * - a column ending with another table's key names it with a role: `ss_sold_date_sk` →
 *   `d_date_sk` of `date_dim`, `shipcustomerid` → `customerid`.
 *
 * Only within one schema (a source's tables live together), never a table to itself, never a
 * column a declared key already covers, and only keys of five letters or more once the prefix
 * is off (`id` alone names nothing).
 */
import type { CatalogEntry } from './catalog.js';

export interface InferredKey {
  /** the referencing column */
  column: string;
  /** the referenced table's index among the entries */
  target: number;
}

/** Marks a column as a key: `_id`, `id`, `_key`, `key`, `_sk`, `_code`, `_no`, `_num` at the end. */
const KEY_SUFFIX = /(?:_?id|_?key|_sk|_code|_cd|_no|_num)$/;
/** Shortest normalised key a column may equal. */
const MIN_KEY = 4;
/** Shortest normalised key that may be matched as the end of a longer column name. */
const MIN_SUFFIX_KEY = 6;

/**
 * A column name without a short table prefix (`c_custkey` → `custkey`, `ss_item_sk` → `item_sk`,
 * but `so_id` stays whole: nothing would be left but the suffix) and without `_`.
 */
function normal(column: string): string {
  const lower = column.toLowerCase();
  const m = /^([a-z]{1,3})_(.+)$/.exec(lower);
  const rest = m?.[2] ?? '';
  const core = rest.replace(KEY_SUFFIX, '').replace(/_$/, '');
  const stripped = m && KEY_SUFFIX.test(lower) && /[a-z]{3,}/.test(core) ? rest : lower;
  return stripped.replace(/_/g, '');
}

/** A table name as a key's stem: lower case, `_` dropped, a plural `s` off (`order_lines` → `orderline`). */
function stemName(name: string): string {
  const n = name.toLowerCase().replace(/_/g, '');
  if (n.endsWith('ies') && n.length > 4) return `${n.slice(0, -3)}y`;
  if (n.endsWith('sses')) return n.slice(0, -2);
  if (n.endsWith('s') && !n.endsWith('ss') && n.length > 3) return n.slice(0, -1);
  return n;
}

/**
 * Of the tables a key opens (their first column is that key: a parent and the children whose
 * primary key starts with it), the one named after the key: `ticketno` → tickets (not
 * ticket_flights), `empno` → employees (not dept_emp or salaries); not one with a key of its own
 * further on (`salesorderdetail.salesorderdetailid`); the shortest such name, and none when two
 * are as short or none is named so.
 */
function parentOf(key: string, targets: readonly number[], entries: readonly CatalogEntry[]): number | undefined {
  const core = key.replace(/(?:id|key|sk|code|cd|no|num)$/, '');
  if (core.length < 3) return undefined;
  let best: { j: number; length: number; tie: boolean } | undefined;
  for (const j of targets) {
    const t = entries[j]?.table;
    const name = stemName(t?.name ?? '');
    if (!name.startsWith(core) && !core.startsWith(name)) continue;
    // a table with a key of its own further on (salesorderdetail.salesorderdetailid) is a child
    if (t?.columns.slice(1).some((c) => KEY_SUFFIX.test(c.name.toLowerCase()) && normal(c.name).replace(/(?:id|key|sk|code|cd|no|num)$/, '') === name)) continue;
    if (!best || name.length < best.length) best = { j, length: name.length, tie: false };
    else if (name.length === best.length) best.tie = true;
  }
  return best && !best.tie ? best.j : undefined;
}

/**
 * The inferred references of every table, by index. `skip(i)` leaves tables out as sources and
 * targets (copies, which fold onto their originals anyway).
 */
export function inferKeys(entries: readonly CatalogEntry[], skip: (i: number) => boolean = () => false): InferredKey[][] {
  // per schema: normalised key → the tables it is the key of
  const keys = new Map<string, Map<string, number[]>>();
  const note = (schema: string, key: string, i: number): void => {
    if (key.length < MIN_KEY) return;
    const m = keys.get(schema) ?? new Map<string, number[]>();
    const list = m.get(key) ?? [];
    if (!list.includes(i)) list.push(i);
    m.set(key, list);
    keys.set(schema, m);
  };
  entries.forEach((e, i) => {
    if (skip(i)) return;
    const t = e.table;
    const first = t.columns[0]?.name;
    if (first && KEY_SUFFIX.test(first.toLowerCase()) && first.toLowerCase() !== 'id') note(t.schema, normal(first), i);
    const base = stemName(t.name);
    for (const suffix of ['id', 'key', 'sk']) note(t.schema, `${base}${suffix}`, i);
  });
  const out: InferredKey[][] = entries.map(() => []);
  entries.forEach((e, i) => {
    if (skip(i)) return;
    const t = e.table;
    const inSchema = keys.get(t.schema);
    if (!inSchema) return;
    const declared = new Set((t.foreign_keys ?? []).flatMap((fk) => fk.columns.map((c) => c.toLowerCase())));
    const seen = new Set<number>();
    t.columns.forEach((c, k) => {
      const lower = c.name.toLowerCase();
      if (declared.has(lower) || !KEY_SUFFIX.test(lower)) return;
      const n = normal(c.name);
      // the longest key the column ends with (`solddatesk` ends with `datesk`)
      for (let at = 0; at <= n.length - MIN_KEY; at += 1) {
        if (at > 0 && n.length - at < MIN_SUFFIX_KEY) break;
        const targets = inSchema.get(n.slice(at));
        if (!targets) continue;
        // a table's own key column (its first) points nowhere; a key shared by several tables
        // names the one it is named after (`ticket_no` opens tickets, boarding_passes and
        // ticket_flights: tickets is the parent), else none of them
        const others = targets.filter((j) => j !== i);
        let target: number | undefined;
        if (others.length === 1 && !(k === 0 && targets.includes(i))) target = others[0];
        else if (targets.length > 1) {
          const parent = parentOf(n.slice(at), targets, entries);
          if (parent !== i) target = parent;
        }
        if (target !== undefined && !seen.has(target)) {
          seen.add(target);
          out[i]!.push({ column: c.name, target });
        }
        break;
      }
    });
  });
  return out;
}

/**
 * How deep a lineage model may nest to cross a thread (a structured clone) and be walked by the
 * resolver (lineage.ts, recursively): a deeper one is the opaque query instead. Measured without
 * recursion.
 */

/** Objects nested in the model, at most (a subquery level is about six; lineage.ts stops at 64 levels anyway). */
export const MAX_QUERY_NESTING = 1_000;

/** Whether objects and arrays nest deeper than `max` in `root` (iterative). */
export function deeperThan(root: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[root, 1]];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const [value, depth] = item;
    if (depth > max) return true;
    if (value instanceof Map || value instanceof Set) {
      for (const v of value.values()) if (v !== null && typeof v === 'object') stack.push([v, depth + 1]);
    } else if (Array.isArray(value)) {
      for (const v of value) if (v !== null && typeof v === 'object') stack.push([v, depth + 1]);
    } else if (value !== null && typeof value === 'object') {
      for (const v of Object.values(value)) if (v !== null && typeof v === 'object') stack.push([v, depth + 1]);
    }
  }
  return false;
}

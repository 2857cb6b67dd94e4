/** Compact text renderings of tool results: what a model reads, so short and unambiguous. */
import type { Cell } from '../../../protocol/schemas/common.js';

/** Longest cell text shown in the text rendering (the structured content keeps the whole value). */
const CELL_MAX = 80;

function cellText(value: Cell): string {
  if (value === null) return 'NULL';
  const s = String(value).replace(/[\r\n\t]+/g, ' ');
  const escaped = s.replace(/\|/g, '\\|');
  return escaped.length > CELL_MAX ? `${escaped.slice(0, CELL_MAX - 1)}…` : escaped;
}

/** A pipe-separated table: header, then one line per row. */
export function textTable(columns: readonly string[], rows: ReadonlyArray<readonly Cell[]>): string {
  const lines = [columns.map((c) => c.replace(/\|/g, '\\|')).join(' | ')];
  for (const row of rows) lines.push(row.map(cellText).join(' | '));
  return lines.join('\n');
}

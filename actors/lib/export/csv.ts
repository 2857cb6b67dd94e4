/**
 * CSV as RFC 4180 says: fields separated by commas, records ended by CRLF, a field with a comma,
 * a double quote, CR or LF enclosed in double quotes with its quotes doubled; a header record of
 * the column names. UTF-8 with a byte-order mark first: Excel reads a CSV without one in the
 * system's code page and garbles every non-ASCII name, and every CSV reader worth the name
 * skips it (`bom: false` leaves it out). Text cells are formula-safe (cells.ts).
 */
import type { Cell, Column } from '../../../protocol/schemas/common.js';
import { formulaSafe, safeCellText } from './cells.js';

export const CSV_BOM = '\ufeff';
const NEEDS_QUOTES = /[",\r\n]/;

export function csvField(text: string): string {
  return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function csvHeader(columns: readonly Column[], bom = true): string {
  return `${bom ? CSV_BOM : ''}${columns.map((c) => csvField(formulaSafe(c.name))).join(',')}\r\n`;
}

/** Records for a page of rows, each ended by CRLF. */
export function csvRows(rows: readonly Cell[][]): string {
  let out = '';
  for (const row of rows) {
    let line = '';
    for (let i = 0; i < row.length; i++) {
      if (i > 0) line += ',';
      line += csvField(safeCellText(row[i] ?? null));
    }
    out += `${line}\r\n`;
  }
  return out;
}

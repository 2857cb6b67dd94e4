/**
 * One cell as text, and the rule that keeps a cell from running as a formula when the file is
 * opened in a spreadsheet (OWASP "CSV Injection"): a text value that starts with `=`, `+`, `-`,
 * `@`, a tab or a carriage return gets a leading apostrophe, which spreadsheets read as "this is
 * text" and do not show. Numbers and booleans are the database's own values and stay as they are
 * (a negative number is a number, not a formula); the same text in a text column is prefixed.
 */
import type { Cell } from '../../../protocol/schemas/common.js';

const FORMULA_START = /^[=+\-@\t\r]/;

/** Whether a text value would be read as a formula (or a DDE payload) by a spreadsheet. */
export function looksLikeFormula(text: string): boolean {
  return FORMULA_START.test(text);
}

/** Text that cannot start a formula: prefixed with an apostrophe when it could. */
export function formulaSafe(text: string): string {
  return looksLikeFormula(text) ? `'${text}` : text;
}

/** A cell as the text a file shows: null is empty, booleans true/false, numbers as JSON writes them. */
export function cellText(value: Cell): string {
  if (value === null) return '';
  if (typeof value === 'string') return value;
  return String(value);
}

/** A cell as text for a spreadsheet-bound file (csv): text cells made formula-safe. */
export function safeCellText(value: Cell): string {
  return typeof value === 'string' ? formulaSafe(value) : cellText(value);
}

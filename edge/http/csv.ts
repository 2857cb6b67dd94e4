/** The audit log as CSV for the admin export (RFC 4180, CRLF, formula-safe). */

interface Row {
  [key: string]: unknown;
}

const CSV_COLUMNS = ['ts', 'type', 'code', 'user', 'channel', 'request_id', 'event_id', 'payload'] as const;

function csvCell(v: unknown): string {
  const s = v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v);
  // a leading = + - @ would be a formula in a spreadsheet: quote it as text
  const safe = /^[=+\-@\t\r]/.test(s) ? `'${s}` : s;
  return /[",\n\r]/.test(safe) || safe !== s ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** The entries as CSV (RFC 4180, CRLF), with a header row. */
export function toCsv(entries: readonly Row[]): string {
  const lines = [CSV_COLUMNS.join(',')];
  for (const e of entries) lines.push(CSV_COLUMNS.map((c) => csvCell(e[c])).join(','));
  return `${lines.join('\r\n')}\r\n`;
}

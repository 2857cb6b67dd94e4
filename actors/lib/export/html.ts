/**
 * A report as one HTML document: the schedule's name, when it ran, and a plain table. Every name
 * and value is escaped (a cell holding `<script>` shows as text). The same document is the
 * download and, for format html, what the e-mail embeds.
 */
import type { Cell, Column } from '../../../protocol/schemas/common.js';
import { cellText } from './cells.js';
import { escapeHtml } from '../mail/template.js';

const STYLE = 'body{font-family:system-ui,sans-serif;font-size:14px;color:#222}'
  + 'table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}'
  + 'th{background:#f3f3f3}td.n{text-align:right}';

export function htmlStart(title: string, when: string, columns: readonly Column[]): string {
  const t = escapeHtml(title);
  return `<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>${t}</title><style>${STYLE}</style></head><body>\n`
    + `<h1>${t}</h1>\n<p class="generated">${escapeHtml(when)}</p>\n`
    + `<table>\n<thead><tr>${columns.map((c) => `<th>${escapeHtml(c.name)}</th>`).join('')}</tr></thead>\n<tbody>\n`;
}

export function htmlRows(rows: readonly Cell[][]): string {
  let out = '';
  for (const row of rows) {
    out += '<tr>';
    for (const v of row) out += typeof v === 'number' ? `<td class="n">${v}</td>` : `<td>${escapeHtml(cellText(v ?? null))}</td>`;
    out += '</tr>\n';
  }
  return out;
}

export function htmlEnd(rows: number, truncated: boolean): string {
  const note = truncated ? `<p class="note">The first ${rows} rows (export.max_rows).</p>\n` : '';
  return `</tbody>\n</table>\n${note}</body></html>\n`;
}

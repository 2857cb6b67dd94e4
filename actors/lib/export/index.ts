/**
 * Export writers (SPEC.md section export): csv, excel (xlsx) and html, for scheduled reports
 * and for the browser's "download this result". Streamed: pages of rows come from an async
 * iterable (the database cursor, masked page by page) and go to a file as they come; nothing
 * holds the whole result. The caps:
 *
 * - export.max_rows: rows past it are not read (the iterable is closed, which closes the
 *   cursor); `truncated` says so.
 * - export.max_file_size_mb: csv and html stop being written once past it (and the cursor is
 *   closed); xlsx is measured when the zip is done. `too_large` says so; the file is then not
 *   to be sent (the e-mail says why).
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Cell, Column } from '../../../protocol/schemas/common.js';
import type { ExportFormat } from '../../../protocol/schemas/schedules.js';
import { csvHeader, csvRows } from './csv.js';
import { htmlEnd, htmlRows, htmlStart } from './html.js';
import { XlsxWriter } from './xlsx.js';

export { exportFilename, safeFileStem, CONTENT_TYPE, EXTENSION } from './filename.js';
export { formulaSafe, looksLikeFormula } from './cells.js';

export { EXPORT_TTL_MS } from '../../../protocol/schemas/export.js';

export interface Page {
  columns: Column[];
  rows: Cell[][];
}

export interface ExportOptions {
  format: ExportFormat;
  /** where the file is written */
  file: string;
  /** the report's title (schedule name, or the question) */
  title: string;
  /** the line under the title in html ("Generated 2026-11-25 07:30:00 Europe/Paris") */
  when: string;
  maxRows: number;
  maxBytes: number;
  /** csv: a UTF-8 byte-order mark first (default true) */
  bom?: boolean;
}

export interface ExportResult {
  columns: Column[];
  rows: number;
  bytes: number;
  /** rows past maxRows were left unread */
  truncated: boolean;
  /** the file is over maxBytes (csv/html: cut short there) */
  too_large: boolean;
}

/** Write a text chunk, waiting while the stream's buffer is full. */
function write(out: WriteStream, text: string): Promise<void> | undefined {
  if (out.write(text)) return undefined;
  return new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => { out.off('drain', onDrain); reject(err); };
    const onDrain = (): void => { out.off('error', onError); resolve(); };
    out.once('drain', onDrain);
    out.once('error', onError);
  });
}

function closeStream(out: WriteStream): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    out.once('error', reject);
    out.end(() => resolve());
  });
}

/** Read pages into the file until the rows or the bytes run out. */
export async function writeExport(pages: AsyncIterable<Page>, opts: ExportOptions): Promise<ExportResult> {
  const result: ExportResult = { columns: [], rows: 0, bytes: 0, truncated: false, too_large: false };
  let started = false;
  let out: WriteStream | undefined;
  let xlsx: XlsxWriter | undefined;
  const text = opts.format !== 'excel';
  const begin = async (columns: Column[]): Promise<void> => {
    started = true;
    result.columns = columns;
    if (text) {
      out = createWriteStream(opts.file);
      const head = opts.format === 'csv' ? csvHeader(columns, opts.bom ?? true) : htmlStart(opts.title, opts.when, columns);
      result.bytes += Buffer.byteLength(head);
      await write(out, head);
    } else {
      xlsx = new XlsxWriter(opts.file, opts.title, columns);
    }
  };
  try {
    for await (const page of pages) {
      if (!started) await begin(page.columns);
      if (result.rows >= opts.maxRows) {
        if (page.rows.length > 0) {
          result.truncated = true;
          break;
        }
        continue;
      }
      let rows = page.rows;
      if (result.rows + rows.length > opts.maxRows) {
        rows = rows.slice(0, opts.maxRows - result.rows);
        result.truncated = true;
      }
      result.rows += rows.length;
      if (xlsx) {
        await xlsx.rows(rows);
      } else if (out) {
        const chunk = opts.format === 'csv' ? csvRows(rows) : htmlRows(rows);
        result.bytes += Buffer.byteLength(chunk);
        await write(out, chunk);
        if (result.bytes > opts.maxBytes) {
          result.too_large = true;
          break;
        }
      }
      if (result.truncated) break;
    }
    if (!started) await begin([]);
    if (xlsx) {
      await xlsx.end();
      result.bytes = (await stat(opts.file)).size;
      result.too_large = result.bytes > opts.maxBytes;
    } else if (out) {
      if (opts.format === 'html' && !result.too_large) {
        const tail = htmlEnd(result.rows, result.truncated);
        result.bytes += Buffer.byteLength(tail);
        await write(out, tail);
      }
      await closeStream(out);
    }
    return result;
  } catch (err) {
    xlsx?.abort();
    out?.destroy();
    throw err;
  }
}

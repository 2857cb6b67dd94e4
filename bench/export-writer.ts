/**
 * One export writer run of the bench (bench/export.ts), in a child process of its own:
 *   node --import tsx bench/export-writer.ts <csv|excel> <rows>
 * prints {ms, rss_peak_mb, rss_base_mb, bytes, rows[, thread_start_ms]} as one JSON line.
 *
 * The csv run is also bundled (esbuild, from tsx's dependency) and run by plain `node`, so its
 * memory is the writer's and Node's, not the TypeScript loader's (bench/export.ts says which is which).
 * Synthetic pages of 1,000 rows × 20 columns: numbers, text, booleans, nulls, a formula-looking value.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Cell, Column } from '../protocol/schemas/common.js';
import { writeExport, type Page } from '../actors/lib/export/index.js';

export const COLS = 20;
const columns: Column[] = Array.from({ length: COLS }, (_, i) => ({ name: `col_${i}`, type: i % 4 === 0 ? 'integer' : 'text' }));

function row(i: number): Cell[] {
  const out: Cell[] = [];
  for (let j = 0; j < COLS; j++) {
    switch (j % 5) {
      case 0: out.push(i * COLS + j); break;
      case 1: out.push(`name ${i}-${j}`); break;
      case 2: out.push((i % 1000) / 7); break;
      case 3: out.push(i % 11 === 0 ? '=SUM(A1:A2)' : i % 2 === 0); break;
      default: out.push(i % 13 === 0 ? null : `a longer text value, with a comma, row ${i}`);
    }
  }
  return out;
}

async function* synthetic(rows: number): AsyncGenerator<Page> {
  for (let i = 0; i < rows; i += 1000) {
    const page: Cell[][] = [];
    for (let k = i; k < Math.min(rows, i + 1000); k++) page.push(row(k));
    yield { columns, rows: page };
  }
}

/** In a child: one writer run; prints {ms, rss_peak_mb, bytes}. */
export async function writerRun(format: 'csv' | 'excel', rows: number): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'cortado-bench-export-'));
  // the process's own footprint (node, the TypeScript loader, the modules), before any row
  const base = process.memoryUsage().rss;
  let coldMs: number | undefined;
  if (format === 'excel') {
    // the xlsx thread starts (and loads exceljs) on the first export of a process: timed apart
    const t0 = performance.now();
    await writeExport(synthetic(10), { format, file: path.join(dir, 'warm.xlsx'), title: 'bench', when: '', maxRows: 10, maxBytes: 1e12 });
    coldMs = performance.now() - t0;
  }
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 5);
  try {
    const started = performance.now();
    const r = await writeExport(synthetic(rows), { format, file: path.join(dir, `f.${format}`), title: 'bench', when: '', maxRows: rows, maxBytes: 1e12 });
    const ms = performance.now() - started;
    peak = Math.max(peak, process.memoryUsage().rss);
    console.log(JSON.stringify({ ms, rss_peak_mb: peak / 1024 / 1024, rss_base_mb: base / 1024 / 1024, bytes: r.bytes, rows: r.rows, ...(coldMs !== undefined ? { thread_start_ms: coldMs } : {}) }));
  } finally {
    clearInterval(timer);
    rmSync(dir, { recursive: true, force: true });
  }
}

const [, self, format, rows] = process.argv;
if (self === fileURLToPath(import.meta.url) && (format === 'csv' || format === 'excel')) await writerRun(format, Number(rows));

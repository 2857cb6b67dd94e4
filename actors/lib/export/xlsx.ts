/**
 * xlsx through exceljs's streaming WorkbookWriter, in a worker thread: building the zip is CPU
 * work that would otherwise hold the event loop of the process that asked (the executor, or
 * everything in a one-process deployment) for as long as the file takes. One thread per process
 * serves every export, each export a job of its own. The thread is started when the executor
 * starts (warmXlsx) and kept: starting it and loading exceljs took about 1–2 s on a quiet
 * machine and far more on a busy one, which made a 12-row xlsx report take seconds where its csv
 * took a tenth of one (issue 28); a warm thread writes it in tens of ms. An idle thread never
 * keeps the process alive. Rows go to the thread a page at a time, each page acknowledged before the
 * next is sent, so neither side holds more than a page; the thread writes the file itself.
 *
 * Text cells are written as text (inline strings), never as formulas: exceljs writes a formula
 * only for a `{formula}` value, which a database value never is. So a cell `=HYPERLINK(…)`
 * shows as those characters and keeps its exact value when read back. (XML has no lone CR: a
 * line break inside a cell reads back as LF, as Excel writes it.)
 */
import { Worker } from 'node:worker_threads';
import type { Cell, Column } from '../../../protocol/schemas/common.js';

const WORKER = new URL('./xlsx-worker.mjs', import.meta.url);

/** A worksheet name Excel takes: at most 31 characters, none of []:*?/\ . */
export function sheetName(title: string): string {
  const s = title.replace(/[[\]:*?/\\]/g, ' ').replace(/^'+|'+$/g, '').trim().slice(0, 31).trim();
  return s || 'Report';
}

type FromWorker = { type: 'ack' | 'done'; id: number } | { type: 'error'; id: number; message: string };
interface Waiter { resolve: () => void; reject: (e: Error) => void; want: 'ack' | 'done' }

/** The process's xlsx thread. */
class XlsxThread {
  private worker: Worker | undefined;
  private readonly waiting = new Map<number, Waiter>();
  private readonly failed = new Map<number, Error>();
  private nextId = 1;
  private jobs = 0;

  private thread(): Worker {
    if (this.worker) return this.worker;
    // plain JavaScript: no loader (the parent's --import tsx would only slow the start)
    const w = new Worker(WORKER, { execArgv: [] });
    w.on('message', (m: FromWorker) => {
      const waiter = this.waiting.get(m.id);
      if (m.type === 'error') {
        const e = new Error(`cannot write the xlsx file: ${m.message}`);
        this.failed.set(m.id, e);
        this.waiting.delete(m.id);
        waiter?.reject(e);
      } else if (waiter && m.type === waiter.want) {
        this.waiting.delete(m.id);
        waiter.resolve();
      }
    });
    const lost = (err: Error): void => {
      if (this.worker !== w) return;
      this.worker = undefined;
      for (const [id, waiter] of this.waiting) {
        this.failed.set(id, err);
        waiter.reject(err);
      }
      this.waiting.clear();
    };
    w.on('error', lost);
    w.on('exit', (code) => lost(new Error(`the xlsx writer stopped (exit ${code})`)));
    this.worker = w;
    return w;
  }

  /** Start the thread now (it loads exceljs as it starts), so the first export does not wait for it. */
  warm(): void {
    const w = this.thread();
    if (this.jobs === 0) w.unref();
  }

  open(): number {
    this.jobs++;
    return this.nextId++;
  }

  close(id: number): void {
    this.failed.delete(id);
    this.waiting.delete(id);
    this.worker?.postMessage({ type: 'abort', id });
    // an idle thread never keeps the process alive
    if (--this.jobs === 0) this.worker?.unref();
  }

  ask(id: number, message: Record<string, unknown>, want: 'ack' | 'done'): Promise<void> {
    const failed = this.failed.get(id);
    if (failed) return Promise.reject(failed);
    const w = this.thread();
    w.ref();
    return new Promise<void>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject, want });
      w.postMessage({ ...message, id });
    });
  }
}

const shared = new XlsxThread();

/** Start the process's xlsx thread ahead of the first excel export (the executor, when export.formats offers excel). */
export function warmXlsx(): void {
  shared.warm();
}

export class XlsxWriter {
  private readonly id = shared.open();
  private readonly started: Promise<void>;
  private closed = false;

  constructor(file: string, title: string, columns: readonly Column[]) {
    this.started = shared.ask(this.id, { type: 'begin', file, sheet: sheetName(title), columns: columns.map((c) => ({ name: c.name })) }, 'ack');
    this.started.catch(() => undefined);
  }

  /** One page of rows; resolves once the thread wrote them. */
  async rows(rows: readonly Cell[][]): Promise<void> {
    await this.started;
    await shared.ask(this.id, { type: 'rows', rows }, 'ack');
  }

  /** Finish the file. */
  async end(): Promise<void> {
    try {
      await this.started;
      await shared.ask(this.id, { type: 'end' }, 'done');
    } finally {
      this.abort();
    }
  }

  /** Drop the job (the file may be incomplete: the caller removes it). */
  abort(): void {
    if (this.closed) return;
    this.closed = true;
    shared.close(this.id);
  }
}

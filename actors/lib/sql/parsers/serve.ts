/**
 * The worker thread's side of a parser pool (pool.ts): take one job at a time from the parent,
 * run it, answer. Jobs are plain functions of plain data (`ops`); what they return crosses as a
 * structured clone, so it must be plain data too (objects, arrays, Maps, Sets; no classes).
 *
 * A CortadoError thrown by a job is an answer (the SQL is refused, with its code, message and
 * details). Anything else is the parser breaking (a stack overflow, a WASM trap, a bug): the
 * answer says so, and the parent throws this worker away (it may be broken for the next job).
 */
import { parentPort } from 'node:worker_threads';
import { CortadoError } from '../../../../protocol/errors.js';

/** parent → worker */
export interface JobMessage {
  id: number;
  op: string;
  args: unknown;
  /** shared state the parent changed since this worker last saw it, by key */
  state?: Record<string, unknown>;
}

/** worker → parent */
export type WorkerMessage =
  | { type: 'ready' }
  | { type: 'done'; id: number; value: unknown }
  | { type: 'refused'; id: number; code: string; message: string; details?: Record<string, unknown> }
  | { type: 'broke'; id: number; message: string };

export interface ServeOptions {
  /** runs once before the first job (load the parsers); the parent counts the worker started when it ends */
  prepare?: () => Promise<void>;
  /** the parent's shared state, when it changed (pool.ts `setState`) */
  state?: (key: string, value: unknown) => void;
}

export async function serveParsers(ops: Record<string, (args: never) => unknown>, opts: ServeOptions = {}): Promise<void> {
  const port = parentPort;
  if (!port) throw new Error('serveParsers runs in a worker thread');
  await opts.prepare?.();
  const send = (m: WorkerMessage): void => {
    try {
      port.postMessage(m);
    } catch (err) {
      // a value that does not clone is a bug of the job: the parent must not wait for it
      if (m.type === 'ready') throw err;
      port.postMessage({ type: 'broke', id: m.id, message: `the answer cannot be sent: ${(err as Error).message}` } satisfies WorkerMessage);
    }
  };
  port.on('message', (job: JobMessage) => {
    void (async () => {
      try {
        for (const [key, value] of Object.entries(job.state ?? {})) opts.state?.(key, value);
        const op = ops[job.op];
        if (!op) throw new Error(`no such parser job: ${job.op}`);
        send({ type: 'done', id: job.id, value: await op(job.args as never) });
      } catch (err) {
        if (err instanceof CortadoError) {
          send({ type: 'refused', id: job.id, code: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) });
        } else {
          const e = err as { name?: string; message?: string } | undefined;
          send({ type: 'broke', id: job.id, message: `${e?.name ?? 'Error'}: ${e?.message ?? String(err)}` });
        }
      }
    })();
  });
  send({ type: 'ready' });
}

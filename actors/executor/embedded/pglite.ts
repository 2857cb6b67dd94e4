/**
 * The embedded demo database, seen from the executor: starts server.ts in a worker thread
 * (worker.ts) and answers where `pg` finds it. Same contract as a server of our own:
 * `stop()` closes it. Two starts on one directory in this process are refused here (the
 * lock file in server.ts handles other processes).
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { CortadoError, type ErrorCode } from '../../../protocol/errors.js';
import type { Logger } from '../../../runtime/log.js';

export interface EmbeddedServer {
  host: string;
  port: number;
  database: string;
  user: string;
  stop(): Promise<void>;
}

const held = new Set<string>();
const STOP_TIMEOUT_MS = 10_000;

type FromWorker =
  | { type: 'log'; line: string }
  | { type: 'ready'; server: Omit<EmbeddedServer, 'stop'> }
  | { type: 'failed'; code: ErrorCode; message: string }
  | { type: 'stopped' };

export async function startEmbeddedPostgres(opts: { dir: string; maxConnections: number; log: Logger }): Promise<EmbeddedServer> {
  const dir = path.resolve(opts.dir);
  if (held.has(dir)) {
    throw new CortadoError('CONFIG_INVALID', `the embedded database directory ${dir} is in use by this process; set database.postgresql.embedded_dir to another directory`);
  }
  held.add(dir);
  // TypeScript in the worker: its entry registers the tsx loader first, as bin/cortado.js does
  const worker = new Worker(new URL('./worker-entry.mjs', import.meta.url), { execArgv: withoutLoaders(process.execArgv) });
  worker.unref();
  const listeners = new Set<(msg: FromWorker) => void>();
  worker.on('message', (msg: FromWorker) => {
    if (msg.type === 'log') relayLog(opts.log, msg.line);
    else for (const l of listeners) l(msg);
  });
  const next = (want: FromWorker['type'][]) =>
    new Promise<FromWorker>((resolve, reject) => {
      const onMsg = (msg: FromWorker) => {
        if (!want.includes(msg.type)) return;
        cleanup();
        resolve(msg);
      };
      const onExit = (code: number) => {
        cleanup();
        reject(new CortadoError('CONFIG_INVALID', `the embedded database stopped unexpectedly (worker exit ${code})`));
      };
      const onError = (err: Error) => {
        cleanup();
        reject(new CortadoError('CONFIG_INVALID', `the embedded database failed: ${err.message}`, undefined, { cause: err }));
      };
      const cleanup = () => {
        listeners.delete(onMsg);
        worker.off('exit', onExit);
        worker.off('error', onError);
      };
      listeners.add(onMsg);
      worker.once('exit', onExit);
      worker.once('error', onError);
    });

  worker.postMessage({ type: 'start', dir, maxConnections: opts.maxConnections });
  let first: FromWorker;
  try {
    first = await next(['ready', 'failed']);
  } catch (err) {
    held.delete(dir);
    await worker.terminate();
    throw err;
  }
  if (first.type !== 'ready') {
    held.delete(dir);
    await worker.terminate();
    const f = first as Extract<FromWorker, { type: 'failed' }>;
    throw new CortadoError(f.code, f.message);
  }
  worker.on('error', (err) => opts.log.error({ err: err.message }, 'embedded database: the worker failed'));

  let stopping: Promise<void> | undefined;
  const stop = async (): Promise<void> => {
    const stopped = next(['stopped']).catch(() => undefined);
    worker.postMessage({ type: 'stop' });
    await Promise.race([stopped, new Promise((r) => setTimeout(r, STOP_TIMEOUT_MS).unref())]);
    await worker.terminate();
    held.delete(dir);
  };
  return { ...first.server, stop: () => (stopping ??= stop()) };
}

/** The parent's flags minus its module loaders (`--import x`, `--require=x`, ...): the entry registers its own. */
function withoutLoaders(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (/^--(import|require|loader|experimental-loader)$/.test(a) || a === '-r') {
      i++; // and its value
      continue;
    }
    if (/^--(import|require|loader|experimental-loader)=/.test(a)) continue;
    out.push(a);
  }
  return out;
}

function relayLog(log: Logger, line: string): void {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return;
  }
  const { level, msg, time: _t, pid: _p, hostname: _h, ...rest } = rec;
  const text = typeof msg === 'string' ? msg : '';
  const n = typeof level === 'number' ? level : 30;
  if (n >= 50) log.error(rest, text);
  else if (n >= 40) log.warn(rest, text);
  else if (n >= 30) log.info(rest, text);
  else log.debug(rest, text);
}

/**
 * The worker thread the embedded database lives in (started by pglite.ts). PGlite runs
 * queries synchronously on its thread; here, a slow query stalls only this thread, while the
 * executor's timers, the bus and HTTP keep running in the main one.
 *
 * Messages in:  {type:'start', dir, maxConnections} | {type:'stop'}
 * Messages out: {type:'log', line} | {type:'ready', server} | {type:'failed', code, message} | {type:'stopped'}
 */
import { parentPort } from 'node:worker_threads';
import pino from 'pino';
import { toCortadoError } from '../../../protocol/errors.js';
import { startEmbeddedPostgres } from './server.js';

const port = parentPort;
if (!port) throw new Error('actors/executor/embedded/worker.ts runs as a worker thread');

// every log line goes to the main thread, which writes it with its own logger
const log = pino({ level: 'debug' }, { write: (line: string) => port.postMessage({ type: 'log', line }) });

let running: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;

port.on('message', (msg: { type: string; dir?: string; maxConnections?: number }) => {
  if (msg.type === 'start') {
    startEmbeddedPostgres({ dir: msg.dir ?? '', maxConnections: msg.maxConnections ?? 10, log }).then(
      (server) => {
        running = server;
        const { host, port: pgPort, database, user } = server;
        port.postMessage({ type: 'ready', server: { host, port: pgPort, database, user } });
      },
      (err: unknown) => {
        const e = toCortadoError(err);
        const message = e.code === 'INTERNAL' ? `the embedded database did not start: ${(err as Error).message}` : e.message;
        port.postMessage({ type: 'failed', code: e.code === 'INTERNAL' ? 'CONFIG_INVALID' : e.code, message });
      },
    );
  } else if (msg.type === 'stop') {
    void (running?.stop() ?? Promise.resolve()).finally(() => port.postMessage({ type: 'stopped' }));
  }
});

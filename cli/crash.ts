/**
 * What no request can do: end the process. The bus already turns whatever a handler throws or
 * rejects into an error reply; what is left is a throw from a callback nobody awaits (a driver's
 * socket handler, a timer) and a rejected promise nobody handles. Node ends the process on
 * either; here they are logged, with the request when it is known, and the process keeps
 * serving. The request whose work failed that way gets no answer from it: it runs into its
 * timeout (the executor's backstop, the bus's TIMEOUT), the others carry on.
 *
 * Two cases still end the process (exit code 70), for a supervisor to start a clean one:
 * - a throw from the bus client itself (its stack is in @nats-io): without a working bus
 *   connection the process cannot serve anything, and its state is not to be trusted;
 * - more than MAX_FAILURES uncaught exceptions within WINDOW_MS: something fails on every
 *   request, and a process that only logs is not serving.
 */
import type { Logger } from '../runtime/log.js';
import type { RequestInFlight } from '../runtime/bus.js';

export const CRASH_EXIT_CODE = 70;
const MAX_FAILURES = 20;
const WINDOW_MS = 60_000;
/** request ids named in one log line, at most */
const MAX_NAMED = 20;

export interface ContainOptions {
  log: Logger;
  /** the requests whose handlers run in this process now */
  requestsInFlight: () => RequestInFlight[];
  /** how the process ends when it must (default process.exit) */
  exit?: (code: number) => void;
}

/** Install the process-level handlers; returns a function that removes them. */
export function containCrashes(opts: ContainOptions): () => void {
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  const recent: number[] = [];

  const where = (): Record<string, unknown> => {
    const running = opts.requestsInFlight();
    // one request under way: it is the one; else every candidate, for the operator to look up
    if (running.length === 1) return { rid: running[0]!.rid, subj: running[0]!.subj };
    return { in_flight: running.slice(0, MAX_NAMED), in_flight_count: running.length };
  };

  const onException = (err: unknown, origin: string): void => {
    const line = { err, origin, ...where() };
    if (fromBus(err)) {
      opts.log.fatal(line, 'the bus connection failed in a way nobody handled: exiting so that a clean process can take over');
      exit(CRASH_EXIT_CODE);
      return;
    }
    const now = Date.now();
    recent.push(now);
    while (recent.length && recent[0]! < now - WINDOW_MS) recent.shift();
    if (recent.length > MAX_FAILURES) {
      opts.log.fatal({ ...line, failures: recent.length, window_ms: WINDOW_MS }, 'too many unexpected failures in a row: exiting so that a clean process can take over');
      exit(CRASH_EXIT_CODE);
      return;
    }
    opts.log.error(line, 'an unexpected failure was contained; the process keeps running (the request it belonged to, if any, runs into its timeout)');
  };

  const onRejection = (reason: unknown): void => {
    opts.log.error({ err: reason, ...where() }, 'a promise was rejected and nobody handled it; the process keeps running');
  };

  process.on('uncaughtException', onException);
  process.on('unhandledRejection', onRejection);
  return () => {
    process.off('uncaughtException', onException);
    process.off('unhandledRejection', onRejection);
  };
}

/** Whether an error was thrown by the NATS client's own code. */
function fromBus(err: unknown): boolean {
  const stack = (err as { stack?: unknown } | null)?.stack;
  if (typeof stack !== 'string') return false;
  // the first frames say where it was thrown; a frame of ours above them means our callback threw
  const frames = stack.split('\n').filter((l) => /^\s+at /.test(l)).slice(0, 3);
  return frames.length > 0 && frames.every((f) => /[\\/]node_modules[\\/]@nats-io[\\/]|node:/.test(f)) && frames.some((f) => /@nats-io/.test(f));
}

/**
 * Cortado as an operator runs it: the `cortado` command in a child process, its output kept
 * for assertions, SIGKILLed at the end of the test file if it still runs. And `until`, the
 * polling wait every real-process test needs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import { ROOT } from '../../config/load.js';
import { endWithProcess } from './leftovers.js';

export interface Proc {
  child: ChildProcess;
  /** stdout and stderr as they came, interleaved */
  output(): string;
  /** the exit code (null when ended by a signal) */
  exited: Promise<number | null>;
}

export interface CortadoOptions {
  /** CORTADO_LOG_LEVEL of the process (default info) */
  logLevel?: string;
  /** node options before the script (`--import` a fixture) */
  nodeArgs?: string[];
  env?: Record<string, string>;
  /** keep only the last this many characters of output (a long run under load) */
  keepChars?: number;
}

export function cortado(args: string[], opts: CortadoOptions = {}): Proc {
  const child = endWithProcess(spawn(process.execPath, [...(opts.nodeArgs ?? []), path.join(ROOT, 'bin/cortado.js'), ...args], {
    cwd: ROOT,
    env: { ...process.env, CORTADO_LOG_LEVEL: opts.logLevel ?? 'info', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  }));
  let out = '';
  const keep = opts.keepChars;
  const add = (d: Buffer): void => {
    out += d.toString();
    if (keep !== undefined && out.length > keep * 2) out = out.slice(-keep);
  };
  child.stdout?.on('data', add);
  child.stderr?.on('data', add);
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); });
  return { child, output: () => (keep !== undefined ? out.slice(-keep) : out), exited };
}

/** Polls `check` every 100 ms until it is true (a throw counts as false); throws naming `what` after `ms`. */
export async function until(what: string, check: () => Promise<boolean> | boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await Promise.resolve().then(check).catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * Connecting to NATS, and starting a private nats-server when none answers and one is
 * installed: the repo's nats.conf, data under data/nats, stopped when Cortado stops.
 *
 * Only the one-process demo (`cortado` with every role) starts one. A process that runs part of
 * a deployment (`--role edge`, `--role actors…`) joins a broker someone else runs: were it to
 * start its own while that one is down, it would take the broker's port (the real one then
 * cannot start, "address already in use"), and stopping that process would be a second outage.
 * A broker we started ends with us, even when we are killed: a watchdog holding a pipe from this
 * process stops it once the pipe closes.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Bus } from '../runtime/bus.js';
import type { Logger } from '../runtime/log.js';
import { ROOT } from '../config/load.js';
import type { Config } from '../config/schema.js';

export interface BusHandle {
  bus: Bus;
  /** the nats-server we started, if we did */
  child?: ChildProcess;
}

function natsServerOnPath(): boolean {
  return spawnSync('nats-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

/**
 * `mayStart`: whether this process may start a broker (bus.autostart): only the one-process demo.
 */
export async function connectBus(config: Config, log: Logger, name: string, mayStart = true): Promise<BusHandle> {
  const opts = {
    url: config.bus.url, prefix: config.bus.prefix, name, log, strict: process.env.CORTADO_STRICT === '1', preferLocal: config.bus.prefer_local,
    outboxMaxEvents: config.bus.outbox_max_events, replicas: config.bus.replicas,
  };
  try {
    return { bus: await Bus.connect(opts) };
  } catch (first) {
    const url = safeUrl(config.bus.url);
    if (!config.bus.autostart || !url || !['127.0.0.1', 'localhost', '::1'].includes(url.hostname)) {
      throw new Error(`cannot reach NATS at ${config.bus.url} (${(first as Error).message}). Start a nats-server there, or set bus.url in the config.`);
    }
    if (!mayStart) {
      throw new Error(
        `cannot reach NATS at ${config.bus.url} (${(first as Error).message}). This process runs part of a deployment (--role), so it does not ` +
          `start a broker of its own (bus.autostart is for the one-process demo): start the deployment's nats-server, or fix bus.url.`,
      );
    }
    if (!natsServerOnPath()) {
      throw new Error(
        `cannot reach NATS at ${config.bus.url}, and nats-server is not installed. Install it (Debian/Ubuntu: apt-get install nats-server; ` +
          `macOS: brew install nats-server; or https://github.com/nats-io/nats-server/releases) or point bus.url at a running server.`,
      );
    }
    const port = url.port || '4222';
    // one store per port: two private servers never share a JetStream directory
    const dataDir = path.join(ROOT, 'data', port === '4222' ? 'nats' : `nats-${port}`);
    mkdirSync(dataDir, { recursive: true });
    // nats.conf's monitoring port (8222) goes with the default port; another port gets a free one
    const monitor = port === '4222' ? [] : ['-m', '-1'];
    const host = url.hostname === 'localhost' ? '127.0.0.1' : url.hostname;
    const child = spawn('nats-server', ['-c', path.join(ROOT, 'nats.conf'), '-a', host, '-p', port, ...monitor, '-sd', dataDir], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => { stderr = (stderr + d.toString()).slice(-4000); });
    if (child.pid !== undefined) watch(child);
    log.warn({ port, dataDir, pid: child.pid }, 'no NATS answered: started nats-server with nats.conf (it stops when this process stops)');
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`nats-server exited (code ${child.exitCode}): ${stderr.trim().split('\n').pop() ?? ''}`);
      try {
        return { bus: await Bus.connect({ ...opts, connectTimeoutMs: 500 }), child };
      } catch (err) {
        if (Date.now() > deadline) {
          child.kill('SIGKILL');
          throw new Error(`nats-server did not become ready: ${(err as Error).message}`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
}

/** each started broker's watchdog */
const watchdogs = new WeakMap<ChildProcess, ChildProcess>();

/**
 * A broker must not outlive the process that started it unnoticed: a `kill -9` of Cortado would
 * leave it holding the port. The watchdog (a shell) reads a pipe whose other end only this
 * process holds; the kernel closes it however we end, and the watchdog then stops the broker
 * (SIGTERM, SIGKILL 5 s later if it still runs). It ignores SIGINT: a Ctrl-C reaches the whole
 * process group, and stopping the broker is then our job (stopChild), in order.
 */
function watch(broker: ChildProcess): void {
  const script = 'trap "" INT; read _; kill -TERM "$1" 2>/dev/null || exit 0; sleep 5; kill -KILL "$1" 2>/dev/null; exit 0';
  const dog = spawn('sh', ['-c', script, 'cortado-nats-watchdog', String(broker.pid)], { stdio: ['pipe', 'ignore', 'ignore'] });
  dog.on('error', () => undefined);
  dog.stdin?.on('error', () => undefined);
  // neither the watchdog nor its pipe keeps this process's event loop alive
  dog.unref();
  (dog.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  watchdogs.set(broker, dog);
}

export async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child) return;
  const dog = watchdogs.get(child);
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  // the broker is gone: the watchdog has nothing left to stop
  dog?.kill('SIGKILL');
}

function safeUrl(u: string): URL | undefined {
  try {
    return new URL(u.includes('://') ? u : `nats://${u}`);
  } catch {
    return undefined;
  }
}

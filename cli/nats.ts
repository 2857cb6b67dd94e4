/**
 * Connecting to NATS, and starting a private nats-server when none answers and one is
 * installed: the repo's nats.conf, data under data/nats, stopped when Cortado stops.
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

export async function connectBus(config: Config, log: Logger, name: string): Promise<BusHandle> {
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
    log.info({ port, dataDir }, 'no NATS answered: started nats-server with nats.conf');
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

export async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
  if (child.exitCode === null) child.kill('SIGKILL');
}

function safeUrl(u: string): URL | undefined {
  try {
    return new URL(u.includes('://') ? u : `nats://${u}`);
  } catch {
    return undefined;
  }
}

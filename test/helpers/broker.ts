/**
 * A nats-server (JetStream on) that a test can kill (`kill -9`) and start again on the same port
 * and the same store, as an operator's broker crashes and comes back. `maxFileStore` limits
 * JetStream's file storage (a tiny one cannot keep the event stream: "insufficient storage
 * resources available").
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { endWithProcess } from './leftovers.js';

export interface Broker {
  url: string;
  port: number;
  /** the running server's process, if it runs */
  readonly proc: ChildProcess | undefined;
  /** start the server (again): same port, same store */
  start(): Promise<void>;
  /** SIGKILL: no goodbye to the clients, nothing flushed */
  kill(): Promise<void>;
  /** stop it and remove its store */
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((r) => srv.close(r));
  return port;
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

export async function startBroker(opts: { maxFileStore?: string } = {}): Promise<Broker> {
  const dir = mkdtempSync(path.join(tmpdir(), 'cortado-broker-'));
  const port = await freePort();
  const conf = path.join(dir, 'nats.conf');
  const store = JSON.stringify(path.join(dir, 'js'));
  writeFileSync(conf, `listen: "127.0.0.1:${port}"\njetstream {\n  store_dir: ${store}\n${opts.maxFileStore ? `  max_file_store: ${opts.maxFileStore}\n` : ''}}\n`);
  let proc: ChildProcess | undefined;
  let stderr = '';

  const gone = async (): Promise<void> => {
    const p = proc;
    proc = undefined;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    await new Promise((r) => p.once('exit', r));
  };

  const broker: Broker = {
    url: `nats://127.0.0.1:${port}`,
    port,
    get proc() { return proc; },
    async start() {
      if (proc) throw new Error('the broker runs already');
      const p = endWithProcess(spawn('nats-server', ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] }));
      p.stderr?.on('data', (d: Buffer) => { stderr = (stderr + d.toString()).slice(-4000); });
      proc = p;
      const end = Date.now() + 10_000;
      while (!(await portOpen(port))) {
        if (p.exitCode !== null) throw new Error(`nats-server exited: ${stderr}`);
        if (Date.now() > end) { await broker.kill(); throw new Error(`nats-server did not listen on ${port}: ${stderr}`); }
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async kill() {
      const p = proc;
      if (!p) return;
      const exited = gone();
      p.kill('SIGKILL');
      await exited;
    },
    async stop() {
      const p = proc;
      if (p) {
        const exited = gone();
        p.kill('SIGTERM');
        const timer = setTimeout(() => p.kill('SIGKILL'), 3_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
    },
  };
  await broker.start();
  return broker;
}

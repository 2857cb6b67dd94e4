/**
 * A private nats-server (JetStream on) per test file: random port, its own store dir.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { endWithProcess } from './leftovers.js';

export interface NatsServer {
  url: string;
  port: number;
  dir: string;
  proc: ChildProcess;
  stop(): Promise<void>;
}

export async function startNats(opts: { jetstream?: boolean } = {}): Promise<NatsServer> {
  const dir = mkdtempSync(path.join(tmpdir(), 'cortado-nats-'));
  const args = ['-a', '127.0.0.1', '-p', '-1', '--ports_file_dir', dir];
  if (opts.jetstream !== false) args.push('-js', '-sd', path.join(dir, 'js'));
  const proc = endWithProcess(spawn('nats-server', args, { stdio: ['ignore', 'ignore', 'pipe'] }));
  let stderr = '';
  proc.stderr?.on('data', (d: Buffer) => { stderr += d.toString(); });
  const started = Date.now();
  let port = 0;
  const fail = (why: string): never => {
    // a server that did not come up in time is not left to come up later, nor its store
    proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`nats-server ${why}: ${stderr}`);
  };
  while (!port) {
    if (proc.exitCode !== null) fail('exited');
    if (Date.now() - started > 10_000) fail('did not start');
    const f = readdirSync(dir).find((n) => n.endsWith('.ports'));
    if (f) {
      try {
        const ports = JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as { nats: string[] };
        port = Number(new URL(ports.nats[0] ?? '').port);
      } catch { /* being written */ }
    }
    if (!port) await new Promise((r) => setTimeout(r, 25));
  }
  const url = `nats://127.0.0.1:${port}`;
  return {
    url, port, dir, proc,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
        if (proc.exitCode === null && proc.signalCode === null) {
          // a loaded machine may take longer to flush JetStream: kill it, and wait until it is
          // gone before removing its store (a still-writing server makes rm fail, ENOTEMPTY)
          proc.kill('SIGKILL');
          await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
        }
      }
      try {
        rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
      } catch (err) {
        console.error(`cleanup: cannot remove the nats-server store ${dir}:`, err);
      }
    },
  };
}

/**
 * A closed-loop HTTP load generator: `connections` clients on keep-alive sockets, each
 * sending the next request when the previous answer arrives, for `seconds` after a warm-up.
 */
import http from 'node:http';

export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
}

export async function load(opts: {
  url: string;
  body: unknown;
  connections: number;
  seconds: number;
  warmupSeconds?: number;
  check?: (status: number, body: string) => boolean;
  /** called when the measured part starts and when it ends (CPU accounting) */
  onMeasure?: (phase: 'start' | 'end') => void;
}): Promise<LoadResult> {
  const u = new URL(opts.url);
  const payload = Buffer.from(JSON.stringify(opts.body));
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.connections });
  const once = (): Promise<{ ok: boolean; ms: number }> =>
    new Promise((resolve) => {
      const t0 = performance.now();
      const req = http.request(
        { host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': payload.length } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const ok = res.statusCode === 200 && (opts.check ? opts.check(res.statusCode, text) : true);
            resolve({ ok, ms: performance.now() - t0 });
          });
        },
      );
      req.on('error', () => resolve({ ok: false, ms: performance.now() - t0 }));
      req.end(payload);
    });

  const run = async (seconds: number, record: boolean) => {
    const lat: number[] = [];
    let errors = 0;
    const until = performance.now() + seconds * 1000;
    await Promise.all(
      Array.from({ length: opts.connections }, async () => {
        while (performance.now() < until) {
          const r = await once();
          if (!record) continue;
          if (r.ok) lat.push(r.ms);
          else errors++;
        }
      }),
    );
    return { lat, errors };
  };
  await run(opts.warmupSeconds ?? 2, false);
  opts.onMeasure?.('start');
  const started = performance.now();
  const { lat, errors } = await run(opts.seconds, true);
  const seconds = (performance.now() - started) / 1000;
  opts.onMeasure?.('end');
  agent.destroy();
  lat.sort((a, b) => a - b);
  const pct = (p: number) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))]! : NaN);
  return { requests: lat.length, errors, seconds, rps: lat.length / seconds, p50: pct(50), p90: pct(90), p99: pct(99) };
}

/**
 * `metrics.listen: host:port`: this process's metrics (runtime/metrics.ts) on a listener of its
 * own, in any role — an actor-only process has no edge, and an operator may keep the metrics
 * off the public port. It answers `GET /metrics` and `GET /health` (and HEAD), without
 * authentication: bind it to an address only Prometheus and the orchestrator's probes reach.
 *
 * `/health` here is the process's own: 200 while it runs with its bus connection up or
 * reconnecting (the NATS client reconnects by itself: restarting the process would not help),
 * 503 once it is stopping or its connection closed for good. The edge's `/health` (database,
 * model) stays on the edge's port.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CortadoError } from '../protocol/errors.js';
import type { Logger } from '../runtime/log.js';
import { metricsText } from '../runtime/metrics.js';

export interface MetricsListener {
  readonly port: number;
  close(): Promise<void>;
}

/** `host:port` (`:9464` and `0.0.0.0:9464` bind every address; `[::1]:9464` an IPv6 one). */
export function parseListen(listen: string): { host: string; port: number } {
  const m = /^(.*):(\d{1,5})$/.exec(listen.trim());
  const port = m ? Number(m[2]) : NaN;
  if (!m || !(port >= 0 && port <= 65535)) throw new CortadoError('CONFIG_INVALID', `metrics.listen: "${listen}" is not host:port`);
  const host = m[1]!.replace(/^\[(.*)\]$/, '$1');
  return { host: host || '0.0.0.0', port };
}

/**
 * What `/health` on the listener reports: `ok` false answers 503 (`unavailable`); `degraded` true
 * answers 200 `degraded` — the process runs, but something it serves fails (a restart would not help).
 */
export type ProcessHealth = () => { ok: boolean; degraded?: boolean; [detail: string]: unknown };

export async function startMetricsListener(listen: string, log: Logger, health?: ProcessHealth): Promise<MetricsListener> {
  const { host, port } = parseListen(listen);
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics' && path !== '/health') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('only /metrics and /health are here\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end(`GET ${path}\n`);
      return;
    }
    if (path === '/health') {
      const { ok, degraded, ...detail } = health ? health() : { ok: true };
      const body = JSON.stringify({ status: !ok ? 'unavailable' : degraded ? 'degraded' : 'ok', ...detail });
      res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    metricsText().then(
      ({ contentType, text }) => { res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : text); },
      (err: unknown) => {
        log.error({ err }, 'cannot collect the metrics');
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('cannot collect the metrics\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(new CortadoError('CONFIG_INVALID', `metrics.listen: cannot listen on ${listen}: ${err.message}`)));
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  log.info({ host, port: bound }, `metrics on http://${host === '0.0.0.0' ? 'localhost' : host}:${bound}/metrics`);
  return {
    port: bound,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

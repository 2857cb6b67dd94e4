/**
 * GET /metrics: this process's metrics in the Prometheus text format (runtime/metrics.ts).
 *
 * On the edge's own port it is protected: `Authorization: Bearer <metrics.token>` (a scraper),
 * or the admin panel's session (a person looking). The route is declared `none` and checks
 * itself, because its credential is neither a session nor an API token: the metrics token is
 * compared here in constant time and never logged; the admin session is resolved by the caller
 * module like any admin route's. With `metrics.listen` set the metrics are served on that
 * listener only (cli/metrics-listener.ts) and this route answers 404, as it does with
 * `metrics.enabled: false`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Bus } from '../../../runtime/bus.js';
import { CortadoError } from '../../../protocol/errors.js';
import { HTTP_REQUEST_ID } from '../../../protocol/headers.js';
import { metricsText } from '../../../runtime/metrics.js';
import type { Config } from '../../../config/schema.js';
import { createCallerResolver } from '../../caller.js';
import { SECURITY_HEADERS } from '../reply.js';
import type { Router } from '../router.js';

export function metricsRoutes(router: Router, deps: { bus: Bus; config: Config }): void {
  const callers = createCallerResolver({ bus: deps.bus, config: deps.config });
  router.get('/metrics', { auth: 'none', summary: 'this process\'s metrics in the Prometheus text format (Bearer metrics.token, or the admin session)', produces: 'text/plain' }, async (req, res, ctx) => {
    const m = deps.config.metrics;
    if (!m.enabled) throw new CortadoError('NOT_FOUND', 'metrics are off (metrics.enabled is false)');
    if (m.listen) throw new CortadoError('NOT_FOUND', 'metrics are served on their own listener (metrics.listen)');
    if (!tokenMatches(req.headers.authorization, m.token)) {
      await callers.resolve('admin', req, ctx.rid).catch((err: unknown) => {
        if (err instanceof CortadoError && (err.code === 'UNAUTHORIZED' || err.code === 'NOT_FOUND' || err.code === 'FORBIDDEN')) {
          throw new CortadoError('UNAUTHORIZED', 'send Authorization: Bearer <metrics.token>, or sign in to the admin panel');
        }
        throw err;
      });
    }
    const { contentType, text } = await metricsText();
    res.send(200, { 'content-type': contentType, 'cache-control': 'no-store', [HTTP_REQUEST_ID]: ctx.rid, ...SECURITY_HEADERS }, text);
  });
}

/** `Bearer <token>` against metrics.token, in constant time; an empty token matches nothing. */
function tokenMatches(header: string | undefined, token: string): boolean {
  if (!token || !header) return false;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m) return false;
  const a = createHash('sha256').update(m[1]!).digest();
  const b = createHash('sha256').update(token).digest();
  return timingSafeEqual(a, b);
}

/**
 * The edge: HTTP in, bus requests out. Request ids, CORS, 503 while closing, one log line
 * per request, errors in one JSON shape. No business logic lives here.
 */
import { randomUUID } from 'node:crypto';
import type { Bus } from '../runtime/bus.js';
import { CortadoError, toCortadoError } from '../protocol/errors.js';
import { HTTP_REQUEST_ID } from '../protocol/headers.js';
import { redactUrl, type Logger } from '../runtime/log.js';
import type { Config } from '../config/schema.js';
import { createHttpServer, type HttpRequest, type HttpResponse, type HttpServer } from './http/server.js';
import { sendError, sendNotFoundPage, SECURITY_HEADERS, wantsPage } from './http/reply.js';
import { Router } from './http/router.js';
import { createCallerResolver, type RouteAuth } from './caller.js';
import { corsPolicy } from './http/cors.js';
import { createRateLimiter } from './http/ratelimit.js';
import { healthRoutes } from './http/routes/health.js';
import { metricsRoutes } from './http/routes/metrics.js';
import { edgeTrace } from './http/trace.js';
import { TRACEPARENT } from '../runtime/tracing.js';
import { meRoutes } from './http/routes/me.js';
import { pageRoutes } from './http/routes/pages.js';
import { widgetRoutes } from './http/routes/widget.js';
import { adminRoutes } from './http/routes/admin.js';
import { queryRoutes } from './http/routes/query.js';
import { tableRoutes } from './http/routes/tables.js';
import { authRoutes } from './http/routes/auth.js';
import { analyticsRoutes } from './http/routes/analytics.js';
import { semanticRoutes } from './http/routes/semantic.js';
import { scheduleRoutes } from './http/routes/schedules.js';
import { exportRoutes } from './http/routes/export.js';
import { opsRoutes } from './http/routes/ops.js';
import { alarmRoutes } from './http/routes/alarms.js';
import { workspaceRoutes } from './http/routes/workspace.js';
import { wsRoutes } from './http/routes/ws.js';
import { wsEndpoint } from './ws/endpoint.js';
import { contractRoutes } from './http/routes/contracts.js';
import { mcpRoutes } from './mcp/routes.js';

export interface EdgeOptions {
  bus: Bus;
  config: Config;
  log: Logger;
  version: string;
  /** override app.host / app.port (tests: port 0) */
  host?: string;
  port?: number;
}

export interface Edge {
  readonly port: number;
  readonly kind: 'uws' | 'node';
  readonly inFlight: number;
  /** every route and what it needs of its caller (edge/caller.ts), in matching order */
  readonly routes: ReadonlyArray<{ method: string; pattern: string; auth: RouteAuth }>;
  /** 503 for new requests, wait for in-flight ones (up to the deadline), close the socket */
  stop(deadline: number): Promise<void>;
}

/** a caller's own request id that is logged beside the edge's (a label, never a key) */
const LABEL = /^[A-Za-z0-9_.:-]{1,64}$/;

export async function startEdge(opts: EdgeOptions): Promise<Edge> {
  const { bus, config, log } = opts;
  let closing = false;
  let inFlight = 0;
  let idle: (() => void) | undefined;

  const limiter = createRateLimiter({ bus, config, log });
  const callers = createCallerResolver({ bus, config });
  const router = new Router(callers);
  healthRoutes(router, { bus, version: opts.version, closing: () => closing });
  metricsRoutes(router, { bus, config });
  queryRoutes(router, { bus, config });
  adminRoutes(router, { bus, config });
  tableRoutes(router, { bus });
  authRoutes(router, { bus, config });
  mcpRoutes(router, { bus, config, log, version: opts.version, limits: limiter });
  analyticsRoutes(router, { bus, config });
  semanticRoutes(router, { bus });
  scheduleRoutes(router, { bus });
  exportRoutes(router, { bus, config });
  opsRoutes(router, { bus });
  alarmRoutes(router, { bus });
  workspaceRoutes(router, { bus, config });
  meRoutes(router, { config, callers });
  wsRoutes(router);
  pageRoutes(router, { appName: config.app.name, config });
  widgetRoutes(router, { log });
  contractRoutes(router, { version: opts.version, prefix: config.bus.prefix });

  const cors = corsPolicy(config, log);

  const handler = (req: HttpRequest, res: HttpResponse): void => {
    const started = performance.now();
    // the request id is the edge's own, always: streams, follow-ups, feedback and the analytics
    // and alert records are keyed by it, so a caller who could choose it could reach another's.
    // An x-request-id the caller sends is a label for the logs (client_rid) and nothing more.
    const rid = randomUUID();
    const given = req.headers[HTTP_REQUEST_ID];
    const label = given && LABEL.test(given) ? given : undefined;
    // W3C trace context and the HTTP metrics (edge/http/trace.ts): the traceparent is echoed
    const trace = edgeTrace(req, rid);
    let routePattern = '(none)';
    const corsHeaders = { ...cors.response(req.headers.origin), [TRACEPARENT]: trace.traceparent };
    // the request's child logger is made when something is logged (a pino child costs an
    // allocation of its bindings and redaction state on every request otherwise)
    let child: Logger | undefined;
    const reqLog = (): Logger => (child ??= log.child(label ? { rid, client_rid: label } : { rid }));
    inFlight++;
    const finish = (status: number, code?: string): void => {
      inFlight--;
      trace.end(status, routePattern, started);
      if (log.isLevelEnabled('info')) {
        reqLog().info({ method: req.method, path: redactUrl(req.path + (req.rawQuery ? `?${req.rawQuery}` : '')), status, ...(code ? { code } : {}), ms: Math.round((performance.now() - started) * 100) / 100 }, 'http');
      }
      if (closing && inFlight === 0) idle?.();
    };
    if (closing) {
      const e = sendError(res, new CortadoError('SHUTTING_DOWN', 'the service is restarting; try again shortly'), rid, { ...corsHeaders, connection: 'close', 'retry-after': '5' });
      finish(e.httpStatus, e.code);
      return;
    }
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method']) {
      res.send(204, { ...cors.preflight(req.headers.origin, req.headers['access-control-request-headers']), [HTTP_REQUEST_ID]: rid, ...SECURITY_HEADERS });
      finish(204);
      return;
    }
    // rate limit (edge/http/ratelimit.ts): no promise at all when no rule applies to the path
    const limited = limiter.check(req, rid);
    if (!limited) {
      route(corsHeaders);
      return;
    }
    limited.then(
      (verdict) => {
        if (!verdict.error) return route({ ...corsHeaders, ...verdict.headers });
        const e = sendError(res, verdict.error, rid, { ...corsHeaders, ...verdict.headers });
        finish(e.httpStatus, e.code);
      },
      (err: unknown) => {
        reqLog().error({ err }, 'rate limit check failed');
        route(corsHeaders);
      },
    );

    function route(headers: Record<string, string>): void {
      const match = router.match(req.method, req.path);
      if ('notFound' in match && wantsPage(req)) {
        // a browser that followed a wrong link: a page, not JSON
        routePattern = '(unmatched)';
        const e = sendNotFoundPage(res, req, rid, config.app.name, headers);
        finish(e.httpStatus, e.code);
        return;
      }
      if ('notFound' in match || 'allowed' in match) {
        routePattern = '(unmatched)';
        const e = 'allowed' in match
          ? new CortadoError('METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${req.path}`)
          : new CortadoError('NOT_FOUND', `no route for ${req.method} ${req.path}`);
        sendError(res, e, rid, { ...headers, ...('allowed' in match ? { allow: match.allowed.join(', ') } : {}) });
        finish(e.httpStatus, e.code);
        return;
      }
      req.params = match.params;
      routePattern = match.pattern;
      const wrapped = wrapResponse(res, headers);
      Promise.resolve()
        .then(() => match.handler(req, wrapped, { rid, get log() { return reqLog(); } }))
        .then(
          () => finish(wrapped.status),
          (err: unknown) => {
            const e = toCortadoError(err);
            if (e.code === 'INTERNAL') reqLog().error({ err: e.cause ?? e }, 'unhandled failure');
            if (!res.started) sendError(wrapped, e, rid);
            else res.end();
            finish(e.httpStatus, e.code);
          },
        );
    }
  };

  const server: HttpServer = await createHttpServer({
    kind: config.app.http_server,
    maxBodyBytes: config.app.max_body_kb * 1024,
    timeouts: {
      headersMs: config.app.headers_timeout_seconds * 1000,
      requestMs: config.app.request_timeout_seconds * 1000,
      bodyIdleMs: config.app.body_idle_timeout_seconds * 1000,
      keepAliveMs: config.app.keep_alive_timeout_seconds * 1000,
    },
    handler,
    // GET /api/ws: every frame goes through `handler` as the SSE request it stands for
    websocket: wsEndpoint({ config, cors, handler, log }),
  });
  const host = opts.host ?? config.app.host;
  const port = await server.listen(host, opts.port ?? config.app.port);
  log.info({ host, port, server: server.kind }, `listening on http://${host === '0.0.0.0' ? 'localhost' : host}:${port}`);
  for (const warning of server.warnings) log.warn({ server: server.kind }, warning);

  return {
    port,
    kind: server.kind,
    get inFlight() { return inFlight; },
    routes: router.table(),
    async stop(deadline: number) {
      closing = true;
      if (inFlight > 0) {
        await new Promise<void>((resolve) => {
          idle = resolve;
          const left = deadline - Date.now();
          setTimeout(resolve, Math.max(0, left)).unref();
        });
      }
      if (inFlight > 0) log.warn({ unfinished: inFlight }, 'closing with requests still running');
      await server.close();
    },
  };
}

/** Adds CORS headers to whatever the route sends, and remembers the status for the log. */
function wrapResponse(res: HttpResponse, extra: Record<string, string>): HttpResponse & { status: number } {
  let status = 200;
  return {
    get aborted() { return res.aborted; },
    get started() { return res.started; },
    get status() { return status; },
    onAbort: (cb) => res.onAbort(cb),
    send(s, headers, body) {
      status = s;
      res.send(s, { ...headers, ...extra }, body);
    },
    stream(s, headers) {
      status = s;
      res.stream(s, { ...headers, ...extra });
    },
    write: (chunk) => res.write(chunk),
    end: () => res.end(),
  };
}

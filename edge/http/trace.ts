/**
 * The edge's part of a trace (runtime/tracing.ts) and of the HTTP metrics (runtime/metrics.ts),
 * per request: the caller's `traceparent` is taken when it is a valid one (else a new trace is
 * begun), the edge's span is started under it while tracing is on, and the request id is bound
 * to the resulting traceparent so every bus request of the route carries it. The reply echoes
 * that traceparent. `end` closes it all with the status and the route pattern that answered.
 */
import { observeHttp } from '../../runtime/metrics.js';
import { bindRequestTrace, newTraceparent, parseTraceparent, startSpan, TRACEPARENT, unbindRequestTrace, SpanAttr } from '../../runtime/tracing.js';
import type { HttpRequest } from './server.js';

export interface EdgeTrace {
  /** for the reply's `traceparent` header and the bus requests of this request */
  readonly traceparent: string;
  /** the answer went out: `route` is the matched pattern, or `(none)`/`(unmatched)` */
  end(status: number, route: string, startedMs: number): void;
}

export function edgeTrace(req: HttpRequest, rid: string): EdgeTrace {
  const given = req.headers[TRACEPARENT];
  const incoming = given && parseTraceparent(given) ? given.trim() : undefined;
  const span = startSpan(req.method, incoming, 'server', { [SpanAttr.RequestId]: rid, 'http.request.method': req.method });
  const traceparent = span?.traceparent ?? incoming ?? newTraceparent();
  bindRequestTrace(rid, traceparent);
  return {
    traceparent,
    end(status, route, startedMs) {
      unbindRequestTrace(rid, traceparent);
      observeHttp(route, req.method, status, (performance.now() - startedMs) / 1000);
      if (!span) return;
      span.rename(`${req.method} ${route}`);
      span.set({ 'http.route': route, 'http.response.status_code': status });
      span.end(status >= 500 ? { code: `HTTP_${status}` } : undefined);
    },
  };
}

/**
 * What both HTTP servers (edge/http/server.ts, server-node.ts) share at the wire: status lines,
 * the body checks, the answers the seam writes itself (a refused or timed-out message, in the
 * error model's shape, with `connection: close`), and the clock that cuts off slow bodies.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { CortadoError } from '../../protocol/errors.js';
import { HTTP_REQUEST_ID } from '../../protocol/headers.js';
import { checkJsonDepth, isJsonType } from './json.js';

/** How long a client may take (app.*_timeout_seconds); every expiry closes the connection. */
export interface HttpTimeouts {
  /** the request line and headers must have arrived within this (408 on node:http) */
  headersMs: number;
  /** the whole request, headers and body (408) */
  requestMs: number;
  /** the longest pause between two pieces of a body being read (408) */
  bodyIdleMs: number;
  /** an idle keep-alive connection is closed after this */
  keepAliveMs: number;
}

export const DEFAULT_TIMEOUTS: HttpTimeouts = { headersMs: 10_000, requestMs: 30_000, bodyIdleMs: 10_000, keepAliveMs: 10_000 };

/** node:http's limit on the request line and headers together (its default); the uWS edge checks the same. */
export const MAX_HEADER_BYTES = 16 * 1024;

export const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export function statusLine(status: number): string {
  return `${status} ${http.STATUS_CODES[status] ?? ''}`.trim();
}

/** The body as read, refused when it is JSON nested too deep: checked once here, for every route. */
export function checked(body: Promise<Buffer>, headers: Record<string, string>): Promise<Buffer> {
  if (!isJsonType(headers['content-type'])) return body;
  const out = body.then((b) => {
    checkJsonDepth(b);
    return b;
  });
  out.catch(() => undefined);
  return out;
}

export function tooLarge(limit: number): CortadoError {
  return new CortadoError('PAYLOAD_TOO_LARGE', `the request body is over ${Math.round(limit / 1024)} KB`);
}

export function timedOut(what: string): CortadoError {
  return new CortadoError('REQUEST_TIMEOUT', what);
}

/**
 * An answer the seam writes itself, with no route behind it (a refused or timed-out message):
 * the error model's JSON body, a fresh request id, and `connection: close`.
 */
export function protocolAnswer(err: CortadoError): { status: number; headers: Record<string, string>; body: string } {
  const rid = randomUUID();
  const body = JSON.stringify({ error: { code: err.code, message: err.message, retryable: err.retryable, request_id: rid } });
  return { status: err.httpStatus, headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', [HTTP_REQUEST_ID]: rid, 'x-content-type-options': 'nosniff', connection: 'close' }, body };
}

/**
 * Watches a body being received: the whole request within `requestMs` of `start`, and no pause
 * over `bodyIdleMs` between pieces. One timer, moved on only when it fires (a chunk just notes
 * the time), cleared when the body is whole.
 */
export function bodyClock(t: HttpTimeouts, start: number, expire: (err: CortadoError) => void): { chunk(): void; done(): void } {
  let last = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const arm = (ms: number): void => {
    timer = setTimeout(check, Math.max(1, ms));
    timer.unref();
  };
  const check = (): void => {
    const now = Date.now();
    const requestLeft = start + t.requestMs - now;
    const idleLeft = last + t.bodyIdleMs - now;
    if (requestLeft <= 0) expire(timedOut(`the request took over ${t.requestMs / 1000} s to arrive (app.request_timeout_seconds)`));
    else if (idleLeft <= 0) expire(timedOut(`no part of the body came for ${t.bodyIdleMs / 1000} s (app.body_idle_timeout_seconds)`));
    else arm(Math.min(requestLeft, idleLeft));
  };
  arm(Math.min(start + t.requestMs - last, t.bodyIdleMs));
  return {
    chunk() { last = Date.now(); },
    done() { clearTimeout(timer); },
  };
}


/** An answer written straight to a socket (no http.ServerResponse behind it). */
export function rawAnswer(a: { status: number; headers: Record<string, string>; body: string }): string {
  const head = [`HTTP/1.1 ${statusLine(a.status)}`, ...Object.entries(a.headers).map(([k, v]) => `${k}: ${v}`), `content-length: ${Buffer.byteLength(a.body)}`];
  return `${head.join('\r\n')}\r\n\r\n${a.body}`;
}

/** Close codes (RFC 6455 §7.4.1) the seam itself uses. */
export const WS_CLOSE = { GoingAway: 1001, TooBig: 1009, TryAgainLater: 1013 } as const;

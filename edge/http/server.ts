/**
 * The HTTP seam: the ONLY file that imports uWebSockets.js, behind a small interface with a
 * node:http twin (server-node.ts; what both share at the wire is in wire.ts). node:http is the default (`node`, and `auto`, the older name of the default);
 * uWS is taken only when asked for (`uws`) and its native binary loads for this Node ABI (its
 * JS fallback is broken, so it is never used). WebSocket upgrades on the paths
 * `websocket.paths` names go to uWS's own WebSocket support, or to the `ws` package on
 * node:http; what a connection does is the endpoint's (edge/ws/endpoint.ts), the same on both.
 *
 * Why node:http is the default (issue 25, measured with raw sockets, test/edge/http-protocol):
 * llhttp refuses every ambiguous or broken message (RFC 9112 §6.3) with a 400 and closes,
 * answers pipelined requests in order, and `ws` closes on any RFC 6455 violation with 1002.
 * uWebSockets.js 20.30 does much of that in C++ out of reach: it takes lax chunk syntax, drops
 * malformed requests without an answer, closes a connection on which a request is pipelined
 * behind an unanswered one, and takes unmasked client frames. Here it refuses what JavaScript
 * can see (every chunked body, repeated Content-Length or Host, oversized headers) so that no
 * request hidden behind one is ever served, and says at start-up that it belongs behind a
 * proxy that normalises HTTP/1.1. Both servers: HEAD answers carry no body; an answer sent
 * before its request's body was read whole closes the connection (a 413 never reads 50 MB on);
 * slow headers, slow or stalled bodies and idle connections are cut off (`HttpTimeouts`).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { CortadoError } from '../../protocol/errors.js';
import { CheckedQuery } from './query.js';
import { nodeServer } from './server-node.js';
import { BODY_METHODS, bodyClock, checked, DEFAULT_TIMEOUTS, MAX_HEADER_BYTES, protocolAnswer, statusLine, tooLarge, WS_CLOSE, type HttpTimeouts } from './wire.js';

export { DEFAULT_TIMEOUTS, MAX_HEADER_BYTES, type HttpTimeouts } from './wire.js';
export { WS_CLOSE } from './wire.js';

export interface HttpRequest {
  /** upper case */
  readonly method: string;
  readonly path: string;
  /** the raw query string, without `?` */
  readonly rawQuery: string;
  readonly query: URLSearchParams;
  /** lower-case names */
  readonly headers: Readonly<Record<string, string>>;
  readonly remoteAddress: string;
  /** route parameters, filled by the router */
  params: Record<string, string>;
  /**
   * the whole body; rejects with PAYLOAD_TOO_LARGE over the limit, and with VALIDATION_FAILED
   * when a JSON body (by its Content-Type) nests deeper than MAX_JSON_DEPTH (edge/http/json.ts)
   */
  body(): Promise<Buffer>;
}

export interface HttpResponse {
  /** the client went away */
  readonly aborted: boolean;
  /** a status line has been written */
  readonly started: boolean;
  onAbort(cb: () => void): void;
  /** status, headers and the whole body at once */
  send(status: number, headers: Record<string, string>, body?: string | Buffer): void;
  /** start a streamed response (SSE): status and headers now, chunks later */
  stream(status: number, headers: Record<string, string>): void;
  /** false when the client is slow (backpressure) or gone */
  write(chunk: string): boolean;
  end(): void;
}

export type RequestHandler = (req: HttpRequest, res: HttpResponse) => void;

export interface HttpServer {
  readonly kind: 'uws' | 'node';
  /** what the operator must hear at start-up about this server (logged at warn by the edge) */
  readonly warnings: readonly string[];
  /** resolves with the bound port */
  listen(host: string, port: number): Promise<number>;
  close(): Promise<void>;
}



/**
 * uWebSockets.js's own timer (HTTP_IDLE_TIMEOUT_S in its C++ core, no setting): it closes a
 * connection whose headers, body or next request have not come within ~10 s (measured: 10–14 s,
 * its timers tick every 4 s).
 */
export const UWS_IDLE_MS = 10_000;


export interface ServerOptions {
  /** `auto` is the older name of the default, node */
  kind: 'auto' | 'uws' | 'node';
  maxBodyBytes: number;
  /** DEFAULT_TIMEOUTS when not given */
  timeouts?: HttpTimeouts;
  handler: RequestHandler;
  /** WebSocket upgrades, when the edge takes them */
  websocket?: WsOptions;
}

/** What the server knows of a WebSocket upgrade request (header names lower-case). */
export interface WsUpgrade {
  readonly path: string;
  readonly rawQuery: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly remoteAddress: string;
}

/** One open WebSocket, as its endpoint sees it. */
export interface WsPeer {
  /**
   * one text frame; false when it could not go out at once (backpressure) or at all (closed).
   * Over `maxBackpressureBytes` waiting, the connection is closed with 1013 (try again later).
   */
  send(text: string): boolean;
  /** bytes waiting to go out */
  readonly buffered: number;
  close(code: number, reason: string): void;
}

/** What an endpoint does with one connection. */
export interface WsSession {
  message(text: string, binary: boolean): void;
  /** the connection is gone (any reason); nothing may be sent any more */
  closed(code: number): void;
}

/** A refused upgrade: the HTTP answer to send instead. */
export interface WsRefusal {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface WsOptions {
  /** exact paths that take an upgrade; other paths are plain HTTP (an upgrade there is refused) */
  paths: readonly string[];
  /** the largest message a client may send; a larger one closes the connection with 1009 */
  maxPayloadBytes: number;
  maxBackpressureBytes: number;
  /** a connection with no traffic for this long is closed (pings keep a live one open) */
  idleTimeoutSeconds: number;
  /** undefined accepts the upgrade */
  check(up: WsUpgrade): WsRefusal | undefined;
  open(up: WsUpgrade, peer: WsPeer): WsSession;
}


/** Why a message the uWS edge can see is refused (MALFORMED_REQUEST), or undefined. */
function uwsFramingProblem(seen: { host: number; contentLength: number; transferEncoding: number; headerBytes: number }, contentLength: string | undefined): string | undefined {
  // uWS's chunk parser takes what RFC 9112 §7.1 does not (a space after the size, data not
  // followed by CRLF): a chunked body is refused whole, and a proxy in front sends Content-Length
  if (seen.transferEncoding > 0) return 'Transfer-Encoding is not taken by this server (app.http_server uws): send the body with Content-Length';
  if (seen.contentLength > 1) return 'more than one Content-Length';
  if (contentLength !== undefined && !/^[0-9]{1,15}$/.test(contentLength)) return 'Content-Length is not a decimal number';
  if (seen.host > 1) return 'more than one Host';
  if (seen.headerBytes > MAX_HEADER_BYTES) return `the request headers are over ${MAX_HEADER_BYTES / 1024} KB`;
  return undefined;
}

/** Where the uWS native binary for this platform and Node ABI would be, if it ships one. */
export function uwsAvailable(): boolean {
  try {
    const require = createRequire(import.meta.url);
    const main = require.resolve('uWebSockets.js');
    const bin = path.join(path.dirname(main), '..', 'binaries', `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`);
    return existsSync(bin);
  } catch {
    return false;
  }
}

export async function createHttpServer(opts: ServerOptions): Promise<HttpServer> {
  if (opts.kind !== 'uws') return nodeServer(opts);
  const server = uwsAvailable() ? await uwsServer(opts).catch(() => undefined) : undefined;
  if (!server) {
    throw new CortadoError('CONFIG_INVALID', `app.http_server is uws, but uWebSockets.js has no native binary for Node ${process.version}; use node`);
  }
  return server;
}

/** What the operator is told when the uWS edge starts (docs/security.md, "HTTP framing and slow clients"). */
function uwsWarnings(t: HttpTimeouts): string[] {
  const out = [
    'app.http_server is uws: uWebSockets.js takes lax chunk syntax, drops malformed requests without an answer, closes connections that pipeline requests, and takes unmasked WebSocket frames (its C++ core, out of reach); ' +
      'this edge refuses chunked bodies and repeated framing headers, but run it only behind a reverse proxy that normalises HTTP/1.1 (nginx, HAProxy, Envoy), or use app.http_server: node (docs/security.md). ' +
      'Its own ~10 s timer also bounds headers, bodies and idle connections',
  ];
  // settings changed from their defaults that uWS cannot honour are named, not ignored in silence
  const fixed: string[] = [];
  if (t.headersMs !== UWS_IDLE_MS) fixed.push('app.headers_timeout_seconds');
  if (t.keepAliveMs !== UWS_IDLE_MS) fixed.push('app.keep_alive_timeout_seconds');
  if (t.requestMs > UWS_IDLE_MS + 4_000 && t.requestMs !== DEFAULT_TIMEOUTS.requestMs) fixed.push('app.request_timeout_seconds over 10');
  if (t.bodyIdleMs > UWS_IDLE_MS) fixed.push('app.body_idle_timeout_seconds over 10');
  if (fixed.length > 0) out.push(`${fixed.join(', ')}: not in force on uws, whose own timer closes a connection whose headers, body or next request take over ~10 s`);
  return out;
}

// ---- uWebSockets.js -------------------------------------------------------------------

async function uwsServer(opts: ServerOptions): Promise<HttpServer> {
  const { default: uWS } = await import('uWebSockets.js');
  if (!String(uWS.App).includes('[native code]')) throw new Error('uWS native binary not loaded');
  const app = uWS.App();
  const timeouts = opts.timeouts ?? DEFAULT_TIMEOUTS;
  let listenSocket: unknown = null;
  const sockets = new Set<{ end(code?: number, msg?: string): void }>();

  /** The headers as one record (repeats joined), and the counts the framing check needs. */
  type UReq = Parameters<Parameters<typeof app.any>[1]>[1];
  type URes = Parameters<Parameters<typeof app.any>[1]>[0];
  const readHeaders = (ureq: UReq): { headers: Record<string, string>; problem?: string } => {
    const headers: Record<string, string> = {};
    const seen = { host: 0, contentLength: 0, transferEncoding: 0, headerBytes: 0 };
    ureq.forEach((k, v) => {
      seen.headerBytes += k.length + v.length + 4;
      if (k === 'host') seen.host++;
      else if (k === 'content-length') seen.contentLength++;
      else if (k === 'transfer-encoding') seen.transferEncoding++;
      headers[k] = headers[k] === undefined ? v : `${headers[k]}, ${v}`;
    });
    return { headers, problem: uwsFramingProblem(seen, headers['content-length']) };
  };

  /**
   * Refuses a message, answering only after this turn of the event loop. uWS parses everything
   * that one read brought in before it returns, and serves a request hidden behind a refused one
   * even after `end(body, true)`; but it closes a connection outright when a request arrives
   * while the one before is unanswered. So a request smuggled in the same read is never served
   * (the connection closes), and a lone bad message gets its 400 and a close.
   */
  const refuseLater = (ures: URes, err: CortadoError): void => {
    let gone = false;
    ures.onAborted(() => { gone = true; });
    ures.onData(() => undefined);
    setImmediate(() => {
      if (gone) return;
      const a = protocolAnswer(err);
      ures.cork(() => {
        ures.writeStatus(statusLine(a.status));
        for (const [k, v] of Object.entries(a.headers)) if (k !== 'connection') ures.writeHeader(k, v);
        ures.end(a.body, true);
      });
    });
  };

  const wsOpts = opts.websocket;
  if (wsOpts) {
    interface Data { up: WsUpgrade; session?: WsSession; gone: boolean }
    for (const wsPath of wsOpts.paths) {
      app.ws<Data>(wsPath, {
        compression: uWS.DISABLED,
        // uWS drops a connection over maxPayloadLength without a close frame (1006): taking up to
        // 4× the limit lets the handler below refuse an oversize message with 1009 and a reason,
        // as on node:http; only a message over that is cut off bare
        maxPayloadLength: wsOpts.maxPayloadBytes * 4,
        maxBackpressure: wsOpts.maxBackpressureBytes,
        idleTimeout: wsOpts.idleTimeoutSeconds,
        sendPingsAutomatically: true,
        upgrade: (ures, ureq, context) => {
          const { headers, problem } = readHeaders(ureq);
          if (problem) {
            refuseLater(ures, new CortadoError('MALFORMED_REQUEST', problem));
            return;
          }
          const up: WsUpgrade = { path: ureq.getUrl(), rawQuery: ureq.getQuery() ?? '', headers, remoteAddress: Buffer.from(ures.getRemoteAddressAsText()).toString() };
          const refused = wsOpts.check(up);
          if (refused) {
            ures.cork(() => {
              ures.writeStatus(statusLine(refused.status));
              for (const [k, v] of Object.entries(refused.headers)) ures.writeHeader(k, v);
              ures.end(refused.body);
            });
            return;
          }
          ures.upgrade<Data>({ up, gone: false }, headers['sec-websocket-key'] ?? '', headers['sec-websocket-protocol'] ?? '', headers['sec-websocket-extensions'] ?? '', context);
        },
        open: (ws) => {
          const data = ws.getUserData();
          sockets.add(ws);
          const peer: WsPeer = {
            send(text) {
              if (data.gone) return false;
              const r = ws.send(text, false, false);
              if (r === 2 || ws.getBufferedAmount() > wsOpts.maxBackpressureBytes) {
                peer.close(WS_CLOSE.TryAgainLater, 'the client reads too slowly');
                return false;
              }
              return r === 1;
            },
            get buffered() { return data.gone ? 0 : ws.getBufferedAmount(); },
            close(code, reason) {
              if (data.gone) return;
              data.gone = true;
              ws.end(code, reason);
            },
          };
          data.session = wsOpts.open(data.up, peer);
        },
        message: (ws, message, isBinary) => {
          const data = ws.getUserData();
          if (data.gone) return;
          if (message.byteLength > wsOpts.maxPayloadBytes) {
            data.gone = true;
            ws.end(WS_CLOSE.TooBig, `a message is at most ${wsOpts.maxPayloadBytes} bytes`);
            return;
          }
          // the ArrayBuffer is only valid in this call: decode it now
          data.session?.message(Buffer.from(message).toString('utf8'), isBinary);
        },
        close: (ws, code) => {
          const data = ws.getUserData();
          data.gone = true;
          sockets.delete(ws);
          data.session?.closed(code);
        },
      });
    }
  }

  app.any('/*', (ures, ureq) => {
    // `ureq` is valid only in this synchronous scope: copy what we need now.
    const { headers, problem } = readHeaders(ureq);
    if (problem) {
      refuseLater(ures, new CortadoError('MALFORMED_REQUEST', problem));
      return;
    }
    const method = ureq.getCaseSensitiveMethod().toUpperCase();
    const head = method === 'HEAD';
    const rawQuery = ureq.getQuery() ?? '';
    const url = ureq.getUrl();
    const remoteAddress = Buffer.from(ures.getRemoteAddressAsText()).toString();

    let aborted = false;
    let done = false;
    let started = false;
    let clock: ReturnType<typeof bodyClock> | undefined;
    const abortCbs: Array<() => void> = [];
    ures.onAborted(() => {
      aborted = true;
      clock?.done();
      for (const cb of abortCbs) cb();
    });

    // The body must be read from now on, before any await. uWS frames it by Content-Length (a
    // chunked one was refused above); every declared body is followed to its end, read or not,
    // so that an answer given before the end closes the connection instead of reading on.
    const declared = Number(headers['content-length'] ?? 0);
    let bodyDone = declared === 0;
    let bodyAsked = false;
    let bodyPromise: Promise<Buffer>;
    if (declared > 0) {
      let settle: { resolve(b: Buffer): void; reject(e: CortadoError): void } | undefined;
      const raw = new Promise<Buffer>((resolve, reject) => { settle = { resolve, reject }; });
      raw.catch(() => undefined);
      const keep = BODY_METHODS.has(method) && declared <= opts.maxBodyBytes;
      if (BODY_METHODS.has(method) && !keep) settle?.reject(tooLarge(opts.maxBodyBytes));
      const parts: Buffer[] = [];
      clock = bodyClock(timeouts, Date.now(), (err) => {
        settle?.reject(err);
        // nobody reads this body (yet): the seam answers for the route
        if (!bodyAsked) {
          const a = protocolAnswer(err);
          res.send(a.status, a.headers, a.body);
        }
      });
      ures.onData((chunk, last) => {
        clock?.chunk();
        // uWS reuses the buffer after the callback: copy it.
        if (keep) parts.push(Buffer.from(new Uint8Array(chunk.slice(0))));
        if (last) {
          bodyDone = true;
          clock?.done();
          settle?.resolve(keep ? Buffer.concat(parts) : Buffer.alloc(0));
        }
      });
      bodyPromise = BODY_METHODS.has(method) ? checked(raw, headers) : Promise.resolve(Buffer.alloc(0));
    } else {
      bodyPromise = Promise.resolve(Buffer.alloc(0));
    }

    const res: HttpResponse = {
      get aborted() { return aborted; },
      get started() { return started; },
      onAbort(cb) { abortCbs.push(cb); },
      send(status, hdrs, body) {
        if (aborted || done) return;
        done = true;
        started = true;
        clock?.done();
        // an answer before the body has all come: close rather than read the rest (a 413, a 404)
        const close = !bodyDone;
        ures.cork(() => {
          ures.writeStatus(statusLine(status));
          for (const [k, v] of Object.entries(hdrs)) ures.writeHeader(k, v);
          if (head && !close) {
            // the length GET would have, and no body (RFC 9110 §9.3.2). uWS 20.30's own
            // `endWithoutBody(length)` leaves the response open (the next request closes the
            // connection), so the header is written here and the response ended bare.
            ures.writeHeader('content-length', String(body === undefined ? 0 : Buffer.byteLength(body)));
            ures.endWithoutBody();
          } else {
            // (a HEAD that came with a body still unread: `Content-Length: 0` and closed)
            ures.end(head ? '' : (body ?? ''), close);
          }
        });
      },
      stream(status, hdrs) {
        if (aborted || done || started) return;
        started = true;
        ures.cork(() => {
          ures.writeStatus(statusLine(status));
          for (const [k, v] of Object.entries(hdrs)) ures.writeHeader(k, v);
        });
      },
      write(chunk) {
        if (aborted || done) return false;
        if (head) return true;
        let ok = false;
        ures.cork(() => { ok = ures.write(chunk); });
        return ok;
      },
      end() {
        if (aborted || done) return;
        done = true;
        clock?.done();
        const close = !bodyDone;
        ures.cork(() => {
          if (head && !close) ures.endWithoutBody();
          else ures.end(undefined, close);
        });
      },
    };
    const req: HttpRequest = {
      method,
      path: url,
      rawQuery,
      get query() { return new CheckedQuery(rawQuery); },
      headers,
      remoteAddress,
      params: {},
      body: () => {
        bodyAsked = true;
        return bodyPromise;
      },
    };
    opts.handler(req, res);
  });

  return {
    kind: 'uws',
    warnings: uwsWarnings(timeouts),
    listen(host, port) {
      return new Promise((resolve, reject) => {
        app.listen(host, port, (token) => {
          if (!token) {
            reject(new Error(`cannot listen on ${host}:${port}`));
            return;
          }
          listenSocket = token;
          resolve(uWS.us_socket_local_port(token));
        });
      });
    },
    async close() {
      if (listenSocket) uWS.us_listen_socket_close(listenSocket as Parameters<typeof uWS.us_listen_socket_close>[0]);
      listenSocket = null;
      for (const ws of [...sockets]) ws.end(WS_CLOSE.GoingAway, 'the server is closing');
      sockets.clear();
    },
  };
}

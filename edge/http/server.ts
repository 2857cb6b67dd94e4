/**
 * The HTTP seam: the ONLY file that imports uWebSockets.js, behind a small interface with a
 * node:http twin. `auto` picks uWS when its native binary loads for this Node ABI (its JS
 * fallback is broken, so it is never used), otherwise node:http. WebSocket upgrades on the
 * paths `websocket.paths` names go to uWS's own WebSocket support, or to the `ws` package on
 * node:http; what a connection does is the endpoint's (edge/ws/endpoint.ts), the same on both.
 */
import { existsSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocketServer, type WebSocket as NodeWebSocket } from 'ws';
import { CortadoError } from '../../protocol/errors.js';
import { checkJsonDepth, isJsonType } from './json.js';
import { CheckedQuery } from './query.js';

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
  /** resolves with the bound port */
  listen(host: string, port: number): Promise<number>;
  close(): Promise<void>;
}

export interface ServerOptions {
  kind: 'auto' | 'uws' | 'node';
  maxBodyBytes: number;
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

/** Close codes (RFC 6455 §7.4.1) the seam itself uses. */
export const WS_CLOSE = { GoingAway: 1001, TooBig: 1009, TryAgainLater: 1013 } as const;

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

function statusLine(status: number): string {
  return `${status} ${http.STATUS_CODES[status] ?? ''}`.trim();
}

/** The body as read, refused when it is JSON nested too deep: checked once here, for every route. */
function checked(body: Promise<Buffer>, headers: Record<string, string>): Promise<Buffer> {
  if (!isJsonType(headers['content-type'])) return body;
  const out = body.then((b) => {
    checkJsonDepth(b);
    return b;
  });
  out.catch(() => undefined);
  return out;
}

function tooLarge(limit: number): CortadoError {
  return new CortadoError('PAYLOAD_TOO_LARGE', `the request body is over ${Math.round(limit / 1024)} KB`);
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
  if (opts.kind === 'node') return nodeServer(opts);
  if (uwsAvailable()) {
    const server = await uwsServer(opts).catch(() => undefined);
    if (server) return server;
  }
  if (opts.kind === 'uws') {
    throw new CortadoError('CONFIG_INVALID', `app.http_server is uws, but uWebSockets.js has no native binary for Node ${process.version}; use auto or node`);
  }
  return nodeServer(opts);
}

// ---- uWebSockets.js -------------------------------------------------------------------

async function uwsServer(opts: ServerOptions): Promise<HttpServer> {
  const { default: uWS } = await import('uWebSockets.js');
  if (!String(uWS.App).includes('[native code]')) throw new Error('uWS native binary not loaded');
  const app = uWS.App();
  let listenSocket: unknown = null;
  const sockets = new Set<{ end(code?: number, msg?: string): void }>();

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
          const headers: Record<string, string> = {};
          ureq.forEach((k, v) => { headers[k] = headers[k] ? `${headers[k]}, ${v}` : v; });
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
    const method = ureq.getCaseSensitiveMethod().toUpperCase();
    const headers: Record<string, string> = {};
    ureq.forEach((k, v) => { headers[k] = headers[k] ? `${headers[k]}, ${v}` : v; });
    const rawQuery = ureq.getQuery() ?? '';
    const url = ureq.getUrl();
    const remoteAddress = Buffer.from(ures.getRemoteAddressAsText()).toString();

    let aborted = false;
    let done = false;
    let started = false;
    const abortCbs: Array<() => void> = [];
    ures.onAborted(() => {
      aborted = true;
      for (const cb of abortCbs) cb();
    });

    // The body must be read from now on, before any await.
    let bodyPromise: Promise<Buffer>;
    if (BODY_METHODS.has(method)) {
      const declared = Number(headers['content-length'] ?? 0);
      bodyPromise = new Promise<Buffer>((resolve, reject) => {
        if (declared > opts.maxBodyBytes) {
          reject(tooLarge(opts.maxBodyBytes));
          return;
        }
        const parts: Buffer[] = [];
        let size = 0;
        ures.onData((chunk, last) => {
          if (size > opts.maxBodyBytes) return;
          // uWS reuses the buffer after the callback: copy it.
          const copy = Buffer.from(new Uint8Array(chunk.slice(0)));
          size += copy.length;
          if (size > opts.maxBodyBytes) {
            reject(tooLarge(opts.maxBodyBytes));
            return;
          }
          parts.push(copy);
          if (last) resolve(Buffer.concat(parts));
        });
      });
      bodyPromise.catch(() => undefined);
      bodyPromise = checked(bodyPromise, headers);
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
        ures.cork(() => {
          ures.writeStatus(statusLine(status));
          for (const [k, v] of Object.entries(hdrs)) ures.writeHeader(k, v);
          ures.end(body ?? '');
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
        let ok = false;
        ures.cork(() => { ok = ures.write(chunk); });
        return ok;
      },
      end() {
        if (aborted || done) return;
        done = true;
        ures.cork(() => ures.end());
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
      body: () => bodyPromise,
    };
    opts.handler(req, res);
  });

  return {
    kind: 'uws',
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

// ---- node:http ------------------------------------------------------------------------

function nodeServer(opts: ServerOptions): HttpServer {
  const server = http.createServer({ keepAliveTimeout: 65_000 }, (nreq, nres) => {
    const method = (nreq.method ?? 'GET').toUpperCase();
    const rawUrl = nreq.url ?? '/';
    const q = rawUrl.indexOf('?');
    const urlPath = q >= 0 ? rawUrl.slice(0, q) : rawUrl;
    const rawQuery = q >= 0 ? rawUrl.slice(q + 1) : '';
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(nreq.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;

    let aborted = false;
    let started = false;
    const abortCbs: Array<() => void> = [];
    nres.on('close', () => {
      if (!nres.writableFinished) {
        aborted = true;
        for (const cb of abortCbs) cb();
      }
    });

    let bodyPromise: Promise<Buffer> | undefined;
    const body = (): Promise<Buffer> => {
      if (bodyPromise) return bodyPromise;
      if (!BODY_METHODS.has(method)) return (bodyPromise = Promise.resolve(Buffer.alloc(0)));
      bodyPromise = new Promise<Buffer>((resolve, reject) => {
        if (Number(headers['content-length'] ?? 0) > opts.maxBodyBytes) {
          reject(tooLarge(opts.maxBodyBytes));
          nreq.resume();
          return;
        }
        const parts: Buffer[] = [];
        let size = 0;
        nreq.on('data', (c: Buffer) => {
          size += c.length;
          if (size > opts.maxBodyBytes) {
            reject(tooLarge(opts.maxBodyBytes));
            nreq.resume();
            return;
          }
          parts.push(c);
        });
        nreq.on('end', () => resolve(Buffer.concat(parts)));
        nreq.on('error', reject);
      });
      bodyPromise.catch(() => undefined);
      bodyPromise = checked(bodyPromise, headers);
      return bodyPromise;
    };

    const res: HttpResponse = {
      get aborted() { return aborted; },
      get started() { return started; },
      onAbort(cb) { abortCbs.push(cb); },
      send(status, hdrs, payload) {
        if (aborted || started) return;
        started = true;
        const buf = payload === undefined ? '' : payload;
        nres.writeHead(status, { ...hdrs, 'content-length': String(Buffer.byteLength(buf)) });
        nres.end(buf);
      },
      stream(status, hdrs) {
        if (aborted || started) return;
        started = true;
        nres.writeHead(status, hdrs);
        nres.flushHeaders();
      },
      write(chunk) {
        if (aborted || nres.writableEnded) return false;
        return nres.write(chunk);
      },
      end() {
        if (!nres.writableEnded) nres.end();
      },
    };
    const req: HttpRequest = {
      method,
      path: urlPath,
      rawQuery,
      get query() { return new CheckedQuery(rawQuery); },
      headers,
      remoteAddress: nreq.socket.remoteAddress ?? '',
      params: {},
      body,
    };
    opts.handler(req, res);
  });
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
  });
  const wss = opts.websocket ? nodeWebSockets(server, opts.websocket) : undefined;

  return {
    kind: 'node',
    listen(host, port) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
      });
    },
    close() {
      wss?.closeAll();
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 1_000).unref();
      });
    },
  };
}

/** WebSocket upgrades on node:http, with the `ws` package (no server of its own: `noServer`). */
function nodeWebSockets(server: http.Server, opts: WsOptions): { closeAll(): void } {
  // one byte more than the endpoint takes, as on uWS: the endpoint says 1009 with its reason
  const wss = new WebSocketServer({ noServer: true, maxPayload: opts.maxPayloadBytes + 1, perMessageDeflate: false, clientTracking: true });
  const paths = new Set(opts.paths);
  const refuse = (socket: Socket, r: WsRefusal): void => {
    const head = [`HTTP/1.1 ${statusLine(r.status)}`, 'connection: close', `content-length: ${Buffer.byteLength(r.body)}`, ...Object.entries(r.headers).map(([k, v]) => `${k}: ${v}`)];
    socket.end(`${head.join('\r\n')}\r\n\r\n${r.body}`);
  };
  server.on('upgrade', (nreq: http.IncomingMessage, socket: Socket, head: Buffer) => {
    const rawUrl = nreq.url ?? '/';
    const q = rawUrl.indexOf('?');
    const urlPath = q >= 0 ? rawUrl.slice(0, q) : rawUrl;
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(nreq.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
    socket.on('error', () => socket.destroy());
    if (!paths.has(urlPath) || (headers.upgrade ?? '').toLowerCase() !== 'websocket') {
      refuse(socket, { status: 404, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: `no WebSocket on ${urlPath}` });
      return;
    }
    const up: WsUpgrade = { path: urlPath, rawQuery: q >= 0 ? rawUrl.slice(q + 1) : '', headers, remoteAddress: nreq.socket.remoteAddress ?? '' };
    const refused = opts.check(up);
    if (refused) {
      refuse(socket, refused);
      return;
    }
    wss.handleUpgrade(nreq, socket, head, (ws: NodeWebSocket) => {
      let gone = false;
      let alive = true;
      const peer: WsPeer = {
        send(text) {
          if (gone || ws.readyState !== ws.OPEN) return false;
          ws.send(text);
          if (ws.bufferedAmount > opts.maxBackpressureBytes) {
            peer.close(WS_CLOSE.TryAgainLater, 'the client reads too slowly');
            return false;
          }
          return ws.bufferedAmount === 0;
        },
        get buffered() { return gone ? 0 : ws.bufferedAmount; },
        close(code, reason) {
          if (gone) return;
          gone = true;
          ws.close(code, reason);
        },
      };
      // pings while idle, as uWS sends them: a peer that answers none in a timeout is dropped
      const pinger = setInterval(() => {
        if (!alive) {
          ws.terminate();
          return;
        }
        alive = false;
        ws.ping();
      }, Math.max(1, opts.idleTimeoutSeconds / 2) * 1000);
      pinger.unref();
      ws.on('pong', () => { alive = true; });
      const session = opts.open(up, peer);
      ws.on('message', (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => {
        if (gone) return;
        alive = true;
        const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as Buffer);
        if (buf.length > opts.maxPayloadBytes) {
          peer.close(WS_CLOSE.TooBig, `a message is at most ${opts.maxPayloadBytes} bytes`);
          return;
        }
        session.message(buf.toString('utf8'), isBinary);
      });
      ws.on('error', () => ws.terminate());
      ws.on('close', (code: number) => {
        gone = true;
        clearInterval(pinger);
        session.closed(code);
      });
    });
  });
  return {
    closeAll() {
      for (const ws of wss.clients) ws.close(WS_CLOSE.GoingAway, 'the server is closing');
      wss.close();
    },
  };
}

/**
 * The node:http twin of the HTTP seam (the default server): llhttp frames every message and
 * refuses what is ambiguous (400 `MALFORMED_REQUEST`, closed), `ws` takes WebSocket upgrades and
 * closes on any RFC 6455 violation (1002). Created through createHttpServer (server.ts).
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocketServer, type WebSocket as NodeWebSocket } from 'ws';
import { CortadoError } from '../../protocol/errors.js';
import { CheckedQuery } from './query.js';
import type { HttpRequest, HttpResponse, HttpServer, ServerOptions, WsOptions, WsPeer, WsRefusal, WsUpgrade } from './server.js';
import { BODY_METHODS, bodyClock, checked, DEFAULT_TIMEOUTS, MAX_HEADER_BYTES, protocolAnswer, rawAnswer, statusLine, timedOut, tooLarge, WS_CLOSE } from './wire.js';

/** Why a request llhttp parsed is still refused (MALFORMED_REQUEST): no Host on HTTP/1.1, or two (RFC 9112 §3.2). */
function nodeHostProblem(nreq: http.IncomingMessage): string | undefined {
  let hosts = 0;
  const raw = nreq.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]?.length === 4 && raw[i]?.toLowerCase() === 'host') hosts++;
  if (hosts > 1) return 'more than one Host';
  if (hosts === 0 && nreq.httpVersion === '1.1') return 'no Host header (HTTP/1.1 needs one)';
  return undefined;
}

export function nodeServer(opts: ServerOptions): HttpServer {
  const timeouts = opts.timeouts ?? DEFAULT_TIMEOUTS;
  /** sockets whose current request has an answer under way: a timeout there only closes */
  const answering = new WeakSet<Socket>();
  /** sockets whose current answer is a stream (SSE, an MCP session): a FIN there is the client leaving */
  const streaming = new WeakSet<Socket>();
  const server = http.createServer({
    keepAliveTimeout: timeouts.keepAliveMs,
    headersTimeout: Math.min(timeouts.headersMs, timeouts.requestMs),
    requestTimeout: timeouts.requestMs,
    // how often node:http looks for expired headers and requests (its default is 30 s)
    connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(Math.min(timeouts.headersMs, timeouts.requestMs) / 4))),
    // checked below with a JSON answer, together with a repeated Host
    requireHostHeader: false,
  }, (nreq, nres) => {
    const hostProblem = nodeHostProblem(nreq);
    if (hostProblem) {
      const a = protocolAnswer(new CortadoError('MALFORMED_REQUEST', hostProblem));
      nres.writeHead(a.status, { ...a.headers, 'content-length': String(Buffer.byteLength(a.body)) });
      nres.end(a.body);
      return;
    }
    const method = (nreq.method ?? 'GET').toUpperCase();
    const rawUrl = nreq.url ?? '/';
    const q = rawUrl.indexOf('?');
    const urlPath = q >= 0 ? rawUrl.slice(0, q) : rawUrl;
    const rawQuery = q >= 0 ? rawUrl.slice(q + 1) : '';
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(nreq.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
    // llhttp has refused every ambiguous framing; a body is declared by one of these two
    const declaresBody = headers['transfer-encoding'] !== undefined || (headers['content-length'] ?? '0') !== '0';
    const socket = nreq.socket;

    let aborted = false;
    let started = false;
    const abortCbs: Array<() => void> = [];
    nres.on('close', () => {
      answering.delete(socket);
      streaming.delete(socket);
      if (!nres.writableFinished) {
        aborted = true;
        for (const cb of abortCbs) cb();
      }
    });
    nres.on('finish', () => {
      answering.delete(socket);
      streaming.delete(socket);
    });
    /** an answer before the body has all come closes the connection rather than read the rest */
    const closing = (): Record<string, string> => (declaresBody && !nreq.complete ? { connection: 'close' } : {});

    let bodyPromise: Promise<Buffer> | undefined;
    const body = (): Promise<Buffer> => {
      if (bodyPromise) return bodyPromise;
      if (!BODY_METHODS.has(method)) return (bodyPromise = Promise.resolve(Buffer.alloc(0)));
      bodyPromise = new Promise<Buffer>((resolve, reject) => {
        // refused unread: the 413 goes out with `connection: close` (above), so nothing more is read
        if (Number(headers['content-length'] ?? 0) > opts.maxBodyBytes) {
          reject(tooLarge(opts.maxBodyBytes));
          return;
        }
        const parts: Buffer[] = [];
        let size = 0;
        const stop = (err: CortadoError): void => {
          clock?.done();
          nreq.removeListener('data', onData);
          nreq.pause();
          reject(err);
        };
        const clock = nreq.complete ? undefined : bodyClock(timeouts, Date.now(), stop);
        const onData = (c: Buffer): void => {
          clock?.chunk();
          size += c.length;
          if (size > opts.maxBodyBytes) {
            stop(tooLarge(opts.maxBodyBytes));
            return;
          }
          parts.push(c);
        };
        nreq.on('data', onData);
        nreq.on('end', () => {
          clock?.done();
          resolve(Buffer.concat(parts));
        });
        nreq.on('error', (err) => {
          clock?.done();
          reject(err);
        });
        // gone before its end (the client closed, or the seam refused the rest): never left pending
        nreq.on('close', () => {
          clock?.done();
          if (!nreq.complete) reject(new CortadoError('MALFORMED_REQUEST', 'the connection closed before the whole body came'));
        });
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
        answering.add(socket);
        const buf = payload === undefined ? '' : payload;
        // node:http sends no body on HEAD, and keeps this length (the one GET would have)
        nres.writeHead(status, { ...hdrs, ...closing(), 'content-length': String(Buffer.byteLength(buf)) });
        nres.end(buf);
      },
      stream(status, hdrs) {
        if (aborted || started) return;
        started = true;
        answering.add(socket);
        streaming.add(socket);
        nres.writeHead(status, { ...hdrs, ...closing() });
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
      remoteAddress: socket.remoteAddress ?? '',
      params: {},
      body,
    };
    opts.handler(req, res);
  });
  // A client that half-closes (a FIN after its request: `shutdown(SHUT_WR)`, some proxies) still
  // reads the answer. node:http's default drops every request not yet answered on a FIN, so a
  // question sent whole and then half-closed got no answer at all; with this the FIN only marks
  // the answer under way as the last (the connection closes after it), and a body cut short by
  // the FIN fails llhttp's end-of-message check: 400 below, at once. (A property of http.Server
  // since Node 0.x, not an option of createServer.)
  (server as http.Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  // ...but a stream has no end to wait for: a FIN on an SSE stream or an MCP session is the client
  // leaving (fetch's abort, a closed tab), so the stream closes at once and its session ends, as
  // before half-open answers (otherwise it would live on until a keep-alive write failed)
  server.on('connection', (socket: Socket) => {
    socket.on('end', () => {
      if (streaming.has(socket)) socket.destroy();
    });
  });
  // llhttp refused the message (a 400 with its reason), or node:http's header or request timeout
  // struck (408): answered in the error model's shape, then the connection is closed, unread
  server.on('clientError', (err: NodeJS.ErrnoException & { reason?: unknown }, socket: Socket) => {
    if (!socket.writable || answering.has(socket) || err.code === 'ECONNRESET') {
      socket.destroy();
      return;
    }
    const reason = typeof err.reason === 'string' && err.reason.length < 100 ? `: ${err.reason}` : '';
    const e = err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? timedOut(`the request did not arrive in time (app.headers_timeout_seconds ${timeouts.headersMs / 1000} s, app.request_timeout_seconds ${timeouts.requestMs / 1000} s)`)
      : err.code === 'HPE_INVALID_EOF_STATE'
        ? new CortadoError('MALFORMED_REQUEST', 'the client closed its side of the connection before the whole request came (a body shorter than its Content-Length)')
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? new CortadoError('MALFORMED_REQUEST', `the request headers are over ${MAX_HEADER_BYTES / 1024} KB`)
        : new CortadoError('MALFORMED_REQUEST', `the HTTP request is malformed or its framing ambiguous${reason}`);
    socket.end(rawAnswer(protocolAnswer(e)), () => socket.destroy());
    setTimeout(() => socket.destroy(), 1_000).unref();
  });
  const wss = opts.websocket ? nodeWebSockets(server, opts.websocket) : undefined;

  return {
    kind: 'node',
    warnings: [],
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
    const hostProblem = nodeHostProblem(nreq);
    if (hostProblem) {
      const a = protocolAnswer(new CortadoError('MALFORMED_REQUEST', hostProblem));
      refuse(socket, { status: a.status, headers: Object.fromEntries(Object.entries(a.headers).filter(([k]) => k !== 'connection')), body: a.body });
      return;
    }
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

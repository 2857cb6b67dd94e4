/**
 * The HTTP seam: the ONLY file that imports uWebSockets.js, behind a small interface with a
 * node:http twin. `auto` picks uWS when its native binary loads for this Node ABI (its JS
 * fallback is broken, so it is never used), otherwise node:http.
 */
import { existsSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
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
}

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

  return {
    kind: 'node',
    listen(host, port) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
      });
    },
    close() {
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 1_000).unref();
      });
    },
  };
}

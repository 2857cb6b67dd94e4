/**
 * `GET /api/ws`: the question routes over one WebSocket, speaking what their SSE streams speak.
 *
 * A client frame is `{"type": "ask", ...the body of POST /api/query}` (or of `endpoint`, one of
 * the question routes), or `{"type": "confirm", confirmation_id, ...}` for a confirmation route.
 * Each becomes one request to the edge's own handler — the same route, validation, caller check,
 * rate limit, log line and request id as over HTTP with `Accept: text/event-stream` — and every
 * SSE event it writes goes back as one text frame `{"event", "data", "request_id", "ref"?, "id"?}`
 * (`data` is the SSE event's JSON as it is, `id` the SSE id, `ref` the client's own `id` of the
 * frame it answers). A route that answers with plain JSON (a confirmation, or an error before the
 * stream opens) gives one `result` or `error` frame. Then `{"event": "end"}` closes the answer.
 *
 * Who is calling is what the upgrade request carried (cookies, `Authorization`), plus the
 * headers a browser cannot set on an upgrade, given per frame in `headers` (`x-session-id`,
 * `x-csrf-token`, `authorization`). An upgrade from a browser Origin is taken when the Origin is
 * this server's own or `cors.allow_origins` allows it (403 otherwise); an Origin let in by `*`
 * only never has its cookies used (as CORS never sends credentials to a wildcard).
 *
 * Limits: a frame is at most `app.max_body_kb` (larger: close 1009); at most 4 answers run at
 * once per connection (a fifth: `RATE_LIMITED` error frame); a client reading too slowly for
 * 16 MB of waiting frames is closed with 1013. Bad JSON, an unknown type or endpoint: an `error`
 * frame, and the connection stays open.
 */
import { randomUUID } from 'node:crypto';
import type { Config } from '../../config/schema.js';
import { CortadoError, toCortadoError } from '../../protocol/errors.js';
import { HTTP_REQUEST_ID } from '../../protocol/headers.js';
import type { Logger } from '../../runtime/log.js';
import type { CorsPolicy } from '../http/cors.js';
import { checkJsonDepth } from '../http/json.js';
import { CheckedQuery } from '../http/query.js';
import { errorBody, SECURITY_HEADERS } from '../http/reply.js';
import type { HttpRequest, HttpResponse, RequestHandler, WsOptions, WsPeer, WsSession, WsUpgrade } from '../http/server.js';

export const WS_PATH = '/api/ws';

/** The routes a frame may ask through, by its type; the first is the default. */
export const WS_ENDPOINTS = {
  ask: ['/api/query', '/query', '/auth/query'],
  confirm: ['/query/confirm-execute', '/auth/query/confirm'],
} as const;

/** Headers a frame may carry for its request (a browser cannot set headers on the upgrade). */
const FRAME_HEADERS = ['x-session-id', 'x-csrf-token', 'authorization'] as const;
/** Headers of the upgrade request passed on to every frame's request. */
const UPGRADE_HEADERS = ['host', 'origin', 'user-agent', 'sec-fetch-site', 'x-forwarded-for', 'x-real-ip', 'authorization', 'x-session-id', 'accept-language'] as const;

export const WS_MAX_IN_FLIGHT = 4;
export const WS_MAX_BACKPRESSURE = 16 * 1024 * 1024;
const IDLE_TIMEOUT_S = 120;

export interface WsEndpointDeps {
  config: Config;
  cors: CorsPolicy;
  /** the edge's own request handler (edge/app.ts): every frame goes where an HTTP request goes */
  handler: RequestHandler;
  log: Logger;
}

/** Whether an Origin names this very server (scheme aside: the Host it was asked on). */
function sameOrigin(origin: string, host: string | undefined): boolean {
  try {
    return !!host && new URL(origin).host.toLowerCase() === host.toLowerCase();
  } catch {
    return false;
  }
}

function refusal(status: number, err: CortadoError, rid: string): { status: number; headers: Record<string, string>; body: string } {
  return {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', [HTTP_REQUEST_ID]: rid, ...SECURITY_HEADERS },
    body: JSON.stringify(errorBody(err, rid)),
  };
}

export function wsEndpoint(deps: WsEndpointDeps): WsOptions {
  const { cors, handler, log } = deps;
  /** the upgrades let in, and whether their cookies may be used */
  const credentialed = new WeakMap<WsUpgrade, boolean>();

  return {
    paths: [WS_PATH],
    maxPayloadBytes: deps.config.app.max_body_kb * 1024,
    maxBackpressureBytes: WS_MAX_BACKPRESSURE,
    idleTimeoutSeconds: IDLE_TIMEOUT_S,
    check(up) {
      const origin = up.headers.origin;
      if (!origin || sameOrigin(origin, up.headers.host)) {
        credentialed.set(up, true);
        return undefined;
      }
      const allowed = cors.response(origin);
      if (!allowed['access-control-allow-origin']) {
        const rid = randomUUID();
        log.info({ rid, path: up.path, status: 403 }, 'websocket refused: origin not allowed');
        return refusal(403, new CortadoError('FORBIDDEN', 'this origin may not open a WebSocket here (cors.allow_origins)'), rid);
      }
      credentialed.set(up, allowed['access-control-allow-credentials'] === 'true');
      return undefined;
    },
    open(up, peer) {
      return session(up, peer, credentialed.get(up) ?? false, handler);
    },
  };
}

/** One connection: frames in, requests to the handler, their events out. */
function session(up: WsUpgrade, peer: WsPeer, withCookies: boolean, handler: RequestHandler): WsSession {
  const base: Record<string, string> = {};
  for (const h of UPGRADE_HEADERS) if (up.headers[h] !== undefined) base[h] = up.headers[h];
  if (withCookies && up.headers.cookie) base.cookie = up.headers.cookie;
  const running = new Set<() => void>();
  let closed = false;

  const frame = (event: string, rid: string, ref: string | undefined, dataJson: string, id?: string): void => {
    if (closed) return;
    peer.send(`{"event":${JSON.stringify(event)},"request_id":${JSON.stringify(rid)}${ref !== undefined ? `,"ref":${JSON.stringify(ref)}` : ''}${id !== undefined ? `,"id":${JSON.stringify(id)}` : ''},"data":${dataJson}}`);
  };
  const fail = (err: unknown, ref: string | undefined): void => {
    const rid = randomUUID();
    frame('error', rid, ref, JSON.stringify(errorBody(toCortadoError(err), rid)));
    frame('end', rid, ref, '{}');
  };

  return {
    message(text, binary) {
      let ref: string | undefined;
      try {
        if (binary) throw new CortadoError('VALIDATION_FAILED', 'frames are JSON text, not binary');
        checkJsonDepth(Buffer.from(text));
        let msg: unknown;
        try {
          msg = JSON.parse(text);
        } catch {
          throw new CortadoError('MALFORMED_BODY', 'the frame is not valid JSON');
        }
        if (!msg || typeof msg !== 'object' || Array.isArray(msg)) throw new CortadoError('VALIDATION_FAILED', 'a frame is a JSON object with a "type"');
        const { type, id, endpoint, headers, ...body } = msg as Record<string, unknown>;
        if (typeof id === 'string' && /^[A-Za-z0-9_.:-]{1,64}$/.test(id)) ref = id;
        else if (id !== undefined) throw new CortadoError('VALIDATION_FAILED', 'id: 1–64 of A-Z a-z 0-9 _ . : -');
        if (type !== 'ask' && type !== 'confirm') throw new CortadoError('VALIDATION_FAILED', 'type: "ask" or "confirm"');
        const routes: readonly string[] = WS_ENDPOINTS[type];
        const path = endpoint === undefined ? routes[0]! : String(endpoint);
        if (!routes.includes(path)) throw new CortadoError('VALIDATION_FAILED', `endpoint: one of ${routes.join(', ')} for "${type}"`);
        const extra: Record<string, string> = {};
        if (headers !== undefined) {
          if (!headers || typeof headers !== 'object' || Array.isArray(headers)) throw new CortadoError('VALIDATION_FAILED', 'headers: an object');
          for (const [k, v] of Object.entries(headers as Record<string, unknown>)) {
            const name = k.toLowerCase();
            if (!(FRAME_HEADERS as readonly string[]).includes(name)) throw new CortadoError('VALIDATION_FAILED', `headers: only ${FRAME_HEADERS.join(', ')}`);
            if (typeof v !== 'string' || v.length > 1024 || /[\0-\x1f\x7f]/.test(v)) throw new CortadoError('VALIDATION_FAILED', `headers.${name}: a short string`);
            extra[name] = v;
          }
        }
        if (running.size >= WS_MAX_IN_FLIGHT) throw new CortadoError('RATE_LIMITED', `at most ${WS_MAX_IN_FLIGHT} answers run at once on one connection`);
        dispatch(path, Buffer.from(JSON.stringify(body)), { ...base, ...extra }, ref);
      } catch (err) {
        fail(err, ref);
      }
    },
    closed() {
      closed = true;
      for (const abort of [...running]) abort();
      running.clear();
    },
  };

  function dispatch(path: string, body: Buffer, headers: Record<string, string>, ref: string | undefined): void {
    // the edge gives the request its id (edge/app.ts) and says it in the answer's x-request-id:
    // the frames carry that one (this placeholder only until the answer starts, which is first)
    let rid: string = randomUUID();
    const idOf = (h: Record<string, string>): void => {
      const said = h[HTTP_REQUEST_ID];
      if (said) rid = said;
    };
    const abortCbs: Array<() => void> = [];
    let aborted = false;
    let started = false;
    let done = false;
    let pending = '';
    const abort = (): void => {
      if (aborted) return;
      aborted = true;
      for (const cb of abortCbs) cb();
    };
    const finish = (): void => {
      if (done) return;
      done = true;
      running.delete(abort);
      frame('end', rid, ref, '{}');
    };
    running.add(abort);

    /** SSE blocks → frames: the data line is JSON already and goes on as it is */
    const blocks = (chunk: string): void => {
      pending += chunk;
      let cut: number;
      while ((cut = pending.indexOf('\n\n')) >= 0) {
        const block = pending.slice(0, cut);
        pending = pending.slice(cut + 2);
        let event = 'message';
        let id: string | undefined;
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('event: ')) event = line.slice(7);
          else if (line.startsWith('data: ')) data.push(line.slice(6));
          else if (line.startsWith('id: ')) id = line.slice(4);
        }
        if (data.length) frame(event, rid, ref, data.join('\n'), id);
      }
    };

    const res: HttpResponse = {
      get aborted() { return aborted; },
      get started() { return started; },
      onAbort(cb) { abortCbs.push(cb); },
      send(status, headers, payload) {
        if (aborted || done) return;
        started = true;
        idOf(headers);
        const text = payload === undefined ? '' : payload.toString();
        let json = text;
        try {
          JSON.parse(text);
        } catch {
          json = JSON.stringify({ error: { code: 'INTERNAL', message: `HTTP ${status}`, request_id: rid } });
        }
        frame(status >= 400 ? 'error' : 'result', rid, ref, json);
        finish();
      },
      stream(_status, headers) {
        started = true;
        idOf(headers);
      },
      write(chunk) {
        if (aborted || done) return false;
        blocks(chunk);
        return peer.buffered === 0;
      },
      end() {
        finish();
      },
    };
    const req: HttpRequest = {
      method: 'POST',
      path,
      rawQuery: '',
      get query() { return new CheckedQuery(''); },
      headers: { ...headers, 'content-type': 'application/json', accept: 'text/event-stream' },
      remoteAddress: up.remoteAddress,
      params: {},
      body: () => Promise.resolve(body),
    };
    handler(req, res);
  }
}

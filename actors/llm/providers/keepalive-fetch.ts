/**
 * A `fetch` for the LLM SDKs over node:http/https with keep-alive agents.
 *
 * The SDKs call `fetch` once per model call. Node 20's built-in fetch (undici behind the WHATWG
 * layer) costs about three times the CPU of a plain node:http request on a kept-alive socket
 * (scratch measurement against the local fake: ~700 µs against ~230 µs per call, client and
 * server together), and under load that CPU is what the pipeline is short of. This function
 * speaks the same contract for what the SDKs send — a URL, a method, headers, a string or byte
 * body, an AbortSignal — and answers a real `Response` whose body streams from the socket.
 * Anything else (a `Request` object, a streamed or multipart body) goes to the built-in fetch.
 *
 * Aborts reject with an `AbortError` DOMException, as fetch does, so the SDKs' timeout and
 * cancel handling keeps working; connection failures reject with a TypeError like fetch's
 * "fetch failed", the error's cause the socket error.
 */
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';

const AGENT_OPTIONS = { keepAlive: true, keepAliveMsecs: 1_000, maxSockets: 128, maxFreeSockets: 32, scheduling: 'lifo' } as const;
const httpAgent = new http.Agent(AGENT_OPTIONS);
const httpsAgent = new https.Agent(AGENT_OPTIONS);

const NULL_BODY_STATUS = new Set([101, 103, 204, 205, 304]);

function abortError(signal: AbortSignal): unknown {
  const reason: unknown = signal.reason;
  return reason instanceof Error && reason.name === 'AbortError' ? reason : new DOMException('This operation was aborted', 'AbortError');
}

function simpleBody(body: unknown): string | Uint8Array | undefined | false {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string' || body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (body instanceof URLSearchParams) return body.toString();
  return false;
}

export function keepAliveFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  const body = simpleBody(init.body);
  if (input instanceof Request || body === false) return fetch(input, init);
  const url = input instanceof URL ? input : new URL(input);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return fetch(input, init);
  const signal = init.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(abortError(signal));

  const headers: Record<string, string> = {};
  new Headers(init.headers).forEach((value, key) => {
    headers[key] = value;
  });
  if (body !== undefined && headers['content-length'] === undefined) headers['content-length'] = String(Buffer.byteLength(body));
  const method = (init.method ?? 'GET').toUpperCase();
  const secure = url.protocol === 'https:';

  return new Promise<Response>((resolve, reject) => {
    const req = (secure ? https : http).request(
      {
        agent: secure ? httpsAgent : httpAgent,
        method,
        protocol: url.protocol,
        hostname: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
        port: url.port || (secure ? 443 : 80),
        path: `${url.pathname}${url.search}`,
        headers,
      },
      (res) => {
        const status = res.statusCode ?? 0;
        const out = new Headers();
        for (const [key, value] of Object.entries(res.headers)) {
          if (value === undefined) continue;
          if (Array.isArray(value)) for (const v of value) out.append(key, v);
          else out.set(key, value);
        }
        if (signal) {
          const onAbort = () => res.destroy(abortError(signal) as Error);
          signal.addEventListener('abort', onAbort, { once: true });
          res.once('close', () => signal.removeEventListener('abort', onAbort));
        }
        const noBody = method === 'HEAD' || NULL_BODY_STATUS.has(status);
        if (noBody) res.resume();
        try {
          resolve(new Response(noBody ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), { status, statusText: res.statusMessage ?? '', headers: out }));
        } catch (err) {
          res.destroy();
          reject(new TypeError('fetch failed', { cause: err }));
        }
      },
    );
    let aborted = false;
    const onAbort = () => {
      aborted = true;
      req.destroy();
      reject(abortError(signal!));
    };
    if (signal) {
      signal.addEventListener('abort', onAbort, { once: true });
      req.once('close', () => signal.removeEventListener('abort', onAbort));
    }
    req.once('error', (err) => {
      if (!aborted) reject(new TypeError('fetch failed', { cause: err }));
    });
    req.end(body);
  });
}

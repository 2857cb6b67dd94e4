/**
 * A `fetch` for the LLM SDKs over undici's `request` on a shared keep-alive dispatcher.
 *
 * The SDKs call `fetch` once per model call. Node 20's built-in fetch (undici behind the WHATWG
 * layer) costs three times the client CPU of undici's plain `request` on a kept-alive socket,
 * and about three times its latency against a local server (scratch measurement, client side
 * per call: ~400 µs and 0.41 ms against ~200 µs and 0.17 ms here; raw `request` ~140 µs). Under
 * load that CPU is what the pipeline is short of. This function speaks the same contract for
 * what the SDKs send — a URL, a method, headers, a string or byte body, an AbortSignal — and
 * answers with the surface of a `Response` (BufferedResponse below). The answer's body is read
 * whole first (a model's JSON answer is small, and reading it through a web stream costs
 * several event-loop turns); Cortado never asks a model to stream, so nothing waits on partial
 * output. Anything
 * else (a `Request` object, a streamed or multipart body, a scheme other than http/https) goes
 * to the built-in fetch.
 *
 * Aborts reject with an `AbortError`, as fetch does, so the SDKs' timeout and cancel handling
 * keeps working; connection failures reject with a TypeError like fetch's "fetch failed", the
 * socket error as its cause.
 */
import { STATUS_CODES } from 'node:http';
import { Agent, request } from 'undici';
import { pace } from '../../../runtime/pacer.js';

/** sockets per origin of the shared fetch below; a provider builds its own with its llm max_concurrency */
const DEFAULT_CONNECTIONS = 2048;

function agent(connections: number): Agent {
  return new Agent({ keepAliveTimeout: 4_000, keepAliveMaxTimeout: 60_000, connections, pipelining: 1 });
}

const NULL_BODY_STATUS = new Set([101, 103, 204, 205, 304]);

function abortError(signal: AbortSignal): Error {
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

/**
 * The head of an answer, read-only, as `Headers` reads it: names lower case, repeated values
 * joined with ", " (set-cookie kept apart for getSetCookie). Built from undici's plain object
 * without the WHATWG Headers' per-value validation, which the server's bytes already passed.
 */
class AnswerHeaders {
  private readonly map: Map<string, string[]>;

  constructor(raw: Record<string, string | string[] | undefined>) {
    this.map = new Map();
    for (const key of Object.keys(raw)) {
      const value = raw[key];
      if (value === undefined) continue;
      this.map.set(key.toLowerCase(), Array.isArray(value) ? value : [value]);
    }
  }

  get(name: string): string | null {
    const v = this.map.get(name.toLowerCase());
    return v === undefined ? null : v.join(', ');
  }

  has(name: string): boolean {
    return this.map.has(name.toLowerCase());
  }

  getSetCookie(): string[] {
    return [...(this.map.get('set-cookie') ?? [])];
  }

  *entries(): IterableIterator<[string, string]> {
    for (const key of [...this.map.keys()].sort()) {
      if (key === 'set-cookie') for (const v of this.map.get(key)!) yield [key, v];
      else yield [key, this.get(key)!];
    }
  }

  *keys(): IterableIterator<string> {
    for (const [k] of this.entries()) yield k;
  }

  *values(): IterableIterator<string> {
    for (const [, v] of this.entries()) yield v;
  }

  forEach(cb: (value: string, key: string, parent: this) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) cb.call(thisArg, v, k, this);
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }

  set(): never {
    throw new TypeError('immutable');
  }

  append(): never {
    throw new TypeError('immutable');
  }

  delete(): never {
    throw new TypeError('immutable');
  }

  get [Symbol.toStringTag](): string {
    return 'Headers';
  }
}

/**
 * An answer whose body is already in memory, with the surface of a `Response` that the SDKs
 * read (status, ok, headers, url, json/text/arrayBuffer/blob once, clone). A WHATWG Response
 * costs a web stream, a Headers object and their transfer machinery per call; this costs an
 * object. `body` is made (a stream over the same bytes) only when somebody asks for it.
 */
class BufferedResponse {
  readonly type = 'basic';
  readonly redirected = false;
  readonly statusText: string;
  readonly headers: AnswerHeaders;
  private used = false;
  private stream: ReadableStream<Uint8Array> | null | undefined;

  constructor(private readonly bytes: Buffer | null, readonly status: number, headers: AnswerHeaders, readonly url: string) {
    this.headers = headers;
    this.statusText = STATUS_CODES[status] ?? '';
  }

  get ok(): boolean {
    return this.status >= 200 && this.status < 300;
  }

  get bodyUsed(): boolean {
    return this.used;
  }

  get body(): ReadableStream<Uint8Array> | null {
    if (this.stream !== undefined) return this.stream;
    if (!this.bytes) return (this.stream = null);
    const bytes = this.bytes;
    let taken = false;
    this.stream = new ReadableStream<Uint8Array>({
      pull: (controller) => {
        if (!taken) {
          taken = true;
          this.used = true;
          controller.enqueue(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
        }
        controller.close();
      },
    }, { highWaterMark: 0 }); // pulled only when somebody reads: making the stream reads nothing
    return this.stream;
  }

  private take(): Buffer {
    if (this.used) throw new TypeError('Body is unusable: Body has already been read');
    this.used = true;
    return this.bytes ?? Buffer.alloc(0);
  }

  async text(): Promise<string> {
    return this.take().toString('utf8');
  }

  async json(): Promise<unknown> {
    return JSON.parse(this.take().toString('utf8')) as unknown;
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    const b = this.take();
    return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
  }

  async blob(): Promise<Blob> {
    return new Blob([await this.arrayBuffer()], { type: this.headers.get('content-type') ?? '' });
  }

  clone(): BufferedResponse {
    if (this.used) throw new TypeError('Response.clone: Body has already been consumed.');
    return new BufferedResponse(this.bytes, this.status, this.headers, this.url);
  }
}


type Method = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE' | 'CONNECT' | 'OPTIONS' | 'TRACE' | 'PATCH';

/**
 * A fetch with its own dispatcher of `connections` sockets per origin. Each provider gets one
 * sized to its llm max_concurrency (../limiter.ts keeps the calls within it), so no call ever
 * waits unseen in undici's queue for a socket: that wait, at a hard-coded 128 sockets, was what
 * held a process to ~80 questions a second at a real model's latency.
 */
export function createKeepAliveFetch(opts: { connections?: number } = {}): typeof keepAliveFetch {
  const dispatcher = agent(opts.connections ?? DEFAULT_CONNECTIONS);
  return (input, init) => fetchWith(dispatcher, input, init);
}

const shared = agent(DEFAULT_CONNECTIONS);

export function keepAliveFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  return fetchWith(shared, input, init);
}

async function fetchWith(dispatcher: Agent, input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  const body = simpleBody(init.body);
  if (input instanceof Request || body === false) return fetch(input, init);
  const url = input instanceof URL ? input : new URL(input);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return fetch(input, init);
  const signal = init.signal ?? undefined;
  if (signal?.aborted) throw abortError(signal);

  const headers = plainHeaders(init.headers);
  const method = (init.method ?? 'GET').toUpperCase() as Method;

  let res: Awaited<ReturnType<typeof request>>;
  try {
    res = await request(url, { dispatcher, method, headers, ...(body !== undefined ? { body } : {}), ...(signal ? { signal } : {}) });
  } catch (err) {
    if (signal?.aborted) throw abortError(signal);
    throw new TypeError('fetch failed', { cause: err });
  }
  const answerHeaders = new AnswerHeaders(res.headers);
  const where = url.href;
  const noBody = method === 'HEAD' || NULL_BODY_STATUS.has(res.statusCode);
  if (noBody) {
    res.body.resume();
    return new BufferedResponse(null, res.statusCode, answerHeaders, where) as unknown as Response;
  }
  // the SDKs read the whole JSON body anyway: read it here (a web stream over the socket costs
  // more than the body of a model's answer is worth); an abort meanwhile rejects as AbortError
  let bytes: ArrayBuffer;
  try {
    bytes = await res.body.arrayBuffer();
  } catch (err) {
    if (signal?.aborted) throw abortError(signal);
    throw new TypeError('fetch failed: the answer broke off', { cause: err });
  }
  // hundreds of model answers can arrive in one poll: the SDK's reading of each waits its turn (runtime/pacer.ts)
  const turn = pace();
  if (turn) await turn;
  return new BufferedResponse(Buffer.from(bytes), res.statusCode, answerHeaders, where) as unknown as Response;
}

/** The request's headers as undici takes them: a plain object, names lower case. */
function plainHeaders(init: RequestInit['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  if (!init) return out;
  if (init instanceof Headers) {
    init.forEach((value, key) => { out[key] = value; });
    return out;
  }
  const pairs = Array.isArray(init) ? init : Object.entries(init);
  for (const [key, value] of pairs) {
    if (value === undefined || value === null) continue;
    const name = String(key).toLowerCase();
    out[name] = out[name] !== undefined ? `${out[name]}, ${String(value)}` : String(value);
  }
  return out;
}

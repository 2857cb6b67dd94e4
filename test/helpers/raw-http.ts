/**
 * HTTP/1.1 by hand, over a plain TCP socket: for what fetch and undici will not send (two
 * Content-Lengths, bare LF, unmasked WebSocket frames, pipelining, a 50 MB upload that nobody
 * reads) and for watching exactly what a server answers and when it closes.
 */
import net from 'node:net';

export interface RawResponse {
  status: number;
  /** lower-case names; repeated names joined with ", " */
  headers: Record<string, string>;
  body: Buffer;
}

export interface RawExchange {
  /** every byte the server sent */
  data: Buffer;
  /** the responses read from `data` in order (see parseResponses) */
  responses: RawResponse[];
  /** bytes after the last whole response (a stray body, or the start of a cut one) */
  rest: Buffer;
  /** ms from connect to the server closing the connection; undefined: still open when we stopped */
  closedAfterMs?: number;
  /** bytes the kernel took from us (for uploads the server stopped reading) */
  bytesWritten: number;
}

/**
 * Responses in order. `methods[i]` is the method of the i-th request: a response to HEAD has
 * no body whatever its Content-Length says (RFC 9110 §9.3.2); 1xx, 204 and 304 have none either.
 */
export function parseResponses(data: Buffer, methods: readonly string[] = []): { responses: RawResponse[]; rest: Buffer } {
  const responses: RawResponse[] = [];
  let at = 0;
  for (;;) {
    const end = data.indexOf('\r\n\r\n', at);
    if (end < 0) break;
    const head = data.subarray(at, end).toString('latin1').split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? '');
    if (!m) break;
    const headers: Record<string, string> = {};
    for (const line of head.slice(1)) {
      const c = line.indexOf(':');
      const k = line.slice(0, c).trim().toLowerCase();
      const v = line.slice(c + 1).trim();
      headers[k] = headers[k] === undefined ? v : `${headers[k]}, ${v}`;
    }
    const status = Number(m[1]);
    const bodyless = methods[responses.length] === 'HEAD' || status < 200 || status === 204 || status === 304;
    const length = bodyless ? 0 : Number(headers['content-length'] ?? 0);
    if (end + 4 + length > data.length) break;
    responses.push({ status, headers, body: data.subarray(end + 4, end + 4 + length) });
    at = end + 4 + length;
  }
  return { responses, rest: data.subarray(at) };
}

export type Step = string | Buffer | { waitMs: number } | { upload: number } | { halfClose: true };

/**
 * Connects, sends the steps in order (`waitMs` pauses; `upload` streams that many bytes as fast
 * as the server takes them, in the background: put it last; `halfClose` ends our side, a FIN,
 * and keeps reading), then waits until the server closes, or `untilMs` has passed, or
 * `done` says enough was read.
 */
export async function exchange(port: number, steps: readonly Step[], opts: { untilMs: number; methods?: readonly string[]; done?: (x: RawExchange) => boolean }): Promise<RawExchange> {
  const socket = net.connect(port, '127.0.0.1');
  const started = Date.now();
  const chunks: Buffer[] = [];
  let closedAfterMs: number | undefined;
  const snapshot = (): RawExchange => {
    const data = Buffer.concat(chunks);
    const { responses, rest } = parseResponses(data, opts.methods);
    return { data, responses, rest, closedAfterMs, bytesWritten: socket.bytesWritten - socket.writableLength };
  };
  let wake: () => void = () => undefined;
  socket.on('data', (d: Buffer) => {
    chunks.push(d);
    wake();
  });
  socket.on('close', () => {
    closedAfterMs ??= Date.now() - started;
    wake();
  });
  socket.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
  for (const step of steps) {
    if (socket.destroyed) break;
    if (typeof step === 'string' || Buffer.isBuffer(step)) socket.write(step);
    else if ('waitMs' in step) await sleep(step.waitMs);
    else if ('halfClose' in step) socket.end();
    else void upload(socket, step.upload);
  }
  const deadline = started + opts.untilMs;
  while (closedAfterMs === undefined && Date.now() < deadline && !(opts.done?.(snapshot()) ?? false)) {
    await new Promise<void>((resolve) => {
      wake = resolve;
      setTimeout(resolve, Math.min(100, Math.max(0, deadline - Date.now())));
    });
  }
  const out = snapshot();
  socket.destroy();
  return out;
}

/** Streams `total` bytes, waiting for 'drain' (never more than one chunk queued in Node). */
function upload(socket: net.Socket, total: number): Promise<void> {
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  let sent = 0;
  return new Promise((resolve) => {
    const pump = (): void => {
      while (!socket.destroyed && sent < total) {
        sent += chunk.length;
        if (!socket.write(sent <= total ? chunk : chunk.subarray(0, chunk.length - (sent - total)))) {
          socket.once('drain', pump);
          return;
        }
      }
      resolve();
    };
    socket.once('close', () => resolve());
    pump();
  });
}

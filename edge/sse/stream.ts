/** Server-Sent Events over any HttpResponse: framing, heartbeats, close. */
import { HTTP_REQUEST_ID } from '../../protocol/headers.js';
import type { HttpResponse } from '../http/server.js';
import { SECURITY_HEADERS } from '../http/reply.js';

export interface SseStream {
  send(event: string, data: unknown, id?: string | number): boolean;
  comment(text: string): void;
  close(): void;
  readonly closed: boolean;
}

export function openSse(res: HttpResponse, rid: string, opts: { heartbeatMs?: number; extraHeaders?: Record<string, string> } = {}): SseStream {
  res.stream(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    'x-accel-buffering': 'no',
    [HTTP_REQUEST_ID]: rid,
    ...SECURITY_HEADERS,
    ...opts.extraHeaders,
  });
  let closed = false;
  const heartbeat = setInterval(() => { if (!closed) res.write(': keep-alive\n\n'); }, opts.heartbeatMs ?? 15_000);
  heartbeat.unref();
  const close = (): void => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    res.end();
  };
  res.onAbort(() => {
    closed = true;
    clearInterval(heartbeat);
  });
  res.write(': stream open\n\n');
  return {
    get closed() { return closed || res.aborted; },
    send(event, data, id) {
      if (closed || res.aborted) return false;
      const json = JSON.stringify(data);
      return res.write(`${id !== undefined ? `id: ${id}\n` : ''}event: ${event}\ndata: ${json}\n\n`);
    },
    comment(text) {
      if (!closed) res.write(`: ${text.replace(/\n/g, ' ')}\n\n`);
    },
    close,
  };
}

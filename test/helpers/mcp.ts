/**
 * MCP test helpers: API tokens issued over the bus, official SDK clients over each transport,
 * and a bare SSE reader (node:http) for what an SDK client hides: status codes, the endpoint
 * event, a stream that the server ends.
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Bus } from '../../runtime/bus.js';
import { TokenIssue, TokenRevoke } from '../../protocol/subjects.js';

export async function issueToken(bus: Bus, username = 'alice', extra: { ttl_hours?: number; db_config?: Record<string, unknown> } = {}): Promise<{ token: string; id: string }> {
  const r = await bus.request(TokenIssue, { username, label: 'mcp test', ...extra }, { requestId: randomUUID() });
  return { token: r.token, id: r.info.id };
}

export async function revokeToken(bus: Bus, id: string): Promise<void> {
  await bus.request(TokenRevoke, { id }, { requestId: randomUUID() });
}

export type TransportKind = 'sse' | 'http';

/** An SDK client connected with the token in a header (default) or in the URL. */
export async function connectClient(base: string, kind: TransportKind, token: string, via: 'header' | 'query' | 'bearer' = 'header'): Promise<Client> {
  const path = kind === 'sse' ? '/mcp/sse' : '/mcp';
  const url = new URL(path, base);
  const headers: Record<string, string> = {};
  if (via === 'query') url.searchParams.set('token', token);
  else if (via === 'bearer') headers.authorization = `Bearer ${token}`;
  else headers['x-mcp-token'] = token;
  const client = new Client({ name: 'cortado-test', version: '0.0.1' });
  const transport = kind === 'sse'
    ? new SSEClientTransport(url, { requestInit: { headers } })
    : new StreamableHTTPClientTransport(url, { requestInit: { headers } });
  await client.connect(transport);
  return client;
}

/** Close a client; a Streamable HTTP one ends its session first (DELETE /mcp), as a polite client does. */
export async function closeClient(client: Client): Promise<void> {
  const transport = client.transport;
  if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession();
  await client.close();
}

export interface SseEvent {
  event: string;
  data: string;
}

export interface RawSse {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** the body, when the answer was not a stream */
  body: string;
  /** the next event (of that name, when given) */
  next(event?: string, timeoutMs?: number): Promise<SseEvent>;
  /** resolves when the server ends the stream */
  ended: Promise<void>;
  close(): void;
}

/** GET an SSE URL with node:http (one socket of its own) and read its events as they come. */
export function openRawSse(url: string, headers: Record<string, string> = {}): Promise<RawSse> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false, headers: { accept: 'text/event-stream', ...headers } }, (res) => {
      const queue: SseEvent[] = [];
      const waiters: Array<{ event: string | undefined; resolve: (e: SseEvent) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }> = [];
      let buffer = '';
      let body = '';
      let endedResolve!: () => void;
      const ended = new Promise<void>((r) => { endedResolve = r; });
      const deliver = (): void => {
        for (let i = 0; i < waiters.length; i++) {
          const w = waiters[i]!;
          const at = queue.findIndex((e) => w.event === undefined || e.event === w.event);
          if (at < 0) continue;
          const [e] = queue.splice(at, 1);
          waiters.splice(i--, 1);
          clearTimeout(w.timer);
          w.resolve(e!);
        }
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (res.statusCode !== 200) {
          body += chunk;
          return;
        }
        buffer += chunk;
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          let event = 'message';
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith('event:')) event = line.slice(6).trim();
            else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
          }
          if (data.length) queue.push({ event, data: data.join('\n') });
        }
        deliver();
      });
      const finish = (): void => {
        endedResolve();
        for (const w of waiters.splice(0)) {
          clearTimeout(w.timer);
          w.reject(new Error('the stream ended'));
        }
      };
      res.on('end', finish);
      res.on('close', finish);
      res.on('error', finish);
      const out: RawSse = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        get body() { return body; },
        next(event, timeoutMs = 10_000) {
          return new Promise<SseEvent>((ok, fail) => {
            const timer = setTimeout(() => {
              const i = waiters.findIndex((w) => w.timer === timer);
              if (i >= 0) waiters.splice(i, 1);
              fail(new Error(`no ${event ?? 'SSE'} event within ${timeoutMs} ms`));
            }, timeoutMs);
            waiters.push({ event, resolve: ok, reject: fail, timer });
            deliver();
          });
        },
        ended,
        close() {
          req.destroy();
        },
      };
      if (res.statusCode !== 200) res.on('end', () => resolve(out));
      else resolve(out);
    });
    req.on('error', reject);
  });
}

/** POST one JSON-RPC message; returns the status. */
export async function postMessage(url: string, message: unknown, headers: Record<string, string> = {}): Promise<number> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(message) });
  await res.arrayBuffer();
  return res.status;
}

export const INITIALIZE = (id: number | string = 0): Record<string, unknown> => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'raw-test', version: '0.0.1' } },
});

/** Wait until `check` holds (polling), or fail after `timeoutMs`. */
export async function until(check: () => boolean, timeoutMs = 5_000, what = 'the condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

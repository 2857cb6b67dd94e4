/**
 * The SDK's transport seam for MCP over SSE (the 2024-11-05 transport), on the edge's HTTP
 * adapter, so it runs the same on uWebSockets.js and node:http.
 *
 * `GET /mcp/sse` opens the stream: the first event, `endpoint`, names where the client posts its
 * messages (`/mcp/messages/?sessionId=…`); every server message is a `message` event. Client
 * messages arrive through `receive()` from the POST route, which answers 202.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';
import type { HttpResponse } from '../../http/server.js';
import { openSse, type SseStream } from '../../sse/stream.js';

export interface SseTransportOptions {
  /** the POST path, e.g. /mcp/messages/ */
  endpoint: string;
  rid: string;
  heartbeatMs: number;
  /** the stream ended, whoever ended it */
  onEnd(): void;
}

export class EdgeSseTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;

  private stream: SseStream | undefined;
  private ended = false;

  constructor(
    private readonly res: HttpResponse,
    readonly sessionId: string,
    private readonly opts: SseTransportOptions,
  ) {}

  get open(): boolean {
    return this.stream !== undefined && !this.ended && !this.stream.closed;
  }

  async start(): Promise<void> {
    if (this.stream) throw new Error('the SSE transport is already started');
    this.res.onAbort(() => this.finish());
    this.stream = openSse(this.res, this.opts.rid, { heartbeatMs: this.opts.heartbeatMs });
    // the endpoint is sent as is (a relative URL), not as JSON
    this.res.write(`event: endpoint\ndata: ${this.opts.endpoint}?sessionId=${encodeURIComponent(this.sessionId)}\n\n`);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (!this.open) throw new Error('the SSE stream is closed');
    this.stream!.send('message', message);
  }

  /** A message the client posted to the endpoint. */
  receive(message: JSONRPCMessage, extra?: MessageExtraInfo): void {
    this.onmessage?.(message, extra);
  }

  async close(): Promise<void> {
    this.stream?.close();
    this.finish();
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    this.stream?.close();
    this.opts.onEnd();
    this.onclose?.();
  }
}

/**
 * The SDK's transport seam for MCP Streamable HTTP (protocol 2025-03-26 and later), on the
 * edge's HTTP adapter.
 *
 * One transport per session. Each POST is an exchange: its requests are handed to the protocol
 * layer, and the HTTP answer carries their responses: one JSON body when every response is in
 * (a batch answers with an array), or an SSE stream that ends after the last one (chosen for
 * tool calls when the client accepts it, so a long question is not cut by header timeouts and
 * messages about a request can go out before its answer). A POST of only notifications or
 * responses is answered 202 at once. `GET /mcp` opens the session's stream for server messages
 * that belong to no request; `DELETE /mcp` ends the session.
 */
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type MessageExtraInfo,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { HTTP_REQUEST_ID } from '../../../protocol/headers.js';
import { SECURITY_HEADERS } from '../../http/reply.js';
import type { HttpResponse } from '../../http/server.js';
import { openSse, type SseStream } from '../../sse/stream.js';

export const SESSION_HEADER = 'mcp-session-id';

interface Exchange {
  res: HttpResponse;
  rid: string;
  /** set in SSE mode */
  stream: SseStream | undefined;
  batch: boolean;
  waiting: Set<RequestId>;
  responses: JSONRPCMessage[];
  done: () => void;
}

export interface StreamableTransportOptions {
  heartbeatMs: number;
  /** the session ended, whoever ended it */
  onEnd(): void;
}

export class EdgeStreamableTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;

  /** request id → the exchange that waits for its response */
  private readonly exchanges = new Map<RequestId, Exchange>();
  private standalone: SseStream | undefined;
  private ended = false;

  constructor(readonly sessionId: string, private readonly opts: StreamableTransportOptions) {}

  async start(): Promise<void> {
    // nothing to open: the client's HTTP requests drive the session
  }

  /** a request is being answered, or the server stream is open */
  get busy(): boolean {
    return this.exchanges.size > 0 || (this.standalone !== undefined && !this.standalone.closed);
  }

  /**
   * Hand a POST's messages to the protocol layer. Resolves once the HTTP answer is complete
   * (or the client went away).
   */
  handlePost(messages: JSONRPCMessage[], batch: boolean, res: HttpResponse, opts: { rid: string; stream: boolean; extra?: MessageExtraInfo }): Promise<void> {
    const requests = messages.filter(isJSONRPCRequest);
    if (requests.length === 0) {
      res.send(202, { [SESSION_HEADER]: this.sessionId, [HTTP_REQUEST_ID]: opts.rid, ...SECURITY_HEADERS });
      for (const m of messages) this.onmessage?.(m, opts.extra);
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const ex: Exchange = { res, rid: opts.rid, stream: undefined, batch, waiting: new Set(requests.map((r) => r.id)), responses: [], done: resolve };
      for (const id of ex.waiting) this.exchanges.set(id, ex);
      res.onAbort(() => this.drop(ex));
      if (opts.stream) ex.stream = openSse(res, opts.rid, { heartbeatMs: this.opts.heartbeatMs, extraHeaders: { [SESSION_HEADER]: this.sessionId } });
      for (const m of messages) this.onmessage?.(m, opts.extra);
    });
  }

  /** Open the stream of server messages that belong to no request; false when one is open already. */
  openStream(res: HttpResponse, rid: string): boolean {
    if (this.standalone && !this.standalone.closed) return false;
    const stream = openSse(res, rid, { heartbeatMs: this.opts.heartbeatMs, extraHeaders: { [SESSION_HEADER]: this.sessionId } });
    this.standalone = stream;
    res.onAbort(() => {
      if (this.standalone === stream) this.standalone = undefined;
    });
    return true;
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (this.ended) throw new Error('the MCP session is closed');
    if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
      const id = message.id;
      const ex = id === undefined ? undefined : this.exchanges.get(id);
      if (!ex || id === undefined) return; // its client went away
      this.exchanges.delete(id);
      ex.waiting.delete(id);
      if (ex.stream) ex.stream.send('message', message);
      else ex.responses.push(message);
      if (ex.waiting.size === 0) this.complete(ex);
      return;
    }
    // a request or notification from the server: on the stream of the request it concerns, else the session's stream
    const related = options?.relatedRequestId !== undefined ? this.exchanges.get(options.relatedRequestId) : undefined;
    if (related?.stream) related.stream.send('message', message);
    else if (this.standalone && !this.standalone.closed) this.standalone.send('message', message);
    // otherwise there is no open stream to carry it: the protocol allows dropping it
  }

  async close(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    for (const ex of new Set(this.exchanges.values())) {
      if (ex.stream) ex.stream.close();
      else if (!ex.res.started) ex.res.send(404, { 'content-type': 'application/json', [HTTP_REQUEST_ID]: ex.rid, ...SECURITY_HEADERS }, JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session closed' }, id: null }));
      ex.done();
    }
    this.exchanges.clear();
    this.standalone?.close();
    this.standalone = undefined;
    this.opts.onEnd();
    this.onclose?.();
  }

  private complete(ex: Exchange): void {
    if (ex.stream) {
      ex.stream.close();
    } else {
      const body = ex.batch ? ex.responses : ex.responses[0];
      ex.res.send(200, {
        'content-type': 'application/json',
        'cache-control': 'no-store',
        [SESSION_HEADER]: this.sessionId,
        [HTTP_REQUEST_ID]: ex.rid,
        ...SECURITY_HEADERS,
      }, JSON.stringify(body));
    }
    ex.done();
  }

  /** The client of an exchange went away: its responses have nowhere to go. */
  private drop(ex: Exchange): void {
    for (const id of ex.waiting) this.exchanges.delete(id);
    ex.waiting.clear();
    ex.done();
  }
}

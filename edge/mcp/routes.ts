/**
 * The MCP endpoints of the edge.
 *
 *   GET  /mcp/sse                      SSE transport: opens a session, streams server messages
 *   POST /mcp/messages/?sessionId=…    SSE transport: a client message, answered 202
 *   POST /mcp                          Streamable HTTP: initialize (opens a session) or messages
 *   GET  /mcp                          Streamable HTTP: the session's stream of server messages
 *   DELETE /mcp                        Streamable HTTP: ends the session
 *
 * Every route takes an API token (`auth: 'token'`, edge/caller.ts: `x-mcp-token`, a bearer
 * token, or `?token=`). The token is checked (identity actor, over the bus) before a session
 * exists: missing, unknown, expired or revoked gives 401 and creates nothing. Later requests of
 * a session must carry the same token (compared by digest, without asking the identity actor
 * each time); the SSE message route also accepts none, the unguessable session id being what
 * the SSE transport gives the client. The token is never logged: the request log redacts it
 * (runtime/log.ts redactUrl), and nothing here names it. The transports switch
 * on `mcp.sse.enabled` and `mcp.streamable_http.enabled` (404 when off), read per request.
 */
import { createHash, randomUUID } from 'node:crypto';
import { isInitializeRequest, JSONRPCMessageSchema, SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Bus } from '../../runtime/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import { HTTP_REQUEST_ID } from '../../protocol/headers.js';
import type { Logger } from '../../runtime/log.js';
import { TokenCheck } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import type { RateLimiter } from '../http/ratelimit.js';
import { SECURITY_HEADERS, sendError } from '../http/reply.js';
import type { RouteContext, Router } from '../http/router.js';
import type { HttpRequest, HttpResponse } from '../http/server.js';
import { mcpToken, type TokenCaller } from '../caller.js';
import { createMcpServer } from './server.js';
import { createSessionRegistry, type McpSession, type McpSessionInfo, type McpSessionRegistry } from './session.js';
import { EdgeSseTransport } from './transports/sse.js';
import { EdgeStreamableTransport, SESSION_HEADER } from './transports/streamable.js';

export const SSE_PATH = '/mcp/sse';
export const MESSAGES_PATH = '/mcp/messages/';
export const STREAMABLE_PATH = '/mcp';

const PROTOCOL_VERSION_HEADER = 'mcp-protocol-version';
/** SSE comments this often keep proxies from closing a quiet stream */
const HEARTBEAT_MS = 15_000;
/** a session's token is asked about again before a tool call when the last check is older */
const RECHECK_MS = 30_000;
/**
 * Messages in one POST (a JSON-RPC batch; MCP 2025-06-18 dropped batches, earlier clients may
 * send them). More is refused whole with the JSON-RPC error -32600 (HTTP 400). Each tool call
 * of a batch counts against the caller's rate limit, as many POSTs would.
 */
export const MCP_MAX_BATCH = 10;

export interface McpRouteDeps {
  bus: Bus;
  config: Config;
  log: Logger;
  version: string;
  /** the edge's rate limiter: a POST of several tool calls is charged one unit more per call beyond the first */
  limits?: Pick<RateLimiter, 'charge'>;
}

interface Live {
  session: McpSession;
  sse?: EdgeSseTransport;
  http?: EdgeStreamableTransport;
}

/** A JSON-RPC error as the HTTP answer (what MCP clients parse on transport-level failures). */
function rpcError(res: HttpResponse, status: number, code: number, message: string, rid: string): void {
  res.send(status, { 'content-type': 'application/json', [HTTP_REQUEST_ID]: rid, ...SECURITY_HEADERS }, JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/** Compare tokens of later requests with the session's without keeping the token readable. */
function tokenDigest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

function accepts(req: HttpRequest, type: string): boolean {
  return (req.headers.accept ?? '').toLowerCase().includes(type);
}

/** A batch of no messages or more than MCP_MAX_BATCH: answered as the JSON-RPC error -32600. */
class BatchTooLarge extends Error {
  constructor(readonly size: number) {
    super(`Invalid Request: a batch holds 1 to ${MCP_MAX_BATCH} messages (this one ${size}); send the rest in further requests`);
  }
}

/** How many tool calls a POST carries (each one is a question or a catalog read). */
function toolCalls(messages: readonly JSONRPCMessage[]): number {
  return messages.filter((m) => 'method' in m && m.method === 'tools/call').length;
}

/** The POST body as JSON-RPC messages: content type, JSON syntax, message shape. */
async function readMessages(req: HttpRequest, allowBatch: boolean): Promise<{ messages: JSONRPCMessage[]; batch: boolean }> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') throw new CortadoError('UNSUPPORTED_MEDIA_TYPE', 'send MCP messages as application/json');
  let value: unknown;
  try {
    value = JSON.parse((await req.body()).toString('utf8'));
  } catch (err) {
    if (err instanceof CortadoError) throw err;
    throw new CortadoError('MALFORMED_BODY', 'the body is not valid JSON');
  }
  const batch = Array.isArray(value);
  if (batch && !allowBatch) throw new CortadoError('VALIDATION_FAILED', 'send one JSON-RPC message per POST');
  const items: unknown[] = batch ? (value as unknown[]) : [value];
  if (items.length === 0 || items.length > MCP_MAX_BATCH) throw new BatchTooLarge(items.length);
  const messages: JSONRPCMessage[] = [];
  for (const item of items) {
    const parsed = JSONRPCMessageSchema.safeParse(item);
    if (!parsed.success) throw new CortadoError('VALIDATION_FAILED', 'the body is not a JSON-RPC 2.0 message');
    messages.push(parsed.data);
  }
  return { messages, batch };
}

export function mcpRoutes(router: Router, deps: McpRouteDeps): McpSessionRegistry {
  const { bus, config, log } = deps;
  const registry = createSessionRegistry({ bus, config, log });
  const live = new Map<string, Live>();

  /** Build the protocol server and the session record of a connection whose token checked out. */
  const open = (info: McpSessionInfo, caller: TokenCaller, attach: (l: Live) => void, busy: () => boolean): { session: McpSession; server: ReturnType<typeof createMcpServer> } => {
    let checkedAt = Date.now();
    let closing: Promise<void> | undefined;
    const token = caller.secret;
    const server = createMcpServer(info, {
      bus,
      config,
      log,
      version: deps.version,
      async recheck(requestId) {
        if (Date.now() - checkedAt < RECHECK_MS) return;
        await bus.request(TokenCheck, { token }, { requestId });
        checkedAt = Date.now();
      },
      expire() {
        setImmediate(() => void session.close('token no longer valid'));
      },
    });
    const session: McpSession = {
      info,
      tokenDigest: tokenDigest(token),
      lastSeen: Date.now(),
      busy,
      close(reason) {
        closing ??= (async () => {
          log.info({ mcp_session: info.id, reason }, 'closing MCP session');
          await server.close().catch(() => undefined);
          ended(info.id);
        })();
        return closing;
      },
    };
    const l: Live = { session };
    attach(l);
    live.set(info.id, l);
    registry.add(session);
    return { session, server };
  };

  const ended = (id: string): void => {
    const l = live.get(id);
    if (!l) return;
    live.delete(id);
    registry.remove(id);
    log.info({ mcp_session: id, transport: l.session.info.transport, user: l.session.info.username, open: registry.size }, 'MCP session ended');
  };

  // ---- SSE ---------------------------------------------------------------------------------

  router.get(SSE_PATH, { auth: 'token', summary: 'MCP over SSE: the event stream of one session', produces: 'text/event-stream' }, async (req, res, ctx) => {
    if (!config.mcp.sse.enabled) throw new CortadoError('NOT_FOUND', `no route for GET ${SSE_PATH} (mcp.sse.enabled is false)`);
    if (req.method !== 'GET') throw new CortadoError('METHOD_NOT_ALLOWED', `use GET on ${SSE_PATH}`);
    const caller = await ctx.caller();
    const id = randomUUID();
    const info = await registry.describe(caller, id, 'sse', ctx.rid);
    if (res.aborted) return;
    const transport = new EdgeSseTransport(res, id, { endpoint: MESSAGES_PATH, rid: ctx.rid, heartbeatMs: HEARTBEAT_MS, onEnd: () => ended(id) });
    const { server } = open(info, caller, (l) => { l.sse = transport; }, () => transport.open);
    await server.connect(transport);
    ctx.log.info({ mcp_session: id, transport: 'sse', user: info.username, token_id: info.tokenId, open: registry.size }, 'MCP session opened');
  });

  router.post(MESSAGES_PATH, { auth: 'token', summary: 'MCP over SSE: one JSON-RPC message of a session (?sessionId=)', status: 202, produces: 'text/plain' }, async (req, res, ctx) => {
    if (!config.mcp.sse.enabled) throw new CortadoError('NOT_FOUND', `no route for POST ${MESSAGES_PATH} (mcp.sse.enabled is false)`);
    const id = req.query.get('sessionId') ?? '';
    const l = id ? live.get(id) : undefined;
    const token = mcpToken(req);
    if (!l?.sse) {
      if (token !== undefined) await ctx.caller(); // a revoked token hears 401, not 404
      throw new CortadoError('NOT_FOUND', `no open MCP session "${id.slice(0, 64)}": open one with GET ${SSE_PATH}`);
    }
    if (token !== undefined && tokenDigest(token) !== l.session.tokenDigest) throw new CortadoError('UNAUTHORIZED', 'this token did not open the session');
    const { messages } = await readMessages(req, false);
    l.session.lastSeen = Date.now();
    for (const m of messages) l.sse.receive(m, { requestInfo: { headers: req.headers } });
    res.send(202, { 'content-type': 'text/plain; charset=utf-8', [HTTP_REQUEST_ID]: ctx.rid, ...SECURITY_HEADERS }, 'Accepted');
  });

  // ---- Streamable HTTP -----------------------------------------------------------------------

  /** The session a Streamable HTTP request names, checked against its token; or an error answer. */
  const httpSession = async (req: HttpRequest, res: HttpResponse, ctx: RouteContext<'token'>): Promise<Live | undefined> => {
    const rid = ctx.rid;
    const token = mcpToken(req);
    const id = req.headers[SESSION_HEADER];
    if (!token) throw new CortadoError('UNAUTHORIZED', 'send the API token with every request (x-mcp-token, Authorization: Bearer, or ?token=)');
    if (!id) {
      rpcError(res, 400, -32000, `Bad Request: the ${SESSION_HEADER} header is required (initialize first)`, rid);
      return undefined;
    }
    const l = live.get(id);
    if (!l?.http || tokenDigest(token) !== l.session.tokenDigest) {
      await ctx.caller(); // a bad token hears 401 rather than 404
      rpcError(res, 404, -32001, 'Session not found', rid);
      return undefined;
    }
    const version = req.headers[PROTOCOL_VERSION_HEADER];
    if (version && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      rpcError(res, 400, -32000, `Bad Request: unsupported protocol version ${version.slice(0, 32)} (supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`, rid);
      return undefined;
    }
    l.session.lastSeen = Date.now();
    return l;
  };

  router.post(STREAMABLE_PATH, { auth: 'token', summary: `MCP Streamable HTTP: JSON-RPC messages (Mcp-Session-Id after initialize; a batch holds at most ${MCP_MAX_BATCH}, each tool call counted by the rate limit)`, sse: true }, async (req, res, ctx) => {
    if (!config.mcp.streamable_http.enabled) throw new CortadoError('NOT_FOUND', `no route for POST ${STREAMABLE_PATH} (mcp.streamable_http.enabled is false)`);
    let read: { messages: JSONRPCMessage[]; batch: boolean };
    try {
      read = await readMessages(req, true);
    } catch (err) {
      if (err instanceof BatchTooLarge) return rpcError(res, 400, -32600, err.message, ctx.rid);
      throw err;
    }
    const { messages, batch } = read;
    if (messages.some(isInitializeRequest)) {
      if (req.headers[SESSION_HEADER]) return rpcError(res, 400, -32600, 'Invalid Request: this session is already initialized', ctx.rid);
      if (messages.length > 1) return rpcError(res, 400, -32600, 'Invalid Request: initialize comes alone', ctx.rid);
      const caller = await ctx.caller();
      const id = randomUUID();
      const info = await registry.describe(caller, id, 'streamable_http', ctx.rid);
      if (res.aborted) return;
      const transport = new EdgeStreamableTransport(id, { heartbeatMs: HEARTBEAT_MS, onEnd: () => ended(id) });
      const { server } = open(info, caller, (l) => { l.http = transport; }, () => transport.busy);
      await server.connect(transport);
      ctx.log.info({ mcp_session: id, transport: 'streamable_http', user: info.username, token_id: info.tokenId, open: registry.size }, 'MCP session opened');
      await transport.handlePost(messages, batch, res, { rid: ctx.rid, stream: false, extra: { requestInfo: { headers: req.headers } } });
      return;
    }
    const l = await httpSession(req, res, ctx);
    if (!l?.http) return;
    // the request itself took one unit of the caller's budget (edge/app.ts): each further tool call takes one more
    const charged = await deps.limits?.charge(req, ctx.rid, toolCalls(messages));
    if (charged && !charged.allowed) {
      sendError(res, charged.error ?? new CortadoError('RATE_LIMITED', 'too many requests'), ctx.rid, charged.headers);
      return;
    }
    // tool calls can take long: stream their answer when the client takes a stream
    const stream = accepts(req, 'text/event-stream') && messages.some((m) => 'method' in m && m.method === 'tools/call' && 'id' in m);
    await l.http.handlePost(messages, batch, res, { rid: ctx.rid, stream, extra: { requestInfo: { headers: req.headers } } });
  });

  router.get(STREAMABLE_PATH, { auth: 'token', summary: 'MCP Streamable HTTP: the server-to-client stream of a session', produces: 'text/event-stream' }, async (req, res, ctx) => {
    if (!config.mcp.streamable_http.enabled) throw new CortadoError('NOT_FOUND', `no route for GET ${STREAMABLE_PATH} (mcp.streamable_http.enabled is false)`);
    if (req.method !== 'GET') throw new CortadoError('METHOD_NOT_ALLOWED', `use GET on ${STREAMABLE_PATH}`);
    if (!accepts(req, 'text/event-stream')) return rpcError(res, 406, -32000, 'Not Acceptable: the client must accept text/event-stream', ctx.rid);
    const l = await httpSession(req, res, ctx);
    if (!l?.http) return;
    if (!l.http.openStream(res, ctx.rid)) rpcError(res, 409, -32000, 'Conflict: this session has a stream open already', ctx.rid);
  });

  router.add('DELETE', STREAMABLE_PATH, { auth: 'token', summary: 'MCP Streamable HTTP: end a session' }, async (req, res, ctx) => {
    if (!config.mcp.streamable_http.enabled) throw new CortadoError('NOT_FOUND', `no route for DELETE ${STREAMABLE_PATH} (mcp.streamable_http.enabled is false)`);
    const l = await httpSession(req, res, ctx);
    if (!l) return;
    await l.session.close('ended by the client');
    res.send(200, { [HTTP_REQUEST_ID]: ctx.rid, ...SECURITY_HEADERS });
  });

  return registry;
}


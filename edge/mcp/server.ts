/**
 * The MCP protocol layer of one session: the SDK's low-level `Server` with Cortado's tools.
 *
 * The low-level server (not `McpServer`) because of the error contract: `McpServer` turns every
 * failure, bad arguments included, into an `isError` result, while Cortado answers bad
 * arguments with the protocol error InvalidParams (-32602) and every other failure with an
 * `isError` result carrying `CODE: message` (protocol/errors.ts decides which codes are
 * argument errors). Tool arguments are TypeBox schemas: the JSON Schema tools/list shows is
 * the one the call is checked against, compiled once.
 */
import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { Compile, type Validator } from 'typebox/compile';
import type { Bus } from '../../runtime/bus.js';
import { describeErrors } from '../../protocol/define.js';
import { ERRORS, McpMapping, toCortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/log.js';
import type { Config } from '../../config/schema.js';
import type { McpSessionInfo } from './session.js';
import { TOOLS } from './tools/index.js';
import type { McpTool } from './tools/types.js';

export const SERVER_NAME = 'cortado';

const INSTRUCTIONS = 'Cortado answers questions about a SQL database. list_tables and get_schema show what exists; ask_database turns a question into read-only SQL and returns the rows.';

/**
 * A JSON-RPC error for the protocol layer to send. Not an `McpError`: that one bakes
 * `MCP error -32602: ` into its message, which would reach the client and be prefixed again there.
 */
export class ProtocolError extends Error {
  constructor(readonly code: number, message: string, readonly data?: unknown) {
    super(message);
  }
}

const VALIDATORS = new Map<McpTool, Validator>(TOOLS.map((t) => [t, Compile(t.input)]));

/** The tools one session advertises. */
export function toolsFor(session: McpSessionInfo, config: Config): McpTool[] {
  return TOOLS.filter((t) => t.enabled?.(session, config) ?? true);
}

/** A tool as tools/list shows it: name, short description, argument schema, read-only hint. */
export function describeTool(tool: McpTool): Tool {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.input as Tool['inputSchema'],
    annotations: { readOnlyHint: true },
  };
}

export interface McpServerDeps {
  bus: Bus;
  config: Config;
  log: Logger;
  version: string;
  /** throws UNAUTHORIZED when the session's token is no longer valid */
  recheck(requestId: string): Promise<void>;
  /** the token turned out invalid during a call: end the session after answering */
  expire(): void;
}

export function createMcpServer(session: McpSessionInfo, deps: McpServerDeps): Server {
  const { bus, config } = deps;
  const log = deps.log.child({ mcp_session: session.id });
  const server = new Server({ name: SERVER_NAME, version: deps.version }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  const tools = toolsFor(session, config);
  const byName = new Map(tools.map((t) => [t.name, t]));
  const listed = { tools: tools.map(describeTool) };

  server.setRequestHandler(ListToolsRequestSchema, () => listed);

  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const name = request.params.name;
    const tool = byName.get(name);
    if (!tool) throw new ProtocolError(ErrorCode.InvalidParams, `unknown tool "${name}" (tools: ${[...byName.keys()].join(', ')})`);
    const args: unknown = request.params.arguments ?? {};
    const check = VALIDATORS.get(tool)!;
    if (!check.Check(args)) {
      const errors = describeErrors(check, args);
      throw new ProtocolError(ErrorCode.InvalidParams, `invalid arguments for ${name}: ${errors.map((e) => `${e.path} ${e.message}`).join('; ')}`, { errors });
    }
    const requestId = randomUUID();
    const started = performance.now();
    const ms = (): number => Math.round((performance.now() - started) * 100) / 100;
    try {
      await deps.recheck(requestId);
      const out = await tool.run(args as never, { bus, config, log, session, ctx: { requestId, user: session.username, ...(session.scope ? { scope: session.scope } : {}) } });
      log.info({ rid: requestId, tool: name, ms: ms() }, 'mcp tool');
      return { content: [{ type: 'text', text: out.text }], structuredContent: out.structured };
    } catch (err) {
      const e = toCortadoError(err);
      if (ERRORS[e.code].mcp === McpMapping.InvalidParams) {
        log.info({ rid: requestId, tool: name, code: e.code, ms: ms() }, 'mcp tool');
        throw new ProtocolError(ErrorCode.InvalidParams, `${e.code}: ${e.message}`, { code: e.code, request_id: requestId });
      }
      if (e.code === 'INTERNAL') log.error({ rid: requestId, tool: name, err: e.cause ?? e, ms: ms() }, 'mcp tool failed');
      else log.info({ rid: requestId, tool: name, code: e.code, ms: ms() }, 'mcp tool');
      if (e.code === 'UNAUTHORIZED') deps.expire();
      return {
        content: [{ type: 'text', text: `${e.code}: ${e.message}` }],
        structuredContent: { error: { code: e.code, message: e.message, retryable: e.retryable, request_id: requestId } },
        isError: true,
      };
    }
  });
  return server;
}

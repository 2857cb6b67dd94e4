/**
 * `cortado mcp-stdio` (also the `cortado-mcp` command): Cortado's MCP tools for clients that
 * launch a local process (Claude Desktop, editors). It speaks MCP on stdin/stdout and forwards
 * every request to a running Cortado over Streamable HTTP, so the tools, their checks, masking
 * and logs are the service's own.
 *
 *   SERVICE_TOKEN   an API token (ctd_…), required
 *   CORTADO_URL     the service, default http://127.0.0.1:8000 (a path prefix is kept)
 *
 * stdout carries only protocol messages; diagnostics go to stderr. The upstream session is
 * opened at start (a wrong token or a service that is down fails at once, exit 1) and opened
 * again when the service forgot it (restart, idle timeout).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** package.json's version, read here: this process loads nothing of the service */
const VERSION: string = (JSON.parse(readFileSync(fileURLToPath(new URL('../package.json', import.meta.url)), 'utf8')) as { version: string }).version;

const DEFAULT_URL = 'http://127.0.0.1:8000';
/** a question may take the assistant's whole budget (model calls, the query, corrections) */
const CALL_TIMEOUT_MS = 330_000;

export interface StdioIo {
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/** The service's Streamable HTTP endpoint: `/mcp` under CORTADO_URL (keeping a path prefix). */
export function endpointOf(base: string): URL {
  const url = new URL(base);
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return new URL('mcp', url);
}

/**
 * An upstream protocol error, passed on with its code and the service's own message (an
 * `McpError` would add a second `MCP error -32602: ` prefix on the way).
 */
class ForwardedError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(err: McpError) {
    super(err.message.replace(/^MCP error -?\d+: /, ''));
    this.code = err.code;
    this.data = err.data;
  }
}

class Upstream {
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;

  constructor(private readonly url: URL, private readonly token: string, private readonly warn: (line: string) => void) {}

  get info(): { version: string; instructions: string | undefined } {
    return { version: this.client?.getServerVersion()?.version ?? VERSION, instructions: this.client?.getInstructions() };
  }

  connect(): Promise<Client> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= (async () => {
      const client = new Client({ name: 'cortado-mcp-stdio', version: VERSION });
      const transport = new StreamableHTTPClientTransport(this.url, { requestInit: { headers: { 'x-mcp-token': this.token } } });
      try {
        await client.connect(transport);
      } finally {
        this.connecting = undefined;
      }
      // failures of the connection itself (the session stream dropping); a failed call is answered to its caller
      client.onerror = (err) => this.warn(`upstream: ${err.message}`);
      this.client = client;
      return client;
    })();
    return this.connecting;
  }

  /** Run a call on the upstream session; when the service lost the session or the connection broke, open a new one and try once more. */
  async call<T>(work: (client: Client) => Promise<T>): Promise<T> {
    const client = await this.connect();
    try {
      return await work(client);
    } catch (err) {
      if (err instanceof McpError) throw err;
      const lost = (err instanceof StreamableHTTPError && err.code === 404) || err instanceof TypeError;
      if (!lost) throw err;
      this.warn(`upstream session lost (${(err as Error).message}): opening a new one`);
      await this.drop();
      return work(await this.connect());
    }
  }

  private async drop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    await client?.close().catch(() => undefined);
  }

  async close(): Promise<void> {
    const transport = this.client?.transport;
    if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession().catch(() => undefined);
    await this.drop();
  }
}

export async function runMcpStdio(env: NodeJS.ProcessEnv = process.env, io: StdioIo = process): Promise<number> {
  const warn = (line: string): void => { io.stderr.write(`cortado mcp-stdio: ${line}\n`); };
  const token = env.SERVICE_TOKEN?.trim();
  if (!token) {
    warn('set SERVICE_TOKEN to an API token (ctd_…, issued in the admin panel or with POST /admin/tokens)');
    return 2;
  }
  let url: URL;
  try {
    url = endpointOf(env.CORTADO_URL?.trim() || DEFAULT_URL);
  } catch {
    warn(`CORTADO_URL is not a URL: ${env.CORTADO_URL}`);
    return 2;
  }

  const upstream = new Upstream(url, token, warn);
  try {
    await upstream.connect();
  } catch (err) {
    const e = err as Error & { code?: number };
    warn(e.code === 401 ? `the service at ${url.origin} refused SERVICE_TOKEN (401): it is unknown, expired or revoked` : `cannot open an MCP session at ${url.href}: ${e.message}`);
    return 1;
  }

  const { version, instructions } = upstream.info;
  const server = new Server({ name: 'cortado', version }, { capabilities: { tools: {} }, ...(instructions ? { instructions } : {}) });
  const forward = async <T>(work: (client: Client) => Promise<T>): Promise<T> => {
    try {
      return await upstream.call(work);
    } catch (err) {
      // a protocol error (bad arguments) goes back as one, with its code
      if (err instanceof McpError) throw new ForwardedError(err);
      throw err;
    }
  };
  server.setRequestHandler(ListToolsRequestSchema, (request) => forward((c) => c.listTools(request.params)));
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    try {
      return (await forward((c) => c.callTool(request.params, undefined, { timeout: CALL_TIMEOUT_MS }))) as CallToolResult;
    } catch (err) {
      if (err instanceof ForwardedError) throw err;
      return { content: [{ type: 'text', text: `ACTOR_UNAVAILABLE: cannot reach Cortado at ${url.origin}: ${(err as Error).message}` }], isError: true };
    }
  });

  const transport = new StdioServerTransport(io.stdin as NodeJS.ReadStream, io.stdout as NodeJS.WriteStream);
  const closed = new Promise<void>((resolve) => {
    io.stdin.once('end', resolve);
    io.stdin.once('close', resolve);
    server.onclose = resolve;
  });
  await server.connect(transport);
  await closed;
  await server.close().catch(() => undefined);
  await upstream.close();
  return 0;
}

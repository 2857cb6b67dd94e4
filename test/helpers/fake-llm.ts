/**
 * A local server speaking Anthropic's Messages API (POST /v1/messages), driven by the real
 * @anthropic-ai/sdk through llm.anthropic.base_url. Each test scripts the replies and reads
 * back the requests it received (system prompt, messages, headers).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  model: string;
  /** the system prompt, its text blocks joined */
  system: string;
  /** whether the system prompt was marked cacheable */
  cacheControl: boolean;
  messages: Array<{ role: string; content: string }>;
  maxTokens: number;
  headers: http.IncomingHttpHeaders;
  /** the last user message */
  last: string;
}

export type FakeReply =
  | { text: string; usage?: { input_tokens?: number; output_tokens?: number; cache_read_input_tokens?: number }; delayMs?: number }
  | { status: number; message?: string; headers?: Record<string, string>; delayMs?: number }
  /** never answers (until the client gives up) */
  | { hang: true };

export type Responder = (req: RecordedRequest, index: number) => FakeReply;

export interface FakeLlm {
  url: string;
  requests: RecordedRequest[];
  /** requests received and not answered yet (a hung one counts until its client gives up) */
  readonly open: number;
  /** the most requests open at once since start or the last resetPeak() */
  readonly peakOpen: number;
  resetPeak(): void;
  /** replies used in order, then the fallback responder */
  script(...replies: FakeReply[]): void;
  /** the reply for every request once the script is used up */
  fallback(responder: Responder): void;
  close(): Promise<void>;
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error', 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error',
  429: 'rate_limit_error', 500: 'api_error', 529: 'overloaded_error',
};

/** An answer in the format our prompts ask for. */
export function sqlAnswer(sql: string, explanation = 'Here is the query.'): string {
  return `INTENT: sql\n\`\`\`sql\n${sql}\n\`\`\`\nEXPLANATION: ${explanation}`;
}

export function chatAnswer(message: string): string {
  return `INTENT: chat\nMESSAGE: ${message}`;
}

export async function startFakeLlm(opts: { port?: number } = {}): Promise<FakeLlm> {
  const requests: RecordedRequest[] = [];
  let queue: FakeReply[] = [];
  let responder: Responder = () => ({ status: 500, message: 'the fake LLM has no script for this request' });
  const hanging = new Set<http.ServerResponse>();
  let open = 0;
  let peakOpen = 0;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.startsWith('/v1/messages')) {
        send(res, 404, { type: 'error', error: { type: 'not_found_error', message: `no route ${req.method} ${req.url}` } });
        return;
      }
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      } catch {
        send(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: 'malformed JSON' } });
        return;
      }
      const recorded = record(body, req.headers);
      const index = requests.push(recorded) - 1;
      open++;
      if (open > peakOpen) peakOpen = open;
      res.once('close', () => { open--; });
      const reply = queue.shift() ?? responder(recorded, index);
      if ('hang' in reply) {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      const answer = () => {
        if ('status' in reply) {
          const type = ERROR_TYPES[reply.status] ?? 'api_error';
          send(res, reply.status, { type: 'error', error: { type, message: reply.message ?? type } }, reply.headers);
          return;
        }
        const u = reply.usage ?? {};
        send(res, 200, {
          id: `msg_fake_${index}`,
          type: 'message',
          role: 'assistant',
          model: recorded.model,
          content: [{ type: 'text', text: reply.text }],
          stop_reason: 'end_turn',
          stop_sequence: null,
          usage: {
            input_tokens: u.input_tokens ?? Math.ceil((recorded.system.length + recorded.last.length) / 4),
            output_tokens: u.output_tokens ?? Math.ceil(reply.text.length / 4),
            cache_read_input_tokens: u.cache_read_input_tokens ?? 0,
            cache_creation_input_tokens: 0,
          },
        });
      };
      if (reply.delayMs) setTimeout(answer, reply.delayMs);
      else answer();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    get open() { return open; },
    get peakOpen() { return peakOpen; },
    resetPeak() { peakOpen = open; },
    script(...replies) {
      queue = [...queue, ...replies];
    },
    fallback(r) {
      responder = r;
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function send(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'request-id': 'req_fake', ...headers });
  res.end(text);
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((b) => (b && typeof b === 'object' && 'text' in b ? String((b as { text: unknown }).text) : '')).join('');
  return '';
}

function record(body: Record<string, unknown>, headers: http.IncomingHttpHeaders): RecordedRequest {
  const system = body.system;
  const cacheControl = Array.isArray(system) && system.some((b) => b && typeof b === 'object' && 'cache_control' in b);
  const messages = (Array.isArray(body.messages) ? body.messages : []).map((m: { role?: unknown; content?: unknown }) => ({
    role: String(m.role),
    content: textOf(m.content),
  }));
  const lastUser = [...messages].reverse().find((m) => m.role === 'user');
  return {
    model: String(body.model),
    system: textOf(system),
    cacheControl,
    messages,
    maxTokens: Number(body.max_tokens),
    headers,
    last: lastUser?.content ?? '',
  };
}

/**
 * A local server speaking OpenAI's Chat Completions API, driven by the real `openai` SDK
 * through llm.openai.base_url. The SDK posts to `<base_url>/chat/completions`, so a base_url
 * ending in /v1 (OpenAI, vLLM, llama.cpp, Ollama's /v1) arrives at /v1/chat/completions and one
 * without at /chat/completions; both are served, and the path is recorded. Each test scripts
 * the replies and reads back the requests it received.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedChatRequest {
  /** the request path, e.g. /v1/chat/completions */
  path: string;
  model: string;
  /** the content of the leading system (or developer) message, '' when none */
  system: string;
  /** every message, system included, as sent */
  messages: Array<{ role: string; content: string }>;
  /** `max_tokens` as sent (undefined when absent) */
  maxTokens: number | undefined;
  /** `max_completion_tokens` as sent (undefined when absent) */
  maxCompletionTokens: number | undefined;
  /** undefined when not sent */
  temperature: number | undefined;
  stream: boolean;
  headers: http.IncomingHttpHeaders;
  /** the last user message */
  last: string;
}

export interface FakeUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  cached_tokens?: number;
}

export type FakeChatReply =
  /** `usage: null` answers without a usage object, as many local servers do */
  | { text: string; usage?: FakeUsage | null; finishReason?: string; delayMs?: number }
  /** a well-formed reply with nothing in it */
  | { empty: 'null-content' | 'no-choices' | 'refusal'; delayMs?: number }
  | { status: number; message?: string; code?: string; headers?: Record<string, string>; delayMs?: number }
  /** never answers (until the client gives up) */
  | { hang: true };

export type ChatResponder = (req: RecordedChatRequest, index: number) => FakeChatReply;

export interface FakeOpenAi {
  /** the server's root, e.g. http://127.0.0.1:1234 (add /v1 for the usual base_url) */
  url: string;
  requests: RecordedChatRequest[];
  /** replies used in order, then the fallback responder */
  script(...replies: FakeChatReply[]): void;
  /** the reply for every request once the script is used up */
  fallback(responder: ChatResponder): void;
  close(): Promise<void>;
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error', 401: 'invalid_request_error', 403: 'invalid_request_error', 404: 'invalid_request_error',
  429: 'requests', 500: 'server_error', 503: 'server_error',
};

export async function startFakeOpenAi(opts: { port?: number } = {}): Promise<FakeOpenAi> {
  const requests: RecordedChatRequest[] = [];
  let queue: FakeChatReply[] = [];
  let responder: ChatResponder = () => ({ status: 500, message: 'the fake OpenAI server has no script for this request' });
  const hanging = new Set<http.ServerResponse>();

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      if (req.method !== 'POST' || (path !== '/v1/chat/completions' && path !== '/chat/completions')) {
        sendError(res, 404, `Unknown request URL: ${req.method} ${path}`, 'unknown_url');
        return;
      }
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      } catch {
        sendError(res, 400, 'We could not parse the JSON body of your request.');
        return;
      }
      const recorded = record(path, body, req.headers);
      const index = requests.push(recorded) - 1;
      const reply = queue.shift() ?? responder(recorded, index);
      if ('hang' in reply) {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      const answer = () => {
        if ('status' in reply) {
          sendError(res, reply.status, reply.message ?? `fake error ${reply.status}`, reply.code ?? null, reply.headers);
          return;
        }
        const base = { id: `chatcmpl-fake${index}`, object: 'chat.completion', created: Math.floor(Date.now() / 1000), model: recorded.model };
        if ('empty' in reply) {
          const message = { role: 'assistant', content: null as string | null, refusal: reply.empty === 'refusal' ? 'I cannot help with that.' : null };
          const choices = reply.empty === 'no-choices' ? [] : [{ index: 0, message, finish_reason: 'stop', logprobs: null }];
          send(res, 200, { ...base, choices });
          return;
        }
        const u = reply.usage === null ? undefined : reply.usage ?? {};
        const prompt = u?.prompt_tokens ?? Math.ceil(recorded.messages.reduce((n, m) => n + m.content.length, 0) / 4);
        const completion = u?.completion_tokens ?? Math.ceil(reply.text.length / 4);
        send(res, 200, {
          ...base,
          choices: [{ index: 0, message: { role: 'assistant', content: reply.text, refusal: null }, finish_reason: reply.finishReason ?? 'stop', logprobs: null }],
          ...(u
            ? {
                usage: {
                  prompt_tokens: prompt,
                  completion_tokens: completion,
                  total_tokens: prompt + completion,
                  prompt_tokens_details: { cached_tokens: u.cached_tokens ?? 0, audio_tokens: 0 },
                  completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
                },
              }
            : {}),
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
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'x-request-id': 'req_fake', ...headers });
  res.end(text);
}

function sendError(res: http.ServerResponse, status: number, message: string, code: string | null = null, headers: Record<string, string> = {}): void {
  send(res, status, { error: { message, type: ERROR_TYPES[status] ?? 'server_error', param: null, code } }, headers);
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p === 'object' && 'text' in p ? String((p as { text: unknown }).text) : '')).join('');
  return '';
}

function optNumber(v: unknown): number | undefined {
  return typeof v === 'number' ? v : undefined;
}

function record(path: string, body: Record<string, unknown>, headers: http.IncomingHttpHeaders): RecordedChatRequest {
  const messages = (Array.isArray(body.messages) ? body.messages : []).map((m: { role?: unknown; content?: unknown }) => ({
    role: String(m.role),
    content: textOf(m.content),
  }));
  const first = messages[0];
  const lastUser = [...messages].reverse().find((m) => m.role === 'user');
  return {
    path,
    model: String(body.model),
    system: first && (first.role === 'system' || first.role === 'developer') ? first.content : '',
    messages,
    maxTokens: optNumber(body.max_tokens),
    maxCompletionTokens: optNumber(body.max_completion_tokens),
    temperature: optNumber(body.temperature),
    stream: body.stream === true,
    headers,
    last: lastUser?.content ?? '',
  };
}

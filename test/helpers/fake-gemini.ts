/**
 * A local server speaking the Gemini API wire format, driven by the real @google/genai SDK
 * through llm.gemini.base_url / llm.vertexai.base_url:
 *   POST /v1beta/models/{model}:generateContent                                    (Gemini API, x-goog-api-key)
 *   POST /v1beta1/projects/{p}/locations/{l}/publishers/google/models/{model}:generateContent  (Vertex AI, Bearer)
 *   POST /token   an OAuth token endpoint for service-account credentials whose token_uri points here
 * Each test scripts the replies and reads back what arrived: the system instruction, the
 * contents, the generation config and the headers.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GeminiRecordedRequest {
  /** which API the path belongs to */
  api: 'gemini' | 'vertex';
  path: string;
  model: string;
  /** Vertex only: from the path */
  project?: string;
  location?: string;
  /** the systemInstruction, its text parts joined */
  system: string;
  contents: Array<{ role: string; text: string }>;
  /** the last user turn's text */
  last: string;
  maxOutputTokens: number | undefined;
  temperature: number | undefined;
  headers: http.IncomingHttpHeaders;
  /** x-goog-api-key, when sent */
  apiKey: string | undefined;
  /** the Bearer token of the Authorization header, when sent */
  bearer: string | undefined;
}

export interface TokenRequest {
  grantType: string;
  /** claims of the signed JWT assertion */
  claims: Record<string, unknown>;
  /** whether the assertion's RS256 signature checks out against the trusted key (undefined: no key given) */
  signatureValid: boolean | undefined;
  /** the access token handed out */
  token: string;
}

export type GeminiReply =
  | {
      text: string;
      usage?: { promptTokenCount?: number; candidatesTokenCount?: number; cachedContentTokenCount?: number; thoughtsTokenCount?: number };
      finishReason?: string;
      delayMs?: number;
    }
  /** a reply with no text: a candidate without parts (finishReason says why), or a blocked prompt without candidates */
  | { noText: true; finishReason?: string; blockReason?: string; thoughtsTokenCount?: number; delayMs?: number }
  /** a Google API error; retryDelay becomes a google.rpc.RetryInfo detail ("2s"), reason a google.rpc.ErrorInfo */
  | { status: number; message?: string; headers?: Record<string, string>; retryDelay?: string; reason?: string; delayMs?: number }
  /** never answers (until the client gives up) */
  | { hang: true };

export type GeminiResponder = (req: GeminiRecordedRequest, index: number) => GeminiReply;

export interface FakeGemini {
  url: string;
  /** the value for a service account's token_uri */
  tokenUri: string;
  requests: GeminiRecordedRequest[];
  tokenRequests: TokenRequest[];
  script(...replies: GeminiReply[]): void;
  fallback(responder: GeminiResponder): void;
  /** the public key (PEM) token assertions must be signed with; unsigned or wrongly signed ones get 400 invalid_grant */
  trustKey(publicKeyPem: string): void;
  /** answer the token endpoint with this status from now on, or never ('hang'); null: hand out tokens */
  failTokens(how: number | 'hang' | null): void;
  close(): Promise<void>;
}

const STATUS_NAMES: Record<number, string> = {
  400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED', 500: 'INTERNAL', 503: 'UNAVAILABLE', 504: 'DEADLINE_EXCEEDED',
};

const GEMINI_PATH = /^\/v1beta\/models\/([^/:]+):generateContent$/;
const VERTEX_PATH = /^\/v1beta1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/google\/models\/([^/:]+):generateContent$/;

export async function startFakeGemini(opts: { port?: number } = {}): Promise<FakeGemini> {
  const requests: GeminiRecordedRequest[] = [];
  const tokenRequests: TokenRequest[] = [];
  let queue: GeminiReply[] = [];
  let responder: GeminiResponder = () => ({ status: 500, message: 'the fake Gemini has no script for this request' });
  let trusted: KeyObject | undefined;
  let tokenFailure: number | 'hang' | null = null;
  const hanging = new Set<http.ServerResponse>();

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const path = new URL(req.url ?? '/', 'http://fake').pathname;
      if (req.method === 'POST' && path === '/token') {
        token(raw, res);
        return;
      }
      const g = GEMINI_PATH.exec(path);
      const v = VERTEX_PATH.exec(path);
      if (req.method !== 'POST' || (!g && !v)) {
        sendError(res, 404, `no route ${req.method} ${path}`);
        return;
      }
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        sendError(res, 400, 'malformed JSON');
        return;
      }
      const recorded = record(body, req.headers, path, g ? { api: 'gemini', model: g[1]! } : { api: 'vertex', model: v![3]!, project: v![1]!, location: v![2]! });
      const index = requests.push(recorded) - 1;
      const reply = queue.shift() ?? responder(recorded, index);
      if ('hang' in reply) {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      const answer = () => {
        if ('status' in reply) {
          const details: unknown[] = [];
          if (reply.reason) details.push({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: reply.reason, domain: 'googleapis.com' });
          if (reply.retryDelay) details.push({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: reply.retryDelay });
          sendError(res, reply.status, reply.message ?? STATUS_NAMES[reply.status] ?? 'error', details, reply.headers);
          return;
        }
        if ('noText' in reply) {
          send(res, 200, {
            ...(reply.blockReason ? { promptFeedback: { blockReason: reply.blockReason } } : { candidates: [{ content: { role: 'model', parts: [] }, finishReason: reply.finishReason ?? 'SAFETY', index: 0 }] }),
            usageMetadata: { promptTokenCount: 10, ...(reply.thoughtsTokenCount ? { thoughtsTokenCount: reply.thoughtsTokenCount } : {}), totalTokenCount: 10 + (reply.thoughtsTokenCount ?? 0) },
            modelVersion: recorded.model,
          });
          return;
        }
        const u = reply.usage ?? {};
        const prompt = u.promptTokenCount ?? Math.ceil((recorded.system.length + recorded.last.length) / 4);
        const out = u.candidatesTokenCount ?? Math.ceil(reply.text.length / 4);
        send(res, 200, {
          candidates: [{ content: { role: 'model', parts: [{ text: reply.text }] }, finishReason: reply.finishReason ?? 'STOP', index: 0 }],
          usageMetadata: {
            promptTokenCount: prompt,
            candidatesTokenCount: out,
            ...(u.cachedContentTokenCount !== undefined ? { cachedContentTokenCount: u.cachedContentTokenCount } : {}),
            ...(u.thoughtsTokenCount !== undefined ? { thoughtsTokenCount: u.thoughtsTokenCount } : {}),
            totalTokenCount: prompt + out + (u.thoughtsTokenCount ?? 0),
          },
          modelVersion: recorded.model,
          responseId: `fake-${index}`,
        });
      };
      if (reply.delayMs) setTimeout(answer, reply.delayMs);
      else answer();
    });
  });

  /** The OAuth 2.0 JWT-bearer grant: checks the assertion, hands out a numbered token. */
  function token(raw: string, res: http.ServerResponse): void {
    const form = new URLSearchParams(raw);
    const assertion = form.get('assertion') ?? '';
    const [h = '', p = '', s = ''] = assertion.split('.');
    let claims: Record<string, unknown> = {};
    try {
      claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as Record<string, unknown>;
    } catch {
      // recorded with no claims; refused below when a key is trusted
    }
    const signatureValid = trusted ? verify('RSA-SHA256', Buffer.from(`${h}.${p}`), trusted, Buffer.from(s, 'base64url')) : undefined;
    const issued = `fake-access-token-${tokenRequests.length + 1}`;
    tokenRequests.push({ grantType: form.get('grant_type') ?? '', claims, signatureValid, token: issued });
    const json = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    };
    if (tokenFailure === 'hang') {
      hanging.add(res);
      res.on('close', () => hanging.delete(res));
      return;
    }
    if (tokenFailure !== null) return json(tokenFailure, { error: 'server_error', error_description: 'the fake token endpoint was told to fail' });
    if (signatureValid === false) return json(400, { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' });
    json(200, { access_token: issued, expires_in: 3600, token_type: 'Bearer' });
  }

  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;

  return {
    url,
    tokenUri: `${url}/token`,
    requests,
    tokenRequests,
    script(...replies) {
      queue = [...queue, ...replies];
    },
    fallback(r) {
      responder = r;
    },
    trustKey(pem) {
      trusted = createPublicKey(pem);
    },
    failTokens(how) {
      tokenFailure = how;
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
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function sendError(res: http.ServerResponse, status: number, message: string, details: unknown[] = [], headers: Record<string, string> = {}): void {
  send(res, status, { error: { code: status, message, status: STATUS_NAMES[status] ?? 'UNKNOWN', ...(details.length ? { details } : {}) } }, headers);
}

function partsText(content: unknown): string {
  if (typeof content === 'string') return content;
  const parts = content && typeof content === 'object' ? (content as { parts?: unknown }).parts : undefined;
  if (!Array.isArray(parts)) return '';
  return parts.map((p) => (p && typeof p === 'object' && typeof (p as { text?: unknown }).text === 'string' ? (p as { text: string }).text : '')).join('');
}

function record(
  body: Record<string, unknown>,
  headers: http.IncomingHttpHeaders,
  path: string,
  where: { api: 'gemini' | 'vertex'; model: string; project?: string; location?: string },
): GeminiRecordedRequest {
  const contents = (Array.isArray(body.contents) ? body.contents : []).map((c: { role?: unknown }) => ({ role: String(c.role ?? ''), text: partsText(c) }));
  const config = (body.generationConfig ?? {}) as { maxOutputTokens?: unknown; temperature?: unknown };
  const lastUser = [...contents].reverse().find((c) => c.role === 'user');
  const auth = headers.authorization;
  const key = headers['x-goog-api-key'];
  return {
    ...where,
    path,
    system: partsText(body.systemInstruction),
    contents,
    last: lastUser?.text ?? '',
    maxOutputTokens: typeof config.maxOutputTokens === 'number' ? config.maxOutputTokens : undefined,
    temperature: typeof config.temperature === 'number' ? config.temperature : undefined,
    headers,
    apiKey: typeof key === 'string' ? key : undefined,
    bearer: typeof auth === 'string' && /^bearer /i.test(auth) ? auth.slice(7) : undefined,
  };
}

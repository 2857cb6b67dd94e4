/**
 * The HTTP API as an OpenAPI 3.1 document, made from the router's own table: every route as it
 * is registered (edge/app.ts), with the TypeBox schemas it declares there (`body`, `reply`,
 * `query`: edge/http/router.ts RouteDoc), its caller requirement as security schemes
 * (edge/caller.ts), and the one error shape with every code (protocol/errors.ts). Served at
 * GET /openapi.json; docs/openapi.json is the same document for the shipped configuration
 * (`npm run contracts`; test/protocol/contracts.test.ts fails when it drifts).
 */
import Type from 'typebox';
import { ERRORS } from '../../protocol/errors.js';
import { HTTP_REQUEST_ID } from '../../protocol/headers.js';
import type { RouteAuth } from '../caller.js';
import { SESSION_HEADER, TOKEN_HEADER, TOKEN_QUERY } from '../caller.js';
import type { RouteInfo } from '../http/router.js';
import { CSRF_HEADER } from '../http/session.js';
import { SchemaNames, jsonSchema } from './schemas.js';

export interface OpenApiOptions {
  title: string;
  version: string;
}

type Json = Record<string, unknown>;

/** The error body every route answers with on failure (edge/http/reply.ts errorBody). */
export const ErrorReply = Type.Object({
  error: Type.Object({
    code: Type.Enum(Object.keys(ERRORS)),
    message: Type.String(),
    /** the code's flag (protocol/errors.ts): sending the same request again may succeed */
    retryable: Type.Boolean(),
    request_id: Type.String(),
    /** VALIDATION_FAILED: the failing paths; SQL_REJECTED: the rule's kind */
    details: Type.Optional(Type.Object({})),
  }),
});

/** What a route without a declared reply schema is published with. */
const GENERIC_REPLY = { type: 'object', description: 'a JSON object (this route declares no reply schema yet)' };

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Security requirements per `auth` (edge/caller.ts): alternatives, any one of which lets the caller through. */
function security(auth: RouteAuth, method: string): Array<Record<string, string[]>> {
  const write = WRITES.has(method);
  const cookie = (name: string): Record<string, string[]> => (write ? { [name]: [], csrfHeader: [] } : { [name]: [] });
  const any: Array<Record<string, string[]>> = [{ assistantCookie: [] }, { bearerToken: [] }, {}];
  switch (auth) {
    case 'none': return [];
    case 'login': return [];
    // anyone; while plugins.auth.require_login, a token or a session (not an auto session)
    case 'open': return [{}, { bearerToken: [] }, { sessionHeader: [] }, cookie('adminCookie'), cookie('assistantCookie'), cookie('authCookie')];
    case 'admin': return [cookie('adminCookie')];
    case 'assistant': return [cookie('assistantCookie')];
    case 'auth': return [{ sessionHeader: [] }, cookie('authCookie')];
    case 'any': return any;
    case 'token': return [{ mcpToken: [] }, { bearerToken: [] }, { mcpTokenQuery: [] }];
    case 'admin_or_any': return [{ adminCookie: [] }, ...any];
    case 'signed_in': return [{ bearerToken: [] }, cookie('adminCookie'), cookie('assistantCookie'), { sessionHeader: [] }, cookie('authCookie')];
  }
}

const SECURITY_SCHEMES: Json = {
  adminCookie: { type: 'apiKey', in: 'cookie', name: 'cortado_admin', description: 'the admin panel session (POST /admin/login)' },
  assistantCookie: { type: 'apiKey', in: 'cookie', name: 'cortado_assistant', description: 'the assistant gate session (POST /assistant/login)' },
  authCookie: { type: 'apiKey', in: 'cookie', name: 'cortado_auth', description: 'a plugins.auth session (POST /auth/login)' },
  csrfHeader: { type: 'apiKey', in: 'header', name: CSRF_HEADER, description: 'writes authenticated by a session cookie echo the session\'s csrf_token' },
  sessionHeader: { type: 'apiKey', in: 'header', name: SESSION_HEADER, description: 'a plugins.auth session id (SQLatte\'s auth widget)' },
  bearerToken: { type: 'http', scheme: 'bearer', description: 'an API token (ctd_…)' },
  mcpToken: { type: 'apiKey', in: 'header', name: TOKEN_HEADER, description: 'an API token, for MCP clients' },
  mcpTokenQuery: { type: 'apiKey', in: 'query', name: TOKEN_QUERY, description: 'an API token, for MCP clients that can only be given a URL' },
};

/** `/api/tables/:name` → `/api/tables/{name}`; a trailing `*` (the rest of the path) → `{path}`. */
export function openApiPath(pattern: string): string {
  return pattern.split('/').map((s) => (s === '*' ? '{path}' : s.startsWith(':') ? `{${s.slice(1)}}` : s)).join('/');
}

function pathParams(pattern: string): Json[] {
  return pattern.split('/').filter((s) => s === '*' || s.startsWith(':')).map((s) => ({
    name: s === '*' ? 'path' : s.slice(1),
    in: 'path',
    required: true,
    schema: { type: 'string' },
    ...(s === '*' ? { description: 'the rest of the path (may hold slashes)' } : {}),
  }));
}

function queryParams(route: RouteInfo): Json[] {
  const q = route.doc.query;
  if (!q) return [];
  const required = new Set(q.required ?? []);
  return Object.keys(q.properties).sort().map((name) => {
    const schema = jsonSchema(q.properties[name]!);
    const { description, ...rest } = schema;
    return { name, in: 'query', required: required.has(name), schema: rest, ...(typeof description === 'string' ? { description } : {}) };
  });
}

function operationId(method: string, pattern: string): string {
  const words = pattern.split(/[^A-Za-z0-9]+/).filter(Boolean).map((w) => w[0]!.toUpperCase() + w.slice(1));
  return `${method.toLowerCase()}${words.join('') || 'Root'}`;
}

function tagOf(pattern: string): string {
  const first = pattern.split('/').filter(Boolean);
  if (first[0] === 'api' && first[1]) return first[1];
  return first[0] ?? 'pages';
}

export function openApiDocument(routes: readonly RouteInfo[], opts: OpenApiOptions): Json {
  const names = new SchemaNames('#/components/schemas/');
  const paths: Record<string, Record<string, Json>> = {};
  const ids = new Set<string>();
  for (const route of routes) {
    const { doc } = route;
    const method = route.method.toLowerCase();
    const p = openApiPath(route.pattern);
    let id = operationId(route.method, route.pattern);
    while (ids.has(id)) id += '_';
    ids.add(id);
    const status = String(doc.status ?? 200);
    const content: Json = {};
    if (doc.produces) content[doc.produces] = { schema: { type: 'string' } };
    else content['application/json'] = { schema: doc.reply ? names.ref(doc.reply) : GENERIC_REPLY };
    if (doc.sse) content['text/event-stream'] = { schema: { type: 'string', description: 'the steps as server-sent events, the answer last (Accept: text/event-stream)' } };
    const op: Json = {
      operationId: id,
      summary: doc.summary ?? `${route.method} ${route.pattern}`,
      tags: [tagOf(route.pattern)],
      'x-cortado-auth': route.auth,
      security: security(route.auth, route.method),
      parameters: [...pathParams(route.pattern), ...queryParams(route), { $ref: '#/components/parameters/RequestId' }],
      ...(doc.body ? { requestBody: { required: true, content: { 'application/json': { schema: names.ref(doc.body) } } } } : {}),
      responses: {
        [status]: {
          description: doc.reply || doc.produces ? 'success' : 'success (the reply is not described by a schema yet)',
          headers: { [HTTP_REQUEST_ID]: { $ref: '#/components/headers/RequestId' } },
          content,
        },
        default: { $ref: '#/components/responses/Error' },
      },
    };
    (paths[p] ??= {})[method] = op;
  }
  const errorSchema = names.ref(ErrorReply, 'ErrorReply');
  return {
    openapi: '3.1.0',
    info: {
      title: `${opts.title} HTTP API`,
      version: opts.version,
      description: 'Every HTTP route of the edge, generated from the TypeBox schemas the routes read and answer with. Errors share one shape; the code says what happened (see docs/http-api.md).',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: '/' }],
    paths,
    components: {
      schemas: names.components(),
      securitySchemes: SECURITY_SCHEMES,
      parameters: {
        RequestId: { name: HTTP_REQUEST_ID, in: 'header', required: false, description: 'your own request id (1–64 of A-Z a-z 0-9 _ . : -), echoed back and carried through every bus hop', schema: { type: 'string', pattern: '^[A-Za-z0-9_.:-]{1,64}$' } },
      },
      headers: {
        RequestId: { description: 'the request id (yours, or one made for you)', schema: { type: 'string' } },
      },
      responses: {
        Error: {
          description: 'an error: the HTTP status follows from the code (docs/http-api.md has the table)',
          headers: { [HTTP_REQUEST_ID]: { $ref: '#/components/headers/RequestId' } },
          content: { 'application/json': { schema: errorSchema } },
        },
      },
    },
  };
}

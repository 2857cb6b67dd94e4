/**
 * Multi-user sessions (plugins.auth) over HTTP: POST /auth/login with the user's own database
 * credentials, then questions, tables and tokens on that user's own connection. The edge only
 * translates: the identity actor keeps the session (cookie `cortado_auth`, HttpOnly,
 * SameSite=Strict; or the `X-Session-ID` header SQLatte widgets send), and every bus request
 * of a session carries its scope `s:<session id>`, so the executor runs it with the session's
 * credentials. An auto session (auto_session) carries no scope: the server's own database.
 *
 * When plugins.auth.enabled is false every /auth/* route but GET /auth/config answers 404, as
 * if it did not exist. Writes authenticated by the cookie must echo the session's CSRF token in
 * `x-csrf-token` (the header-authenticated ones have no ambient credential to forge).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import Type from 'typebox';
import { Compile } from 'typebox/compile';
import type { Bus, Ctx } from '../../../protocol/bus.js';
import { CortadoError } from '../../../protocol/errors.js';
import type { AskRequest } from '../../../protocol/schemas/ask.js';
import type { SessionInfo } from '../../../protocol/schemas/identity.js';
import {
  Ask, AskConfirm, AuthAutoSession, AuthLogin, AuthLogout, AuthToken, IdentitySession, SchemaDescribe, SchemaDiscover, SchemaTables,
} from '../../../protocol/subjects.js';
import type { Config } from '../../../config/schema.js';
import { readJson, sendJson } from '../reply.js';
import type { Router } from '../router.js';
import type { HttpRequest } from '../server.js';
import { clearCookie, clientAddress, CSRF_HEADER, overTls, sessionCookie, sessionToken } from '../session.js';
import { discoverTargets, discoveryEnabled, scopeCatalog } from '../../discovery.js';
import { LEGACY_TEXT, legacyShape } from './query.js';

/** The header SQLatte's auth widget sends its session in. */
export const SESSION_HEADER = 'x-session-id';

const Name = Type.String({ minLength: 1, maxLength: 256 });
const LoginBody = Compile(Type.Object({
  username: Type.String({ minLength: 1, maxLength: 256 }),
  password: Type.String({ maxLength: 1024 }),
  db_type: Type.Optional(Type.String({ maxLength: 32 })),
  /** SQLatte's name for db_type */
  database_type: Type.Optional(Type.String({ maxLength: 32 })),
  host: Type.Optional(Type.String({ maxLength: 255 })),
  port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
  database: Type.Optional(Name),
  catalog: Type.Optional(Name),
  schema: Type.Optional(Name),
}));
type LoginBody = {
  username: string; password: string; db_type?: string; database_type?: string; host?: string; port?: number; database?: string; catalog?: string; schema?: string;
};
const QueryBody = Compile(Type.Object({
  question: Type.String({ minLength: 1, maxLength: 4000 }),
  tables: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 512 }), { maxItems: 200 })),
  conversation_id: Type.Optional(Type.String({ minLength: 1, maxLength: 80, pattern: '^[A-Za-z0-9_.:-]+$' })),
  /** SQLatte sends a schema text as a hint; Cortado finds the tables itself */
  table_schema: Type.Optional(Type.String({ maxLength: 200_000 })),
  schema: Type.Optional(Type.String({ maxLength: 200_000 })),
}));
type QueryBody = { question: string; tables?: string[]; conversation_id?: string };
const ConfirmBody = Compile(Type.Object({ confirmation_id: Type.String({ minLength: 1, maxLength: 100 }) }));
const TokenBody = Compile(Type.Object({
  label: Type.Optional(Type.String({ maxLength: 200 })),
  ttl_hours: Type.Optional(Type.Integer({ minimum: 1 })),
  discovery: Type.Optional(Type.Boolean()),
}));

export interface AuthRouteDeps {
  bus: Bus;
  config: Config;
}

/** Who asks: the session, its bus context (user, scope) and the key confirmations are bound to. */
interface AuthCaller {
  token: string;
  session: SessionInfo;
  ctx: Ctx;
  owner: string;
}

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

function on(config: Config): void {
  if (!config.plugins.auth.enabled) throw new CortadoError('NOT_FOUND', 'no such route: multi-user sessions are off (plugins.auth.enabled is false)');
}

function sameSecret(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}

async function requireAuth(deps: AuthRouteDeps, req: HttpRequest, rid: string): Promise<AuthCaller> {
  on(deps.config);
  const header = req.headers[SESSION_HEADER]?.trim();
  const token = header || sessionToken(req, 'auth');
  if (!token) throw new CortadoError('UNAUTHORIZED', 'sign in first (POST /auth/login)');
  const session = await deps.bus.request(IdentitySession, { token, kind: 'auth' }, { requestId: rid });
  if (!header && WRITES.has(req.method) && !sameSecret(req.headers[CSRF_HEADER] ?? '', session.csrf)) {
    throw new CortadoError('FORBIDDEN', `missing or wrong ${CSRF_HEADER} header (read it from GET /auth/session)`);
  }
  const id = session.id ?? '';
  const ctx: Ctx = { requestId: rid, user: session.username, ...(session.auto ? {} : { scope: `s:${id}` }) };
  return { token, session, ctx, owner: `s:${id}` };
}

/** A session as replies show it: no CSRF field name the widget does not expect, no secret but the one it needs. */
function sessionView(s: SessionInfo): Record<string, unknown> {
  const { csrf, id: _id, ...rest } = s;
  return { ...rest, csrf_token: csrf };
}

/** What GET /auth/config tells anyone: the rules of a login, never a host or a secret. */
export function authConfigView(config: Config): Record<string, unknown> {
  const auth = config.plugins.auth;
  const provider = auth.db_provider || config.database.provider;
  return {
    enabled: auth.enabled,
    discovery_enabled: discoveryEnabled(config),
    allowed_db_types: [...auth.allowed_db_types],
    allowed_catalogs: auth.allowed_catalogs.map((c) => ({ name: c.name, allowed_schemas: [...c.allowed_schemas] })),
    db_provider: provider,
    enforce_catalog_lock: auth.enforce_catalog_lock,
    session_ttl_minutes: auth.session_ttl_minutes,
    auto_session: { enabled: auth.enabled && auth.auto_session.enabled, label: auth.auto_session.label },
  };
}

/** The catalog a session's own tables live in: its scope's, or for an auto session (the server's database) the server's Trino catalog. */
function sessionCatalog(config: Config, s: SessionInfo): string {
  if (s.db) return scopeCatalog(config, s.db);
  return s.auto && config.database.provider === 'trino' ? config.database.trino.catalog : '';
}

export function authRoutes(router: Router, deps: AuthRouteDeps): void {
  const { bus, config } = deps;

  router.get('/auth/config', (_req, res, ctx) => sendJson(res, 200, authConfigView(config), ctx.rid));

  router.post('/auth/login', async (req, res, ctx) => {
    on(config);
    const body = await readJson<LoginBody>(req, LoginBody);
    const dbType = body.db_type ?? body.database_type;
    const r = await bus.request(AuthLogin, {
      username: body.username, password: body.password, client: clientAddress(req, config),
      ...(dbType ? { db_type: dbType } : {}),
      ...(body.host !== undefined ? { host: body.host } : {}),
      ...(body.port !== undefined ? { port: body.port } : {}),
      ...(body.database !== undefined ? { database: body.database } : {}),
      ...(body.catalog !== undefined ? { catalog: body.catalog } : {}),
      ...(body.schema !== undefined ? { schema: body.schema } : {}),
    }, { requestId: ctx.rid });
    const maxAge = (Date.parse(r.session.expires_at) - Date.now()) / 1000;
    // session_id: for clients that send it back as X-Session-ID (SQLatte widgets); browsers can rely on the cookie
    sendJson(res, 200, { ...sessionView(r.session), session_id: r.token }, ctx.rid, { 'set-cookie': sessionCookie('auth', r.token, maxAge, overTls(req, config)) });
  });

  router.post('/auth/auto-session', async (req, res, ctx) => {
    on(config);
    const origin = req.headers.origin;
    const r = await bus.request(AuthAutoSession, { client: clientAddress(req, config), ...(origin ? { origin } : {}) }, { requestId: ctx.rid });
    const maxAge = (Date.parse(r.session.expires_at) - Date.now()) / 1000;
    sendJson(res, 200, { ...sessionView(r.session), session_id: r.token, ttl_minutes: Math.round(maxAge / 60) }, ctx.rid, {
      'set-cookie': sessionCookie('auth', r.token, maxAge, overTls(req, config)),
    });
  });

  router.post('/auth/logout', async (req, res, ctx) => {
    const caller = await requireAuth(deps, req, ctx.rid);
    await bus.request(AuthLogout, { token: caller.token }, { requestId: ctx.rid, user: caller.session.username });
    sendJson(res, 200, { ok: true }, ctx.rid, { 'set-cookie': clearCookie('auth', overTls(req, config)) });
  });

  router.get('/auth/session', async (req, res, ctx) => {
    const caller = await requireAuth(deps, req, ctx.rid);
    sendJson(res, 200, sessionView(caller.session), ctx.rid);
  });

  router.post('/auth/query', async (req, res, ctx) => {
    const caller = await requireAuth(deps, req, ctx.rid);
    const body = await readJson<QueryBody>(req, QueryBody, LEGACY_TEXT);
    // a conversation belongs to its session: another session cannot read it by guessing its id
    const conversation = body.conversation_id ? `${caller.owner.slice(2)}:${body.conversation_id}` : undefined;
    const ask: AskRequest = { question: body.question, channel: 'auth', owner: caller.owner };
    if (body.tables?.length) ask.tables = body.tables;
    if (conversation) ask.conversation_id = conversation;
    const reply = await bus.request(Ask, ask, caller.ctx);
    sendJson(res, 200, { ...legacyShape(reply, body.conversation_id), conversation_id: body.conversation_id ?? null }, ctx.rid);
  });

  // run exactly the SQL an /auth/query answer held for confirmation, for the session that asked only
  router.post('/auth/query/confirm', async (req, res, ctx) => {
    const caller = await requireAuth(deps, req, ctx.rid);
    const body = await readJson<{ confirmation_id: string }>(req, ConfirmBody);
    const reply = await bus.request(AskConfirm, { confirmation_id: body.confirmation_id, owner: caller.owner, channel: 'auth' }, caller.ctx);
    sendJson(res, 200, legacyShape(reply, undefined), ctx.rid);
  });

  router.get('/auth/tables', async (req, res, ctx) => {
    const caller = await requireAuth(deps, req, ctx.rid);
    const refresh = req.query.get('refresh') === 'true';
    const reply = await bus.request(SchemaTables, refresh ? { refresh } : {}, caller.ctx);
    sendJson(res, 200, { tables: reply.tables.map((t) => t.name), details: reply.tables }, ctx.rid);
  });

  router.get('/auth/schema/:table', async (req, res, ctx) => {
    const caller = await requireAuth(deps, req, ctx.rid);
    const table = req.params.table ?? '';
    if (!/^[A-Za-z0-9_][A-Za-z0-9_.$-]{0,255}$/.test(table)) throw new CortadoError('VALIDATION_FAILED', 'table: letters, digits, _, $, - and dots');
    sendJson(res, 200, await bus.request(SchemaDescribe, { table }, caller.ctx), ctx.rid);
  });

  router.get('/auth/discover', async (req, res, ctx) => {
    const caller = await requireAuth(deps, req, ctx.rid);
    if (!discoveryEnabled(config)) throw new CortadoError('NOT_FOUND', 'table discovery is off (plugins.auth.enable_discovery_tokens)');
    const q = (req.query.get('q') ?? req.query.get('search_term') ?? '').trim();
    if (!q || q.length > 200) throw new CortadoError('VALIDATION_FAILED', 'q: part of a table name (1 to 200 characters)');
    const limit = Number(req.query.get('limit') ?? '');
    const found = await bus.request(SchemaDiscover, {
      query: q, ...discoverTargets(config, sessionCatalog(config, caller.session)), ...(Number.isInteger(limit) && limit >= 1 && limit <= 500 ? { limit } : {}),
    }, caller.ctx);
    sendJson(res, 200, found, ctx.rid);
  });

  router.post('/auth/tokens', async (req, res, ctx) => {
    const caller = await requireAuth(deps, req, ctx.rid);
    const body = await readJson<{ label?: string; ttl_hours?: number; discovery?: boolean }>(req, TokenBody);
    const r = await bus.request(AuthToken, { token: caller.token, ...body }, { requestId: ctx.rid, user: caller.session.username });
    sendJson(res, 201, r, ctx.rid);
  });
}

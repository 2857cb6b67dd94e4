/**
 * Multi-user sessions (plugins.auth) over HTTP: POST /auth/login with the user's own database
 * credentials, then questions, tables and tokens on that user's own connection. The edge only
 * translates: the identity actor keeps the session (cookie `cortado_auth`, HttpOnly,
 * SameSite=Strict; or the `X-Session-ID` header SQLatte widgets send), and every bus request
 * of a session carries its scope `s:<session id>`, so the executor runs it with the session's
 * credentials. An auto session (auto_session) carries no scope: the server's own database.
 *
 * When plugins.auth.enabled is false every /auth/* route but GET /auth/config answers 404, as
 * if it did not exist. The session routes take their caller from edge/caller.ts (`auth`):
 * writes authenticated by the cookie must echo the session's CSRF token in `x-csrf-token` (the
 * header-authenticated ones have no ambient credential to forge).
 */
import { Compile } from 'typebox/compile';
import type { Bus } from '../../../runtime/bus.js';
import { CortadoError } from '../../../protocol/errors.js';
import type { AskRequest } from '../../../protocol/schemas/ask.js';
import { AuthConfirmBody, AuthLoginBody, AuthQueryBody, AuthTokenBody, BODY_TEXT } from '../../../protocol/schemas/http.js';
import { TokenIssueReply, type SessionInfo } from '../../../protocol/schemas/identity.js';
import { SchemaDescribeReply } from '../../../protocol/schemas/catalog.js';
import {
  Ask, AskConfirm, AuthAutoSession, AuthLogin, AuthLogout, AuthToken, SchemaDescribe, SchemaDiscover, SchemaTables,
} from '../../../protocol/subjects.js';
import type { Config } from '../../../config/schema.js';
import { callerCtx } from '../../caller.js';
import { readJson, sendJson } from '../reply.js';
import type { Router } from '../router.js';
import { clearCookie, clientAddress, overTls, sessionCookie } from '../session.js';
import { discoverTargets, discoveryEnabled, scopeCatalog } from '../../discovery.js';
import { legacyShape } from './query.js';

const checkLogin = Compile(AuthLoginBody);
const checkQuery = Compile(AuthQueryBody);
const checkConfirm = Compile(AuthConfirmBody);
const checkToken = Compile(AuthTokenBody);

export interface AuthRouteDeps {
  bus: Bus;
  config: Config;
}

/** The routes that need no session still do not exist while plugins.auth is off (those that do: edge/caller.ts). */
function on(config: Config): void {
  if (!config.plugins.auth.enabled) throw new CortadoError('NOT_FOUND', 'no such route: multi-user sessions are off (plugins.auth.enabled is false)');
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

  router.get('/auth/config', { auth: 'none', summary: 'Which sign-ins plugins.auth offers' }, (_req, res, ctx) => sendJson(res, 200, authConfigView(config), ctx.rid));

  router.post('/auth/login', { auth: 'login', summary: 'Sign in with your own database credentials (plugins.auth)', body: AuthLoginBody }, async (req, res, ctx) => {
    on(config);
    // where the sign-in comes from, before its body is read: another site's gets no cookie (login CSRF)
    const from = await ctx.caller({ signIn: 'auth' });
    const body = await readJson(req, checkLogin, { fields: 'strip' });
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
    // session_id: for clients that send it back as X-Session-ID (SQLatte widgets); a page of this
    // server can rely on the cookie, which another site's sign-in never gets (login CSRF)
    sendJson(res, 200, { ...sessionView(r.session), session_id: r.token }, ctx.rid, from.sameOrigin ? { 'set-cookie': sessionCookie('auth', r.token, maxAge, overTls(req, config)) } : {});
  });

  router.post('/auth/auto-session', { auth: 'login', summary: 'A session on the server\'s own database connection' }, async (req, res, ctx) => {
    on(config);
    const from = await ctx.caller({ signIn: 'auto' });
    const origin = req.headers.origin;
    const r = await bus.request(AuthAutoSession, { client: clientAddress(req, config), ...(origin ? { origin } : {}) }, { requestId: ctx.rid });
    const maxAge = (Date.parse(r.session.expires_at) - Date.now()) / 1000;
    sendJson(res, 200, { ...sessionView(r.session), session_id: r.token, ttl_minutes: Math.round(maxAge / 60) }, ctx.rid,
      from.sameOrigin ? { 'set-cookie': sessionCookie('auth', r.token, maxAge, overTls(req, config)) } : {});
  });

  router.post('/auth/logout', { auth: 'auth', summary: 'End the session' }, async (req, res, ctx) => {
    const caller = await ctx.caller();
    await bus.request(AuthLogout, { token: caller.secret }, { requestId: ctx.rid, user: caller.user });
    sendJson(res, 200, { ok: true }, ctx.rid, { 'set-cookie': clearCookie('auth', overTls(req, config)) });
  });

  router.get('/auth/session', { auth: 'auth', summary: 'The session' }, async (_req, res, ctx) => {
    const caller = await ctx.caller();
    sendJson(res, 200, sessionView(caller.session), ctx.rid);
  });

  router.post('/auth/query', { auth: 'auth', summary: 'Ask one question on the session\'s database', body: AuthQueryBody }, async (req, res, ctx) => {
    const caller = await ctx.caller();
    const body = await readJson(req, checkQuery, { text: BODY_TEXT.legacy, fields: 'strip' });
    // a conversation belongs to its session (the assistant keeps it under the owner): another
    // session cannot read it by guessing its id
    const ask: AskRequest = { question: body.question, channel: 'auth', owner: caller.owner, widget: 'agent' };
    if (body.tables?.length) ask.tables = body.tables;
    if (body.conversation_id) ask.conversation_id = body.conversation_id;
    const reply = await bus.request(Ask, ask, callerCtx(ctx.rid, caller));
    // a clarifying question opens a conversation when the body named none: its id comes back
    sendJson(res, 200, { ...legacyShape(reply, body.conversation_id), conversation_id: reply.conversation_id ?? body.conversation_id ?? null }, ctx.rid);
  });

  // run exactly the SQL an /auth/query answer held for confirmation, for the session that asked only
  router.post('/auth/query/confirm', { auth: 'auth', summary: 'Run SQL held for confirmation', body: AuthConfirmBody }, async (req, res, ctx) => {
    const caller = await ctx.caller();
    const body = await readJson(req, checkConfirm, { fields: 'strip' });
    const reply = await bus.request(AskConfirm, { confirmation_id: body.confirmation_id, owner: caller.owner, channel: 'auth', widget: 'agent' }, callerCtx(ctx.rid, caller));
    sendJson(res, 200, legacyShape(reply, undefined), ctx.rid);
  });

  router.get('/auth/tables', { auth: 'auth', summary: 'The tables of the session\'s database' }, async (req, res, ctx) => {
    const caller = await ctx.caller();
    const refresh = req.query.get('refresh') === 'true';
    const reply = await bus.request(SchemaTables, refresh ? { refresh } : {}, callerCtx(ctx.rid, caller));
    sendJson(res, 200, { tables: reply.tables.map((t) => t.name), details: reply.tables }, ctx.rid);
  });

  router.get('/auth/schema/:table', { auth: 'auth', summary: 'One table\'s columns', reply: SchemaDescribeReply }, async (req, res, ctx) => {
    const caller = await ctx.caller();
    const table = req.params.table ?? '';
    if (!/^[A-Za-z0-9_][A-Za-z0-9_.$-]{0,255}$/.test(table)) throw new CortadoError('VALIDATION_FAILED', 'table: letters, digits, _, $, - and dots');
    sendJson(res, 200, await bus.request(SchemaDescribe, { table }, callerCtx(ctx.rid, caller)), ctx.rid);
  });

  router.get('/auth/discover', { auth: 'auth', summary: 'Databases and schemas the session may switch to' }, async (req, res, ctx) => {
    const caller = await ctx.caller();
    if (!discoveryEnabled(config)) throw new CortadoError('NOT_FOUND', 'table discovery is off (plugins.auth.enable_discovery_tokens)');
    const q = (req.query.get('q') ?? req.query.get('search_term') ?? '').trim();
    if (!q || q.length > 200) throw new CortadoError('VALIDATION_FAILED', 'q: part of a table name (1 to 200 characters)');
    const limit = Number(req.query.get('limit') ?? '');
    const found = await bus.request(SchemaDiscover, {
      query: q, ...discoverTargets(config, sessionCatalog(config, caller.session)), ...(Number.isInteger(limit) && limit >= 1 && limit <= 500 ? { limit } : {}),
    }, callerCtx(ctx.rid, caller));
    sendJson(res, 200, found, ctx.rid);
  });

  router.post('/auth/tokens', { auth: 'auth', summary: 'Mint an API token for this session\'s user', body: AuthTokenBody, status: 201, reply: TokenIssueReply }, async (req, res, ctx) => {
    const caller = await ctx.caller();
    const body = await readJson(req, checkToken);
    const r = await bus.request(AuthToken, { ...body, token: caller.secret }, { requestId: ctx.rid, user: caller.user });
    sendJson(res, 201, r, ctx.rid);
  });
}

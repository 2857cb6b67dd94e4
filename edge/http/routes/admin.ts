/**
 * The admin JSON API (every route but login needs the admin session; writes need the CSRF
 * header) and the assistant login gate. The edge only translates: each route is one request
 * to the identity or audit actor.
 */
import Type from 'typebox';
import { Compile } from 'typebox/compile';
import type { Bus, Ctx } from '../../../protocol/bus.js';
import { CortadoError } from '../../../protocol/errors.js';
import { HTTP_REQUEST_ID } from '../../../protocol/headers.js';
import { configKeyOk, type AuditQueryRequest, type SessionKind } from '../../../protocol/schemas/identity.js';
import * as S from '../../../protocol/subjects.js';
import type { Config } from '../../../config/schema.js';
import { toCsv } from '../csv.js';
import { checkText } from '../json.js';
import { readJson, SECURITY_HEADERS, sendJson } from '../reply.js';
import type { Router, RouteContext } from '../router.js';
import type { HttpRequest, HttpResponse } from '../server.js';
import { clearCookie, clientAddress, overTls, requireSession, sessionCookie, sessionToken } from '../session.js';

const LoginBody = Compile(Type.Object({ username: Type.String({ minLength: 1, maxLength: 256 }), password: Type.String({ maxLength: 1024 }) }));
const ValueBody = Compile(Type.Object({ value: Type.Unknown() }));
const TextBody = Compile(Type.Object({ text: Type.String({ maxLength: 100_000 }) }));
const TokenBody = Compile(Type.Object({
  username: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  label: Type.Optional(Type.String({ maxLength: 200 })),
  ttl_hours: Type.Optional(Type.Integer({ minimum: 1 })),
  db_config: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
}));
const MaskBody = Compile(S.MaskRuleCreate.request);
const MaskPatch = Compile(Type.Object({
  field_pattern: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  strategy: Type.Optional(Type.Enum(['hash', 'partial', 'redact'])),
  enabled: Type.Optional(Type.Boolean()),
  description: Type.Optional(Type.String({ maxLength: 500 })),
}));
const LdapBody = Compile(Type.Object({ settings: Type.Record(Type.String(), Type.Unknown()) }));
const LdapTestBody = Compile(Type.Object({ settings: Type.Optional(Type.Record(Type.String(), Type.Unknown())) }));

/** CSV export: at most this many entries. */
const CSV_MAX = 50_000;
/** the largest offset a listing takes (PostgreSQL's OFFSET is a bigint; a 1e300 is no number to it) */
const MAX_OFFSET = 1_000_000_000;

/** Strings of these top-level fields are text (tabs and line breaks allowed); every other string is a name. */
const TEXT_FIELDS = { prompt: { text: ['text'] }, config: { text: ['value'] }, mask: { text: ['description'] } } as const;

/** A dotted config key from a path, checked as the bus checks it (configKeyOk), with a message for people. */
function configKey(key: string, what = 'key'): string {
  if (!configKeyOk(key)) throw new CortadoError('VALIDATION_FAILED', `${what}: a dotted config key of lower-case words (letters, digits and _ between dots), e.g. query.max_limit`);
  return key;
}

export interface AdminRouteDeps {
  bus: Bus;
  config: Config;
}

/** Login bodies come as JSON (API) or as a form post (the page without script). */
async function readLogin(req: HttpRequest): Promise<{ username: string; password: string; form: boolean }> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type === 'application/x-www-form-urlencoded') {
    const form = new URLSearchParams((await req.body()).toString('utf8'));
    const username = form.get('username') ?? '';
    const password = form.get('password') ?? '';
    if (!username || username.length > 256 || password.length > 1024) throw new CortadoError('VALIDATION_FAILED', 'username and password are required');
    checkText({ username, password });
    return { username, password, form: true };
  }
  const body = await readJson<{ username: string; password: string }>(req, LoginBody);
  return { ...body, form: false };
}

function loginRoutes(router: Router, deps: AdminRouteDeps, kind: SessionKind, base: string): void {
  const { bus, config } = deps;
  router.post(`${base}/login`, async (req, res, ctx) => {
    const { username, password, form } = await readLogin(req);
    const secure = overTls(req, config);
    try {
      const r = await bus.request(S.IdentityLogin, { kind, username, password, client: clientAddress(req, config) }, { requestId: ctx.rid });
      const maxAge = (Date.parse(r.session.expires_at) - Date.now()) / 1000;
      const cookie = sessionCookie(kind, r.token, maxAge, secure);
      if (form) {
        res.send(303, { location: base || '/', 'set-cookie': cookie, 'cache-control': 'no-store', [HTTP_REQUEST_ID]: ctx.rid, ...SECURITY_HEADERS });
        return;
      }
      const { csrf, ...rest } = r.session;
      sendJson(res, 200, { ...rest, csrf_token: csrf }, ctx.rid, { 'set-cookie': cookie });
    } catch (err) {
      if (form && err instanceof CortadoError && err.httpStatus < 500) {
        res.send(303, { location: `${base || '/'}?error=${encodeURIComponent(err.code)}`, 'cache-control': 'no-store', [HTTP_REQUEST_ID]: ctx.rid, ...SECURITY_HEADERS });
        return;
      }
      throw err;
    }
  });

  router.post(`${base}/logout`, async (req, res, ctx) => {
    const { token } = await requireSession(bus, req, kind, ctx.rid);
    await bus.request(S.IdentityLogout, { token }, { requestId: ctx.rid });
    sendJson(res, 200, { ok: true }, ctx.rid, { 'set-cookie': clearCookie(kind, overTls(req, config)) });
  });

  router.get(`${base}/session`, async (req, res, ctx) => {
    const { session } = await requireSession(bus, req, kind, ctx.rid);
    const { csrf, ...rest } = session;
    sendJson(res, 200, { ...rest, csrf_token: csrf }, ctx.rid);
  });
}

function auditFilter(req: HttpRequest): AuditQueryRequest {
  const q = req.query;
  const f: AuditQueryRequest = {};
  for (const k of ['type', 'user', 'code', 'request_id', 'from', 'to'] as const) {
    const v = q.get(k);
    if (v) f[k] = v;
  }
  for (const k of ['from', 'to'] as const) {
    if (f[k] && Number.isNaN(Date.parse(f[k]!))) throw new CortadoError('VALIDATION_FAILED', `${k}: not a date (use ISO 8601, e.g. 2026-11-01T00:00:00Z)`);
  }
  for (const k of ['limit', 'offset'] as const) {
    const v = q.get(k);
    if (v === null) continue;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0 || n > MAX_OFFSET || (k === 'limit' && (n < 1 || n > 1000))) {
      throw new CortadoError('VALIDATION_FAILED', `${k}: ${k === 'limit' ? 'an integer from 1 to 1000' : `an integer from 0 to ${MAX_OFFSET}`}`);
    }
    f[k] = n;
  }
  return f;
}

export function adminRoutes(router: Router, deps: AdminRouteDeps): void {
  const { bus } = deps;
  loginRoutes(router, deps, 'admin', '/admin');
  loginRoutes(router, deps, 'assistant', '/assistant');

  /** An admin route: the session first; the handler gets the bus context with the admin as user. */
  const admin = (method: string, path: string, fn: (req: HttpRequest, res: HttpResponse, ctx: RouteContext, bctx: Ctx & { user: string }) => Promise<void>) => {
    router.add(method, path, async (req, res, ctx) => {
      const { session } = await requireSession(bus, req, 'admin', ctx.rid);
      await fn(req, res, ctx, { requestId: ctx.rid, user: session.username });
    });
  };

  admin('GET', '/admin/config', async (_req, res, ctx, b) => sendJson(res, 200, await bus.request(S.ConfigView, {}, b), ctx.rid));
  admin('PUT', '/admin/config/:key', async (req, res, ctx, b) => {
    const key = configKey(req.params.key ?? '');
    const { value } = await readJson<{ value: unknown }>(req, ValueBody, TEXT_FIELDS.config);
    sendJson(res, 200, await bus.request(S.ConfigUpdate, { key, value, by: b.user }, b), ctx.rid);
  });
  admin('DELETE', '/admin/config/:key', async (req, res, ctx, b) => {
    sendJson(res, 200, await bus.request(S.ConfigReset, { key: configKey(req.params.key ?? ''), by: b.user }, b), ctx.rid);
  });
  admin('GET', '/admin/config-history', async (req, res, ctx, b) => {
    const f = auditFilter(req);
    const key = req.query.get('key');
    if (key) configKey(key);
    sendJson(res, 200, await bus.request(S.ConfigHistory, { ...(key ? { key } : {}), ...(f.limit ? { limit: f.limit } : {}), ...(f.offset ? { offset: f.offset } : {}) }, b), ctx.rid);
  });

  admin('GET', '/admin/prompts', async (_req, res, ctx, b) => sendJson(res, 200, await bus.request(S.PromptsList, {}, b), ctx.rid));
  admin('PUT', '/admin/prompts/:key', async (req, res, ctx, b) => {
    const key = configKey(`prompts.${req.params.key ?? ''}`, 'the prompt name');
    const { text } = await readJson<{ text: string }>(req, TextBody, TEXT_FIELDS.prompt);
    sendJson(res, 200, await bus.request(S.ConfigUpdate, { key, value: text, by: b.user }, b), ctx.rid);
  });
  admin('DELETE', '/admin/prompts/:key', async (req, res, ctx, b) => {
    sendJson(res, 200, await bus.request(S.ConfigReset, { key: configKey(`prompts.${req.params.key ?? ''}`, 'the prompt name'), by: b.user }, b), ctx.rid);
  });

  admin('GET', '/admin/tokens', async (req, res, ctx, b) => {
    const username = req.query.get('username');
    sendJson(res, 200, await bus.request(S.TokenList, username ? { username } : {}, b), ctx.rid);
  });
  admin('POST', '/admin/tokens', async (req, res, ctx, b) => {
    const body = await readJson<{ username?: string; label?: string; ttl_hours?: number; db_config?: Record<string, unknown> }>(req, TokenBody);
    sendJson(res, 201, await bus.request(S.TokenIssue, { ...body, username: body.username ?? b.user }, b), ctx.rid);
  });
  admin('POST', '/admin/tokens/:id/revoke', async (req, res, ctx, b) => sendJson(res, 200, await bus.request(S.TokenRevoke, { id: req.params.id ?? '' }, b), ctx.rid));
  admin('DELETE', '/admin/tokens/:id', async (req, res, ctx, b) => sendJson(res, 200, await bus.request(S.TokenDelete, { id: req.params.id ?? '' }, b), ctx.rid));

  admin('GET', '/admin/mask-rules', async (_req, res, ctx, b) => sendJson(res, 200, await bus.request(S.MaskRulesList, {}, b), ctx.rid));
  admin('POST', '/admin/mask-rules', async (req, res, ctx, b) => {
    const body = await readJson<Parameters<typeof bus.request<typeof S.MaskRuleCreate>>[1]>(req, MaskBody, TEXT_FIELDS.mask);
    sendJson(res, 201, await bus.request(S.MaskRuleCreate, body, b), ctx.rid);
  });
  admin('PUT', '/admin/mask-rules/:id', async (req, res, ctx, b) => {
    const body = await readJson<Record<string, unknown>>(req, MaskPatch, TEXT_FIELDS.mask);
    sendJson(res, 200, await bus.request(S.MaskRuleUpdate, { ...body, id: req.params.id ?? '' }, b), ctx.rid);
  });
  admin('DELETE', '/admin/mask-rules/:id', async (req, res, ctx, b) => sendJson(res, 200, await bus.request(S.MaskRuleDelete, { id: req.params.id ?? '' }, b), ctx.rid));

  admin('GET', '/admin/audit', async (req, res, ctx, b) => sendJson(res, 200, await bus.request(S.AuditQuery, auditFilter(req), b), ctx.rid));
  admin('GET', '/admin/audit.csv', async (req, res, ctx, b) => {
    const { limit: _l, offset: _o, ...filter } = auditFilter(req);
    const entries = [];
    for (let offset = 0; offset < CSV_MAX; offset += 1000) {
      const page = await bus.request(S.AuditQuery, { ...filter, limit: 1000, offset }, b);
      entries.push(...page.entries);
      if (page.entries.length < 1000) break;
    }
    res.send(200, {
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="cortado-audit-${new Date().toISOString().slice(0, 10)}.csv"`,
      'cache-control': 'no-store',
      [HTTP_REQUEST_ID]: ctx.rid,
      ...SECURITY_HEADERS,
    }, toCsv(entries));
  });

  admin('GET', '/admin/ldap', async (_req, res, ctx, b) => sendJson(res, 200, await bus.request(S.LdapView, {}, b), ctx.rid));
  admin('PUT', '/admin/ldap', async (req, res, ctx, b) => {
    const { settings } = await readJson<{ settings: Record<string, unknown> }>(req, LdapBody);
    sendJson(res, 200, await bus.request(S.LdapUpdate, { settings, by: b.user }, b), ctx.rid);
  });
  admin('POST', '/admin/ldap/test', async (req, res, ctx, b) => {
    const body = await readJson<{ settings?: Record<string, unknown> }>(req, LdapTestBody);
    sendJson(res, 200, await bus.request(S.LdapTest, body, b), ctx.rid);
  });
}

/** The assistant gate: with plugins.assistant_login on, the legacy assistant needs its session. */
export async function assistantUser(bus: Bus, config: Config, req: HttpRequest, rid: string): Promise<string | undefined> {
  if (!config.plugins.assistant_login.enabled) return undefined;
  const token = sessionToken(req, 'assistant');
  if (!token) throw new CortadoError('UNAUTHORIZED', 'sign in first (POST /assistant/login)');
  const s = await bus.request(S.IdentitySession, { token, kind: 'assistant' }, { requestId: rid });
  return s.username;
}

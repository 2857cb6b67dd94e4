/**
 * The admin JSON API (every route but login needs the admin session, `auth: 'admin'`; writes
 * need the CSRF header: edge/caller.ts) and the logins of the admin panel and the assistant
 * gate. The edge only translates: each route is one request to the identity or audit actor.
 */
import { Compile } from 'typebox/compile';
import type { Bus, Ctx } from '../../../runtime/bus.js';
import { CortadoError } from '../../../protocol/errors.js';
import { HTTP_REQUEST_ID } from '../../../protocol/headers.js';
import {
  ADMIN_EVAL_MAX, AdminTokenBody, BODY_TEXT, ConfigFormReply, ConfigValueBody, EvalBody, LdapBody, LdapTestBody, LoginBody, MaskRuleBody, MaskRulePatchBody, PromptBody, TestEmailBody,
} from '../../../protocol/schemas/http.js';
import { configKeyOk, type AuditQueryRequest } from '../../../protocol/schemas/identity.js';
import type { EvalReport } from '../../../protocol/schemas/eval.js';
import * as S from '../../../protocol/subjects.js';
import type { Config } from '../../../config/schema.js';
import { configForm } from '../../../config/form.js';
import { toCsv } from '../csv.js';
import { checkText } from '../json.js';
import { readJson, SECURITY_HEADERS, sendJson } from '../reply.js';
import { describeErrors } from '../../../protocol/define.js';
import type { Router, RouteContext, RouteDoc } from '../router.js';
import type { HttpRequest, HttpResponse } from '../server.js';
import { clearCookie, clientAddress, overTls, sessionCookie } from '../session.js';

const checkLogin = Compile(LoginBody);
const checkValue = Compile(ConfigValueBody);
const checkPrompt = Compile(PromptBody);
const checkToken = Compile(AdminTokenBody);
const checkMask = Compile(MaskRuleBody);
const checkMaskPatch = Compile(MaskRulePatchBody);
const checkLdap = Compile(LdapBody);
const checkLdapTest = Compile(LdapTestBody);
const checkTestEmail = Compile(TestEmailBody);
const checkEval = Compile(EvalBody);

/** CSV export: at most this many entries. */
const CSV_MAX = 50_000;
/** the largest offset a listing takes (PostgreSQL's OFFSET is a bigint; a 1e300 is no number to it) */
const MAX_OFFSET = 1_000_000_000;

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
async function readLogin(req: HttpRequest): Promise<LoginBody & { form: boolean }> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type === 'application/x-www-form-urlencoded') {
    const form = new URLSearchParams((await req.body()).toString('utf8'));
    const username = form.get('username') ?? '';
    const password = form.get('password') ?? '';
    const body = { username, password };
    checkText(body);
    // the limits of the JSON body (protocol/schemas/http.ts LoginBody)
    if (!checkLogin.Check(body)) {
      const errors = describeErrors(checkLogin, body);
      const first = errors[0];
      throw new CortadoError('VALIDATION_FAILED', first ? `${first.path}: ${first.message}` : 'username and password are required', { errors });
    }
    return { ...body, form: true };
  }
  const body = await readJson(req, checkLogin);
  return { ...body, form: false };
}

function loginRoutes(router: Router, deps: AdminRouteDeps, kind: 'admin' | 'assistant', base: string): void {
  const { bus, config } = deps;
  router.post(`${base}/login`, { auth: 'login', summary: `Sign in to the ${kind === 'admin' ? 'admin panel' : 'assistant'} (JSON, or a form post from its own page)`, body: LoginBody }, async (req, res, ctx) => {
    // where the sign-in comes from, before its body is read: another site's is refused or gets no cookie (login CSRF)
    const from = await ctx.caller({ signIn: kind });
    const { username, password, form } = await readLogin(req);
    const secure = overTls(req, config);
    try {
      const r = await bus.request(S.IdentityLogin, { kind, username, password, client: clientAddress(req, config) }, { requestId: ctx.rid });
      const maxAge = (Date.parse(r.session.expires_at) - Date.now()) / 1000;
      const cookie: Record<string, string> = from.sameOrigin ? { 'set-cookie': sessionCookie(kind, r.token, maxAge, secure) } : {};
      if (form) {
        res.send(303, { location: base || '/', ...cookie, 'cache-control': 'no-store', [HTTP_REQUEST_ID]: ctx.rid, ...SECURITY_HEADERS });
        return;
      }
      const { csrf, ...rest } = r.session;
      // the assistant gate's secret also in the body: an embedded widget on another site sends it as X-Session-ID (cookies do not cross sites)
      sendJson(res, 200, { ...rest, csrf_token: csrf, ...(kind === 'assistant' ? { session_id: r.token } : {}) }, ctx.rid, cookie);
    } catch (err) {
      if (form && err instanceof CortadoError && err.httpStatus < 500) {
        res.send(303, { location: `${base || '/'}?error=${encodeURIComponent(err.code)}`, 'cache-control': 'no-store', [HTTP_REQUEST_ID]: ctx.rid, ...SECURITY_HEADERS });
        return;
      }
      throw err;
    }
  });

  router.post(`${base}/logout`, { auth: kind, summary: 'End the session' }, async (req, res, ctx) => {
    const { secret } = await ctx.caller();
    await bus.request(S.IdentityLogout, { token: secret }, { requestId: ctx.rid });
    sendJson(res, 200, { ok: true }, ctx.rid, { 'set-cookie': clearCookie(kind, overTls(req, config)) });
  });

  router.get(`${base}/session`, { auth: kind, summary: 'The session, with its CSRF token' }, async (_req, res, ctx) => {
    const { session } = await ctx.caller();
    const { csrf, ...rest } = session;
    sendJson(res, 200, { ...rest, csrf_token: csrf }, ctx.rid);
  });
}

function auditFilter(req: HttpRequest): AuditQueryRequest {
  const q = req.query;
  const f: AuditQueryRequest = {};
  for (const k of ['type', 'user', 'code', 'request_id', 'q', 'from', 'to'] as const) {
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
  type AdminFn = (req: HttpRequest, res: HttpResponse, ctx: RouteContext<'admin'>, bctx: Ctx & { user: string }) => Promise<void>;
  /** what it publishes of itself (/openapi.json) may come before the handler */
  function admin(method: string, path: string, fn: AdminFn): void;
  function admin(method: string, path: string, doc: RouteDoc, fn: AdminFn): void;
  function admin(method: string, path: string, docOrFn: RouteDoc | AdminFn, last?: AdminFn): void {
    const fn = typeof docOrFn === 'function' ? docOrFn : last!;
    const doc = typeof docOrFn === 'function' ? {} : docOrFn;
    router.add(method, path, { ...doc, auth: 'admin' }, async (req, res, ctx) => {
      const { user } = await ctx.caller();
      await fn(req, res, ctx, { requestId: ctx.rid, user });
    });
  }

  admin('GET', '/admin/config', { summary: 'The effective configuration, secrets hidden', reply: S.ConfigView.reply }, async (_req, res, ctx, b) => sendJson(res, 200, await bus.request(S.ConfigView, {}, b), ctx.rid));
  // the form the Config tab draws: built from the schema, so it needs no bus round trip
  admin('GET', '/admin/config/schema', { summary: 'The config schema as a form: sections, input kinds, bounds, descriptions, keys that need a restart, write-only secrets', reply: ConfigFormReply }, async (_req, res, ctx) => sendJson(res, 200, configForm(), ctx.rid));
  admin('PUT', '/admin/config/:key', { summary: 'Override one configuration key at runtime', body: ConfigValueBody, reply: S.ConfigUpdate.reply }, async (req, res, ctx, b) => {
    const key = configKey(req.params.key ?? '');
    const { value } = await readJson(req, checkValue, { text: BODY_TEXT.config });
    sendJson(res, 200, await bus.request(S.ConfigUpdate, { key, value, by: b.user }, b), ctx.rid);
  });
  admin('DELETE', '/admin/config/:key', { summary: 'Drop a runtime override', reply: S.ConfigReset.reply }, async (req, res, ctx, b) => {
    sendJson(res, 200, await bus.request(S.ConfigReset, { key: configKey(req.params.key ?? ''), by: b.user }, b), ctx.rid);
  });
  admin('GET', '/admin/config-history', { summary: 'Configuration changes, newest first', reply: S.ConfigHistory.reply }, async (req, res, ctx, b) => {
    const f = auditFilter(req);
    const key = req.query.get('key');
    if (key) configKey(key);
    sendJson(res, 200, await bus.request(S.ConfigHistory, { ...(key ? { key } : {}), ...(f.limit ? { limit: f.limit } : {}), ...(f.offset ? { offset: f.offset } : {}) }, b), ctx.rid);
  });

  admin('GET', '/admin/prompts', { summary: 'The prompts in effect', reply: S.PromptsList.reply }, async (_req, res, ctx, b) => sendJson(res, 200, await bus.request(S.PromptsList, {}, b), ctx.rid));
  admin('PUT', '/admin/prompts/:key', { summary: 'Override one prompt', body: PromptBody, reply: S.ConfigUpdate.reply }, async (req, res, ctx, b) => {
    const key = configKey(`prompts.${req.params.key ?? ''}`, 'the prompt name');
    const { text } = await readJson(req, checkPrompt, { text: BODY_TEXT.prompt });
    sendJson(res, 200, await bus.request(S.ConfigUpdate, { key, value: text, by: b.user }, b), ctx.rid);
  });
  admin('DELETE', '/admin/prompts/:key', { summary: 'Back to the shipped prompt', reply: S.ConfigReset.reply }, async (req, res, ctx, b) => {
    sendJson(res, 200, await bus.request(S.ConfigReset, { key: configKey(`prompts.${req.params.key ?? ''}`, 'the prompt name'), by: b.user }, b), ctx.rid);
  });
  // a golden set as configured and with candidate prompts (this run only, never saved): the difference
  admin('POST', '/admin/eval', { summary: 'Run a golden set as configured and with candidate prompts (nothing saved)', body: EvalBody }, async (req, res, ctx, b) => {
    const body = await readJson(req, checkEval, { text: BODY_TEXT.eval });
    sendJson(res, 200, await evalPrompts(bus, body, b), ctx.rid);
  });

  admin('GET', '/admin/tokens', { summary: 'API tokens', reply: S.TokenList.reply }, async (req, res, ctx, b) => {
    const username = req.query.get('username');
    sendJson(res, 200, await bus.request(S.TokenList, username ? { username } : {}, b), ctx.rid);
  });
  admin('POST', '/admin/tokens', { summary: 'Mint an API token (shown once)', body: AdminTokenBody, status: 201, reply: S.TokenIssue.reply }, async (req, res, ctx, b) => {
    const body = await readJson(req, checkToken);
    sendJson(res, 201, await bus.request(S.TokenIssue, { ...body, username: body.username ?? b.user }, b), ctx.rid);
  });
  admin('POST', '/admin/tokens/:id/revoke', { summary: 'Revoke an API token', reply: S.TokenRevoke.reply }, async (req, res, ctx, b) => sendJson(res, 200, await bus.request(S.TokenRevoke, { id: req.params.id ?? '' }, b), ctx.rid));
  admin('DELETE', '/admin/tokens/:id', { summary: 'Delete an API token', reply: S.TokenDelete.reply }, async (req, res, ctx, b) => sendJson(res, 200, await bus.request(S.TokenDelete, { id: req.params.id ?? '' }, b), ctx.rid));

  admin('GET', '/admin/mask-rules', { summary: 'Mask rules', reply: S.MaskRulesList.reply }, async (_req, res, ctx, b) => sendJson(res, 200, await bus.request(S.MaskRulesList, {}, b), ctx.rid));
  admin('POST', '/admin/mask-rules', { summary: 'Add a mask rule', body: MaskRuleBody, status: 201, reply: S.MaskRuleCreate.reply }, async (req, res, ctx, b) => {
    const body = await readJson(req, checkMask, { text: BODY_TEXT.mask });
    sendJson(res, 201, await bus.request(S.MaskRuleCreate, body, b), ctx.rid);
  });
  admin('PUT', '/admin/mask-rules/:id', { summary: 'Change a mask rule', body: MaskRulePatchBody, reply: S.MaskRuleUpdate.reply }, async (req, res, ctx, b) => {
    const body = await readJson(req, checkMaskPatch, { text: BODY_TEXT.mask });
    sendJson(res, 200, await bus.request(S.MaskRuleUpdate, { ...body, id: req.params.id ?? '' }, b), ctx.rid);
  });
  admin('DELETE', '/admin/mask-rules/:id', { summary: 'Delete a mask rule', reply: S.MaskRuleDelete.reply }, async (req, res, ctx, b) => sendJson(res, 200, await bus.request(S.MaskRuleDelete, { id: req.params.id ?? '' }, b), ctx.rid));

  admin('GET', '/admin/audit', { summary: 'The audit trail, filtered', reply: S.AuditQuery.reply }, async (req, res, ctx, b) => sendJson(res, 200, await bus.request(S.AuditQuery, auditFilter(req), b), ctx.rid));
  admin('GET', '/admin/audit.csv', { summary: 'The audit trail as CSV', produces: 'text/csv' }, async (req, res, ctx, b) => {
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

  admin('GET', '/admin/ldap', { summary: 'LDAP settings, the bind password hidden', reply: S.LdapView.reply }, async (_req, res, ctx, b) => sendJson(res, 200, await bus.request(S.LdapView, {}, b), ctx.rid));
  admin('PUT', '/admin/ldap', { summary: 'Change LDAP settings', body: LdapBody, reply: S.LdapUpdate.reply }, async (req, res, ctx, b) => {
    const { settings } = await readJson(req, checkLdap);
    sendJson(res, 200, await bus.request(S.LdapUpdate, { settings, by: b.user }, b), ctx.rid);
  });
  admin('POST', '/admin/ldap/test', { summary: 'Try LDAP settings', body: LdapTestBody, reply: S.LdapTest.reply }, async (req, res, ctx, b) => {
    const body = await readJson(req, checkLdapTest);
    sendJson(res, 200, await bus.request(S.LdapTest, body, b), ctx.rid);
  });

  // one e-mail through the configured SMTP server: the answer says whether it went, and if the
  // server would not take it, why (login refused, connection refused, TLS) — a test that ran
  admin('POST', '/admin/test-email', { summary: 'Send one e-mail through the configured SMTP server', body: TestEmailBody }, async (req, res, ctx, b) => {
    const { to, subject, body } = await readJson(req, checkTestEmail, { text: BODY_TEXT.testEmail });
    try {
      const r = await bus.request(S.MailSend, { to: [to], subject, text: body }, b);
      sendJson(res, 200, { ok: true, sent: r.sent, ...(r.message_id ? { message_id: r.message_id } : {}), ...(r.sent ? {} : { note: 'email.enabled is false: the e-mail was logged, not sent' }) }, ctx.rid);
    } catch (err) {
      const smtp = err instanceof CortadoError ? err.details?.smtp : undefined;
      if (typeof smtp !== 'string') throw err;
      sendJson(res, 200, { ok: false, sent: false, smtp, error: err instanceof Error ? err.message : String(err) }, ctx.rid);
    }
  });
}

/**
 * POST /admin/eval: the golden set as configured (`before`), and, with candidate prompts, again
 * with them applied to these questions only (`after`), and what changed. Nothing is saved. The
 * eval actor does the work (`eval.run`); the panel's runs are bounded to ADMIN_EVAL_MAX questions.
 */
async function evalPrompts(bus: Bus, body: EvalBody, b: Ctx): Promise<{ before: EvalReport; after?: EvalReport; difference?: Record<string, number> }> {
  const r = await bus.request(S.EvalRun, { golden: body.golden, ...(body.prompts ? { prompts: body.prompts } : {}), max_questions: ADMIN_EVAL_MAX }, b);
  return { before: r.report, ...(r.candidate ? { after: r.candidate } : {}), ...(r.difference ? { difference: r.difference } : {}) };
}

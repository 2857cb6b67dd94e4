/**
 * POST /api/query (JSON, or SSE with Accept: text/event-stream) and the SQLatte-compatible
 * legacy POST /query. Both become one `ask` request on the bus.
 */
import { createHash } from 'node:crypto';
import Type, { type Static } from 'typebox';
import { Compile } from 'typebox/compile';
import type { Bus, Ctx } from '../../../protocol/bus.js';
import { CortadoError, toCortadoError } from '../../../protocol/errors.js';
import { Ask, AskConfirm, IdentitySession, progressSubject, TokenCheck } from '../../../protocol/subjects.js';
import type { AskReply, AskRequest } from '../../../protocol/schemas/ask.js';
import { ApiQueryBody, LegacyQueryBody } from '../../../protocol/schemas/http.js';
import type { ProgressEvent } from '../../../protocol/schemas/progress.js';
import { tokenScope } from '../../scope.js';
import { openSse } from '../../sse/stream.js';
import { errorBody, readJson, sendJson } from '../reply.js';
import type { Router, RouteContext } from '../router.js';
import type { HttpRequest, HttpResponse } from '../server.js';
import type { Config } from '../../../config/schema.js';
import { assistantUser } from './admin.js';
import { clientAddress, sessionToken } from '../session.js';

const checkApi = Compile(ApiQueryBody);
const checkLegacy = Compile(LegacyQueryBody);
/** fields whose strings are text (tabs and line breaks allowed); every other string is a name (edge/http/json.ts) */
const API_TEXT = { text: ['question'] } as const;
export const LEGACY_TEXT = { text: ['question', 'table_schema', 'schema'] } as const;

export interface QueryRouteDeps {
  bus: Bus;
  config: Config;
}

function wantsStream(req: HttpRequest): boolean {
  return (req.headers.accept ?? '').toLowerCase().includes('text/event-stream');
}

/** Who asks: the user (for logs, audit and the database's impersonation) and their database scope. */
interface Caller {
  user?: string;
  scope?: string;
}

function callerCtx(requestId: string, caller: Caller): Ctx {
  return { requestId, ...(caller.user ? { user: caller.user } : {}), ...(caller.scope ? { scope: caller.scope } : {}) };
}

/** Run one question, as JSON or as an SSE stream of its steps. */
async function runAsk(
  deps: QueryRouteDeps,
  req: HttpRequest,
  res: HttpResponse,
  ctx: RouteContext,
  ask: AskRequest,
  render: (reply: AskReply) => unknown,
  caller: Caller = {},
): Promise<void> {
  const busCtx = callerCtx(ctx.rid, caller);
  if (!wantsStream(req)) {
    const reply = await deps.bus.request(Ask, ask, busCtx);
    sendJson(res, 200, render(reply), ctx.rid);
    return;
  }
  const sse = openSse(res, ctx.rid);
  const stop = deps.bus.listen(progressSubject(ctx.rid), (data) => {
    const ev = data as ProgressEvent;
    if (ev && typeof ev.step === 'string' && ev.step !== 'error') sse.send(ev.step, ev.data, ev.seq);
  });
  try {
    await deps.bus.flush();
    const reply = await deps.bus.request(Ask, { ...ask, stream: true }, busCtx);
    sse.send('result', render(reply));
  } catch (err) {
    const e = toCortadoError(err);
    sse.send('error', errorBody(e, ctx.rid));
    ctx.log.info({ code: e.code }, e.message);
  } finally {
    stop();
    sse.close();
  }
}

/** Table names named by SQLatte widgets in their schema text ("Table: public.orders"). */
function tablesFromSchemaText(text: string | undefined): string[] {
  if (!text) return [];
  const out = new Set<string>();
  for (const m of text.matchAll(/^\s*Table:\s*([A-Za-z0-9_."`]+)/gim)) if (m[1]) out.add(m[1].replace(/[`"]/g, ''));
  return [...out].slice(0, 50);
}

const ConfirmBody = Type.Object({
  confirmation_id: Type.String({ minLength: 1, maxLength: 100 }),
  session_id: Type.Optional(Type.Union([Type.String({ maxLength: 128 }), Type.Null()])),
});
type ConfirmBody = Static<typeof ConfirmBody>;
const checkConfirm = Compile(ConfirmBody);

/**
 * Who asks on the legacy assistant, and the key that binds a held confirmation to them: the
 * assistant session (cookie), else an API token (Authorization: Bearer ctd_…), else (when
 * neither query.require_session nor the login gate demands one) the widget's session_id and
 * the client address.
 */
async function legacyCaller(bus: Bus, config: Config, req: HttpRequest, rid: string, sessionId: string | undefined): Promise<Caller & { owner: string }> {
  const user = await assistantUser(bus, config, req, rid);
  const cookie = sessionToken(req, 'assistant');
  if (user && cookie) return { user, owner: `a:${digest(cookie)}` };
  const bearer = /^Bearer\s+(ctd_\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
  if (bearer) {
    const { info } = await bus.request(TokenCheck, { token: bearer }, { requestId: rid });
    return { user: info.username, owner: `t:${info.id}`, ...tokenScope(info) };
  }
  if (cookie && !config.plugins.assistant_login.enabled) {
    const s = await bus.request(IdentitySession, { token: cookie, kind: 'assistant' }, { requestId: rid }).catch(() => undefined);
    if (s) return { user: s.username, owner: `a:${digest(cookie)}` };
  }
  if (config.query.require_session) throw new CortadoError('UNAUTHORIZED', 'sign in first (POST /assistant/login), or send an API token (Authorization: Bearer ctd_…)');
  return { owner: `c:${digest(`${sessionId ?? ''}|${clientAddress(req, config)}`)}` };
}

function digest(s: string): string {
  return createHash('sha256').update(s).digest('hex').slice(0, 40);
}

/** The fields existing SQLatte widgets read. */
export function legacyShape(reply: AskReply, sessionId: string | undefined): Record<string, unknown> {
  const base = { request_id: reply.request_id, session_id: sessionId ?? null };
  if (reply.intent === 'chat') return { response_type: 'chat', message: reply.message ?? '', ...base };
  return {
    response_type: 'sql',
    sql: reply.sql ?? '',
    columns: (reply.columns ?? []).map((c) => c.name),
    column_types: (reply.columns ?? []).map((c) => c.type),
    data: reply.rows ?? [],
    row_count: reply.row_count ?? 0,
    truncated: reply.truncated ?? false,
    explanation: reply.explanation ?? '',
    insights: reply.insights ?? [],
    executed: reply.executed ?? true,
    ...(reply.confirmation
      ? { requires_confirmation: true, confirmation_id: reply.confirmation.id, confirmation_expires_at: reply.confirmation.expires_at }
      : {}),
    ...(reply.bytes_processed !== undefined ? { bytes_processed: reply.bytes_processed } : {}),
    ...(reply.estimated_cost_usd !== undefined ? { estimated_cost_usd: reply.estimated_cost_usd } : {}),
    ...(reply.masked ? { masked: reply.masked } : {}),
    usage: reply.usage,
    timing_ms: reply.timing_ms,
    ...base,
  };
}

export function queryRoutes(router: Router, deps: QueryRouteDeps): void {
  router.post('/api/query', async (req, res, ctx) => {
    const body = await readJson<ApiQueryBody>(req, checkApi, API_TEXT);
    const ask: AskRequest = { question: body.question.trim() || body.question, channel: 'api' };
    if (body.tables?.length) ask.tables = body.tables;
    if (body.conversation_id) ask.conversation_id = body.conversation_id;
    await runAsk(deps, req, res, ctx, ask, (r) => r);
  });

  router.post('/query', async (req, res, ctx) => {
    const body = await readJson<LegacyQueryBody>(req, checkLegacy, LEGACY_TEXT);
    const sessionId = body.session_id ?? undefined;
    const caller = await legacyCaller(deps.bus, deps.config, req, ctx.rid, sessionId);
    const tables = body.tables?.length ? body.tables : tablesFromSchemaText(body.table_schema ?? body.schema);
    const ask: AskRequest = { question: body.question, channel: 'legacy', owner: caller.owner };
    if (tables.length) ask.tables = tables;
    if (sessionId) ask.conversation_id = sessionId;
    await runAsk(deps, req, res, ctx, ask, (r) => legacyShape(r, sessionId), caller);
  });

  // run exactly the SQL a /query answer held for confirmation (query.confirm_before_execute)
  router.post('/query/confirm-execute', async (req, res, ctx) => {
    const body = await readJson<ConfirmBody>(req, checkConfirm);
    const sessionId = body.session_id ?? undefined;
    const caller = await legacyCaller(deps.bus, deps.config, req, ctx.rid, sessionId);
    const reply = await deps.bus.request(AskConfirm, { confirmation_id: body.confirmation_id, owner: caller.owner, channel: 'legacy' }, callerCtx(ctx.rid, caller));
    sendJson(res, 200, legacyShape(reply, sessionId), ctx.rid);
  });
}

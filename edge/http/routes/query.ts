/**
 * POST /api/query (JSON, or SSE with Accept: text/event-stream) and the SQLatte-compatible
 * legacy POST /query. Both become one `ask` request on the bus. /api/query takes anyone (a
 * signed-in caller only, in its own scope, while plugins.auth.require_login is on); the
 * legacy routes take whoever edge/caller.ts lets through as `any`. Every question carries its
 * owner (edge/caller.ts), which binds its conversation, a held confirmation and its feedback
 * to that caller: /api/query's is the session or token the request carries, else its address.
 */
import { randomUUID } from 'node:crypto';
import { Compile } from 'typebox/compile';
import type { Bus, Ctx } from '../../../runtime/bus.js';
import { toCortadoError } from '../../../protocol/errors.js';
import { Ask, AskConfirm, Bucket, InsightsGenerate } from '../../../protocol/subjects.js';
import { CortadoError } from '../../../protocol/errors.js';
import type { Kv } from '../../../runtime/kv.js';
import type { ProgressEvent } from '../../../protocol/schemas/progress.js';
import { INSIGHTS_FOLLOW_UP_TTL_MS, InsightsFollowUp } from '../../../protocol/schemas/insights.js';
import { ASK_LIMITS, AskReply, type AskRequest } from '../../../protocol/schemas/ask.js';
import { ApiQueryBody, BODY_TEXT, LegacyConfirmBody, LegacyQueryBody } from '../../../protocol/schemas/http.js';
import { callerCtx, type Caller } from '../../caller.js';
import { openSse } from '../../sse/stream.js';
import { errorBody, readJson, sendJson } from '../reply.js';
import type { RequestContext, RouteContext, Router } from '../router.js';
import type { HttpRequest, HttpResponse } from '../server.js';
import type { Config } from '../../../config/schema.js';

const checkApi = Compile(ApiQueryBody);
const checkLegacy = Compile(LegacyQueryBody);
const checkConfirm = Compile(LegacyConfirmBody);

export interface QueryRouteDeps {
  bus: Bus;
  config: Config;
}

/** The widget types a page of Cortado's own may name in /api/query's `widget` field. */
const PAGE_WIDGETS: ReadonlySet<string> = new Set(['dashboard', 'api']);

/**
 * Which client asked /api/query (analytics, `mcp.security_alerts.apply_to`): a same-origin
 * browser fetch (`Sec-Fetch-Site: same-origin`, which browsers set and pages cannot) is the
 * dashboard, or what its `widget` field says when that is on the allow-list; anything else is
 * `api`, whatever its body says. Any other client could send the header too: it only labels the
 * question.
 */
function apiWidget(req: HttpRequest, said: string | undefined): string {
  if (said !== undefined && !PAGE_WIDGETS.has(said)) {
    throw new CortadoError('VALIDATION_FAILED', `widget: one of ${[...PAGE_WIDGETS].join(', ')} (the other types are set by their own routes)`, { errors: [{ path: '/widget', message: 'not an allowed widget type' }] });
  }
  if ((req.headers['sec-fetch-site'] ?? '').toLowerCase() !== 'same-origin') return 'api';
  return said ?? 'dashboard';
}

function wantsStream(req: HttpRequest): boolean {
  return (req.headers.accept ?? '').toLowerCase().includes('text/event-stream');
}

/**
 * The bus context of a question: its caller's, and where the route resolved nobody (an open
 * route, an anonymous widget) the name of whoever is signed in all the same — an admin or
 * database login asking on the dashboard — so analytics, the audit log and the engine know who
 * asked. The name grants nothing: the scope stays the caller's.
 */
export async function askCtx(ctx: RouteContext, caller: Caller): Promise<Ctx> {
  const c = callerCtx(ctx.rid, caller);
  if (c.user) return c;
  const user = await ctx.user();
  return user ? { ...c, user } : c;
}

/** How long an answer or an error waits for the steps published before it (a round trip; longer only while the broker is away). */
const STEPS_WAIT_MS = 2_000;

/** Run one question, as JSON or as an SSE stream of its steps. */
async function runAsk(
  bus: Bus,
  req: HttpRequest,
  res: HttpResponse,
  ctx: RequestContext,
  ask: AskRequest,
  render: (reply: AskReply) => unknown,
  busCtx: Ctx = { requestId: ctx.rid },
): Promise<void> {
  if (!wantsStream(req)) {
    const reply = await bus.request(Ask, ask, busCtx);
    sendJson(res, 200, render(reply), ctx.rid);
    return;
  }
  const sse = openSse(res, ctx.rid);
  // the model's insights of a hybrid answer follow it: held until the result is out
  const later = followUpInbox(res);
  const stop = bus.onProgress(ctx.rid, (ev) => {
    if (ev.step === 'model_insights') later.arrived(ev);
    else if (ev.step !== 'error') sse.send(ev.step, ev.data, ev.seq);
  });
  try {
    // the progress subscription is on the server before the question leaves (its first steps
    // are not lost); while the broker restarts this waits for it as the question itself would
    // (runtime/bus-connection.ts roundTrip), then fails with a retryable ACTOR_UNAVAILABLE
    await bus.roundTrip(busCtx.deadline);
    const reply = await bus.request(Ask, { ...ask, stream: true }, busCtx);
    // an answer from this very process (preferLocal) outruns its last steps over NATS: one
    // round trip lets them in first (the server sends what was published before the PONG).
    // The answer is here: it goes out even if the broker is away now, after a short wait
    await bus.roundTrip(Date.now() + STEPS_WAIT_MS).catch(() => undefined);
    sse.send('result', render(reply));
    if (reply.insights_pending) {
      const ev = await later.wait();
      if (ev) sse.send('model_insights', ev.data, ev.seq);
      else if (!sse.closed) {
        // nothing came in time (the assistant's process went away): say so, keep what was shown
        const none: InsightsFollowUp = { request_id: ctx.rid, status: 'failed', insights: reply.insights ?? [] };
        sse.send('model_insights', none);
      }
    }
  } catch (err) {
    const e = toCortadoError(err);
    // as for an answer: the steps published before the failure (the SQL that failed) go first
    await bus.roundTrip(Date.now() + STEPS_WAIT_MS).catch(() => undefined);
    sse.send('error', errorBody(e, ctx.rid));
    ctx.log.info({ code: e.code }, e.message);
  } finally {
    stop();
    sse.close();
  }
}

/** How long a stream stays open for a hybrid answer's model insights after the result. */
const FOLLOW_UP_WAIT_MS = InsightsGenerate.timeoutMs + 5_000;

/** Holds the `model_insights` step of one stream until it is asked for (the result goes first). */
function followUpInbox(res: HttpResponse): { arrived(ev: ProgressEvent): void; wait(): Promise<ProgressEvent | undefined> } {
  let got: ProgressEvent | undefined;
  let wake: (() => void) | undefined;
  res.onAbort(() => wake?.());
  return {
    arrived(ev) {
      got ??= ev;
      wake?.();
    },
    async wait() {
      if (got || res.aborted) return got;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, FOLLOW_UP_WAIT_MS);
        wake = () => { clearTimeout(timer); resolve(); };
      });
      return got;
    },
  };
}

/** Table names named by SQLatte widgets in their schema text ("Table: public.orders"), as many as a question takes. */
function tablesFromSchemaText(text: string | undefined): string[] {
  if (!text) return [];
  const out = new Set<string>();
  for (const m of text.matchAll(/^\s*Table:\s*([A-Za-z0-9_."`]+)/gim)) if (m[1]) out.add(m[1].replace(/[`"]/g, ''));
  return [...out].slice(0, ASK_LIMITS.tables);
}

/** The fields existing SQLatte widgets read. */
export function legacyShape(reply: AskReply, sessionId: string | undefined): Record<string, unknown> {
  const base = { request_id: reply.request_id, session_id: sessionId ?? null };
  if (reply.intent === 'chat') return { response_type: 'chat', message: reply.message ?? '', ...base };
  // a clarifying question: answer it in the same session with a choice's label or value
  if (reply.intent === 'clarify') return { response_type: 'clarify', message: reply.message ?? '', ...(reply.clarification ? { clarification: reply.clarification } : {}), usage: reply.usage, timing_ms: reply.timing_ms, ...base };
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
    ...(reply.insights_pending ? { insights_pending: true, ...(reply.insights_id ? { insights_id: reply.insights_id } : {}) } : {}),
    usage: reply.usage,
    timing_ms: reply.timing_ms,
    ...base,
  };
}

export function queryRoutes(router: Router, deps: QueryRouteDeps): void {
  const { bus } = deps;

  // anyone — unless plugins.auth.require_login, then a signed-in caller, whose scope the question runs in
  router.post('/api/query', { auth: 'open', summary: 'Ask one question: the answer as JSON, or its steps as SSE (Accept: text/event-stream)', body: ApiQueryBody, reply: AskReply, sse: true }, async (req, res, ctx) => {
    const caller = await ctx.caller();
    const body = await readJson(req, checkApi, { text: BODY_TEXT.api });
    // the question's conversation (and its feedback) belong to whoever asked: their session or
    // token when they send one, else this address (edge/caller.ts owner)
    const ask: AskRequest = { question: body.question.trim() || body.question, channel: 'api', owner: await ctx.owner(), widget: apiWidget(req, body.widget) };
    if (body.tables?.length) ask.tables = body.tables;
    if (body.conversation_id) ask.conversation_id = body.conversation_id;
    await runAsk(bus, req, res, ctx, ask, (r) => r, await askCtx(ctx, caller));
  });

  router.post('/query', { auth: 'any', summary: 'Ask one question, SQLatte-compatible (the legacy widget\'s shape)', body: LegacyQueryBody, sse: true }, async (req, res, ctx) => {
    const body = await readJson(req, checkLegacy, { text: BODY_TEXT.legacy, fields: 'strip' });
    // a client that sent none gets one (SQLatte widgets keep the session_id of the answer and
    // send it back): the question's conversation and an anonymous widget's owner are named by it
    // from this first question on, so the next question with it continues this one
    const sessionId = body.session_id || randomUUID();
    const caller = await ctx.caller({ widgetSession: sessionId });
    const tables = body.tables?.length ? body.tables : tablesFromSchemaText(body.table_schema ?? body.schema);
    const ask: AskRequest = { question: body.question, channel: 'legacy', owner: caller.owner, widget: 'assistant' };
    if (tables.length) ask.tables = tables;
    ask.conversation_id = sessionId;
    await runAsk(bus, req, res, ctx, ask, (r) => legacyShape(r, sessionId), await askCtx(ctx, caller));
  });

  // run exactly the SQL a /query answer held for confirmation (query.confirm_before_execute)
  router.post('/query/confirm-execute', { auth: 'any', summary: 'Run the SQL a /query answer held for confirmation', body: LegacyConfirmBody }, async (req, res, ctx) => {
    const body = await readJson(req, checkConfirm, { fields: 'strip' });
    const sessionId = body.session_id ?? undefined;
    const caller = await ctx.caller({ widgetSession: sessionId });
    const reply = await bus.request(AskConfirm, { confirmation_id: body.confirmation_id, owner: caller.owner, channel: 'legacy', widget: 'assistant' }, await askCtx(ctx, caller));
    sendJson(res, 200, legacyShape(reply, sessionId), ctx.rid);
  });

  // the model's insights of a hybrid JSON answer, once ready (the answer's insights_id; kept 10 minutes)
  let followUps: Promise<Kv<InsightsFollowUp>> | undefined;
  router.get('/api/insights/:id', { auth: 'none', summary: 'The model\'s insights of a hybrid answer, once ready (kept 10 minutes)', reply: InsightsFollowUp }, async (req, res, ctx) => {
    const id = req.params.id ?? '';
    followUps ??= bus.bucket<InsightsFollowUp>(Bucket.Insights, { ttlMs: INSIGHTS_FOLLOW_UP_TTL_MS })
      .catch((err: unknown) => {
        followUps = undefined;
        throw new CortadoError('ACTOR_UNAVAILABLE', `insights are not kept without JetStream KV: ${(err as Error).message}`);
      });
    // a KV key is letters, digits, `-`, `_`, `=`, `.`; insights ids are UUIDs
    const found = /^[A-Za-z0-9-]{1,64}$/.test(id) ? await (await followUps).get(id) : undefined;
    if (!found) throw new CortadoError('NOT_FOUND', 'no such insights: unknown, or older than 10 minutes');
    if (found.status === 'pending' && found.until && Date.parse(found.until) < Date.now()) {
      sendJson(res, 200, { ...found, status: 'failed', until: undefined }, ctx.rid);
      return;
    }
    sendJson(res, 200, found, ctx.rid);
  });
}

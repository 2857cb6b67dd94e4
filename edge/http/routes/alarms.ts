/**
 * Alarms over HTTP (/api/alarms; docs/ops.md "Alarms", docs/http-api.md). The edge only
 * translates: each route is one request to the alarms actor, which checks, stores and evaluates.
 *
 * Who: the admin session (`auth: 'admin'`; writes need the CSRF header). alarms.enabled false:
 * every route answers 404 saying so (the actor's refusal).
 *
 * | route                          | bus request                         | answer        |
 * |--------------------------------|-------------------------------------|---------------|
 * | GET    /api/alarms             | AlarmList (alarms, storage, tracker) | 200           |
 * | POST   /api/alarms             | AlarmCreate                         | 201 alarm     |
 * | GET    /api/alarms/:id         | AlarmGet                            | 200 alarm     |
 * | PUT    /api/alarms/:id         | AlarmUpdate (any subset)            | 200 alarm     |
 * | DELETE /api/alarms/:id         | AlarmDelete                         | 200 {ok}      |
 * | POST   /api/alarms/test        | AlarmTest (a draft condition)       | 200           |
 * | POST   /api/alarms/:id/test    | AlarmTest (saved, or body's draft)  | 200           |
 * | GET    /api/alarms/:id/history | AlarmHistory (?limit)               | 200           |
 */
import { Compile } from 'typebox/compile';
import type { Bus } from '../../../runtime/bus.js';
import { CortadoError } from '../../../protocol/errors.js';
import Type from 'typebox';
import { Alarm, ALARM_HISTORY_MAX, AlarmBody, AlarmHistoryReply, AlarmListReply, AlarmPatchBody, AlarmTestBody, AlarmTestReply, OkReply } from '../../../protocol/schemas/alarms.js';
import * as S from '../../../protocol/subjects.js';
import { callerCtx } from '../../caller.js';
import { readJson, sendJson } from '../reply.js';
import type { Router } from '../router.js';
import type { HttpRequest } from '../server.js';

const checkBody = Compile(AlarmBody);
const checkPatch = Compile(AlarmPatchBody);
const checkTest = Compile(AlarmTestBody);

const BASE = '/api/alarms';
const ID = /^[A-Za-z0-9_-]{1,64}$/;

export interface AlarmRouteDeps {
  bus: Bus;
}

function pathId(req: HttpRequest): string {
  const id = req.params.id ?? '';
  if (!ID.test(id)) throw new CortadoError('VALIDATION_FAILED', 'path parameter id: 1 to 64 letters, digits, _ or -', { errors: [{ path: ':id', message: 'an alarm id' }] });
  return id;
}

/**
 * A body may be empty (a test of the saved alarm). Fields the schema does not name are dropped
 * (a record read with GET can be sent back with PUT): edge/http/fields.ts.
 */
async function optionalJson<T>(req: HttpRequest, check: ReturnType<typeof Compile>): Promise<T> {
  if ((req.headers['content-length'] ?? '0') === '0' && !req.headers['content-type']) return {} as T;
  return readJson(req, check, { fields: 'strip' }) as Promise<T>;
}

export function alarmRoutes(router: Router, deps: AlarmRouteDeps): void {
  const { bus } = deps;
  const admin = { auth: 'admin' } as const;
  const doc = (summary: string, more: Record<string, unknown> = {}) => ({ ...admin, summary, ...more });

  router.add('GET', BASE, doc('the alarms, where they are kept and the issue tracker in force (never its token)', { reply: AlarmListReply }), async (_req, res, ctx) => {
    const caller = await ctx.caller();
    sendJson(res, 200, await bus.request(S.AlarmList, {}, callerCtx(ctx.rid, caller)), ctx.rid);
  });
  router.add('POST', BASE, doc('create an alarm', { body: AlarmBody, reply: Alarm, status: 201 }), async (req, res, ctx) => {
    const caller = await ctx.caller();
    const body = await readJson(req, checkBody, { fields: 'strip' });
    sendJson(res, 201, await bus.request(S.AlarmCreate, { ...body, by: caller.user }, callerCtx(ctx.rid, caller)), ctx.rid);
  });
  // before /:id, so that it is never read as an id
  router.add('POST', `${BASE}/test`, doc('measure a draft condition now: the value and what an evaluation would do (nothing is sent)', { body: AlarmTestBody, reply: AlarmTestReply }), async (req, res, ctx) => {
    const caller = await ctx.caller();
    const body = await optionalJson<{ condition?: unknown }>(req, checkTest);
    if (!body.condition) throw new CortadoError('VALIDATION_FAILED', 'condition: send the condition to test (or POST /api/alarms/{id}/test for a saved alarm)', { field: 'condition' });
    sendJson(res, 200, await bus.request(S.AlarmTest, body as { condition: never }, callerCtx(ctx.rid, caller)), ctx.rid);
  });
  router.add('GET', `${BASE}/:id`, doc('one alarm', { reply: Alarm }), async (req, res, ctx) => {
    const caller = await ctx.caller();
    sendJson(res, 200, await bus.request(S.AlarmGet, { id: pathId(req) }, callerCtx(ctx.rid, caller)), ctx.rid);
  });
  router.add('PUT', `${BASE}/:id`, doc('change an alarm (the fields sent)', { body: AlarmPatchBody, reply: Alarm }), async (req, res, ctx) => {
    const caller = await ctx.caller();
    const id = pathId(req);
    const body = await readJson(req, checkPatch, { fields: 'strip' });
    sendJson(res, 200, await bus.request(S.AlarmUpdate, { ...body, id, by: caller.user }, callerCtx(ctx.rid, caller)), ctx.rid);
  });
  router.add('DELETE', `${BASE}/:id`, doc('delete an alarm and its history', { reply: OkReply }), async (req, res, ctx) => {
    const caller = await ctx.caller();
    sendJson(res, 200, await bus.request(S.AlarmDelete, { id: pathId(req), by: caller.user }, callerCtx(ctx.rid, caller)), ctx.rid);
  });
  router.add('POST', `${BASE}/:id/test`, doc('evaluate a saved alarm now without notifying (optionally with a draft condition)', { body: AlarmTestBody, reply: AlarmTestReply }), async (req, res, ctx) => {
    const caller = await ctx.caller();
    const id = pathId(req);
    const body = await optionalJson<{ condition?: never }>(req, checkTest);
    sendJson(res, 200, await bus.request(S.AlarmTest, { ...body, id }, callerCtx(ctx.rid, caller)), ctx.rid);
  });
  router.add('GET', `${BASE}/:id/history`, doc('an alarm\'s history, newest first', { reply: AlarmHistoryReply, query: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: ALARM_HISTORY_MAX })) }) }), async (req, res, ctx) => {
    const caller = await ctx.caller();
    const raw = req.query.get('limit');
    let limit: number | undefined;
    if (raw !== null && raw !== '') {
      limit = /^[0-9]{1,3}$/.test(raw) ? Number(raw) : NaN;
      if (!Number.isInteger(limit) || limit < 1 || limit > ALARM_HISTORY_MAX) throw new CortadoError('VALIDATION_FAILED', `limit: a whole number from 1 to ${ALARM_HISTORY_MAX}`);
    }
    sendJson(res, 200, await bus.request(S.AlarmHistory, { id: pathId(req), ...(limit !== undefined ? { limit } : {}) }, callerCtx(ctx.rid, caller)), ctx.rid);
  });
}

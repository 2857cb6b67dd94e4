/**
 * Scheduled reports over HTTP (/api/schedules; SPEC.md "Endpoints → Schedules"). The edge only
 * translates: each route is one request to the scheduler actor, with the asker it builds from
 * the caller.
 *
 * Who (`auth: 'signed_in'`, edge/caller.ts): the admin session (sees and changes every
 * schedule), the assistant session, a plugins.auth session, or an API token — each only its
 * own schedules. Anonymous widgets get 401. Cookie writes need the CSRF header.
 *
 * Whose a schedule is (its owner string, protocol/scope.ts): an API token's `t:<id>`; an
 * assistant login's `a:` and a digest of the user name (the same person signing in again finds
 * their schedules; the cookie's own digest changes with every login). A plugins.auth session
 * (`s:<id>`) may list and read but not create schedules: the scheduler answers 403 telling the
 * user to mint an API token from the session (POST /auth/tokens) and use it, because a
 * session's schedule would be lost at the next sign-in and fail once the session ended. A
 * schedule runs in its creator's scope: the token's own database connection when it has one,
 * else the server's.
 *
 * | route                               | bus request                     | answer         |
 * |-------------------------------------|---------------------------------|----------------|
 * | POST   /api/schedules/cron-preview  | CronPreview                     | 200            |
 * | POST   /api/schedules               | ScheduleCreate                  | 201 schedule   |
 * | GET    /api/schedules               | ScheduleList                    | 200            |
 * | GET    /api/schedules/:id           | ScheduleGet                     | 200 schedule   |
 * | PUT    /api/schedules/:id           | ScheduleUpdate (every field)    | 200 schedule   |
 * | PATCH  /api/schedules/:id           | ScheduleUpdate (any subset)     | 200 schedule   |
 * | DELETE /api/schedules/:id           | ScheduleDelete (with history)   | 200 {ok}       |
 * | POST   /api/schedules/:id/pause     | ScheduleUpdate {enabled: false} | 200 schedule   |
 * | POST   /api/schedules/:id/resume    | ScheduleUpdate {enabled: true}  | 200 schedule   |
 * | POST   /api/schedules/:id/run       | ScheduleRunNow                  | 202 execution  |
 * | GET    /api/schedules/:id/history   | ScheduleHistory (?limit&offset) | 200            |
 */
import { createHash } from 'node:crypto';
import { Compile } from 'typebox/compile';
import type { Bus, Ctx } from '../../../runtime/bus.js';
import { CortadoError } from '../../../protocol/errors.js';
import { BODY_TEXT, CronPreviewBody, ScheduleBody, SchedulePatchBody, SchedulePutBody } from '../../../protocol/schemas/http.js';
import type { Asker } from '../../../protocol/schemas/schedules.js';
import { ownerOf } from '../../../protocol/scope.js';
import * as S from '../../../protocol/subjects.js';
import { callerCtx, type CallerFor } from '../../caller.js';
import { readJson, sendJson } from '../reply.js';
import type { Router, RouteContext, RouteDoc } from '../router.js';
import type { HttpRequest, HttpResponse } from '../server.js';

const checkBody = Compile(ScheduleBody);
const checkPut = Compile(SchedulePutBody);
const checkPatch = Compile(SchedulePatchBody);
const checkPreview = Compile(CronPreviewBody);

const BASE = '/api/schedules';
const ID = /^[A-Za-z0-9_-]{1,64}$/;
const TEXT = { text: BODY_TEXT.schedule };

export interface ScheduleRouteDeps {
  bus: Bus;
}

type Caller = CallerFor<'signed_in'>;

/** Who asks, as the scheduler reads it (see the header for the owner strings). */
export function askerOf(caller: Caller): Asker {
  switch (caller.kind) {
    case 'admin':
      return { user: caller.user, admin: true };
    case 'assistant':
      return { user: caller.user, admin: false, owner: ownerOf('assistant', createHash('sha256').update(`user\u0000${caller.user}`).digest('hex').slice(0, 40)) };
    default:
      return { user: caller.user, admin: false, owner: caller.owner, ...(caller.scope ? { scope: caller.scope } : {}) };
  }
}

/** A path id: letters, digits, `_` and `-`, 1–64 (else 400 before the bus is asked). */
function pathId(req: HttpRequest): string {
  const id = req.params.id ?? '';
  if (!ID.test(id)) {
    throw new CortadoError('VALIDATION_FAILED', 'path parameter id: 1 to 64 letters, digits, _ or -', { errors: [{ path: ':id', message: 'a schedule id' }] });
  }
  return id;
}

/** An optional whole-number query parameter within [min, max]. */
function queryInt(req: HttpRequest, key: string, min: number, max: number): number | undefined {
  const v = req.query.get(key);
  if (v === null || v === '') return undefined;
  const n = /^[0-9]{1,10}$/.test(v) ? Number(v) : NaN;
  if (!Number.isInteger(n) || n < min || n > max) throw new CortadoError('VALIDATION_FAILED', `${key}: a whole number from ${min} to ${max}`);
  return n;
}

type Handler = (req: HttpRequest, res: HttpResponse, ctx: RouteContext<'signed_in'>, who: { asker: Asker; b: Ctx }) => Promise<void>;

export function scheduleRoutes(router: Router, deps: ScheduleRouteDeps): void {
  const { bus } = deps;

  /** The caller first (a stranger is refused before the body is read), then the route. */
  function route(method: string, path: string, fn: Handler): void;
  function route(method: string, path: string, doc: RouteDoc, fn: Handler): void;
  function route(method: string, path: string, docOrFn: RouteDoc | Handler, last?: Handler): void {
    const fn = typeof docOrFn === 'function' ? docOrFn : last!;
    const doc = typeof docOrFn === 'function' ? {} : docOrFn;
    router.add(method, `${BASE}${path}`, { ...doc, auth: 'signed_in' }, async (req, res, ctx) => {
      const caller = await ctx.caller();
      await fn(req, res, ctx, { asker: askerOf(caller), b: callerCtx(ctx.rid, caller) });
    });
  }

  // before /:id, so that it is never read as an id
  route('POST', '/cron-preview', { summary: 'The next runs of a cron expression', body: CronPreviewBody, reply: S.CronPreview.reply }, async (req, res, ctx, { b }) => {
    const body = await readJson(req, checkPreview);
    sendJson(res, 200, await bus.request(S.CronPreview, body, b), ctx.rid);
  });
  route('POST', '', { summary: 'Create a scheduled report', body: ScheduleBody, status: 201, reply: S.ScheduleCreate.reply }, async (req, res, ctx, { asker, b }) => {
    const body = await readJson(req, checkBody, { ...TEXT, fields: 'strip' });
    sendJson(res, 201, await bus.request(S.ScheduleCreate, { ...body, asker }, b), ctx.rid);
  });
  route('GET', '', { summary: 'Your scheduled reports (all of them for the admin)', reply: S.ScheduleList.reply }, async (_req, res, ctx, { asker, b }) => {
    sendJson(res, 200, await bus.request(S.ScheduleList, { asker }, b), ctx.rid);
  });
  route('GET', '/:id', { summary: 'One scheduled report', reply: S.ScheduleGet.reply }, async (req, res, ctx, { asker, b }) => {
    sendJson(res, 200, await bus.request(S.ScheduleGet, { id: pathId(req), asker }, b), ctx.rid);
  });
  route('PUT', '/:id', { summary: 'Change a scheduled report', body: SchedulePutBody, reply: S.ScheduleUpdate.reply }, async (req, res, ctx, { asker, b }) => {
    const id = pathId(req);
    const body = await readJson(req, checkPut, { ...TEXT, fields: 'strip' });
    sendJson(res, 200, await bus.request(S.ScheduleUpdate, { ...body, id, asker }, b), ctx.rid);
  });
  route('PATCH', '/:id', { summary: 'Change some fields of a scheduled report', body: SchedulePatchBody, reply: S.ScheduleUpdate.reply }, async (req, res, ctx, { asker, b }) => {
    const id = pathId(req);
    const body = await readJson(req, checkPatch, { ...TEXT, fields: 'strip' });
    sendJson(res, 200, await bus.request(S.ScheduleUpdate, { ...body, id, asker }, b), ctx.rid);
  });
  route('DELETE', '/:id', { summary: 'Delete a scheduled report', reply: S.ScheduleDelete.reply }, async (req, res, ctx, { asker, b }) => {
    sendJson(res, 200, await bus.request(S.ScheduleDelete, { id: pathId(req), asker }, b), ctx.rid);
  });
  for (const [verb, enabled] of [['pause', false], ['resume', true]] as const) {
    route('POST', `/:id/${verb}`, { summary: `${verb === 'pause' ? 'Pause' : 'Resume'} a scheduled report`, reply: S.ScheduleUpdate.reply }, async (req, res, ctx, { asker, b }) => {
      sendJson(res, 200, await bus.request(S.ScheduleUpdate, { id: pathId(req), enabled, asker }, b), ctx.rid);
    });
  }
  route('POST', '/:id/run', { summary: 'Run a scheduled report now', status: 202, reply: S.ScheduleRunNow.reply }, async (req, res, ctx, { asker, b }) => {
    sendJson(res, 202, await bus.request(S.ScheduleRunNow, { id: pathId(req), asker }, b), ctx.rid);
  });
  route('GET', '/:id/history', { summary: 'Runs of a scheduled report, newest first', reply: S.ScheduleHistory.reply }, async (req, res, ctx, { asker, b }) => {
    const limit = queryInt(req, 'limit', 1, 1000);
    const offset = queryInt(req, 'offset', 0, 1_000_000_000);
    sendJson(res, 200, await bus.request(S.ScheduleHistory, {
      id: pathId(req), asker, ...(limit !== undefined ? { limit } : {}), ...(offset !== undefined ? { offset } : {}),
    }, b), ctx.rid);
  });
}

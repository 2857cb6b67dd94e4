/**
 * Each signed-in person's workspace over HTTP: the questions they asked (history, with
 * favourites) and their dashboards of tiles (the standalone dashboard, docs/ui.md). The edge
 * only translates: each route is one request to the workspace actor, with the owner it names
 * from the caller. Anonymous visitors keep their history in the browser (history.js) and get 401.
 *
 * Who (`auth: 'signed_in'`, edge/caller.ts): the admin session, the assistant session, a
 * plugins.auth session or an API token. Cookie writes need the CSRF header (GET /api/workspace
 * gives the token of the session it found).
 *
 * Whose (the owner string, stable across sign-ins so a person finds their history again in
 * another browser): an admin `admin:` and an assistant login `a:` with a digest of the user name
 * (the same `a:` the schedules use); a plugins.auth login `db:` with a digest of the database
 * it reached and the user name; an auto session its own `s:<id>`; an API token its `t:<id>`.
 *
 * | route                         | bus request                | answer            |
 * |-------------------------------|----------------------------|-------------------|
 * | GET    /api/workspace         | —                          | 200 who, stored, csrf_token |
 * | GET    /api/history           | HistoryList (?limit&favourites=true) | 200 {entries, stored} |
 * | POST   /api/history           | HistoryAdd                 | 201 entry         |
 * | PUT    /api/history/:id       | HistoryFavourite           | 200 entry         |
 * | DELETE /api/history/:id       | HistoryDelete              | 200 {ok}          |
 * | GET    /api/dashboards        | DashboardList              | 200 {dashboards, stored} |
 * | POST   /api/dashboards        | DashboardSave (new)        | 201 dashboard     |
 * | GET    /api/dashboards/:id    | DashboardGet               | 200 dashboard     |
 * | PUT    /api/dashboards/:id    | DashboardSave (replace)    | 200 dashboard     |
 * | DELETE /api/dashboards/:id    | DashboardDelete            | 200 {ok}          |
 * | POST   /api/tiles/run         | SqlExecute (the caller's scope) | 200 TileRunReply |
 *
 * A tile's SQL runs as an export's does (routes/export.ts): through the executor's guard, in the
 * caller's own database scope, masked; a date filter is the executor's wrap (date_range), never
 * SQL written here.
 */
import { createHash } from 'node:crypto';
import Type from 'typebox';
import { Compile } from 'typebox/compile';
import type { Bus } from '../../../runtime/bus.js';
import { CortadoError } from '../../../protocol/errors.js';
import * as W from '../../../protocol/schemas/workspace.js';
import * as S from '../../../protocol/subjects.js';
import type { Config } from '../../../config/schema.js';
import { callerCtx, type CallerFor } from '../../caller.js';
import { readJson, sendJson } from '../reply.js';
import type { Router } from '../router.js';
import type { HttpRequest } from '../server.js';

const FavouriteBody = Type.Object({ favourite: Type.Boolean() });
const checkHistory = Compile(W.HistoryInput);
const checkFavourite = Compile(FavouriteBody);
const checkDashboard = Compile(W.DashboardInput);
const checkTileRun = Compile(W.TileRunBody);
const ID = /^[A-Za-z0-9_-]{1,64}$/;
const WhoReply = Type.Object({
  kind: Type.String(), user: Type.String(), stored: W.Stored, csrf_token: Type.Optional(Type.String()),
});

export interface WorkspaceRouteDeps {
  bus: Bus;
  config: Config;
}

type Caller = CallerFor<'signed_in'>;

function digest(s: string): string {
  return createHash('sha256').update(s).digest('hex').slice(0, 40);
}

/** The workspace owner of a caller (see the header). */
export function workspaceOwner(caller: Caller): string {
  switch (caller.kind) {
    case 'admin':
      return `admin:${digest(`admin\u0000${caller.user}`)}`;
    case 'assistant':
      return `a:${digest(`user\u0000${caller.user}`)}`;
    case 'auth': {
      const db = caller.session.db;
      return `db:${digest(['auth', db?.provider ?? '', db?.database ?? db?.catalog ?? '', caller.user].join('\u0000'))}`;
    }
    default:
      if (!caller.owner) throw new CortadoError('INTERNAL', `a ${caller.kind} caller without an owner`);
      return caller.owner;
  }
}

function pathId(req: HttpRequest): string {
  const id = req.params.id ?? '';
  if (!ID.test(id)) throw new CortadoError('VALIDATION_FAILED', 'path parameter id: 1 to 64 letters, digits, _ or -', { errors: [{ path: ':id', message: 'an id' }] });
  return id;
}

function queryLimit(req: HttpRequest): number | undefined {
  const v = req.query.get('limit');
  if (v === null || v === '') return undefined;
  const n = /^[0-9]{1,4}$/.test(v) ? Number(v) : NaN;
  if (!(n >= 1 && n <= W.WORKSPACE_LIMITS.list)) throw new CortadoError('VALIDATION_FAILED', `limit: a whole number from 1 to ${W.WORKSPACE_LIMITS.list}`);
  return n;
}

function queryFlag(req: HttpRequest, key: string): boolean {
  const v = req.query.get(key);
  if (v === null || v === '' || v === 'false') return false;
  if (v === 'true') return true;
  throw new CortadoError('VALIDATION_FAILED', `${key}: true or false`);
}

export function workspaceRoutes(router: Router, deps: WorkspaceRouteDeps): void {
  const { bus, config } = deps;
  const auth = 'signed_in' as const;
  const who = async (ctx: { caller(): Promise<Caller>; rid: string }) => {
    const caller = await ctx.caller();
    return { caller, owner: workspaceOwner(caller), b: callerCtx(ctx.rid, caller) };
  };

  router.get('/api/workspace', { auth, summary: 'who is signed in, where their history is kept, and the CSRF token of cookie writes', reply: WhoReply }, async (_req, res, ctx) => {
    const caller = await ctx.caller();
    const csrf = 'session' in caller ? caller.session.csrf : undefined;
    sendJson(res, 200, {
      kind: caller.kind, user: caller.user, stored: config.config_db.enabled ? 'config_db' : 'memory', ...(csrf ? { csrf_token: csrf } : {}),
    }, ctx.rid);
  });

  router.get('/api/history', { auth, summary: 'the caller\'s questions, newest first (?limit, ?favourites=true)', reply: W.HistoryListReply }, async (req, res, ctx) => {
    const { owner, b } = await who(ctx);
    const limit = queryLimit(req);
    const favourites = queryFlag(req, 'favourites');
    sendJson(res, 200, await bus.request(S.HistoryList, { owner, ...(limit ? { limit } : {}), ...(favourites ? { favourites } : {}) }, b), ctx.rid);
  });
  router.post('/api/history', { auth, summary: 'keep a question the caller asked', body: W.HistoryInput, reply: W.HistoryEntry, status: 201 }, async (req, res, ctx) => {
    const { owner, b } = await who(ctx);
    const entry = await readJson(req, checkHistory, { text: ['question', 'sql'] });
    sendJson(res, 201, await bus.request(S.HistoryAdd, { owner, entry }, b), ctx.rid);
  });
  router.add('PUT', '/api/history/:id', { auth, summary: 'mark or unmark a history entry as a favourite', body: FavouriteBody, reply: W.HistoryEntry }, async (req, res, ctx) => {
    const { owner, b } = await who(ctx);
    const id = pathId(req);
    const body = await readJson(req, checkFavourite);
    sendJson(res, 200, await bus.request(S.HistoryFavourite, { owner, id, favourite: body.favourite }, b), ctx.rid);
  });
  router.add('DELETE', '/api/history/:id', { auth, summary: 'forget a history entry', reply: W.WorkspaceOk }, async (req, res, ctx) => {
    const { owner, b } = await who(ctx);
    sendJson(res, 200, await bus.request(S.HistoryDelete, { owner, id: pathId(req) }, b), ctx.rid);
  });

  router.get('/api/dashboards', { auth, summary: 'the caller\'s dashboards with their tiles', reply: W.DashboardListReply }, async (_req, res, ctx) => {
    const { owner, b } = await who(ctx);
    sendJson(res, 200, await bus.request(S.DashboardList, { owner }, b), ctx.rid);
  });
  router.post('/api/dashboards', { auth, summary: 'create a dashboard of tiles', body: W.DashboardInput, reply: W.Dashboard, status: 201 }, async (req, res, ctx) => {
    const { owner, b } = await who(ctx);
    const dashboard = await readJson(req, checkDashboard, { text: ['tiles'] });
    sendJson(res, 201, await bus.request(S.DashboardSave, { owner, dashboard }, b), ctx.rid);
  });
  router.get('/api/dashboards/:id', { auth, summary: 'one dashboard; cron tiles with their next refresh', reply: W.Dashboard }, async (req, res, ctx) => {
    const { owner, b } = await who(ctx);
    sendJson(res, 200, await bus.request(S.DashboardGet, { owner, id: pathId(req) }, b), ctx.rid);
  });
  router.add('PUT', '/api/dashboards/:id', { auth, summary: 'replace a dashboard\'s name and tiles', body: W.DashboardInput, reply: W.Dashboard }, async (req, res, ctx) => {
    const { owner, b } = await who(ctx);
    const id = pathId(req);
    const dashboard = await readJson(req, checkDashboard, { text: ['tiles'] });
    sendJson(res, 200, await bus.request(S.DashboardSave, { owner, id, dashboard }, b), ctx.rid);
  });
  router.add('DELETE', '/api/dashboards/:id', { auth, summary: 'delete a dashboard', reply: W.WorkspaceOk }, async (req, res, ctx) => {
    const { owner, b } = await who(ctx);
    sendJson(res, 200, await bus.request(S.DashboardDelete, { owner, id: pathId(req) }, b), ctx.rid);
  });

  router.post('/api/tiles/run', { auth, summary: 'run a dashboard tile\'s SQL (guarded, masked, in the caller\'s scope), maybe within days (date_range)', body: W.TileRunBody, reply: W.TileRunReply }, async (req, res, ctx) => {
    const caller = await ctx.caller();
    const body = await readJson(req, checkTileRun, { text: ['sql'] });
    const r = await bus.request(S.SqlExecute, { sql: body.sql, ...(body.date_range ? { date_range: body.date_range } : {}) }, callerCtx(ctx.rid, caller));
    const reply: W.TileRunReply = {
      intent: 'sql', sql: r.sql, columns: r.columns, rows: r.rows, row_count: r.row_count, truncated: r.truncated, masked: r.masked,
      ...(body.date_range ? { date_range: body.date_range } : {}),
    };
    sendJson(res, 200, reply, ctx.rid);
  });

  // the Tokens tab: a plugins.auth user's own API tokens (minting is POST /auth/tokens)
  router.get('/auth/tokens', { auth: 'auth', summary: 'the session user\'s own API tokens', reply: Type.Object({ tokens: Type.Array(Type.Unknown()) }) }, async (_req, res, ctx) => {
    const caller = await ctx.caller();
    sendJson(res, 200, await bus.request(S.AuthTokenList, { token: caller.secret }, { requestId: ctx.rid, user: caller.user }), ctx.rid);
  });
  router.add('DELETE', '/auth/tokens/:id', { auth: 'auth', summary: 'revoke one of the session user\'s own API tokens', reply: W.WorkspaceOk }, async (req, res, ctx) => {
    const caller = await ctx.caller();
    const id = req.params.id ?? '';
    if (!/^[A-Za-z0-9_-]{1,100}$/.test(id)) throw new CortadoError('VALIDATION_FAILED', 'path parameter id: a token id');
    sendJson(res, 200, await bus.request(S.AuthTokenRevoke, { token: caller.secret, id }, { requestId: ctx.rid, user: caller.user }), ctx.rid);
  });
}

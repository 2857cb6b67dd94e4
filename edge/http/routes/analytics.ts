/**
 * How Cortado is used, as JSON (SPEC.md section `analytics`; the page is GET /analytics):
 *
 * - GET /api/analytics/report?from&to&channel&widget&user&top — the whole AnalyticsReport
 * - GET /api/analytics/<part> — one part of it, `{range, <part>}`, for people who build their
 *   own dashboards (PARTS below)
 * - POST /api/feedback — thumbs up or down on one answer, by its request id
 *
 * Who may read the report is `analytics.access` (read at start): `admin` (the default: the
 * admin panel's session), `signed_in` (any session — admin, assistant, plugins.auth — or an API
 * token) or `public`. Feedback takes whoever may ask on the legacy routes (`any`), on their own
 * answers only: the question's owner (edge/caller.ts; a legacy widget names itself with the
 * `session_id` it asked with) must be the rater's, and the rating is theirs (the caller's user,
 * never one the body names).
 */
import { Compile } from 'typebox/compile';
import type { Bus } from '../../../runtime/bus.js';
import { describeErrors } from '../../../protocol/define.js';
import { CortadoError } from '../../../protocol/errors.js';
import { AnalyticsReport, ReportFilter } from '../../../protocol/schemas/analytics.js';
import { Channel, WidgetType } from '../../../protocol/schemas/common.js';
import { BODY_TEXT, FeedbackBody } from '../../../protocol/schemas/http.js';
import { AnalyticsFeedback, AnalyticsReportGet } from '../../../protocol/subjects.js';
import type { Config } from '../../../config/schema.js';
import { askCtx } from './query.js';
import { callerCtx, type RouteAuth } from '../../caller.js';
import { readJson, sendJson } from '../reply.js';
import type { Router } from '../router.js';
import type { HttpRequest } from '../server.js';

const checkFilter = Compile(ReportFilter);
const checkFeedback = Compile(FeedbackBody);

/** The parts of the report served on their own, each as `{range, <part>}`. */
export const PARTS = ['per_day', 'steps', 'errors', 'models', 'models_per_day', 'channels', 'widgets', 'tables', 'users', 'slowest', 'disliked', 'totals'] as const;
export type Part = (typeof PARTS)[number];

const FILTER_KEYS = ['from', 'to', 'channel', 'widget', 'user', 'top'] as const;

/**
 * The report's filter from the query string: 400 naming the parameter that is wrong. The range
 * itself (`to` a bare date is the end of that day, from before to, its longest span) is the
 * analytics actor's to read (actors/analytics/handle.ts), and its refusal is a 400 as well.
 */
export function reportFilter(req: HttpRequest): ReportFilter {
  const q = req.query;
  for (const key of new Set(q.keys())) {
    if (!(FILTER_KEYS as readonly string[]).includes(key)) {
      // a name is shown back only when it is a plain one (it goes to logs and to the page)
      const shown = /^[A-Za-z0-9_.-]{1,64}$/.test(key) ? key : undefined;
      throw new CortadoError('VALIDATION_FAILED', `unknown query parameter${shown ? ` ${shown}` : ''} (use ${FILTER_KEYS.join(', ')})`, { errors: [{ path: `?${shown ?? ''}`, message: 'unknown parameter' }] });
    }
    if (q.getAll(key).length > 1) throw new CortadoError('VALIDATION_FAILED', `query parameter ${key} is repeated`, { errors: [{ path: `?${key}`, message: 'repeated' }] });
  }
  const f: Record<string, unknown> = {};
  for (const key of ['from', 'to', 'channel', 'widget', 'user'] as const) {
    const v = q.get(key)?.trim();
    if (v) f[key] = v;
  }
  for (const key of ['from', 'to'] as const) {
    const v = f[key];
    if (typeof v === 'string' && (v.length > 64 || Number.isNaN(Date.parse(v)))) {
      throw new CortadoError('VALIDATION_FAILED', `${key}: not a date (use ISO 8601, e.g. 2026-11-01 or 2026-11-01T00:00:00Z)`, { errors: [{ path: `?${key}`, message: 'not a date' }] });
    }
  }
  const top = q.get('top');
  if (top !== null) {
    if (!/^\d{1,3}$/.test(top.trim())) throw new CortadoError('VALIDATION_FAILED', 'top: an integer from 1 to 100', { errors: [{ path: '?top', message: 'not an integer' }] });
    f.top = Number(top.trim());
  }
  if (!checkFilter.Check(f)) {
    const first = describeErrors(checkFilter, f)[0];
    const field = first?.path.replace(/^\//, '') ?? '';
    const hint = field === 'channel' ? `one of ${Channel.enum.join(', ')}` : field === 'widget' ? `one of ${WidgetType.enum.join(', ')}` : field === 'top' ? 'an integer from 1 to 100' : (first?.message ?? 'not accepted');
    throw new CortadoError('VALIDATION_FAILED', `${field || 'query'}: ${hint}`, { errors: [{ path: `?${field}`, message: hint }] });
  }
  return f as ReportFilter;
}

export type AnalyticsAccess = Config['analytics']['access'];

/** What each analytics.access asks of the report's callers (edge/caller.ts). */
const ACCESS_AUTH = { admin: 'admin', signed_in: 'signed_in', public: 'none' } as const satisfies Record<AnalyticsAccess, RouteAuth>;

export function analyticsRoutes(router: Router, deps: { bus: Bus; config: Config }): void {
  const { bus, config } = deps;
  const access: AnalyticsAccess = config.analytics.access;
  const auth = ACCESS_AUTH[access];

  /** A report route under analytics.access: the caller first, then the query's filter, then the report. */
  const reportRoute = (path: string, render: (report: AnalyticsReport) => unknown): void => {
    router.get(path, { auth, summary: `Analytics: ${path === '/api/analytics/report' ? 'the whole report' : path.slice('/api/analytics/'.length)}`, query: ReportFilter, ...(path === '/api/analytics/report' ? { reply: AnalyticsReport } : {}) }, async (req, res, ctx) => {
      const caller = auth === 'none' ? undefined : await ctx.caller();
      const filter = reportFilter(req);
      const report = await bus.request(AnalyticsReportGet, filter, caller ? callerCtx(ctx.rid, caller) : { requestId: ctx.rid });
      sendJson(res, 200, render(report), ctx.rid);
    });
  };

  reportRoute('/api/analytics/report', (r) => r);
  for (const part of PARTS) reportRoute(`/api/analytics/${part}`, (r) => ({ range: r.range, [part]: r[part] }));

  router.post('/api/feedback', { auth: 'any', summary: 'Thumbs up or down on one of your answers', body: FeedbackBody }, async (req, res, ctx) => {
    const body = await readJson(req, checkFeedback, { text: BODY_TEXT.feedback });
    const caller = await ctx.caller({ widgetSession: body.session_id ?? undefined });
    // who rates: the caller's user, or whoever is signed in where the route resolved nobody (as for the question)
    const b = await askCtx(ctx, caller);
    const user = b.user;
    const comment = body.comment?.trim();
    // the rater's owner: the analytics actor keeps a rating only from whoever asked the question
    const reply = await bus.request(
      AnalyticsFeedback,
      { request_id: body.request_id, rating: body.rating, owner: caller.owner, ...(comment ? { comment } : {}), ...(user ? { user } : {}) },
      b,
    );
    sendJson(res, 200, reply, ctx.rid);
  });
}

/**
 * The warehouse operations console as JSON (docs/ops.md; the page is GET /ops), for the admin
 * panel's session:
 *
 * - GET /api/ops/status — targets, operations in force, whether model insights are on
 * - GET /api/ops/{operation}?window_days=&window_hours=&limit=&project_id=&insights= — one
 *   operation over every configured project (per-project errors inside the 200 answer)
 *
 * The console off or an operation outside allowed_operations: 403 FORBIDDEN, with the key to set.
 */
import type { Bus } from '../../../runtime/bus.js';
import { CortadoError } from '../../../protocol/errors.js';
import { OpsRunReply, OpsStatusReply, type OpsOperation, type OpsRunRequest } from '../../../protocol/schemas/ops.js';
import { OpsRun, OpsStatus } from '../../../protocol/subjects.js';
import { callerCtx } from '../../caller.js';
import { sendJson } from '../reply.js';
import type { Router } from '../router.js';
import type { HttpRequest } from '../server.js';

const OPERATIONS: readonly OpsOperation[] = ['get_expensive_queries', 'forecast_monthly_costs', 'find_public_datasets', 'check_slot_saturation'];
const KEYS = ['window_days', 'window_hours', 'limit', 'project_id', 'insights'] as const;
const RANGES: Readonly<Record<'window_days' | 'window_hours' | 'limit', [number, number]>> = { window_days: [1, 180], window_hours: [1, 336], limit: [1, 100] };

function invalid(key: string, message: string): CortadoError {
  return new CortadoError('VALIDATION_FAILED', `${key}: ${message}`, { errors: [{ path: `?${key}`, message }] });
}

/** The request from the path and query string: 400 naming the parameter that is wrong. */
export function opsRequest(operation: string, req: HttpRequest): OpsRunRequest {
  if (!(OPERATIONS as readonly string[]).includes(operation)) {
    const shown = /^[A-Za-z0-9_-]{1,64}$/.test(operation) ? ` ${operation}` : '';
    throw new CortadoError('NOT_FOUND', `no operation${shown} (use ${OPERATIONS.join(', ')})`);
  }
  const q = req.query;
  for (const key of new Set(q.keys())) {
    if (!(KEYS as readonly string[]).includes(key)) {
      const shown = /^[A-Za-z0-9_.-]{1,64}$/.test(key) ? ` ${key}` : '';
      throw new CortadoError('VALIDATION_FAILED', `unknown query parameter${shown} (use ${KEYS.join(', ')})`, { errors: [{ path: `?${shown.trim()}`, message: 'unknown parameter' }] });
    }
    if (q.getAll(key).length > 1) throw invalid(key, 'repeated');
  }
  const out: OpsRunRequest = { operation: operation as OpsRunRequest['operation'] };
  for (const key of ['window_days', 'window_hours', 'limit'] as const) {
    const v = q.get(key);
    if (v === null) continue;
    const [min, max] = RANGES[key];
    if (!/^\d{1,4}$/.test(v.trim()) || Number(v) < min || Number(v) > max) throw invalid(key, `an integer from ${min} to ${max}`);
    out[key] = Number(v);
  }
  const project = q.get('project_id');
  if (project !== null) {
    if (project.trim() === '' || project.length > 200) throw invalid('project_id', 'a project id or a target label, at most 200 characters');
    out.project_id = project.trim();
  }
  const insights = q.get('insights');
  if (insights !== null) {
    if (insights !== 'true' && insights !== 'false') throw invalid('insights', 'true or false');
    out.insights = insights === 'true';
  }
  return out;
}

export function opsRoutes(router: Router, deps: { bus: Bus }): void {
  const { bus } = deps;
  router.get('/api/ops/status', { auth: 'admin', summary: 'the operations console: targets and operations in force', reply: OpsStatusReply }, async (_req, res, ctx) => {
    const caller = await ctx.caller();
    sendJson(res, 200, await bus.request(OpsStatus, {}, callerCtx(ctx.rid, caller)), ctx.rid);
  });
  router.get('/api/ops/:operation', { auth: 'admin', summary: 'one operation over every configured project', reply: OpsRunReply }, async (req, res, ctx) => {
    const caller = await ctx.caller();
    const input = opsRequest(req.params.operation ?? '', req);
    sendJson(res, 200, await bus.request(OpsRun, input, callerCtx(ctx.rid, caller)), ctx.rid);
  });
}

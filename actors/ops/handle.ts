/**
 * The console's two requests: ops.status (what is configured) and ops.run (one operation over
 * every target, in parallel, each bounded by ops_agent.project_timeout_seconds; a target's
 * failure, a late one's TIMEOUT included, is its own `error`, the others answer as they are). Operations outside ops_agent.config.allowed_operations are refused (FORBIDDEN), as
 * is everything while ops_agent.enabled is false.
 */
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import { CortadoError, toCortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/log.js';
import { OpsRun } from '../../protocol/subjects.js';
import type { OpsOperation, OpsProjectResult, OpsRunReply, OpsRunRequest, OpsStatusReply } from '../../protocol/schemas/ops.js';
import type { Config } from '../../config/schema.js';
import { opsInsights } from './insights.js';
import type { OpsParams, OpsTargetRunner } from './target.js';

const DEFAULT_WINDOW_DAYS = 7;
const DEFAULT_WINDOW_HOURS = 24;
const DEFAULT_LIMIT = 10;

export interface OpsDeps {
  bus: Pick<Bus, 'request'>;
  config: Config;
  log?: Logger;
  targets: readonly OpsTargetRunner[];
  allowed: readonly OpsOperation[];
  /** the clock (tests pin it) */
  now?: () => number;
}

/** BigQuery's on-demand list price, USD per TiB, when no price is configured */
export const LIST_PRICE_PER_TIB = 6.25;

/** The console's price per TiB: ops_agent.price_per_tb_usd when set, else database.bigquery.price_per_tb_usd, else the list price. */
export function pricePerTib(config: Pick<Config, 'ops_agent' | 'database'>): number {
  return config.ops_agent.price_per_tb_usd ?? config.database.bigquery.price_per_tb_usd ?? LIST_PRICE_PER_TIB;
}

export function status(deps: OpsDeps): OpsStatusReply {
  const c = deps.config.ops_agent;
  const reason = !c.enabled
    ? 'the operations console is off (ops_agent.enabled: false)'
    : deps.targets.length === 0
      ? 'no target: list projects under ops_agent.config.projects (or configure a database)'
      : undefined;
  return {
    enabled: c.enabled,
    ...(reason ? { reason } : {}),
    targets: deps.targets.map((t) => t.target),
    allowed_operations: [...deps.allowed],
    ai_insights: c.ai_insights,
    price_per_tb_usd: pricePerTib(deps.config),
    saturation_threshold: c.saturation_threshold,
  };
}

export async function run(input: OpsRunRequest, deps: OpsDeps, ctx: Ctx): Promise<OpsRunReply> {
  const c = deps.config.ops_agent;
  if (!c.enabled) throw new CortadoError('FORBIDDEN', 'the operations console is off: set ops_agent.enabled to true');
  if (!deps.allowed.includes(input.operation)) {
    throw new CortadoError('FORBIDDEN', `${input.operation} is not in ops_agent.config.allowed_operations (allowed: ${deps.allowed.join(', ') || 'none'})`);
  }
  const targets = input.project_id === undefined ? deps.targets : deps.targets.filter((t) => t.target.project_id === input.project_id || t.target.label === input.project_id);
  if (targets.length === 0) {
    throw new CortadoError('NOT_FOUND', input.project_id !== undefined ? 'no configured project or database has that id' : 'no target: list projects under ops_agent.config.projects');
  }
  const now = (deps.now ?? Date.now)();
  const replyBy = Math.min(ctx.deadline ?? Infinity, Date.now() + OpsRun.timeoutMs) - 2_000;
  const params: OpsParams = {
    windowDays: input.window_days ?? DEFAULT_WINDOW_DAYS,
    windowHours: input.window_hours ?? DEFAULT_WINDOW_HOURS,
    limit: input.limit ?? DEFAULT_LIMIT,
    now,
    pricePerTib: pricePerTib(deps.config),
    threshold: c.saturation_threshold,
    deadline: Math.min(replyBy, Date.now() + c.project_timeout_seconds * 1000),
  };
  const projects = await Promise.all(targets.map((t) => runOne(t, input.operation, params, deps, ctx)));
  const insights = input.insights === false ? { status: 'off' as const, items: [] } : await opsInsights(input.operation, projects, deps, ctx);
  return { operation: input.operation, generated_at: new Date(now).toISOString(), projects, insights };
}

async function runOne(t: OpsTargetRunner, op: OpsOperation, p: OpsParams, deps: OpsDeps, ctx: Ctx): Promise<OpsProjectResult> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    const waitMs = Math.max(1, p.deadline - Date.now());
    timer = setTimeout(() => reject(new CortadoError('TIMEOUT', `${t.target.label} did not answer within ${Math.round(waitMs / 100) / 10} s (ops_agent.project_timeout_seconds)`)), waitMs);
  });
  const work = t.run(op, p);
  work.catch(() => undefined);
  const ms = (): number => Math.round(performance.now() - started);
  try {
    const result = await Promise.race([work, late]);
    return { target: t.target, result, duration_ms: ms() };
  } catch (err) {
    const e = toCortadoError(err);
    if (e.code === 'INTERNAL') deps.log?.error({ rid: ctx.requestId, target: t.target.label, op, err: (err as Error)?.message }, 'an ops operation failed unexpectedly');
    else deps.log?.info({ rid: ctx.requestId, target: t.target.label, op, code: e.code }, 'an ops target failed');
    return { target: t.target, error: { code: e.code, message: e.message }, duration_ms: ms() };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The model's findings on one operation (ops_agent.ai_insights): one call routed as task
 * `ops_insights` (model_routing.ops_insights), with the `ops_insights_generation` prompt, fed
 * aggregates only — totals, top users by cost, forecast figures, counts of public datasets,
 * saturated minutes; never a query text, a job id, a dataset name or a row.
 *
 * The reply is read strictly, by the parser the assistant's insights use too
 * (lib/model-io/insight-lines.ts): every non-blank line must be `TYPE: <word> | SEVERITY:
 * info|success|warning|critical | MESSAGE: <text>`; a TYPE other than cost, performance,
 * security or capacity is shown as `general`. One line that is not in the format drops them all
 * (status bad_reply); a model that cannot be reached gives status unavailable. Either way the operation's view stands. At most ai_insights_max are kept.
 *
 * The aggregates name users as the warehouse reports them (BigQuery's user_email): the block is
 * fenced as data, each name kept on its line and capped, and the system prompt says fenced text
 * is data (lib/model-io/prompting.ts).
 */
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import { toCortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/log.js';
import { LlmComplete, OpsRun } from '../../protocol/subjects.js';
import type { Insight } from '../../protocol/schemas/insights.js';
import type { OpsOperation, OpsProjectResult, OpsRunReply } from '../../protocol/schemas/ops.js';
import type { Config } from '../../config/schema.js';
import { promptText, splitPrompt } from '../../config/prompts.js';
import { fence, inline, withDataRule } from '../lib/model-io/prompting.js';
import { knownType, parseInsightLines } from '../lib/model-io/insight-lines.js';
import { round2 } from './compute.js';

export const MESSAGE_MAX_CHARS = 400;
/** Users named in the summary, at most. */
const TOP_USERS = 5;
/** Characters of a user's name shown, at most. */
const USER_CHARS = 120;
const REPLY_MARGIN_MS = 5_000;

/** The types the console knows (the prompt asks for these); another word is shown as `general`. */
const TYPES: ReadonlySet<string> = new Set(['cost', 'performance', 'security', 'capacity']);

export type ParsedOpsInsights = { ok: true; insights: Insight[] } | { ok: false; reason: string };

/** The model's reply, read by the one parser of the format (lib/model-io/insight-lines.ts). */
export function parseOpsInsights(raw: string): ParsedOpsInsights {
  const parsed = parseInsightLines(raw, MESSAGE_MAX_CHARS);
  if (!parsed.ok) return parsed;
  return { ok: true, insights: parsed.lines.map((l) => ({ type: knownType(l.type, TYPES), severity: l.severity, message: l.message, source: 'llm' })) };
}

/** What the model sees: per target, the operation's aggregates (or its error code), one line each. */
export function summarizeOps(projects: readonly OpsProjectResult[]): string {
  const lines: string[] = [];
  for (const p of projects) {
    const name = p.target.label;
    if (p.error || !p.result) {
      lines.push(`- ${name}: failed (${p.error?.code ?? 'no result'})`);
      continue;
    }
    const r = p.result;
    switch (r.kind) {
      case 'get_expensive_queries': {
        const jobs = new Map<string, { user: string; cost: number; slot: number; bytes: number }>();
        for (const q of [...r.by_bytes, ...r.by_slot]) jobs.set(q.job_id, { user: q.user, cost: q.cost_usd ?? 0, slot: q.slot_ms, bytes: q.bytes_billed });
        const users = new Map<string, number>();
        for (const j of jobs.values()) users.set(j.user, (users.get(j.user) ?? 0) + j.cost);
        const top = [...users.entries()].sort((a, b) => b[1] - a[1]).slice(0, TOP_USERS);
        const all = [...jobs.values()];
        const cost = all.reduce((a, j) => a + j.cost, 0);
        const bytes = all.reduce((a, j) => a + j.bytes, 0);
        const slotHours = all.reduce((a, j) => a + j.slot, 0) / 3_600_000;
        const max = all.reduce((a, j) => Math.max(a, j.cost), 0);
        const costed = p.target.engine === 'bigquery';
        lines.push(`- ${name} (${p.target.engine}, last ${r.window_days} days): ${all.length} top queries (by bytes and by slot time; not every query); ${costed ? `cost of these top queries $${round2(cost)}, most expensive single query $${round2(max)}, ` : ''}${round2(bytes / 2 ** 30)} GiB, ${round2(slotHours)} slot-hours${costed ? `; top users by cost: ${top.map(([u, c]) => `${inline(u, USER_CHARS)} $${round2(c)}`).join(', ') || 'none'}` : ''}`);
        break;
      }
      case 'forecast_monthly_costs':
        lines.push(`- ${name}: month ${r.month}, month to date $${r.month_to_date_usd}, forecast $${r.forecast_usd} (80 % interval $${r.low_usd}–$${r.high_usd}), ${r.days_observed} of ${r.days_in_month} days observed`);
        break;
      case 'find_public_datasets': {
        const users = r.datasets.filter((d) => d.entries.some((e) => e.member === 'allUsers')).length;
        const auth = r.datasets.filter((d) => d.entries.some((e) => e.member === 'allAuthenticatedUsers')).length;
        lines.push(`- ${name}: ${r.checked} datasets checked, ${r.datasets.length} public (${users} readable by allUsers, ${auth} by allAuthenticatedUsers)`);
        break;
      }
      case 'check_slot_saturation': {
        const shares = r.points.map((x) => x.share).filter((x): x is number => x !== null);
        const peak = shares.length ? Math.max(...shares) : null;
        const mean = shares.length ? shares.reduce((a, b) => a + b, 0) / shares.length : null;
        const minutes = r.saturated_periods.reduce((a, s) => a + s.minutes, 0);
        const peakSlots = r.points.reduce((a, x) => Math.max(a, x.avg_slots), 0);
        lines.push(`- ${name} (last ${r.window_hours} h): capacity ${r.capacity ?? 'unknown (on-demand)'}, peak ${round2(peakSlots)} slots${peak !== null ? `, peak share ${round2(peak * 100)} %, mean share ${round2((mean ?? 0) * 100)} %` : ''}, ${r.saturated_periods.length} saturated periods (${round2(minutes)} minutes at or above ${round2(r.threshold_share * 100)} %)`);
        break;
      }
    }
  }
  return lines.join('\n');
}

export interface OpsInsightsDeps {
  bus: Pick<Bus, 'request'>;
  config: Config;
  log?: Logger;
}

/** The prompt: the template's part before the operation as the system prompt (with the rule on fenced text), the aggregates fenced. */
export function buildOpsPrompt(op: OpsOperation, projects: readonly OpsProjectResult[], config: Config): { system: string; user: string } {
  const { system, user } = splitPrompt(promptText(config, 'ops_insights_generation'), {
    question: op,
    result_summary: fence('aggregates', summarizeOps(projects)),
    max_insights: String(config.ops_agent.ai_insights_max),
  });
  return { system: withDataRule(system), user };
}

/** Ask the model; never throws. */
export async function opsInsights(op: OpsOperation, projects: readonly OpsProjectResult[], deps: OpsInsightsDeps, ctx: Ctx): Promise<OpsRunReply['insights']> {
  const max = deps.config.ops_agent.ai_insights_max;
  if (!deps.config.ops_agent.ai_insights || max <= 0) return { status: 'off', items: [] };
  // the model reads what the targets showed, never an error: a target that failed (or cannot
  // run this operation) says so in its own box, and with nothing shown there is nothing to ask
  const shown = projects.filter((p) => p.result && !p.error);
  if (shown.length === 0) return { status: 'off', items: [] };
  const { system, user } = buildOpsPrompt(op, shown, deps.config);
  const budget = Date.now() + OpsRun.timeoutMs - REPLY_MARGIN_MS;
  const callCtx: Ctx = { ...ctx, deadline: Math.min(budget, ctx.deadline !== undefined ? ctx.deadline - REPLY_MARGIN_MS : budget) };
  let reply: string;
  try {
    const r = await deps.bus.request(LlmComplete, { task: 'ops_insights', system, messages: [{ role: 'user', content: user }], max_tokens: 200 + 150 * max }, callCtx);
    reply = r.text;
  } catch (err) {
    const e = toCortadoError(err);
    deps.log?.warn({ rid: ctx.requestId, code: e.code, reason: e.message }, 'ops insights unavailable');
    return { status: 'unavailable', items: [] };
  }
  const parsed = parseOpsInsights(reply);
  if (!parsed.ok) {
    deps.log?.warn({ rid: ctx.requestId, reason: parsed.reason }, 'ops insights dropped: the reply does not follow the format');
    return { status: 'bad_reply', items: [] };
  }
  return { status: 'ok', items: parsed.insights.slice(0, max) };
}

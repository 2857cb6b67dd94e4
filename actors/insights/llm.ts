/**
 * The model's insights (insights.mode `llm_only` and `hybrid`): one model call, routed as task
 * `insights` (model_routing.insights), with the `insights_generation` prompt, the question, the
 * SQL and a bounded summary of the result — a profile of each column, the statistical findings
 * and at most SAMPLE_ROWS rows with every value cut to SAMPLE_CELL_CHARS. The rows reaching
 * this actor are masked already (the assistant masks before anything else sees them); masked
 * columns are named to the model and never profiled. The question, the SQL, the summary and the
 * columns are fenced as data, and the system prompt says so (lib/model-io/prompting.ts): values, column
 * names and the statistical findings (which quote labels) come from the database.
 *
 * The reply is read strictly, by the parser the operations console uses too
 * (lib/model-io/insight-lines.ts): every non-blank line must be `TYPE: <word> | SEVERITY:
 * info|success|warning|critical | MESSAGE: <text>`; a TYPE the answer view does not know is
 * shown as `general`. One line that is not in the format drops all of the model's insights (logged with the reason, at warn), and so does a model
 * that cannot be reached: the statistical insights stand in, and the answer is never lost.
 */
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import { toCortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/log.js';
import { InsightsGenerate, LlmComplete } from '../../protocol/subjects.js';
import { ZERO_USAGE, type Cell, type Usage } from '../../protocol/schemas/common.js';
import type { Insight, InsightsGenerateRequest, ModelInsightsStatus } from '../../protocol/schemas/insights.js';
import type { LlmMessage } from '../../protocol/schemas/llm.js';
import type { Config } from '../../config/schema.js';
import { promptText, splitPrompt } from '../../config/prompts.js';
import { fence, inline, withDataRule } from '../lib/model-io/prompting.js';
import { GENERAL_TYPE, knownType, parseInsightLines } from '../lib/model-io/insight-lines.js';

/** Rows of the result shown to the model, at most. */
export const SAMPLE_ROWS = 10;
/** Characters of one value shown to the model (profiles and rows), at most. */
export const SAMPLE_CELL_CHARS = 60;
/** Columns described to the model, at most (a wide result is summarised by its first ones). */
export const SUMMARY_COLUMNS = 30;
/** Statistical findings passed on, at most. */
export const SUMMARY_FINDINGS = 8;
/** Characters of one insight's message the model may write. */
export const MESSAGE_MAX_CHARS = 500;
/** Time kept free for the insights reply after the model's deadline. */
const REPLY_MARGIN_MS = 5_000;

export interface ModelInsightsDeps {
  bus: Pick<Bus, 'request'>;
  config: Config;
  log?: Logger;
}

export interface ModelInsights {
  insights: Insight[];
  usage: Usage;
  status: ModelInsightsStatus;
}

type InsightsConfig = Config['insights'];

// ---------------------------------------------------------------------------------------------
// Which insights, in which order

/** How many insights the model is asked for: all of max_insights, but in `hybrid` one place stays for a statistical one. */
export function modelRoom(cfg: InsightsConfig, statistical: readonly Insight[]): number {
  if (cfg.mode === 'hybrid' && statistical.length > 0 && cfg.max_insights > 1) return cfg.max_insights - 1;
  return cfg.max_insights;
}

/**
 * The list shown: the model's first, then the statistical ones, at most `max_insights`.
 * `llm_only` adds the statistical ones when `include_statistical` is set, and falls back to
 * them when the model gave none (failed or dropped); `hybrid` always has both.
 */
export function combineInsights(cfg: InsightsConfig, model: readonly Insight[], statistical: readonly Insight[]): Insight[] {
  if (!cfg.enabled || cfg.max_insights <= 0) return [];
  if (cfg.mode === 'statistical_only' || model.length === 0) return statistical.slice(0, cfg.max_insights);
  const mine = model.slice(0, modelRoom(cfg, statistical));
  const withStats = cfg.mode === 'hybrid' || cfg.include_statistical;
  return (withStats ? [...mine, ...statistical] : mine).slice(0, cfg.max_insights);
}

// ---------------------------------------------------------------------------------------------
// The call

/** Ask the model; never throws: a failure or a bad reply gives no insights and says why. */
export async function modelInsights(
  input: InsightsGenerateRequest,
  statistical: readonly Insight[],
  deps: ModelInsightsDeps,
  ctx: Ctx,
): Promise<ModelInsights> {
  const cfg = deps.config.insights;
  const want = modelRoom(cfg, statistical);
  const { system, messages } = buildInsightsPrompt(input, statistical, deps.config, want);
  // the model must answer in time for this actor to answer its own request
  const budget = Date.now() + InsightsGenerate.timeoutMs - REPLY_MARGIN_MS;
  const callCtx: Ctx = { ...ctx, deadline: Math.min(budget, ctx.deadline !== undefined ? ctx.deadline - REPLY_MARGIN_MS : budget) };
  let text: string;
  let usage: Usage;
  try {
    const reply = await deps.bus.request(LlmComplete, { task: 'insights', system, messages, max_tokens: 200 + 150 * want }, callCtx);
    text = reply.text;
    usage = reply.usage;
  } catch (err) {
    const e = toCortadoError(err);
    deps.log?.warn({ rid: ctx.requestId, code: e.code, reason: e.message }, 'model insights unavailable: statistical insights only');
    return { insights: [], usage: { ...ZERO_USAGE }, status: 'unavailable' };
  }
  const parsed = parseInsightsReply(text);
  if (!parsed.ok) {
    deps.log?.warn({ rid: ctx.requestId, reason: parsed.reason }, 'model insights dropped: the reply does not follow the format');
    return { insights: [], usage, status: 'bad_reply' };
  }
  return { insights: parsed.insights.slice(0, want), usage, status: 'ok' };
}

/** The prompt: the template's stable part as the system prompt, the question, SQL and summary as the user message. */
export function buildInsightsPrompt(
  input: InsightsGenerateRequest,
  statistical: readonly Insight[],
  config: Config,
  want: number,
): { system: string; messages: LlmMessage[] } {
  const columns = input.columns.slice(0, SUMMARY_COLUMNS).map((c) => `${inline(c.name)} (${inline(c.type)})`).join(', ');
  const { system, user } = splitPrompt(promptText(config, 'insights_generation'), {
    question: fence('question', input.question),
    sql: fence('sql', input.sql),
    result_summary: fence('result', summarizeResult(input, statistical)),
    max_insights: String(want),
    schema_info: `Result columns: ${fence('result columns', columns)}`,
  });
  return { system: withDataRule(system), messages: [{ role: 'user', content: user }] };
}

// ---------------------------------------------------------------------------------------------
// The summary of a result

/**
 * What the model sees of a result: the row count, each column's profile (type, values, nulls,
 * distinct values; min/max/mean for numbers), the statistical findings, and the first
 * SAMPLE_ROWS rows with each value cut to SAMPLE_CELL_CHARS. Masked columns are named, not
 * profiled.
 */
export function summarizeResult(input: Pick<InsightsGenerateRequest, 'columns' | 'rows' | 'row_count' | 'truncated' | 'masked_columns'>, statistical: readonly Insight[]): string {
  const masked = new Set(input.masked_columns ?? []);
  const cols = input.columns.slice(0, SUMMARY_COLUMNS);
  const n = Math.max(input.row_count, input.rows.length);
  const lines: string[] = [];
  lines.push(`Rows: ${n}${input.truncated ? ' (cut at the row limit: there are more)' : ''}.`);
  if (input.columns.length > cols.length) lines.push(`Columns: ${input.columns.length}; the first ${cols.length} are described.`);
  lines.push('Columns:');
  cols.forEach((c, i) => lines.push(`- ${profileColumn(c.name, c.type, input.rows.map((r) => r[i]), masked.has(c.name))}`));
  const findings = statistical.slice(0, SUMMARY_FINDINGS);
  if (findings.length) {
    lines.push('Statistical findings:');
    for (const f of findings) lines.push(`- ${f.type} (${f.severity}): ${inline(f.message)}`);
  }
  const sample = input.rows.slice(0, SAMPLE_ROWS);
  if (sample.length) {
    lines.push(sample.length < input.rows.length || input.truncated ? `First ${sample.length} rows:` : 'Rows:');
    lines.push(cols.map((c) => inline(c.name).replace(/\|/g, '/')).join(' | '));
    for (const row of sample) lines.push(cols.map((_, i) => cellText(row[i])).join(' | '));
  }
  return lines.join('\n');
}

function profileColumn(name: string, type: string, cells: readonly (Cell | undefined)[], masked: boolean): string {
  const present = cells.filter((c): c is Exclude<Cell, null> => c !== null && c !== undefined);
  const nulls = cells.length - present.length;
  const head = `${inline(name)} (${inline(type)}): ${present.length} values${nulls ? `, ${nulls} empty` : ''}`;
  if (masked) return `${head}; masked by policy (values hidden)`;
  const distinct = new Set(present.map((c) => String(c))).size;
  const nums = present.map(numberOf).filter((x): x is number => x !== undefined);
  if (present.length > 0 && nums.length === present.length) {
    // a loop, not Math.min(...nums): a spread of a large result overflows the call stack
    let min = Infinity;
    let max = -Infinity;
    let sum = 0;
    for (const x of nums) {
      if (x < min) min = x;
      if (x > max) max = x;
      sum += x;
    }
    const mean = sum / nums.length;
    return `${head}, ${distinct} distinct, min ${num(min)}, max ${num(max)}, mean ${num(mean)}`;
  }
  return `${head}, ${distinct} distinct`;
}

function numberOf(cell: Cell): number | undefined {
  if (typeof cell === 'number') return Number.isFinite(cell) ? cell : undefined;
  if (typeof cell !== 'string' || !/^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/.test(cell)) return undefined;
  const x = Number(cell);
  return Number.isFinite(x) ? x : undefined;
}

function num(x: number): string {
  return Number.isInteger(x) ? String(x) : String(Math.round(x * 100) / 100);
}

/** One value as the model sees it: on one line, no column separator, at most SAMPLE_CELL_CHARS characters. */
function cellText(cell: Cell | undefined): string {
  if (cell === null || cell === undefined) return '(empty)';
  return inline(String(cell).replace(/\|/g, ' '), SAMPLE_CELL_CHARS);
}

// ---------------------------------------------------------------------------------------------
// The reply

const ICONS: Readonly<Record<string, string>> = { trend: '📈', leader: '🏆', outlier: '⚠️', risk: '🚨', summary: '📋', [GENERAL_TYPE]: '💡' };
/** The types the answer view knows (the prompt asks for these); another word is shown as `general`. */
const TYPES: ReadonlySet<string> = new Set(Object.keys(ICONS));

export type ParsedInsights = { ok: true; insights: Insight[] } | { ok: false; reason: string };

/** The model's reply, read by the one parser of the format (lib/model-io/insight-lines.ts). */
export function parseInsightsReply(raw: string): ParsedInsights {
  const parsed = parseInsightLines(raw, MESSAGE_MAX_CHARS);
  if (!parsed.ok) return parsed;
  return {
    ok: true,
    insights: parsed.lines.map((l) => {
      const type = knownType(l.type, TYPES);
      return { type, severity: l.severity, message: l.message, icon: ICONS[type] ?? '💡', source: 'llm' };
    }),
  };
}

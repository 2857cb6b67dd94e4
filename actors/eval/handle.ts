/**
 * The accuracy harness (`eval.run`): golden questions asked through the live pipeline (`ask`,
 * with the configured model), the expected SQL run through the same guarded executor and mask
 * rules (`sql.execute` masks before it replies, so a right answer over masked columns scores
 * right and no raw value reaches the report), and the two result sets compared
 * (order-insensitive unless the question is `ordered`). Per question and in total: execution
 * accuracy, schema-linking recall (expected tables among the tables the question's prompt held),
 * tokens and latency. With candidate prompts, the set again with them, and the difference.
 *
 * Time: a run stops asking at its deadline (the request's, or EVAL_RUN_MS from its start) less
 * the moment its reply needs to travel; the questions left are reported as not asked, so the
 * requester gets what was measured instead of a bare TIMEOUT after minutes of work.
 */
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import { CortadoError, toCortadoError } from '../../protocol/errors.js';
import { Ask, SqlExecute } from '../../protocol/subjects.js';
import type { Cell, PromptOverrides } from '../../protocol/schemas/common.js';
import { EVAL_RUN_MS, MAX_GOLDEN, type EvalReport, type EvalRunReply, type EvalRunRequest, type EvalTotals, type GoldenQuestion, type QuestionResult, type Verdict } from '../../protocol/schemas/eval.js';
import { PROMPT_KEYS } from '../../config/prompts.js';
import { goldenOf } from './golden.js';

export interface EvalDeps {
  bus: Pick<Bus, 'request' | 'progress'>;
}

/** kept back from the deadline: the report has to reach the requester before it gives up */
export const REPLY_MARGIN_MS = 2_000;

/** A cell as compared: numbers by value (the database's "150.00" equals 150), text as it is. */
function norm(cell: Cell | undefined): string {
  if (cell === null || cell === undefined) return '\u0000null';
  if (typeof cell === 'boolean') return cell ? '\u0000true' : '\u0000false';
  if (typeof cell === 'number' || (cell.trim() !== '' && !Number.isNaN(Number(cell)))) {
    const n = Number(cell);
    return Number.isFinite(n) ? `\u0000n${Number(n.toPrecision(12))}` : String(cell);
  }
  return cell;
}

/** Two result sets hold the same rows (column by column, names aside), in order or as multisets. */
export function sameRows(actual: ReadonlyArray<readonly Cell[]>, expected: ReadonlyArray<readonly Cell[]>, ordered: boolean): { same: boolean; reason?: string } {
  if (actual.length !== expected.length) return { same: false, reason: `${actual.length} rows, expected ${expected.length}` };
  const key = (row: readonly Cell[]): string => JSON.stringify(row.map(norm));
  const a = actual.map(key);
  const e = expected.map(key);
  if (actual[0] && expected[0] && actual[0].length !== expected[0].length) return { same: false, reason: `${actual[0].length} columns, expected ${expected[0].length}` };
  if (!ordered) {
    a.sort();
    e.sort();
  }
  const at = a.findIndex((k, i) => k !== e[i]);
  return at < 0 ? { same: true } : { same: false, reason: ordered ? `row ${at + 1} differs` : 'the rows differ' };
}

function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
}

function round(n: number, digits = 4): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

export function totalsOf(results: readonly QuestionResult[]): EvalTotals {
  const correct = results.filter((r) => r.correct).length;
  const recalls = results.flatMap((r) => (r.recall === undefined ? [] : [r.recall]));
  const latencies = results.map((r) => r.latency_ms);
  return {
    questions: results.length,
    correct,
    accuracy: results.length ? round(correct / results.length) : 0,
    ...(recalls.length ? { recall: round(recalls.reduce((s, x) => s + x, 0) / recalls.length) } : {}),
    input_tokens: results.reduce((s, r) => s + r.input_tokens, 0),
    output_tokens: results.reduce((s, r) => s + r.output_tokens, 0),
    latency_ms_mean: round(latencies.reduce((s, x) => s + x, 0) / Math.max(1, latencies.length), 1),
    latency_ms_p95: round(percentile(latencies, 0.95), 1),
  };
}

/** Expected tables found among the prompt's tables (names compared case-insensitively, `public.x` as `x`). */
function recallOf(expected: readonly string[] | undefined, got: readonly string[]): number | undefined {
  if (!expected?.length) return undefined;
  const bare = (n: string): string => n.toLowerCase().replace(/["`]/g, '');
  const last = (n: string): string => n.split('.').at(-1)!;
  const have = new Set(got.flatMap((n) => [bare(n), last(bare(n))]));
  const found = expected.filter((t) => have.has(bare(t)) || have.has(last(bare(t)))).length;
  return round(found / expected.length);
}

/** The request's candidate prompts, when it has any; an unknown key is refused before anything is asked. */
function candidatePrompts(prompts: PromptOverrides | undefined): PromptOverrides | undefined {
  if (!prompts || Object.keys(prompts).length === 0) return undefined;
  for (const key of Object.keys(prompts)) {
    if (!(PROMPT_KEYS as readonly string[]).includes(key)) throw new CortadoError('VALIDATION_FAILED', `there is no prompt "${key}" (one of ${PROMPT_KEYS.join(', ')})`);
  }
  return prompts;
}

/** `eval.run`: the golden set as configured and, with candidate prompts, again with them. */
export async function runEval(input: EvalRunRequest, deps: EvalDeps, ctx: Ctx): Promise<EvalRunReply> {
  const golden = goldenOf(input.golden);
  if (input.max_questions !== undefined && golden.length > input.max_questions) {
    throw new CortadoError('VALIDATION_FAILED', `the golden set has ${golden.length} questions; this run takes at most ${input.max_questions} (cortado eval takes up to ${MAX_GOLDEN})`, {
      limit: 'max_questions', max: input.max_questions,
    });
  }
  const prompts = candidatePrompts(input.prompts);
  const started = Date.now();
  const own = started + EVAL_RUN_MS;
  const run: Run = {
    until: Math.min(ctx.deadline ?? own, own) - REPLY_MARGIN_MS,
    why: ctx.deadline !== undefined && ctx.deadline < own ? 'the request\'s deadline' : `the longest a run may take (${EVAL_RUN_MS / 60_000} minutes)`,
    done: 0,
    of: golden.length * (prompts ? 2 : 1),
  };
  const report = await pass(golden, deps, ctx, run, `${ctx.requestId}-q`);
  if (!prompts) return { report };
  const candidate = await pass(golden, deps, ctx, run, `${ctx.requestId}-candidate-q`, prompts);
  const d = (x: number, y: number): number => Math.round((y - x) * 10_000) / 10_000;
  const [b, a] = [report.totals, candidate.totals];
  return {
    report,
    candidate,
    difference: {
      accuracy: d(b.accuracy, a.accuracy),
      correct: a.correct - b.correct,
      ...(b.recall !== undefined && a.recall !== undefined ? { recall: d(b.recall, a.recall) } : {}),
      input_tokens: a.input_tokens - b.input_tokens,
      output_tokens: a.output_tokens - b.output_tokens,
      latency_ms_mean: d(b.latency_ms_mean, a.latency_ms_mean),
    },
  };
}

interface Run {
  /** epoch ms: no question is started after it, and none is waited for past it */
  until: number;
  /** what set `until`, for the questions it leaves unasked */
  why: string;
  /** questions judged so far, over both passes (progress) */
  done: number;
  of: number;
}

/** One pass over the set, one question after another (a question's own timing stays its own). */
async function pass(golden: readonly GoldenQuestion[], deps: EvalDeps, ctx: Ctx, run: Run, stem: string, prompts?: PromptOverrides): Promise<EvalReport> {
  const { bus } = deps;
  const results: QuestionResult[] = [];
  for (const [i, g] of golden.entries()) {
    const id = g.id ?? String(i + 1);
    const qctx: Ctx = { ...ctx, requestId: `${stem}${i + 1}`, deadline: run.until };
    const r = Date.now() >= run.until
      ? { id, question: g.question, verdict: 'error' as const, correct: false, reason: `TIMEOUT: not asked, ${run.why} was reached`, tables: [], input_tokens: 0, output_tokens: 0, latency_ms: 0 }
      : await one(g, id, bus, qctx, prompts);
    results.push(r);
    run.done++;
    bus.progress(ctx.requestId, { step: 'evaluated', seq: run.done - 1, data: { index: run.done, of: run.of, id, verdict: r.verdict } });
  }
  return { results, totals: totalsOf(results) };
}

async function one(g: GoldenQuestion, id: string, bus: EvalDeps['bus'], ctx: Ctx, prompts: PromptOverrides | undefined): Promise<QuestionResult> {
  const started = performance.now();
  try {
    const reply = await bus.request(Ask, { question: g.question, channel: 'api', widget: 'eval', ...(prompts ? { prompts } : {}) }, ctx);
    const latency = performance.now() - started;
    const base = {
      id, question: g.question, tables: reply.tables ?? [],
      input_tokens: reply.usage.input_tokens, output_tokens: reply.usage.output_tokens,
      latency_ms: round(reply.timing_ms.total ?? latency, 1),
      ...(reply.sql ? { sql: reply.sql } : {}),
    };
    const recall = recallOf(g.expected_tables, base.tables);
    if (recall !== undefined) Object.assign(base, { recall });
    if (reply.intent !== 'sql' || !reply.rows) {
      const verdict: Verdict = reply.intent === 'clarify' ? 'clarify' : reply.intent === 'chat' ? 'chat' : 'wrong';
      return { ...base, verdict, correct: false, reason: verdict === 'clarify' ? `asked: ${reply.message ?? ''}` : verdict === 'chat' ? 'answered with chat' : 'no rows' };
    }
    // the expected SQL's rows, masked as the answer's are (sql.execute masks before it replies)
    const expected = g.expected_sql !== undefined
      ? (await bus.request(SqlExecute, { sql: g.expected_sql }, { ...ctx, requestId: `${ctx.requestId}-expected` })).rows
      : (g.expected_rows ?? []);
    const cmp = sameRows(reply.rows, expected, g.ordered === true);
    return { ...base, verdict: cmp.same ? 'correct' : 'wrong', correct: cmp.same, ...(cmp.reason ? { reason: cmp.reason } : {}) };
  } catch (err) {
    const e = toCortadoError(err);
    return { id, question: g.question, verdict: 'error', correct: false, reason: `${e.code}: ${e.message}`, tables: [], input_tokens: 0, output_tokens: 0, latency_ms: round(performance.now() - started, 1) };
  }
}

/**
 * The accuracy harness (`cortado eval FILE`, POST /admin/eval): golden questions — a question,
 * the SQL that answers it or its rows, optionally the tables it needs — asked through the live
 * pipeline (`ask` on the bus, with the configured model), the expected SQL run through the same
 * guarded executor and mask rules, and the two result sets compared (order-insensitive unless
 * the question is `ordered`). Per question and in total: execution accuracy, schema-linking
 * recall (expected tables among the tables the question's prompt held), tokens and latency.
 *
 * Only the bus: nothing here knows an actor. Shared by the CLI and the admin route.
 */
import Type, { type Static } from 'typebox';
import { Compile } from 'typebox/compile';
import YAML from 'yaml';
import type { Bus, Ctx } from '../../runtime/bus.js';
import { CortadoError, toCortadoError } from '../../protocol/errors.js';
import { Ask, SqlExecute } from '../../protocol/subjects.js';
import type { Cell, PromptOverrides } from '../../protocol/schemas/common.js';
import { ASK_LIMITS } from '../../protocol/schemas/ask.js';

export const GoldenQuestion = Type.Object({
  /** a name for the report; the question's position when absent */
  id: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  question: Type.String({ minLength: 1, maxLength: ASK_LIMITS.question }),
  expected_sql: Type.Optional(Type.String({ minLength: 1, maxLength: 100_000 })),
  expected_rows: Type.Optional(Type.Array(Type.Array(Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()])), { maxItems: 100_000 })),
  /** tables the answer needs, as the catalog names them: schema-linking recall */
  expected_tables: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: ASK_LIMITS.table }), { maxItems: ASK_LIMITS.tables })),
  /** the rows' order matters (the question orders them) */
  ordered: Type.Optional(Type.Boolean()),
}, { additionalProperties: false });
export type GoldenQuestion = Static<typeof GoldenQuestion>;

/** The most questions one golden set holds. */
export const MAX_GOLDEN = 1_000;
const GoldenList = Type.Array(GoldenQuestion, { minItems: 1, maxItems: MAX_GOLDEN });
const checkList = Compile(GoldenList);

/** A golden set as a value: a list of questions, or `{questions: [...]}`. Throws VALIDATION_FAILED naming the question at fault. */
export function goldenFrom(value: unknown, name = 'the golden set'): GoldenQuestion[] {
  const list = value !== null && typeof value === 'object' && !Array.isArray(value) && 'questions' in value ? (value as { questions: unknown }).questions : value;
  if (!checkList.Check(list)) {
    const first = [...checkList.Errors(list)][0];
    const where = first?.instancePath ? ` at ${first.instancePath}` : '';
    throw new CortadoError('VALIDATION_FAILED', `${name} is not a list of golden questions ({question, expected_sql or expected_rows, expected_tables?, ordered?})${where}: ${first?.message ?? 'invalid'}`);
  }
  list.forEach((q, i) => {
    if (q.expected_sql === undefined && q.expected_rows === undefined) {
      throw new CortadoError('VALIDATION_FAILED', `${name}: question ${q.id ?? i + 1} has neither expected_sql nor expected_rows`);
    }
  });
  return list;
}

/** A golden set as text, YAML or JSON (JSON is YAML). */
export function parseGolden(text: string, name = 'the golden set'): GoldenQuestion[] {
  let value: unknown;
  try {
    value = YAML.parse(text);
  } catch (err) {
    throw new CortadoError('VALIDATION_FAILED', `${name} is neither YAML nor JSON: ${(err as Error).message.split('\n')[0]}`);
  }
  return goldenFrom(value, name);
}

export type Verdict = 'correct' | 'wrong' | 'error' | 'clarify' | 'chat';

export interface QuestionResult {
  id: string;
  question: string;
  verdict: Verdict;
  correct: boolean;
  /** the SQL the pipeline wrote */
  sql?: string;
  /** why it is not correct, in a few words */
  reason?: string;
  /** the tables of the question's prompt */
  tables: string[];
  /** expected tables found among them / expected tables; absent without expected_tables */
  recall?: number;
  input_tokens: number;
  output_tokens: number;
  latency_ms: number;
}

export interface EvalTotals {
  questions: number;
  correct: number;
  /** correct / questions, 0..1 */
  accuracy: number;
  /** mean recall over the questions with expected_tables; absent when none has them */
  recall?: number;
  input_tokens: number;
  output_tokens: number;
  latency_ms_mean: number;
  latency_ms_p95: number;
}

export interface EvalReport {
  results: QuestionResult[];
  totals: EvalTotals;
}

export interface EvalOptions {
  /** candidate prompts for this run only (never saved) */
  prompts?: PromptOverrides;
  /** the request id stem of the run; each question adds its number */
  requestId: string;
  user?: string;
  /** called after each question (progress for people) */
  onResult?: (r: QuestionResult, index: number) => void;
}

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

/** Run a golden set through the live pipeline, one question after another. */
export async function runEval(bus: Pick<Bus, 'request'>, golden: readonly GoldenQuestion[], opts: EvalOptions): Promise<EvalReport> {
  const ctxOf = (suffix: string): Ctx => ({ requestId: `${opts.requestId}-${suffix}`, ...(opts.user ? { user: opts.user } : {}) });
  const results: QuestionResult[] = [];
  for (const [i, g] of golden.entries()) {
    const id = g.id ?? String(i + 1);
    const started = performance.now();
    let r: QuestionResult;
    try {
      const reply = await bus.request(Ask, {
        question: g.question, channel: 'api', widget: 'eval', ...(opts.prompts ? { prompts: opts.prompts } : {}),
      }, ctxOf(`q${i + 1}`));
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
        r = { ...base, verdict, correct: false, reason: verdict === 'clarify' ? `asked: ${reply.message ?? ''}` : verdict === 'chat' ? 'answered with chat' : 'no rows' };
      } else {
        const expected = g.expected_sql !== undefined ? await expectedRows(g.expected_sql) : (g.expected_rows ?? []);
        const cmp = sameRows(reply.rows, expected, g.ordered === true);
        r = { ...base, verdict: cmp.same ? 'correct' : 'wrong', correct: cmp.same, ...(cmp.reason ? { reason: cmp.reason } : {}) };
      }
    } catch (err) {
      const e = toCortadoError(err);
      r = { id, question: g.question, verdict: 'error', correct: false, reason: `${e.code}: ${e.message}`, tables: [], input_tokens: 0, output_tokens: 0, latency_ms: round(performance.now() - started, 1) };
    }
    results.push(r);
    opts.onResult?.(r, i);
  }
  return { results, totals: totalsOf(results) };

  /** The expected SQL's rows, masked as the pipeline's are (sql.execute masks before it replies). */
  async function expectedRows(sql: string): Promise<Cell[][]> {
    return (await bus.request(SqlExecute, { sql }, ctxOf('expected'))).rows;
  }
}

// ---- the report as text ------------------------------------------------------------------------

function pct(x: number | undefined): string {
  return x === undefined ? '-' : `${(x * 100).toFixed(1)} %`;
}

function cut(text: string, n: number): string {
  const one = text.replace(/\s+/g, ' ');
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
}

/** A plain-text table: one line per question, then the totals. */
export function formatReport(report: EvalReport): string {
  const rows = report.results.map((r) => [r.id, cut(r.question, 48), r.verdict, pct(r.recall), `${r.input_tokens}+${r.output_tokens}`, r.latency_ms.toFixed(0), cut(r.reason ?? '', 40)]);
  const head = ['id', 'question', 'result', 'recall', 'tokens', 'ms', 'why'];
  const widths = head.map((h, c) => Math.max(h.length, ...rows.map((row) => row[c]!.length)));
  const line = (cells: readonly string[]): string => cells.map((x, c) => x.padEnd(widths[c]!)).join('  ').trimEnd();
  const t = report.totals;
  return [
    line(head),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map(line),
    '',
    `execution accuracy: ${pct(t.accuracy)} (${t.correct} of ${t.questions})`,
    `schema-linking recall: ${pct(t.recall)}`,
    `tokens: ${t.input_tokens} in, ${t.output_tokens} out`,
    `latency: mean ${t.latency_ms_mean.toFixed(0)} ms, p95 ${t.latency_ms_p95.toFixed(0)} ms`,
  ].join('\n');
}

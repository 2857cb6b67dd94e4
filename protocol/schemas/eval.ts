/**
 * The accuracy harness (the eval actor, `eval.run`): golden questions — a question, the SQL that
 * answers it or its rows, optionally the tables it needs — asked through the live pipeline, and
 * the report of how many it answered right. `cortado eval FILE` and POST /admin/eval ask it.
 */
import Type, { type Static } from 'typebox';
import { ASK_LIMITS } from './ask.js';
import { Cell, PromptOverrides } from './common.js';

export const GoldenQuestion = Type.Object({
  /** a name for the report; the question's position when absent */
  id: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  question: Type.String({ minLength: 1, maxLength: ASK_LIMITS.question }),
  expected_sql: Type.Optional(Type.String({ minLength: 1, maxLength: 100_000 })),
  expected_rows: Type.Optional(Type.Array(Type.Array(Cell), { maxItems: 100_000 })),
  /** tables the answer needs, as the catalog names them: schema-linking recall */
  expected_tables: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: ASK_LIMITS.table }), { maxItems: ASK_LIMITS.tables })),
  /** the rows' order matters (the question orders them) */
  ordered: Type.Optional(Type.Boolean()),
}, { additionalProperties: false });
export type GoldenQuestion = Static<typeof GoldenQuestion>;

/** The most questions one golden set holds. */
export const MAX_GOLDEN = 1_000;

/**
 * The longest one `eval.run` works (both passes, with candidate prompts), or less when the
 * request's deadline comes first: the questions it has not asked by then are reported as not
 * asked, and the report comes back in time. A question takes seconds, so this is hundreds of
 * questions; the bus hears the actor's signs of life meanwhile, so a process that dies mid-run
 * is noticed in seconds, not at this limit.
 */
export const EVAL_RUN_MS = 3_600_000;

/**
 * A golden set as the requester has it: YAML or JSON text, a list of questions, or
 * `{questions: [...]}`. The eval actor checks each question against GoldenQuestion and says
 * which one is at fault (the bus's own check would only say that the union did not match).
 */
export const GoldenSet = Type.Union([
  Type.String({ minLength: 1, maxLength: 8_000_000 }),
  Type.Array(Type.Unknown(), { minItems: 1, maxItems: MAX_GOLDEN }),
  Type.Object({ questions: Type.Array(Type.Unknown(), { minItems: 1, maxItems: MAX_GOLDEN }) }),
]);
export type GoldenSet = Static<typeof GoldenSet>;

export const EvalRunRequest = Type.Object({
  golden: GoldenSet,
  /** candidate prompt texts: the set is asked as configured, then again with these (never saved) */
  prompts: Type.Optional(PromptOverrides),
  /** refuse a set of more questions than this (the admin panel's bound) */
  max_questions: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_GOLDEN })),
}, { additionalProperties: false });
export type EvalRunRequest = Static<typeof EvalRunRequest>;

/** `error`: the question could not be asked or answered (the reason says why, with its code) */
export const Verdict = Type.Enum(['correct', 'wrong', 'error', 'clarify', 'chat']);
export type Verdict = Static<typeof Verdict>;

export const QuestionResult = Type.Object({
  id: Type.String(),
  question: Type.String(),
  verdict: Verdict,
  correct: Type.Boolean(),
  /** the SQL the pipeline wrote */
  sql: Type.Optional(Type.String()),
  /** why it is not correct, in a few words */
  reason: Type.Optional(Type.String()),
  /** the tables of the question's prompt */
  tables: Type.Array(Type.String()),
  /** expected tables found among them / expected tables; absent without expected_tables */
  recall: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  input_tokens: Type.Integer({ minimum: 0 }),
  output_tokens: Type.Integer({ minimum: 0 }),
  latency_ms: Type.Number({ minimum: 0 }),
});
export type QuestionResult = Static<typeof QuestionResult>;

export const EvalTotals = Type.Object({
  questions: Type.Integer({ minimum: 0 }),
  correct: Type.Integer({ minimum: 0 }),
  /** correct / questions, 0..1 */
  accuracy: Type.Number({ minimum: 0, maximum: 1 }),
  /** mean recall over the questions with expected_tables; absent when none has them */
  recall: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  input_tokens: Type.Integer({ minimum: 0 }),
  output_tokens: Type.Integer({ minimum: 0 }),
  latency_ms_mean: Type.Number({ minimum: 0 }),
  latency_ms_p95: Type.Number({ minimum: 0 }),
});
export type EvalTotals = Static<typeof EvalTotals>;

export const EvalReport = Type.Object({
  results: Type.Array(QuestionResult),
  totals: EvalTotals,
});
export type EvalReport = Static<typeof EvalReport>;

export const EvalRunReply = Type.Object({
  /** the set as configured */
  report: EvalReport,
  /** with `prompts`: the set again, with the candidate prompts */
  candidate: Type.Optional(EvalReport),
  /** with `prompts`: candidate minus as configured (accuracy, correct, recall, tokens, latency) */
  difference: Type.Optional(Type.Record(Type.String(), Type.Number())),
});
export type EvalRunReply = Static<typeof EvalRunReply>;

/**
 * What the eval actor publishes on `progress.<request id>` of its run after each question
 * (step `evaluated`): `cortado eval` shows it while the run goes on.
 */
export const EvalProgress = Type.Object({
  /** 1-based, over both passes */
  index: Type.Integer({ minimum: 1 }),
  of: Type.Integer({ minimum: 1 }),
  id: Type.String(),
  verdict: Verdict,
});
export type EvalProgress = Static<typeof EvalProgress>;

import Type, { type Static } from 'typebox';

/** Token accounting, summed over every model call of one question. */
export const Usage = Type.Object({
  input_tokens: Type.Integer({ minimum: 0 }),
  output_tokens: Type.Integer({ minimum: 0 }),
  cached_input_tokens: Type.Integer({ minimum: 0 }),
  llm_calls: Type.Integer({ minimum: 0 }),
  /**
   * estimated price of the calls in USD (actors/llm/pricing.ts, llm.pricing); absent when no call
   * had a known price: an unknown price is not a zero one
   */
  cost_usd: Type.Optional(Type.Number({ minimum: 0 })),
});
export type Usage = Static<typeof Usage>;

export const ZERO_USAGE: Usage = Object.freeze({ input_tokens: 0, output_tokens: 0, cached_input_tokens: 0, llm_calls: 0 });

export function addUsage(a: Usage, b: Usage): Usage {
  const sum: Usage = {
    input_tokens: a.input_tokens + b.input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    cached_input_tokens: a.cached_input_tokens + b.cached_input_tokens,
    llm_calls: a.llm_calls + b.llm_calls,
  };
  // the priced calls' sum: a call without a known price adds nothing (and is not counted as free)
  if (a.cost_usd !== undefined || b.cost_usd !== undefined) sum.cost_usd = roundUsd((a.cost_usd ?? 0) + (b.cost_usd ?? 0));
  return sum;
}

/** Money to a millionth of a dollar: sums of many small prices stay readable. */
export function roundUsd(usd: number): number {
  return Math.round(usd * 1e6) / 1e6;
}

/** How a column's values read, from the semantic layer (its metrics' format_type). */
export const ColumnFormat = Type.Enum(['currency', 'percentage']);
export type ColumnFormat = Static<typeof ColumnFormat>;

/** What the semantic layer says of a result column of this name: its name for people, its format. */
export const ColumnLabel = Type.Object({
  name: Type.String({ maxLength: 256 }),
  label: Type.Optional(Type.String({ maxLength: 200 })),
  format: Type.Optional(ColumnFormat),
});
export type ColumnLabel = Static<typeof ColumnLabel>;

export const Column = Type.Object({
  name: Type.String(),
  /** the database's type name, e.g. integer, numeric, text, timestamp with time zone */
  type: Type.String(),
  /** an answer's column the semantic layer names: its display name (the SQL keeps `name`) */
  label: Type.Optional(Type.String({ maxLength: 200 })),
  /** an answer's column a semantic metric formats (format_type) */
  format: Type.Optional(ColumnFormat),
});
export type Column = Static<typeof Column>;

/** A result cell: JSON scalars only (dates as ISO-like strings, big numbers as strings). */
export const Cell = Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]);
export type Cell = Static<typeof Cell>;

export const Channel = Type.Enum(['api', 'legacy', 'auth', 'mcp', 'schedule', 'web']);
export type Channel = Static<typeof Channel>;

/**
 * Which client asked a question (the `widget` of its events; docs/ui.md "Widget types" is the
 * one list): the edge sets it per route, `eval` is the golden-set evaluation.
 */
export const WidgetType = Type.Enum(['assistant', 'agent', 'dashboard', 'api', 'mcp', 'schedule', 'eval']);
export type WidgetType = Static<typeof WidgetType>;

/** `clarify`: the question was ambiguous; the answer is a clarifying question (no SQL was written) */
export const Intent = Type.Enum(['sql', 'chat', 'clarify']);
export type Intent = Static<typeof Intent>;

export const Dialect = Type.Enum(['postgresql', 'mysql', 'trino', 'bigquery']);
export type Dialect = Static<typeof Dialect>;

/** One answer to a clarifying question: what people read, and what pins the meaning when chosen. */
export const ClarificationChoice = Type.Object({
  label: Type.String(),
  /** a table's name (kind table), a metric's name (kind metric), a known value (kind value) */
  value: Type.String(),
  kind: Type.Enum(['table', 'metric', 'value']),
});
export type ClarificationChoice = Static<typeof ClarificationChoice>;

/** A clarifying question: which of the choices a word of the question means. */
export const Clarification = Type.Object({
  /** the clarifying question, for people */
  question: Type.String(),
  /** the word of the question that is ambiguous, as it was written */
  word: Type.String(),
  choices: Type.Array(ClarificationChoice, { minItems: 1, maxItems: 10 }),
});
export type Clarification = Static<typeof Clarification>;

/** A word the user clarified: the choice made (or their own words, `text`). */
export const PinnedMeaning = Type.Object({
  word: Type.String(),
  choice: Type.Optional(ClarificationChoice),
  text: Type.Optional(Type.String()),
});
export type PinnedMeaning = Static<typeof PinnedMeaning>;

export const Turn = Type.Object({
  question: Type.String(),
  /** the SQL that answered it, when there was one */
  sql: Type.Optional(Type.String()),
  /** a short answer: the chat message or the explanation */
  answer: Type.Optional(Type.String()),
  /**
   * the turn asked a clarifying question (kept in the conversation only, never sent to the
   * model): the next turn answers it, and the question is asked again with the meaning pinned
   */
  clarification: Type.Optional(Type.Object({
    ...Clarification.properties,
    /** what earlier clarifications of the same question pinned */
    pinned: Type.Optional(Type.Array(PinnedMeaning, { maxItems: 20 })),
    /** the tables the question's context held: with a table chosen, the others still join in */
    tables: Type.Optional(Type.Array(Type.String(), { maxItems: 200 })),
  })),
});
export type Turn = Static<typeof Turn>;

/**
 * Candidate prompt texts for one question only (the admin panel's evaluation before saving a
 * prompt): prompt key → text, used instead of the configured prompt, never saved. Only the
 * admin route sets them; no public request body carries them.
 */
export const PromptOverrides = Type.Record(Type.String({ pattern: '^[a-z_]{1,64}$' }), Type.String({ maxLength: 100_000 }));
export type PromptOverrides = Static<typeof PromptOverrides>;

export const Empty = Type.Object({});

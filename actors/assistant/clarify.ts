/**
 * One clarifying question instead of a guess. When the schema context says a word of the
 * question is ambiguous (two tables or metrics tie for it, or a literal matches no known value),
 * the assistant answers `intent: "clarify"` with the question and its choices, and keeps them in
 * the conversation. The next turn answers it — a choice's label or value, its number, or the
 * user's own words — and the original question is asked again with that meaning pinned: a table
 * choice becomes a table hint, a metric, a value or the user's words a note on the question.
 * A word clarified once is never asked about again for the same question.
 *
 * Pure functions: the conversation's turns in, what to ask out.
 */
import type { Ambiguity } from '../../protocol/schemas/catalog.js';
import type { Channel, Clarification, ClarificationChoice, PinnedMeaning, Turn } from '../../protocol/schemas/common.js';
import { ASK_LIMITS } from '../../protocol/schemas/ask.js';

/** Channels with nobody to answer a clarifying question: they go on with the model's best guess. */
const NO_ONE_TO_ASK: ReadonlySet<Channel> = new Set<Channel>(['schedule']);

export function canClarify(channel: Channel): boolean {
  return !NO_ONE_TO_ASK.has(channel);
}

/** A pending clarification: the last turn of the conversation asked one. */
export type PendingTurn = Turn & { clarification: NonNullable<Turn['clarification']> };

export function pendingClarification(history: readonly Turn[]): PendingTurn | undefined {
  const last = history.at(-1);
  return last?.clarification ? (last as PendingTurn) : undefined;
}

/** The turns the model reads: clarifying exchanges are the conversation's business, not the model's. */
export function modelHistory(history: readonly Turn[]): Turn[] {
  return history.filter((t) => !t.clarification).map(({ clarification: _, ...t }) => t);
}

/** Lower case, inner spaces single, without surrounding quotes and punctuation. */
function normal(text: string): string {
  return text.toLowerCase().replace(/\s+/g, ' ').trim().replace(/^[\s"'`“”‘’([{]+|[\s"'`“”‘’)\]}.!?,;:]+$/gu, '');
}

/** `phrase` occurs in `text` as whole words. */
function hasPhrase(text: string, phrase: string): boolean {
  if (!phrase) return false;
  const at = (i: number): boolean => i < 0 || i >= text.length || !/[\p{L}\p{N}_]/u.test(text[i]!);
  for (let i = text.indexOf(phrase); i >= 0; i = text.indexOf(phrase, i + 1)) {
    if (at(i - 1) && at(i + phrase.length)) return true;
  }
  return false;
}

/**
 * Which choice an answer names: its label or value exactly, its number (1-based), else the one
 * choice whose label or value the answer contains (the longest such, when several do). None: the
 * user answered in their own words.
 */
export function pickChoice(answer: string, choices: readonly ClarificationChoice[]): ClarificationChoice | undefined {
  const said = normal(answer);
  if (!said) return undefined;
  const exact = choices.find((c) => normal(c.label) === said || normal(c.value) === said);
  if (exact) return exact;
  const n = /^(?:#|no\.?\s*|number\s*|option\s*|choice\s*)?(\d{1,2})$/.exec(said);
  if (n) return choices[Number(n[1]) - 1];
  let best: { c: ClarificationChoice; len: number } | undefined;
  let tie = false;
  for (const c of choices) {
    const len = Math.max(...[normal(c.label), normal(c.value)].map((p) => (hasPhrase(said, p) ? p.length : 0)));
    if (len === 0) continue;
    if (!best || len > best.len) {
      best = { c, len };
      tie = false;
    } else if (len === best.len) tie = true;
  }
  return best && !tie ? best.c : undefined;
}

/** The meaning an answer pins for the pending word. */
export function meaningOf(answer: string, pending: Clarification): PinnedMeaning {
  const choice = pickChoice(answer, pending.choices);
  return choice ? { word: pending.word, choice } : { word: pending.word, text: answer.trim().slice(0, 500) };
}

function note(p: PinnedMeaning): string {
  const c = p.choice;
  if (!c) return `By "${p.word}" I mean: ${p.text ?? ''}`;
  if (c.kind === 'table') return `By "${p.word}" I mean the table ${c.value}`;
  if (c.kind === 'metric') return `By "${p.word}" I mean the metric ${c.value}${c.label && c.label !== c.value ? ` (${c.label})` : ''}`;
  return `By "${p.word}" I mean the value '${c.value}'`;
}

/**
 * The words settled: each clarified word, and the words of the meaning given for it (the notes
 * put them into the question, where they must not raise a clarification of their own).
 */
function clarifiedWords(pinned: readonly PinnedMeaning[]): string[] {
  const out = new Set<string>();
  for (const p of pinned) out.add(p.word);
  for (const p of pinned) {
    const text = p.choice ? `${p.choice.label} ${p.choice.value}` : (p.text ?? '');
    for (const w of text.toLowerCase().split(/[^\p{L}\p{N}]+/u)) if (w.length > 1) out.add(w);
  }
  return [...out].slice(0, MAX_CLARIFIED);
}

/** The most words one question carries as clarified (SchemaContextRequest.clarified). */
const MAX_CLARIFIED = 20;

/** What the resolved question is asked with. */
export interface Pinned {
  /** the original question, with a note per pinned word */
  question: string;
  /** the table hints: the caller's, and the chosen tables */
  tables?: string[];
  /** the words clarified: never ambiguous again */
  clarified: string[];
  pinned: PinnedMeaning[];
}

/**
 * The original question asked again with every meaning pinned so far. A chosen table becomes a
 * table hint: with the caller's own hints, else with the tables the clarified question's context
 * held (so the tables it joins stay in view), less the table choices not taken.
 */
export function pinQuestion(original: string, pinned: readonly PinnedMeaning[], tables: readonly string[] | undefined, pending?: PendingTurn['clarification']): Pinned {
  const notes = pinned.map((p) => `(${note(p)}.)`).join('\n');
  const question = `${original}\n${notes}`.slice(0, ASK_LIMITS.question * 2);
  const chosen = pinned.flatMap((p) => (p.choice?.kind === 'table' ? [p.choice.value] : []));
  const refused = new Set((pending?.choices ?? []).filter((c) => c.kind === 'table' && !chosen.includes(c.value)).map((c) => c.value));
  const around = tables?.length ? tables : chosen.length ? (pending?.tables ?? []).filter((n) => !refused.has(n)) : [];
  const all = [...new Set([...around, ...chosen])].slice(0, ASK_LIMITS.tables);
  return { question, ...(all.length ? { tables: all } : {}), clarified: clarifiedWords(pinned), pinned: [...pinned] };
}

/** The turn that asks: the original question, the clarifying question as its answer, and what to resolve. */
export function clarifyTurn(original: string, ambiguity: Ambiguity, pinned: readonly PinnedMeaning[], tables: readonly string[] = []): Turn {
  return {
    question: original,
    answer: ambiguity.question,
    clarification: {
      question: ambiguity.question, word: ambiguity.word, choices: ambiguity.choices,
      ...(pinned.length ? { pinned: [...pinned] } : {}),
      ...(tables.length ? { tables: tables.slice(0, 200) } : {}),
    },
  };
}

/** The reply's clarification. */
export function clarificationOf(ambiguity: Ambiguity): Clarification {
  return { question: ambiguity.question, word: ambiguity.word, choices: ambiguity.choices };
}

/** An ambiguity still worth asking about: a word not clarified yet. */
export function stillAmbiguous(ambiguity: Ambiguity | undefined, clarified: readonly string[]): ambiguity is Ambiguity {
  if (!ambiguity || ambiguity.choices.length === 0) return false;
  const word = normal(ambiguity.word);
  return !clarified.some((w) => normal(w) === word);
}

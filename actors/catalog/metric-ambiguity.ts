/**
 * Two defined metrics that tie for a word of the question ("revenue" when both `gross_revenue`
 * and `net_revenue` are called revenue): the user is asked which one is meant, rather than the
 * model guessing. For each word of the question in turn, the active metrics that share it tie
 * when no other word of the question sets one of them apart (they share as many of its words);
 * a word the user already clarified never ties again.
 */
import type { Ambiguity } from '../../protocol/schemas/catalog.js';
import type { SemanticMetric } from '../../protocol/schemas/semantic.js';
import { stem, termSet } from './catalog.js';

/** Words too generic to name a metric on their own ("total", "number"): they never make a tie. */
const GENERIC: ReadonlySet<string> = new Set(['total', 'number', 'count', 'sum', 'average', 'avg', 'metric', 'value', 'amount', 'figure', 'kpi', 'mean', 'table']);

/** The most choices one clarifying question offers. */
const MAX_CHOICES = 10;

function metricTerms(m: SemanticMetric): Set<string> {
  return termSet([m.name, m.display_name, ...m.synonyms].join(' '));
}

/** The question's own spelling of a term (the first word that stems to it). */
function spelling(question: string, term: string): string {
  for (const raw of question.split(/[^\p{L}\p{N}_]+/u)) {
    for (const part of termSet(raw)) if (part === term) return raw;
  }
  return term;
}

/**
 * The ambiguity of a question over the active metrics the semantic layer offers for it, if
 * any: the best-matching metrics when two or more tie.
 */
export function metricAmbiguity(question: string, metrics: readonly SemanticMetric[], clarified: readonly string[] = []): Ambiguity | undefined {
  const settled = new Set(clarified.flatMap((w) => [...termSet(w), stem(w.toLowerCase())]));
  const asked = new Set([...termSet(question)].filter((w) => !GENERIC.has(w) && !settled.has(w)));
  if (asked.size === 0) return undefined;
  const scored = metrics
    .filter((m) => m.active)
    .map((m) => {
      const shared = [...metricTerms(m)].filter((w) => asked.has(w));
      return { m, shared };
    })
    .filter((s) => s.shared.length > 0);
  if (scored.length < 2) return undefined;
  // per word of the question, in its order: the metrics that share it and tie for the best score among those
  for (const term of termSet(question)) {
    if (!asked.has(term)) continue;
    const sharing = scored.filter((s) => s.shared.includes(term));
    if (sharing.length < 2) continue;
    const best = Math.max(...sharing.map((s) => s.shared.length));
    const tied = sharing.filter((s) => s.shared.length === best);
    if (tied.length >= 2) return ambiguityOf(question, term, tied.map((s) => s.m));
  }
  return undefined;
}

function ambiguityOf(question: string, term: string, tied: SemanticMetric[]): Ambiguity {
  const word = spelling(question, term);
  const choices = tied
    .sort((a, b) => a.name.localeCompare(b.name))
    .slice(0, MAX_CHOICES)
    .map((m) => ({ label: m.display_name || m.name, value: m.name, kind: 'metric' as const }));
  return {
    word,
    choices,
    question: `Which "${word}" do you mean: ${choices.map((c) => c.label).join(', ').replace(/, ([^,]*)$/, ' or $1')}?`,
  };
}

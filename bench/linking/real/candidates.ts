/**
 * catalog.linking: model, measured without a model: the candidate list's recall. No hosted model
 * is reachable here, and a stand-in that picks by a rule of its own would measure that rule, not
 * a model. What can be measured honestly is the ceiling a model could reach: the share of the
 * answer tables that are in the list the model would be shown at all.
 *
 * Each question goes through the catalog actor's own `context` handler (run.ts) with
 * `catalog.linking: model` and a model call that records the prompt it is given and then fails,
 * so the stage falls back to the ranking as it would with the model down. From the recorded
 * prompt: the listed names (between the markers, each line's name), the list's characters and the
 * whole pick prompt's tokens. Per list size (catalog.linking_max_candidates, within the shipped
 * linking_max_chars): candidate recall and completeness over the clear questions, beside the
 * recall of the ranking's own selection on the same run.
 */
import { CLOSE_MARK, OPEN_MARK } from '../../../actors/catalog/model-pick.js';
import { CortadoError } from '../../../protocol/errors.js';
import type { CatalogDeps } from '../../../actors/catalog/handle.js';
import { benchConfig, countTokens, mean, TOKENIZER } from '../evaluate.js';
import { replaceSetting } from '../../../config/current.js';
import { QUESTIONS } from './questions.js';
import { realSizes } from './report.js';
import { bestSet, runRealLinking, summarize } from './run.js';

/** BENCH_LINKING_CANDIDATES: the list sizes measured; the shipped 100 by default (each size is one more pass over the questions at each real size). */
export function candidateSizes(text = process.env.BENCH_LINKING_CANDIDATES ?? '100'): number[] {
  const sizes = text.split(',').map((s) => Number(s.trim())).filter((n) => Number.isFinite(n));
  if (!sizes.length || sizes.some((n) => !Number.isInteger(n) || n < 5 || n > 500)) throw new Error(`BENCH_LINKING_CANDIDATES lists candidate counts of 5–500: "${text}"`);
  return sizes;
}

interface Seen {
  names: string[];
  chars: number;
  tokens: number;
}

/** The names in a recorded pick prompt, in order. */
export function listedNames(system: string): { names: string[]; chars: number } {
  const lines = system.split('\n');
  const block = lines.slice(lines.indexOf(OPEN_MARK) + 1, lines.indexOf(CLOSE_MARK));
  return { names: block.map((l) => l.slice(0, l.indexOf(' | ') >= 0 ? l.indexOf(' | ') : l.length)), chars: block.join('\n').length };
}

export interface CandidateRow {
  relations: number;
  max: number;
  questions: number;
  listed_mean: number;
  chars_mean: number;
  tokens_mean: number;
  /** 0..1: answer tables in the list */
  recall: number;
  /** 0..1: questions with every answer table in the list */
  complete: number;
  /** the ranking's own selection on the same questions */
  lexical_recall: number;
}

export async function candidateRun(size: number, max: number): Promise<CandidateRow> {
  const config = benchConfig();
  replaceSetting(config, 'catalog.linking', 'model');
  replaceSetting(config, 'catalog.linking_max_candidates', max);
  const seen = new Map<string, Seen>();
  const complete: NonNullable<CatalogDeps['complete']> = async (req, ctx) => {
    const { names, chars } = listedNames(req.system);
    seen.set(ctx.requestId, { names, chars, tokens: countTokens(req.system) + countTokens(req.messages.map((m) => m.content).join('\n')) });
    throw new CortadoError('LLM_UNAVAILABLE', 'the candidate bench asks no model');
  };
  const run = await runRealLinking({ size, config, complete });
  const byId = new Map(QUESTIONS.map((q) => [q.id, q]));
  let answers = 0;
  let found = 0;
  let whole = 0;
  const rows: Seen[] = [];
  const clear = run.results.filter((r) => r.clear);
  for (const r of clear) {
    const q = byId.get(r.id);
    const s = seen.get(`bench-real-${r.id}`);
    if (!q) continue;
    // a question whose schema fits whole, or that the stage skipped, lists nothing: counted as missing all
    const listed = new Set(s?.names ?? []);
    const best = bestSet(q, listed);
    answers += best.tables.length;
    found += best.tables.length - best.missing.length;
    if (!best.missing.length) whole += 1;
    if (s) rows.push(s);
  }
  return {
    relations: run.relations,
    max,
    questions: clear.length,
    listed_mean: mean(rows.map((s) => s.names.length)),
    chars_mean: mean(rows.map((s) => s.chars)),
    tokens_mean: mean(rows.map((s) => s.tokens)),
    recall: answers ? found / answers : NaN,
    complete: clear.length ? whole / clear.length : NaN,
    lexical_recall: summarize(run.results).recall,
  };
}

const pct = (x: number): string => (Number.isFinite(x) ? `${(x * 100).toFixed(1)} %` : '–');
const n0 = (x: number): string => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '–');

export async function candidateSection(): Promise<CandidateRow[]> {
  const rows: CandidateRow[] = [];
  const chars = benchConfig().catalog.linking_max_chars;
  console.log(`\ncatalog.linking: model — the candidate list's recall (the ceiling a model could reach; no model was asked): answer tables of the clear questions found in the list the model would be shown, per linking_max_candidates, within linking_max_chars ${n0(chars)}; listed: tables in the list (mean), chars: the list's characters, tokens: the whole pick prompt (${TOKENIZER}); lexical: the ranking's own selection on the same run\n`);
  console.log('| relations | max | questions | listed | chars | tokens | candidate recall | all in list | lexical recall |');
  console.log('| --------: | --: | --------: | -----: | ----: | -----: | ---------------: | ----------: | -------------: |');
  try {
    for (const size of realSizes()) {
      for (const max of candidateSizes()) {
        const r = await candidateRun(size, max);
        rows.push(r);
        console.log(`| ${n0(r.relations).padStart(9)} | ${String(r.max).padStart(3)} | ${String(r.questions).padStart(9)} | ${r.listed_mean.toFixed(1).padStart(6)} | ${n0(r.chars_mean).padStart(5)} | ${n0(r.tokens_mean).padStart(6)} | ${pct(r.recall).padStart(16)} | ${pct(r.complete).padStart(11)} | ${pct(r.lexical_recall).padStart(14)} |`);
      }
    }
  } catch (err) {
    console.log(`candidate lists: stopped (${(err as Error).message})`);
  }
  return rows;
}

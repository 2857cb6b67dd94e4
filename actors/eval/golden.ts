/**
 * The golden file format (protocol/schemas/eval.ts GoldenQuestion), read: YAML or JSON text, a
 * list of questions or `{questions: [...]}`. Pure functions: the eval actor checks every set it
 * is sent with them, and `cortado eval` checks its FILE before it reaches for the bus, so a bad
 * file is a bad file (exit 2) even with no Cortado running.
 */
import { Compile } from 'typebox/compile';
import Type from 'typebox';
import YAML from 'yaml';
import { CortadoError } from '../../protocol/errors.js';
import { GoldenQuestion, MAX_GOLDEN, type GoldenSet } from '../../protocol/schemas/eval.js';

const checkList = Compile(Type.Array(GoldenQuestion, { minItems: 1, maxItems: MAX_GOLDEN }));

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

/** A golden set as a request carries it (text, a list or `{questions}`), checked. */
export function goldenOf(set: GoldenSet): GoldenQuestion[] {
  return typeof set === 'string' ? parseGolden(set) : goldenFrom(set);
}

/**
 * The query string of a request, parsed as URLSearchParams does (`+` is a space, `%XX` decoded,
 * `&` separates), whose values are names under protocol/schemas/text.ts: a value holding a
 * control character or a lone surrogate is refused (400 naming the parameter) when a route
 * reads it, before it can reach a database or a log.
 */
import { CortadoError } from '../../protocol/errors.js';
import { textProblem } from '../../protocol/schemas/text.js';

function checked(name: string, value: string): string {
  const problem = textProblem(value, 'name');
  if (problem) {
    const shown = textProblem(name, 'name') ? 'a query parameter' : `query parameter ${name.slice(0, 64)}`;
    throw new CortadoError('VALIDATION_FAILED', `${shown}: ${problem}`, { errors: [{ path: `?${name.slice(0, 64)}`, message: problem }] });
  }
  return value;
}

export class CheckedQuery extends URLSearchParams {
  override get(name: string): string | null {
    const v = super.get(name);
    return v === null ? null : checked(name, v);
  }

  override getAll(name: string): string[] {
    return super.getAll(name).map((v) => checked(name, v));
  }
}

/**
 * Telling a parser that broke from SQL that is wrong. A syntax error is an answer: the SQL is
 * refused and the parser is as good as before. A parser that ran out of stack, trapped inside
 * its WebAssembly or ran out of memory is not: libpg-query (PostgreSQL's parser compiled to
 * WASM) does not restore its own stack after such a trap, and after about thirty of them every
 * later parse fails. So the code that calls a parser lets these errors through unchanged
 * instead of turning them into "does not parse", and the worker that ran it (pool.ts) is
 * thrown away and replaced.
 */

/** The parser itself failed (its stack, its memory, its WASM), not the SQL's grammar. */
export function parserBroke(err: unknown): boolean {
  if (err instanceof RangeError) return true; // "Maximum call stack size exceeded", in JS or in WASM
  if (!(err instanceof Error)) return false;
  if (err.name === 'RuntimeError') return true; // WebAssembly.RuntimeError: a trap (out of bounds, unreachable)
  // libpg-query's syntax errors carry `sqlDetails`; its other errors are about itself
  // ("memory allocation failed", "No parse tree generated", "WASM module not initialized")
  return /\b(WASM|memory|out of bounds|stack)\b/i.test(err.message) && !('sqlDetails' in err && (err as { sqlDetails?: unknown }).sqlDetails);
}

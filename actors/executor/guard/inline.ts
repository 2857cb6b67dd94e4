/**
 * Which SQL the guard may check on the event loop instead of in its worker (isolated.ts): a
 * PostgreSQL statement that a linear scan of its text proves small. Everything else goes to
 * the worker, as before. Why: the hop to the worker (a structured clone each way, a second
 * thread woken per question, then the event loop woken for the answer) costs more CPU than the
 * parse it isolates when the statement is one model-written SELECT of a few hundred characters
 * (docs/benchmarks.md, "Where round 3's CPU goes").
 *
 * Why the bound holds (issue 24, class E: a parser must not overflow, loop or stall the event
 * loop), for PostgreSQL only:
 *
 * - libpg-query's parser is PostgreSQL's own bison grammar, LALR(1): one pass over the tokens,
 *   no backtracking, its parse stack on the heap. What recursed and overflowed the stack in the
 *   attacks is the walk over the tree it builds (the tree's conversion to JSON in the WASM),
 *   whose depth is at most the number of tokens, so at most the number of characters. On a
 *   1 MB stack (the event loop's is V8's default, about 1 MB) every nesting form we know (chains
 *   of + or ::, unary minus, calls, parentheses, subqueries, EXISTS, IN, derived tables, joins,
 *   UNION, NOT, CASE, ARRAY, ROW, IS NULL) parses at 8,000 characters; at the bound, 2,000, they
 *   parse on 0.35 MB, and the same forms overflow 0.35 MB at 6,000
 *   (test/actors/parser-isolation.test.ts checks both).
 * - Time: parse and guard are linear in the tokens except for deep nesting, where the work
 *   grows faster (a 2,000-character `1+1+…`, 1,000 levels, took ~36 ms on a loaded machine). So
 *   the scan also bounds what nests: brackets ( and [ at most INLINE_MAX_DEPTH deep, and at most
 *   INLINE_MAX_OPERATOR_CHARS operator characters. The deepest forms within all three bounds
 *   (what nests without brackets or operators, NOT, CASE, UNION, JOIN, IS NULL, at the full
 *   length) took 0.1–2 ms there, 3,000 random token soups within them under 1 ms each.
 *   The scan counts inside strings, quoted names and comments too: it can only over-count, and
 *   over-counting sends a statement to the worker, never the other way.
 * - Real queries are far inside it: the 228 accepted PostgreSQL queries of the guard's corpus
 *   have at most 404 characters, brackets 4 deep and 31 operator characters.
 *
 * MySQL/MariaDB (node-sql-parser, a PEG parser that backtracks exponentially on 9 nested CASTs
 * in 190 bytes), Trino and BigQuery always go to the worker: no cheap scan bounds a
 * backtracking parser. So does a request with a catalog lock (Trino and MySQL only).
 *
 * And if the parser breaks on the event loop anyway (a RangeError, a WASM trap: anything but the
 * guard's own refusal), isolated.ts stops checking there for the rest of the process (the WASM
 * copy may be broken) and hands that SQL and every later one to the workers.
 */

/** The longest SQL checked on the event loop (characters). */
export const INLINE_MAX_CHARS = 2_000;
/** How deep ( and [ may nest. */
export const INLINE_MAX_DEPTH = 16;
/** How many operator characters (+ - * / % ^ < > = ~ ! @ # & | ? :) the SQL may hold. */
export const INLINE_MAX_OPERATOR_CHARS = 100;

/** Operator characters, by char code. */
const OPERATOR = new Uint8Array(128);
for (const c of '+-*/%^<>=~!@#&|?:') OPERATOR[c.charCodeAt(0)] = 1;

/** true when `sql` is within the bounds above: one pass, no allocation. */
export function boundedForInline(sql: string): boolean {
  if (sql.length > INLINE_MAX_CHARS) return false;
  let depth = 0;
  let deepest = 0;
  let operators = 0;
  for (let i = 0; i < sql.length; i++) {
    const c = sql.charCodeAt(i);
    if (c === 40 || c === 91) {
      // ( [ : a close before its open does not make room for more opens
      depth++;
      deepest = Math.max(deepest, depth);
      if (deepest > INLINE_MAX_DEPTH) return false;
    } else if (c === 41 || c === 93) {
      if (depth > 0) depth--;
    } else if (c < 128 && OPERATOR[c] === 1 && ++operators > INLINE_MAX_OPERATOR_CHARS) {
      return false;
    }
  }
  return true;
}

/**
 * The row cap, as an edit of the SQL text (never SQL re-generated from a tree): the parser of
 * each dialect says what LIMIT the top-level statement has and where its number is; this file
 * decides the rest the same way for every dialect.
 *
 * - no LIMIT: append one at the default limit;
 * - an integer constant within max_limit: keep it (the user's own bound);
 * - an integer constant above max_limit: replace the number by max_limit;
 * - anything else (LIMIT ALL, an expression, a parameter, WITH TIES): wrap the statement in
 *   `SELECT * FROM (...) AS cortado_limited LIMIT max_limit`.
 *
 * Whenever Cortado's cap applies, the SQL that runs asks for one row more than it returns, so
 * the executor can tell the user the result was cut.
 */
import type { GuardLimits, GuardResult } from './types.js';

export type ExistingLimit =
  | { kind: 'none' }
  /** an integer constant; `start`/`end`: where its digits are in the statement text */
  | { kind: 'constant'; value: number; start: number; end: number }
  /** a limit Cortado cannot read as a number of rows */
  | { kind: 'other' };

export const WRAP_ALIAS = 'cortado_limited';

/**
 * `statement` is the one statement's text, trimmed, without its semicolon. The LIMIT goes on
 * a line of its own, so a trailing `-- comment` cannot swallow it.
 */
export function applyLimit(statement: string, existing: ExistingLimit, limits: GuardLimits): Omit<GuardResult, 'tables'> {
  const max = Math.max(1, Math.floor(limits.maxLimit));
  const byDefault = Math.min(Math.max(1, Math.floor(limits.defaultLimit)), max);

  switch (existing.kind) {
    case 'none':
      return {
        sql: `${statement}\nLIMIT ${byDefault}`,
        runSql: `${statement}\nLIMIT ${byDefault + 1}`,
        limit: byDefault,
        capped: true,
      };
    case 'constant': {
      if (existing.value <= max) return { sql: statement, runSql: statement, limit: existing.value, capped: false };
      const before = statement.slice(0, existing.start);
      const after = statement.slice(existing.end);
      return { sql: `${before}${max}${after}`, runSql: `${before}${max + 1}${after}`, limit: max, capped: true };
    }
    case 'other': {
      // Newlines around the inner statement: it may end with a `-- comment`.
      const wrapped = `SELECT * FROM (\n${statement}\n) AS ${WRAP_ALIAS}\nLIMIT `;
      return { sql: `${wrapped}${max}`, runSql: `${wrapped}${max + 1}`, limit: max, capped: true };
    }
  }
}

/**
 * The SQL lexer pieces every reader of SQL text shares: the guards (actors/executor/guard), the
 * catalog locks, and the alert scorer's tolerant scan (scan.ts). Each dialect keeps its own
 * token rules (what starts a word, which quotes name and which quote, which comments nest);
 * what is the same in every dialect is written here once: quoted runs, positions for
 * messages, statements split at their semicolons, dotted names.
 *
 * Pure functions over text and token arrays; nothing here refuses SQL: the callers do, with
 * their own words.
 */

/**
 * The index of the quote that closes a quoted run starting at `from` (just after the opening
 * quote), a doubled quote being the quote itself; -1 when the run never closes.
 */
export function closingQuote(sql: string, from: number, quote: string): number {
  let i = from;
  for (;;) {
    const j = sql.indexOf(quote, i);
    if (j < 0) return -1;
    if (sql[j + 1] === quote) {
      i = j + 2;
      continue;
    }
    return j;
  }
}

/**
 * What a dialect lexer cannot read, at a UTF-16 index: the guard turns it into its refusal
 * (SQL_REJECTED, kind parse) with the position in characters (`charPosition`).
 */
export class SqlLexError extends Error {
  constructor(
    message: string,
    readonly at: number,
    /** what the refusal carries besides its message (a position, the kind of comment) */
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** A UTF-16 index as a character position, 1-based, for messages (a character outside the BMP counts once). */
export function charPosition(sql: string, index: number): number {
  return Array.from(sql.slice(0, index)).length + 1;
}

/** A character for a message: visible ones as themselves, and every one by its code point (U+2028, U+00A0...). */
export function describeChar(c: string): string {
  const code = `U+${(c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
  return /^[\p{L}\p{N}\p{P}\p{S}]$/u.test(c) ? `"${c}" (${code})` : code;
}

/** The statements' tokens, split at each separator token (the dialect's `;`); empty statements dropped. */
export function splitStatements<T>(tokens: readonly T[], isSeparator: (t: T) => boolean): T[][] {
  const out: T[][] = [];
  let current: T[] = [];
  for (const t of tokens) {
    if (isSeparator(t)) {
      if (current.length) out.push(current);
      current = [];
    } else {
      current.push(t);
    }
  }
  if (current.length) out.push(current);
  return out;
}

/** How a dialect's tokens say "a dot" and "a name" (bare or quoted). */
export interface ChainRules<T> {
  isDot: (t: T | undefined) => boolean;
  isName: (t: T | undefined) => t is T;
}

/** A dotted name starting at `i` (`a.b.c`): its parts and the index just after it. */
export function chainAt<T>(tokens: readonly T[], i: number, rules: ChainRules<T>): { parts: T[]; end: number } {
  const parts: T[] = [tokens[i] as T];
  let j = i + 1;
  while (rules.isDot(tokens[j]) && rules.isName(tokens[j + 1])) {
    parts.push(tokens[j + 1] as T);
    j += 2;
  }
  return { parts, end: j };
}

/**
 * JSON bodies before and after JSON.parse: a nesting limit checked on the raw bytes (one pass,
 * no allocation), and the text rules of protocol/schemas/text.ts applied to every string and
 * every field name of the parsed value (iteratively: no recursion a hostile body could
 * exhaust).
 */
import { CortadoError } from '../../protocol/errors.js';
import { textProblem, type TextKind } from '../../protocol/schemas/text.js';

/** Arrays and objects inside each other, at most. No body of the API needs a tenth of it. */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * The deepest nesting of arrays and objects in a JSON text, counted on the raw bytes (brackets
 * inside strings do not count); stops counting once `max` is passed. Invalid JSON is counted
 * all the same: JSON.parse refuses it afterwards.
 */
export function jsonDepth(raw: Uint8Array, max = MAX_JSON_DEPTH): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > max) return deepest;
      }
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      if (depth > 0) depth--;
    }
  }
  return deepest;
}

/** VALIDATION_FAILED when a JSON body nests arrays and objects deeper than MAX_JSON_DEPTH. */
export function checkJsonDepth(raw: Uint8Array): void {
  if (jsonDepth(raw) > MAX_JSON_DEPTH) {
    throw new CortadoError('VALIDATION_FAILED', `the body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep`);
  }
}

/** Whether a Content-Type names JSON (`application/json`, `application/*+json`). */
export function isJsonType(contentType: string | undefined): boolean {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

export interface TextRules {
  /**
   * Top-level fields whose strings (at any depth below them) are text: tabs and line breaks
   * allowed. Every other string of the body is a name: no control character at all.
   */
  text?: readonly string[];
}

/** Where a value sits: its parent's place and its key (the path is built only for an error). */
interface Place {
  parent: Place | undefined;
  key: string | number;
}

function pointer(place: Place | undefined): string {
  const keys: string[] = [];
  for (let p = place; p; p = p.parent) keys.push(String(p.key).replace(/~/g, '~0').replace(/\//g, '~1'));
  return `/${keys.reverse().join('/')}`;
}

/**
 * VALIDATION_FAILED naming the first field (JSON pointer) whose string, or whose own name,
 * breaks the text rules. Field names are always names.
 */
export function checkText(value: unknown, rules: TextRules = {}): void {
  const text = new Set(rules.text ?? []);
  const stack: Array<{ v: unknown; at: Place | undefined; kind: TextKind }> = [];
  const visit = (v: unknown, at: Place | undefined, kind: TextKind): void => {
    if (typeof v === 'string') {
      const problem = textProblem(v, kind);
      if (problem) fail(pointer(at), problem);
    } else if (v !== null && typeof v === 'object') {
      stack.push({ v, at, kind });
    }
  };
  visit(value, undefined, 'name');
  while (stack.length) {
    const { v, at, kind } = stack.pop()!;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) visit(v[i], { parent: at, key: i }, kind);
    } else {
      for (const [k, child] of Object.entries(v as Record<string, unknown>)) {
        const here: Place = { parent: at, key: k };
        const problem = textProblem(k, 'name');
        if (problem) fail(pointer(here), `the field name: ${problem}`);
        visit(child, here, at === undefined && text.has(k) ? 'text' : kind);
      }
    }
  }
}

function fail(path: string, message: string): never {
  throw new CortadoError('VALIDATION_FAILED', `${path}: ${message}`, { errors: [{ path, message }] });
}

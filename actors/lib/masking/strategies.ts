/**
 * What a mask rule's strategy does to one cell. Nulls stay null under every strategy (a null
 * tells nothing about the value it is not).
 *
 * - `redact`: the constant REDACTED ('[REDACTED]'), whatever the value (numbers and booleans
 *   too: the column then holds strings).
 * - `partial`: keeps a small part.
 *   - an e-mail address (`local@domain`): the first character of the local part, `***`, then
 *     `@domain` (`j***@example.com`); a one-character local part is all stars (`***@example.com`);
 *   - a number, or a string of digits and separators (phone, card, account numbers: digits,
 *     spaces, `+ - . , ( ) /`): every digit becomes `*` except the last two, when the value has at
 *     least 5 digits; with fewer, every digit is a star (`1234567.89` → `*******.89`,
 *     `+1 555-0100` → `+* ***-**00`, `1234` → `****`); the result is text;
 *   - any other string: its first 2 and last 2 characters around `****` when it has at least 8
 *     characters (so at most half of it shows), else `****`; the length is not kept;
 *   - a boolean: REDACTED (there is no part of it to keep).
 * - `hash`: `sha256:` + the first 16 hex digits (64 bits) of HMAC-SHA256(key, value), the value
 *   as text (numbers in JavaScript's shortest form, booleans `true`/`false`). Deterministic
 *   within a deployment, so equal values stay equal (joins, grouping, counting distinct values
 *   still work on the masked result) while the value cannot be recovered or guessed without the
 *   key. The key: derived from `config_db.encryption_key` when it is set (the same in every
 *   process and across restarts); otherwise a random key made when the process starts, so
 *   hashes then differ between processes and after every restart.
 *
 * Speed: a masker is built once per column per request; `hash` remembers the values it has
 * already hashed in that column while that pays (a result often repeats values), and computes HMAC-SHA256 with
 * the key's pad blocks compressed once (hmac.ts), several times faster than createHmac per cell.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { Cell } from '../../../protocol/schemas/common.js';
import type { MaskRuleLite } from '../../../protocol/schemas/policy.js';
import { createFastHmac } from './hmac.js';

export type Strategy = MaskRuleLite['strategy'];

export const REDACTED = '[REDACTED]';

/** Strongest first: what reveals least. Used when several rules (or an unknown lineage) apply. */
export const STRENGTH: Readonly<Record<Strategy, number>> = { redact: 3, hash: 2, partial: 1 };

export function strongest(strategies: Iterable<Strategy>): Strategy | undefined {
  let best: Strategy | undefined;
  for (const s of strategies) if (best === undefined || STRENGTH[s] > STRENGTH[best]) best = s;
  return best;
}

/** Keyed hashing of cell text. */
export interface Hasher {
  /** 'sha256:' + 16 hex digits */
  hash(text: string): string;
  /** where the key came from (for the start-up log line; never the key) */
  readonly keySource: 'config_db.encryption_key' | 'random';
}

const KEY_LABEL = 'cortado/masking/hash-key/v1';

/** The hash key: derived from the deployment's secret (never the secret itself), else random. */
export function createHasher(secret: string | undefined): Hasher {
  const key = secret ? createHmac('sha256', KEY_LABEL).update(secret, 'utf8').digest() : randomBytes(32);
  const hmac = createFastHmac(key);
  return {
    keySource: secret ? 'config_db.encryption_key' : 'random',
    hash: (text) => `sha256:${hmac.hex(text, 16)}`,
  };
}

function cellText(v: string | number | boolean): string {
  return typeof v === 'string' ? v : String(v);
}

const NUMBERISH = /^[\d\s+\-.,()/]*\d[\d\s+\-.,()/]*$/;
const MIN_DIGITS_SHOWN = 5;
const MIN_STRING_SHOWN = 8;

/** Every digit a star, except the last two when there are enough digits. */
function maskDigits(text: string): string {
  let digits = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) digits++;
  }
  const keep = digits >= MIN_DIGITS_SHOWN ? 2 : 0;
  let seen = 0;
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      seen++;
      out += seen > digits - keep ? ch : '*';
    } else out += ch;
  }
  return out;
}

const SURROGATE = /[\uD800-\uDFFF]/;
const SPACE = /\s/;

/** The first `n` and last `n` characters (code points, not UTF-16 units) and the count. */
function ends(v: string, n: number): { head: string; tail: string; length: number } {
  if (!SURROGATE.test(v)) return { head: v.slice(0, n), tail: v.slice(-n), length: v.length };
  const chars = Array.from(v);
  return { head: chars.slice(0, n).join(''), tail: chars.slice(-n).join(''), length: chars.length };
}

export function partial(v: string | number | boolean): string {
  if (typeof v === 'boolean') return REDACTED;
  if (typeof v === 'number') return maskDigits(String(v));
  const at = v.indexOf('@');
  if (at > 0 && at < v.length - 1 && v.indexOf('@', at + 1) < 0 && !SPACE.test(v)) {
    const local = ends(v.slice(0, at), 1);
    return `${local.length > 1 ? local.head : ''}***${v.slice(at)}`;
  }
  if (NUMBERISH.test(v)) return maskDigits(v);
  const e = ends(v, 2);
  if (e.length < MIN_STRING_SHOWN) return '****';
  return `${e.head}****${e.tail}`;
}

const MEMO_SAMPLE = 1_024;
const MEMO_MIN_HIT_RATE = 0.25;
const MEMO_MAX = 100_000;

/** The function that masks one column's cells. */
export function masker(strategy: Strategy, hasher: Hasher): (cell: Cell) => Cell {
  switch (strategy) {
    case 'redact':
      return (cell) => (cell === null ? null : REDACTED);
    case 'partial':
      return (cell) => (cell === null ? null : partial(cell));
    case 'hash': {
      // remember hashes while the column repeats itself; a column of distinct values (ids, e-mail
      // addresses) pays for the remembering and gains nothing, so that stops after a sample
      let seen: Map<string, string> | undefined = new Map<string, string>();
      let lookups = 0;
      let hits = 0;
      return (cell) => {
        if (cell === null) return null;
        const text = cellText(cell);
        if (!seen) return hasher.hash(text);
        lookups++;
        let h = seen.get(text);
        if (h !== undefined) {
          hits++;
          return h;
        }
        h = hasher.hash(text);
        if (lookups === MEMO_SAMPLE && hits < MEMO_SAMPLE * MEMO_MIN_HIT_RATE) seen = undefined;
        else if (seen.size < MEMO_MAX) seen.set(text, h);
        return h;
      };
    }
  }
}

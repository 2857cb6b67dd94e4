/**
 * Text that crosses a boundary: which characters a field may hold. Two kinds of field:
 *
 * - a **name** (login names, passwords, table names, ids, labels, settings): no control
 *   character at all (C0 U+0000–U+001F, DEL, C1 U+0080–U+009F);
 * - **text** (a question, SQL, a prompt, a description): tabs and line breaks (`\t \n \r`) are
 *   part of it; every other C0 control and DEL is refused.
 *
 * In both, a lone UTF-16 surrogate is refused: it is no Unicode text, cannot be written as
 * UTF-8, and PostgreSQL refuses it in JSON. NUL is refused everywhere: PostgreSQL cannot store
 * it in text, and its wire protocol ends a string at it.
 *
 * The edge applies these rules to every string of every JSON body (edge/http/reply.ts), and the
 * schemas of the bus messages that carry credentials and SQL apply them again where the
 * message enters an actor.
 */
import Type, { type TRefine, type TString, type TStringOptions } from 'typebox';

const NAME_CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const TEXT_CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;
/** a high surrogate not followed by a low one, or a low one not after a high one */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export type TextKind = 'name' | 'text';

/** Why `value` may not be a field of this kind (a sentence for people), or undefined when it may. */
export function textProblem(value: string, kind: TextKind): string | undefined {
  const m = (kind === 'name' ? NAME_CONTROL : TEXT_CONTROL).exec(value);
  if (m) {
    const code = m[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0');
    return kind === 'name'
      ? `control characters are not allowed here (found U+${code} at position ${m.index})`
      : `control characters other than tab and line breaks are not allowed (found U+${code} at position ${m.index})`;
  }
  if (LONE_SURROGATE.test(value)) return 'not valid Unicode (a lone surrogate)';
  return undefined;
}

/** default-ignorable code points (zero-width space and joiners, soft hyphen, variation selectors, BOM, …): a directory's string preparation drops them */
const IGNORABLE = /\p{Default_Ignorable_Code_Point}/u;

const hex = (c: string): string => (c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0');

/**
 * Why `value` may not be a login name (a sentence for people), or undefined when it may. A login
 * name is a name (above) that is written the one way an authority compares it: a directory's
 * matching rules (RFC 4518: case folding, compatibility normalisation NFKC, default-ignorable
 * characters dropped, insignificant spaces) make `ａｌｉｃｅ`, `al\u00ADice` and ` alice` the
 * same user as `alice`, so those spellings are refused rather than given a lockout counter of
 * their own. Case is allowed: it is folded (loginKey).
 */
export function loginNameProblem(value: string): string | undefined {
  const base = textProblem(value, 'name');
  if (base) return base;
  const m = IGNORABLE.exec(value);
  if (m) return `invisible characters are not allowed in a login name (found U+${hex(m[0])} at position ${m.index})`;
  const nfkc = value.normalize('NFKC');
  if (nfkc !== value) {
    const chars = [...value];
    const i = chars.findIndex((c) => c.normalize('NFKC') !== c);
    const where = i >= 0 ? `U+${hex(chars[i]!)} at position ${i} is a compatibility spelling` : 'a letter and a combining mark that NFKC writes as one character';
    return `not in Unicode normal form NFKC (${where}): type it as "${nfkc.slice(0, 256)}"`;
  }
  if (value !== value.trim()) return 'spaces before or after a login name are not allowed';
  if (/\s{2}/u.test(value)) return 'a login name has no run of spaces (a directory reads several as one)';
  return undefined;
}

/**
 * The name as an authority compares it, for counting failed logins: NFKC, case-folded (upper
 * then lower, so `ß` and `ss`, `ς` and `σ` meet), spaces trimmed and runs of spaces made one.
 * Coarser than any one authority on purpose: two names that fold together share one lockout
 * counter even where the database would tell them apart, never the other way round.
 */
export function loginKey(value: string): string {
  return value
    .normalize('NFKC')
    .replace(/\p{Default_Ignorable_Code_Point}/gu, '')
    .toUpperCase()
    .toLowerCase()
    .replace(/ς/g, 'σ')
    .normalize('NFKC')
    .trim()
    .replace(/\s+/gu, ' ');
}

/** A string schema whose value must be a login name (loginNameProblem). */
export function LoginNameString(options: TStringOptions = {}): TRefine<TString> {
  return Type.Refine(Type.String(options), (v: string) => loginNameProblem(v) === undefined, (v: string) => loginNameProblem(v) ?? '');
}

/** A string schema whose value must be a name: no control character, well-formed Unicode. */
export function NameString(options: TStringOptions = {}): TRefine<TString> {
  return Type.Refine(Type.String(options), (v: string) => textProblem(v, 'name') === undefined, (v: string) => textProblem(v, 'name') ?? '');
}

/** A string schema whose value is text: tabs and line breaks allowed, other controls not. */
export function TextString(options: TStringOptions = {}): TRefine<TString> {
  return Type.Refine(Type.String(options), (v: string) => textProblem(v, 'text') === undefined, (v: string) => textProblem(v, 'text') ?? '');
}

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

/** A string schema whose value must be a name: no control character, well-formed Unicode. */
export function NameString(options: TStringOptions = {}): TRefine<TString> {
  return Type.Refine(Type.String(options), (v: string) => textProblem(v, 'name') === undefined, (v: string) => textProblem(v, 'name') ?? '');
}

/** A string schema whose value is text: tabs and line breaks allowed, other controls not. */
export function TextString(options: TStringOptions = {}): TRefine<TString> {
  return Type.Refine(Type.String(options), (v: string) => textProblem(v, 'text') === undefined, (v: string) => textProblem(v, 'text') ?? '');
}

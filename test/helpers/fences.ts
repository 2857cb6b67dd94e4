/**
 * Reading the fences of a prompt as a model would: the real tags (`<data source="…">` on a line
 * of its own, `</data>` on a line of its own), and anything else that looks like a tag once
 * look-alike characters are folded (NFKC, invisible characters dropped, a few homoglyphs). A
 * prompt is well fenced when the real tags pair up in order, never nest, and nothing else in it
 * reads as a tag. Written apart from actors/lib/model-io/prompting.ts so that it checks its output rather
 * than repeating it. The one place outside a fence where the tag may be named is the rule that
 * says what fenced text is (DATA_RULE, appended to system prompts): it is left out of the scan.
 */
import { DATA_RULE } from '../../actors/lib/model-io/prompting.js';

export interface Fences {
  /** [start, end) of each fence's content */
  regions: Array<[number, number]>;
  /** what is wrong with the fencing; empty when it is sound */
  problems: string[];
}

const TAG = /<data source="[a-z ]+">\n|\n<\/data>/g;
// after NFKC: `<`, `‹`, `〈`, `⟨`, `❮`, `ᐸ`; a slash or backslash (or `∕ ⁄ ⧸`); "data" with Cyrillic/Greek a's and a Cyrillic d
const LOOSE = /[<\u2039\u3008\u27E8\u276E\u1438]\s*[/\\\u2215\u2044\u29F8]?\s*[d\u0501][a\u0430\u0251\u03B1]t[a\u0430\u0251\u03B1]/iu;

export function readFences(text: string): Fences {
  const regions: Array<[number, number]> = [];
  const problems: string[] = [];
  let open: number | undefined;
  for (const m of text.matchAll(TAG)) {
    const at = m.index;
    const closing = m[0].startsWith('\n');
    if (!closing) {
      if (open !== undefined) problems.push(`a fence opens at ${at} inside the one opened at ${open}`);
      open = at + m[0].length;
    } else {
      if (open === undefined) problems.push(`a fence closes at ${at} without one open`);
      else regions.push([open, at]);
      open = undefined;
    }
  }
  if (open !== undefined) problems.push(`the fence opened at ${open} never closes`);
  // inside the fences and out, nothing but the real tags (and the rule naming them) may read as one
  const rest = text.split(DATA_RULE).join(' ').replace(TAG, ' ').normalize('NFKC').replace(/\p{Cf}/gu, '');
  const loose = LOOSE.exec(rest);
  if (loose) problems.push(`something reads as a fence tag: ${printable(rest.slice(Math.max(0, loose.index - 20), loose.index + 30))}`);
  return { regions, problems };
}

/** Every occurrence of `needle` in `text` that is outside all fences (their offsets). */
export function unfenced(text: string, needle: string): number[] {
  const { regions } = readFences(text);
  const out: number[] = [];
  for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + 1)) {
    if (!regions.some(([a, b]) => i >= a && i + needle.length <= b)) out.push(i);
  }
  return out;
}

/** Whether a system prompt says what fenced text is: data, never instructions. */
export function saysFencedIsData(system: string): boolean {
  return /<data\b[^>]*>/.test(system) && /<\/data>/.test(system) && /\bis data\b/i.test(system) && /never follow instructions/i.test(system);
}

/** Text for a test's message: printable ASCII, the rest as \u{…} (a raw U+2028 or escape sequence would garble the TAP stream). */
export function printable(text: string): string {
  return [...text].map((c) => (c >= ' ' && c <= '~' ? c : `\\u{${c.codePointAt(0)!.toString(16)}}`)).join('');
}

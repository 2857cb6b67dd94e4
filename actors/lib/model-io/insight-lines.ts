/**
 * The one reader of the findings format every insights prompt asks for (SPEC: the sample
 * prompts ask for `TYPE: ... | SEVERITY: ... | MESSAGE: ...`): the assistant's insights and the
 * operations console's both read replies here, so a reply one of them takes the other takes too.
 *
 * Strict: every non-blank line must be `TYPE: <word> | SEVERITY: info|success|warning|critical
 * | MESSAGE: <text>` (labels and words in any case; nothing before, between or after), else
 * the whole reply is refused with the reason. Which types a consumer knows is its own business:
 * each maps a word it does not know to its general type (`general`), never drops the line for it.
 */
import type { Insight } from '../../../protocol/schemas/insights.js';

/** The type a consumer gives a finding whose TYPE word it does not know. */
export const GENERAL_TYPE = 'general';

export interface InsightLine {
  /** lower case, as the model wrote it: the consumer maps it (`knownType`) */
  type: string;
  severity: Insight['severity'];
  message: string;
}

export type ParsedInsightLines = { ok: true; lines: InsightLine[] } | { ok: false; reason: string };

const LINE = /^TYPE:[ \t]*([A-Za-z][A-Za-z_-]{0,31})[ \t]*\|[ \t]*SEVERITY:[ \t]*(info|success|warning|critical)[ \t]*\|[ \t]*MESSAGE:[ \t]*(\S.*)$/i;

/** The reply, line by line; a message longer than `maxMessageChars` characters refuses it. */
export function parseInsightLines(raw: string, maxMessageChars: number): ParsedInsightLines {
  const text = raw.replace(/\r\n?/g, '\n').split('\n').map((l) => l.trim()).filter((l) => l !== '');
  if (text.length === 0) return { ok: false, reason: 'the reply is empty' };
  const lines: InsightLine[] = [];
  for (const [i, line] of text.entries()) {
    const m = LINE.exec(line);
    if (!m) return { ok: false, reason: `line ${i + 1} is not "TYPE: … | SEVERITY: info|success|warning|critical | MESSAGE: …"` };
    const message = m[3]!.trim();
    if ([...message].length > maxMessageChars) return { ok: false, reason: `line ${i + 1}: the message is longer than ${maxMessageChars} characters` };
    lines.push({ type: m[1]!.toLowerCase(), severity: m[2]!.toLowerCase() as Insight['severity'], message });
  }
  return { ok: true, lines };
}

/** A TYPE word as a consumer that knows `known` shows it: itself, else the general type. */
export function knownType(type: string, known: ReadonlySet<string>): string {
  return known.has(type) ? type : GENERAL_TYPE;
}

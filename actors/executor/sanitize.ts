/**
 * Database error text, made safe to show: the error leaves the executor with its code, its
 * SQLSTATE/error number and the identifiers it names, never with a value read from the data.
 *
 * Why: an error is a channel. `CAST(string_agg(email, ',') AS int)` makes PostgreSQL answer
 * `invalid input syntax for type integer: "ada@x.com,bob@y.org"`, MariaDB's
 * `EXTRACTVALUE(1, CONCAT(0x7e, (SELECT GROUP_CONCAT(email) ...)))` answers
 * `XPATH syntax error: '~ada@x.com,...'`, and the message goes to the user (HTTP, SSE, MCP), to
 * the audit trail (`query.rejected`), to the logs and back to the model (self-correction): masking
 * never sees it. So every DB_QUERY_FAILED is rewritten here before it is thrown on, and every
 * channel gets only this text.
 *
 * What a message keeps (everything else becomes `…`):
 * - a quoted part (`"…"`, `'…'`, MySQL/BigQuery backquotes) only when it is text the SQL that was
 *   sent holds: one of its words, names or string literals, or a run of the SQL itself starting
 *   (and, when short, ending) on a word boundary (MySQL's `near '...'`); a dotted name keeps the
 *   parts that are (`'shop.customerz'` → `'….customerz'`); or an SQL keyword or type name (and
 *   MySQL's fixed `'field list'` phrases). The model wrote those, so echoing them tells nobody
 *   anything new; a value from a row is in none of them (unless the SQL spelled it out).
 * - a word outside quotes only when the SQL holds it or it is one of the engines' message words
 *   (sanitize-words.ts): the fixed text of the message. A value smuggled out of its quotes
 *   (`'" ' || email || ' "'` makes `time zone "" ada@x.com "" not recognized`), a number or an
 *   unquoted value after a colon (`Bad int64 value: ada@x.com`, `index 100 out of valid range,
 *   0..14`) is dropped word by word. Line/column markers stay.
 * - the known value-echoing messages of each engine (below: `VALUE_SPANS`) have their value part
 *   kept only when the SQL holds it verbatim, whatever words it is made of.
 * - the details: the codes (sqlstate, errno, Trino's error name, BigQuery's reason...), and a
 *   HINT only after the same treatment; DETAIL, WHERE/CONTEXT and anything else are dropped
 *   (PostgreSQL's `Token "ada" is invalid.` / `JSON data, line 1: ada...`). No `cause` is kept.
 *
 * Not stopped here: a value the query itself spells out, and what a message reveals by existing
 * (an error that happens only when a row matches is a yes/no answer, as any WHERE clause is).
 */
import { CortadoError } from '../../protocol/errors.js';
import type { Dialect } from '../../protocol/schemas/common.js';
import { MESSAGE_WORDS, MYSQL_QUOTED_PHRASES, QUOTED_WORDS } from './sanitize-words.js';

/** What stands in for a dropped part. */
export const PLACEHOLDER = '…';

/** The longest message passed on (a longer one is cut; the end of a message rarely helps). */
const MAX_MESSAGE = 600;

/** A quoted run at least this long that matches the SQL from a word boundary (MySQL cuts `near '...'` at 80). */
const LONG_RUN = 40;

/** Details that are codes, passed on as they are (strings and numbers only). */
const CODE_DETAILS = ['sqlstate', 'errno', 'code', 'error_name', 'error_type', 'error_code', 'status', 'reason', 'http_status'] as const;

/** The error as it may leave the executor: DB_QUERY_FAILED rewritten (above), anything else as it is. */
export function sanitizeDbError(err: CortadoError, dialect: Dialect, sql: ReadonlyArray<string | undefined>): CortadoError {
  if (err.code !== 'DB_QUERY_FAILED') return err;
  const ref = reference(sql);
  const message = sanitizeWith(err.message, dialect, ref) || 'the database refused the query';
  const details: Record<string, unknown> = {};
  const d = err.details ?? {};
  for (const key of CODE_DETAILS) {
    const v = d[key];
    if (typeof v === 'number' || (typeof v === 'string' && v.length <= 64)) details[key] = v;
  }
  if (typeof d.hint === 'string' && d.hint) {
    const hint = sanitizeWith(d.hint, dialect, ref);
    if (hint) details.hint = hint;
  }
  return new CortadoError('DB_QUERY_FAILED', message, details);
}

/** One message (or hint) of the database, as it may be shown, given the SQL that was sent. */
export function sanitizeDbMessage(message: string, dialect: Dialect, sql: ReadonlyArray<string | undefined>): string {
  return sanitizeWith(message, dialect, reference(sql));
}

// ---- what the SQL holds ------------------------------------------------------------------------

interface Reference {
  /** the SQL texts, lower-cased */
  texts: string[];
  /** its words, chunks, names and literal contents, lower-cased */
  pieces: Set<string>;
}

const WORD = /[\p{L}\p{N}_$]+/gu;
const QUOTED_IN_SQL: ReadonlyArray<[string, RegExp]> = [
  ["'", /'((?:[^'\\]|''|\\.)*)'/gs],
  ['"', /"((?:[^"\\]|""|\\.)*)"/gs],
  ['`', /`((?:[^`]|``)*)`/gs],
];

/**
 * Everything of the SQL a message may echo. Not the guard's lexer on purpose: any text of the
 * SQL is fair to echo (the model wrote it), so this needs no precision, and it must never fail.
 */
function reference(sql: ReadonlyArray<string | undefined>): Reference {
  const texts: string[] = [];
  const pieces = new Set<string>();
  for (const s of sql) {
    if (!s) continue;
    const lc = s.toLowerCase();
    texts.push(lc);
    for (const m of lc.matchAll(WORD)) pieces.add(m[0]);
    for (const chunk of chunksOf(lc)) pieces.add(chunk);
    for (const [q, re] of QUOTED_IN_SQL) {
      for (const m of lc.matchAll(re)) {
        const content = m[1] ?? '';
        pieces.add(content);
        pieces.add(content.split(q + q).join(q));
        pieces.add(content.replace(/\\(.)/gs, '$1'));
      }
    }
  }
  return { texts, pieces };
}

/** The chunks of a text the way a message is cut into them (whitespace and brackets apart, edges trimmed). */
function chunksOf(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.split(/[\s()[\]{},;]+/)) {
    const core = trimEdges(raw);
    if (core) out.push(core);
  }
  return out;
}

const EDGE_CHARS = ".:;!?,'\"`<>";

function trimEdges(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && EDGE_CHARS.includes(s[a]!)) a++;
  while (b > a && EDGE_CHARS.includes(s[b - 1]!)) b--;
  return s.slice(a, b);
}

const isWordChar = (c: string | undefined): boolean => c !== undefined && /[\p{L}\p{N}_$]/u.test(c);

/** Whether `lc` is a run of one of the SQL texts that starts (and, when short, ends) on a word boundary. */
function inSqlText(lc: string, ref: Reference): boolean {
  if (lc.length === 0) return true;
  for (const text of ref.texts) {
    for (let at = text.indexOf(lc); at >= 0; at = text.indexOf(lc, at + 1)) {
      const end = at + lc.length;
      const startOk = !isWordChar(lc[0]) || !isWordChar(text[at - 1]);
      const endOk = !isWordChar(lc.at(-1)) || !isWordChar(text[end]) || lc.length >= LONG_RUN;
      if (startOk && endOk) return true;
    }
  }
  return false;
}

// ---- the message -------------------------------------------------------------------------------

/** Parts of known messages that are a value from the data: kept only when the SQL holds them. */
const VALUE_SPANS: Readonly<Record<Dialect, readonly RegExp[]>> = {
  postgresql: [
    /^invalid input syntax for type [\w ()]+: (?<v>.*)$/d,
    /^invalid input value for enum [^:]+: (?<v>.*)$/d,
    /^malformed [\w ]+ literal: (?<v>.*)$/d,
    /^value (?<v>.*) is out of range for type [\w ]+$/d,
    /^invalid value (?<v>.*) for "[^"]*"$/d,
    /^(?<v>.*) is not a valid (?:binary|hexadecimal|octal) digit$/d,
    /^invalid (?:symbol|hexadecimal digit|size|configuration parameter name)[: ]+(?<v>".*")(?: found while decoding \w+ sequence)?$/d,
    /^(?:time zone|unit) (?<v>.*) not recognized(?: for type [\w ]+)?$/d,
    /^(?:date\/time|date|time|timestamp|interval|datetime) (?:field )?value out of range: (?<v>.*)$/d,
    /^timestamp out of range: (?<v>.*)$/d,
    /^invalid byte sequence for encoding "[^"]*": (?<v>.*)$/d,
    /^character with byte sequence (?<v>.*) in encoding "[^"]*" has no equivalent in encoding "[^"]*"$/d,
    /^unrecognized configuration parameter (?<v>.*)$/d,
  ],
  mysql: [
    // the regular expression engine's own words, in quotes: read as words, not as a value
    /^Regex error (?<t>'.*')$/d,
    /^XPATH syntax error: (?<v>.*)$/d,
    /^Truncated incorrect [\w() ]+ value: (?<v>.*)$/d,
    /^Incorrect [\w ]+ value: (?<v>.*?)(?: for (?:column|function) .*)?$/d,
    /^Duplicate entry (?<v>.*) for key .*$/d,
  ],
  trino: [
    /^Cannot cast (?:\w+(?:\([\d, ]+\))? )?(?<v>'.*') to [\w() ,]+$/d,
    /^Value cannot be cast to [\w() ]+: (?<v>.*)$/d,
    /^Invalid format: (?<v>.*)$/d,
    /^Out of range for \w+: (?<v>.*)$/d,
    /^Value (?<v>.*) does not fit in type .*$/d,
  ],
  bigquery: [
    /^Bad \w+ value: (?<v>.*?)(?: at \[\d+:\d+\])?$/d,
    /^Invalid (?:\w+ )?(?:date|time|datetime|timestamp|numeric|bignumeric|interval|json|uuid|string)(?: value| string)?: (?<v>.*?)(?: at \[\d+:\d+\])?$/d,
    /^Could not (?:cast|parse) (?:literal )?(?<v>.*?) (?:to type|as) .*$/d,
    /^Failed to parse input string (?<v>.*?)(?: at \[\d+:\d+\])?$/d,
    /^division by zero: (?<v>.*?)(?: at \[\d+:\d+\])?$/d,
  ],
};

/** Position markers, kept as they are. */
const MARKERS: Readonly<Record<Dialect, RegExp>> = {
  postgresql: /\b(?:line|column|position|offset|argument|row) \d+\b/gi,
  mysql: /\b(?:line|column|position|offset|argument|row) \d+\b/gi,
  trino: /\bline \d+:\d+\b|\b(?:line|column|position|offset|argument|row) \d+\b/gi,
  bigquery: /\[\d+:\d+\]|\b(?:line|column|position|offset|argument|row) \d+\b/gi,
};

const QUOTES: Readonly<Record<Dialect, string>> = { postgresql: `"'`, mysql: `'"\``, trino: `'"`, bigquery: `'"\`` };

/** Before an opening quote: the start, a space, a bracket, a separator or a dot. */
const OPENS_AFTER = /[\s([{,:=;.]/;
/** After a closing quote: the end, a space, a closing bracket or a punctuation mark. */
const CLOSES_BEFORE = /[\s.,;:)\]}!?]/;
const SEPARATOR = /[()[\]{},;]/;

interface Span {
  start: number;
  end: number;
  /** value: kept only when the SQL holds it; text: read word by word; marker: kept */
  kind: 'value' | 'text' | 'marker';
}

function sanitizeWith(message: string, dialect: Dialect, ref: Reference): string {
  let text = message.replace(/\s+/g, ' ').trim();
  if (text.length > MAX_MESSAGE) text = `${text.slice(0, MAX_MESSAGE)} ${PLACEHOLDER}`;
  const spans = spansOf(text, dialect);
  const quotes = QUOTES[dialect];
  let out = '';
  let i = 0;
  const n = text.length;
  while (i < n) {
    const span = spans.find((s) => s.start === i);
    if (span) {
      const part = text.slice(span.start, span.end);
      out += span.kind === 'marker' ? part : span.kind === 'text' ? textPart(part, ref) : valuePart(part, ref);
      i = span.end;
      continue;
    }
    const c = text[i]!;
    if (c === ' ') {
      out += c;
      i++;
      continue;
    }
    if (SEPARATOR.test(c)) {
      out += c;
      i++;
      continue;
    }
    if (quotes.includes(c) && (i === 0 || OPENS_AFTER.test(text[i - 1]!))) {
      const close = closingQuote(text, i, spans);
      if (close < 0) {
        // unterminated: nothing after it can be told apart from a value
        out += c + PLACEHOLDER;
        break;
      }
      out += c + quotedPart(text.slice(i + 1, close), dialect, ref) + c;
      i = close + 1;
      continue;
    }
    // a chunk: up to a space, a separator, a quote that opens, or a span
    let j = i + 1;
    while (j < n) {
      const d = text[j]!;
      if (d === ' ' || SEPARATOR.test(d) || spans.some((s) => s.start === j)) break;
      if (quotes.includes(d) && OPENS_AFTER.test(text[j - 1]!)) break;
      j++;
    }
    out += chunkPart(text.slice(i, j), ref);
    i = j;
  }
  return out.replace(/ +/g, ' ').trim();
}

/** The value spans of the dialect's known messages (a Trino `line 1:8: ` prefix allowed), and the position markers. */
function spansOf(text: string, dialect: Dialect): Span[] {
  const spans: Span[] = [];
  const prefix = dialect === 'trino' ? /^line \d+:\d+: /.exec(text)?.[0].length ?? 0 : 0;
  const body = text.slice(prefix);
  for (const re of VALUE_SPANS[dialect]) {
    const m = re.exec(body);
    const v = m?.indices?.groups?.v;
    const t = m?.indices?.groups?.t;
    const at = v ?? t;
    if (at && at[1] > at[0]) {
      spans.push({ start: prefix + at[0], end: prefix + at[1], kind: v ? 'value' : 'text' });
      break;
    }
  }
  for (const m of text.matchAll(MARKERS[dialect])) {
    const start = m.index;
    const end = start + m[0].length;
    if (!spans.some((s) => start < s.end && end > s.start)) spans.push({ start, end, kind: 'marker' });
  }
  return spans.sort((a, b) => a.start - b.start);
}

/** The closing quote of the one opened at `open`: the next same quote followed by an end, a space or punctuation. */
function closingQuote(text: string, open: number, spans: readonly Span[]): number {
  const q = text[open]!;
  for (let j = text.indexOf(q, open + 1); j >= 0; j = text.indexOf(q, j + 1)) {
    // a known message's value span inside: the quotes are not a pair (a position marker may be quoted text)
    if (spans.some((s) => s.kind !== 'marker' && s.start > open && s.start < j)) return -1;
    if (j + 1 === text.length || CLOSES_BEFORE.test(text[j + 1]!)) return j;
  }
  return -1;
}

/** A known message's fixed text in quotes (a regular expression engine's words): word by word. */
function textPart(part: string, ref: Reference): string {
  const q = part[0]!;
  const inner = part.length >= 2 && part.at(-1) === q ? part.slice(1, -1) : part;
  const words = inner.split(' ').map((w) => chunkPart(w, ref)).join(' ');
  return inner === part ? words : `${q}${words}${q}`;
}

/** A known message's value: as it is when the SQL holds it, else the placeholder (in its quotes). */
function valuePart(part: string, ref: Reference): string {
  const q = part[0];
  const quoted = part.length >= 2 && q !== undefined && `'"\``.includes(q) && part.at(-1) === q;
  const inner = quoted ? part.slice(1, -1) : part;
  const lc = inner.toLowerCase();
  if (inner === '' || ref.pieces.has(lc) || inSqlText(lc, ref)) return part;
  return quoted ? `${q}${PLACEHOLDER}${q}` : PLACEHOLDER;
}

const IDENTIFIER = /^[\p{L}_][\p{L}\p{N}_$]*$/u;

/** A quoted part of a message. */
function quotedPart(content: string, dialect: Dialect, ref: Reference): string {
  const lc = content.toLowerCase();
  if (content === '' || ref.pieces.has(lc) || inSqlText(lc, ref)) return content;
  if (QUOTED_WORDS.has(lc) || (dialect === 'mysql' && MYSQL_QUOTED_PHRASES.has(lc))) return content;
  // punctuation a parser says it expected (`Expecting: ',', ')'`)
  if (content.length <= 3 && !/[\p{L}\p{N}]/u.test(content)) return content;
  const dotted = partwise(content, ref);
  return dotted ?? PLACEHOLDER;
}

/** `shop.customerz` → `….customerz`: a dotted name keeps the parts the SQL holds; undefined when not a plain dotted name. */
function partwise(content: string, ref: Reference): string | undefined {
  // MySQL writes `db`.`t`.`c` inside its quoted expressions; only plain names are split here
  const parts = content.split('.');
  if (parts.length < 2 || !parts.every((p) => IDENTIFIER.test(p))) return undefined;
  return parts.map((p) => (ref.pieces.has(p.toLowerCase()) ? p : PLACEHOLDER)).join('.');
}

/** A word (or run of non-space characters) outside quotes. */
function chunkPart(chunk: string, ref: Reference): string {
  let a = 0;
  let b = chunk.length;
  while (a < b && EDGE_CHARS.includes(chunk[a]!)) a++;
  while (b > a && EDGE_CHARS.includes(chunk[b - 1]!)) b--;
  const core = chunk.slice(a, b);
  if (core === '' || wordOk(core, ref)) return chunk;
  const dotted = partwise(core, ref);
  return chunk.slice(0, a) + (dotted ?? PLACEHOLDER) + chunk.slice(b);
}

function wordOk(core: string, ref: Reference): boolean {
  // operators and punctuation carry no value
  if (!/[\p{L}\p{N}]/u.test(core)) return true;
  const lc = core.toLowerCase();
  if (ref.pieces.has(lc) || MESSAGE_WORDS.has(lc)) return true;
  // $1: a parameter of the statement
  if (/^\$\d+$/.test(core)) return true;
  // read-only, IN/ALL/ANY: every part a message word
  const parts = lc.split(/[-/]/);
  return parts.length > 1 && parts.every((p) => p === '' || MESSAGE_WORDS.has(p) || ref.pieces.has(p));
}

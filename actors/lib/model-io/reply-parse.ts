/**
 * Reading what the model wrote. Replies are parsed robustly (fenced blocks, `SQL:` labels,
 * bold markers, any order), but never guessed: a reply that carries neither SQL nor a chat
 * message is LLM_BAD_REPLY.
 */
import { CortadoError } from '../../../protocol/errors.js';

export interface ParsedSqlReply {
  intent: 'sql' | 'chat';
  sql?: string;
  explanation?: string;
  message?: string;
}

const LABEL = (name: string): RegExp => new RegExp(`^[ \\t>*_#-]*${name}[ \\t*_]*:[ \\t*_]*`, 'im');
const FENCE = /```[ \t]*([A-Za-z]*)[^\n]*\n([\s\S]*?)```/g;
const SQL_START = /^\s*(\(|select\b|with\b|values\b|table\b)/i;

export function parseSqlReply(raw: string): ParsedSqlReply {
  const text = raw.replace(/\r\n?/g, '\n').trim();
  if (!text) throw bad('the model returned an empty reply');
  const intentMatch = /^[ \t>*_#-]*intent[ \t*_]*:[ \t*_]*(sql|chat)\b/im.exec(text);
  const declared = intentMatch?.[1]?.toLowerCase() as 'sql' | 'chat' | undefined;

  const sql = extractSql(text);
  const explanation = section(text, 'explanation');
  const message = section(text, 'message');

  if (declared === 'chat' || (!declared && !sql && message)) {
    const msg = message ?? stripLabels(text);
    if (!msg) throw bad('the model chose chat but wrote no message');
    return { intent: 'chat', message: msg };
  }
  if (!sql) {
    throw bad(declared === 'sql' ? 'the model chose SQL but wrote no SQL statement' : 'the reply has neither SQL nor a message');
  }
  const out: ParsedSqlReply = { intent: 'sql', sql };
  if (explanation) out.explanation = explanation;
  return out;
}

export function parseIntentReply(raw: string): { intent: 'sql' | 'chat'; confidence: number } {
  const text = raw.replace(/\r\n?/g, '\n').trim();
  const m = /intent[ \t*_]*:[ \t*_]*(sql|chat)\b/i.exec(text) ?? /^\s*(sql|chat)\s*$/i.exec(text);
  if (!m?.[1]) throw bad('the intent reply names neither sql nor chat');
  const c = /confidence[ \t*_]*:[ \t*_]*([0-9]*\.?[0-9]+)/i.exec(text);
  let confidence = c?.[1] ? Number(c[1]) : 0.8;
  if (confidence > 1 && confidence <= 100) confidence /= 100;
  if (!Number.isFinite(confidence) || confidence < 0 || confidence > 1) confidence = 0.8;
  return { intent: m[1].toLowerCase() as 'sql' | 'chat', confidence };
}

function extractSql(text: string): string | undefined {
  // 1. A fenced block labelled as SQL (or unlabelled) whose body looks like a query.
  const fences = [...text.matchAll(FENCE)];
  const labelled = fences.find((f) => /^(sql|postgres|postgresql|pgsql|mysql|trino|presto|bigquery|googlesql)$/i.test(f[1] ?? ''));
  const plain = fences.find((f) => SQL_START.test(f[2] ?? ''));
  const fenced = (labelled ?? plain)?.[2];
  if (fenced && fenced.trim()) return clean(fenced);
  // 2. After an `SQL:` label, up to the next label or a blank line followed by prose.
  const label = LABEL('sql').exec(text);
  if (label) {
    const rest = text.slice(label.index + label[0].length);
    const end = rest.search(/\n[ \t>*_#-]*(explanation|message|intent)[ \t*_]*:/i);
    const body = clean(end >= 0 ? rest.slice(0, end) : rest);
    if (body && SQL_START.test(body)) return body;
  }
  // 3. A reply that is only a query.
  if (SQL_START.test(text) && !/\n\s*\n[A-Za-z]/.test(text)) return clean(text);
  return undefined;
}

function section(text: string, name: string): string | undefined {
  const m = LABEL(name).exec(text);
  if (!m) return undefined;
  let rest = text.slice(m.index + m[0].length);
  const end = rest.search(/\n[ \t>*_#-]*(intent|sql|explanation|message)[ \t*_]*:/i);
  if (end >= 0) rest = rest.slice(0, end);
  rest = rest.replace(FENCE, '').replace(/[*_]+$/g, '').trim();
  return rest || undefined;
}

function stripLabels(text: string): string {
  return text.replace(/^[ \t>*_#-]*intent[ \t*_]*:.*$/gim, '').trim();
}

function clean(sql: string): string {
  return sql.trim().replace(/^sql\s*\n/i, '').trim();
}

function bad(message: string): CortadoError {
  return new CortadoError('LLM_BAD_REPLY', message);
}

/**
 * The tables a model picked (catalog.linking: model), from a JSON reply `{"tables": [...]}` (a
 * bare array is taken too), inside a code fence or around prose. Only names of `allowed` count,
 * matched exactly, else ignoring case (the list's spelling is kept); the rest are returned as
 * `unknown` (a count for the log, never guessed into a near name). A reply with no JSON, or
 * with no `tables` list of strings, is LLM_BAD_REPLY.
 */
export function parseTableListReply(raw: string, allowed: readonly string[]): { tables: string[]; unknown: number } {
  const text = raw.replace(/\r\n?/g, '\n').trim();
  if (!text) throw bad('the model returned an empty reply');
  const names = jsonTables(text);
  if (!names) throw bad('the reply holds no JSON list of tables');
  const exact = new Set(allowed);
  const folded = new Map<string, string>();
  for (const a of allowed) if (!folded.has(a.toLowerCase())) folded.set(a.toLowerCase(), a);
  const tables: string[] = [];
  let unknown = 0;
  for (const n of names) {
    const name = exact.has(n) ? n : folded.get(n.trim().toLowerCase());
    if (name === undefined) unknown++;
    else if (!tables.includes(name)) tables.push(name);
  }
  return { tables, unknown };
}

/** The first JSON object (fenced blocks first) with a list of strings under `tables`, else a bare list of strings; an object without one is no list. */
function jsonTables(text: string): string[] | undefined {
  const tries = [...[...text.matchAll(FENCE)].map((f) => f[2] ?? ''), text];
  const strings = (v: unknown): string[] | undefined => (Array.isArray(v) && v.every((x) => typeof x === 'string') ? (v as string[]) : undefined);
  for (const t of tries) {
    const object = jsonBetween(t, '{', '}');
    if (object !== undefined) return object && typeof object === 'object' && !Array.isArray(object) ? strings((object as { tables?: unknown }).tables) : undefined;
    const list = strings(jsonBetween(t, '[', ']'));
    if (list) return list;
  }
  return undefined;
}

/** The JSON value from the first `open` to the last `close` of the text, or undefined when that is not JSON. */
function jsonBetween(text: string, open: string, close: string): unknown {
  const start = text.indexOf(open);
  const end = text.lastIndexOf(close);
  if (start < 0 || end <= start) return undefined;
  try {
    return JSON.parse(text.slice(start, end + 1)) as unknown;
  } catch {
    return undefined;
  }
}

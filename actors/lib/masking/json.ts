/**
 * What lineage knows about reading inside documents (JSON, and struct or composite values): the
 * path languages, and what each JSON function does with the document it is given. Shared by both
 * readers (lineage-pg.ts, lineage-nsp.ts), so every dialect reads a path the same way.
 *
 * A path is read into its steps: keys (names, decoded: `$."e\u006dail"` is `email`) and array
 * positions (INDEX). A path that cannot be read from the SQL text alone — a wildcard over keys
 * (`.*`, `.**`, `**`, `..`), a computed part, a variable, an item method that turns keys into
 * values (`.keyvalue()`), arithmetic, anything this reader does not know — is undefined: the key
 * it reaches is unknown, and lineage fails closed on it (lineage.ts).
 *
 * Paths read: SQL/JSON and PostgreSQL jsonpath (`lax`/`strict`, `$.a."b c"[0][*][last]`,
 * filters `? (...)`, item methods), MySQL/MariaDB (`$.a[1 to 3]`, `$**.x` is a wildcard),
 * BigQuery and JSONPath (`$['a']`, `$["a"]`, `$.a[0]`), Trino's `$.a`, `$["a"]`.
 */

/** An array position in a path: not a name, but the value is still inside the document. */
export const INDEX = '[]';

export interface PathSteps {
  /** keys and INDEX, outermost first */
  steps: string[];
  /** keys a filter tests (`? (@.email like_regex ...)`): names, not part of the value's path */
  tested: string[];
}

const ITEM_METHODS = new Set([
  'type', 'size', 'double', 'ceiling', 'floor', 'abs', 'datetime', 'bigint', 'boolean', 'date', 'decimal', 'integer', 'number',
  'string', 'time', 'time_tz', 'timestamp', 'timestamp_tz', 'length',
]);

const IDENT_START = /[A-Za-z_\u0080-\uffff]/;
const IDENT_PART = /[A-Za-z0-9_$\u0080-\uffff]/;

/** A path's steps, or undefined when the path cannot be read statically. */
export function parseJsonPath(text: string): PathSteps | undefined {
  let i = 0;
  const n = text.length;
  const steps: string[] = [];
  const tested: string[] = [];
  const ws = (): void => {
    while (i < n && /\s/.test(text[i]!)) i++;
  };
  ws();
  const mode = /^(lax|strict)\b/i.exec(text.slice(i));
  if (mode) i += mode[0].length;
  ws();
  if (text[i] !== '$') return undefined;
  i++;
  // MySQL `$**.x`: every depth
  if (text[i] === '*') return undefined;
  for (;;) {
    ws();
    if (i >= n) return { steps, tested };
    const c = text[i]!;
    if (c === '.') {
      i++;
      if (text[i] === '.' || text[i] === '*') return undefined; // `..x`, `.*`, `.**`
      ws();
      if (text[i] === '"') {
        const q = quoted(text, i, '"');
        if (!q) return undefined;
        steps.push(q.value);
        i = q.end;
        continue;
      }
      if (i < n && IDENT_START.test(text[i]!)) {
        let j = i + 1;
        while (j < n && IDENT_PART.test(text[j]!)) j++;
        const name = text.slice(i, j);
        i = j;
        ws();
        if (text[i] === '(') {
          // an item method: it changes the value, never which key is read (keyvalue() does: unknown)
          if (!ITEM_METHODS.has(name.toLowerCase())) return undefined;
          const close = balanced(text, i);
          if (close < 0) return undefined;
          i = close;
          continue;
        }
        steps.push(name);
        continue;
      }
      return undefined;
    }
    if (c === '[') {
      i++;
      ws();
      const q = text[i] === '"' || text[i] === "'" ? quoted(text, i, text[i]!) : undefined;
      if (q) {
        i = q.end;
        ws();
        if (text[i] !== ']') return undefined;
        i++;
        steps.push(q.value);
        continue;
      }
      // positions: *, numbers, last, last - n, ranges `a to b`, lists `a, b`
      const close = text.indexOf(']', i);
      if (close < 0) return undefined;
      const inside = text.slice(i, close);
      if (!/^\s*(\*|((last|\d+)(\s*-\s*\d+)?)(\s+to\s+(last|\d+)(\s*-\s*\d+)?)?(\s*,\s*(last|\d+)(\s*-\s*\d+)?(\s+to\s+(last|\d+)(\s*-\s*\d+)?)?)*)\s*$/i.test(inside)) return undefined;
      steps.push(INDEX);
      i = close + 1;
      continue;
    }
    if (c === '?') {
      // a filter: which items stay, not which key is read; the keys it tests are names
      i++;
      ws();
      if (text[i] !== '(') return undefined;
      const close = balanced(text, i);
      if (close < 0) return undefined;
      for (const m of text.slice(i, close).matchAll(/\.\s*("(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_$]*)/g)) {
        const raw = m[1]!;
        tested.push(raw.startsWith('"') ? (quoted(raw, 0, '"')?.value ?? raw) : raw);
      }
      i = close;
      continue;
    }
    return undefined;
  }
}

/** A quoted name at `from` (JSON escapes, and `\xNN`, `\u{...}` as jsonpath has them). */
function quoted(text: string, from: number, quote: string): { value: string; end: number } | undefined {
  let value = '';
  let i = from + 1;
  while (i < text.length) {
    const c = text[i]!;
    if (c === quote) return { value, end: i + 1 };
    if (c !== '\\') {
      value += c;
      i++;
      continue;
    }
    const e = text[i + 1];
    if (e === undefined) return undefined;
    const simple: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '"': '"', "'": "'", '\\': '\\', '/': '/' };
    if (e in simple) {
      value += simple[e];
      i += 2;
    } else if (e === 'x' && /^[0-9A-Fa-f]{2}$/.test(text.slice(i + 2, i + 4))) {
      value += String.fromCharCode(parseInt(text.slice(i + 2, i + 4), 16));
      i += 4;
    } else if (e === 'u' && text[i + 2] === '{') {
      const close = text.indexOf('}', i + 3);
      const hex = close < 0 ? '' : text.slice(i + 3, close);
      if (!/^[0-9A-Fa-f]{1,6}$/.test(hex)) return undefined;
      value += String.fromCodePoint(parseInt(hex, 16));
      i = close + 1;
    } else if (e === 'u' && /^[0-9A-Fa-f]{4}$/.test(text.slice(i + 2, i + 6))) {
      value += String.fromCharCode(parseInt(text.slice(i + 2, i + 6), 16));
      i += 6;
    } else return undefined; // an escape this reader does not know: the name is not certain
  }
  return undefined;
}

/** The index just after the parenthesis that closes the one at `open` (quotes respected), or -1. */
function balanced(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"' || c === "'") {
      const q = quoted(text, i, c);
      if (!q) return -1;
      i = q.end - 1;
      continue;
    }
    if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i + 1;
  }
  return -1;
}

/**
 * A PostgreSQL text-array literal (`{contact,"e\"mail"}`, the right side of `#>`), as its
 * elements; undefined when it is not a flat array literal.
 */
export function parsePgTextArray(text: string): string[] | undefined {
  const t = text.trim();
  if (!t.startsWith('{') || !t.endsWith('}')) return undefined;
  const body = t.slice(1, -1);
  const out: string[] = [];
  if (body.trim() === '') return out;
  let i = 0;
  for (;;) {
    while (i < body.length && /\s/.test(body[i]!)) i++;
    let value = '';
    if (body[i] === '"') {
      i++;
      for (;;) {
        if (i >= body.length) return undefined;
        const c = body[i]!;
        if (c === '\\') {
          if (i + 1 >= body.length) return undefined;
          value += body[i + 1];
          i += 2;
          continue;
        }
        if (c === '"') {
          i++;
          break;
        }
        value += c;
        i++;
      }
      while (i < body.length && /\s/.test(body[i]!)) i++;
    } else {
      while (i < body.length && body[i] !== ',') {
        const c = body[i]!;
        if (c === '{' || c === '}' || c === '"') return undefined;
        if (c === '\\') {
          value += body[i + 1] ?? '';
          i += 2;
          continue;
        }
        value += c;
        i++;
      }
      value = value.trim();
    }
    out.push(value);
    if (i >= body.length) return out;
    if (body[i] !== ',') return undefined;
    i++;
  }
}

/**
 * How a value is used where it stands (lineage.ts applies it to what the value is made of):
 * - value: it IS the result, or is kept whole inside it (a document built around it, COALESCE, a
 *   CASE branch, a cast to text or JSON, min/max, a JSON path read);
 * - leaf: cast to a number, date, boolean...: whatever it was, it is no document (the cast fails
 *   on one), so nothing was nested in it;
 * - test: only compared or tested (a condition, a comparison, IS NULL, a JSON containment or
 *   existence test, a document's type or length): the result is a yes/no or a count, not the value;
 * - derived: turned into another value (any other function, operator or aggregate).
 */
export type Use = 'value' | 'derived' | 'test' | 'leaf';

/** The use of a part, given the use of the whole it is in and what the whole does to it. */
export function within(outer: Use, inner: 'keep' | 'derive' | 'test' | 'leaf'): Use {
  if (outer === 'test' || inner === 'test') return 'test';
  if (inner === 'leaf') return 'leaf';
  if (inner === 'derive') return 'derived';
  // keep: the part is the whole
  return outer;
}

/**
 * What a function does with its arguments (lower-cased last part of its name). Functions not
 * listed derive a new value from every argument.
 *
 * - keys: argument `doc` is a document, the arguments after it are keys, in order
 *   (jsonb_extract_path(doc, 'contact', 'email'));
 * - path: argument `doc` is a document, each argument in `paths` a path into it; `scalar`: the
 *   reader returns scalars only (JSON_VALUE, json_extract_scalar): what it read is a leaf;
 * - elements: the document's array elements;
 * - unpack: turns a document's members into rows or records without naming the keys
 *   (jsonb_each, json_populate_record in a select list): unknown keys;
 * - test: every argument is tested (jsonb_path_exists, JSON_CONTAINS, json_typeof, JSON_KEYS);
 * - keep: every argument is kept whole inside the result (to_jsonb, json_agg, JSON_ARRAY, min);
 * - object: alternating key, value arguments (json_build_object): keys become names (derived),
 *   values are kept;
 * - modify: argument 0 is a document kept whole, `paths` are paths into it (tested), the other
 *   arguments are kept (jsonb_set, JSON_SET, JSON_REMOVE).
 * - ifelse: argument 0 is a condition (tested), the others are kept (MySQL IF, BigQuery IF).
 * - first: argument 0 is kept, the others tested (nth_value(x, n), NULLIF).
 * - scalar: converts a JSON value to a number, boolean or string, and fails (or gives NULL) on
 *   an object or array (BigQuery INT64, LAX_STRING, STRING): what it read is a leaf.
 */
export type FunctionShape =
  | { kind: 'keys'; doc: number }
  | { kind: 'path'; doc: number; paths: number[] | 'rest'; scalar?: boolean }
  | { kind: 'elements'; doc: number }
  | { kind: 'unpack' }
  | { kind: 'test' }
  | { kind: 'keep' }
  | { kind: 'object' }
  | { kind: 'modify'; paths: number[] | 'odd' | 'rest' }
  | { kind: 'ifelse' }
  | { kind: 'first' }
  | { kind: 'scalar' };

const SHAPES = new Map<string, FunctionShape>();
function shape(s: FunctionShape, ...names: string[]): void {
  for (const n of names) SHAPES.set(n, s);
}

shape({ kind: 'keys', doc: 0 }, 'jsonb_extract_path', 'jsonb_extract_path_text', 'json_extract_path', 'json_extract_path_text', 'json_array_get');
shape({ kind: 'path', doc: 0, paths: [1] }, 'jsonb_path_query', 'jsonb_path_query_tz', 'jsonb_path_query_array', 'jsonb_path_query_array_tz', 'jsonb_path_query_first', 'jsonb_path_query_first_tz', 'json_query', 'json_query_array', 'json_extract_array');
// MySQL JSON_EXTRACT(doc, path, path...)
shape({ kind: 'path', doc: 0, paths: 'rest' }, 'json_extract');
shape({ kind: 'path', doc: 0, paths: [1], scalar: true }, 'json_value', 'json_extract_scalar', 'json_extract_string_array', 'json_value_array');
shape({ kind: 'elements', doc: 0 }, 'jsonb_array_elements', 'jsonb_array_elements_text', 'json_array_elements', 'json_array_elements_text');
shape({ kind: 'unpack' },
  'jsonb_each', 'jsonb_each_text', 'json_each', 'json_each_text',
  'jsonb_to_record', 'jsonb_to_recordset', 'json_to_record', 'json_to_recordset',
  'jsonb_populate_record', 'jsonb_populate_recordset', 'json_populate_record', 'json_populate_recordset', 'jsonb_populate_record_valid',
  'jsonb_path_query_keyvalue');
shape({ kind: 'test' },
  'jsonb_path_exists', 'jsonb_path_exists_tz', 'jsonb_path_match', 'jsonb_path_match_tz',
  'jsonb_typeof', 'json_typeof', 'jsonb_array_length', 'json_array_length', 'jsonb_object_keys', 'json_object_keys',
  'json_exists', 'json_contains', 'json_contains_path', 'json_overlaps', 'json_search', 'json_length', 'json_depth', 'json_type',
  'json_valid', 'json_keys', 'json_size', 'json_array_contains', 'json_schema_valid', 'json_equals', 'json_exists_path', 'is_json_scalar');
shape({ kind: 'keep' },
  'to_json', 'to_jsonb', 'array_to_json', 'row_to_json', 'json_agg', 'jsonb_agg', 'json_agg_strict', 'jsonb_agg_strict',
  'json_build_array', 'jsonb_build_array', 'jsonb_strip_nulls', 'json_strip_nulls', 'jsonb_pretty',
  'json_array', 'json_arrayagg', 'json_pretty', 'json_compact', 'json_detailed', 'json_loose', 'json_normalize', 'json_unquote',
  'json_merge', 'json_merge_patch', 'json_merge_preserve', 'parse_json', 'to_json_string', 'json_format', 'json_parse', 'json_strip_nulls',
  'json', 'json_scalar', 'json_serialize',
  // kept as they are, one of the values (unnest: the array's elements)
  'unnest', 'coalesce', 'ifnull', 'nvl', 'greatest', 'least', 'min', 'max', 'any_value', 'first_value', 'last_value', 'mode', 'percentile_disc');
shape({ kind: 'object' }, 'json_build_object', 'jsonb_build_object', 'json_object', 'json_objectagg', 'json_object_agg', 'jsonb_object_agg',
  'json_object_agg_strict', 'jsonb_object_agg_strict', 'json_object_agg_unique', 'jsonb_object_agg_unique', 'json_object_agg_unique_strict', 'jsonb_object_agg_unique_strict');
shape({ kind: 'modify', paths: [1] }, 'jsonb_set', 'jsonb_insert', 'jsonb_set_lax');
shape({ kind: 'modify', paths: 'odd' }, 'json_set', 'json_insert', 'json_replace', 'json_array_append', 'json_array_insert');
shape({ kind: 'modify', paths: 'rest' }, 'json_remove');
shape({ kind: 'ifelse' }, 'if', 'iff', 'iif');
shape({ kind: 'first' }, 'nth_value', 'nullif', 'lag', 'lead');
shape({ kind: 'scalar' }, 'string', 'lax_string', 'int64', 'lax_int64', 'float64', 'lax_float64', 'bool', 'lax_bool', 'double', 'lax_double');

/** What a function does with its arguments (FunctionShape), by its name as written. */
export function functionShape(name: string): FunctionShape | undefined {
  const n = name.toLowerCase();
  const dot = n.lastIndexOf('.');
  // SAFE.json_value (BigQuery), pg_catalog.jsonb_each
  return SHAPES.get(dot < 0 ? n : n.slice(dot + 1));
}

/** Whether a function reads inside documents (for one the lists above do not know: fail closed). */
export function looksLikeJson(name: string): boolean {
  return /json/i.test(name);
}

/**
 * What a cast to `type` (its last name part, lower-cased) does to the value: keep (text, JSON:
 * the document's text is the document), leaf (numbers, dates, booleans...: a document would not
 * cast), or derive (anything else: arrays, bytes, records...).
 */
export function castUse(type: string, isArray: boolean): 'keep' | 'leaf' | 'derive' {
  if (isArray) return 'derive';
  const t = type.toLowerCase();
  if (KEEP_TYPES.has(t)) return 'keep';
  if (LEAF_TYPES.has(t)) return 'leaf';
  return 'derive';
}

const KEEP_TYPES = new Set(['text', 'varchar', 'bpchar', 'char', 'character', 'character varying', 'name', 'json', 'jsonb', 'string', 'unknown', 'citext', 'nvarchar', 'nchar']);
const LEAF_TYPES = new Set([
  'int', 'int2', 'int4', 'int8', 'integer', 'smallint', 'bigint', 'int64', 'signed', 'unsigned', 'tinyint', 'mediumint',
  'numeric', 'decimal', 'bignumeric', 'float', 'float4', 'float8', 'float64', 'real', 'double', 'double precision', 'money',
  'bool', 'boolean', 'date', 'time', 'timetz', 'timestamp', 'timestamptz', 'datetime', 'interval', 'uuid', 'year',
]);

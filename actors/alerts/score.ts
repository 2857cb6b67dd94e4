/**
 * The risk score of one generated query: 0–100, the sum of the factors below, capped at 100.
 *
 * The SQL is read with a token scan, not a parser: comments and string literals are dropped,
 * words, quoted identifiers and a little punctuation are kept. That is enough to score and it
 * never fails, whatever the dialect or however broken the SQL is (a rejected statement is
 * scored too). It is conservative in the direction of alerting: an alias named like a
 * sensitive column counts only when it is not introduced by AS, a WHERE anywhere (subqueries
 * included) counts as a filter unless it is a tautology (`WHERE 1=1`, `WHERE true`).
 *
 * Every factor, with its points (docs/configuration.md "Security alerts and e-mail" shows the same table):
 */
import type { RiskFactor } from '../../protocol/schemas/policy.js';
import { scan, type ScanToken as Token } from '../lib/sql/lexer/scan.js';

export const FACTORS = {
  /** columns named like secrets (password, ssn, card, token, iban, ...: 30 for the first, 15 each further) or personal data
   *  (email, phone, address, birth date, salary, ...: 15 for the first, 10 each further); at most 60 */
  sensitive_columns: { secretFirst: 30, secretMore: 15, personalFirst: 15, personalMore: 10, cap: 60 },
  /** a column matches an enabled mask rule's field_pattern (this alone also fires the alert) */
  masked_column: 30,
  /** SELECT * or t.* */
  select_star: 10,
  /** reads a table without a WHERE (or with a tautological one) */
  no_filter: 10,
  /** no filter, and sensitive or masked columns: a bulk read of personal data */
  unfiltered_sensitive: 20,
  /** no filter on a table the database estimates at LARGE_TABLE_ROWS rows or more */
  large_table: 15,
  /** information_schema, pg_catalog, performance_schema, mysql.*, sys.*, system.*, pg_* relations */
  system_catalog: 40,
  /** the catalogs that hold credentials (pg_shadow, pg_authid, mysql.user, user mappings) */
  credential_catalog: 30,
  /** a statement that writes or changes the schema or the session (INSERT, DROP, GRANT, SELECT INTO, ...) */
  write_statement: 75,
  /** a call that reads server files, sleeps, runs SQL text or acts on the server (pg_read_file, dblink, sleep, ...) */
  dangerous_function: 75,
  /** more than one statement */
  multiple_statements: 50,
  /** FOR UPDATE / FOR SHARE / LOCK IN SHARE MODE */
  locking_clause: 30,
  /** the SQL reaches a catalog outside the session's (the guard refused it) */
  catalog_lock_violation: 75,
  /** the guard refused the SQL for another reason (parse error, empty, unsupported) */
  guard_violation: 15,
  /** the database refused it for lack of privileges: probing */
  permission_denied: 25,
  /** the result hit the row cap (truncated) or came within 90% of query.max_limit */
  many_rows: 15,
  /** BURST_QUESTIONS or more questions by the same user in one BURST_WINDOW_MS window */
  burst: 20,
} as const;

export const LARGE_TABLE_ROWS = 100_000;
export const BURST_QUESTIONS = 20;
export const BURST_WINDOW_MS = 5 * 60_000;

// ---- the scan -----------------------------------------------------------------------------

/** Words that are never column names here (the scan ignores them as identifiers). */
const KEYWORDS = new Set(`select from where and or not as on join left right inner outer full cross natural using group by order
  having limit offset fetch first next rows row only distinct all union intersect except with recursive case when then else end
  in is null like ilike between exists any some asc desc nulls true false interval cast lateral over partition window filter
  within top percent into values table for update share of nowait skip locked lock mode key`.split(/\s+/).filter(Boolean));

/** A statement that starts with one of these writes, or changes schema, privileges or the session. */
const WRITE_STARTS = new Set(`insert update delete merge upsert replace drop create alter truncate rename grant revoke copy
  call exec execute do load import attach detach set reset vacuum reindex cluster comment refresh discard prepare deallocate
  begin commit rollback savepoint unlock handler install uninstall kill shutdown flush purge optimize repair`.split(/\s+/).filter(Boolean));

/** Functions whose call is an attack sign whatever the dialect (`*` = any run of characters). */
const DANGEROUS_FUNCTIONS = [
  'pg_read_file', 'pg_read_binary_file', 'pg_ls_*', 'pg_stat_file', 'pg_file_*', 'pg_sleep*', 'pg_terminate_backend',
  'pg_cancel_backend', 'pg_reload_conf', 'lo_import', 'lo_export', 'lo_from_bytea', 'dblink*', 'query_to_xml*', 'set_config',
  'sleep', 'benchmark', 'load_file', 'sys_exec', 'sys_eval', 'xp_cmdshell', 'xp_regread', 'sp_execute*', 'utl_*',
  'http_get', 'http_post', 'external_query',
].map(globToRegExp);

const SYSTEM_SCHEMAS = new Set(['information_schema', 'pg_catalog', 'performance_schema', 'sys']);
/** first part of a name that is a system catalog when the name is qualified (mysql.user, system.runtime.queries) */
const SYSTEM_FIRST_PARTS = new Set(['mysql', 'system']);
const CREDENTIAL_RELATIONS = new Set(['pg_shadow', 'pg_authid', 'pg_user_mapping', 'pg_user_mappings', 'user_mappings', 'user_mapping_options']);

// ---- sensitive names ----------------------------------------------------------------------

/** One word of a name (split at `_`, digits and camelCase) that marks a secret. */
const SECRET_WORDS = new Set(['password', 'passwd', 'pwd', 'passphrase', 'secret', 'ssn', 'card', 'cvv', 'cvc', 'iban', 'passport', 'pin', 'apikey']);
/** Whole names (separators removed) that mark a secret. */
const SECRET_NAMES = new Set([
  'apikey', 'privatekey', 'creditcard', 'cardnumber', 'ccnumber', 'accountnumber', 'routingnumber', 'taxid', 'nationalid',
  'socialsecurity', 'socialsecuritynumber', 'sortcode', 'bankaccount', 'token', 'accesstoken', 'refreshtoken', 'authtoken', 'apitoken',
]);
/** One word of a name that marks personal data. */
const PERSONAL_WORDS = new Set([
  'email', 'phone', 'mobile', 'telephone', 'fax', 'address', 'street', 'postcode', 'zip', 'zipcode', 'birth', 'birthday', 'birthdate',
  'dob', 'salary', 'wage', 'income', 'compensation', 'gender', 'ethnicity', 'religion', 'diagnosis',
]);
const PERSONAL_NAMES = new Set(['email', 'dateofbirth', 'emailaddress', 'phonenumber', 'ipaddress']);

export type Sensitivity = 'secret' | 'personal';

function words(name: string): string[] {
  return name
    .replace(/([a-z])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[^a-z]+/)
    .filter(Boolean);
}

/** The word and its likely singulars (addresses → address, salaries → salary, cards → card). */
function forms(w: string): string[] {
  const out = [w];
  if (w.endsWith('ies')) out.push(`${w.slice(0, -3)}y`);
  if (w.endsWith('es')) out.push(w.slice(0, -2));
  if (w.endsWith('s') && !w.endsWith('ss')) out.push(w.slice(0, -1));
  return out;
}

/** Whether a column name looks sensitive, and how. */
export function sensitivity(name: string): Sensitivity | undefined {
  const ws = words(name);
  const joined = ws.join('');
  const has = (set: Set<string>) => ws.some((w) => forms(w).some((f) => set.has(f)));
  if (forms(joined).some((f) => SECRET_NAMES.has(f)) || has(SECRET_WORDS)) return 'secret';
  if (forms(joined).some((f) => PERSONAL_NAMES.has(f)) || has(PERSONAL_WORDS)) return 'personal';
  return undefined;
}

// ---- masks --------------------------------------------------------------------------------

/** fnmatch-style glob (`*`, `?`, `[abc]`, `[!abc]`), whole name, case-insensitive. */
export function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end < 0) {
        re += '\\[';
        continue;
      }
      let body = glob.slice(i + 1, end);
      if (body.startsWith('!')) body = `^${body.slice(1)}`;
      re += `[${body.replace(/\\/g, '\\\\')}]`;
      i = end;
    } else re += c.replace(/[.+^${}()|\\\]]/g, '\\$&');
  }
  return new RegExp(`^${re}$`, 'i');
}

// ---- what the SQL reads -------------------------------------------------------------------

export interface SqlShape {
  statements: number;
  write: string | undefined;
  dangerous: string | undefined;
  locking: boolean;
  star: boolean;
  /** a WHERE that is not a tautology, anywhere */
  filtered: boolean;
  /** relations after FROM/JOIN, each as lower-cased parts (`["public","orders"]`) */
  tables: string[][];
  /** column-like identifiers: not keywords, tables, functions or AS aliases */
  columns: Set<string>;
}

const isWord = (tok: Token | undefined, ...v: string[]): boolean => tok?.t === 'word' && v.includes(tok.v);
const isPunct = (tok: Token | undefined, v: string): boolean => tok?.t === 'punct' && tok.v === v;
const isName = (tok: Token | undefined): boolean => tok !== undefined && (tok.t === 'ident' || (tok.t === 'word' && !KEYWORDS.has(tok.v)));

export function shapeOf(sql: string): SqlShape {
  const toks = scan(sql);
  const shape: SqlShape = { statements: 0, write: undefined, dangerous: undefined, locking: false, star: false, filtered: false, tables: [], columns: new Set() };
  const skip = new Set<number>();

  // statements and what each starts with
  let atStart = true;
  let kind = '';
  for (let i = 0; i < toks.length; i++) {
    const tok = toks[i]!;
    if (isPunct(tok, ';')) {
      atStart = true;
      continue;
    }
    if (atStart) {
      shape.statements++;
      atStart = false;
      kind = tok.t === 'word' ? tok.v : '';
      if (WRITE_STARTS.has(kind)) shape.write ??= kind;
    }
    if (tok.t !== 'word') continue;
    // a data-modifying CTE: WITH x AS (DELETE ...)
    if (['insert', 'update', 'delete', 'merge'].includes(tok.v) && isPunct(toks[i - 1], '(')) shape.write ??= tok.v;
    // SELECT ... INTO (a table, a file, variables)
    if (tok.v === 'into' && (kind === 'select' || kind === 'with')) shape.write ??= 'select into';
    if (tok.v === 'for' && isWord(toks[i + 1], 'update', 'share', 'no', 'key')) shape.locking = true;
    if (tok.v === 'lock' && isWord(toks[i + 1], 'in') && isWord(toks[i + 2], 'share')) shape.locking = true;
    if (isPunct(toks[i + 1], '(') && !isPunct(toks[i - 1], '.')) {
      if (DANGEROUS_FUNCTIONS.some((re) => re.test(tok.v))) shape.dangerous ??= tok.v;
    }
    if (tok.v === 'where' && !tautology(toks, i + 1)) shape.filtered = true;
  }

  // SELECT *, t.*  (not count(*), not a * b)
  for (let i = 0; i < toks.length; i++) {
    if (!isPunct(toks[i], '*')) continue;
    const prev = toks[i - 1];
    if (isWord(prev, 'select', 'distinct', 'all') || isPunct(prev, ',') || (isPunct(prev, '.') && isName(toks[i - 2]))) shape.star = true;
  }

  // relations after FROM / JOIN (and the comma list of a FROM)
  for (let i = 0; i < toks.length; i++) {
    if (!isWord(toks[i], 'from', 'join')) continue;
    let j = i + 1;
    for (;;) {
      while (isWord(toks[j], 'lateral', 'only')) j++;
      if (!isName(toks[j])) break;
      const parts: number[] = [j];
      let k = j + 1;
      while (isPunct(toks[k], '.') && isName(toks[k + 1])) {
        parts.push(k + 1);
        k += 2;
      }
      if (isPunct(toks[k], '(')) break; // a table function
      shape.tables.push(parts.map((p) => toks[p]!.v));
      for (const p of parts) skip.add(p);
      // an alias, with or without AS
      if (isWord(toks[k], 'as')) k++;
      if (isName(toks[k]) && !isPunct(toks[k + 1], '.')) skip.add(k++);
      if (!isPunct(toks[k], ',') || toks[i]!.v !== 'from') break;
      j = k + 1;
    }
  }

  // column-like identifiers: everything that names something, minus tables, aliases and functions
  for (let i = 0; i < toks.length; i++) {
    const tok = toks[i]!;
    if (skip.has(i) || !isName(tok)) continue;
    if (isWord(toks[i - 1], 'as')) continue; // an alias the query chose
    if (tok.t === 'word' && isPunct(toks[i + 1], '(')) continue; // a function
    if (isPunct(toks[i + 1], '.')) continue; // a qualifier (table or alias), not a column
    shape.columns.add(tok.v);
  }
  return shape;
}

/** `WHERE true`, `WHERE 1 = 1`, `WHERE 1` followed by nothing that filters. */
function tautology(toks: Token[], i: number): boolean {
  const ends = (k: number) => k >= toks.length || isPunct(toks[k], ')') || isPunct(toks[k], ';') || isWord(toks[k], 'group', 'order', 'limit', 'having', 'offset', 'fetch', 'union', 'window');
  if ((isWord(toks[i], 'true') || toks[i]?.t === 'num') && ends(i + 1)) return true;
  const a = toks[i];
  const b = toks[i + 2];
  return a?.t === 'num' && isPunct(toks[i + 1], '=') && b?.t === 'num' && a.v === b.v && ends(i + 3);
}

function isSystemRelation(parts: string[]): boolean {
  const last = parts[parts.length - 1] ?? '';
  if (parts.some((p) => SYSTEM_SCHEMAS.has(p))) return true;
  if (parts.length >= 2 && SYSTEM_FIRST_PARTS.has(parts[0]!)) return true;
  return last.startsWith('pg_') || last.startsWith('sqlite_');
}

function isCredentialRelation(parts: string[]): boolean {
  const last = parts[parts.length - 1] ?? '';
  if (CREDENTIAL_RELATIONS.has(last)) return true;
  return parts.length >= 2 && parts[parts.length - 2] === 'mysql' && last === 'user';
}

// ---- the score ----------------------------------------------------------------------------

export interface TableInfo {
  columns: string[];
  row_estimate?: number;
}

export interface ScoreInput {
  sql: string;
  /** the guard's or the database's refusal, for query.rejected */
  rejection?: { code: string; reason: string; kind?: string };
  /** for query.executed */
  rows?: { count: number; truncated: boolean; maxLimit: number };
  /** the field_pattern of each enabled mask rule */
  maskPatterns?: readonly string[];
  /** what the schema knows of a relation (its parts as written, lower-cased) */
  table?: (parts: string[]) => TableInfo | undefined;
  /**
   * The relations the statement read as the executor's guard parsed them (query.executed's
   * `tables`, each as lower-cased parts): used instead of the ones the lexer finds after FROM and
   * JOIN, which cannot tell a CTE from a table. Absent (generated and rejected SQL, older events): the lexer's.
   */
  relations?: string[][];
  /** questions by the same user in the current burst window, this one included */
  recentQuestions?: number;
}

export interface ScoreResult {
  score: number;
  factors: RiskFactor[];
  /** columns that match an enabled mask rule */
  masked: string[];
}

/** How the guard refused: from the event's kind, or (older events) read from its message. */
export type GuardClass = 'write' | 'dangerous_function' | 'multiple_statements' | 'locking' | 'catalog_lock' | 'other';

/** The class of a guard refusal from its kind (RejectKind); undefined for a kind this table does not know. */
export function guardClassOfKind(kind: string): GuardClass | undefined {
  switch (kind) {
    case 'catalog_lock':
      return 'catalog_lock';
    case 'multiple_statements':
      return 'multiple_statements';
    case 'dangerous_function':
      return 'dangerous_function';
    // not on an allow-list: as often a model's slip as a probe; system relations score on their own (system_catalog)
    case 'function_not_allowed':
    case 'operator_not_allowed':
    case 'type_not_allowed':
    case 'relation_not_allowed':
      return 'other';
    case 'locking':
      return 'locking';
    case 'not_select':
    case 'writable_cte':
    case 'select_into':
      return 'write';
    case 'empty':
    case 'parse':
    case 'unsupported_dialect':
      return 'other';
    default:
      return undefined;
  }
}

/** The class of a guard refusal from its message, for events that carry no kind. */
export function guardClass(reason: string): GuardClass {
  const r = reason.toLowerCase();
  if (/catalog/.test(r) && !/system catalog/.test(r)) return 'catalog_lock';
  if (/only one statement/.test(r)) return 'multiple_statements';
  if (/\bcalls?\b|function|system schema|system catalog/.test(r)) return 'dangerous_function';
  if (/locks rows/.test(r)) return 'locking';
  if (/only a (select )?query|may only read|\binto\b|only reading|is not allowed: /.test(r)) return 'write';
  return 'other';
}

export function score(input: ScoreInput): ScoreResult {
  const shape = shapeOf(input.sql);
  const factors: RiskFactor[] = [];
  const add = (name: keyof typeof FACTORS, points: number, detail?: string): void => {
    if (factors.some((f) => f.name === name)) return;
    factors.push(detail === undefined ? { name, points } : { name, points, detail });
  };

  // the columns it reads: named ones, and what a * expands to where the schema is known
  const columns = new Set(shape.columns);
  const relations = input.relations ?? shape.tables;
  const known = relations.map((parts) => ({ parts, info: input.table?.(parts) }));
  if (shape.star) for (const k of known) for (const c of k.info?.columns ?? []) columns.add(c.toLowerCase());

  const secret: string[] = [];
  const personal: string[] = [];
  for (const c of columns) {
    const s = sensitivity(c);
    if (s === 'secret') secret.push(c);
    else if (s === 'personal') personal.push(c);
  }
  if (secret.length || personal.length) {
    const f = FACTORS.sensitive_columns;
    const points = (secret.length ? f.secretFirst + f.secretMore * (secret.length - 1) : 0)
      + (personal.length ? f.personalFirst + f.personalMore * (personal.length - 1) : 0);
    add('sensitive_columns', Math.min(f.cap, points), [...secret, ...personal].join(', '));
  }

  const patterns = (input.maskPatterns ?? []).map((p) => ({ p, re: globToRegExp(p) }));
  const masked = [...columns].filter((c) => patterns.some(({ re }) => re.test(c)));
  if (masked.length) add('masked_column', FACTORS.masked_column, masked.join(', '));

  if (shape.star) add('select_star', FACTORS.select_star);
  const readsTable = relations.length > 0;
  if (readsTable && !shape.filtered) {
    add('no_filter', FACTORS.no_filter);
    if (secret.length || personal.length || masked.length) add('unfiltered_sensitive', FACTORS.unfiltered_sensitive);
    const large = known.find((k) => (k.info?.row_estimate ?? 0) >= LARGE_TABLE_ROWS);
    if (large) add('large_table', FACTORS.large_table, `${large.parts.join('.')} (~${Math.round(large.info!.row_estimate!)} rows)`);
  }

  const system = relations.filter(isSystemRelation);
  if (system.length) add('system_catalog', FACTORS.system_catalog, system.map((p) => p.join('.')).join(', '));
  const credential = relations.filter(isCredentialRelation);
  if (credential.length) add('credential_catalog', FACTORS.credential_catalog, credential.map((p) => p.join('.')).join(', '));

  if (shape.write) add('write_statement', FACTORS.write_statement, shape.write.toUpperCase());
  if (shape.dangerous) add('dangerous_function', FACTORS.dangerous_function, `${shape.dangerous}()`);
  if (shape.statements > 1) add('multiple_statements', FACTORS.multiple_statements, `${shape.statements} statements`);
  if (shape.locking) add('locking_clause', FACTORS.locking_clause);

  const rej = input.rejection;
  if (rej?.code === 'SQL_REJECTED') {
    // the same fact seen by the scan and by the guard counts once
    const cls = (rej.kind !== undefined ? guardClassOfKind(rej.kind) : undefined) ?? guardClass(rej.reason);
    if (cls === 'write') add('write_statement', FACTORS.write_statement, 'refused by the guard');
    else if (cls === 'dangerous_function') add('dangerous_function', FACTORS.dangerous_function, 'refused by the guard');
    else if (cls === 'multiple_statements') add('multiple_statements', FACTORS.multiple_statements, 'refused by the guard');
    else if (cls === 'locking') add('locking_clause', FACTORS.locking_clause, 'refused by the guard');
    else if (cls === 'catalog_lock') add('catalog_lock_violation', FACTORS.catalog_lock_violation);
    else add('guard_violation', FACTORS.guard_violation);
  } else if (rej && /permission denied|access denied|insufficient privilege|not authorized|command denied/i.test(rej.reason)) {
    add('permission_denied', FACTORS.permission_denied);
  }

  const rows = input.rows;
  if (rows && (rows.truncated || rows.count >= Math.max(1, Math.floor(rows.maxLimit * 0.9)))) {
    add('many_rows', FACTORS.many_rows, `${rows.count} rows${rows.truncated ? ', cut at the cap' : ''}`);
  }
  if ((input.recentQuestions ?? 0) >= BURST_QUESTIONS) {
    add('burst', FACTORS.burst, `${input.recentQuestions} questions in ${BURST_WINDOW_MS / 60_000} minutes`);
  }

  const total = factors.reduce((s, f) => s + f.points, 0);
  return { score: Math.max(0, Math.min(100, total)), factors, masked };
}

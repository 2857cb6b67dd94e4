/**
 * Database error text leaves the executor without values of the rows (actors/executor/sanitize.ts):
 * the messages of every engine, table-driven (Trino and BigQuery as their servers word them);
 * the real PostgreSQL and MariaDB answering value-echoing queries over a customers table of
 * e-mail addresses (the raw error carries an address, the sanitised one none, the SQLSTATE and
 * the identifiers stay); and the executor's `execute`, whose thrown error, `query.rejected`
 * event and log lines carry only the sanitised text.
 */
import { fixedMasking } from '../../actors/lib/masking/service.js';
import { Writable } from 'node:stream';
import fc from 'fast-check';
import t from 'tap';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import type { Dialect } from '../../protocol/schemas/common.js';
import { createEngine } from '../../actors/executor/engines/index.js';
import type { DbEngine } from '../../actors/executor/engines/engine.js';
import { prepareGuard } from '../../actors/executor/guard/index.js';
import { execute } from '../../actors/executor/handle.js';
import { PLACEHOLDER, sanitizeDbError, sanitizeDbMessage } from '../../actors/executor/sanitize.js';
import { testConfig } from '../helpers/config.js';
import { createTestMysqlDb } from '../helpers/mysql.js';
import { createTestDb } from '../helpers/pg.js';

const EMAILS = ['ada.lovelace@analytical.example', 'grace.hopper@navy.example', 'linus.t@kernel.example'];
/** what must not appear: each address, its parts, and the first four characters (PostgreSQL's to_date shows four) */
const FRAGMENTS = [...new Set(EMAILS.flatMap((e) => [e, ...e.split('@'), e.slice(0, 4)]))];

function leaked(text: string): string[] {
  const lc = text.toLowerCase();
  return FRAGMENTS.filter((f) => lc.includes(f));
}

const log = createLogger({ svc: 'test', level: 'silent' });

// ---- the messages, as each engine words them -------------------------------------------------

interface MessageCase {
  dialect: Dialect;
  sql: string;
  message: string;
  want: string;
}

const P = PLACEHOLDER;

const MESSAGE_CASES: MessageCase[] = [
  // PostgreSQL
  { dialect: 'postgresql', sql: "SELECT CAST(string_agg(email, ',') AS int) FROM customers", message: 'invalid input syntax for type integer: "ada@x.example,bob@y.example"', want: `invalid input syntax for type integer: "${P}"` },
  { dialect: 'postgresql', sql: "SELECT ('\" ' || email || ' \"')::int FROM customers", message: 'invalid input syntax for type integer: "" ada@x.example """', want: `invalid input syntax for type integer: "${P}"` },
  { dialect: 'postgresql', sql: "SELECT now() AT TIME ZONE ('\" ' || email || ' \"') FROM customers", message: 'time zone "" ada@x.example "" not recognized', want: `time zone "${P}" not recognized` },
  { dialect: 'postgresql', sql: 'SELECT date_trunc(email, now()) FROM customers', message: 'unit "ada@x.example" not recognized for type timestamp with time zone', want: `unit "${P}" not recognized for type timestamp with time zone` },
  { dialect: 'postgresql', sql: 'SELECT extract(email from now()) FROM customers', message: 'unit "email" not recognized for type timestamp with time zone', want: 'unit "email" not recognized for type timestamp with time zone' },
  { dialect: 'postgresql', sql: "SELECT to_date(email, 'YYYY') FROM customers", message: 'invalid value "ada@" for "YYYY"', want: `invalid value "${P}" for "YYYY"` },
  { dialect: 'postgresql', sql: 'SELECT make_date(2000, length(email) * 10, 1) FROM customers', message: 'date field value out of range: 2000-150-01', want: `date field value out of range: ${P}` },
  { dialect: 'postgresql', sql: 'SELECT get_byte(email::bytea, 100) FROM customers', message: 'index 100 out of valid range, 0..14', want: `index 100 out of valid range, ${P}` },
  { dialect: 'postgresql', sql: 'SELECT email::bit(3) FROM customers', message: '"a" is not a valid binary digit', want: `"${P}" is not a valid binary digit` },
  { dialect: 'postgresql', sql: "SELECT decode(email, 'base64') FROM customers", message: 'invalid symbol "@" found while decoding base64 sequence', want: `invalid symbol "${P}" found while decoding base64 sequence` },
  { dialect: 'postgresql', sql: 'SELECT email::int4range FROM customers', message: 'malformed range literal: "ada@x.example"', want: `malformed range literal: "${P}"` },
  { dialect: 'postgresql', sql: 'SELECT email::varchar(3)::int FROM customers', message: 'value "99999999999" is out of range for type integer', want: `value "${P}" is out of range for type integer` },
  { dialect: 'postgresql', sql: 'SELECT email::regclass FROM customers', message: 'schema "ada@x" does not exist', want: `schema "${P}" does not exist` },
  { dialect: 'postgresql', sql: 'SELECT current_setting(email) FROM customers', message: 'unrecognized configuration parameter "ada@x.example"', want: `unrecognized configuration parameter "${P}"` },
  { dialect: 'postgresql', sql: "SELECT convert_to(email, 'LATIN1') FROM customers", message: 'character with byte sequence 0xe2 0x82 0xac in encoding "UTF8" has no equivalent in encoding "LATIN1"', want: `character with byte sequence ${P} in encoding "UTF8" has no equivalent in encoding "LATIN1"` },
  { dialect: 'postgresql', sql: "SELECT * FROM customers WHERE email = 'ada@x.example' AND email::int = 1", message: 'invalid input syntax for type integer: "ada@x.example"', want: 'invalid input syntax for type integer: "ada@x.example"' },
  // PostgreSQL: what the model needs to correct itself stays
  { dialect: 'postgresql', sql: 'SELECT emai FROM customers', message: 'column "emai" does not exist', want: 'column "emai" does not exist' },
  { dialect: 'postgresql', sql: 'SELECT emai FROM customers', message: 'Perhaps you meant to reference the column "customers.email".', want: `Perhaps you meant to reference the column "customers.${P}".` },
  { dialect: 'postgresql', sql: 'SELECT email FROM customerz', message: 'relation "customerz" does not exist', want: 'relation "customerz" does not exist' },
  { dialect: 'postgresql', sql: 'SELECT email + 1 FROM customers', message: 'operator does not exist: text + integer', want: 'operator does not exist: text + integer' },
  { dialect: 'postgresql', sql: 'SELECT email + 1 FROM customers', message: 'No operator matches the given name and argument types. You might need to add explicit type casts.', want: 'No operator matches the given name and argument types. You might need to add explicit type casts.' },
  { dialect: 'postgresql', sql: 'SELECT name, count(*) FROM customers', message: 'column "customers.name" must appear in the GROUP BY clause or be used in an aggregate function', want: 'column "customers.name" must appear in the GROUP BY clause or be used in an aggregate function' },
  { dialect: 'postgresql', sql: 'SELECT email FRM customers', message: 'syntax error at or near "customers"', want: 'syntax error at or near "customers"' },
  { dialect: 'postgresql', sql: 'SELECT 1', message: 'division by zero', want: 'division by zero' },
  // MySQL / MariaDB
  { dialect: 'mysql', sql: 'SELECT EXTRACTVALUE(1, CONCAT(0x7e, (SELECT GROUP_CONCAT(email) FROM customers)))', message: "XPATH syntax error: '~ada@x.example,bob@y.exam...'", want: `XPATH syntax error: '${P}'` },
  { dialect: 'mysql', sql: 'SELECT email + 0 FROM customers', message: "Truncated incorrect DOUBLE value: 'ada@x.example'", want: `Truncated incorrect DOUBLE value: '${P}'` },
  { dialect: 'mysql', sql: 'SELECT CAST(email AS SIGNED) FROM customers', message: "Truncated incorrect INTEGER value: 'ada@x.example'", want: `Truncated incorrect INTEGER value: '${P}'` },
  { dialect: 'mysql', sql: 'SELECT CAST(email AS DATE) FROM customers', message: "Incorrect datetime value: 'ada@x.example' for column `shop`.`customers`.`email` at row 1", want: `Incorrect datetime value: '${P}' for column \`${P}\`.\`customers\`.\`email\` at row 1` },
  { dialect: 'mysql', sql: 'SELECT CAST(email AS UUID) FROM customers', message: "Incorrect uuid value: 'ada@x.example'", want: `Incorrect uuid value: '${P}'` },
  { dialect: 'mysql', sql: 'SELECT count(*), concat(email, floor(rand(0)*2)) x FROM customers GROUP BY x', message: "Duplicate entry 'ada@x.example1' for key 'group_key'", want: `Duplicate entry '${P}' for key '${P}'` },
  { dialect: 'mysql', sql: 'SELECT exp(710 + length(email)) FROM customers', message: "DOUBLE value is out of range in 'exp(710 + octet_length(`shop`.`customers`.`email`))'", want: `DOUBLE value is out of range in '${P}'` },
  { dialect: 'mysql', sql: 'SELECT emai FROM customers', message: "Unknown column 'emai' in 'field list'", want: "Unknown column 'emai' in 'field list'" },
  { dialect: 'mysql', sql: 'SELECT email FROM customerz', message: "Table 'shop.customerz' doesn't exist", want: `Table '${P}.customerz' doesn't exist` },
  {
    dialect: 'mysql',
    sql: "SELECT * FROM JSON_TABLE(JSON_ARRAYAGG(1), email COLUMNS (x int PATH '$')) t",
    message: "You have an error in your SQL syntax; check the manual that corresponds to your MariaDB server version for the right syntax to use near 'email COLUMNS (x int PATH '$')) t' at line 1",
    want: "You have an error in your SQL syntax; check the manual that corresponds to your MariaDB server version for the right syntax to use near 'email COLUMNS (x int PATH '$')) t' at line 1",
  },
  { dialect: 'mysql', sql: "SELECT REGEXP_REPLACE(email, '(', 'x') FROM customers", message: "Regex error 'missing closing parenthesis at offset 1'", want: `Regex error 'missing closing parenthesis at offset ${P}'` },
  // Trino
  { dialect: 'trino', sql: 'SELECT CAST(email AS INTEGER) FROM customers', message: "Cannot cast 'ada@x.example' to INT", want: `Cannot cast '${P}' to INT` },
  { dialect: 'trino', sql: 'SELECT CAST(email AS DATE) FROM customers', message: 'Value cannot be cast to date: ada@x.example', want: `Value cannot be cast to date: ${P}` },
  { dialect: 'trino', sql: "SELECT date_parse(email, '%Y') FROM customers", message: 'Invalid format: "ada@x.example"', want: `Invalid format: "${P}"` },
  { dialect: 'trino', sql: 'SELECT CAST(CAST(length(email) AS varchar) AS tinyint) FROM customers', message: 'Out of range for tinyint: 1500', want: `Out of range for tinyint: ${P}` },
  { dialect: 'trino', sql: 'SELECT fail(email) FROM customers', message: 'ada@x.example', want: P },
  { dialect: 'trino', sql: "SELECT fail(concat('bad value: ', email)) FROM customers", message: 'bad value: ada@x.example', want: `bad value: ${P}` },
  { dialect: 'trino', sql: 'SELECT emai FROM customers', message: "line 1:8: Column 'emai' cannot be resolved", want: "line 1:8: Column 'emai' cannot be resolved" },
  { dialect: 'trino', sql: 'SELECT foo(email) FROM customers', message: "line 1:8: Function 'foo' not registered", want: "line 1:8: Function 'foo' not registered" },
  {
    dialect: 'trino',
    sql: 'SELECT email FRM customers',
    message: "line 1:14: mismatched input 'customers'. Expecting: ',', 'EXCEPT', 'FETCH', 'FROM', 'GROUP', <EOF>",
    want: "line 1:14: mismatched input 'customers'. Expecting: ',', 'EXCEPT', 'FETCH', 'FROM', 'GROUP', <EOF>",
  },
  // BigQuery
  { dialect: 'bigquery', sql: 'SELECT CAST(email AS INT64) FROM customers', message: 'Bad int64 value: ada@x.example', want: `Bad int64 value: ${P}` },
  { dialect: 'bigquery', sql: 'SELECT CAST(name AS INT64) FROM customers', message: 'Bad int64 value: active at [1:8]', want: `Bad int64 value: ${P} at [1:8]` },
  { dialect: 'bigquery', sql: 'SELECT CAST(name AS FLOAT64) FROM customers', message: 'Bad double value: Grace Hopper', want: `Bad double value: ${P}` },
  { dialect: 'bigquery', sql: "SELECT CAST('abc' AS INT64)", message: 'Bad int64 value: abc', want: 'Bad int64 value: abc' },
  { dialect: 'bigquery', sql: 'SELECT CAST(email AS DATE) FROM customers', message: "Invalid date: 'ada@x.example'", want: `Invalid date: '${P}'` },
  { dialect: 'bigquery', sql: 'SELECT PARSE_TIMESTAMP("%Y", email) FROM customers', message: 'Failed to parse input string "ada@x.example"', want: `Failed to parse input string "${P}"` },
  { dialect: 'bigquery', sql: 'SELECT length(email) / 0 FROM customers', message: 'division by zero: 15 / 0', want: `division by zero: ${P}` },
  { dialect: 'bigquery', sql: "SELECT ERROR(CONCAT('Found unexpected value: ', email)) FROM customers", message: 'Found unexpected value: ada@x.example', want: `Found unexpected value: ${P}` },
  { dialect: 'bigquery', sql: 'SELECT emai FROM customers', message: 'Unrecognized name: emai; Did you mean email? at [1:8]', want: `Unrecognized name: emai; Did you mean ${P}? at [1:8]` },
  { dialect: 'bigquery', sql: 'SELECT email FRM customers', message: 'Syntax error: Expected end of input but got identifier "customers" at [1:14]', want: 'Syntax error: Expected end of input but got identifier "customers" at [1:14]' },
  {
    dialect: 'bigquery',
    sql: 'SELECT UPPER(1)',
    message: 'No matching signature for function UPPER for argument types: INT64. Supported signature: UPPER(STRING); UPPER(BYTES) at [1:8]',
    want: 'No matching signature for function UPPER for argument types: INT64. Supported signature: UPPER(STRING); UPPER(BYTES) at [1:8]',
  },
];

t.test('the messages of each engine: values dropped, codes, identifiers and fixed words kept', async (t) => {
  for (const c of MESSAGE_CASES) t.equal(sanitizeDbMessage(c.message, c.dialect, [c.sql]), c.want, `${c.dialect}: ${c.message}`);
  const counts = MESSAGE_CASES.reduce<Record<string, number>>((acc, c) => ({ ...acc, [c.dialect]: (acc[c.dialect] ?? 0) + 1 }), {});
  t.comment(`message cases per dialect: ${JSON.stringify(counts)}`);
});

t.test('the error: only the codes and a sanitised hint stay; other codes pass as they are', async (t) => {
  const raw = new CortadoError('DB_QUERY_FAILED', 'invalid input syntax for type json', {
    sqlstate: '22P02',
    hint: 'Perhaps you meant "ada@x.example".',
    detail: 'Token "ada" is invalid.',
    where: 'JSON data, line 1: ada...',
  }, { cause: new Error('invalid input syntax for type json: ada@x.example') });
  const e = sanitizeDbError(raw, 'postgresql', ['SELECT email::json FROM customers']);
  t.equal(e.code, 'DB_QUERY_FAILED');
  t.equal(e.message, 'invalid input syntax for type json');
  t.same(e.details, { sqlstate: '22P02', hint: `Perhaps you meant "${P}".` }, 'DETAIL and WHERE dropped, the hint sanitised');
  t.equal(e.cause, undefined, 'the raw error is not kept as the cause (it would reach the logs)');
  const mysql = sanitizeDbError(new CortadoError('DB_QUERY_FAILED', "XPATH syntax error: '~a@b'", { errno: 1105, sqlstate: 'HY000', code: 'ER_UNKNOWN_ERROR' }), 'mysql', ['SELECT 1']);
  t.same(mysql.details, { errno: 1105, sqlstate: 'HY000', code: 'ER_UNKNOWN_ERROR' });
  const trino = sanitizeDbError(new CortadoError('DB_QUERY_FAILED', 'ada@x.example', { error_name: 'GENERIC_USER_ERROR', error_type: 'USER_ERROR', error_code: 0 }), 'trino', ['SELECT fail(email) FROM t']);
  t.same([trino.message, trino.details], [P, { error_name: 'GENERIC_USER_ERROR', error_type: 'USER_ERROR', error_code: 0 }]);
  const rejected = new CortadoError('SQL_REJECTED', 'function "pg_sleep" is not allowed', { kind: 'function_not_allowed' });
  t.equal(sanitizeDbError(rejected, 'postgresql', ['SELECT pg_sleep(1)']), rejected, 'a guard refusal is ours: left alone');
  const timeout = new CortadoError('DB_TIMEOUT', 'the query ran past its 10 s timeout and was cancelled');
  t.equal(sanitizeDbError(timeout, 'postgresql', ['SELECT 1']), timeout);
  t.equal(sanitizeDbError(new CortadoError('DB_QUERY_FAILED', '"ada@x.example"'), 'postgresql', ['SELECT 1']).message, `"${P}"`);
  t.equal(sanitizeDbError(new CortadoError('DB_QUERY_FAILED', ''), 'postgresql', ['SELECT 1']).message, 'the database refused the query', 'never an empty message');
  t.equal(sanitizeDbMessage(`unterminated "ada@x.example`, 'postgresql', ['SELECT 1']), `unterminated "${P}`, 'an unterminated quote drops the rest');
  t.ok(sanitizeDbMessage(`x ${'y'.repeat(5_000)}`, 'postgresql', ['SELECT 1']).length < 700, 'a long message is cut');
});

t.test('property: a value placed anywhere in a message, however quoted, never survives', async (t) => {
  // shapes of the engines' messages, and ones no template knows (the generic rules must hold)
  const SHAPES: Array<[Dialect, (v: string) => string]> = [
    ['postgresql', (v) => `invalid input syntax for type integer: "${v}"`],
    ['postgresql', (v) => `time zone "${v}" not recognized`],
    ['postgresql', (v) => `value "${v}" is out of range for type bigint`],
    ['postgresql', (v) => `some new message about "${v}" and more`],
    ['postgresql', (v) => `a message ending with an unquoted value: ${v}`],
    ['postgresql', (v) => `${v} is what a message starts with`],
    ['mysql', (v) => `XPATH syntax error: '~${v}'`],
    ['mysql', (v) => `Unknown thing '${v}' in 'field list'`],
    ['mysql', (v) => `Incorrect decimal value: '${v}' for column \`db\`.\`t\`.\`c\` at row 1`],
    ['trino', (v) => `Cannot cast '${v}' to INT`],
    ['trino', (v) => `line 1:8: Value cannot be cast to date: ${v}`],
    ['trino', (v) => `Value [${v}] does not fit in type varchar(3)`],
    ['trino', (v) => v],
    ['bigquery', (v) => `Bad int64 value: ${v}`],
    ['bigquery', (v) => `Found unexpected value: ${v} at [1:8]`],
    ['bigquery', (v) => `Could not cast literal "${v}" to type DATE at [1:13]`],
  ];
  const part = fc.stringMatching(/^[a-z0-9][a-z0-9._-]{1,10}[a-z0-9]$/);
  const edge = fc.constantFrom('', '" ', "' ", '"', "'", ' ', '`', '] ', ') ', ', ', ': ', ' "" ', "' x '", '"a" ');
  let runs = 0;
  fc.assert(
    fc.property(fc.integer({ min: 0, max: SHAPES.length - 1 }), part, part, edge, edge, (i, local, domain, before, after) => {
      runs++;
      const core = `${local}@${domain}`;
      const [dialect, shape] = SHAPES[i]!;
      const out = sanitizeDbMessage(shape(`${before}${core}${after}`), dialect, ['SELECT CAST(email AS int), name FROM customers WHERE id = 1']);
      return !out.toLowerCase().includes(core) && !out.includes(`@${domain}`) && !out.includes(`${local}@`);
    }),
    { numRuns: 4_000, seed: 10 },
  );
  t.equal(runs, 4_000, 'every generated message was checked');
});

// ---- the real databases --------------------------------------------------------------------------

interface DbCase {
  name: string;
  sql: string;
  /** what the sanitised message must still say (a word, a name, the type) */
  keeps?: string;
}

interface Asserts {
  ok(value: unknown, message: string): boolean;
  fail(message: string): boolean;
  equal(found: unknown, wanted: unknown, message: string): boolean;
  same(found: unknown, wanted: unknown, message: string): boolean;
}

/** Run each statement on the engine (no guard: what the database says is under test), raw and sanitised. */
async function attack(t: Asserts, engine: DbEngine, dialect: Dialect, cases: DbCase[], codeKey: 'sqlstate' | 'errno'): Promise<void> {
  for (const c of cases) {
    const raw = await engine.execute(c.sql, { timeoutMs: 10_000, maxRows: 100 }).then(() => undefined, (e: unknown) => e);
    if (!(raw instanceof CortadoError)) {
      t.fail(`${c.name}: the database answered instead of failing`);
      continue;
    }
    t.equal(raw.code, 'DB_QUERY_FAILED', `${c.name}: the database refused it`);
    t.ok(leaked(`${raw.message} ${JSON.stringify(raw.details ?? {})}`).length > 0, `${c.name}: the database's own error carries an address (${raw.message.slice(0, 80)})`);
    const clean = sanitizeDbError(raw, dialect, [c.sql]);
    const shown = `${clean.message} ${JSON.stringify(clean.details ?? {})}`;
    t.same(leaked(shown), [], `${c.name}: no address in the sanitised error (${clean.message})`);
    t.equal(clean.details?.[codeKey], raw.details?.[codeKey], `${c.name}: the ${codeKey} stays`);
    if (c.keeps) t.ok(clean.message.includes(c.keeps), `${c.name}: still says "${c.keeps}"`);
  }
}

t.test('PostgreSQL: value-echoing errors on a table of e-mail addresses', async (t) => {
  const db = await createTestDb('sanitize');
  const config = testConfig({ natsUrl: 'nats://127.0.0.1:1', db: { host: db.host, port: db.port, name: db.name, user: db.user } });
  const engine = await createEngine(config, log);
  t.teardown(async () => {
    await engine.close();
    await db.drop();
  });
  await db.pool.query('CREATE TABLE customers (id integer PRIMARY KEY, name text, email text, doc jsonb)');
  await db.pool.query('INSERT INTO customers VALUES ($1, $2, $3, $4), ($5, $6, $7, $8), ($9, $10, $11, $12)', [
    1, 'Ada', EMAILS[0], JSON.stringify({ contact: EMAILS[0] }),
    2, 'Grace', EMAILS[1], JSON.stringify({ contact: EMAILS[1] }),
    3, 'Linus', EMAILS[2], JSON.stringify({ contact: EMAILS[2] }),
  ]);
  const cases: DbCase[] = [
    { name: 'CAST(string_agg) AS int', sql: "SELECT CAST(string_agg(email, ',') AS int) FROM customers", keeps: 'invalid input syntax for type integer' },
    { name: '::numeric', sql: 'SELECT email::numeric FROM customers', keeps: 'numeric' },
    { name: '::date', sql: 'SELECT email::date FROM customers', keeps: 'date' },
    { name: '::timestamp', sql: 'SELECT email::timestamp FROM customers', keeps: 'timestamp' },
    { name: '::uuid', sql: 'SELECT email::uuid FROM customers' },
    { name: '::boolean', sql: 'SELECT email::boolean FROM customers' },
    { name: '::interval', sql: 'SELECT email::interval FROM customers' },
    { name: 'a JSON key cast to int', sql: "SELECT (doc->>'contact')::int FROM customers" },
    { name: 'array_agg as text, to int', sql: 'SELECT array_agg(email)::text::int FROM customers' },
    { name: 'a subquery through xml', sql: "SELECT (SELECT string_agg(email, ',') FROM customers)::xml::text::int" },
    { name: 'malformed array literal', sql: 'SELECT email::int[] FROM customers', keeps: 'malformed array literal' },
    { name: 'malformed range literal', sql: 'SELECT email::int4range FROM customers', keeps: 'malformed range literal' },
    { name: 'malformed record literal', sql: 'SELECT email::customers FROM customers', keeps: 'malformed record literal' },
    { name: 'quotes smuggled around the value (cast)', sql: "SELECT ('\" ' || email || ' \"')::int FROM customers" },
    { name: 'quotes smuggled around the value (time zone)', sql: "SELECT now() AT TIME ZONE ('\" ' || email || ' \"') FROM customers", keeps: 'not recognized' },
    { name: 'date_trunc unit', sql: 'SELECT date_trunc(email, now()) FROM customers', keeps: 'not recognized for type timestamp' },
    { name: 'to_date', sql: "SELECT to_date(email, 'YYYY') FROM customers", keeps: '"YYYY"' },
    { name: 'encoding name', sql: 'SELECT encode(email::bytea, email) FROM customers', keeps: 'unrecognized encoding' },
    { name: 'size', sql: 'SELECT pg_size_bytes(email) FROM customers' },
    { name: 'configuration parameter', sql: 'SELECT current_setting(email) FROM customers', keeps: 'configuration parameter' },
    { name: 'set_config name', sql: "SELECT set_config(email, 'x', true) FROM customers" },
    { name: 'a relation name cast', sql: 'SELECT email::regclass FROM customers', keeps: 'cross-database references are not implemented' },
  ];
  await attack(t, engine, 'postgresql', cases, 'sqlstate');

  // what is not a value stays, for the model to correct itself
  const typo = await engine.execute('SELECT emai FROM customers', { timeoutMs: 10_000, maxRows: 10 }).catch((e: CortadoError) => e);
  const clean = sanitizeDbError(typo as CortadoError, 'postgresql', ['SELECT emai FROM customers']);
  t.equal(clean.message, 'column "emai" does not exist');
  t.same(clean.details, { sqlstate: '42703', hint: `Perhaps you meant to reference the column "customers.${P}".` });
  // DETAIL is not passed on: the JSON token and its context hold the value
  const json = await engine.execute('SELECT email::jsonb FROM customers', { timeoutMs: 10_000, maxRows: 10 }).catch((e: CortadoError) => e);
  const jclean = sanitizeDbError(json as CortadoError, 'postgresql', ['SELECT email::jsonb FROM customers']);
  t.equal(jclean.message, 'invalid input syntax for type json');
  t.same(jclean.details, { sqlstate: '22P02' });
});

t.test('MariaDB: value-echoing errors on a table of e-mail addresses', async (t) => {
  const db = await createTestMysqlDb('sanitize');
  const config = testConfig({ natsUrl: 'nats://127.0.0.1:1', extra: { database: { provider: 'mysql', mysql: db.section() } } });
  const engine = await createEngine(config, log);
  t.teardown(async () => {
    await engine.close();
    await db.drop();
  });
  await db.pool.query('CREATE TABLE customers (id int PRIMARY KEY, name varchar(50), email varchar(100))');
  await db.pool.query('INSERT INTO customers VALUES (1, ?, ?), (2, ?, ?), (3, ?, ?)', ['Ada', EMAILS[0], 'Grace', EMAILS[1], 'Linus', EMAILS[2]]);
  await attack(t, engine, 'mysql', [
    { name: 'EXTRACTVALUE over GROUP_CONCAT', sql: 'SELECT EXTRACTVALUE(1, CONCAT(0x7e, (SELECT GROUP_CONCAT(email) FROM customers)))', keeps: 'XPATH syntax error' },
    { name: 'UPDATEXML over GROUP_CONCAT', sql: 'SELECT UPDATEXML(1, CONCAT(0x7e, (SELECT GROUP_CONCAT(email) FROM customers)), 1)', keeps: 'XPATH syntax error' },
    { name: 'EXTRACTVALUE over one row', sql: 'SELECT EXTRACTVALUE(1, CONCAT(0x7e, (SELECT email FROM customers WHERE id = 2)))', keeps: 'XPATH syntax error' },
    { name: 'EXTRACTVALUE with smuggled quotes', sql: "SELECT EXTRACTVALUE(1, CONCAT(0x7e, (SELECT CONCAT(\"' \", GROUP_CONCAT(email), \" '\") FROM customers)))", keeps: 'XPATH syntax error' },
  ], 'errno');
  const typo = await engine.execute('SELECT emai FROM customers', { timeoutMs: 10_000, maxRows: 10 }).catch((e: CortadoError) => e);
  const clean = sanitizeDbError(typo as CortadoError, 'mysql', ['SELECT emai FROM customers']);
  t.match(clean.message, /^Unknown column 'emai' in '(SELECT|field list)'$/, 'the unknown column is named');
  const table = await engine.execute('SELECT email FROM customerz', { timeoutMs: 10_000, maxRows: 10 }).catch((e: CortadoError) => e);
  t.equal(sanitizeDbError(table as CortadoError, 'mysql', ['SELECT email FROM customerz']).message, `Table '${P}.customerz' doesn't exist`, 'the table is named, the database it was looked for in is not in the SQL');
});

t.test('the executor: the thrown error, the query.rejected event and the log lines carry only the sanitised text', async (t) => {
  await prepareGuard('postgresql');
  const db = await createTestDb('sanitize_exec');
  const config = testConfig({ natsUrl: 'nats://127.0.0.1:1', db: { host: db.host, port: db.port, name: db.name, user: db.user } });
  const lines: string[] = [];
  const sink = new Writable({ write(chunk, _enc, done) { lines.push(String(chunk)); done(); } });
  const captured = createLogger({ svc: 'test', level: 'debug', destination: sink });
  const engine = await createEngine(config, captured);
  t.teardown(async () => {
    await engine.close();
    await db.drop();
  });
  await db.pool.query('CREATE TABLE customers (id integer PRIMARY KEY, email text)');
  await db.pool.query('INSERT INTO customers VALUES (1, $1), (2, $2), (3, $3)', EMAILS);
  const published: Array<{ subject: string; data: any }> = [];
  const deps = { config, engine, log: captured, masking: fixedMasking([], captured), bus: { publish: (def: { subject: string }, data: unknown) => { published.push({ subject: def.subject, data }); } } as never };
  const sqls = [
    "SELECT CAST(string_agg(email, ',') AS int) AS n FROM customers",
    "SELECT now() AT TIME ZONE ('\" ' || email || ' \"') AS z FROM customers",
  ];
  for (const sql of sqls) {
    const err = await execute({ sql }, deps, { requestId: 'sanitize-exec' }).then(() => undefined, (e: unknown) => e);
    t.ok(err instanceof CortadoError, `${sql}: refused`);
    const e = err as CortadoError;
    t.equal(e.code, 'DB_QUERY_FAILED');
    t.same(leaked(`${e.message} ${JSON.stringify(e.details)}`), [], `${sql}: no address in the error (${e.message})`);
    t.ok(e.message.includes(PLACEHOLDER), 'the value is replaced');
    t.equal(e.details?.sqlstate, sql.includes('TIME ZONE') ? '22023' : '22P02');
  }
  const rejected = published.filter((p) => p.subject.endsWith('query.rejected'));
  t.equal(rejected.length, sqls.length, 'one query.rejected event each');
  for (const r of rejected) {
    t.equal(r.data.code, 'DB_QUERY_FAILED');
    t.same(leaked(r.data.reason), [], `the event's reason is sanitised (${r.data.reason})`);
  }
  await new Promise<void>((resolve) => captured.flush(() => resolve()));
  t.ok(lines.some((l) => l.includes('"code":"DB_QUERY_FAILED"')), 'the refusals were logged');
  t.same(leaked(lines.join('\n')), [], 'no address in any log line');
});

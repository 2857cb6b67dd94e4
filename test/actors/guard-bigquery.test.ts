/**
 * The BigQuery (GoogleSQL) guard as a pure function: what it refuses (and why), which real
 * BigQuery analytics it lets through (and which relations they read), how it edits the LIMIT,
 * that quoting, comments and string forms cannot hide a statement from it, and its
 * allow-lists: calls, types and INFORMATION_SCHEMA views, database.allowed_functions.
 */
import t from 'tap';
import { CortadoError } from '../../protocol/errors.js';
import { guardSql, prepareGuard, type GuardLimits } from '../../actors/executor/guard/index.js';
import { tokenize } from '../../actors/executor/guard/bigquery.js';
import { DENY_LISTS, deniedFunction } from '../../actors/executor/guard/deny.js';
import {
  ALLOWED_FUNCTIONS, ALLOWED_INFORMATION_SCHEMA, BIGQUERY_FUNCTIONS, BIGQUERY_INFORMATION_SCHEMA, BIGQUERY_NAMESPACES, BIGQUERY_TYPES,
} from '../../actors/executor/guard/allow-bigquery.js';
import { ACCEPTED_BIGQUERY, LIMIT_CASES_BIGQUERY, LIMITS_BIGQUERY as LIMITS, REJECTED_BIGQUERY } from '../fixtures/guard-cases-bigquery.js';
import { ATTACKS_BIGQUERY } from '../fixtures/attacks-bigquery.js';

await prepareGuard('bigquery');

function rejection(fn: () => unknown): CortadoError | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof CortadoError ? err : undefined;
  }
  return undefined;
}

const guard = (sql: string, limits: GuardLimits = LIMITS) => guardSql(sql, 'bigquery', limits);

t.test('rejected statements', async (t) => {
  t.ok(REJECTED_BIGQUERY.length >= 40, `${REJECTED_BIGQUERY.length} rejected cases`);
  for (const c of REJECTED_BIGQUERY) {
    const err = rejection(() => guard(c.sql));
    t.equal(err?.code, 'SQL_REJECTED', `${c.name}: SQL_REJECTED`);
    t.equal(err?.details?.kind, c.kind, `${c.name}: kind ${c.kind} (${err?.message})`);
    t.ok(err && err.message.length > 10, `${c.name}: a readable reason`);
  }
});

t.test('the attack corpus, through the guard alone', async (t) => {
  t.ok(ATTACKS_BIGQUERY.length >= 50, `${ATTACKS_BIGQUERY.length} attacks`);
  for (const a of ATTACKS_BIGQUERY) {
    const err = rejection(() => guard(a.sql));
    t.equal(err?.details?.kind, a.kind, `${a.class} / ${a.name}: ${a.kind} (${err?.message})`);
    if (a.says) t.match(err?.message.toLowerCase(), a.says.toLowerCase(), `${a.name}: the reason says "${a.says}"`);
  }
});

t.test('accepted analytical queries', async (t) => {
  t.ok(ACCEPTED_BIGQUERY.length >= 150, `${ACCEPTED_BIGQUERY.length} accepted cases`);
  t.equal(new Set(ACCEPTED_BIGQUERY.map((c) => c.name)).size, ACCEPTED_BIGQUERY.length, 'names are unique');
  for (const c of ACCEPTED_BIGQUERY) {
    const limits = { ...LIMITS, allowedFunctions: c.allowedFunctions ?? [] };
    const err = rejection(() => guard(c.sql, limits));
    t.notOk(err, `${c.name}: accepted${err ? ` (rejected: ${err.message})` : ''}`);
    if (err) continue;
    const r = guard(c.sql, limits);
    t.same(r.tables, c.tables, `${c.name}: tables`);
    t.ok(r.limit >= 1 && r.limit <= LIMITS.maxLimit, `${c.name}: limit within the maximum`);
  }
});

t.test('reasons name what was found', async (t) => {
  t.match(rejection(() => guard('DELETE FROM shop.orders WHERE TRUE')), { message: /DELETE/, details: { statement: 'DELETE' } });
  t.match(rejection(() => guard('CREATE OR REPLACE TABLE shop.x AS SELECT 1')), { details: { statement: 'CREATE OR REPLACE TABLE' } });
  t.match(rejection(() => guard("EXPORT DATA OPTIONS (uri = 'gs://b/*') AS SELECT 1")), { details: { statement: 'EXPORT DATA' } });
  t.match(rejection(() => guard("EXECUTE IMMEDIATE 'SELECT 1'")), { details: { statement: 'EXECUTE IMMEDIATE' } });
  t.match(rejection(() => guard("SELECT * FROM Safe.External_Query('c', 'q')")), { details: { function: 'external_query' } });
  t.match(rejection(() => guard('SELECT 1; SELECT 2; SELECT 3')), { details: { count: 3 } });
  t.match(rejection(() => guard('#legacySQL\nSELECT 1')), { message: /legacy SQL/ });
  const parse = rejection(() => guard("SELECT 'é' FROM shop.orders WHERE x = ’y’"));
  t.match(parse, { message: /U\+2019/, details: { kind: 'parse', position: 39 } }, 'the position counts characters from 1');
  t.match(rejection(() => guard("SELECT '😀' FROM (x")), { details: { kind: 'parse', position: 17 } }, 'an emoji is one character');
});

t.test('LIMIT injection, clamping, keeping and wrapping', async (t) => {
  for (const c of LIMIT_CASES_BIGQUERY) {
    const r = guard(c.sql, c.limits ?? LIMITS);
    t.same({ sql: r.sql, runSql: r.runSql, limit: r.limit, capped: r.capped }, c.expect, c.name);
  }
});

t.test('the guard output is itself accepted, and its LIMIT kept', async (t) => {
  for (const c of [...LIMIT_CASES_BIGQUERY, ...ACCEPTED_BIGQUERY.map((a) => ({ name: a.name, sql: a.sql, limits: { ...LIMITS, allowedFunctions: a.allowedFunctions ?? [] } }))]) {
    const limits = c.limits ?? LIMITS;
    const first = guard(c.sql, limits);
    const again = guard(first.sql, limits);
    t.equal(again.limit, first.limit, `${c.name}: same limit the second time`);
    t.equal(again.sql, first.sql, `${c.name}: unchanged the second time`);
  }
});

t.test('the tokenizer: strings, identifiers and comments', async (t) => {
  const kinds = (sql: string) => tokenize(sql).tokens.map((x) => `${x.type}:${x.text}`);
  t.same(kinds("SELECT r'a\\'b', B\"x\", rb'''y''', '''it's'''"), ['word:SELECT', "string:r'a\\'b'", 'op:,', 'string:B"x"', 'op:,', "string:rb'''y'''", 'op:,', "string:'''it's'''"]);
  t.same(kinds('SELECT `a\\`b` # c\n-- d\n/* e */ x'), ['word:SELECT', 'quoted:`a\\`b`', 'word:x'], 'comments skipped, escaped backtick kept');
  t.equal(tokenize('SELECT `a\\`b`').tokens[1]?.value, 'a`b');
  t.same(tokenize('SELECT `p.d`.t').tokens.map((x) => x.value), ['SELECT', 'p.d', '.', 'T']);
  t.same(kinds('SELECT 1.5e-3, .5, 0x1F, ds.2024_t'), ['word:SELECT', 'number:1.5e-3', 'op:,', 'number:.5', 'op:,', 'number:0x1F', 'op:,', 'word:ds', 'op:.', 'word:2024_t']);
  t.same(kinds('a<>b != c || d => e'), ['word:a', 'op:<>', 'word:b', 'op:!=', 'word:c', 'op:||', 'word:d', 'op:=>', 'word:e']);
  t.same(tokenize('SELECT 1 # x ; y\n').comments.map((c) => c.text), ['# x ; y']);
  t.equal(tokenize('SELECT `a\\\\b`').tokens[1]?.value, 'a\\b', 'an escaped backslash');
  for (const bad of ['SELECT `a\\x41`', 'SELECT `a\\u0041`', 'SELECT `a\\nb`', "SELECT 'a\nb'", 'SELECT ``', 'SELECT !x', 'SELECT 5 % 2', 'SELECT ?', 'SELECT {x}', 'SELECT a\u200bb']) {
    t.equal(rejection(() => tokenize(bad))?.details?.kind, 'parse', `refused: ${JSON.stringify(bad)}`);
  }
});

t.test('hiding a statement does not work', async (t) => {
  const hidden = [
    'SELECT 1 AS x\n;\nDROP TABLE shop.orders',
    "SELECT \"\"\"a;\"\"\" ; DROP TABLE shop.orders",
    "SELECT '\\''; DROP TABLE shop.orders",
    'SELECT 1 -- \n; DROP TABLE shop.orders',
    'SELECT 1 #\n; DROP TABLE shop.orders',
    'SELECT `x;` ; DROP TABLE shop.orders',
    'SELECT 1 /* */ ; /* */ DROP TABLE shop.orders',
  ];
  for (const sql of hidden) t.equal(rejection(() => guard(sql))?.details?.kind, 'multiple_statements', JSON.stringify(sql));
  // the same words inside strings, identifiers and comments are harmless
  for (const sql of [
    "SELECT 'DROP TABLE x; DELETE' AS s",
    'SELECT 1 AS `delete`',
    'SELECT 1 /* INSERT INTO x */',
    "SELECT '''\n; DELETE FROM x\n''' AS s",
    "SELECT r'\\'; DELETE' AS s",
  ]) {
    const err = rejection(() => guard(sql));
    t.notOk(err, `${JSON.stringify(sql)} accepted${err ? ` (${err.message})` : ''}`);
  }
});

t.test('the deny list', async (t) => {
  for (const name of ['external_query', 'EXTERNAL_QUERY', 'ml.generate_text', 'ML.GENERATE_EMBEDDING', 'ml.generate_table', 'ai.generate', 'AI.GENERATE_BOOL', 'ai.forecast', 'ml.translate', 'ml.understand_text', 'ml.process_document', 'ml.transcribe', 'ml.annotate_image', 'obj.get_access_url']) {
    t.ok(deniedFunction('bigquery', name), `${name} is denied`);
  }
  for (const name of ['count', 'generate_array', 'generate_date_array', 'generate_uuid', 'translate', 'ml.predict', 'ml.evaluate', 'session_user', 'safe_divide', 'approx_quantiles', 'obj.make_ref']) {
    t.notOk(deniedFunction('bigquery', name), `${name} is allowed`);
  }
  const err = rejection(() => guard('SELECT GENERATE_ARRAY(1, 3), TRANSLATE(name, "a", "b") FROM shop.customers'));
  t.notOk(err, 'functions that only share a word with a denied one run');
  for (const name of ['error', 'keys.keyset_chain', 'aead.decrypt_string', 'aead.decrypt_bytes', 'deterministic_decrypt_string']) {
    t.ok(deniedFunction('bigquery', name), `${name} is denied`);
  }
});

const refusal = (sql: string, allowedFunctions: string[] = []) => rejection(() => guard(sql, { ...LIMITS, allowedFunctions }));

t.test('the allow-lists themselves', async (t) => {
  const all = [...BIGQUERY_FUNCTIONS, ...BIGQUERY_TYPES, ...BIGQUERY_INFORMATION_SCHEMA];
  for (const g of all) {
    t.ok(g.why.length > 5, `a why for ${g.names[0]}…`);
    for (const n of g.names) t.match(n, /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)?$/, `${n}: lower-case, at most one namespace`);
  }
  const names = BIGQUERY_FUNCTIONS.flatMap((g) => g.names);
  t.equal(new Set(names).size, names.length, 'no function is listed twice');
  t.same(names.filter((n) => deniedFunction('bigquery', n)), [], 'nothing allowed is also denied');
  for (const n of names.filter((x) => x.includes('.'))) t.ok(BIGQUERY_NAMESPACES[n.split('.')[0]!], `${n}: its namespace is known`);
  t.ok(ALLOWED_FUNCTIONS.size > 300, `${ALLOWED_FUNCTIONS.size} functions allowed`);
  t.same([...ALLOWED_INFORMATION_SCHEMA].filter((v) => /jobs|session|privilege|routine|reservation|polic/.test(v)), [], 'no view of other users\' work or rights');
  t.ok(DENY_LISTS.bigquery.length >= 5);
});

t.test('calls: wherever they are, however they are written', async (t) => {
  // every position a call can be in
  for (const sql of [
    'SELECT shop.f(1)',
    'SELECT 1 FROM shop.orders WHERE shop.f(id) > 0',
    'SELECT 1 FROM shop.orders GROUP BY shop.f(id)',
    'SELECT 1 FROM shop.orders ORDER BY shop.f(id)',
    'SELECT SUM(id) FROM shop.orders HAVING shop.f(SUM(id)) > 0',
    'SELECT 1 FROM shop.orders QUALIFY shop.f(id) OVER () > 0',
    'SELECT 1 FROM shop.orders AS o JOIN shop.customers AS c ON shop.f(o.id) = c.id',
    'SELECT * FROM UNNEST(shop.f(1)) AS x',
    'SELECT [shop.f(1)] AS a',
    'SELECT STRUCT(shop.f(1) AS x) AS s',
    'SELECT CASE WHEN TRUE THEN shop.f(1) END',
    'SELECT * FROM shop.orders PIVOT (SUM(shop.f(amount)) FOR status IN (\'paid\'))',
    'SELECT (SELECT AS STRUCT shop.f(1) AS x) AS s',
    'SELECT shop . /* gap */ f (1)',
    'SELECT `shop`.`f`(1)',
    'SELECT `shop.f`(1)',
    'SELECT Shop.F(1)',
  ]) {
    t.match(refusal(sql), { details: { kind: 'function_not_allowed', function: 'shop.f' } }, sql);
  }
  // built-ins, any case, SAFE. before them, namespaces
  for (const sql of ['SELECT count(*), Count(1), COUNT(2)', 'SELECT SAFE.DATE_ADD(CURRENT_DATE(), INTERVAL 1 DAY)', 'SELECT safe.net.host(\'https://a.b/c\')', 'SELECT NET.IP_TO_STRING(b\'\\x7f\\x00\\x00\\x01\')']) {
    t.notOk(refusal(sql), sql);
  }
  t.match(refusal('SELECT NET.EVIL(1)'), { details: { kind: 'function_not_allowed', function: 'net.evil' }, message: /NET functions that parse/ });
  t.match(refusal('SELECT SAFE.SESSION_USER()'), { details: { kind: 'function_not_allowed', function: 'safe.session_user' } });
  t.match(refusal('SELECT GENERATE_SERIES(1, 3)'), { details: { kind: 'function_not_allowed' }, message: /generate_series\(\).*database\.allowed_functions/ });
  // reserved words and clause words before a bracket are not calls
  for (const sql of [
    'SELECT 1 FROM shop.orders WHERE id IN (1, 2) AND EXISTS (SELECT 1) AND NOT (id = 3)',
    'SELECT COUNT(*) OVER (PARTITION BY status) FROM shop.orders',
    'SELECT status, SUM(amount) FROM shop.orders GROUP BY GROUPING SETS ((status), ())',
    'SELECT 1 FROM shop.orders TABLESAMPLE SYSTEM (1 PERCENT)',
    'SELECT DATE_TRUNC(CURRENT_DATE(), WEEK(SUNDAY))',
    'SELECT 1 UNION ALL (SELECT 2)',
    'SELECT * FROM shop.orders AS a JOIN shop.orders AS b USING (id)',
  ]) {
    t.notOk(refusal(sql), sql);
  }
});

t.test('database.allowed_functions', async (t) => {
  const sql = 'SELECT shop.normalise(name), `cortado-test`.shop.mask(email) FROM shop.customers';
  t.match(refusal(sql), { details: { kind: 'function_not_allowed', function: 'shop.normalise' } }, 'not listed: refused');
  t.match(refusal(sql, ['shop.normalise']), { details: { function: 'cortado-test.shop.mask' } }, 'one listed: the other is still refused');
  t.notOk(refusal(sql, ['SHOP.Normalise', ' `cortado-test.shop.mask` ']), 'both listed (case, spaces and backticks do not matter)');
  t.match(refusal('SELECT other.normalise(name) FROM shop.customers', ['shop.normalise']), { details: { kind: 'function_not_allowed' } }, 'the same name in another dataset is another function');
  t.notOk(refusal('SELECT SESSION_USER()', ['session_user']), 'a built-in left off the list can be allowed');
  t.notOk(refusal('SELECT * FROM ML.PREDICT(MODEL shop.m, TABLE shop.customers)', ['ml.predict']), 'so can ML.PREDICT');
  t.match(refusal("SELECT * FROM EXTERNAL_QUERY('c', 'SELECT 1')", ['external_query']), { details: { kind: 'dangerous_function' } }, 'a denied function stays denied');
  t.match(refusal("SELECT ERROR('x')", ['error']), { details: { kind: 'dangerous_function' } });
});

t.test('types', async (t) => {
  for (const sql of [
    'SELECT CAST(1 AS INT64), CAST(1 AS integer), SAFE_CAST(\'1\' AS BIGNUMERIC(40, 2)), CAST(\'x\' AS STRING(10))',
    'SELECT CAST(NULL AS ARRAY<STRUCT<a INT64, b ARRAY<STRUCT<c STRING>>>>)',
    'SELECT ARRAY<ARRAY<INT64>>[] IS NULL, STRUCT<x RANGE<DATE>>(NULL)',
    "SELECT CAST(DATE '2024-01-01' AS STRING FORMAT 'DD/MM/YYYY')",
    'SELECT CAST(CAST(1 AS NUMERIC) AS FLOAT64), 1 << 2, 8 >> 1',
  ]) {
    t.notOk(refusal(sql), sql);
  }
  for (const [sql, type] of [
    ['SELECT CAST(1 AS shop.money)', 'shop . money'],
    ['SELECT CAST(1 AS `INT64`)', '`INT64`'],
    ['SELECT CAST(1 AS FLOAT)', 'FLOAT'],
    ['SELECT CAST(x AS ARRAY<evil>) FROM t', 'ARRAY < evil >'],
    ['SELECT CAST(x AS STRUCT<a ARRAY<INT64>, b evil>) FROM t', 'STRUCT < a ARRAY < INT64 > , b evil >'],
    ['SELECT CAST(x AS STRING(evil)) FROM t', 'STRING ( evil )'],
    ['SELECT CAST(x AS INT64 extra) FROM t', 'INT64 extra'],
    ['SELECT CAST(x) FROM t', ''],
    ['SELECT SAFE.CAST(x AS evil) FROM t', 'evil'],
  ] as const) {
    t.match(refusal(sql), { details: { kind: 'type_not_allowed', type } }, sql);
  }
});

t.test('relations: INFORMATION_SCHEMA only through its safe views', async (t) => {
  for (const view of ALLOWED_INFORMATION_SCHEMA) {
    t.notOk(refusal(`SELECT * FROM shop.INFORMATION_SCHEMA.${view.toUpperCase()}`), view);
    t.notOk(refusal(`SELECT * FROM \`region-eu\`.INFORMATION_SCHEMA.${view}`), `${view}, region-wide`);
  }
  for (const view of ['JOBS', 'JOBS_BY_USER', 'JOBS_BY_FOLDER', 'JOBS_TIMELINE_BY_ORGANIZATION', 'SESSIONS_BY_USER', 'OBJECT_PRIVILEGES', 'ROUTINES', 'ROUTINE_OPTIONS', 'PARAMETERS', 'RESERVATIONS', 'ASSIGNMENTS', 'CAPACITY_COMMITMENTS', 'TABLE_STORAGE', 'SOMETHING_NEW']) {
    t.match(refusal(`SELECT * FROM \`region-us\`.INFORMATION_SCHEMA.${view}`), { details: { kind: 'relation_not_allowed', relation: `region-us.INFORMATION_SCHEMA.${view}` } }, view);
  }
  t.match(refusal('SELECT * FROM shop.INFORMATION_SCHEMA.TABLES.extra'), { details: { kind: 'relation_not_allowed' } }, 'nothing after the view');
  t.match(refusal('SELECT information_schema.jobs.query FROM x'), { details: { kind: 'relation_not_allowed' } }, 'wherever the path is');
  t.match(refusal('SELECT * FROM shop.orders WHERE id IN (SELECT 1 FROM shop.__TABLES__)'), { details: { kind: 'relation_not_allowed' } });
  t.notOk(refusal('SELECT table_name FROM INFORMATION_SCHEMA.TABLES'), 'the default dataset\'s');
  t.same(guard('SELECT * FROM region-us.INFORMATION_SCHEMA.TABLES, my-project-x.shop.orders').tables, ['region-us.INFORMATION_SCHEMA.TABLES', 'my-project-x.shop.orders'], 'dashes in unquoted paths');
});

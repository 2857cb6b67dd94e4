/**
 * The BigQuery (GoogleSQL) guard as a pure function: what it refuses (and why), which real
 * BigQuery analytics it lets through (and which relations they read), how it edits the LIMIT,
 * and that quoting, comments and string forms cannot hide a statement from it.
 */
import t from 'tap';
import { CortadoError } from '../../protocol/errors.js';
import { guardSql, prepareGuard } from '../../actors/executor/guard/index.js';
import { tokenize } from '../../actors/executor/guard/bigquery.js';
import { deniedFunction } from '../../actors/executor/guard/deny.js';
import { ACCEPTED_BIGQUERY, LIMIT_CASES_BIGQUERY, LIMITS_BIGQUERY as LIMITS, REJECTED_BIGQUERY } from '../fixtures/guard-cases-bigquery.js';

await prepareGuard('bigquery');

function rejection(fn: () => unknown): CortadoError | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof CortadoError ? err : undefined;
  }
  return undefined;
}

const guard = (sql: string, limits = LIMITS) => guardSql(sql, 'bigquery', limits);

t.test('rejected statements', async (t) => {
  t.ok(REJECTED_BIGQUERY.length >= 40, `${REJECTED_BIGQUERY.length} rejected cases`);
  for (const c of REJECTED_BIGQUERY) {
    const err = rejection(() => guard(c.sql));
    t.equal(err?.code, 'SQL_REJECTED', `${c.name}: SQL_REJECTED`);
    t.equal(err?.details?.kind, c.kind, `${c.name}: kind ${c.kind} (${err?.message})`);
    t.ok(err && err.message.length > 10, `${c.name}: a readable reason`);
  }
});

t.test('accepted analytical queries', async (t) => {
  t.ok(ACCEPTED_BIGQUERY.length >= 40, `${ACCEPTED_BIGQUERY.length} accepted cases`);
  for (const c of ACCEPTED_BIGQUERY) {
    const err = rejection(() => guard(c.sql));
    t.notOk(err, `${c.name}: accepted${err ? ` (rejected: ${err.message})` : ''}`);
    if (err) continue;
    const r = guard(c.sql);
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
  for (const c of [...LIMIT_CASES_BIGQUERY, ...ACCEPTED_BIGQUERY.map((a) => ({ name: a.name, sql: a.sql, limits: undefined }))]) {
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
  for (const bad of ["SELECT 'a\nb'", 'SELECT ``', 'SELECT !x', 'SELECT 5 % 2', 'SELECT ?', 'SELECT {x}', 'SELECT a\u200bb']) {
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
  const err = rejection(() => guard('SELECT GENERATE_ARRAY(1, 3), TRANSLATE(name, "a", "b") FROM ML.PREDICT(MODEL shop.m, TABLE shop.customers)'));
  t.notOk(err, 'functions that only share a word with a denied one run');
});

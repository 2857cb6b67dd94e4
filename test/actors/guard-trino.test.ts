/**
 * The Trino SQL guard as a pure function: what it refuses (and why), what real Trino
 * analytics it lets through (and which relations they read), the allow-list of functions,
 * types, table functions and information_schema tables, database.allowed_functions, how it
 * edits the LIMIT, and that its lexer reads strings, quoted identifiers and comments the way
 * Trino does.
 */
import t from 'tap';
import { CortadoError } from '../../protocol/errors.js';
import { guardSql, hasGuard, prepareGuard } from '../../actors/executor/guard/index.js';
import { deniedFunction } from '../../actors/executor/guard/deny.js';
import {
  TRINO_FUNCTION_GROUPS,
  TRINO_FUNCTIONS,
  TRINO_INFORMATION_SCHEMA_SAFE,
  TRINO_PLAIN_TYPES,
} from '../../actors/executor/guard/allow-trino.js';
import { tokenize } from '../../actors/executor/guard/trino.js';
import { LIMITS } from '../fixtures/guard-cases.js';
import { ACCEPTED_TRINO, LIMIT_CASES_TRINO, REJECTED_TRINO } from '../fixtures/guard-cases-trino.js';

await prepareGuard('trino');

function rejection(fn: () => unknown): CortadoError | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof CortadoError ? err : undefined;
  }
  return undefined;
}

const guard = (sql: string) => guardSql(sql, 'trino', LIMITS);
const isOpen = (x: { kind: string; value: string } | undefined): boolean => x?.kind === 'punct' && x.value === '(';

t.test('the trino dialect has a guard', async (t) => {
  t.ok(hasGuard('trino'));
});

t.test('rejected statements', async (t) => {
  t.ok(REJECTED_TRINO.length >= 100, `${REJECTED_TRINO.length} rejected cases`);
  for (const c of REJECTED_TRINO) {
    const err = rejection(() => guard(c.sql));
    t.equal(err?.code, 'SQL_REJECTED', `${c.name}: SQL_REJECTED`);
    t.equal(err?.details?.kind, c.kind, `${c.name}: kind ${c.kind} (${err?.message})`);
    t.ok(err && err.message.length > 10, `${c.name}: a readable reason`);
  }
});

t.test('reasons name what was found', async (t) => {
  t.match(rejection(() => guard('DELETE FROM orders'))?.details, { statement: 'DELETE' });
  t.match(rejection(() => guard('EXPLAIN ANALYZE SELECT 1'))?.details, { statement: 'EXPLAIN ANALYZE' });
  t.match(rejection(() => guard('CREATE OR REPLACE VIEW v AS SELECT 1'))?.details, { statement: 'CREATE OR REPLACE VIEW' });
  t.match(rejection(() => guard('SET SESSION x = 1'))?.message, /SET SESSION/);
  t.match(rejection(() => guard('SELECT 1; SELECT 2; SELECT 3'))?.details, { count: 3 });
  t.match(rejection(() => guard('SELECT * FROM "System".Runtime.Queries'))?.details, { name: 'system.runtime.queries' });
  t.match(rejection(() => guard("SELECT * FROM pg.system.QUERY('x')"))?.details, { kind: 'dangerous_function' });
  t.match(rejection(() => guard('SELECT "AI_GEN"(x) FROM t'))?.details, { function: 'ai_gen' });
  const fn = rejection(() => guard('SELECT Evil_Fn(1)'));
  t.match(fn?.details, { kind: 'function_not_allowed', function: 'evil_fn' });
  t.match(fn?.message, /evil_fn\(\).*not one of Trino's analytical functions/);
  t.match(rejection(() => guard('SELECT version()'))?.message, /version\(\).*about the server/);
  t.match(rejection(() => guard('SELECT Hive.UDFS.Score(1)'))?.message, /hive\.udfs\.score\(\).*routine of a catalog.*database\.allowed_functions/);
  t.match(rejection(() => guard('SELECT CAST(x AS HyperLogLog) FROM t'))?.details, { kind: 'type_not_allowed', type: 'hyperloglog' });
  t.match(rejection(() => guard('SELECT * FROM information_schema.enabled_roles'))?.message, /information_schema\.enabled_roles.*only tables, columns, views, schemata/);
  t.match(rejection(() => guard("SELECT * FROM TABLE(hive.system.query(query => 'x'))"))?.details, { kind: 'dangerous_function', function: 'hive.system.query' });
  const parse = rejection(() => guard("SELECT 'é', x FROM t WHERE `y` = 1"));
  t.match(parse?.message, /does not parse as Trino/);
  t.equal(parse?.details?.position, 28, 'the position counts characters from 1');
  t.match(rejection(() => guard("SELECT '😀', `y`"))?.details, { kind: 'parse', position: 13 });
});

t.test('accepted analytical queries', async (t) => {
  t.ok(ACCEPTED_TRINO.length >= 150, `${ACCEPTED_TRINO.length} accepted cases`);
  t.ok(ACCEPTED_TRINO.filter((c) => c.standIn).length >= 60, 'a good part also runs on the stand-in');
  for (const c of ACCEPTED_TRINO) {
    const err = rejection(() => guard(c.sql));
    t.notOk(err, `${c.name}: accepted${err ? ` (rejected: ${err.message})` : ''}`);
    if (err) continue;
    const r = guard(c.sql);
    t.same(r.tables, c.tables, `${c.name}: tables`);
    t.ok(r.limit >= 1 && r.limit <= LIMITS.maxLimit, `${c.name}: limit within the maximum`);
    t.notOk(r.sql.trimEnd().endsWith(';'), `${c.name}: no semicolon goes to Trino`);
  }
});

t.test('every allow-listed function passes where a call stands, in any case, and is not also denied', async (t) => {
  t.ok(TRINO_FUNCTIONS.size >= 300, `${TRINO_FUNCTIONS.size} functions`);
  for (const g of TRINO_FUNCTION_GROUPS) t.ok(g.why.length > 10 && g.names.length > 0, `a group says why: ${g.why}`);
  const refused: string[] = [];
  for (const name of TRINO_FUNCTIONS) {
    if (deniedFunction('trino', name)) refused.push(`${name} is denied too`);
    for (const sql of [`SELECT ${name}(x) FROM t`, `SELECT ${name.toUpperCase()}(x) FROM t`, `SELECT "${name}"(x) FROM t`, `SELECT a FROM t WHERE ${name} (x) > 0`]) {
      const err = rejection(() => guard(sql));
      if (err) refused.push(`${sql}: ${err.message}`);
    }
  }
  t.same(refused, [], 'none refused');
});

t.test('a name that is not on the list is refused wherever it is called', async (t) => {
  const places = [
    'SELECT nope(1)',
    'SELECT a FROM t WHERE b IN (SELECT nope(c) FROM u)',
    'SELECT a FROM t GROUP BY a HAVING nope(count(*)) > 1',
    'SELECT a FROM t ORDER BY nope(a)',
    'SELECT sum(a) FILTER (WHERE nope(a)) FROM t',
    'SELECT CASE WHEN a THEN nope(a) END FROM t',
    'SELECT transform(a, x -> nope(x)) FROM t',
    'SELECT a FROM t JOIN u ON nope(t.a, u.a)',
    'SELECT * FROM UNNEST(nope(1)) AS x(y)',
    'SELECT * FROM t CROSS JOIN LATERAL (SELECT nope(t.a)) AS l',
    'VALUES (nope(1))',
    'WITH q AS (SELECT nope(1)) SELECT * FROM q',
    'SELECT CAST(nope(1) AS varchar)',
    "SELECT json_value(j, 'lax $.a' DEFAULT nope(1) ON EMPTY) FROM t",
    'SELECT avg(a) OVER (PARTITION BY nope(b)) FROM t',
    'SELECT * FROM t TABLESAMPLE BERNOULLI (nope(1))',
    'SELECT count(*) FROM t GROUP BY GROUPING SETS ((nope(a)))',
    'SELECT ARRAY[nope(1)]',
    'SELECT m[nope(1)] FROM t',
    'SELECT * FROM t WHERE EXISTS (SELECT nope(1))',
    'SELECT trim(LEADING nope(1) FROM a) FROM t',
    'SELECT * FROM t MATCH_RECOGNIZE (ORDER BY a MEASURES FINAL nope(A.a) AS m PATTERN (A) DEFINE A AS true)',
    'SELECT * FROM iceberg.s.t FOR TIMESTAMP AS OF nope(1)',
    'SELECT * FROM TABLE(exclude_columns(input => TABLE(SELECT nope(1)), columns => DESCRIPTOR(x)))',
  ];
  for (const sql of places) t.match(rejection(() => guard(sql))?.details, { kind: 'function_not_allowed', function: 'nope' }, sql);
});

t.test('mutations of the accepted corpus: every call and every relation in it is seen', async (t) => {
  // each allowed call renamed to a function that is not allowed, and each unquoted relation
  // replaced by the system catalog's queries table, must be refused: no position is skipped
  let calls = 0;
  let relations = 0;
  const missed: string[] = [];
  for (const c of ACCEPTED_TRINO) {
    const tokens = tokenize(c.sql);
    tokens.forEach((x, i) => {
      if (x.kind !== 'word' || !TRINO_FUNCTIONS.has(x.value) || !isOpen(tokens[i + 1]) || tokens[i - 1]?.value === '.') return;
      calls++;
      const err = rejection(() => guard(`${c.sql.slice(0, x.start)}zzz_evil${c.sql.slice(x.end)}`));
      if (!['function_not_allowed', 'type_not_allowed', 'dangerous_function'].includes(String(err?.details?.kind))) missed.push(`${c.name}: ${x.text}( at ${x.start}`);
    });
    for (const table of c.tables) {
      const at = c.sql.indexOf(table);
      if (at < 0 || c.sql[at - 1] === '"') continue;
      relations++;
      const err = rejection(() => guard(`${c.sql.slice(0, at)}system.runtime.queries${c.sql.slice(at + table.length)}`));
      if (err?.details?.kind !== 'relation_not_allowed') missed.push(`${c.name}: the relation ${table}`);
    }
  }
  t.ok(calls >= 350 && relations >= 150, `${calls} calls and ${relations} relations mutated`);
  t.same(missed, [], 'none slipped through');
});

t.test('database.allowed_functions: user routines as written, case-insensitive; denied ones stay denied', async (t) => {
  const limits = { ...LIMITS, allowedFunctions: ['Analytics.UDFS.Score', 'geo_hash', 'query', 'sketchy'] };
  const ok = (sql: string) => rejection(() => guardSql(sql, 'trino', limits));
  t.notOk(ok('SELECT analytics.udfs.score(amount) FROM orders'), 'the listed routine');
  t.notOk(ok('SELECT "ANALYTICS"."UdFs".SCORE(amount) FROM orders'), 'however it is spelt or quoted');
  t.notOk(ok('SELECT GEO_HASH(lat, lon) FROM places'), 'an unqualified one');
  t.match(ok('SELECT udfs.score(amount) FROM orders')?.details, { kind: 'function_not_allowed' }, 'not as written: a different name');
  t.match(ok('SELECT score(amount) FROM orders')?.details, { kind: 'function_not_allowed' });
  t.match(ok('SELECT other.udfs.score(amount) FROM orders')?.details, { kind: 'function_not_allowed' });
  t.match(ok('SELECT x.geo_hash(1)')?.details, { kind: 'function_not_allowed' }, 'an unqualified entry does not allow a qualified call');
  t.match(ok("SELECT * FROM TABLE(query(query => 'DELETE FROM t'))")?.details, { kind: 'dangerous_function' }, 'the deny list wins');
  t.match(ok("SELECT query('x')")?.details, { kind: 'dangerous_function' });
  t.notOk(ok("SELECT sketchy 'abc', CAST(x AS sketchy) FROM t"), 'a listed type');
  t.match(rejection(() => guard('SELECT geo_hash(1)'))?.details, { kind: 'function_not_allowed' }, 'without the list: refused');
});

t.test('types: every plain type may be cast to, typed literals need one', async (t) => {
  const params: Record<string, string> = { decimal: '(12, 2)', varchar: '(10)', char: '(3)', timestamp: '(3) with time zone', time: '(0)', array: '(integer)', map: '(varchar, array(double))', row: '(a bigint, b row(c varchar))', interval: ' day to second' };
  for (const type of TRINO_PLAIN_TYPES) {
    const sql = `SELECT CAST(x AS ${type}${params[type] ?? ''}), TRY_CAST(y AS ${type.toUpperCase()}${params[type] ?? ''}) FROM t`;
    t.notOk(rejection(() => guard(sql)), sql);
  }
  for (const bad of ['hyperloglog', 'p4hyperloglog', 'qdigest(bigint)', 'tdigest', 'setdigest', 'geometry', 'sphericalgeography', 'bingtile', 'jsonpath', 'color', '"mytype"', 'row(a geometry)', 'map(varchar, hyperloglog)']) {
    t.match(rejection(() => guard(`SELECT CAST(x AS ${bad}) FROM t`))?.details, { kind: 'type_not_allowed' }, bad);
  }
  for (const bad of ["hyperloglog 'x'", "\"Geometry\" 'POINT (0 0)'", "my.type 'x'"]) {
    t.match(rejection(() => guard(`SELECT ${bad}`))?.details, { kind: 'type_not_allowed' }, bad);
  }
  t.match(rejection(() => guard('SELECT CAST(x AS varchar y) FROM t'))?.details, { kind: 'parse' }, 'something after the type');
  t.match(rejection(() => guard('SELECT CAST(x) FROM t'))?.details, { kind: 'parse' }, 'no type');
});

t.test('information_schema: the safe tables only', async (t) => {
  for (const table of TRINO_INFORMATION_SCHEMA_SAFE) {
    t.notOk(rejection(() => guard(`SELECT * FROM information_schema.${table}`)), table);
    t.notOk(rejection(() => guard(`SELECT * FROM hive."INFORMATION_SCHEMA".${table.toUpperCase()}`)), `${table}, qualified and quoted`);
  }
  for (const table of ['applicable_roles', 'enabled_roles', 'roles', 'table_privileges', 'role_authorization_descriptors', 'anything_else']) {
    t.match(rejection(() => guard(`SELECT * FROM information_schema.${table}`))?.details, { kind: 'relation_not_allowed' }, table);
  }
});

t.test('LIMIT injection, clamping, keeping and wrapping', async (t) => {
  for (const c of LIMIT_CASES_TRINO) {
    const r = guardSql(c.sql, 'trino', c.limits ?? LIMITS);
    t.same({ sql: r.sql, runSql: r.runSql, limit: r.limit, capped: r.capped }, c.expect, c.name);
  }
});

t.test('the guard output is itself accepted, and its LIMIT kept', async (t) => {
  for (const c of LIMIT_CASES_TRINO) {
    const limits = c.limits ?? LIMITS;
    const first = guardSql(c.sql, 'trino', limits);
    const again = guardSql(first.sql, 'trino', limits);
    t.equal(again.limit, first.limit, `${c.name}: same limit the second time`);
    t.equal(again.sql, first.sql, `${c.name}: unchanged the second time`);
  }
});

t.test('the lexer reads literals and comments as Trino does', async (t) => {
  const kinds = (sql: string) => tokenize(sql).map((x) => `${x.kind}:${x.value}`);
  t.same(kinds("SELECT 'it''s', \"a \"\"b\"\"\" FROM t"), ['word:select', "string:'it''s'", 'punct:,', 'quoted:a "b"', 'word:from', 'word:t']);
  t.same(kinds('a /* x /* y */ b -- c\n d'), ['word:a', 'word:b', 'word:d'], 'block comments end at the first */');
  t.same(kinds("x -> x, k => 1, a || b, a <> b, U&'\\0041'"), [
    'word:x', 'punct:->', 'word:x', 'punct:,', 'word:k', 'punct:=>', 'number:1', 'punct:,', 'word:a', 'punct:||', 'word:b', 'punct:,',
    'word:a', 'punct:<>', 'word:b', 'punct:,', "string:U&'\\0041'",
  ]);
  t.same(kinds('1_000 0x1F 1.5e3 .5 7.'), ['number:1_000', 'number:0x1F', 'number:1.5e3', 'number:.5', 'number:7.']);
  t.same(kinds("'a\\' , 'b'"), ["string:'a\\'", 'punct:,', "string:'b'"], 'a backslash escapes nothing');
  t.same(tokenize('f(a[1], (b))').map((x) => x.depth), [0, 0, 1, 1, 2, 1, 1, 1, 2, 1, 0]);
  t.same(kinds('a -- b\rc\n-- d\ne'), ['word:a', 'word:c', 'word:e'], 'a line comment ends at CR or LF');
  t.same(kinds("X'AB''' x'' ax'1'"), ["string:X'AB'", "string:''", "string:x''", 'word:ax', "string:'1'"], "X'..' ends at the first quote");
});

t.test('a string with a backslash cannot hide the end of the statement', async (t) => {
  // In Trino '\' is a whole string; a lexer with backslash escapes would read the DELETE as text.
  const err = rejection(() => guard("SELECT '\\'; DELETE FROM orders; SELECT '\\'"));
  t.equal(err?.details?.kind, 'multiple_statements');
});

t.test('the deny list', async (t) => {
  for (const name of ['query', 'QUERY', 'raw_query', 'procedure', 'ai_gen', 'ai_classify', 'ai_analyze_sentiment', '$operator$add', '$literal$']) {
    t.ok(deniedFunction('trino', name), `${name} is denied`);
  }
  for (const name of ['count', 'approx_percentile', 'date_trunc', 'sequence', 'transform', 'json_query', 'query_id', 'regexp_extract', 'exclude_columns']) {
    t.notOk(deniedFunction('trino', name), `${name} is allowed`);
  }
});

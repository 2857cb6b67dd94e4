/**
 * The Trino SQL guard as a pure function: what it refuses (and why), what real Trino
 * analytics it lets through (and which relations they read), how it edits the LIMIT, and
 * that its lexer reads strings, quoted identifiers and comments the way Trino does.
 */
import t from 'tap';
import { CortadoError } from '../../protocol/errors.js';
import { guardSql, hasGuard, prepareGuard } from '../../actors/executor/guard/index.js';
import { deniedFunction } from '../../actors/executor/guard/deny.js';
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

t.test('the trino dialect has a guard', async (t) => {
  t.ok(hasGuard('trino'));
});

t.test('rejected statements', async (t) => {
  t.ok(REJECTED_TRINO.length >= 40, `${REJECTED_TRINO.length} rejected cases`);
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
  const parse = rejection(() => guard("SELECT 'é', x FROM t WHERE `y` = 1"));
  t.match(parse?.message, /does not parse as Trino/);
  t.equal(parse?.details?.position, 28, 'the position counts characters from 1');
  t.match(rejection(() => guard("SELECT '😀', `y`"))?.details, { kind: 'parse', position: 13 });
});

t.test('accepted analytical queries', async (t) => {
  t.ok(ACCEPTED_TRINO.length >= 40, `${ACCEPTED_TRINO.length} accepted cases`);
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

/**
 * The MySQL / MariaDB SQL guard as a pure function: what it refuses (and why), what it lets
 * through (and which relations it reads), how it edits the LIMIT to the character, and that
 * whatever it produces parses again (with node-sql-parser and with the guard itself).
 */
import { createRequire } from 'node:module';
import t from 'tap';
import type { Parser } from 'node-sql-parser';
import { CortadoError } from '../../protocol/errors.js';
import { guardSql, prepareGuard } from '../../actors/executor/guard/index.js';
import { deniedFunction } from '../../actors/executor/guard/deny.js';
import { lex } from '../../actors/executor/guard/mysql.js';
import { ACCEPTED_MYSQL, LIMIT_CASES_MYSQL, LIMITS, REJECTED_MYSQL } from '../fixtures/guard-cases-mysql.js';

await prepareGuard('mysql');

const require = createRequire(import.meta.url);
const mysqlParser = new (require('node-sql-parser/build/mysql.js') as { Parser: new () => Parser }).Parser();
const mariadbParser = new (require('node-sql-parser/build/mariadb.js') as { Parser: new () => Parser }).Parser();

function rejection(fn: () => unknown): CortadoError | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof CortadoError ? err : undefined;
  }
  return undefined;
}

/** Whether either grammar parses the SQL (comments blanked the way the guard does). */
function parses(sql: string): boolean {
  const code = lex(sql).code;
  for (const [p, database] of [[mysqlParser, 'MySQL'], [mariadbParser, 'MariaDB']] as const) {
    try {
      p.astify(code, { database });
      return true;
    } catch {
      /* the other grammar */
    }
  }
  return false;
}

t.test('rejected statements', async (t) => {
  t.ok(REJECTED_MYSQL.length >= 40, `${REJECTED_MYSQL.length} rejected cases`);
  for (const c of REJECTED_MYSQL) {
    const err = rejection(() => guardSql(c.sql, 'mysql', LIMITS));
    t.equal(err?.code, 'SQL_REJECTED', `${c.name}: SQL_REJECTED`);
    t.equal(err?.details?.kind, c.kind, `${c.name}: kind ${c.kind}${err ? ` (${err.details?.kind}: ${err.message})` : ''}`);
    t.ok(err && err.message.length > 10, `${c.name}: a readable reason (${err?.message})`);
  }
});

t.test('reasons name what was found', async (t) => {
  const g = (sql: string) => rejection(() => guardSql(sql, 'mysql', LIMITS));
  t.match(g('DELETE FROM orders')?.message, /DELETE/);
  t.match(g('HANDLER orders OPEN')?.details, { statement: 'HANDLER' });
  t.match(g('SELECT `Sleep`(1)')?.details, { function: 'sleep' });
  t.match(g('SELECT 1; SELECT 2; SELECT 3')?.details, { count: 3 });
  t.match(g('SELECT * FROM t LOCK IN SHARE MODE')?.message, /LOCK IN SHARE MODE/);
  t.match(g("SELECT 1 INTO DUMPFILE '/tmp/x'")?.message, /DUMPFILE/);
  t.match(g('SELECT 1 /*! , SLEEP(1) */')?.message, /executable comment/);
  t.match(g('SELECT 1 /*M!100000 , SLEEP(1) */')?.message, /executable comment/);
  t.match(g('SELECT 1 --1')?.message, /two minus signs/);
  const parse = g('SELECT * FROM orders WHERE');
  t.match(parse?.message, /does not parse as MySQL/);
  t.type(parse?.details?.position, 'number');
});

t.test('executable comments are found by the lexer, not in strings or identifiers', async (t) => {
  const ok = (sql: string) => t.notOk(rejection(() => guardSql(sql, 'mysql', LIMITS)), `${sql}: accepted`);
  ok("SELECT '/*! SLEEP(1) */' AS s");
  ok('SELECT 1 AS `/*!x*/`');
  ok('SELECT 1 # /*! not a comment start in a # comment */');
  ok('SELECT 1 -- /*! nor in a -- comment */');
  ok('SELECT 1 /* a plain comment /*! nested markers do not count */');
  ok('SELECT 1 /**/');
  const bad = (sql: string) => t.equal(rejection(() => guardSql(sql, 'mysql', LIMITS))?.details?.kind, 'parse', `${sql}: refused`);
  bad('SELECT 1 /*!*/');
  bad('SELECT 1 /*m! , SLEEP(1) */');
  bad("SELECT 'x' /*!, SLEEP(1)*/");
});

t.test('accepted analytical queries', async (t) => {
  t.ok(ACCEPTED_MYSQL.length >= 40, `${ACCEPTED_MYSQL.length} accepted cases`);
  for (const c of ACCEPTED_MYSQL) {
    const err = rejection(() => guardSql(c.sql, 'mysql', LIMITS));
    t.notOk(err, `${c.name}: accepted${err ? ` (rejected: ${err.message})` : ''}`);
    if (err) continue;
    const r = guardSql(c.sql, 'mysql', LIMITS);
    t.same(r.tables, c.tables, `${c.name}: tables`);
    t.ok(r.limit >= 1 && r.limit <= LIMITS.maxLimit, `${c.name}: limit within the maximum`);
    t.ok(parses(r.runSql), `${c.name}: the SQL that runs parses again`);
  }
});

t.test('LIMIT injection, clamping, keeping and wrapping', async (t) => {
  for (const c of LIMIT_CASES_MYSQL) {
    const r = guardSql(c.sql, 'mysql', c.limits ?? LIMITS);
    t.same({ sql: r.sql, runSql: r.runSql, limit: r.limit, capped: r.capped }, c.expect, c.name);
  }
});

t.test('the guard output parses, is itself accepted, and keeps its LIMIT', async (t) => {
  for (const c of LIMIT_CASES_MYSQL) {
    const limits = c.limits ?? LIMITS;
    const first = guardSql(c.sql, 'mysql', limits);
    t.ok(parses(first.sql) && parses(first.runSql), `${c.name}: the output parses`);
    const again = guardSql(first.sql, 'mysql', limits);
    t.equal(again.limit, first.limit, `${c.name}: same limit the second time`);
    t.equal(again.sql, first.sql, `${c.name}: unchanged the second time`);
  }
});

t.test('the lexer', async (t) => {
  const words = (sql: string) => lex(sql).tokens.map((x) => x.text);
  t.same(words("SELECT 'a\\'b', `c``d`, \"e\"\"f\" -- x\n# y\n/* z */ ;"), ['SELECT', "'a\\'b'", ',', '`c``d`', ',', '"e""f"', ';']);
  t.same(words('SELECT 1 --\tcomment'), ['SELECT', '1'], 'a tab after -- starts a comment');
  t.same(words('SELECT 1 --'), ['SELECT', '1'], '-- at the end is a comment');
  t.equal(lex('SELECT 1 /* x */ # y').code, `SELECT 1 ${' '.repeat(11)}`, 'comments are blanked, positions kept');
  t.equal(lex('SELECT 1 /* a\nb */').code, 'SELECT 1     \n    ', 'newlines inside comments are kept');
});

t.test('the deny list', async (t) => {
  for (const name of [
    'sleep', 'SLEEP', 'benchmark', 'load_file', 'get_lock', 'release_lock', 'release_all_locks', 'master_pos_wait', 'source_pos_wait',
    'master_gtid_wait', 'wait_for_executed_gtid_set', 'sys_exec', 'sys_eval', 'nextval', 'setval', 'keyring_key_store', 'version_tokens_set',
    'audit_log_filter_set_filter', 'group_replication_set_as_primary', 'service_get_write_locks',
  ]) {
    t.ok(deniedFunction('mysql', name), `${name} is denied`);
  }
  for (const name of ['count', 'sum', 'date_format', 'now', 'json_extract', 'concat', 'is_free_lock', 'version', 'database', 'lastval', 'row_number']) {
    t.notOk(deniedFunction('mysql', name), `${name} is allowed`);
  }
});

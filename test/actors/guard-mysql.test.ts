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
import {
  INFORMATION_SCHEMA_SAFE,
  MYSQL_CAST_TYPES,
  MYSQL_FUNCTIONS,
  MYSQL_OPERATORS,
  MYSQL_SYSTEM_VARIABLES,
  allowedFunction,
  markMysqlMissingBuiltins,
  resetMysqlAllowList,
  restrictMysqlAllowList,
} from '../../actors/executor/guard/allow-mysql.js';
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
  t.ok(ACCEPTED_MYSQL.length >= 150, `${ACCEPTED_MYSQL.length} accepted cases`);
  t.equal(new Set(ACCEPTED_MYSQL.map((c) => c.name)).size, ACCEPTED_MYSQL.length, 'names are unique');
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
    'audit_log_filter_set_filter', 'group_replication_set_as_primary', 'service_get_write_locks', 'lastval', 'last_insert_id', 'extractvalue',
    'updatexml',
  ]) {
    t.ok(deniedFunction('mysql', name), `${name} is denied`);
  }
  for (const name of ['count', 'sum', 'date_format', 'now', 'json_extract', 'concat', 'is_free_lock', 'version', 'database', 'row_number']) {
    t.notOk(deniedFunction('mysql', name), `${name} is not on the deny list`);
  }
});

t.test('the allow-lists', async (t) => {
  for (const [what, groups] of Object.entries({ MYSQL_FUNCTIONS, MYSQL_OPERATORS, MYSQL_CAST_TYPES, MYSQL_SYSTEM_VARIABLES, INFORMATION_SCHEMA_SAFE })) {
    const names = groups.flatMap((g) => g.names);
    t.equal(new Set(names).size, names.length, `${what}: no name twice`);
    t.ok(names.every((n) => n === n.toLowerCase()), `${what}: lower case`);
    t.ok(groups.every((g) => g.why.length > 10), `${what}: every group says why`);
  }
  const both = MYSQL_FUNCTIONS.flatMap((g) => g.names).filter((n) => deniedFunction('mysql', n));
  t.same(both, [], 'no allowed function is on the deny list');
  for (const name of ['sleep', 'benchmark', 'load_file', 'get_lock', 'connection_id', 'user', 'current_user', 'row_count', 'found_rows', 'is_used_lock', 'password', 'aes_encrypt', 'name_const', 'st_geomfromtext', 'json_table']) {
    t.notOk(allowedFunction(name), `${name} is not on the allow-list`);
  }
});

t.test('database.allowed_functions', async (t) => {
  const g = (sql: string, allowedFunctions: string[] = []) => rejection(() => guardSql(sql, 'mysql', { ...LIMITS, allowedFunctions }));
  t.match(g('SELECT order_total(id) FROM orders')?.details, { kind: 'function_not_allowed', function: 'order_total' });
  t.notOk(g('SELECT order_total(id) FROM orders', ['order_total']), 'a listed name may be called');
  t.notOk(g('SELECT Order_Total(id) FROM orders', ['ORDER_TOTAL']), 'case-insensitively');
  t.notOk(g('SELECT shop.order_total(id) FROM orders', ['order_total']), 'a bare name allows it however it is qualified');
  t.notOk(g('SELECT `shop`.`order_total`(id) FROM orders', ['shop.order_total']), 'a qualified name allows that call');
  t.match(g('SELECT other.order_total(id) FROM orders', ['shop.order_total'])?.details, { kind: 'function_not_allowed', function: 'other.order_total' }, 'but not in another database');
  t.match(g('SELECT order_total(id) FROM orders', ['shop.order_total'])?.details, { kind: 'function_not_allowed' }, 'nor unqualified');
  t.match(g('SELECT SLEEP(1)', ['sleep'])?.details, { kind: 'dangerous_function', function: 'sleep' }, 'the deny list still wins');
  t.match(g('SELECT `concat`(name) FROM customers')?.message, /backticks/);
  t.notOk(g('SELECT `concat`(name) FROM customers', ['concat']), 'a listed name may be quoted');
});

t.test('a stored function named like an allowed built-in drops the name (issue 24, class D)', async (t) => {
  resetMysqlAllowList();
  t.teardown(resetMysqlAllowList);
  const g = (sql: string, allowedFunctions: string[] = []) => rejection(() => guardSql(sql, 'mysql', { ...LIMITS, allowedFunctions }));
  t.notOk(g('SELECT ANY_VALUE(name) FROM customers'), 'before: allowed');
  const dropped = restrictMysqlAllowList([
    { schema: 'shop', name: 'Any_Value' },
    { schema: 'shop', name: 'order_total' }, // not on the allow-list: nothing to drop
    { schema: '(loadable function)', name: 'regexp_like' },
  ]);
  t.same(dropped.map((d) => d.name).sort(), ['any_value', 'regexp_like']);
  const err = g('SELECT any_value(name) FROM customers');
  t.match(err?.details, { kind: 'function_not_allowed', function: 'any_value' });
  t.match(err?.message, /stored function of that name \(shop\.Any_Value\)/);
  t.match(g("SELECT name FROM customers WHERE REGEXP_LIKE(name, 'a')")?.details, { kind: 'function_not_allowed', function: 'regexp_like' }, 'a loadable function too');
  t.match(g('SELECT (SELECT any_value(name) FROM customers) AS x')?.details, { kind: 'function_not_allowed' }, 'wherever it is called');
  t.notOk(g('SELECT any_value(name) FROM customers', ['any_value']), 'database.allowed_functions allows it again');
  t.notOk(g('SELECT upper(name) FROM customers'), 'other names stay allowed');
  restrictMysqlAllowList([]);
  t.ok(g('SELECT any_value(name) FROM customers'), 'a later check does not take a drop back');
  resetMysqlAllowList();
  t.notOk(g('SELECT any_value(name) FROM customers'), 'reset: the built-in list again');

  // a name the server has no built-in of: dropped whatever the database holds now
  markMysqlMissingBuiltins(['json_storage_size', 'not_on_the_list']);
  const missing = g("SELECT JSON_STORAGE_SIZE('[1]')");
  t.match(missing?.details, { kind: 'function_not_allowed', function: 'json_storage_size' });
  t.match(missing?.message, /no built-in of that name/);
  t.notOk(g("SELECT json_storage_size('[1]')", ['json_storage_size']), 'database.allowed_functions allows it');
  t.notOk(g('SELECT upper(name) FROM customers'));
});

t.test('what the allow-lists refuse is named, with why', async (t) => {
  const g = (sql: string) => rejection(() => guardSql(sql, 'mysql', LIMITS));
  t.match(g('SELECT * FROM information_schema.PROCESSLIST'), { details: { kind: 'relation_not_allowed', relation: 'information_schema.PROCESSLIST' }, message: /other sessions/ });
  t.match(g('SELECT * FROM mysql.user'), { details: { kind: 'relation_not_allowed', relation: 'mysql.user' }, message: /password hashes/ });
  t.match(g('SELECT * FROM information_schema.ROUTINES')?.message, /code, not data/);
  t.match(g('SELECT * FROM information_schema.FOO_BAR')?.message, /tables, columns, keys and constraints/);
  t.match(g('SELECT @@hostname'), { details: { kind: 'function_not_allowed', variable: '@@hostname' } });
  t.match(g('SELECT @x'), { details: { kind: 'function_not_allowed', variable: '@x' }, message: /session state/ });
  t.match(g('SELECT CAST(name AS POINT) FROM customers'), { details: { kind: 'type_not_allowed', type: 'POINT' } });
  t.match(g("SELECT name @> 'x' FROM customers"), { details: { kind: 'operator_not_allowed', operator: '@>' } });
  t.match(g('SELECT LAST_INSERT_ID(1)'), { details: { kind: 'dangerous_function', function: 'last_insert_id' }, message: /session keeps/ });
  t.match(g('SELECT EXTRACTVALUE(1, 2)')?.message, /error message/);
  t.match(g('SELECT NEXT VALUE FOR s'), { details: { kind: 'dangerous_function', function: 'nextval' } });
  t.match(g('SELECT COUNT(*) FROM orders GROUP BY CONCAT(status, RAND())'), { details: { kind: 'function_not_allowed', function: 'rand' }, message: /duplicate-key/ });
  t.notOk(g('SELECT id FROM orders ORDER BY RAND()'), 'RAND() outside GROUP BY is fine');
  t.notOk(g('SELECT @@SESSION.time_zone, @@version, @@GLOBAL.time_zone'), 'the allowed system variables');
  t.notOk(g('SELECT TABLE_NAME FROM INFORMATION_SCHEMA.columns'), 'the safe set, in any case');
});

t.test('the token check catches a call the tree loses', async (t) => {
  // node-sql-parser keeps TIMESTAMPDIFF's first argument as an empty keyword node: the call is not in the tree
  const g = (sql: string) => rejection(() => guardSql(sql, 'mysql', LIMITS));
  t.match(g('SELECT TIMESTAMPDIFF(evil_udf(1), ordered_at, NOW()) FROM orders')?.details, { kind: 'function_not_allowed', function: 'evil_udf' });
  t.match(g('SELECT TIMESTAMPDIFF(SLEEP(1), ordered_at, NOW()) FROM orders')?.details, { kind: 'dangerous_function', function: 'sleep' });
  t.notOk(g('SELECT TIMESTAMPDIFF(DAY, ordered_at, NOW()) FROM orders'), 'the unit itself is fine');
  t.notOk(g('WITH RECURSIVE r (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT CAST(n AS DECIMAL(5,1)) FROM r'), 'declared names and typed lengths before a parenthesis');
});

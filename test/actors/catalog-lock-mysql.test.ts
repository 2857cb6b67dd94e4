/**
 * The catalog lock on MySQL / MariaDB (guard/catalog-lock-mysql.ts): the database is the
 * catalog. Table-driven: real analytical SQL in the session's database passes; every way of
 * naming another database a model (or a person steering it) might try is refused.
 */
import t from 'tap';
import { CortadoError } from '../../protocol/errors.js';
import { checkCatalogLock, type CatalogLock } from '../../actors/executor/guard/catalog-lock.js';
import { mysqlCatalogLockFor } from '../../actors/executor/guard/catalog-lock-mysql.js';

const allowed = [{ name: 'shop', allowed_schemas: [] }, { name: 'Analytics', allowed_schemas: [] }];
const shop = mysqlCatalogLockFor({ enforce: true, allowed, database: 'shop' }) as CatalogLock;

function verdict(sql: string, lock: CatalogLock = shop): 'ok' | string {
  try {
    checkCatalogLock(sql, lock);
    return 'ok';
  } catch (err) {
    if (err instanceof CortadoError && err.code === 'SQL_REJECTED' && err.details?.kind === 'catalog_lock') return err.message;
    throw err;
  }
}

t.test('when the lock applies', async (t) => {
  t.equal(mysqlCatalogLockFor({ enforce: false, allowed, database: 'shop' }), undefined, 'off');
  t.equal(mysqlCatalogLockFor({ enforce: true, allowed: [], database: 'shop' }), undefined, 'no allowed_catalogs');
  t.same([...shop.catalogs.keys()], ['shop'], 'a session: its own database only, not every allowed one');
  t.equal(shop.dialect, 'mysql');
  const none = mysqlCatalogLockFor({ enforce: true, allowed, database: '' }) as CatalogLock;
  t.same([...none.catalogs.keys()], [], 'no database: no qualified name at all');
  t.match(verdict('SELECT * FROM shop.orders', none), /this session has no database it may name/);
  t.equal(verdict('SELECT 1 AS one', none), 'ok');
});

/** Analytical SQL in the session's own database: none of it may be refused. */
const OK: string[] = [
  'SELECT * FROM orders',
  'SELECT * FROM shop.orders',
  'SELECT * FROM `shop`.`orders`',
  'SELECT * FROM shop . orders',
  'SELECT shop.orders.id FROM shop.orders',
  'SELECT o.* FROM orders o',
  'SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id',
  'SELECT o.id FROM orders AS o LEFT OUTER JOIN shop.customers AS c ON c.id = o.customer_id WHERE c.id IS NULL',
  'SELECT o.id FROM orders o STRAIGHT_JOIN customers c ON c.id = o.customer_id',
  'SELECT o.id, c.name FROM orders o, customers c WHERE o.customer_id = c.id',
  'SELECT c.name, SUM(o.amount) AS total FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.name ORDER BY total DESC LIMIT 10',
  'SELECT c.name, COUNT(*) AS n FROM customers c GROUP BY c.name WITH ROLLUP',
  'SELECT d.m, d.total FROM (SELECT DATE_FORMAT(o.created_at, \'%Y-%m\') AS m, SUM(o.amount) AS total FROM orders o GROUP BY m) AS d ORDER BY d.m',
  'SELECT id FROM orders WHERE customer_id IN (SELECT c.id FROM customers c WHERE c.country = \'DE\')',
  'SELECT o.id, (SELECT MAX(p.price) FROM products p) AS top_price FROM orders o',
  'SELECT o.id FROM orders o WHERE EXISTS (SELECT 1 FROM customers c WHERE c.id = o.customer_id)',
  'WITH monthly AS (SELECT DATE_FORMAT(created_at, \'%Y-%m\') AS m, SUM(amount) AS total FROM orders GROUP BY m) SELECT monthly.m, monthly.total FROM monthly',
  'WITH a AS (SELECT id FROM orders), b (k) AS (SELECT a.id FROM a) SELECT b.k FROM b',
  'WITH RECURSIVE n (k) AS (SELECT 1 UNION ALL SELECT n.k + 1 FROM n WHERE n.k < 5) SELECT n.k FROM n',
  'SELECT o.id, SUM(o.amount) OVER (PARTITION BY o.customer_id ORDER BY o.created_at ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running FROM orders o',
  'SELECT o.id, RANK() OVER w AS r FROM orders o WINDOW w AS (ORDER BY o.amount DESC)',
  'SELECT id FROM orders UNION SELECT id FROM customers',
  'SELECT EXTRACT(YEAR FROM o.created_at) AS y, COUNT(*) AS n FROM orders o GROUP BY y',
  'SELECT TRIM(LEADING \'x\' FROM c.name) AS n FROM customers c',
  'SELECT CAST(o.amount AS DECIMAL(10,2)) AS a, CONVERT(o.amount, CHAR) AS s FROM orders o',
  'SELECT o.created_at + INTERVAL 1 DAY AS next_day, DATE_SUB(o.created_at, INTERVAL 3 MONTH) AS before FROM orders o',
  'SELECT 3.14 AS pi, 1.5e-3 AS small, 1e3 AS big, 1.5E+3 AS bigger, 0x1F AS hex, -2.5 AS neg FROM orders',
  'SELECT COALESCE(c.nickname, c.name, \'?\') AS label, CASE WHEN c.vip THEN 1 ELSE 0 END AS vip FROM customers c',
  'SELECT JSON_EXTRACT(p.attributes, \'$.color\') AS color, p.attributes->>\'$.size\' AS size FROM products p',
  'SELECT c.name FROM customers c WHERE c.name REGEXP \'^[A-M]\' AND c.email LIKE \'%@example.org\'',
  "SELECT 'otherdb.t' AS s, \"otherdb.t\" AS d FROM orders",
  'SELECT * FROM orders -- otherdb.t',
  'SELECT * FROM orders # otherdb.t',
  'SELECT * FROM orders /* otherdb.t */',
  'SELECT GROUP_CONCAT(c.name ORDER BY c.name SEPARATOR \', \') AS names FROM customers c',
  'SELECT t.id FROM (SELECT id FROM orders) t',
  'SELECT `Mixed Case`.id FROM `Mixed Case`',
];

/** Another database, however it is written. */
const REFUSED: Array<[string, RegExp]> = [
  ['SELECT * FROM otherdb.t', /reads otherdb\.t, in database "otherdb", but this session is locked to database "shop"/],
  ['SELECT * FROM `otherdb`.`t`', /database "otherdb"/],
  ['SELECT * FROM `other``db`.t', /database "other`db"/],
  ['SELECT * FROM SHOP.orders', /database "SHOP"/], // another database on Linux (lower_case_table_names=0)
  ['SELECT * FROM `Shop`.orders', /database "Shop"/],
  ['SELECT * FROM analytics.t', /database "analytics"/], // allowed for another login, not this session
  ['SELECT * FROM Analytics.t', /database "Analytics"/],
  ['SELECT * FROM otherdb . t', /database "otherdb"/],
  ['SELECT * FROM otherdb/**/.t', /database "otherdb"/],
  ['SELECT * FROM otherdb.`t`', /database "otherdb"/],
  ['SELECT * FROM orders o JOIN otherdb.t x ON x.id = o.id', /database "otherdb"/],
  ['SELECT * FROM orders o LEFT JOIN otherdb.t x ON x.id = o.id', /database "otherdb"/],
  ['SELECT * FROM orders o STRAIGHT_JOIN otherdb.t x', /database "otherdb"/],
  ['SELECT * FROM orders o NATURAL JOIN otherdb.t', /database "otherdb"/],
  ['SELECT * FROM orders o CROSS JOIN otherdb.t', /database "otherdb"/],
  ['SELECT * FROM orders, otherdb.t', /database "otherdb"/],
  ['SELECT * FROM orders AS otherdb, otherdb.secret', /database "otherdb"/], // an alias named like the database
  ['SELECT * FROM (orders AS otherdb, otherdb.secret)', /database "otherdb"/],
  ['SELECT * FROM orders o LEFT JOIN (otherdb.t AS x CROSS JOIN customers y) ON 1 = 1', /database "otherdb"/],
  ['SELECT * FROM orders WHERE id IN (SELECT id FROM otherdb.t)', /database "otherdb"/],
  ['SELECT * FROM orders WHERE EXISTS (SELECT 1 FROM (SELECT * FROM otherdb.t) x)', /database "otherdb"/],
  ['SELECT (SELECT MAX(a) FROM otherdb.t) AS m FROM orders', /database "otherdb"/],
  ['SELECT * FROM (SELECT * FROM otherdb.t) AS sub', /database "otherdb"/],
  ['SELECT * FROM orders UNION SELECT * FROM otherdb.t', /database "otherdb"/],
  ['SELECT * FROM orders UNION ALL (SELECT * FROM otherdb.t)', /database "otherdb"/],
  ['WITH c AS (SELECT * FROM otherdb.t) SELECT * FROM c', /database "otherdb"/],
  ['WITH RECURSIVE r AS (SELECT 1 AS k UNION ALL SELECT k + 1 FROM otherdb.t) SELECT * FROM r', /database "otherdb"/],
  ['SELECT otherdb.t.c FROM orders', /reads otherdb\.t\.c, in database "otherdb"/],
  ['SELECT otherdb.t.* FROM orders', /database "otherdb"/],
  ['SELECT x.y FROM orders', /"x" is not a table or alias of the statement, so it is taken for a database/],
  ['SELECT otherdb.f(1) AS v FROM orders', /reads otherdb\.f, in database "otherdb"/],
  ['SELECT * FROM information_schema.tables', /database "information_schema"/],
  ['SELECT * FROM INFORMATION_SCHEMA.PROCESSLIST', /database "INFORMATION_SCHEMA"/],
  ['SELECT * FROM mysql.user', /database "mysql"/],
  ['SELECT * FROM performance_schema.events_statements_current', /database "performance_schema"/],
  ['SELECT * FROM sys.session', /database "sys"/],
  ['SELECT a.b.c.d FROM orders', /more parts than database\.table\.column/],
  ['SELECT * FROM a.b.c', /database "a"/],
  ['SELECT NEXT VALUE FOR otherdb.s', /database "otherdb"/],
  ['SELECT NEXTVAL(otherdb.s)', /database "otherdb"/],
  ['TABLE otherdb.t', /database "otherdb"/],
  ['SELECT * FROM orders UNION TABLE otherdb.t', /database "otherdb"/],
  ['SELECT * FROM { OJ orders o LEFT OUTER JOIN otherdb.t x ON o.id = x.id }', /ODBC escape/],
  ["SELECT * FROM 'otherdb'.t", /cannot read/],
  ['SELECT * FROM "otherdb".t', /cannot read/],
  ['SELECT * FROM otherdb..t', /cannot read/],
  ['SELECT * FROM .otherdb.t', /database/],
  ['SELECT * FROM otherdb.5e', /database "otherdb"/], // after a dot, 5e is a name to MySQL
  ['SELECT * FROM orders AS otherdb, otherdb.5e', /database "otherdb"/],
  ['SELECT * FROM 123e.t', /database "123e"/], // a name that starts with digits
  ["SELECT * FROM orders WHERE x = 'unterminated", /cannot be read/],
  ['SELECT * FROM orders /* unterminated', /cannot be read/],
];

t.test('the session\'s own database: analytical SQL passes', async (t) => {
  for (const sql of OK) t.equal(verdict(sql), 'ok', sql);
});

t.test('another database, however written, wherever it is: refused', async (t) => {
  for (const [sql, why] of REFUSED) t.match(verdict(sql), why, sql);
});

t.test('the error says catalog_lock and which database; variables are not tables', async (t) => {
  try {
    checkCatalogLock('SELECT * FROM orders o JOIN otherdb.secrets s ON s.id = o.id', shop);
    t.fail('should refuse');
  } catch (err) {
    t.equal((err as CortadoError).code, 'SQL_REJECTED');
    t.equal((err as CortadoError).details?.kind, 'catalog_lock');
    t.equal((err as CortadoError).details?.database, 'otherdb');
  }
  // what a variable is named does not name a table (whether variables may be read at all is the guard's business)
  t.equal(verdict('SELECT @@session.time_zone AS tz, @a.b AS v FROM orders'), 'ok');
  t.match(verdict('SELECT @ otherdb.t FROM orders'), /database "otherdb"/, 'a space after @: not a variable name, read as a name');
});

t.test('a session in a database whose name needs quoting, and case', async (t) => {
  const odd = mysqlCatalogLockFor({ enforce: true, allowed: [{ name: 'My-Shop', allowed_schemas: [] }], database: 'My-Shop' }) as CatalogLock;
  t.equal(verdict('SELECT * FROM `My-Shop`.orders o JOIN `My-Shop`.customers c ON c.id = o.customer_id', odd), 'ok');
  t.match(verdict('SELECT * FROM `my-shop`.orders', odd), /database "my-shop"/, 'names compare exactly: another database on Linux');
});

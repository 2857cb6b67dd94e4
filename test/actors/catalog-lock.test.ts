/**
 * The catalog lock (plugins.auth.enforce_catalog_lock) on its own: table-driven, with the
 * bypass attempts a model (or a person steering it) might try.
 */
import t from 'tap';
import { CortadoError } from '../../protocol/errors.js';
import { catalogLockFor, checkCatalogLock, type CatalogLock } from '../../actors/executor/guard/catalog-lock.js';

const allowed = [
  { name: 'hive', allowed_schemas: ['sales', 'Marketing'] },
  { name: 'iceberg', allowed_schemas: [] },
];
const hive = catalogLockFor({ enforce: true, allowed, catalog: 'hive', discovery: false }) as CatalogLock;
const discovery = catalogLockFor({ enforce: true, allowed, catalog: '', discovery: true }) as CatalogLock;

function verdict(sql: string, lock: CatalogLock): 'ok' | string {
  try {
    checkCatalogLock(sql, lock);
    return 'ok';
  } catch (err) {
    if (err instanceof CortadoError && err.code === 'SQL_REJECTED' && err.details?.kind === 'catalog_lock') return err.message;
    throw err;
  }
}

t.test('when the lock applies', async (t) => {
  t.equal(catalogLockFor({ enforce: false, allowed, catalog: 'hive', discovery: false }), undefined, 'off');
  t.equal(catalogLockFor({ enforce: true, allowed: [], catalog: 'hive', discovery: false }), undefined, 'no allowed_catalogs');
  t.same([...hive.catalogs.keys()], ['hive'], 'a session: its own catalog only');
  t.same([...(hive.catalogs.get('hive') ?? [])], ['sales', 'marketing'], 'schemas compare lower-cased');
  t.same([...discovery.catalogs.keys()], ['hive', 'iceberg'], 'a discovery token: every allowed catalog');
  const notAllowed = catalogLockFor({ enforce: true, allowed, catalog: 'postgres', discovery: false }) as CatalogLock;
  t.same([...notAllowed.catalogs.keys()], ['postgres'], 'a catalog outside the list is still the only one its scope may name');
});

const SESSION_OK: string[] = [
  'SELECT * FROM orders',
  'SELECT * FROM sales.orders',
  'SELECT * FROM hive.sales.orders',
  'SELECT * FROM "HIVE"."SALES"."ORDERS"',
  'SELECT * FROM Hive.Marketing.campaigns',
  'SELECT o.id FROM hive.sales.orders o JOIN sales.customers c ON o.cid = c.id',
  'SELECT extract(year FROM o.d) AS y FROM orders o',
  'WITH x AS (SELECT * FROM hive.sales.a) SELECT x.id FROM x',
  "SELECT 'iceberg.db.t' AS s FROM orders",
  'SELECT * FROM orders -- iceberg.db.t',
  'SELECT * FROM orders /* iceberg.db.t */',
  'SELECT hive.sales.orders.id FROM hive.sales.orders',
  'SELECT c.name, count(*) FROM orders o LEFT JOIN customers c ON c.id = o.cid GROUP BY c.name ORDER BY 2 DESC LIMIT 10',
  'SELECT * FROM (SELECT id FROM sales.orders) AS sub WHERE sub.id > 1',
  'SELECT transform(arr, x -> x.field) FROM orders',
  'SELECT * FROM orders o, sales.customers c WHERE o.cid = c.id',
  'SELECT * FROM orders o CROSS JOIN UNNEST(o.items) AS t(item)',
];

const SESSION_REFUSED: Array<[string, RegExp]> = [
  ['SELECT * FROM iceberg.db.t', /catalog "iceberg"/],
  ['SELECT * FROM "iceberg"."db"."t"', /catalog "iceberg"/],
  ['SELECT * FROM ICEBERG.db.t', /catalog "iceberg"/],
  ['SELECT * FROM "IceBerg".db.t', /catalog "iceberg"/],
  ['SELECT * FROM "ice""berg".db.t', /catalog "ice"berg"/],
  ['SELECT * FROM hive.other.t', /schema "other"/],
  ['SELECT * FROM other.t', /schema "other"/],
  ['SELECT * FROM orders o JOIN postgres.public.users u ON o.id = u.id', /catalog "postgres"/],
  ['SELECT * FROM orders o LEFT OUTER JOIN "postgres"."public"."users" u ON o.id = u.id', /catalog "postgres"/],
  ['SELECT * FROM orders WHERE id IN (SELECT id FROM mysql.db.t)', /catalog "mysql"/],
  ['SELECT (SELECT max(x) FROM pg.public.t) AS m FROM orders', /catalog "pg"/],
  ['SELECT * FROM (SELECT * FROM other_cat.s.t) sub', /catalog "other_cat"/],
  ['SELECT * FROM (iceberg.db.t CROSS JOIN orders)', /catalog "iceberg"/],
  ['SELECT * FROM orders UNION ALL SELECT * FROM iceberg.db.t', /catalog "iceberg"/],
  ['SELECT * FROM orders, iceberg.db.t', /catalog "iceberg"/],
  ['SELECT * FROM orders o, LATERAL (SELECT * FROM iceberg.db.t WHERE t.id = o.id) l', /catalog "iceberg"/],
  ['WITH a AS (SELECT * FROM iceberg.db.t) SELECT * FROM a', /catalog "iceberg"/],
  ['TABLE iceberg.db.t', /catalog "iceberg"/],
  ['SELECT * FROM a.b.c.d', /more parts than catalog\.schema\.table/],
  ['SELECT t.addr.city FROM orders t', /cannot tell whether "t" is a catalog/],
  ['SELECT iceberg.db.f(1)', /catalog "iceberg"/],
  ['SELECT * FROM orders WHERE x = \'unterminated', /cannot be read/],
  ['SELECT * FROM `iceberg`.db.t', /cannot be read/],
  ['SELECT * FROM orders WHERE EXISTS (SELECT 1 FROM (SELECT * FROM "ICEBERG".DB.T) x)', /catalog "iceberg"/],
];

t.test('a session locked to its catalog: allowed references pass', async (t) => {
  for (const sql of SESSION_OK) t.equal(verdict(sql, hive), 'ok', sql);
});

t.test('a session locked to its catalog: every other catalog or schema is refused, however written', async (t) => {
  for (const [sql, why] of SESSION_REFUSED) t.match(verdict(sql, hive), why, sql);
});

t.test('a discovery token: any allowed catalog with its allowed schemas, nothing else', async (t) => {
  t.equal(verdict('SELECT * FROM hive.sales.orders o JOIN iceberg.anything.t x ON o.id = x.id', discovery), 'ok');
  t.equal(verdict('SELECT * FROM "Iceberg".s.t', discovery), 'ok');
  t.match(verdict('SELECT * FROM hive.other.t', discovery), /schema "other"/);
  t.match(verdict('SELECT * FROM postgres.public.t', discovery), /may read only the catalogs "hive", "iceberg"/);
  // relative names have no session catalog: Trino itself refuses them, the lock lets Trino say so
  t.equal(verdict('SELECT * FROM orders', discovery), 'ok');
});

t.test('the error says catalog_lock and never runs anything', async (t) => {
  try {
    checkCatalogLock('SELECT * FROM iceberg.db.t', hive);
    t.fail('should refuse');
  } catch (err) {
    t.equal((err as CortadoError).code, 'SQL_REJECTED');
    t.equal((err as CortadoError).details?.kind, 'catalog_lock');
    t.equal((err as CortadoError).details?.catalog, 'iceberg');
  }
});

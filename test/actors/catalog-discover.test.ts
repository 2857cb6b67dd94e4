/** Table discovery: which catalog and schema a table is in, per provider, and the search itself. */
import t from 'tap';
import { discover, discoverIn } from '../../actors/catalog/discover.js';
import { buildCatalog, createCatalogCache } from '../../actors/catalog/handle.js';
import type { DbTable, SqlIntrospectReply } from '../../protocol/schemas/sql.js';
import { testConfig } from '../helpers/config.js';

const table = (schema: string, name: string, kind: 'table' | 'view' = 'table'): DbTable => ({ schema, name, kind, columns: [{ name: 'id', type: 'integer', nullable: false }] });

const trinoAll: SqlIntrospectReply = {
  dialect: 'trino',
  provider: 'trino',
  default_schema: '',
  tables: [
    table('hive.sales', 'orders'), table('hive.sales', 'order_lines'), table('hive.hr', 'salaries'),
    table('iceberg.sales', 'orders_archive'), table('postgres.public', 'orders', 'view'),
  ],
};

t.test('Trino without a configured catalog: schemas are catalog.schema', async (t) => {
  const config = testConfig({ natsUrl: 'nats://x', extra: { database: { provider: 'trino', trino: { catalog: '' } } } });
  const catalog = buildCatalog(trinoAll);
  const found = discoverIn(catalog, { query: 'order', catalogs: [{ name: 'hive', allowed_schemas: [] }, { name: 'iceberg', allowed_schemas: ['sales'] }] }, config);
  t.same(found.tables, [
    { catalog: 'hive', schema: 'sales', name: 'order_lines', kind: 'table' },
    { catalog: 'hive', schema: 'sales', name: 'orders', kind: 'table' },
    { catalog: 'iceberg', schema: 'sales', name: 'orders_archive', kind: 'table' },
  ], 'postgres is not an allowed catalog');
  t.equal(found.truncated, false);
  const hr = discoverIn(catalog, { query: 'sal', catalogs: [{ name: 'hive', allowed_schemas: ['sales'] }] }, config);
  t.same(hr.tables, [], 'hive.hr is outside allowed_schemas');
  const sales = discoverIn(catalog, { query: 'sales', catalogs: [{ name: 'sales', allowed_schemas: [] }] }, config);
  t.same(sales.tables, [], 'on Trino a catalog name never stands for a schema');
  const capped = discoverIn(catalog, { query: 'o', catalogs: [{ name: 'hive', allowed_schemas: [] }, { name: 'iceberg', allowed_schemas: [] }], limit: 2 }, config);
  t.equal(capped.tables.length, 2);
  t.equal(capped.truncated, true);
});

t.test('Trino with a configured catalog: the schemas are plain', async (t) => {
  const config = testConfig({ natsUrl: 'nats://x', extra: { database: { provider: 'trino', trino: { catalog: 'hive' } } } });
  const catalog = buildCatalog({ ...trinoAll, tables: [table('sales', 'orders'), table('hr', 'salaries')] });
  t.same(discoverIn(catalog, { query: 'ORD', catalogs: [{ name: 'hive', allowed_schemas: [] }] }, config).tables, [{ catalog: 'hive', schema: 'sales', name: 'orders', kind: 'table' }]);
  t.same(discoverIn(catalog, { query: 'ord', catalogs: [{ name: 'iceberg', allowed_schemas: [] }] }, config).tables, []);
});

t.test('PostgreSQL, MySQL, BigQuery: the database, project or schema stands for the catalog', async (t) => {
  const pg = testConfig({ natsUrl: 'nats://x', db: { host: 'h', port: 1, name: 'shop', user: 'u' } });
  const pgCatalog = buildCatalog({ dialect: 'postgresql', provider: 'postgresql', default_schema: 'public', tables: [table('public', 'orders'), table('sales', 'targets')] });
  t.same(discoverIn(pgCatalog, { query: 'o', catalogs: [{ name: 'shop', allowed_schemas: ['public'] }] }, pg).tables, [{ catalog: 'shop', schema: 'public', name: 'orders', kind: 'table' }]);
  t.same(discoverIn(pgCatalog, { query: 'target', catalogs: [{ name: 'sales', allowed_schemas: [] }] }, pg).tables, [{ catalog: 'shop', schema: 'sales', name: 'targets', kind: 'table' }], 'a schema named as a catalog');
  t.same(discoverIn(pgCatalog, { query: 'o', catalogs: [] }, pg).tables, [], 'no allowed catalog: nothing');

  const my = testConfig({ natsUrl: 'nats://x', extra: { database: { provider: 'mysql', mysql: { database: '' } } } });
  const myCatalog = buildCatalog({ dialect: 'mysql', provider: 'mysql', default_schema: 'shop', tables: [table('shop', 'orders'), table('crm', 'contacts')] });
  t.same(discoverIn(myCatalog, { query: 'o', catalogs: [{ name: 'crm', allowed_schemas: [] }] }, my).tables, [{ catalog: 'crm', schema: 'crm', name: 'contacts', kind: 'table' }]);

  const bq = testConfig({ natsUrl: 'nats://x', extra: { database: { provider: 'bigquery', bigquery: { project_id: 'proj-1' } } } });
  const bqCatalog = buildCatalog({ dialect: 'bigquery', provider: 'bigquery', default_schema: 'analytics', tables: [table('analytics', 'events'), table('raw', 'events_raw')] });
  t.same(discoverIn(bqCatalog, { query: 'event', catalogs: [{ name: 'proj-1', allowed_schemas: ['raw'] }] }, bq).tables, [{ catalog: 'proj-1', schema: 'raw', name: 'events_raw', kind: 'table' }]);
});

t.test('the handler reads the cached catalog', async (t) => {
  let loads = 0;
  const config = testConfig({ natsUrl: 'nats://x', extra: { database: { provider: 'trino', trino: { catalog: '' } } } });
  const source = createCatalogCache({ load: async () => { loads++; return trinoAll; }, ttlSeconds: 60 });
  const a = await discover({ query: 'orders', catalogs: [{ name: 'postgres', allowed_schemas: [] }] }, { config, catalog: source }, { requestId: 'r1' });
  t.same(a.tables, [{ catalog: 'postgres', schema: 'public', name: 'orders', kind: 'view' }]);
  await discover({ query: 'x', catalogs: [] }, { config, catalog: source }, { requestId: 'r2' });
  t.equal(loads, 1);
});

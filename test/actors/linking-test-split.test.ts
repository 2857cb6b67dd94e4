/**
 * Classes of linking misses found on the held-out test split of the real-schema benchmark
 * (issue 23), each on a small catalog of its own: values repeated by a warehouse's copies, words
 * that are values, two-word table names, the calendar table of a dated question, facts two hops
 * under the chosen tables, and the nouns of the one who does a verb.
 */
import t from 'tap';
import { buildCatalog, createValueIndex, linkTables, lookupValues, scoreTables } from '../../actors/catalog/handle.js';
import { originalName } from '../../actors/catalog/retrieval.js';
import { relatedWords } from '../../actors/catalog/lexicon.js';
import { readQuestion } from '../../actors/catalog/question.js';
import type { DbColumn, DbTable } from '../../protocol/schemas/sql.js';

const col = (name: string, type = 'integer'): DbColumn => ({ name, type, nullable: true });
const table = (schema: string, name: string, columns: string[], fks: Array<[string, string]> = []): DbTable => ({
  schema, name, kind: 'table', columns: columns.map((c) => col(c, /name|title|desc/.test(c) ? 'text' : /amount|price|profit|cost/.test(c) ? 'numeric' : 'integer')),
  foreign_keys: fks.map(([column, ref]) => ({ columns: [column], ref_schema: schema, ref_table: ref, ref_columns: [column] })),
});
const filler = Array.from({ length: 40 }, (_, i) => table('misc', `widget_${i}`, ['widget_id', `gadget_${i}`, 'label']));
const catalogOf = (tables: DbTable[]) => buildCatalog({ dialect: 'postgresql', provider: 'postgresql', default_schema: 'public', tables: [...tables, ...filler] });

// an ERP whose schema is called sales and whose names all say sales, order, store (AdventureWorks)
const erp = [
  table('sales', 'store', ['businessentityid', 'name', 'salespersonid'], [['salespersonid', 'salesperson']]),
  table('sales', 'salesperson', ['businessentityid', 'territoryid', 'salesquota', 'salesytd'], [['territoryid', 'salesterritory']]),
  table('sales', 'salesterritory', ['territoryid', 'name', 'salesytd', 'costytd']),
  table('sales', 'salesorderheader', ['salesorderid', 'territoryid', 'orderdate', 'subtotal', 'totaldue'], [['territoryid', 'salesterritory']]),
  table('sales', 'salesorderdetail', ['salesorderid', 'orderqty', 'unitprice', 'linetotal'], [['salesorderid', 'salesorderheader']]),
  table('sales', 'salesreason', ['salesreasonid', 'name', 'reasontype']),
  table('sales', 'salestaxrate', ['salestaxrateid', 'taxrate', 'name']),
  table('humanresources', 'department', ['departmentid', 'name', 'groupname']),
  table('humanresources', 'employeedepartmenthistory', ['businessentityid', 'departmentid', 'startdate'], [['departmentid', 'department']]),
];

t.test("a value repeated by a table's copies in the landing, raw and staging layers is still a link", async (t) => {
  const region = (schema: string, name: string) => table(schema, name, ['r_regionkey', 'r_name', 'r_comment']);
  const continent = (schema: string, name: string) => table(schema, name, ['code', 'name', 'continent', 'population']);
  const catalog = catalogOf([
    region('tpch', 'region'), region('raw_tpch', 'region'), region('tpch_sf100', 'region'), region('landing', 'tpch_region'),
    continent('world', 'country'), continent('raw_world', 'country'), continent('world_old', 'country'), continent('landing', 'world_country'),
  ]);
  const columns = [
    ...['tpch.region', 'raw_tpch.region', 'tpch_sf100.region', 'landing.tpch_region'].map((n) => ({ n, column: 'r_name', values: ['EUROPE', 'ASIA'] })),
    ...['world.country', 'raw_world.country', 'world_old.country', 'landing.world_country'].map((n) => ({ n, column: 'continent', values: ['Europe', 'Africa'] })),
  ].map(({ n, column, values }) => ({ schema: n.split('.')[0]!, table: n.split('.')[1]!, column, distinct: values.length, values }));
  // eight columns hold 'Europe': more than a value may, were the copies each counted
  const source = createValueIndex(async () => ({ source: 'statistics', columns, truncated: false, duration_ms: 0 }), 60);
  let index = await source.get(catalog, { requestId: 'v' });
  for (let i = 0; !index && i < 20; i += 1) index = await source.get(catalog, { requestId: 'v' });
  const hits = lookupValues('Which parts have suppliers in Europe?', index!, () => false, (name) => originalName(catalog, name));
  const tables = new Set(hits.get('Europe')?.map((h) => originalName(catalog, h.table)));
  t.same([...tables].sort(), ['tpch.region', 'world.country'], 'two tables and their copies hold it');
  t.equal(originalName(catalog, 'landing.tpch_region'), 'tpch.region');
  // a value held by eight different tables is as common as a word, copies or not
  const common = catalogOf(Array.from({ length: 8 }, (_, i) => table(`s${i}`, `thing_${i}`, ['thing_id', 'status'])));
  const many = Array.from({ length: 8 }, (_, i) => ({ schema: `s${i}`, table: `thing_${i}`, column: 'status', distinct: 2, values: ['Other', 'Open'] }));
  const commonSource = createValueIndex(async () => ({ source: 'statistics', columns: many, truncated: false, duration_ms: 0 }), 60);
  let commonIndex = await commonSource.get(common, { requestId: 'c' });
  for (let i = 0; !commonIndex && i < 20; i += 1) commonIndex = await commonSource.get(common, { requestId: 'c' });
  t.notOk(lookupValues('orders of Other kinds', commonIndex!, () => false, (name) => originalName(common, name)).size, 'eight tables hold it: no link');
});

t.test('a phrase found among the values is the value, not a word for tables named by it', async (t) => {
  const catalog = catalogOf([
    ...erp,
    table('employees', 'employees', ['emp_no', 'first_name', 'last_name', 'hire_date']),
    table('employees', 'departments', ['dept_no', 'dept_name']),
    table('employees', 'dept_manager', ['emp_no', 'dept_no', 'from_date'], [['emp_no', 'employees'], ['dept_no', 'departments']]),
  ]);
  const valueHits = new Map([['Sales', [
    { table: 'employees.departments', column: 'dept_name', values: ['Sales'] },
    { table: 'humanresources.department', column: 'name', values: ['Sales'] },
  ]]]);
  const linked = linkTables(catalog, 'Who has managed the Sales department over the years?', [], 5, { valueHits });
  for (const name of ['employees.departments', 'employees.dept_manager', 'employees.employees']) t.ok(linked.tables.includes(name), `${name} in ${linked.tables.join(', ')}`);
  t.notOk(linked.tables.includes('sales.salesreason'), 'the ERP\'s sales tables are not what "the Sales department" asks for');
});

t.test('a two-word table name said as written counts for more than its words said apart', async (t) => {
  const catalog = catalogOf([
    ...erp,
    table('tpcds', 'date_dim', ['d_date_sk', 'd_date', 'd_year', 'd_moy', 'd_weekend']),
    table('tpcds', 'store', ['s_store_sk', 's_store_name', 's_city']),
    table('tpcds', 'store_sales', ['ss_sold_date_sk', 'ss_store_sk', 'ss_quantity', 'ss_sales_price', 'ss_net_profit'], [['ss_sold_date_sk', 'date_dim'], ['ss_store_sk', 'store']]),
  ]);
  const score = (q: string, name: string) => scoreTables(catalog, q).find((s) => s.name === name)?.score ?? 0;
  // the same words, in the name's order or not
  const said = score('Store sales revenue per month', 'tpcds.store_sales');
  const apart = score('Sales revenue per month of each store', 'tpcds.store_sales');
  t.ok(said > apart * 1.4, `"store sales" as written: ${said.toFixed(1)} against ${apart.toFixed(1)}`);
  t.equal(score('Store sales revenue per month', 'sales.store'), score('Sales revenue per month of each store', 'sales.store'), 'a one-word name gains nothing');
});

t.test('a question with dates brings the calendar table its facts point at', async (t) => {
  const catalog = catalogOf([
    table('tpcds', 'date_dim', ['d_date_sk', 'd_date', 'd_year', 'd_moy', 'd_weekend']),
    table('tpcds', 'customer', ['c_customer_sk', 'c_first_name']),
    table('tpcds', 'store', ['s_store_sk', 's_store_name', 's_city']),
    table('tpcds', 'store_sales', ['ss_sold_date_sk', 'ss_store_sk', 'ss_customer_sk', 'ss_net_profit'], [['ss_sold_date_sk', 'date_dim'], ['ss_store_sk', 'store'], ['ss_customer_sk', 'customer']]),
    table('tpcds', 'store_returns', ['sr_returned_date_sk', 'sr_store_sk', 'sr_customer_sk', 'sr_net_loss'], [['sr_returned_date_sk', 'date_dim'], ['sr_store_sk', 'store'], ['sr_customer_sk', 'customer']]),
    table('tpcds', 'catalog_returns', ['cr_returned_date_sk', 'cr_customer_sk', 'cr_net_loss', 'cr_store_credit'], [['cr_returned_date_sk', 'date_dim'], ['cr_customer_sk', 'customer']]),
  ]);
  t.same(readQuestion('Which stores had the highest net profit on weekends?').filters, ['weekends'], 'a plural period word is a filter');
  const linked = linkTables(catalog, 'Which stores had the highest net profit on weekends?', [], 4);
  for (const name of ['tpcds.store_sales', 'tpcds.date_dim']) t.ok(linked.tables.includes(name), `${name} in ${linked.tables.join(', ')}`);
});

t.test('an amount asked of a dimension brings the facts under the facts that point at it', async (t) => {
  const catalog = catalogOf([
    table('shop', 'categories', ['category_id', 'category_name', 'description']),
    table('shop', 'products', ['product_id', 'product_name', 'category_id', 'unit_price'], [['category_id', 'categories']]),
    table('shop', 'order_details', ['order_id', 'product_id', 'quantity', 'unit_price', 'discount'], [['product_id', 'products']]),
    table('video', 'category', ['category_id', 'name']),
    table('video', 'film_category', ['film_id', 'category_id'], [['category_id', 'category']]),
    table('erp', 'productcategory', ['productcategoryid', 'name']),
    table('erp', 'productsubcategory', ['productsubcategoryid', 'productcategoryid', 'name'], [['productcategoryid', 'productcategory']]),
  ]);
  const valueHits = new Map([['seafood', [{ table: 'shop.categories', column: 'category_name', values: ['Seafood'] }]]]);
  const linked = linkTables(catalog, 'Revenue per food category, from beverages to seafood', [], 4, { valueHits });
  for (const name of ['shop.categories', 'shop.products', 'shop.order_details']) t.ok(linked.tables.includes(name), `${name} in ${linked.tables.join(', ')}`);
});

t.test('a verb reaches the noun of the one who does it', async (t) => {
  t.ok(relatedWords('managed').some((r) => r.word === 'manager'), 'managed → manager');
  t.ok(relatedWords('supplied').some((r) => r.word === 'supplier'), 'supplied → supplier');
});

/**
 * Identifier splitting (actors/catalog/split.ts): names that run words together with no
 * separator and no capital, from several public schemas, cut into the dictionary words a
 * question uses; names that are words, or cannot be cut into words whole, left alone. Then the
 * class through retrieval: "line items", "order header", "credit card" reach such tables.
 */
import t from 'tap';
import { buildCatalog, linkTables } from '../../actors/catalog/handle.js';
import { splitIdentifier } from '../../actors/catalog/split.js';
import type { DbColumn, DbTable } from '../../protocol/schemas/sql.js';

const cut = (w: string): string | undefined => splitIdentifier(w)?.join(' ');

t.test('run-together names are cut into dictionary words: fewest parts, base forms, longest words', async (t) => {
  const cases: Array<[string, string]> = [
    // TPC-H tables and columns
    ['lineitem', 'line item'], ['partsupp', 'part supp'], ['retailprice', 'retail price'], ['custkey', 'cust key'],
    ['shipdate', 'ship date'], ['returnflag', 'return flag'], ['supplycost', 'supply cost'], ['orderpriority', 'order priority'],
    // AdventureWorks
    ['salesorderheader', 'sales order header'], ['salesorderdetail', 'sales order detail'], ['productsubcategory', 'product subcategory'],
    ['creditcard', 'credit card'], ['billofmaterials', 'bill of materials'], ['employeepayhistory', 'employee pay history'],
    ['salesorderheadersalesreason', 'sales order header sales reason'], ['maritalstatus', 'marital status'], ['hiredate', 'hire date'],
    ['businessentityid', 'business entity id'], ['specialofferproduct', 'special offer product'],
    // the world database
    ['countrylanguage', 'country language'], ['lifeexpectancy', 'life expectancy'], ['headofstate', 'head of state'], ['surfacearea', 'surface area'],
    // everyday column names
    ['createdate', 'create date'], ['exchangerate', 'exchange rate'], ['passwordsalt', 'password salt'], ['numbercarsowned', 'number cars owned'],
    ['emailaddress', 'email address'], ['firstname', 'first name'], ['postalcode', 'postal code'],
  ];
  for (const [word, parts] of cases) t.equal(cut(word), parts, word);
});

t.test('words, short or cryptic names and what cannot be cut whole stay as they are', async (t) => {
  // words of the dictionary (plurals and verb forms included), the thesaurus's own words
  for (const w of ['customer', 'categories', 'salesperson', 'inventory', 'address', 'shipped', 'payments', 'subcategory', 'linetotal']) t.equal(cut(w), undefined, w);
  // too short to cut, not letters only, or not made of words whole (SAP, abbreviations, hashes)
  for (const w of ['ordno', 'kna1', 'ekpo', 'vbak', 'bukrs', 'acctbal', 'mktsegment', 'x7f3a9q', 'zzqvbrt', 'c_custkey', 'Lineitem']) t.equal(cut(w), undefined, w);
});

const col = (name: string, type = 'integer'): DbColumn => ({ name, type, nullable: true });
const table = (schema: string, name: string, columns: string[], fks: Array<[string, string]> = []): DbTable => ({
  schema, name, kind: 'table', columns: columns.map((c) => col(c)),
  foreign_keys: fks.map(([column, ref]) => ({ columns: [column], ref_schema: schema, ref_table: ref, ref_columns: [column] })),
});
const filler = Array.from({ length: 40 }, (_, i) => table('misc', `widget_${i}`, ['widget_id', `gadget_${i}`, 'label']));

t.test('a question in the users\' words reaches the run-together names', async (t) => {
  const catalog = buildCatalog({
    dialect: 'postgresql', provider: 'postgresql', default_schema: 'public',
    tables: [
      table('tpch', 'orders', ['o_orderkey', 'o_custkey', 'o_totalprice']),
      table('tpch', 'lineitem', ['l_orderkey', 'l_partkey', 'l_quantity', 'l_extendedprice', 'l_returnflag'], [['l_orderkey', 'orders']]),
      table('tpch', 'partsupp', ['ps_partkey', 'ps_suppkey', 'ps_supplycost']),
      table('sales', 'salesorderheader', ['salesorderid', 'orderdate', 'creditcardid'], [['creditcardid', 'creditcard']]),
      table('sales', 'creditcard', ['creditcardid', 'cardtype', 'cardnumber']),
      table('production', 'productsubcategory', ['productsubcategoryid', 'name']),
      ...filler,
    ],
  });
  const top = (q: string): string[] => linkTables(catalog, q, [], 3).candidates.slice(0, 3);
  t.ok(top('average quantity per line item').includes('tpch.lineitem'), 'line item');
  t.ok(top('which orders were paid by credit card').includes('sales.creditcard'), 'credit card');
  t.ok(top('the order header of each sale').includes('sales.salesorderheader'), 'order header');
  t.ok(top('bike subcategories').includes('production.productsubcategory'), 'subcategories');
  t.ok(top('lowest supply cost of each part').includes('tpch.partsupp'), 'a column cut too: supplycost');
});

/**
 * Which source a question is about, when several hold tables for its words (retrieval.ts,
 * coherent): a literal found among one source's values makes it the one; the chosen source's
 * own table for a word comes before another source's, even when it scores far below the best.
 */
import t from 'tap';
import { buildCatalog, linkTables } from '../../actors/catalog/handle.js';
import type { DbColumn, DbTable } from '../../protocol/schemas/sql.js';

const col = (name: string, type = 'integer'): DbColumn => ({ name, type, nullable: true });
const table = (schema: string, name: string, columns: string[], fks: Array<[string, string]> = []): DbTable => ({
  schema, name, kind: 'table', columns: columns.map((c) => col(c)),
  foreign_keys: fks.map(([column, ref]) => ({ columns: [column], ref_schema: schema, ref_table: ref, ref_columns: [column] })),
});
const filler = Array.from({ length: 40 }, (_, i) => table('misc', `widget_${i}`, ['widget_id', `gadget_${i}`, 'label']));

t.test('the source holding a literal of the question leads, whatever names cover more of its words', async (t) => {
  // two sources answer "sales orders of products": the ERP by its names (sales, order, product),
  // the shop by fewer; 'Dairy Products' is a category of the shop's
  const catalog = buildCatalog({
    dialect: 'postgresql', provider: 'postgresql', default_schema: 'public',
    tables: [
      table('erp', 'sales_order', ['sales_order_id', 'product_id', 'order_qty'], [['product_id', 'product']]),
      table('erp', 'product', ['product_id', 'product_name']),
      table('erp', 'sales_territory', ['territory_id', 'sales_ytd']),
      table('shop', 'orders', ['order_id', 'customer_id']),
      table('shop', 'order_lines', ['order_id', 'product_id', 'quantity'], [['order_id', 'orders'], ['product_id', 'products']]),
      table('shop', 'products', ['product_id', 'product_name', 'category_id'], [['category_id', 'categories']]),
      table('shop', 'categories', ['category_id', 'category_name']),
      ...filler,
    ],
  });
  const question = 'sales orders of dairy products by quantity';
  const valueHits = new Map([['dairy products', [{ table: 'shop.categories', column: 'category_name', values: ['Dairy Products'] }]]]);
  const linked = linkTables(catalog, question, [], 4, { valueHits });
  for (const name of ['shop.categories', 'shop.products', 'shop.order_lines']) t.ok(linked.tables.includes(name), `${name} in ${linked.tables.join(', ')}`);
  t.notOk(linked.tables.includes('erp.product'), 'the other source\'s products wait');
});

t.test("the chosen source's own table for a word comes before another source's, however weak its match", async (t) => {
  // the TPC-H-like source wins on line items, returns and revenue; its customer table matches
  // one word only and scores far below; the other source's customer and returns tables match
  // the same words
  const catalog = buildCatalog({
    dialect: 'postgresql', provider: 'postgresql', default_schema: 'public',
    tables: [
      table('h', 'customer', ['c_custkey', 'c_name', 'c_acctbal']),
      table('h', 'orders', ['o_orderkey', 'o_custkey', 'o_orderdate'], [['o_custkey', 'customer']]),
      table('h', 'lineitem', ['l_orderkey', 'l_linenumber', 'l_returnflag', 'l_revenue_lost', 'l_item_returned', 'l_line_status'], [['l_orderkey', 'orders']]),
      table('ds', 'customer', ['c_customer_sk', 'c_customer_id', 'c_first_name', 'c_preferred_customer_flag']),
      table('ds', 'item', ['i_item_sk', 'i_item_id']),
      table('ds', 'store_returns', ['sr_item_sk', 'sr_customer_sk', 'sr_return_amt', 'sr_returned_date_sk'], [['sr_customer_sk', 'customer'], ['sr_item_sk', 'item']]),
      table('ds', 'web_returns', ['wr_item_sk', 'wr_refunded_customer_sk', 'wr_return_amt'], [['wr_refunded_customer_sk', 'customer'], ['wr_item_sk', 'item']]),
      ...filler,
    ],
  });
  const linked = linkTables(catalog, 'Top customers by revenue lost to line items returned with return flag R', [], 4);
  for (const name of ['h.lineitem', 'h.orders', 'h.customer']) t.ok(linked.tables.includes(name), `${name} in ${linked.tables.join(', ')}`);
});

t.test('a loose table or view that still outscores every joined table after its penalty is not pushed below them', async (t) => {
  // a schema that declares its keys: a table none joins counts for less (an export, a log) and
  // waits for the others; but a view the question names, far ahead of them, is chosen with them
  const chain = Array.from({ length: 12 }, (_, i) => table('air', `t${i}`, [`t${i}_id`, `t${i + 1}_id`, 'route_note'], i < 11 ? [[`t${i + 1}_id`, `t${i + 1}`]] : []));
  const routes: DbTable = { schema: 'air', name: 'routes', kind: 'view', columns: ['flight_no', 'departure_airport', 'arrival_airport', 'aircraft_code', 'route_days'].map((c) => col(c)) };
  const catalog = buildCatalog({ dialect: 'postgresql', provider: 'postgresql', default_schema: 'public', tables: [...chain, routes, ...filler] });
  const linked = linkTables(catalog, 'Which routes does the Superjet fly?', [], 4);
  t.ok(linked.tables.includes('air.routes'), linked.tables.join(', '));
});

t.test('room left in the prompt is filled with the next matches, not left empty', async (t) => {
  // no keys declared: seats and tickets match "seat" and "passengers" far below the boarding passes
  const tbl = (name: string, columns: string[]): DbTable => ({ schema: 'air', name, kind: 'table', columns: columns.map((c) => col(c, 'text')) });
  const catalog = buildCatalog({
    dialect: 'postgresql', provider: 'postgresql', default_schema: 'public',
    tables: [
      tbl('boarding_passes', ['ticket_no', 'flight_id', 'boarding_no', 'seat_no', 'boarding_pass_seat', 'boarding_time']),
      tbl('seats', ['aircraft_code', 'seat_no', 'seat_class']),
      tbl('tickets', ['ticket_no', 'book_ref', 'passenger_id', 'passenger_name', 'contact_data', 'fare', 'issued', 'office', 'agent', 'channel', 'currency', 'tax', 'total', 'status', 'refunded', 'note']),
      ...filler,
    ],
  });
  const linked = linkTables(catalog, 'Which passengers were given seat 2A on their boarding pass?', [], 4);
  t.same(linked.tables, ['air.boarding_passes', 'air.seats', 'air.tickets']);
});

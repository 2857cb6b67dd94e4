/**
 * Join edges inferred from names where no key is declared (actors/catalog/joins.ts): a key
 * column that opens several tables — a parent and the children whose primary key starts with
 * the parent's key, as the airline demo's `ticket_no` and the employees sample's `emp_no` do —
 * names the table called after it, so the children join their parent instead of nothing.
 */
import t from 'tap';
import { buildCatalog } from '../../actors/catalog/handle.js';
import { inferKeys } from '../../actors/catalog/joins.js';
import type { DbTable } from '../../protocol/schemas/sql.js';

const table = (schema: string, name: string, columns: string[]): DbTable => ({
  schema, name, kind: 'table', columns: columns.map((c) => ({ name: c, type: c.endsWith('_no') || c.endsWith('_id') ? 'integer' : 'text', nullable: false })),
});

const catalog = buildCatalog({
  dialect: 'postgresql', provider: 'postgresql', default_schema: 'public',
  tables: [
    table('bookings', 'tickets', ['ticket_no', 'book_ref', 'passenger_name']),
    table('bookings', 'ticket_flights', ['ticket_no', 'flight_id', 'fare_conditions', 'amount']),
    table('bookings', 'boarding_passes', ['ticket_no', 'flight_id', 'boarding_no', 'seat_no']),
    table('bookings', 'flights', ['flight_id', 'flight_no', 'scheduled_departure']),
    table('employees', 'employees', ['emp_no', 'birth_date', 'first_name', 'last_name']),
    table('employees', 'dept_emp', ['emp_no', 'dept_no', 'from_date']),
    table('employees', 'salaries', ['emp_no', 'salary', 'from_date']),
    table('employees', 'departments', ['dept_no', 'dept_name']),
    // two tables as near the key's name: neither is taken
    table('shop', 'item_a', ['item_no', 'label']),
    table('shop', 'item_b', ['item_no', 'label']),
    table('shop', 'item_notes', ['item_no', 'note']),
  ],
});
const name = (i: number): string => catalog.entries[i]?.name ?? '';
const keys = inferKeys(catalog.entries);
const edges = (from: string): string[] => (keys[catalog.entries.findIndex((e) => e.name === from)] ?? []).map((k) => `${k.column} -> ${name(k.target)}`).sort();

t.test('a key that opens a parent and its children names the parent', async (t) => {
  t.same(edges('bookings.ticket_flights'), ['flight_id -> bookings.flights', 'ticket_no -> bookings.tickets']);
  t.same(edges('bookings.boarding_passes'), ['flight_id -> bookings.flights', 'ticket_no -> bookings.tickets']);
  t.same(edges('bookings.tickets'), [], 'the parent points nowhere with its own key');
  t.same(edges('employees.dept_emp'), ['dept_no -> employees.departments', 'emp_no -> employees.employees']);
  t.same(edges('employees.salaries'), ['emp_no -> employees.employees']);
  t.same(edges('employees.employees'), []);
});

t.test('no table named after the key, or two as near: no edge is guessed', async (t) => {
  t.same(edges('shop.item_notes'), [], 'item_a and item_b are as near to item_no');
});

t.test('a child with a key of its own further on is not taken for the parent', async (t) => {
  const aw = buildCatalog({
    dialect: 'postgresql', provider: 'postgresql', default_schema: 'public',
    tables: [
      table('sales', 'salesorderheader', ['salesorderid', 'revisionnumber', 'orderdate', 'customerid']),
      table('sales', 'salesorderdetail', ['salesorderid', 'salesorderdetailid', 'orderqty', 'productid']),
      table('sales', 'customer', ['customerid', 'storeid']),
    ],
  });
  const k = inferKeys(aw.entries);
  const from = (n: string): string[] => (k[aw.entries.findIndex((e) => e.name === n)] ?? []).map((x) => `${x.column} -> ${aw.entries[x.target]?.name}`).sort();
  t.same(from('sales.salesorderdetail'), ['salesorderid -> sales.salesorderheader']);
  t.same(from('sales.salesorderheader'), ['customerid -> sales.customer']);
});

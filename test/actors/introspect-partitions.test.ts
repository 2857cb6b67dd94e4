/**
 * Introspection of partitioned tables on a real PostgreSQL: a partitioned table is one table
 * (its partitions never listed), and the foreign keys declared on its partitions only — as the
 * Pagila sample declares `payment`'s — are the partitioned table's, once; a key inherited from
 * the root and a key pointing at a partition are named by the roots too; the row estimate is the
 * partitions' sum. Before, such a table had no foreign keys at all and linking demoted it.
 */
import t from 'tap';
import { createEngine } from '../../actors/executor/engines/index.js';
import { createLogger } from '../../runtime/log.js';
import { testConfig } from '../helpers/config.js';
import { createTestDb } from '../helpers/pg.js';

const db = await createTestDb('introspect_parts');
await db.pool.query(`
  CREATE TABLE customer (customer_id int PRIMARY KEY, name text);
  CREATE TABLE staff (staff_id int PRIMARY KEY, name text);
  CREATE TABLE payment (payment_id int, customer_id int NOT NULL, staff_id int NOT NULL, amount numeric, paid_on date NOT NULL,
                        PRIMARY KEY (payment_id, paid_on)) PARTITION BY RANGE (paid_on);
  CREATE TABLE payment_p2022_01 PARTITION OF payment FOR VALUES FROM ('2022-01-01') TO ('2022-02-01');
  CREATE TABLE payment_p2022_02 PARTITION OF payment FOR VALUES FROM ('2022-02-01') TO ('2022-03-01');
  -- declared on each partition, none on the root (the Pagila shape)
  ALTER TABLE payment_p2022_01 ADD FOREIGN KEY (customer_id) REFERENCES customer (customer_id);
  ALTER TABLE payment_p2022_02 ADD FOREIGN KEY (customer_id) REFERENCES customer (customer_id);
  -- declared on the root: every partition inherits a copy
  ALTER TABLE payment ADD FOREIGN KEY (staff_id) REFERENCES staff (staff_id);
  -- a key pointing at a partitioned table, and one (declared on a partition) at a partition
  CREATE TABLE refund (refund_id int PRIMARY KEY, payment_id int, paid_on date, FOREIGN KEY (payment_id, paid_on) REFERENCES payment (payment_id, paid_on));
  CREATE TABLE audit_note (id int PRIMARY KEY, payment_id int, paid_on date);
  ALTER TABLE audit_note ADD FOREIGN KEY (payment_id, paid_on) REFERENCES payment_p2022_01 (payment_id, paid_on);
  INSERT INTO customer SELECT g, 'c' || g FROM generate_series(1, 10) g;
  INSERT INTO staff VALUES (1, 'Mike'), (2, 'Jon');
  INSERT INTO payment SELECT g, 1 + g % 10, 1 + g % 2, g, DATE '2022-01-01' + (g % 50) FROM generate_series(1, 500) g;
  ANALYZE;
`);
const u = new URL(db.url);
const config = testConfig({ natsUrl: 'nats://127.0.0.1:1', db: { host: db.host, port: db.port, name: db.name, user: decodeURIComponent(u.username || 'postgres') } });
const engine = await createEngine(config, createLogger({ svc: 'test', level: 'silent' }));
t.teardown(async () => {
  await engine.close();
  await db.drop();
});

const schema = await engine.introspect();
const table = (name: string) => schema.tables.find((x) => x.name === name);
const keys = (name: string) => (table(name)?.foreign_keys ?? []).map((f) => `${f.columns.join(',')}->${f.ref_table}(${f.ref_columns.join(',')})`).sort();

t.test('partitions are never listed, only their root', async (t) => {
  t.notOk(schema.tables.some((x) => x.name.startsWith('payment_p')), 'no partition listed');
  t.ok(table('payment'), 'the partitioned table is listed');
});

t.test("the partitions' foreign keys are the root's, each once", async (t) => {
  t.same(keys('payment'), ['customer_id->customer(customer_id)', 'staff_id->staff(staff_id)']);
});

t.test('a key pointing at a partitioned table or at one of its partitions names the root', async (t) => {
  t.same(keys('refund'), ['payment_id,paid_on->payment(payment_id,paid_on)']);
  t.same(keys('audit_note'), ['payment_id,paid_on->payment(payment_id,paid_on)']);
});

t.test("a partitioned table's row estimate is its partitions' sum", async (t) => {
  t.equal(table('payment')?.row_estimate, 500);
});

/**
 * Masking end to end: questions through POST /api/query (JSON and SSE) on a real PostgreSQL,
 * every actor on a private NATS, the rules in the identity actor's store. The sensitive values
 * never reach the reply, whatever the model's SQL does to the column's name.
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { ALL_ACTORS, MaskRuleCreate, ResultMask } from '../../protocol/subjects.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, callSse, startStack } from '../helpers/stack.js';

const SCHEMA = `
CREATE TABLE customers (id integer PRIMARY KEY, name text NOT NULL, email text, ssn text, country text);
INSERT INTO customers VALUES
  (1, 'Ada', 'ada@example.com', '123-45-6789', 'UK'),
  (2, 'Grace', 'grace@example.org', '987-65-4321', 'US'),
  (3, 'Linus', NULL, '555-12-3456', 'FI');
CREATE TABLE orders (id integer PRIMARY KEY, customer_id integer NOT NULL REFERENCES customers(id), amount numeric(10,2) NOT NULL);
INSERT INTO orders VALUES (1, 1, 10.00), (2, 1, 5.50), (3, 2, 7.25);
`;
const RAW_EMAILS = ['ada@example.com', 'grace@example.org'];
const RAW_SSNS = ['123-45-6789', '987-65-4321', '555-12-3456'];

const nats = await startNats();
const db = await createTestDb('e2e_mask');
await db.pool.query(SCHEMA);
const fake = await startFakeLlm();
const config = testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: {
    bus: { prefer_local: false },
    insights: { enabled: true, mode: 'statistical_only', max_insights: 3 },
    // the deployment's key: hashes stay the same across requests (and restarts)
    config_db: { encryption_key: randomBytes(32).toString('base64url') },
  },
});
// the alerts and mailer actors are not part of this path
const stack = await startStack(config, { edge: true, actors: ALL_ACTORS.filter((a) => a !== 'alerts' && a !== 'mailer') });
t.teardown(async () => {
  await stack.stop();
  await fake.close();
  await db.drop();
  await nats.stop();
});

const bus = stack.running.bus;
const ctx = { requestId: 'e2e-mask-setup' };
await bus.request(MaskRuleCreate, { field_pattern: '*email*', strategy: 'partial' }, ctx);
await bus.request(MaskRuleCreate, { field_pattern: 'ssn', strategy: 'hash' }, ctx);
await bus.request(MaskRuleCreate, { field_pattern: 'name', strategy: 'redact', enabled: false }, ctx);

t.beforeEach(() => {
  fake.requests.length = 0;
  fake.fallback(() => ({ status: 500, message: 'unscripted' }));
});

async function ask(sql: string): Promise<any> {
  fake.script({ text: sqlAnswer(sql) });
  const res = await call(`${stack.url}/api/query`, { body: { question: 'show me the customers' } });
  if (res.status !== 200) throw new Error(`${res.status}: ${res.text}`);
  return res.body;
}

function assertNoRawValues(t: any, body: unknown): void {
  const text = JSON.stringify(body);
  for (const v of [...RAW_EMAILS, ...RAW_SSNS]) t.notOk(text.includes(v), `${v} is not in the reply`);
}

t.test('an aliased e-mail column is masked; other columns are not', async (t) => {
  const b = await ask('SELECT name, email AS contact, country FROM customers ORDER BY id');
  t.same(b.columns.map((c: { name: string }) => c.name), ['name', 'contact', 'country']);
  t.same(b.rows, [
    ['Ada', 'a***@example.com', 'UK'],
    ['Grace', 'g***@example.org', 'US'],
    ['Linus', null, 'FI'],
  ]);
  t.same(b.masked, [{ column: 'contact', strategy: 'partial' }], 'the reply says what was masked');
  assertNoRawValues(t, b);
});

t.test('through a CTE, a subquery and an expression', async (t) => {
  const b = await ask(
    "WITH c AS (SELECT id, email, ssn FROM customers) SELECT s.who, s.tax FROM (SELECT id, upper(email) AS who, ssn || '' AS tax FROM c) s ORDER BY s.id",
  );
  t.same(b.rows.map((r: unknown[]) => r[0]), ['A***@EXAMPLE.COM', 'G***@EXAMPLE.ORG', null]);
  for (const r of b.rows) t.match(r[1], /^sha256:[0-9a-f]{16}$/, 'ssn hashed');
  t.same(b.masked, [{ column: 'who', strategy: 'partial' }, { column: 'tax', strategy: 'hash' }]);
  assertNoRawValues(t, b);
});

t.test('hashes are stable: equal values give equal hashes in every request', async (t) => {
  const a = await ask('SELECT ssn FROM customers ORDER BY id');
  const b = await ask('SELECT c.ssn AS x FROM customers c JOIN orders o ON o.customer_id = c.id ORDER BY o.id');
  // orders 1, 2 belong to Ada, 3 to Grace
  t.same(b.rows.map((r: unknown[]) => r[0]), [a.rows[0][0], a.rows[0][0], a.rows[1][0]]);
  t.not(a.rows[0][0], a.rows[1][0]);
  // and a direct ResultMask on the raw rows gives the same hashes
  const raw = await db.pool.query('SELECT ssn FROM customers ORDER BY id');
  const direct = await bus.request(ResultMask, {
    sql: 'SELECT ssn FROM customers ORDER BY id', dialect: 'postgresql', columns: [{ name: 'ssn', type: 'text' }], rows: raw.rows.map((r) => [r.ssn]),
  }, { requestId: 'e2e-direct' });
  t.same(direct.rows, a.rows);
  t.same(direct.masked, [{ index: 0, column: 'ssn', strategy: 'hash', rule: 'ssn', sources: ['customers.ssn'] }]);
});

t.test('lineage unknown: a whole-row value is masked with the strongest active strategy', async (t) => {
  const b = await ask('SELECT c.id, to_json(c) AS doc FROM customers c ORDER BY c.id');
  t.same(b.rows.map((r: unknown[]) => r[0]), [1, 2, 3], 'the traced column stays');
  for (const r of b.rows) t.match(r[1], /^sha256:/, 'hash: the strongest of the enabled rules (partial, hash)');
  t.same(b.masked, [{ column: 'doc', strategy: 'hash' }]);
  assertNoRawValues(t, b);
});

t.test('SSE: the streamed rows are already masked', async (t) => {
  fake.script({ text: sqlAnswer('SELECT * FROM customers ORDER BY id') });
  const { status, events } = await callSse(`${stack.url}/api/query`, { question: 'everything about the customers' });
  t.equal(status, 200);
  const rows = events.find((e) => e.event === 'rows');
  t.ok(rows, 'a rows event');
  t.same(rows!.data.masked, [{ column: 'email', strategy: 'partial' }, { column: 'ssn', strategy: 'hash' }]);
  t.same(rows!.data.rows.map((r: unknown[]) => r[1]), ['Ada', 'Grace', 'Linus'], 'the disabled rule on name does not apply');
  assertNoRawValues(t, events);
});

/**
 * Masking end to end: questions through every channel (POST /api/query as JSON and SSE, the
 * legacy POST /query, MCP `ask_database` with the official SDK client, a follow-up question in
 * a conversation) on a real PostgreSQL, every actor on a private NATS, the rules in the settings
 * actor's store (`customers.email: partial`, `ssn: hash`). The model's SQL (scripted in the fake
 * LLM) tries every way out a value has: aliases, expressions, aggregates, record-returning and
 * user functions, LATERAL, JSON table functions. No raw value reaches a reply, an SSE event, a
 * request to the model (history included), an event on the bus or an audit row.
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { ALL_ACTORS, AuditQuery, Bucket, EvalRun, MaskRuleCreate, ResultMask, SemanticDiscover, SqlExecute, SqlExport, SqlProfile, SqlValues } from '../../protocol/subjects.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm, type RecordedRequest } from '../helpers/fake-llm.js';
import { closeClient, connectClient, issueToken, until } from '../helpers/mcp.js';
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
-- what a database can hide behind a name: a SETOF record function and a scalar one reading the table
CREATE FUNCTION leak() RETURNS SETOF record LANGUAGE sql STABLE AS $$ SELECT id, email FROM customers $$;
CREATE FUNCTION contact_of(i integer) RETURNS text LANGUAGE sql STABLE AS $$ SELECT email FROM customers WHERE id = i $$;
`;
const RAW_EMAILS = ['ada@example.com', 'grace@example.org'];
const RAW_SSNS = ['123-45-6789', '987-65-4321', '555-12-3456'];
/** the addresses in the shapes a query can give them: as they are, any case, `@` replaced, reversed */
const RAW_SHAPES = [
  ...RAW_EMAILS,
  ...RAW_EMAILS.map((e) => e.replace('@', '#')),
  ...RAW_EMAILS.map((e) => [...e].reverse().join('')),
  ...RAW_SSNS,
];

function leaks(value: unknown): string[] {
  const text = (typeof value === 'string' ? value : JSON.stringify(value)).toLowerCase();
  return RAW_SHAPES.filter((v) => text.includes(v.toLowerCase()));
}

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
    // the operator trusts these user functions to only read: they still read the customers table
    database: { allowed_functions: ['leak', 'contact_of'] },
  },
});
// the alerts and mailer actors are not part of this path
const stack = await startStack(config, { edge: true, actors: ALL_ACTORS.filter((a) => a !== 'alerts' && a !== 'mailer') });
const bus = stack.running.bus;
/** every event on the bus, for the whole file */
const events: Array<{ subject: string; data: unknown }> = [];
const stopListening = bus.listen('evt.>', (data, subject) => events.push({ subject, data }));
/** every request the model received, for the whole file */
const modelRequests: RecordedRequest[] = [];
t.teardown(async () => {
  stopListening();
  await stack.stop();
  await fake.close();
  await db.drop();
  await nats.stop();
});

const ctx = { requestId: 'e2e-mask-setup' };
await bus.request(MaskRuleCreate, { field_pattern: 'customers.email', strategy: 'partial' }, ctx);
await bus.request(MaskRuleCreate, { field_pattern: 'ssn', strategy: 'hash' }, ctx);
await bus.request(MaskRuleCreate, { field_pattern: 'name', strategy: 'redact', enabled: false }, ctx);

t.beforeEach(() => {
  fake.requests.length = 0;
  fake.fallback(() => ({ status: 500, message: 'unscripted' }));
});
t.afterEach(() => {
  modelRequests.push(...fake.requests);
});

async function ask(sql: string, extra: Record<string, unknown> = {}): Promise<any> {
  fake.script({ text: sqlAnswer(sql) });
  const res = await call(`${stack.url}/api/query`, { body: { question: 'show me the customers', ...extra } });
  if (res.status !== 200) throw new Error(`${res.status}: ${res.text}`);
  return res.body;
}

function assertNoRawValues(t: any, body: unknown, where = 'the reply'): void {
  t.same(leaks(body), [], `no raw value in ${where}`);
}

const hashed = (v: unknown): boolean => v === null || (typeof v === 'string' && /^sha256:[0-9a-f]{16}$/.test(v));

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

t.test('through a CTE, a subquery and an expression: what is made from the column is hashed', async (t) => {
  const b = await ask(
    "WITH c AS (SELECT id, email, ssn FROM customers) SELECT s.who, s.tax, s.plain FROM (SELECT id, upper(email) AS who, ssn || '' AS tax, email AS plain FROM c) s ORDER BY s.id",
  );
  for (const r of b.rows) t.ok(hashed(r[0]) && hashed(r[1]), 'upper(email) and ssn || \'\' hashed');
  t.same(b.rows.map((r: unknown[]) => r[2]), ['a***@example.com', 'g***@example.org', null], 'the column itself, through the CTE and subquery, keeps partial');
  t.same(b.masked, [{ column: 'who', strategy: 'hash' }, { column: 'tax', strategy: 'hash' }, { column: 'plain', strategy: 'partial' }]);
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

/**
 * The ways out a value has, each run on the database: before this work, the string_agg,
 * `'x@' || replace(...)`, LATERAL function and SETOF record cases answered raw addresses
 * (partial on a made-up value, or no `masked` field at all).
 */
const LEAK_PATHS: Array<{ name: string; sql: string; masked: Record<string, string>; refusedOk?: boolean }> = [
  { name: 'string_agg of the column', sql: "SELECT string_agg(email, ',' ORDER BY id) AS all_emails FROM customers", masked: { all_emails: 'hash' } },
  { name: 'array_agg, json_agg, min, max, mode', sql: 'SELECT array_agg(email) AS a, json_agg(email) AS j, min(email) AS lo, max(email) AS hi, mode() WITHIN GROUP (ORDER BY email) AS mo FROM customers', masked: { a: 'hash', j: 'hash', lo: 'hash', hi: 'hash', mo: 'hash' } },
  { name: 'first_value over a window', sql: 'SELECT id, first_value(email) OVER (ORDER BY id DESC) AS fv FROM customers ORDER BY id', masked: { fv: 'hash' } },
  { name: 'counts reveal no value and stay', sql: 'SELECT count(email) AS n, count(DISTINCT email) AS d FROM customers', masked: {} },
  {
    name: 'expressions over the column',
    sql: "SELECT upper(email) AS u, split_part(email, '@', 2) AS d, email || '' AS c, reverse(email) AS r, 'x@' || replace(email, '@', '#') AS x FROM customers ORDER BY id",
    masked: { u: 'hash', d: 'hash', c: 'hash', r: 'hash', x: 'hash' },
  },
  { name: 'a LATERAL subquery reading the table', sql: 'SELECT c.id, s.x FROM customers c CROSS JOIN LATERAL (SELECT d.email AS x FROM customers d WHERE d.id = c.id) s ORDER BY c.id', masked: { x: 'partial' } },
  { name: 'a SETOF record function', sql: 'SELECT * FROM leak() AS t(a integer, b text) ORDER BY a', masked: { a: 'hash', b: 'hash' } },
  { name: 'a user function in the select list', sql: 'SELECT id, contact_of(id) AS who FROM customers ORDER BY id', masked: { who: 'hash' } },
  { name: 'json_to_recordset over the column', sql: "SELECT r.e FROM json_to_recordset((SELECT json_agg(json_build_object('e', email)) FROM customers)) AS r(e text)", masked: { e: 'hash' } },
  { name: 'jsonb_each over the column', sql: 'SELECT key, value FROM jsonb_each((SELECT jsonb_object_agg(id, email) FROM customers WHERE email IS NOT NULL))', masked: { key: 'hash', value: 'hash' } },
  { name: 'unnest of an array built from the column', sql: 'SELECT x FROM unnest((SELECT array_agg(email) FROM customers)) AS x', masked: { x: 'hash' } },
  {
    name: 'CROSS JOIN LATERAL ts_rewrite (SQL in a string): refused by the guard, or masked',
    sql: "SELECT c.id, q FROM customers c CROSS JOIN LATERAL ts_rewrite('a'::tsquery, 'SELECT replace(email, ''@'', '' '')::tsquery, ''b''::tsquery FROM customers') AS q",
    masked: { q: 'hash' },
    refusedOk: true,
  },
];

t.test('every way out a value has, on the database', async (t) => {
  for (const p of LEAK_PATHS) {
    fake.script({ text: sqlAnswer(p.sql) });
    const res = await call(`${stack.url}/api/query`, { body: { question: p.name } });
    assertNoRawValues(t, res.body, `${p.name}: the reply`);
    if (p.refusedOk && res.status === 422) {
      t.equal(res.body.error.code, 'SQL_REJECTED', `${p.name}: refused by the guard (${res.body.error.message})`);
      continue;
    }
    t.equal(res.status, 200, `${p.name}: answered${res.status !== 200 ? ` (${res.text})` : ''}`);
    t.ok(res.body.rows.length > 0, `${p.name}: rows came back`);
    const got = Object.fromEntries((res.body.masked ?? []).map((m: { column: string; strategy: string }) => [m.column, m.strategy]));
    t.same(got, p.masked, `${p.name}: masked as expected`);
  }
});

t.test('SSE: the streamed rows are already masked', async (t) => {
  fake.script({ text: sqlAnswer('SELECT * FROM customers ORDER BY id') });
  const { status, events: sse } = await callSse(`${stack.url}/api/query`, { question: 'everything about the customers' });
  t.equal(status, 200);
  const rows = sse.find((e) => e.event === 'rows');
  t.ok(rows, 'a rows event');
  t.same(rows!.data.masked, [{ column: 'email', strategy: 'partial' }, { column: 'ssn', strategy: 'hash' }]);
  t.same(rows!.data.rows.map((r: unknown[]) => r[1]), ['Ada', 'Grace', 'Linus'], 'the disabled rule on name does not apply');
  assertNoRawValues(t, sse, 'the SSE events');
});

t.test('every channel: SSE, legacy /query, MCP ask_database, insights and a follow-up question', async (t) => {
  const paths = LEAK_PATHS.filter((p) => !p.refusedOk);
  // SSE: every event of every question
  for (const p of paths.slice(0, 4)) {
    fake.script({ text: sqlAnswer(p.sql) });
    const { status, events: sse } = await callSse(`${stack.url}/api/query`, { question: p.name });
    t.equal(status, 200, `SSE ${p.name}`);
    t.ok(sse.some((e) => e.event === 'rows'), `SSE ${p.name}: a rows event`);
    assertNoRawValues(t, sse, `the SSE events of ${p.name}`);
  }
  // the legacy route (SQLatte widgets)
  for (const p of paths.slice(4, 8)) {
    fake.script({ text: sqlAnswer(p.sql) });
    const res = await call(`${stack.url}/query`, { body: { question: p.name } });
    t.equal(res.status, 200, `legacy ${p.name}`);
    t.ok(Array.isArray(res.body.data) && res.body.data.length > 0, `legacy ${p.name}: rows`);
    assertNoRawValues(t, res.body, `the legacy reply of ${p.name}`);
  }
  // MCP, with the official SDK client
  const { token } = await issueToken(bus, 'mask-mcp');
  const client = await connectClient(stack.url, 'http', token);
  try {
    for (const p of paths.slice(8)) {
      fake.script({ text: sqlAnswer(p.sql) });
      const result = (await client.callTool({ name: 'ask_database', arguments: { question: p.name } })) as { content: Array<{ text?: string }>; structuredContent?: any; isError?: boolean };
      t.notOk(result.isError, `MCP ${p.name}`);
      t.ok((result.structuredContent?.rows ?? []).length > 0, `MCP ${p.name}: rows`);
      assertNoRawValues(t, result, `the MCP result of ${p.name}`);
    }
  } finally {
    await closeClient(client);
  }
  // insights are computed from the masked rows: a top customer by e-mail is a masked label
  const top = await ask('SELECT c.email, sum(o.amount) AS total FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.email ORDER BY total DESC');
  t.ok(top.insights.length > 0, 'insights were made');
  t.ok(JSON.stringify(top.insights).includes('a***@example.com'), 'the insight names the masked label');
  assertNoRawValues(t, top, 'the insights');
  // a follow-up question: the model gets the first turn as history, never its rows
  const conversation = 'conv-mask-1';
  await ask("SELECT string_agg(email, ',') AS everyone FROM customers", { conversation_id: conversation });
  await ask('SELECT count(*) AS n FROM customers', { conversation_id: conversation, question: 'and how many are there?' });
  const followUp = fake.requests.at(-1)!;
  t.ok(JSON.stringify(followUp.messages).includes('string_agg(email'), 'the follow-up request carries the first turn');
  t.same(leaks(followUp), [], 'no raw value in the follow-up request to the model');
});

/**
 * No route and no actor gets rows that skipped masking (issue 26): every request that answers
 * values of the database is tried with the masked columns, as an actor on the bus would ask it
 * and as a person would through the edge, and none answers a raw value. Masking is part of the
 * executor's replies, so there is no request left that could.
 */
t.test('no route and no actor gets rows that skipped masking', async (t) => {
  const rctx = { requestId: 'e2e-every-route' };
  const SQL = 'SELECT id, name, email, ssn, email AS contact FROM customers ORDER BY id';
  // sql.execute, asked directly (any actor can): masked in the executor's reply
  const executed = await bus.request(SqlExecute, { sql: SQL }, rctx);
  t.equal(executed.row_count, 3);
  t.same(executed.masked.map((m) => [m.column, m.strategy]), [['email', 'partial'], ['ssn', 'hash'], ['contact', 'partial']], 'the reply says what was masked');
  assertNoRawValues(t, executed, 'sql.execute\'s reply');

  // sql.export, asked directly, even with an empty rule list: the store's rules still apply
  const exported = await bus.request(SqlExport, { sql: SQL, format: 'csv', title: 'Customers', rules: [] }, rctx);
  t.ok(exported.object, 'stored');
  const file = await (await bus.objects(Bucket.Exports)).get(exported.object!);
  const chunks: Buffer[] = [];
  for await (const chunk of file!.stream) chunks.push(Buffer.from(chunk as Uint8Array));
  const csv = Buffer.concat(chunks).toString('utf8');
  t.match(csv, /a\*\*\*@example\.com/, 'the file holds the masked values');
  t.same(leaks(csv), [], 'no raw value in the exported file');
  // and through the edge (the download)
  const { token: exportToken } = await issueToken(bus, 'mask-export');
  const download = await call(`${stack.url}/api/export`, { body: { sql: SQL, format: 'csv' }, headers: { authorization: `Bearer ${exportToken}` } });
  t.equal(download.status, 200, download.text.slice(0, 200));
  t.same(leaks(download.text), [], 'no raw value in the download');

  // sql.profile (semantic discovery's and the catalog's samples): masked values, said so
  await db.pool.query('ANALYZE customers');
  const profiled = await bus.request(SqlProfile, { schema: 'public', tables: ['customers'] }, rctx);
  const cols = new Map(profiled.tables[0]!.columns.map((c) => [c.name, c]));
  t.ok(cols.get('email')?.masked && cols.get('ssn')?.masked, 'email and ssn are said to be masked');
  t.notOk(cols.get('country')?.masked, 'a column no rule covers is not');
  assertNoRawValues(t, profiled, 'sql.profile\'s reply');
  // sql.values (the catalog's value index, from which clarifying questions offer values)
  const indexed = await bus.request(SqlValues, {}, rctx);
  for (const c of indexed.columns.filter((x) => x.table === 'customers' && (x.column === 'email' || x.column === 'ssn'))) {
    t.same(c.values, [], `${c.column}: no values in the index`);
  }
  assertNoRawValues(t, indexed, 'sql.values\'s reply');
  // semantic discovery
  const discovered = await bus.request(SemanticDiscover, { schema: 'public', tables: ['customers'] }, { ...rctx, user: 'admin' });
  assertNoRawValues(t, discovered, 'semantic discovery\'s reply');

  // the accuracy harness (the eval actor): the expected rows are masked as the answer's are (else
  // a right answer would score wrong), and its report holds no raw value
  fake.script({ text: sqlAnswer(SQL) });
  const { report } = await bus.request(EvalRun, { golden: [{ question: 'every customer', expected_sql: SQL, ordered: true }] }, { requestId: 'e2e-every-route-eval' });
  t.equal(report.results[0]?.verdict, 'correct', JSON.stringify(report.results[0]));
  assertNoRawValues(t, report, 'the evaluation report');
});

t.test('what the model received, the events on the bus and the audit rows hold no raw value', async (t) => {
  t.ok(modelRequests.length >= LEAK_PATHS.length, `the model was asked ${modelRequests.length} times`);
  for (const [i, r] of modelRequests.entries()) {
    const found = leaks({ system: r.system, messages: r.messages });
    if (found.length) t.fail(`request ${i} to the model holds ${found.join(', ')}`);
  }
  t.pass('every request to the model checked');
  await until(() => events.some((e) => e.subject.endsWith('query.executed')), 5_000, 'the events');
  t.ok(events.length > 10, `${events.length} events seen`);
  t.same(leaks(events), [], 'no raw value in any event');
  const audit = await bus.request(AuditQuery, { limit: 1000 }, { requestId: 'e2e-mask-audit' });
  t.ok(audit.entries.some((e) => e.type === 'query.executed'), 'the audit trail has the questions');
  t.same(leaks(audit.entries), [], 'no raw value in any audit row');
});

/**
 * Masked values do not leave through errors, end to end: the model's SQL (scripted in the fake
 * LLM) makes PostgreSQL fail with a value of the masked column in its message
 * (`CAST(string_agg(email, ',') AS int)` → `invalid input syntax for type integer: "ada@…,grace@…"`),
 * and the error reaches no channel with the value: not the HTTP reply, not the SSE error event,
 * not the legacy route, not MCP's tool error, not the self-correction prompt (which still gets
 * the code, the identifiers and the model's own SQL, so it can correct itself), not the events
 * on the bus, not the audit rows.
 */
import t from 'tap';
import { ALL_ACTORS, AuditQuery, MaskRuleCreate } from '../../protocol/subjects.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm, type RecordedRequest } from '../helpers/fake-llm.js';
import { closeClient, connectClient, issueToken, until } from '../helpers/mcp.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, callSse, startStack } from '../helpers/stack.js';

const EMAILS = ['ada.lovelace@analytical.example', 'grace.hopper@navy.example'];
const FRAGMENTS = [...EMAILS, ...EMAILS.flatMap((e) => e.split('@'))];

function leaks(value: unknown): string[] {
  const text = (typeof value === 'string' ? value : JSON.stringify(value)).toLowerCase();
  return FRAGMENTS.filter((f) => text.includes(f));
}

const nats = await startNats();
const db = await createTestDb('e2e_mask_err');
await db.pool.query('CREATE TABLE customers (id integer PRIMARY KEY, name text NOT NULL, email text, profile jsonb)');
await db.pool.query('INSERT INTO customers VALUES (1, $1, $2, $3), (2, $4, $5, $6)', [
  'Ada', EMAILS[0], JSON.stringify({ contact: EMAILS[0] }), 'Grace', EMAILS[1], JSON.stringify({ contact: EMAILS[1] }),
]);
const fake = await startFakeLlm();
const config = testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: { bus: { prefer_local: false }, query: { max_corrections: 1 }, insights: { enabled: false } },
});
const stack = await startStack(config, { edge: true, actors: ALL_ACTORS.filter((a) => a !== 'alerts' && a !== 'mailer') });
const bus = stack.running.bus;
const events: Array<{ subject: string; data: unknown }> = [];
const stopListening = bus.listen('evt.>', (data, subject) => events.push({ subject, data }));
const modelRequests: RecordedRequest[] = [];
t.teardown(async () => {
  stopListening();
  await stack.stop();
  await fake.close();
  await db.drop();
  await nats.stop();
});
await bus.request(MaskRuleCreate, { field_pattern: 'customers.email', strategy: 'partial' }, { requestId: 'mask-err-setup' });

t.beforeEach(() => {
  fake.requests.length = 0;
  fake.fallback(() => ({ status: 500, message: 'unscripted' }));
});
t.afterEach(() => {
  modelRequests.push(...fake.requests);
});

/** SQL whose error carries the addresses (checked below on the database itself), with what the sanitised message keeps. */
const LEAKING = [
  { name: 'string_agg cast to int', sql: "SELECT CAST(string_agg(email, ',') AS int) AS n FROM customers", keeps: 'invalid input syntax for type integer: "…"' },
  { name: 'quotes smuggled around the value', sql: "SELECT now() AT TIME ZONE ('\" ' || email || ' \"') AS z FROM customers", keeps: 'time zone "…" not recognized' },
  { name: 'a subquery cast to date', sql: "SELECT CAST((SELECT string_agg(email, ',') FROM customers) AS date) AS d", keeps: 'invalid input syntax for type date: "…"' },
  { name: 'a date_trunc unit', sql: 'SELECT date_trunc(email, now()) AS d FROM customers', keeps: 'not recognized for type timestamp with time zone' },
  { name: 'a JSON key cast to int', sql: "SELECT CAST(profile->>'contact' AS int) AS n FROM customers", keeps: 'invalid input syntax for type integer: "…"' },
  { name: 'jsonb (the value is in DETAIL and CONTEXT)', sql: "SELECT CAST('\"' || email AS jsonb) AS j FROM customers", keeps: 'invalid input syntax for type json' },
];

t.test('the database itself answers these with the addresses in the error', async (t) => {
  for (const l of LEAKING) {
    const err = await db.pool.query(l.sql).then(() => undefined, (e: { message: string; detail?: string; where?: string }) => e);
    t.ok(err, `${l.name}: fails`);
    t.ok(leaks(`${err?.message} ${err?.detail ?? ''} ${err?.where ?? ''}`).length > 0, `${l.name}: PostgreSQL's error holds an address`);
  }
});

t.test('self-correction: the model gets the sanitised error, with its SQL and the column, never the value', async (t) => {
  for (const l of LEAKING) {
    modelRequests.push(...fake.requests.splice(0));
    fake.script({ text: sqlAnswer(l.sql) }, { text: sqlAnswer('SELECT count(email) AS n FROM customers') });
    const res = await call(`${stack.url}/api/query`, { body: { question: `${l.name}?` } });
    t.equal(res.status, 200, `${l.name}: corrected and answered`);
    t.equal(res.body.corrections, 1, `${l.name}: one correction`);
    t.same(res.body.rows, [[2]]);
    t.equal(fake.requests.length, 2, `${l.name}: the model was asked twice`);
    const correction = fake.requests[1]!;
    t.ok(correction.last.includes(l.keeps), `${l.name}: the correction prompt has the database's words (${correction.last.split('\n')[1]})`);
    t.ok(JSON.stringify(correction.messages).includes(l.sql.slice(0, 30).replace(/"/g, '\\"')), `${l.name}: and the SQL it wrote`);
    t.ok(/\bemail\b|contact/.test(JSON.stringify(correction.messages)), `${l.name}: the column is named`);
    t.same(leaks({ system: correction.system, messages: correction.messages }), [], `${l.name}: no address in the correction prompt`);
    t.same(leaks(res.body), [], `${l.name}: no address in the reply`);
  }
  // an identifier the database names is kept: the model can correct a typo
  modelRequests.push(...fake.requests.splice(0));
  fake.script({ text: sqlAnswer('SELECT emai FROM customers') }, { text: sqlAnswer('SELECT count(email) AS n FROM customers') });
  const typo = await call(`${stack.url}/api/query`, { body: { question: 'typo?' } });
  t.equal(typo.status, 200);
  t.ok(fake.requests[1]!.last.includes('column "emai" does not exist'), 'the correction prompt names the unknown column');
});

t.test('an error that stays: no address in any channel', async (t) => {
  const [first, second] = [LEAKING[0]!, LEAKING[1]!];
  const script = (): void => fake.script({ text: sqlAnswer(first.sql) }, { text: sqlAnswer(second.sql) });
  // JSON
  script();
  const json = await call(`${stack.url}/api/query`, { body: { question: 'everyone?' } });
  t.equal(json.status, 422);
  t.equal(json.body.error.code, 'DB_QUERY_FAILED');
  t.ok(json.body.error.message.includes('…'), `the value is replaced (${json.body.error.message})`);
  t.same(leaks(json.text), [], 'no address in the JSON error');
  // SSE
  script();
  const { status, events: sse } = await callSse(`${stack.url}/api/query`, { question: 'everyone, streamed?' });
  t.equal(status, 200);
  const error = sse.find((e) => e.event === 'error');
  t.equal(error?.data.error?.code ?? error?.data.code, 'DB_QUERY_FAILED', 'an error event');
  t.same(leaks(sse), [], 'no address in any SSE event');
  // the legacy route
  script();
  const legacy = await call(`${stack.url}/query`, { body: { question: 'everyone, legacy?' } });
  t.equal(legacy.status, 422);
  t.same(leaks(legacy.text), [], 'no address in the legacy error');
  // MCP
  const { token } = await issueToken(bus, 'mask-err-mcp');
  const client = await connectClient(stack.url, 'http', token);
  try {
    script();
    const result = (await client.callTool({ name: 'ask_database', arguments: { question: 'everyone, over MCP?' } })) as { content: Array<{ text?: string }>; isError?: boolean };
    t.ok(result.isError, 'a tool error');
    t.match(result.content.map((c) => c.text ?? '').join('\n'), /DB_QUERY_FAILED|invalid input syntax|not recognized/);
    t.same(leaks(result), [], 'no address in the MCP tool error');
  } finally {
    await closeClient(client);
  }
});

t.test('what the model received, the events and the audit rows hold no address', async (t) => {
  t.ok(modelRequests.length >= LEAKING.length * 2, `the model was asked ${modelRequests.length} times`);
  t.same(leaks(modelRequests.map((r) => ({ system: r.system, messages: r.messages }))), [], 'no address in any request to the model');
  await until(() => events.filter((e) => e.subject.endsWith('query.rejected')).length >= LEAKING.length, 5_000, 'the query.rejected events');
  const rejected = events.filter((e) => e.subject.endsWith('query.rejected'));
  t.ok(rejected.every((e) => (e.data as { code: string }).code === 'DB_QUERY_FAILED'), 'database refusals');
  t.same(leaks(events), [], 'no address in any event');
  let audit = await bus.request(AuditQuery, { type: 'query.rejected', limit: 1000 }, { requestId: 'mask-err-audit' });
  for (let i = 0; i < 50 && audit.entries.length < rejected.length; i++) {
    await new Promise((r) => setTimeout(r, 100));
    audit = await bus.request(AuditQuery, { type: 'query.rejected', limit: 1000 }, { requestId: 'mask-err-audit' });
  }
  t.equal(audit.entries.length, rejected.length, 'every refusal is in the audit trail');
  t.ok(audit.entries.some((e) => String(e.payload.reason ?? '').includes('…')), 'with the sanitised reason');
  const all = await bus.request(AuditQuery, { limit: 1000 }, { requestId: 'mask-err-audit-all' });
  t.same(leaks(all.entries), [], 'no address in any audit row');
});

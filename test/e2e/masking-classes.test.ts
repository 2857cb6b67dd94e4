/**
 * Issue 24's masking classes end to end, through every channel a value can leave by: the JSON
 * reply of /api/query (with its statistical insights), its SSE events, the legacy /query, the
 * file of /api/export, MCP's ask_database (the official SDK client), and the requests the model
 * receives (the SQL prompt of a follow-up, and the hybrid insights prompt made from the masked
 * rows). A real PostgreSQL, every actor on a private NATS, the rules in the settings actor's store
 * (`customers.email` → partial, `ssn` → hash); the model's SQL (scripted in the fake LLM) is one
 * attack of each class: a whole row in attribute notation, a quoted CTE name that does not
 * shadow the table, reads inside a document. Every secret of test/fixtures/attacks-masking.ts,
 * in every shape, is searched for in everything each channel returns.
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { ALL_ACTORS, AuditQuery, MaskRuleCreate } from '../../protocol/subjects.js';
import { MASKING_SCHEMA_POSTGRESQL, secretsIn } from '../fixtures/attacks-masking.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm, type RecordedRequest } from '../helpers/fake-llm.js';
import { closeClient, connectClient, issueToken, until } from '../helpers/mcp.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, callSse, startStack } from '../helpers/stack.js';

/** One attack of each class, and one that gives the insights a label to name (a masked key's value). */
const CASES = [
  { class: 'A: whole row', sql: 'SELECT c.row_to_json AS doc, c.id FROM customers c ORDER BY c.id' },
  { class: 'A: whole row, aggregated', sql: 'SELECT c.json_agg AS docs FROM customers c' },
  { class: 'B: quoted CTE name', sql: `WITH "CUSTOMERS" AS (SELECT 'x'::text AS email) SELECT c.email AS who, c.id AS n FROM customers c ORDER BY c.id` },
  { class: 'B: non-LATERAL subquery', sql: `SELECT (SELECT s.x FROM (SELECT 'x'::text AS email) c, (SELECT c.email AS x) s) AS who, c.id AS n FROM customers c ORDER BY c.id` },
  { class: 'C: the document', sql: 'SELECT id, payload FROM customers ORDER BY id' },
  { class: 'C: a jsonpath wildcard', sql: "SELECT jsonb_path_query(payload, '$.**') AS item FROM customers" },
  { class: 'C: a subscript, as a label', sql: "SELECT payload['contact']['email'] AS who, id * 100 + 20 AS total FROM customers ORDER BY total DESC" },
];
const INSIGHTS = 'TYPE: summary | SEVERITY: info | MESSAGE: Two customers.';

const nats = await startNats();
const db = await createTestDb('e2e_mask_cls');
await db.pool.query(MASKING_SCHEMA_POSTGRESQL);
const fake = await startFakeLlm();
const config = testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: {
    bus: { prefer_local: false },
    // hybrid: the statistical insights in the answer, the model's made after it from the masked rows
    insights: { enabled: true, mode: 'hybrid', max_insights: 3 },
    config_db: { encryption_key: randomBytes(32).toString('base64url') },
  },
});
const stack = await startStack(config, { edge: true, actors: ALL_ACTORS.filter((a) => a !== 'alerts' && a !== 'mailer') });
const bus = stack.running.bus;
const events: Array<{ subject: string; data: unknown }> = [];
const stopListening = bus.listen('evt.>', (data, subject) => events.push({ subject, data }));
t.teardown(async () => {
  stopListening();
  await stack.stop();
  await fake.close();
  await db.drop();
  await nats.stop();
});
await bus.request(MaskRuleCreate, { field_pattern: 'customers.email', strategy: 'partial' }, { requestId: 'setup' });
await bus.request(MaskRuleCreate, { field_pattern: 'ssn', strategy: 'hash' }, { requestId: 'setup' });

// the model: the SQL of the case at hand, and insights when it is asked for them
let sql = '';
const insightRequests: RecordedRequest[] = [];
fake.fallback((req) => {
  if (req.system.includes('SEVERITY')) {
    insightRequests.push(req);
    return { text: INSIGHTS };
  }
  return { text: sqlAnswer(sql) };
});

function noSecret(t: { same(found: unknown, wanted: unknown, message: string): boolean }, value: unknown, where: string): void {
  t.same(secretsIn(value), [], `no secret in ${where}`);
}

t.test('JSON: /api/query, with the statistical insights', async (t) => {
  for (const c of CASES) {
    sql = c.sql;
    const res = await call(`${stack.url}/api/query`, { body: { question: c.class } });
    t.equal(res.status, 200, `${c.class}: ${res.status === 200 ? 'answered' : res.text}`);
    t.ok((res.body.rows ?? []).length > 0, `${c.class}: rows`);
    t.ok(res.body.masked?.length > 0, `${c.class}: the reply says what was masked`);
    noSecret(t, res.body, `the JSON reply to ${c.class} (rows, insights)`);
  }
  sql = CASES.at(-1)!.sql;
  const labels = await call(`${stack.url}/api/query`, { body: { question: 'who is there?' } });
  t.ok(labels.body.insights.length > 0, 'statistical insights were made');
  t.match(JSON.stringify(labels.body.insights), /\*\*\*@navy\.example/, 'an insight names a masked label');
});

t.test('SSE: every event', async (t) => {
  for (const c of CASES) {
    sql = c.sql;
    const { status, events: sse } = await callSse(`${stack.url}/api/query`, { question: c.class });
    t.equal(status, 200);
    t.ok(sse.some((e) => e.event === 'rows'), `${c.class}: a rows event`);
    noSecret(t, sse, `the SSE events of ${c.class}`);
  }
});

t.test('legacy /query', async (t) => {
  for (const c of CASES) {
    sql = c.sql;
    const res = await call(`${stack.url}/query`, { body: { question: c.class } });
    t.equal(res.status, 200, `${c.class}: ${res.status === 200 ? 'answered' : res.text}`);
    t.ok(Array.isArray(res.body.data) && res.body.data.length > 0, `${c.class}: rows`);
    noSecret(t, res.body, `the legacy reply to ${c.class}`);
  }
});

t.test('/api/export: the file', async (t) => {
  const { token } = await issueToken(bus, 'mask-export');
  for (const c of CASES) {
    for (const format of ['csv', 'html'] as const) {
      const res = await fetch(`${stack.url}/api/export`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ sql: c.sql, format, title: 'classes' }),
      });
      const text = await res.text();
      t.equal(res.status, 200, `${c.class} as ${format}: ${res.status === 200 ? 'a file' : text}`);
      t.ok(text.includes('sha256:') || text.includes('***@'), `${c.class} as ${format}: with the masked rows`);
      noSecret(t, text, `the ${format} file of ${c.class}`);
    }
  }
});

t.test('MCP ask_database', async (t) => {
  const { token } = await issueToken(bus, 'mask-mcp');
  const client = await connectClient(stack.url, 'http', token);
  try {
    for (const c of CASES) {
      sql = c.sql;
      const result = (await client.callTool({ name: 'ask_database', arguments: { question: c.class } })) as { structuredContent?: any; isError?: boolean };
      t.notOk(result.isError, `MCP ${c.class}`);
      t.ok((result.structuredContent?.rows ?? []).length > 0, `MCP ${c.class}: rows`);
      noSecret(t, result, `the MCP result of ${c.class}`);
    }
  } finally {
    await closeClient(client);
  }
});

t.test('what the model received: the hybrid insights prompts and a follow-up question', async (t) => {
  const conversation = 'conv-mask-classes';
  sql = CASES[0]!.sql;
  await call(`${stack.url}/api/query`, { body: { question: 'every customer as a document', conversation_id: conversation } });
  sql = 'SELECT count(*) AS n FROM customers';
  await call(`${stack.url}/api/query`, { body: { question: 'and how many?', conversation_id: conversation } });
  await until(() => insightRequests.length >= CASES.length, 20_000, 'the hybrid insights prompts');
  t.ok(insightRequests.length >= CASES.length, `${insightRequests.length} insights prompts`);
  t.ok(insightRequests.some((r) => /\*\*\*@|sha256:/.test(r.last)), 'the insights prompts hold the masked values');
  for (const [i, r] of fake.requests.entries()) {
    const found = secretsIn({ system: r.system, messages: r.messages });
    if (found.length) t.fail(`request ${i} to the model holds ${found.join(', ')}`);
  }
  t.pass(`${fake.requests.length} requests to the model checked`);
});

t.test('events and audit rows', async (t) => {
  await until(() => events.some((e) => e.subject.endsWith('query.executed')), 5_000, 'the events');
  noSecret(t, events, 'any event');
  const audit = await bus.request(AuditQuery, { limit: 1000 }, { requestId: 'e2e-mask-cls-audit' });
  t.ok(audit.entries.length > 0);
  noSecret(t, audit.entries, 'any audit row');
});

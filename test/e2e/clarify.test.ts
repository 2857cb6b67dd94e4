/**
 * One clarifying question instead of a guess, end to end: a real stack (every actor, config_db
 * on a fresh PostgreSQL database holding the semantic layer, the data in another), a local
 * server speaking Anthropic's Messages API. Two defined metrics are both called "revenue": a
 * question about revenue is answered `intent: "clarify"` with both as choices and no model call,
 * over /api/query (JSON and SSE), the legacy /query, /auth/query and MCP's ask_database; the
 * next turn of the conversation (a label, a value, a number or the user's own words) asks the
 * question again with that meaning pinned, and the word is never asked about twice.
 */
import t from 'tap';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { meaningOf, pickChoice, pinQuestion } from '../../actors/assistant/clarify.js';
import { metricAmbiguity } from '../../actors/catalog/metric-ambiguity.js';
import type { SemanticMetric } from '../../protocol/schemas/semantic.js';
import { ALL_ACTORS, Actor, Ask, MaskRuleCreate, MaskRuleDelete, SchemaContext, SemanticEntityCreate, SemanticMetricCreate } from '../../protocol/subjects.js';
import { testConfig } from '../helpers/config.js';
import { chatAnswer, sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { closeClient, connectClient, issueToken } from '../helpers/mcp.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, callSse, startStack } from '../helpers/stack.js';

const ROLES = { edge: true, actors: ALL_ACTORS.filter((a) => a !== Actor.Analytics) };
const ORIGIN = 'https://kiosk.example';

const nats = await startNats();
const db = await createTestDb('clarify');
await db.pool.query(`
  CREATE TABLE orders (id int PRIMARY KEY, status text NOT NULL, amount numeric NOT NULL, discount numeric NOT NULL);
  INSERT INTO orders VALUES (1, 'open', 100, 10), (2, 'open', 50, 0), (3, 'shipped', 200, 20);
  CREATE TABLE parcels (id int PRIMARY KEY, state text NOT NULL);
  INSERT INTO parcels SELECT g, CASE WHEN g % 2 = 0 THEN 'delivered' ELSE 'in_transit' END FROM generate_series(1, 40) g;
  ANALYZE parcels;
`);
const cfgDb = await createTestDb('clarify_cfg');
const fake = await startFakeLlm();
const stack = await startStack(testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: {
    config_db: { enabled: true, encryption_key: generateFernetKey(), postgresql: { host: cfgDb.host, port: cfgDb.port, database: cfgDb.name, user: cfgDb.user } },
    plugins: { auth: { enabled: true, allowed_db_types: ['postgresql'], auto_session: { enabled: true, ttl_hours: 1, label: 'Kiosk', allowed_origins: [ORIGIN] } } },
  },
}), ROLES);
const bus = stack.running.bus;

t.teardown(async () => {
  await stack.stop();
  await fake.close();
  await db.drop();
  await cfgDb.drop();
  await nats.stop();
});

const ctx = { requestId: 'clarify-e2e', user: 'admin' };
const orders = await bus.request(SemanticEntityCreate, {
  schema_name: 'public', table_name: 'orders', display_name: 'Orders', primary_key: 'id', by: 'admin',
  columns: [{ name: 'status', role: 'dimension' }, { name: 'amount', role: 'metric', aggregation: 'sum' }],
}, ctx);
await bus.request(SemanticMetricCreate, {
  name: 'gross_revenue', display_name: 'Gross revenue', sql_expression: 'SUM(amount)', entity_id: orders.id, synonyms: ['revenue', 'sales'], by: 'admin',
}, ctx);
await bus.request(SemanticMetricCreate, {
  name: 'net_revenue', display_name: 'Net revenue', sql_expression: 'SUM(amount - discount)', entity_id: orders.id, synonyms: ['revenue'], by: 'admin',
}, ctx);

await bus.request(SemanticMetricCreate, {
  name: 'gross_margin', display_name: 'Gross margin', sql_expression: 'SUM(amount) - SUM(discount)', entity_id: orders.id, synonyms: ['margin'], by: 'admin',
}, ctx);
await bus.request(SemanticMetricCreate, {
  name: 'contribution_margin', display_name: 'Contribution margin', sql_expression: 'SUM(amount) * 0.3', entity_id: orders.id, synonyms: ['margin'], by: 'admin',
}, ctx);

const QUESTION = 'What is the revenue per status?';
const NET = 'SELECT status, SUM(amount - discount) AS net_revenue FROM orders GROUP BY status ORDER BY status';
const GROSS = 'SELECT status, SUM(amount) AS gross_revenue FROM orders GROUP BY status ORDER BY status';
const NET_ROWS = [['open', '140'], ['shipped', '180']];
const GROSS_ROWS = [['open', '150'], ['shipped', '200']];

t.beforeEach(() => {
  fake.requests.length = 0;
  // the scripted model writes the metric the question names (pinned or asked for), else gross
  fake.fallback((req) => {
    const q = req.last.toLowerCase();
    if (q.includes('hello')) return { text: chatAnswer('Hello! Ask me about the orders.') };
    return { text: sqlAnswer(q.includes('net_revenue') || q.includes('without discount') || q.includes('net revenue') ? NET : GROSS) };
  });
});

/** The scripted SQL as it ran: the guard adds a LIMIT. */
function sqlOf(sql: string): RegExp {
  return new RegExp(`^${sql.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s+LIMIT \\d+$`);
}

function numeric(rows: unknown[][]): unknown[][] {
  return rows.map((r) => r.map((c) => (typeof c === 'number' ? String(c) : c)));
}

t.test('the pieces: which choice an answer names, the pinned question, a metric tie', async (t) => {
  const choices = [
    { label: 'Gross revenue', value: 'gross_revenue', kind: 'metric' as const },
    { label: 'Net revenue', value: 'net_revenue', kind: 'metric' as const },
  ];
  t.equal(pickChoice('Net revenue', choices)?.value, 'net_revenue', 'the label');
  t.equal(pickChoice('  "gross_revenue". ', choices)?.value, 'gross_revenue', 'the value, quotes and a full stop aside');
  t.equal(pickChoice('2', choices)?.value, 'net_revenue', 'the number');
  t.equal(pickChoice('option 1', choices)?.value, 'gross_revenue');
  t.equal(pickChoice('the net revenue please', choices)?.value, 'net_revenue', 'a label inside an answer');
  t.equal(pickChoice('3', choices), undefined, 'no such number');
  t.equal(pickChoice('the one without discounts', choices), undefined, 'own words');
  t.same(meaningOf('the one without discounts', { question: 'q', word: 'revenue', choices }), { word: 'revenue', text: 'the one without discounts' });

  const pinned = pinQuestion('revenue by region', [{ word: 'region', choice: { label: 'Sales regions', value: 'sales.regions', kind: 'table' } }], ['orders']);
  t.same(pinned.tables, ['orders', 'sales.regions'], 'a table choice becomes a table hint');
  t.match(pinned.question, /^revenue by region\n\(By "region" I mean the table sales\.regions\.\)$/);
  t.same(pinned.clarified, ['region', 'sales', 'regions'], 'the word, and the words of the meaning given for it');
  const regions = [{ label: 'Sales regions', value: 'sales.regions', kind: 'table' as const }, { label: 'Old regions', value: 'regions_old', kind: 'table' as const }];
  const joined = pinQuestion('revenue by region', [{ word: 'region', choice: regions[0]! }], undefined, { question: 'q', word: 'region', choices: regions, tables: ['orders', 'regions_old', 'sales.regions'] });
  t.same(joined.tables, ['orders', 'sales.regions'], 'without hints of its own: the context\'s tables, less the choice not taken');
  t.equal(pinQuestion('revenue', [{ word: 'revenue', text: 'net' }], undefined, { question: 'q', word: 'revenue', choices: regions, tables: ['orders'] }).tables, undefined, 'own words pin no table');

  const metric = (id: number, name: string, synonyms: string[], active = true): SemanticMetric => ({
    id, name, display_name: name.replace('_', ' '), sql_expression: 'SUM(x)', format_type: '', category: '', description: '', active,
    entity_id: null, synonyms, created_at: '', updated_at: '',
  });
  const ms = [metric(1, 'gross_revenue', ['revenue']), metric(2, 'net_revenue', ['revenue']), metric(3, 'order_count', [])];
  const tie = metricAmbiguity('Revenues by month', ms);
  t.equal(tie?.word, 'Revenues', 'the word as written');
  t.same(tie?.choices.map((c) => c.value), ['gross_revenue', 'net_revenue']);
  t.equal(metricAmbiguity('net revenue by month', ms), undefined, 'a word more decides');
  t.equal(metricAmbiguity('revenue by month', ms, ['revenue']), undefined, 'a clarified word never ties again');
  t.equal(metricAmbiguity('revenue by month', [ms[0]!, { ...ms[1]!, active: false }]), undefined, 'inactive metrics do not count');
  t.equal(metricAmbiguity('total orders', ms), undefined, 'no tie on a generic word');
  const margins = [...ms, metric(4, 'gross_margin', ['margin']), metric(5, 'contribution_margin', ['margin'])];
  t.equal(metricAmbiguity('net revenue and margin', margins)?.word, 'margin', 'a word settled by another is passed over for the next');
  t.equal(metricAmbiguity('revenue and margin', margins, ['revenue'])?.word, 'margin');
});

t.test('the catalog says the word two metrics tie for', async (t) => {
  const c = await bus.request(SchemaContext, { question: QUESTION }, ctx);
  t.equal(c.ambiguity?.word, 'revenue');
  t.same(c.ambiguity?.choices, [
    { label: 'Gross revenue', value: 'gross_revenue', kind: 'metric' },
    { label: 'Net revenue', value: 'net_revenue', kind: 'metric' },
  ]);
  t.match(c.ambiguity?.question, /Gross revenue or Net revenue/);
  const settled = await bus.request(SchemaContext, { question: QUESTION, clarified: ['revenue'] }, ctx);
  t.equal(settled.ambiguity, undefined, 'not once the word is clarified');
});

t.test('/api/query: a clarifying question, then the choice answers the original question', async (t) => {
  const first = await call(`${stack.url}/api/query`, { body: { question: QUESTION, conversation_id: 'conv-1' } });
  t.equal(first.status, 200, first.text);
  t.equal(first.body.intent, 'clarify');
  t.equal(first.body.conversation_id, 'conv-1');
  t.equal(first.body.sql, undefined, 'no SQL');
  t.equal(first.body.rows, undefined, 'nothing ran');
  t.equal(first.body.clarification.word, 'revenue');
  t.same(first.body.clarification.choices.map((c: { label: string }) => c.label), ['Gross revenue', 'Net revenue']);
  t.equal(first.body.message, first.body.clarification.question);
  t.equal(fake.requests.length, 0, 'the model was not asked');
  t.equal(first.body.usage.llm_calls, 0);

  const second = await call(`${stack.url}/api/query`, { body: { question: 'Net revenue', conversation_id: 'conv-1' } });
  t.equal(second.status, 200, second.text);
  t.equal(second.body.intent, 'sql', 'answered, not asked again');
  t.match(second.body.sql, sqlOf(NET));
  t.same(numeric(second.body.rows), NET_ROWS, 'the net revenue per status');
  t.equal(fake.requests.length, 1, 'one model call');
  const prompt = fake.requests[0]!.last;
  t.match(prompt, /What is the revenue per status\?/, 'the original question is asked again');
  t.match(prompt, /By "revenue" I mean the metric net_revenue/, 'with the choice pinned');
  t.notMatch(fake.requests[0]!.messages.map((m) => m.content).join('\n'), /Which "revenue"/, 'the clarifying exchange is not shown to the model');

  // the conversation goes on as usual: the next question is not taken for an answer
  const third = await call(`${stack.url}/api/query`, { body: { question: 'and the net revenue again?', conversation_id: 'conv-1' } });
  t.equal(third.body.intent, 'sql');
  t.match(fake.requests.at(-1)!.last, /Question: <data source="question">\nand the net revenue again\?\n<\/data>\s*$/, 'asked as it was written (fenced as data)');
});

t.test('/api/query without a conversation: one is opened for the answer; a number picks a choice', async (t) => {
  const first = await call(`${stack.url}/api/query`, { body: { question: QUESTION } });
  t.equal(first.body.intent, 'clarify');
  const id = first.body.conversation_id as string;
  t.match(id, /^[0-9a-f-]{36}$/, 'a conversation id comes back');
  const second = await call(`${stack.url}/api/query`, { body: { question: '1', conversation_id: id } });
  t.equal(second.body.intent, 'sql');
  t.match(second.body.sql, sqlOf(GROSS), 'the first choice: gross revenue');
  t.same(numeric(second.body.rows), GROSS_ROWS);
  t.match(fake.requests.at(-1)!.last, /By "revenue" I mean the metric gross_revenue/);
});

t.test('own words resolve it too, and the same word is not asked about twice', async (t) => {
  const first = await call(`${stack.url}/api/query`, { body: { question: QUESTION, conversation_id: 'conv-words' } });
  t.equal(first.body.intent, 'clarify');
  const second = await call(`${stack.url}/api/query`, { body: { question: 'the one without discounts', conversation_id: 'conv-words' } });
  t.equal(second.status, 200, second.text);
  t.equal(second.body.intent, 'sql', 'no second clarification for "revenue"');
  t.match(fake.requests.at(-1)!.last, /By "revenue" I mean: the one without discounts/);
  t.same(numeric(second.body.rows), NET_ROWS);
});

t.test('two ambiguous words: one clarifying question each, then the question with both pinned', async (t) => {
  const q = 'Revenue and margin per status';
  const first = await call(`${stack.url}/api/query`, { body: { question: q, conversation_id: 'conv-two' } });
  t.equal(first.body.intent, 'clarify');
  t.equal(first.body.clarification.word, 'Revenue', 'the first word first, as written');
  const second = await call(`${stack.url}/api/query`, { body: { question: 'net revenue', conversation_id: 'conv-two' } });
  t.equal(second.body.intent, 'clarify', 'then the other word');
  t.equal(second.body.clarification.word, 'margin');
  t.same(second.body.clarification.choices.map((c: { value: string }) => c.value), ['contribution_margin', 'gross_margin']);
  t.equal(fake.requests.length, 0, 'still no model call');
  const third = await call(`${stack.url}/api/query`, { body: { question: 'Gross margin', conversation_id: 'conv-two' } });
  t.equal(third.body.intent, 'sql', third.text);
  const prompt = fake.requests.at(-1)!.last;
  t.match(prompt, /Revenue and margin per status/);
  t.match(prompt, /By "Revenue" I mean the metric net_revenue/);
  t.match(prompt, /By "margin" I mean the metric gross_margin/);
});

t.test('a question that names its metric is answered at once', async (t) => {
  const r = await call(`${stack.url}/api/query`, { body: { question: 'What is the net revenue per status?', conversation_id: 'conv-clear' } });
  t.equal(r.body.intent, 'sql');
  t.same(numeric(r.body.rows), NET_ROWS);
  const hello = await call(`${stack.url}/api/query`, { body: { question: 'hello there', conversation_id: 'conv-clear' } });
  t.equal(hello.body.intent, 'chat', 'chat is untouched');
  // a scheduled question has nobody to answer a clarifying question: the model's best guess
  const scheduled = await bus.request(Ask, { question: QUESTION, channel: 'schedule', widget: 'schedule' }, { requestId: 'clarify-schedule' });
  t.equal(scheduled.intent, 'sql', 'schedules never ask');
});

t.test('SSE: a clarify event, then the result; no SQL step', async (t) => {
  const first = await callSse(`${stack.url}/api/query`, { question: QUESTION, conversation_id: 'conv-sse' });
  t.equal(first.status, 200);
  const names = first.events.map((e) => e.event);
  t.ok(names.includes('clarify'), `a clarify event (${names.join(', ')})`);
  t.notOk(names.includes('sql'), 'no sql event');
  const ev = first.events.find((e) => e.event === 'clarify')!;
  t.same(ev.data.choices.map((c: { value: string }) => c.value), ['gross_revenue', 'net_revenue']);
  const result = first.events.find((e) => e.event === 'result')!;
  t.equal(result.data.intent, 'clarify');
  t.ok(names.indexOf('clarify') < names.indexOf('result'), 'before the result');

  const second = await callSse(`${stack.url}/api/query`, { question: 'net_revenue', conversation_id: 'conv-sse' });
  const names2 = second.events.map((e) => e.event);
  t.ok(names2.includes('sql') && names2.includes('rows'), `answered (${names2.join(', ')})`);
  t.notOk(names2.includes('clarify'));
  t.match(second.events.find((e) => e.event === 'result')!.data.sql, sqlOf(NET));
});

t.test('legacy /query: response_type clarify, and the session\'s next question answers it', async (t) => {
  const first = await call(`${stack.url}/query`, { body: { question: QUESTION, session_id: 'widget-1' } });
  t.equal(first.status, 200, first.text);
  t.equal(first.body.response_type, 'clarify');
  t.match(first.body.message, /Which "revenue"/);
  t.same(first.body.clarification.choices.map((c: { value: string }) => c.value), ['gross_revenue', 'net_revenue']);
  t.equal(first.body.sql, undefined);
  const second = await call(`${stack.url}/query`, { body: { question: 'Gross revenue', session_id: 'widget-1' } });
  t.equal(second.body.response_type, 'sql');
  t.match(second.body.sql, sqlOf(GROSS));
  t.same(numeric(second.body.data), GROSS_ROWS);
});

t.test('/auth/query: the clarifying question opens the session\'s conversation', async (t) => {
  const s = await call(`${stack.url}/auth/auto-session`, { method: 'POST', headers: { origin: ORIGIN } });
  t.equal(s.status, 200, s.text);
  const headers = { 'x-session-id': s.body.session_id as string };
  const first = await call(`${stack.url}/auth/query`, { body: { question: QUESTION }, headers });
  t.equal(first.status, 200, first.text);
  t.equal(first.body.response_type, 'clarify');
  const id = first.body.conversation_id as string;
  t.ok(id, 'its conversation id');
  // another caller naming the same conversation does not continue it
  const stranger = await call(`${stack.url}/api/query`, { body: { question: 'Net revenue', conversation_id: id } });
  t.not(stranger.body.intent, 'clarify');
  t.notMatch(fake.requests.at(-1)?.last ?? '', /By "revenue"/, 'the stranger\'s question is not pinned to it');
  const second = await call(`${stack.url}/auth/query`, { body: { question: 'Net revenue', conversation_id: id }, headers });
  t.equal(second.status, 200, second.text);
  t.equal(second.body.response_type, 'sql');
  t.match(second.body.sql, sqlOf(NET));
  t.equal(second.body.conversation_id, id);
});

t.test('MCP ask_database: the text lists the choices; the answer in the same conversation resolves it', async (t) => {
  const { token } = await issueToken(bus, 'mcp-user');
  const client = await connectClient(stack.url, 'http', token);
  t.teardown(() => closeClient(client));
  type ToolResult = { content: Array<{ type: string; text?: string }>; structuredContent?: any; isError?: boolean };
  const first = (await client.callTool({ name: 'ask_database', arguments: { question: QUESTION } })) as ToolResult;
  t.notOk(first.isError);
  const text = first.content.map((c) => c.text ?? '').join('\n');
  t.match(text, /Clarification needed: Which "revenue" do you mean/);
  t.match(text, /1\. Gross revenue \(metric gross_revenue\)\n2\. Net revenue \(metric net_revenue\)/);
  t.equal(first.structuredContent.intent, 'clarify');
  const id = first.structuredContent.conversation_id as string;
  t.ok(text.includes(`conversation_id "${id}"`), 'and how to answer');
  t.equal(fake.requests.length, 0, 'no model call');

  const second = (await client.callTool({ name: 'ask_database', arguments: { question: 'Net revenue', conversation_id: id } })) as ToolResult;
  t.notOk(second.isError, JSON.stringify(second.content));
  t.equal(second.structuredContent.intent, 'sql');
  t.match(second.structuredContent.sql, sqlOf(NET));
  t.same(numeric(second.structuredContent.rows), NET_ROWS);
});

t.test('a literal no value holds, close to a value of a column known whole: asked, then pinned', async (t) => {
  // parcels.state holds 'delivered' and 'in_transit' only: its statistics list every value
  const first = await call(`${stack.url}/api/query`, { body: { question: "How many parcels have state 'delivred'?", conversation_id: 'conv-typo' } });
  t.equal(first.status, 200, first.text);
  t.equal(first.body.intent, 'clarify', 'asked, not guessed');
  t.equal(first.body.clarification?.word, 'delivred');
  t.same(first.body.clarification?.choices.map((c: { value: string; kind: string }) => [c.value, c.kind]), [['delivered', 'value']]);
  t.match(first.body.message, /I found no 'delivred' in the data\. Did you mean 'delivered'\?/);
  t.equal(fake.requests.length, 0, 'the model was not asked');

  const second = await call(`${stack.url}/api/query`, { body: { question: 'yes, delivered', conversation_id: 'conv-typo' } });
  t.equal(second.status, 200, second.text);
  t.equal(second.body.intent, 'sql', 'answered, not asked again');
  t.match(fake.requests.at(-1)!.last, /By "delivred" I mean the value 'delivered'/, 'the value is pinned for the model');

  // a literal far from every known value is no typo: the question goes to the model as it is
  const other = await call(`${stack.url}/api/query`, { body: { question: "How many parcels have state 'returned'?", conversation_id: 'conv-far' } });
  t.equal(other.body.intent, 'sql', 'no clarifying question for a value that is simply not there');
});

t.test('the values a clarifying question offers pass the mask rules: a masked column offers none', async (t) => {
  const rule = await bus.request(MaskRuleCreate, { field_pattern: 'state', strategy: 'redact' }, ctx);
  t.teardown(() => bus.request(MaskRuleDelete, { id: rule.id }, ctx));
  // the masking actor drops its rules on evt.mask.changed: no TTL waited out
  const res = await call(`${stack.url}/api/query`, { body: { question: "How many parcels have state 'delivred'?", conversation_id: 'conv-masked' } });
  t.equal(res.status, 200, res.text);
  t.equal(res.body.intent, 'sql', 'no clarifying question that would show a masked value');
  t.notMatch(JSON.stringify(res.body), /delivered'/, 'the masked value is not offered');
});

/**
 * Questions end to end through POST /api/query with llm.provider: openai — every actor, a
 * real PostgreSQL, and a local server speaking OpenAI's Chat Completions API (as an
 * OpenAI-compatible base_url with no key, the way a local model is set up), through the real SDK.
 */
import t from 'tap';
import type { Config } from '../../config/schema.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer } from '../helpers/fake-llm.js';
import { startFakeOpenAi } from '../helpers/fake-openai.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack, type Stack } from '../helpers/stack.js';

const db = await createTestDb('e2e_openai');
await db.pool.query(`
  CREATE TABLE sales (id serial PRIMARY KEY, store text NOT NULL, amount numeric(10,2) NOT NULL, sold_at date NOT NULL);
  INSERT INTO sales (store, amount, sold_at) VALUES
    ('Centrum', 12.50, '2024-01-03'), ('Centrum', 7.25, '2024-01-04'), ('Harbour', 30.00, '2024-01-03'),
    ('Harbour', 4.75, '2024-02-01'), ('Station', 9.00, '2024-02-02');
`);
const fake = await startFakeOpenAi();

function openAiConfig(natsUrl: string, extra: Record<string, unknown> = {}): Config {
  return testConfig({
    natsUrl,
    db: { host: db.host, port: db.port, name: db.name, user: db.user },
    extra: {
      ...extra,
      llm: {
        provider: 'openai',
        // a local OpenAI-compatible server: a base_url and no key
        openai: { api_key: '', base_url: `${fake.url}/v1`, model: 'gpt-small', timeout: 5, max_retries: 1, ...((extra.llm as { openai?: object } | undefined)?.openai ?? {}) },
      },
    },
  });
}

// two stacks, each on its own NATS so their actors never answer each other's requests
const nats = await startNats();
const routedNats = await startNats();
const stack = await startStack(openAiConfig(nats.url, { bus: { prefer_local: false } }));
let routed: Stack | undefined;
t.teardown(async () => {
  await routed?.stop();
  await stack.stop();
  await fake.close();
  await db.drop();
  await routedNats.stop();
  await nats.stop();
});

const BY_STORE = 'SELECT store, sum(amount) AS revenue FROM sales GROUP BY store ORDER BY revenue DESC';

t.beforeEach(() => {
  fake.requests.length = 0;
  fake.fallback(() => ({ status: 500, message: 'unscripted' }));
});

t.test('a question → one chat completion → SQL → the database\'s rows, with token usage', async (t) => {
  fake.script({ text: sqlAnswer(BY_STORE, 'Revenue per store.'), usage: { prompt_tokens: 900, completion_tokens: 40, cached_tokens: 768 } });
  const res = await call(`${stack.url}/api/query`, { body: { question: 'Which store sold the most?' } });
  t.equal(res.status, 200, res.text);
  const b = res.body;
  t.equal(b.intent, 'sql');
  t.equal(b.sql, `${BY_STORE}\nLIMIT 100`);
  t.equal(b.explanation, 'Revenue per store.');
  t.same(b.columns.map((c: { name: string }) => c.name), ['store', 'revenue']);
  const direct = await db.pool.query<{ store: string; revenue: string }>(`${BY_STORE}`);
  t.same(b.rows.map((r: unknown[]) => [r[0], Number(r[1])]), direct.rows.map((r) => [r.store, Number(r.revenue)]), 'the rows are the database\'s');
  t.equal(b.rows[0][0], 'Harbour');
  t.same(b.usage, { input_tokens: 900, output_tokens: 40, cached_input_tokens: 768, llm_calls: 1 });

  t.equal(fake.requests.length, 1);
  const req = fake.requests[0]!;
  t.equal(req.path, '/v1/chat/completions');
  t.equal(req.model, 'gpt-small');
  t.equal(req.messages[0]!.role, 'system');
  t.match(req.system, /sales/, 'the schema is in the system message');
  t.match(req.system, /amount/);
  t.match(req.last, /Which store sold the most\?/);
  t.equal(req.maxTokens, 4096, 'a compatible server gets max_tokens');
  t.equal(req.maxCompletionTokens, undefined);
  t.equal(req.temperature, 0);
  t.equal(req.headers.authorization, 'Bearer not-needed');
});

t.test('self-correction: the database\'s error goes back to the model, the second SQL runs', async (t) => {
  fake.script({ text: sqlAnswer('SELECT store, total_amount FROM sales') }, { text: sqlAnswer('SELECT store, amount FROM sales ORDER BY id') });
  const res = await call(`${stack.url}/api/query`, { body: { question: 'all sales?' } });
  t.equal(res.status, 200, res.text);
  t.equal(res.body.sql, 'SELECT store, amount FROM sales ORDER BY id\nLIMIT 100');
  t.equal(res.body.row_count, 5);
  t.equal(res.body.corrections, 1);
  t.equal(res.body.usage.llm_calls, 2);
  t.equal(fake.requests.length, 2);
  const second = fake.requests[1]!;
  const sent = second.messages.map((m) => m.content).join('\n');
  t.match(sent, /column "total_amount" does not exist/, 'the second request carries the database error');
  t.ok(second.messages.some((m) => m.role === 'assistant' && m.content.includes('total_amount')), 'and the rejected SQL as the model\'s own turn');
});

t.test('the model down: retried, then 503 LLM_UNAVAILABLE', async (t) => {
  fake.fallback(() => ({ status: 503, message: 'overloaded' }));
  const res = await call(`${stack.url}/api/query`, { body: { question: 'Which store sold the most?' } });
  t.equal(res.status, 503, res.text);
  t.equal(res.body.error.code, 'LLM_UNAVAILABLE');
  t.match(res.body.error.message, /openai/);
  t.equal(fake.requests.length, 2, 'max_retries 1: two attempts');
});

t.test('health: the openai LLM is configured by its base_url alone, without a model call; unreachable after the outage above, ok after an answer', async (t) => {
  const down = await call(`${stack.url}/health`);
  t.equal(down.status, 200, down.text);
  t.equal(down.body.llm, 'unreachable', 'the test before had every attempt refused');
  t.equal(fake.requests.length, 0, 'health made no model call');
  fake.script({ text: sqlAnswer(BY_STORE, 'Revenue per store.') });
  const answered = await call(`${stack.url}/api/query`, { body: { question: 'Which store sold the most?' } });
  t.equal(answered.status, 200, answered.text);
  const calls = fake.requests.length;
  const res = await call(`${stack.url}/health`);
  t.equal(res.status, 200, res.text);
  t.equal(res.body.llm, 'ok');
  t.equal(res.body.details.llm.provider, 'openai');
  t.equal(fake.requests.length, calls, 'health made no model call');
});

t.test('routing: intent on one model, SQL on another, chat on the default; each request names its model', async (t) => {
  routed = await startStack(
    openAiConfig(routedNats.url, {
      model_routing: { sql: 'openai:gpt-big' },
      llm: { openai: { model_routing: { intent_detection: 'gpt-intent' } } },
    }),
  );
  fake.fallback((req) => {
    if (req.model === 'gpt-intent') return { text: /hello/i.test(req.last) ? 'INTENT: chat\nCONFIDENCE: 0.9' : 'INTENT: sql\nCONFIDENCE: 0.9' };
    if (req.model === 'gpt-big') return { text: sqlAnswer(BY_STORE) };
    if (req.model === 'gpt-small') return { text: 'Hello! Ask me about sales.' };
    return { status: 404, message: `The model ${req.model} does not exist` };
  });

  const res = await call(`${routed.url}/api/query`, { body: { question: 'Which store sold the most?' } });
  t.equal(res.status, 200, res.text);
  t.equal(res.body.rows[0][0], 'Harbour');
  t.equal(res.body.usage.llm_calls, 2, 'routing split intent and SQL: two calls');
  t.same(fake.requests.map((r) => r.model), ['gpt-intent', 'gpt-big']);
  t.equal(fake.requests[0]!.maxTokens, 64, 'the intent call asks for a short answer');

  fake.requests.length = 0;
  const chat = await call(`${routed.url}/api/query`, { body: { question: 'hello there' } });
  t.equal(chat.status, 200, chat.text);
  t.equal(chat.body.intent, 'chat');
  t.equal(chat.body.message, 'Hello! Ask me about sales.');
  t.same(fake.requests.map((r) => r.model), ['gpt-intent', 'gpt-small'], 'chat on the section\'s model');
});

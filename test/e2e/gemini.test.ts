/**
 * Questions end to end through POST /api/query on Gemini — every actor, a real PostgreSQL,
 * and a local server speaking the Gemini API, through the real @google/genai SDK:
 *   - llm.provider: gemini answers the whole question in one call;
 *   - llm.provider: anthropic with the top-level model_routing sending intent detection and
 *     chat to gemini: the assistant makes two calls, and each fake sees only its own task.
 */
import t from 'tap';
import type { Config } from '../../config/schema.js';
import { testConfig } from '../helpers/config.js';
import { startFakeGemini } from '../helpers/fake-gemini.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack, type Stack } from '../helpers/stack.js';

process.env.METADATA_SERVER_DETECTION ??= 'none';

const db = await createTestDb('e2e_gemini');
await db.pool.query(`
  CREATE TABLE sales (id serial PRIMARY KEY, store text NOT NULL, amount numeric(10,2) NOT NULL, sold_at date NOT NULL);
  INSERT INTO sales (store, amount, sold_at) VALUES
    ('Centrum', 12.50, '2024-01-03'), ('Centrum', 7.25, '2024-01-04'), ('Harbour', 30.00, '2024-01-03'),
    ('Harbour', 4.75, '2024-02-01'), ('Station', 9.00, '2024-02-02');
`);
const gemini = await startFakeGemini();
const anthropic = await startFakeLlm();

function config(natsUrl: string, extra: Record<string, unknown>): Config {
  return testConfig({
    natsUrl,
    db: { host: db.host, port: db.port, name: db.name, user: db.user },
    llmUrl: anthropic.url,
    extra: {
      // every hop over NATS, so each contract is exercised on the wire
      bus: { prefer_local: false },
      ...extra,
      llm: {
        ...(extra.llm as object | undefined),
        gemini: { api_key: 'gemini-e2e-key', base_url: gemini.url, model: 'gemini-main', timeout: 5, max_retries: 1 },
      },
    },
  });
}

// two stacks, each on its own NATS so their actors never answer each other's requests
const nats = await startNats();
const routedNats = await startNats();
const stack = await startStack(config(nats.url, { llm: { provider: 'gemini' } }));
const routed: Stack = await startStack(config(routedNats.url, { model_routing: { intent_detection: 'gemini:gemini-fast', chat: 'gemini' } }));
t.teardown(async () => {
  await routed.stop();
  await stack.stop();
  await gemini.close();
  await anthropic.close();
  await db.drop();
  await routedNats.stop();
  await nats.stop();
});

const BY_STORE = 'SELECT store, sum(amount) AS revenue FROM sales GROUP BY store ORDER BY revenue DESC';

t.beforeEach(() => {
  gemini.requests.length = 0;
  anthropic.requests.length = 0;
  gemini.fallback(() => ({ status: 500, message: 'unscripted' }));
  anthropic.fallback(() => ({ status: 500, message: 'unscripted' }));
});

t.test('llm.provider gemini: a question → one generateContent → SQL → the database\'s rows', async (t) => {
  gemini.script({ text: sqlAnswer(BY_STORE, 'Revenue per store, best first.'), usage: { promptTokenCount: 700, candidatesTokenCount: 30, cachedContentTokenCount: 512 } });
  const res = await call(`${stack.url}/api/query`, { body: { question: 'Which store sold the most?' } });
  t.equal(res.status, 200, res.text);
  const b = res.body;
  t.equal(b.intent, 'sql');
  t.equal(b.sql, `${BY_STORE}\nLIMIT 100`);
  t.equal(b.explanation, 'Revenue per store, best first.');
  t.same(b.columns.map((c: { name: string }) => c.name), ['store', 'revenue']);
  t.same(b.rows, [['Harbour', 34.75], ['Centrum', 19.75], ['Station', 9]], 'the database\'s rows');
  t.same(b.usage, { input_tokens: 700, output_tokens: 30, cached_input_tokens: 512, llm_calls: 1 });

  t.equal(gemini.requests.length, 1);
  t.equal(anthropic.requests.length, 0);
  const req = gemini.requests[0]!;
  t.equal(req.model, 'gemini-main');
  t.equal(req.apiKey, 'gemini-e2e-key');
  t.match(req.system, /sales/, 'the schema is in the system instruction');
  t.match(req.system, /amount/);
  t.match(req.system, /PostgreSQL/);
  t.match(req.last, /Which store sold the most\?/, 'the question is the user turn');
  t.notMatch(req.system, /Which store sold the most/, 'the question is not in the stable prefix');
});

t.test('llm.provider gemini: the provider down → 503 LLM_UNAVAILABLE after the retries', async (t) => {
  gemini.fallback(() => ({ status: 503 }));
  const res = await call(`${stack.url}/api/query`, { body: { question: 'Which store sold the most?' } });
  t.equal(res.status, 503, res.text);
  t.equal(res.body.error.code, 'LLM_UNAVAILABLE');
  t.match(res.body.error.message, /gemini/);
  t.equal(gemini.requests.length, 2);
});

t.test('routing: intent detection on gemini, SQL on anthropic — two calls, each to its own provider', async (t) => {
  gemini.script({ text: 'INTENT: sql\nCONFIDENCE: 0.93', usage: { promptTokenCount: 200, candidatesTokenCount: 8 } });
  anthropic.script({ text: sqlAnswer(BY_STORE), usage: { input_tokens: 600, output_tokens: 40 } });
  const res = await call(`${routed.url}/api/query`, { body: { question: 'Which store sold the most?' } });
  t.equal(res.status, 200, res.text);
  const b = res.body;
  t.equal(b.intent, 'sql');
  t.same(b.rows, [['Harbour', 34.75], ['Centrum', 19.75], ['Station', 9]]);
  t.equal(b.usage.llm_calls, 2, 'intent and SQL in two calls');
  t.equal(b.usage.input_tokens, 800, 'both calls counted');
  t.equal(b.usage.output_tokens, 48);
  t.type(b.timing_ms.intent, 'number');

  t.equal(gemini.requests.length, 1, 'gemini got one call');
  const intent = gemini.requests[0]!;
  t.equal(intent.model, 'gemini-fast', 'the model named in the route');
  t.match(intent.system, /Classify the user's message/, 'gemini got the intent prompt');
  t.notMatch(intent.system, /turn business questions into one/, 'and not the SQL prompt');
  t.match(intent.last, /Which store sold the most\?/);
  t.equal(intent.maxOutputTokens, 64, 'the intent budget');

  t.equal(anthropic.requests.length, 1, 'anthropic got one call');
  const sql = anthropic.requests[0]!;
  t.equal(sql.model, 'claude-test');
  t.match(sql.system, /turn business questions into one PostgreSQL query/, 'anthropic got the SQL prompt');
  t.notMatch(sql.system, /Classify the user's message/);
  t.match(sql.last, /Which store sold the most\?/);
});

t.test('routing: a chat message stays on gemini — intent, then the reply; anthropic is never called', async (t) => {
  gemini.script({ text: 'INTENT: chat\nCONFIDENCE: 0.99' }, { text: 'Hello! Ask me about sales per store.' });
  const res = await call(`${routed.url}/api/query`, { body: { question: 'hi there' } });
  t.equal(res.status, 200, res.text);
  t.equal(res.body.intent, 'chat');
  t.equal(res.body.message, 'Hello! Ask me about sales per store.');
  t.equal(res.body.usage.llm_calls, 2);
  t.equal(gemini.requests.length, 2);
  t.equal(gemini.requests[0]!.model, 'gemini-fast', 'intent on the routed model');
  t.equal(gemini.requests[1]!.model, 'gemini-main', 'chat routed to the provider only: its model');
  t.match(gemini.requests[1]!.system, /data barista/, 'the personality answers');
  t.equal(anthropic.requests.length, 0);
});

t.test('llm.provider vertexai: a service-account login, then a question → the database\'s rows', async (t) => {
  const { generateKeyPairSync } = await import('node:crypto');
  const keys = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
  gemini.trustKey(keys.publicKey);
  const sa = {
    type: 'service_account', project_id: 'cortado-e2e', private_key_id: 'k1', private_key: keys.privateKey,
    client_email: 'cortado@cortado-e2e.iam.gserviceaccount.com', client_id: '42', token_uri: gemini.tokenUri,
  };
  const vNats = await startNats();
  const vStack = await startStack(testConfig({
    natsUrl: vNats.url,
    db: { host: db.host, port: db.port, name: db.name, user: db.user },
    extra: {
      llm: {
        provider: 'vertexai',
        vertexai: { project_id: 'cortado-e2e', location: 'europe-west4', credentials_json: JSON.stringify(sa), base_url: gemini.url, model: 'gemini-vertex', timeout: 5, max_retries: 1 },
      },
    },
  }));
  t.teardown(async () => {
    await vStack.stop();
    await vNats.stop();
  });
  gemini.script({ text: sqlAnswer(BY_STORE) });
  const res = await call(`${vStack.url}/api/query`, { body: { question: 'Which store sold the most?' } });
  t.equal(res.status, 200, res.text);
  t.same(res.body.rows, [['Harbour', 34.75], ['Centrum', 19.75], ['Station', 9]]);
  const req = gemini.requests.at(-1)!;
  t.equal(req.model, 'gemini-vertex');
  t.equal(req.api, 'vertex');
  t.equal(req.project, 'cortado-e2e');
  t.equal(req.location, 'europe-west4');
  t.match(req.headers.authorization, /^Bearer /, 'the token from the service-account login');
  t.ok(gemini.tokenRequests.length >= 1, 'a token was fetched from the service account\'s token_uri');
  const health = await call(`${vStack.url}/health`);
  t.equal(health.body.llm, 'ok');
  t.notMatch(health.text, /PRIVATE KEY/);
});

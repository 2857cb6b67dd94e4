/**
 * The LLM gateway on the `gemini` (API key) and `vertexai` (Google Cloud credentials)
 * providers, through the real @google/genai SDK against a local server speaking the Gemini
 * wire format, which also plays the OAuth token endpoint of a throwaway service account.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { complete, status, type LlmDeps } from '../../actors/llm/handle.js';
import { startFakeGemini } from '../helpers/fake-gemini.js';
import { testConfig } from '../helpers/config.js';

// keep google-auth-library off the metadata server when run outside scripts/test.sh
process.env.METADATA_SERVER_DETECTION ??= 'none';

const fake = await startFakeGemini();
const dir = await mkdtemp(join(tmpdir(), 'cortado-gemini-'));
t.teardown(async () => {
  await fake.close();
  await rm(dir, { recursive: true, force: true });
});
const log = createLogger({ svc: 'test', level: 'silent' });

const keys = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
});
fake.trustKey(keys.publicKey);
const serviceAccount = (privateKey = keys.privateKey) => ({
  type: 'service_account',
  project_id: 'cortado-test',
  private_key_id: 'test-key-id',
  private_key: privateKey,
  client_email: 'cortado@cortado-test.iam.gserviceaccount.com',
  client_id: '1234567890',
  token_uri: fake.tokenUri,
});

function deps(llm: Record<string, unknown>): LlmDeps {
  const config = testConfig({ natsUrl: 'nats://127.0.0.1:1', extra: { llm } });
  return { config, log, providers: new Map(), policy: { baseBackoffMs: 20 } };
}
const gemini = (extra: Record<string, unknown> = {}) =>
  deps({ provider: 'gemini', gemini: { api_key: 'gemini-secret-key', model: 'gemini-test', base_url: fake.url, timeout: 5, max_retries: 1, max_tokens: 900, temperature: 0.3, ...extra } });
const vertex = (extra: Record<string, unknown> = {}) =>
  deps({ provider: 'vertexai', vertexai: { project_id: 'cortado-test', location: 'europe-west4', model: 'gemini-vertex', base_url: fake.url, timeout: 5, max_retries: 1, ...extra } });

const ctx = { requestId: 'r-gemini' };
const ask = {
  task: 'sql' as const,
  system: 'SYSTEM PART with the schema',
  messages: [
    { role: 'user' as const, content: 'which store sold most?' },
    { role: 'assistant' as const, content: 'SELECT store FROM sales' },
    { role: 'user' as const, content: 'and by month?' },
  ],
};

async function failure(p: Promise<unknown>): Promise<CortadoError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  if (!(err instanceof CortadoError)) throw new Error(`expected a CortadoError, got ${String(err)}`);
  return err;
}

t.beforeEach(() => {
  fake.requests.length = 0;
  fake.tokenRequests.length = 0;
  fake.failTokens(null);
  fake.fallback(() => ({ status: 500, message: 'unscripted' }));
});

t.test('gemini: the prompt arrives as system instruction, contents and generation config; usage is mapped', async (t) => {
  fake.script({ text: 'hello', usage: { promptTokenCount: 100, candidatesTokenCount: 3, cachedContentTokenCount: 60, thoughtsTokenCount: 2 } });
  const reply = await complete(ask, gemini(), ctx);
  t.equal(reply.text, 'hello');
  t.equal(reply.provider, 'gemini');
  t.equal(reply.model, 'gemini-test');
  t.same(reply.usage, { input_tokens: 100, output_tokens: 5, cached_input_tokens: 60, llm_calls: 1 }, 'thinking counts as output, cached is part of input');
  t.equal(reply.attempts, 1);
  t.equal(fake.requests.length, 1);
  const req = fake.requests[0]!;
  t.equal(req.api, 'gemini');
  t.equal(req.path, '/v1beta/models/gemini-test:generateContent');
  t.equal(req.system, 'SYSTEM PART with the schema');
  t.same(req.contents, [
    { role: 'user', text: 'which store sold most?' },
    { role: 'model', text: 'SELECT store FROM sales' },
    { role: 'user', text: 'and by month?' },
  ], 'assistant turns become model turns');
  t.equal(req.maxOutputTokens, 900);
  t.equal(req.temperature, 0.3);
  t.equal(req.apiKey, 'gemini-secret-key', 'the key goes in x-goog-api-key');
  t.notOk(req.bearer);
});

t.test('gemini: a task budget below max_tokens is what is sent; per-task model routing applies', async (t) => {
  fake.script({ text: 'INTENT: sql' });
  const reply = await complete({ ...ask, task: 'intent_detection', max_tokens: 64 }, gemini({ model_routing: { intent_detection: 'gemini-small' } }), ctx);
  t.equal(reply.model, 'gemini-small');
  t.equal(fake.requests[0]!.model, 'gemini-small');
  t.equal(fake.requests[0]!.maxOutputTokens, 64);
});

t.test('gemini: 429 is retried after the RetryInfo delay, then succeeds', async (t) => {
  fake.script({ status: 429, retryDelay: '0.3s' }, { text: 'after waiting' });
  const started = Date.now();
  const reply = await complete(ask, gemini(), ctx);
  t.equal(reply.text, 'after waiting');
  t.equal(reply.attempts, 2);
  t.equal(fake.requests.length, 2);
  t.ok(Date.now() - started >= 280, `waited for the server's retryDelay (${Date.now() - started} ms)`);
});

t.test('gemini: a retry-after header is honoured too', async (t) => {
  fake.script({ status: 503, headers: { 'retry-after': '1' } }, { text: 'later' });
  const started = Date.now();
  const reply = await complete(ask, gemini(), ctx);
  t.equal(reply.text, 'later');
  t.ok(Date.now() - started >= 950, `waited a second (${Date.now() - started} ms)`);
});

t.test('gemini: 500 on every attempt → LLM_UNAVAILABLE after the retries', async (t) => {
  fake.fallback(() => ({ status: 500 }));
  const err = await failure(complete(ask, gemini(), ctx));
  t.equal(err.code, 'LLM_UNAVAILABLE');
  t.match(err.message, /\(gemini\).*failed \(500\), after 2 attempts/);
  t.equal(err.details?.status, 500);
  t.equal(fake.requests.length, 2, 'max_retries 1: two attempts, none by the SDK itself');
});

t.test('gemini: no answer in time → retried, then LLM_UNAVAILABLE', async (t) => {
  fake.fallback(() => ({ hang: true }));
  const started = Date.now();
  const err = await failure(complete(ask, gemini({ timeout: 1 }), ctx));
  t.equal(err.code, 'LLM_UNAVAILABLE');
  t.match(err.message, /no answer (within 1 s|in time), after 2 attempts/);
  t.equal(fake.requests.length, 2);
  t.ok(Date.now() - started < 4_000, `gave up after two attempts of 1 s (${Date.now() - started} ms)`);
});

t.test('gemini: 401 is not retried and never shows the key', async (t) => {
  fake.fallback(() => ({ status: 401, message: 'Request had invalid authentication credentials.' }));
  const err = await failure(complete(ask, gemini(), ctx));
  t.equal(err.code, 'LLM_UNAVAILABLE');
  t.match(err.message, /credentials were refused \(401\)/);
  t.notMatch(err.message, /gemini-secret-key/);
  t.equal(fake.requests.length, 1);
});

t.test('gemini: a bad key (400 API_KEY_INVALID, as the Gemini API answers) is not retried', async (t) => {
  fake.fallback(() => ({ status: 400, message: 'API key not valid. Please pass a valid API key.', reason: 'API_KEY_INVALID' }));
  const err = await failure(complete(ask, gemini(), ctx));
  t.match(err.message, /API key or credentials were refused \(400\)/);
  t.equal(fake.requests.length, 1);
});

t.test('gemini: another 400 says what the provider objected to', async (t) => {
  fake.fallback(() => ({ status: 400, message: 'temperature must be in [0, 2]' }));
  const err = await failure(complete(ask, gemini(), ctx));
  t.match(err.message, /refused the request \(400\): temperature must be in \[0, 2\]/);
  t.equal(fake.requests.length, 1);
});

for (const [name, reply, expected] of [
  ['a reply withheld for safety', { noText: true, finishReason: 'SAFETY' }, /withheld by the provider \(finishReason SAFETY\)/],
  ['a blocked prompt', { noText: true, blockReason: 'PROHIBITED_CONTENT' }, /prompt was blocked .*PROHIBITED_CONTENT/],
  ['a reply that spent max_tokens thinking', { noText: true, finishReason: 'MAX_TOKENS', thoughtsTokenCount: 64 }, /max_tokens before any text \(64 of them spent thinking\)/],
] as const) {
  t.test(`gemini: ${name} → LLM_UNAVAILABLE at once, saying why`, async (t) => {
    fake.fallback(() => reply);
    const err = await failure(complete(ask, gemini(), ctx));
    t.equal(err.code, 'LLM_UNAVAILABLE');
    t.match(err.message, expected);
    t.equal(fake.requests.length, 1, 'not retried: the same prompt gets the same verdict');
  });
}

t.test('gemini: a server that is not there → retried as a network error', async (t) => {
  const err = await failure(complete(ask, gemini({ base_url: 'http://127.0.0.1:1' }), ctx));
  t.equal(err.code, 'LLM_UNAVAILABLE');
  t.match(err.message, /cannot connect, after 2 attempts/);
});

t.test('gemini: without a key the status says which key, and a call makes no HTTP', async (t) => {
  const d = gemini({ api_key: '' });
  const s = await status(d);
  t.equal(s.configured, false);
  t.equal(s.provider, 'gemini');
  t.match(s.reason, /llm\.gemini\.api_key/);
  const err = await failure(complete(ask, d, ctx));
  t.match(err.message, /not configured/);
  t.equal(fake.requests.length, 0);
  t.equal((await status(gemini())).configured, true);
});

t.test('vertexai: inline credentials_json → a token from its token_uri, sent as Bearer on generateContent', async (t) => {
  fake.script({ text: 'from vertex', usage: { promptTokenCount: 40, candidatesTokenCount: 4 } }, { text: 'again' });
  const d = vertex({ credentials_json: JSON.stringify(serviceAccount()) });
  t.equal((await status(d)).configured, true);
  const reply = await complete(ask, d, ctx);
  t.equal(reply.text, 'from vertex');
  t.equal(reply.provider, 'vertexai');
  t.same(reply.usage, { input_tokens: 40, output_tokens: 4, cached_input_tokens: 0, llm_calls: 1 });

  t.equal(fake.tokenRequests.length, 1, 'one token request');
  const tok = fake.tokenRequests[0]!;
  t.equal(tok.grantType, 'urn:ietf:params:oauth:grant-type:jwt-bearer');
  t.equal(tok.claims.iss, 'cortado@cortado-test.iam.gserviceaccount.com');
  t.match(String(tok.claims.scope), /cloud-platform/);
  t.equal(tok.signatureValid, true, 'signed with the service account private key');

  const req = fake.requests[0]!;
  t.equal(req.api, 'vertex');
  t.equal(req.path, '/v1beta1/projects/cortado-test/locations/europe-west4/publishers/google/models/gemini-vertex:generateContent');
  t.equal(req.bearer, tok.token, 'the token is the Bearer');
  t.notOk(req.apiKey);
  t.equal(req.system, 'SYSTEM PART with the schema');
  t.equal(req.last, 'and by month?');
  t.equal(req.maxOutputTokens, 4096, 'the section default');

  // the provider (and its token) is reused for the next call
  await complete(ask, d, ctx);
  t.equal(fake.tokenRequests.length, 1, 'the token is cached');
  t.equal(fake.requests[1]!.bearer, tok.token);
});

t.test('vertexai: credentials_path → the same flow from a file', async (t) => {
  const path = join(dir, 'sa.json');
  await writeFile(path, JSON.stringify(serviceAccount()), { mode: 0o600 });
  fake.script({ text: 'from a file' });
  const reply = await complete(ask, vertex({ credentials_path: path }), ctx);
  t.equal(reply.text, 'from a file');
  t.equal(fake.tokenRequests.length, 1);
  t.equal(fake.tokenRequests[0]!.signatureValid, true);
  t.equal(fake.requests[0]!.bearer, fake.tokenRequests[0]!.token);
});

t.test('vertexai: the generateContent errors map the same way (429 retried, 403 not)', async (t) => {
  const d = vertex({ credentials_json: JSON.stringify(serviceAccount()) });
  fake.script({ status: 429 }, { text: 'second try' });
  const ok = await complete(ask, d, ctx);
  t.equal(ok.attempts, 2);
  fake.requests.length = 0;
  fake.fallback(() => ({ status: 403, message: 'Permission denied on resource project cortado-test.' }));
  const err = await failure(complete(ask, d, ctx));
  t.match(err.message, /may not use this model or project \(403\)/);
  t.equal(fake.requests.length, 1);
});

t.test('vertexai: a token refused (key not trusted) → LLM_UNAVAILABLE, not retried, no generateContent', async (t) => {
  const other = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
  const err = await failure(complete(ask, vertex({ credentials_json: JSON.stringify(serviceAccount(other.privateKey)) }), ctx));
  t.equal(err.code, 'LLM_UNAVAILABLE');
  t.match(err.message, /no access token for the credentials \(400\).*invalid_grant/);
  t.notMatch(err.message, /PRIVATE KEY/);
  t.equal(fake.requests.length, 0, 'never called the model');
  t.equal(fake.tokenRequests.length, 1, 'not retried');
});

t.test('vertexai: a token endpoint failing with 500 is retried once per attempt, never by the auth library', async (t) => {
  fake.failTokens(500);
  const err = await failure(complete(ask, vertex({ credentials_json: JSON.stringify(serviceAccount()) }), ctx));
  t.equal(err.code, 'LLM_UNAVAILABLE');
  t.match(err.message, /no access token for the credentials \(500\).*after 2 attempts/);
  t.equal(err.details?.status, 500);
  t.equal(fake.tokenRequests.length, 2, 'max_retries 1: two token requests in all');
  t.equal(fake.requests.length, 0);
});

t.test('vertexai: a token endpoint that never answers is bounded by the call timeout', async (t) => {
  fake.failTokens('hang');
  const started = Date.now();
  const err = await failure(complete(ask, vertex({ credentials_json: JSON.stringify(serviceAccount()), timeout: 1 }), ctx));
  t.equal(err.code, 'LLM_UNAVAILABLE');
  t.ok(Date.now() - started < 5_000, `gave up in time (${Date.now() - started} ms)`);
  t.equal(fake.requests.length, 0);
});

t.test('vertexai: what is missing shows in the status, without secrets', async (t) => {
  const noProject = await status(vertex({ project_id: '', credentials_json: JSON.stringify(serviceAccount()) }));
  t.equal(noProject.configured, false);
  t.match(noProject.reason, /llm\.vertexai\.project_id/);

  const badJson = await status(vertex({ credentials_json: '{"private_key": "-----BEGIN PRIVATE KEY-----\\nabc' }));
  t.equal(badJson.configured, false);
  t.match(badJson.reason, /credentials_json is not a JSON object/);
  t.notMatch(badJson.reason, /PRIVATE KEY/);

  const missing = await status(vertex({ credentials_path: join(dir, 'nope.json') }));
  t.equal(missing.configured, false);
  t.match(missing.reason, /cannot read llm\.vertexai\.credentials_path .*ENOENT/);

  const err = await failure(complete(ask, vertex({ project_id: '' }), ctx));
  t.match(err.message, /not configured/);
  t.equal(fake.requests.length + fake.tokenRequests.length, 0);
});

const adcSkip = process.env.GOOGLE_APPLICATION_CREDENTIALS ? 'GOOGLE_APPLICATION_CREDENTIALS is set on this machine' : false;
t.test('vertexai: no credentials configured → Application Default Credentials; none found is a clear failure', { skip: adcSkip }, async (t) => {
  const d = vertex();
  t.equal((await status(d)).configured, true, 'a project is enough to try ADC');
  const err = await failure(complete(ask, d, ctx));
  t.equal(err.code, 'LLM_UNAVAILABLE');
  t.match(err.message, /default credentials/i);
  t.equal(fake.requests.length, 0);
});

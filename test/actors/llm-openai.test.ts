/**
 * The `openai` provider through the LLM gateway, against a local server speaking OpenAI's
 * Chat Completions API, with the real `openai` SDK: request shape for OpenAI's endpoint and
 * for OpenAI-compatible servers, usage with cached tokens, keys, retries, timeouts, errors.
 */
import t from 'tap';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { complete, status, type LlmDeps } from '../../actors/llm/handle.js';
import { createOpenAiProvider, isOpenAiEndpoint, isReasoningModel } from '../../actors/llm/providers/openai.js';
import { LlmAttemptError } from '../../actors/llm/providers/provider.js';
import { startFakeOpenAi } from '../helpers/fake-openai.js';
import { testConfig } from '../helpers/config.js';
import type { Config } from '../../config/schema.js';

const fake = await startFakeOpenAi();
t.teardown(() => fake.close());
const log = createLogger({ svc: 'test', level: 'silent' });
const KEY = 'sk-test-openai-1234567890';

function config(openai: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): Config {
  return testConfig({
    natsUrl: 'nats://127.0.0.1:1',
    extra: {
      ...extra,
      llm: { provider: 'openai', openai: { api_key: KEY, base_url: `${fake.url}/v1`, model: 'gpt-test', timeout: 5, max_retries: 1, temperature: 0.2, max_tokens: 777, ...openai } },
    },
  });
}

function deps(openai: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): LlmDeps {
  return { config: config(openai, extra), log, providers: new Map(), policy: { baseBackoffMs: 20 } };
}

const ctx = { requestId: 'r-openai' };
const ask = { task: 'sql' as const, system: 'SYSTEM PART with the schema', messages: [{ role: 'user' as const, content: 'which store sold most?' }] };

async function failure(p: Promise<unknown>): Promise<CortadoError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  if (!(err instanceof CortadoError)) throw new Error(`expected a CortadoError, got ${String(err)}`);
  return err;
}

t.beforeEach(() => {
  fake.requests.length = 0;
  fake.fallback(() => ({ status: 500, message: 'unscripted' }));
});

t.test('a call: system message first, model, max_tokens and temperature for a compatible server, usage with cached tokens', async (t) => {
  fake.script({ text: 'hello', usage: { prompt_tokens: 120, completion_tokens: 7, cached_tokens: 100 } });
  const reply = await complete(ask, deps(), ctx);
  t.equal(reply.text, 'hello');
  t.equal(reply.provider, 'openai');
  t.equal(reply.model, 'gpt-test');
  t.same(reply.usage, { input_tokens: 120, output_tokens: 7, cached_input_tokens: 100, llm_calls: 1 });
  t.equal(reply.attempts, 1);
  t.equal(fake.requests.length, 1);
  const req = fake.requests[0]!;
  t.equal(req.path, '/v1/chat/completions');
  t.equal(req.model, 'gpt-test');
  t.same(req.messages, [
    { role: 'system', content: 'SYSTEM PART with the schema' },
    { role: 'user', content: 'which store sold most?' },
  ]);
  t.equal(req.maxTokens, 777, 'a compatible server gets max_tokens');
  t.equal(req.maxCompletionTokens, undefined, 'and not max_completion_tokens');
  t.equal(req.temperature, 0.2);
  t.equal(req.stream, false);
  t.equal(req.headers.authorization, `Bearer ${KEY}`);
});

t.test('a request max_tokens below the section\'s is what is sent; history keeps its roles', async (t) => {
  fake.script({ text: 'ok' });
  await complete(
    {
      task: 'sql',
      system: 'S',
      max_tokens: 64,
      messages: [
        { role: 'user', content: 'first question' },
        { role: 'assistant', content: 'first answer' },
        { role: 'user', content: 'follow-up' },
      ],
    },
    deps(),
    ctx,
  );
  const req = fake.requests[0]!;
  t.equal(req.maxTokens, 64);
  t.same(req.messages.map((m) => m.role), ['system', 'user', 'assistant', 'user']);
  t.equal(req.messages[2]!.content, 'first answer');
  t.equal(req.last, 'follow-up');
});

t.test('a base_url without /v1 is used as given: the SDK posts to <base_url>/chat/completions', async (t) => {
  fake.script({ text: 'root' });
  const reply = await complete(ask, deps({ base_url: fake.url }), ctx);
  t.equal(reply.text, 'root');
  t.equal(fake.requests[0]!.path, '/chat/completions');
});

t.test('a base_url without a key (a local server): configured, a placeholder key is sent, missing usage counts as zero', async (t) => {
  const d = deps({ api_key: '' });
  t.same(await status(d), { configured: true, provider: 'openai', model: 'gpt-test' });
  fake.script({ text: 'local answer', usage: null });
  const reply = await complete(ask, d, ctx);
  t.equal(reply.text, 'local answer');
  t.same(reply.usage, { input_tokens: 0, output_tokens: 0, cached_input_tokens: 0, llm_calls: 1 });
  t.equal(fake.requests[0]!.headers.authorization, 'Bearer not-needed');
});

t.test('OpenAI\'s own endpoint: max_completion_tokens, the organization, no temperature for reasoning models', async (t) => {
  const seen: string[] = [];
  // the real SDK with its default base URL, its requests redirected to the fake
  const redirect = ((input: string | URL | Request, init?: RequestInit) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    seen.push(url);
    return fetch(url.replace('https://api.openai.com', fake.url), init);
  }) as typeof fetch;
  const section = config({ base_url: '', organization: 'org-cortado' }).llm.openai;
  const provider = createOpenAiProvider(section, { fetch: redirect });
  t.same(provider.status(), { configured: true });

  fake.script({ text: 'a' }, { text: 'b' }, { text: 'c' });
  const base = { system: 'SYS', messages: [{ role: 'user' as const, content: 'q' }], maxTokens: 300, temperature: 0.3 };
  await provider.complete({ ...base, model: 'gpt-4.1-mini', signal: AbortSignal.timeout(5_000) });
  await provider.complete({ ...base, model: 'o4-mini', signal: AbortSignal.timeout(5_000) });
  await provider.complete({ ...base, model: 'gpt-5-mini', signal: AbortSignal.timeout(5_000) });

  t.same(seen, Array(3).fill('https://api.openai.com/v1/chat/completions'));
  const [gpt41, o4, gpt5] = fake.requests;
  t.equal(gpt41!.maxCompletionTokens, 300, 'OpenAI gets max_completion_tokens');
  t.equal(gpt41!.maxTokens, undefined, 'and not the deprecated max_tokens');
  t.equal(gpt41!.temperature, 0.3);
  t.equal(gpt41!.headers['openai-organization'], 'org-cortado');
  t.equal(gpt41!.headers.authorization, `Bearer ${KEY}`);
  t.equal(o4!.temperature, undefined, 'o-series: no temperature');
  t.equal(o4!.maxCompletionTokens, 300);
  t.equal(gpt5!.temperature, undefined, 'gpt-5: no temperature');
});

t.test('OPENAI_* environment variables do not override the configuration', async (t) => {
  const saved = { org: process.env.OPENAI_ORG_ID, base: process.env.OPENAI_BASE_URL, project: process.env.OPENAI_PROJECT_ID };
  process.env.OPENAI_ORG_ID = 'org-from-env';
  process.env.OPENAI_BASE_URL = 'http://127.0.0.1:1/v1';
  process.env.OPENAI_PROJECT_ID = 'proj-from-env';
  t.teardown(() => {
    for (const [k, v] of [['OPENAI_ORG_ID', saved.org], ['OPENAI_BASE_URL', saved.base], ['OPENAI_PROJECT_ID', saved.project]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
  fake.script({ text: 'ok' });
  await complete(ask, deps(), ctx);
  const req = fake.requests[0]!;
  t.equal(req.headers['openai-organization'], undefined);
  t.equal(req.headers['openai-project'], undefined);
});

t.test('429 with retry-after is retried after the server\'s wait, then succeeds', async (t) => {
  fake.script({ status: 429, message: 'Rate limit reached', headers: { 'retry-after-ms': '300' } }, { text: 'after waiting' });
  const started = Date.now();
  const reply = await complete(ask, deps(), ctx);
  t.equal(reply.text, 'after waiting');
  t.equal(reply.attempts, 2);
  t.equal(fake.requests.length, 2);
  t.ok(Date.now() - started >= 280, 'waited for the server');
});

t.test('429 and 500 are retried, then succeed', async (t) => {
  fake.script({ status: 429 }, { status: 500 }, { text: 'third time' });
  const reply = await complete(ask, deps({ max_retries: 2 }), ctx);
  t.equal(reply.text, 'third time');
  t.equal(reply.attempts, 3);
});

for (const retries of [1, 2]) {
  t.test(`500 on every attempt → LLM_UNAVAILABLE after 1 + ${retries} attempts`, async (t) => {
    fake.fallback(() => ({ status: 500, message: 'The server had an error while processing your request.' }));
    const err = await failure(complete(ask, deps({ max_retries: retries }), ctx));
    t.equal(err.code, 'LLM_UNAVAILABLE');
    t.match(err.message, new RegExp(`failed \\(500\\), after ${retries + 1} attempts`));
    t.equal(err.details?.status, 500);
    t.equal(err.details?.provider, 'openai');
    t.equal(fake.requests.length, retries + 1);
  });
}

t.test('no answer in time → retried, then LLM_UNAVAILABLE', async (t) => {
  fake.fallback(() => ({ hang: true }));
  const started = Date.now();
  const err = await failure(complete(ask, deps({ timeout: 1 }), ctx));
  t.equal(err.code, 'LLM_UNAVAILABLE');
  t.match(err.message, /no answer within 1 s/);
  t.equal(fake.requests.length, 2);
  t.ok(Date.now() - started < 5_000, 'gave up after two attempts of 1 s');
});

t.test('a server that is not there: retried as a connection error', async (t) => {
  const err = await failure(complete(ask, deps({ base_url: 'http://127.0.0.1:1/v1' }), ctx));
  t.equal(err.code, 'LLM_UNAVAILABLE');
  t.match(err.message, /cannot connect, after 2 attempts/);
});

t.test('401 is not retried, says the key was refused, and never shows the key', async (t) => {
  fake.fallback(() => ({ status: 401, message: `Incorrect API key provided: ${KEY}.`, code: 'invalid_api_key' }));
  const err = await failure(complete(ask, deps(), ctx));
  t.equal(err.code, 'LLM_UNAVAILABLE');
  t.match(err.message, /API key was refused \(401\)/);
  t.notMatch(err.message, /sk-test/);
  t.equal(JSON.stringify(err.details).includes(KEY), false);
  t.equal(fake.requests.length, 1, 'not retried');
});

for (const [statusCode, pattern] of [
  [403, /may not use this model/],
  [404, /model or endpoint was not found \(404\).*llm\.openai\.model/],
] as const) {
  t.test(`${statusCode} is not retried and says why`, async (t) => {
    fake.fallback(() => ({ status: statusCode }));
    const err = await failure(complete(ask, deps(), ctx));
    t.equal(err.code, 'LLM_UNAVAILABLE');
    t.match(err.message, pattern);
    t.equal(err.details?.status, statusCode);
    t.equal(fake.requests.length, 1);
  });
}

t.test('400 passes on the server\'s reason, without the key, not retried', async (t) => {
  fake.fallback(() => ({ status: 400, message: `Unsupported parameter: 'max_tokens' (key ${KEY})` }));
  const err = await failure(complete(ask, deps(), ctx));
  t.match(err.message, /refused the request \(400\): Unsupported parameter: 'max_tokens'/);
  t.notMatch(err.message, /sk-test/);
  t.equal(fake.requests.length, 1);
});

t.test('429 insufficient_quota is not retried', async (t) => {
  fake.fallback(() => ({ status: 429, message: 'You exceeded your current quota.', code: 'insufficient_quota' }));
  const err = await failure(complete(ask, deps(), ctx));
  t.match(err.message, /quota is used up/);
  t.equal(fake.requests.length, 1);
});

for (const [kind, pattern] of [
  ['null-content', /empty reply \(no content\)/],
  ['no-choices', /empty reply \(no choices\)/],
  ['refusal', /the model refused: I cannot help with that/],
] as const) {
  t.test(`an empty reply (${kind}) is not retried`, async (t) => {
    fake.fallback(() => ({ empty: kind }));
    const err = await failure(complete(ask, deps(), ctx));
    t.equal(err.code, 'LLM_UNAVAILABLE');
    t.match(err.message, pattern);
    t.equal(fake.requests.length, 1);
  });
}

t.test('a reply cut off by the token limit before any text says so', async (t) => {
  fake.fallback(() => ({ text: '', finishReason: 'length' }));
  const err = await failure(complete(ask, deps(), ctx));
  t.match(err.message, /empty reply \(the token limit \(777\) was reached first\)/);
  t.equal(fake.requests.length, 1);
});

t.test('a local reasoning model\'s <think> block is not part of the answer', async (t) => {
  fake.script({ text: '<think>\nmaybe ```sql\nSELECT draft\n```\n</think>\n\nINTENT: sql\n```sql\nSELECT 1\n```' });
  const reply = await complete(ask, deps({ api_key: '' }), ctx);
  t.equal(reply.text, 'INTENT: sql\n```sql\nSELECT 1\n```');
});

t.test('per-task model routing of the section picks the model sent', async (t) => {
  fake.script({ text: 'ok' });
  const reply = await complete(ask, deps({ model_routing: { sql: 'gpt-sql' } }), ctx);
  t.equal(reply.model, 'gpt-sql');
  t.equal(fake.requests[0]!.model, 'gpt-sql');
});

t.test('neither key nor base_url: not configured, naming the key; a call makes no HTTP request', async (t) => {
  const d = deps({ api_key: '', base_url: '' });
  const s = await status(d);
  t.equal(s.configured, false);
  t.equal(s.provider, 'openai');
  t.match(s.reason, /llm\.openai\.api_key/);
  t.match(s.reason, /llm\.openai\.base_url/);
  const err = await failure(complete(ask, d, ctx));
  t.equal(err.code, 'LLM_UNAVAILABLE');
  t.match(err.message, /not configured/);
  t.equal(fake.requests.length, 0);
  // the provider itself refuses too, should anyone call it directly
  const direct = await createOpenAiProvider(d.config.llm.openai)
    .complete({ model: 'm', system: 's', messages: [], maxTokens: 1, temperature: 0, signal: AbortSignal.timeout(1000) })
    .then(() => undefined, (e: unknown) => e);
  t.type(direct, LlmAttemptError);
  t.equal((direct as LlmAttemptError).retryable, false);
});

t.test('which endpoints are OpenAI\'s, which models are reasoning models', async (t) => {
  t.equal(isOpenAiEndpoint(''), true);
  t.equal(isOpenAiEndpoint('https://api.openai.com/v1'), true);
  t.equal(isOpenAiEndpoint('https://API.openai.com/v1/'), true);
  t.equal(isOpenAiEndpoint('http://localhost:11434/v1'), false);
  t.equal(isOpenAiEndpoint('http://vllm.internal:8000/v1'), false);
  t.equal(isOpenAiEndpoint('not a url'), false);
  for (const m of ['o1', 'o3-mini', 'o4-mini', 'gpt-5', 'gpt-5-mini', 'gpt-5.1']) t.equal(isReasoningModel(m), true, m);
  for (const m of ['gpt-4.1-mini', 'gpt-4o', 'gpt-5-chat-latest', 'llama3.1', 'qwen2.5-coder']) t.equal(isReasoningModel(m), false, m);
});

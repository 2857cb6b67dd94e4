/**
 * The LLM gateway against a local server speaking Anthropic's Messages API, through the
 * real SDK: prompts and caching, usage, retries with backoff, retry-after, timeouts.
 */
import t from 'tap';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { complete, status, type LlmDeps } from '../../actors/llm/handle.js';
import { retryAfterMs } from '../../actors/llm/providers/provider.js';
import { startFakeLlm } from '../helpers/fake-llm.js';
import { testConfig } from '../helpers/config.js';

const fake = await startFakeLlm();
t.teardown(() => fake.close());
const log = createLogger({ svc: 'test', level: 'silent' });

function deps(extra: Record<string, unknown> = {}, llmUrl: string | null = fake.url): LlmDeps {
  const config = testConfig({ natsUrl: 'nats://127.0.0.1:1', ...(llmUrl ? { llmUrl } : {}), extra });
  return { config, log, providers: new Map(), policy: { baseBackoffMs: 20 } };
}

const ctx = { requestId: 'r-llm' };
const ask = { task: 'sql' as const, system: 'SYSTEM PART with the schema', messages: [{ role: 'user' as const, content: 'which store sold most?' }] };

t.beforeEach(() => {
  fake.requests.length = 0;
});

t.test('a call sends the system prompt as a cacheable block and reports usage', async (t) => {
  fake.script({ text: 'hello', usage: { input_tokens: 10, output_tokens: 3, cache_read_input_tokens: 90 } });
  const reply = await complete(ask, deps(), ctx);
  t.equal(reply.text, 'hello');
  t.equal(reply.provider, 'anthropic');
  t.equal(reply.model, 'claude-test');
  t.same(reply.usage, { input_tokens: 100, output_tokens: 3, cached_input_tokens: 90, llm_calls: 1 });
  t.equal(reply.attempts, 1);
  const req = fake.requests[0]!;
  t.equal(req.system, 'SYSTEM PART with the schema');
  t.ok(req.cacheControl, 'system prompt marked cache_control');
  t.equal(req.last, 'which store sold most?');
  t.ok(req.headers['x-api-key'] === 'test-key' || req.headers.authorization === 'Bearer test-key', 'the key is sent');
});

t.test('model routing picks the per-task model', async (t) => {
  fake.script({ text: 'ok' });
  const reply = await complete(ask, deps({ llm: { anthropic: { model_routing: { sql: 'claude-big' } } } }), ctx);
  t.equal(reply.model, 'claude-big');
  t.equal(fake.requests[0]!.model, 'claude-big');
});

t.test('429 and 500 are retried, then succeed', async (t) => {
  fake.script({ status: 429 }, { status: 500 }, { text: 'third time' });
  const reply = await complete(ask, deps({ llm: { anthropic: { max_retries: 2 } } }), ctx);
  t.equal(reply.text, 'third time');
  t.equal(reply.attempts, 3);
  t.equal(fake.requests.length, 3);
});

t.test('retry-after is honoured', async (t) => {
  fake.script({ status: 429, headers: { 'retry-after-ms': '300' } }, { text: 'after waiting' });
  const started = Date.now();
  const reply = await complete(ask, deps(), ctx);
  t.equal(reply.text, 'after waiting');
  t.ok(Date.now() - started >= 280, 'waited for the server');
});

for (const [name, reply] of [
  ['429', { status: 429 }],
  ['500', { status: 500 }],
  ['529 overloaded', { status: 529 }],
] as const) {
  t.test(`${name} on every attempt → LLM_UNAVAILABLE after the retries`, async (t) => {
    fake.fallback(() => reply);
    const err = await complete(ask, deps(), ctx).catch((e: unknown) => e);
    t.type(err, CortadoError);
    t.equal((err as CortadoError).code, 'LLM_UNAVAILABLE');
    t.match((err as CortadoError).message, /after 2 attempts/);
    t.equal((err as CortadoError).details?.status, reply.status);
    t.equal(fake.requests.length, 2, 'max_retries 1: two attempts');
  });
}

t.test('no answer in time → retried, then LLM_UNAVAILABLE', async (t) => {
  fake.fallback(() => ({ hang: true }));
  const started = Date.now();
  const err = (await complete(ask, deps({ llm: { anthropic: { timeout: 1 } } }), ctx).catch((e: unknown) => e)) as CortadoError;
  t.equal(err.code, 'LLM_UNAVAILABLE');
  t.match(err.message, /no answer within 1 s/);
  t.equal(fake.requests.length, 2);
  t.ok(Date.now() - started < 5_000, 'gave up after two attempts of 1 s');
});

t.test('the caller deadline bounds the retries', async (t) => {
  fake.fallback(() => ({ hang: true }));
  const started = Date.now();
  const err = (await complete(ask, deps({ llm: { anthropic: { timeout: 30, max_retries: 5 } } }), { requestId: 'r', deadline: Date.now() + 600 }).catch((e: unknown) => e)) as CortadoError;
  t.equal(err.code, 'LLM_UNAVAILABLE');
  t.ok(Date.now() - started < 2_000, 'stopped at the deadline');
});

t.test('401 is not retried and says the key was refused', async (t) => {
  fake.fallback(() => ({ status: 401 }));
  const err = (await complete(ask, deps(), ctx).catch((e: unknown) => e)) as CortadoError;
  t.equal(err.code, 'LLM_UNAVAILABLE');
  t.match(err.message, /API key was refused/);
  t.notMatch(err.message, /test-key/, 'the key is never in a message');
  t.equal(fake.requests.length, 1);
});

t.test('without a key: status says so, and a call is LLM_UNAVAILABLE without any HTTP', async (t) => {
  const d = deps({}, null);
  const s = await status(d);
  t.equal(s.configured, false);
  t.match(s.reason, /API key/);
  const err = (await complete(ask, d, ctx).catch((e: unknown) => e)) as CortadoError;
  t.equal(err.code, 'LLM_UNAVAILABLE');
  t.match(err.message, /not configured/);
  t.equal(fake.requests.length, 0);
});

t.test('a provider without an implementation is a clear LLM_UNAVAILABLE', async (t) => {
  const err = (await complete(ask, deps({ model_routing: { sql: 'gemini' } }), ctx).catch((e: unknown) => e)) as CortadoError;
  t.equal(err.code, 'LLM_UNAVAILABLE');
  t.match(err.message, /gemini/);
});

t.test('retry-after parsing', async (t) => {
  const h = (m: Record<string, string>) => (n: string) => m[n];
  t.equal(retryAfterMs(h({ 'retry-after': '2' })), 2000);
  t.equal(retryAfterMs(h({ 'retry-after-ms': '150' })), 150);
  t.equal(retryAfterMs(h({ 'retry-after': new Date(1_000_000 + 3000).toUTCString() }), 1_000_000), 3000);
  t.equal(retryAfterMs(h({})), undefined);
  t.equal(retryAfterMs(h({ 'retry-after': 'soon' })), undefined);
});

/**
 * How many model calls a process has on the wire, and what happens beyond: against a local
 * server speaking Anthropic's Messages API, through the real SDK and the real HTTP client.
 * Each provider gets llm.max_concurrency slots (its own max_concurrency overrides it), at most
 * llm.max_queue calls wait for one, none longer than llm.queue_timeout_ms; beyond that a clear
 * LLM_UNAVAILABLE, or RATE_LIMITED when the provider said 429 lately. The HTTP client has a
 * socket per slot: no hidden cap (it was 128) holds calls back unseen.
 */
import t from 'tap';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { complete, maxConcurrency, type LlmDeps } from '../../actors/llm/handle.js';
import { startFakeLlm } from '../helpers/fake-llm.js';
import { testConfig } from '../helpers/config.js';

const fake = await startFakeLlm();
t.teardown(() => fake.close());
const log = createLogger({ svc: 'test', level: 'silent' });

function deps(llm: Record<string, unknown>): LlmDeps & { depths: number[] } {
  const config = testConfig({ natsUrl: 'nats://127.0.0.1:1', llmUrl: fake.url, extra: { llm } });
  const depths: number[] = [];
  return { config, log, providers: new Map(), policy: { baseBackoffMs: 20 }, depths, onQueueDepth: (_p, n) => depths.push(n) };
}

const ask = (n: number) => ({ task: 'sql' as const, system: 'SYSTEM', messages: [{ role: 'user' as const, content: `question ${n}` }] });
const ctx = (n: number) => ({ requestId: `r-conc-${n}` });
const settle = <T>(p: Promise<T>) => p.then((v) => ({ ok: true as const, v }), (e: unknown) => ({ ok: false as const, e: e as CortadoError }));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

t.beforeEach(async () => {
  await until('the fake to be idle', () => fake.open === 0);
  fake.requests.length = 0;
  fake.resetPeak();
  fake.fallback(() => ({ status: 500, message: 'no script' }));
});

t.test('a provider max_concurrency overrides llm.max_concurrency; the default holds thousands', async (t) => {
  const d = deps({ max_concurrency: 7, anthropic: { max_concurrency: 3 } });
  t.equal(maxConcurrency(d.config, 'anthropic'), 3);
  t.equal(maxConcurrency(d.config, 'openai'), 7);
  t.ok(maxConcurrency(deps({}).config, 'anthropic') >= 2000, 'out of the box, 2,000 questions in flight are not held back');
});

t.test('300 calls at once are 300 on the wire: no hidden cap in the HTTP client', async (t) => {
  const d = deps({ max_concurrency: 400 });
  fake.fallback(() => ({ text: 'ok', delayMs: 400 }));
  const all = Array.from({ length: 300 }, (_x, i) => settle(complete(ask(i), d, ctx(i))));
  await until('300 calls at the model', () => fake.open === 300);
  const done = await Promise.all(all);
  t.equal(done.filter((x) => x.ok).length, 300, 'all answered');
  t.equal(fake.peakOpen, 300, 'the model saw all 300 at once (the dispatcher held 128 before)');
  t.same(d.depths, [], 'nothing ever waited');
});

t.test('beyond max_concurrency calls wait in order; beyond max_queue they are refused at once', async (t) => {
  const d = deps({ max_concurrency: 2, max_queue: 3, queue_timeout_ms: 30_000 });
  fake.fallback((req) => ({ text: `answer to ${req.last}`, delayMs: 300 }));
  const calls = Array.from({ length: 7 }, (_x, i) => settle(complete(ask(i), d, ctx(i))));
  const out = await Promise.all(calls);
  t.equal(fake.peakOpen, 2, 'never more than 2 at the model');
  t.same(out.map((x) => x.ok), [true, true, true, true, true, false, false], 'two on the wire, three waiting, two refused');
  for (const x of out.slice(0, 5)) if (x.ok) t.match(x.v.text, /^answer to question \d$/);
  t.same(fake.requests.map((r) => r.last), ['question 0', 'question 1', 'question 2', 'question 3', 'question 4'], 'the waiting calls went in the order they came');
  for (const x of out.slice(5)) {
    if (x.ok) continue;
    t.type(x.e, CortadoError);
    t.equal(x.e.code, 'LLM_UNAVAILABLE');
    t.ok(x.e.retryable, 'the caller may try again');
    t.match(x.e.message, /2 calls at once \(llm\.max_concurrency\).*3 calls wait already \(llm\.max_queue\)/);
  }
  t.equal(Math.max(...d.depths), 3, 'the queue depth gauge saw 3 waiting');
  t.equal(d.depths.at(-1), 0, 'and 0 at the end');
});

t.test('no slot within queue_timeout_ms: LLM_UNAVAILABLE, and the slot still serves the next call', async (t) => {
  const d = deps({ max_concurrency: 1, max_queue: 10, queue_timeout_ms: 150 });
  fake.script({ text: 'slow', delayMs: 800 }, { text: 'later' });
  const slow = settle(complete(ask(0), d, ctx(0)));
  await until('the slow call at the model', () => fake.open === 1);
  const waited = await settle(complete(ask(1), d, ctx(1)));
  t.notOk(waited.ok);
  if (!waited.ok) {
    t.equal(waited.e.code, 'LLM_UNAVAILABLE');
    t.match(waited.e.message, /no slot came free within 150 ms \(llm\.queue_timeout_ms\)/);
  }
  t.equal(fake.requests.length, 1, 'the refused call never reached the model');
  const first = await slow;
  t.ok(first.ok, 'the call under way was not disturbed');
  const next = await settle(complete(ask(2), d, ctx(2)));
  t.ok(next.ok, 'the slot was given back');
  if (next.ok) t.equal(next.v.text, 'later');
});

t.test('the question deadline bounds the wait too', async (t) => {
  const d = deps({ max_concurrency: 1, max_queue: 10, queue_timeout_ms: 60_000 });
  fake.script({ text: 'slow', delayMs: 600 });
  const slow = settle(complete(ask(0), d, ctx(0)));
  await until('the slow call at the model', () => fake.open === 1);
  const waited = await settle(complete(ask(1), d, { requestId: 'r-deadline', deadline: Date.now() + 100 }));
  t.notOk(waited.ok);
  if (!waited.ok) {
    t.equal(waited.e.code, 'LLM_UNAVAILABLE');
    t.match(waited.e.message, /before the question's deadline/);
  }
  t.ok((await slow).ok);
});

t.test('after the provider said 429, a refusal is RATE_LIMITED with a retry-after', async (t) => {
  const d = deps({ max_concurrency: 1, max_queue: 0, anthropic: { max_retries: 0 } });
  fake.script({ status: 429 }, { text: 'slow', delayMs: 500 });
  const limited = await settle(complete(ask(0), d, ctx(0)));
  t.notOk(limited.ok);
  if (!limited.ok) {
    t.equal(limited.e.code, 'LLM_UNAVAILABLE', 'the provider\'s own 429 after the retries is LLM_UNAVAILABLE');
    t.equal(limited.e.details?.status, 429);
  }
  const slow = settle(complete(ask(1), d, ctx(1)));
  await until('the slow call at the model', () => fake.open === 1);
  const refused = await settle(complete(ask(2), d, ctx(2)));
  t.notOk(refused.ok);
  if (!refused.ok) {
    t.equal(refused.e.code, 'RATE_LIMITED', 'the provider is what is full: RATE_LIMITED');
    t.equal(refused.e.details?.retry_after_s, 1);
    t.match(refused.e.message, /rate limiting/);
  }
  t.ok((await slow).ok);
});

t.test('a retry gives its slot back during the backoff', async (t) => {
  // one slot: a 500 then a success for the first call; a second call gets the slot in between
  const d = deps({ max_concurrency: 1, max_queue: 5, queue_timeout_ms: 5_000, anthropic: { max_retries: 1 } });
  d.policy = { baseBackoffMs: 400, random: () => 0.99 };
  fake.script({ status: 500 }, { text: 'second caller' }, { text: 'first caller, retried' });
  const first = settle(complete(ask(0), d, ctx(0)));
  await until('the first attempt answered', () => fake.requests.length === 1 && fake.open === 0);
  const second = await settle(complete(ask(1), d, ctx(1)));
  t.ok(second.ok && second.v.text === 'second caller', 'the second call ran while the first waited out its backoff');
  const f = await first;
  t.ok(f.ok && f.v.text === 'first caller, retried' && f.v.attempts === 2, 'then the first was retried');
});

t.test('5xx and timeouts: bounded retries, then LLM_UNAVAILABLE saying why', async (t) => {
  const d = deps({ anthropic: { max_retries: 2, timeout: 1 } });
  fake.script({ status: 503 }, { status: 529 }, { status: 500 });
  const fivexx = await settle(complete(ask(0), d, ctx(0)));
  t.ok(!fivexx.ok && fivexx.e.code === 'LLM_UNAVAILABLE' && /after 3 attempts/.test(fivexx.e.message), !fivexx.ok ? fivexx.e.message : 'answered');
  t.equal(fake.requests.length, 3, 'three attempts, no more');
  fake.requests.length = 0;
  fake.script({ hang: true }, { hang: true }, { hang: true });
  const hung = await settle(complete(ask(1), d, ctx(1)));
  t.ok(!hung.ok && hung.e.code === 'LLM_UNAVAILABLE' && /no answer within 1 s/.test(hung.e.message), !hung.ok ? hung.e.message : 'answered');
  t.equal(fake.requests.length, 3);
});

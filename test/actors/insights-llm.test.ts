/**
 * The model's insights (insights.mode llm_only and hybrid): the reply format read strictly, the
 * caps, include_statistical, the language of the question, a bad reply and a model that fails
 * (statistical insights only, logged), the bounded summary of a result the model sees, and the
 * price of each call in `usage.cost_usd`. The model calls go over a real bus to the real llm
 * actor, which calls a local server speaking Anthropic's Messages API.
 */
import { PassThrough } from 'node:stream';
import t from 'tap';
import { combineInsights, modelRoom, parseInsightsReply, SAMPLE_CELL_CHARS, SAMPLE_ROWS, summarizeResult } from '../../actors/insights/llm.js';
import { generate, statisticalInsights } from '../../actors/insights/handle.js';
import { costUsd, MODEL_PRICES, priceOf } from '../../actors/llm/pricing.js';
import { createLogger } from '../../runtime/log.js';
import { addUsage, ZERO_USAGE, type Cell } from '../../protocol/schemas/common.js';
import type { Insight, InsightsGenerateRequest } from '../../protocol/schemas/insights.js';
import { InsightsGenerate } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import { parseConfig } from '../../config/load.js';
import { testConfig } from '../helpers/config.js';
import { startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { startStack } from '../helpers/stack.js';

const nats = await startNats();
const fake = await startFakeLlm();
const PRICE = { input_per_mtok: 3, output_per_mtok: 15, cached_input_per_mtok: 0.3 };
const base = {
  natsUrl: nats.url,
  llmUrl: fake.url,
  extra: {
    llm: { pricing: { 'claude-test': PRICE } },
    model_routing: { insights: 'claude-insights' },
    insights: { enabled: true, mode: 'llm_only', max_insights: 3, include_statistical: false },
  },
};
const stackConfig = testConfig({ ...base, extra: { ...base.extra, llm: { pricing: { 'claude-test': PRICE, 'claude-insights': PRICE } } } });
// the llm actor (and an insights actor, for the contract on the wire)
const stack = await startStack(stackConfig, { edge: false, actors: ['llm', 'insights'] });
const bus = stack.running.bus;
t.teardown(async () => {
  await stack.stop();
  await fake.close();
  await nats.stop();
});

/** The warnings the insights logged, one object per line. */
const logged: Array<Record<string, unknown>> = [];
const sink = new PassThrough();
sink.on('data', (chunk: Buffer) => {
  for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) logged.push(JSON.parse(line) as Record<string, unknown>);
});
const log = createLogger({ svc: 'test', level: 'warn', destination: sink });

function config(insights: Partial<Config['insights']>): Config {
  return { ...stackConfig, insights: { ...stackConfig.insights, ...insights } };
}

const deps = (insights: Partial<Config['insights']> = {}) => ({ bus, config: config(insights), log });
const ctx = (id = 'r-ins') => ({ requestId: id });

const MONTHS: Cell[][] = [
  ['2025-01-01', 100], ['2025-02-01', 120], ['2025-03-01', 150], ['2025-04-01', 170], ['2025-05-01', 210], ['2025-06-01', 260],
];
function request(extra: Partial<InsightsGenerateRequest> = {}): InsightsGenerateRequest {
  return {
    question: 'How did revenue develop this year?',
    sql: "SELECT date_trunc('month', ordered_at) AS month, sum(amount) AS revenue FROM orders GROUP BY 1 ORDER BY 1",
    columns: [{ name: 'month', type: 'date' }, { name: 'revenue', type: 'numeric' }],
    rows: MONTHS,
    row_count: MONTHS.length,
    truncated: false,
    ...extra,
  };
}

const GOOD = [
  'TYPE: trend | SEVERITY: success | MESSAGE: Revenue grew every month, from 100 to 260.',
  'TYPE: leader | SEVERITY: info | MESSAGE: June was the best month with 260.',
  'TYPE: risk | SEVERITY: warning | MESSAGE: Growth depends on the last two months.',
].join('\n');

t.beforeEach(() => {
  fake.requests.length = 0;
  logged.length = 0;
  fake.fallback(() => ({ status: 500, message: 'unscripted' }));
});

// ---- the reply format -----------------------------------------------------------------------

t.test('a reply in the format: one insight per line, source llm', async (t) => {
  const parsed = parseInsightsReply(`${GOOD}\r\n\r\n`);
  t.ok(parsed.ok);
  if (!parsed.ok) return;
  t.equal(parsed.insights.length, 3);
  t.same(parsed.insights[0], { type: 'trend', severity: 'success', message: 'Revenue grew every month, from 100 to 260.', icon: '📈', source: 'llm' });
  t.equal(parsed.insights[2]!.severity, 'warning');
  const loose = parseInsightsReply('type: Outlier | severity: CRITICAL | message: March is odd.');
  t.ok(loose.ok, 'labels and severities in any case');
  if (loose.ok) t.same([loose.insights[0]!.type, loose.insights[0]!.severity], ['outlier', 'critical']);
  // the operations console's types (one parser reads both): a type the answer view does not know is general
  const ops = parseInsightsReply('TYPE: cost | SEVERITY: warning | MESSAGE: Two users spent most.');
  t.same(ops, { ok: true, insights: [{ type: 'general', severity: 'warning', message: 'Two users spent most.', icon: '💡', source: 'llm' }] });
});

t.test('anything else in the reply drops it, with a reason', async (t) => {
  const bad: Array<[string, string, RegExp]> = [
    ['', 'empty', /empty/],
    ['Here are the insights:\n' + GOOD, 'a heading', /line 1/],
    ['- ' + GOOD.split('\n')[0], 'a list marker', /line 1/],
    ['```\n' + GOOD + '\n```', 'a code fence', /line 1/],
    [GOOD + '\nHope this helps!', 'prose after', /line 4/],
    ['TYPE: trend | SEVERITY: high | MESSAGE: Up.', 'a severity not in the list', /line 1/],
    ['TYPE: trend | SEVERITY: info', 'no message', /line 1/],
    ['TYPE: trend | SEVERITY: info | MESSAGE:   ', 'an empty message', /line 1/],
    ['SEVERITY: info | TYPE: trend | MESSAGE: Up.', 'fields in another order', /line 1/],
    ['TYPE: two words | SEVERITY: info | MESSAGE: Up.', 'a type of two words', /line 1/],
    [`TYPE: trend | SEVERITY: info | MESSAGE: ${'x'.repeat(501)}`, 'a message too long', /longer than 500/],
  ];
  for (const [text, what, reason] of bad) {
    const parsed = parseInsightsReply(text);
    t.notOk(parsed.ok, what);
    if (!parsed.ok) t.match(parsed.reason, reason, `${what}: ${parsed.reason}`);
  }
});

// ---- which insights, how many ---------------------------------------------------------------

t.test('caps and include_statistical, by mode', async (t) => {
  const m = (n: number): Insight[] => Array.from({ length: n }, (_, i) => ({ type: 'trend', severity: 'info', message: `model ${i}`, source: 'llm' }));
  const s = (n: number): Insight[] => Array.from({ length: n }, (_, i) => ({ type: 'total', severity: 'info', message: `stat ${i}`, source: 'statistical' }));
  const cfg = (mode: Config['insights']['mode'], include_statistical: boolean, max_insights = 3): Config['insights'] => ({ enabled: true, mode, max_insights, include_statistical });
  const sources = (list: Insight[]) => list.map((i) => i.message);

  t.same(sources(combineInsights(cfg('llm_only', false), m(5), s(4))), ['model 0', 'model 1', 'model 2'], 'llm_only: the model only, capped');
  t.same(sources(combineInsights(cfg('llm_only', true), m(1), s(4))), ['model 0', 'stat 0', 'stat 1'], 'include_statistical fills the room left');
  t.same(sources(combineInsights(cfg('llm_only', true), m(5), s(4))), ['model 0', 'model 1', 'model 2'], 'the model first');
  t.same(sources(combineInsights(cfg('llm_only', false), [], s(4))), ['stat 0', 'stat 1', 'stat 2'], 'no model insights: the statistical ones stand in');
  t.same(sources(combineInsights(cfg('hybrid', false), m(5), s(4))), ['model 0', 'model 1', 'stat 0'], 'hybrid: both, whatever include_statistical says');
  t.same(sources(combineInsights(cfg('hybrid', false, 1), m(5), s(4))), ['model 0'], 'hybrid with room for one: the model');
  t.same(sources(combineInsights(cfg('hybrid', false), m(5), [])), ['model 0', 'model 1', 'model 2'], 'hybrid without statistical insights');
  t.same(combineInsights({ ...cfg('llm_only', true), max_insights: 0 }, m(2), s(2)), []);
  t.equal(modelRoom(cfg('hybrid', false, 5), s(2)), 4, 'the model is asked for what it may fill');
  t.equal(modelRoom(cfg('llm_only', true, 5), s(2)), 5);
});

// ---- the model call -------------------------------------------------------------------------

t.test('llm_only: the model is asked (task insights) and its insights answer, with tokens and cost', async (t) => {
  fake.script({ text: GOOD, usage: { input_tokens: 1000, output_tokens: 100 } });
  const reply = await generate(request(), deps(), ctx());
  t.equal(fake.requests.length, 1);
  t.equal(fake.requests[0]!.model, 'claude-insights', 'routed by model_routing.insights');
  t.same(reply.insights.map((i) => i.source), ['llm', 'llm', 'llm']);
  t.equal(reply.insights[0]!.message, 'Revenue grew every month, from 100 to 260.');
  t.equal(reply.model_status, 'ok');
  t.equal(reply.usage.llm_calls, 1);
  t.equal(reply.usage.input_tokens, 1000);
  t.equal(reply.usage.output_tokens, 100);
  t.equal(reply.usage.cost_usd, (1000 * 3 + 100 * 15) / 1e6, 'priced by llm.pricing');

  const prompt = fake.requests[0]!;
  t.match(prompt.system, /TYPE: <trend\|leader\|outlier\|risk\|summary> \| SEVERITY: <info\|success\|warning\|critical> \| MESSAGE:/, 'the reply format');
  t.match(prompt.system, /language of the question/);
  t.match(prompt.last, /How did revenue develop this year\?/, 'the question');
  t.match(prompt.last, /date_trunc\('month', ordered_at\)/, 'the SQL');
  t.match(prompt.last, /revenue \(numeric\): 6 values, 6 distinct, min 100, max 260, mean 168\.33/, 'a column profile');
  t.match(prompt.last, /Statistical findings:\n- /, 'the statistical findings');
  t.match(prompt.last, /2025-06-01 \| 260/, 'the rows');
  t.match(prompt.system, /up to 3 short/, 'max_insights');
});

t.test('max_insights caps what the model wrote; include_statistical adds the statistical ones', async (t) => {
  const five = `${GOOD}\nTYPE: summary | SEVERITY: info | MESSAGE: Four.\nTYPE: summary | SEVERITY: info | MESSAGE: Five.`;
  fake.script({ text: five });
  const capped = await generate(request(), deps({ max_insights: 2 }), ctx());
  t.equal(capped.insights.length, 2);
  t.ok(capped.insights.every((i) => i.source === 'llm'));

  fake.script({ text: GOOD.split('\n')[0]! });
  const mixed = await generate(request(), deps({ max_insights: 3, include_statistical: true }), ctx());
  t.same(mixed.insights.map((i) => i.source), ['llm', 'statistical', 'statistical']);
  t.same(mixed.insights.slice(1), statisticalInsights(request()).slice(0, 2), 'the statistical ones, in their order');

  fake.script({ text: GOOD });
  const hybrid = await generate(request(), deps({ mode: 'hybrid', max_insights: 3, include_statistical: false }), ctx());
  t.same(hybrid.insights.map((i) => i.source), ['llm', 'llm', 'statistical'], 'hybrid: both');
  t.match(fake.requests.at(-1)!.system, /up to 2 short/, 'hybrid asks for the room it leaves');
});

t.test('the insights come in the language of the question', async (t) => {
  fake.script({
    text: 'TYPE: trend | SEVERITY: success | MESSAGE: Der Umsatz ist jeden Monat gestiegen, von 100 auf 260.\nTYPE: leader | SEVERITY: info | MESSAGE: Juni war mit 260 der stärkste Monat.',
  });
  const reply = await generate(request({ question: 'Wie hat sich der Umsatz in diesem Jahr entwickelt?' }), deps(), ctx());
  t.match(fake.requests[0]!.last, /Wie hat sich der Umsatz/);
  t.match(fake.requests[0]!.system, /in the language of the question/);
  t.same(reply.insights.map((i) => i.message), ['Der Umsatz ist jeden Monat gestiegen, von 100 auf 260.', 'Juni war mit 260 der stärkste Monat.']);
});

t.test('a bad reply drops the model insights (logged), the statistical ones answer', async (t) => {
  fake.script({ text: `Sure! Here are some insights:\n${GOOD}`, usage: { input_tokens: 500, output_tokens: 50 } });
  const reply = await generate(request(), deps(), ctx('r-bad'));
  t.equal(reply.model_status, 'bad_reply');
  t.same(reply.insights, statisticalInsights(request()).slice(0, 3));
  t.equal(reply.usage.input_tokens, 500, 'the tokens were spent all the same');
  const warn = logged.find((l) => l.rid === 'r-bad');
  t.ok(warn, 'a warning');
  t.equal(warn?.level, 'warn');
  t.match(String(warn?.reason), /line 1/);
  t.match(String(warn?.msg), /dropped/);
});

t.test('a model that fails: statistical insights only, logged', async (t) => {
  fake.script({ status: 500 }, { status: 500 });
  const reply = await generate(request(), deps(), ctx('r-down'));
  t.equal(reply.model_status, 'unavailable');
  t.same(reply.insights, statisticalInsights(request()).slice(0, 3));
  t.same(reply.usage, { ...ZERO_USAGE });
  const warn = logged.find((l) => l.rid === 'r-down');
  t.equal(warn?.code, 'LLM_UNAVAILABLE');
});

t.test('a model that does not answer in time: statistical insights only', async (t) => {
  fake.script({ hang: true }, { hang: true });
  // the caller waits 6 s at most; the model gets what is left after the reply's margin
  const reply = await generate(request(), deps(), { requestId: 'r-slow', deadline: Date.now() + 6_000 });
  t.equal(reply.model_status, 'unavailable');
  t.same(reply.insights, statisticalInsights(request()).slice(0, 3));
  t.ok(logged.some((l) => l.rid === 'r-slow'), 'logged');
});

t.test('statistical_only, the statistical part of hybrid and empty results never call the model', async (t) => {
  const stat = await generate(request(), deps({ mode: 'statistical_only' }), ctx());
  const part = await generate(request({ part: 'statistical' }), deps({ mode: 'hybrid' }), ctx());
  t.equal(fake.requests.length, 0);
  t.same(stat.insights, statisticalInsights(request()).slice(0, 3));
  t.same(part.insights, stat.insights);
  t.notOk(part.model_status);
  const empty = await generate(request({ rows: [], row_count: 0 }), deps({ mode: 'llm_only' }), ctx());
  t.equal(fake.requests.length, 0, 'nor does an empty result');
  t.same(empty.insights.map((i) => i.type), ['empty']);
});

t.test('over the bus: the insights actor answers the contract with the model status', async (t) => {
  fake.script({ text: GOOD });
  const reply = await bus.request(InsightsGenerate, request(), ctx('r-wire'));
  t.equal(reply.model_status, 'ok');
  t.equal(reply.insights.length, 3);
  t.ok(reply.usage.cost_usd! > 0);
});

// ---- what the model sees of a result --------------------------------------------------------

t.test('the summary is bounded: a few rows, short values, masked columns not profiled', async (t) => {
  const long = 'L'.repeat(500);
  const rows: Cell[][] = Array.from({ length: 200 }, (_, i) => [`c${i}`, `••••${i}@x.org`, i * 2, i === 0 ? long : 'short', null]);
  const input = {
    columns: [{ name: 'customer', type: 'text' }, { name: 'email', type: 'text' }, { name: 'spent', type: 'numeric' }, { name: 'note', type: 'text' }, { name: 'gone', type: 'text' }],
    rows, row_count: 1000, truncated: true, masked_columns: ['email'],
  };
  const text = summarizeResult(input, statisticalInsights({ question: 'q', sql: 's', ...input }));
  t.match(text, /^Rows: 1000 \(cut at the row limit/);
  t.match(text, /email \(text\): 200 values; masked by policy \(values hidden\)/, 'a masked column is named, not profiled');
  t.notMatch(text, /email \(text\): .*distinct/);
  t.match(text, /spent \(numeric\): 200 values, 200 distinct, min 0, max 398, mean 199/);
  t.match(text, /gone \(text\): 0 values, 200 empty/);
  const rowLines = text.split('\n').filter((l) => /^c\d+ \|/.test(l));
  t.equal(rowLines.length, SAMPLE_ROWS, `${SAMPLE_ROWS} rows at most`);
  t.notOk(text.includes('L'.repeat(SAMPLE_CELL_CHARS)), 'long values are cut');
  t.ok(text.includes(`${'L'.repeat(SAMPLE_CELL_CHARS - 1)}…`));
  t.notOk(text.includes('c10 |'), 'no row past the sample');
  t.ok(text.length < 4000, `small: ${text.length} characters`);

  const wide = { columns: Array.from({ length: 80 }, (_, i) => ({ name: `col${i}`, type: 'integer' })), rows: [Array.from({ length: 80 }, (_, i) => i)], row_count: 1, truncated: false };
  const w = summarizeResult(wide, []);
  t.match(w, /Columns: 80; the first 30 are described/);
  t.notOk(w.includes('col30'), 'columns past the first 30 are left out');
});

// ---- prices ---------------------------------------------------------------------------------

t.test('prices: the table, dated names, llm.pricing over it, unknown models have none', async (t) => {
  const cfg = testConfig({ natsUrl: nats.url, extra: { llm: { pricing: { 'gpt-4.1-mini': { input_per_mtok: 1, output_per_mtok: 2 }, 'my-local-model': { input_per_mtok: 0, output_per_mtok: 0 } } } } });
  for (const model of ['claude-sonnet-5-5', 'claude-sonnet-4-5', 'gemini-2.5-flash', 'gpt-4.1-mini']) t.ok(MODEL_PRICES[model], `${model} is in the table`);
  t.ok(MODEL_PRICES[parseConfig('llm: {provider: anthropic}\ndatabase: {provider: postgresql}', 'defaults.yaml', {}).config.llm.anthropic.model], 'the default Anthropic model has a price');
  t.same(priceOf(cfg, 'claude-sonnet-4-5-20250929'), MODEL_PRICES['claude-sonnet-4-5'], 'a dated name');
  t.same(priceOf(cfg, 'publishers/google/models/gemini-2.5-flash'), MODEL_PRICES['gemini-2.5-flash'], 'a path');
  t.same(priceOf(cfg, 'gpt-4.1-mini-2025-04-14'), { input_per_mtok: 1, output_per_mtok: 2 }, 'llm.pricing wins');
  t.equal(priceOf(cfg, 'someone-elses-model'), undefined);
  t.equal(costUsd(cfg, 'someone-elses-model', { input_tokens: 10, output_tokens: 10, cached_input_tokens: 0 }), undefined, 'no price, no cost');
  t.equal(costUsd(cfg, 'my-local-model', { input_tokens: 10, output_tokens: 10, cached_input_tokens: 0 }), 0, 'a price of zero is a cost of zero');
  // claude-sonnet-4-5: 3 in, 0.3 cached, 15 out (per million)
  t.equal(costUsd(cfg, 'claude-sonnet-4-5', { input_tokens: 1_000_000, output_tokens: 100_000, cached_input_tokens: 800_000 }), 0.2 * 3 + 0.8 * 0.3 + 0.1 * 15);
  t.equal(costUsd(cfg, 'gpt-4.1-mini', { input_tokens: 1000, output_tokens: 0, cached_input_tokens: 1000 }), 0.001, 'without a cached price, cached tokens cost the input price');
});

t.test('addUsage sums cost where there is one, and never invents one', async (t) => {
  const a = { input_tokens: 1, output_tokens: 2, cached_input_tokens: 0, llm_calls: 1, cost_usd: 0.25 };
  const b = { input_tokens: 3, output_tokens: 4, cached_input_tokens: 0, llm_calls: 1, cost_usd: 0.5 };
  const unpriced = { input_tokens: 5, output_tokens: 6, cached_input_tokens: 0, llm_calls: 1 };
  t.same(addUsage(a, b), { input_tokens: 4, output_tokens: 6, cached_input_tokens: 0, llm_calls: 2, cost_usd: 0.75 });
  t.equal(addUsage(a, unpriced).cost_usd, 0.25);
  t.notOk('cost_usd' in addUsage(unpriced, unpriced), 'unpriced calls have no cost');
  t.notOk('cost_usd' in addUsage({ ...ZERO_USAGE }, { ...ZERO_USAGE }));
});

t.test('bad llm.pricing is refused with the key named', async (t) => {
  t.throws(() => testConfig({ natsUrl: nats.url, extra: { llm: { pricing: { 'gpt-4.1': { input_per_mtok: -1, output_per_mtok: 2 } } } } }), /pricing/);
  t.throws(() => testConfig({ natsUrl: nats.url, extra: { llm: { pricing: { 'gpt-4.1': { input: 1 } } } } }), /pricing/);
});

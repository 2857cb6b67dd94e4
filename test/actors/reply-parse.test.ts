import t from 'tap';
import { parseIntentReply, parseSqlReply } from '../../actors/lib/model-io/reply-parse.js';
import { fillPrompt, splitPrompt, promptText, DEFAULT_PROMPTS } from '../../config/prompts.js';
import { buildSqlPrompt } from '../../actors/sqlgen/handle.js';
import { testConfig } from '../helpers/config.js';
import { resolveRoute, sameRoute } from '../../config/model-routing.js';

t.test('SQL replies in the shapes models actually write', async (t) => {
  const cases: Array<[string, string, string | undefined]> = [
    ['INTENT: sql\nSQL:\n```sql\nSELECT 1\n```\nEXPLANATION: one.', 'SELECT 1', 'one.'],
    ['**INTENT:** sql\n**SQL:**\n```postgresql\nSELECT a\nFROM t;\n```\n**EXPLANATION:** lists a.', 'SELECT a\nFROM t;', 'lists a.'],
    ['SQL: SELECT count(*) FROM orders\nEXPLANATION: counts orders', 'SELECT count(*) FROM orders', 'counts orders'],
    ['Here you go:\n```\nWITH x AS (SELECT 1) SELECT * FROM x\n```', 'WITH x AS (SELECT 1) SELECT * FROM x', undefined],
    ['select 1', 'select 1', undefined],
    ['INTENT: SQL\r\nSQL:\r\n```sql\r\nSELECT 2\r\n```\r\nEXPLANATION: two\r\nspans lines', 'SELECT 2', 'two\nspans lines'],
    ['EXPLANATION: first\nINTENT: sql\n```sql\nSELECT 3\n```', 'SELECT 3', 'first'],
  ];
  for (const [text, sql, explanation] of cases) {
    const r = parseSqlReply(text);
    t.equal(r.intent, 'sql', text);
    t.equal(r.sql, sql, text);
    t.equal(r.explanation, explanation, text);
  }
});

t.test('chat replies', async (t) => {
  t.same(parseSqlReply('INTENT: chat\nMESSAGE: Hello! Ask me about sales.'), { intent: 'chat', message: 'Hello! Ask me about sales.' });
  t.same(parseSqlReply('MESSAGE: hi there'), { intent: 'chat', message: 'hi there' });
  t.same(parseSqlReply('INTENT: chat\nI am Cortado, happy to help.'), { intent: 'chat', message: 'I am Cortado, happy to help.' });
});

t.test('unusable replies are LLM_BAD_REPLY, never a guess', async (t) => {
  for (const text of ['', '   ', 'INTENT: sql\nI would query the orders table.', 'Sure! The answer is 42.', 'INTENT: chat\n']) {
    t.throws(() => parseSqlReply(text), { code: 'LLM_BAD_REPLY' }, JSON.stringify(text));
  }
});

t.test('intent replies', async (t) => {
  t.same(parseIntentReply('INTENT: sql\nCONFIDENCE: 0.92'), { intent: 'sql', confidence: 0.92 });
  t.same(parseIntentReply('intent: CHAT\nconfidence: 85'), { intent: 'chat', confidence: 0.85 });
  t.same(parseIntentReply('sql'), { intent: 'sql', confidence: 0.8 });
  t.throws(() => parseIntentReply('maybe'), { code: 'LLM_BAD_REPLY' });
});

t.test('prompts: placeholders, the cacheable prefix, overrides', async (t) => {
  t.equal(fillPrompt('{schema_info} / {question} / {unknown} / {dialect}', { schema_info: 'S', question: 'Q' }), 'S / Q / {unknown} / {dialect}');
  const split = splitPrompt('Rules.\n{schema_info}\nQuestion: {question}\nThanks.', { schema_info: 'TABLES', question: 'why?' });
  t.equal(split.system, 'Rules.\nTABLES');
  t.equal(split.user, 'Question: why?\nThanks.');
  t.same(splitPrompt('No placeholder here', { question: 'q' }), { system: 'No placeholder here', user: 'q' });

  const config = testConfig({ natsUrl: 'nats://x', extra: { prompts: { barista_personality: 'You are Bob.' } } });
  t.equal(promptText(config, 'barista_personality'), 'You are Bob.');
  t.equal(promptText(config, 'sql_generation'), DEFAULT_PROMPTS.sql_generation);
  const built = buildSqlPrompt({
    question: 'and per weekday?', mode: 'combined', dialect: 'postgresql', schema_text: 'TABLE orders(id)', business_context: '',
    history: [{ question: 'total sales?', sql: 'SELECT sum(total) FROM orders', answer: 'The total.' }],
  }, config, new Date('2026-03-15T10:00:00Z'));
  t.match(built.system, /TABLE orders\(id\)/);
  t.match(built.system, /PostgreSQL/);
  t.match(built.system, /2026-03-15/);
  t.match(built.system, /You are Bob\./, 'the persona is part of the stable prefix');
  t.notMatch(built.system, /and per weekday/, 'the question is not in the cacheable prefix');
  t.equal(built.messages.length, 3);
  t.match(built.messages[0]?.content, /total sales\?/);
  t.match(built.messages[1]?.content, /SELECT sum\(total\) FROM orders/);
  t.match(built.messages[2]?.content, /^Question: <data source="question">\nand per weekday\?\n<\/data>/, 'the question fenced as data');

  const retry = buildSqlPrompt({
    question: 'q', mode: 'sql', dialect: 'postgresql', schema_text: 's', business_context: '', history: [],
    previous: { sql: 'SELECT nope FROM t', error: 'column "nope" does not exist' },
  }, config, new Date());
  t.equal(retry.messages.length, 3);
  t.match(retry.messages[1]?.content, /SELECT nope FROM t/);
  t.match(retry.messages[2]?.content, /column "nope" does not exist/);
});

t.test('model routing', async (t) => {
  const base = { natsUrl: 'nats://x' };
  const plain = testConfig(base);
  t.ok(sameRoute(resolveRoute(plain, 'intent_detection'), resolveRoute(plain, 'sql')), 'one model for everything by default');
  const inProvider = testConfig({ ...base, extra: { llm: { anthropic: { model_routing: { intent_detection: 'claude-small' } } } } });
  t.equal(resolveRoute(inProvider, 'intent_detection').model, 'claude-small');
  t.equal(resolveRoute(inProvider, 'sql').model, 'claude-test');
  const across = testConfig({ ...base, extra: { model_routing: { sql: 'openai:gpt-x', chat: 'gemini', insights: { provider: 'anthropic', model: 'claude-i' }, intent_detection: 'claude-tiny' } } });
  t.same(resolveRoute(across, 'sql'), { provider: 'openai', model: 'gpt-x', maxTokens: 4096, temperature: 0 });
  t.equal(resolveRoute(across, 'chat').provider, 'gemini');
  t.equal(resolveRoute(across, 'chat').maxTokens, 1000, "the target provider's own max_tokens");
  t.equal(resolveRoute(across, 'insights').model, 'claude-i');
  t.same([resolveRoute(across, 'intent_detection').provider, resolveRoute(across, 'intent_detection').model], ['anthropic', 'claude-tiny']);
});

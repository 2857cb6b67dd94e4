/**
 * A configured model its vendor retires is named once, when the llm actor starts, with the key
 * to change and the model to move to; questions then write nothing more about it.
 */
import { PassThrough } from 'node:stream';
import t from 'tap';
import { start } from '../../actors/llm/actor.js';
import { retiringModels } from '../../actors/llm/retiring.js';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import { LlmComplete } from '../../protocol/subjects.js';
import { testConfig } from '../helpers/config.js';
import { startFakeLlm, chatAnswer } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';

t.test('which configured models retire, and by which key', async (t) => {
  const config = testConfig({ natsUrl: 'nats://127.0.0.1:1', extra: { llm: { anthropic: { model: 'claude-sonnet-4-5', model_routing: { sql: 'claude-sonnet-4-5-20250929', chat: 'claude-haiku-4-5' } } } } });
  const before = retiringModels(config, new Date('2026-11-01T00:00:00Z'));
  t.same(before.map((m) => [m.key, m.model, m.gone]), [
    ['llm.anthropic.model', 'claude-sonnet-4-5', false],
    ['llm.anthropic.model_routing.sql', 'claude-sonnet-4-5-20250929', false],
  ]);
  t.ok(retiringModels(config, new Date('2026-12-01T00:00:00Z')).every((m) => m.gone && m.use === 'claude-sonnet-5-5'));
  const current = testConfig({ natsUrl: 'nats://127.0.0.1:1', extra: { llm: { anthropic: { model: 'claude-sonnet-5-5' } } } });
  t.same(retiringModels(current), []);
});

t.test('the llm actor says so once at start, not once per question', async (t) => {
  const nats = await startNats();
  t.teardown(() => nats.stop());
  const fake = await startFakeLlm();
  t.teardown(() => fake.close());
  fake.fallback(() => ({ text: chatAnswer('hi') }));
  const lines: Array<Record<string, unknown>> = [];
  const sink = new PassThrough();
  sink.on('data', (b: Buffer) => { for (const l of b.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>); });
  const log = createLogger({ svc: 'test', level: 'warn', destination: sink });
  const config = testConfig({ natsUrl: nats.url, llmUrl: fake.url, extra: { llm: { anthropic: { model: 'claude-sonnet-4-5' } } } });
  const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'llm', log, strict: true });
  t.teardown(() => bus.close());
  const actor = await start({ bus, config, log });
  t.teardown(() => actor.stop());
  for (let i = 0; i < 3; i++) await bus.request(LlmComplete, { task: 'chat', system: 's', messages: [{ role: 'user', content: `q${i}` }] }, { requestId: `r${i}` });
  await new Promise((r) => setTimeout(r, 50));
  const said = lines.filter((l) => String(l.msg).includes('llm.anthropic.model is claude-sonnet-4-5'));
  t.equal(said.length, 1, 'one line');
  t.match(String(said[0]?.msg), /set llm\.anthropic\.model to claude-sonnet-5-5/);
});

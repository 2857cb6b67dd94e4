/**
 * config/runtime.ts noteLocalChange / supersededHere, through cli/config-sync.ts on a real bus: the
 * settings actor applies a change at once and announces it; its own announcement comes back a
 * moment later and must not undo a newer change of the same key made meanwhile (`set false`,
 * `reset` — then the late "false" switched the key off again until the reset's own event came).
 */
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { startConfigSync } from '../../cli/config-sync.js';
import { applyOverride, noteLocalChange, supersededHere } from '../../config/runtime.js';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import { ConfigChangedEvt } from '../../protocol/subjects.js';
import { testConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';

const base = () => testConfig({ natsUrl: 'nats://127.0.0.1:1', db: { host: '127.0.0.1', port: 5432, name: 'x', user: 'postgres' }, llmUrl: 'http://127.0.0.1:1' });

t.test('an announcement overtaken here is skipped; the newest is applied; other processes\' always', async (t) => {
  const config = base();
  noteLocalChange(config, 'mcp.sse.enabled', 'a');
  noteLocalChange(config, 'mcp.sse.enabled', 'b');
  t.equal(supersededHere(config, 'mcp.sse.enabled', 'a'), true, 'a was overtaken by b here');
  t.equal(supersededHere(config, 'mcp.sse.enabled', 'b'), false, 'b is the newest: applied (again)');
  t.equal(supersededHere(config, 'mcp.sse.enabled', 'b'), false, 'and forgotten after');
  t.equal(supersededHere(config, 'mcp.sse.enabled', 'z'), false, 'another process\'s change is applied');
  noteLocalChange(config, 'k1', 'x');
  t.equal(supersededHere(config, 'k2', 'x'), false, 'by key');
  t.equal(supersededHere(base(), 'k1', 'x'), false, 'by config (each process its own)');
});

t.test('through the sync on a real bus: set false, reset, then the late announcements leave it on', async (t) => {
  const nats = await startNats();
  t.teardown(() => nats.stop());
  const log = createLogger({ svc: 'test', level: 'silent' });
  const bus = await Bus.connect({ url: nats.url, prefix: `t${randomUUID().slice(0, 8)}`, name: 'config-sync-test', log });
  t.teardown(() => bus.close());
  await bus.ensureEventStream({ maxAgeMs: 60_000 });
  const config = base();
  const seen: boolean[] = [];
  const stop = startConfigSync(bus, config, log);
  t.teardown(stop);
  const key = 'mcp.sse.enabled';
  const ctx = { requestId: randomUUID() };
  const announce = (reset: boolean) => ({ id: randomUUID(), ts: new Date().toISOString(), request_id: ctx.requestId, user: 'admin', key, reset, ...(reset ? {} : { value: false }) });

  // what the settings actor does, twice in a row: note, apply, announce
  const off = announce(false);
  noteLocalChange(config, key, off.id);
  applyOverride(config, key, false);
  bus.publish(ConfigChangedEvt, off, ctx);
  const on = announce(true);
  noteLocalChange(config, key, on.id);
  applyOverride(config, key, undefined);
  t.equal(config.mcp.sse.enabled, true);

  // the "false" comes back (events are read every 100 ms) before the reset's own announcement
  // (here: held back a second, as when the two fall in different reads)
  const watch = async (ms: number) => {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      seen.push(config.mcp.sse.enabled);
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  await watch(1_000);
  bus.publish(ConfigChangedEvt, on, ctx);
  await watch(1_000);
  t.notOk(seen.includes(false), 'never switched off again by the late "false"');

  // a change announced by another process is applied
  bus.publish(ConfigChangedEvt, { ...announce(false), id: randomUUID() }, ctx);
  const end = Date.now() + 3_000;
  while (config.mcp.sse.enabled && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  t.equal(config.mcp.sse.enabled, false, 'another process\'s change applies');
});

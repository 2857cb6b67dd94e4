/**
 * The event readers (`Bus.consumeEvents`): batched pulls against a real nats-server with
 * JetStream. What a failing handler, a message that is not JSON, a stop in the middle of the
 * stream and a consumer removed by somebody else do to what is read: nothing is lost, nothing
 * blocks the events behind it.
 */
import t from 'tap';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import { eventsStreamName, QueryFailedEvt } from '../../protocol/subjects.js';
import { startNats } from '../helpers/nats.js';

const log = createLogger({ svc: 'test', level: 'silent' });
const nats = await startNats();
const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'reader', log, strict: true });
const publisher = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'publisher', log, strict: true });
await bus.ensureEventStream();
const nc = await connect({ servers: nats.url });
const jsm = await jetstreamManager(nc);
const stream = eventsStreamName('cortado');
t.teardown(async () => {
  await nc.close();
  await publisher.close();
  await bus.close();
  await nats.stop();
});

const event = (id: string) => ({ id, ts: new Date().toISOString(), request_id: `r-${id}`, code: 'INTERNAL' as const, message: id });
async function publish(...ids: string[]): Promise<void> {
  for (const id of ids) publisher.publish(QueryFailedEvt, event(id), { requestId: `r-${id}` });
  await publisher.flush();
}
async function until(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
/** the durable has everything of the stream delivered and acknowledged */
async function drained(durable: string): Promise<boolean> {
  const [si, ci] = await Promise.all([jsm.streams.info(stream), jsm.consumers.info(stream, durable)]);
  return ci.num_pending === 0 && ci.num_ack_pending === 0 && ci.ack_floor.stream_seq >= si.state.last_seq;
}

t.test('a handler that fails gets the event again; the events behind it are not held up', async (t) => {
  const handled: string[] = [];
  let tries = 0;
  const reader = await bus.consumeEvents('failing', async (_s, data) => {
    const id = (data as { id: string }).id;
    if (id === 'f-2' && ++tries === 1) throw new Error('the store is down for a moment');
    handled.push(id);
  }, { retryDelayMs: 200, intervalMs: 20 });
  t.teardown(() => reader.stop());
  await publish('f-1', 'f-2', 'f-3');
  await until('all three handled', () => handled.length === 3);
  t.same(handled.slice(0, 2), ['f-1', 'f-3'], 'the event after the failed one is handled at once');
  t.equal(handled[2], 'f-2', 'the failed one comes again and is handled');
  t.equal(tries, 2, 'tried twice: failed, then handled');
  await until('everything acknowledged', () => drained('failing'));
});

t.test('a message that is not JSON is dropped (not redelivered) and the stream goes on', async (t) => {
  const handled: string[] = [];
  const reader = await bus.consumeEvents('garbage', async (_s, data) => { handled.push((data as { id: string }).id); }, { intervalMs: 20 });
  t.teardown(() => reader.stop());
  nc.publish('cortado.evt.query.failed', new TextEncoder().encode('{not json'));
  await nc.flush();
  await publish('g-1');
  await until('the good event handled', () => handled.includes('g-1'));
  await until('nothing left pending (the bad one is terminated)', () => drained('garbage'));
  await new Promise((r) => setTimeout(r, 200));
  t.same(handled.filter((id) => id === 'g-1'), ['g-1'], 'handled once');
});

t.test('a reader stopped mid-stream loses nothing: the next one carries on from there', async (t) => {
  const first: string[] = [];
  const reader = await bus.consumeEvents('resume', async (_s, data) => { first.push((data as { id: string }).id); }, { intervalMs: 20, startAt: 'new' });
  await publish('s-1', 's-2');
  await until('the first two handled', () => first.length === 2);
  await reader.stop();
  await publish('s-3', 's-4');
  const second: string[] = [];
  const again = await bus.consumeEvents('resume', async (_s, data) => { second.push((data as { id: string }).id); }, { intervalMs: 20 });
  t.teardown(() => again.stop());
  await until('the rest handled', () => second.length === 2);
  t.same([...first, ...second], ['s-1', 's-2', 's-3', 's-4'], 'each event once, in order');
});

t.test('a consumer removed by somebody else is made again, and reading goes on', async (t) => {
  const handled: string[] = [];
  const reader = await bus.consumeEvents('removed', async (_s, data) => { handled.push((data as { id: string }).id); }, { intervalMs: 20, startAt: 'new' });
  t.teardown(() => reader.stop());
  await publish('d-1');
  await until('d-1 handled', () => handled.includes('d-1'));
  await jsm.consumers.delete(stream, 'removed');
  // the next pull goes unanswered; the reader then finds its consumer gone and makes it again
  await until('the consumer is back', () => jsm.consumers.info(stream, 'removed').then(() => true, () => false), 15_000);
  await publish('d-2');
  await until('d-2 handled', () => handled.includes('d-2'));
  t.same(handled, ['d-1', 'd-2']);
});

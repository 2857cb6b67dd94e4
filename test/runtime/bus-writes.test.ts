/**
 * The bus batches its writes: everything it sends in one turn of the event loop (replies,
 * requests, events, acks) leaves in one socket write, in the order it was sent, and nothing
 * queued is lost on flush() or close(). The bus under test reaches a real nats-server through
 * a TCP relay, so its socket is the one socket of this process that writes to the relay's
 * port: the test counts the write calls made on it.
 */
import net from 'node:net';
import t from 'tap';
import { connect } from '@nats-io/transport-node';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import { QueryFailedEvt } from '../../protocol/subjects.js';
import { startNats } from '../helpers/nats.js';

const log = createLogger({ svc: 'test', level: 'silent' });

/** A relay to the nats-server; `writes()` counts the socket writes of clients connected to it. */
async function relay(port: number): Promise<{ url: string; writes: () => number; close: () => Promise<void> }> {
  let writes = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    sockets.add(client).add(upstream);
    client.on('data', (d) => upstream.write(d));
    upstream.on('data', (d) => client.write(d));
    const end = () => { client.destroy(); upstream.destroy(); };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const relayPort = (server.address() as net.AddressInfo).port;
  const write = net.Socket.prototype.write;
  net.Socket.prototype.write = function (this: net.Socket, ...args: Parameters<typeof write>) {
    if (this.remotePort === relayPort) writes++;
    return write.apply(this, args);
  } as typeof write;
  return {
    url: `nats://127.0.0.1:${relayPort}`,
    writes: () => writes,
    close: async () => {
      net.Socket.prototype.write = write;
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

const event = (i: number) => ({ id: `e${i}`, ts: new Date().toISOString(), request_id: `r${i}`, code: 'INTERNAL' as const, message: `m${i}` });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('writes of one turn leave together, in order, and none is lost', async (t) => {
  const nats = await startNats();
  t.teardown(() => nats.stop());
  const via = await relay(nats.port);
  t.teardown(() => via.close());
  const watcher = await connect({ servers: nats.url });
  t.teardown(() => watcher.close());

  await t.test('acks of a batch of events are sent, a few writes for all of them', async (t) => {
    const bus = await Bus.connect({ url: via.url, prefix: 'cortado', name: 'consumer', log, strict: true });
    t.teardown(() => bus.close());
    t.ok(await bus.ensureEventStream());
    const seen = new Set<string>();
    const consumer = await bus.consumeEvents('writes_test', async (_subject, data) => {
      await Promise.resolve(); // a handler that awaits, as every real one does
      seen.add((data as { id: string }).id);
    });
    t.teardown(() => consumer.stop());
    await bus.flush();
    await sleep(100); // the consumer's first pull request is out

    // 40 events published at once arrive in the consumer together
    const publisher = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'publisher', log, strict: true });
    const before = via.writes();
    for (let i = 0; i < 40; i++) publisher.publish(QueryFailedEvt, event(i), { requestId: `r${i}` });
    await publisher.flush();
    await publisher.close();
    const until = Date.now() + 5_000;
    while (seen.size < 40 && Date.now() < until) await sleep(10);
    t.equal(seen.size, 40, 'every event handled');
    await sleep(200);
    const writes = via.writes() - before;
    t.ok(writes <= 10, `40 acks (and the pull requests) in ${writes} writes`);

    // acked for real: the durable consumer holds nothing pending
    const { jetstreamManager } = await import('@nats-io/jetstream');
    const info = await (await jetstreamManager(watcher)).consumers.info('CORTADO_EVENTS', 'writes_test');
    t.equal(info.num_ack_pending, 0, 'no event is waiting for an ack');
    t.equal(info.num_pending, 0, 'no event is waiting for delivery');
  });

  await t.test('replies finished by separate callbacks of one turn leave together', async (t) => {
    const server = await Bus.connect({ url: via.url, prefix: 'cortado', name: 'server', log, strict: true });
    const caller = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'caller', log, strict: true });
    t.teardown(async () => { await server.close(); await caller.close(); });
    const { defineRequest } = await import('../../protocol/define.js');
    const Type = (await import('typebox')).default;
    const Echo = defineRequest({ subject: 'test.writes', owner: 'writes', timeoutMs: 2_000, request: Type.Object({ n: Type.Integer() }), reply: Type.Object({ n: Type.Integer() }) });
    // each handler finishes in its own callback (a timer here; a database or model answer in
    // the pipeline), all of them in the same turn of the event loop
    server.serve(Echo, async (input) => {
      await sleep(30);
      return { n: input.n * 2 };
    });
    await server.flush();
    await sleep(50);
    const before = via.writes();
    const replies = await Promise.all(Array.from({ length: 30 }, (_, n) => caller.request(Echo, { n }, { requestId: `w${n}` })));
    t.same(replies.map((r) => r.n), Array.from({ length: 30 }, (_, n) => n * 2), 'every reply, to its own request');
    const writes = via.writes() - before;
    t.ok(writes <= 8, `30 replies in ${writes} writes`);
  });

  await t.test('order is kept, and flush() and close() send what is queued', async (t) => {
    const got: string[] = [];
    const sub = watcher.subscribe('cortado.evt.>', { callback: (_e, m) => { got.push((m.json() as { id: string }).id); } });
    await watcher.flush();
    const bus = await Bus.connect({ url: via.url, prefix: 'cortado', name: 'closing', log, strict: true });
    for (let i = 100; i < 110; i++) bus.publish(QueryFailedEvt, event(i), { requestId: `r${i}` });
    await bus.flush();
    await watcher.flush();
    await sleep(50);
    t.same(got, Array.from({ length: 10 }, (_, i) => `e${100 + i}`), 'flush(): all ten, in the order published');

    bus.publish(QueryFailedEvt, event(200), { requestId: 'r200' });
    await bus.close(); // in the same turn as the publish: the queued write still goes out
    await sleep(100);
    await watcher.flush();
    t.equal(got.at(-1), 'e200', 'a publish right before close() is not lost');
    sub.unsubscribe();
  });
});

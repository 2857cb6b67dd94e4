/**
 * Events that survive the broker. The outbox on its own (what it sends, when it sends again,
 * how it is bounded), then the bus with a real nats-server that is killed (`kill -9`) and
 * started again on the same port and store: durable events wait and are stored once each; a
 * request whose answer cannot arrive fails at once; one made while the broker is away goes
 * when it is back; a full outbox and a stream JetStream cannot keep are said by
 * `eventTrouble()`; a shutdown flushes what waits, and names what it could not.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import t from 'tap';
import Type from 'typebox';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { Bus } from '../../runtime/bus.js';
import { defineEvent, defineRequest } from '../../protocol/define.js';
import { createLogger, type Logger } from '../../runtime/log.js';
import { backoff, Outbox, type OutboxItem } from '../../runtime/outbox.js';
import { EVENTS, eventsStreamName, QueryFailedEvt } from '../../protocol/subjects.js';
import { startBroker } from '../helpers/broker.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`);
    await sleep(20);
  }
}

/** A logger whose lines a test reads. */
function capture(level = 'info'): { log: Logger; lines: Array<Record<string, any>> } {
  const lines: Array<Record<string, any>> = [];
  const sink = new Writable({ write(chunk, _e, cb) { for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l)); cb(); } });
  return { log: createLogger({ svc: 'test', level, destination: sink }), lines };
}

const item = (n: number): OutboxItem => ({ id: `ev-${n}`, subject: 'evt.query.failed', requestId: `rq-${n}` });

t.test('durable is one flag on the event definition, and needs an id', async (t) => {
  const Fact = Type.Object({ id: Type.String(), note: Type.String() });
  t.equal(defineEvent({ subject: 'evt.test.noted', payload: Fact, durable: true }).durable, true);
  t.equal(defineEvent({ subject: 'evt.test.noted', payload: Fact }).durable, false, 'off unless asked for');
  t.throws(() => defineEvent({ subject: 'evt.test.bare', payload: Type.Object({ note: Type.String() }), durable: true }), /needs a required string id/);
  t.throws(() => defineEvent({ subject: 'evt.test.maybe', payload: Type.Object({ id: Type.Optional(Type.String()) }), durable: true }), /needs a required string id/);
  // the audit records every event of the stream: each of them is durable
  t.same(EVENTS.filter((e) => !e.durable).map((e) => e.subject), []);
});

t.test('the outbox on its own', async (t) => {
  await t.test('an event leaves at once and is kept until stored', async (t) => {
    const sent: Array<[string, string]> = [];
    const ob = new Outbox({ max: 10, log: capture().log, send: (i, key) => sent.push([i.id, key]) });
    t.teardown(() => ob.stop());
    t.ok(ob.add(item(1)) && ob.add(item(2)));
    t.same(sent.map((s) => s[0]), ['ev-1', 'ev-2'], 'sent when added, nobody waits for the acknowledgement');
    t.equal(ob.size, 2, 'kept until acknowledged');
    ob.settle(sent[0]![1], 'stored');
    ob.settle(sent[0]![1], 'stored'); // a late answer to a second copy: nothing happens
    t.equal(ob.size, 1);
    const settled = ob.settled(Date.now() + 5_000);
    ob.settle(sent[1]![1], 'stored');
    await settled;
    t.equal(ob.size, 0);
    t.match(ob.counts, { added: 2, stored: 2, resent: 0 });
  });

  await t.test('no acknowledgement in time, or "not now": sent again, with backoff', async (t) => {
    const sent: Array<[string, number]> = [];
    const { log, lines } = capture('warn');
    const ob = new Outbox({ max: 10, log, ackWaitMs: 150, retryMinMs: 200, retryMaxMs: 400, send: (i) => sent.push([i.id, Date.now()]) });
    t.teardown(() => ob.stop());
    ob.add(item(1));
    await until('sent again after the ack wait', () => sent.length >= 2, 2_000);
    t.ok(sent[1]![1] - sent[0]![1] >= 140, `again after ${sent[1]![1] - sent[0]![1]} ms (ack wait 150)`);
    t.ok(lines.some((l) => l.msg.includes('events wait in the outbox') && l.why === 'no acknowledgement in time'), 'said, as a warning');

    const sent2: Array<[string, string, number]> = [];
    const ob2 = new Outbox({ max: 10, log, ackWaitMs: 10_000, retryMinMs: 200, retryMaxMs: 400, send: (i, key) => sent2.push([i.id, key, Date.now()]) });
    t.teardown(() => ob2.stop());
    ob2.add(item(2));
    ob2.settle(sent2[0]![1], 'retry', 'insufficient resources');
    await until('sent again after the backoff', () => sent2.length >= 2, 2_000);
    const waited = sent2[1]![2] - sent2[0]![2];
    t.ok(waited >= 90 && waited < 1_000, `again after ${waited} ms (backoff 200 ms, jitter 50–100 %)`);
    t.equal(sent2[1]![0], 'ev-2', 'the same event (its id is its message id: the stream keeps one)');
    t.equal(ob2.counts.resent, 1);
  });

  await t.test('backoff doubles up to its cap, with jitter', async (t) => {
    for (let a = 1; a <= 8; a++) {
      const base = Math.min(5_000, 250 * 2 ** (a - 1));
      for (let i = 0; i < 20; i++) {
        const d = backoff(a, 250, 5_000);
        if (d < base * 0.5 - 1 || d > base) t.fail(`attempt ${a}: ${d} ms outside ${base / 2}–${base}`);
      }
    }
    t.pass('within 50–100 % of min·2^(n-1), capped');
  });

  await t.test('paused while the connection is away; everything goes again when it is back', async (t) => {
    const sent: string[] = [];
    const ob = new Outbox({ max: 10, log: capture().log, send: (i) => sent.push(i.id) });
    t.teardown(() => ob.stop());
    ob.add(item(1));
    ob.pause();
    ob.add(item(2));
    ob.add(item(3));
    await sleep(150);
    t.same(sent, ['ev-1'], 'nothing is sent while paused');
    ob.resume();
    await until('all sent again', () => sent.length === 4, 2_000);
    t.same(sent.slice(1).sort(), ['ev-1', 'ev-2', 'ev-3'], 'the one sent before the loss too');
  });

  await t.test('bounded: full at max, past the limit an event is dropped and said', async (t) => {
    const { log, lines } = capture();
    const ob = new Outbox({ max: 3, limit: 4, log, send: () => undefined });
    t.teardown(() => ob.stop());
    for (let n = 1; n <= 2; n++) ob.add(item(n));
    t.notOk(ob.full);
    ob.add(item(3));
    t.ok(ob.full, 'full at max');
    t.ok(lines.some((l) => l.level === 'error' && l.msg.includes('outbox is full')), 'said once, at error level');
    t.ok(ob.add(item(4)), 'the events of work under way still get in, up to the limit');
    t.notOk(ob.add(item(5)), 'past the limit: dropped');
    const dropped = lines.find((l) => l.msg.includes('an event was dropped'));
    t.match(dropped, { level: 'error', event_id: 'ev-5', rid: 'rq-5' }, 'naming the event');
    t.equal(ob.counts.dropped, 1);
  });

  await t.test('refused for good: dropped and said; shutdown: settled() gives up at the deadline', async (t) => {
    const { log, lines } = capture();
    const keys: string[] = [];
    const ob = new Outbox({ max: 10, log, send: (_i, key) => keys.push(key) });
    ob.add(item(1));
    ob.add(item(2));
    ob.settle(keys[0]!, 'refused', 'message size exceeds maximum allowed');
    t.match(lines.find((l) => l.msg.includes('refused an event for good')), { level: 'error', event_id: 'ev-1', why: 'message size exceeds maximum allowed' });
    const started = Date.now();
    await ob.settled(Date.now() + 200);
    t.ok(Date.now() - started < 1_000, 'settled() returns at its deadline');
    t.same(ob.stop().map((i) => i.id), ['ev-2'], 'stop() hands back what was never stored');
  });
});

// ---- the bus, with a broker that dies ------------------------------------------------------

const Echo = defineRequest({
  subject: 'test.outbox.echo', owner: 'outbox-echo', timeoutMs: 20_000,
  request: Type.Object({ text: Type.String(), delayMs: Type.Optional(Type.Integer()) }),
  reply: Type.Object({ text: Type.String() }),
});

const LateEcho = defineRequest({
  subject: 'test.outbox.late', owner: 'outbox-late', timeoutMs: 20_000,
  request: Type.Object({ text: Type.String() }),
  reply: Type.Object({ text: Type.String() }),
});

const event = (id: string) => ({ id, ts: new Date().toISOString(), request_id: `r-${id}`, code: 'INTERNAL' as const, message: id });

t.test('the bus with a broker that is killed and comes back', async (t) => {
  const broker = await startBroker();
  t.teardown(() => broker.stop());
  const stream = eventsStreamName('cortado');
  /** every id the stream holds, with how many copies */
  async function stored(): Promise<Map<string, number>> {
    const nc = await connect({ servers: broker.url });
    try {
      const js = (await import('@nats-io/jetstream')).jetstream(nc);
      const c = await js.consumers.get(stream);
      const ids = new Map<string, number>();
      const info = await (await jetstreamManager(nc)).streams.info(stream);
      if (info.state.messages === 0) return ids;
      const it = await c.fetch({ max_messages: info.state.messages, expires: 2_000 });
      for await (const m of it) {
        const id = m.headers?.get('Nats-Msg-Id') ?? '';
        ids.set(id, (ids.get(id) ?? 0) + 1);
        if (m.info.pending === 0) break;
      }
      return ids;
    } finally {
      await nc.close();
    }
  }

  const { log, lines } = capture('info');
  const bus = await Bus.connect({ url: broker.url, prefix: 'cortado', name: 'outbox-bus', log, strict: true, outboxMaxEvents: 60 });
  t.teardown(() => bus.close(Date.now() + 1_000));
  t.ok(await bus.ensureEventStream(), 'the stream is kept');
  bus.serve(Echo, async (input) => {
    if (input.delayMs) await sleep(input.delayMs);
    return { text: input.text.toUpperCase() };
  });
  await bus.flush();

  await t.test('a durable event is acknowledged and stored once, under its id, even when sent twice', async (t) => {
    const id = randomUUID();
    bus.publish(QueryFailedEvt, event(id), { requestId: 'r1' });
    t.equal(bus.outboxStats().waiting, 1, 'publish() returned before the acknowledgement: the outbox holds it');
    bus.publish(QueryFailedEvt, event(id), { requestId: 'r1' }); // a retry, as the outbox would send
    await bus.flush();
    t.equal(bus.outboxStats().waiting, 0, 'both acknowledged');
    const ids = await stored();
    t.equal(ids.get(id), 1, 'the stream keeps one copy (Nats-Msg-Id = the event id)');
  });

  await t.test('kill -9 under way: what waits is stored once the broker is back, each once', async (t) => {
    const before = [randomUUID(), randomUUID()];
    for (const id of before) bus.publish(QueryFailedEvt, event(id), { requestId: 'r-before' });
    // a request on its way when the broker dies: its answer cannot arrive, it fails now
    const inFlight = bus.request(Echo, { text: 'slow', delayMs: 800 }, { requestId: 'r-slow' }, { remote: true }).then(
      () => ({ ok: true as const, at: Date.now() }),
      (err: { code: string }) => ({ ok: false as const, code: err.code, at: Date.now() }),
    );
    await sleep(200);
    const killedAt = Date.now();
    await broker.kill();
    const failed = await inFlight;
    t.match(failed, { ok: false, code: 'ACTOR_UNAVAILABLE' }, 'the request in flight fails with a clear code');
    t.ok(failed.at - killedAt < 3_000, `at once (${failed.at - killedAt} ms), not at its 20 s timeout`);

    await until('the bus saw the loss', () => lines.some((l) => l.msg === 'lost the connection to NATS: reconnecting'));
    const during = Array.from({ length: 30 }, () => randomUUID());
    for (const id of during) bus.publish(QueryFailedEvt, event(id), { requestId: 'r-during' });
    t.ok(bus.outboxStats().waiting >= 30, `${bus.outboxStats().waiting} events wait in the outbox`);
    t.equal(bus.eventTrouble(), undefined, 'under outbox_max_events (60): questions are still taken');
    const held = bus.request(Echo, { text: 'later' }, { requestId: 'r-later' }, { remote: true });

    await sleep(1_500);
    await broker.start();
    t.same(await held, { text: 'LATER' }, 'a request made while the broker was away went when it came back');
    await until('every waiting event stored', () => bus.outboxStats().waiting === 0, 15_000);
    const ids = await stored();
    for (const id of [...before, ...during]) if (ids.get(id) !== 1) t.fail(`${id}: ${ids.get(id) ?? 0} copies in the stream`);
    t.pass(`all ${before.length + during.length} events in the stream, once each`);
    t.ok(lines.some((l) => l.msg === 'reconnected to NATS'));
  });

  await t.test('right after the broker is back, an actor not resubscribed yet is waited for', async (t) => {
    const lost = () => lines.filter((l) => l.msg === 'lost the connection to NATS: reconnecting').length;
    const back = () => lines.filter((l) => l.msg === 'reconnected to NATS').length;
    const [lostBefore, backBefore] = [lost(), back()];
    await broker.kill();
    await until('the bus saw the loss', () => lost() > lostBefore);
    const answer = bus.request(LateEcho, { text: 'anyone?' }, { requestId: 'r-late' });
    await broker.start();
    await until('the bus is back', () => back() > backBefore, 15_000);
    // the request went out on the reconnect and found nobody; the actor's process comes back later
    await sleep(600);
    const late = await Bus.connect({ url: broker.url, prefix: 'cortado', name: 'late-actor', log: capture().log, strict: true });
    t.teardown(() => late.close(Date.now() + 500));
    late.serve(LateEcho, async (input) => ({ text: `${input.text} here` }));
    t.same(await answer, { text: 'anyone? here' }, 'sent again until the actor was there: answered');
  });

  await t.test('the outbox full: eventTrouble() refuses, until the broker stored what waits', async (t) => {
    const lostBefore = lines.filter((l) => l.msg === 'lost the connection to NATS: reconnecting').length;
    await broker.kill();
    await until('the bus saw the loss', () => lines.filter((l) => l.msg === 'lost the connection to NATS: reconnecting').length > lostBefore);
    for (let i = 0; i < 60; i++) bus.publish(QueryFailedEvt, event(randomUUID()), { requestId: 'r-full' });
    const trouble = bus.eventTrouble();
    t.match(trouble, { code: 'AUDIT_UNAVAILABLE', details: { reason: 'outbox_full' } }, 'full at outbox_max_events');
    t.equal(trouble?.httpStatus, 503);
    t.match(trouble?.message, /60 events wait/);
    await broker.start();
    await until('stored', () => bus.outboxStats().waiting === 0, 15_000);
    t.equal(bus.eventTrouble(), undefined, 'room again: questions are taken');
  });

  await t.test('the stream removed under it (a broker started on an empty store): made again', async (t) => {
    const nc = await connect({ servers: broker.url });
    t.teardown(() => nc.close());
    await (await jetstreamManager(nc)).streams.delete(stream);
    const id = randomUUID();
    bus.publish(QueryFailedEvt, event(id), { requestId: 'r-gone' });
    await until('stored', () => bus.outboxStats().waiting === 0, 15_000);
    t.equal((await stored()).get(id), 1, 'the event is in the new stream');
  });

  await t.test('shutdown: what waits gets the grace; what is left is named', async (t) => {
    const second = capture('info');
    const a = await Bus.connect({ url: broker.url, prefix: 'cortado', name: 'closing-a', log: second.log, strict: true });
    t.ok(await a.ensureEventStream());
    await broker.kill();
    await until('a saw the loss', () => second.lines.some((l) => l.msg === 'lost the connection to NATS: reconnecting'));
    const flushed = [randomUUID(), randomUUID()];
    for (const id of flushed) a.publish(QueryFailedEvt, event(id), { requestId: 'r-grace' });
    const closing = a.close(Date.now() + 15_000);
    await sleep(500);
    await broker.start();
    await closing;
    const ids = await stored();
    t.ok(flushed.every((id) => ids.get(id) === 1), 'the broker came back within the grace: stored before the process ended');
    t.notOk(second.lines.some((l) => l.msg.includes('never stored')), 'nothing lost');

    const third = capture('info');
    const b = await Bus.connect({ url: broker.url, prefix: 'cortado', name: 'closing-b', log: third.log, strict: true });
    t.ok(await b.ensureEventStream());
    await broker.kill();
    await until('b saw the loss', () => third.lines.some((l) => l.msg === 'lost the connection to NATS: reconnecting'));
    const lost = [randomUUID(), randomUUID(), randomUUID()];
    for (const id of lost) b.publish(QueryFailedEvt, event(id), { requestId: 'r-lost' });
    const started = Date.now();
    await b.close(Date.now() + 700);
    t.ok(Date.now() - started < 5_000, `close() keeps to its deadline (${Date.now() - started} ms)`);
    const line = third.lines.find((l) => l.msg.includes('never stored'));
    t.match(line, { level: 'error', lost: 3 }, 'what is left is said at error level');
    t.same(line?.events.map((e: { id: string }) => e.id).sort(), [...lost].sort(), 'by event id');
    const backBefore = lines.filter((l) => l.msg === 'reconnected to NATS').length;
    await broker.start();
    await until('the main bus is back', () => lines.filter((l) => l.msg === 'reconnected to NATS').length > backBefore, 15_000);
  });
});

t.test('a broker whose JetStream cannot keep the stream: said, events still flow', async (t) => {
  const broker = await startBroker({ maxFileStore: '1MB' }); // the stream asks for 1 GB
  t.teardown(() => broker.stop());
  const { log, lines } = capture('warn');
  const bus = await Bus.connect({ url: broker.url, prefix: 'cortado', name: 'no-storage', log, strict: true });
  t.teardown(() => bus.close(Date.now() + 500));
  t.equal(await bus.ensureEventStream(), false);
  const trouble = bus.eventTrouble();
  t.match(trouble, { code: 'AUDIT_UNAVAILABLE', details: { reason: 'stream_not_kept' } });
  t.match(trouble?.message, /insufficient storage/, 'with what JetStream said');
  t.ok(lines.some((l) => l.level === 'warn' && /does not keep the event stream/.test(l.msg)));

  const nc = await connect({ servers: broker.url });
  t.teardown(() => nc.close());
  const got: string[] = [];
  nc.subscribe('cortado.evt.>', { callback: (_e, m) => { got.push((m.json() as { id: string }).id); } });
  await nc.flush();
  bus.publish(QueryFailedEvt, event('plain-1'), { requestId: 'r' });
  await bus.flush();
  await until('delivered', () => got.length === 1, 3_000);
  t.same(got, ['plain-1'], 'a durable event is still published, as a plain message');
  t.equal(bus.outboxStats().waiting, 0, 'and not held: nothing could store it');
});

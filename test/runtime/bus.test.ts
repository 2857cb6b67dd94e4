import t from 'tap';
import Type from 'typebox';
import { Bus } from '../../runtime/bus.js';
import { defineRequest } from '../../protocol/define.js';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { startNats } from '../helpers/nats.js';

const Echo = defineRequest({
  subject: 'test.echo', owner: 'echo', timeoutMs: 1_000,
  request: Type.Object({ text: Type.String(), delayMs: Type.Optional(Type.Integer()), fail: Type.Optional(Type.String()) }),
  reply: Type.Object({ text: Type.String(), rid: Type.String(), user: Type.Optional(Type.String()), who: Type.String() }),
});
const Nobody = defineRequest({ subject: 'test.nobody', owner: 'nobody', timeoutMs: 500, request: Type.Object({}), reply: Type.Object({}) });
const Big = defineRequest({ subject: 'test.big', owner: 'big', timeoutMs: 2_000, request: Type.Object({ n: Type.Integer() }), reply: Type.Object({ s: Type.String() }) });

const log = createLogger({ svc: 'test', level: 'silent' });

t.test('the bus over a real nats-server', async (t) => {
  const nats = await startNats();
  t.teardown(() => nats.stop());
  const mk = (name: string) => Bus.connect({ url: nats.url, prefix: 'cortado', name, log, strict: true });
  const a = await mk('a');
  const b = await mk('b');
  const caller = await mk('caller');
  t.teardown(async () => { await a.close(); await b.close(); await caller.close(); });

  for (const [bus, who] of [[a, 'a'], [b, 'b']] as const) {
    bus.serve(Echo, async (input, ctx) => {
      if (input.delayMs) await new Promise((r) => setTimeout(r, input.delayMs));
      if (input.fail === 'cortado') throw new CortadoError('NOT_FOUND', 'no such thing');
      if (input.fail === 'plain') throw new Error('secret internals: password=hunter2');
      return { text: input.text.toUpperCase(), rid: ctx.requestId, ...(ctx.user ? { user: ctx.user } : {}), who };
    });
  }
  b.serve(Big, async (input) => ({ s: 'x'.repeat(input.n) }));
  await a.flush(); await b.flush();

  await t.test('request/reply carries the request id and user', async (t) => {
    const r = await caller.request(Echo, { text: 'hi' }, { requestId: 'rid-1', user: 'alice' });
    t.equal(r.text, 'HI');
    t.equal(r.rid, 'rid-1');
    t.equal(r.user, 'alice');
  });

  await t.test('the queue group spreads requests over both copies', async (t) => {
    const seen = new Set<string>();
    const replies = await Promise.all(Array.from({ length: 40 }, (_, i) => caller.request(Echo, { text: String(i) }, { requestId: `q${i}` })));
    for (const r of replies) seen.add(r.who);
    t.same([...seen].sort(), ['a', 'b']);
  });

  await t.test('no actor running → ACTOR_UNAVAILABLE', async (t) => {
    await t.rejects(caller.request(Nobody, {}, { requestId: 'x' }), { code: 'ACTOR_UNAVAILABLE' });
  });

  await t.test('no answer in time → TIMEOUT', async (t) => {
    await t.rejects(caller.request(Echo, { text: 'slow', delayMs: 400 }, { requestId: 'x' }, { timeoutMs: 100 }), { code: 'TIMEOUT' });
  });

  await t.test('a passed deadline shortens the wait', async (t) => {
    const started = Date.now();
    await t.rejects(caller.request(Echo, { text: 'slow', delayMs: 500 }, { requestId: 'x', deadline: Date.now() + 80 }), { code: 'TIMEOUT' });
    t.ok(Date.now() - started < 400);
  });

  await t.test('a message that breaks the contract → VALIDATION_FAILED with the path', async (t) => {
    const err = await caller.request(Echo, { text: 42 } as never, { requestId: 'x' }).catch((e: unknown) => e) as CortadoError;
    t.equal(err.code, 'VALIDATION_FAILED');
    t.match(JSON.stringify(err.details), /\/text/);
  });

  await t.test('errors cross the wire as codes; unknown failures leak nothing', async (t) => {
    await t.rejects(caller.request(Echo, { text: 'x', fail: 'cortado' }, { requestId: 'x' }), { code: 'NOT_FOUND', message: 'no such thing' });
    const err = await caller.request(Echo, { text: 'x', fail: 'plain' }, { requestId: 'x' }).catch((e: unknown) => e) as CortadoError;
    t.equal(err.code, 'INTERNAL');
    t.notMatch(err.message, /hunter2|secret/);
  });

  await t.test('a reply over the server payload limit becomes LIMIT_EXCEEDED, not a hang', async (t) => {
    const err = await caller.request(Big, { n: 2 * 1024 * 1024 }, { requestId: 'x' }).catch((e: unknown) => e) as CortadoError;
    t.equal(err.code, 'LIMIT_EXCEEDED');
  });

  await t.test('events reach listeners and the JetStream stream', async (t) => {
    t.ok(await caller.ensureEventStream());
    const got: unknown[] = [];
    const stop = caller.listen('evt.>', (data, subject) => got.push([subject, data]));
    await caller.flush();
    const { QueryFailedEvt } = await import('../../protocol/subjects.js');
    a.publish(QueryFailedEvt, { id: 'e1', ts: new Date().toISOString(), request_id: 'r', code: 'INTERNAL', message: 'm' }, { requestId: 'r' });
    a.publish(QueryFailedEvt, { id: 'e1', ts: new Date().toISOString(), request_id: 'r', code: 'INTERNAL', message: 'm' }, { requestId: 'r' });
    await a.flush();
    await new Promise((r) => setTimeout(r, 100));
    stop();
    t.equal(got.length, 2, 'core subscribers see both publishes');
    const { jetstreamManager } = await import('@nats-io/jetstream');
    const { connect } = await import('@nats-io/transport-node');
    const nc = await connect({ servers: nats.url });
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info('CORTADO_EVENTS');
    t.equal(info.state.messages, 1, 'the stream keeps one copy: duplicates by event id are dropped');
    await nc.close();
  });

  await t.test('one in-flight registry: a running handler is named by request id and subject, then gone', async (t) => {
    // the handlers of the timed-out requests above still run a while
    for (let i = 0; i < 40 && a.busy() + b.busy() > 0; i++) await new Promise((r) => setTimeout(r, 50));
    t.same([...a.requestsInFlight(), ...b.requestsInFlight()], [], 'nothing runs before');
    const slow = caller.request(Echo, { text: 'named', delayMs: 800 }, { requestId: 'rid-inflight' }, { timeoutMs: 2_000 });
    await new Promise((r) => setTimeout(r, 100));
    const running = [...a.requestsInFlight(), ...b.requestsInFlight()];
    t.same(running, [{ rid: 'rid-inflight', subj: 'test.echo' }], 'the copy that took it names it');
    t.equal(a.busy(['echo']) + b.busy(['echo']), 1, 'and counts it for a stop');
    await slow;
    t.same([...a.requestsInFlight(), ...b.requestsInFlight()], [], 'gone once answered');
  });

  await t.test('stopServing waits for in-flight work, then the copy takes no more', async (t) => {
    const slow = caller.request(Echo, { text: 'inflight', delayMs: 300 }, { requestId: 'x' }, { timeoutMs: 2_000 });
    await new Promise((r) => setTimeout(r, 50));
    const [leftA, leftB] = await Promise.all([a.stopServing(['echo'], Date.now() + 2_000), b.stopServing(['echo'], Date.now() + 2_000)]);
    t.equal(leftA + leftB, 0);
    t.equal((await slow).text, 'INFLIGHT', 'the in-flight request was answered');
    await t.rejects(caller.request(Echo, { text: 'late' }, { requestId: 'x' }), { code: 'ACTOR_UNAVAILABLE' });
  });
});

t.test('prefer_local: in-process handlers are called directly, with the same rules', async (t) => {
  const nats = await startNats();
  t.teardown(() => nats.stop());
  const local = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'local', log, strict: true, preferLocal: true });
  const other = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'other', log, strict: true });
  t.teardown(async () => { await local.close(); await other.close(); });
  const handle = (who: string) => async (input: { text: string; delayMs?: number; fail?: string }, ctx: { requestId: string; user?: string }) => {
    if (input.delayMs) await new Promise((r) => setTimeout(r, input.delayMs));
    if (input.fail) throw new Error('internal detail');
    return { text: input.text, rid: ctx.requestId, who, ...(ctx.user ? { user: ctx.user } : {}) };
  };
  local.serve(Echo, handle('local'));
  other.serve(Echo, handle('other'));
  await local.flush(); await other.flush();

  const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => local.request(Echo, { text: String(i) }, { requestId: `l${i}`, user: 'u' })));
  t.same(new Set(replies.map((r) => r.who)), new Set(['local']), 'every call stayed in the process');
  t.equal(replies[3]?.rid, 'l3');
  t.equal(replies[3]?.user, 'u');

  const remote = await Promise.all(Array.from({ length: 30 }, (_, i) => local.request(Echo, { text: String(i) }, { requestId: `r${i}` }, { remote: true })));
  t.same([...new Set(remote.map((r) => r.who))].sort(), ['local', 'other'], 'remote: true goes through the queue group');

  await t.rejects(local.request(Echo, { text: 1 } as never, { requestId: 'bad' }), { code: 'VALIDATION_FAILED' }, 'input still validated');
  const err = await local.request(Echo, { text: 'x', fail: 'yes' }, { requestId: 'f' }).catch((e: CortadoError) => e);
  t.equal((err as CortadoError).code, 'INTERNAL', 'unknown failures normalised');
  t.notMatch((err as CortadoError).message, /internal detail/);
  await t.rejects(local.request(Echo, { text: 'slow', delayMs: 300 }, { requestId: 's' }, { timeoutMs: 50 }), { code: 'TIMEOUT' }, 'timeouts apply');

  // a stop drains local in-flight work, and later calls go to the copy that still serves
  await new Promise((r) => setTimeout(r, 350)); // the timed-out call above finishes its work
  const slow = local.request(Echo, { text: 'drain', delayMs: 200 }, { requestId: 'd' });
  await new Promise((r) => setTimeout(r, 20));
  t.equal(local.busy(['echo']), 1, 'a local call counts as in flight');
  t.same(local.requestsInFlight(), [{ rid: 'd', subj: 'test.echo' }], 'and is named by its request id');
  const left = await local.stopServing(['echo'], Date.now() + 2_000);
  t.equal(left, 0);
  t.equal((await slow).who, 'local', 'the in-flight local call finished');
  t.equal((await local.request(Echo, { text: 'after' }, { requestId: 'a' })).who, 'other', 'after the stop, over NATS');
});

/**
 * Typed events and sys.stats over a real nats-server: `bus.on(def)` and `bus.consume(durable,
 * defs)` hand over payloads checked against their schema (one that breaks its contract never
 * reaches the handler), a handler that throws never stops the reader, and every process
 * answers sys.stats with its per-subject counts and latencies.
 */
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import { ConfigChangedEvt, QueryFailedEvt, ScopeEndedEvt, SqlPing, SysStats } from '../../protocol/subjects.js';
import { startNats } from '../helpers/nats.js';

const log = createLogger({ svc: 'test', level: 'silent' });
const nats = await startNats();
const reader = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'reader', log, strict: true });
const writer = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'writer', log, strict: true });
await reader.ensureEventStream();
t.teardown(async () => {
  await writer.close();
  await reader.close();
  await nats.stop();
});

async function until(what: string, cond: () => boolean, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
const statsOf = (bus: Bus, subject: string) => bus.stats().find((s) => s.subject === subject);
const ended = (id: string) => ({ id, ts: new Date().toISOString(), request_id: `r-${id}`, scope: `s:${id}`, reason: 'logout' as const });

t.test('on: typed payloads, contract checked, a throwing handler does not stop the subscription', async (t) => {
  const seen: string[] = [];
  const stop = reader.on(ScopeEndedEvt, (e, ctx) => {
    seen.push(`${e.scope}/${e.reason}/${ctx.requestId}`);
    if (e.id === 'boom') throw new Error('handler bug');
    if (e.id === 'reject') return Promise.reject(new Error('async handler bug'));
  });
  t.teardown(stop);
  await writer.flush();
  await reader.flush();
  writer.publish(ScopeEndedEvt, ended('boom'), { requestId: 'r-boom' });
  writer.publish(ScopeEndedEvt, ended('reject'), { requestId: 'r-reject' });
  // a payload that breaks the contract (sent raw on the event's subject): never handed over
  writer.publishTo(ScopeEndedEvt.subject, { id: 'bad', scope: 42 });
  writer.publish(ScopeEndedEvt, ended('after'), { requestId: 'r-after' });
  await writer.flush();
  await until('the event after the failures', () => seen.some((s) => s.startsWith('s:after')));
  t.same(seen, ['s:boom/logout/r-boom', 's:reject/logout/r-reject', 's:after/logout/r-after'], 'in order; the malformed one left out');
  const s = statsOf(reader, ScopeEndedEvt.subject);
  t.match(s, { kind: 'event', handled: 4, errors: 3 }, 'two handler failures and one contract failure counted');
});

t.test('listen: a throw in the callback does not stop the subscription either', async (t) => {
  const got: unknown[] = [];
  const stop = reader.listen(ConfigChangedEvt.subject, (data) => {
    got.push(data);
    if (got.length === 1) throw new Error('listener bug');
  });
  t.teardown(stop);
  await reader.flush();
  const change = (key: string) => ({ id: key, ts: new Date().toISOString(), request_id: 'r', key, value: 1, reset: false, user: 'admin' });
  writer.publish(ConfigChangedEvt, change('a.b'), { requestId: 'r1' });
  writer.publish(ConfigChangedEvt, change('c.d'), { requestId: 'r2' });
  await writer.flush();
  await until('both', () => got.length === 2);
  t.equal(got.length, 2);
});

t.test('consume: only the listed events, typed; a failure comes again, a broken contract does not', async (t) => {
  const seen: string[] = [];
  let failOnce = true;
  const consumer = await reader.consume('typed', [QueryFailedEvt, ScopeEndedEvt], async (e) => {
    switch (e.subject) {
      case 'evt.query.failed':
        seen.push(`failed:${e.payload.code}`);
        if (e.payload.id === 'retry' && failOnce) {
          failOnce = false;
          throw new Error('not yet');
        }
        break;
      case 'evt.identity.scope.ended':
        seen.push(`ended:${e.payload.reason}`);
        break;
    }
  }, { retryDelayMs: 50, intervalMs: 20, startAt: 'new' });
  t.teardown(() => consumer.stop());
  const failed = (id: string) => ({ id, ts: new Date().toISOString(), request_id: `r-${id}`, code: 'INTERNAL' as const, message: id });
  writer.publish(QueryFailedEvt, failed('retry'), { requestId: 'r-retry' });
  writer.publish(ScopeEndedEvt, ended('e1'), { requestId: 'r-e1' });
  writer.publish(ConfigChangedEvt, { id: 'cfg', ts: new Date().toISOString(), request_id: 'r', key: 'x.y', value: 1, reset: false, user: 'admin' }, { requestId: 'r-cfg' });
  await writer.flush();
  await until('the retried event', () => seen.filter((s) => s === 'failed:INTERNAL').length === 2);
  t.same(seen.sort(), ['ended:logout', 'failed:INTERNAL', 'failed:INTERNAL'], 'the failing one came again; config.changed is not listed');
  t.match(statsOf(reader, QueryFailedEvt.subject), { kind: 'event', handled: 2, errors: 1 });
});

t.test('sys.stats: every process answers with its per-subject counts and latencies', async (t) => {
  writer.serve(SqlPing, async () => ({ ok: true, ms: 1 }) as never);
  // the writer's subscription may reach the server a moment after serve(): until it has, a ping
  // finds no one (and is not served); the pings that reach it are the five counted
  for (let i = 0; i < 5; i++) {
    for (let tries = 0; ; tries++) {
      const err = await reader.request(SqlPing, {} as never, { requestId: `p${i}-${tries}` }, { remote: true }).then(() => undefined, (e: Error) => e);
      if (!err || !/no executor actor is running/.test(err.message) || tries >= 50) break;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  // the server counts a request once its reply is sent: the last reply can arrive first
  for (let i = 0; i < 100 && (statsOf(writer, SqlPing.subject)?.handled ?? 0) < 5; i++) await new Promise((r) => setTimeout(r, 10));
  const answers = await reader.gather(SysStats, {}, { requestId: 'stats' }, { timeoutMs: 500 });
  t.same(answers.map((a) => a.process).sort(), ['reader', 'writer'], 'both processes answered');
  const w = answers.find((a) => a.process === 'writer')!;
  t.equal(w.pid, process.pid);
  const ping = w.subjects.find((s) => s.subject === SqlPing.subject);
  t.match(ping, { kind: 'request', handled: 5 }, 'the writer served five pings');
  t.ok(ping!.p50Ms <= ping!.p99Ms && ping!.p99Ms <= ping!.maxMs, 'a latency summary');
  t.notOk(w.subjects.some((s) => s.subject === SysStats.subject), 'sys.stats does not count itself');
  const r = answers.find((a) => a.process === 'reader')!;
  t.match(r.subjects.find((s) => s.subject === ScopeEndedEvt.subject), { kind: 'event', handled: 5, errors: 3 }, 'the reader the events it took (four by on, one by consume)');
  t.equal((await reader.gather(SysStats, {}, { requestId: 'one' }, { max: 1, timeoutMs: 5_000 })).length, 1, 'max: stops at the first answers');
});

/**
 * The typed key-value API (runtime/kv.ts): one suite, run against JetStream KV on a real
 * nats-server and against the memory twin, so both keep the same behaviour: absent keys,
 * create-if-absent, compare-and-set under contention (a counter hammered from two
 * connections ends exact), a capped counter that never passes its cap, deletes, TTL, watch.
 */
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { memoryKv, type Kv } from '../../runtime/kv.js';
import { createLogger } from '../../runtime/log.js';
import { Bucket } from '../../protocol/subjects.js';
import { startNats } from '../helpers/nats.js';

const log = createLogger({ svc: 'test', level: 'silent' });
const nats = await startNats();
const a = await Bus.connect({ url: nats.url, prefix: 'kvtest', name: 'kv-a', log });
const b = await Bus.connect({ url: nats.url, prefix: 'kvtest', name: 'kv-b', log });
t.teardown(async () => {
  await a.close();
  await b.close();
  await nats.stop();
});

interface Backend {
  name: string;
  /** two handles on one bucket (two processes for JetStream) */
  open<T>(ttlMs?: number): Promise<[Kv<T>, Kv<T>]>;
}

let n = 0;
const backends: Backend[] = [
  {
    name: 'memory',
    async open<T>(ttlMs?: number) {
      const kv = memoryKv<T>(ttlMs !== undefined ? { ttlMs } : {});
      return [kv, kv] as [Kv<T>, Kv<T>];
    },
  },
  {
    name: 'jetstream',
    async open<T>(ttlMs?: number) {
      // one bucket per case: a fresh bus prefix names it
      const prefix = `kv${++n}`;
      const x = await Bus.connect({ url: nats.url, prefix, name: 'x', log });
      const y = await Bus.connect({ url: nats.url, prefix, name: 'y', log });
      t.teardown(async () => { await x.close(); await y.close(); });
      const opts = ttlMs !== undefined ? { ttlMs } : {};
      return [await x.bucket<T>(Bucket.Alerts, opts), await y.bucket<T>(Bucket.Alerts, opts)];
    },
  },
];

async function until(what: string, cond: () => boolean, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

for (const backend of backends) {
  t.test(backend.name, async (t) => {
    t.test('get, put, create, delete', async (t) => {
      const [kv] = await backend.open<{ n: number; tags: string[] }>();
      t.equal(await kv.get('k'), undefined, 'a key never written is absent');
      t.equal(await kv.create('k', { n: 1, tags: ['a'] }), true, 'created');
      t.equal(await kv.create('k', { n: 2, tags: [] }), false, 'not created twice');
      t.same(await kv.get('k'), { n: 1, tags: ['a'] }, 'the first value stays');
      await kv.put('k', { n: 3, tags: [] });
      t.same(await kv.get('k'), { n: 3, tags: [] });
      t.same(await kv.keys(), ['k']);
      await kv.delete('k');
      t.equal(await kv.get('k'), undefined, 'deleted: absent');
      t.same(await kv.keys(), [], 'and not listed');
      t.equal(await kv.create('k', { n: 4, tags: [] }), true, 'a deleted key can be created again');
      await kv.delete('never-there');
    });

    t.test('update: compare-and-set from two writers loses nothing', async (t) => {
      const [x, y] = await backend.open<{ seen: string[] }>();
      const writers = Array.from({ length: 30 }, (_, i) => (i % 2 ? x : y).update('list', (cur) => ({ seen: [...(cur?.seen ?? []), `w${i}`] })));
      await Promise.all(writers);
      const final = await x.get('list');
      t.equal(final?.seen.length, 30, 'every write is there once');
      t.equal(new Set(final?.seen).size, 30);
      t.same(await x.update('list', () => undefined), final, 'fn returning undefined leaves the value as it is');
      t.equal(await x.update('other', () => undefined), undefined, 'and writes nothing for an absent key');
      t.equal(await x.get('other'), undefined);
    });

    t.test('increment: a cap shared by two writers is never passed', async (t) => {
      const [x, y] = await backend.open<number>();
      const results = await Promise.all(Array.from({ length: 24 }, (_, i) => (i % 2 ? x : y).increment('day', 7)));
      t.equal(results.filter((r) => r !== undefined).length, 7, 'exactly the cap was counted');
      t.same(results.filter((r) => r !== undefined).sort((p, q) => p! - q!), [1, 2, 3, 4, 5, 6, 7], 'each count handed out once');
      t.equal(await y.get('day'), 7);
      t.equal(await x.increment('day', 7), undefined, 'at the cap: nothing added');
      t.equal(await x.increment('day', Number.MAX_SAFE_INTEGER, -1), 6, 'a step down');
      t.equal(await x.increment('fresh'), 1, 'an absent counter starts at 0');
      t.equal(await x.increment('zero', 10, -1), 0, 'a step down never goes below 0');
      t.equal(await x.get('zero'), undefined, 'and writes nothing there');
    });

    t.test('take: a one-time ticket, only one of two takers gets it; a refused one stays', async (t) => {
      const [x, y] = await backend.open<{ owner: string }>();
      await x.put('ticket', { owner: 'ann' });
      t.equal(await x.take('ticket', (v) => v.owner === 'bob'), undefined, 'refused by accept');
      t.same(await y.get('ticket'), { owner: 'ann' }, 'and still there');
      const got = await Promise.all([x.take('ticket'), y.take('ticket'), x.take('ticket')]);
      t.equal(got.filter((g) => g !== undefined).length, 1, 'exactly one taker');
      t.equal(await x.get('ticket'), undefined, 'gone after');
      t.equal(await x.take('never'), undefined);
    });

    t.test('a value that is not JSON is absent, not a crash', async (t) => {
      const [kv] = await backend.open<number>();
      await kv.as<string>().put('s', 'text');
      t.equal(await kv.as<string>().get('s'), 'text', 'a string round-trips');
      t.equal(typeof (await kv.get('s')), 'string', 'as<U>() only changes the static type');
    });

    t.test('watch: every change from now on, deletes included', async (t) => {
      const [x, y] = await backend.open<number>();
      await x.put('before', 1);
      const seen: Array<[string, number | undefined]> = [];
      const stop = await x.watch((key, value) => { seen.push([key, value]); });
      await y.put('w', 1);
      await y.increment('w');
      await y.delete('w');
      await until('three changes', () => seen.length >= 3);
      t.same(seen, [['w', 1], ['w', 2], ['w', undefined]], 'in order; what was there before is not replayed');
      stop();
      await y.put('w', 9);
      await new Promise((r) => setTimeout(r, 100));
      t.equal(seen.length, 3, 'nothing after the stop');
    });

    t.test('TTL: a key is gone after the bucket TTL', async (t) => {
      const [kv] = await backend.open<number>(1_000);
      await kv.put('short', 1);
      t.equal(await kv.get('short'), 1);
      const end = Date.now() + 5_000;
      while ((await kv.get('short')) !== undefined && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
      t.equal(await kv.get('short'), undefined, 'expired');
      t.equal(await kv.create('short', 2), true, 'and can be created again');
    });
  });
}

t.test('one bucket per name: two processes see the same keys', async (t) => {
  const x = await a.bucket<number>(Bucket.Mail);
  const y = await b.bucket<number>(Bucket.Mail);
  await x.put('day.2001-01-01', 5);
  t.equal(await y.get('day.2001-01-01'), 5);
});

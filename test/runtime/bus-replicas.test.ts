/**
 * bus.replicas reaches JetStream wherever Cortado makes something there: the event stream, KV
 * buckets, the object store and work queues are made with that many copies. A single server
 * keeps one; asked for three it refuses (JetStream says why), which proves the number got there.
 */
import t from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import { Bucket, eventsStreamName } from '../../protocol/subjects.js';
import { startNats } from '../helpers/nats.js';

const nats = await startNats();
const log = createLogger({ svc: 'test', level: 'silent' });
t.teardown(() => nats.stop());

t.test('replicas 1 (the default): every stream made with one copy', async (t) => {
  const bus = await Bus.connect({ url: nats.url, prefix: 'rep1', name: 'replicas-1', log });
  t.teardown(() => bus.close());
  t.equal(bus.replicas, 1);
  t.ok(await bus.ensureEventStream({}));
  await bus.bucket(Bucket.Sessions);
  await bus.objects(Bucket.Exports);
  const nc = await connect({ servers: nats.url });
  t.teardown(() => nc.close());
  const jsm = await jetstreamManager(nc);
  for (const name of [eventsStreamName('rep1'), 'KV_rep1_sessions', 'OBJ_rep1_exports']) {
    t.equal((await jsm.streams.info(name)).config.num_replicas, 1, `${name}: one copy`);
  }
});

t.test('replicas 3 on one server: JetStream is asked for three copies and refuses', async (t) => {
  const bus = await Bus.connect({ url: nats.url, prefix: 'rep3', name: 'replicas-3', log, replicas: 3 });
  t.teardown(() => bus.close());
  t.equal(bus.replicas, 3);
  await t.rejects(bus.bucket(Bucket.Sessions), /replica|cluster/i, 'the KV bucket');
  await t.rejects(bus.objects(Bucket.Exports), /replica|cluster/i, 'the object store');
  const nc = await connect({ servers: nats.url });
  t.teardown(() => nc.close());
  const jsm = await jetstreamManager(nc);
  await t.rejects(jsm.streams.info('KV_rep3_sessions'), /not found/i, 'nothing was made with fewer copies');
});

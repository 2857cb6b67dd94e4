/**
 * The audit actor: a durable JetStream consumer of every event, writing each one once to the
 * store (config_db, or a bounded log in memory), and answering audit.query. An event is
 * acknowledged only once written: kill the actor mid-stream and restart it, and it carries on
 * from the first unacknowledged event; what was written twice is kept once (dedup by id).
 */
import { Actor, AUDIT_CONSUMER, AuditQuery } from '../../protocol/subjects.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import { openStore } from '../identity/store/index.js';
import { query, record } from './handle.js';

export async function start(deps: ActorDeps): Promise<RunningActor> {
  const { bus, config, log } = deps;
  const store = await openStore(config, log);
  let consumer: { stop(): Promise<void> } | undefined;
  try {
    consumer = await bus.consumeEvents(AUDIT_CONSUMER, async (subject, data) => {
      await record(store, subject, data);
    });
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'cannot read the event stream (JetStream unavailable?): the audit log stays empty');
  }
  bus.serve(AuditQuery, (input) => query(input, store));
  log.info({ store: store.kind }, 'audit ready');
  return {
    name: Actor.Audit,
    async stop() {
      await consumer?.stop();
      await store.close();
    },
  };
}

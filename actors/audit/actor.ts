/**
 * The audit actor: a durable JetStream consumer of every event, writing each one once to the
 * store (config_db, or a bounded log in memory), and answering audit.query. An event is
 * acknowledged only once written: kill the actor mid-stream and restart it, and it carries on
 * from the first unacknowledged event; what was written twice is kept once (dedup by id).
 *
 * When the stream cannot be read at start (JetStream not ready, out of storage), the reader is
 * made again every few seconds until it can: the events wait in the stream meanwhile. Whether
 * questions may be answered while the stream itself is not kept is the assistant's call
 * (audit.required, runtime/bus.ts eventTrouble), not this actor's.
 */
import { Actor, AUDIT_CONSUMER, AuditQuery, EVENTS } from '../../protocol/subjects.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import { openStorage } from '../../store/index.js';
import { query, record } from './handle.js';

/** how often a reader that could not be made is tried again */
const RETRY_MS = 5_000;

export async function start(deps: ActorDeps): Promise<RunningActor> {
  const { bus, config, log } = deps;
  const store = await openStorage(config, log);
  let consumer: { stop(): Promise<void> } | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  let failures = 0;
  const read = async (): Promise<void> => {
    try {
      consumer = await bus.consume(AUDIT_CONSUMER, EVENTS, async (e, ctx) => {
        await record(store, e.subject, e.payload, ctx.trace);
      });
      if (stopped) await consumer.stop();
      else if (failures > 0) log.info({ failures }, 'reading the event stream now: the audit log catches up');
    } catch (err) {
      if (stopped) return;
      if (failures++ === 0) log.warn({ err: (err as Error).message }, 'cannot read the event stream yet (JetStream unavailable?): trying again every few seconds');
      retry = setTimeout(() => { retry = undefined; void read(); }, RETRY_MS);
      retry.unref();
    }
  };
  await read();
  bus.serve(AuditQuery, (input) => query(input, store));
  log.info({ store: store.kind }, 'audit ready');
  return {
    name: Actor.Audit,
    async stop() {
      stopped = true;
      if (retry) clearTimeout(retry);
      await consumer?.stop();
      await store.close();
    },
  };
}

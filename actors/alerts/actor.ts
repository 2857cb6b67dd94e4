/**
 * The alerts actor: a durable JetStream consumer (ALERTS_CONSUMER) of the query events, which
 * exists while `mcp.security_alerts.enabled` is on. It answers no requests; it scores what
 * already happened and raises alert.raised (handle.ts).
 * Copies in several processes share the consumer (each event goes to one of them) and the
 * claims in the KV bucket (one alert per question across all of them).
 */
import type { Kv } from '../../runtime/kv.js';
import { Actor, ALERTS_CONSUMER, Bucket, MaskChangedEvt } from '../../protocol/subjects.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import { createDeps, onEvent, QUERY_EVENTS, STATE_TTL_MS } from './handle.js';

export async function start(deps: ActorDeps): Promise<RunningActor> {
  const { bus, config, log } = deps;
  let kv: Kv<number> | undefined;
  try {
    kv = await bus.bucket<number>(Bucket.Alerts, { ttlMs: STATE_TTL_MS });
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'no JetStream KV: alert claims and counts stay in this process');
  }
  const d = createDeps(bus, config, log, kv);
  // a mask rule changed: the patterns are asked again at the next event (every copy hears it)
  const stopListening = bus.on(MaskChangedEvt, () => d.maskPatterns.clear());
  let consumer: { stop(): Promise<void> } | undefined;
  try {
    // while security alerts are off nothing reads the stream for them (and the durable consumer
    // is removed: it would cost the server work for every event); switched on, at start or at
    // run time, the alerts score the questions asked from then on
    consumer = await bus.consume(ALERTS_CONSUMER, QUERY_EVENTS, async (e, ctx) => {
      await onEvent(e, d, ctx);
    }, { ackWaitMs: 30_000, active: () => config.mcp.security_alerts.enabled, startAt: 'new' });
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'cannot read the event stream (JetStream unavailable?): no security alerts');
  }
  log.info({ enabled: config.mcp.security_alerts.enabled, apply_to: config.mcp.security_alerts.apply_to }, 'alerts ready');
  return {
    name: Actor.Alerts,
    async stop() {
      stopListening();
      await consumer?.stop();
      // the e-mails and events of alerts already decided
      await Promise.race([Promise.allSettled([...d.pending]), new Promise((r) => setTimeout(r, 10_000).unref())]);
    },
  };
}

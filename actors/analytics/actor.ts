/**
 * The analytics actor: when analytics.enabled, a durable JetStream consumer (ANALYTICS_CONSUMER)
 * of the questions' facts (evt.question.completed), writing each question once to a PostgreSQL
 * database of its own (analytics.postgresql, store/analytics.ts: tables and their own version
 * table made when missing), and answering analytics.feedback and analytics.report.
 *
 * The consumer, made the first time analytics run, starts with the questions asked from then
 * on, and carries on where it stopped across restarts. An event is acknowledged only once
 * written: a crash mid-stream loses nothing, and a redelivered question is kept once (the
 * request id is its key). While the database cannot be reached (at start or later), the events
 * wait in the stream: the set-up is tried again every few seconds, and a write that fails has
 * its event come again. What is older than analytics.retention_days is removed at start and
 * every hour.
 *
 * analytics.enabled off: no connection, no consumer (one left by an earlier run is removed, so
 * the questions asked while off are never counted), nothing stored; the report answers
 * `enabled: false` and feedback `ok: false`. enabled, backend and postgresql are read at start
 * (config/runtime.ts refuses them as runtime overrides); store_questions and retention_days
 * take effect at once.
 */
import { CortadoError } from '../../protocol/errors.js';
import { Actor, ANALYTICS_CONSUMER, AnalyticsFeedback, AnalyticsReportGet, QuestionCompletedEvt } from '../../protocol/subjects.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import { AnalyticsStore, analyticsConnection } from '../../store/analytics.js';
import { feedback, purge, record, report, type AnalyticsDeps } from './handle.js';

/** how often a set-up that failed is tried again */
const RETRY_MS = 5_000;
const PURGE_EVERY_MS = 3600_000;

export async function start(deps: ActorDeps): Promise<RunningActor> {
  const { bus, config, log } = deps;
  const d: AnalyticsDeps = { config };
  if (!config.analytics.enabled) {
    // nothing is read; a durable consumer left by an earlier run with analytics on is removed,
    // so that switching them on again does not bring in the questions asked while they were off
    let idle: { stop(): Promise<void> } | undefined;
    try {
      idle = await bus.consume(ANALYTICS_CONSUMER, [QuestionCompletedEvt], async () => undefined, { active: () => false });
    } catch {
      // no JetStream: no consumer to remove either
    }
    bus.serve(AnalyticsReportGet, (input) => report(input, d));
    bus.serve(AnalyticsFeedback, (input) => feedback(input, d));
    log.info({ enabled: false }, 'analytics ready (off: nothing is read or stored)');
    return { name: Actor.Analytics, stop: async () => { await idle?.stop(); } };
  }

  // CONFIG_INVALID at start when the backend is not PostgreSQL
  const store = AnalyticsStore.open(analyticsConnection(config.analytics), log);
  let consumer: { stop(): Promise<void> } | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  let purging: NodeJS.Timeout | undefined;
  let failures = 0;
  let ready = false;

  const clean = async (): Promise<void> => {
    try {
      const removed = await purge(d);
      if (removed > 0) log.info({ removed, retention_days: config.analytics.retention_days }, 'analytics: older questions removed');
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'analytics: the retention purge failed (tried again within the hour)');
    }
  };

  const setUp = async (): Promise<void> => {
    try {
      if (!ready) {
        await store.init();
        ready = true;
        d.store = store;
        await clean();
        purging = setInterval(() => void clean(), PURGE_EVERY_MS);
        purging.unref();
      }
      consumer = await bus.consume(ANALYTICS_CONSUMER, [QuestionCompletedEvt], async (e) => {
        await record(e.payload, d);
      }, { ackWaitMs: 30_000, startAt: 'new' });
      if (stopped) await consumer.stop();
      else if (failures > 0) log.info({ failures }, 'analytics: reading the questions now');
    } catch (err) {
      if (stopped) return;
      if (failures++ === 0) {
        log.error({ err: (err as Error).message }, ready
          ? 'analytics: cannot read the event stream yet (JetStream unavailable?): trying again every few seconds'
          : 'analytics: the database cannot be set up: trying again every few seconds (the questions wait in the event stream)');
      }
      retry = setTimeout(() => { retry = undefined; void setUp(); }, RETRY_MS);
      retry.unref();
    }
  };
  await setUp();

  // before the set-up worked there is no store: the report says so rather than pretending
  bus.serve(AnalyticsReportGet, async (input) => {
    if (!d.store) throw unavailable();
    return report(input, d);
  });
  bus.serve(AnalyticsFeedback, async (input) => {
    if (!d.store) throw unavailable();
    return feedback(input, d);
  });
  log.info({ enabled: true, ready, store_questions: config.analytics.store_questions, retention_days: config.analytics.retention_days }, 'analytics ready');
  return {
    name: Actor.Analytics,
    async stop() {
      stopped = true;
      if (retry) clearTimeout(retry);
      if (purging) clearInterval(purging);
      await consumer?.stop();
      await store.close();
    },
  };
}

function unavailable(): CortadoError {
  return new CortadoError('DB_UNAVAILABLE', 'the analytics database cannot be reached yet (analytics.postgresql): try again shortly', { store: 'analytics' });
}

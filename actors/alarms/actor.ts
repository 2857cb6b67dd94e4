/**
 * The alarms actor: alarms over the warehouse operations console (docs/ops.md "Alarms", "Issue
 * tracker"). It serves the alarms' requests (handle.ts) and evaluates them on their crons
 * (evaluator.ts), asking the ops actor (OpsRun) and notifying through the mailer (MailSend) and
 * the issue tracker (tracker.ts).
 *
 * - alarms.enabled false (the default): every request is refused with a clear NOT_FOUND naming
 *   the setting; nothing is opened or evaluated.
 * - Storage: config_db on → its cortado_alarms table (config_db wins: alarms.storage_path is then
 *   not read, and a file there is said ignored at start); off → the JSON file at alarms.storage_path (store/alarms.ts: atomic writes under a
 *   lock file, so several processes on one host may share it). A file that cannot be read is
 *   logged as an error at start and every request names it; it is never reset.
 * - Settings that cannot work (a bad default recipient, the tracker on without its url, email,
 *   api_token or project_key, or with a url that is not https off loopback) stop the start with
 *   CONFIG_INVALID naming the keys; the same checks refuse them at run time
 *   (config/ops-checks.ts). alarms.enabled and alarms.storage_path are read here once: they are
 *   start-only keys (config/runtime.ts). The rest is read where it is used, per request.
 */
import { existsSync } from 'node:fs';
import { CortadoError } from '../../protocol/errors.js';
import type { Kv } from '../../runtime/kv.js';
import { Actor, AlarmCreate, AlarmDelete, AlarmGet, AlarmHistory, AlarmList, AlarmTest, AlarmUpdate, Bucket } from '../../protocol/subjects.js';
import { FileAlarms, openStorage, type AlarmsRepository, type Storage } from '../../store/index.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import { Evaluator } from './evaluator.js';
import { openLeaseBucket, type LeaseValue } from '../lib/jobs/lease.js';
import * as h from './handle.js';
import { jiraTracker, type Tracker } from './tracker.js';

export interface AlarmsOptions {
  /** the clock ticks are read from (tests); the real one otherwise */
  now?: () => number;
  /** the issue tracker (tests may give one with another fetch); the configured Jira otherwise */
  tracker?: Tracker;
  /** false: no lease, this process evaluates alone (tests of the store's tick claim) */
  lease?: boolean;
}

const STOP_WAIT_MS = 15_000;

export interface RunningAlarms extends RunningActor {
  /** the evaluator, when alarms are on (tests drive passes with it) */
  readonly evaluator: Evaluator | undefined;
}

export async function startAlarms(deps: ActorDeps, opts: AlarmsOptions = {}): Promise<RunningAlarms> {
  const { config, log, bus } = deps;
  const off = (): never => h.mustBeOn(config) as never;
  if (!config.alarms.enabled) {
    for (const def of [AlarmList, AlarmGet, AlarmCreate, AlarmUpdate, AlarmDelete, AlarmTest, AlarmHistory] as const) {
      bus.serve(def as typeof AlarmGet, async () => off());
    }
    if (config.jira.enabled) log.warn('jira.enabled is true but alarms.enabled is false: the issue tracker is only used by alarms, so it is not used');
    log.info('alarms.enabled is false: alarms are off');
    return { name: Actor.Alarms, evaluator: undefined, stop: async () => undefined };
  }
  const problems = h.configProblems(config);
  if (problems.length) throw new CortadoError('CONFIG_INVALID', `alarms: ${problems.join('; ')}`, { problems });
  if (config.jira.enabled && config.jira.api_token.trim() === '') {
    log.warn('jira.api_token is empty: no issue is opened until an admin sets it (admin panel → Config, kept encrypted in config_db)');
  }

  let storage: Storage | undefined;
  let store: AlarmsRepository;
  if (config.config_db.enabled) {
    storage = await openStorage(config, log);
    store = storage.alarms;
    const file = config.alarms.storage_path.trim();
    if (file && existsSync(file)) {
      log.warn({ file }, 'alarms.storage_path is ignored: config_db is on and keeps the alarms; the alarms in that file are not read nor evaluated (re-create them, then remove the file)');
    }
  } else {
    store = new FileAlarms(config.alarms.storage_path, log);
  }
  try {
    const state = await store.state();
    log.info({ store: store.kind, ...(store.path ? { file: store.path } : {}), state }, 'alarms storage');
  } catch (err) {
    // reported, never reset: every request names the file until someone fixes or moves it
    log.error({ err: (err as Error).message }, 'the alarms cannot be read: nothing is evaluated until they can');
  }

  const d: h.AlarmsDeps = { bus, config, log, store, tracker: opts.tracker ?? jiraTracker(() => config.jira), now: opts.now ?? Date.now };
  bus.serve(AlarmList, () => h.list(d));
  bus.serve(AlarmGet, (input) => h.get(input, d));
  bus.serve(AlarmCreate, (input, ctx) => h.create(input, d, ctx));
  bus.serve(AlarmUpdate, (input, ctx) => h.update(input, d, ctx));
  bus.serve(AlarmDelete, (input, ctx) => h.remove(input, d, ctx));
  bus.serve(AlarmTest, (input, ctx) => h.test(input, d, ctx));
  bus.serve(AlarmHistory, (input) => h.history(input, d));

  let lease: Kv<LeaseValue> | undefined;
  if (opts.lease !== false) {
    try {
      lease = await openLeaseBucket(bus, Bucket.AlarmsLease);
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'no JetStream: every alarms process evaluates (each tick is still evaluated once: the store claims it)');
    }
  }
  const evaluator = new Evaluator(d, lease);
  evaluator.start();
  log.info({ store: store.kind, tracker: config.jira.enabled, lease: lease !== undefined }, 'alarms ready');
  return {
    name: Actor.Alarms,
    evaluator,
    stop: async () => {
      await evaluator.stop(STOP_WAIT_MS);
      await storage?.close();
    },
  };
}

export function start(deps: ActorDeps): Promise<RunningActor> {
  return startAlarms(deps);
}

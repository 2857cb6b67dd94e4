/**
 * What every actor is: a name (also its queue group), started with the shared deps,
 * stopped after its subscriptions have drained (to close pools and timers).
 * Logic lives in <actor>/handle.ts as plain functions taking (input, deps, ctx);
 * <actor>/actor.ts only wires them to the bus.
 */
import type { Bus } from '../../runtime/bus.js';
import type { Logger } from '../../runtime/log.js';
import type { Actor } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';

export interface ActorDeps {
  bus: Bus;
  config: Config;
  log: Logger;
}

export interface RunningActor {
  readonly name: Actor;
  /** release resources (pools, timers) once the bus stopped delivering to it */
  stop(): Promise<void>;
}

export type StartActor = (deps: ActorDeps) => Promise<RunningActor>;

/**
 * The composition root of the actors: name → module, loaded on demand (a process that runs
 * only the executor never loads an LLM SDK). Actors never import each other; only this file
 * knows them all.
 */
import { Actor } from '../protocol/subjects.js';
import type { StartActor } from './runtime/actor.js';

type ActorModule = { start: StartActor };

export const ACTOR_MODULES: Readonly<Record<Actor, () => Promise<ActorModule>>> = {
  [Actor.Assistant]: () => import('./assistant/actor.js'),
  [Actor.Intent]: () => import('./intent/actor.js'),
  [Actor.SqlGen]: () => import('./sqlgen/actor.js'),
  [Actor.Executor]: () => import('./executor/actor.js'),
  [Actor.Catalog]: () => import('./catalog/actor.js'),
  [Actor.Llm]: () => import('./llm/actor.js'),
  [Actor.Insights]: () => import('./insights/actor.js'),
  [Actor.Identity]: () => import('./identity/actor.js'),
  [Actor.Settings]: () => import('./settings/actor.js'),
  [Actor.Audit]: () => import('./audit/actor.js'),
  [Actor.Masking]: () => import('./masking/actor.js'),
  [Actor.Alerts]: () => import('./alerts/actor.js'),
  [Actor.Mailer]: () => import('./mailer/actor.js'),
  [Actor.Semantic]: () => import('./semantic/actor.js'),
  [Actor.Analytics]: () => import('./analytics/actor.js'),
  [Actor.Scheduler]: () => import('./scheduler/actor.js'),
  [Actor.Ops]: () => import('./ops/actor.js'),
  [Actor.Alarms]: () => import('./alarms/actor.js'),
  [Actor.Workspace]: () => import('./workspace/actor.js'),
  [Actor.Eval]: () => import('./eval/actor.js'),
};

/**
 * Stop order on shutdown: entry points first, so work already inside the pipeline can still
 * reach the actors further down while it finishes; the actors that own resources last.
 */
export const DRAIN_ORDER: readonly Actor[] = [
  Actor.Identity,
  // each person's history and dashboards: an entry point (the edge asks it; it asks the scheduler's cron math)
  Actor.Workspace,
  // an entry point of its own (cron ticks, Run Now): it asks the executor, masking and mailer
  Actor.Scheduler,
  // cron evaluations of their own: they ask the ops actor and the mailer, so they stop first
  Actor.Alarms,
  // the console's operations: an entry point of its own (the alarms ask it)
  Actor.Ops,
  // the accuracy harness: it asks the assistant and the executor, so it stops before them
  Actor.Eval,
  Actor.Assistant,
  Actor.Intent,
  Actor.SqlGen,
  Actor.Insights,
  Actor.Masking,
  Actor.Alerts,
  Actor.Catalog,
  // after the catalog, which asks it for the business context of every question
  Actor.Semantic,
  Actor.Llm,
  Actor.Executor,
  Actor.Mailer,
  // it answers the mask rules masking and alerts read to the end, and (started second) applies
  // the stored config overrides before the actors after it start
  Actor.Settings,
  // it reads the events of the questions answered above
  Actor.Analytics,
  // last: it writes down the events of everything above
  Actor.Audit,
];

/** Start order: resources first (the executor warms its pool), entry points last. */
export const START_ORDER: readonly Actor[] = [...DRAIN_ORDER].reverse();

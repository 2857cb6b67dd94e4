import { Actor, InsightsGenerate } from '../../protocol/subjects.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import { generate } from './handle.js';

export async function start(deps: ActorDeps): Promise<RunningActor> {
  deps.bus.serve(InsightsGenerate, (input, ctx) => generate(input, deps, ctx));
  return { name: Actor.Insights, stop: async () => undefined };
}

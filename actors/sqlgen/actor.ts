import { Actor, SqlGenerate } from '../../protocol/subjects.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import { generate } from './handle.js';

export async function start(deps: ActorDeps): Promise<RunningActor> {
  deps.bus.serve(SqlGenerate, (input, ctx) => generate(input, deps, ctx));
  return { name: Actor.SqlGen, stop: async () => undefined };
}

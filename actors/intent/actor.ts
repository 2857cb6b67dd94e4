import { Actor, ChatReply, IntentDetect } from '../../protocol/subjects.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import { chat, detect } from './handle.js';

export async function start(deps: ActorDeps): Promise<RunningActor> {
  deps.bus.serve(IntentDetect, (input, ctx) => detect(input, deps, ctx));
  deps.bus.serve(ChatReply, (input, ctx) => chat(input, deps, ctx));
  return { name: Actor.Intent, stop: async () => undefined };
}

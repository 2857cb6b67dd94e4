/** The LLM gateway on the bus: llm.complete and llm.status. */
import { Actor, LlmComplete, LlmStatus } from '../../protocol/subjects.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import { complete, status, type LlmDeps } from './handle.js';
import { observedCall } from './observe.js';
import { retiringModels, retiringText } from './retiring.js';

export async function start(deps: ActorDeps): Promise<RunningActor> {
  const h: LlmDeps = { config: deps.config, log: deps.log, providers: new Map() };
  deps.bus.serve(LlmComplete, (input, ctx) => observedCall(input, deps.config, ctx, (c) => complete(input, h, c)));
  deps.bus.serve(LlmStatus, async () => status(h));
  const s = await status(h);
  if (s.configured) deps.log.info({ provider: s.provider, model: s.model }, 'llm ready');
  else deps.log.warn({ provider: s.provider, reason: s.reason }, 'the LLM is not configured: questions answer LLM_UNAVAILABLE');
  // once, here: never once per question
  for (const m of retiringModels(deps.config)) deps.log.warn({ key: m.key, model: m.model, until: m.until, use: m.use }, retiringText(m));
  return { name: Actor.Llm, stop: async () => undefined };
}

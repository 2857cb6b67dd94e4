/**
 * The masking actor: `ResultMask` over the bus, for rows a caller brings with the SQL that made
 * them. Results of the database never need it: the executor masks them before it replies
 * (lib/masking/service.ts). The active rules come from the settings actor's rule store
 * (`MaskRulesList`, enabled rules only), kept until `MaskChangedEvt` says a rule changed.
 */
import { Actor, ResultMask } from '../../protocol/subjects.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import { startLineageWorkers } from '../lib/masking/isolated.js';
import { createMasking, maskCounted } from '../lib/masking/service.js';

export async function start(deps: ActorDeps): Promise<RunningActor> {
  const { bus, config, log } = deps;
  // statements are read for lineage in a worker thread (isolated.ts): started here, parsers loaded
  await startLineageWorkers(log);
  const masking = createMasking(bus, config, log);
  bus.serve(ResultMask, (input, ctx) => maskCounted(input, masking, ctx));
  return { name: Actor.Masking, stop: async () => masking.stop() };
}

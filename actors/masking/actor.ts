/**
 * The masking actor: `ResultMask` over the bus. The active rules come from the settings actor's
 * rule store (`MaskRulesList`, enabled rules only, cached a few seconds and dropped at once when
 * `MaskChangedEvt` says a rule changed).
 */
import { Actor, MaskChangedEvt, MaskRulesList, ResultMask } from '../../protocol/subjects.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import { countMaskingHit } from '../../protocol/metrics.js';
import { startLineageWorkers } from './isolated.js';
import { opaqueFunctions } from './functions.js';
import { mask, RuleCache, type MaskingDeps } from './handle.js';
import { createHasher } from './strategies.js';

/** The longest a masking request waits for the rule store. */
const RULES_TIMEOUT_MS = 5_000;

export async function start(deps: ActorDeps): Promise<RunningActor> {
  const { bus, config, log } = deps;
  // statements are read for lineage in a worker thread (isolated.ts): started here, parsers loaded
  await startLineageWorkers(log);
  const hasher = createHasher(config.config_db.encryption_key || undefined);
  if (hasher.keySource === 'random') {
    log.info('mask hashes use a random key of this process (set config_db.encryption_key for hashes that stay the same across restarts and processes)');
  }
  const rules = new RuleCache(async (ctx) => {
    const reply = await bus.request(MaskRulesList, {}, ctx, { timeoutMs: RULES_TIMEOUT_MS });
    return reply.rules.filter((r) => r.enabled).map((r) => ({ field_pattern: r.field_pattern, strategy: r.strategy }));
  }, log);
  // every copy of this actor hears every change (core NATS, no queue group): none keeps old rules
  const stopListening = bus.on(MaskChangedEvt, () => rules.invalidate());
  // a function the deployment allows (database.allowed_functions) may read any table: not traced
  const d: MaskingDeps = { rules, hasher, log, opaqueFn: opaqueFunctions(config.database.allowed_functions) };
  bus.serve(ResultMask, async (input, ctx) => {
    const reply = await mask(input, d, ctx);
    // /metrics: the columns masked, by strategy (protocol/metrics.ts)
    for (const m of reply.masked) countMaskingHit(m.strategy);
    return reply;
  });
  return { name: Actor.Masking, stop: async () => stopListening() };
}

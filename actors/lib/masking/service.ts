/**
 * Masking as a process runs it: the active rules (asked from the settings actor, kept until
 * `MaskChangedEvt` says one changed, with RULES_TTL_MS as the backstop), the hasher, the
 * functions not traced. The executor masks every result it returns with it (sql.execute,
 * sql.export, sql.profile, sql.values: docs/architecture.md "Masking"), and the masking actor
 * serves `result.mask` with it for rows a caller brings.
 */
import type { Bus } from '../../../runtime/bus.js';
import type { Ctx } from '../../../protocol/headers.js';
import type { Logger } from '../../../runtime/log.js';
import { countMaskingHit } from '../../../runtime/metrics.js';
import type { MaskRuleLite, ResultMaskReply, ResultMaskRequest } from '../../../protocol/schemas/policy.js';
import { MaskChangedEvt, MaskRulesList } from '../../../protocol/subjects.js';
import type { Config } from '../../../config/schema.js';
import { opaqueFunctions } from './functions.js';
import type { Query } from './lineage.js';
import { mask, RuleCache, type MaskingDeps } from './mask.js';
import { createHasher, type Hasher } from './strategies.js';

/** The longest a masking request waits for the rule store. */
const RULES_TIMEOUT_MS = 5_000;

export interface Masking extends MaskingDeps {
  rules: RuleCache;
  /** stop listening for rule changes */
  stop(): void;
}

/** One hasher per key and process: every result of this process hashes a value the same way. */
const hashers = new Map<string, Hasher>();

export function processHasher(secret: string | undefined, log?: Logger): Hasher {
  const key = secret ?? '';
  let h = hashers.get(key);
  if (!h) {
    h = createHasher(secret || undefined);
    hashers.set(key, h);
    if (h.keySource === 'random') {
      log?.info('mask hashes use a random key of this process (set config_db.encryption_key for hashes that stay the same across restarts and processes)');
    }
  }
  return h;
}

/** The rules of the store, kept and dropped on change, and what masking needs beside them. */
export function createMasking(bus: Pick<Bus, 'request' | 'on'>, config: Config, log: Logger): Masking {
  const rules = new RuleCache(async (ctx) => {
    const reply = await bus.request(MaskRulesList, {}, ctx, { timeoutMs: RULES_TIMEOUT_MS });
    return reply.rules.filter((r) => r.enabled).map((r) => ({ field_pattern: r.field_pattern, strategy: r.strategy }));
  }, log);
  // every process hears every change (core NATS, no queue group): none keeps old rules
  const stop = bus.on(MaskChangedEvt, () => rules.invalidate());
  return {
    rules,
    hasher: processHasher(config.config_db.encryption_key || undefined, log),
    log,
    // a function the deployment allows (database.allowed_functions) may read any table: not traced
    opaqueFn: opaqueFunctions(config.database.allowed_functions),
    stop,
  };
}

/** mask(), counted in /metrics (the columns masked, by strategy). */
export async function maskCounted(input: ResultMaskRequest, deps: MaskingDeps, ctx: Ctx, query?: Query): Promise<ResultMaskReply> {
  const reply = await mask(input, deps, ctx, query);
  for (const m of reply.masked) countMaskingHit(m.strategy);
  return reply;
}

/** Masking with rules fixed in advance (tools and tests that run the executor's functions without a rule store). */
export function fixedMasking(rules: MaskRuleLite[], log: Logger, secret?: string): MaskingDeps {
  return { rules: { get: async () => rules }, hasher: processHasher(secret, log), log };
}

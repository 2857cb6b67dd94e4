import type { Turn } from '../../protocol/schemas/common.js';
import { INSIGHTS_FOLLOW_UP_TTL_MS, type InsightsFollowUp } from '../../protocol/schemas/insights.js';
import type { Kv } from '../../runtime/kv.js';
import { Actor, Ask, AskConfirm, Bucket } from '../../protocol/subjects.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import { KvConversationStore, MemoryConversationStore, type ConversationStore } from './conversations.js';
import { Confirmations, CONFIRMATION_TTL_MS, type PendingSql } from './confirmations.js';
import { ask, confirm, type AssistantDeps } from './handle.js';

export async function start(deps: ActorDeps): Promise<RunningActor> {
  const { max_turns, ttl_minutes } = deps.config.conversation;
  let conversations: ConversationStore;
  try {
    const kv = await deps.bus.bucket<Turn[]>(Bucket.Conversations, { ttlMs: ttl_minutes * 60_000 });
    conversations = new KvConversationStore(kv, max_turns, deps.log);
  } catch (err) {
    deps.log.warn({ err: (err as Error).message }, 'JetStream KV is not available: conversations are kept in this process only');
    conversations = new MemoryConversationStore(max_turns, ttl_minutes * 60_000);
  }
  let confirmations: Confirmations | undefined;
  try {
    confirmations = new Confirmations(await deps.bus.bucket<PendingSql>(Bucket.Confirmations, { ttlMs: CONFIRMATION_TTL_MS }));
  } catch (err) {
    deps.log.warn({ err: (err as Error).message }, 'JetStream KV is not available: query.confirm_before_execute cannot hold SQL');
  }
  let followUps: Kv<InsightsFollowUp> | undefined;
  // opened whatever the mode: insights.mode may become hybrid at run time (admin edits)
  try {
    followUps = await deps.bus.bucket<InsightsFollowUp>(Bucket.Insights, { ttlMs: INSIGHTS_FOLLOW_UP_TTL_MS });
  } catch (err) {
    deps.log.warn({ err: (err as Error).message }, 'JetStream KV is not available: hybrid insights follow on streams only, JSON answers wait for the model');
  }
  const h: AssistantDeps = { ...deps, conversations, ...(confirmations ? { confirmations } : {}), ...(followUps ? { followUps } : {}) };
  // A question whose events could not reach the audit trail is refused before any work
  // (AUDIT_UNAVAILABLE, 503), unless the operator turned audit.required off.
  const admit = (): void => {
    if (!deps.config.audit.required) return;
    const refused = deps.bus.eventTrouble();
    if (refused) throw refused;
  };
  const trouble = deps.config.audit.required ? deps.bus.eventTrouble() : undefined;
  if (trouble) deps.log.error({ reason: trouble.message }, 'questions are refused until the audit trail can be written (audit.required)');
  deps.bus.serve(Ask, async (input, ctx) => { admit(); return ask(input, h, ctx); });
  deps.bus.serve(AskConfirm, async (input, ctx) => { admit(); return confirm(input, h, ctx); });
  return { name: Actor.Assistant, stop: async () => undefined };
}

/**
 * The last few turns of a conversation, so a follow-up ("and by month?") is understood.
 * Kept in a JetStream KV bucket with a TTL, so every assistant copy in every process sees
 * them; without JetStream, a bounded in-process map (and a warning at start).
 */
import { createHash } from 'node:crypto';
import type { Kv } from '../../runtime/kv.js';
import type { Turn } from '../../protocol/schemas/common.js';
import type { Logger } from '../../runtime/log.js';

export interface ConversationStore {
  load(id: string): Promise<Turn[]>;
  /** no-op without an id */
  append(id: string | undefined, turn: Turn): Promise<void>;
}

const MAX_TEXT = 2_000;

function clip(turn: Turn): Turn {
  const out: Turn = { question: turn.question.slice(0, MAX_TEXT) };
  if (turn.sql) out.sql = turn.sql.slice(0, MAX_TEXT * 2);
  if (turn.answer) out.answer = turn.answer.slice(0, MAX_TEXT);
  // a clarifying question waiting for its answer (actors/assistant/clarify.ts): small, kept whole
  if (turn.clarification) out.clarification = turn.clarification;
  return out;
}

/** KV keys allow a narrow alphabet: use a digest of the caller's id. */
function keyOf(id: string): string {
  return createHash('sha256').update(id).digest('hex').slice(0, 40);
}

export class KvConversationStore implements ConversationStore {
  constructor(private readonly kv: Kv<Turn[]>, private readonly maxTurns: number, private readonly log: Logger) {}

  async load(id: string): Promise<Turn[]> {
    if (this.maxTurns === 0) return [];
    try {
      const turns = await this.kv.get(keyOf(id));
      return Array.isArray(turns) ? turns.slice(-this.maxTurns) : [];
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'cannot read the conversation; answering without it');
      return [];
    }
  }

  async append(id: string | undefined, turn: Turn): Promise<void> {
    if (!id || this.maxTurns === 0) return;
    try {
      const turns = [...(await this.load(id)), clip(turn)].slice(-this.maxTurns);
      await this.kv.put(keyOf(id), turns);
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'cannot save the conversation turn');
    }
  }
}

export class MemoryConversationStore implements ConversationStore {
  private readonly map = new Map<string, { turns: Turn[]; at: number }>();
  constructor(private readonly maxTurns: number, private readonly ttlMs: number, private readonly maxConversations = 10_000) {}

  async load(id: string): Promise<Turn[]> {
    const hit = this.map.get(id);
    if (!hit || Date.now() - hit.at > this.ttlMs) return [];
    return hit.turns.slice(-this.maxTurns);
  }

  async append(id: string | undefined, turn: Turn): Promise<void> {
    if (!id || this.maxTurns === 0) return;
    const turns = [...(await this.load(id)), clip(turn)].slice(-this.maxTurns);
    this.map.delete(id);
    this.map.set(id, { turns, at: Date.now() });
    if (this.map.size > this.maxConversations) this.map.delete(this.map.keys().next().value as string);
  }
}

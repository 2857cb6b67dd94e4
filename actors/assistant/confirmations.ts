/**
 * SQL held for the user's confirmation (query.confirm_before_execute), in JetStream KV so any
 * edge and any assistant copy can complete it. A confirmation runs once (taken with a
 * compare-and-delete on its revision), only for the owner that asked, and expires.
 */
import { randomBytes } from 'node:crypto';
import type { KV } from '../../protocol/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import type { Channel, Dialect } from '../../protocol/schemas/common.js';

export const CONFIRMATION_TTL_MS = 10 * 60_000;

export interface PendingSql {
  sql: string;
  explanation?: string;
  question: string;
  conversation_id?: string;
  owner: string;
  channel: Channel;
  dialect: Dialect;
  tables: string[];
  expires_at: string;
}

export class Confirmations {
  constructor(private readonly kv: KV) {}

  async hold(p: Omit<PendingSql, 'expires_at'>, now = Date.now()): Promise<{ id: string; expires_at: string }> {
    const id = `cf_${randomBytes(18).toString('base64url')}`;
    const expires_at = new Date(now + CONFIRMATION_TTL_MS).toISOString();
    await this.kv.create(id, JSON.stringify({ ...p, expires_at }));
    return { id, expires_at };
  }

  /** The pending SQL, removed so it can never run twice; NOT_FOUND / FORBIDDEN otherwise. */
  async take(id: string, owner: string, now = Date.now()): Promise<PendingSql> {
    const gone = new CortadoError('NOT_FOUND', 'there is no such confirmation: it was used already, or it expired');
    if (!/^cf_[A-Za-z0-9_-]{10,64}$/.test(id)) throw gone;
    const e = await this.kv.get(id);
    if (!e || e.operation !== 'PUT' || e.length === 0) throw gone;
    const p = JSON.parse(e.string()) as PendingSql;
    if (p.owner !== owner) throw new CortadoError('FORBIDDEN', 'this confirmation belongs to another session');
    if (Date.parse(p.expires_at) <= now) throw gone;
    try {
      // only the one who deletes the revision it read gets to run it
      await this.kv.delete(id, { previousSeq: e.revision });
    } catch {
      throw gone;
    }
    return p;
  }
}

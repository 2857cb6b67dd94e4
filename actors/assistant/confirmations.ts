/**
 * SQL held for the user's confirmation (query.confirm_before_execute), in the shared bucket (runtime/kv.ts) so any
 * edge and any assistant copy can complete it. A confirmation runs once (taken with a
 * compare-and-delete on its revision), only for the owner that asked, and expires.
 */
import { randomBytes } from 'node:crypto';
import { CortadoError } from '../../protocol/errors.js';
import type { Kv } from '../../runtime/kv.js';
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
  constructor(private readonly kv: Kv<PendingSql>) {}

  async hold(p: Omit<PendingSql, 'expires_at'>, now = Date.now()): Promise<{ id: string; expires_at: string }> {
    const id = `cf_${randomBytes(18).toString('base64url')}`;
    const expires_at = new Date(now + CONFIRMATION_TTL_MS).toISOString();
    await this.kv.create(id, { ...p, expires_at });
    return { id, expires_at };
  }

  /** The pending SQL, removed so it can never run twice; NOT_FOUND / FORBIDDEN otherwise. */
  async take(id: string, owner: string, now = Date.now()): Promise<PendingSql> {
    const gone = new CortadoError('NOT_FOUND', 'there is no such confirmation: it was used already, or it expired');
    if (!/^cf_[A-Za-z0-9_-]{10,64}$/.test(id)) throw gone;
    let foreign = false;
    // only the one who deletes the revision it read gets to run it (compare-and-delete)
    const p = await this.kv.take(id, (held) => {
      foreign = held.owner !== owner;
      return !foreign && Date.parse(held.expires_at) > now;
    });
    if (foreign) throw new CortadoError('FORBIDDEN', 'this confirmation belongs to another session');
    if (!p) throw gone;
    return p;
  }
}

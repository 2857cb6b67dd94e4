/**
 * Sessions and login lockouts in JetStream KV, so every edge and every identity copy sees the
 * same ones. A session is kept under the SHA-256 of its secret (the cookie value never rests
 * anywhere); a lockout counts failures per user and client address, and per user overall.
 *
 * An auth session (plugins.auth) also has a non-secret id, the first 32 hex digits of that
 * SHA-256: it names the session in a database scope (`s:<id>`), and an index key finds the
 * session by it. Its db_config is kept sealed (config_db.encryption_key).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { KV } from '../../protocol/bus.js';
import type { SessionInfo, SessionKind } from '../../protocol/schemas/identity.js';

export interface SessionRecord extends SessionInfo {
  /** auth sessions: the connection fields, secrets sealed; never in a reply */
  db_config?: Record<string, unknown>;
}

/** The non-secret id of an auth session, from the SHA-256 of its secret. */
export function sessionIdOf(hash: string): string {
  return hash.slice(0, 32);
}

/** A session as replies show it: without its db_config. */
export function publicSession(s: SessionRecord): SessionInfo {
  const { db_config: _sealed, ...info } = s;
  return info;
}

export const LOCKOUT = {
  /** failures from one address for one user before it is locked */
  perClient: 5,
  /** failures for one user from anywhere before it is locked */
  perUser: 20,
  windowMs: 15 * 60_000,
} as const;

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export function newSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

export class SessionStore {
  constructor(private readonly kv: KV) {}

  async create(info: Omit<SessionRecord, 'csrf' | 'created_at' | 'expires_at' | 'id'>, ttlMs: number, now = Date.now()): Promise<{ token: string; session: SessionRecord }> {
    const token = newSecret();
    const hash = sha256(token);
    const session: SessionRecord = {
      ...info,
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + ttlMs).toISOString(),
      csrf: newSecret(24),
      ...(info.kind === 'auth' ? { id: sessionIdOf(hash) } : {}),
    };
    await this.kv.put(`s.${hash}`, JSON.stringify(session));
    if (info.kind === 'auth') await this.kv.put(`a.${sessionIdOf(hash)}`, hash);
    return { token, session };
  }

  /** An unexpired auth session by its non-secret id. */
  async byId(id: string, now = Date.now()): Promise<SessionRecord | undefined> {
    if (!/^[0-9a-f]{32}$/.test(id)) return undefined;
    const index = await this.kv.get(`a.${id}`);
    if (!index || index.operation !== 'PUT' || index.value.length === 0) return undefined;
    const e = await this.kv.get(`s.${index.string()}`);
    if (!e || e.operation !== 'PUT' || e.value.length === 0) return undefined;
    const s = JSON.parse(e.string()) as SessionRecord;
    if (s.kind !== 'auth' || s.id !== id || Date.parse(s.expires_at) <= now) return undefined;
    return s;
  }

  async get(token: string, kind: SessionKind, now = Date.now()): Promise<SessionRecord | undefined> {
    if (!token || token.length > 256) return undefined;
    const e = await this.kv.get(`s.${sha256(token)}`);
    if (!e || e.operation !== 'PUT' || e.value.length === 0) return undefined;
    const s = JSON.parse(e.string()) as SessionRecord;
    if (s.kind !== kind || Date.parse(s.expires_at) <= now) return undefined;
    return s;
  }

  async remove(token: string): Promise<void> {
    const hash = sha256(token);
    await this.kv.delete(`s.${hash}`).catch(() => undefined);
    await this.kv.delete(`a.${sessionIdOf(hash)}`).catch(() => undefined);
  }
}

interface Failures {
  count: number;
  first: number;
}

export class Lockouts {
  constructor(private readonly kv: KV) {}

  private keys(kind: SessionKind, username: string, client: string): [string, string] {
    const user = username.trim().toLowerCase();
    return [`l.${kind}.${sha256(`${user}|${client}`)}`, `l.${kind}.${sha256(user)}`];
  }

  private async read(key: string, now: number): Promise<Failures> {
    const e = await this.kv.get(key);
    if (!e || e.operation !== 'PUT' || e.value.length === 0) return { count: 0, first: now };
    const f = JSON.parse(e.string()) as Failures;
    return now - f.first > LOCKOUT.windowMs ? { count: 0, first: now } : f;
  }

  /** ms until the user may try again from this client, or 0. */
  async lockedFor(kind: SessionKind, username: string, client: string, now = Date.now()): Promise<number> {
    const [perClient, perUser] = this.keys(kind, username, client);
    const [a, b] = await Promise.all([this.read(perClient, now), this.read(perUser, now)]);
    const until = (f: Failures, max: number) => (f.count >= max ? f.first + LOCKOUT.windowMs - now : 0);
    return Math.max(until(a, LOCKOUT.perClient), until(b, LOCKOUT.perUser), 0);
  }

  async fail(kind: SessionKind, username: string, client: string, now = Date.now()): Promise<void> {
    for (const key of this.keys(kind, username, client)) {
      const f = await this.read(key, now);
      await this.kv.put(key, JSON.stringify({ count: f.count + 1, first: f.first }));
    }
  }

  /** a success clears this client's count (not the per-user one: an attacker elsewhere still counts) */
  async succeed(kind: SessionKind, username: string, client: string): Promise<void> {
    const [perClient] = this.keys(kind, username, client);
    await this.kv.delete(perClient).catch(() => undefined);
  }
}

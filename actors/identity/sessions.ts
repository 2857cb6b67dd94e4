/**
 * Sessions and login lockouts in the shared sessions bucket (runtime/kv.ts, JetStream KV), so every edge and every identity copy sees the
 * same ones. A session is kept under the SHA-256 of its secret (the cookie value never rests
 * anywhere); a lockout counts failures per user and client address, and per user overall, the
 * user named as its authority compares names (protocol/schemas/text.ts loginKey).
 *
 * An auth session (plugins.auth) also has a non-secret id, the first 32 hex digits of that
 * SHA-256: it names the session in a database scope (`s:<id>`), and an index key finds the
 * session by it. Its db_config is kept sealed (config_db.encryption_key).
 */
import { createHash, randomBytes } from 'node:crypto';
import { CortadoError } from '../../protocol/errors.js';
import { KvContention, type Kv } from '../../runtime/kv.js';
import type { SessionInfo, SessionKind } from '../../protocol/schemas/identity.js';
import { loginKey } from '../../protocol/schemas/text.js';

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

/** What the sessions bucket holds: sessions (`s.<hash>`), the auth-session index (`a.<id>` → hash), lockout counters (`l.…`). */
export type SessionsBucketValue = SessionRecord | string | Failures;

export class SessionStore {
  private readonly sessions: Kv<SessionRecord>;
  private readonly index: Kv<string>;
  constructor(kv: Kv<SessionsBucketValue>) {
    this.sessions = kv.as<SessionRecord>();
    this.index = kv.as<string>();
  }

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
    await this.sessions.put(`s.${hash}`, session);
    if (info.kind === 'auth') await this.index.put(`a.${sessionIdOf(hash)}`, hash);
    return { token, session };
  }

  /** An unexpired auth session by its non-secret id. */
  async byId(id: string, now = Date.now()): Promise<SessionRecord | undefined> {
    if (!/^[0-9a-f]{32}$/.test(id)) return undefined;
    const hash = await this.index.get(`a.${id}`);
    if (typeof hash !== 'string') return undefined;
    const s = await this.sessions.get(`s.${hash}`);
    if (!s || s.kind !== 'auth' || s.id !== id || Date.parse(s.expires_at) <= now) return undefined;
    return s;
  }

  async get(token: string, kind: SessionKind, now = Date.now()): Promise<SessionRecord | undefined> {
    if (!token || token.length > 256) return undefined;
    const s = await this.sessions.get(`s.${sha256(token)}`);
    if (!s || s.kind !== kind || Date.parse(s.expires_at) <= now) return undefined;
    return s;
  }

  async remove(token: string): Promise<void> {
    const hash = sha256(token);
    await this.sessions.delete(`s.${hash}`).catch(() => undefined);
    await this.index.delete(`a.${sessionIdOf(hash)}`).catch(() => undefined);
  }
}

export interface Failures {
  count: number;
  first: number;
}

/** 429 for a locked login, with the minutes (message) and seconds (retry_after_s) to wait. */
export function lockedOut(ms: number): CortadoError {
  return new CortadoError('RATE_LIMITED', `too many failed logins: try again in ${Math.ceil(ms / 60_000)} min`, { retry_after_s: Math.ceil(ms / 1000) });
}

/** One login attempt, counted before its password is checked: say how it ended. */
export interface ReservedAttempt {
  /** the credentials were wrong (or the account not allowed in): the attempt stays counted */
  failed(): Promise<void>;
  /** signed in: this client's count is cleared, and the attempt taken back from the user's */
  succeeded(): Promise<void>;
  /** no verdict on the credentials (the directory or database could not be reached): taken back */
  released(): Promise<void>;
}

export type Reservation = { attempt: ReservedAttempt; lockedMs?: undefined } | { attempt?: undefined; lockedMs: number };

/**
 * Failed logins per user and client address, and per user overall, in the shared KV. An
 * attempt is counted BEFORE its password is checked, by compare-and-set on both counters, so
 * parallel requests to any number of edges and identity copies cannot all slip past a check
 * made before any of them failed: at most LOCKOUT.perClient attempts for one user from one
 * address (LOCKOUT.perUser from anywhere) reach a password check in a window.
 */
export class Lockouts {
  private readonly kv: Kv<Failures>;
  constructor(kv: Kv<SessionsBucketValue>) {
    this.kv = kv.as<Failures>();
  }

  private keys(kind: SessionKind, username: string, client: string): [string, string] {
    // the name as the directory or database compares it: its other spellings share the counters
    const user = loginKey(username);
    return [`l.${kind}.${sha256(`${user}|${client}`)}`, `l.${kind}.${sha256(user)}`];
  }

  private async read(key: string, now: number): Promise<Failures> {
    const f = await this.kv.get(key);
    if (!f) return { count: 0, first: now };
    return now - f.first > LOCKOUT.windowMs ? { count: 0, first: now } : f;
  }

  /**
   * Add `step` to one counter by compare-and-set. With `max`, a counter already at `max` is
   * left alone and the ms until its window ends come back instead. Taking back (step -1)
   * never goes below 0.
   */
  private async change(key: string, step: 1 | -1, now: number, max?: number): Promise<{ lockedMs: number }> {
    let lockedMs = 0;
    try {
      await this.kv.update(key, (current) => {
        lockedMs = 0;
        let f: Failures = current ?? { count: 0, first: now };
        if (now - f.first > LOCKOUT.windowMs) f = { count: 0, first: now };
        if (max !== undefined && step > 0 && f.count >= max) {
          lockedMs = Math.max(1, f.first + LOCKOUT.windowMs - now);
          return undefined;
        }
        if (step < 0 && f.count <= 0) return undefined;
        return { count: f.count + step, first: f.first };
      });
    } catch (err) {
      // compare-and-set kept losing: the attempt is refused (fail closed)
      if (err instanceof KvContention) throw new CortadoError('RATE_LIMITED', 'too many logins for this account at once: try again in a moment', { retry_after_s: 1 });
      throw err;
    }
    return { lockedMs };
  }

  /** ms until the user may try again from this client, or 0 (a read: nothing is counted). */
  async lockedFor(kind: SessionKind, username: string, client: string, now = Date.now()): Promise<number> {
    const [perClient, perUser] = this.keys(kind, username, client);
    const [a, b] = await Promise.all([this.read(perClient, now), this.read(perUser, now)]);
    const until = (f: Failures, max: number) => (f.count >= max ? f.first + LOCKOUT.windowMs - now : 0);
    return Math.max(until(a, LOCKOUT.perClient), until(b, LOCKOUT.perUser), 0);
  }

  /**
   * Count one attempt before its password is checked: the attempt to report the outcome to, or
   * the ms until the user may try again (nothing counted then).
   */
  async reserve(kind: SessionKind, username: string, client: string, now = Date.now()): Promise<Reservation> {
    const [perClient, perUser] = this.keys(kind, username, client);
    const a = await this.change(perClient, 1, now, LOCKOUT.perClient);
    if (a.lockedMs > 0) return { lockedMs: a.lockedMs };
    let b: { lockedMs: number };
    try {
      b = await this.change(perUser, 1, now, LOCKOUT.perUser);
    } catch (err) {
      await this.change(perClient, -1, now).catch(() => undefined);
      throw err;
    }
    if (b.lockedMs > 0) {
      await this.change(perClient, -1, now);
      return { lockedMs: b.lockedMs };
    }
    let settled = false;
    const once = async (work: () => Promise<void>): Promise<void> => {
      if (settled) return;
      settled = true;
      await work();
    };
    return {
      attempt: {
        failed: () => once(async () => undefined),
        succeeded: () => once(async () => {
          await this.kv.delete(perClient).catch(() => undefined);
          await this.change(perUser, -1, now);
        }),
        released: () => once(async () => {
          await this.change(perClient, -1, now);
          await this.change(perUser, -1, now);
        }),
      },
    };
  }

  /** Count one failure without a reservation (a failure known before any check). */
  async fail(kind: SessionKind, username: string, client: string, now = Date.now()): Promise<void> {
    for (const key of this.keys(kind, username, client)) await this.change(key, 1, now);
  }
}

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
import { CortadoError } from '../../protocol/errors.js';
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

/** JetStream's answer when a compare-and-set lost the race (the key changed since it was read). */
const WRONG_LAST_SEQUENCE = new Set([10071, 10164]);
/** compare-and-set tries on one counter before the attempt is refused (fail closed) */
const CAS_TRIES = 40;

function lostRace(err: unknown): boolean {
  return WRONG_LAST_SEQUENCE.has((err as { code?: unknown } | null)?.code as number);
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

  /**
   * Add `step` to one counter by compare-and-set. With `max`, a counter already at `max` is
   * left alone and the ms until its window ends come back instead. Taking back (step -1)
   * never goes below 0.
   */
  private async change(key: string, step: 1 | -1, now: number, max?: number): Promise<{ lockedMs: number }> {
    for (let tries = 0; tries < CAS_TRIES; tries++) {
      const e = await this.kv.get(key);
      const live = e !== null && e.operation === 'PUT' && e.value.length > 0;
      let f: Failures = live ? (JSON.parse(e.string()) as Failures) : { count: 0, first: now };
      if (now - f.first > LOCKOUT.windowMs) f = { count: 0, first: now };
      if (max !== undefined && step > 0 && f.count >= max) return { lockedMs: Math.max(1, f.first + LOCKOUT.windowMs - now) };
      if (step < 0 && f.count <= 0) return { lockedMs: 0 };
      const next = JSON.stringify({ count: f.count + step, first: f.first });
      try {
        if (e !== null && e.operation === 'PUT') await this.kv.update(key, next, e.revision);
        else await this.kv.create(key, next);
        return { lockedMs: 0 };
      } catch (err) {
        if (!lostRace(err)) throw err;
        // another request changed the counter since it was read: read it again, a little later
        await new Promise((r) => setTimeout(r, Math.random() * 2 * (tries + 1)));
      }
    }
    throw new CortadoError('RATE_LIMITED', 'too many logins for this account at once: try again in a moment', { retry_after_s: 1 });
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

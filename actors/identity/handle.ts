/**
 * The identity actor's logic: logins (LDAP first, then the local admin account as SPEC.md
 * says), sessions, API tokens. Plain functions over (input, deps, ctx). Runtime config,
 * prompts, mask rules and LDAP settings are the settings actor's (actors/settings/).
 */
import { scopeOf as scopeId } from '../../protocol/scope.js';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import { CortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/log.js';
import type * as I from '../../protocol/schemas/identity.js';
import { LoginEvt, ScopeEndedEvt, TokenEvt } from '../../protocol/subjects.js';
import { maskSecrets } from '../../config/runtime.js';
import type { Config } from '../../config/schema.js';
import type { ApiTokenRecord, Storage } from '../../store/index.js';
import { ldapLogin, normalizeDn, type LdapSettings } from '../lib/ldap/client.js';
import { sealForRequest, type SecretBox } from '../lib/crypto/secrets.js';
import { lockedOut, newSecret, publicSession, sha256, type Lockouts, type SessionStore } from './sessions.js';

export interface IdentityDeps {
  bus: Pick<Bus, 'publish'>;
  config: Config;
  log: Logger;
  store: Pick<Storage, 'tokens'>;
  box: SecretBox;
  sessions: SessionStore;
  lockouts: Lockouts;
  now?: () => number;
}

const TOKEN_PREFIX = 'ctd_';
/** last_used_at is written at most this often per token */
const TOUCH_EVERY_MS = 60_000;

export function now(deps: IdentityDeps): number {
  return deps.now?.() ?? Date.now();
}

export function event(ctx: Ctx, deps: IdentityDeps) {
  return { id: randomUUID(), ts: new Date(now(deps)).toISOString(), request_id: ctx.requestId, ...(ctx.user ? { user: ctx.user } : {}) };
}

/** Equal strings in time that does not depend on where they differ. */
export function safeEqual(a: string, b: string): boolean {
  const ha = Buffer.from(sha256(a), 'hex');
  const hb = Buffer.from(sha256(b), 'hex');
  return timingSafeEqual(ha, hb) && a.length === b.length;
}

// ---- login and sessions --------------------------------------------------------------------

const WRONG = 'wrong username or password';

/**
 * A login whose password was checked and failed answers no sooner than this after it began. The
 * directory does the same work for unknown names as for known ones (actors/lib/ldap/client.ts); this
 * floor also hides what the authority itself spends on a known user (hashing the password) and
 * the local-account fallback, as long as those take less.
 */
export const FAILED_LOGIN_FLOOR_MS = 100;

/** How many recent failed checks the floor looks back on, and how far it may rise. */
const FLOOR_WINDOW = 32;
const FLOOR_CEILING_MS = 1_000;
const recentChecks: number[] = [];

/**
 * Waits until the floor has passed since `started` (performance.now()). The floor is `floorMs`,
 * raised to 1.5 times the slowest of the last 32 failed checks (at most 1 s): on a loaded machine
 * a check that takes longer than 100 ms would otherwise answer later for a known name than for an
 * unknown one, and the difference would show again.
 */
export async function failureFloor(started: number, floorMs = FAILED_LOGIN_FLOOR_MS): Promise<void> {
  const spent = performance.now() - started;
  recentChecks.push(spent);
  if (recentChecks.length > FLOOR_WINDOW) recentChecks.shift();
  const floor = Math.max(floorMs, Math.min(FLOOR_CEILING_MS, 1.5 * Math.max(...recentChecks)));
  const wait = floor - spent;
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
}

export async function login(input: I.LoginRequest, deps: IdentityDeps, ctx: Ctx): Promise<I.LoginReply> {
  const { config, log } = deps;
  const record = (ok: boolean, extra: { source?: 'ldap' | 'local'; reason?: string }) =>
    deps.bus.publish(LoginEvt, { ...event(ctx, deps), user: input.username, kind: input.kind, client: input.client, ok, ...extra }, ctx);

  if (input.kind === 'auth') {
    record(false, { reason: 'disabled' });
    throw new CortadoError('FORBIDDEN', 'database sessions sign in with their database credentials (POST /auth/login)');
  }
  if (input.kind === 'admin' && !config.admin.enabled) {
    record(false, { reason: 'disabled' });
    throw new CortadoError('FORBIDDEN', 'the admin panel is disabled (admin.enabled is false)');
  }
  if (input.kind === 'assistant' && !(config.plugins.assistant_login.enabled && config.ldap.enabled)) {
    record(false, { reason: 'disabled' });
    throw new CortadoError('FORBIDDEN', 'the assistant login is disabled (plugins.assistant_login.enabled and ldap.enabled must be true)');
  }
  // counted before the password is checked (compare-and-set): parallel guesses cannot all get a check
  const reserved = await deps.lockouts.reserve(input.kind, input.username, input.client, now(deps));
  if (!reserved.attempt) {
    record(false, { reason: 'locked' });
    throw lockedOut(reserved.lockedMs);
  }
  const attempt = reserved.attempt;
  const started = performance.now();

  let source: 'ldap' | 'local' | undefined;
  /** who signed in: the directory's own spelling of the name (the typed case may differ) */
  let username = input.username;
  let reason = 'invalid_credentials';
  // each login asks the directory for its own group: the assistant gate's (ldap.required_group_dn)
  // or the admin panel's (admin.ldap_group_dn). Without an admin group no directory user is an
  // admin: the directory is not asked, and only the local account may sign in to the panel.
  const group = directoryGroup(config, input.kind);
  if (group !== undefined) {
    const r = await ldapLogin(config.ldap as LdapSettings, input.username, input.password, group);
    if (r.ok) {
      source = 'ldap';
      username = r.username;
    } else {
      reason = r.reason;
      if (r.reason === 'unreachable' || r.reason === 'misconfigured') log.warn({ reason: r.reason, msg: r.message }, 'directory login failed: trying the local admin account');
    }
  }
  // SPEC: when the directory is unreachable or the bind fails, the admin username and password are tried
  if (!source && input.kind === 'admin' && reason !== 'not_in_group') {
    if (!config.admin.password) {
      reason = group !== undefined ? reason : 'no_local_password';
    } else if (safeEqual(input.username, config.admin.username) && safeEqual(input.password, config.admin.password)) {
      source = 'local';
    }
  }
  if (!source) {
    await attempt.failed();
    record(false, { reason });
    await failureFloor(started);
    if (reason === 'not_in_group') {
      throw new CortadoError('FORBIDDEN', input.kind === 'admin'
        ? 'this directory account is not an administrator (not a member of the admin group, admin.ldap_group_dn)'
        : 'this account is not allowed in (not a member of the required group)');
    }
    throw new CortadoError('UNAUTHORIZED', WRONG);
  }
  await attempt.succeeded();
  const ttlMs = input.kind === 'admin' ? config.admin.session_ttl_minutes * 60_000 : config.plugins.assistant_login.ttl_hours * 3_600_000;
  const { token, session } = await deps.sessions.create({ username, kind: input.kind, source }, ttlMs, now(deps));
  record(true, { source });
  log.info({ user: username, kind: input.kind, source }, 'login');
  return { token, session: publicSession(session) };
}

/**
 * The directory group a login of this kind needs ('' = any directory user), or undefined when
 * the directory is not asked at all: LDAP off, or the admin panel without admin.ldap_group_dn.
 */
export function directoryGroup(config: Config, kind: I.SessionKind): string | undefined {
  if (!config.ldap.enabled) return undefined;
  if (kind === 'admin') return config.admin.ldap_group_dn.trim() || undefined;
  return config.ldap.required_group_dn.trim();
}

/**
 * Who may sign in to the admin panel with this config, in words for the start-up log: the local
 * account, the members of the directory's admin group, or nobody. `warn` when the answer is
 * surprising (nobody, or the assistant gate's group doubling as the admin group).
 */
export function adminIdentities(config: Config): { text: string; warn: boolean } {
  if (!config.admin.enabled) return { text: 'the admin panel is off (admin.enabled: false): nobody is an admin', warn: false };
  const who: string[] = [];
  if (config.admin.password) who.push(`the local account "${config.admin.username}"`);
  const group = directoryGroup(config, 'admin');
  if (group) who.push(`members of the directory group ${group} (admin.ldap_group_dn)`);
  let text = who.length
    ? `admin panel sign-in: ${who.join(' and ')}`
    : 'admin panel sign-in: nobody (admin.password is empty and no directory group is set in admin.ldap_group_dn)';
  let warn = who.length === 0;
  if (config.ldap.enabled && !group) {
    text += '; no directory user is an admin (set admin.ldap_group_dn to a group of administrators to let them in)';
  } else if (!config.ldap.enabled && config.admin.ldap_group_dn.trim()) {
    text += `; admin.ldap_group_dn is set but ldap.enabled is false, so no directory user is an admin`;
    warn = true;
  }
  const gate = config.ldap.required_group_dn.trim();
  if (group && gate && normalizeDn(group) === normalizeDn(gate)) {
    text += `; admin.ldap_group_dn is the assistant gate's group (ldap.required_group_dn): every user the gate lets in is an admin`;
    warn = true;
  }
  return { text, warn };
}

export async function session(input: { token: string; kind: I.SessionKind }, deps: IdentityDeps): Promise<I.SessionInfo> {
  const s = await deps.sessions.get(input.token, input.kind, now(deps));
  if (!s) throw new CortadoError('UNAUTHORIZED', 'not signed in, or the session expired');
  return publicSession(s);
}

export async function logout(input: { token: string }, deps: IdentityDeps): Promise<{ ok: boolean }> {
  await deps.sessions.remove(input.token);
  return { ok: true };
}

// ---- API tokens ----------------------------------------------------------------------------

function tokenInfo(r: ApiTokenRecord, at: number): I.ApiTokenInfo {
  const status = r.revoked_at ? 'revoked' : Date.parse(r.expires_at) <= at ? 'expired' : 'active';
  return {
    id: r.id, prefix: r.prefix, label: r.label, username: r.username, db_config: maskSecrets(r.db_config),
    created_at: r.created_at, expires_at: r.expires_at,
    ...(r.last_used_at ? { last_used_at: r.last_used_at } : {}),
    ...(r.revoked_at ? { revoked_at: r.revoked_at } : {}),
    status,
  };
}

export async function tokenIssue(input: I.TokenIssueRequest, deps: IdentityDeps, ctx: Ctx): Promise<{ token: string; info: I.ApiTokenInfo }> {
  const max = deps.config.plugins.auth.token_max_ttl_hours;
  const ttl = input.ttl_hours ?? Math.min(24, max);
  if (ttl > max) throw new CortadoError('VALIDATION_FAILED', `ttl_hours: at most ${max} (plugins.auth.token_max_ttl_hours)`);
  const at = now(deps);
  const token = `${TOKEN_PREFIX}${newSecret(32)}`;
  const record: ApiTokenRecord = {
    id: randomUUID(),
    prefix: token.slice(0, TOKEN_PREFIX.length + 6),
    hash: sha256(token),
    label: input.label ?? '',
    username: input.username,
    db_config: sealForRequest(() => deps.box.sealSecretsIn(input.db_config ?? {})),
    created_at: new Date(at).toISOString(),
    expires_at: new Date(at + ttl * 3_600_000).toISOString(),
  };
  await deps.store.tokens.insert(record);
  deps.bus.publish(TokenEvt, { ...event(ctx, deps), token_id: record.id, action: 'issued' }, ctx);
  return { token, info: tokenInfo(record, at) };
}

/** Valid, unexpired, unrevoked: its info; otherwise UNAUTHORIZED (the same message for every case). */
export async function tokenCheck(input: { token: string }, deps: IdentityDeps): Promise<{ info: I.ApiTokenInfo }> {
  const bad = new CortadoError('UNAUTHORIZED', 'the token is missing, invalid, expired or revoked');
  if (!input.token.startsWith(TOKEN_PREFIX) || input.token.length > 200) throw bad;
  // the lookup is by the SHA-256 of the token: no comparison of secrets happens in the clear
  const r = await deps.store.tokens.findByHash(sha256(input.token));
  const at = now(deps);
  if (!r || r.revoked_at || Date.parse(r.expires_at) <= at) throw bad;
  if (!r.last_used_at || at - Date.parse(r.last_used_at) > TOUCH_EVERY_MS) {
    await deps.store.tokens.touch(r.id, new Date(at).toISOString()).catch((err: unknown) => deps.log.warn({ err: (err as Error).message }, 'cannot record the token use'));
  }
  return { info: tokenInfo(r, at) };
}

export async function tokenList(input: { username?: string }, deps: IdentityDeps): Promise<{ tokens: I.ApiTokenInfo[] }> {
  const at = now(deps);
  const list = await deps.store.tokens.list(input.username ? { username: input.username } : {});
  return { tokens: list.map((r) => tokenInfo(r, at)) };
}

export async function tokenRevoke(input: { id: string }, deps: IdentityDeps, ctx: Ctx): Promise<{ ok: boolean }> {
  if (!(await deps.store.tokens.revoke(input.id, new Date(now(deps)).toISOString()))) throw new CortadoError('NOT_FOUND', 'there is no such token');
  deps.bus.publish(TokenEvt, { ...event(ctx, deps), token_id: input.id, action: 'revoked' }, ctx);
  deps.bus.publish(ScopeEndedEvt, { ...event(ctx, deps), scope: scopeId('token', input.id), reason: 'revoked' }, ctx);
  return { ok: true };
}

export async function tokenDelete(input: { id: string }, deps: IdentityDeps, ctx: Ctx): Promise<{ ok: boolean }> {
  if (!(await deps.store.tokens.delete(input.id))) throw new CortadoError('NOT_FOUND', 'there is no such token');
  deps.bus.publish(TokenEvt, { ...event(ctx, deps), token_id: input.id, action: 'deleted' }, ctx);
  deps.bus.publish(ScopeEndedEvt, { ...event(ctx, deps), scope: scopeId('token', input.id), reason: 'deleted' }, ctx);
  return { ok: true };
}

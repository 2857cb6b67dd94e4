/**
 * The identity actor's logic: logins (LDAP first, then the local admin account as SPEC.md
 * says), sessions, API tokens, runtime config overrides (prompts and LDAP settings are config
 * keys too), mask rules. Plain functions over (input, deps, ctx).
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { Bus, Ctx } from '../../protocol/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../protocol/log.js';
import type * as I from '../../protocol/schemas/identity.js';
import { ConfigChangedEvt, LoginEvt, ScopeEndedEvt, TokenEvt } from '../../protocol/subjects.js';
import { baselineOf } from '../../config/load.js';
import { DEFAULT_PROMPTS, PROMPT_KEYS } from '../../config/prompts.js';
import { applyOverride, checkOverride, configValue, isSecretKey, maskSecrets } from '../../config/runtime.js';
import type { Config } from '../../config/schema.js';
import { ldapLogin, testLdapConnection, type LdapSettings } from './ldap.js';
import type { SecretBox } from './secrets.js';
import { lockedOut, newSecret, publicSession, sha256, type Lockouts, type SessionStore } from './sessions.js';
import type { ApiTokenRecord, Store } from './store/store.js';

export interface IdentityDeps {
  bus: Pick<Bus, 'publish'>;
  config: Config;
  log: Logger;
  store: Store;
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

/**
 * Seal with the box; without config_db.encryption_key that is refused, and the admin who asked
 * hears why as a 409 (CONFIG_INVALID would be an opaque 500 on the wire).
 */
function sealing<T>(work: () => T): T {
  try {
    return work();
  } catch (err) {
    if (err instanceof CortadoError && err.code === 'CONFIG_INVALID') throw new CortadoError('CONFLICT', err.message);
    throw err;
  }
}

// ---- login and sessions --------------------------------------------------------------------

const WRONG = 'wrong username or password';

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

  let source: 'ldap' | 'local' | undefined;
  let reason = 'invalid_credentials';
  if (config.ldap.enabled) {
    const r = await ldapLogin(config.ldap as LdapSettings, input.username, input.password);
    if (r.ok) source = 'ldap';
    else {
      reason = r.reason;
      if (r.reason === 'unreachable' || r.reason === 'misconfigured') log.warn({ reason: r.reason, msg: r.message }, 'directory login failed: trying the local admin account');
    }
  }
  // SPEC: when the directory is unreachable or the bind fails, the admin username and password are tried
  if (!source && input.kind === 'admin' && reason !== 'not_in_group') {
    if (!config.admin.password) {
      reason = config.ldap.enabled ? reason : 'no_local_password';
    } else if (safeEqual(input.username, config.admin.username) && safeEqual(input.password, config.admin.password)) {
      source = 'local';
    }
  }
  if (!source) {
    await attempt.failed();
    record(false, { reason });
    if (reason === 'not_in_group') throw new CortadoError('FORBIDDEN', 'this account is not allowed in (not a member of the required group)');
    throw new CortadoError('UNAUTHORIZED', WRONG);
  }
  await attempt.succeeded();
  const ttlMs = input.kind === 'admin' ? config.admin.session_ttl_minutes * 60_000 : config.plugins.assistant_login.ttl_hours * 3_600_000;
  const { token, session } = await deps.sessions.create({ username: input.username, kind: input.kind, source }, ttlMs, now(deps));
  record(true, { source });
  log.info({ user: input.username, kind: input.kind, source }, 'login');
  return { token, session: publicSession(session) };
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
    db_config: sealing(() => deps.box.sealSecretsIn(input.db_config ?? {})),
    created_at: new Date(at).toISOString(),
    expires_at: new Date(at + ttl * 3_600_000).toISOString(),
  };
  await deps.store.insertToken(record);
  deps.bus.publish(TokenEvt, { ...event(ctx, deps), token_id: record.id, action: 'issued' }, ctx);
  return { token, info: tokenInfo(record, at) };
}

/** Valid, unexpired, unrevoked: its info; otherwise UNAUTHORIZED (the same message for every case). */
export async function tokenCheck(input: { token: string }, deps: IdentityDeps): Promise<{ info: I.ApiTokenInfo }> {
  const bad = new CortadoError('UNAUTHORIZED', 'the token is missing, invalid, expired or revoked');
  if (!input.token.startsWith(TOKEN_PREFIX) || input.token.length > 200) throw bad;
  // the lookup is by the SHA-256 of the token: no comparison of secrets happens in the clear
  const r = await deps.store.findTokenByHash(sha256(input.token));
  const at = now(deps);
  if (!r || r.revoked_at || Date.parse(r.expires_at) <= at) throw bad;
  if (!r.last_used_at || at - Date.parse(r.last_used_at) > TOUCH_EVERY_MS) {
    await deps.store.touchToken(r.id, new Date(at).toISOString()).catch((err: unknown) => deps.log.warn({ err: (err as Error).message }, 'cannot record the token use'));
  }
  return { info: tokenInfo(r, at) };
}

export async function tokenList(input: { username?: string }, deps: IdentityDeps): Promise<{ tokens: I.ApiTokenInfo[] }> {
  const at = now(deps);
  const list = await deps.store.listTokens(input.username ? { username: input.username } : {});
  return { tokens: list.map((r) => tokenInfo(r, at)) };
}

export async function tokenRevoke(input: { id: string }, deps: IdentityDeps, ctx: Ctx): Promise<{ ok: boolean }> {
  if (!(await deps.store.revokeToken(input.id, new Date(now(deps)).toISOString()))) throw new CortadoError('NOT_FOUND', 'there is no such token');
  deps.bus.publish(TokenEvt, { ...event(ctx, deps), token_id: input.id, action: 'revoked' }, ctx);
  deps.bus.publish(ScopeEndedEvt, { ...event(ctx, deps), scope: `t:${input.id}`, reason: 'revoked' }, ctx);
  return { ok: true };
}

export async function tokenDelete(input: { id: string }, deps: IdentityDeps, ctx: Ctx): Promise<{ ok: boolean }> {
  if (!(await deps.store.deleteToken(input.id))) throw new CortadoError('NOT_FOUND', 'there is no such token');
  deps.bus.publish(TokenEvt, { ...event(ctx, deps), token_id: input.id, action: 'deleted' }, ctx);
  deps.bus.publish(ScopeEndedEvt, { ...event(ctx, deps), scope: `t:${input.id}`, reason: 'deleted' }, ctx);
  return { ok: true };
}

// ---- config overrides ----------------------------------------------------------------------

export async function configView(deps: IdentityDeps): Promise<I.ConfigViewReply> {
  const overrides = await deps.store.listOverrides();
  return {
    config: maskSecrets(deps.config) as unknown as Record<string, unknown>,
    overrides: overrides.map((o) => ({ key: o.key, value: isSecretKey(o.key) ? '********' : o.value, updated_by: o.updated_by, updated_at: o.updated_at })),
    persistent: deps.store.kind === 'postgresql',
  };
}

export async function configUpdate(input: I.ConfigUpdateRequest, deps: IdentityDeps, ctx: Ctx): Promise<{ key: string; value: unknown; previous?: unknown }> {
  const { key, value } = input;
  checkOverride(deps.config, key, value);
  const secret = isSecretKey(key);
  const stored = sealing(() => deps.box.sealForKey(key, value));
  const { previous } = await deps.store.setOverride(key, stored, input.by);
  applyOverride(deps.config, key, value);
  deps.bus.publish(ConfigChangedEvt, { ...event(ctx, deps), user: input.by, key, value: stored, reset: false }, ctx);
  deps.log.info({ key, by: input.by }, 'config changed');
  const shown = (v: unknown) => (secret ? '********' : v);
  return { key, value: shown(value), ...(previous !== undefined ? { previous: shown(previous) } : {}) };
}

export async function configReset(input: { key: string; by: string }, deps: IdentityDeps, ctx: Ctx): Promise<{ key: string; value: unknown }> {
  checkOverride(deps.config, input.key, configValue(baselineOf(deps.config) ?? deps.config, input.key));
  const removed = await deps.store.deleteOverride(input.key, input.by);
  if (!removed) throw new CortadoError('NOT_FOUND', `${input.key} has no runtime override`);
  applyOverride(deps.config, input.key, undefined);
  deps.bus.publish(ConfigChangedEvt, { ...event(ctx, deps), user: input.by, key: input.key, reset: true }, ctx);
  const value = configValue(deps.config, input.key);
  return { key: input.key, value: isSecretKey(input.key) ? '********' : value };
}

export async function configHistory(input: { key?: string; limit?: number; offset?: number }, deps: IdentityDeps) {
  const changes = await deps.store.overrideHistory(input);
  const mask = (key: string, v: unknown) => (v === undefined ? undefined : isSecretKey(key) ? '********' : v);
  return {
    changes: changes.map((c) => ({
      id: c.id, key: c.key, changed_by: c.changed_by, changed_at: c.changed_at,
      ...(c.old_value !== undefined ? { old_value: mask(c.key, c.old_value) } : {}),
      ...(c.new_value !== undefined ? { new_value: mask(c.key, c.new_value) } : {}),
    })),
  };
}

export async function promptsList(deps: IdentityDeps): Promise<{ prompts: Array<{ key: string; text: string; source: 'override' | 'file' | 'default' }> }> {
  const overridden = new Set((await deps.store.listOverrides()).map((o) => o.key));
  const file = baselineOf(deps.config)?.prompts as Record<string, string | undefined> | undefined;
  const current = deps.config.prompts as Record<string, string | undefined>;
  return {
    prompts: PROMPT_KEYS.map((key) => {
      const source = overridden.has(`prompts.${key}`) ? 'override' : file?.[key]?.trim() ? 'file' : 'default';
      const text = current[key]?.trim() ? current[key]! : DEFAULT_PROMPTS[key];
      return { key, text, source };
    }),
  };
}

/** Overrides from the store applied to this process's config at start (sealed secrets opened). */
export async function applyStoredOverrides(deps: IdentityDeps): Promise<number> {
  let n = 0;
  for (const o of await deps.store.listOverrides()) {
    try {
      const value = deps.box.openForKey(o.key, o.value);
      checkOverride(deps.config, o.key, value);
      applyOverride(deps.config, o.key, value);
      n++;
    } catch (err) {
      deps.log.warn({ key: o.key, err: (err as Error).message }, 'a stored config override no longer applies: skipped');
    }
  }
  return n;
}

// ---- mask rules ----------------------------------------------------------------------------

function checkPattern(p: string | undefined): void {
  if (p !== undefined && !/^[A-Za-z0-9_*?.$-]+$/.test(p)) {
    throw new CortadoError('VALIDATION_FAILED', 'field_pattern: letters, digits, _, -, $, . and the wildcards * and ? only');
  }
}

export async function maskCreate(input: I.MaskRuleCreateInput, deps: IdentityDeps) {
  checkPattern(input.field_pattern);
  return deps.store.createMaskRule(input);
}

export async function maskUpdate(input: I.MaskRuleUpdateInput, deps: IdentityDeps) {
  const { id, ...patch } = input;
  checkPattern(patch.field_pattern);
  const r = await deps.store.updateMaskRule(id, patch);
  if (!r) throw new CortadoError('NOT_FOUND', 'there is no such mask rule');
  return r;
}

export async function maskDelete(input: { id: string }, deps: IdentityDeps) {
  if (!(await deps.store.deleteMaskRule(input.id))) throw new CortadoError('NOT_FOUND', 'there is no such mask rule');
  return { ok: true };
}

// ---- LDAP settings -------------------------------------------------------------------------

export function ldapView(deps: IdentityDeps) {
  return { settings: maskSecrets(deps.config.ldap) as unknown as Record<string, unknown> };
}

export async function ldapUpdate(input: { settings: Record<string, unknown>; by: string }, deps: IdentityDeps, ctx: Ctx) {
  const keys = Object.keys(input.settings);
  const known = Object.keys(deps.config.ldap);
  const unknown = keys.filter((k) => !known.includes(k));
  if (unknown.length) throw new CortadoError('VALIDATION_FAILED', `unknown LDAP settings: ${unknown.join(', ')}`);
  // the masked placeholder sent back unchanged means "keep the stored secret"
  const changes = keys.filter((k) => !(isSecretKey(k) && input.settings[k] === '********'));
  for (const k of changes) checkOverride(deps.config, `ldap.${k}`, input.settings[k]);
  for (const k of changes) await configUpdate({ key: `ldap.${k}`, value: input.settings[k], by: input.by }, deps, ctx);
  return ldapView(deps);
}

export async function ldapTest(input: { settings?: Record<string, unknown> }, deps: IdentityDeps) {
  const merged = { ...deps.config.ldap } as Record<string, unknown>;
  for (const [k, v] of Object.entries(input.settings ?? {})) {
    if (!(k in merged)) throw new CortadoError('VALIDATION_FAILED', `unknown LDAP setting: ${k}`);
    if (isSecretKey(k) && v === '********') continue;
    // the same rules as a saved setting: a server that is no string is a 400, not a crash in the client
    checkOverride(deps.config, `ldap.${k}`, v);
    merged[k] = v;
  }
  return testLdapConnection(merged as unknown as LdapSettings);
}

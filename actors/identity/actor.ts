/**
 * The identity actor: logins, sessions (admin, assistant, and the database sessions of
 * plugins.auth), API tokens and the scopes they stand for, over the bus. It opens the storage
 * for its tokens (config_db or memory); runtime config, prompts, mask rules and LDAP settings
 * are the settings actor's (actors/settings/), which applies the stored overrides at start.
 */
import {
  Actor, AuthAutoSession, AuthLogin, AuthLogout, AuthToken, IdentityLogin, IdentityLogout, IdentitySession, ScopeResolve, TokenCheck,
  TokenDelete, TokenIssue, TokenList, TokenRevoke, Bucket, AuthTokenList, AuthTokenRevoke,
} from '../../protocol/subjects.js';
import { CortadoError } from '../../protocol/errors.js';
import { openStorage } from '../../store/index.js';
import { createSecretBox } from '../lib/crypto/secrets.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import { authLogin, authLogout, authToken, autoSession, scopeResolve, type AuthDeps } from './auth.js';
import * as h from './handle.js';
import { ownTokenList, ownTokenRevoke } from './own-tokens.js';
import { Lockouts, LOCKOUT, SessionStore, type SessionsBucketValue } from './sessions.js';

export async function start(deps: ActorDeps): Promise<RunningActor> {
  const { bus, config, log } = deps;
  const box = createSecretBox(config);
  if (config.plugins.auth.enabled && !box.enabled) {
    // an auth session keeps the user's database password: never unencrypted, never under a made-up key
    throw new CortadoError('CONFIG_INVALID', 'plugins.auth.enabled needs config_db.encryption_key: the sessions keep each user\'s database credentials encrypted with it (any Fernet key: see docs/operations.md, config_db)');
  }
  const store = await openStorage(config, log);
  try {
    const auth = config.plugins.auth;
    const maxTtlMs = Math.max(
      config.admin.session_ttl_minutes * 60_000, config.plugins.assistant_login.ttl_hours * 3_600_000, LOCKOUT.windowMs,
      auth.session_ttl_minutes * 60_000, auth.auto_session.ttl_hours * 3_600_000,
    );
    const kv = await bus.bucket<SessionsBucketValue>(Bucket.Sessions, { ttlMs: maxTtlMs });
    const d: h.IdentityDeps = { bus, config, log, store, box, sessions: new SessionStore(kv), lockouts: new Lockouts(kv) };
    const a: AuthDeps = { ...d, bus };

    bus.serve(IdentityLogin, (input, ctx) => h.login(input, d, ctx));
    bus.serve(IdentitySession, (input) => h.session(input, d));
    bus.serve(IdentityLogout, (input) => h.logout(input, d));
    bus.serve(TokenIssue, (input, ctx) => h.tokenIssue(input, d, ctx));
    bus.serve(TokenCheck, (input) => h.tokenCheck(input, d));
    bus.serve(TokenList, (input) => h.tokenList(input, d));
    bus.serve(TokenRevoke, (input, ctx) => h.tokenRevoke(input, d, ctx));
    bus.serve(TokenDelete, (input, ctx) => h.tokenDelete(input, d, ctx));
    bus.serve(AuthLogin, (input, ctx) => authLogin(input, a, ctx));
    bus.serve(AuthAutoSession, (input, ctx) => autoSession(input, a, ctx));
    bus.serve(AuthLogout, (input, ctx) => authLogout(input, a, ctx));
    bus.serve(AuthToken, (input, ctx) => authToken(input, a, ctx));
    bus.serve(AuthTokenList, (input) => ownTokenList(input, d));
    bus.serve(AuthTokenRevoke, (input, ctx) => ownTokenRevoke(input, d, ctx));
    bus.serve(ScopeResolve, (input) => scopeResolve(input, a));
    const admins = h.adminIdentities(config);
    if (admins.warn) log.warn({ admins: admins.text }, admins.text);
    else log.info({ admins: admins.text }, admins.text);
    log.info({ store: store.kind }, 'identity ready');
  } catch (err) {
    await store.close().catch(() => undefined);
    throw err;
  }
  return { name: Actor.Identity, stop: () => store.close() };
}

/**
 * The Tokens tab (plugins.auth): a signed-in database user lists and revokes their OWN API
 * tokens. A token is one's own when it was minted by a login of the same database user on the
 * same server (POST /auth/tokens copies the session's connection into the token): the same user
 * name, provider, host and port, and database/project, and — unless it is a catalog-less
 * discovery token — the same catalog and schema. Another user's token, or the same user name on
 * another database, is NOT_FOUND, as a token that does not exist.
 */
import type { Ctx } from '../../protocol/headers.js';
import { CortadoError } from '../../protocol/errors.js';
import type * as I from '../../protocol/schemas/identity.js';
import type { OwnTokenRevokeRequest, OwnTokensRequest } from '../../protocol/schemas/own-tokens.js';
import type { ApiTokenRecord } from '../../store/index.js';
import { now, tokenList, tokenRevoke, type IdentityDeps } from './handle.js';
import type { SessionRecord } from './sessions.js';

/** the connection fields that say which server and database a token reaches (never a secret) */
const WHERE = ['provider', 'host', 'port', 'database', 'project_id'] as const;
const WITHIN = ['catalog', 'schema'] as const;

function same(a: unknown, b: unknown): boolean {
  const norm = (v: unknown): string => (v === undefined || v === null ? '' : String(v).toLowerCase());
  return norm(a) === norm(b);
}

/** Whether this token was minted by this session's database login. */
export function ownToken(s: SessionRecord, t: ApiTokenRecord): boolean {
  const db = s.db_config;
  if (!db || t.username !== s.username) return false;
  if (!WHERE.every((k) => same(db[k], t.db_config[k]))) return false;
  return t.db_config.discovery === true || WITHIN.every((k) => same(db[k], t.db_config[k]));
}

async function loggedIn(token: string, deps: IdentityDeps): Promise<SessionRecord> {
  if (!deps.config.plugins.auth.enabled) throw new CortadoError('NOT_FOUND', 'multi-user sessions are off (plugins.auth.enabled is false)');
  const s = await deps.sessions.get(token, 'auth', now(deps));
  if (!s) throw new CortadoError('UNAUTHORIZED', 'not signed in, or the session expired');
  if (s.auto || !s.db_config) throw new CortadoError('FORBIDDEN', 'an auto session has no API tokens: sign in with POST /auth/login');
  return s;
}

/** The session user's own tokens, newest first, revoked and expired ones included. */
export async function ownTokenList(input: OwnTokensRequest, deps: IdentityDeps): Promise<{ tokens: I.ApiTokenInfo[] }> {
  const s = await loggedIn(input.token, deps);
  const records = await deps.store.tokens.list({ username: s.username });
  const own = new Set(records.filter((r) => ownToken(s, r)).map((r) => r.id));
  const { tokens } = await tokenList({ username: s.username }, deps);
  return { tokens: tokens.filter((t) => own.has(t.id)) };
}

/** Revoke one of the session user's own tokens (its MCP and API access ends at once). */
export async function ownTokenRevoke(input: OwnTokenRevokeRequest, deps: IdentityDeps, ctx: Ctx): Promise<{ ok: boolean }> {
  const s = await loggedIn(input.token, deps);
  const r = await deps.store.tokens.get(input.id);
  if (!r || !ownToken(s, r)) throw new CortadoError('NOT_FOUND', 'there is no such token');
  return tokenRevoke({ id: input.id }, deps, { ...ctx, user: s.username });
}

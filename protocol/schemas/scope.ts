/**
 * Database scopes: whose connection a request runs on. A scope travels in the bus context
 * (`Ctx.scope`): `s:<id>` names an auth session (POST /auth/login), `t:<id>` an API token with a
 * db_config. The executor resolves it with the identity actor and runs on a connection of that
 * scope; no scope means the server's own database config.
 */
import Type, { type Static } from 'typebox';

const Iso = Type.String({ description: 'ISO 8601 time' });

export const ScopeResolveRequest = Type.Object({ scope: Type.String({ minLength: 3, maxLength: 200 }) });
export type ScopeResolveRequest = Static<typeof ScopeResolveRequest>;

export const ScopeInfo = Type.Object({
  scope: Type.String(),
  kind: Type.Enum(['session', 'token']),
  username: Type.String(),
  expires_at: Iso,
  /** the provider the scope's connection is for */
  provider: Type.String(),
  /** connection fields (host, port, user, password, database, catalog, schema...); secrets sealed with config_db.encryption_key */
  db_config: Type.Record(Type.String(), Type.Unknown()),
  /** the catalog (Trino) or database the scope is locked to; absent: catalog-less */
  catalog: Type.Optional(Type.String()),
  /** a catalog-less discovery token: any of plugins.auth.allowed_catalogs */
  discovery: Type.Boolean(),
});
export type ScopeInfo = Static<typeof ScopeInfo>;

/** Try a connection (an auth login): ok, or DB_UNAVAILABLE / UNAUTHORIZED. */
export const SqlConnectTestRequest = Type.Object({
  /** provider and connection fields, overlaid on the database section; secrets may be sealed */
  db_config: Type.Record(Type.String(), Type.Unknown()),
});
export type SqlConnectTestRequest = Static<typeof SqlConnectTestRequest>;
export const SqlConnectTestReply = Type.Object({ ok: Type.Boolean(), provider: Type.String(), latency_ms: Type.Number() });
export type SqlConnectTestReply = Static<typeof SqlConnectTestReply>;

/** A scope ended early (logout, token revoked or deleted): every executor closes its connections at once. */
export const ScopeEnded = Type.Object({
  id: Type.String(),
  ts: Iso,
  request_id: Type.String(),
  user: Type.Optional(Type.String()),
  scope: Type.String(),
  reason: Type.Enum(['logout', 'revoked', 'deleted', 'expired']),
});
export type ScopeEnded = Static<typeof ScopeEnded>;

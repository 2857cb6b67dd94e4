/**
 * Identity and audit: logins and sessions (admin panel, assistant gate), API tokens, runtime
 * config overrides, prompts, mask rules, LDAP settings, the audit log. Secrets never travel in
 * a reply: values of secret keys come back as "********".
 */
import Type, { type Static } from 'typebox';
import { LoginNameString, NameString } from './text.js';

const Iso = Type.String({ description: 'ISO 8601 time' });
/** names and passwords hold no control character (protocol/schemas/text.ts): NUL would end them on a database's wire */
const Username = NameString({ minLength: 1, maxLength: 256 });
/** the name a person signs in with: written the one way the directory or database compares it (text.ts loginNameProblem) */
const LoginName = LoginNameString({ minLength: 1, maxLength: 256 });
const Password = NameString({ maxLength: 1024 });

/** admin panel, assistant login gate, and the multi-user sessions of plugins.auth */
export const SessionKind = Type.Enum(['admin', 'assistant', 'auth']);
export type SessionKind = Static<typeof SessionKind>;

export const SessionInfo = Type.Object({
  username: Type.String(),
  kind: SessionKind,
  /** how the person proved who they are: directory, local admin, their database login, or none (auto_session) */
  source: Type.Enum(['ldap', 'local', 'database', 'auto']),
  created_at: Iso,
  expires_at: Iso,
  /** the CSRF token that cookie-authenticated writes must echo in the X-CSRF-Token header */
  csrf: Type.String(),
  /** auth sessions: a non-secret id (from the SHA-256 of the secret) that names the session in a scope (`s:<id>`) */
  id: Type.Optional(Type.String()),
  /** auth sessions issued without a login (plugins.auth.auto_session) */
  auto: Type.Optional(Type.Boolean()),
  /** auto sessions: plugins.auth.auto_session.label */
  label: Type.Optional(Type.String()),
  /** auth sessions: where the session's queries run (never a host or a secret) */
  db: Type.Optional(Type.Object({
    provider: Type.String(),
    database: Type.Optional(Type.String()),
    catalog: Type.Optional(Type.String()),
    schema: Type.Optional(Type.String()),
  })),
});
export type SessionInfo = Static<typeof SessionInfo>;

export const LoginRequest = Type.Object({
  kind: SessionKind,
  username: LoginName,
  password: Password,
  /** the client's address, for the lockout */
  client: Type.String({ maxLength: 128 }),
});
export type LoginRequest = Static<typeof LoginRequest>;

export const LoginReply = Type.Object({
  /** the session secret: the edge puts it in an HttpOnly cookie; stored only hashed */
  token: Type.String(),
  session: SessionInfo,
});
export type LoginReply = Static<typeof LoginReply>;

export const SessionRequest = Type.Object({ token: Type.String({ maxLength: 256 }), kind: SessionKind });
export const LogoutRequest = Type.Object({ token: Type.String({ maxLength: 256 }) });
export const Ok = Type.Object({ ok: Type.Boolean() });

// ---- multi-user sessions (plugins.auth) ------------------------------------------------

/** POST /auth/login: the user's own DATABASE credentials, validated by connecting with them. */
export const AuthLoginRequest = Type.Object({
  username: LoginName,
  password: Password,
  /** the provider (trino, postgresql, mysql, bigquery); default plugins.auth.db_provider, else database.provider */
  db_type: Type.Optional(NameString({ maxLength: 32 })),
  /** must be the configured host/port when given (plugins.auth.db_host/db_port, else the database section's) */
  host: Type.Optional(NameString({ maxLength: 255 })),
  port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
  /** PostgreSQL/MySQL database (checked against allowed_catalogs when set) */
  database: Type.Optional(NameString({ minLength: 1, maxLength: 256 })),
  /** Trino catalog (checked against allowed_catalogs when set) */
  catalog: Type.Optional(NameString({ minLength: 1, maxLength: 256 })),
  /** checked against the catalog's allowed_schemas when set */
  schema: Type.Optional(NameString({ minLength: 1, maxLength: 256 })),
  /** the client's address, for the lockout */
  client: Type.String({ maxLength: 128 }),
});
export type AuthLoginRequest = Static<typeof AuthLoginRequest>;

/** POST /auth/auto-session: a labelled session without login, on the server's own database config. */
export const AutoSessionRequest = Type.Object({
  client: Type.String({ maxLength: 128 }),
  /** the request's Origin header (checked against auto_session.allowed_origins when that list is set) */
  origin: Type.Optional(Type.String({ maxLength: 512 })),
});
export type AutoSessionRequest = Static<typeof AutoSessionRequest>;

/** An auth session mints an API token scoped to its own db_config (auto sessions may not). */
export const AuthTokenRequest = Type.Object({
  /** the auth session's secret */
  token: Type.String({ maxLength: 256 }),
  label: Type.Optional(NameString({ maxLength: 200 })),
  ttl_hours: Type.Optional(Type.Integer({ minimum: 1 })),
  /** a catalog-less discovery token (Trino, plugins.auth.enable_discovery_tokens) */
  discovery: Type.Optional(Type.Boolean()),
});
export type AuthTokenRequest = Static<typeof AuthTokenRequest>;

// ---- API tokens ------------------------------------------------------------------------

export const ApiTokenInfo = Type.Object({
  id: Type.String(),
  prefix: Type.String(),
  label: Type.String(),
  username: Type.String(),
  /** the scope, secrets masked */
  db_config: Type.Record(Type.String(), Type.Unknown()),
  created_at: Iso,
  expires_at: Iso,
  last_used_at: Type.Optional(Iso),
  revoked_at: Type.Optional(Iso),
  /** active, expired or revoked */
  status: Type.Enum(['active', 'expired', 'revoked']),
});
export type ApiTokenInfo = Static<typeof ApiTokenInfo>;

export const TokenIssueRequest = Type.Object({
  username: Username,
  label: Type.Optional(NameString({ maxLength: 200 })),
  /** capped by plugins.auth.token_max_ttl_hours */
  ttl_hours: Type.Optional(Type.Integer({ minimum: 1 })),
  /** the database scope: provider, catalog, schema, connection fields */
  db_config: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});
export type TokenIssueRequest = Static<typeof TokenIssueRequest>;

export const TokenIssueReply = Type.Object({
  /** shown once; only its SHA-256 is stored */
  token: Type.String(),
  info: ApiTokenInfo,
});

export const TokenCheckRequest = Type.Object({ token: Type.String({ maxLength: 512 }) });
export const TokenCheckReply = Type.Object({ info: ApiTokenInfo });
export const TokenListRequest = Type.Object({ username: Type.Optional(Type.String()) });
export const TokenListReply = Type.Object({ tokens: Type.Array(ApiTokenInfo) });
export const TokenIdRequest = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });

// ---- config overrides and prompts -----------------------------------------------------

export const ConfigViewReply = Type.Object({
  /** the config in force (file + overrides), every secret replaced by "********" */
  config: Type.Record(Type.String(), Type.Unknown()),
  overrides: Type.Array(Type.Object({ key: Type.String(), value: Type.Unknown(), updated_by: Type.String(), updated_at: Iso })),
  /** whether overrides survive a restart (config_db.enabled) */
  persistent: Type.Boolean(),
});
export type ConfigViewReply = Static<typeof ConfigViewReply>;

/**
 * Whether a dotted config key is well formed: lower-case words between dots, and no word that
 * every object inherits (`__proto__`, `constructor`): keys walk into the live config object.
 */
export function configKeyOk(key: string): boolean {
  return key.length > 0 && key.length <= 200 && /^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*$/.test(key)
    && !key.split('.').some((part) => part === 'prototype' || part in Object.prototype);
}

export const ConfigUpdateRequest = Type.Object({
  /** dotted path, e.g. query.max_limit */
  key: Type.Refine(
    Type.String({ minLength: 1, maxLength: 200, pattern: '^[a-z_][a-z0-9_]*(\\.[a-z_][a-z0-9_]*)*$' }),
    configKeyOk,
    () => 'a dotted config key of lower-case words, none of them __proto__, constructor or prototype',
  ),
  value: Type.Unknown(),
  by: Username,
});
export type ConfigUpdateRequest = Static<typeof ConfigUpdateRequest>;

export const ConfigResetRequest = Type.Object({ key: ConfigUpdateRequest.properties.key, by: Username });
export const ConfigChangeReply = Type.Object({ key: Type.String(), value: Type.Unknown(), previous: Type.Optional(Type.Unknown()) });

export const ConfigHistoryRequest = Type.Object({
  key: Type.Optional(Type.String()),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  offset: Type.Optional(Type.Integer({ minimum: 0 })),
});
export const ConfigHistoryReply = Type.Object({
  changes: Type.Array(Type.Object({
    id: Type.Number(), key: Type.String(), old_value: Type.Optional(Type.Unknown()), new_value: Type.Optional(Type.Unknown()),
    changed_by: Type.String(), changed_at: Iso,
  })),
});

export const PromptInfo = Type.Object({
  key: Type.String(),
  text: Type.String(),
  /** override: set at run time; file: config.yaml's prompts section; default: Cortado's own */
  source: Type.Enum(['override', 'file', 'default']),
});
export const PromptsReply = Type.Object({ prompts: Type.Array(PromptInfo) });

// ---- mask rules -----------------------------------------------------------------------

export const MaskStrategy = Type.Enum(['hash', 'partial', 'redact']);
export const MaskRuleSchema = Type.Object({
  id: Type.String(),
  field_pattern: Type.String(),
  strategy: MaskStrategy,
  enabled: Type.Boolean(),
  description: Type.String(),
  created_at: Iso,
  updated_at: Iso,
});
export const MaskRuleCreate = Type.Object({
  field_pattern: Type.String({ minLength: 1, maxLength: 200 }),
  strategy: MaskStrategy,
  enabled: Type.Optional(Type.Boolean()),
  description: Type.Optional(Type.String({ maxLength: 500 })),
});
export const MaskRuleUpdate = Type.Object({
  id: Type.String({ minLength: 1 }),
  field_pattern: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  strategy: Type.Optional(MaskStrategy),
  enabled: Type.Optional(Type.Boolean()),
  description: Type.Optional(Type.String({ maxLength: 500 })),
});
export const MaskRulesReply = Type.Object({ rules: Type.Array(MaskRuleSchema) });
/**
 * A mask rule was created, changed or deleted (evt.mask.changed): every process that keeps the
 * rules drops them at once and asks the store again. Which rule and who; never a value of a row.
 */
export const MaskChanged = Type.Object({
  id: Type.String(),
  ts: Iso,
  request_id: Type.String(),
  user: Type.Optional(Type.String()),
  action: Type.Enum(['create', 'update', 'delete']),
  rule_id: Type.String(),
});
export type MaskChanged = Static<typeof MaskChanged>;

// ---- LDAP settings --------------------------------------------------------------------

export const LdapSettingsView = Type.Object({
  settings: Type.Record(Type.String(), Type.Unknown()),
});
export const LdapUpdateRequest = Type.Object({
  settings: Type.Record(Type.String(), Type.Unknown()),
  by: Username,
});
export const LdapTestRequest = Type.Object({
  /** settings to try before saving them; absent: the ones in force */
  settings: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});
export const LdapTestReply = Type.Object({ ok: Type.Boolean(), message: Type.String(), latency_ms: Type.Number() });

// ---- audit ----------------------------------------------------------------------------

export const AuditEntrySchema = Type.Object({
  event_id: Type.String(),
  type: Type.String(),
  ts: Iso,
  request_id: Type.Optional(Type.String()),
  user: Type.Optional(Type.String()),
  channel: Type.Optional(Type.String()),
  code: Type.Optional(Type.String()),
  /** the W3C trace id of the question (docs/operations.md "Traces"), when it was traced */
  trace_id: Type.Optional(Type.String()),
  payload: Type.Record(Type.String(), Type.Unknown()),
});
export const AuditQueryRequest = Type.Object({
  type: Type.Optional(Type.String({ maxLength: 100 })),
  user: Type.Optional(Type.String({ maxLength: 256 })),
  code: Type.Optional(Type.String({ maxLength: 64 })),
  request_id: Type.Optional(Type.String({ maxLength: 128 })),
  /** words of the question, anywhere in it, case-insensitive */
  q: Type.Optional(Type.String({ maxLength: 200 })),
  from: Type.Optional(Iso),
  to: Type.Optional(Iso),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  offset: Type.Optional(Type.Integer({ minimum: 0 })),
});
export type AuditQueryRequest = Static<typeof AuditQueryRequest>;
export const AuditQueryReply = Type.Object({ entries: Type.Array(AuditEntrySchema), total: Type.Integer({ minimum: 0 }) });

// ---- events ---------------------------------------------------------------------------

export const ConfigChanged = Type.Object({
  id: Type.String(),
  ts: Iso,
  request_id: Type.String(),
  user: Type.Optional(Type.String()),
  key: Type.String(),
  /** the new value (a secret sealed with config_db.encryption_key); absent when reset to the file's value */
  value: Type.Optional(Type.Unknown()),
  reset: Type.Boolean(),
});
export type ConfigChanged = Static<typeof ConfigChanged>;

export const LoginAttempt = Type.Object({
  id: Type.String(),
  ts: Iso,
  request_id: Type.String(),
  user: Type.Optional(Type.String()),
  kind: SessionKind,
  client: Type.String(),
  ok: Type.Boolean(),
  source: Type.Optional(Type.Enum(['ldap', 'local', 'database', 'auto'])),
  /** why it failed: invalid_credentials, locked, not_in_group, disabled, ... */
  reason: Type.Optional(Type.String()),
});
export type LoginAttempt = Static<typeof LoginAttempt>;

export const TokenEvent = Type.Object({
  id: Type.String(),
  ts: Iso,
  request_id: Type.String(),
  user: Type.Optional(Type.String()),
  token_id: Type.String(),
  action: Type.Enum(['issued', 'revoked', 'deleted']),
});

export type MaskRuleCreateInput = Static<typeof MaskRuleCreate>;
export type MaskRuleUpdateInput = Static<typeof MaskRuleUpdate>;
export type LoginAttemptEvt = Static<typeof LoginAttempt>;

/** The stored overrides as kept (secrets sealed), for a process that starts after they were made. */
export const StoredOverridesReply = Type.Object({ overrides: Type.Array(Type.Object({ key: Type.String(), value: Type.Unknown() })) });

/**
 * What Cortado keeps at run time, behind one interface with two implementations:
 * PostgreSQL (config_db.enabled, tables created and migrated on start) and memory (lost on
 * restart, as SPEC.md says). Both pass the same test suite (test/actors/store.test.ts).
 *
 * The store holds values as given: callers encrypt secrets before they reach it (see
 * ../secrets.ts) and hash tokens (only the SHA-256 of an API token is ever stored).
 */
import { CortadoError } from '../../../protocol/errors.js';

/** A runtime override of one config key (dotted path, e.g. `query.max_limit`, `prompts.sql_generation`, `ldap.server`). */
export interface ConfigOverride {
  key: string;
  /** any JSON value; a secret key's value is a Fernet token string (`{"enc": "..."}`) */
  value: unknown;
  updated_by: string;
  updated_at: string; // ISO 8601
}

/** One change of an override: who, when, old → new (secrets as stored: encrypted). */
export interface OverrideChange {
  id: number;
  key: string;
  /** undefined when the key had no override before */
  old_value?: unknown;
  /** undefined when the override was removed (reset to the file's value) */
  new_value?: unknown;
  changed_by: string;
  changed_at: string;
}

export interface ApiTokenRecord {
  id: string;
  /** the first characters of the token (`ctd_ab12…`), to recognise it in lists */
  prefix: string;
  /** SHA-256 of the whole token, hex */
  hash: string;
  label: string;
  username: string;
  /** the database scope: provider, catalog/schema, and connection fields; secrets encrypted */
  db_config: Record<string, unknown>;
  created_at: string;
  expires_at: string;
  last_used_at?: string;
  revoked_at?: string;
}

export type MaskStrategy = 'hash' | 'partial' | 'redact';

export interface MaskRule {
  id: string;
  /** a glob over column names, case-insensitive (`*email*`, `ssn`, `card_*`) */
  field_pattern: string;
  strategy: MaskStrategy;
  enabled: boolean;
  description: string;
  created_at: string;
  updated_at: string;
}

export type MaskRuleInput = Pick<MaskRule, 'field_pattern' | 'strategy'> & Partial<Pick<MaskRule, 'enabled' | 'description'>>;

/** One audited event (from the CORTADO_EVENTS stream); never row values. */
export interface AuditEntry {
  /** the event's own id: appending the same id twice keeps one entry */
  event_id: string;
  /** the event type: its subject without the prefix and the events token, e.g. query.executed */
  type: string;
  ts: string;
  request_id?: string;
  user?: string;
  channel?: string;
  /** OK or an error code */
  code?: string;
  /** the whole event payload */
  payload: Record<string, unknown>;
}

export interface AuditFilter {
  type?: string;
  user?: string;
  code?: string;
  request_id?: string;
  /** ISO 8601, inclusive */
  from?: string;
  /** ISO 8601, exclusive */
  to?: string;
  /** newest first; default 50, at most 1000 */
  limit?: number;
  offset?: number;
}

export interface Store {
  readonly kind: 'postgresql' | 'memory';
  /** create or migrate the tables (PostgreSQL); idempotent, safe with several processes starting at once */
  init(): Promise<void>;
  close(): Promise<void>;

  /** every override, by key */
  listOverrides(): Promise<ConfigOverride[]>;
  /** set (or replace) an override and record the change; returns the previous value if any */
  setOverride(key: string, value: unknown, by: string): Promise<{ previous?: unknown }>;
  /** remove an override (back to the file's value), recording the change; false when there was none */
  deleteOverride(key: string, by: string): Promise<boolean>;
  /** newest first; limit default 100, at most 1000 */
  overrideHistory(opts?: { key?: string; limit?: number; offset?: number }): Promise<OverrideChange[]>;

  /** CONFLICT when a token with this id or hash exists */
  insertToken(token: ApiTokenRecord): Promise<void>;
  findTokenByHash(hash: string): Promise<ApiTokenRecord | undefined>;
  getToken(id: string): Promise<ApiTokenRecord | undefined>;
  /** newest first (created_at), revoked and expired ones included */
  listTokens(opts?: { username?: string }): Promise<ApiTokenRecord[]>;
  /** false when there is no such token; revoking twice keeps the first time */
  revokeToken(id: string, at: string): Promise<boolean>;
  deleteToken(id: string): Promise<boolean>;
  /** record a use; last_used_at never moves back */
  touchToken(id: string, at: string): Promise<void>;

  /** in creation order */
  listMaskRules(): Promise<MaskRule[]>;
  createMaskRule(input: MaskRuleInput): Promise<MaskRule>;
  /** undefined when there is no such rule */
  updateMaskRule(id: string, patch: Partial<MaskRuleInput>): Promise<MaskRule | undefined>;
  deleteMaskRule(id: string): Promise<boolean>;

  /** false when an entry with this event_id exists already (dedup) */
  appendAudit(entry: AuditEntry): Promise<boolean>;
  /** newest first (ts, then arrival); total: how many kept entries match the filter */
  queryAudit(filter: AuditFilter): Promise<{ entries: AuditEntry[]; total: number }>;
}

// ---- shared by both implementations -----------------------------------------------------------

export const AUDIT_DEFAULT_LIMIT = 50;
export const AUDIT_MAX_LIMIT = 1000;
export const HISTORY_DEFAULT_LIMIT = 100;

/** A page request made safe: whole numbers, limit within 1..max, offset ≥ 0. */
export function page(limit: number | undefined, offset: number | undefined, def: number, max: number): { limit: number; offset: number } {
  const l = Number.isFinite(limit) ? Math.floor(limit as number) : def;
  const o = Number.isFinite(offset) ? Math.floor(offset as number) : 0;
  return { limit: Math.min(Math.max(l, 1), max), offset: Math.max(o, 0) };
}

/** A time as both implementations return it: ISO 8601 in UTC with milliseconds. */
export function isoTime(value: string | Date, what: string): string {
  const d = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(d.getTime())) throw new CortadoError('VALIDATION_FAILED', `${what} is not a valid time`);
  return d.toISOString();
}

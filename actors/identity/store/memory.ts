/**
 * The store when config_db is off: everything in this process, lost on restart (SPEC.md).
 * Behaves as the PostgreSQL store does (the same test suite runs against both), except that
 * the audit log is bounded: the newest MEMORY_AUDIT_CAP entries are kept, and the dedup set
 * forgets the ids of entries it drops.
 *
 * Values are copied in and out, so a caller changing an object it passed or got back changes
 * nothing here (as with a database).
 */
import { randomUUID } from 'node:crypto';
import { CortadoError } from '../../../protocol/errors.js';
import {
  AUDIT_DEFAULT_LIMIT, AUDIT_MAX_LIMIT, HISTORY_DEFAULT_LIMIT, isoTime, page,
  type ApiTokenRecord, type AuditEntry, type AuditFilter, type ConfigOverride, type MaskRule, type MaskRuleInput,
  type OverrideChange, type Store,
} from './store.js';

export const MEMORY_AUDIT_CAP = 10_000;

export interface MemoryStoreOptions {
  /** how many audit entries to keep (default 10,000) */
  auditCap?: number;
}

/** A copy as a database would give back: JSON in, JSON out. */
const copy = <T>(value: T): T => (value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T));

function checkValue(value: unknown): void {
  if (value === undefined) throw new CortadoError('VALIDATION_FAILED', 'an override needs a value (use deleteOverride to remove it)');
}

function normalizeToken(t: ApiTokenRecord): ApiTokenRecord {
  const out: ApiTokenRecord = {
    id: t.id, prefix: t.prefix, hash: t.hash, label: t.label, username: t.username,
    db_config: copy(t.db_config ?? {}),
    created_at: isoTime(t.created_at, 'created_at'),
    expires_at: isoTime(t.expires_at, 'expires_at'),
  };
  if (t.last_used_at !== undefined) out.last_used_at = isoTime(t.last_used_at, 'last_used_at');
  if (t.revoked_at !== undefined) out.revoked_at = isoTime(t.revoked_at, 'revoked_at');
  return out;
}

function normalizeAudit(e: AuditEntry): AuditEntry {
  const out: AuditEntry = { event_id: e.event_id, type: e.type, ts: isoTime(e.ts, 'ts'), payload: copy(e.payload ?? {}) };
  if (e.request_id !== undefined) out.request_id = e.request_id;
  if (e.user !== undefined) out.user = e.user;
  if (e.channel !== undefined) out.channel = e.channel;
  if (e.code !== undefined) out.code = e.code;
  return out;
}

interface Kept {
  seq: number;
  ms: number;
  entry: AuditEntry;
}

export class MemoryStore implements Store {
  readonly kind = 'memory' as const;
  private readonly auditCap: number;
  private readonly overrides = new Map<string, ConfigOverride>();
  private readonly history: OverrideChange[] = [];
  private historySeq = 0;
  private readonly tokens = new Map<string, ApiTokenRecord>();
  private readonly tokenByHash = new Map<string, string>();
  private readonly maskRules = new Map<string, MaskRule>();
  /** oldest first */
  private readonly audit: Kept[] = [];
  private readonly auditIds = new Set<string>();
  private auditSeq = 0;

  constructor(opts: MemoryStoreOptions = {}) {
    this.auditCap = Math.max(1, Math.floor(opts.auditCap ?? MEMORY_AUDIT_CAP));
  }

  async init(): Promise<void> {}

  async close(): Promise<void> {}

  // ---- overrides ----

  async listOverrides(): Promise<ConfigOverride[]> {
    return [...this.overrides.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)).map(copy);
  }

  async setOverride(key: string, value: unknown, by: string): Promise<{ previous?: unknown }> {
    checkValue(value);
    const at = new Date().toISOString();
    const before = this.overrides.get(key);
    this.overrides.set(key, { key, value: copy(value), updated_by: by, updated_at: at });
    this.record(key, before, value, by, at);
    return before ? { previous: copy(before.value) } : {};
  }

  async deleteOverride(key: string, by: string): Promise<boolean> {
    const before = this.overrides.get(key);
    if (!before) return false;
    this.overrides.delete(key);
    this.record(key, before, undefined, by, new Date().toISOString());
    return true;
  }

  private record(key: string, before: ConfigOverride | undefined, next: unknown, by: string, at: string): void {
    const change: OverrideChange = { id: ++this.historySeq, key, changed_by: by, changed_at: at };
    if (before) change.old_value = copy(before.value);
    if (next !== undefined) change.new_value = copy(next);
    this.history.push(change);
  }

  async overrideHistory(opts: { key?: string; limit?: number; offset?: number } = {}): Promise<OverrideChange[]> {
    const { limit, offset } = page(opts.limit, opts.offset, HISTORY_DEFAULT_LIMIT, AUDIT_MAX_LIMIT);
    const matching = opts.key === undefined ? this.history : this.history.filter((c) => c.key === opts.key);
    return matching.slice().reverse().slice(offset, offset + limit).map(copy);
  }

  // ---- API tokens ----

  async insertToken(token: ApiTokenRecord): Promise<void> {
    const t = normalizeToken(token);
    if (this.tokens.has(t.id) || this.tokenByHash.has(t.hash)) throw new CortadoError('CONFLICT', 'an API token with this id or hash exists already');
    this.tokens.set(t.id, t);
    this.tokenByHash.set(t.hash, t.id);
  }

  async findTokenByHash(hash: string): Promise<ApiTokenRecord | undefined> {
    const id = this.tokenByHash.get(hash);
    const t = id === undefined ? undefined : this.tokens.get(id);
    return t && copy(t);
  }

  async getToken(id: string): Promise<ApiTokenRecord | undefined> {
    const t = this.tokens.get(id);
    return t && copy(t);
  }

  async listTokens(opts: { username?: string } = {}): Promise<ApiTokenRecord[]> {
    return [...this.tokens.values()]
      .filter((t) => opts.username === undefined || t.username === opts.username)
      .sort((a, b) => (a.created_at !== b.created_at ? (a.created_at < b.created_at ? 1 : -1) : a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map(copy);
  }

  async revokeToken(id: string, at: string): Promise<boolean> {
    const t = this.tokens.get(id);
    if (!t) return false;
    t.revoked_at ??= isoTime(at, 'revoked_at');
    return true;
  }

  async deleteToken(id: string): Promise<boolean> {
    const t = this.tokens.get(id);
    if (!t) return false;
    this.tokens.delete(id);
    this.tokenByHash.delete(t.hash);
    return true;
  }

  async touchToken(id: string, at: string): Promise<void> {
    const t = this.tokens.get(id);
    if (!t) return;
    const when = isoTime(at, 'last_used_at');
    if (t.last_used_at === undefined || t.last_used_at < when) t.last_used_at = when;
  }

  // ---- mask rules ----

  async listMaskRules(): Promise<MaskRule[]> {
    return [...this.maskRules.values()].map(copy);
  }

  async createMaskRule(input: MaskRuleInput): Promise<MaskRule> {
    const at = new Date().toISOString();
    const rule: MaskRule = {
      id: randomUUID(),
      field_pattern: input.field_pattern,
      strategy: input.strategy,
      enabled: input.enabled ?? true,
      description: input.description ?? '',
      created_at: at,
      updated_at: at,
    };
    this.maskRules.set(rule.id, rule);
    return copy(rule);
  }

  async updateMaskRule(id: string, patch: Partial<MaskRuleInput>): Promise<MaskRule | undefined> {
    const rule = this.maskRules.get(id);
    if (!rule) return undefined;
    if (patch.field_pattern !== undefined) rule.field_pattern = patch.field_pattern;
    if (patch.strategy !== undefined) rule.strategy = patch.strategy;
    if (patch.enabled !== undefined) rule.enabled = patch.enabled;
    if (patch.description !== undefined) rule.description = patch.description;
    rule.updated_at = new Date().toISOString();
    return copy(rule);
  }

  async deleteMaskRule(id: string): Promise<boolean> {
    return this.maskRules.delete(id);
  }

  // ---- audit ----

  async appendAudit(entry: AuditEntry): Promise<boolean> {
    if (this.auditIds.has(entry.event_id)) return false;
    const e = normalizeAudit(entry);
    this.audit.push({ seq: ++this.auditSeq, ms: Date.parse(e.ts), entry: e });
    this.auditIds.add(e.event_id);
    while (this.audit.length > this.auditCap) {
      const dropped = this.audit.shift();
      if (dropped) this.auditIds.delete(dropped.entry.event_id);
    }
    return true;
  }

  async queryAudit(filter: AuditFilter): Promise<{ entries: AuditEntry[]; total: number }> {
    const { limit, offset } = page(filter.limit, filter.offset, AUDIT_DEFAULT_LIMIT, AUDIT_MAX_LIMIT);
    const from = filter.from === undefined ? undefined : Date.parse(isoTime(filter.from, 'from'));
    const to = filter.to === undefined ? undefined : Date.parse(isoTime(filter.to, 'to'));
    const matching = this.audit.filter(({ ms, entry: e }) =>
      (filter.type === undefined || e.type === filter.type) &&
      (filter.user === undefined || e.user === filter.user) &&
      (filter.code === undefined || e.code === filter.code) &&
      (filter.request_id === undefined || e.request_id === filter.request_id) &&
      (from === undefined || ms >= from) &&
      (to === undefined || ms < to));
    matching.sort((a, b) => b.ms - a.ms || b.seq - a.seq);
    return { entries: matching.slice(offset, offset + limit).map((k) => copy(k.entry)), total: matching.length };
  }
}

export function createMemoryStore(opts: MemoryStoreOptions = {}): MemoryStore {
  return new MemoryStore(opts);
}

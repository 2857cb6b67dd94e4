/**
 * Runtime config overrides and their history (owner: the settings actor). A key is a dotted
 * config path (`query.max_limit`, `prompts.sql_generation`, `ldap.server`); a value is any JSON
 * value, a secret key's value arrives sealed (`{"enc": "..."}`) and is kept as given.
 */
import { CortadoError } from '../protocol/errors.js';
import { LOCK_CLASS, LOCK_OVERRIDES } from './migrations.js';
import { iso, json, type PgDatabase } from './postgres.js';
import { byCodePoint, copy, page } from './values.js';

/** A runtime override of one config key. */
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

export interface OverrideHistoryQuery {
  key?: string;
  /** newest first; default 100, at most 1000 */
  limit?: number;
  offset?: number;
}

export interface OverridesRepository {
  /** every override, by key */
  list(): Promise<ConfigOverride[]>;
  /** set (or replace) an override and record the change; returns the previous value if any */
  set(key: string, value: unknown, by: string): Promise<{ previous?: unknown }>;
  /** remove an override (back to the file's value), recording the change; false when there was none */
  delete(key: string, by: string): Promise<boolean>;
  /** newest first */
  history(opts?: OverrideHistoryQuery): Promise<OverrideChange[]>;
}

export const HISTORY_DEFAULT_LIMIT = 100;
export const HISTORY_MAX_LIMIT = 1000;

function checkValue(value: unknown): void {
  if (value === undefined) throw new CortadoError('VALIDATION_FAILED', 'an override needs a value (use delete to remove it)');
}

// ---- memory -----------------------------------------------------------------------------------

export class MemoryOverrides implements OverridesRepository {
  private readonly byKey = new Map<string, ConfigOverride>();
  private readonly changes: OverrideChange[] = [];
  private seq = 0;

  async list(): Promise<ConfigOverride[]> {
    return [...this.byKey.values()].sort((a, b) => byCodePoint(a.key, b.key)).map(copy);
  }

  async set(key: string, value: unknown, by: string): Promise<{ previous?: unknown }> {
    checkValue(value);
    const at = new Date().toISOString();
    const before = this.byKey.get(key);
    this.byKey.set(key, { key, value: copy(value), updated_by: by, updated_at: at });
    this.record(key, before, value, by, at);
    return before ? { previous: copy(before.value) } : {};
  }

  async delete(key: string, by: string): Promise<boolean> {
    const before = this.byKey.get(key);
    if (!before) return false;
    this.byKey.delete(key);
    this.record(key, before, undefined, by, new Date().toISOString());
    return true;
  }

  private record(key: string, before: ConfigOverride | undefined, next: unknown, by: string, at: string): void {
    const change: OverrideChange = { id: ++this.seq, key, changed_by: by, changed_at: at };
    if (before) change.old_value = copy(before.value);
    if (next !== undefined) change.new_value = copy(next);
    this.changes.push(change);
  }

  async history(opts: OverrideHistoryQuery = {}): Promise<OverrideChange[]> {
    const { limit, offset } = page(opts.limit, opts.offset, HISTORY_DEFAULT_LIMIT, HISTORY_MAX_LIMIT);
    const matching = opts.key === undefined ? this.changes : this.changes.filter((c) => c.key === opts.key);
    return matching.slice().reverse().slice(offset, offset + limit).map(copy);
  }
}

// ---- PostgreSQL (cortado_config_overrides, cortado_config_override_history) ---------------------

export class PostgresOverrides implements OverridesRepository {
  constructor(private readonly db: PgDatabase) {}

  async list(): Promise<ConfigOverride[]> {
    const r = await this.db.query<{ key: string; value: unknown; updated_by: string; updated_at: Date }>(
      'SELECT key, value, updated_by, updated_at FROM cortado_config_overrides ORDER BY key COLLATE "C"');
    return r.rows.map((row) => ({ key: row.key, value: row.value, updated_by: row.updated_by, updated_at: iso(row.updated_at) }));
  }

  async set(key: string, value: unknown, by: string): Promise<{ previous?: unknown }> {
    checkValue(value);
    const at = new Date().toISOString();
    return this.db.tx(async (c) => {
      // one writer of overrides at a time, so the history's old value is the one replaced
      await c.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_CLASS, LOCK_OVERRIDES]);
      const before = await c.query<{ value: unknown }>('SELECT value FROM cortado_config_overrides WHERE key = $1', [key]);
      await c.query(
        `INSERT INTO cortado_config_overrides (key, value, updated_by, updated_at) VALUES ($1, $2::jsonb, $3, $4)
         ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_by = EXCLUDED.updated_by, updated_at = EXCLUDED.updated_at`,
        [key, json(value), by, at]);
      const old = before.rows[0];
      await c.query(
        'INSERT INTO cortado_config_override_history (key, old_value, new_value, changed_by, changed_at) VALUES ($1, $2::jsonb, $3::jsonb, $4, $5)',
        [key, old ? json(old.value) : null, json(value), by, at]);
      return old ? { previous: old.value } : {};
    });
  }

  async delete(key: string, by: string): Promise<boolean> {
    const at = new Date().toISOString();
    return this.db.tx(async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_CLASS, LOCK_OVERRIDES]);
      const gone = await c.query<{ value: unknown }>('DELETE FROM cortado_config_overrides WHERE key = $1 RETURNING value', [key]);
      const old = gone.rows[0];
      if (!old) return false;
      await c.query(
        'INSERT INTO cortado_config_override_history (key, old_value, new_value, changed_by, changed_at) VALUES ($1, $2::jsonb, NULL, $3, $4)',
        [key, json(old.value), by, at]);
      return true;
    });
  }

  async history(opts: OverrideHistoryQuery = {}): Promise<OverrideChange[]> {
    const { limit, offset } = page(opts.limit, opts.offset, HISTORY_DEFAULT_LIMIT, HISTORY_MAX_LIMIT);
    const r = await this.db.query<{ id: string; key: string; old_value: unknown; old_absent: boolean; new_value: unknown; new_absent: boolean; changed_by: string; changed_at: Date }>(
      `SELECT id, key, old_value, old_value IS NULL AS old_absent, new_value, new_value IS NULL AS new_absent, changed_by, changed_at
       FROM cortado_config_override_history WHERE ($1::text IS NULL OR key = $1) ORDER BY id DESC LIMIT $2 OFFSET $3`,
      [opts.key ?? null, limit, offset]);
    return r.rows.map((row) => {
      const change: OverrideChange = { id: Number(row.id), key: row.key, changed_by: row.changed_by, changed_at: iso(row.changed_at) };
      if (!row.old_absent) change.old_value = row.old_value;
      if (!row.new_absent) change.new_value = row.new_value;
      return change;
    });
  }
}

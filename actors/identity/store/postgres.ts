/**
 * The store on PostgreSQL (config_db.enabled): a small pool, tables `cortado_*` created and
 * migrated by init() (see migrations.ts), every value JSON in jsonb.
 *
 * Failures to reach the server are DB_UNAVAILABLE naming config_db and where it points (never
 * the password); anything else the server refuses is INTERNAL with the cause kept for the logs.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { CortadoError } from '../../../protocol/errors.js';
import type { Logger } from '../../../protocol/log.js';
import { LOCK_CLASS, LOCK_OVERRIDES, migrate } from './migrations.js';
import {
  AUDIT_DEFAULT_LIMIT, AUDIT_MAX_LIMIT, HISTORY_DEFAULT_LIMIT, isoTime, page,
  type ApiTokenRecord, type AuditEntry, type AuditFilter, type ConfigOverride, type MaskRule, type MaskRuleInput,
  type OverrideChange, type Store,
} from './store.js';

export interface PostgresStoreOptions {
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
  log: Logger;
  /** pool size (default 5) */
  maxConnections?: number;
  /** how long opening a connection may take (default 5 s) */
  connectTimeoutMs?: number;
}

const DEFAULT_MAX_CONNECTIONS = 5;
const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;

// ---- values in and out ----------------------------------------------------------------------

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Text PostgreSQL accepts: no NUL, no lone surrogate (each becomes U+FFFD). */
function clean(text: string): string {
  return text.replace(/\u0000/g, '\uFFFD').replace(LONE_SURROGATE, '\uFFFD');
}

/** JSON text for a jsonb parameter. */
function json(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'string' ? clean(v) : v));
}

function optText(value: string | undefined): string | null {
  return value === undefined ? null : clean(value);
}

function iso(value: Date | string): string {
  return isoTime(value, 'time');
}

interface TokenRow {
  id: string;
  prefix: string;
  hash: string;
  label: string;
  username: string;
  db_config: Record<string, unknown>;
  created_at: Date;
  expires_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

function tokenFrom(r: TokenRow): ApiTokenRecord {
  const t: ApiTokenRecord = {
    id: r.id, prefix: r.prefix, hash: r.hash, label: r.label, username: r.username, db_config: r.db_config,
    created_at: iso(r.created_at), expires_at: iso(r.expires_at),
  };
  if (r.last_used_at) t.last_used_at = iso(r.last_used_at);
  if (r.revoked_at) t.revoked_at = iso(r.revoked_at);
  return t;
}

interface RuleRow {
  id: string;
  field_pattern: string;
  strategy: MaskRule['strategy'];
  enabled: boolean;
  description: string;
  created_at: Date;
  updated_at: Date;
}

function ruleFrom(r: RuleRow): MaskRule {
  return {
    id: r.id, field_pattern: r.field_pattern, strategy: r.strategy, enabled: r.enabled, description: r.description,
    created_at: iso(r.created_at), updated_at: iso(r.updated_at),
  };
}

interface AuditRow {
  event_id: string;
  type: string;
  ts: Date;
  request_id: string | null;
  username: string | null;
  channel: string | null;
  code: string | null;
  payload: Record<string, unknown>;
}

function auditFrom(r: AuditRow): AuditEntry {
  const e: AuditEntry = { event_id: r.event_id, type: r.type, ts: iso(r.ts), payload: r.payload };
  if (r.request_id !== null) e.request_id = r.request_id;
  if (r.username !== null) e.user = r.username;
  if (r.channel !== null) e.channel = r.channel;
  if (r.code !== null) e.code = r.code;
  return e;
}

const TOKEN_COLUMNS = 'id, prefix, hash, label, username, db_config, created_at, expires_at, last_used_at, revoked_at';
const RULE_COLUMNS = 'id, field_pattern, strategy, enabled, description, created_at, updated_at';
const AUDIT_COLUMNS = 'event_id, type, ts, request_id, username, channel, code, payload';

// ---- errors ---------------------------------------------------------------------------------

const SQLSTATE = /^[0-9A-Z]{5}$/;

/** Why the server is out of reach, or undefined when the failure is something else. */
function unreachable(err: unknown): string | undefined {
  const e = (err ?? {}) as { code?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  const message = typeof e.message === 'string' ? e.message : '';
  if (SQLSTATE.test(code)) {
    if (code.startsWith('28')) return 'the login was refused';
    if (code === '3D000') return 'the database does not exist';
    if (code.startsWith('08')) return 'the connection failed';
    if (code.startsWith('53')) return 'the server is out of resources';
    if (code === '57P01' || code === '57P02' || code === '57P03') return 'the server is shutting down or starting up';
    return undefined;
  }
  switch (code) {
    case 'ECONNREFUSED': return 'connection refused';
    case 'ENOTFOUND': case 'EAI_AGAIN': return 'unknown host';
    case 'ECONNRESET': case 'EPIPE': return 'the connection was closed';
    case 'ETIMEDOUT': case 'EHOSTUNREACH': case 'ENETUNREACH': return 'the host does not answer';
  }
  if (/timeout exceeded when trying to connect|connection timeout/i.test(message)) return 'no connection could be opened in time';
  if (/terminated|not queryable|connection error|after calling end on the pool/i.test(message)) return 'the connection was closed';
  if (/password|sasl|scram/i.test(message)) return 'the login was refused';
  return undefined;
}

// ---- the store ------------------------------------------------------------------------------

export class PostgresStore implements Store {
  readonly kind = 'postgresql' as const;
  private readonly pool: pg.Pool;
  private readonly log: Logger;
  private readonly where: string;
  private closed = false;

  constructor(opts: PostgresStoreOptions) {
    this.log = opts.log;
    this.where = `${opts.user}@${opts.host}:${opts.port}/${opts.database}`;
    this.pool = new pg.Pool({
      host: opts.host,
      port: opts.port,
      database: opts.database,
      user: opts.user,
      password: opts.password,
      max: opts.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
      connectionTimeoutMillis: opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      idleTimeoutMillis: 30_000,
      application_name: 'cortado-config-db',
    });
    // An idle connection that dies (server restart) must not crash the process.
    this.pool.on('error', (err) => this.log.warn({ err: err.message }, 'config_db: an idle connection failed'));
  }

  /** pg's failures → DB_UNAVAILABLE (naming config_db and where, never the password), CONFLICT, INTERNAL. */
  private toError(err: unknown): CortadoError {
    if (err instanceof CortadoError) return err;
    const why = unreachable(err);
    if (why) {
      return new CortadoError('DB_UNAVAILABLE', `config_db (config_db.postgresql: ${this.where}) cannot be reached: ${why}`, { store: 'config_db' }, { cause: err });
    }
    const e = (err ?? {}) as { code?: unknown; message?: unknown };
    const sqlstate = typeof e.code === 'string' && SQLSTATE.test(e.code) ? e.code : undefined;
    if (sqlstate === '23505') return new CortadoError('CONFLICT', 'the record exists already', undefined, { cause: err });
    this.log.error({ err: typeof e.message === 'string' ? e.message : String(err), sqlstate }, 'config_db: a statement failed');
    return new CortadoError('INTERNAL', 'internal error', sqlstate ? { sqlstate } : undefined, { cause: err });
  }

  private async q<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
    try {
      return await this.pool.query<R>(text, values);
    } catch (err) {
      throw this.toError(err);
    }
  }

  /** Run fn in a transaction on one connection. */
  private async tx<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw this.toError(err);
    }
    let broken = false;
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw this.toError(err);
    } finally {
      client.release(broken ? new Error('connection left in a failed state') : undefined);
    }
  }

  async init(): Promise<void> {
    try {
      await migrate(this.pool, this.log);
    } catch (err) {
      throw this.toError(err);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }

  // ---- overrides ----

  async listOverrides(): Promise<ConfigOverride[]> {
    const r = await this.q<{ key: string; value: unknown; updated_by: string; updated_at: Date }>(
      'SELECT key, value, updated_by, updated_at FROM cortado_config_overrides ORDER BY key COLLATE "C"');
    return r.rows.map((row) => ({ key: row.key, value: row.value, updated_by: row.updated_by, updated_at: iso(row.updated_at) }));
  }

  async setOverride(key: string, value: unknown, by: string): Promise<{ previous?: unknown }> {
    if (value === undefined) throw new CortadoError('VALIDATION_FAILED', 'an override needs a value (use deleteOverride to remove it)');
    const at = new Date().toISOString();
    return this.tx(async (c) => {
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

  async deleteOverride(key: string, by: string): Promise<boolean> {
    const at = new Date().toISOString();
    return this.tx(async (c) => {
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

  async overrideHistory(opts: { key?: string; limit?: number; offset?: number } = {}): Promise<OverrideChange[]> {
    const { limit, offset } = page(opts.limit, opts.offset, HISTORY_DEFAULT_LIMIT, AUDIT_MAX_LIMIT);
    const r = await this.q<{ id: string; key: string; old_value: unknown; old_absent: boolean; new_value: unknown; new_absent: boolean; changed_by: string; changed_at: Date }>(
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

  // ---- API tokens ----

  async insertToken(t: ApiTokenRecord): Promise<void> {
    try {
      await this.q(
        `INSERT INTO cortado_api_tokens (${TOKEN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $10)`,
        [t.id, t.prefix, t.hash, t.label, t.username, json(t.db_config ?? {}), isoTime(t.created_at, 'created_at'), isoTime(t.expires_at, 'expires_at'),
          t.last_used_at === undefined ? null : isoTime(t.last_used_at, 'last_used_at'), t.revoked_at === undefined ? null : isoTime(t.revoked_at, 'revoked_at')]);
    } catch (err) {
      if (err instanceof CortadoError && err.code === 'CONFLICT') throw new CortadoError('CONFLICT', 'an API token with this id or hash exists already');
      throw err;
    }
  }

  async findTokenByHash(hash: string): Promise<ApiTokenRecord | undefined> {
    const r = await this.q<TokenRow>(`SELECT ${TOKEN_COLUMNS} FROM cortado_api_tokens WHERE hash = $1`, [hash]);
    return r.rows[0] && tokenFrom(r.rows[0]);
  }

  async getToken(id: string): Promise<ApiTokenRecord | undefined> {
    const r = await this.q<TokenRow>(`SELECT ${TOKEN_COLUMNS} FROM cortado_api_tokens WHERE id = $1`, [id]);
    return r.rows[0] && tokenFrom(r.rows[0]);
  }

  async listTokens(opts: { username?: string } = {}): Promise<ApiTokenRecord[]> {
    const r = await this.q<TokenRow>(
      `SELECT ${TOKEN_COLUMNS} FROM cortado_api_tokens WHERE ($1::text IS NULL OR username = $1) ORDER BY created_at DESC, id COLLATE "C"`,
      [opts.username ?? null]);
    return r.rows.map(tokenFrom);
  }

  async revokeToken(id: string, at: string): Promise<boolean> {
    const r = await this.q('UPDATE cortado_api_tokens SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1', [id, isoTime(at, 'revoked_at')]);
    return (r.rowCount ?? 0) > 0;
  }

  async deleteToken(id: string): Promise<boolean> {
    const r = await this.q('DELETE FROM cortado_api_tokens WHERE id = $1', [id]);
    return (r.rowCount ?? 0) > 0;
  }

  async touchToken(id: string, at: string): Promise<void> {
    await this.q(
      'UPDATE cortado_api_tokens SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2)',
      [id, isoTime(at, 'last_used_at')]);
  }

  // ---- mask rules ----

  async listMaskRules(): Promise<MaskRule[]> {
    const r = await this.q<RuleRow>(`SELECT ${RULE_COLUMNS} FROM cortado_mask_rules ORDER BY seq`);
    return r.rows.map(ruleFrom);
  }

  async createMaskRule(input: MaskRuleInput): Promise<MaskRule> {
    const at = new Date().toISOString();
    const r = await this.q<RuleRow>(
      `INSERT INTO cortado_mask_rules (id, field_pattern, strategy, enabled, description, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING ${RULE_COLUMNS}`,
      [randomUUID(), clean(input.field_pattern), input.strategy, input.enabled ?? true, clean(input.description ?? ''), at]);
    return ruleFrom(r.rows[0] as RuleRow);
  }

  async updateMaskRule(id: string, patch: Partial<MaskRuleInput>): Promise<MaskRule | undefined> {
    const r = await this.q<RuleRow>(
      `UPDATE cortado_mask_rules SET
         field_pattern = COALESCE($2, field_pattern), strategy = COALESCE($3, strategy),
         enabled = COALESCE($4, enabled), description = COALESCE($5, description), updated_at = $6
       WHERE id = $1 RETURNING ${RULE_COLUMNS}`,
      [id, optText(patch.field_pattern), patch.strategy ?? null, patch.enabled ?? null, optText(patch.description), new Date().toISOString()]);
    return r.rows[0] && ruleFrom(r.rows[0]);
  }

  async deleteMaskRule(id: string): Promise<boolean> {
    const r = await this.q('DELETE FROM cortado_mask_rules WHERE id = $1', [id]);
    return (r.rowCount ?? 0) > 0;
  }

  // ---- audit ----

  async appendAudit(e: AuditEntry): Promise<boolean> {
    const r = await this.q(
      `INSERT INTO cortado_audit_log (${AUDIT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb) ON CONFLICT (event_id) DO NOTHING`,
      [clean(e.event_id), clean(e.type), isoTime(e.ts, 'ts'), optText(e.request_id), optText(e.user), optText(e.channel), optText(e.code), json(e.payload ?? {})]);
    return r.rowCount === 1;
  }

  async queryAudit(filter: AuditFilter): Promise<{ entries: AuditEntry[]; total: number }> {
    const { limit, offset } = page(filter.limit, filter.offset, AUDIT_DEFAULT_LIMIT, AUDIT_MAX_LIMIT);
    const where: string[] = [];
    const values: unknown[] = [];
    const add = (sql: string, value: unknown): void => {
      values.push(typeof value === 'string' ? clean(value) : value);
      where.push(sql.replace('?', `$${values.length}`));
    };
    if (filter.type !== undefined) add('type = ?', filter.type);
    if (filter.user !== undefined) add('username = ?', filter.user);
    if (filter.code !== undefined) add('code = ?', filter.code);
    if (filter.request_id !== undefined) add('request_id = ?', filter.request_id);
    if (filter.from !== undefined) add('ts >= ?', isoTime(filter.from, 'from'));
    if (filter.to !== undefined) add('ts < ?', isoTime(filter.to, 'to'));
    const cond = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const count = await this.q<{ n: string }>(`SELECT count(*) AS n FROM cortado_audit_log ${cond}`, values);
    const rows = await this.q<AuditRow>(
      `SELECT ${AUDIT_COLUMNS} FROM cortado_audit_log ${cond} ORDER BY ts DESC, seq DESC LIMIT $${values.length + 1} OFFSET $${values.length + 2}`,
      [...values, limit, offset]);
    return { entries: rows.rows.map(auditFrom), total: Number(count.rows[0]?.n ?? 0) };
  }
}

export function createPostgresStore(opts: PostgresStoreOptions): PostgresStore {
  return new PostgresStore(opts);
}

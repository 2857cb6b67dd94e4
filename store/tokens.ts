/**
 * API tokens (owner: the identity actor). Only the SHA-256 of a token is ever stored; the
 * db_config's secrets arrive sealed (actors/lib/crypto/secrets.ts) and are kept as given.
 */
import { CortadoError } from '../protocol/errors.js';
import { iso, json, type PgDatabase } from './postgres.js';
import { byCodePoint, copy, isoTime } from './values.js';

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

export interface TokensRepository {
  /** CONFLICT when a token with this id or hash exists */
  insert(token: ApiTokenRecord): Promise<void>;
  findByHash(hash: string): Promise<ApiTokenRecord | undefined>;
  get(id: string): Promise<ApiTokenRecord | undefined>;
  /** newest first (created_at), revoked and expired ones included */
  list(opts?: { username?: string }): Promise<ApiTokenRecord[]>;
  /** false when there is no such token; revoking twice keeps the first time */
  revoke(id: string, at: string): Promise<boolean>;
  delete(id: string): Promise<boolean>;
  /** record a use; last_used_at never moves back */
  touch(id: string, at: string): Promise<void>;
}

const DUPLICATE = 'an API token with this id or hash exists already';

// ---- memory -----------------------------------------------------------------------------------

function normalize(t: ApiTokenRecord): ApiTokenRecord {
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

export class MemoryTokens implements TokensRepository {
  private readonly byId = new Map<string, ApiTokenRecord>();
  private readonly idByHash = new Map<string, string>();

  async insert(token: ApiTokenRecord): Promise<void> {
    const t = normalize(token);
    if (this.byId.has(t.id) || this.idByHash.has(t.hash)) throw new CortadoError('CONFLICT', DUPLICATE);
    this.byId.set(t.id, t);
    this.idByHash.set(t.hash, t.id);
  }

  async findByHash(hash: string): Promise<ApiTokenRecord | undefined> {
    const id = this.idByHash.get(hash);
    const t = id === undefined ? undefined : this.byId.get(id);
    return t && copy(t);
  }

  async get(id: string): Promise<ApiTokenRecord | undefined> {
    const t = this.byId.get(id);
    return t && copy(t);
  }

  async list(opts: { username?: string } = {}): Promise<ApiTokenRecord[]> {
    return [...this.byId.values()]
      .filter((t) => opts.username === undefined || t.username === opts.username)
      .sort((a, b) => byCodePoint(b.created_at, a.created_at) || byCodePoint(a.id, b.id))
      .map(copy);
  }

  async revoke(id: string, at: string): Promise<boolean> {
    const t = this.byId.get(id);
    if (!t) return false;
    t.revoked_at ??= isoTime(at, 'revoked_at');
    return true;
  }

  async delete(id: string): Promise<boolean> {
    const t = this.byId.get(id);
    if (!t) return false;
    this.byId.delete(id);
    this.idByHash.delete(t.hash);
    return true;
  }

  async touch(id: string, at: string): Promise<void> {
    const t = this.byId.get(id);
    if (!t) return;
    const when = isoTime(at, 'last_used_at');
    if (t.last_used_at === undefined || t.last_used_at < when) t.last_used_at = when;
  }
}

// ---- PostgreSQL (cortado_api_tokens) ------------------------------------------------------------

interface Row {
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

const COLUMNS = 'id, prefix, hash, label, username, db_config, created_at, expires_at, last_used_at, revoked_at';

function fromRow(r: Row): ApiTokenRecord {
  const t: ApiTokenRecord = {
    id: r.id, prefix: r.prefix, hash: r.hash, label: r.label, username: r.username, db_config: r.db_config,
    created_at: iso(r.created_at), expires_at: iso(r.expires_at),
  };
  if (r.last_used_at) t.last_used_at = iso(r.last_used_at);
  if (r.revoked_at) t.revoked_at = iso(r.revoked_at);
  return t;
}

export class PostgresTokens implements TokensRepository {
  constructor(private readonly db: PgDatabase) {}

  async insert(t: ApiTokenRecord): Promise<void> {
    try {
      await this.db.query(
        `INSERT INTO cortado_api_tokens (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $10)`,
        [t.id, t.prefix, t.hash, t.label, t.username, json(t.db_config ?? {}), isoTime(t.created_at, 'created_at'), isoTime(t.expires_at, 'expires_at'),
          t.last_used_at === undefined ? null : isoTime(t.last_used_at, 'last_used_at'), t.revoked_at === undefined ? null : isoTime(t.revoked_at, 'revoked_at')]);
    } catch (err) {
      if (err instanceof CortadoError && err.code === 'CONFLICT') throw new CortadoError('CONFLICT', DUPLICATE);
      throw err;
    }
  }

  async findByHash(hash: string): Promise<ApiTokenRecord | undefined> {
    const r = await this.db.query<Row>(`SELECT ${COLUMNS} FROM cortado_api_tokens WHERE hash = $1`, [hash]);
    return r.rows[0] && fromRow(r.rows[0]);
  }

  async get(id: string): Promise<ApiTokenRecord | undefined> {
    const r = await this.db.query<Row>(`SELECT ${COLUMNS} FROM cortado_api_tokens WHERE id = $1`, [id]);
    return r.rows[0] && fromRow(r.rows[0]);
  }

  async list(opts: { username?: string } = {}): Promise<ApiTokenRecord[]> {
    const r = await this.db.query<Row>(
      `SELECT ${COLUMNS} FROM cortado_api_tokens WHERE ($1::text IS NULL OR username = $1) ORDER BY created_at DESC, id COLLATE "C"`,
      [opts.username ?? null]);
    return r.rows.map(fromRow);
  }

  async revoke(id: string, at: string): Promise<boolean> {
    const r = await this.db.query('UPDATE cortado_api_tokens SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1', [id, isoTime(at, 'revoked_at')]);
    return (r.rowCount ?? 0) > 0;
  }

  async delete(id: string): Promise<boolean> {
    const r = await this.db.query('DELETE FROM cortado_api_tokens WHERE id = $1', [id]);
    return (r.rowCount ?? 0) > 0;
  }

  async touch(id: string, at: string): Promise<void> {
    await this.db.query(
      'UPDATE cortado_api_tokens SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2)',
      [id, isoTime(at, 'last_used_at')]);
  }
}

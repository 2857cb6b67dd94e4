/**
 * The audit log (owner: the audit actor): one entry per event of the CORTADO_EVENTS stream,
 * never row values. Appending an event id a second time keeps the first entry (dedup), so a
 * redelivery is harmless. In memory the log is bounded: the newest MEMORY_AUDIT_CAP entries are
 * kept, and the dedup set forgets the ids of entries it drops.
 */
import { clean, iso, json, optText, type PgDatabase } from './postgres.js';
import { copy, isoTime, page } from './values.js';

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
  /** the W3C trace id the event was published under (32 hex digits), when it had one */
  trace_id?: string;
  /** the whole event payload */
  payload: Record<string, unknown>;
}

export interface AuditFilter {
  type?: string;
  user?: string;
  code?: string;
  request_id?: string;
  /** words of the question (payload.question), case-insensitive, anywhere in it */
  q?: string;
  /** ISO 8601, inclusive */
  from?: string;
  /** ISO 8601, exclusive */
  to?: string;
  /** newest first; default 50, at most 1000 */
  limit?: number;
  offset?: number;
}

export interface AuditRepository {
  /** false when an entry with this event_id exists already (dedup) */
  append(entry: AuditEntry): Promise<boolean>;
  /** newest first (ts, then arrival); total: how many kept entries match the filter */
  query(filter: AuditFilter): Promise<{ entries: AuditEntry[]; total: number }>;
}

export const AUDIT_DEFAULT_LIMIT = 50;
export const AUDIT_MAX_LIMIT = 1000;
export const MEMORY_AUDIT_CAP = 10_000;

// ---- memory -----------------------------------------------------------------------------------

function normalize(e: AuditEntry): AuditEntry {
  const out: AuditEntry = { event_id: e.event_id, type: e.type, ts: isoTime(e.ts, 'ts'), payload: copy(e.payload ?? {}) };
  if (e.request_id !== undefined) out.request_id = e.request_id;
  if (e.user !== undefined) out.user = e.user;
  if (e.channel !== undefined) out.channel = e.channel;
  if (e.code !== undefined) out.code = e.code;
  if (e.trace_id !== undefined) out.trace_id = e.trace_id;
  return out;
}

/** The question an entry is about, when its event carries one (query.generated, question.completed). */
function questionOf(e: AuditEntry): string | undefined {
  return typeof e.payload.question === 'string' ? e.payload.question : undefined;
}

interface Kept {
  seq: number;
  ms: number;
  entry: AuditEntry;
}

export class MemoryAudit implements AuditRepository {
  private readonly cap: number;
  /** oldest first */
  private readonly kept: Kept[] = [];
  private readonly ids = new Set<string>();
  private seq = 0;

  /** @param cap how many entries to keep (default 10,000) */
  constructor(cap: number = MEMORY_AUDIT_CAP) {
    this.cap = Math.max(1, Math.floor(cap));
  }

  async append(entry: AuditEntry): Promise<boolean> {
    if (this.ids.has(entry.event_id)) return false;
    const e = normalize(entry);
    this.kept.push({ seq: ++this.seq, ms: Date.parse(e.ts), entry: e });
    this.ids.add(e.event_id);
    while (this.kept.length > this.cap) {
      const dropped = this.kept.shift();
      if (dropped) this.ids.delete(dropped.entry.event_id);
    }
    return true;
  }

  async query(filter: AuditFilter): Promise<{ entries: AuditEntry[]; total: number }> {
    const { limit, offset } = page(filter.limit, filter.offset, AUDIT_DEFAULT_LIMIT, AUDIT_MAX_LIMIT);
    const from = filter.from === undefined ? undefined : Date.parse(isoTime(filter.from, 'from'));
    const to = filter.to === undefined ? undefined : Date.parse(isoTime(filter.to, 'to'));
    const q = filter.q?.toLowerCase();
    const matching = this.kept.filter(({ ms, entry: e }) =>
      (filter.type === undefined || e.type === filter.type) &&
      (filter.user === undefined || e.user === filter.user) &&
      (filter.code === undefined || e.code === filter.code) &&
      (filter.request_id === undefined || e.request_id === filter.request_id) &&
      (q === undefined || (questionOf(e)?.toLowerCase().includes(q) ?? false)) &&
      (from === undefined || ms >= from) &&
      (to === undefined || ms < to));
    matching.sort((a, b) => b.ms - a.ms || b.seq - a.seq);
    return { entries: matching.slice(offset, offset + limit).map((k) => copy(k.entry)), total: matching.length };
  }
}

// ---- PostgreSQL (cortado_audit_log) -------------------------------------------------------------

interface Row {
  event_id: string;
  type: string;
  ts: Date;
  request_id: string | null;
  username: string | null;
  channel: string | null;
  code: string | null;
  trace_id: string | null;
  payload: Record<string, unknown>;
}

const COLUMNS = 'event_id, type, ts, request_id, username, channel, code, trace_id, payload';

/** `text` as a LIKE pattern matching itself anywhere: its own %, _ and backslash taken literally. */
function containing(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

function fromRow(r: Row): AuditEntry {
  const e: AuditEntry = { event_id: r.event_id, type: r.type, ts: iso(r.ts), payload: r.payload };
  if (r.request_id !== null) e.request_id = r.request_id;
  if (r.username !== null) e.user = r.username;
  if (r.channel !== null) e.channel = r.channel;
  if (r.code !== null) e.code = r.code;
  if (r.trace_id !== null) e.trace_id = r.trace_id;
  return e;
}

export class PostgresAudit implements AuditRepository {
  constructor(private readonly db: PgDatabase) {}

  async append(e: AuditEntry): Promise<boolean> {
    const r = await this.db.query(
      `INSERT INTO cortado_audit_log (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb) ON CONFLICT (event_id) DO NOTHING`,
      [clean(e.event_id), clean(e.type), isoTime(e.ts, 'ts'), optText(e.request_id), optText(e.user), optText(e.channel), optText(e.code), optText(e.trace_id), json(e.payload ?? {})]);
    return r.rowCount === 1;
  }

  async query(filter: AuditFilter): Promise<{ entries: AuditEntry[]; total: number }> {
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
    if (filter.q !== undefined) add(`payload->>'question' ILIKE ? ESCAPE '\\'`, containing(filter.q));
    if (filter.from !== undefined) add('ts >= ?', isoTime(filter.from, 'from'));
    if (filter.to !== undefined) add('ts < ?', isoTime(filter.to, 'to'));
    const cond = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const count = await this.db.query<{ n: string }>(`SELECT count(*) AS n FROM cortado_audit_log ${cond}`, values);
    const rows = await this.db.query<Row>(
      `SELECT ${COLUMNS} FROM cortado_audit_log ${cond} ORDER BY ts DESC, seq DESC LIMIT $${values.length + 1} OFFSET $${values.length + 2}`,
      [...values, limit, offset]);
    return { entries: rows.rows.map(fromRow), total: Number(count.rows[0]?.n ?? 0) };
  }
}

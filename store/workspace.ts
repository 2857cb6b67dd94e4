/**
 * A signed-in person's workspace (owner: the workspace actor): the questions they asked
 * (history, with favourites) and their dashboards (named lists of tiles). Everything is kept
 * per owner string (the edge's stable name of a person, edge/http/routes/workspace.ts); one
 * owner never reads, changes or deletes another's rows: every method takes the owner.
 *
 * History is bounded: `addHistory` keeps the newest `keep` entries of an owner that are not
 * favourites, and every favourite.
 */
import { clean, iso, json, optText, type PgDatabase } from './postgres.js';
import { byCodePoint, copy, isoTime } from './values.js';

export interface HistoryRecord {
  id: string;
  owner: string;
  question: string;
  sql?: string;
  row_count?: number;
  request_id?: string;
  favourite: boolean;
  /** when it was asked */
  at: string;
}

export interface TileRecord {
  id: string;
  title: string;
  /** re-asked on each refresh (POST /api/query) */
  question?: string;
  /** pinned SQL: re-run through the guarded export route */
  sql?: string;
  /** `on_open`, or a cron expression: refreshed in the page when due while it is open */
  refresh: string;
  /** the cron's time zone (default scheduler.timezone) */
  timezone?: string;
  /** the tile's width in the grid: `small` (left out) or `wide` */
  size?: 'small' | 'wide';
}

export interface DashboardRecord {
  id: string;
  owner: string;
  name: string;
  tiles: TileRecord[];
  created_at: string;
  updated_at: string;
}

export interface WorkspaceRepository {
  /** insert, then drop the owner's oldest non-favourites beyond `keep` */
  addHistory(entry: HistoryRecord, keep: number): Promise<void>;
  /** newest first; `favourites`: only those */
  listHistory(owner: string, opts: { limit: number; favourites?: boolean }): Promise<HistoryRecord[]>;
  /** the entry after the change; undefined when the owner has no such entry */
  setFavourite(owner: string, id: string, on: boolean): Promise<HistoryRecord | undefined>;
  removeHistory(owner: string, id: string): Promise<boolean>;
  /** by name, then id */
  listDashboards(owner: string): Promise<DashboardRecord[]>;
  getDashboard(owner: string, id: string): Promise<DashboardRecord | undefined>;
  countDashboards(owner: string): Promise<number>;
  /** insert, or replace the owner's dashboard of this id (created_at kept) */
  putDashboard(d: DashboardRecord): Promise<DashboardRecord>;
  removeDashboard(owner: string, id: string): Promise<boolean>;
}

function normalizeEntry(e: HistoryRecord): HistoryRecord {
  const out: HistoryRecord = { id: e.id, owner: e.owner, question: e.question, favourite: e.favourite, at: isoTime(e.at, 'at') };
  if (e.sql !== undefined) out.sql = e.sql;
  if (e.row_count !== undefined) out.row_count = e.row_count;
  if (e.request_id !== undefined) out.request_id = e.request_id;
  return out;
}

/** newest first; the same order in both implementations */
function newestFirst(a: HistoryRecord, b: HistoryRecord): number {
  return byCodePoint(b.at, a.at) || byCodePoint(b.id, a.id);
}

function byName(a: DashboardRecord, b: DashboardRecord): number {
  return byCodePoint(a.name, b.name) || byCodePoint(a.id, b.id);
}

// ---- memory -----------------------------------------------------------------------------------

export class MemoryWorkspace implements WorkspaceRepository {
  private readonly history = new Map<string, HistoryRecord[]>();
  private readonly dashboards = new Map<string, Map<string, DashboardRecord>>();

  async addHistory(entry: HistoryRecord, keep: number): Promise<void> {
    const list = this.history.get(entry.owner) ?? [];
    list.push(normalizeEntry(entry));
    list.sort(newestFirst);
    let plain = 0;
    const kept = list.filter((e) => e.favourite || ++plain <= keep);
    this.history.set(entry.owner, kept);
  }

  async listHistory(owner: string, opts: { limit: number; favourites?: boolean }): Promise<HistoryRecord[]> {
    return (this.history.get(owner) ?? []).filter((e) => !opts.favourites || e.favourite).slice(0, opts.limit).map(copy);
  }

  async setFavourite(owner: string, id: string, on: boolean): Promise<HistoryRecord | undefined> {
    const e = this.history.get(owner)?.find((x) => x.id === id);
    if (!e) return undefined;
    e.favourite = on;
    return copy(e);
  }

  async removeHistory(owner: string, id: string): Promise<boolean> {
    const list = this.history.get(owner) ?? [];
    const i = list.findIndex((x) => x.id === id);
    if (i < 0) return false;
    list.splice(i, 1);
    return true;
  }

  async listDashboards(owner: string): Promise<DashboardRecord[]> {
    return [...(this.dashboards.get(owner)?.values() ?? [])].sort(byName).map(copy);
  }

  async getDashboard(owner: string, id: string): Promise<DashboardRecord | undefined> {
    const d = this.dashboards.get(owner)?.get(id);
    return d && copy(d);
  }

  async countDashboards(owner: string): Promise<number> {
    return this.dashboards.get(owner)?.size ?? 0;
  }

  async putDashboard(d: DashboardRecord): Promise<DashboardRecord> {
    const mine = this.dashboards.get(d.owner) ?? new Map<string, DashboardRecord>();
    this.dashboards.set(d.owner, mine);
    const before = mine.get(d.id);
    const stored: DashboardRecord = copy({ ...d, created_at: before?.created_at ?? isoTime(d.created_at, 'created_at'), updated_at: isoTime(d.updated_at, 'updated_at') });
    mine.set(d.id, stored);
    return copy(stored);
  }

  async removeDashboard(owner: string, id: string): Promise<boolean> {
    return this.dashboards.get(owner)?.delete(id) ?? false;
  }
}

// ---- PostgreSQL (cortado_history, cortado_dashboards) --------------------------------------------

interface HistoryRow {
  id: string;
  owner: string;
  question: string;
  sql: string | null;
  row_count: string | null;
  request_id: string | null;
  favourite: boolean;
  at: Date;
}

interface DashboardRow {
  id: string;
  owner: string;
  name: string;
  tiles: TileRecord[];
  created_at: Date;
  updated_at: Date;
}

const H_COLUMNS = 'id, owner, question, sql, row_count, request_id, favourite, at';
const D_COLUMNS = 'id, owner, name, tiles, created_at, updated_at';

function entryOf(r: HistoryRow): HistoryRecord {
  const e: HistoryRecord = { id: r.id, owner: r.owner, question: r.question, favourite: r.favourite, at: iso(r.at) };
  if (r.sql !== null) e.sql = r.sql;
  if (r.row_count !== null) e.row_count = Number(r.row_count);
  if (r.request_id !== null) e.request_id = r.request_id;
  return e;
}

function dashboardOf(r: DashboardRow): DashboardRecord {
  return { id: r.id, owner: r.owner, name: r.name, tiles: r.tiles, created_at: iso(r.created_at), updated_at: iso(r.updated_at) };
}

export class PostgresWorkspace implements WorkspaceRepository {
  constructor(private readonly db: PgDatabase) {}

  async addHistory(entry: HistoryRecord, keep: number): Promise<void> {
    const e = normalizeEntry(entry);
    await this.db.tx(async (c) => {
      await c.query(`INSERT INTO cortado_history (${H_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [e.id, e.owner, clean(e.question), optText(e.sql), e.row_count ?? null, optText(e.request_id), e.favourite, e.at]);
      await c.query(`DELETE FROM cortado_history WHERE owner = $1 AND NOT favourite AND id IN (
        SELECT id FROM cortado_history WHERE owner = $1 AND NOT favourite ORDER BY at DESC, id COLLATE "C" DESC OFFSET $2)`, [e.owner, keep]);
    });
  }

  async listHistory(owner: string, opts: { limit: number; favourites?: boolean }): Promise<HistoryRecord[]> {
    const r = await this.db.query<HistoryRow>(
      `SELECT ${H_COLUMNS} FROM cortado_history WHERE owner = $1 AND ($2::boolean IS NOT TRUE OR favourite)
       ORDER BY at DESC, id COLLATE "C" DESC LIMIT $3`, [owner, opts.favourites ?? false, opts.limit]);
    return r.rows.map(entryOf);
  }

  async setFavourite(owner: string, id: string, on: boolean): Promise<HistoryRecord | undefined> {
    const r = await this.db.query<HistoryRow>(`UPDATE cortado_history SET favourite = $3 WHERE owner = $1 AND id = $2 RETURNING ${H_COLUMNS}`, [owner, id, on]);
    return r.rows[0] && entryOf(r.rows[0]);
  }

  async removeHistory(owner: string, id: string): Promise<boolean> {
    const r = await this.db.query('DELETE FROM cortado_history WHERE owner = $1 AND id = $2', [owner, id]);
    return (r.rowCount ?? 0) > 0;
  }

  async listDashboards(owner: string): Promise<DashboardRecord[]> {
    const r = await this.db.query<DashboardRow>(`SELECT ${D_COLUMNS} FROM cortado_dashboards WHERE owner = $1 ORDER BY name COLLATE "C", id COLLATE "C"`, [owner]);
    return r.rows.map(dashboardOf);
  }

  async getDashboard(owner: string, id: string): Promise<DashboardRecord | undefined> {
    const r = await this.db.query<DashboardRow>(`SELECT ${D_COLUMNS} FROM cortado_dashboards WHERE owner = $1 AND id = $2`, [owner, id]);
    return r.rows[0] && dashboardOf(r.rows[0]);
  }

  async countDashboards(owner: string): Promise<number> {
    const r = await this.db.query<{ n: number }>('SELECT count(*)::int AS n FROM cortado_dashboards WHERE owner = $1', [owner]);
    return r.rows[0]?.n ?? 0;
  }

  async putDashboard(d: DashboardRecord): Promise<DashboardRecord> {
    const r = await this.db.query<DashboardRow>(
      `INSERT INTO cortado_dashboards (${D_COLUMNS}) VALUES ($1, $2, $3, $4::jsonb, $5, $6)
       ON CONFLICT (owner, id) DO UPDATE SET name = EXCLUDED.name, tiles = EXCLUDED.tiles, updated_at = EXCLUDED.updated_at
       RETURNING ${D_COLUMNS}`,
      [d.id, d.owner, clean(d.name), json(d.tiles), isoTime(d.created_at, 'created_at'), isoTime(d.updated_at, 'updated_at')]);
    return dashboardOf(r.rows[0] as DashboardRow);
  }

  async removeDashboard(owner: string, id: string): Promise<boolean> {
    const r = await this.db.query('DELETE FROM cortado_dashboards WHERE owner = $1 AND id = $2', [owner, id]);
    return (r.rowCount ?? 0) > 0;
  }
}

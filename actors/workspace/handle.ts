/**
 * The workspace's requests as plain functions: each person's question history (bounded, with
 * favourites) and dashboards of tiles. The owner in every request is who the edge says is
 * asking; a record of another owner is NOT_FOUND, exactly as one that does not exist.
 *
 * A tile's cron is the scheduler's: it is checked, and its next time computed, by asking the
 * scheduler's cron helper over the bus (`schedule.cron.preview`), never by a second cron parser.
 */
import { randomUUID } from 'node:crypto';
import { orderedId } from './ordered-id.js';
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import { CortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/log.js';
import * as W from '../../protocol/schemas/workspace.js';
import { CronPreview } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import type { DashboardRecord, HistoryRecord, Storage, TileRecord } from '../../store/index.js';

export interface WorkspaceDeps {
  bus: Pick<Bus, 'request'>;
  config: Config;
  log: Logger;
  store: Pick<Storage, 'kind' | 'workspace'>;
  now?: () => number;
}

const ON_OPEN = 'on_open';
/** how far in the future a client's `at` may be (clock skew), in ms */
const SKEW_MS = 5 * 60_000;

function stored(deps: WorkspaceDeps): 'config_db' | 'memory' {
  return deps.store.kind === 'postgresql' ? 'config_db' : 'memory';
}

function entryView(e: HistoryRecord): W.HistoryEntry {
  const { owner: _owner, ...rest } = e;
  return rest;
}

function notFound(what: string): CortadoError {
  return new CortadoError('NOT_FOUND', `there is no such ${what}`);
}

// ---- history ----------------------------------------------------------------------------------

export async function historyAdd(input: { owner: string; entry: W.HistoryInput }, deps: WorkspaceDeps): Promise<W.HistoryEntry> {
  const now = deps.now?.() ?? Date.now();
  const { entry } = input;
  let at = now;
  if (entry.at !== undefined) {
    at = Date.parse(entry.at);
    if (!Number.isFinite(at)) throw new CortadoError('VALIDATION_FAILED', 'at: an ISO 8601 time', { errors: [{ path: '/at', message: 'an ISO 8601 time' }] });
    if (at > now + SKEW_MS) throw new CortadoError('VALIDATION_FAILED', 'at: a time in the future', { errors: [{ path: '/at', message: 'not in the future' }] });
  }
  const question = entry.question.trim();
  if (!question) throw new CortadoError('VALIDATION_FAILED', 'question: empty', { errors: [{ path: '/question', message: 'a question' }] });
  const record: HistoryRecord = {
    id: orderedId(), owner: input.owner, question, favourite: entry.favourite ?? false, at: new Date(at).toISOString(),
    ...(entry.sql !== undefined ? { sql: entry.sql } : {}),
    ...(entry.row_count !== undefined ? { row_count: entry.row_count } : {}),
    ...(entry.request_id !== undefined ? { request_id: entry.request_id } : {}),
  };
  await deps.store.workspace.addHistory(record, W.WORKSPACE_LIMITS.history);
  return entryView(record);
}

export async function historyList(input: W.HistoryListRequest, deps: WorkspaceDeps): Promise<W.HistoryListReply> {
  const entries = await deps.store.workspace.listHistory(input.owner, { limit: input.limit ?? 50, ...(input.favourites ? { favourites: true } : {}) });
  return { entries: entries.map(entryView), stored: stored(deps) };
}

export async function historyFavourite(input: { owner: string; id: string; favourite: boolean }, deps: WorkspaceDeps): Promise<W.HistoryEntry> {
  const e = await deps.store.workspace.setFavourite(input.owner, input.id, input.favourite);
  if (!e) throw notFound('history entry');
  return entryView(e);
}

export async function historyDelete(input: { owner: string; id: string }, deps: WorkspaceDeps): Promise<{ ok: boolean }> {
  if (!(await deps.store.workspace.removeHistory(input.owner, input.id))) throw notFound('history entry');
  return { ok: true };
}

// ---- dashboards -------------------------------------------------------------------------------

/** A tile as replies show it: a cron tile with its next refresh and the cron in words. */
async function tileView(t: TileRecord, deps: WorkspaceDeps, ctx: Ctx): Promise<W.Tile> {
  if (t.refresh === ON_OPEN) return { ...t };
  const p = await deps.bus.request(CronPreview, { cron: t.refresh, ...(t.timezone ? { timezone: t.timezone } : {}) }, ctx);
  if (!p.valid) return { ...t };
  return { ...t, ...(p.next_runs[0] ? { next_refresh_at: p.next_runs[0] } : {}), ...(p.description ? { refresh_description: p.description } : {}) };
}

async function dashboardView(d: DashboardRecord, deps: WorkspaceDeps, ctx: Ctx): Promise<W.Dashboard> {
  return {
    id: d.id, name: d.name, created_at: d.created_at, updated_at: d.updated_at,
    tiles: await Promise.all(d.tiles.map((t) => tileView(t, deps, ctx))),
  };
}

/** The tiles as stored: each a question or pinned SQL (exactly one), its refresh checked by the scheduler's cron helper. */
async function checkTiles(tiles: W.TileInput[], deps: WorkspaceDeps, ctx: Ctx): Promise<TileRecord[]> {
  const out: TileRecord[] = [];
  const ids = new Set<string>();
  for (const [i, t] of tiles.entries()) {
    const at = `/dashboard/tiles/${i}`;
    const bad = (field: string, message: string): CortadoError =>
      new CortadoError('VALIDATION_FAILED', `tiles[${i}].${field}: ${message}`, { errors: [{ path: `${at}/${field}`, message }] });
    const question = t.question?.trim();
    const sql = t.sql?.trim();
    if (!question === !sql) throw bad('question', 'a tile has either a question or pinned sql (one of the two)');
    const refresh = t.refresh?.trim() || ON_OPEN;
    if (refresh !== ON_OPEN) {
      const p = await deps.bus.request(CronPreview, { cron: refresh, ...(t.timezone ? { timezone: t.timezone } : {}) }, ctx);
      if (!p.valid) throw bad('refresh', `"on_open" or a five-field cron expression (${p.error ?? 'not a valid cron'})`);
    } else if (t.timezone !== undefined) {
      throw bad('timezone', 'only a cron refresh has a time zone');
    }
    const id = t.id ?? randomUUID();
    if (ids.has(id)) throw bad('id', 'two tiles with one id');
    ids.add(id);
    out.push({ id, title: t.title.trim() || t.title, refresh, ...(question ? { question } : {}), ...(sql ? { sql } : {}), ...(t.timezone ? { timezone: t.timezone } : {}), ...(t.size === 'wide' ? { size: t.size } : {}) });
  }
  return out;
}

export async function dashboardList(input: { owner: string }, deps: WorkspaceDeps, ctx: Ctx): Promise<W.DashboardListReply> {
  const list = await deps.store.workspace.listDashboards(input.owner);
  return { dashboards: await Promise.all(list.map((d) => dashboardView(d, deps, ctx))), stored: stored(deps) };
}

export async function dashboardGet(input: { owner: string; id: string }, deps: WorkspaceDeps, ctx: Ctx): Promise<W.Dashboard> {
  const d = await deps.store.workspace.getDashboard(input.owner, input.id);
  if (!d) throw notFound('dashboard');
  return dashboardView(d, deps, ctx);
}

export async function dashboardSave(input: W.DashboardSaveRequest, deps: WorkspaceDeps, ctx: Ctx): Promise<W.Dashboard> {
  const ws = deps.store.workspace;
  const name = input.dashboard.name.trim();
  if (!name) throw new CortadoError('VALIDATION_FAILED', 'name: empty', { errors: [{ path: '/dashboard/name', message: 'a name' }] });
  const tiles = await checkTiles(input.dashboard.tiles, deps, ctx);
  const now = new Date(deps.now?.() ?? Date.now()).toISOString();
  if (input.id !== undefined) {
    const before = await ws.getDashboard(input.owner, input.id);
    if (!before) throw notFound('dashboard');
    return dashboardView(await ws.putDashboard({ ...before, name, tiles, updated_at: now }), deps, ctx);
  }
  if ((await ws.countDashboards(input.owner)) >= W.WORKSPACE_LIMITS.dashboards) {
    throw new CortadoError('LIMIT_EXCEEDED', `at most ${W.WORKSPACE_LIMITS.dashboards} dashboards per person; delete one first`, { limit: 'dashboards', max: W.WORKSPACE_LIMITS.dashboards });
  }
  const d = await ws.putDashboard({ id: randomUUID(), owner: input.owner, name, tiles, created_at: now, updated_at: now });
  return dashboardView(d, deps, ctx);
}

export async function dashboardDelete(input: { owner: string; id: string }, deps: WorkspaceDeps): Promise<{ ok: boolean }> {
  if (!(await deps.store.workspace.removeDashboard(input.owner, input.id))) throw notFound('dashboard');
  return { ok: true };
}

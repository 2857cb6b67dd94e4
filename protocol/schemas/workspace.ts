/**
 * A signed-in person's workspace (the workspace actor; store/workspace.ts): the questions they
 * asked (history and favourites) and their dashboards of tiles. Every request names its owner:
 * the edge's stable name of the person asking (edge/http/routes/workspace.ts), never a secret.
 */
import Type, { type Static } from 'typebox';
import { NameString, TextString } from './text.js';
import { Column, Cell } from './common.js';
import { DateRange, SqlExecuteReply } from './sql.js';

export const WORKSPACE_LIMITS = {
  /** the longest question kept */
  question: 4000,
  /** the longest SQL kept with an entry or pinned in a tile */
  sql: 100_000,
  /** entries kept per owner besides its favourites */
  history: 200,
  /** the most entries one list returns */
  list: 500,
  dashboards: 50,
  tiles: 24,
  name: 200,
} as const;

/** `<kind>:<id>`: the person a workspace belongs to (built by the edge, see the header) */
export const WorkspaceOwner = Type.String({ pattern: '^[a-z]{1,8}:[A-Za-z0-9_-]{1,100}$', maxLength: 110 });
export const WorkspaceId = Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' });
const Iso = Type.String({ description: 'ISO 8601 time' });
/** where the workspace is kept: config_db, or this process's memory (lost on restart) */
export const Stored = Type.Enum(['config_db', 'memory']);

// ---- history ----------------------------------------------------------------------------------

/** What a page sends after an answer (POST /api/history). */
export const HistoryInput = Type.Object({
  question: TextString({ minLength: 1, maxLength: WORKSPACE_LIMITS.question }),
  sql: Type.Optional(TextString({ maxLength: WORKSPACE_LIMITS.sql })),
  row_count: Type.Optional(Type.Integer({ minimum: 0 })),
  request_id: Type.Optional(NameString({ maxLength: 64 })),
  /** when it was asked (default: now); never in the future */
  at: Type.Optional(NameString({ minLength: 1, maxLength: 40 })),
  favourite: Type.Optional(Type.Boolean()),
});
export type HistoryInput = Static<typeof HistoryInput>;

export const HistoryEntry = Type.Object({
  id: Type.String(),
  question: Type.String(),
  sql: Type.Optional(Type.String()),
  row_count: Type.Optional(Type.Integer()),
  request_id: Type.Optional(Type.String()),
  favourite: Type.Boolean(),
  at: Iso,
});
export type HistoryEntry = Static<typeof HistoryEntry>;

export const HistoryAddRequest = Type.Object({ owner: WorkspaceOwner, entry: HistoryInput });
export const HistoryListRequest = Type.Object({
  owner: WorkspaceOwner,
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: WORKSPACE_LIMITS.list })),
  favourites: Type.Optional(Type.Boolean()),
});
export type HistoryListRequest = Static<typeof HistoryListRequest>;
export const HistoryListReply = Type.Object({ entries: Type.Array(HistoryEntry), stored: Stored });
export type HistoryListReply = Static<typeof HistoryListReply>;
export const HistoryFavouriteRequest = Type.Object({ owner: WorkspaceOwner, id: WorkspaceId, favourite: Type.Boolean() });
export const WorkspaceItemRequest = Type.Object({ owner: WorkspaceOwner, id: WorkspaceId });
export const WorkspaceOk = Type.Object({ ok: Type.Boolean() });

// ---- dashboards -------------------------------------------------------------------------------

/** A tile's width in the dashboard's grid. */
export const TileSize = Type.Enum(['small', 'wide']);

/** A tile: a question re-asked, or pinned SQL re-run, each time it refreshes. */
export const TileInput = Type.Object({
  /** kept when given (a tile edited in place), else made */
  id: Type.Optional(WorkspaceId),
  title: NameString({ minLength: 1, maxLength: WORKSPACE_LIMITS.name }),
  question: Type.Optional(TextString({ minLength: 1, maxLength: WORKSPACE_LIMITS.question })),
  sql: Type.Optional(TextString({ minLength: 1, maxLength: WORKSPACE_LIMITS.sql })),
  /** `on_open` (default), or a five-field cron: refreshed in the page when due while it is open */
  refresh: Type.Optional(NameString({ minLength: 1, maxLength: 200 })),
  /** the cron's time zone (default scheduler.timezone) */
  timezone: Type.Optional(NameString({ minLength: 1, maxLength: 64 })),
  /** its width in the grid: one column (`small`, the default) or two (`wide`) */
  size: Type.Optional(TileSize),
});
export type TileInput = Static<typeof TileInput>;

export const DashboardInput = Type.Object({
  name: NameString({ minLength: 1, maxLength: WORKSPACE_LIMITS.name }),
  tiles: Type.Array(TileInput, { maxItems: WORKSPACE_LIMITS.tiles }),
});
export type DashboardInput = Static<typeof DashboardInput>;

export const Tile = Type.Object({
  id: Type.String(),
  title: Type.String(),
  question: Type.Optional(Type.String()),
  sql: Type.Optional(Type.String()),
  refresh: Type.String(),
  timezone: Type.Optional(Type.String()),
  /** cron tiles: the next time it is due (ISO 8601 with the zone's offset), from the scheduler's cron math */
  next_refresh_at: Type.Optional(Type.String()),
  /** cron tiles: the cron in words */
  refresh_description: Type.Optional(Type.String()),
  size: Type.Optional(TileSize),
});
export type Tile = Static<typeof Tile>;

export const Dashboard = Type.Object({
  id: Type.String(),
  name: Type.String(),
  tiles: Type.Array(Tile),
  created_at: Iso,
  updated_at: Iso,
});
export type Dashboard = Static<typeof Dashboard>;

export const DashboardListRequest = Type.Object({ owner: WorkspaceOwner });
export const DashboardListReply = Type.Object({ dashboards: Type.Array(Dashboard), stored: Stored });
export type DashboardListReply = Static<typeof DashboardListReply>;
/** create (no id) or replace (id) */
export const DashboardSaveRequest = Type.Object({ owner: WorkspaceOwner, id: Type.Optional(WorkspaceId), dashboard: DashboardInput });
export type DashboardSaveRequest = Static<typeof DashboardSaveRequest>;

// ---- running a tile ---------------------------------------------------------------------------

/** POST /api/tiles/run: a tile's SQL run again, as JSON (typed columns), maybe within days (DateRange). */
export const TileRunBody = Type.Object({
  sql: TextString({ minLength: 1, maxLength: WORKSPACE_LIMITS.sql }),
  date_range: Type.Optional(DateRange),
});
export type TileRunBody = Static<typeof TileRunBody>;

export const TileRunReply = Type.Object({
  intent: Type.Literal('sql'),
  /** the statement as it ran (wrapped by the date filter, LIMIT added or clamped) */
  sql: Type.String(),
  columns: Type.Array(Column),
  rows: Type.Array(Type.Array(Cell)),
  row_count: SqlExecuteReply.properties.row_count,
  truncated: Type.Boolean(),
  masked: SqlExecuteReply.properties.masked,
  /** the filter that applied */
  date_range: Type.Optional(DateRange),
});
export type TileRunReply = Static<typeof TileRunReply>;

/**
 * Scheduled reports (owner: the scheduler actor): the schedules, and the record of each run
 * (executions). Validation (cron, recipients, formats, who may see what) is the actor's; the
 * repository keeps what it is given and refuses only what would break its own rules:
 *
 * - a second schedule of one name for one owner (CONFLICT). The owner is the creator's owner
 *   string (protocol/scope.ts), or for a creator without one (an admin) their user name.
 * - a second execution of one tick: `executions.enqueue` of a schedule and execution_time
 *   already recorded by trigger `cron` or `recovery` answers `undefined` and stores nothing.
 *   That is the exactly-once guard the scheduler's leader relies on (one row per tick, whoever
 *   tries, however often). Run Now (`manual`) is never refused: each request is a run of its own.
 * - an execution of a schedule that is not there: `enqueue` answers `undefined` too.
 *
 * Deleting a schedule deletes its executions. Times are ISO 8601 in UTC with milliseconds; an
 * execution_time given with an offset is the same tick as the same instant in UTC.
 *
 * `fired_through` (not part of the API record) is the newest tick the leader has fired for a
 * schedule: `advance` moves it forward only, so a scheduler that recovers fires what was missed
 * once (or not at all), never once per missed tick, even after retention pruned the records.
 */
import type pg from 'pg';
import { randomUUID } from 'node:crypto';
import { CortadoError } from '../protocol/errors.js';
import type { Execution, Schedule } from '../protocol/schemas/schedules.js';
import { clean, iso, json, optText, type PgDatabase } from './postgres.js';
import { copy, isoTime, page } from './values.js';

export type { Execution, Schedule } from '../protocol/schemas/schedules.js';

/**
 * A schedule as stored: the API record without what is computed on read. `own_timezone` is
 * what is stored (null: none of its own); `timezone`, the zone in effect, is filled in at every
 * read: the own zone, else the repository's `defaultZone()` then.
 */
export type ScheduleRecord = Omit<Schedule, 'next_runs' | 'last_run'> & {
  /** the newest tick fired (advance); absent: none yet */
  fired_through?: string;
};

/** What `create` takes: the record without what the repository assigns (and `timezone`, which follows from `own_timezone`). */
export type NewSchedule = Omit<ScheduleRecord, 'id' | 'created_at' | 'updated_at' | 'fired_through' | 'timezone'> & { id?: string };

/** What `update` changes (the owner, the scope and the times are not changed here); `own_timezone: null` drops the schedule's own zone. */
export type ScheduleChange = Partial<Pick<ScheduleRecord,
  'name' | 'question' | 'tables' | 'cron' | 'own_timezone' | 'email_recipients' | 'format' | 'subject' | 'sql' | 'explanation' | 'enabled' | 'missed'>>;

export interface ScheduleFilter {
  /** only the schedules of this owner key (see ownerKey) */
  ownerKey?: string;
  /** only the enabled ones */
  enabledOnly?: boolean;
}

export interface SchedulesRepository {
  /**
   * The zone of a schedule without its own, asked at every read (so a change of the setting
   * applies to every such schedule at once). UTC until the owner sets it: the scheduler actor
   * sets it to read scheduler.timezone.
   */
  defaultZone: () => string;
  /** in creation order */
  list(filter?: ScheduleFilter): Promise<ScheduleRecord[]>;
  get(id: string): Promise<ScheduleRecord | undefined>;
  /** CONFLICT when the owner has a schedule of this name */
  create(input: NewSchedule): Promise<ScheduleRecord>;
  /** undefined when there is no such schedule; CONFLICT on a name the owner uses for another */
  update(id: string, change: ScheduleChange): Promise<ScheduleRecord | undefined>;
  /** with its executions; false when there is no such schedule */
  delete(id: string): Promise<boolean>;
  /** fired_through := tick when it is later than the stored one (or none); true when it moved */
  advance(id: string, tick: string): Promise<boolean>;
}

export interface NewExecution {
  schedule_id: string;
  schedule_name: string;
  execution_time: string;
  trigger: Execution['trigger'];
}

/** How a run ended (mark done). `drift: true`, once recorded, is kept by a later markDone without it. */
export type ExecutionOutcome = Pick<Execution, 'success' | 'email_sent' | 'email_error' | 'error_message' | 'rows_returned' | 'duration_ms'>
  & Partial<Pick<Execution, 'attachment' | 'finished_at' | 'drift'>>;

/** A run's outcome before its e-mail (markMailing). */
export type MailingOutcome = Pick<Execution, 'success' | 'error_message' | 'rows_returned'> & { duration_ms: number }
  & Partial<Pick<Execution, 'attachment' | 'drift'>>;

export interface ExecutionsRepository {
  /**
   * A queued execution; undefined when this tick (schedule_id + execution_time, triggers cron
   * and recovery) is recorded already, or the schedule is not there. Manual runs always queue.
   */
  enqueue(input: NewExecution): Promise<Execution | undefined>;
  get(id: string): Promise<Execution | undefined>;
  /** queued → running with started_at (default now); undefined when there is none or it is done already */
  markRunning(id: string, at?: string): Promise<Execution | undefined>;
  /** → done with its outcome, finished_at (default now); undefined when there is no such execution */
  markDone(id: string, outcome: ExecutionOutcome): Promise<Execution | undefined>;
  /**
   * A running execution's outcome before its e-mail (success, error_message, rows_returned,
   * duration_ms, attachment; email_sent false): kept while it stays `running`, so a run
   * delivered again after its e-mail went out is finished from it without running the query
   * again (actors/scheduler/run.ts). A running execution with a duration_ms has one. Undefined
   * when the execution is not running.
   */
  markMailing(id: string, outcome: MailingOutcome): Promise<Execution | undefined>;
  /** newest first (execution_time, then creation) */
  list(scheduleId: string, opts?: { limit?: number; offset?: number }): Promise<Execution[]>;
  /** the newest finished execution of each schedule named, by schedule id (for `last_run`) */
  lastDone(scheduleIds: readonly string[]): Promise<Map<string, Execution>>;
  /** how many were deleted */
  deleteFor(scheduleId: string): Promise<number>;
  /**
   * Retention: deletes finished executions older than keepDays (by execution_time, from `now`)
   * and, per schedule, the finished ones beyond the newest maxPerSchedule; queued and running
   * ones are kept. How many were deleted.
   */
  prune(keepDays: number, maxPerSchedule: number, now?: Date): Promise<number>;
  /**
   * Executions still `queued` that were recorded before `before` (nobody took them: a leader
   * stopped between recording a tick and queueing it, then `missed: skip` moved past the tick)
   * → done, failed, with `message` as their error_message and finished_at `now`; from then on
   * `prune` counts them like any finished run (and a worker that takes one late does nothing:
   * it is done). How many.
   */
  failStale(before: Date, message: string, now?: Date): Promise<number>;
}

/** The key names are unique under: the owner string, else `~` and the creator's user name. */
export function ownerKey(s: Pick<ScheduleRecord, 'owner' | 'owner_user'>): string {
  return s.owner ?? `~${s.owner_user}`;
}

const NAME_TAKEN = 'a schedule of this name exists already (names are unique per owner)';
const DAY_MS = 86_400_000;
const HISTORY_DEFAULT = 100;
const HISTORY_MAX = 1000;

const now = (): string => new Date().toISOString();
const tick = (t: string): string => isoTime(t, 'execution_time');

// ---- memory -----------------------------------------------------------------------------------

type StoredSchedule = Omit<ScheduleRecord, 'timezone'>;

export class MemorySchedules implements SchedulesRepository {
  /** a Map keeps insertion order: creation order */
  private readonly byId = new Map<string, StoredSchedule>();
  readonly executions: MemoryExecutions;
  defaultZone: () => string = () => 'UTC';

  constructor() {
    this.executions = new MemoryExecutions((id) => this.byId.has(id));
  }

  private read(s: StoredSchedule): ScheduleRecord {
    return { ...copy(s), timezone: s.own_timezone ?? this.defaultZone() };
  }

  private taken(key: string, name: string, except?: string): boolean {
    for (const s of this.byId.values()) if (s.id !== except && ownerKey(s) === key && s.name === name) return true;
    return false;
  }

  async list(filter: ScheduleFilter = {}): Promise<ScheduleRecord[]> {
    return [...this.byId.values()]
      .filter((s) => (filter.ownerKey === undefined || ownerKey(s) === filter.ownerKey) && (!filter.enabledOnly || s.enabled))
      .map((s) => this.read(s));
  }

  async get(id: string): Promise<ScheduleRecord | undefined> {
    const s = this.byId.get(id);
    return s && this.read(s);
  }

  async create(input: NewSchedule): Promise<ScheduleRecord> {
    const { id, ...rest } = copy(input);
    const at = now();
    const s: StoredSchedule = { ...rest, id: id ?? randomUUID(), created_at: at, updated_at: at };
    if (this.byId.has(s.id)) throw new CortadoError('CONFLICT', 'the record exists already');
    if (this.taken(ownerKey(s), s.name)) throw new CortadoError('CONFLICT', NAME_TAKEN);
    this.byId.set(s.id, s);
    return this.read(s);
  }

  async update(id: string, change: ScheduleChange): Promise<ScheduleRecord | undefined> {
    const s = this.byId.get(id);
    if (!s) return undefined;
    if (change.name !== undefined && this.taken(ownerKey(s), change.name, id)) throw new CortadoError('CONFLICT', NAME_TAKEN);
    for (const [k, v] of Object.entries(copy(change))) if (v !== undefined) (s as Record<string, unknown>)[k] = v;
    s.updated_at = now();
    return this.read(s);
  }

  async delete(id: string): Promise<boolean> {
    if (!this.byId.delete(id)) return false;
    await this.executions.deleteFor(id);
    return true;
  }

  async advance(id: string, at: string): Promise<boolean> {
    const s = this.byId.get(id);
    const t = tick(at);
    if (!s || (s.fired_through !== undefined && s.fired_through >= t)) return false;
    s.fired_through = t;
    return true;
  }
}

export class MemoryExecutions implements ExecutionsRepository {
  private readonly byId = new Map<string, Execution>();
  /** creation order, for ties of execution_time */
  private readonly seq = new Map<string, number>();
  /** when each was recorded (ms), for failStale */
  private readonly created = new Map<string, number>();
  private next = 0;

  constructor(private readonly exists: (scheduleId: string) => boolean) {}

  private newestFirst(a: Execution, b: Execution): number {
    if (a.execution_time !== b.execution_time) return a.execution_time < b.execution_time ? 1 : -1;
    return (this.seq.get(b.id) ?? 0) - (this.seq.get(a.id) ?? 0);
  }

  async enqueue(input: NewExecution): Promise<Execution | undefined> {
    const at = tick(input.execution_time);
    if (!this.exists(input.schedule_id)) return undefined;
    if (input.trigger !== 'manual') {
      for (const e of this.byId.values()) {
        if (e.schedule_id === input.schedule_id && e.execution_time === at && e.trigger !== 'manual') return undefined;
      }
    }
    const e: Execution = {
      id: randomUUID(), schedule_id: input.schedule_id, schedule_name: input.schedule_name, execution_time: at, trigger: input.trigger,
      status: 'queued', success: false, email_sent: false, email_error: null, error_message: null, rows_returned: null, duration_ms: null,
    };
    this.byId.set(e.id, e);
    this.seq.set(e.id, ++this.next);
    this.created.set(e.id, Date.now());
    return copy(e);
  }

  async get(id: string): Promise<Execution | undefined> {
    const e = this.byId.get(id);
    return e && copy(e);
  }

  async markRunning(id: string, at?: string): Promise<Execution | undefined> {
    const e = this.byId.get(id);
    if (!e || e.status === 'done') return undefined;
    e.status = 'running';
    e.started_at = at === undefined ? now() : isoTime(at, 'started_at');
    return copy(e);
  }

  async markDone(id: string, outcome: ExecutionOutcome): Promise<Execution | undefined> {
    const e = this.byId.get(id);
    if (!e) return undefined;
    const { finished_at, attachment, drift, ...rest } = copy(outcome);
    Object.assign(e, rest, { status: 'done', finished_at: finished_at === undefined ? now() : isoTime(finished_at, 'finished_at') });
    if (attachment !== undefined) e.attachment = attachment;
    if (drift === true) e.drift = true;
    return copy(e);
  }

  async markMailing(id: string, outcome: MailingOutcome): Promise<Execution | undefined> {
    const e = this.byId.get(id);
    if (!e || e.status !== 'running') return undefined;
    const { attachment, drift, ...rest } = copy(outcome);
    Object.assign(e, rest, { email_sent: false, email_error: null });
    if (attachment !== undefined) e.attachment = attachment;
    if (drift === true) e.drift = true;
    return copy(e);
  }

  async list(scheduleId: string, opts: { limit?: number; offset?: number } = {}): Promise<Execution[]> {
    const { limit, offset } = page(opts.limit, opts.offset, HISTORY_DEFAULT, HISTORY_MAX);
    return [...this.byId.values()].filter((e) => e.schedule_id === scheduleId).sort((a, b) => this.newestFirst(a, b))
      .slice(offset, offset + limit).map(copy);
  }

  async lastDone(scheduleIds: readonly string[]): Promise<Map<string, Execution>> {
    const want = new Set(scheduleIds);
    const out = new Map<string, Execution>();
    for (const e of this.byId.values()) {
      if (!want.has(e.schedule_id) || e.status !== 'done') continue;
      const best = out.get(e.schedule_id);
      if (!best || this.newestFirst(e, best) < 0) out.set(e.schedule_id, e);
    }
    for (const [k, v] of out) out.set(k, copy(v));
    return out;
  }

  async deleteFor(scheduleId: string): Promise<number> {
    let n = 0;
    for (const e of [...this.byId.values()]) {
      if (e.schedule_id === scheduleId) {
        this.forget(e.id);
        n++;
      }
    }
    return n;
  }

  async prune(keepDays: number, maxPerSchedule: number, at: Date = new Date()): Promise<number> {
    const cutoff = new Date(at.getTime() - keepDays * DAY_MS).toISOString();
    const kept = new Map<string, number>();
    let n = 0;
    for (const e of [...this.byId.values()].sort((a, b) => this.newestFirst(a, b))) {
      if (e.status !== 'done') continue;
      const rank = (kept.get(e.schedule_id) ?? 0) + 1;
      kept.set(e.schedule_id, rank);
      if (e.execution_time < cutoff || rank > maxPerSchedule) {
        this.forget(e.id);
        n++;
      }
    }
    return n;
  }

  async failStale(before: Date, message: string, at: Date = new Date()): Promise<number> {
    let n = 0;
    for (const e of this.byId.values()) {
      if (e.status !== 'queued' || (this.created.get(e.id) ?? 0) >= before.getTime()) continue;
      Object.assign(e, { status: 'done', success: false, error_message: message, finished_at: at.toISOString() });
      n++;
    }
    return n;
  }

  private forget(id: string): void {
    this.byId.delete(id);
    this.seq.delete(id);
    this.created.delete(id);
  }
}

// ---- PostgreSQL (cortado_schedules, cortado_schedule_executions) -------------------------------

interface ScheduleRow {
  id: string;
  name: string;
  question: string;
  tables: string[];
  cron: string;
  timezone: string | null;
  email_recipients: string[];
  format: Schedule['format'];
  subject: string;
  sql: string;
  explanation: string;
  enabled: boolean;
  missed: Schedule['missed'];
  owner_user: string;
  scope: string | null;
  owner: string | null;
  fired_through: Date | null;
  created_at: Date;
  updated_at: Date;
}

const SCHEDULE_COLUMNS = 'id, name, question, tables, cron, timezone, email_recipients, format, subject, sql, explanation, enabled, missed, owner_user, scope, owner, fired_through, created_at, updated_at';

function scheduleFromRow(r: ScheduleRow, defaultZone: () => string): ScheduleRecord {
  const s: ScheduleRecord = {
    id: r.id, name: r.name, question: r.question, tables: r.tables, cron: r.cron, timezone: r.timezone ?? defaultZone(), own_timezone: r.timezone,
    email_recipients: r.email_recipients,
    format: r.format, subject: r.subject, sql: r.sql, explanation: r.explanation, enabled: r.enabled, missed: r.missed, owner_user: r.owner_user,
    created_at: iso(r.created_at), updated_at: iso(r.updated_at),
  };
  if (r.scope !== null) s.scope = r.scope;
  if (r.owner !== null) s.owner = r.owner;
  if (r.fired_through !== null) s.fired_through = iso(r.fired_through);
  return s;
}

interface ExecutionRow {
  id: string;
  schedule_id: string;
  schedule_name: string;
  execution_time: Date;
  trigger: Execution['trigger'];
  status: Execution['status'];
  started_at: Date | null;
  finished_at: Date | null;
  success: boolean;
  email_sent: boolean;
  email_error: string | null;
  error_message: string | null;
  rows_returned: number | null;
  duration_ms: number | null;
  attachment: Execution['attachment'] | null;
  drift: boolean;
}

const EXECUTION_COLUMNS = `id, schedule_id, schedule_name, execution_time, trigger, status, started_at, finished_at, success, email_sent,
  email_error, error_message, rows_returned, duration_ms, attachment, drift`;

function executionFromRow(r: ExecutionRow): Execution {
  const e: Execution = {
    id: r.id, schedule_id: r.schedule_id, schedule_name: r.schedule_name, execution_time: iso(r.execution_time), trigger: r.trigger, status: r.status,
    success: r.success, email_sent: r.email_sent, email_error: r.email_error, error_message: r.error_message,
    rows_returned: r.rows_returned === null ? null : Number(r.rows_returned), duration_ms: r.duration_ms === null ? null : Number(r.duration_ms),
  };
  if (r.started_at !== null) e.started_at = iso(r.started_at);
  if (r.finished_at !== null) e.finished_at = iso(r.finished_at);
  if (r.attachment !== null) e.attachment = r.attachment;
  if (r.drift) e.drift = true;
  return e;
}

/** The SQLSTATE and constraint of a failure, from pg's error or the CortadoError wrapping it. */
function pgFailure(err: unknown): { code?: string; constraint?: string } {
  const e = (err instanceof CortadoError ? err.cause : err) as { code?: unknown; constraint?: unknown } | undefined;
  return {
    ...(typeof e?.code === 'string' ? { code: e.code } : {}),
    ...(typeof e?.constraint === 'string' ? { constraint: e.constraint } : {}),
  };
}

function nameTaken(err: unknown): unknown {
  const f = pgFailure(err);
  return f.code === '23505' && f.constraint === 'cortado_schedules_name_key' ? new CortadoError('CONFLICT', NAME_TAKEN) : err;
}

type Client = Pick<pg.PoolClient, 'query'>;

export class PostgresSchedules implements SchedulesRepository {
  readonly executions: PostgresExecutions;
  defaultZone: () => string = () => 'UTC';

  constructor(private readonly db: PgDatabase) {
    this.executions = new PostgresExecutions(db);
  }

  async list(filter: ScheduleFilter = {}): Promise<ScheduleRecord[]> {
    const r = await this.db.query<ScheduleRow>(
      `SELECT ${SCHEDULE_COLUMNS} FROM cortado_schedules
        WHERE ($1::text IS NULL OR COALESCE(owner, '~' || owner_user) = $1) AND (enabled OR NOT $2) ORDER BY seq`,
      [optText(filter.ownerKey), filter.enabledOnly === true]);
    return r.rows.map((row) => scheduleFromRow(row, this.defaultZone));
  }

  async get(id: string): Promise<ScheduleRecord | undefined> {
    const r = await this.db.query<ScheduleRow>(`SELECT ${SCHEDULE_COLUMNS} FROM cortado_schedules WHERE id = $1`, [id]);
    return r.rows[0] && scheduleFromRow(r.rows[0], this.defaultZone);
  }

  async create(input: NewSchedule): Promise<ScheduleRecord> {
    const at = now();
    try {
      const r = await this.db.tx((c: Client) => c.query<ScheduleRow>(
        `INSERT INTO cortado_schedules
           (id, name, question, tables, cron, timezone, email_recipients, format, subject, sql, explanation, enabled, missed,
            owner_user, scope, owner, created_at, updated_at)
         VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7::jsonb, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $17) RETURNING ${SCHEDULE_COLUMNS}`,
        [input.id ?? randomUUID(), clean(input.name), clean(input.question), json(input.tables), clean(input.cron), input.own_timezone == null ? null : clean(input.own_timezone),
          json(input.email_recipients), input.format, clean(input.subject), clean(input.sql), clean(input.explanation), input.enabled, input.missed,
          clean(input.owner_user), optText(input.scope), optText(input.owner), at]));
      return scheduleFromRow(r.rows[0] as ScheduleRow, this.defaultZone);
    } catch (err) {
      throw nameTaken(err);
    }
  }

  async update(id: string, change: ScheduleChange): Promise<ScheduleRecord | undefined> {
    try {
      const r = await this.db.query<ScheduleRow>(
        `UPDATE cortado_schedules SET
           name = COALESCE($2, name), question = COALESCE($3, question), tables = COALESCE($4::jsonb, tables), cron = COALESCE($5, cron),
           timezone = CASE WHEN $15 THEN $6 ELSE timezone END, email_recipients = COALESCE($7::jsonb, email_recipients), format = COALESCE($8, format),
           subject = COALESCE($9, subject), sql = COALESCE($10, sql), explanation = COALESCE($11, explanation),
           enabled = COALESCE($12, enabled), missed = COALESCE($13, missed), updated_at = $14
         WHERE id = $1 RETURNING ${SCHEDULE_COLUMNS}`,
        [id, optText(change.name), optText(change.question), change.tables === undefined ? null : json(change.tables), optText(change.cron),
          change.own_timezone == null ? null : clean(change.own_timezone), change.email_recipients === undefined ? null : json(change.email_recipients), change.format ?? null,
          optText(change.subject), optText(change.sql), optText(change.explanation), change.enabled ?? null, change.missed ?? null, now(), change.own_timezone !== undefined]);
      return r.rows[0] && scheduleFromRow(r.rows[0], this.defaultZone);
    } catch (err) {
      throw nameTaken(err);
    }
  }

  async delete(id: string): Promise<boolean> {
    // the executions go with it (ON DELETE CASCADE)
    const r = await this.db.query('DELETE FROM cortado_schedules WHERE id = $1', [id]);
    return (r.rowCount ?? 0) > 0;
  }

  async advance(id: string, at: string): Promise<boolean> {
    const r = await this.db.query(
      'UPDATE cortado_schedules SET fired_through = $2 WHERE id = $1 AND (fired_through IS NULL OR fired_through < $2)', [id, tick(at)]);
    return (r.rowCount ?? 0) > 0;
  }
}

export class PostgresExecutions implements ExecutionsRepository {
  constructor(private readonly db: PgDatabase) {}

  async enqueue(input: NewExecution): Promise<Execution | undefined> {
    // the partial unique index makes a second row of one tick impossible; ON CONFLICT answers "no row" for it
    const r = await this.db.query<ExecutionRow>(
      `INSERT INTO cortado_schedule_executions (id, schedule_id, schedule_name, execution_time, trigger, status, created_at)
       SELECT $1, s.id, $3, $4, $5, 'queued', $6 FROM cortado_schedules s WHERE s.id = $2
       ON CONFLICT (schedule_id, execution_time) WHERE trigger <> 'manual' DO NOTHING
       RETURNING ${EXECUTION_COLUMNS}`,
      [randomUUID(), input.schedule_id, clean(input.schedule_name), tick(input.execution_time), input.trigger, now()]).catch((err: unknown) => {
      // the schedule was deleted between the SELECT and the INSERT
      if (pgFailure(err).code === '23503') return { rows: [] as ExecutionRow[] };
      throw err;
    });
    return r.rows[0] && executionFromRow(r.rows[0]);
  }

  async get(id: string): Promise<Execution | undefined> {
    const r = await this.db.query<ExecutionRow>(`SELECT ${EXECUTION_COLUMNS} FROM cortado_schedule_executions WHERE id = $1`, [id]);
    return r.rows[0] && executionFromRow(r.rows[0]);
  }

  async markRunning(id: string, at?: string): Promise<Execution | undefined> {
    const r = await this.db.query<ExecutionRow>(
      `UPDATE cortado_schedule_executions SET status = 'running', started_at = $2 WHERE id = $1 AND status <> 'done' RETURNING ${EXECUTION_COLUMNS}`,
      [id, at === undefined ? now() : isoTime(at, 'started_at')]);
    return r.rows[0] && executionFromRow(r.rows[0]);
  }

  async markDone(id: string, o: ExecutionOutcome): Promise<Execution | undefined> {
    const r = await this.db.query<ExecutionRow>(
      `UPDATE cortado_schedule_executions SET status = 'done', finished_at = $2, success = $3, email_sent = $4, email_error = $5,
         error_message = $6, rows_returned = $7, duration_ms = $8, attachment = COALESCE($9::jsonb, attachment), drift = drift OR $10
       WHERE id = $1 RETURNING ${EXECUTION_COLUMNS}`,
      [id, o.finished_at === undefined ? now() : isoTime(o.finished_at, 'finished_at'), o.success, o.email_sent,
        o.email_error === null ? null : clean(o.email_error), o.error_message === null ? null : clean(o.error_message),
        o.rows_returned, o.duration_ms, o.attachment === undefined ? null : json(o.attachment), o.drift === true]);
    return r.rows[0] && executionFromRow(r.rows[0]);
  }

  async markMailing(id: string, o: MailingOutcome): Promise<Execution | undefined> {
    const r = await this.db.query<ExecutionRow>(
      `UPDATE cortado_schedule_executions SET success = $2, email_sent = false, email_error = NULL, error_message = $3, rows_returned = $4,
         duration_ms = $5, attachment = COALESCE($6::jsonb, attachment), drift = drift OR $7
       WHERE id = $1 AND status = 'running' RETURNING ${EXECUTION_COLUMNS}`,
      [id, o.success, o.error_message === null ? null : clean(o.error_message), o.rows_returned, o.duration_ms,
        o.attachment === undefined ? null : json(o.attachment), o.drift === true]);
    return r.rows[0] && executionFromRow(r.rows[0]);
  }

  async list(scheduleId: string, opts: { limit?: number; offset?: number } = {}): Promise<Execution[]> {
    const { limit, offset } = page(opts.limit, opts.offset, HISTORY_DEFAULT, HISTORY_MAX);
    const r = await this.db.query<ExecutionRow>(
      `SELECT ${EXECUTION_COLUMNS} FROM cortado_schedule_executions WHERE schedule_id = $1
        ORDER BY execution_time DESC, seq DESC LIMIT $2 OFFSET $3`, [scheduleId, limit, offset]);
    return r.rows.map(executionFromRow);
  }

  async lastDone(scheduleIds: readonly string[]): Promise<Map<string, Execution>> {
    const out = new Map<string, Execution>();
    if (scheduleIds.length === 0) return out;
    const r = await this.db.query<ExecutionRow>(
      `SELECT DISTINCT ON (schedule_id) ${EXECUTION_COLUMNS} FROM cortado_schedule_executions
        WHERE schedule_id = ANY($1::text[]) AND status = 'done'
        ORDER BY schedule_id, execution_time DESC, seq DESC`, [scheduleIds]);
    for (const row of r.rows) out.set(row.schedule_id, executionFromRow(row));
    return out;
  }

  async deleteFor(scheduleId: string): Promise<number> {
    const r = await this.db.query('DELETE FROM cortado_schedule_executions WHERE schedule_id = $1', [scheduleId]);
    return r.rowCount ?? 0;
  }

  async prune(keepDays: number, maxPerSchedule: number, at: Date = new Date()): Promise<number> {
    const cutoff = new Date(at.getTime() - keepDays * DAY_MS).toISOString();
    const r = await this.db.query(
      `DELETE FROM cortado_schedule_executions WHERE id IN (
         SELECT id FROM (
           SELECT id, execution_time, row_number() OVER (PARTITION BY schedule_id ORDER BY execution_time DESC, seq DESC) AS rank
             FROM cortado_schedule_executions WHERE status = 'done') ranked
          WHERE execution_time < $1 OR rank > $2)`, [cutoff, maxPerSchedule]);
    return r.rowCount ?? 0;
  }

  async failStale(before: Date, message: string, at: Date = new Date()): Promise<number> {
    const r = await this.db.query(
      `UPDATE cortado_schedule_executions SET status = 'done', success = false, error_message = $2, finished_at = $3
        WHERE status = 'queued' AND created_at < $1`, [before.toISOString(), clean(message), at.toISOString()]);
    return r.rowCount ?? 0;
  }
}

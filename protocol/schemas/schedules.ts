/**
 * Scheduled reports (SPEC.md "Schedule", "Execution record", "Endpoints → Schedules", sections
 * scheduler, email, export): a question pinned to its SQL once, run on a five-field cron in
 * scheduler.timezone (or the schedule's own), its result exported (csv, excel, html) and e-mailed.
 * Owned by the scheduler actor; stored by store/schedules.ts (config_db, or memory).
 *
 * | field              | limit                                                        |
 * |--------------------|--------------------------------------------------------------|
 * | name               | 1–200 characters, a name                                     |
 * | question           | 1–4000 characters of text (as a question)                    |
 * | tables             | at most 200 names (as a question's)                          |
 * | cron               | five fields, 1–200 characters                                |
 * | timezone           | an IANA zone name, 1–64 characters (null: none of its own)   |
 * | email_recipients   | 1..email.max_recipients_per_email addresses of ≤ 320 chars  |
 * | subject            | at most 998 characters, a name; template variables allowed   |
 * | sql                | 1–100,000 characters of text                                  |
 */
import Type, { type Static } from 'typebox';
import { Question, Tables } from './ask.js';
import { NameString, TextString } from './text.js';

export const ScheduleId = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' });
export const ExportFormat = Type.Enum(['csv', 'excel', 'html']);
export type ExportFormat = Static<typeof ExportFormat>;
/** what a run missed while every scheduler was down does on recovery: run once, or nothing */
export const MissedPolicy = Type.Enum(['once', 'skip']);
export type MissedPolicy = Static<typeof MissedPolicy>;
export const Recipients = Type.Array(NameString({ minLength: 3, maxLength: 320 }), { minItems: 1, maxItems: 1000 });

export const Schedule = Type.Object({
  id: ScheduleId,
  name: Type.String(),
  question: Type.String(),
  tables: Type.Array(Type.String()),
  cron: Type.String(),
  /** the zone in effect, the cron is read in: the schedule's own, else scheduler.timezone as it is now */
  timezone: Type.String(),
  /** the schedule's own zone; null: none, it follows scheduler.timezone (a change of the setting applies to it) */
  own_timezone: Type.Union([Type.String(), Type.Null()]),
  email_recipients: Type.Array(Type.String()),
  format: ExportFormat,
  /** the e-mail subject (template variables allowed); '' uses email.templates */
  subject: Type.String(),
  /** the pinned SQL every run executes (no model call per run) */
  sql: Type.String(),
  /** the model's explanation of the SQL when it was generated */
  explanation: Type.String(),
  /** false: paused */
  enabled: Type.Boolean(),
  missed: MissedPolicy,
  /** who created it (the schedule runs in their scope, never with more rights) */
  owner_user: Type.String(),
  /** protocol/scope.ts scope string of the creator's database, when not the configured one */
  scope: Type.Optional(Type.String()),
  /** protocol/scope.ts owner string of the creator */
  owner: Type.Optional(Type.String()),
  created_at: Type.String(),
  updated_at: Type.String(),
  /** the next (up to) five run times, ISO with offset, computed on read */
  next_runs: Type.Array(Type.String()),
  last_run: Type.Optional(Type.Object({ at: Type.String(), success: Type.Boolean() })),
  /**
   * The dates the report covers (actors/scheduler/periods.ts), computed on read; none when the
   * question names no period. relative: the next run's period (the question's "last month");
   * fixed: the one period the question names, every run; frozen: the question asks for a
   * relative period but the SQL names fixed dates (pinned before run-time periods existed, or
   * written so): every run reports the same dates until it is regenerated.
   */
  period: Type.Optional(Type.Object({
    kind: Type.Enum(['relative', 'fixed', 'frozen']),
    /** the question's words for it ("last month") */
    phrase: Type.Optional(Type.String()),
    /** first and last day, YYYY-MM-DD, both inclusive */
    start: Type.Optional(Type.String()),
    last: Type.Optional(Type.String()),
    /** "1 Nov – 30 Nov 2026" */
    label: Type.Optional(Type.String()),
  })),
});
export type Schedule = Static<typeof Schedule>;

export const Execution = Type.Object({
  id: Type.String(),
  schedule_id: ScheduleId,
  schedule_name: Type.String(),
  /** the tick this run is for (cron time; Run Now: when asked) */
  execution_time: Type.String(),
  trigger: Type.Enum(['cron', 'manual', 'recovery']),
  started_at: Type.Optional(Type.String()),
  finished_at: Type.Optional(Type.String()),
  status: Type.Enum(['queued', 'running', 'done']),
  success: Type.Boolean(),
  email_sent: Type.Boolean(),
  email_error: Type.Union([Type.String(), Type.Null()]),
  error_message: Type.Union([Type.String(), Type.Null()]),
  /** true: the run failed because the database changed under the pinned SQL (a table or column gone); regenerating may help */
  drift: Type.Optional(Type.Boolean()),
  rows_returned: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]),
  duration_ms: Type.Union([Type.Number({ minimum: 0 }), Type.Null()]),
  attachment: Type.Optional(Type.Object({ filename: Type.String(), bytes: Type.Integer({ minimum: 0 }), sent: Type.Boolean() })),
});
export type Execution = Static<typeof Execution>;

export const ScheduleInput = Type.Object({
  name: NameString({ minLength: 1, maxLength: 200 }),
  question: Question,
  tables: Type.Optional(Tables),
  cron: NameString({ minLength: 1, maxLength: 200 }),
  /** the schedule's own zone; absent on create, or null: none, it follows scheduler.timezone */
  timezone: Type.Optional(Type.Union([NameString({ minLength: 1, maxLength: 64 }), Type.Null()])),
  email_recipients: Recipients,
  format: ExportFormat,
  subject: Type.Optional(NameString({ maxLength: 998 })),
  /** the creator's own SQL instead of generating it (the guard checks it) */
  sql: Type.Optional(TextString({ minLength: 1, maxLength: 100_000 })),
  enabled: Type.Optional(Type.Boolean()),
  missed: Type.Optional(MissedPolicy),
});
export type ScheduleInput = Static<typeof ScheduleInput>;
export const SchedulePatch = Type.Partial(ScheduleInput);
export type SchedulePatch = Static<typeof SchedulePatch>;

/** Who asks: the edge says (admin sees and edits every schedule; others their own). */
export const Asker = Type.Object({
  user: Type.String({ minLength: 1, maxLength: 256 }),
  admin: Type.Boolean(),
  scope: Type.Optional(Type.String({ maxLength: 256 })),
  owner: Type.Optional(Type.String({ maxLength: 256 })),
});
export type Asker = Static<typeof Asker>;

export const ScheduleCreateRequest = Type.Object({ ...ScheduleInput.properties, asker: Asker });
export type ScheduleCreateRequest = Static<typeof ScheduleCreateRequest>;
export const ScheduleUpdateRequest = Type.Object({ id: ScheduleId, ...SchedulePatch.properties, asker: Asker, regenerate: Type.Optional(Type.Boolean()) });
export type ScheduleUpdateRequest = Static<typeof ScheduleUpdateRequest>;
export const ScheduleIdRequest = Type.Object({ id: ScheduleId, asker: Asker });
export type ScheduleIdRequest = Static<typeof ScheduleIdRequest>;
export const ScheduleListRequest = Type.Object({ asker: Asker });
export const ScheduleListReply = Type.Object({
  schedules: Type.Array(Schedule),
  /** where the schedules are kept: memory (config_db off: lost on restart) or postgresql (S-API, additive) */
  storage: Type.Optional(Type.Enum(['memory', 'postgresql'])),
});
export const ScheduleHistoryRequest = Type.Object({
  id: ScheduleId, asker: Asker,
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000 })),
});
export type ScheduleHistoryRequest = Static<typeof ScheduleHistoryRequest>;
export const ScheduleHistoryReply = Type.Object({ executions: Type.Array(Execution) });
/** Run Now: the execution queued */
export const ScheduleRunReply = Execution;
/** The cron helper: is it valid, what it means, the next five runs. */
export const CronPreviewRequest = Type.Object({ cron: Type.String({ maxLength: 200 }), timezone: Type.Optional(Type.String({ maxLength: 64 })) });
export type CronPreviewRequest = Static<typeof CronPreviewRequest>;
export const CronPreviewReply = Type.Object({ valid: Type.Boolean(), error: Type.Optional(Type.String()), timezone: Type.String(), next_runs: Type.Array(Type.String()), description: Type.Optional(Type.String()) });
export type CronPreviewReply = Static<typeof CronPreviewReply>;

/** One execution to run, on the scheduler's work queue (ScheduleRunQueue). */
export const ScheduleJob = Type.Object({ execution_id: Type.String({ minLength: 1, maxLength: 64 }), schedule_id: ScheduleId });
export type ScheduleJob = Static<typeof ScheduleJob>;

/** A run finished (or failed): the stream and the audit log keep it. */
export const ScheduleRan = Type.Object({
  id: Type.String(),
  ts: Type.String(),
  request_id: Type.String(),
  user: Type.Optional(Type.String()),
  schedule_id: Type.String(),
  schedule_name: Type.String(),
  execution_id: Type.String(),
  execution_time: Type.String(),
  trigger: Type.String(),
  success: Type.Boolean(),
  rows_returned: Type.Optional(Type.Integer({ minimum: 0 })),
  duration_ms: Type.Optional(Type.Number({ minimum: 0 })),
  email_sent: Type.Boolean(),
  email_error: Type.Optional(Type.String()),
  error_message: Type.Optional(Type.String()),
});
export type ScheduleRan = Static<typeof ScheduleRan>;

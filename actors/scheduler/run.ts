/**
 * One scheduled run, as a worker takes it from the queue (queue.ts), and Run Now.
 *
 * A run, in the schedule creator's scope (protocol/scope.ts; never with more rights):
 * 0. the run-time period: a schedule whose question asks for a relative period ("last month")
 *    pins SQL with the parameters {{period_start}}, {{period_end}}, {{period_last}}
 *    (periods.ts); they become the dates of that period at the run's planned time, in the
 *    schedule's zone, before the guard, the drift check or the database see the SQL;
 * 1. drift check: the guard (SqlCheck) names the tables the pinned SQL reads; each must still be
 *    there (SchemaDescribe; the catalog read again once before a table counts as gone), and a
 *    column the SQL names as `table.column` must still be in its table. A database that answers
 *    "no such table / column" when the SQL runs is the same drift. Either fails the run with a
 *    message that says what changed and offers regeneration.
 * 2. the pinned SQL runs with timeout_ms = scheduler.job_timeout_seconds (the executor cancels
 *    it on the database), at most export.max_rows rows, masked as any answer, written as the
 *    schedule's format (csv, excel, html) and stored in the exports bucket: sql.export does the
 *    three (actors/executor/export.ts), rows going from the database to the file page by page;
 * 3. the outcome so far kept on the execution (markMailing: it stays running), then the e-mail
 *    (mail-template.ts: email.templates, the schedule's subject) through the mailer (MailSend,
 *    idempotency_key = the execution id: one e-mail per execution, however often it is asked
 *    for), the stored report attached (csv, excel) or embedded (html); a failed run e-mails the
 *    failure template;
 * 4. the execution record (success, email_sent, email_error, error_message, rows_returned,
 *    duration_ms, the attachment) and the event `schedule.ran`.
 * A run delivered again (its worker died, or recording it failed) whose e-mail reached a mailer
 * is finished from what steps 3 kept and the mailer recorded (MailOutcome): no query, no second
 * e-mail. One whose e-mail never reached a mailer runs again from step 1.
 * Nothing of the rows is logged: counts only.
 */
import { randomUUID } from 'node:crypto';
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import { CortadoError, toCortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/log.js';
import type { ScheduleIdRequest, ScheduleJob } from '../../protocol/schemas/schedules.js';
import { MailOutcome, MailSend, ScheduleRanEvt, SchemaDescribe, SchemaTables, SqlCheck, SqlExport } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import type { Execution, ExecutionOutcome, ExecutionsRepository, ScheduleRecord, SchedulesRepository } from '../../store/schedules.js';
import { reportMail, type ReportFile } from '../lib/mail/template.js';
import type { JobQueue } from './queue.js';
import { ownedSchedule, scheduleCtx } from './schedules.js';
import { bindPeriod, hasPeriodParams, relativePeriod, resolve } from './periods.js';
import { observeScheduledRun } from '../../runtime/metrics.js';

export interface RunDeps {
  bus: Pick<Bus, 'request' | 'publish'>;
  config: Config;
  log: Logger;
  schedules: SchedulesRepository;
  executions: ExecutionsRepository;
  /** the clock a run's time is read from (tests inject one) */
  now: () => number;
}

/** Database answers that mean the SQL names something no longer there (PostgreSQL sqlstate, MySQL errno, Trino). */
const GONE_SQLSTATES = new Set(['42P01', '42703', '3F000', '42S02', '42S22']);
const GONE_ERRNOS = new Set([1146, 1054, 1049]);
const GONE_NAMES = new Set(['TABLE_NOT_FOUND', 'COLUMN_NOT_FOUND', 'SCHEMA_NOT_FOUND', 'MISSING_TABLE', 'MISSING_COLUMN_NAME']);

/** How the drift message ends: what the owner can do about it. */
const REGENERATE = 'Regenerate the schedule\'s SQL from its question (edit the schedule with "regenerate", or PUT /api/schedules/{id} with {"regenerate": true}), or edit the SQL.';

/** How every drift message starts; the execution records `drift: true` for it (the page offers regeneration then). */
const DRIFT = 'The database changed since this report\'s SQL was written';

/** A run that cannot go on: its message is the execution's error_message and the failure e-mail's. */
class RunFailure extends Error {}

function drift(what: string): RunFailure {
  return new RunFailure(`${DRIFT}: ${what}. ${REGENERATE}`);
}

function unquote(name: string): string {
  return name.split('.').map((p) => p.replace(/^["`\[]|["`\]]$/g, '')).join('.').toLowerCase();
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** 1. The tables and the `table.column` names of the pinned SQL, checked against the catalog now. */
export async function checkDrift(sql: string, bus: Pick<Bus, 'request'>, ctx: Ctx): Promise<void> {
  const check = await bus.request(SqlCheck, { sql }, ctx);
  if (!check.ok) throw new RunFailure(`The report's SQL is refused by the SQL guard: ${check.reason ?? 'not a single read-only query'}. ${REGENERATE}`);
  let refreshed = false;
  for (const written of check.tables ?? []) {
    let described;
    try {
      described = await bus.request(SchemaDescribe, { table: written }, ctx);
    } catch (err) {
      if (toCortadoError(err).code !== 'NOT_FOUND') throw err;
      if (!refreshed) {
        // the catalog is cached: read it again once before a table counts as gone
        refreshed = true;
        await bus.request(SchemaTables, { refresh: true }, ctx);
        described = await bus.request(SchemaDescribe, { table: written }, ctx).catch((e: unknown) => {
          if (toCortadoError(e).code === 'NOT_FOUND') return undefined;
          throw e;
        });
      }
      if (!described) throw drift(`the table ${written} no longer exists`);
    }
    const columns = new Set(described.columns.map((c) => c.name.toLowerCase()));
    const short = unquote(written).split('.').pop() as string;
    const ref = new RegExp(`(?:^|[^A-Za-z0-9_."\`])["\`]?${escapeRe(short)}["\`]?\\s*\\.\\s*["\`]?([A-Za-z_][A-Za-z0-9_$]*)["\`]?`, 'gi');
    for (const m of sql.matchAll(ref)) {
      const col = (m[1] as string).toLowerCase();
      if (col !== '*' && !columns.has(col)) throw drift(`the column ${short}.${m[1]} is no longer in the table ${written}`);
    }
  }
}

function isGone(err: CortadoError): boolean {
  if (err.code !== 'DB_QUERY_FAILED') return false;
  const d = err.details ?? {};
  return (typeof d.sqlstate === 'string' && GONE_SQLSTATES.has(d.sqlstate))
    || (typeof d.errno === 'number' && GONE_ERRNOS.has(d.errno))
    || (typeof d.error_name === 'string' && GONE_NAMES.has(d.error_name));
}

/**
 * The query timeout ceiling the executor applies (the provider's `timeout`, else
 * `query.timeout`), in seconds: a job timeout above it is capped to it (config/load.ts warns).
 */
export function queryCeilingSeconds(config: Config): number {
  return config.database[config.database.provider].timeout ?? config.query.timeout;
}

/** The timeout that stopped a query, said as the setting that set it. */
export function timeoutMessage(config: Config, appliedMs: number | undefined): string {
  const job = config.scheduler.job_timeout_seconds;
  const ceiling = queryCeilingSeconds(config);
  const applied = appliedMs !== undefined ? appliedMs / 1000 : Math.min(job, ceiling);
  const shown = (sec: number): string => `${Number.isInteger(sec) ? sec : sec.toFixed(1)} s`;
  if (applied >= job) {
    return `The query ran longer than the job timeout (scheduler.job_timeout_seconds: ${job} s) and was cancelled on the database.`;
  }
  const key = config.database[config.database.provider].timeout !== undefined ? `database.${config.database.provider}.timeout` : 'query.timeout';
  if (applied >= ceiling) {
    return `The query ran longer than the query timeout (${key}: ${ceiling} s) and was cancelled on the database. `
      + `scheduler.job_timeout_seconds (${job} s) is over it, and no query runs longer than ${key}.`;
  }
  return `The query ran longer than the time the run had left (${shown(applied)}; scheduler.job_timeout_seconds: ${job} s) and was cancelled on the database.`;
}

/** Why the run failed, for people (no stack, no SQL of others, no values). */
function failureMessage(err: unknown, config: Config): string {
  if (err instanceof RunFailure) return err.message;
  const e = toCortadoError(err);
  if (e.code === 'DB_TIMEOUT' && e.details?.reason !== 'max_workers') {
    const applied = e.details?.timeout_ms;
    return timeoutMessage(config, typeof applied === 'number' && applied > 0 ? applied : undefined);
  }
  if (isGone(e)) return drift(e.message).message;
  if (e.code === 'SQL_REJECTED') return `The report's SQL is refused by the SQL guard: ${e.message}. ${REGENERATE}`;
  return e.message;
}

/** 0. The SQL this run executes: the pinned SQL with its period parameters bound to the run's period. */
export function runSql(s: Pick<ScheduleRecord, 'sql' | 'question' | 'timezone'>, at: Date): string {
  if (!hasPeriodParams(s.sql)) return s.sql;
  const rule = relativePeriod(s.question);
  if (!rule) {
    throw new RunFailure(`The report's SQL takes its dates from the question's period ({{period_start}} and the like), but the question names no period such as "last month". ${REGENERATE}`);
  }
  return bindPeriod(s.sql, resolve(rule, at, s.timezone));
}

interface Report {
  file: ReportFile;
  rows: number;
  truncated: boolean;
}

/**
 * 2: the pinned SQL run in the creator's scope by the executor's sql.export: guarded, with the
 * job timeout, masked page by page, written as the schedule's format and stored in the exports
 * Object Store bucket, where the mailer (any process) reads it.
 */
async function produce(s: ScheduleRecord, deps: RunDeps, ctx: Ctx, at: Date): Promise<Report> {
  const { bus, config } = deps;
  const sql = runSql(s, at);
  await checkDrift(sql, bus, ctx);
  let out;
  try {
    out = await bus.request(SqlExport, {
      sql, format: s.format, title: s.name, at: at.toISOString(), timezone: s.timezone,
      timeout_ms: config.scheduler.job_timeout_seconds * 1000,
    }, ctx);
  } catch (err) {
    const e = toCortadoError(err);
    if (!isGone(e)) throw e;
    // the catalog was older than the database: read it again, and say what is gone when it can
    await bus.request(SchemaTables, { refresh: true }, ctx).catch(() => undefined);
    await checkDrift(sql, bus, ctx);
    throw drift(e.message);
  }
  const file: ReportFile = { filename: out.filename, content_type: out.content_type, bytes: out.bytes, too_large: out.too_large };
  if (out.object !== undefined) file.object = out.object;
  return { file, rows: out.rows, truncated: out.truncated };
}

type Mailed = Pick<Execution, 'email_sent' | 'email_error'>;

const MAIL_OFF = 'e-mail is off (email.enabled is false): the e-mail was logged, not sent';

/** The e-mail of a run (one per execution: its id is the idempotency key); what the execution records of it. */
async function mail(s: ScheduleRecord, e: Execution, deps: RunDeps, ctx: Ctx, at: Date, report: Report | undefined, error: string | undefined): Promise<Mailed> {
  const { config } = deps;
  const m = reportMail({
    templates: config.email.templates, schedule_name: s.name, subject: s.subject, format: s.format, at, timeZone: s.timezone,
    ...(error !== undefined ? { error } : {}),
    ...(report ? { file: report.file, rows: report.rows } : {}),
    max_file_size_mb: config.export.max_file_size_mb,
    ...(report?.truncated ? { truncated_at: config.export.max_rows } : {}),
  });
  try {
    const sent = await deps.bus.request(MailSend, {
      to: s.email_recipients, subject: m.subject, text: m.text,
      ...(m.html !== undefined ? { html: m.html } : {}),
      ...(m.html_object !== undefined ? { html_object: m.html_object } : {}),
      ...(m.attachment ? { attachments: [m.attachment] } : {}),
      idempotency_key: e.id,
    }, ctx);
    return sent.sent ? { email_sent: true, email_error: null } : { email_sent: false, email_error: MAIL_OFF };
  } catch (err) {
    // another worker's copy of this run is sending its e-mail right now: no outcome yet, so the run comes again
    if (toCortadoError(err).details?.delivery === 'in_progress') throw err;
    return { email_sent: false, email_error: toCortadoError(err).message };
  }
}

/**
 * A run delivered again that got as far as its e-mail (markMailing kept its outcome): the
 * mailer's record of the e-mail (MailOutcome, the execution id) finishes the execution, with
 * no query and no second e-mail. False when no mailer ever took the e-mail: run it again. A
 * send still under way answers TIMEOUT: thrown, so the run comes again a little later.
 */
async function finishMailed(s: ScheduleRecord, e: Execution, deps: RunDeps): Promise<boolean> {
  const ctx: Ctx = scheduleCtx(s, { requestId: e.id, user: s.owner_user });
  const o = await deps.bus.request(MailOutcome, { idempotency_key: e.id }, ctx);
  if (o.state === 'none') return false;
  const mailed: Mailed = o.state === 'sent' ? { email_sent: true, email_error: null }
    : o.state === 'logged' ? { email_sent: false, email_error: MAIL_OFF }
      : { email_sent: false, email_error: o.error ?? 'the e-mail was not sent' };
  deps.log.warn({ rid: e.id, schedule: s.id, email: o.state }, 'a run delivered again after its e-mail: recorded from what it kept and the mailer recorded, not run or e-mailed again');
  await finish(s, e, {
    success: e.success,
    ...mailed,
    error_message: e.error_message,
    rows_returned: e.rows_returned,
    duration_ms: e.duration_ms,
    finished_at: new Date(deps.now()).toISOString(),
    ...(e.attachment ? { attachment: { ...e.attachment, sent: mailed.email_sent && e.attachment.sent } } : {}),
    ...(e.drift ? { drift: true } : {}),
  }, deps, ctx, undefined);
  return true;
}

/**
 * Run one execution taken from the queue: nothing when it is done already (a duplicate) or its
 * schedule is gone; again when a worker died running it (delivered more than once).
 */
export async function runJob(job: ScheduleJob, deliveries: number, deps: RunDeps): Promise<void> {
  const { schedules, executions, log } = deps;
  const e = await executions.get(job.execution_id);
  if (!e || e.status === 'done') return;
  if (e.status === 'running' && deliveries <= 1) return;
  const s = await schedules.get(job.schedule_id);
  if (!s) return;
  // it got as far as its e-mail (markMailing): finished from the mailer's record when a mailer took it
  if (e.status === 'running' && e.duration_ms !== null && await finishMailed(s, e, deps)) return;
  if (e.status === 'running') log.warn({ execution: e.id, schedule: s.id }, 'a run whose worker stopped before it finished: run again');
  const running = await executions.markRunning(e.id, new Date(deps.now()).toISOString());
  if (!running) return;
  await runExecution(s, running, deps);
}

/** Steps 1–4 for one execution (marked running). */
export async function runExecution(s: ScheduleRecord, e: Execution, deps: RunDeps): Promise<Execution | undefined> {
  const { config, log } = deps;
  const started = performance.now();
  const at = new Date(e.trigger === 'manual' ? deps.now() : Date.parse(e.execution_time));
  // how long after its planned time a cron (or recovery) run starts: /metrics (runtime/metrics.ts)
  const lateness = e.trigger === 'manual' ? undefined : (deps.now() - at.getTime()) / 1000;
  const ctx: Ctx = scheduleCtx(s, {
    requestId: e.id, user: s.owner_user,
    // the query's own timeout cancels it; the rest of the run (masking, the file, the e-mail) gets a little more
    deadline: Date.now() + config.scheduler.job_timeout_seconds * 1000 + 120_000,
  });
  let report: Report | undefined;
  let error: string | undefined;
  try {
    report = await produce(s, deps, ctx, at);
  } catch (err) {
    error = failureMessage(err, config);
    if (!(err instanceof RunFailure) && toCortadoError(err).httpStatus >= 500 && toCortadoError(err).code !== 'DB_TIMEOUT') {
      log.warn({ rid: e.id, schedule: s.id, code: toCortadoError(err).code }, 'a scheduled run failed');
    }
  }
  // what the run came to, kept before the e-mail: a redelivery after the e-mail finishes from it
  const attachment = report ? { filename: report.file.filename, bytes: report.file.bytes, sent: report.file.too_large !== true } : undefined;
  const ran = { success: error === undefined, error_message: error ?? null, rows_returned: report ? report.rows : null, ...(error?.startsWith(DRIFT) ? { drift: true } : {}) };
  const kept = await deps.executions.markMailing(e.id, { ...ran, duration_ms: Math.round(performance.now() - started), ...(attachment ? { attachment } : {}) });
  if (!kept) {
    log.info({ rid: e.id, schedule: s.id }, 'a scheduled run no longer running (its schedule deleted, or another worker finished it): not e-mailed');
    return undefined;
  }
  const mailed = await mail(s, e, deps, ctx, at, report, error);
  return finish(s, e, {
    ...ran,
    ...mailed,
    duration_ms: Math.round(performance.now() - started),
    finished_at: new Date(deps.now()).toISOString(),
    ...(attachment ? { attachment: { ...attachment, sent: mailed.email_sent && attachment.sent } } : {}),
  }, deps, ctx, Number.isFinite(lateness) ? lateness : undefined);
}

/** Step 4: the execution recorded done, counted, logged, and `schedule.ran`. */
async function finish(s: ScheduleRecord, e: Execution, outcome: ExecutionOutcome, deps: RunDeps, ctx: Ctx, lateness: number | undefined): Promise<Execution | undefined> {
  const { log } = deps;
  const done = await deps.executions.markDone(e.id, outcome);
  observeScheduledRun(outcome.success, e.trigger, lateness);
  log.info({
    rid: e.id, schedule: s.id, trigger: e.trigger, success: outcome.success, rows: outcome.rows_returned, ms: outcome.duration_ms, email_sent: outcome.email_sent,
  }, 'scheduled run done');
  deps.bus.publish(ScheduleRanEvt, {
    id: randomUUID(), ts: new Date().toISOString(), request_id: e.id, user: s.owner_user,
    schedule_id: s.id, schedule_name: s.name, execution_id: e.id, execution_time: e.execution_time, trigger: e.trigger,
    success: outcome.success, ...(outcome.rows_returned !== null ? { rows_returned: outcome.rows_returned } : {}),
    ...(outcome.duration_ms !== null ? { duration_ms: outcome.duration_ms } : {}),
    email_sent: outcome.email_sent, ...(outcome.email_error ? { email_error: outcome.email_error } : {}),
    ...(outcome.error_message ? { error_message: outcome.error_message } : {}),
  }, ctx);
  return done;
}

/** Run Now: the asker's (or, for an admin, any) schedule, queued at once through the same queue. */
export async function runNow(input: ScheduleIdRequest, deps: RunDeps & { queue: JobQueue }, ctx: Ctx): Promise<Execution> {
  const s = await ownedSchedule(input.id, input.asker, { store: { kind: 'postgresql', schedules: deps.schedules, executions: deps.executions } });
  const e = await deps.executions.enqueue({ schedule_id: s.id, schedule_name: s.name, execution_time: new Date(deps.now()).toISOString(), trigger: 'manual' });
  if (!e) throw new CortadoError('NOT_FOUND', `there is no schedule ${input.id}`);
  await deps.queue.put({ execution_id: e.id, schedule_id: s.id }, { requestId: e.id, user: s.owner_user });
  deps.log.info({ rid: ctx.requestId, schedule: s.id, execution: e.id, by: input.asker.user }, 'run now: queued');
  return e;
}

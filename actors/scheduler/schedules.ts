/**
 * The schedules' requests (create, list, get, update, delete, history, the cron helper): plain
 * functions over (input, deps, ctx), served by actor.ts. Runs (Run Now, the leader, workers)
 * are run.ts's; they find a schedule the asker may touch with `ownedSchedule`.
 *
 * Who may do what (the edge says who asks: `asker`): an admin sees and changes every schedule;
 * anyone else only the schedules whose owner string is theirs. Somebody else's schedule is
 * NOT_FOUND, as if it were not there. A caller without an owner string who is no admin has none.
 * A plugins.auth session (owner `s:<session id>`) may not create one (FORBIDDEN, saying what to
 * do): the schedule would be lost to its creator at the next sign-in and every run would fail
 * once the session ended. An API token minted from the session (POST /auth/tokens) keeps the
 * session's database login for as long as the token is asked to last: a schedule created with
 * it is the token's and runs in the token's scope, never with more rights.
 *
 * Checks, each answered with the field it is about:
 * - name: not blank; unique per owner (CONFLICT).
 * - cron: five fields (cron.ts); timezone: an IANA zone, the schedule's own. Without one (absent
 *   on create, or null) the schedule has none and follows scheduler.timezone as it is at each
 *   read and run (the repository's defaultZone): a change of the setting moves its runs. The
 *   record says both: `own_timezone` (or null) and `timezone`, the zone in effect. On update a
 *   `timezone` equal to the zone in effect of a schedule without its own counts as not sent (a
 *   record read and sent back keeps following the setting).
 * - email_recipients: each an e-mail address (one message naming every bad one), repeats
 *   dropped; more than email.max_recipients_per_email is LIMIT_EXCEEDED (a configured limit,
 *   422), not VALIDATION_FAILED.
 * - format: one of export.formats.
 *
 * Pinned SQL: on create, and on update with `regenerate` or a changed question or tables, the
 * question becomes SQL once — SchemaContext, then SqlGenerate in mode 'sql' — in the scope of
 * the schedule's creator, and the guard (SqlCheck) must accept it; it is saved with the
 * model's explanation and every run executes it (no model call per run). A body's own `sql` is
 * checked by the guard the same way and used instead (its explanation is then empty); on update
 * an `sql` equal to the saved one counts as not sent (a form sends it back). What the guard
 * refuses is SQL_REJECTED with its reason, and nothing is saved.
 */
import type { Static } from 'typebox';
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import { CortadoError, toCortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/log.js';
import type * as S from '../../protocol/schemas/schedules.js';
import { bindPeriod, fixedPeriod, hasPeriodParams, periodLabel, pinPeriod, relativePeriod, resolve, type Period } from './periods.js';
import { parseScope } from '../../protocol/scope.js';
import { SchemaContext, SqlCheck, SqlGenerate } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import type { ScheduleChange, ScheduleRecord, Storage } from '../../store/index.js';
import { canonicalZone, describeCron, isoInZone, nextRuns, parseCron, validZone } from '../lib/jobs/cron.js';

export interface SchedulesDeps {
  bus: Pick<Bus, 'request'>;
  config: Pick<Config, 'scheduler' | 'email' | 'export'>;
  log: Logger;
  store: Pick<Storage, 'kind' | 'schedules' | 'executions'>;
  /** the clock next_runs are counted from (tests); the real one otherwise */
  now?: () => Date;
}

/** how many next run times a schedule and the cron helper show */
export const NEXT_RUNS = 5;

type ListRequest = Static<typeof S.ScheduleListRequest>;

const clock = (deps: SchedulesDeps): Date => deps.now?.() ?? new Date();

function invalid(field: string, message: string): CortadoError {
  return new CortadoError('VALIDATION_FAILED', `${field}: ${message}`, { field });
}

// ---- who may see what ---------------------------------------------------------------------------

function mayTouch(s: Pick<ScheduleRecord, 'owner'>, asker: S.Asker): boolean {
  return asker.admin || (asker.owner !== undefined && s.owner === asker.owner);
}

/** The schedule, when the asker may see it; NOT_FOUND otherwise (somebody else's is not there for them). */
export async function ownedSchedule(id: string, asker: S.Asker, deps: Pick<SchedulesDeps, 'store'>): Promise<ScheduleRecord> {
  const s = await deps.store.schedules.get(id);
  if (!s || !mayTouch(s, asker)) throw new CortadoError('NOT_FOUND', `there is no schedule ${id}`);
  return s;
}

/** The bus context work for a schedule runs in: its creator's scope, never the asker's (an admin editing it). */
export function scheduleCtx(s: Pick<ScheduleRecord, 'scope'>, ctx: Ctx): Ctx {
  const { scope: _asker, ...rest } = ctx;
  return { ...rest, ...(s.scope ? { scope: s.scope } : {}) };
}

// ---- the record as the API shows it -------------------------------------------------------------

/** The next run times (none while paused), ISO with the zone's offset. */
export function upcoming(s: Pick<ScheduleRecord, 'cron' | 'timezone' | 'enabled'>, at: Date, count = NEXT_RUNS): string[] {
  if (!s.enabled) return [];
  try {
    const c = parseCron(s.cron, s.timezone);
    return nextRuns(c, at, count).map((d) => isoInZone(d, s.timezone));
  } catch {
    return []; // a stored cron this version no longer reads runs never; it shows none
  }
}

/**
 * What the page says of the dates a report covers: the next run's period for a relative
 * question whose SQL takes it at run time (now's when no run is coming), the one period a
 * fixed question names, or that the SQL froze a relative question's dates.
 */
export function periodView(s: Pick<ScheduleRecord, 'question' | 'sql' | 'timezone'>, nextRun: string | undefined, now: Date): S.Schedule['period'] {
  const rule = relativePeriod(s.question);
  const shown = (p: Period): { start: string; last: string; label: string } => ({ start: p.start, last: p.last, label: periodLabel(p) });
  if (rule) {
    if (!hasPeriodParams(s.sql)) return { kind: 'frozen', phrase: rule.phrase };
    return { kind: 'relative', phrase: rule.phrase, ...shown(resolve(rule, nextRun ? new Date(nextRun) : now, s.timezone)) };
  }
  const fixed = fixedPeriod(s.question);
  return fixed ? { kind: 'fixed', ...shown(fixed) } : undefined;
}

async function views(records: ScheduleRecord[], deps: SchedulesDeps): Promise<S.Schedule[]> {
  const last = await deps.store.executions.lastDone(records.map((s) => s.id));
  const at = clock(deps);
  return records.map((r) => {
    const { fired_through: _f, ...s } = r;
    const e = last.get(s.id);
    const next = upcoming(s, at);
    const period = periodView(s, next[0], at);
    return { ...s, next_runs: next, ...(e ? { last_run: { at: e.execution_time, success: e.success } } : {}), ...(period ? { period } : {}) };
  });
}

async function view(record: ScheduleRecord, deps: SchedulesDeps): Promise<S.Schedule> {
  return (await views([record], deps))[0] as S.Schedule;
}

// ---- checks ---------------------------------------------------------------------------------------

const LOCAL = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

/** Whether a string is an e-mail address a report can go to: local@domain.tld, nothing else (no name, no brackets, no spaces). */
export function isEmailAddress(s: string): boolean {
  const at = s.lastIndexOf('@');
  if (at < 1 || s.length > 320) return false;
  const local = s.slice(0, at);
  const labels = s.slice(at + 1).split('.');
  return local.length <= 64 && LOCAL.test(local) && labels.length >= 2 && labels.every((l) => LABEL.test(l)) && !/^[0-9]+$/.test(labels.at(-1) ?? '');
}

/** The recipients checked and without repeats (case-insensitive), or VALIDATION_FAILED naming each bad one / LIMIT_EXCEEDED. */
export function checkRecipients(list: readonly string[], max: number): string[] {
  const bad = list.filter((r) => !isEmailAddress(r.trim()));
  if (bad.length > 0) {
    const shown = bad.slice(0, 10).map((r) => `"${r.slice(0, 80)}" is not an e-mail address`);
    if (bad.length > 10) shown.push(`and ${bad.length - 10} more`);
    throw new CortadoError('VALIDATION_FAILED', `email_recipients: ${shown.join('; ')}`, { field: 'email_recipients', invalid: bad.slice(0, 100) });
  }
  const seen = new Set<string>();
  const out: string[] = [];
  for (const r of list.map((x) => x.trim())) {
    if (seen.has(r.toLowerCase())) continue;
    seen.add(r.toLowerCase());
    out.push(r);
  }
  if (out.length > max) {
    throw new CortadoError('LIMIT_EXCEEDED', `email_recipients: at most ${max} recipients per e-mail (email.max_recipients_per_email); this schedule has ${out.length}`, { field: 'email_recipients', limit: max });
  }
  return out;
}

function checkFormat(format: S.ExportFormat, deps: SchedulesDeps): void {
  const enabled = deps.config.export.formats;
  if (!enabled.includes(format)) throw invalid('format', `${format} is not offered here (export.formats: ${enabled.join(', ') || 'none'})`);
}

function notBlank(field: string, value: string): string {
  if (value.trim() === '') throw invalid(field, 'must not be blank');
  return value;
}

/** The zone a schedule reads its cron in: its own, else scheduler.timezone (which must be one). */
function zoneFor(own: string | null | undefined, deps: SchedulesDeps): string {
  if (own != null) return own;
  const zone = deps.config.scheduler.timezone;
  if (!validZone(zone)) throw new CortadoError('CONFIG_INVALID', 'scheduler.timezone is not an IANA time zone; send a timezone with the schedule or fix the setting');
  return zone;
}

// ---- pinned SQL -------------------------------------------------------------------------------------

interface Pinned {
  sql: string;
  explanation: string;
}

/** The guard's verdict on SQL a schedule would run (in its creator's scope); SQL_REJECTED with the reason. */
async function guarded(sql: string, what: string, deps: SchedulesDeps, ctx: Ctx): Promise<void> {
  const check = await deps.bus.request(SqlCheck, { sql }, ctx);
  if (!check.ok) throw new CortadoError('SQL_REJECTED', `${what}: the SQL guard refuses it: ${check.reason ?? 'not a single read-only statement'}`, { field: 'sql' });
}

/**
 * What the model is told of a relative period when the SQL is pinned: the literals to write for
 * it today, which pinPeriod then turns into the run-time parameters (a CURRENT_DATE expression
 * would read the database server's clock and zone, not the schedule's).
 */
function periodNote(phrase: string, p: Period): string {
  return `This SQL is pinned for a scheduled report that runs again and again. For "${phrase}" filter on the dates `
    + `from '${p.start}' (inclusive) to '${p.end}' (exclusive), written as those exact date literals (for example DATE '${p.start}'), `
    + 'never as CURRENT_DATE or NOW() arithmetic: the scheduler replaces these two dates with the right ones at each run.';
}

/**
 * The question turned into SQL once (the schema context, then the model in mode 'sql'), checked
 * by the guard; a relative period's date literals then become the run-time parameters.
 */
async function generate(question: string, tables: readonly string[], zone: string, deps: SchedulesDeps, ctx: Ctx): Promise<Pinned> {
  const context = await deps.bus.request(SchemaContext, { question, ...(tables.length ? { tables: [...tables] } : {}) }, ctx);
  const rule = relativePeriod(question);
  const today = rule ? resolve(rule, clock(deps), zone) : undefined;
  const business = rule && today ? [context.business_context, periodNote(rule.phrase, today)].filter(Boolean).join('\n\n') : context.business_context;
  const gen = await deps.bus.request(SqlGenerate, {
    question, history: [], schema_text: context.schema_text, business_context: business, dialect: context.dialect, mode: 'sql',
  }, ctx);
  const sql = gen.sql?.trim();
  if (gen.intent !== 'sql' || !sql) {
    const said = gen.message ? ` (the model said: ${gen.message.slice(0, 300)})` : '';
    throw invalid('question', `the model wrote no SQL for it${said}; ask for data, or send your own sql`);
  }
  // a model that wrote the parameters itself: the guard reads them as today's dates
  await guarded(today && hasPeriodParams(sql) ? bindPeriod(sql, today) : sql, 'the SQL generated for the question', deps, ctx);
  return { sql: today ? pinPeriod(sql, today).sql : sql, explanation: gen.explanation ?? '' };
}

/**
 * The creator's own SQL, guard-checked as a run would run it: run-time period parameters
 * (periods.ts) need a question that names a relative period, and are bound to today's for the guard.
 */
async function own(sql: string, question: string, zone: string, deps: SchedulesDeps, ctx: Ctx): Promise<Pinned> {
  const text = notBlank('sql', sql).trim();
  let seen = text;
  if (hasPeriodParams(text)) {
    const rule = relativePeriod(question);
    if (!rule) throw invalid('sql', 'it uses {{period_start}}, {{period_end}} or {{period_last}}, but the question names no relative period (such as "last month" or "the last 7 days") for them to follow');
    seen = bindPeriod(text, resolve(rule, clock(deps), zone));
  }
  await guarded(seen, 'sql', deps, ctx);
  return { sql: text, explanation: '' };
}

// ---- the requests -------------------------------------------------------------------------------------

const SESSION_OWNER = 'a schedule cannot belong to a sign-in session: it would be lost at your next sign-in and stop running when the session ends. '
  + 'Create an API token from this session (POST /auth/tokens, or the Tokens tab) and create the schedule with that token: it runs with your database login for as long as the token lasts. '
  + '(An automatic session cannot mint tokens: sign in with POST /auth/login first.)';

export async function create(input: S.ScheduleCreateRequest, deps: SchedulesDeps, ctx: Ctx): Promise<S.Schedule> {
  const { asker } = input;
  if (!asker.admin && asker.owner === undefined) throw new CortadoError('FORBIDDEN', 'sign in to create schedules');
  if (!asker.admin && asker.owner !== undefined && parseScope(asker.owner)?.kind === 'session') throw new CortadoError('FORBIDDEN', SESSION_OWNER);
  const name = notBlank('name', input.name).trim();
  const question = notBlank('question', input.question);
  const zone = zoneFor(input.timezone, deps);
  parseCron(input.cron, zone);
  const recipients = checkRecipients(input.email_recipients, deps.config.email.max_recipients_per_email);
  checkFormat(input.format, deps);
  const tables = input.tables ?? [];
  const key = { ...(asker.owner !== undefined ? { owner: asker.owner } : {}), owner_user: asker.user };
  const taken = (await deps.store.schedules.list({ ownerKey: asker.owner ?? `~${asker.user}` })).some((s) => s.name === name);
  if (taken) throw new CortadoError('CONFLICT', `you have a schedule named "${name}" already`);

  const runCtx = scheduleCtx({ ...(asker.scope ? { scope: asker.scope } : {}) }, ctx);
  const pinned = input.sql !== undefined ? await own(input.sql, question, zone, deps, runCtx) : await generate(question, tables, zone, deps, runCtx);
  const record = await deps.store.schedules.create({
    name, question, tables, cron: input.cron.trim().replace(/\s+/g, ' '), own_timezone: input.timezone != null ? canonicalZone(input.timezone) : null,
    email_recipients: recipients,
    format: input.format, subject: input.subject ?? '', sql: pinned.sql, explanation: pinned.explanation,
    enabled: input.enabled ?? true, missed: input.missed ?? 'once', ...key, ...(asker.scope ? { scope: asker.scope } : {}),
  });
  deps.log.info({ rid: ctx.requestId, schedule: record.id, by: asker.user, own_sql: input.sql !== undefined }, 'schedule created');
  return view(record, deps);
}

export async function list(input: ListRequest, deps: SchedulesDeps): Promise<{ schedules: S.Schedule[]; storage: 'memory' | 'postgresql' }> {
  const { asker } = input;
  const storage = deps.store.kind;
  if (!asker.admin && asker.owner === undefined) return { schedules: [], storage };
  const records = await deps.store.schedules.list(asker.admin ? {} : { ownerKey: asker.owner as string });
  return { schedules: await views(records, deps), storage };
}

export async function get(input: S.ScheduleIdRequest, deps: SchedulesDeps): Promise<S.Schedule> {
  return view(await ownedSchedule(input.id, input.asker, deps), deps);
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

export async function update(input: S.ScheduleUpdateRequest, deps: SchedulesDeps, ctx: Ctx): Promise<S.Schedule> {
  const { id, asker, regenerate, ...patch } = input;
  const current = await ownedSchedule(id, asker, deps);
  // the SQL a body sends back unchanged (a form that shows it) is no SQL of the creator's own
  const ownSql = patch.sql !== undefined && patch.sql.trim() !== current.sql ? patch.sql : undefined;
  if (regenerate && ownSql !== undefined) throw invalid('sql', 'send your own sql or regenerate, not both');
  const change: ScheduleChange = {};
  if (patch.name !== undefined) change.name = notBlank('name', patch.name).trim();
  if (patch.question !== undefined) change.question = notBlank('question', patch.question);
  if (patch.tables !== undefined) change.tables = patch.tables;
  // null drops the own zone; the zone in effect sent back for a schedule without its own is no change
  const given = patch.timezone === undefined || (current.own_timezone === null && patch.timezone !== null && canonicalZone(patch.timezone) === current.timezone)
    ? undefined : patch.timezone;
  if (patch.cron !== undefined || given !== undefined) {
    parseCron(patch.cron ?? current.cron, given === undefined ? current.timezone : zoneFor(given, deps));
    if (patch.cron !== undefined) change.cron = patch.cron.trim().replace(/\s+/g, ' ');
    if (given !== undefined) change.own_timezone = given === null ? null : canonicalZone(given);
  }
  if (patch.email_recipients !== undefined) change.email_recipients = checkRecipients(patch.email_recipients, deps.config.email.max_recipients_per_email);
  if (patch.format !== undefined) {
    checkFormat(patch.format, deps);
    change.format = patch.format;
  }
  if (patch.subject !== undefined) change.subject = patch.subject;
  if (patch.enabled !== undefined) change.enabled = patch.enabled;
  if (patch.missed !== undefined) change.missed = patch.missed;
  if (change.name !== undefined && change.name !== current.name) {
    const taken = (await deps.store.schedules.list({ ownerKey: current.owner ?? `~${current.owner_user}` })).some((s) => s.id !== id && s.name === change.name);
    if (taken) throw new CortadoError('CONFLICT', `a schedule named "${change.name}" exists already for this owner`);
  }

  const question = change.question ?? current.question;
  const tables = change.tables ?? current.tables;
  const reworded = question !== current.question || !sameList(tables, current.tables);
  const runCtx = scheduleCtx(current, ctx);
  const zone = change.own_timezone === undefined ? current.timezone : zoneFor(change.own_timezone, deps);
  let pinned: Pinned | undefined;
  if (ownSql !== undefined) {
    pinned = await own(ownSql, question, zone, deps, runCtx);
  } else if (regenerate || reworded) {
    pinned = await generate(question, tables, zone, deps, runCtx);
  }
  if (pinned) Object.assign(change, pinned);

  const record = await deps.store.schedules.update(id, change);
  if (!record) throw new CortadoError('NOT_FOUND', `there is no schedule ${id}`);
  deps.log.info({ rid: ctx.requestId, schedule: id, by: asker.user, fields: Object.keys(change), sql: pinned ? (ownSql !== undefined ? 'own' : 'generated') : 'kept' }, 'schedule updated');
  return view(record, deps);
}

export async function remove(input: S.ScheduleIdRequest, deps: SchedulesDeps, ctx: Ctx): Promise<{ ok: boolean }> {
  await ownedSchedule(input.id, input.asker, deps);
  if (!(await deps.store.schedules.delete(input.id))) throw new CortadoError('NOT_FOUND', `there is no schedule ${input.id}`);
  deps.log.info({ rid: ctx.requestId, schedule: input.id, by: input.asker.user }, 'schedule deleted with its history');
  return { ok: true };
}

export async function history(input: S.ScheduleHistoryRequest, deps: SchedulesDeps): Promise<{ executions: S.Execution[] }> {
  await ownedSchedule(input.id, input.asker, deps);
  const executions = await deps.store.executions.list(input.id, {
    ...(input.limit !== undefined ? { limit: input.limit } : {}), ...(input.offset !== undefined ? { offset: input.offset } : {}),
  });
  return { executions };
}

/** The cron helper: valid or why not, in words, and the next five runs. Bad input is an answer here, not an error. */
export function cronPreview(input: S.CronPreviewRequest, deps: SchedulesDeps): S.CronPreviewReply {
  const zone = input.timezone ?? deps.config.scheduler.timezone;
  try {
    const c = parseCron(input.cron, zone);
    const shown = canonicalZone(zone);
    return {
      valid: true, timezone: shown, description: describeCron({ ...c, timezone: shown }),
      next_runs: nextRuns(c, clock(deps), NEXT_RUNS).map((d) => isoInZone(d, zone)),
    };
  } catch (err) {
    const e = toCortadoError(err);
    if (e.code !== 'VALIDATION_FAILED') throw e;
    return { valid: false, error: e.message, timezone: zone, next_runs: [] };
  }
}

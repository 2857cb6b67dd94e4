/**
 * The alarms' requests and their evaluation: plain functions over (input, deps, ctx), wired to
 * the bus by actor.ts; the cron and the lease that call `evaluate` are evaluator.ts's.
 *
 * One evaluation of one alarm for one cron tick:
 * 1. claim: the tick is written on the alarm (`evaluated_through`) by a read-modify-write of the
 *    store; whoever finds it claimed already (another process, a leader that took over) does
 *    nothing. So each tick is evaluated once, whatever number of processes try.
 * 2. measure: OpsRun for the condition's operation with insights off (conditions.ts).
 * 3. apply: the state change is decided inside a second read-modify-write (ok → firing,
 *    firing → ok, or the same state with the new value); a failed measurement changes no state and
 *    is recorded once in the history (again only when the reason changes).
 * 4. notify, on a change only: e-mail to the alarm's recipients (MailSend) and the event
 *    `alarm.fired` / `alarm.resolved`; with the issue tracker on, a firing opens one issue (kept
 *    on the alarm as `issue_key`; while it is open no other is opened) and a resolve comments on
 *    it. A tracker that fails (401, 403, 400, refused, timeout) is written in the alarm's history
 *    and the log, never with the token, once per firing and reason (noteOnce); the e-mail goes
 *    anyway. A firing alarm whose issue could not be opened tries again at its next evaluation.
 */
import { randomUUID } from 'node:crypto';
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import { CortadoError, toCortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/log.js';
import * as A from '../../protocol/schemas/alarms.js';
import type { OpsRunReply, OpsRunRequest } from '../../protocol/schemas/ops.js';
import { AlarmFiredEvt, AlarmResolvedEvt, MailSend, OpsRun, OpsStatus } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import type { AlarmRecord, AlarmsRepository } from '../../store/index.js';
import { canonicalZone, parseCron, validZone } from '../lib/jobs/cron.js';
import { checkCondition, DEFAULT_SATURATION_MINUTES, describeThreshold, describeValue, measure, OPERATION, opsRequest, type Measurement } from './conditions.js';
import type { Tracker } from './tracker.js';
import { alarmsProblems, isEmailAddress } from '../../config/ops-checks.js';

export interface AlarmsDeps {
  bus: Pick<Bus, 'request' | 'publish'>;
  config: Config;
  log: Logger;
  store: AlarmsRepository;
  tracker: Tracker;
  /** the clock (tests inject one) */
  now: () => number;
  /**
   * where measurements come from: the ops actor over the bus (OpsRun) unless given; handle-level
   * tests give a plain function returning the ops actor's replies as data
   */
  ops?: (request: OpsRunRequest, ctx: Ctx) => Promise<OpsRunReply>;
}

/** an alarm created without a cron is evaluated every 15 minutes */
export const DEFAULT_CRON = '*/15 * * * *';

const iso = (deps: Pick<AlarmsDeps, 'now'>): string => new Date(deps.now()).toISOString();

function invalid(field: string, message: string): CortadoError {
  return new CortadoError('VALIDATION_FAILED', `${field}: ${message}`, { field });
}

/** Newest first, at most ALARM_HISTORY_MAX. */
export function withEntry(history: readonly A.AlarmHistoryEntry[], e: A.AlarmHistoryEntry): A.AlarmHistoryEntry[] {
  return [{ ...e, message: e.message.slice(0, 2000) }, ...history].slice(0, A.ALARM_HISTORY_MAX);
}

export function view(r: AlarmRecord): A.Alarm {
  const { evaluated_through: _t, ...alarm } = r;
  return alarm;
}

/** Refused with a clear answer while alarms.enabled is false. */
export function mustBeOn(config: Pick<Config, 'alarms'>): void {
  if (!config.alarms.enabled) throw new CortadoError('NOT_FOUND', 'alarms are off (alarms.enabled is false in config/config.yaml)');
}

// ---- checks -------------------------------------------------------------------------------

export { isEmailAddress };

export function checkRecipients(field: string, list: readonly string[], max: number): string[] {
  const bad = list.filter((r) => !isEmailAddress(r.trim()));
  if (bad.length) throw invalid(field, bad.slice(0, 10).map((r) => `"${r.slice(0, 80)}" is not an e-mail address`).join('; '));
  const out = [...new Map(list.map((r) => [r.trim().toLowerCase(), r.trim()])).values()];
  if (out.length > max) throw new CortadoError('LIMIT_EXCEEDED', `${field}: at most ${max} recipients per e-mail (email.max_recipients_per_email); ${out.length} given`, { field, limit: max });
  return out;
}

/** What start-up refuses: alarms on with settings that cannot work (the same checks refuse them at run time: config/ops-checks.ts). */
export function configProblems(config: Config): string[] {
  return alarmsProblems(config);
}

function zoneFor(given: string | undefined, config: Config): string {
  const zone = given ?? config.scheduler.timezone;
  if (!validZone(zone)) throw invalid('timezone', `"${zone.slice(0, 64)}" is not an IANA time zone${given === undefined ? ' (scheduler.timezone)' : ''}`);
  return canonicalZone(zone);
}

function notBlank(field: string, v: string): string {
  if (v.trim() === '') throw invalid(field, 'must not be blank');
  return v.trim();
}

/** The operation the condition needs must be one the console runs (when the ops actor can say). */
async function checkOperation(c: A.AlarmCondition, deps: AlarmsDeps, ctx: Ctx): Promise<void> {
  const op = OPERATION[c.kind];
  let status;
  try {
    status = await deps.bus.request(OpsStatus, {}, ctx);
  } catch (err) {
    deps.log.warn({ err: toCortadoError(err).message }, 'the ops actor does not answer: the alarm is saved unchecked (its evaluations will say)');
    return;
  }
  if (!status.enabled) throw invalid('condition', `the operations console is off (${status.reason ?? 'ops_agent.enabled is false'}): nothing can evaluate ${c.kind}`);
  if (!status.allowed_operations.includes(op)) throw invalid('condition', `${c.kind} needs the operation ${op}, which ops_agent.config.allowed_operations does not allow`);
  if (c.project_id && !status.targets.some((t) => t.project_id === c.project_id || t.label === c.project_id)) {
    throw invalid('condition', `project_id ${c.project_id} is none of the console's targets (${status.targets.map((t) => t.project_id ?? t.label).join(', ') || 'none'})`);
  }
  if (c.kind === 'saturation_above') {
    const scope = status.targets.filter((t) => !c.project_id || t.project_id === c.project_id || t.label === c.project_id);
    if (scope.length > 0 && !scope.some((t) => SERIES_ENGINES.has(t.engine))) {
      const why = scope.map((t) => `${t.label}: ${NO_SERIES[t.engine] ?? 'no slot use over time'}`).join('; ');
      throw invalid('condition', `saturation_above needs slot use over time, which only BigQuery targets have (${why}): it could never hold for ${c.minutes ?? DEFAULT_SATURATION_MINUTES} min there`);
    }
  }
}

/** Engines whose saturation is a series over the window (saturation_above can measure a duration there). */
const SERIES_ENGINES = new Set(['bigquery']);
const NO_SERIES: Record<string, string> = {
  postgresql: 'one sample of the active backends now, no history',
  trino: 'no capacity nor history of concurrency',
  mysql: 'none of the data',
};

async function found(id: string, deps: AlarmsDeps): Promise<AlarmRecord> {
  const r = await deps.store.get(id);
  if (!r) throw new CortadoError('NOT_FOUND', `there is no alarm ${id}`);
  return r;
}

// ---- the requests ---------------------------------------------------------------------------

export async function list(deps: AlarmsDeps): Promise<A.AlarmListReply> {
  mustBeOn(deps.config);
  const [records, state] = await Promise.all([deps.store.list(), deps.store.state()]);
  const j = deps.config.jira;
  return {
    alarms: records.map(view),
    storage: { kind: deps.store.kind, ...(deps.store.path ? { path: deps.store.path } : {}), state },
    default_recipients: deps.config.alarms.default_recipients,
    tracker: { enabled: j.enabled, url: j.url, project_key: j.project_key, issue_type: j.issue_type, priority: j.priority, api_token_set: j.api_token !== '' },
  };
}

export async function get(input: A.AlarmIdRequest, deps: AlarmsDeps): Promise<A.Alarm> {
  mustBeOn(deps.config);
  return view(await found(input.id, deps));
}

export async function create(input: A.AlarmCreateRequest, deps: AlarmsDeps, ctx: Ctx): Promise<A.Alarm> {
  mustBeOn(deps.config);
  const { config } = deps;
  const name = notBlank('name', input.name);
  const condition = checkCondition(input.condition);
  const cron = (input.cron ?? DEFAULT_CRON).trim().replace(/\s+/g, ' ');
  const timezone = zoneFor(input.timezone, config);
  parseCron(cron, timezone);
  const recipients = checkRecipients('recipients', input.recipients ?? config.alarms.default_recipients, config.email.max_recipients_per_email);
  if (recipients.length === 0 && !config.jira.enabled) throw invalid('recipients', 'nobody would hear of it: give recipients, or set alarms.default_recipients (or turn the issue tracker on)');
  await checkOperation(condition, deps, ctx);
  const at = iso(deps);
  const record: AlarmRecord = {
    id: randomUUID().replace(/-/g, '').slice(0, 20), name, condition, cron, timezone, recipients, enabled: input.enabled ?? true,
    state: 'ok', value: null, history: [], created_at: at, updated_at: at, updated_by: input.by,
  };
  const saved = await deps.store.create(record);
  deps.log.info({ rid: ctx.requestId, alarm: saved.id, kind: condition.kind, by: input.by }, 'alarm created');
  return view(saved);
}

export async function update(input: A.AlarmUpdateRequest, deps: AlarmsDeps, ctx: Ctx): Promise<A.Alarm> {
  mustBeOn(deps.config);
  const { config } = deps;
  const cur = await found(input.id, deps);
  const change: Partial<AlarmRecord> = {};
  if (input.name !== undefined) change.name = notBlank('name', input.name);
  if (input.condition !== undefined) {
    change.condition = checkCondition(input.condition);
    await checkOperation(change.condition, deps, ctx);
  }
  if (input.cron !== undefined || input.timezone !== undefined) {
    const timezone = input.timezone !== undefined ? zoneFor(input.timezone, config) : cur.timezone;
    const cron = (input.cron ?? cur.cron).trim().replace(/\s+/g, ' ');
    parseCron(cron, timezone);
    Object.assign(change, { cron, timezone });
  }
  if (input.recipients !== undefined) change.recipients = checkRecipients('recipients', input.recipients, config.email.max_recipients_per_email);
  if (input.enabled !== undefined) change.enabled = input.enabled;
  const at = iso(deps);
  const out = await deps.store.mutate(input.id, (r) => {
    const next: AlarmRecord = { ...r, ...change, updated_at: at, updated_by: input.by };
    // a new condition is a new question: what the old one measured no longer says anything
    if (change.condition && JSON.stringify(change.condition) !== JSON.stringify(r.condition)) next.value = null;
    return next;
  });
  if (!out) throw new CortadoError('NOT_FOUND', `there is no alarm ${input.id}`);
  deps.log.info({ rid: ctx.requestId, alarm: input.id, fields: Object.keys(change), by: input.by }, 'alarm updated');
  return view(out.record);
}

export async function remove(input: { id: string; by: string }, deps: AlarmsDeps, ctx: Ctx): Promise<{ ok: boolean }> {
  mustBeOn(deps.config);
  if (!(await deps.store.delete(input.id))) throw new CortadoError('NOT_FOUND', `there is no alarm ${input.id}`);
  deps.log.info({ rid: ctx.requestId, alarm: input.id, by: input.by }, 'alarm deleted');
  return { ok: true };
}

export async function history(input: { id: string; limit?: number }, deps: AlarmsDeps): Promise<{ history: A.AlarmHistoryEntry[] }> {
  mustBeOn(deps.config);
  const r = await found(input.id, deps);
  return { history: r.history.slice(0, input.limit ?? A.ALARM_HISTORY_MAX) };
}

/** What the tracker part of a notification is, in words (the test's `issue`). */
function trackerPlan(cur: Pick<AlarmRecord, 'issue_key' | 'issue_open'> | undefined, would: A.AlarmTestReply['would'], config: Config): string {
  if (!config.jira.enabled) return 'the issue tracker is off (jira.enabled is false)';
  if (would === 'fire' || would === 'stay_firing') {
    return cur?.issue_open && cur.issue_key ? `issue ${cur.issue_key} is open already: no new issue` : `an issue would be opened in ${config.jira.project_key} (${config.jira.issue_type}, ${config.jira.priority})`;
  }
  if (would === 'resolve') return cur?.issue_open && cur.issue_key ? `a comment would be added to ${cur.issue_key}` : 'no open issue to comment on';
  return 'nothing';
}

/** Evaluate now without notifying nor changing anything: the value and what an evaluation would do. */
export async function test(input: A.AlarmTestRequest, deps: AlarmsDeps, ctx: Ctx): Promise<A.AlarmTestReply> {
  mustBeOn(deps.config);
  const cur = input.id !== undefined ? await found(input.id, deps) : undefined;
  const given = input.condition ?? cur?.condition;
  if (!given) throw invalid('condition', 'test a saved alarm (its id) or send a condition');
  const condition = checkCondition(given);
  const m = await measureNow(condition, deps, ctx);
  const state = cur?.state ?? 'ok';
  const would: A.AlarmTestReply['would'] = m.error ? 'nothing' : m.fires ? (state === 'firing' ? 'stay_firing' : 'fire') : (state === 'firing' ? 'resolve' : 'stay_ok');
  const recipients = cur?.recipients ?? deps.config.alarms.default_recipients;
  return {
    value: m.value, threshold: condition.threshold, fires: m.fires, message: m.message, ...(m.error ? { error: m.error } : {}),
    targets: m.targets, would, recipients: would === 'fire' || would === 'resolve' ? recipients : [], issue: trackerPlan(cur, would, deps.config),
  };
}

/** OpsRun for the condition; a failure of the whole request is a measurement error, never a throw. */
export async function measureNow(condition: A.AlarmCondition, deps: Pick<AlarmsDeps, 'bus' | 'ops'>, ctx: Ctx): Promise<Measurement> {
  try {
    const req = opsRequest(condition);
    const reply = deps.ops ? await deps.ops(req, ctx) : await deps.bus.request(OpsRun, req, ctx);
    return measure(condition, reply);
  } catch (err) {
    const e = toCortadoError(err);
    const error = `the operations console could not run ${OPERATION[condition.kind]}: ${e.code}: ${e.message}`;
    return { value: null, fires: false, message: error, error, targets: [] };
  }
}

// ---- evaluation -------------------------------------------------------------------------------

export type Change = 'fired' | 'resolved' | 'still_firing' | 'still_ok' | 'error';

/** The alarm after a measurement at `at`, and what changed. Pure. */
export function transition(cur: AlarmRecord, m: Measurement, at: string): { next: AlarmRecord; change: Change } {
  const base: AlarmRecord = { ...cur, last_evaluated: at };
  if (m.error !== undefined || m.value === null) {
    const error = m.error ?? 'nothing measured';
    const next: AlarmRecord = { ...base, last_error: error };
    if (cur.last_error !== error) next.history = withEntry(cur.history, { at, state: 'error', value: null, message: `Could not evaluate: ${error}` });
    return { next, change: 'error' };
  }
  const { last_error: _e, ...clean } = base;
  const next: AlarmRecord = { ...clean, value: m.value };
  if (m.fires) {
    next.last_seen = at;
    if (cur.state === 'firing') return { next, change: 'still_firing' };
    return { next: { ...next, state: 'firing', first_seen: at, history: withEntry(cur.history, { at, state: 'firing', value: m.value, message: m.message }) }, change: 'fired' };
  }
  if (cur.state === 'firing') return { next: { ...next, state: 'ok', history: withEntry(cur.history, { at, state: 'ok', value: m.value, message: `Resolved: ${m.message}` }) }, change: 'resolved' };
  return { next, change: 'still_ok' };
}

function mailText(a: AlarmRecord, m: Measurement, firing: boolean): { subject: string; text: string } {
  const where = a.condition.project_id ?? 'every target';
  const value = m.value === null ? 'unknown' : describeValue(a.condition.kind, m.value);
  const lines = [
    firing ? `The alarm "${a.name}" is FIRING.` : `The alarm "${a.name}" has RESOLVED.`,
    '',
    `Condition: ${a.condition.kind} — ${describeThreshold(a.condition)}`,
    `Value: ${value}`,
    `Project: ${where}`,
    `At: ${a.last_evaluated ?? ''} (evaluated on the cron "${a.cron}", ${a.timezone})`,
    ...(a.first_seen ? [`Firing since: ${a.first_seen}`] : []),
    ...(a.issue_key ? [`Issue: ${a.issue_key}`] : []),
    '',
    m.message,
  ];
  return { subject: `[Cortado alarm] ${firing ? 'FIRING' : 'RESOLVED'}: ${a.name} (${value})`, text: lines.join('\n') };
}

function issueLines(a: AlarmRecord, m: Measurement): string[] {
  return [
    `Cortado alarm "${a.name}" fired at ${a.first_seen ?? a.last_evaluated ?? ''}.`,
    `Condition: ${a.condition.kind} — ${describeThreshold(a.condition)}.`,
    `Value: ${m.value === null ? 'unknown' : describeValue(a.condition.kind, m.value)}. Project: ${a.condition.project_id ?? 'every target'}.`,
    m.message,
    `Alarm id ${a.id}; this issue gets a comment when the alarm resolves.`,
  ];
}

/** Add one history line (a notification's outcome) to the alarm as stored now. */
async function note(id: string, deps: AlarmsDeps, entry: Omit<A.AlarmHistoryEntry, 'at'>, patch: Partial<AlarmRecord> = {}): Promise<void> {
  const at = iso(deps);
  await deps.store.mutate(id, (r) => ({ ...r, ...patch, history: withEntry(r.history, { at, ...entry }) })).catch((err: unknown) => {
    deps.log.error({ alarm: id, err: toCortadoError(err).message }, 'cannot record a notification on the alarm');
  });
}

async function sendMail(a: AlarmRecord, m: Measurement, firing: boolean, deps: AlarmsDeps, ctx: Ctx): Promise<void> {
  if (a.recipients.length === 0) return;
  const mail = mailText(a, m, firing);
  try {
    const r = await deps.bus.request(MailSend, { to: a.recipients, subject: mail.subject, text: mail.text }, ctx);
    if (!r.sent) deps.log.info({ alarm: a.id }, 'alarm e-mail logged, not sent (email.enabled is false)');
  } catch (err) {
    const e = toCortadoError(err);
    deps.log.warn({ alarm: a.id, code: e.code, err: e.message }, 'the alarm e-mail failed');
    await note(a.id, deps, { state: a.state, value: a.value, message: `The e-mail to ${a.recipients.join(', ')} failed: ${e.message}` });
  }
}

/**
 * Add a history line unless this firing (since first_seen) has it already: a tracker that keeps
 * failing the same way while the alarm fires is one line, not one per evaluation pushing the
 * firing itself out of the history. Whether it was added.
 */
async function noteOnce(id: string, deps: AlarmsDeps, entry: Omit<A.AlarmHistoryEntry, 'at'>): Promise<boolean> {
  const at = iso(deps);
  const out = await deps.store.mutate(id, (r) => {
    const since = r.first_seen ?? '';
    if (r.history.some((h) => h.message === entry.message && h.at >= since)) return null;
    return { ...r, history: withEntry(r.history, { at, ...entry }) };
  }).catch((err: unknown) => {
    deps.log.error({ alarm: id, err: toCortadoError(err).message }, 'cannot record a notification on the alarm');
    return undefined;
  });
  return out?.changed ?? false;
}

async function openIssue(a: AlarmRecord, m: Measurement, deps: AlarmsDeps): Promise<AlarmRecord> {
  try {
    const key = await deps.tracker.createIssue(`Cortado alarm: ${a.name} — ${m.value === null ? '' : describeValue(a.condition.kind, m.value)}`, issueLines(a, m));
    deps.log.info({ alarm: a.id, issue: key }, 'issue opened for the alarm');
    await note(a.id, deps, { state: 'firing', value: a.value, message: `Issue ${key} opened`, issue_key: key }, { issue_key: key, issue_open: true });
    return { ...a, issue_key: key, issue_open: true };
  } catch (err) {
    const e = toCortadoError(err);
    const added = await noteOnce(a.id, deps, { state: 'firing', value: a.value, message: `The issue tracker failed: ${e.message}` });
    // logged like the history: once per firing and reason (the next tries at debug)
    deps.log[added ? 'warn' : 'debug']({ alarm: a.id, code: e.code, err: e.message }, 'the issue tracker failed: no issue opened (tried again at the next evaluation)');
    return a;
  }
}

async function commentIssue(a: AlarmRecord, m: Measurement, deps: AlarmsDeps): Promise<void> {
  const key = a.issue_key as string;
  try {
    await deps.tracker.comment(key, [`Cortado alarm "${a.name}" resolved at ${a.last_evaluated ?? ''}.`, m.message]);
    await note(a.id, deps, { state: 'ok', value: a.value, message: `Comment added to ${key}`, issue_key: key }, { issue_open: false });
  } catch (err) {
    const e = toCortadoError(err);
    deps.log.warn({ alarm: a.id, issue: key, code: e.code, err: e.message }, 'the issue tracker failed: no comment added');
    await note(a.id, deps, { state: 'ok', value: a.value, message: `The issue tracker failed to comment on ${key}: ${e.message}` });
  }
}

function publish(a: AlarmRecord, m: Measurement, firing: boolean, deps: AlarmsDeps, ctx: Ctx): void {
  const payload: A.AlarmChanged = {
    id: randomUUID(), ts: iso(deps), request_id: ctx.requestId, alarm_id: a.id, name: a.name, kind: a.condition.kind, value: m.value,
    threshold: a.condition.threshold, ...(a.condition.project_id ? { project_id: a.condition.project_id } : {}), message: m.message.slice(0, 2000),
    ...(a.issue_key ? { issue_key: a.issue_key } : {}),
  };
  deps.bus.publish(firing ? AlarmFiredEvt : AlarmResolvedEvt, payload, ctx);
}

/**
 * Evaluate one alarm for one tick (ISO time): claimed once across every process, measured, its
 * state changed, and on a change notified. What happened, or 'claimed_elsewhere'.
 */
export async function evaluate(id: string, tick: string, deps: AlarmsDeps): Promise<Change | 'claimed_elsewhere' | 'gone'> {
  const claim = await deps.store.mutate(id, (r) => (!r.enabled || (r.evaluated_through !== undefined && r.evaluated_through >= tick) ? null : { ...r, evaluated_through: tick }));
  if (!claim) return 'gone';
  if (!claim.changed) return 'claimed_elsewhere';
  const ctx: Ctx = { requestId: randomUUID(), user: 'alarms' };
  const m = await measureNow(claim.record.condition, deps, ctx);
  const at = iso(deps);
  let change = 'error' as Change;
  const applied = await deps.store.mutate(id, (r) => {
    const t = transition(r, m, at);
    change = t.change;
    return t.next;
  });
  if (!applied) return 'gone';
  let a = applied.record;
  const log = { rid: ctx.requestId, alarm: id, tick, value: m.value };
  if (change === 'fired') {
    deps.log.warn({ ...log, change }, `alarm firing: ${a.name}`);
    if (deps.config.jira.enabled && !a.issue_open) a = await openIssue(a, m, deps);
    await sendMail(a, m, true, deps, ctx);
    publish(a, m, true, deps, ctx);
  } else if (change === 'resolved') {
    deps.log.info({ ...log, change }, `alarm resolved: ${a.name}`);
    if (deps.config.jira.enabled && a.issue_open && a.issue_key) await commentIssue(a, m, deps);
    await sendMail(a, m, false, deps, ctx);
    publish(a, m, false, deps, ctx);
  } else if (change === 'still_firing' && deps.config.jira.enabled && !a.issue_open) {
    await openIssue(a, m, deps);
  } else if (change === 'error') {
    deps.log.warn({ ...log, err: m.error }, 'an alarm could not be evaluated');
  } else {
    deps.log.debug({ ...log, change }, 'alarm evaluated');
  }
  return change;
}

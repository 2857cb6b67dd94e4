/**
 * The alarms (actors/alarms): conditions measured from the ops actor's replies, state changes,
 * notifications only on a change — e-mail through the real mailer to a real SMTP server, issues
 * in a Jira REST v3 stand-in over real HTTP (create, no duplicate, comment, a 401) — and one
 * evaluation per tick when two processes evaluate the same file.
 *
 * The ops actor's replies are plain data here (AlarmsDeps.ops, a handle-level dependency):
 * test/e2e/alarms.test.ts runs the same path with the real ops actor over the BigQuery stand-in.
 */
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import type { OpsProjectResult, OpsRunReply, OpsRunRequest } from '../../protocol/schemas/ops.js';
import { AlarmFiredEvt, AlarmResolvedEvt } from '../../protocol/subjects.js';
import { FileAlarms } from '../../store/index.js';
import { startMailer } from '../../actors/mailer/actor.js';
import { checkCondition, measure, opsRequest, trailingSaturation } from '../../actors/alarms/conditions.js';
import { Evaluator } from '../../actors/alarms/evaluator.js';
import * as h from '../../actors/alarms/handle.js';
import { jiraTracker } from '../../actors/alarms/tracker.js';
import { startAlarms } from '../../actors/alarms/actor.js';
import { checkOverride } from '../../config/runtime.js';
import { testConfig, setConfig } from '../helpers/config.js';
import { adfText, startFakeJira } from '../helpers/fake-jira.js';
import { startNats } from '../helpers/nats.js';
import { until } from '../helpers/processes.js';
import { startSmtp } from '../helpers/smtp.js';

const TOKEN = 'jira-tok-Xq93-never-logged';
const nats = await startNats();
const smtp = await startSmtp({ tls: 'none' });
const jira = await startFakeJira({ email: 'bot@example.org', apiToken: TOKEN, projectKey: 'OPS' });
const dir = mkdtempSync(path.join(tmpdir(), 'cortado-alarms-actor-'));

const lines: string[] = [];
const sink = new Writable({ write(chunk: Buffer, _e, cb) { lines.push(...chunk.toString().split('\n').filter(Boolean)); cb(); } });
const log = createLogger({ svc: 'test', level: 'debug', destination: sink });
const quiet = createLogger({ svc: 'mailer', level: 'silent' });

const config = testConfig({
  natsUrl: nats.url,
  extra: {
    email: { enabled: true, smtp: { host: smtp.host, port: smtp.port, from_email: 'cortado@example.org', use_tls: false, use_ssl: false } },
    alarms: { enabled: true, storage_path: path.join(dir, 'alarms.json'), default_recipients: ['oncall@example.org'] },
    jira: { enabled: true, url: jira.url, email: 'bot@example.org', api_token: TOKEN, project_key: 'OPS', issue_type: 'Incident', priority: 'Highest' },
  },
});

const mailerBus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'mailer', log: quiet, strict: true });
const mailer = await startMailer({ bus: mailerBus, config, log: quiet });
const busA = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'alarms-a', log, strict: true });
const busB = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'alarms-b', log, strict: true });
const events: Array<{ subject: string; data: any }> = [];
const un1 = busB.listen(AlarmFiredEvt.subject, (data) => events.push({ subject: 'fired', data }));
const un2 = busB.listen(AlarmResolvedEvt.subject, (data) => events.push({ subject: 'resolved', data }));
await busB.flush();

t.teardown(async () => {
  un1();
  un2();
  await mailerBus.stopServing(['mailer'], Date.now() + 2_000);
  await mailer.stop();
  await Promise.all([mailerBus.close(), busA.close(), busB.close()]);
  await smtp.close();
  await jira.close();
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
});

// ---- the ops actor's replies, as data ---------------------------------------------------------

const target = (p: string) => ({ engine: 'bigquery' as const, project_id: p, region: 'US', label: `${p}/US` });

function forecastOf(p: string, forecast: number, daily: Array<[string, number]> = [['2026-06-01', 3]]): OpsProjectResult {
  return {
    target: target(p), duration_ms: 3,
    result: {
      kind: 'forecast_monthly_costs', month: '2026-06', days_in_month: 30, days_observed: 10, month_to_date_usd: forecast / 3, forecast_usd: forecast,
      low_usd: forecast * 0.8, high_usd: forecast * 1.2, method: 'mean of 10 complete days × 30 days; 80 % interval from the daily spread',
      daily: daily.map(([date, cost]) => ({ date, bytes_billed: cost * 1e12 / 6.25, cost_usd: cost })),
    },
  };
}
const failed = (p: string, message: string): OpsProjectResult => ({ target: target(p), duration_ms: 1, error: { code: 'FORBIDDEN', message } });
const reply = (op: OpsRunReply['operation'], projects: OpsProjectResult[]): OpsRunReply => ({ operation: op, generated_at: new Date().toISOString(), projects, insights: { status: 'off', items: [] } });

t.test('conditions: each kind measured from the ops actor\'s reply', async (t) => {
  const two = reply('forecast_monthly_costs', [forecastOf('p1', 120, [['2026-06-01', 5], ['2026-06-02', 7]]), forecastOf('p2', 30, [['2026-06-02', 4]])]);
  let m = measure({ kind: 'forecast_above', threshold: 100 }, two);
  t.equal(m.value, 150, 'the forecast is summed over the targets');
  t.equal(m.fires, true);
  t.match(m.message, /Forecast for 2026-06: \$150\.00.*above a monthly budget of \$100\.00/);
  t.match(m.message, /mean of 10 complete days/, 'the method and its uncertainty are said');
  m = measure({ kind: 'forecast_above', threshold: 100, project_id: 'p2' }, two);
  t.same([m.value, m.fires], [30, false], 'project_id keeps one target');
  m = measure({ kind: 'forecast_above', threshold: 100, project_id: 'nope' }, two);
  t.equal(m.value, null);
  t.match(m.error, /no target nope among the console's targets \(p1, p2\)/);

  m = measure({ kind: 'daily_cost_above', threshold: 10 }, two);
  t.same([m.value, m.fires], [11, true], 'the newest day, summed over the targets');
  t.match(m.message, /Cost on 2026-06-02: \$11\.00/);

  const partly = reply('forecast_monthly_costs', [forecastOf('p1', 120), failed('p2', 'Access Denied: Project p2')]);
  m = measure({ kind: 'forecast_above', threshold: 100 }, partly);
  t.equal(m.value, 120, 'a failed target does not stop the others');
  t.match(m.message, /Not measured: p2\/US \(FORBIDDEN: Access Denied: Project p2\)/);
  m = measure({ kind: 'forecast_above', threshold: 100 }, reply('forecast_monthly_costs', [failed('p1', 'denied')]));
  t.same([m.value, m.fires], [null, false]);
  t.match(m.error, /every target failed/);

  const pub = reply('find_public_datasets', [{
    target: target('p1'), duration_ms: 1,
    result: { kind: 'find_public_datasets', checked: 4, datasets: [{ dataset_id: 'open_data', entries: [{ role: 'READER', member: 'allUsers' }] }] },
  }]);
  m = measure({ kind: 'public_dataset', threshold: 0 }, pub);
  t.same([m.value, m.fires], [1, true]);
  t.match(m.message, /p1:open_data \(allUsers READER\)/, 'the entry that makes it public');
  t.equal(measure({ kind: 'public_dataset', threshold: 1 }, pub).fires, false, 'one tolerated');

  const pts = (shares: Array<number | null>) => shares.map((s, i) => ({ period_start: new Date(Date.UTC(2026, 5, 1, 12, i * 5)).toISOString(), avg_slots: (s ?? 0) * 100, share: s }));
  t.same(trailingSaturation(pts([0.9, 0.5, 0.85, 0.95, 0.9]), 0.8), { minutes: 15, peak: 0.95 }, 'the run up to the newest period, in the period\'s length');
  t.same(trailingSaturation(pts([0.9, 0.9, 0.1]), 0.8).minutes, 0, 'a run that ended is no saturation now');
  const sat = reply('check_slot_saturation', [{
    target: target('p1'), duration_ms: 1,
    result: { kind: 'check_slot_saturation', window_hours: 2, capacity: 100, threshold_share: 0.8, points: pts([0.5, 0.85, 0.95, 0.9, 0.92]), saturated_periods: [] },
  }, {
    target: target('p2'), duration_ms: 1,
    result: { kind: 'check_slot_saturation', window_hours: 2, capacity: null, threshold_share: 0.8, points: [], saturated_periods: [] },
  }]);
  m = measure(checkCondition({ kind: 'saturation_above', threshold: 0.8, minutes: 20 }), sat);
  t.same([m.value, m.fires], [20, true]);
  t.match(m.message, /at or above 80 % of capacity for 20 min in p1\/US \(peak 95 %\)/);
  t.match(m.targets.find((x) => x.label === 'p2/US')?.error, /no known capacity/, 'on-demand: said, not guessed');
  t.equal(measure(checkCondition({ kind: 'saturation_above', threshold: 0.8, minutes: 30 }), sat).fires, false);
  t.equal(opsRequest(checkCondition({ kind: 'saturation_above', threshold: 0.8, minutes: 90 })).window_hours, 3, 'the window covers the duration');

  const q = reply('get_expensive_queries', [{
    target: target('p1'), duration_ms: 1,
    result: {
      kind: 'get_expensive_queries', window_days: 1, by_slot: [],
      by_bytes: [
        { job_id: 'job_a', user: 'ann@example.org', bytes_billed: 8e12, slot_ms: 1, cost_usd: 50, query: 'SELECT 1' },
        { job_id: 'job_b', user: 'bob@example.org', bytes_billed: 1e12, slot_ms: 1, cost_usd: 6.25, query: 'SELECT 2' },
      ],
    },
  }]);
  m = measure({ kind: 'query_cost_above', threshold: 20 }, q);
  t.same([m.value, m.fires], [50, true]);
  t.match(m.message, /job job_a by ann@example\.org/);
  t.same(opsRequest({ kind: 'query_cost_above', threshold: 20 }), { operation: 'get_expensive_queries', insights: false, window_days: 1, limit: 10 }, 'no model insights for alarms');

  for (const [c, why] of [
    [{ kind: 'saturation_above', threshold: 80 }, /a share .* at most 1/],
    [{ kind: 'forecast_above', threshold: 1, minutes: 5 }, /minutes is for saturation_above only/],
    [{ kind: 'public_dataset', threshold: 0.5 }, /a number of datasets/],
  ] as const) {
    t.throws(() => checkCondition(c as never), why);
  }
});

// ---- the actor's logic over a real mailer, SMTP and tracker ---------------------------------------

let clock = Date.parse('2026-06-10T12:00:30Z');
let next: OpsRunReply | Error = reply('forecast_monthly_costs', [forecastOf('p1', 50)]);
const asked: OpsRunRequest[] = [];
const ops = async (req: OpsRunRequest): Promise<OpsRunReply> => {
  asked.push(req);
  if (next instanceof Error) throw next;
  return next;
};

function depsFor(store: FileAlarms, bus: Bus): h.AlarmsDeps {
  return { bus, config, log, store, tracker: jiraTracker(() => config.jira), now: () => clock, ops };
}

const ctx = { requestId: 'test' };
const at = (hhmmss: string) => { clock = Date.parse(`2026-06-10T${hhmmss}Z`); };

async function refused(p: Promise<unknown>): Promise<CortadoError> {
  try {
    await p;
  } catch (err) {
    return err as CortadoError;
  }
  throw new Error('expected a refusal');
}

t.test('create checks what it is given', async (t) => {
  const d = depsFor(new FileAlarms(path.join(dir, 'checks.json'), log), busA);
  const base = { name: 'x', condition: { kind: 'forecast_above' as const, threshold: 10 }, by: 'admin' };
  for (const [over, code, why] of [
    [{ cron: '61 * * * *' }, 'VALIDATION_FAILED', /minute: 61 is out of range/],
    [{ timezone: 'Mars/Olympus' }, 'VALIDATION_FAILED', /timezone: "Mars\/Olympus" is not an IANA time zone/],
    [{ recipients: ['ok@example.org', 'not an address'] }, 'VALIDATION_FAILED', /"not an address" is not an e-mail address/],
    [{ recipients: Array.from({ length: 11 }, (_, i) => `r${i}@example.org`) }, 'LIMIT_EXCEEDED', /at most 10 recipients/],
    [{ name: '   ' }, 'VALIDATION_FAILED', /name: must not be blank/],
  ] as const) {
    const e = await refused(h.create({ ...base, ...over } as never, d, ctx));
    t.equal(e.code, code);
    t.match(e.message, why);
  }
  const a = await h.create(base, d, ctx);
  t.same([a.cron, a.timezone, a.recipients, a.state, a.value], ['*/15 * * * *', 'UTC', ['oncall@example.org'], 'ok', null], 'defaults: every 15 minutes, scheduler.timezone, alarms.default_recipients');
  t.equal((await refused(h.create(base, d, ctx))).code, 'CONFLICT');
  setConfig(config, 'alarms.enabled', false);
  const off = await refused(h.list(d));
  setConfig(config, 'alarms.enabled', true);
  t.same([off.code, off.message], ['NOT_FOUND', 'alarms are off (alarms.enabled is false in config/config.yaml)']);
});

t.test('an alarm fires once, e-mails, opens one issue, stays firing quietly, resolves with a comment', async (t) => {
  const store = new FileAlarms(path.join(dir, 'lifecycle.json'), log);
  const d = depsFor(store, busA);
  const ev = new Evaluator(d);
  at('12:00:30');
  const a = await h.create({ name: 'June budget', condition: { kind: 'forecast_above', threshold: 100 }, cron: '* * * * *', recipients: ['finops@example.org'], by: 'admin' }, d, ctx);
  const mails0 = smtp.received.length;
  const pass = async () => { await ev.pass(); await ev.idle(); };

  await pass();
  t.equal(asked.length, 0, 'nothing due before the first tick after creation');

  at('12:01:05');
  next = reply('forecast_monthly_costs', [forecastOf('p1', 50)]);
  await pass();
  let cur = await h.get({ id: a.id }, d);
  t.same([cur.state, cur.value, cur.last_evaluated], ['ok', 50, '2026-06-10T12:01:05.000Z'], 'measured, within the budget');
  t.equal(asked.at(-1)?.insights, false, 'asked without model insights');
  t.equal(smtp.received.length, mails0, 'no e-mail while ok');

  at('12:02:05');
  next = reply('forecast_monthly_costs', [forecastOf('p1', 150)]);
  await pass();
  cur = await h.get({ id: a.id }, d);
  t.same([cur.state, cur.value, cur.first_seen, cur.issue_key, cur.issue_open], ['firing', 150, '2026-06-10T12:02:05.000Z', 'OPS-1', true], 'fired, the issue kept on the alarm');
  const [fire] = (await smtp.waitFor(mails0 + 1)).slice(mails0);
  t.same(fire?.to, ['finops@example.org']);
  t.equal(fire?.parsed.subject, '[Cortado alarm] FIRING: June budget ($150.00)');
  t.match(fire?.parsed.text, /Condition: forecast_above — a monthly budget of \$100\.00\nValue: \$150\.00\nProject: every target/);
  t.match(fire?.parsed.text, /Issue: OPS-1/);
  t.equal(jira.issues.length, 1);
  const issue = jira.issues[0]!;
  t.same([issue.fields.project, issue.fields.issuetype, issue.fields.priority, issue.fields.labels], ['OPS', 'Incident', 'Highest', ['cortado-alarm']], 'project key, issue type and priority from the jira section');
  t.match(issue.fields.summary, /Cortado alarm: June budget — \$150\.00/);
  t.match(adfText(issue.fields.description), /Condition: forecast_above — a monthly budget of \$100\.00\./, 'a readable ADF description');
  t.equal(events.filter((e) => e.subject === 'fired' && e.data.alarm_id === a.id).length, 1, 'alarm.fired published');

  await pass();
  t.equal(jira.issues.length, 1, 'the same tick again: nothing (claimed)');

  at('12:03:05');
  next = reply('forecast_monthly_costs', [forecastOf('p1', 170)]);
  await pass();
  cur = await h.get({ id: a.id }, d);
  t.same([cur.state, cur.value, cur.last_seen, cur.first_seen], ['firing', 170, '2026-06-10T12:03:05.000Z', '2026-06-10T12:02:05.000Z'], 'still firing: the value follows');
  t.equal(smtp.received.length, mails0 + 1, 'no second e-mail while firing');
  t.equal(jira.issues.length, 1, 'no duplicate issue while it is open');

  at('12:04:05');
  next = reply('forecast_monthly_costs', [forecastOf('p1', 40)]);
  await pass();
  cur = await h.get({ id: a.id }, d);
  t.same([cur.state, cur.value, cur.issue_key, cur.issue_open], ['ok', 40, 'OPS-1', false], 'resolved; the issue is commented and kept');
  const [resolve] = (await smtp.waitFor(mails0 + 2)).slice(mails0 + 1);
  t.equal(resolve?.parsed.subject, '[Cortado alarm] RESOLVED: June budget ($40.00)');
  t.equal(issue.comments.length, 1);
  t.match(adfText(issue.comments[0]?.body), /Cortado alarm "June budget" resolved at 2026-06-10T12:04:05\.000Z/);
  t.same(cur.history.map((e) => [e.state, e.message.split(':')[0]]), [
    ['ok', 'Comment added to OPS-1'], ['ok', 'Resolved'], ['firing', 'Issue OPS-1 opened'], ['firing', 'Forecast for 2026-06'],
  ], 'the history, newest first');
  t.same((await h.history({ id: a.id, limit: 2 }, d)).history.length, 2);
  t.equal(events.filter((e) => e.subject === 'resolved' && e.data.alarm_id === a.id).length, 1, 'alarm.resolved published');

  at('12:05:05');
  next = reply('forecast_monthly_costs', [forecastOf('p1', 400)]);
  await pass();
  t.equal(jira.issues.length, 2, 'a new firing after a resolve opens a new issue');
  t.equal((await h.get({ id: a.id }, d)).issue_key, 'OPS-2');
  await h.update({ id: a.id, enabled: false, by: 'admin' }, d, ctx);
});

t.test('a failed measurement changes no state, is recorded once, and notifies nobody', async (t) => {
  const d = depsFor(new FileAlarms(path.join(dir, 'errors.json'), log), busA);
  const ev = new Evaluator(d);
  at('13:00:30');
  const a = await h.create({ name: 'Public data', condition: { kind: 'public_dataset', threshold: 0 }, cron: '* * * * *', by: 'admin' }, d, ctx);
  const mails0 = smtp.received.length;
  next = new CortadoError('ACTOR_UNAVAILABLE', 'no ops actor answers');
  for (const minute of ['13:01:05', '13:02:05']) {
    at(minute);
    await ev.pass();
    await ev.idle();
  }
  const cur = await h.get({ id: a.id }, d);
  t.same([cur.state, cur.value], ['ok', null]);
  t.match(cur.last_error, /could not run find_public_datasets: ACTOR_UNAVAILABLE: no ops actor answers/);
  t.equal(cur.history.length, 1, 'the same reason twice is one history line');
  t.equal(cur.history[0]?.state, 'error');
  t.equal(smtp.received.length, mails0, 'no e-mail');
});

t.test('the tracker refusing the credentials is recorded (never the token); the e-mail still goes; the next evaluation opens the issue', async (t) => {
  const d = depsFor(new FileAlarms(path.join(dir, 'auth.json'), log), busA);
  const ev = new Evaluator(d);
  at('14:00:30');
  const a = await h.create({ name: 'Daily cost', condition: { kind: 'daily_cost_above', threshold: 10 }, cron: '* * * * *', by: 'admin' }, d, ctx);
  const issues0 = jira.issues.length;
  const mails0 = smtp.received.length;
  const unauthorized0 = jira.unauthorized;
  setConfig(config, 'jira.api_token', 'jira-wrong-Pz11-never-logged');
  lines.length = 0;
  at('14:01:05');
  next = reply('forecast_monthly_costs', [forecastOf('p1', 100, [['2026-06-10', 25]])]);
  await ev.pass();
  await ev.idle();
  let cur = await h.get({ id: a.id }, d);
  t.equal(cur.state, 'firing');
  t.equal(cur.issue_key, undefined, 'no issue');
  t.match(cur.history[0]?.message, /The issue tracker failed: the issue tracker refused the credentials \(401\): check jira\.email and jira\.api_token/);
  t.equal(jira.unauthorized, unauthorized0 + 1);
  t.equal((await smtp.waitFor(mails0 + 1)).length, mails0 + 1, 'the e-mail went');
  const logged = lines.join('\n');
  t.ok(logged.includes('the issue tracker failed'), 'logged');
  t.notOk(logged.includes('jira-wrong-Pz11') || logged.includes(TOKEN), 'the token is in no log line');
  t.notOk(JSON.stringify(await h.list(d)).includes('never-logged'), 'nor in what the API returns');
  t.equal((await h.list(d)).tracker.api_token_set, true);

  setConfig(config, 'jira.api_token', TOKEN);
  at('14:02:05');
  await ev.pass();
  await ev.idle();
  cur = await h.get({ id: a.id }, d);
  t.same([cur.state, cur.issue_open, jira.issues.length], ['firing', true, issues0 + 1], 'still firing: the issue is opened now');
  t.equal(smtp.received.length, mails0 + 1, 'and no second e-mail');
  await h.update({ id: a.id, enabled: false, by: 'admin' }, d, ctx);
});

t.test('test: the value and what would happen, without notifying or changing anything', async (t) => {
  const d = depsFor(new FileAlarms(path.join(dir, 'test.json'), log), busA);
  at('15:00:00');
  const a = await h.create({ name: 'Budget test', condition: { kind: 'forecast_above', threshold: 100 }, by: 'admin' }, d, ctx);
  next = reply('forecast_monthly_costs', [forecastOf('p1', 250)]);
  const mails0 = smtp.received.length;
  const issues0 = jira.issues.length;
  const r = await h.test({ id: a.id }, d, ctx);
  t.same([r.value, r.threshold, r.fires, r.would, r.recipients], [250, 100, true, 'fire', ['oncall@example.org']]);
  t.equal(r.issue, 'an issue would be opened in OPS (Incident, Highest)');
  const draft = await h.test({ id: a.id, condition: { kind: 'forecast_above', threshold: 500 } }, d, ctx);
  t.same([draft.fires, draft.would, draft.recipients], [false, 'stay_ok', []], 'a draft condition tried on the saved alarm');
  t.same(await h.get({ id: a.id }, d), a, 'the alarm is as it was');
  t.same([smtp.received.length, jira.issues.length], [mails0, issues0], 'nobody notified');
});

t.test('two processes evaluating the same alarms file: each tick is evaluated once, notified once', async (t) => {
  const file = path.join(dir, 'shared.json');
  const d1 = depsFor(new FileAlarms(file, log), busA);
  const d2 = depsFor(new FileAlarms(file, log), busB);
  at('16:00:30');
  const a = await h.create({ name: 'Shared', condition: { kind: 'forecast_above', threshold: 100 }, cron: '* * * * *', by: 'admin' }, d1, ctx);
  const [e1, e2] = [new Evaluator(d1), new Evaluator(d2)];
  const mails0 = smtp.received.length;
  const issues0 = jira.issues.length;
  const asked0 = asked.length;
  next = reply('forecast_monthly_costs', [forecastOf('p1', 900)]);
  at('16:01:05');
  await Promise.all([e1.pass(), e2.pass()]);
  await Promise.all([e1.idle(), e2.idle()]);
  t.equal(asked.length - asked0, 1, 'measured once');
  t.equal(jira.issues.length - issues0, 1, 'one issue');
  await smtp.waitFor(mails0 + 1);
  await new Promise((r) => setTimeout(r, 200));
  t.equal(smtp.received.length - mails0, 1, 'one e-mail');
  t.equal((await h.get({ id: a.id }, d2)).state, 'firing', 'both see it firing');
  await h.update({ id: a.id, enabled: false, by: 'admin' }, d1, ctx);
});

t.test('the actor: alarms off is a clear refusal; settings that cannot work stop the start', async (t) => {
  const offBus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'off', log, strict: true });
  t.teardown(() => offBus.close());
  const bad = structuredClone(config);
  bad.jira.url = '';
  bad.alarms.default_recipients = ['nope'];
  const e = await refused(startAlarms({ bus: offBus, config: bad, log }));
  t.equal(e.code, 'CONFIG_INVALID');
  t.match(e.message, /alarms\.default_recipients: "nope" is not an e-mail address; jira\.enabled is true but jira\.url is empty/);
});

t.test('run-time changes of the alarms and tracker settings are checked when saved, as at start', async (t) => {
  const cfg = structuredClone(config);
  cfg.jira.enabled = false;
  cfg.jira.url = '';
  const refusedWith = (key: string, value: unknown): string => {
    try {
      checkOverride(cfg, key, value);
    } catch (err) {
      return `${(err as CortadoError).code}: ${(err as Error).message}`;
    }
    return 'accepted';
  };
  t.equal(refusedWith('alarms.default_recipients', ['ok@example.org', 'oncall at example']), 'VALIDATION_FAILED: alarms.default_recipients: "oncall at example" is not an e-mail address');
  t.equal(refusedWith('jira.enabled', true), 'VALIDATION_FAILED: jira.enabled is true but jira.url is empty', 'the tracker switched on without its url');
  cfg.jira.url = 'http://jira.example.org';
  t.match(refusedWith('jira.enabled', true), /VALIDATION_FAILED: jira\.url must be https \(the API token goes with every request; plain http is accepted for a loopback host only\): http:\/\/jira\.example\.org/);
  cfg.jira.url = 'https://acme.atlassian.net';
  t.equal(refusedWith('jira.enabled', true), 'accepted');
  cfg.jira.enabled = true;
  t.match(refusedWith('jira.url', 'http://10.0.0.5:8080'), /jira\.url must be https/, 'an http url to another host is refused');
  t.equal(refusedWith('jira.url', 'http://127.0.0.1:8080'), 'accepted', 'http to a loopback host is not on the wire');
  t.equal(refusedWith('jira.project_key', ' '), 'VALIDATION_FAILED: jira.enabled is true but jira.project_key is empty');
  t.match(refusedWith('alarms.enabled', false), /FORBIDDEN: alarms\.enabled is read at start-up only/);
  t.throws(() => testConfig({ natsUrl: nats.url, extra: { alarms: { enabled: true }, jira: { enabled: true, url: 'http://jira.example.org', email: 'a@example.org', api_token: 'x', project_key: 'OPS' } } }), { code: 'CONFIG_INVALID', message: /jira\.url must be https/ }, 'and at start');
});

t.test('a failing tracker is one history line and one warning per reason while the alarm fires (400, 403, a timeout); never the token', async (t) => {
  const d: h.AlarmsDeps = { ...depsFor(new FileAlarms(path.join(dir, 'tracker.json'), log), busA), tracker: jiraTracker(() => config.jira, fetch, { timeoutMs: 400 }) };
  const ev = new Evaluator(d);
  at('17:00:30');
  const a = await h.create({ name: 'Tracker trouble', condition: { kind: 'forecast_above', threshold: 100 }, cron: '* * * * *', by: 'admin' }, d, ctx);
  next = reply('forecast_monthly_costs', [forecastOf('p1', 500)]);
  const issues0 = jira.issues.length;
  const mails0 = smtp.received.length;
  const saved = { ...config.jira };
  t.teardown(() => { setConfig(config, 'jira', saved); jira.failWith = undefined; });
  lines.length = 0;
  let minute = 0;
  const passes = async (n: number) => {
    for (let i = 0; i < n; i++) {
      at(`17:${String(++minute).padStart(2, '0')}:05`);
      await ev.pass();
      await ev.idle();
    }
  };
  const failures = async () => (await h.get({ id: a.id }, d)).history.filter((e) => e.message.startsWith('The issue tracker failed')).map((e) => e.message);

  setConfig(config, 'jira.issue_type', 'Saga');
  await passes(3);
  t.same(await failures(), ['The issue tracker failed: the issue tracker answered 400: issuetype: Specify a valid issue type (jira.issue_type is "Saga")'], 'an unknown issue type: Jira\'s words and the setting, once over three evaluations');
  setConfig(config, 'jira.issue_type', 'Incident');
  setConfig(config, 'jira.priority', 'Urgent');
  await passes(2);
  t.match((await failures())[0], /answered 400: priority: Specify the Priority \(name\) in the string format \(jira\.priority is "Urgent"\)/, 'an unknown priority, once');
  setConfig(config, 'jira.priority', 'Highest');
  jira.failWith = 'forbidden';
  await passes(2);
  t.match((await failures())[0], /refused \(403\): the account of jira\.email may not do this in OPS \(You do not have permission to create issues in this project\.\)/, 'a 403, once');
  jira.failWith = 'hang';
  await passes(2);
  t.match((await failures())[0], /the issue tracker at http:\/\/127\.0\.0\.1:\d+ cannot be reached \(no answer in 0\.4 s\)/, 'a timeout, once');
  jira.failWith = undefined;
  await passes(1);

  const cur = await h.get({ id: a.id }, d);
  t.same([cur.state, cur.issue_open, jira.issues.length - issues0], ['firing', true, 1], 'the tracker back: the issue is opened');
  t.same(cur.history.map((e) => e.message.split(':')[0]).reverse(), [
    'Forecast for 2026-06', 'The issue tracker failed', 'The issue tracker failed', 'The issue tracker failed', 'The issue tracker failed', `Issue ${cur.issue_key} opened`,
  ], 'ten evaluations: the firing kept, each reason once');
  const warned = lines.map((l) => JSON.parse(l) as { level: string; msg: string }).filter((l) => l.level === 'warn' && l.msg.startsWith('the issue tracker failed'));
  t.equal(warned.length, 4, 'one warning per reason');
  t.notOk(lines.join('\n').includes(TOKEN), 'the token is in no log line');
  t.equal((await smtp.waitFor(mails0 + 1)).length, mails0 + 1, 'one e-mail for the firing');
  await h.update({ id: a.id, enabled: false, by: 'admin' }, d, ctx);
});

t.test('a corrupt alarms file is logged once per distinct error, not every second; mended, evaluation resumes', async (t) => {
  const file = path.join(dir, 'corrupt.json');
  writeFileSync(file, '{"version": 1, "alarms": [ {"id": "half');
  // the passes counted as they read the file: the test waits for passes, not for seconds
  class Counted extends FileAlarms {
    reads = 0;
    override list(): ReturnType<FileAlarms['list']> {
      this.reads++;
      return super.list();
    }
  }
  const store = new Counted(file, log);
  // a pass every 50 ms (the product's is a second): three passes are a moment
  const ev = new Evaluator(depsFor(store, busA), undefined, 50);
  /** until `n` more passes have read the file and ended (one pass at a time: the next read is after the last pass's end) */
  const passesEnded = (n: number) => { const to = store.reads + n + 1; return until(`${n} alarms passes`, () => store.reads >= to, 30_000); };
  lines.length = 0;
  ev.start();
  t.teardown(() => ev.stop(1_000));
  const failedPasses = () => lines.map((l) => JSON.parse(l) as { level: string; msg: string; err?: string }).filter((l) => l.msg.startsWith('an alarms pass failed'));
  await passesEnded(3);
  t.equal(failedPasses().length, 1, 'three passes and more, one warning');
  t.match(failedPasses()[0]?.err, /is not valid JSON/);
  // replaced whole, as an editor saves: a pass that read a half-written file would see a third error
  const replace = (text: string): void => { writeFileSync(`${file}.new`, text); renameSync(`${file}.new`, file); };
  replace('{"version": 1, "alarms": 7}');
  await passesEnded(3);
  t.equal(failedPasses().length, 2, 'another reason: logged once more');
  replace('{"version": 1, "alarms": []}\n');
  await passesEnded(3);
  t.ok(lines.some((l) => l.includes('the alarms can be read again')), 'mended: said once');
  t.equal(failedPasses().length, 2);
  t.equal(readFileSync(file, 'utf8'), '{"version": 1, "alarms": []}\n', 'never reset');
});

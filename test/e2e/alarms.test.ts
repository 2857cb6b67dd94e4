/**
 * Alarms end to end: a real stack (edge, identity, the ops actor over the BigQuery stand-in, the
 * mailer to a real SMTP server) and two alarms actors, each on its own bus connection and its own
 * handle on the same alarms file (as two processes on one host), both evaluating without a lease
 * so that only the store's tick claim keeps them apart. An alarm on public datasets fires once
 * (one e-mail, one issue in the Jira stand-in), then resolves once (one e-mail, one comment).
 * The routes: the admin session, CSRF on writes, bad input refused, alarms off refused.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import { startAlarms, type RunningAlarms } from '../../actors/alarms/actor.js';
import { testConfig } from '../helpers/config.js';
import { startFakeBigQuery } from '../helpers/fake-bigquery.js';
import { adfText, startFakeJira } from '../helpers/fake-jira.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { startSmtp } from '../helpers/smtp.js';
import { call, startStack, type Stack } from '../helpers/stack.js';

process.env.METADATA_SERVER_DETECTION = 'none';

const ADMIN = { username: 'admin', password: 'alarms-admin-pw' };
const TOKEN = 'jira-e2e-Kk20-never-logged';
const nats = await startNats();
const db = await createTestDb('alarms_e2e');
const fake = await startFakeBigQuery({ databaseUrl: db.url, projectId: 'acme-prod' });
const smtp = await startSmtp({ tls: 'none' });
const jira = await startFakeJira({ email: 'ops-bot@acme.test', apiToken: TOKEN, projectKey: 'DATA' });
const dir = mkdtempSync(path.join(tmpdir(), 'alarms-e2e-'));
const keyPath = path.join(dir, 'key.json');
writeFileSync(keyPath, JSON.stringify(fake.serviceAccount()));
const alarmsFile = path.join(dir, 'state', 'alarms.json');

const publicOpen = [{ dataset_id: 'open_sales', access: [{ role: 'READER', specialGroup: 'allAuthenticatedUsers' }, { role: 'OWNER', userByEmail: 'ana@acme.test' }] }];
const closed = [{ dataset_id: 'open_sales', access: [{ role: 'OWNER', userByEmail: 'ana@acme.test' }] }];
fake.ops.seed({ project: 'acme-prod', datasets: closed });

const config = testConfig({
  natsUrl: nats.url,
  extra: {
    admin: { enabled: true, ...ADMIN },
    database: { provider: 'bigquery', bigquery: { project_id: 'acme-prod', base_url: fake.url } },
    ops_agent: { enabled: true, config: { projects: [{ project_id: 'acme-prod', region: 'US', credentials_path: keyPath }], allowed_operations: ['find_public_datasets', 'forecast_monthly_costs'] } },
    email: { enabled: true, smtp: { host: smtp.host, port: smtp.port, from_email: 'cortado@acme.test', use_tls: false, use_ssl: false } },
    alarms: { enabled: true, storage_path: alarmsFile, default_recipients: ['data-oncall@acme.test'] },
    jira: { enabled: true, url: jira.url, email: 'ops-bot@acme.test', api_token: TOKEN, project_key: 'DATA', issue_type: 'Bug', priority: 'High' },
  },
});

const stack: Stack = await startStack(config, { edge: true, actors: ['identity', 'ops', 'mailer'] });
let clock = Date.parse('2026-07-01T09:00:30Z');
const log = createLogger({ svc: 'alarms', level: 'silent' });
const buses: Bus[] = [];
const actors: RunningAlarms[] = [];
for (const name of ['alarms-1', 'alarms-2']) {
  const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name, log, strict: true });
  buses.push(bus);
  actors.push(await startAlarms({ bus, config, log }, { now: () => clock, lease: false }));
}

t.teardown(async () => {
  for (const b of buses) await b.stopServing(['alarms'], Date.now() + 2_000);
  for (const a of actors) await a.stop();
  for (const b of buses) await b.close();
  await stack.stop();
  await Promise.all([fake.close(), smtp.close(), jira.close()]);
  await db.drop();
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
});

const login = await call(`${stack.url}/admin/login`, { body: ADMIN });
const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
const csrf: string = login.body.csrf_token;
const as = (p: string, init: { method?: string; body?: unknown; csrf?: boolean } = {}) =>
  call(`${stack.url}${p}`, { ...init, headers: { cookie, ...(init.csrf === false ? {} : { 'x-csrf-token': csrf }) } });

async function until<T>(what: string, fn: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const datasetsCalls = () => fake.calls.filter((c) => c === 'GET /bigquery/v2/projects/acme-prod/datasets').length;

t.test('the routes: admin only, CSRF on writes, bad input refused', async (t) => {
  t.equal((await call(`${stack.url}/api/alarms`)).status, 401, 'a stranger');
  const noCsrf = await as('/api/alarms', { body: { name: 'x', condition: { kind: 'public_dataset', threshold: 0 } }, csrf: false });
  t.equal(noCsrf.status, 403);
  const list = await as('/api/alarms');
  t.equal(list.status, 200, list.text);
  t.same(list.body.storage, { kind: 'file', path: alarmsFile, state: 'missing' }, 'the file is said missing until the first alarm');
  t.same(list.body.tracker, { enabled: true, url: jira.url, project_key: 'DATA', issue_type: 'Bug', priority: 'High', api_token_set: true });
  t.notOk(list.text.includes(TOKEN), 'never the token');
  for (const [body, status, why] of [
    [{ name: 'x', condition: { kind: 'cost_above', threshold: 1 } }, 400, /condition\/kind/],
    [{ name: 'x', condition: { kind: 'check_slot_saturation', threshold: 1 } }, 400, /condition\/kind/],
    [{ name: 'x', condition: { kind: 'saturation_above', threshold: 0.9 } }, 400, /check_slot_saturation, which ops_agent\.config\.allowed_operations does not allow/],
    [{ name: 'x', condition: { kind: 'public_dataset', threshold: 0, project_id: 'acme-other' } }, 400, /project_id acme-other is none of the console's targets \(acme-prod\)/],
    [{ name: 'x', condition: { kind: 'public_dataset', threshold: 0 }, cron: '@daily' }, 400, /cron/],
  ] as const) {
    const r = await as('/api/alarms', { body });
    t.equal(r.status, status, r.text);
    t.match(r.body.error.message, why);
  }
  t.equal((await as('/api/alarms/nope')).status, 404);
  t.equal((await as('/api/alarms/bad%20id')).status, 400);
  t.equal((await as('/api/alarms/x/history?limit=0')).status, 400);
});

t.test('an alarm fires once across two processes, e-mails, opens one issue, then resolves with a comment', async (t) => {
  const created = await as('/api/alarms', { body: { name: 'Public datasets in acme-prod', condition: { kind: 'public_dataset', threshold: 0 }, cron: '* * * * *' } });
  t.equal(created.status, 201, created.text);
  const id: string = created.body.id;
  t.same([created.body.recipients, created.body.state], [['data-oncall@acme.test'], 'ok']);
  t.equal(JSON.parse(readFileSync(alarmsFile, 'utf8')).alarms[0].id, id, 'kept in the alarms file');

  const tested = await as(`/api/alarms/${id}/test`, { method: 'POST' });
  t.equal(tested.status, 200, tested.text);
  t.same([tested.body.value, tested.body.would], [0, 'stay_ok'], 'the real ops actor measured it: no public dataset yet');

  // a dataset becomes public; the next tick comes
  fake.ops.seed({ project: 'acme-prod', datasets: publicOpen });
  const before = datasetsCalls();
  clock = Date.parse('2026-07-01T09:01:05Z');
  const firing = await until('firing', async () => {
    const r = await as(`/api/alarms/${id}`);
    return r.body.state === 'firing' && r.body.issue_key ? r.body : undefined;
  });
  t.same([firing.value, firing.issue_key, firing.issue_open], [1, 'DATA-1', true]);
  const [mail] = await smtp.waitFor(1);
  t.same(mail?.to, ['data-oncall@acme.test']);
  t.equal(mail?.parsed.subject, '[Cortado alarm] FIRING: Public datasets in acme-prod (1 public dataset)');
  t.match(mail?.parsed.text, /acme-prod:open_sales \(allAuthenticatedUsers READER\)/);
  t.match(mail?.parsed.text, /Issue: DATA-1/);
  t.equal(jira.issues.length, 1, 'one issue');
  t.same([jira.issues[0]?.fields.issuetype, jira.issues[0]?.fields.priority], ['Bug', 'High']);
  t.match(adfText(jira.issues[0]?.fields.description), /public_dataset — no public dataset/);

  // both processes kept passing over the same tick: still one evaluation of it
  await new Promise((r) => setTimeout(r, 2_500));
  t.equal(datasetsCalls() - before, 1, 'the tick was measured once, by one of the two processes');
  t.equal(smtp.received.length, 1, 'one e-mail');
  t.equal(jira.issues.length, 1, 'one issue');

  fake.ops.seed({ project: 'acme-prod', datasets: closed });
  clock = Date.parse('2026-07-01T09:02:05Z');
  const resolved = await until('resolved', async () => {
    const r = await as(`/api/alarms/${id}`);
    return r.body.state === 'ok' && r.body.issue_open === false ? r.body : undefined;
  });
  t.same([resolved.value, resolved.issue_key], [0, 'DATA-1']);
  const mails = await smtp.waitFor(2);
  t.equal(mails[1]?.parsed.subject, '[Cortado alarm] RESOLVED: Public datasets in acme-prod (0 public datasets)');
  t.equal(jira.issues[0]?.comments.length, 1, 'one comment on resolve');
  t.equal(jira.issues.length, 1, 'no new issue');

  const hist = await as(`/api/alarms/${id}/history`);
  t.same(hist.body.history.map((e: { state: string }) => e.state), ['ok', 'ok', 'firing', 'firing'], 'comment, resolved, issue opened, fired');
  t.notOk(readFileSync(alarmsFile, 'utf8').includes(TOKEN), 'the token is not in the alarms file');

  const edited = await as(`/api/alarms/${id}`, { method: 'PUT', body: { enabled: false, recipients: ['a@acme.test', 'b@acme.test'] } });
  t.same([edited.status, edited.body.enabled, edited.body.recipients], [200, false, ['a@acme.test', 'b@acme.test']]);
  t.same((await as(`/api/alarms/${id}`, { method: 'DELETE' })).body, { ok: true });
  t.same((await as('/api/alarms')).body.alarms, []);
});

t.test('a corrupted alarms file is reported by the API naming it, and left as it is', async (t) => {
  const text = '{"version": 1, "alarms": [ {"id": "half';
  writeFileSync(alarmsFile, text);
  const r = await as('/api/alarms');
  t.equal(r.status, 500);
  t.match(r.body.error.message, new RegExp(`the alarms file ${alarmsFile} is not valid JSON`));
  t.equal((await as('/api/alarms', { body: { name: 'y', condition: { kind: 'public_dataset', threshold: 0 } } })).status, 500, 'nor written over');
  t.equal(readFileSync(alarmsFile, 'utf8'), text, 'untouched');
  writeFileSync(alarmsFile, '{"version": 1, "alarms": []}\n');
});

t.test('alarms off: a clear refusal', async (t) => {
  const offNats = await startNats();
  const offStack = await startStack(testConfig({ natsUrl: offNats.url, extra: { admin: { enabled: true, ...ADMIN } } }), { edge: true, actors: ['identity', 'alarms'] });
  t.teardown(async () => { await offStack.stop(); await offNats.stop(); });
  const l = await call(`${offStack.url}/admin/login`, { body: ADMIN });
  const r = await call(`${offStack.url}/api/alarms`, { headers: { cookie: (l.headers.get('set-cookie') ?? '').split(';')[0]! } });
  t.equal(r.status, 404);
  t.equal(r.body.error.message, 'alarms are off (alarms.enabled is false in config/config.yaml)');
});

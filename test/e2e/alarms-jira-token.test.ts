/**
 * The issue tracker's API token set at run time by an admin (PUT /admin/config/jira.api_token)
 * with config_db on: the config database holds it encrypted (never the token), no view or log
 * line shows it, and the alarms actor authenticates to the tracker with it (the Jira stand-in
 * checks basic auth) — an alarm firing opens its issue. Before it is set, the alarms view says
 * `api_token_set: false` and a firing alarm records the tracker's refusal, e-mailing anyway.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { startAlarms, type RunningAlarms } from '../../actors/alarms/actor.js';
import { testConfig } from '../helpers/config.js';
import { startFakeBigQuery } from '../helpers/fake-bigquery.js';
import { startFakeJira } from '../helpers/fake-jira.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { startSmtp } from '../helpers/smtp.js';
import { call, startStack } from '../helpers/stack.js';

process.env.METADATA_SERVER_DETECTION = 'none';

const ADMIN = { username: 'admin', password: 'jira-token-admin-pw' };
const TOKEN = 'jira-runtime-Zq81-never-shown';
const nats = await startNats();
const db = await createTestDb('alarms_tok');
const cfgDb = await createTestDb('alarms_tok_cfg');
const fake = await startFakeBigQuery({ databaseUrl: db.url, projectId: 'acme-prod' });
const smtp = await startSmtp({ tls: 'none' });
const jira = await startFakeJira({ email: 'ops-bot@acme.test', apiToken: TOKEN, projectKey: 'DATA' });
const dir = mkdtempSync(path.join(tmpdir(), 'alarms-tok-'));
const keyPath = path.join(dir, 'key.json');
writeFileSync(keyPath, JSON.stringify(fake.serviceAccount()));
const open = [{ dataset_id: 'open_sales', access: [{ role: 'READER', specialGroup: 'allUsers' }] }];
const closed = [{ dataset_id: 'open_sales', access: [{ role: 'OWNER', userByEmail: 'ana@acme.test' }] }];
fake.ops.seed({ project: 'acme-prod', datasets: closed });

const config = testConfig({
  natsUrl: nats.url,
  extra: {
    admin: { enabled: true, ...ADMIN },
    config_db: { enabled: true, encryption_key: generateFernetKey(), postgresql: { host: cfgDb.host, port: cfgDb.port, database: cfgDb.name, user: cfgDb.user } },
    database: { provider: 'bigquery', bigquery: { project_id: 'acme-prod', base_url: fake.url } },
    ops_agent: { enabled: true, config: { projects: [{ project_id: 'acme-prod', region: 'US', credentials_path: keyPath }], allowed_operations: ['find_public_datasets'] } },
    email: { enabled: true, smtp: { host: smtp.host, port: smtp.port, from_email: 'cortado@acme.test', use_tls: false, use_ssl: false } },
    alarms: { enabled: true, storage_path: path.join(dir, 'alarms.json'), default_recipients: ['oncall@acme.test'] },
    // no token in the file: the admin sets it at run time
    jira: { enabled: true, url: jira.url, email: 'ops-bot@acme.test', api_token: '', project_key: 'DATA' },
  },
});
const lines: string[] = [];
const stack = await startStack(config, { edge: true, actors: ['identity', 'settings', 'ops', 'mailer'] });
let clock = Date.parse('2026-07-01T09:00:30Z');
const log = createLogger({ svc: 'alarms', level: 'debug', destination: new Writable({ write(c, _e, cb) { lines.push(String(c)); cb(); } }) });
const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'alarms-tok', log, strict: true });
// a file left at alarms.storage_path from before config_db: ignored, and said at start
writeFileSync(config.alarms.storage_path, '{"version": 1, "alarms": []}\n');
const alarms: RunningAlarms = await startAlarms({ bus, config, log }, { now: () => clock, lease: false });
t.teardown(async () => {
  await bus.stopServing(['alarms'], Date.now() + 2_000);
  await alarms.stop();
  await bus.close();
  await stack.stop();
  await Promise.all([fake.close(), smtp.close(), jira.close()]);
  await db.drop();
  await cfgDb.drop();
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
});

const login = await call(`${stack.url}/admin/login`, { body: ADMIN });
const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
const csrf: string = login.body.csrf_token;
const as = (p: string, init: { method?: string; body?: unknown } = {}) => call(`${stack.url}${p}`, { ...init, headers: { cookie, 'x-csrf-token': csrf } });
async function until<T>(what: string, fn: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

t.test('without the token: the view says so, a firing alarm records the refusal and still e-mails', async (t) => {
  const list = await as('/api/alarms');
  t.equal(list.status, 200, list.text);
  t.equal(list.body.storage.kind, 'postgresql', 'config_db wins over the file');
  const ignored = lines.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { level: string; msg: string; file?: string }).filter((l) => l.msg.startsWith('alarms.storage_path is ignored'));
  t.same(ignored.map((l) => [l.level, l.file]), [['warn', config.alarms.storage_path]], 'the file left at alarms.storage_path is said ignored at start, once');
  t.equal(list.body.tracker.api_token_set, false);
  const created = await as('/api/alarms', { body: { name: 'Open data', condition: { kind: 'public_dataset', threshold: 0 }, cron: '* * * * *' } });
  t.equal(created.status, 201, created.text);
  fake.ops.seed({ project: 'acme-prod', datasets: open });
  clock = Date.parse('2026-07-01T09:01:05Z');
  const firing = await until('firing', async () => {
    const r = await as(`/api/alarms/${created.body.id}`);
    return r.body.state === 'firing' ? r.body : undefined;
  });
  t.notOk(firing.issue_key, 'no issue without credentials');
  await smtp.waitFor(1);
  t.equal(jira.issues.length, 0);
  // resolve it again for the next part
  fake.ops.seed({ project: 'acme-prod', datasets: closed });
  clock = Date.parse('2026-07-01T09:02:05Z');
  await until('resolved', async () => ((await as(`/api/alarms/${created.body.id}`)).body.state === 'ok' ? true : undefined));
  t.same((await as(`/api/alarms/${created.body.id}`, { method: 'DELETE' })).body, { ok: true });
});

t.test('the token set at run time: stored encrypted, never shown, and used', async (t) => {
  const put = await as('/admin/config/jira.api_token', { method: 'PUT', body: { value: TOKEN } });
  t.equal(put.status, 200, put.text);
  t.notOk(put.text.includes(TOKEN), 'the reply does not echo it');
  const stored = await cfgDb.pool.query<{ value: unknown }>(`SELECT value FROM cortado_config_overrides WHERE key = 'jira.api_token'`);
  t.equal(stored.rows.length, 1, 'kept in the config database');
  t.notOk(JSON.stringify(stored.rows[0]!.value).includes(TOKEN), 'as ciphertext, not the token');
  const everything = await cfgDb.pool.query(`SELECT * FROM cortado_config_overrides, cortado_config_override_history`);
  t.notOk(JSON.stringify(everything.rows).includes(TOKEN), 'nor in the history');
  const view = await as('/admin/config');
  t.equal(view.status, 200);
  t.notOk(view.text.includes(TOKEN), 'the config view hides it');
  const list = await as('/api/alarms');
  t.equal(list.body.tracker.api_token_set, true);
  t.notOk(list.text.includes(TOKEN));

  const created = await as('/api/alarms', { body: { name: 'Open data again', condition: { kind: 'public_dataset', threshold: 0 }, cron: '* * * * *' } });
  t.equal(created.status, 201, created.text);
  fake.ops.seed({ project: 'acme-prod', datasets: open });
  clock = Date.parse('2026-07-01T09:03:05Z');
  const firing = await until('an issue', async () => {
    const r = await as(`/api/alarms/${created.body.id}`);
    return r.body.state === 'firing' && r.body.issue_key ? r.body : undefined;
  });
  t.equal(firing.issue_key, 'DATA-1', 'the stand-in accepted the runtime token');
  t.equal(jira.issues.length, 1);
  t.notOk(lines.some((l) => l.includes(TOKEN)), 'no log line of the alarms actor holds the token');
});

/**
 * /ops in Chromium as an operator finds it when something is wrong, over a real stack (edge,
 * identity, ops over the BigQuery stand-in with model insights from a fake Anthropic API, the
 * alarms actor on a file, the Jira REST v3 stand-in): an alarm on public datasets, due at once,
 * fires and opens DATA-1; the page shows it firing with its linked issue and history, and the
 * public datasets view with the model's findings. A screenshot goes to test-artifacts/.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { launchBrowser } from '../helpers/browser.js';
import { testConfig } from '../helpers/config.js';
import { startFakeBigQuery } from '../helpers/fake-bigquery.js';
import { startFakeJira } from '../helpers/fake-jira.js';
import { startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';

process.env.METADATA_SERVER_DETECTION = 'none';

const ARTIFACTS = 'test-artifacts';
mkdirSync(ARTIFACTS, { recursive: true });
const ADMIN = { username: 'admin', password: 'ops-firing-page-pw' };
const TOKEN = 'jira-firing-Hh52-never-shown';
const FINDING = 'TYPE: security | SEVERITY: critical | MESSAGE: One dataset is readable by allUsers; restrict its access entries.';

const nats = await startNats();
const db = await createTestDb('ops_firing_page');
const fake = await startFakeBigQuery({ databaseUrl: db.url, projectId: 'acme-prod' });
const jira = await startFakeJira({ email: 'bot@acme.test', apiToken: TOKEN, projectKey: 'DATA' });
const llm = await startFakeLlm();
llm.fallback(() => ({ text: FINDING }));
const dir = mkdtempSync(path.join(tmpdir(), 'ops-firing-page-'));
const keyPath = path.join(dir, 'key.json');
writeFileSync(keyPath, JSON.stringify(fake.serviceAccount()));
fake.ops.seed({ project: 'acme-prod', datasets: [{ dataset_id: 'open_data', access: [{ role: 'READER', iamMember: 'allUsers' }] }] });

// an alarm saved five minutes ago, every minute: its tick is due as soon as the actor starts
const ID = 'a1b2c3d4e5f6a7b8c9d0';
const created = new Date(Date.now() - 5 * 60_000).toISOString();
writeFileSync(path.join(dir, 'alarms.json'), JSON.stringify({
  version: 1,
  alarms: [{
    id: ID, name: 'Public data', condition: { kind: 'public_dataset', threshold: 0 }, cron: '* * * * *', timezone: 'UTC', recipients: [],
    enabled: true, state: 'ok', value: null, history: [], created_at: created, updated_at: created, updated_by: 'admin',
  }],
}));

const stack = await startStack(testConfig({
  natsUrl: nats.url,
  llmUrl: llm.url,
  extra: {
    admin: { enabled: true, ...ADMIN },
    database: { provider: 'bigquery', bigquery: { project_id: 'acme-prod', base_url: fake.url } },
    ops_agent: { enabled: true, ai_insights: true, ai_insights_max: 3, config: { projects: [{ project_id: 'acme-prod', region: 'US', credentials_path: keyPath }], allowed_operations: ['find_public_datasets'] } },
    alarms: { enabled: true, storage_path: path.join(dir, 'alarms.json') },
    jira: { enabled: true, url: jira.url, email: 'bot@acme.test', api_token: TOKEN, project_key: 'DATA' },
  },
}), { edge: true, actors: ['identity', 'ops', 'alarms', 'llm'] });
const browser = await launchBrowser();

t.teardown(async () => {
  await browser.close();
  await stack.stop();
  await Promise.all([fake.close(), jira.close(), llm.close()]);
  await db.drop();
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
});

t.test('a firing alarm with its linked issue, and the model\'s findings on the view', async (t) => {
  const login = await call(`${stack.url}/admin/login`, { body: ADMIN });
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
  const end = Date.now() + 20_000;
  let alarm: any;
  while (Date.now() < end) {
    alarm = (await call(`${stack.url}/api/alarms/${ID}`, { headers: { cookie } })).body;
    if (alarm?.issue_key) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  t.same([alarm?.state, alarm?.issue_key, alarm?.issue_open], ['firing', 'DATA-1', true], 'the alarm fired and opened its issue');
  t.equal(jira.issues.length, 1);

  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${stack.url}/ops`);
  await page.waitForFunction(() => (globalThis as any).document.body.dataset.state === 'login');
  await page.fill('#username', ADMIN.username);
  await page.fill('#password', ADMIN.password);
  await page.click('#sign-in');
  await page.waitForFunction(() => (globalThis as any).document.body.dataset.state === 'ready', undefined, { timeout: 30_000 });

  const insight = page.locator('#op-find_public_datasets .insights .insight');
  await insight.first().waitFor({ timeout: 15_000 });
  t.equal(await insight.count(), 1, 'one finding');
  t.equal(await insight.locator('b').textContent(), 'security · critical');
  t.equal(await insight.locator('p').textContent(), 'One dataset is readable by allUsers; restrict its access entries.', 'the model\'s words on the view');
  t.match(await page.locator('#op-find_public_datasets .projects').textContent(), /open_data/, 'next to the datasets it is about');

  const row = page.locator(`#alarms-table tbody tr[data-id="${ID}"]`);
  await row.waitFor({ timeout: 15_000 });
  t.equal(await row.getAttribute('data-state'), 'firing');
  const cells = await row.locator('td').allTextContents();
  t.match(cells[2], /firing/i, 'the state');
  t.equal(cells[3], '1 public', 'the value');
  t.equal(cells[5], 'DATA-1', 'the linked issue, open');
  await row.locator('[data-action="history"]').click();
  const history = await page.locator(`tr.history-row[data-history="${ID}"]`).textContent();
  t.match(history, /Issue DATA-1 opened/);
  t.match(history, /firing.*1 public dataset: acme-prod:open_data \(allUsers READER\)/s);
  t.notOk((await page.content()).includes(TOKEN), 'never the token');
  await page.screenshot({ path: `${ARTIFACTS}/ops-alarm-firing.png`, fullPage: true });
  t.same(errors, [], 'no script errors');
  await page.close();
});

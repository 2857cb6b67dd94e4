/**
 * The alarms panel of /ops in Chromium over a real stack (edge, identity, ops over the BigQuery
 * stand-in, the alarms actor on a file): after signing in, the panel says where alarms are kept
 * and the tracker's settings (never its token); an alarm is created with the form, tested (the
 * real measurement: it would fire), edited, shown with its state and linked issue and history,
 * and deleted — without script errors. A screenshot goes to test-artifacts/.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { launchBrowser } from '../helpers/browser.js';
import { testConfig } from '../helpers/config.js';
import { startFakeBigQuery } from '../helpers/fake-bigquery.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { startStack } from '../helpers/stack.js';

process.env.METADATA_SERVER_DETECTION = 'none';

const ARTIFACTS = 'test-artifacts';
mkdirSync(ARTIFACTS, { recursive: true });
const ADMIN = { username: 'admin', password: 'ops-alarms-page-pw' };
const TOKEN = 'jira-page-Ww77-never-shown';

const nats = await startNats();
const db = await createTestDb('ops_alarms_page');
const fake = await startFakeBigQuery({ databaseUrl: db.url, projectId: 'acme-prod' });
const dir = mkdtempSync(path.join(tmpdir(), 'ops-alarms-page-'));
const keyPath = path.join(dir, 'key.json');
writeFileSync(keyPath, JSON.stringify(fake.serviceAccount()));
fake.ops.seed({ project: 'acme-prod', datasets: [{ dataset_id: 'open_data', access: [{ role: 'READER', iamMember: 'allUsers' }] }] });

const stack = await startStack(testConfig({
  natsUrl: nats.url,
  extra: {
    admin: { enabled: true, ...ADMIN },
    database: { provider: 'bigquery', bigquery: { project_id: 'acme-prod', base_url: fake.url } },
    ops_agent: { enabled: true, config: { projects: [{ project_id: 'acme-prod', region: 'US', credentials_path: keyPath }], allowed_operations: ['find_public_datasets', 'forecast_monthly_costs'] } },
    alarms: { enabled: true, storage_path: path.join(dir, 'alarms.json'), default_recipients: ['oncall@acme.test'] },
    jira: { enabled: true, url: 'http://127.0.0.1:9/jira', email: 'bot@acme.test', api_token: TOKEN, project_key: 'DATA' },
  },
}), { edge: true, actors: ['identity', 'ops', 'alarms'] });
const browser = await launchBrowser();

t.teardown(async () => {
  await browser.close();
  await stack.stop();
  await fake.close();
  await db.drop();
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
});

t.test('the alarms panel: create, test, edit, history, delete', async (t) => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('dialog', (d) => void d.accept());
  await page.goto(`${stack.url}/ops`);
  await page.waitForFunction(() => (globalThis as any).document.body.dataset.state === 'login');
  t.equal(await page.locator('#alarm-new').isVisible(), false, 'nothing of the alarms before signing in');
  await page.fill('#username', ADMIN.username);
  await page.fill('#password', ADMIN.password);
  await page.click('#sign-in');
  await page.waitForSelector('#alarms-empty', { timeout: 30_000 });

  const status = await page.locator('#alarms-status').textContent();
  t.match(status, /Kept in the file .*alarms\.json \(not there yet/, 'where alarms are kept');
  t.match(status, /issues in DATA \(Bug, High\) at http:\/\/127\.0\.0\.1:9\/jira/, 'the tracker\'s settings');
  t.notOk((await page.content()).includes(TOKEN), 'never the token');

  // create
  await page.click('#alarm-new');
  t.equal(await page.locator('#alarm-recipients').inputValue(), 'oncall@acme.test', 'the default recipients are offered');
  t.equal(await page.locator('#alarm-minutes').isVisible(), false, 'minutes only for saturation');
  await page.selectOption('#alarm-kind', 'saturation_above');
  t.equal(await page.locator('#alarm-minutes').isVisible(), true);
  await page.selectOption('#alarm-kind', 'public_dataset');
  await page.fill('#alarm-name', 'Public data');
  await page.fill('#alarm-threshold', '0');
  await page.click('#alarm-try');
  await page.waitForSelector('#alarm-test-result:not([hidden]) b');
  t.match(await page.locator('#alarm-test-result').textContent(), /would FIRE the alarm.*1 public dataset: acme-prod:open_data \(allUsers READER\)/, 'a draft tested against the real measurement');
  t.match(await page.locator('#alarm-test-result').textContent(), /an issue would be opened in DATA/);
  await page.click('#alarm-save');
  await page.waitForSelector('#alarms-table tbody tr[data-id]');
  const row = page.locator('#alarms-table tbody tr[data-id]').first();
  const cells = await row.locator('td').allTextContents();
  t.match(cells[0], /Public data\*\/15 \* \* \* \* \(UTC\)/);
  t.equal(cells[1], 'Public datasets > 0');
  t.equal(cells[2], 'ok');
  t.equal(cells[5], '–', 'no issue yet');

  // a bad edit says why; a good one is shown
  await row.locator('[data-action="edit"]').click();
  await page.fill('#alarm-cron', '99 * * * *');
  await page.click('#alarm-save');
  await page.waitForSelector('#alarms-error:not([hidden])');
  t.match(await page.locator('#alarms-error').textContent(), /VALIDATION_FAILED: cron: minute: 99 is out of range/);
  await page.fill('#alarm-cron', '0 * * * *');
  await page.fill('#alarm-name', 'Public datasets');
  await page.click('#alarm-save');
  await page.waitForFunction(() => (globalThis as any).document.querySelector('#alarms-table tbody tr[data-id] b')?.textContent === 'Public datasets');
  t.equal(await page.locator('#alarms-error').isVisible(), false);

  // test the saved alarm from its row, and its history
  await page.locator('#alarms-table tbody tr[data-id] [data-action="test"]').click();
  await page.waitForFunction(() => /would FIRE/.test((globalThis as any).document.querySelector('#alarm-test-result')?.textContent ?? ''));
  await page.locator('#alarms-table tbody tr[data-id] [data-action="history"]').click();
  t.match(await page.locator('tr.history-row').textContent(), /Nothing happened yet/);
  await page.screenshot({ path: `${ARTIFACTS}/ops-alarms.png`, fullPage: true });

  // delete
  await page.locator('#alarms-table tbody tr[data-id] [data-action="delete"]').click();
  await page.waitForSelector('#alarms-empty');
  t.same(errors, [], 'no script errors');
  await page.close();
});

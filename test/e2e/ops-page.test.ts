/**
 * /ops in Chromium over a real stack (edge, identity, ops; the BigQuery stand-in behind it):
 * the page signs in through /admin/login, then draws each operation per project — a chart on a
 * sized canvas, the tables with the operation's numbers — and shows the denied project's error
 * inline in every section, without script errors. A screenshot goes to test-artifacts/.
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
const ADMIN = { username: 'admin', password: 'ops-page-pw' };
const TIB = 2 ** 40;
const STEP = 300_000;

const nats = await startNats();
const db = await createTestDb('ops_page');
const fake = await startFakeBigQuery({ databaseUrl: db.url, projectId: 'acme-prod' });
const dir = mkdtempSync(path.join(tmpdir(), 'ops-page-'));
const keyPath = path.join(dir, 'key.json');
writeFileSync(keyPath, JSON.stringify(fake.serviceAccount()));

const now = Date.now();
const b = Math.floor(now / STEP) * STEP;
fake.ops.seed({
  project: 'acme-prod',
  jobs: [
    { job_id: 'job_a', user_email: 'ana@acme.test', creation_time: new Date(now - 3_600_000).toISOString(), total_bytes_billed: 3 * TIB, total_slot_ms: 7_200_000, query: 'SELECT region, sum(amount) FROM sales GROUP BY region' },
    { job_id: 'job_b', user_email: 'bo@acme.test', creation_time: new Date(now - 26 * 3_600_000).toISOString(), total_bytes_billed: TIB, total_slot_ms: 60_000, query: 'SELECT * FROM events' },
  ],
  timeline: [
    { period_start: new Date(b - 6 * STEP).toISOString(), period_slot_ms: 95 * STEP },
    { period_start: new Date(b - 5 * STEP).toISOString(), period_slot_ms: 40 * STEP },
  ],
  reservations: [{ reservation_name: 'prod', slot_capacity: 100 }],
  datasets: [
    { dataset_id: 'open_data', access: [{ role: 'READER', iamMember: 'allUsers' }] },
    { dataset_id: 'internal', access: [{ role: 'OWNER', userByEmail: 'ana@acme.test' }] },
  ],
});
fake.ops.seed({ project: 'acme-locked', region: 'EU', denied: 'Access Denied: Project acme-locked: User does not have bigquery.jobs.create permission in project acme-locked.' });

const stack = await startStack(testConfig({
  natsUrl: nats.url,
  extra: {
    admin: { enabled: true, ...ADMIN },
    database: { provider: 'bigquery', bigquery: { project_id: 'acme-prod', base_url: fake.url } },
    ops_agent: {
      enabled: true,
      config: { projects: [{ project_id: 'acme-prod', region: 'US', credentials_path: keyPath }, { project_id: 'acme-locked', region: 'EU', credentials_path: keyPath }] },
    },
  },
}), { edge: true, actors: ['identity', 'ops'] });
const browser = await launchBrowser();

t.teardown(async () => {
  await browser.close();
  await stack.stop();
  await fake.close();
  await db.drop();
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
});

const OPS = ['get_expensive_queries', 'forecast_monthly_costs', 'find_public_datasets', 'check_slot_saturation'];

t.test('the console: signs in, a sized chart and tables per operation, the denied project\'s error inline', async (t) => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${stack.url}/ops`);
  await page.waitForFunction(() => (globalThis as any).document.body.dataset.state === 'login');
  t.ok(await page.locator('#login').isVisible(), 'a stranger is shown the sign-in');
  await page.fill('#username', ADMIN.username);
  await page.fill('#password', ADMIN.password);
  await page.click('#sign-in');
  await page.waitForFunction(() => (globalThis as any).document.body.dataset.state === 'ready', undefined, { timeout: 30_000 });
  // charts are made on the next frame
  await page.waitForFunction((n) => (globalThis as any).document.querySelectorAll('.project canvas').length === n && [...(globalThis as any).document.querySelectorAll('.project canvas')].every((c: any) => (globalThis as any).Chart.getChart(c)), 4, { timeout: 10_000 });

  for (const op of OPS) {
    const section = page.locator(`#op-${op}`);
    t.equal(await section.getAttribute('data-state'), 'ready', `${op} is shown`);
    const prod = section.locator('.project[data-target="acme-prod/US"]');
    const box = await prod.locator('canvas').boundingBox();
    t.ok(box && box.width > 200 && box.height >= 200, `${op}: the chart has a size (${box?.width}×${box?.height})`);
    t.ok(((await prod.locator('canvas').getAttribute('aria-label')) ?? '').length > 10, `${op}: the chart says what it shows`);
    const locked = section.locator('.project[data-target="acme-locked/EU"] .project-error');
    t.match(await locked.textContent(), /FORBIDDEN: permission denied on acme-locked/, `${op}: the denied project's error inline`);
  }

  const expensive = page.locator('#op-get_expensive_queries .project[data-target="acme-prod/US"] table').first();
  const firstRow = await expensive.locator('tbody tr').first().locator('td').allTextContents();
  t.equal(firstRow[0], 'job_a');
  t.equal(firstRow[1], 'ana@acme.test');
  t.ok(firstRow.includes('$18.75'), '3 TiB at $6.25');
  const pub = await page.locator('#op-find_public_datasets .project[data-target="acme-prod/US"] tbody tr').allTextContents();
  t.equal(pub.length, 1);
  t.match(pub[0], /open_data.*READER to allUsers/);
  const periods = await page.locator('#op-check_slot_saturation .project[data-target="acme-prod/US"] tbody tr').allTextContents();
  t.equal(periods.length, 1, 'one saturated period');
  t.match(periods[0], /95\.0 %/);
  t.match(await page.locator('#op-forecast_monthly_costs .project[data-target="acme-prod/US"] .note').textContent(), /Method: daily mean \$/);
  t.equal(await page.locator('#alarms').count(), 1, 'the alarms panel has its place');
  await page.screenshot({ path: `${ARTIFACTS}/ops-console.png`, fullPage: true });
  t.same(errors, [], 'no script errors');
  await page.close();
});

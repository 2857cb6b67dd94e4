/**
 * What a business user sees (issue 27), in Chromium against a real stack (NATS, PostgreSQL, the
 * scripted model): downloads from the dashboard's Assistant for every kind of signed-in person
 * (admin, database login made in the Tokens tab after the page loaded), and an anonymous widget
 * download that says why not without losing the answer.
 */
import { mkdirSync } from 'node:fs';
import ExcelJS from 'exceljs';
import t, { type Test } from 'tap';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { generateFernetKey } from '../../actors/lib/fernet.js';
import { downloaded, launchBrowser } from '../helpers/browser.js';
import { guardPage } from '../helpers/page-guard.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { ADMIN_URL, createTestDb } from '../helpers/pg.js';
import { startStack } from '../helpers/stack.js';

const ARTIFACTS = 'test-artifacts';
mkdirSync(ARTIFACTS, { recursive: true });
const tag = `${process.pid}_${Date.now().toString(36)}`;
const role = `biz_${tag}`;
const PASSWORD = 'biz-pw-1';
const ADMIN_PW = 'biz-admin-pw';

const nats = await startNats();
const db = await createTestDb('bizuser');
await db.pool.query(`
  CREATE TABLE sales (month date, region text, revenue numeric(12,2));
  INSERT INTO sales SELECT date '2024-01-01' + (m || ' month')::interval, r, 1000 + m * 37.5 + length(r) * 11
    FROM generate_series(0, 5) m, unnest(ARRAY['north', 'south', 'east']) r;
  CREATE ROLE ${role} LOGIN PASSWORD '${PASSWORD}';
  GRANT CONNECT ON DATABASE ${db.name} TO ${role};
  GRANT USAGE ON SCHEMA public TO ${role};
  GRANT SELECT ON sales TO ${role};
`);
const fake = await startFakeLlm();
const REGION_SQL = 'SELECT region, sum(revenue) AS revenue FROM sales GROUP BY region ORDER BY region';
fake.fallback(() => ({ text: sqlAnswer(REGION_SQL, 'Revenue per region.') }));
const stack = await startStack(testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: {
    admin: { enabled: true, username: 'admin', password: ADMIN_PW },
    plugins: { auth: { enabled: true, allowed_db_types: ['postgresql'], allowed_catalogs: [{ name: db.name, allowed_schemas: ['public'] }], auto_session: { enabled: false } } },
    config_db: { encryption_key: generateFernetKey() },
  },
}));
const browser: Browser = await launchBrowser();
t.teardown(async () => {
  await browser.close();
  await stack.stop();
  await fake.close();
  await db.drop();
  const { default: pg } = await import('pg');
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
  await admin.end();
  await nats.stop();
});

/** A page that fails the test on a script error, a CSP violation, and any request that leaves this machine. */
async function openPage(context: BrowserContext, url: string, t: Test): Promise<Page> {
  const page = await context.newPage();
  page.on('pageerror', (e) => t.fail(`page error: ${e.message}`));
  await guardPage(page, t);
  await page.goto(url);
  await page.locator('body[data-ui=ready]').waitFor();
  return page;
}

/** Ask on the dashboard's Assistant tab; the newest answer once it has arrived. */
async function askOnDashboard(page: Page, question: string) {
  await page.click('#tab-assistant');
  await page.fill('#view-assistant textarea.question', question);
  await page.click('#view-assistant button.go');
  const answer = page.locator('#view-assistant .answer').first();
  await answer.locator('.downloads').waitFor();
  return answer;
}

/** csv, xlsx and html of one answer, downloaded by clicking, read back. */
async function downloadAll(t: Test, page: Page, answer: ReturnType<Page['locator']>, who: string): Promise<void> {
  const file = async (format: string) => {
    const [download] = await Promise.all([
      page.waitForEvent('download', { timeout: 10_000 }).catch(async () => {
        throw new Error(`no ${format} download for ${who}: ${await answer.locator('.dl-status').textContent()}`);
      }),
      answer.locator(`.downloads button[data-format="${format}"]`).click(),
    ]);
    return { name: download.suggestedFilename(), data: await downloaded(download) };
  };
  const csv = await file('csv');
  t.match(csv.name, /\.csv$/, `${who}: a csv`);
  t.same(csv.data.toString('utf8').replace(/^\uFEFF/, '').trim().split(/\r?\n/)[0], 'region,revenue', `${who}: the csv's header`);
  const xlsx = await file('excel');
  t.match(xlsx.name, /\.xlsx$/, `${who}: an xlsx`);
  const book = new ExcelJS.Workbook();
  await book.xlsx.load(xlsx.data as unknown as ArrayBuffer);
  t.equal(book.worksheets[0]!.rowCount, 4, `${who}: a header and three regions in the xlsx`);
  const html = await file('html');
  t.match(html.name, /\.html$/, `${who}: an html file`);
  t.match(html.data.toString('utf8'), /<td[^>]*>north<\/td>/, `${who}: the html holds the rows`);
}

t.test('downloads from the dashboard: an admin signed in before the page loaded', async (t) => {
  const context = await browser.newContext({ acceptDownloads: true });
  t.teardown(() => context.close());
  const r = await context.request.post(`${stack.url}/admin/login`, { data: { username: 'admin', password: ADMIN_PW } });
  t.equal(r.status(), 200);
  const page = await openPage(context, stack.url, t);
  const answer = await askOnDashboard(page, 'Revenue by region');
  await downloadAll(t, page, answer, 'the admin');
});

t.test('downloads from the dashboard: a database login made in the Tokens tab, then the Assistant', async (t) => {
  const context = await browser.newContext({ acceptDownloads: true });
  t.teardown(() => context.close());
  const page = await openPage(context, stack.url, t);
  await page.click('#tab-tokens');
  await page.fill('#tok-user', role);
  await page.fill('#tok-pass', PASSWORD);
  await page.click('#tok-login button[type=submit]');
  await page.locator('#tok-main').waitFor();
  const answer = await askOnDashboard(page, 'Revenue by region, as a database user');
  await downloadAll(t, page, answer, 'the database user');
});

t.test('downloads from the dashboard: an admin who signed in in the Admin tab after the page loaded', async (t) => {
  const context = await browser.newContext({ acceptDownloads: true });
  t.teardown(() => context.close());
  const page = await openPage(context, stack.url, t);
  await page.click('#tab-admin');
  const admin = page.frameLocator('#view-admin iframe');
  await admin.locator('#username').fill('admin');
  await admin.locator('#password').fill(ADMIN_PW);
  await admin.locator('#login-form button[type=submit]').click();
  await admin.locator('#login').waitFor({ state: 'hidden' });
  const answer = await askOnDashboard(page, 'Revenue by region, as the admin of the tab');
  await downloadAll(t, page, answer, 'the admin of the Admin tab');
});

t.test('the Assistant widget, anonymous: a CSV click says why not, and the answer stays', async (t) => {
  const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1200, height: 900 } });
  t.teardown(() => context.close());
  const page = await context.newPage();
  page.on('pageerror', (e) => t.fail(`page error: ${e.message}`));
  await page.goto(`${stack.url}/demo`);
  const widget = page.locator('[data-cortado-widget="assistant"]');
  await widget.locator('.ctd-launch').click();
  await widget.locator('textarea.question').fill('Revenue by region');
  await widget.locator('button.go').click();
  const answer = widget.locator('.answer').first();
  await answer.locator('.downloads').waitFor();
  await answer.locator('.downloads button[data-format="csv"]').click();
  await answer.locator('.dl-status', { hasText: /sign/i }).waitFor({ timeout: 10_000 });
  t.match(await answer.locator('.dl-status').textContent(), /signed[- ]in/i, 'it says downloads need a sign-in');
  t.equal(await widget.locator('form.ctd-login:visible').count(), 0, `no login form replaces the answer (${await widget.locator('form.ctd-login').allTextContents()})`);
  t.ok(await answer.locator('table').isVisible(), 'the answer\'s table is still shown');
  t.ok(await answer.locator('.downloads button[data-format="csv"]').isDisabled(), 'the buttons say they will not work');
});

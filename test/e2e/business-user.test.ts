/**
 * What a business user sees (issue 27), in Chromium against a real stack (NATS, PostgreSQL, the
 * scripted model): downloads from the dashboard's Assistant for every kind of signed-in person
 * (admin, database login made in the Tokens tab after the page loaded, admin of the Admin tab),
 * and an anonymous widget download that says why not without losing the answer; charts by the
 * result's shape (a pivoted series with a legend and axis titles, a number card, no id drawn, a
 * share as a doughnut with percentages, "Make a chart" for two text columns) and numbers for
 * people; phones at 390 × 844 (/demo, the tab strip's hint, the Schedules actions). Screenshots
 * go to test-artifacts/biz-*.png; axe-core on the new views.
 */
import { mkdirSync } from 'node:fs';
import ExcelJS from 'exceljs';
import t, { type Test } from 'tap';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { downloaded, launchBrowser } from '../helpers/browser.js';
import { axeSerious } from '../helpers/axe.js';
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

/** The header's one sign-in (signin.js): the page reloads as the person signed in. */
async function headerSignIn(page: Page, method: string, user: string, password: string): Promise<void> {
  await page.click('#sign-in-open');
  await page.check(`input[name=sign-in-method][value=${method}]`);
  await page.fill('#sign-in-user', user);
  await page.fill('#sign-in-pass', password);
  await Promise.all([page.waitForEvent('load'), page.click('#sign-in-submit')]);
  await page.locator('body[data-ui=ready]').waitFor();
}

t.test('downloads from the dashboard: a database login made in the header, then the Assistant', async (t) => {
  const context = await browser.newContext({ acceptDownloads: true });
  t.teardown(() => context.close());
  const page = await openPage(context, stack.url, t);
  await headerSignIn(page, 'database', role, PASSWORD);
  await page.click('#tab-tokens');
  await page.locator('#tok-main:not([hidden])').waitFor();
  const answer = await askOnDashboard(page, 'Revenue by region, as a database user');
  await downloadAll(t, page, answer, 'the database user');
});

t.test('downloads from the dashboard: an admin who signed in from the header', async (t) => {
  const context = await browser.newContext({ acceptDownloads: true });
  t.teardown(() => context.close());
  const page = await openPage(context, stack.url, t);
  t.notOk(await page.locator('#tab-admin').isVisible(), 'no Admin tab before the administrator signs in');
  await headerSignIn(page, 'admin', 'admin', ADMIN_PW);
  t.ok(await page.locator('#tab-admin').isVisible(), 'the Admin tab once signed in');
  const answer = await askOnDashboard(page, 'Revenue by region, as the admin signed in from the header');
  await downloadAll(t, page, answer, 'the admin signed in from the header');
});

t.test('the Agent widget, signed in with a database account: csv, xlsx and html downloads', async (t) => {
  const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1200, height: 900 } });
  t.teardown(() => context.close());
  const page = await context.newPage();
  page.on('pageerror', (e) => t.fail(`page error: ${e.message}`));
  await page.goto(`${stack.url}/demo`);
  const widget = page.locator('[data-cortado-widget="agent"]');
  await widget.locator('.ctd-launch').click();
  const form = widget.locator('form.ctd-login');
  await form.waitFor();
  await form.locator('input[name=username]').fill(role);
  await form.locator('input[name=password]').fill(PASSWORD);
  await form.locator('button[type=submit]').click();
  await widget.locator('textarea.question').fill('Revenue by region, in the agent');
  await widget.locator('button.go').click();
  const answer = widget.locator('.answer').first();
  await answer.locator('.downloads').waitFor();
  await downloadAll(t, page, answer, 'the agent\'s database user');
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
  await answer.locator('.dl-status').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${ARTIFACTS}/biz-widget-download-anon.png` });
});

// ---- charts and numbers (items 2 and 3) ------------------------------------------------------------

await db.pool.query(`
  CREATE TABLE orders (id integer, customer_id integer, channel text, city text, amount numeric(12,2), created_at timestamptz);
  INSERT INTO orders SELECT g, 1000 + g % 7, (ARRAY['web', 'mobile', 'store'])[1 + g % 3], (ARRAY['Lyon', 'Nice'])[1 + g % 2], 10 + g * 1.5, timestamptz '2024-03-05 10:00:00+00' + (g || ' hours')::interval
    FROM generate_series(1, 40) g;
`);

const PHONE = { width: 390, height: 844 };

/** The dashboard, light or dark, at a size; asks one question with its scripted SQL; the answer once drawn. */
async function answerOf(t: Test, sql: string, question: string, opts: { theme?: 'light' | 'dark'; width?: number; height?: number } = {}) {
  const context = await browser.newContext({ viewport: { width: opts.width ?? 1440, height: opts.height ?? 900 }, colorScheme: opts.theme ?? 'light' });
  t.teardown(() => context.close());
  const page = await openPage(context, stack.url, t);
  fake.script({ text: sqlAnswer(sql, 'Here it is.') });
  await page.click('#tab-assistant');
  await page.fill('#view-assistant textarea.question', question);
  await page.click('#view-assistant button.go');
  const answer = page.locator('#view-assistant .answer').first();
  await answer.locator('table').waitFor();
  await page.waitForFunction(() => !(globalThis as any).document.querySelector('#view-assistant .answer[aria-busy]'));
  return { page, answer };
}

/** What Chart.js drew on the answer's canvas: type, series, legend, axis titles. */
function drawn(page: Page) {
  return page.waitForFunction(() => {
    const g = globalThis as any;
    const canvas = g.document.querySelector('#view-assistant .answer .chart canvas');
    const c = canvas && g.Chart?.getChart(canvas);
    if (!c) return undefined;
    return {
      type: c.config.type,
      labels: c.data.labels,
      series: c.data.datasets.map((d: any) => d.label),
      data: c.data.datasets.map((d: any) => d.data),
      legend: c.options.plugins.legend.display,
      x: c.options.scales?.x?.title?.display ? c.options.scales.x.title.text : null,
      y: c.options.scales?.y?.title?.display ? c.options.scales.y.title.text : null,
    };
  }).then((h) => h.jsonValue() as Promise<{ type: string; labels: string[]; series: string[]; data: number[][]; legend: boolean; x: string | null; y: string | null }>);
}

t.test('a (month, region, revenue) result: one line per region with a legend and axis titles; the insights speak of the same measure', async (t) => {
  const { page, answer } = await answerOf(t, 'SELECT month, region, revenue FROM sales ORDER BY month, region', 'Revenue by month and region');
  const c = await drawn(page);
  t.equal(c.type, 'line');
  t.same([...c.series].sort(), ['east', 'north', 'south'], 'a series per region');
  t.equal(c.labels.length, 6, 'each month once');
  t.ok(c.legend, 'a legend');
  t.equal(c.x, 'Month');
  t.equal(c.y, 'Revenue');
  t.equal(await answer.locator('.chart').getAttribute('data-measure'), 'Revenue');
  const insights = (await answer.locator('ul.insights li').allTextContents()).join(' ');
  t.match(insights, /revenue/i, `the insights talk about revenue too (${insights})`);
  // numbers and headers for people
  t.same(await answer.locator('thead th').allTextContents(), ['Month', 'Region', 'Revenue']);
  const first = await answer.locator('tbody tr').first().locator('td').allTextContents();
  t.notMatch(first[0], /T00|\+00|00:00/, `a date in the browser's locale (${first[0]})`);
  t.match(first[2], /^1,0\d\d\.\d\d$/, `money with two decimals (${first[2]})`);
  await page.screenshot({ path: `${ARTIFACTS}/biz-series-1440-light.png`, fullPage: true });
  t.equal(await answer.locator('.chart select.chart-series').inputValue(), '1', 'the series picker says region');
  await answer.locator('.chart select.chart-series').selectOption('');
  const flat = await drawn(page);
  t.same(flat.series, ['Revenue'], 'no series picked: one line, summed per month');
});

t.test('a phone in the dark: the pivoted series, its pickers and legend fit 390 px', async (t) => {
  const { page, answer } = await answerOf(t, 'SELECT month, region, revenue FROM sales ORDER BY month, region', 'Revenue by month and region', { theme: 'dark', ...PHONE });
  const c = await drawn(page);
  t.equal(c.series.length, 3);
  const width = await page.evaluate('document.documentElement.scrollWidth') as number;
  t.ok(width <= PHONE.width, `the page is ${width} px wide`);
  const box = await answer.locator('.chart canvas').boundingBox();
  t.ok(box && box.x >= 0 && box.x + box.width <= PHONE.width, `the chart within the screen (${JSON.stringify(box)})`);
  await answer.locator('.chart').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${ARTIFACTS}/biz-series-390-dark.png` });
  t.same(await axeSerious(page), [], 'axe: a chart with its pickers at 390 px in the dark, no serious or critical violation');
});

t.test('one row, one value: a number card with its label', async (t) => {
  const { page, answer } = await answerOf(t, 'SELECT sum(revenue) AS total_revenue FROM sales', 'Total revenue');
  const card = answer.locator('.chart .kpi');
  await card.waitFor();
  t.equal(await card.locator('.kpi-label').textContent(), 'Total revenue');
  t.match(await card.locator('.kpi-value').textContent(), /^\d{1,3}(,\d{3})*\.\d\d$/, 'the figure, with two decimals');
  t.equal(await answer.locator('.chart canvas').count(), 0, 'no chart axes for one number');
  await page.screenshot({ path: `${ARTIFACTS}/biz-kpi-1440-light.png` });
  t.same(await axeSerious(page), [], 'axe: a number card, no serious or critical violation');
});

t.test('raw rows: the id and the customer id are never drawn; ids read as plain numbers; times without +00', async (t) => {
  const { page, answer } = await answerOf(t, 'SELECT id, customer_id, city, amount, created_at FROM orders WHERE id <= 12 ORDER BY id', 'Orders');
  const c = await drawn(page);
  t.same(c.series.concat(c.y ?? []).filter((s) => /id/i.test(s)), [], `no id drawn (${c.series} / ${c.y})`);
  t.equal(c.y, 'Amount');
  t.same(await answer.locator('thead th').allTextContents(), ['ID', 'Customer ID', 'City', 'Amount', 'Created at']);
  const row = await answer.locator('tbody tr').first().locator('td').allTextContents();
  t.equal(row[1], '1001', 'a customer id without a thousands separator');
  t.notMatch(row[4], /\+00|T\d\d:/, `a time in the browser's locale (${row[4]})`);
});

t.test('a share: a doughnut whose parts say their percentage', async (t) => {
  const { page } = await answerOf(t, "SELECT channel, round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS share FROM orders GROUP BY channel ORDER BY channel", 'Share of orders by channel', { theme: 'dark' });
  const c = await drawn(page);
  t.equal(c.type, 'doughnut');
  t.ok(c.labels.every((l) => / \(\d+(\.\d)? %\)$/.test(l)), `each part with its percentage (${c.labels})`);
  t.ok(c.legend);
  await page.screenshot({ path: `${ARTIFACTS}/biz-share-1440-dark.png`, fullPage: true });
  t.same(await axeSerious(page), [], 'axe: a doughnut and its pickers in the dark theme, no serious or critical violation');
});

t.test('two text columns: no chart by itself, and a way to make one (the number of rows)', async (t) => {
  const { page, answer } = await answerOf(t, 'SELECT city, channel FROM orders ORDER BY id LIMIT 12', 'Cities and channels', { width: 390, height: 844 });
  const summary = answer.locator('.chart details summary');
  t.equal(await summary.textContent(), 'Make a chart');
  await summary.click();
  await answer.locator('.chart select.chart-measure').selectOption(String(-1));
  const c = await drawn(page);
  t.equal(c.y, 'Number of rows');
  t.same([...c.labels].sort(), ['Lyon', 'Nice']);
  t.equal(c.data[0]!.reduce((a, v) => a + (v ?? 0), 0), 12, 'every row counted');
  await page.screenshot({ path: `${ARTIFACTS}/biz-pick-390-light.png`, fullPage: true });
  t.same(await axeSerious(page), [], 'axe: "Make a chart" opened at 390 px, no serious or critical violation');
});

// ---- phones (item 8) ---------------------------------------------------------------------------------

t.test('phones: /demo fits 390 px, its launchers on screen, the open panel within the screen', async (t) => {
  for (const theme of ['light', 'dark'] as const) {
    const context = await browser.newContext({ viewport: PHONE, colorScheme: theme });
    t.teardown(() => context.close());
    const page = await context.newPage();
    await page.goto(`${stack.url}/demo`);
    const launcher = page.locator('[data-cortado-widget="assistant"] .ctd-launch');
    await launcher.waitFor();
    const width = await page.evaluate('document.documentElement.scrollWidth') as number;
    t.ok(width <= PHONE.width, `${theme}: /demo is ${width} px wide at ${PHONE.width}`);
    for (const w of ['assistant', 'agent']) {
      const box = await page.locator(`[data-cortado-widget="${w}"] .ctd-launch`).boundingBox();
      t.ok(box && box.x >= 0 && box.x + box.width <= PHONE.width && box.y + box.height <= PHONE.height, `${theme}: the ${w} launcher is on screen (${JSON.stringify(box)})`);
    }
    await launcher.click();
    const panel = page.locator('[data-cortado-widget="assistant"] .ctd-panel');
    await panel.waitFor();
    const p = await panel.boundingBox();
    t.ok(p && p.x >= 0 && p.x + p.width <= PHONE.width + 0.5 && p.y >= 0 && p.y + p.height <= PHONE.height + 0.5, `${theme}: the open panel is within the screen (${JSON.stringify(p)})`);
    await page.screenshot({ path: `${ARTIFACTS}/biz-demo-390-${theme}.png` });
  }
});

t.test('phones: the tab strip says it scrolls; the Schedules actions are all reachable', async (t) => {
  const made = await (await fetch(`${stack.url}/admin/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: ADMIN_PW }) }));
  const cookie = (made.headers.get('set-cookie') ?? '').split(';')[0]!;
  const csrf = ((await made.json()) as { csrf_token: string }).csrf_token;
  const issued = await (await fetch(`${stack.url}/admin/tokens`, { method: 'POST', headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrf }, body: JSON.stringify({ username: 'carol', label: 'carol' }) })).json() as { token: string };
  const created = await fetch(`${stack.url}/api/schedules`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${issued.token}` },
    body: JSON.stringify({ name: 'Weekly revenue by region for the leadership team', question: 'revenue by region', tables: ['sales'], cron: '0 9 * * 1', email_recipients: ['carol@example.com'], format: 'html' }),
  });
  t.equal(created.status, 201, `a schedule to list (${created.status})`);
  for (const theme of ['light', 'dark'] as const) {
    const context = await browser.newContext({ viewport: PHONE, colorScheme: theme });
    t.teardown(() => context.close());
    const page = await openPage(context, stack.url, t);
    const strip = page.locator('#main-tabs');
    const over = await strip.evaluate((s: any) => s.scrollWidth > s.clientWidth);
    t.ok(over, `${theme}: the tabs do not fit at 390 px`);
    t.match(await strip.getAttribute('data-overflow') ?? '', /end/, `${theme}: the strip says more tabs follow`);
    await page.screenshot({ path: `${ARTIFACTS}/biz-tabs-390-${theme}.png` });
    await page.click('#tab-schedules');
    await page.click('#sch-sign-in');
    await page.check('input[name=sign-in-method][value=token]');
    await page.fill('#sign-in-token', issued.token);
    await Promise.all([page.waitForEvent('load'), page.click('#sign-in-submit')]);
    await page.locator('body[data-ui=ready]').waitFor();
    await page.locator('#sch-main:not([hidden])').waitFor();
    t.match(await strip.getAttribute('data-overflow') ?? '', /start/, `${theme}: scrolled to the selected tab, the strip says tabs precede`);
    const actions = page.locator('#sch-main button:visible');
    await actions.first().waitFor();
    const n = await actions.count();
    const cut: string[] = [];
    for (let i = 0; i < n; i++) {
      const b = actions.nth(i);
      // only the page scrolls (down): a button past the right edge of a scrolled box is cut off
      const box = await b.boundingBox();
      if (!box || box.x < 0 || box.x + box.width > PHONE.width + 0.5) cut.push(`${(await b.textContent())?.trim()} ${JSON.stringify(box)}`);
    }
    t.same(cut, [], `${theme}: every Schedules button within the screen (${n} buttons)`);
    const width = await page.evaluate('document.documentElement.scrollWidth') as number;
    t.ok(width <= PHONE.width, `${theme}: the page is ${width} px wide`);
    await page.screenshot({ path: `${ARTIFACTS}/biz-schedules-390-${theme}.png`, fullPage: true });
  }
});

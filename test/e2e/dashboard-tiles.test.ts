/**
 * Dashboards as a business user meets them (issue 27, item 7), in Chromium against a real stack
 * (NATS, PostgreSQL, the scripted model): an answer pinned in one click ("Pin to dashboard" makes
 * "My dashboard" the first time, then pins to the one last used); tiles that show the chart or
 * the number, the rows and the SQL behind toggles, their header buttons plain icons; a grid
 * arranged with the keyboard (earlier, later, wide) and kept by the server; a date filter on
 * every tile with a date column, the others saying it does not apply; the filter's SQL guarded
 * and masked like any (a quoted column, checked days, a write refused, a masked column masked);
 * both themes, and a phone (390 px) without a horizontal scroll, axe without serious findings.
 */
import { mkdirSync } from 'node:fs';
import t, { type Test } from 'tap';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { MaskRuleCreate } from '../../protocol/subjects.js';
import { axeSerious } from '../helpers/axe.js';
import { launchBrowser } from '../helpers/browser.js';
import { guardPage } from '../helpers/page-guard.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { startStack } from '../helpers/stack.js';

const ARTIFACTS = 'test-artifacts';
mkdirSync(ARTIFACTS, { recursive: true });
const ADMIN_PW = 'tiles-admin-pw';
const PHONE = { width: 390, height: 844 };

const nats = await startNats();
const db = await createTestDb('dashtiles');
await db.pool.query(`
  CREATE TABLE sales (month date, region text, revenue numeric);
  INSERT INTO sales SELECT date '2024-01-01' + (g || ' month')::interval, CASE WHEN g % 2 = 0 THEN 'north' ELSE 'south' END, 100 + g * 10 FROM generate_series(0, 11) g;
  CREATE TABLE customers (id int, signed_up timestamptz, email text);
  INSERT INTO customers VALUES (1, '2024-01-05 10:00+00', 'ann@example.com'), (2, '2024-03-10 10:00+00', 'bob@example.com'), (3, '2024-06-20 10:00+00', 'cy@example.com');
`);
const fake = await startFakeLlm();
fake.fallback(() => ({ status: 500, message: 'unscripted' }));
const stack = await startStack(testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: {
    admin: { enabled: true, username: 'admin', password: ADMIN_PW },
    config_db: { encryption_key: generateFernetKey() },
  },
}));
await stack.running.bus.request(MaskRuleCreate, { field_pattern: 'customers.email', strategy: 'partial' }, { requestId: 'tiles-setup' });
const browser: Browser = await launchBrowser();
t.teardown(async () => {
  await browser.close();
  await stack.stop();
  await fake.close();
  await db.drop();
  await nats.stop();
});

/** A signed-in person (the admin's cookie session), light or dark, at a size. */
async function signedIn(t: Test, opts: { theme?: 'light' | 'dark'; viewport?: { width: number; height: number } } = {}): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: opts.viewport ?? { width: 1280, height: 900 }, colorScheme: opts.theme ?? 'light' });
  t.teardown(() => context.close());
  const r = await context.request.post(`${stack.url}/admin/login`, { data: { username: 'admin', password: ADMIN_PW } });
  if (r.status() !== 200) throw new Error(await r.text());
  return context;
}

async function openPage(context: BrowserContext, url: string, t: Test): Promise<Page> {
  const page = await context.newPage();
  page.on('pageerror', (e) => t.fail(`page error: ${e.message}`));
  await guardPage(page, t);
  await page.goto(url);
  await page.locator('body[data-ui=ready]').waitFor();
  return page;
}

/** Ask in the Assistant with the model's SQL scripted; the answer once its table is there. */
async function ask(page: Page, question: string, sql: string) {
  fake.script({ text: sqlAnswer(sql, 'Here it is.') });
  await page.fill('#view-assistant textarea.question', question);
  await page.click('#view-assistant button.go');
  const answer = page.locator('#view-assistant .answer').first();
  await answer.locator('.q', { hasText: question }).waitFor();
  await answer.locator('.meta').first().waitFor();
  return answer;
}

const tile = (page: Page, title: string) => page.locator('#dash-tiles article.tile', { has: page.locator('h3', { hasText: title }) });
const titles = (page: Page) => page.locator('#dash-tiles article.tile h3').allTextContents();
const settled = (page: Page) => page.waitForFunction(() => {
  const d = (globalThis as any).document;
  const all = [...d.querySelectorAll('#dash-tiles article.tile')];
  return all.length > 0 && all.every((a: any) => !a.hasAttribute('aria-busy') && Number(a.dataset.runs ?? 0) > 0);
});

const BY_MONTH = 'SELECT month, sum(revenue) AS revenue FROM sales GROUP BY month ORDER BY month';
const BY_REGION = 'SELECT region, sum(revenue) AS revenue FROM sales GROUP BY region ORDER BY region';
const TOTAL = 'SELECT sum(revenue) AS total_revenue FROM sales';

t.test('pin three answers in one click each, see them as tiles, arrange them, filter them by date', async (t) => {
  const context = await signedIn(t);
  const page = await openPage(context, `${stack.url}/#assistant`, t);

  const first = await ask(page, 'Revenue by month', BY_MONTH);
  const pin = first.locator('button.pin');
  t.equal(await pin.innerText(), 'Pin to dashboard', 'an answer offers to pin it');
  t.equal(await first.locator('select.pin-to').isVisible(), false, 'no dashboard yet: nothing to choose');
  await pin.click();
  await first.locator('.pin-status', { hasText: 'Pinned to "My dashboard".' }).waitFor();
  for (const [q, sql] of [['Revenue per region', BY_REGION], ['Total revenue', TOTAL]] as const) {
    const a = await ask(page, q, sql);
    await a.locator('button.pin').click();
    await a.locator('.pin-status', { hasText: 'Pinned to "My dashboard".' }).waitFor();
  }
  const list = await (await context.request.get(`${stack.url}/api/dashboards`)).json();
  t.same(list.dashboards.map((d: any) => d.name), ['My dashboard'], 'one dashboard, made by the first pin');
  t.same(list.dashboards[0].tiles.map((x: any) => [x.title, x.sql]), [['Revenue by month', BY_MONTH], ['Revenue per region', BY_REGION], ['Total revenue', TOTAL]], 'each answer pinned as its SQL, titled with its question');

  await page.click('#tab-dashboards');
  await settled(page);
  t.same(await titles(page), ['Revenue by month', 'Revenue per region', 'Total revenue'], 'the dashboard last pinned to opens, its tiles in order');

  // the chart or the number, the SQL behind a toggle
  const month = tile(page, 'Revenue by month');
  t.equal(await month.locator('figure.chart').getAttribute('data-type'), 'line', 'a month series: the answer view\'s line chart');
  t.equal(await month.locator('.chart-box canvas').isVisible(), true, 'the chart drawn');
  t.equal(await month.locator('pre.sql').isVisible(), false, 'the SQL is not on show');
  t.equal(await month.locator('table').isVisible(), false, 'nor the rows, under a chart');
  await month.locator('details.tile-sql summary').click();
  t.equal(await month.locator('pre.sql').isVisible(), true, '"Show the SQL" shows it');
  t.match(await month.locator('pre.sql').innerText(), /GROUP BY month/);
  t.equal(await tile(page, 'Revenue per region').locator('figure.chart').getAttribute('data-type'), 'bar');
  const total = tile(page, 'Total revenue');
  t.match(await total.locator('.kpi-value').innerText(), /^1,860(\.00)?$/, 'one value: the number, large');
  t.equal(await total.locator('table').count(), 0, 'a number tile has no table under it');

  // the tile's own header: icon buttons, not the page's filled buttons
  const bg = await month.locator('.tile-tools button').first().evaluate((b) => (globalThis as any).getComputedStyle(b).backgroundColor);
  t.equal(bg, 'rgba(0, 0, 0, 0)', `the header's buttons are not filled (${bg})`);
  const h3 = await month.locator('h3').evaluate((h) => (globalThis as any).getComputedStyle(h).fontSize);
  t.equal(h3, '16px', 'the tile title is a heading of the tile\'s size');

  // arrange with the keyboard; the server keeps the order and the sizes
  await total.locator('button.move-earlier').focus();
  await page.keyboard.press('Enter');
  await page.locator('#dash-flash', { hasText: 'moved to place 2 of 3' }).waitFor();
  await page.keyboard.press('Enter'); // the focus stayed on the button: once more
  await page.locator('#dash-flash', { hasText: 'moved to place 1 of 3' }).waitFor();
  t.same(await titles(page), ['Total revenue', 'Revenue by month', 'Revenue per region'], 'moved to the front');
  t.equal(await page.evaluate(() => (globalThis as any).document.activeElement?.getAttribute('aria-label')), 'Move Total revenue earlier', 'the focus stays on the button pressed');
  await month.locator('button.tile-size').click();
  await page.locator('#dash-flash', { hasText: '"Revenue by month" is wide now.' }).waitFor();
  t.equal(await month.locator('button.tile-size').getAttribute('aria-pressed'), 'true');
  await page.reload();
  await page.locator('body[data-ui=ready]').waitFor();
  await settled(page);
  t.same(await titles(page), ['Total revenue', 'Revenue by month', 'Revenue per region'], 'the order, after a reload');
  const wide = await tile(page, 'Revenue by month').boundingBox();
  const small = await tile(page, 'Total revenue').boundingBox();
  t.ok(wide && small && wide.width > small.width * 1.8, `the wide tile spans two columns (${wide?.width} against ${small?.width})`);
  await page.screenshot({ path: `${ARTIFACTS}/dash-tiles-1280-light.png`, fullPage: true });
  t.same(await axeSerious(page), [], 'axe: the dashboard of tiles, no serious or critical violation');

  // the date filter: on the tile with a date column; the others say it does not apply
  await page.fill('#dash-from', '2024-03-01');
  await page.fill('#dash-to', '2024-05-31');
  await page.click('#dash-filter-apply');
  await page.locator('#dash-filter-state', { hasText: 'show only the rows from' }).waitFor();
  await settled(page);
  await page.waitForFunction(() => [...(globalThis as any).document.querySelectorAll('#dash-tiles article.tile')].every((a: any) => a.dataset.filter !== 'none' && !a.hasAttribute('aria-busy')));
  const filtered = tile(page, 'Revenue by month');
  t.equal(await filtered.getAttribute('data-filter'), 'applied');
  t.match(await filtered.locator('.tile-note').innerText(), /^Only Month from .*2024 to .*2024\.$/, 'the tile says what it shows');
  t.match(await filtered.locator('.meta').innerText(), /^3 rows/, 'March, April and May');
  for (const name of ['Revenue per region', 'Total revenue']) {
    t.equal(await tile(page, name).getAttribute('data-filter'), 'not-applicable', `${name}: no date column`);
    t.equal(await tile(page, name).locator('.tile-note').innerText(), 'The date filter does not apply: this tile has no date column.');
  }
  t.match(await total.locator('.kpi-value').innerText(), /^1,860/, 'the number without a date column is the whole');
  await page.screenshot({ path: `${ARTIFACTS}/dash-tiles-filtered-1280-light.png`, fullPage: true });
  await page.click('#dash-filter-clear');
  await page.locator('#dash-filter-state', { hasText: 'All dates.' }).waitFor();
  await page.waitForFunction(() => [...(globalThis as any).document.querySelectorAll('#dash-tiles article.tile')].every((a: any) => a.dataset.filter === 'none' && !a.hasAttribute('aria-busy')));
  t.match(await tile(page, 'Revenue by month').locator('.meta').innerText(), /^12 rows/, 'cleared: every month again');
});

t.test('the filter\'s SQL is any SQL: quoted, checked, guarded and masked', async (t) => {
  const context = await signedIn(t);
  const csrf = (await (await context.request.get(`${stack.url}/api/workspace`)).json()).csrf_token as string;
  const run = async (body: unknown) => {
    const r = await context.request.post(`${stack.url}/api/tiles/run`, { data: body, headers: { 'x-csrf-token': csrf } });
    return { status: r.status(), body: await r.json() };
  };
  const ok = await run({ sql: 'SELECT id, signed_up, email FROM customers ORDER BY id', date_range: { column: 'signed_up', from: '2024-03-01' } });
  t.equal(ok.status, 200);
  t.same(ok.body.rows.map((r: any[]) => r[0]), [2, 3], 'a timestamp column compared by day');
  t.same(ok.body.masked.map((m: any) => m.column), ['email'], 'the mask rule still applies through the filter');
  t.notOk(JSON.stringify(ok.body.rows).includes('bob@example.com'), 'no e-mail address in the clear');

  const evil = await run({ sql: 'SELECT month FROM sales', date_range: { column: 'month" FROM sales; DROP TABLE sales; --', from: '2024-01-01' } });
  t.ok(evil.status >= 400 && evil.status < 500, `a column name is quoted, never spliced (${evil.status} ${evil.body.error?.code})`);
  t.equal((await db.pool.query('SELECT count(*)::int AS n FROM sales')).rows[0].n, 12, 'the table is all there');
  const day = await run({ sql: 'SELECT month FROM sales', date_range: { column: 'month', to: '2024-02-30' } });
  t.equal(day.status, 400, 'a day that does not exist');
  const text = await run({ sql: 'SELECT month FROM sales', date_range: { column: 'month', from: "2024-01-01' OR '1'='1" } });
  t.equal(text.status, 400, 'a day is YYYY-MM-DD and nothing else');
  const write = await run({ sql: 'DELETE FROM sales', date_range: { column: 'month', from: '2024-01-01' } });
  t.equal(write.body.error?.code, 'SQL_REJECTED', 'a write wrapped by the filter is still refused by the guard');
  const anon = await fetch(`${stack.url}/api/tiles/run`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sql: 'SELECT 1' }) });
  t.equal(anon.status, 401, 'visitors do not run SQL');
});

t.test('a phone, light and dark: the tiles, their tools and the filter fit 390 px; axe is quiet', async (t) => {
  for (const theme of ['light', 'dark'] as const) {
    const context = await signedIn(t, { theme, viewport: PHONE });
    const page = await openPage(context, `${stack.url}/#dashboards`, t);
    await settled(page);
    t.equal((await titles(page)).length, 3, `${theme}: the three tiles`);
    const width = await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth);
    t.ok(width <= PHONE.width, `${theme}: the page is ${width} px wide`);
    const cut = await page.locator('#dash-tiles button:visible, #dash-filter input, #dash-filter button').evaluateAll((bs, w) => bs
      .map((b) => b.getBoundingClientRect()).filter((r) => r.left < 0 || r.right > (w as number)).length, PHONE.width);
    t.equal(cut, 0, `${theme}: every tile tool and filter control on screen`);
    const wide = await tile(page, 'Revenue by month').boundingBox();
    t.ok(wide && wide.width <= PHONE.width, `${theme}: a wide tile is one column on a phone`);
    await page.screenshot({ path: `${ARTIFACTS}/dash-tiles-390-${theme}.png`, fullPage: true });
    t.same(await axeSerious(page), [], `axe: tiles at 390 px, ${theme}, no serious or critical violation`);
    await context.close();
  }
});

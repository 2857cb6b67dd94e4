/**
 * Accessibility of every page, in Chromium with axe-core (served from node_modules, injected into
 * the page): no serious or critical violation on /, each of its tabs (Tokens with plugins.auth on,
 * Dashboards with a tile), /admin signed in (each tab), /analytics, /demo and /ops, each in the
 * light and the dark theme; /admin and /analytics at 360 px wide scroll only down. No page breaks
 * its CSP or asks another host (test/helpers/page-guard.ts). A screenshot of each page goes to
 * test-artifacts/ (never into docs/: the README's images come from scripts/screenshots.ts).
 */
import { mkdirSync } from 'node:fs';
import t, { type Test } from 'tap';
import type { Page } from 'playwright-core';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { launchBrowser } from '../helpers/browser.js';
import { axeSerious } from '../helpers/axe.js';
import { guardPage } from '../helpers/page-guard.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { ADMIN_URL, createTestDb } from '../helpers/pg.js';
import { startStack } from '../helpers/stack.js';

const ARTIFACTS = 'test-artifacts';
mkdirSync(ARTIFACTS, { recursive: true });

const nats = await startNats();
const db = await createTestDb('a11y');
await db.pool.query(`
  CREATE TABLE sales (month date, region text, revenue numeric);
  INSERT INTO sales SELECT date '2024-01-01' + (g || ' month')::interval, CASE WHEN g % 2 = 0 THEN 'north' ELSE 'south' END, 100 + g * 10 FROM generate_series(0, 11) g;
`);
// a database account to sign in with (the Tokens tab is a database sign-in's)
const role = `a11y_${process.pid}_${Date.now().toString(36)}`;
await db.pool.query(`CREATE ROLE ${role} LOGIN PASSWORD 'a11y-db-pw'; GRANT CONNECT ON DATABASE ${db.name} TO ${role}; GRANT USAGE ON SCHEMA public TO ${role}; GRANT SELECT ON sales TO ${role};`);
const fake = await startFakeLlm();
fake.fallback(() => ({ text: sqlAnswer('SELECT month, sum(revenue) AS revenue FROM sales GROUP BY month ORDER BY month', 'Revenue per month.') }));
const stack = await startStack(testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: {
    admin: { enabled: true, username: 'admin', password: 'a11y-admin-pw' },
    analytics: { enabled: true, access: 'public', postgresql: { host: db.host, port: db.port, database: db.name, user: db.user } },
    plugins: { auth: { enabled: true } },
    config_db: { encryption_key: generateFernetKey() },
    ops_agent: { enabled: true },
  },
}));
const browser = await launchBrowser();
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


async function check(t: Test, page: Page, what: string): Promise<void> {
  const list = await axeSerious(page);
  t.same(list, [], `${what}: no serious or critical violations`);
}

const THEMES = ['light', 'dark'] as const;
type Theme = (typeof THEMES)[number];

/** The page's theme as it paints: the body's background is the dark one or not. */
async function paintedTheme(page: Page): Promise<Theme> {
  const bg = await page.evaluate('getComputedStyle(document.body).backgroundColor') as string;
  const [r = 255, g = 255, b = 255] = (bg.match(/\d+/g) ?? []).map(Number);
  return (r + g + b) / 3 < 100 ? 'dark' : 'light';
}

/** A page of its own, guarded, in this colour scheme (the pages follow prefers-color-scheme without a choice). */
async function openIn(t: Test, theme: Theme, url: string, viewport = { width: 1280, height: 900 }): Promise<Page> {
  const context = await browser.newContext({ viewport, colorScheme: theme });
  t.teardown(() => context.close());
  const page = await context.newPage();
  await guardPage(page, t);
  await page.goto(url);
  return page;
}

t.test('the dashboard (/) and each of its tabs, light and dark', async (t) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  t.teardown(() => context.close());
  // signed in as the administrator and with a database account, so every tab is there to check
  // (Admin, Warehouse ops: the administrator's; Tokens: a database sign-in's)
  for (const [path, data] of [['/admin/login', { username: 'admin', password: 'a11y-admin-pw' }], ['/auth/login', { username: role, password: 'a11y-db-pw' }]] as const) {
    const r = await context.request.post(`${stack.url}${path}`, { data });
    t.equal(r.status(), 200, `${path}: ${await r.text()}`);
  }
  const page = await context.newPage();
  await guardPage(page, t);
  await page.goto(stack.url);
  await page.locator('body[data-ui=ready]').waitFor();
  // one answer on the page, so the answer view is checked with a table and a chart in it
  await page.click('#tab-assistant');
  await page.fill('#assistant-root textarea', 'Revenue per month?');
  await page.press('#assistant-root textarea', 'Enter');
  await page.locator('#assistant-root table tbody tr').first().waitFor();
  // a dashboard with a tile, drawn
  await page.click('#tab-dashboards');
  await page.fill('#dash-name', 'Sales');
  await page.click('#dash-new button[type=submit]');
  await page.locator('#tile-form:not([hidden])').waitFor();
  await page.fill('#tile-title', 'Revenue by month');
  await page.selectOption('#tile-kind', 'question');
  await page.fill('#tile-text', 'Revenue per month?');
  await page.click('#tile-add');
  // the tile's layout: its chart or number, or its rows when no chart suits (the rest behind toggles)
  await page.locator('#dash-tiles .tile[data-runs="1"] :is(figure.chart, table tbody tr)').first().waitFor();
  await page.click('#tab-home');
  await page.locator('#home-history li').first().waitFor();

  const views = await page.locator('#main-tabs [role=tab]:visible').evaluateAll((bs) => bs.map((b) => (b as any).dataset.view as string));
  t.same(views, ['home', 'assistant', 'dashboards', 'schedules', 'analytics', 'ops', 'demo', 'tokens', 'admin'], 'every tab is there to check (Tokens: plugins.auth is on, and a database sign-in holds)');
  for (const theme of THEMES) {
    if ((await paintedTheme(page)) !== theme) await page.click('#theme-toggle');
    t.equal(await paintedTheme(page), theme, `the ${theme} theme`);
    for (const view of views) {
      await page.click(`#tab-${view}`);
      // the Tokens tab's first child is its (empty) status line: its list says it is drawn
      await page.locator(view === 'tokens' ? '#tok-main:not([hidden])' : `#view-${view} > *`).first().waitFor();
      if (await page.locator(`#view-${view} iframe`).count()) await page.frameLocator(`#view-${view} iframe`).locator('body').waitFor();
      await check(t, page, `the ${view} tab, ${theme}`);
      await page.screenshot({ path: `${ARTIFACTS}/dashboard-${view}-${theme}.png`, fullPage: true });
    }
  }
});

t.test('/admin signed in, every tab, light and dark', async (t) => {
  for (const theme of THEMES) {
    const page = await openIn(t, theme, `${stack.url}/admin`);
    await page.locator('#login:not([hidden])').waitFor();
    t.equal(await paintedTheme(page), theme, `/admin is ${theme}`);
    await check(t, page, `the sign-in form, ${theme}`);
    await page.fill('#username', 'admin');
    await page.fill('#password', 'a11y-admin-pw');
    await page.click('#sign-in');
    await page.locator('#panel:not([hidden])').waitFor();
    const tabs = await page.locator('#panel [role=tablist] [role=tab]').evaluateAll((bs) => bs.map((b) => (b as any).dataset.tab!));
    t.ok(tabs.includes('ldap'), 'the LDAP / SSO tab is there');
    t.equal(await page.textContent('#panel [role=tab][data-tab=ldap]'), 'LDAP / SSO');
    for (const tab of tabs) {
      await page.click(`#panel [role=tab][data-tab=${tab}]`);
      await page.locator(`#tab-${tab}:not([hidden])`).waitFor();
      await page.waitForTimeout(0);
      await check(t, page, `admin ${tab}, ${theme}`);
      await page.screenshot({ path: `${ARTIFACTS}/admin-${tab}-${theme}.png`, fullPage: true });
    }
  }
});

t.test('/analytics, /demo and /ops, light and dark', async (t) => {
  for (const theme of THEMES) {
    for (const path of ['/analytics', '/demo', '/ops']) {
      const page = await openIn(t, theme, `${stack.url}${path}`);
      await page.waitForLoadState('load');
      if (path !== '/demo') await page.locator('body[data-state=ready], body[data-state=login], body[data-state=denied]').waitFor();
      t.equal(await paintedTheme(page), theme, `${path} is ${theme}`);
      await check(t, page, `${path}, ${theme}`);
      await page.screenshot({ path: `${ARTIFACTS}/page-${path.slice(1)}-${theme}.png`, fullPage: true });
    }
  }
});

t.test('/admin and /analytics at 360 px: nothing wider than the screen', async (t) => {
  const width = (page: Page) => page.evaluate('document.scrollingElement.scrollWidth') as Promise<number>;
  const analytics = await openIn(t, 'light', `${stack.url}/analytics`, { width: 360, height: 740 });
  await analytics.locator('body[data-state=ready]').waitFor();
  t.ok(await width(analytics) <= 360, `/analytics: ${await width(analytics)} px`);
  await analytics.screenshot({ path: `${ARTIFACTS}/page-analytics-360.png`, fullPage: true });

  const admin = await openIn(t, 'light', `${stack.url}/admin`, { width: 360, height: 740 });
  await admin.locator('#login:not([hidden])').waitFor();
  t.ok(await width(admin) <= 360, `/admin sign-in: ${await width(admin)} px`);
  await admin.fill('#username', 'admin');
  await admin.fill('#password', 'a11y-admin-pw');
  await admin.click('#sign-in');
  await admin.locator('#panel:not([hidden])').waitFor();
  const tabs = await admin.locator('#panel [role=tablist] [role=tab]').evaluateAll((bs) => bs.map((b) => (b as any).dataset.tab!));
  for (const tab of tabs) {
    await admin.click(`#panel [role=tab][data-tab=${tab}]`);
    await admin.locator(`#tab-${tab}:not([hidden])`).waitFor();
    await admin.waitForTimeout(100);
    t.ok(await width(admin) <= 360, `/admin ${tab}: ${await width(admin)} px`);
  }
  await admin.screenshot({ path: `${ARTIFACTS}/admin-360.png`, fullPage: true });
});

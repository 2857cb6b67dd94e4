/**
 * Accessibility of every page, in Chromium with axe-core (served from node_modules, injected into
 * the page): no serious or critical violation on /, its tabs, /admin signed in (each tab),
 * /analytics, /demo and /ops when this build has them, in the light and the dark theme. A
 * screenshot of each page goes to test-artifacts/, and the dashboard's to docs/images/dashboard.png
 * (the README shows it).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import t, { type Test } from 'tap';
import type { Page } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { startStack } from '../helpers/stack.js';

const ARTIFACTS = 'test-artifacts';
mkdirSync(ARTIFACTS, { recursive: true });
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const nats = await startNats();
const db = await createTestDb('a11y');
await db.pool.query(`
  CREATE TABLE sales (month date, region text, revenue numeric);
  INSERT INTO sales SELECT date '2024-01-01' + (g || ' month')::interval, CASE WHEN g % 2 = 0 THEN 'north' ELSE 'south' END, 100 + g * 10 FROM generate_series(0, 11) g;
`);
const fake = await startFakeLlm();
fake.fallback(() => ({ text: sqlAnswer('SELECT month, sum(revenue) AS revenue FROM sales GROUP BY month ORDER BY month', 'Revenue per month.') }));
const stack = await startStack(testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: { admin: { enabled: true, username: 'admin', password: 'a11y-admin-pw' }, analytics: { enabled: true, access: 'public' } },
}));
const browser = await launchBrowser();
t.teardown(async () => {
  await browser.close();
  await stack.stop();
  await fake.close();
  await db.drop();
  await nats.stop();
});

interface Violation { id: string; impact: string | null; help: string; nodes: Array<{ target: string[] }> }

/** axe on the page as it is now: the serious and critical violations, one line each. */
async function serious(page: Page): Promise<string[]> {
  // evaluated over the DevTools protocol: the page's strict CSP (no inline script) stays as served
  if (!(await page.evaluate('typeof window.axe === "object"'))) await page.evaluate(AXE);
  const found = await page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations)`) as Violation[];
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join('; ')})`);
}

async function check(t: Test, page: Page, what: string): Promise<void> {
  const list = await serious(page);
  t.same(list, [], `${what}: no serious or critical violations`);
}

const exists = async (path: string): Promise<boolean> => (await fetch(`${stack.url}${path}`, { method: 'HEAD' })).ok;

t.test('the dashboard (/) and each of its tabs, light and dark', async (t) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  t.teardown(() => context.close());
  const page = await context.newPage();
  await page.goto(stack.url);
  await page.locator('body[data-ui=ready]').waitFor();
  // one answer on the page, so the answer view is checked with a table and a chart in it
  await page.click('#tab-assistant');
  await page.fill('#assistant-root textarea', 'Revenue per month?');
  await page.press('#assistant-root textarea', 'Enter');
  await page.locator('#assistant-root table tbody tr').first().waitFor();
  await page.click('#tab-home');
  await page.locator('#home-history li').first().waitFor();
  await check(t, page, 'Home');
  await page.screenshot({ path: 'docs/images/dashboard.png' });
  await page.screenshot({ path: `${ARTIFACTS}/dashboard-home.png`, fullPage: true });
  for (const view of ['assistant', 'dashboards', 'schedules', 'tokens']) {
    const tab = page.locator(`#tab-${view}`);
    if (!(await tab.isVisible())) continue;
    await tab.click();
    await page.locator(`#view-${view} > *`).first().waitFor();
    await check(t, page, `the ${view} tab`);
    await page.screenshot({ path: `${ARTIFACTS}/dashboard-${view}.png`, fullPage: true });
  }
  await page.click('#theme-toggle');
  await page.click('#tab-assistant');
  await check(t, page, 'the assistant tab, dark');
  await page.click('#tab-home');
  await check(t, page, 'Home, dark');
  await page.screenshot({ path: `${ARTIFACTS}/dashboard-home-dark.png`, fullPage: true });
});

t.test('/admin signed in, every tab', async (t) => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  t.teardown(() => page.close());
  await page.goto(`${stack.url}/admin`);
  await page.locator('#login:not([hidden])').waitFor();
  await check(t, page, 'the sign-in form');
  await page.fill('#username', 'admin');
  await page.fill('#password', 'a11y-admin-pw');
  await page.click('#sign-in');
  await page.locator('#panel:not([hidden])').waitFor();
  const tabs = await page.locator('#panel nav.tabs button[data-tab]').evaluateAll((bs) => bs.map((b) => (b as any).dataset.tab!));
  t.ok(tabs.includes('ldap'), 'the LDAP / SSO tab is there');
  t.equal(await page.textContent('#panel nav.tabs button[data-tab=ldap]'), 'LDAP / SSO');
  for (const tab of tabs) {
    await page.click(`#panel nav.tabs button[data-tab=${tab}]`);
    await page.locator(`#tab-${tab}:not([hidden])`).waitFor();
    await page.waitForTimeout(0);
    await check(t, page, `admin ${tab}`);
    await page.screenshot({ path: `${ARTIFACTS}/admin-${tab}.png`, fullPage: true });
  }
});

t.test('/analytics, /demo and /ops', async (t) => {
  for (const path of ['/analytics', '/demo', '/ops']) {
    if (!(await exists(path))) {
      t.comment(`${path} is not in this build`);
      continue;
    }
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${stack.url}${path}`);
    await page.waitForLoadState('load');
    await page.locator('body').waitFor();
    await check(t, page, path);
    await page.screenshot({ path: `${ARTIFACTS}/page-${path.slice(1)}.png`, fullPage: true });
    await page.close();
  }
});

/**
 * The standalone dashboard (/) in Chromium against a real stack with a scripted model: tabs per
 * ui.sections (and the `bigquery-ops` spelling) and per feature (a tab appears only when its
 * feature is on: analytics, the ops console, Tokens, Admin), keyboard tab navigation with a hash per tab,
 * history and favourites for a visitor (this browser) and for a signed-in person (the server:
 * after a reload and in another browser context), a dashboard of two tiles refreshed on open,
 * the Tokens tab (issue → copy the MCP configuration → the token works on /mcp/sse → revoked:
 * 401), the dark theme, and no horizontal scroll at 360 px.
 */
import { mkdirSync } from 'node:fs';
import t, { type Test } from 'tap';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { launchBrowser } from '../helpers/browser.js';
import { guardPage } from '../helpers/page-guard.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { ADMIN_URL, createTestDb } from '../helpers/pg.js';
import { call, startStack, type Stack } from '../helpers/stack.js';

const ARTIFACTS = 'test-artifacts';
mkdirSync(ARTIFACTS, { recursive: true });
const tag = `${process.pid}_${Date.now().toString(36)}`;
const role = `dash_${tag}`;
const PASSWORD = 'dash-pw-1';
const ADMIN_PW = 'dash-admin-pw';

const nats = await startNats();
const db = await createTestDb('dashpage');
await db.pool.query(`
  CREATE TABLE sales (month date, region text, revenue numeric);
  INSERT INTO sales SELECT date '2024-01-01' + (g || ' month')::interval, CASE WHEN g % 2 = 0 THEN 'north' ELSE 'south' END, 100 + g * 10 FROM generate_series(0, 11) g;
  CREATE ROLE ${role} LOGIN PASSWORD '${PASSWORD}';
  GRANT CONNECT ON DATABASE ${db.name} TO ${role};
  GRANT USAGE ON SCHEMA public TO ${role};
  GRANT SELECT ON sales TO ${role};
`);
const fake = await startFakeLlm();
fake.fallback(() => ({ text: sqlAnswer('SELECT region, sum(revenue) AS revenue FROM sales GROUP BY region ORDER BY region', 'Revenue per region.') }));
const base = (extra: Record<string, unknown> = {}) => testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: {
    admin: { enabled: true, username: 'admin', password: ADMIN_PW },
    plugins: { auth: { enabled: true } },
    config_db: { encryption_key: generateFernetKey() },
    ...extra,
  },
});
const stack = await startStack(base());
const stacks: Stack[] = [stack];
const browser: Browser = await launchBrowser();
t.teardown(async () => {
  await browser.close();
  for (const s of stacks) await s.stop();
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

/** A browser context signed in to the admin panel (cookie), as a person who reloads or comes back. */
async function adminContext(): Promise<BrowserContext> {
  const context = await browser.newContext();
  const r = await context.request.post(`${stack.url}/admin/login`, { data: { username: 'admin', password: ADMIN_PW } });
  if (r.status() !== 200) throw new Error(await r.text());
  return context;
}

const visibleTabs = (page: Page) => page.locator('#main-tabs [role=tab]:visible').evaluateAll((bs) => bs.map((b) => (b as any).dataset.view));

t.test('tabs per ui.sections; arrows, Home and End move between them; each has a hash', async (t) => {
  const context = await browser.newContext();
  t.teardown(() => context.close());
  const page = await openPage(context, stack.url, t);
  const shown = await visibleTabs(page);
  // analytics.enabled and ops_agent.enabled are off here, their ui.sections keys on (omitted): their
  // tabs are for an administrator (who is told how to turn them on); Tokens is for a database
  // sign-in and Admin for the administrator: a visitor sees none of them (issue 27 item 6)
  t.equal((await fetch(`${stack.url}/ops`, { method: 'HEAD' })).status, 200, '/ops is served');
  t.same(shown, ['home', 'assistant', 'dashboards', 'schedules', 'demo'], 'a visitor: the tabs a visitor can use');
  t.equal(await page.getAttribute('#tab-home', 'aria-selected'), 'true');
  t.equal(await page.locator('[role=tabpanel]:visible').count(), 1, 'one panel shown');

  await page.focus('#tab-home');
  await page.keyboard.press('ArrowRight');
  t.equal(await page.evaluate('document.activeElement?.id'), 'tab-assistant', 'ArrowRight moves the focus');
  t.equal(await page.getAttribute('#tab-assistant', 'aria-selected'), 'true', 'and selects the tab');
  t.equal(await page.getAttribute('#tab-home', 'tabindex'), '-1', 'a roving tabindex');
  t.ok(await page.locator('#view-assistant').isVisible());
  t.equal(new URL(page.url()).hash, '#assistant');
  await page.keyboard.press('End');
  t.equal(await page.evaluate('document.activeElement?.id'), `tab-${shown.at(-1)}`, 'End: the last tab');
  await page.keyboard.press('ArrowRight');
  t.equal(await page.evaluate('document.activeElement?.id'), 'tab-home', 'wraps round to the first');
  await page.keyboard.press('ArrowLeft');
  await page.keyboard.press('Home');
  t.equal(await page.evaluate('document.activeElement?.id'), 'tab-home', 'Home: the first tab');

  await page.goto(`${stack.url}/#dashboards`);
  await page.locator('body[data-ui=ready]').waitFor();
  t.equal(await page.getAttribute('#tab-dashboards', 'aria-selected'), 'true', 'the hash opens its tab');
  t.ok(await page.locator('#view-dashboards').isVisible());
  await page.goto(`${stack.url}/#analytics`);
  await page.locator('body[data-ui=ready]').waitFor();
  t.equal(await page.getAttribute('#tab-home', 'aria-selected'), 'true', 'a feature that is off: no tab for a visitor, its hash opens Home');
  t.equal(await page.locator('#view-analytics iframe').count(), 0, 'and no page of a feature that is off');
});

t.test('ui.sections hides tabs (bigquery-ops spelt with a hyphen too); Home stays', async (t) => {
  const other = await startStack(base({ ui: { sections: { assistant: false, dashboards: false, tokens: false, admin: false, 'bigquery-ops': false, analytics: false } } }));
  stacks.push(other);
  const context = await browser.newContext();
  t.teardown(() => context.close());
  const probes: string[] = [];
  const page = await context.newPage();
  await guardPage(page, t);
  page.on('request', (r) => { if (r.method() === 'HEAD') probes.push(new URL(r.url()).pathname); });
  await page.goto(other.url);
  await page.locator('body[data-ui=ready]').waitFor();
  const shown = await visibleTabs(page);
  t.same(shown, ['home', 'schedules', ...((await fetch(`${other.url}/demo`, { method: 'HEAD' })).ok ? ['demo'] : [])], 'only Home and the sections left on');
  t.equal((await call(`${other.url}/ui/config`)).body.sections.bigquery_ops, false, 'bigquery-ops read as bigquery_ops');
  t.same(probes, [], 'the page asks /ui/config, not the pages themselves');
  t.notOk(await page.locator('#examples .chip').first().isVisible(), 'no example questions without the Assistant');
  await page.goto(`${other.url}/#tokens`);
  await page.locator('body[data-ui=ready]').waitFor();
  t.equal(await page.getAttribute('#tab-home', 'aria-selected'), 'true', 'a hidden tab\'s hash opens Home');

});

t.test('a tab shows when its section is on, its feature on or off: analytics, the ops console, Tokens, Admin', async (t) => {
  const features = async (url: string) => (await call(`${url}/ui/config`)).body.features as Record<string, boolean>;
  t.match(await features(stack.url), { analytics: false, bigquery_ops: false, tokens: true, admin: true, schedules: true }, 'this server: no analytics, no ops console');

  const adb = await createTestDb('dash_an');
  t.teardown(() => adb.drop());
  const analytics = { enabled: true, postgresql: { host: adb.host, port: adb.port, database: adb.name, user: adb.user } };
  const on = await startStack(base({ analytics, ops_agent: { enabled: true } }));
  stacks.push(on);
  t.match(await features(on.url), { analytics: true, bigquery_ops: true });
  const visitor = await browser.newContext();
  t.teardown(() => visitor.close());
  t.same(await visibleTabs(await openPage(visitor, on.url, t)), ['home', 'assistant', 'dashboards', 'schedules', 'demo'], 'a visitor: no analytics (analytics.access admin), no ops console');
  const context = await browser.newContext();
  t.teardown(() => context.close());
  const signedIn = await context.request.post(`${on.url}/admin/login`, { data: { username: 'admin', password: ADMIN_PW } });
  t.equal(signedIn.status(), 200);
  const page = await openPage(context, on.url, t);
  t.same(await visibleTabs(page), ['home', 'assistant', 'dashboards', 'schedules', 'analytics', 'ops', 'demo', 'admin'], 'the administrator: every tab but Tokens (a database sign-in\'s), their features on');
  await page.click('#tab-ops');
  // signed in as the administrator: the console, or why it cannot be shown (no BigQuery here)
  await page.frameLocator('#view-ops iframe').locator('body[data-state=ready], body[data-state=denied]').waitFor({ state: 'attached' });
  t.pass('the Warehouse ops tab shows the console');

  // the theme: the dashboard's toggle turns the pages in its tabs dark too, open already or not
  const LIGHT = 'rgb(250, 247, 243)';
  const DARK = 'rgb(27, 22, 18)';
  const frameOf = (path: string) => page.frames().find((f) => new URL(f.url()).pathname === path);
  const bgOf = (path: string) => frameOf(path)!.evaluate(() => (globalThis as any).getComputedStyle((globalThis as any).document.body).backgroundColor as string);
  const htmlTheme = (path: string) => frameOf(path)!.evaluate(() => (globalThis as any).document.documentElement.dataset.theme as string | undefined);
  await page.click('#tab-analytics');
  await page.frameLocator('#view-analytics iframe').locator('body[data-state]').first().waitFor();
  t.equal(await bgOf('/analytics'), LIGHT, '/analytics in its tab: light');
  t.equal(await bgOf('/ops'), LIGHT, '/ops in its tab: light');
  await page.click('#theme-toggle');
  t.equal(await page.getAttribute('html', 'data-theme'), 'dark');
  for (const path of ['/analytics', '/ops']) {
    await frameOf(path)!.waitForFunction(() => (globalThis as any).document.documentElement.dataset.theme === 'dark');
    t.equal(await htmlTheme(path), 'dark', `${path}, open already, follows the toggle`);
    t.equal(await bgOf(path), DARK, `${path} is painted dark`);
  }
  await page.click('#tab-demo');
  await page.frameLocator('#view-demo iframe').locator('#embed').waitFor();
  t.equal(await htmlTheme('/demo'), 'dark', '/demo, opened after the toggle, is dark');
  t.equal(await bgOf('/demo'), 'rgb(30, 23, 16)', 'in the shop\'s own dark colours');
  await page.click('#theme-toggle');
  await frameOf('/demo')!.waitForFunction(() => (globalThis as any).document.documentElement.dataset.theme === 'light');
  t.equal(await bgOf('/demo'), 'rgb(241, 227, 200)', 'and back to light with the toggle');

  // the features on, but their sections off; and the features off (no plugins.auth, no admin)
  const off = await startStack(base({
    analytics, ops_agent: { enabled: true },
    ui: { sections: { analytics: false, bigquery_ops: false } },
    admin: { enabled: false }, plugins: { auth: { enabled: false } },
  }));
  stacks.push(off);
  t.match(await features(off.url), { analytics: true, bigquery_ops: true, tokens: false, admin: false });
  const p2 = await openPage(context, off.url, t);
  t.same(await visibleTabs(p2), ['home', 'assistant', 'dashboards', 'schedules', 'demo'], 'a section off hides its tab, its feature on; a feature off with nobody to turn it on hides it too');
  await p2.goto(`${off.url}/#ops`);
  await p2.locator('body[data-ui=ready]').waitFor();
  t.equal(await p2.getAttribute('#tab-home', 'aria-selected'), 'true', 'a hidden tab\'s hash opens Home');
});

t.test('a tab whose feature is off tells an administrator how to turn it on, in both themes', async (t) => {
  for (const [theme, size] of [['light', { width: 1440, height: 900 }], ['dark', { width: 390, height: 844 }]] as const) {
    const context = await adminContext();
    t.teardown(() => context.close());
    await context.newPage().then((p) => p.close());
    const page = await context.newPage();
    await page.setViewportSize(size);
    await page.emulateMedia({ colorScheme: theme });
    page.on('pageerror', (e) => t.fail(`page error: ${e.message}`));
    await guardPage(page, t);
    await page.goto(`${stack.url}/#analytics`);
    await page.locator('body[data-ui=ready]').waitFor();
    const said = page.locator('#view-analytics .feature-off');
    await said.waitFor();
    t.match(await said.innerText(), /^Analytics is off on this server\. To turn it on, set analytics\.enabled: true/, `${theme}: one sentence saying how`);
    await page.click('#tab-ops');
    t.match(await page.locator('#view-ops .feature-off').innerText(), /ops_agent\.enabled: true/, `${theme}: the Warehouse ops tab too`);
    await page.screenshot({ path: `test-artifacts/biz-feature-off-${size.width}-${theme}.png` });
  }
});

t.test('a visitor\'s history and favourites stay in this browser', async (t) => {
  const context = await browser.newContext();
  t.teardown(() => context.close());
  const page = await openPage(context, stack.url, t);
  t.match(await page.textContent('#home-who'), /this browser/);
  t.ok(await page.locator('#home-history-empty').isVisible(), 'nothing yet');

  // the answer view writes to the history after each answer
  await page.click('#tab-assistant');
  await page.locator('#tables input[value="sales"]').waitFor({ state: 'attached' });
  t.pass('the table picker lists the tables');
  const box = page.locator('#assistant-root textarea');
  await box.fill('Revenue per region?');
  await box.press('Enter');
  await page.locator('#assistant-root table tbody tr').first().waitFor();
  await page.click('#tab-home');
  const item = page.locator('#home-history li', { hasText: 'Revenue per region?' });
  await item.waitFor();
  const stored = await page.evaluate("JSON.parse(localStorage.getItem('cortado.history') ?? '[]')") as any[];
  t.equal(stored.length, 1, 'kept in localStorage');
  t.match(stored[0], { question: 'Revenue per region?', row_count: 2 });
  t.match(stored[0].sql, /GROUP BY region/);

  await item.locator('button.star').click();
  await page.locator('#home-favourites li', { hasText: 'Revenue per region?' }).waitFor();
  t.equal(await page.locator('#home-favourites li button.star').getAttribute('aria-pressed'), 'true');
  await page.reload();
  await page.locator('body[data-ui=ready]').waitFor();
  await page.locator('#home-favourites li', { hasText: 'Revenue per region?' }).waitFor();
  t.pass('the favourite survives a reload');
  t.equal((await call(`${stack.url}/api/history`)).status, 401, 'nothing was sent to the server');

  const stranger = await browser.newContext();
  t.teardown(() => stranger.close());
  const p2 = await openPage(stranger, stack.url, t);
  t.equal(await p2.locator('#home-history li').count(), 0, 'another browser sees none of it');
});

t.test('a signed-in person\'s history is on the server: after a reload and in another browser', async (t) => {
  const context = await adminContext();
  t.teardown(() => context.close());
  const page = await openPage(context, stack.url, t);
  t.match(await page.textContent('#home-who'), /Signed in as admin/);
  // history.js as the answer view uses it (a string: the page runs it as written)
  await page.evaluate(`(async () => {
    const { createHistory } = await import('/static/history.js');
    const who = await (await fetch('/api/workspace')).json();
    const h = createHistory({ signedIn: true, headers: () => ({ 'x-csrf-token': who.csrf_token }) });
    await h.add({ question: 'Kept for admin?', row_count: 3 });
  })()`);
  await page.reload();
  await page.locator('body[data-ui=ready]').waitFor();
  const item = page.locator('#home-history li', { hasText: 'Kept for admin?' });
  await item.waitFor();
  await item.locator('button.star').click();
  await page.locator('#home-favourites li', { hasText: 'Kept for admin?' }).waitFor();
  t.same(await page.evaluate("localStorage.getItem('cortado.history')"), null, 'nothing in this browser');

  const elsewhere = await adminContext();
  t.teardown(() => elsewhere.close());
  const p2 = await openPage(elsewhere, stack.url, t);
  await p2.locator('#home-favourites li', { hasText: 'Kept for admin?' }).waitFor();
  t.pass('another browser context, signed in again, finds the favourite');
  await p2.locator('#home-favourites li', { hasText: 'Kept for admin?' }).locator('button[aria-label^="Forget"]').click();
  await p2.locator('#home-history-empty').waitFor({ state: 'visible' });
  t.equal(await p2.locator('#home-history li').count(), 0, 'forgotten');
});

t.test('a dashboard of two tiles, refreshed on open', async (t) => {
  const context = await adminContext();
  t.teardown(() => context.close());
  const page = await openPage(context, `${stack.url}/#dashboards`, t);
  await page.locator('#dash-empty').waitFor();
  await page.fill('#dash-name', 'Sales');
  await page.click('#dash-new button[type=submit]');
  await page.locator('#tile-form:not([hidden])').waitFor();

  await page.fill('#tile-title', 'Revenue by region');
  await page.selectOption('#tile-kind', 'question');
  await page.fill('#tile-text', 'Revenue per region?');
  await page.click('#tile-add');
  const first = page.locator('#dash-tiles .tile', { hasText: 'Revenue by region' });
  // a tile shows the chart its shape suits (the rows behind "Show the rows"; dashboard-tiles.test.ts)
  await first.locator('figure.chart[data-type=bar]').waitFor();

  await page.fill('#tile-title', 'Months');
  await page.selectOption('#tile-kind', 'sql');
  await page.fill('#tile-text', 'SELECT month, revenue FROM sales ORDER BY month');
  await page.fill('#tile-refresh', '0 8 * * *');
  await page.click('#tile-add');
  const second = page.locator('#dash-tiles .tile', { hasText: 'Months' });
  await page.locator('#dash-tiles .tile[data-runs="1"]', { hasText: 'Months' }).waitFor();
  t.equal(await first.getAttribute('data-runs'), '1', 'adding a tile leaves the first one\'s result');
  t.ok(await first.locator('figure.chart').count() > 0, 'still shown');
  t.match(await second.locator('.tile-refresh').textContent(), /08:00/, 'the cron in words');
  t.match(await second.locator('.tile-next').textContent(), /next/, 'and when it is next due');

  const asked = fake.requests.length;
  await page.screenshot({ path: `${ARTIFACTS}/dashboard-tiles.png`, fullPage: true });
  await page.reload();
  await page.locator('body[data-ui=ready]').waitFor();
  for (const title of ['Revenue by region', 'Months']) {
    await page.locator('#dash-tiles .tile[data-runs="1"]', { hasText: title }).waitFor();
    t.pass(`${title}: ran on open`);
  }
  t.equal(await page.locator('#dash-tiles .tile').count(), 2);
  t.ok(fake.requests.length > asked, 'the question tile was asked again');
  t.ok(await second.locator('tbody tr').count() > 0 || await second.locator('canvas').count() > 0, 'the pinned SQL came back as a table or a chart');
  t.equal(await second.locator('.error').count(), 0, 'without an error');
  const saved = await context.request.get(`${stack.url}/api/dashboards`);
  const body = await saved.json();
  t.same(body.dashboards[0].tiles.map((x: { title: string; refresh: string }) => [x.title, x.refresh]), [['Revenue by region', 'on_open'], ['Months', '0 8 * * *']]);
});

t.test('a tile draws its answer in <cortado-answer>: the page\'s styles do not reach it, the theme does', async (t) => {
  const context = await adminContext();
  t.teardown(() => context.close());
  const page = await openPage(context, `${stack.url}/#dashboards`, t);
  await page.fill('#dash-name', 'Styles');
  await page.click('#dash-new button[type=submit]');
  await page.locator('#tile-form:not([hidden])').waitFor();
  await page.fill('#tile-title', 'Styled');
  await page.selectOption('#tile-kind', 'sql');
  await page.fill('#tile-text', 'SELECT region, revenue FROM sales ORDER BY month LIMIT 3');
  await page.click('#tile-add');
  const tile = page.locator('#dash-tiles .tile[data-runs="1"]', { hasText: 'Styled' });
  await tile.waitFor();
  // its rows and SQL are in the tile, behind toggles: their styles are read all the same
  await tile.locator('td').first().waitFor({ state: 'attached' });

  // computed styles of the answer's parts, read inside the element's shadow root; written as a
  // function's text, since tsx would wrap named functions in a helper the page does not have
  const PROBE = `
    const view = article.querySelector('.tile-body > cortado-answer');
    const root = view && view.shadowRoot;
    if (!root) return null;
    const box = ['background-color', 'color', 'font-size', 'padding-top', 'border-top-width', 'border-radius', 'font-weight', 'text-transform'];
    const of = (n, props) => Object.fromEntries(props.map((p) => [p, getComputedStyle(n).getPropertyValue(p)]));
    const read = (sel, props) => { const n = root.querySelector(sel); return n ? of(n, props) : 'no ' + sel; };
    return {
      host: of(view, ['background-color', 'color', 'font-size', 'padding-top', 'line-height']),
      body: read('.ctd-answer-view', ['font-size', 'color', 'line-height']),
      sort: read('th button.sort', box),
      copy: read('.sql-block button.copy', box),
      th: read('th', box),
      td: read('td', box),
      sql: read('pre.sql', box),
      table: read('table', ['font-size', 'border-collapse']),
    };`;
  type Probe = Record<string, Record<string, string>> | null;
  const probeFn = new Function('article', PROBE) as (article: unknown) => Probe;
  const probe = () => tile.evaluate(probeFn);
  const light = await probe();
  if (!light) return t.fail('the tile\'s answer is not a <cortado-answer> with a shadow root');
  t.equal(light.sort!['background-color'], 'rgba(0, 0, 0, 0)', 'a table header is the answer view\'s plain sort button, not the page\'s filled button');
  t.equal(light.copy!['font-size'], '12px', 'Copy is the answer view\'s small button');

  // the page's own rules, however loud, stop at the element
  await page.addStyleTag({ content: 'button, th, td, pre, table, code, .tile-body, .tile-body * { background: rgb(255, 0, 0) !important; color: rgb(0, 255, 0) !important; font-size: 31px !important; padding: 17px !important; text-transform: uppercase !important; border-radius: 0 !important; }' });
  t.same(await probe(), light, 'a page stylesheet with !important rules changes nothing inside the tile\'s answer');
  t.equal(await page.evaluate('getComputedStyle(document.querySelector("#tile-add")).fontSize'), '31px', 'while it does reach the page around it (the rule works)');

  // the theme travels in the inherited --ctd-* custom properties
  await page.evaluate('document.documentElement.dataset.theme = "dark"');
  const dark = await probe();
  t.notSame(dark?.th?.['background-color'], light.th!['background-color'], 'the dark theme reaches the tile\'s table');
  t.notSame(dark?.td?.color, light.td!.color, 'and its text');
});

t.test('Tokens: sign in with the database account, issue, copy the MCP configuration, it works on /mcp/sse, revoke → 401', async (t) => {
  const context = await browser.newContext();
  t.teardown(() => context.close());
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.url });
  const page = await openPage(context, `${stack.url}/#tokens`, t);
  t.notOk(await page.locator('#tab-tokens').isVisible(), 'no Tokens tab before a database sign-in');
  // the header's one sign-in (signin.js); the page comes back at the Tokens tab
  await page.click('#sign-in-open');
  await page.check('input[name=sign-in-method][value=database]');
  await page.fill('#sign-in-user', role);
  await page.fill('#sign-in-pass', PASSWORD);
  await Promise.all([page.waitForEvent('load'), page.click('#sign-in-submit')]);
  await page.locator('body[data-ui=ready]').waitFor();
  await page.click('#tab-tokens');
  await page.locator('#tok-main:not([hidden])').waitFor();
  t.match(await page.textContent('#tok-who'), new RegExp(role));
  await page.fill('#tok-label', 'Claude on my laptop');
  await page.click('#tok-issue button[type=submit]');
  await page.locator('#tok-issued:not([hidden])').waitFor();
  const token = await page.inputValue('#tok-secret');
  t.match(token, /^ctd_/, 'the token, shown once');
  const sse = JSON.parse(await page.textContent('#tok-mcp-sse') ?? '{}');
  t.same(sse, { mcpServers: { cortado: { url: `${stack.url}/mcp/sse`, headers: { 'x-mcp-token': token } } } }, 'a ready SSE configuration');
  const stdio = JSON.parse(await page.textContent('#tok-mcp-stdio') ?? '{}');
  t.equal(stdio.mcpServers.cortado.env.SERVICE_TOKEN, token, 'and the stdio one with SERVICE_TOKEN');
  await page.click('#tok-issued button:has-text("Copy SSE configuration")');
  t.same(JSON.parse(await page.evaluate('navigator.clipboard.readText()') as string), sse, 'copied');

  const open = async (): Promise<number> => {
    const ac = new AbortController();
    const res = await fetch(sse.mcpServers.cortado.url, { headers: sse.mcpServers.cortado.headers, signal: ac.signal });
    ac.abort();
    return res.status;
  };
  t.equal(await open(), 200, 'the token opens /mcp/sse');
  const row = page.locator('#tok-list tr', { hasText: 'Claude on my laptop' });
  t.equal(await row.locator('.badge').textContent(), 'active');
  await row.locator('button.revoke').click();
  await row.locator('.badge', { hasText: 'revoked' }).waitFor();
  t.equal(await open(), 401, 'revoked: refused');
  await page.reload();
  await page.locator('body[data-ui=ready]').waitFor();
  await page.locator('#tok-main:not([hidden])').waitFor();
  t.equal(await page.locator('#tok-secret').count(), 0, 'the token is never shown again');
});

t.test('the dark theme, kept after a reload; no horizontal scroll at 360 px on any tab', async (t) => {
  const context = await browser.newContext({ viewport: { width: 360, height: 740 } });
  t.teardown(() => context.close());
  const page = await openPage(context, stack.url, t);
  const bg = () => page.evaluate('getComputedStyle(document.body).backgroundColor');
  t.equal(await bg(), 'rgb(250, 247, 243)', 'light by default');
  await page.click('#theme-toggle');
  t.equal(await page.getAttribute('html', 'data-theme'), 'dark');
  t.equal(await page.getAttribute('#theme-toggle', 'aria-pressed'), 'true');
  t.equal(await bg(), 'rgb(27, 22, 18)', 'dark');
  await page.reload();
  await page.locator('body[data-ui=ready]').waitFor();
  t.equal(await bg(), 'rgb(27, 22, 18)', 'still dark after a reload');
  await page.screenshot({ path: `${ARTIFACTS}/dashboard-dark-360.png`, fullPage: true });

  for (const view of await visibleTabs(page)) {
    await page.click(`#tab-${view}`);
    await page.locator(`#view-${view}`).waitFor();
    if (await page.locator(`#view-${view} iframe`).count()) await page.frameLocator(`#view-${view} iframe`).locator('body').waitFor();
    const width = await page.evaluate('document.scrollingElement.scrollWidth') as number;
    t.ok(width <= 360, `${view}: ${width} px wide`);
  }

  const dark = await browser.newContext({ colorScheme: 'dark' });
  t.teardown(() => dark.close());
  const p2 = await openPage(dark, stack.url, t);
  t.equal(await p2.evaluate('getComputedStyle(document.body).backgroundColor'), 'rgb(27, 22, 18)', 'prefers-color-scheme: dark without a choice');
});

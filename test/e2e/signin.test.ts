/**
 * Sign-in that makes sense (issue 27 item 6), in Chromium against a real stack (NATS,
 * PostgreSQL, the scripted model): one Sign in in the header (who you are, Sign out), tabs shown
 * only to whoever can use them, Schedules offering "New schedule" only where it will work, and
 * /health with the page's pill saying "model unreachable" while the model does not answer — in
 * both themes and at a phone's 390 px. Screenshots go to test-artifacts/signin-*.png; axe-core
 * on each view.
 */
import { mkdirSync } from 'node:fs';
import t, { type Test } from 'tap';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { launchBrowser } from '../helpers/browser.js';
import { axeSerious } from '../helpers/axe.js';
import { guardPage } from '../helpers/page-guard.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { ADMIN_URL, createTestDb } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';

mkdirSync('test-artifacts', { recursive: true });

const tag = `${process.pid}_${Date.now().toString(36)}`;
const role = `signin_${tag}`;
const PASSWORD = 'signin-pw-1';
const ADMIN_PW = 'signin-admin-pw';

const nats = await startNats();
const db = await createTestDb('signin');
await db.pool.query(`
  CREATE TABLE sales (region text, revenue numeric(12,2));
  INSERT INTO sales VALUES ('north', 10), ('south', 20);
  CREATE ROLE ${role} LOGIN PASSWORD '${PASSWORD}';
  GRANT CONNECT ON DATABASE ${db.name} TO ${role};
  GRANT USAGE ON SCHEMA public TO ${role};
  GRANT SELECT ON sales TO ${role};
`);
const SQL = 'SELECT region, sum(revenue) AS revenue FROM sales GROUP BY region ORDER BY region';
let fake: FakeLlm = await startFakeLlm();
const llmPort = Number(new URL(fake.url).port);
const answer = () => ({ text: sqlAnswer(SQL, 'Revenue per region.') });
fake.fallback(answer);
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

const SIZES = [['light', { width: 1280, height: 860 }], ['dark', { width: 390, height: 844 }]] as const;

async function openPage(context: BrowserContext, t: Test, theme: 'light' | 'dark', size: { width: number; height: number }, hash = ''): Promise<Page> {
  const page = await context.newPage();
  await page.setViewportSize(size);
  await page.emulateMedia({ colorScheme: theme });
  page.on('pageerror', (e) => t.fail(`page error: ${e.message}`));
  await guardPage(page, t);
  await page.goto(`${stack.url}/${hash}`);
  await page.locator('body[data-ui=ready]').waitFor();
  return page;
}

const visibleTabs = (page: Page) => page.locator('#main-tabs [role=tab]:visible').evaluateAll((bs) => bs.map((b) => (b as any).dataset.view));

async function noSerious(page: Page, t: Test, what: string): Promise<void> {
  t.same(await axeSerious(page), [], `${what}: no serious or critical axe findings`);
}

/** Sign in from the header's dialog; the page reloads as the person signed in. */
async function signIn(page: Page, method: string, fill: Record<string, string>): Promise<void> {
  await page.click('#sign-in-open');
  await page.locator('#sign-in[open]').waitFor();
  await page.check(`input[name=sign-in-method][value=${method}]`);
  for (const [id, value] of Object.entries(fill)) await page.fill(`#${id}`, value);
  await Promise.all([page.waitForEvent('load'), page.click('#sign-in-submit')]);
  await page.locator('body[data-ui=ready]').waitFor();
}

t.test('a visitor sees the tabs they can use, one Sign in in the header, and Schedules says why in one sentence', async (t) => {
  for (const [theme, size] of SIZES) {
    const context = await browser.newContext();
    t.teardown(() => context.close());
    const page = await openPage(context, t, theme, size);
    t.same(await visibleTabs(page), ['home', 'assistant', 'dashboards', 'schedules', 'demo'],
      `${theme} ${size.width}: no Analytics, Warehouse ops, Tokens or Admin login walls`);
    t.ok(await page.locator('#sign-in-open').isVisible(), 'Sign in in the header');
    t.equal(await page.locator('#who').count(), 0, 'nobody named');
    const box = await page.locator('#sign-in-open').boundingBox();
    t.ok(box && box.x + box.width <= size.width, 'Sign in fits the width');

    await page.click('#tab-schedules');
    await page.locator('#sch-signin-hint').waitFor();
    t.match(await page.textContent('#sch-signin-hint'), /sign in to see yours/, 'one sentence why');
    t.equal(await page.locator('#sch-token, #sch-login').count(), 0, 'no sign-in form of its own (no token paste box)');
    t.ok(await page.locator('#sch-main').isHidden(), 'no schedules and no New schedule');
    await page.click('#sch-sign-in');
    await page.locator('#sign-in[open]').waitFor();
    t.same(await page.locator('input[name=sign-in-method]').evaluateAll((xs) => xs.map((x) => (x as any).value)), ['database', 'admin', 'token'],
      'the header\'s sign-in offers this server\'s sign-ins');
    await noSerious(page, t, `${theme} the sign-in dialog`);
    await page.screenshot({ path: `test-artifacts/signin-dialog-${size.width}-${theme}.png` });
    t.ok(await page.locator('#sign-in-token').isHidden(), 'only the fields of the sign-in chosen');
    await page.check('input[name=sign-in-method][value=admin]');
    t.ok(await page.locator('#sign-in-database').isHidden(), 'no database field for the administrator');
    await page.fill('#sign-in-user', 'admin');
    await page.fill('#sign-in-pass', 'wrong');
    await page.click('#sign-in-submit');
    await page.locator('#sign-in-error:not([hidden])').waitFor();
    t.match(await page.textContent('#sign-in-error'), /not accepted/, 'a wrong password said in words');
    await page.keyboard.press('Escape');
    await noSerious(page, t, `${theme} Schedules for a visitor`);
  }
});

t.test('a database sign-in: who in the header, Tokens shown, Schedules listed without a New schedule that would be refused; Sign out', async (t) => {
  for (const [theme, size] of SIZES) {
    const context = await browser.newContext();
    t.teardown(() => context.close());
    const page = await openPage(context, t, theme, size, '#schedules');
    await signIn(page, 'database', { 'sign-in-user': role, 'sign-in-pass': PASSWORD });
    t.match(await page.locator('#who').textContent(), new RegExp(role), `${theme}: the header says who`);
    t.same(await visibleTabs(page), ['home', 'assistant', 'dashboards', 'schedules', 'demo', 'tokens'], 'Tokens for a database account; no admin tabs');
    await page.locator('#sch-main:not([hidden])').waitFor();
    t.ok(await page.locator('#sch-new').isHidden(), 'no New schedule: the scheduler would refuse it');
    t.match(await page.locator('#sch-read-only').textContent(), /cannot make one/, 'one sentence why instead');
    await noSerious(page, t, `${theme} Schedules for a database sign-in`);
    await page.screenshot({ path: `test-artifacts/signin-database-${size.width}-${theme}.png` });

    await page.click('#tab-tokens');
    await page.locator('#tok-main:not([hidden])').waitFor();
    t.ok(await page.locator('#tok-login').isHidden(), 'the Tokens tab has no sign-in of its own');
    await noSerious(page, t, `${theme} Tokens`);

    await Promise.all([page.waitForEvent('load'), page.click('#sign-out')]);
    await page.locator('body[data-ui=ready]').waitFor();
    t.ok(await page.locator('#sign-in-open').isVisible(), 'signed out: Sign in again');
    t.notOk((await visibleTabs(page)).includes('tokens'), 'and no Tokens');
    t.equal((await page.context().request.get(`${stack.url}/auth/session`)).status(), 401, 'the session is ended on the server');
  }
});

t.test('an administrator signs in from the header: the Admin tab, and a feature that is off said on its tab; New schedule offered', async (t) => {
  const context = await browser.newContext();
  t.teardown(() => context.close());
  const page = await openPage(context, t, 'light', { width: 1280, height: 860 });
  await signIn(page, 'admin', { 'sign-in-user': 'admin', 'sign-in-pass': ADMIN_PW });
  t.match(await page.locator('#who').textContent(), /admin/);
  t.same(await visibleTabs(page), ['home', 'assistant', 'dashboards', 'schedules', 'analytics', 'ops', 'demo', 'admin'], 'the admin tabs, for an administrator');
  await page.click('#tab-analytics');
  t.match(await page.locator('#view-analytics .feature-off').innerText(), /analytics\.enabled: true/, 'analytics off here: one sentence how');
  await page.click('#tab-schedules');
  await page.locator('#sch-main:not([hidden])').waitFor();
  t.ok(await page.locator('#sch-new').isVisible(), 'New schedule, which will work');
  await noSerious(page, t, 'Schedules for an administrator');
});

t.test('an API token from the header signs the whole page in', async (t) => {
  const login = await call(`${stack.url}/auth/login`, { body: { username: role, password: PASSWORD } });
  t.equal(login.status, 200);
  const minted = await call(`${stack.url}/auth/tokens`, { body: { label: 'signin test' }, headers: { 'x-session-id': login.body.session_id } });
  t.equal(minted.status, 201, JSON.stringify(minted.body));
  const context = await browser.newContext();
  t.teardown(() => context.close());
  const page = await openPage(context, t, 'dark', { width: 390, height: 844 }, '#schedules');
  await signIn(page, 'token', { 'sign-in-token': minted.body.token });
  t.match(await page.locator('#who').textContent(), /API token/);
  await page.locator('#sch-main:not([hidden])').waitFor();
  t.ok(await page.locator('#sch-new').isVisible(), 'a token may make schedules: New schedule offered');
  const me = await call(`${stack.url}/api/me`, { headers: { authorization: `Bearer ${minted.body.token}` } });
  t.match(me.body, { signed_in: true, kind: 'token', can: { schedules: 'own', admin: false, tokens: false } }, 'GET /api/me says what a token may do');

  const revoked = await call(`${stack.url}/auth/tokens/${minted.body.info.id}`, { method: 'DELETE', headers: { 'x-session-id': login.body.session_id } });
  t.equal(revoked.status, 200, 'the token revoked');
  await page.reload();
  await page.locator('body[data-ui=ready]').waitFor();
  t.ok(await page.locator('#sign-in-open').isVisible(), 'a revoked token: the page is a visitor\'s again');
  t.equal(await page.evaluate('sessionStorage.getItem("cortado.api_token")'), null, 'and the token is forgotten');
  await page.locator('#sch-signin-hint').waitFor();
});

t.test('/health and the page say "model unreachable" while every question fails, and ok again once it answers', async (t) => {
  const health = async () => (await call(`${stack.url}/health`)).body;
  const ok = await call(`${stack.url}/api/query`, { body: { question: 'Revenue per region?' } });
  t.equal(ok.status, 200, 'a question answered');
  t.match(await health(), { status: 'ok', llm: 'ok' });

  await fake.close();
  const failed = await call(`${stack.url}/api/query`, { body: { question: 'Revenue per region again?' } });
  t.equal(failed.body?.error?.code ?? failed.body?.code, 'LLM_UNAVAILABLE', 'the model is down: the question fails');
  const h = await health();
  t.match(h, { status: 'degraded', llm: 'unreachable', database: 'ok' }, 'health: model unreachable, degraded (not down)');
  t.ok(h.details.llm.failing_since && h.details.llm.last_error, 'with since when and the last error');

  for (const [theme, size] of SIZES) {
    const context = await browser.newContext();
    t.teardown(() => context.close());
    const page = await openPage(context, t, theme, size);
    await page.locator('#health.degraded').waitFor();
    t.match(await page.textContent('#health'), /model unreachable/, `${theme} ${size.width}: the pill says model unreachable`);
    t.equal(await page.textContent('#home-model'), 'unreachable', 'and Home\'s Service card');
    await noSerious(page, t, `${theme} Home with the model unreachable`);
    await page.screenshot({ path: `test-artifacts/signin-model-unreachable-${size.width}-${theme}.png` });
  }

  fake = await startFakeLlm({ port: llmPort });
  fake.fallback(answer);
  const back = await call(`${stack.url}/api/query`, { body: { question: 'Revenue per region, once more?' } });
  t.equal(back.status, 200, 'the model answers again');
  t.match(await health(), { status: 'ok', llm: 'ok' }, 'and health is ok again');
});

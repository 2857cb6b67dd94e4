/**
 * The admin page in a real browser: sign in, see the config, issue a token, add a mask rule, read
 * the audit log; the tabs as a keyboard tablist; no sideways scroll at 360 px. No page breaks its
 * CSP or asks another host (test/helpers/page-guard.ts).
 */
import t from 'tap';
import { launchBrowser } from '../helpers/browser.js';
import { guardPage } from '../helpers/page-guard.js';
import { testConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { startStack } from '../helpers/stack.js';

const nats = await startNats();
const stack = await startStack(testConfig({ natsUrl: nats.url, extra: { admin: { enabled: true, username: 'admin', password: 'pw-for-page' } } }));
const browser = await launchBrowser();
t.teardown(async () => {
  await browser.close();
  await stack.stop();
  await nats.stop();
});

t.test('sign in and use the panel', async (t) => {
  const page = await browser.newPage();
  await guardPage(page, t);
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${stack.url}/admin`);
  await page.waitForSelector('#login:not([hidden])');
  await page.fill('#username', 'admin');
  await page.fill('#password', 'wrong');
  await page.click('#sign-in');
  await page.waitForSelector('#login-error:not([hidden])');
  t.match(await page.textContent('#login-error'), /wrong username or password/i);

  await page.fill('#password', 'pw-for-page');
  await page.click('#sign-in');
  await page.waitForSelector('#panel:not([hidden])');
  t.match(await page.textContent('#who'), /admin · local/);
  // locator waits, not waitForFunction(string): the page's CSP (script-src 'self') forbids eval
  await page.locator('#config-json', { hasText: '"default_limit"' }).waitFor({ state: 'attached' });
  t.match(await page.textContent('#config-json'), /"password": "\*\*\*\*\*\*\*\*"/, 'secrets masked in the page');

  await page.click('#cfg-form details[data-section=query] summary');
  await page.fill('#cfg-form [name="query.default_limit"]', '42');
  await page.click('#cfg-save');
  await page.waitForSelector('#overrides tbody tr');
  t.match(await page.textContent('#overrides tbody'), /query\.default_limit\s*42/);

  await page.click('[data-tab=tokens]');
  await page.fill('#token-label', 'from the page');
  await page.click('#token-form button[type=submit]');
  await page.waitForSelector('#token-new:not([hidden]) code');
  t.match(await page.textContent('#token-new code'), /^ctd_/);
  await page.waitForSelector('#tokens tbody tr');
  t.match(await page.textContent('#tokens tbody'), /from the page.*active/);

  await page.click('[data-tab=mask]');
  await page.fill('#mask-pattern', '*email*');
  await page.click('#mask-form button[type=submit]');
  await page.waitForSelector('#masks tbody tr');
  t.match(await page.textContent('#masks tbody'), /\*email\*\s*partial/);

  await page.click('[data-tab=audit]');
  await page.selectOption('#audit-type', 'identity.login');
  await page.click('#audit-form button[type=submit]');
  await page.locator('#audit tbody tr').first().waitFor();
  t.match(await page.textContent('#audit tbody'), /Sign-ins: admin, local/);

  await page.click('#sign-out');
  await page.waitForSelector('#login:not([hidden])');
  t.same(errors, [], 'no script errors');
});

t.test('the tabs are a tablist: arrow keys, Home and End move and select, one panel shown', async (t) => {
  const page = await browser.newPage({ viewport: { width: 360, height: 740 } });
  t.teardown(() => page.close());
  await guardPage(page, t);
  await page.goto(`${stack.url}/admin`);
  await page.fill('#username', 'admin');
  await page.fill('#password', 'pw-for-page');
  await page.click('#sign-in');
  await page.waitForSelector('#panel:not([hidden])');
  const tabs = page.locator('[role=tablist] [role=tab]');
  const ids = await tabs.evaluateAll((bs) => bs.map((b) => (b as any).dataset.tab as string));
  t.ok(ids.length >= 9, `${ids.length} tabs in the tablist`);
  t.equal(await page.locator('[role=tablist] #sign-out').count(), 0, 'Sign out is not a tab');
  for (const id of ids) {
    t.equal(await page.getAttribute(`[role=tab][data-tab=${id}]`, 'aria-controls'), `tab-${id}`, `${id} controls its panel`);
    t.equal(await page.getAttribute(`#tab-${id}`, 'role'), 'tabpanel');
    t.equal(await page.getAttribute(`#tab-${id}`, 'aria-labelledby'), `tabbtn-${id}`);
  }
  const selected = () => page.locator('[role=tab][aria-selected=true]').evaluateAll((bs) => bs.map((b) => (b as any).dataset.tab as string));
  const focused = () => page.evaluate('document.activeElement?.dataset?.tab');
  const shown = () => page.locator('[role=tabpanel]:visible').evaluateAll((ps) => ps.map((p) => p.id));
  t.same(await selected(), ['config']);
  t.equal(await page.getAttribute('[role=tab][data-tab=prompts]', 'tabindex'), '-1', 'a roving tabindex');

  await page.focus('[role=tab][data-tab=config]');
  await page.keyboard.press('ArrowRight');
  t.equal(await focused(), ids[1], 'ArrowRight moves the focus');
  t.same(await selected(), [ids[1]], 'and selects the tab');
  t.same(await shown(), [`tab-${ids[1]}`], 'its panel alone is shown');
  t.equal(await page.getAttribute(`[role=tab][data-tab=${ids[1]}]`, 'tabindex'), '0');
  t.equal(await page.getAttribute('[role=tab][data-tab=config]', 'tabindex'), '-1');
  await page.keyboard.press('End');
  t.equal(await focused(), ids.at(-1), 'End: the last tab');
  t.same(await shown(), [`tab-${ids.at(-1)}`]);
  await page.keyboard.press('ArrowRight');
  t.equal(await focused(), 'config', 'wraps round to the first');
  await page.keyboard.press('ArrowLeft');
  t.equal(await focused(), ids.at(-1), 'and back round to the last');
  await page.keyboard.press('Home');
  t.equal(await focused(), 'config', 'Home: the first tab');
  t.same(await selected(), ['config']);
  // Tab leaves the tablist for the panel; the tokens tab by keyboard works like a click
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  t.equal(await focused(), 'tokens');
  await page.keyboard.press('Tab');
  t.equal(await page.evaluate('document.activeElement?.id'), 'sign-out', 'Tab goes on past the tablist, not through every tab');
  await page.locator('#tab-tokens #token-form').waitFor();
  await page.locator('#tokens tbody tr').first().waitFor({ state: 'attached' }).catch(() => undefined);
  const width = await page.evaluate('document.scrollingElement.scrollWidth') as number;
  t.ok(width <= 360, `no sideways scroll at 360 px: ${width} px`);
});

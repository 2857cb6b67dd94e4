/** The admin page in a real browser: sign in, see the config, issue a token, add a mask rule, read the audit log. */
import t from 'tap';
import { launchBrowser } from '../helpers/browser.js';
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
  await page.locator('#config-json', { hasText: '"default_limit"' }).waitFor();
  t.match(await page.textContent('#config-json'), /"password": "\*\*\*\*\*\*\*\*"/, 'secrets masked in the page');

  await page.fill('#config-key', 'query.default_limit');
  await page.fill('#config-value', '42');
  await page.click('#config-form button[type=submit]');
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
  await page.locator('#audit tbody tr').first().waitFor();
  t.match(await page.textContent('#audit tbody'), /identity\.login/);

  await page.click('#sign-out');
  await page.waitForSelector('#login:not([hidden])');
  t.same(errors, [], 'no script errors');
});

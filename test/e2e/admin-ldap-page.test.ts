/**
 * The admin panel's LDAP / SSO tab in Chromium against a real slapd (test/helpers/slapd.ts) and a
 * real config database: the admin edits the settings, "Test connection" succeeds against the
 * directory and fails clearly with a wrong bind password or an unreachable port, Save keeps them
 * in config_db (a reload shows them; the bind password never comes back to the page), and a
 * member of the admin group (admin.ldap_group_dn, from the file) then signs in to the panel with
 * the saved settings, while the gate's members (the saved required_group_dn) do not.
 */
import net from 'node:net';
import t from 'tap';
import type { Page } from 'playwright-core';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { launchBrowser } from '../helpers/browser.js';
import { testConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { ADMINS_DN, ANALYSTS_DN, PEOPLE_DN, startSlapd, SVC_DN, SVC_PASSWORD, USERS } from '../helpers/slapd.js';
import { startStack } from '../helpers/stack.js';

const ADMIN = { username: 'admin', password: 'ldap-page-local-pw' };
const slapd = await startSlapd();
const nats = await startNats();
const cfgDb = await createTestDb('ldappage_cfg');
const config = testConfig({
  natsUrl: nats.url,
  extra: {
    admin: { enabled: true, ...ADMIN, ldap_group_dn: ADMINS_DN },
    config_db: { enabled: true, encryption_key: generateFernetKey(), postgresql: { host: cfgDb.host, port: cfgDb.port, database: cfgDb.name, user: cfgDb.user } },
  },
});
const stack = await startStack(config);
const browser = await launchBrowser();
t.teardown(async () => {
  await browser.close();
  await stack.stop();
  await cfgDb.drop();
  await nats.stop();
  await slapd.stop();
});

/** a loopback port nothing listens on */
async function closedPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((r) => srv.close(r));
  return port;
}

async function signIn(page: Page, username: string, password: string): Promise<void> {
  await page.goto(`${stack.url}/admin`);
  await page.waitForSelector('#login:not([hidden])');
  await page.fill('#username', username);
  await page.fill('#password', password);
  await page.click('#sign-in');
}

async function openLdapTab(page: Page): Promise<void> {
  await page.click('[data-tab=ldap]');
  await page.locator('#ldap-fields [name=server]').waitFor();
}

const field = (page: Page, name: string) => page.locator(`#ldap-fields [name="${name}"]`);

/** Click and wait for the flash line to say something new. */
async function flashAfter(page: Page, selector: string): Promise<{ text: string; bad: boolean }> {
  await page.evaluate('document.querySelector("#flash").textContent = ""');
  await page.click(selector);
  await page.locator('#flash').filter({ hasText: /\S/ }).waitFor();
  const f = page.locator('#flash');
  return { text: (await f.textContent()) ?? '', bad: (await f.getAttribute('class')) === 'error' };
}

t.test('edit, test, save and reload the LDAP / SSO settings; a directory login with them', async (t) => {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));

  // before any setting, a directory user is nobody
  await signIn(page, 'alice', 'alice-pw');
  await page.waitForSelector('#login-error:not([hidden])');

  await signIn(page, ADMIN.username, ADMIN.password);
  await page.waitForSelector('#panel:not([hidden])');
  await openLdapTab(page);
  t.equal(await field(page, 'enabled').isChecked(), false, 'the directory is off to begin with');
  t.equal(await field(page, 'bind_password').getAttribute('type'), 'password', 'the bind password is a password field');
  t.equal(await field(page, 'group_member_attr').evaluate((e: any) => e.tagName), 'SELECT', 'a choice of three is a select');
  t.same(await field(page, 'group_member_attr').locator('option').allTextContents(), ['member', 'memberOf', 'memberUid']);

  await field(page, 'enabled').check();
  await field(page, 'server').fill(slapd.url);
  await field(page, 'connect_timeout').fill('2');
  await field(page, 'bind_dn').fill(SVC_DN);
  await field(page, 'bind_password').fill('not-the-svc-password');
  await field(page, 'base_dn').fill(PEOPLE_DN);
  await field(page, 'user_search_filter').fill('(uid={username})');
  await field(page, 'required_group_dn').fill(ANALYSTS_DN);
  await field(page, 'group_member_attr').selectOption('member');

  const wrong = await flashAfter(page, '#ldap-test');
  t.ok(wrong.bad, 'a failure is shown as one');
  t.match(wrong.text, /^Failed: the directory refused the service account/, wrong.text);
  t.notMatch(wrong.text, /not-the-svc-password/, 'the password typed is not repeated');

  const port = await closedPort();
  await field(page, 'server').fill(`ldap://127.0.0.1:${port}`);
  await field(page, 'bind_password').fill(SVC_PASSWORD);
  const down = await flashAfter(page, '#ldap-test');
  t.ok(down.bad);
  t.match(down.text, new RegExp(`^Failed: .*127\\.0\\.0\\.1:${port}`), `the unreachable server is named: ${down.text}`);
  t.match(down.text, /unreachable|refused|ECONNREFUSED/i);

  await field(page, 'server').fill(slapd.url);
  const ok = await flashAfter(page, '#ldap-test');
  t.notOk(ok.bad, ok.text);
  t.match(ok.text, new RegExp(`^OK: connected to ${slapd.url.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} and bound as ${SVC_DN}`));
  t.equal(config.ldap.enabled, false, 'a test changes nothing');

  const saved = await flashAfter(page, '#ldap-form button[type=submit]');
  t.same(saved, { text: 'LDAP settings saved', bad: false });
  t.equal(config.ldap.server, slapd.url, 'applied at once');
  t.equal(config.ldap.bind_password, SVC_PASSWORD);

  // kept in config_db: the bind password sealed, never in clear
  const { rows } = await cfgDb.pool.query("SELECT key, value FROM cortado_config_overrides WHERE key LIKE 'ldap.%' ORDER BY key");
  const stored = Object.fromEntries(rows.map((r: { key: string; value: unknown }) => [r.key, r.value]));
  t.equal(stored['ldap.server'], slapd.url);
  t.equal(stored['ldap.enabled'], true);
  t.equal(stored['ldap.connect_timeout'], 2, 'a number stays a number');
  t.equal(stored['ldap.required_group_dn'], ANALYSTS_DN);
  t.ok(stored['ldap.bind_password'], 'the bind password is stored');
  t.notMatch(JSON.stringify(stored), new RegExp(SVC_PASSWORD), 'sealed, not in clear');

  // a reload shows what was saved; the bind password comes back as the mask only
  await page.reload();
  await page.waitForSelector('#panel:not([hidden])');
  await openLdapTab(page);
  t.equal(await field(page, 'server').inputValue(), slapd.url);
  t.equal(await field(page, 'enabled').isChecked(), true);
  t.equal(await field(page, 'connect_timeout').inputValue(), '2');
  t.equal(await field(page, 'required_group_dn').inputValue(), ANALYSTS_DN);
  t.equal(await field(page, 'group_member_attr').inputValue(), 'member');
  t.equal(await field(page, 'bind_password').inputValue(), '********', 'the mask, not the password');
  // saving again with the mask untouched keeps the stored password
  t.same(await flashAfter(page, '#ldap-form button[type=submit]'), { text: 'LDAP settings saved', bad: false });
  t.equal(config.ldap.bind_password, SVC_PASSWORD, 'the mask sent back keeps the secret');
  t.notOk((await page.content()).includes(SVC_PASSWORD), 'the page never holds the bind password');
  const view: string = await page.evaluate('fetch("/admin/ldap").then((r) => r.text())');
  t.match(view, /"bind_password":"\*{8}"/, 'what the tab reads has the mask');
  t.notOk(view.includes(SVC_PASSWORD), 'and not the password');

  // a member of the admin group signs in with the saved settings; others are refused, the
  // gate's members (the saved required_group_dn) too
  await page.click('#sign-out');
  await page.waitForSelector('#login:not([hidden])');
  await signIn(page, 'bob', 'bob-pw');
  await page.waitForSelector('#login-error:not([hidden])');
  t.match(await page.textContent('#login-error'), /group|not allowed|forbidden/i, 'bob is not in the admin group');
  await signIn(page, 'alice', 'alice-pw');
  await page.waitForSelector('#login-error:not([hidden])');
  t.match(await page.textContent('#login-error'), /administrator|group/i, 'alice is an analyst, not an admin');
  await signIn(page, "o'neil", USERS.oneil.password);
  await page.waitForSelector('#panel:not([hidden])');
  t.equal(await page.textContent('#who'), "o'neil · ldap", 'o\'neil signed in through the directory');
  await page.screenshot({ path: 'test-artifacts/admin-ldap.png', fullPage: true });

  t.same(errors, [], 'no script errors');
  await page.close();
});

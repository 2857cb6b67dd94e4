/**
 * The admin panel for people (issue 27 item 9), in Chromium against a real stack: NATS, PostgreSQL
 * (the data and the config database, which keeps the audit log), slapd (the admin signs in with a
 * directory account of the admin group). The Config tab is a form drawn from the config schema: a
 * switch, a choice, a number with its bounds, descriptions, "Needs restart" on start-only keys (not
 * editable), secrets write-only, save with an error beside each field that was refused. The audit
 * log is searched on the server by the question's words, the user, the outcome and the time, a page
 * at a time, with the details of a question (SQL, rows, timings, trace id). The LDAP tab speaks in
 * words; every form has one style. Light and dark, and at 390 px: axe finds nothing serious and no
 * tab scrolls sideways (a wide semantic table scrolls inside its card).
 */
import t, { type Test } from 'tap';
import type { Browser, Page } from 'playwright-core';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { axeSerious } from '../helpers/axe.js';
import { launchBrowser } from '../helpers/browser.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { guardPage } from '../helpers/page-guard.js';
import { createTestDb } from '../helpers/pg.js';
import { ADMINS_DN, BASE_DN, startSlapd, SVC_DN, SVC_PASSWORD, USERS } from '../helpers/slapd.js';
import { call, startStack } from '../helpers/stack.js';

const slapd = await startSlapd();
const nats = await startNats();
const db = await createTestDb('admforms');
await db.pool.query(GUARD_SCHEMA_SQL);
const cfgDb = await createTestDb('admforms_cfg');
const fake = await startFakeLlm();
// a question with "refuse" in it gets SQL the guard refuses; every other one counts the orders
fake.fallback((req) => ({ text: sqlAnswer(/refuse/i.test(req.last) ? 'DELETE FROM orders' : 'SELECT count(*) AS n FROM orders') }));
const config = testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: {
    admin: { enabled: true, username: 'admin', password: '', ldap_group_dn: ADMINS_DN },
    ldap: { enabled: true, server: slapd.url, bind_dn: SVC_DN, bind_password: SVC_PASSWORD, base_dn: BASE_DN, user_search_filter: '(uid={username})', group_member_attr: 'member' },
    config_db: { enabled: true, encryption_key: generateFernetKey(), postgresql: { host: cfgDb.host, port: cfgDb.port, database: cfgDb.name, user: cfgDb.user } },
  },
});
const stack = await startStack(config);
const browser: Browser = await launchBrowser();
t.teardown(async () => {
  await browser.close();
  await stack.stop();
  await fake.close();
  await db.drop();
  await cfgDb.drop();
  await nats.stop();
  await slapd.stop();
});

/** o'neil is in the admin group of the directory: the panel's only way in (no local password) */
const ADMIN = { username: USERS.oneil.uid, password: USERS.oneil.password };
/** every page's script errors, checked by the last test */
const scriptErrors: string[] = [];

async function openPanel(t: Test, opts: { theme?: 'light' | 'dark'; width?: number } = {}): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: opts.width ?? 1280, height: 900 }, colorScheme: opts.theme ?? 'light' });
  t.teardown(() => context.close());
  const page = await context.newPage();
  await guardPage(page, t);
  page.on('pageerror', (e) => scriptErrors.push(e.message));
  await page.goto(`${stack.url}/admin`);
  await page.waitForSelector('#login:not([hidden])');
  await page.fill('#username', ADMIN.username);
  await page.fill('#password', ADMIN.password);
  await page.click('#sign-in');
  await page.waitForSelector('#panel:not([hidden])');
  return page;
}

const row = (page: Page, key: string) => page.locator(`#cfg-form [data-field="${key}"]`);
const input = (page: Page, key: string) => page.locator(`#cfg-form [name="${key}"]`).first();

async function flashAfter(page: Page, click: string): Promise<{ text: string; bad: boolean }> {
  await page.evaluate('document.querySelector("#flash").textContent = ""');
  await page.click(click);
  await page.locator('#flash').filter({ hasText: /\S/ }).waitFor();
  return { text: (await page.textContent('#flash')) ?? '', bad: (await page.getAttribute('#flash', 'class')) === 'error' };
}

t.test('Config is a form from the schema: inputs by type, restart-only keys, write-only secrets, errors beside the field', async (t) => {
  const page = await openPanel(t);
  t.match(await page.textContent('#who'), /o'neil · ldap/, 'signed in through the directory');
  await row(page, 'query.default_limit').waitFor({ state: 'attached' });
  t.notOk(await page.locator('#config-json').isVisible(), 'no JSON dump on the screen');
  t.ok(await page.locator('#cfg-form details[data-section=query] summary').isVisible(), 'grouped by section');
  t.match(await page.textContent('#cfg-form details[data-section=query] summary'), /Questions and queries/);

  await page.click('#cfg-form details[data-section=query] summary');
  t.equal(await input(page, 'query.default_limit').getAttribute('type'), 'number');
  t.equal(await input(page, 'query.default_limit').getAttribute('min'), '1', 'a number with its bounds');
  t.equal(await input(page, 'query.max_corrections').getAttribute('max'), '5');
  t.equal(await input(page, 'query.default_limit').inputValue(), '100', 'the value in force');
  t.match(await row(page, 'query.max_corrections').textContent(), /rewrite SQL the database rejected/, 'what the key means');
  t.equal(await page.textContent(`#cfg-form label[for="${await input(page, 'query.default_limit').getAttribute('id')}"]`), 'Default limit', 'a label for people');

  await page.click('#cfg-form details[data-section=insights] summary');
  t.equal(await input(page, 'insights.enabled').getAttribute('role'), 'switch', 'a boolean is a switch');
  t.equal(await input(page, 'insights.enabled').isChecked(), true);
  t.equal(await input(page, 'insights.mode').evaluate((e) => e.tagName), 'SELECT', 'an enum is a choice');
  t.same(await input(page, 'insights.mode').locator('option').allTextContents(), ['llm_only', 'statistical_only', 'hybrid']);

  await page.click('#cfg-form details[data-section=app] summary');
  t.match(await row(page, 'app.port').textContent(), /Needs restart/, 'a start-only key says it needs a restart');
  t.ok(await input(page, 'app.port').isDisabled(), 'and cannot be changed here');
  t.notMatch(await row(page, 'app.shutdown_grace_seconds').textContent() ?? '', /Needs restart/, 'a run-time key has no badge');

  await page.click('#cfg-form details[data-section=llm] summary');
  const secret = input(page, 'llm.anthropic.api_key');
  t.equal(await secret.getAttribute('type'), 'password', 'a secret is a password field');
  t.equal(await secret.inputValue(), '', 'its value is never in the page');
  t.match(await secret.getAttribute('placeholder'), /^set/, 'it says one is set');
  t.notOk((await page.content()).includes('test-key'), 'the secret appears nowhere in the page');

  // one bad number (the page says so), one change the server refuses, one good change
  await input(page, 'query.default_limit').fill('0');
  await page.click('#cfg-form details[data-section=catalog] summary');
  await input(page, 'catalog.synonyms').fill('{"revenue": "sales"}');
  await input(page, 'query.max_limit').fill('500');
  const mixed = await flashAfter(page, '#cfg-save');
  t.ok(mixed.bad, mixed.text);
  t.match(mixed.text, /1 setting saved; 2 settings not saved/);
  t.match(await row(page, 'query.default_limit').locator('.field-error').textContent(), /whole number of at least 1/, 'the bad number is said beside it');
  t.equal(await input(page, 'query.default_limit').getAttribute('aria-invalid'), 'true');
  t.match(await row(page, 'catalog.synonyms').locator('.field-error').textContent(), /synonyms/, 'the server\'s refusal beside its field');
  t.match(await page.textContent('#overrides tbody'), /query\.max_limit\s*500/, 'what was saved is listed at once');
  t.notOk(await row(page, 'query.max_limit').locator('.field-error').isVisible(), 'the good one has no error');
  t.equal((await call(`${stack.url}/admin/config`, { headers: { cookie: await cookie(page) } })).body.config.query.max_limit, 500, 'and is in force');

  await input(page, 'query.default_limit').fill('42');
  await input(page, 'catalog.synonyms').fill('{"revenue": ["sales", "turnover"]}');
  const good = await flashAfter(page, '#cfg-save');
  t.same(good, { text: '2 settings saved: in force in every process now.', bad: false });
  await page.locator('#overrides tbody tr', { hasText: 'query.default_limit' }).waitFor();
  t.match(await page.textContent('#overrides tbody'), /query\.default_limit\s*42/);
  await page.click('#cfg-form details[data-section=query] summary');
  t.match(await row(page, 'query.default_limit').textContent(), /Changed at run time/);
  await row(page, 'query.default_limit').getByRole('button', { name: /Reset to file: Default limit/ }).click();
  await page.locator('#flash', { hasText: 'back to the file' }).waitFor();
  await page.click('#cfg-form details[data-section=query] summary');
  t.equal(await input(page, 'query.default_limit').inputValue(), '100', 'reset to the file\'s value');

  // find a setting by its words
  await page.fill('#cfg-search', 'corrections');
  t.ok(await row(page, 'query.max_corrections').isVisible());
  t.notOk(await row(page, 'query.default_limit').isVisible(), 'the others are hidden');
  t.notOk(await page.locator('#cfg-form details[data-section=app]').isVisible(), 'and sections without a match');
});

async function cookie(page: Page): Promise<string> {
  const c = (await page.context().cookies()).find((x) => x.name === 'cortado_admin');
  return c ? `${c.name}=${c.value}` : '';
}

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

t.test('the audit log: searched by question, user, outcome and time, a page at a time, with the details of a question', async (t) => {
  const page = await openPanel(t);
  const admin = await cookie(page);
  const csrf = (await call(`${stack.url}/admin/session`, { headers: { cookie: admin } })).body.csrf_token as string;
  const ask = (question: string, headers: Record<string, string> = {}) => call(`${stack.url}/api/query`, { body: { question }, headers });
  // the admin asks one question, traced; anonymous callers ask the rest
  const first = await ask('How many orders are there?', { cookie: admin, 'x-csrf-token': csrf, traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` });
  t.equal(first.status, 200, first.text);
  await ask('Please refuse this one');
  for (let i = 0; i < 26; i++) await ask(`Revenue question number ${i}`);
  // the audit actor writes from the event stream: wait until the last question is in
  const end = Date.now() + 15_000;
  while (Date.now() < end) {
    const r = await call(`${stack.url}/admin/audit?type=question.completed&q=number%2025`, { headers: { cookie: admin } });
    if (r.body?.total === 1) break;
    await new Promise((r) => setTimeout(r, 200));
  }

  await page.click('[data-tab=audit]');
  await page.locator('#audit tbody tr').first().waitFor();
  t.equal(await page.locator('#audit-type').inputValue(), 'question.completed', 'questions first');
  t.same(await page.locator('#audit thead th').allTextContents(), ['Time', 'User', 'Question or event', 'Outcome', 'Details']);
  t.equal(await page.locator('#audit tbody tr').count(), 25, 'a page of 25');
  t.match(await page.textContent('#audit-count'), /^1–25 of 28$/);
  t.ok(await page.locator('#audit-prev').isDisabled(), 'no newer page');
  await page.click('#audit-next');
  await page.locator('#audit-count', { hasText: '26–28 of 28' }).waitFor();
  t.equal(await page.locator('#audit tbody tr').count(), 3, 'the last page');
  t.ok(await page.locator('#audit-next').isDisabled());

  await page.fill('#audit-q', 'how many ORDERS');
  await page.click('#audit-form button[type=submit]');
  await page.locator('#audit-count', { hasText: '1–1 of 1' }).waitFor();
  const cells = await page.locator('#audit tbody tr td').allTextContents();
  t.equal(cells[1], "o'neil", 'who asked');
  t.equal(cells[2], 'How many orders are there?', 'the question itself');
  t.equal(cells[3], 'OK');

  await page.fill('#audit-q', '');
  await page.fill('#audit-user', "o'neil");
  await page.click('#audit-form button[type=submit]');
  await page.locator('#audit-count', { hasText: '1–1 of 1' }).waitFor();
  await page.fill('#audit-user', '');
  await page.fill('#audit-code', 'sql_rejected');
  await page.click('#audit-form button[type=submit]');
  await page.locator('#audit-count', { hasText: '1–1 of 1' }).waitFor();
  t.match(await page.textContent('#audit tbody'), /Please refuse this one\s*SQL_REJECTED/, 'by outcome');
  await page.fill('#audit-code', '');
  await page.fill('#audit-from', '2099-01-01T00:00');
  await page.click('#audit-form button[type=submit]');
  await page.locator('#audit-count', { hasText: 'Nothing matches.' }).waitFor();
  t.ok(await page.locator('#audit-empty').isVisible(), 'nothing after a time still to come');
  await page.fill('#audit-from', '');

  await page.fill('#audit-q', 'orders are');
  await page.click('#audit-form button[type=submit]');
  await page.locator('#audit-count', { hasText: '1–1 of 1' }).waitFor();
  await page.click('#audit tbody tr button');
  await page.locator('#audit-detail:not([hidden])').waitFor();
  t.equal(await page.evaluate('document.activeElement?.id'), 'audit-detail-title', 'the focus moves to the details');
  const detail = await page.textContent('#audit-detail') ?? '';
  t.match(detail, /QuestionHow many orders are there\?/);
  t.match(await page.textContent('#audit-sql'), /SELECT count\(\*\) AS n FROM orders/, 'the SQL');
  t.match(detail, /Rows1(?!\d)/, 'the rows');
  t.match(detail, /Timings.*database [\d,]+ ms.*total [\d,]+ ms/, 'the timings');
  t.equal(await page.textContent('#audit-detail .audit-trace'), TRACE_ID, 'the trace id');
  t.match(detail, new RegExp(`Request ID${first.body.request_id}`));

  // the CSV follows the search
  t.match(await page.getAttribute('#audit-csv', 'href'), /q=orders\+are/);
});

t.test('LDAP speaks in words; one form style on sign-in, Config, Audit and LDAP', async (t) => {
  const page = await browser.newPage();
  t.teardown(() => page.close());
  await page.goto(`${stack.url}/admin`);
  await page.waitForSelector('#login:not([hidden])');
  const style = (sel: string) => page.locator(sel).first().evaluate((e) => {
    const s = (globalThis as any).getComputedStyle(e);
    return [s.borderTopWidth, s.borderTopStyle, s.borderTopColor, s.borderRadius, s.paddingLeft, s.paddingTop, s.fontSize, s.backgroundColor].join(' ');
  });
  const signIn = await style('#username');
  await page.fill('#username', ADMIN.username);
  await page.fill('#password', ADMIN.password);
  await page.click('#sign-in');
  await page.waitForSelector('#panel:not([hidden])');
  await row(page, 'query.default_limit').waitFor({ state: 'attached' });
  t.equal(await style('#cfg-search'), signIn, 'Config like the sign-in');
  await page.click('[data-tab=audit]');
  t.equal(await style('#audit-user'), signIn, 'Audit like the sign-in');
  await page.click('[data-tab=ldap]');
  await page.locator('#ldap-fields [name=server]').waitFor();
  t.equal(await style('#ldap-fields [name=server]'), signIn, 'LDAP like the sign-in');
  const labels = await page.locator('#ldap-fields .field-label').allTextContents();
  t.ok(labels.includes('Server address') && labels.includes('Service account DN') && labels.includes('Group allowed to use the assistant'), labels.join(' | '));
  t.notOk(labels.some((l) => /_/.test(l)), 'no raw key as a label');
  t.equal(await page.locator('#ldap-server').getAttribute('aria-describedby'), 'ldap-server-hint', 'each with a hint');
});

for (const theme of ['light', 'dark'] as const) {
  t.test(`${theme} theme at 390 px: no serious axe finding, nothing wider than the screen`, async (t) => {
    const page = await openPanel(t, { theme, width: 390 });
    const width = async () => page.evaluate('document.scrollingElement.scrollWidth') as Promise<number>;
    const check = async (what: string) => {
      t.same(await axeSerious(page), [], `${what}: no serious or critical violations`);
      t.ok(await width() <= 390, `${what}: ${await width()} px wide`);
    };
    await row(page, 'query.default_limit').waitFor({ state: 'attached' });
    await page.click('#cfg-form details[data-section=query] summary');
    await page.click('#cfg-form details[data-section=app] summary');
    await input(page, 'query.default_limit').fill('-3');
    await page.click('#cfg-save');
    await row(page, 'query.default_limit').locator('.field-error:not([hidden])').waitFor();
    await check('Config with an error shown');

    await page.click('[data-tab=audit]');
    await page.locator('#audit tbody tr').first().waitFor();
    await page.click('#audit tbody tr button');
    await page.locator('#audit-detail:not([hidden])').waitFor();
    await check('Audit log with a question\'s details');

    await page.click('[data-tab=ldap]');
    await page.locator('#ldap-fields [name=server]').waitFor();
    await check('LDAP');

    // a wide table of the semantic layer scrolls inside its card, not the card off the screen
    await page.click('[data-tab=semantic]');
    await page.locator('#tab-semantic:not([hidden])').waitFor();
    await page.click('#tab-semantic [data-sub=discover]');
    await page.fill('#sem-d-schema', 'public');
    await page.fill('#sem-d-tables', 'orders');
    await page.click('#sem-d-run');
    await page.locator('#tab-semantic .suggestion table').first().waitFor();
    const card = await page.locator('#tab-semantic').evaluate((e) => ({ scroll: e.scrollWidth, client: e.clientWidth }));
    t.ok(card.scroll <= card.client, `the card does not overflow: ${card.scroll} in ${card.client} px`);
    const inner = await page.locator('#tab-semantic .suggestion .scroll').first().evaluate((e) => ({ scroll: e.scrollWidth, client: e.clientWidth }));
    t.ok(inner.scroll > inner.client, `the table scrolls inside it: ${inner.scroll} in ${inner.client} px`);
    await check('Semantic, Auto-Discover');
  });
}

t.test('no page had a script error', async (t) => {
  t.same(scriptErrors, []);
});

/**
 * The dashboard's Schedules tab in a real browser, signed in with an API token: the sign-in hint
 * first; create with the cron helper (fields, a wrong field refused with its name, a preset, the
 * next five runs), the pinned SQL shown after creation and edited (the guard refuses a write),
 * another user sees none of it, Run Now and its History row, pause, delete; and the tab gone
 * when ui.sections.schedules is false. The memory notice (config_db is off here). "Write the
 * SQL again" offered after a run that failed because a table was dropped, and only then (not
 * after a run that failed otherwise), and clicked: the new pinned SQL is shown.
 */
import t from 'tap';
import type { Page } from 'playwright-core';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { launchBrowser } from '../helpers/browser.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';

const nats = await startNats();
const db = await createTestDb('schpage');
await db.pool.query(GUARD_SCHEMA_SQL);
await db.pool.query("CREATE TABLE drifty (id int, label text); INSERT INTO drifty VALUES (1, 'one')");
const STATUSES = (await db.pool.query<{ n: number }>('SELECT count(DISTINCT status)::int AS n FROM orders')).rows[0]!.n;
const fake = await startFakeLlm();
const stack = await startStack(testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: {
    admin: { enabled: true, username: 'admin', password: 'sch-page-admin-pw' },
    scheduler: { enabled: true, timezone: 'UTC' },
  },
}));
const browser = await launchBrowser();
t.teardown(async () => {
  await browser.close();
  await stack.stop();
  await fake.close();
  await db.drop();
  await nats.stop();
});

const login = await call(`${stack.url}/admin/login`, { body: { username: 'admin', password: 'sch-page-admin-pw' } });
const admin = { cookie: (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '', 'x-csrf-token': login.body.csrf_token as string };
async function tokenFor(username: string): Promise<string> {
  const r = await call(`${stack.url}/admin/tokens`, { body: { username, label: `${username} on the page` }, headers: admin });
  if (r.status !== 201) throw new Error(`token for ${username}: ${r.text}`);
  return r.body.token as string;
}
const alice = await tokenFor('alice');
const bob = await tokenFor('bob');

const SQL = 'SELECT status, count(*) AS orders FROM orders GROUP BY status';

/** Sign in with an API token from the page's header (signin.js); the page reloads as its holder. */
async function useToken(page: Page, token: string): Promise<void> {
  await page.locator('body[data-ui=ready]').waitFor();
  await page.click('#sign-in-open');
  await page.check('input[name=sign-in-method][value=token]');
  await page.fill('#sign-in-token', token);
  await Promise.all([page.waitForEvent('load'), page.click('#sign-in-submit')]);
  await page.locator('body[data-ui=ready]').waitFor();
}

/** Sign out from the header: the token is forgotten and the page drawn again for nobody. */
async function signOut(page: Page): Promise<void> {
  await Promise.all([page.waitForEvent('load'), page.click('#sign-out')]);
  await page.locator('body[data-ui=ready]').waitFor();
}

t.test('create, see the next runs and the pinned SQL, run now, history, pause, delete', async (t) => {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(stack.url);
  await page.click('#main-tabs [data-view=schedules]');
  await page.locator('#sch-signin-hint').waitFor();
  t.match(await page.textContent('#sch-signin-hint'), /sign in/i, 'a stranger is asked to sign in');
  t.equal(await page.locator('#sch-main').isVisible(), false, 'and sees no list');

  await useToken(page, alice);
  await page.locator('#sch-main:not([hidden])').waitFor();
  t.match(await page.textContent('#sch-who'), /API token ctd_/);
  await page.locator('#sch-empty:not([hidden])').waitFor();
  // config_db is off here: the page says the schedules live in memory only
  t.ok(await page.locator('#sch-memory').isVisible(), 'the memory notice is shown');
  t.match(await page.textContent('#sch-memory'), /memory only[\s\S]*lost when it restarts/);

  // the cron helper: fields compose the expression, the server says the next five runs
  await page.click('#sch-new');
  await page.locator('#sch-cron-runs li').first().waitFor();
  await page.fill('#sch-cron-0', '30');
  await page.fill('#sch-cron-1', '7');
  t.equal(await page.inputValue('#sch-cron'), '30 7 * * 1-5', 'fields make the expression');
  await page.locator('#sch-cron-runs li', { hasText: '07:30' }).nth(4).waitFor();
  const weekdays = await page.locator('#sch-cron-runs li').allTextContents();
  t.equal(weekdays.length, 5, 'five next runs');
  for (const run of weekdays) {
    const day = new Date(`${run.slice(0, 10)}T00:00:00Z`).getUTCDay();
    t.ok(day >= 1 && day <= 5 && run.includes('07:30'), `${run} is a weekday at 07:30`);
  }
  t.match(await page.textContent('#sch-cron-words'), /07:30/);

  await page.fill('#sch-cron-0', '61');
  await page.locator('#sch-cron-error:not([hidden])').waitFor();
  t.match(await page.textContent('#sch-cron-error'), /minute/i, 'a wrong field is named');
  t.ok(await page.isDisabled('#sch-save'), 'cannot save an invalid cron');
  t.equal(await page.locator('#sch-cron-runs li').count(), 0, 'no runs shown for it');

  await page.selectOption('#sch-preset', { label: 'Every day at 08:00' });
  t.equal(await page.inputValue('#sch-cron'), '0 8 * * *');
  await page.locator('#sch-cron-error[hidden]').waitFor({ state: 'attached' });
  await page.locator('#sch-cron-runs li', { hasText: '08:00' }).nth(4).waitFor();
  t.equal(await page.inputValue('#sch-cron-1'), '8', 'the preset fills the fields');

  fake.script({ text: sqlAnswer(SQL, 'Orders per status.') });
  await page.fill('#sch-name', 'Orders by status');
  await page.fill('#sch-question', 'How many orders are there per status?');
  await page.fill('#sch-recipients', 'alice@example.com, ops@example.com');
  await page.selectOption('#sch-format', 'csv');
  await page.click('#sch-save');

  // the SQL pinned at creation is shown, and can be edited
  await page.locator('#sch-pinned:not([hidden])').waitFor();
  t.match(await page.inputValue('#sch-pinned-sql'), /count\(\*\)[\s\S]*GROUP BY status/i, 'the pinned SQL is shown');
  t.equal(await page.textContent('#sch-pinned-explanation'), 'Orders per status.');
  const row = page.locator('#sch-list tr.sch-row', { hasText: 'Orders by status' });
  await row.waitFor();
  t.match(await row.locator('.sch-words').textContent(), /08:00 every day/);
  t.match(await row.locator('.sch-next').textContent(), /^\d{4}-\d\d-\d\d 08:00/, 'the next run is listed');
  t.match(await row.textContent(), /never run/);

  await page.fill('#sch-pinned-sql', 'DELETE FROM orders');
  await page.click('#sch-pinned-save');
  await page.locator('#sch-flash.error').waitFor();
  t.match(await page.textContent('#sch-flash'), /DELETE|not allowed|read-only|SQL_REJECTED/i, 'the guard refuses a write');
  await page.fill('#sch-pinned-sql', 'SELECT count(*) AS orders FROM orders');
  await page.click('#sch-pinned-save');
  await page.locator('#sch-flash', { hasText: 'SQL saved' }).waitFor();

  // another user sees none of it
  await signOut(page);
  await page.locator('#sch-signin-hint').waitFor();
  await useToken(page, bob);
  await page.locator('#sch-empty:not([hidden])').waitFor();
  t.equal(await page.locator('#sch-list tr.sch-row').count(), 0, 'bob sees no schedule of alice');
  await signOut(page);
  await useToken(page, alice);
  await row.waitFor();

  // Run Now: the History shows the run, done, with its rows
  const modelCalls = fake.requests.length;
  await row.locator('.sch-run').click();
  await page.locator('#sch-history:not([hidden]), #sch-flash.error').first().waitFor();
  if (await page.locator('#sch-flash.error').count()) return t.fail(`Run Now refused: ${await page.textContent('#sch-flash')}`);
  const done = page.locator('#sch-history tr.sch-exec.done').first();
  await done.waitFor({ timeout: 60_000 });
  const cells = await done.locator('td').allTextContents();
  t.equal(cells[1], 'manual', 'the trigger');
  t.equal(cells[2], 'success', `the run succeeded: ${cells.join(' | ')}`);
  t.equal(cells[3], '1', 'one row: the edited SQL ran, not the generated one');
  t.match(cells[4], /\d+ ms/, 'its duration');
  t.match(cells[5], /^not sent/, 'e-mail is off here: not sent, and the page says so');
  t.equal(fake.requests.length, modelCalls, 'no model call for the run: the pinned SQL ran');
  await page.locator('#sch-list tr.sch-row .sch-last', { hasText: 'succeeded' }).waitFor();
  t.ok(STATUSES > 1, 'the generated SQL would have returned more than one row');

  // pause and resume
  await row.locator('.sch-toggle').click();
  await row.locator('.sch-state', { hasText: 'paused' }).waitFor();
  t.equal(await row.locator('.sch-toggle').textContent(), 'Resume');
  t.equal(await row.locator('.sch-next').textContent(), '—', 'a paused schedule has no next run');
  const listed = await call(`${stack.url}/api/schedules`, { headers: { authorization: `Bearer ${alice}` } });
  t.equal(listed.body.schedules[0].enabled, false, 'paused on the server');
  const id = listed.body.schedules[0].id as string;

  // delete: asked first, and the history goes too
  const dialogs: string[] = [];
  page.once('dialog', (d) => { dialogs.push(d.message()); void d.accept(); });
  await row.locator('.sch-delete').click();
  await page.locator('#sch-empty:not([hidden])').waitFor();
  t.match(dialogs[0], /history/i, 'the confirmation says the history goes too');
  t.equal(await page.locator('#sch-history').isVisible(), false);
  const history = await call(`${stack.url}/api/schedules/${id}/history`, { headers: { authorization: `Bearer ${alice}` } });
  t.equal(history.status, 404, 'history gone with it');
  t.same(errors, [], 'no script errors');
  await page.close();
});

t.test('editing a schedule, and the tab switched off by ui.sections.schedules', async (t) => {
  fake.script({ text: sqlAnswer(SQL, 'Orders per status.') });
  const made = await call(`${stack.url}/api/schedules`, {
    body: { name: 'Weekly', question: 'orders per status', tables: ['orders'], cron: '0 9 * * 1', email_recipients: ['alice@example.com'], format: 'html' },
    headers: { authorization: `Bearer ${alice}` },
  });
  t.equal(made.status, 201, made.text);

  const page = await browser.newPage();
  await page.goto(`${stack.url}/#schedules`);
  await useToken(page, alice);
  const row = page.locator('#sch-list tr.sch-row', { hasText: 'Weekly' });
  await row.waitFor();
  t.match(await row.locator('.sch-words').textContent(), /09:00 on Monday/);
  await row.locator('.sch-edit').click();
  t.equal(await page.inputValue('#sch-name'), 'Weekly', 'the form holds the schedule');
  t.equal(await page.inputValue('#sch-cron'), '0 9 * * 1');
  t.match(await page.inputValue('#sch-sql'), /GROUP BY status/i, 'and its SQL');
  await page.fill('#sch-name', 'Weekly orders');
  await page.fill('#sch-cron-4', '1-5');
  await page.locator('#sch-cron-runs li').nth(4).waitFor();
  await page.click('#sch-save');
  const renamed = page.locator('#sch-list tr.sch-row', { hasText: 'Weekly orders' });
  await renamed.waitFor();
  t.match(await renamed.locator('.sch-words').textContent(), /09:00 on weekdays/);
  const got = await call(`${stack.url}/api/schedules/${made.body.id}`, { headers: { authorization: `Bearer ${alice}` } });
  t.equal(got.body.cron, '0 9 * * 1-5', 'saved on the server');
  t.equal(got.body.name, 'Weekly orders');
  await page.close();

  const off = await call(`${stack.url}/admin/config/ui.sections.schedules`, { method: 'PUT', body: { value: false }, headers: admin });
  t.equal(off.status, 200, off.text);
  const again = await browser.newPage();
  await again.goto(stack.url);
  await again.locator('body[data-ui=ready]').waitFor({ state: 'attached' });
  const ui = await call(`${stack.url}/ui/config`);
  t.equal(ui.body.sections.schedules, false);
  t.equal(await again.locator('#main-tabs [data-view=schedules]').isVisible(), false, 'no Schedules tab');
  await again.close();
});

t.test('a run failed by a dropped table, and only that, offers to write the SQL again', async (t) => {
  // the tab back (the test before switched it off)
  t.equal((await call(`${stack.url}/admin/config/ui.sections.schedules`, { method: 'DELETE', headers: admin })).status, 200);
  const h = { authorization: `Bearer ${alice}` };
  const make = async (name: string, sql: string) => {
    const r = await call(`${stack.url}/api/schedules`, { body: { name, question: `the ${name} report`, cron: '0 9 * * 1', email_recipients: ['alice@example.com'], format: 'csv', sql }, headers: h });
    t.equal(r.status, 201, r.text);
    return r.body as { id: string };
  };
  await make('Broken math', 'SELECT 1 / (count(*) - count(*)) AS x FROM orders');
  const drifting = await make('Drifting', 'SELECT id, label FROM drifty');

  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${stack.url}/#schedules`);
  await useToken(page, alice);

  // a failure that is no drift (division by zero): History shows it, and no offer
  await page.locator('#sch-list tr.sch-row', { hasText: 'Broken math' }).locator('.sch-run').click();
  const failed = page.locator('#sch-history tr.sch-exec.done').first();
  await failed.waitFor({ timeout: 60_000 });
  t.equal((await failed.locator('td').allTextContents())[2], 'failed', 'the run failed');
  t.equal(await page.locator('#sch-regen').count(), 0, 'a failure that is no drift offers no regeneration');

  // the table is dropped: the run fails as drift, and the page offers to write the SQL again
  await db.pool.query('DROP TABLE drifty');
  await page.locator('#sch-list tr.sch-row', { hasText: 'Drifting' }).locator('.sch-run').click();
  await page.locator('#sch-history h3', { hasText: 'Drifting' }).waitFor();
  await page.locator('#sch-regen').waitFor({ timeout: 60_000 });
  const history = await call(`${stack.url}/api/schedules/${drifting.id}/history`, { headers: h });
  t.match(history.body.executions[0], { success: false, drift: true, error_message: /drifty no longer exists/ }, 'the execution says drift');
  fake.script({ text: sqlAnswer('SELECT count(*) AS n FROM orders', 'Counts the orders.') });
  await page.click('#sch-regen');
  await page.locator('#sch-pinned:not([hidden])').waitFor();
  t.equal(await page.inputValue('#sch-pinned-sql'), 'SELECT count(*) AS n FROM orders', 'the new pinned SQL is shown');
  t.equal((await call(`${stack.url}/api/schedules/${drifting.id}`, { headers: h })).body.sql, 'SELECT count(*) AS n FROM orders', 'and saved');
  t.same(errors, [], 'no script errors');
  await page.close();
});

t.test('each schedule says the period its next run covers, or the fixed period it always covers', async (t) => {
  const h = { authorization: `Bearer ${alice}` };
  const make = async (name: string, question: string, sql: string) => {
    const r = await call(`${stack.url}/api/schedules`, { body: { name, question, cron: '0 8 1 1 *', email_recipients: ['alice@example.com'], format: 'csv', sql }, headers: h });
    t.equal(r.status, 201, r.text);
  };
  // the next run is on 1 January at 08:00 (UTC): "last month" is the December before it
  const now = new Date();
  const y = Date.now() < Date.UTC(now.getUTCFullYear(), 0, 1, 8) ? now.getUTCFullYear() - 1 : now.getUTCFullYear();
  await make('Revenue last month', 'revenue per status last month',
    'SELECT status, sum(amount) AS revenue FROM orders WHERE ordered_at >= {{period_start}} AND ordered_at < {{period_end}} GROUP BY status');
  await make('October revenue', 'revenue per status in October 2026',
    "SELECT status, sum(amount) AS revenue FROM orders WHERE ordered_at >= DATE '2026-10-01' AND ordered_at < DATE '2026-11-01' GROUP BY status");
  await make('Frozen revenue', 'revenue per status last month',
    "SELECT status, sum(amount) AS revenue FROM orders WHERE ordered_at >= DATE '2026-10-01' AND ordered_at < DATE '2026-11-01' GROUP BY status");

  const page = await browser.newPage();
  await page.goto(`${stack.url}/#schedules`);
  await useToken(page, alice);
  const period = (name: string) => page.locator('#sch-list tr.sch-row', { hasText: name }).locator('.sch-period');
  await period('Revenue last month').waitFor();
  t.equal(await period('Revenue last month').textContent(), `Next run covers 1 Dec – 31 Dec ${y} (last month)`);
  t.equal(await period('October revenue').textContent(), 'Always covers 1 Oct – 31 Oct 2026 (a fixed period)');
  t.match(await period('Frozen revenue').textContent(), /asks for last month, but the SQL names fixed dates/, 'SQL that froze a relative question is pointed out');
  await page.close();
});

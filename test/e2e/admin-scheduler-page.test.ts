/**
 * The admin panel's Scheduler and Email & SMTP tabs in a real browser: every schedule listed
 * with its owner, paused and run from there, its History; the scheduler settings read-only; the
 * email settings with the password never shown; Send Test Email delivered to a real SMTP server
 * (test/helpers/smtp.ts, AUTH required) and said so; a wrong SMTP password saved from the tab
 * makes the next test e-mail fail with the login refusal shown.
 */
import t from 'tap';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { launchBrowser } from '../helpers/browser.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { startSmtp } from '../helpers/smtp.js';
import { call, startStack } from '../helpers/stack.js';

const SMTP_PASSWORD = 'smtp-secret-for-the-page';
const nats = await startNats();
const db = await createTestDb('admsch');
await db.pool.query(GUARD_SCHEMA_SQL);
const smtp = await startSmtp({ tls: 'none', auth: { user: 'mailer', pass: SMTP_PASSWORD } });
const fake = await startFakeLlm();
fake.fallback(() => ({ text: sqlAnswer('SELECT count(*) AS n FROM orders', 'Counts the orders.') }));
const stack = await startStack(testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: {
    admin: { enabled: true, username: 'admin', password: 'adm-sch-page-pw' },
    // a secret (the SMTP password) is stored sealed: the settings actor needs the key
    config_db: { encryption_key: generateFernetKey() },
    scheduler: { enabled: true, timezone: 'Europe/Paris', max_concurrent_jobs: 3, job_timeout_seconds: 120 },
    email: {
      enabled: true,
      smtp: { host: smtp.host, port: smtp.port, user: 'mailer', password: SMTP_PASSWORD, use_tls: false, use_ssl: false, from_email: 'cortado@example.com' },
    },
  },
}));
const browser = await launchBrowser();
t.teardown(async () => {
  await browser.close();
  await stack.stop();
  await fake.close();
  await smtp.close();
  await db.drop();
  await nats.stop();
});

const login = await call(`${stack.url}/admin/login`, { body: { username: 'admin', password: 'adm-sch-page-pw' } });
const admin = { cookie: (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '', 'x-csrf-token': login.body.csrf_token as string };
const issued = await call(`${stack.url}/admin/tokens`, { body: { username: 'carol', label: 'carol' }, headers: admin });
const carol = { authorization: `Bearer ${issued.body.token as string}` };

const schedule = (name: string, cron: string) => ({ name, question: 'How many orders?', tables: ['orders'], cron, email_recipients: ['team@example.com'], format: 'csv' });
const mine = await call(`${stack.url}/api/schedules`, { body: schedule('Carol daily', '0 7 * * *'), headers: carol });
const theirs = await call(`${stack.url}/api/schedules`, { body: schedule('Admin hourly', '0 * * * *'), headers: admin });

async function signIn() {
  const page = await browser.newPage();
  await page.goto(`${stack.url}/admin`);
  await page.fill('#username', 'admin');
  await page.fill('#password', 'adm-sch-page-pw');
  await page.click('#sign-in');
  await page.waitForSelector('#panel:not([hidden])');
  return page;
}

t.test('the Scheduler tab: every schedule with its owner, pause, run now, history, settings', async (t) => {
  t.equal(mine.status, 201, mine.text);
  t.equal(theirs.status, 201, theirs.text);
  const page = await signIn();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.click('[data-tab=scheduler]');
  const carolRow = page.locator('#sched-list tr.sched-row', { hasText: 'Carol daily' });
  const adminRow = page.locator('#sched-list tr.sched-row', { hasText: 'Admin hourly' });
  await carolRow.waitFor();
  await adminRow.waitFor();
  t.equal(await carolRow.locator('.sched-owner').textContent(), 'carol', 'the owner is shown');
  t.equal(await adminRow.locator('.sched-owner').textContent(), 'admin');
  t.match(await carolRow.textContent(), /07:00 every day[\s\S]*Europe\/Paris/);

  t.equal(await page.textContent('#sched-settings dd[data-key=timezone]'), 'Europe/Paris', 'settings from /admin/config');
  t.equal(await page.textContent('#sched-settings dd[data-key=enabled]'), 'yes');
  t.equal(await page.textContent('#sched-settings dd[data-key=max_concurrent_jobs]'), '3');
  t.equal(await page.textContent('#sched-settings dd[data-key=job_timeout_seconds]'), '120');
  t.equal(await page.locator('#sched-settings input').count(), 0, 'read-only');
  // config_db is off here: the tab says the schedules live in memory only
  t.ok(await page.locator('#sched-memory').isVisible(), 'the memory notice is shown');
  t.match(await page.textContent('#sched-memory'), /memory only: config_db is off[\s\S]*lost when the scheduler process restarts/);

  await carolRow.locator('.sched-toggle').click();
  await carolRow.locator('.sch-state', { hasText: 'paused' }).waitFor();
  const asCarol = await call(`${stack.url}/api/schedules/${mine.body.id}`, { headers: carol });
  t.equal(asCarol.body.enabled, false, 'the admin paused carol\'s schedule');
  await carolRow.locator('.sched-toggle', { hasText: 'Resume' }).click();
  await carolRow.locator('.sch-state', { hasText: 'enabled' }).waitFor();

  const mailsBefore = smtp.received.length;
  await carolRow.locator('.sched-run').click();
  await page.locator('#sched-history:not([hidden]), #flash.error').first().waitFor();
  if (await page.locator('#flash.error').count()) return t.fail(`Run Now refused: ${await page.textContent('#flash')}`);
  const done = page.locator('#sched-history tr.sch-exec.done').first();
  await done.waitFor({ timeout: 60_000 });
  const cells = await done.locator('td').allTextContents();
  t.equal(cells[2], 'success', `the run: ${cells.join(' | ')}`);
  t.equal(cells[3], '1', 'its rows');
  t.equal(cells[5], 'sent', 'its e-mail was sent');
  const mails = await smtp.waitFor(mailsBefore + 1, 30_000);
  t.same(mails.at(-1)!.to, ['team@example.com'], 'the report reached the SMTP server');
  t.match(await page.textContent('#sched-history h3'), /Carol daily/);
  t.same(errors, [], 'no script errors');
  await page.close();
});

t.test('the Email & SMTP tab: settings with the password hidden, test e-mail, a wrong password', async (t) => {
  const page = await signIn();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.click('[data-tab=email]');
  const host = page.locator('#email-fields [name="smtp.host"]');
  await host.waitFor();
  t.equal(await host.inputValue(), smtp.host);
  t.equal(await page.inputValue('#email-fields [name="smtp.port"]'), String(smtp.port));
  t.equal(await page.inputValue('#email-fields [name="smtp.password"]'), '', 'the password is not in the page');
  t.match(await page.getAttribute('#email-fields [name="smtp.password"]', 'placeholder'), /set/);
  t.notMatch(await page.content(), SMTP_PASSWORD, 'nowhere in the page');
  t.ok(await page.isChecked('#email-fields [name=enabled]'));

  // a test e-mail reaches the server
  const before = smtp.received.length;
  await page.fill('#test-to', 'admin@example.com');
  await page.fill('#test-subject', 'Hello from the panel');
  await page.fill('#test-body', 'Checking the SMTP settings.');
  await page.click('#test-send');
  await page.locator('#test-email-result.ok-text, #test-email-result.error').waitFor();
  t.match(await page.textContent('#test-email-result'), /^Sent to admin@example\.com/, 'the page says it was sent');
  if (await page.locator('#test-email-result.error').count()) return;
  const mails = await smtp.waitFor(before + 1);
  const mail = mails.at(-1)!;
  t.same(mail.to, ['admin@example.com']);
  t.equal(mail.parsed.subject, 'Hello from the panel');
  t.match(mail.parsed.text, /Checking the SMTP settings\./);
  t.equal(mail.user, 'mailer', 'it logged in');

  // a field edited in the tab is saved as a runtime override
  await page.fill('#email-fields [name="smtp.from_name"]', 'Reports desk');
  await page.fill('#email-fields [name="smtp.password"]', 'not-the-password');
  await page.click('#email-save');
  await page.locator('#flash:not(:empty)').waitFor();
  t.match(await page.textContent('#flash'), /^saved: .*email\.smtp\.password/, 'saved');
  t.notMatch(await page.textContent('#flash'), /not-the-password/, 'the new password is not echoed');
  const cfg = await call(`${stack.url}/admin/config`, { headers: admin });
  t.equal(cfg.body.config.email.smtp.from_name, 'Reports desk');
  t.equal(cfg.body.config.email.smtp.password, '********', 'still masked');

  // the wrong password: the test e-mail fails and says the login was refused
  const failures = smtp.authFailures;
  await page.fill('#test-subject', 'This one fails');
  await page.click('#test-send');
  await page.locator('#test-email-result.error').waitFor();
  const shown = await page.textContent('#test-email-result');
  t.match(shown, /refused the login|auth/i, `the error says why: ${shown}`);
  t.notMatch(shown, /not-the-password/, 'without the password');
  t.ok(smtp.authFailures > failures, 'the server saw the failed login');
  t.equal(smtp.received.length, before + 1, 'nothing more arrived');
  t.same(errors, [], 'no script errors');
  await page.close();
});

t.test('the dashboard tab with the admin panel\'s session: every schedule, writes carry the CSRF header', async (t) => {
  const page = await signIn();
  await page.goto(`${stack.url}/#schedules`);
  await page.locator('#sch-main:not([hidden])').waitFor();
  t.match(await page.textContent('#sch-who'), /Signed in: admin/);
  const row = page.locator('#sch-list tr.sch-row', { hasText: 'Carol daily' });
  await row.waitFor();
  t.match(await row.textContent(), /by carol/, 'an admin sees whose it is');
  t.ok(await page.locator('#sch-list tr.sch-row', { hasText: 'Admin hourly' }).count());
  await row.locator('.sch-toggle', { hasText: 'Pause' }).click();
  await row.locator('.sch-state', { hasText: 'paused' }).waitFor();
  const asCarol = await call(`${stack.url}/api/schedules/${mine.body.id}`, { headers: carol });
  t.equal(asCarol.body.enabled, false, 'paused from the dashboard with the cookie session');
  await page.close();
});

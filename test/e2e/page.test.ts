/**
 * The first page in a real browser: `/` is the dashboard, whose Assistant tab (`/#assistant`)
 * mounts the answer view. Ask a question there, see the steps, the SQL, the explanation, the
 * rows and the insights; a chat answer is shown; a failure shows its code, message and request id.
 */
import t from 'tap';
import type { Page } from 'playwright-core';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { launchBrowser } from '../helpers/browser.js';
import { testConfig } from '../helpers/config.js';
import { chatAnswer, sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { startStack } from '../helpers/stack.js';

const nats = await startNats();
const db = await createTestDb('page');
await db.pool.query(GUARD_SCHEMA_SQL);
const fake = await startFakeLlm();
const stack = await startStack(testConfig({ natsUrl: nats.url, db: { host: db.host, port: db.port, name: db.name, user: db.user }, llmUrl: fake.url }));
const browser = await launchBrowser();
t.teardown(async () => {
  await browser.close();
  await stack.stop();
  await fake.close();
  await db.drop();
  await nats.stop();
});

/** Ask in the Assistant tab's answer view and wait until the answer is finished. */
async function ask(page: Page, question: string): Promise<void> {
  await page.fill('#assistant-root textarea.question', question);
  await page.click('#assistant-root button.go');
  await page.waitForSelector('#assistant-root .answer[aria-busy]', { state: 'detached' });
}

t.test('a question shows its SQL, explanation, rows and insights', async (t) => {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${stack.url}/#assistant`);
  await page.waitForSelector('#health.ok');
  t.equal(await page.locator('#tab-assistant').getAttribute('aria-selected'), 'true', 'the address opens the Assistant tab');
  await page.waitForSelector('#tables input[value="orders"]', { state: 'attached' });

  fake.script({ text: sqlAnswer('SELECT c.name AS customer, sum(o.amount) AS revenue FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.name ORDER BY revenue DESC', 'Revenue per customer, best first.') });
  await ask(page, 'Which customer brought the most revenue?');
  await page.waitForSelector('.answer .grid table tbody tr');

  const answer = page.locator('.answer').first();
  t.equal(await answer.locator('.q').textContent(), 'Which customer brought the most revenue?');
  t.equal(await answer.locator('.explanation').textContent(), 'Revenue per customer, best first.');
  t.match(await answer.locator('pre.sql').textContent(), /sum\(o\.amount\)[\s\S]*LIMIT 100/);
  t.same(await answer.locator('thead th').allTextContents(), ['Customer', 'Revenue'], 'headers read as names (the SQL keeps its own)');
  t.equal(await answer.locator('tbody tr').count(), 5);
  t.match(await answer.locator('.meta').first().textContent(), /5 rows/);
  t.ok((await answer.locator('.insights li').count()) > 0, 'insights listed');
  const steps = await answer.locator('.steps li').allTextContents();
  t.ok(steps.includes('SQL written') && steps.includes('Query ran'), `steps streamed: ${steps.join(', ')}`);
  t.same(errors, [], 'no script errors');
  await page.close();
});

t.test('a chat answer and an error are shown readably', async (t) => {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${stack.url}/#assistant`);
  fake.script({ text: chatAnswer('Hello! Ask me about orders.') });
  await ask(page, 'hi');
  await page.waitForSelector('.answer .message');
  t.equal(await page.locator('.answer .message').first().textContent(), 'Hello! Ask me about orders.');

  fake.fallback(() => ({ text: sqlAnswer('DELETE FROM orders') }));
  await ask(page, 'delete everything');
  await page.waitForSelector('.answer .error');
  const error = page.locator('.answer .error').first();
  t.equal(await error.locator('code').textContent(), 'SQL_REJECTED');
  t.match(await error.textContent(), /DELETE/);
  t.match(await error.locator('.rid').textContent(), /^request id [0-9a-f-]{36}$/);
  t.equal(await page.locator('.answer').first().locator('.q').textContent(), 'delete everything', 'the newest answer is on top');
  t.same(errors, [], 'no script errors');
  fake.fallback(() => ({ status: 500, message: 'no script' }));
  await page.close();
});

/**
 * What a business user sees in an answer (issue 27, items 4 and 5), in Chromium against a real
 * stack (NATS, PostgreSQL, the scripted model). No filler: no "3 rows returned.", no mean per row
 * over a handful of rows, no mean of shares; timings and tokens behind Details. And when
 * something goes wrong: an error leads with a sentence in their
 * words and what to try, the code, request id and failing SQL one click away behind "Details";
 * a query the database refused and the model fixed shows as a retry, not as a second "SQL
 * written"; an unknown address is a page for a browser and JSON for an API client. Light and
 * dark, 1440 × 900 and 390 × 844; screenshots go to test-artifacts/biz-error-*.png and biz-filler-*.png; axe-core.
 */
import { mkdirSync } from 'node:fs';
import t, { type Test } from 'tap';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.js';
import { axeSerious } from '../helpers/axe.js';
import { guardPage } from '../helpers/page-guard.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';

const ARTIFACTS = 'test-artifacts';
mkdirSync(ARTIFACTS, { recursive: true });


const nats = await startNats();
const db = await createTestDb('bizerr');
await db.pool.query(`
  CREATE TABLE stores (id int PRIMARY KEY, name text, area numeric(8,1));
  INSERT INTO stores VALUES (1, 'Lyon', 120.5), (2, 'Nice', 98.0), (3, 'Paris', 240.0);
`);
const fake = await startFakeLlm();
fake.fallback(() => ({ text: sqlAnswer('SELECT name, area FROM stores ORDER BY name', 'Store areas.') }));
const stack = await startStack(testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: { insights: { mode: 'statistical_only' }, query: { max_corrections: 1 } },
}));
const browser: Browser = await launchBrowser();
t.teardown(async () => {
  await browser.close();
  await stack.stop();
  await fake.close();
  await db.drop();
  await nats.stop();
});

const PHONE = { width: 390, height: 844 };

/** The dashboard's Assistant at a size and theme; asks with these scripted replies; the answer once finished. */
async function ask(t: Test, question: string, replies: string[], opts: { theme?: 'light' | 'dark'; width?: number; height?: number } = {}) {
  const context = await browser.newContext({ viewport: { width: opts.width ?? 1440, height: opts.height ?? 900 }, colorScheme: opts.theme ?? 'light' });
  t.teardown(() => context.close());
  const page = await context.newPage();
  page.on('pageerror', (e) => t.fail(`page error: ${e.message}`));
  await guardPage(page, t);
  await page.goto(stack.url);
  await page.locator('body[data-ui=ready]').waitFor();
  fake.script(...replies.map((sql) => ({ text: sqlAnswer(sql, 'Here it is.') })));
  await page.click('#tab-assistant');
  await page.fill('#view-assistant textarea.question', question);
  await page.click('#view-assistant button.go');
  await page.waitForFunction(() => {
    const a = (globalThis as any).document.querySelector('#view-assistant .answer');
    return a && !a.hasAttribute('aria-busy');
  });
  return { page, answer: page.locator('#view-assistant .answer').first() };
}

t.test('a statement that would change data: a sentence first, the code, request id and SQL behind Details', async (t) => {
  for (const [theme, size] of [['light', { width: 1440, height: 900 }], ['dark', PHONE]] as const) {
    const { page, answer } = await ask(t, 'Delete the old stores', ['DELETE FROM stores'], { theme, ...size });
    const error = answer.locator('.error');
    await error.waitFor();
    const shown = (await error.innerText()).trim();
    t.match(shown, /^This question asks to change data, and here you can only read it/, `${theme}: it leads with what happened, in words (${shown})`);
    t.match(shown, /Ask for what you want to see instead/, `${theme}: and what to try`);
    t.notMatch(shown, /SQL_REJECTED|DELETE FROM|request id/, `${theme}: no code, SQL or request id until asked for`);
    await error.locator('details.error-details summary').click();
    const details = await error.locator('details.error-details').innerText();
    t.match(details, /SQL_REJECTED only a SELECT query may run/, `${theme}: the code and the server's message one click away`);
    t.match(details, /request id [0-9a-f-]{36}/, `${theme}: the request id to quote`);
    t.equal(await error.locator('pre.error-sql').innerText(), 'DELETE FROM stores', `${theme}: the SQL that was refused`);
    await page.screenshot({ path: `${ARTIFACTS}/biz-error-rejected-${size.width}-${theme}.png`, fullPage: theme === 'light' });
    const width = await page.evaluate('document.documentElement.scrollWidth') as number;
    t.ok(width <= size.width, `${theme}: the page is ${width} px wide at ${size.width}`);
    t.same(await axeSerious(page), [], `axe ${theme} ${size.width}: an error with its details open`);
  }
});

t.test('the database refuses the SQL twice: what to try, and both the failing SQL and the retry are there', async (t) => {
  const { page, answer } = await ask(t, 'Store areas in square metres', ['SELECT s.area_sqm FROM stores s', 'SELECT s.area_m2 FROM stores s']);
  const error = answer.locator('.error');
  await error.waitFor();
  const shown = (await error.innerText()).trim();
  t.match(shown, /^The database could not run the query written for this question\./, `the sentence first (${shown})`);
  t.notMatch(shown, /DB_QUERY_FAILED|area_m2/, 'no code or SQL until asked for');
  await error.locator('details.error-details summary').click();
  t.match(await error.locator('details.error-details').innerText(), /DB_QUERY_FAILED column s\.area_m2 does not exist/);
  t.equal(await error.locator('pre.error-sql').innerText(), 'SELECT s.area_m2 FROM stores s', 'the SQL that failed last stays one click away');
  const steps = await answer.locator('ol.steps li').allInnerTexts();
  t.equal(steps.filter((s) => /SQL written/.test(s)).length, 1, `one "SQL written" (${steps.join(' / ')})`);
  t.equal(steps.filter((s) => /Fixed the query and retried/.test(s)).length, 1, 'the correction is a retry');
  await page.screenshot({ path: `${ARTIFACTS}/biz-error-dbfailed-1440-light.png`, fullPage: true });
});

t.test('the model fixes its query: a retry, the answer, and the first query one click away', async (t) => {
  const { page, answer } = await ask(t, 'Store areas', ['SELECT s.area_sqm FROM stores s', 'SELECT name, area FROM stores ORDER BY name'], { theme: 'dark' });
  await answer.locator('table').waitFor();
  const steps = await answer.locator('ol.steps li').allInnerTexts();
  t.same(steps.filter((s) => /SQL written|retried/.test(s)), ['SQL written', 'Fixed the query and retried'], `a retry, not a second "SQL written" (${steps.join(' / ')})`);
  t.equal(await answer.locator('.error').count(), 0, 'no error once it ran');
  const first = answer.locator('details.retry-sql');
  t.notMatch(await answer.innerText(), /area_sqm/, 'the failed query is not on the answer itself');
  await first.locator('summary').click();
  t.equal(await first.locator('pre').innerText(), 'SELECT s.area_sqm FROM stores s', 'the query that failed, one click away');
  await page.screenshot({ path: `${ARTIFACTS}/biz-error-retried-1440-dark.png`, fullPage: true });
  t.same(await axeSerious(page), [], 'axe: a retried answer in the dark');
});

t.test('an unknown address: a page for a browser, JSON for an API client', async (t) => {
  const page404 = await call(`${stack.url}/no/such/page`, { headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' } });
  t.equal(page404.status, 404);
  t.match(page404.headers.get('content-type'), /^text\/html/);
  t.match(page404.text, /<h1>This page does not exist<\/h1>/);
  t.match(page404.text, /<a href="\/">/, 'a way back');
  const json = await call(`${stack.url}/no/such/page`, { headers: { accept: 'application/json' } });
  t.equal(json.status, 404);
  t.equal(json.body?.error?.code, 'NOT_FOUND', 'API clients keep the error model');
  const bare = await call(`${stack.url}/api/no-such-route`);
  t.equal(bare.body?.error?.code, 'NOT_FOUND', 'no Accept: JSON');
  const post = await call(`${stack.url}/no/such/page`, { method: 'POST', body: {}, headers: { accept: 'text/html' } });
  t.equal(post.body?.error?.code, 'NOT_FOUND', 'a POST is never a page');

  for (const [theme, size] of [['light', { width: 1440, height: 900 }], ['dark', PHONE]] as const) {
    const context = await browser.newContext({ viewport: size, colorScheme: theme });
    t.teardown(() => context.close());
    const page = await context.newPage();
    page.on('pageerror', (e) => t.fail(`page error: ${e.message}`));
    const res = await page.goto(`${stack.url}/dashbord`);
    t.equal(res?.status(), 404);
    t.equal(await page.locator('h1').innerText(), 'This page does not exist', `${theme}: a page in the browser`);
    await page.screenshot({ path: `${ARTIFACTS}/biz-404-${size.width}-${theme}.png` });
    t.same(await axeSerious(page), [], `axe: the 404 page, ${theme}`);
  }
});

t.test('no filler: three rows say no row count, no mean per row; shares no mean; timings behind Details', async (t) => {
  for (const [theme, size] of [['light', { width: 1440, height: 900 }], ['dark', PHONE]] as const) {
    const { page, answer } = await ask(t, 'Store areas', ['SELECT name, area FROM stores ORDER BY name'], { theme, ...size });
    await answer.locator('ul.insights').waitFor();
    const insights = await answer.locator('ul.insights li').allInnerTexts();
    t.notMatch(insights.join(' | '), /rows? returned|averaging|per row/, `${theme}: no filler (${insights.join(' | ')})`);
    t.match(insights.join(' | '), /Total area is 458\.5\./, `${theme}: the total says something the table does not`);
    const timing = answer.locator('details.timing');
    t.equal(await timing.getAttribute('open'), null, `${theme}: timings closed`);
    t.notMatch(await answer.innerText(), /\d+ ms|tokens/, `${theme}: no timings or tokens on the answer`);
    await timing.locator('summary').click();
    t.match(await timing.innerText(), /\d+ ms · \d+ tokens · request id [0-9a-f-]{36}/, `${theme}: one click away`);
    await answer.locator('ul.insights').scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${ARTIFACTS}/biz-filler-${size.width}-${theme}.png`, fullPage: theme === 'light' });
    t.same(await axeSerious(page), [], `axe ${theme} ${size.width}: an answer with its details open`);
  }
  const { answer } = await ask(t, 'Share of area per store', ['SELECT name, round(100 * area / sum(area) OVER (), 2) AS share_pct FROM stores ORDER BY name']);
  await answer.locator('table').waitFor();
  const said = (await answer.locator('ul.insights li').allInnerTexts()).join(' | ');
  t.notMatch(said, /averages|averaging|rows? returned/, `shares: no mean of shares (${said})`);
});

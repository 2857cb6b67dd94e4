/**
 * The answer view (edge/web/static/answer/) in Chromium, the parts answer-view.test.ts leaves
 * out, against the real service with a scripted model: the panel looks the same on `/` (beside
 * the page's style.css and dashboard.css) as in a shadow root; a clarifying question's choices
 * are buttons and a click asks the follow-up in the same conversation; with `insights.mode:
 * hybrid` the statistical insight cards are replaced when the model's arrive; with
 * `query.execute_generated_sql: false` /query shows the SQL with the "not run" note and no table;
 * on BigQuery with `confirm_before_execute` the confirm dialog says the bytes and the cost.
 * Screenshots go to test-artifacts/.
 */
import { mkdirSync } from 'node:fs';
import t from 'tap';
import type { Page } from 'playwright-core';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { SemanticEntityCreate, SemanticMetricCreate } from '../../protocol/subjects.js';
import { launchBrowser } from '../helpers/browser.js';
import { testConfig } from '../helpers/config.js';
import { startFakeBigQuery } from '../helpers/fake-bigquery.js';
import { chatAnswer, sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';

// the browser's globals, in functions that run in the page (this project compiles without the DOM lib)
declare const document: any, window: any;

const ARTIFACTS = 'test-artifacts';
mkdirSync(ARTIFACTS, { recursive: true });
const ADMIN = { username: 'admin', password: 'answer-more-pw' };

const nats = await startNats();
const db = await createTestDb('answermore');
await db.pool.query(`
  CREATE TABLE orders (id int PRIMARY KEY, status text NOT NULL, amount numeric NOT NULL, discount numeric NOT NULL);
  INSERT INTO orders VALUES (1, 'open', 100, 10), (2, 'open', 50, 0), (3, 'shipped', 200, 20);
  CREATE TABLE regions (region text NOT NULL, sales numeric NOT NULL);
  INSERT INTO regions VALUES ('North', 120), ('South', 340), ('East', 75), ('West', 210), ('Centre', 160);
  CREATE TABLE monthly (month date NOT NULL, revenue numeric NOT NULL);
  INSERT INTO monthly SELECT make_date(2024, m, 1), 1000 + m * 37 + CASE WHEN m = 4 THEN 900 ELSE 0 END FROM generate_series(1, 12) m;
`);
const cfgDb = await createTestDb('answermore_cfg');
const fake = await startFakeLlm();

const NET = 'SELECT status, SUM(amount - discount) AS net_revenue FROM orders GROUP BY status ORDER BY status';
const GROSS = 'SELECT status, SUM(amount) AS gross_revenue FROM orders GROUP BY status ORDER BY status';
const REGIONS = 'SELECT region, sales FROM regions ORDER BY sales DESC';
const MONTHLY = 'SELECT month, revenue FROM monthly ORDER BY month';
const MODEL_INSIGHTS = [
  'TYPE: leader | SEVERITY: info | MESSAGE: April was the strongest month by far.',
  'TYPE: risk | SEVERITY: warning | MESSAGE: May fell back to the usual level.',
].join('\n');
/** while > 0, the model's insights reply waits this long (so the statistical cards are seen first) */
let insightsDelayMs = 0;
// the scripted model: insights when asked for them; else SQL for what the question names
fake.fallback((req) => {
  if (/SEVERITY/.test(req.system)) return { text: MODEL_INSIGHTS, delayMs: insightsDelayMs };
  const q = req.last.toLowerCase();
  if (q.includes('hello')) return { text: chatAnswer('Hello! Ask me about **orders**.\nTwo lines.') };
  if (q.includes('delete')) return { text: sqlAnswer('DELETE FROM orders') };
  if (q.includes('region')) return { text: sqlAnswer(REGIONS, 'Sales per region, best first.') };
  if (q.includes('month')) return { text: sqlAnswer(MONTHLY, 'Revenue per month.') };
  return { text: sqlAnswer(q.includes('net_revenue') || q.includes('net revenue') ? NET : GROSS) };
});

const stack = await startStack(testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: {
    admin: { enabled: true, ...ADMIN },
    config_db: { enabled: true, encryption_key: generateFernetKey(), postgresql: { host: cfgDb.host, port: cfgDb.port, database: cfgDb.name, user: cfgDb.user } },
    insights: { enabled: true, mode: 'hybrid', max_insights: 3 },
  },
}));
const browser = await launchBrowser();
t.teardown(async () => {
  await browser.close();
  await stack.stop();
  await fake.close();
  await cfgDb.drop();
  await db.drop();
  await nats.stop();
});

// two metrics answer to "revenue": a question naming it is asked back (actors/assistant/clarify.ts)
const ctx = { requestId: 'answer-more-setup', user: 'admin' };
const entity = await stack.running.bus.request(SemanticEntityCreate, {
  schema_name: 'public', table_name: 'orders', display_name: 'Orders', primary_key: 'id', by: 'admin',
  columns: [{ name: 'status', role: 'dimension' }, { name: 'amount', role: 'metric', aggregation: 'sum' }],
}, ctx);
await stack.running.bus.request(SemanticMetricCreate, { name: 'gross_revenue', display_name: 'Gross revenue', sql_expression: 'SUM(amount)', entity_id: entity.id, synonyms: ['revenue'], by: 'admin' }, ctx);
await stack.running.bus.request(SemanticMetricCreate, { name: 'net_revenue', display_name: 'Net revenue', sql_expression: 'SUM(amount - discount)', entity_id: entity.id, synonyms: ['revenue'], by: 'admin' }, ctx);

const login = await call(`${stack.url}/admin/login`, { body: ADMIN });
const adminHeaders = { cookie: (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '', 'x-csrf-token': login.body.csrf_token as string };

/** A page of the service's origin, emptied, with the answer view mounted in #root (a shadow root when `shadow`). */
async function mountPage(base: string, opts: { endpoint?: string; confirmEndpoint?: string; widget?: string } = {}, shadow = false, css = ''): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1000, height: 900 } });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${base}/ui/config`);
  await page.evaluate(`(() => {
    document.documentElement.lang = 'en';
    document.head.innerHTML = '<title>Answer view</title>';
    const style = document.createElement('style');
    style.textContent = ${JSON.stringify(css)};
    document.head.append(style);
    document.body.innerHTML = '<main><div id="root"></div></main>';
  })()`);
  // a string, not a function: the test runner's transpiler names functions with a helper the page lacks
  await page.evaluate(`(async () => {
    const opts = ${JSON.stringify(opts)};
    const m = await import('/static/answer/index.js');
    const host = document.querySelector('#root');
    window.panel = m.mountAsk(${shadow} ? host.attachShadow({ mode: 'open' }) : host, {
      endpoint: opts.endpoint ?? '/api/query',
      ...(opts.confirmEndpoint ? { confirmEndpoint: opts.confirmEndpoint } : {}),
      widget: opts.widget ?? 'dashboard',
    });
  })()`);
  return { page, errors };
}

/** Ask in the panel under `scope` and wait until the answer is finished. */
async function ask(page: Page, question: string, scope = '#root'): Promise<void> {
  await page.fill(`${scope} textarea.question`, question);
  await page.click(`${scope} button.go`);
  await page.locator(`${scope} .answer[aria-busy]`).waitFor({ state: 'detached' });
}

// ---- the same look on `/` and in a shadow root ------------------------------------------------

/** What is compared, per part of an answer: the properties the page's own CSS also sets. */
const LOOK: Array<[string, string]> = [
  ['.ctd-ask', 'font-size line-height font-family'],
  ['textarea.question', 'padding-top padding-left font-size border-top-width border-top-color background-color box-shadow outline-style'],
  ['button.go', 'padding-top padding-left font-size border-top-width border-radius background-color color'],
  ['.ask-form .row', 'margin-top margin-bottom'],
  ['.answer', 'padding-top margin-top border-top-width border-radius background-color'],
  ['.steps li', 'font-size padding-top padding-left background-color color ::before'],
  ['.sql-block button.copy', 'position top right padding-top padding-left font-size background-color color border-top-color'],
  ['.sql-block button.copy span', 'margin-left'],
  ['pre.sql', 'padding-top padding-right margin-top font-size background-color color'],
  ['.chart figcaption', 'font-weight margin-bottom'],
  ['select.chart-type', 'font-weight font-size padding-top padding-left'],
  ['.grid', 'margin-top border-top-width border-radius max-height'],
  ['th', 'padding-top padding-left font-weight background-color'],
  ['th button.sort', 'padding-top padding-left font-size font-weight background-color color border-top-width border-top-style border-radius justify-content'],
  ['td', 'padding-top padding-left font-size white-space'],
  ['.meta', 'margin-top font-size color'],
  ['.insights li', 'margin-bottom padding-top padding-left font-size border-left-width border-radius'],
  ['.downloads button', 'padding-top padding-left font-size background-color color border-top-width'],
  ['.downloads button span', 'margin-left'],
  ['.feedback', 'margin-top font-size'],
  ['.feedback button.up', 'padding-top padding-left font-size background-color color border-top-width'],
  ['.message', 'white-space line-height'],
  ['.error', 'border-top-width border-top-style padding-top border-radius background-color color'],
];

async function lookOf(page: Page, inShadow: boolean): Promise<Record<string, string>> {
  return page.evaluate(`(() => {
    const root = ${inShadow} ? document.querySelector('#root').shadowRoot : document;
    root.querySelector('textarea.question').focus();
    const out = {};
    for (const [sel, props] of ${JSON.stringify(LOOK)}) {
      const el = root.querySelector('.ctd-ask ' + sel) ?? root.querySelector(sel);
      if (!el) { out[sel] = 'absent'; continue; }
      for (const p of props.split(' ')) {
        out[sel + ' ' + p] = p === '::before' ? getComputedStyle(el, '::before').content : getComputedStyle(el).getPropertyValue(p);
      }
    }
    return out;
  })()`);
}

t.test('the panel looks the same on / (beside the page\'s CSS) as in a shadow root', async (t) => {
  // `/` first: the dashboard's Assistant tab; a chat answer, an error, then a table answer on top
  const context = await browser.newContext({ viewport: { width: 1000, height: 1400 } });
  const home = await context.newPage();
  const errors: string[] = [];
  home.on('pageerror', (e) => errors.push(e.message));
  await home.goto(`${stack.url}/#assistant`);
  await home.locator('#assistant-root textarea.question').waitFor();
  for (const q of ['hello there', 'delete everything', 'Sales by region']) await ask(home, q, '#assistant-root');
  await home.locator('#assistant-root .answer .insights li').first().waitFor();
  // the page's custom properties (its light theme), for the shadow root's page to have the same colours
  const vars: string = await home.evaluate(`(() => {
    const names = new Set();
    for (const sheet of document.styleSheets) {
      for (const rule of sheet.cssRules) if (rule.selectorText === ':root') for (const p of rule.style) if (p.startsWith('--ctd-')) names.add(p);
    }
    const cs = getComputedStyle(document.documentElement);
    return ':root {' + [...names].map((n) => n + ':' + cs.getPropertyValue(n)).join(';') + '}';
  })()`);
  t.ok(vars.includes('--ctd-accent'), 'the page\'s theme variables were read');
  await home.locator('#assistant-root').screenshot({ path: `${ARTIFACTS}/answer-on-dashboard.png` });
  const onPage = await lookOf(home, false);

  const { page: shadowPage, errors: shadowErrors } = await mountPage(stack.url, {}, true, vars);
  for (const q of ['hello there', 'delete everything', 'Sales by region']) await ask(shadowPage, q);
  await shadowPage.locator('#root .answer .insights li').first().waitFor();
  await shadowPage.locator('#root').screenshot({ path: `${ARTIFACTS}/answer-in-shadow-root.png` });
  const inShadow = await lookOf(shadowPage, true);

  t.notOk(Object.values(onPage).includes('absent'), `every compared part is on the page: ${Object.keys(onPage).filter((k) => onPage[k] === 'absent').join(', ')}`);
  const differ = Object.keys(inShadow).filter((k) => inShadow[k] !== onPage[k]).map((k) => `${k}: / ${onPage[k]} vs shadow ${inShadow[k]}`);
  t.same(differ, [], 'no property of the answer view differs');
  t.same([...errors, ...shadowErrors], [], 'no script errors');
  await context.close();
  await shadowPage.context().close();
});

// ---- a clarifying question --------------------------------------------------------------------

t.test('a clarifying question: its choices are buttons, a click asks the follow-up', async (t) => {
  const { page, errors } = await mountPage(stack.url);
  fake.requests.length = 0;
  await ask(page, 'What is the revenue per status?');
  const first = page.locator('.answer').first();
  t.match(await first.locator('.message.clarify').textContent(), /revenue/i, 'the clarifying question is said');
  t.same(await first.locator('.choices button.choice').allTextContents(), ['Gross revenue', 'Net revenue'], 'its choices are buttons');
  t.equal(await first.locator('.choices').getAttribute('role'), 'group');
  t.equal(await first.locator('pre.sql').count(), 0, 'no SQL for a question asked back');
  t.equal(fake.requests.length, 0, 'nobody asked the model');

  const [sent] = await Promise.all([
    page.waitForRequest((r) => r.url().endsWith('/api/query') && r.method() === 'POST'),
    first.locator('.choices button.choice', { hasText: 'Net revenue' }).click(),
  ]);
  const conversation = await page.evaluate(() => window.panel.conversation);
  t.same([sent.postDataJSON().question, sent.postDataJSON().conversation_id], ['Net revenue', conversation], 'the choice is asked in the same conversation');
  await page.locator('.answer[aria-busy]').waitFor({ state: 'detached' });
  const answer = page.locator('.answer').first();
  t.equal(await answer.locator('.q').textContent(), 'Net revenue', 'a new answer for the choice');
  t.match(await answer.locator('pre.sql').textContent(), /SUM\(amount - discount\)/, 'the original question with the net meaning pinned');
  t.same(await answer.locator('tbody tr').evaluateAll((rows) => rows.map((r: any) => [...r.querySelectorAll('td')].map((c: any) => c.textContent))), [['open', '140.00'], ['shipped', '180.00']], 'money with two decimals');
  t.equal(await page.locator('.answer').count(), 2, 'the question asked back stays above');
  t.same(errors, [], 'no script errors');
  await page.context().close();
});

// ---- hybrid insights ------------------------------------------------------------------------------

t.test('insights.mode hybrid: the statistical cards first, replaced when the model\'s arrive', async (t) => {
  const { page, errors } = await mountPage(stack.url);
  insightsDelayMs = 1500;
  t.teardown(() => { insightsDelayMs = 0; });
  const sse: string[] = [];
  page.on('response', (r) => { if (r.url().endsWith('/api/query')) void r.text().then((x) => sse.push(x), () => undefined); });
  await page.fill('textarea.question', 'How did the monthly totals develop?');
  await page.click('button.go');
  const answer = page.locator('.answer').first();
  await answer.locator('tbody tr').first().waitFor();
  const early = await answer.locator('.insights li').allTextContents();
  t.ok(early.length > 0, `statistical cards at once: ${early.join(' | ')}`);
  t.notOk(early.some((x) => /April was the strongest/.test(x)), 'not the model\'s yet');
  await answer.locator('.insights li', { hasText: 'April was the strongest month by far.' }).waitFor();
  const cards = answer.locator('.insights li');
  t.equal(await page.locator('.answer .insights').count(), 1, 'one list of cards, replaced, not a second one');
  const texts = await cards.allTextContents();
  t.ok(texts.length <= 3, `max_insights holds (${texts.length})`);
  t.same(texts.slice(0, 2), ['April was the strongest month by far.', 'May fell back to the usual level.'], 'the model\'s first');
  t.same(await cards.locator('svg[role="img"]').evaluateAll((s) => s.slice(0, 2).map((x: any) => x.getAttribute('aria-label'))), ['Note', 'Warning'], 'each card names its severity');
  t.equal(await cards.nth(1).getAttribute('class'), 'warning', 'a warning card');
  t.equal(await cards.nth(0).getAttribute('data-type'), 'leader');
  await page.locator('.answer[aria-busy]').waitFor({ state: 'detached' });
  t.ok(sse.some((x) => /event: model_insights/.test(x)), 'they came as the model_insights event');
  await page.screenshot({ path: `${ARTIFACTS}/answer-hybrid-insights.png`, fullPage: true });
  t.same(errors, [], 'no script errors');
  await page.context().close();
});

// ---- execute_generated_sql: false -------------------------------------------------------------

t.test('query.execute_generated_sql false on /query: the SQL with the "not run" note, no table', async (t) => {
  const off = await call(`${stack.url}/admin/config/query.execute_generated_sql`, { method: 'PUT', body: { value: false }, headers: adminHeaders });
  t.equal(off.status, 200, off.text);
  t.teardown(async () => { await call(`${stack.url}/admin/config/query.execute_generated_sql`, { method: 'DELETE', headers: adminHeaders }); });
  const { page, errors } = await mountPage(stack.url, { endpoint: '/query', confirmEndpoint: '/query/confirm-execute', widget: 'assistant' });
  await ask(page, 'Sales by region');
  const answer = page.locator('.answer').first();
  t.match(await answer.locator('pre.sql').textContent(), /FROM regions/, 'the SQL is shown');
  t.equal(await answer.locator('.explanation').textContent(), 'Sales per region, best first.');
  t.equal(await answer.locator('.not-run').textContent(), 'The SQL was written but not run (this server shows generated SQL only).');
  t.equal(await answer.locator('table').count(), 0, 'no table');
  t.equal(await answer.locator('.chart').count(), 0, 'no chart');
  t.equal(await answer.locator('.downloads').count(), 0, 'nothing to download');
  t.equal(await answer.locator('.confirm').count(), 0, 'nothing to confirm');
  t.same(await answer.locator('.steps li').allTextContents().then((s) => s.includes('Query ran')), false, 'no "Query ran" step');
  await page.screenshot({ path: `${ARTIFACTS}/answer-not-run.png`, fullPage: true });
  t.same(errors, [], 'no script errors');
  await page.context().close();
});

// ---- the confirm dialog on BigQuery: bytes and cost ------------------------------------------

t.test('confirm_before_execute on BigQuery: the dialog says the bytes and the estimated cost', async (t) => {
  const bqDb = await createTestDb('answermore_bq');
  await bqDb.pool.query(`
    CREATE SCHEMA analytics;
    CREATE TABLE analytics.sales (id integer PRIMARY KEY, store text NOT NULL, amount numeric(10,2) NOT NULL);
    INSERT INTO analytics.sales VALUES (1, 'Centrum', 12.50), (2, 'Centrum', 7.25), (3, 'Harbour', 30.00), (4, 'Station', 9.00);
  `);
  const PROJECT = 'cortado-answer-more';
  const bq = await startFakeBigQuery({ databaseUrl: bqDb.url, projectId: PROJECT, location: 'EU', bytesProcessed: () => 5 * 1024 ** 3 });
  const n2 = await startNats();
  const bqStack = await startStack(testConfig({
    natsUrl: n2.url,
    llmUrl: fake.url,
    extra: {
      query: { confirm_before_execute: true },
      insights: { enabled: true, mode: 'statistical_only' },
      database: {
        provider: 'bigquery',
        bigquery: { project_id: PROJECT, dataset: 'analytics', location: 'EU', credentials_json: JSON.stringify(bq.serviceAccount()), price_per_tb_usd: 6.25, base_url: bq.url, timeout: 5 },
      },
    },
  }));
  t.teardown(async () => {
    await bqStack.stop();
    await n2.stop();
    await bq.close();
    await bqDb.drop();
  });
  fake.script({ text: sqlAnswer('SELECT store, SUM(amount) AS revenue FROM sales GROUP BY store ORDER BY store', 'Revenue per store.') });
  const { page, errors } = await mountPage(bqStack.url, { endpoint: '/query', confirmEndpoint: '/query/confirm-execute', widget: 'assistant' });
  await ask(page, 'Revenue per store');
  const held = page.locator('.answer').first();
  await held.locator('.confirm[role="dialog"]').waitFor();
  t.match(await held.locator('pre.sql').textContent(), /FROM sales/, 'the SQL is shown');
  t.equal(await held.locator('.confirm .cost').textContent(), 'It will read 5.00 GB · estimated cost $0.03', 'bytes and cost from the dry run');
  t.match(await held.locator('.confirm').textContent(), /checked but not run\. It will read 5\.00 GB, estimated cost \$0\.03\./);
  t.equal(await held.locator('tbody tr').count(), 0, 'nothing ran yet');
  await held.screenshot({ path: `${ARTIFACTS}/answer-confirm-bigquery.png` });
  await held.locator('.confirm button.run').click();
  await page.locator('.answer:first-child tbody tr').first().waitFor();
  t.same(await page.locator('.answer').first().locator('tbody tr').evaluateAll((rows) => rows.map((r: any) => r.querySelector('td').textContent)), ['Centrum', 'Harbour', 'Station'], 'Run ran it on the warehouse');
  t.same(errors, [], 'no script errors');
  await page.context().close();
});

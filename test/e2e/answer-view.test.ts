/**
 * The answer view (edge/web/static/answer/) in Chromium against the real service with a scripted
 * model: steps stream, SQL highlighted and copied, a 1,000-row table sorted and paged, a monthly
 * series drawn as a sized line chart, category + measure as a bar chart, a share as a doughnut, the
 * chart type switched; csv / xlsx / html downloads parsed back (and the 401 of an anonymous
 * caller explained); a chat answer as safe markdown (an <img onerror> stays text); an error with
 * its code and request id; a follow-up in the same conversation; thumbs reaching /api/feedback;
 * history and the favourite star; the confirm flow of confirm_before_execute; the WebSocket
 * transport; the panel in a ShadowRoot on a page with hostile CSS; axe-core with no serious or
 * critical violation. Screenshots go to test-artifacts/.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import ExcelJS from 'exceljs';
import t, { type Test } from 'tap';
import type { Page } from 'playwright-core';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { downloaded, launchBrowser } from '../helpers/browser.js';
import { testConfig } from '../helpers/config.js';
import { chatAnswer, sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';
import { ANSWER_PROBE, timeAnswer } from '../../bench/ui.js';

// the browser's globals, in functions that run in the page (this project compiles without the DOM lib)
declare const document: any, window: any, navigator: any;

const ARTIFACTS = 'test-artifacts';
mkdirSync(ARTIFACTS, { recursive: true });
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const nats = await startNats();
const db = await createTestDb('answerview');
await db.pool.query(GUARD_SCHEMA_SQL);
await db.pool.query(`
  CREATE TABLE monthly (month date NOT NULL, revenue numeric NOT NULL);
  INSERT INTO monthly SELECT make_date(2024, m, 1), 1000 + m * 37 FROM generate_series(1, 12) m;
  CREATE TABLE regions (region text NOT NULL, sales numeric NOT NULL);
  INSERT INTO regions VALUES ('North', 120), ('South', 340), ('East', 75), ('West', 210), ('Centre', 160);
  CREATE TABLE channels (channel text NOT NULL, share numeric NOT NULL);
  INSERT INTO channels VALUES ('web', 55), ('mobile', 30), ('store', 15);
  CREATE TABLE big (id integer NOT NULL, name text NOT NULL, score numeric NOT NULL);
  INSERT INTO big SELECT i, 'item ' || lpad(i::text, 4, '0'), (i * 7919) % 1000 FROM generate_series(1, 1000) i;
  CREATE TABLE daily (day date NOT NULL, revenue numeric NOT NULL);
  INSERT INTO daily SELECT d::date, 1000 + (extract(doy FROM d) * 7919)::int % 500 FROM generate_series('2023-01-01'::date, '2023-01-01'::date + 999, '1 day') d;
`);
const fake = await startFakeLlm();
const stack = await startStack(testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: {
    query: { default_limit: 1000, max_limit: 1000, confirm_before_execute: true },
    admin: { enabled: true, username: 'admin', password: 'answer-view-pw' },
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

const login = await call(`${stack.url}/admin/login`, { body: { username: 'admin', password: 'answer-view-pw' } });
const adminHeaders = { cookie: (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '', 'x-csrf-token': login.body.csrf_token as string };
const issued = await call(`${stack.url}/admin/tokens`, { body: { username: 'ana', label: 'ana' }, headers: adminHeaders });
const TOKEN = issued.body.token as string;

/** a host page's CSS that would wreck any widget it reached */
const HOSTILE_CSS = `
  main * { display: none !important; visibility: hidden !important; color: red !important; font-size: 40px !important; }
  button, textarea, table, canvas, div, pre, svg { all: unset !important; display: none !important; }
`;

/** A blank page of the service's origin (fetches are same-origin) with the answer view mounted. */
async function mountPage(opts: { endpoint?: string; confirmEndpoint?: string; widget?: string; token?: boolean; transport?: string; history?: boolean } = {}, hostile = false): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1000, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.url });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // a document the service itself served (a fulfilled route would be "public" to Chromium's
  // local-network checks, which then block its WebSocket to 127.0.0.1), emptied for the test
  await page.goto(`${stack.url}/ui/config`);
  await page.evaluate(`(() => {
    document.documentElement.lang = 'en';
    document.head.innerHTML = '<title>Answer view</title>';
    document.body.innerHTML = '<main><h1>Ask</h1><div id="root"></div></main>';
    if (${hostile}) {
      const style = document.createElement('style');
      style.textContent = ${JSON.stringify(HOSTILE_CSS)};
      document.head.append(style);
    }
  })()`);
  // a string, not a function: the test runner's transpiler names functions with a helper the page lacks
  await page.evaluate(`(async () => {
    const opts = ${JSON.stringify(opts)};
    const token = ${JSON.stringify(opts.token ? TOKEN : '')};
    const m = await import('/static/answer/index.js');
    const h = await import('/static/history.js');
    const host = document.querySelector('#root');
    const root = ${hostile} ? host.attachShadow({ mode: 'open' }) : host;
    window.panel = m.mountAsk(root, {
      endpoint: opts.endpoint ?? '/api/query',
      ...(opts.confirmEndpoint ? { confirmEndpoint: opts.confirmEndpoint } : {}),
      widget: opts.widget ?? 'dashboard',
      transport: opts.transport ?? 'sse',
      headers: () => (token ? { authorization: 'Bearer ' + token } : {}),
      ...(opts.history ? { history: h.createHistory({ signedIn: false }) } : {}),
      examples: ['Monthly revenue'],
    });
    window.answerModule = m;
  })()`);
  return { page, errors };
}

async function ask(page: Page, question: string, sel = '.answer[aria-busy]'): Promise<void> {
  await page.fill('textarea.question', question);
  await page.click('button.go');
  await page.waitForSelector(sel, { state: 'detached' });
}

async function axe(page: Page, t: Test, what: string): Promise<void> {
  await page.addScriptTag({ content: AXE });
  const result = await page.evaluate(async () => (window as any).axe.run(document, { resultTypes: ['violations'] }));
  const bad = (result.violations as Array<{ id: string; impact: string; nodes: unknown[] }>).filter((v) => v.impact === 'serious' || v.impact === 'critical');
  t.same(bad.map((v) => `${v.id} (${v.impact}, ${v.nodes.length})`), [], `${what}: no serious or critical accessibility violation`);
}

t.test('a 1,000-row answer: steps, SQL with copy, a sortable paged table; a 1,000-row series drawn after its reply, timed', async (t) => {
  const { page, errors } = await mountPage({ history: true });
  fake.script({ text: sqlAnswer('SELECT id, name, score FROM big ORDER BY id -- every item', 'Every item with its score.') });
  await ask(page, 'Show every item');
  const answer = page.locator('.answer').first();
  const steps = await answer.locator('.steps li').allTextContents();
  t.ok(steps.includes('SQL written') && steps.includes('Query ran'), `steps streamed: ${steps.join(', ')}`);
  t.equal(await answer.locator('.explanation').textContent(), 'Every item with its score.');
  t.equal(await answer.locator('pre.sql .tok-kw').first().textContent(), 'SELECT', 'keywords highlighted');
  t.equal(await answer.locator('pre.sql .tok-com').textContent(), '-- every item', 'comments highlighted');
  t.ok(await answer.locator('pre.sql .tok-num').count() >= 1, 'numbers highlighted (the LIMIT)');
  await answer.locator('.sql-block button.copy').click();
  await page.waitForFunction(() => document.querySelector('.sql-block button.copy')?.textContent === 'Copied');
  t.match(await page.evaluate(() => navigator.clipboard.readText()), /^SELECT id, name, score FROM big/, 'Copy put the SQL on the clipboard');

  t.equal(await answer.locator('tbody tr').count(), 50, 'one page of rows in the DOM');
  t.match(await answer.locator('.meta').first().textContent(), /1,000 rows/);
  t.match(await answer.locator('.page-info').textContent(), /Rows 1–50 of 1,000 · page 1 of 20/);
  await answer.locator('.pager .next').click();
  t.equal(await answer.locator('tbody tr').first().locator('td').first().textContent(), '51', 'the next page');
  await answer.locator('th button.sort', { hasText: 'score' }).click();
  t.equal(await answer.locator('th').nth(2).getAttribute('aria-sort'), 'ascending');
  t.equal(await answer.locator('tbody tr').first().locator('td').nth(2).textContent(), '0', 'sorted by score as numbers, back on page 1');
  await answer.locator('th button.sort', { hasText: 'score' }).click();
  t.equal(await answer.locator('tbody tr').first().locator('td').nth(2).textContent(), '999', 'descending');
  await answer.locator('th button.sort', { hasText: 'name' }).click();
  t.equal(await answer.locator('tbody tr').first().locator('td').nth(1).textContent(), 'item 0001', 'text sorted');
  t.equal(await answer.locator('.chart canvas').count(), 0, 'three columns of ids, names and scores: no chart drawn');
  t.equal(await answer.locator('.chart details:not([open]) summary').textContent(), 'Make a chart', 'but a folded way to make one');

  // history: the answer was added; the star marks it a favourite
  await answer.locator('button.fav:not([disabled])').click();
  await page.waitForSelector('button.fav[aria-pressed="true"]');
  const favs = await page.evaluate(async () => (await (await import(['/static', 'history.js'].join('/'))).createHistory({ signedIn: false }).favourites()).map((e: any) => [e.question, e.row_count]));
  t.same(favs, [['Show every item', 1000]], 'kept in the history and starred');

  // from the reply's arrival (the stream chunk completing its `result` event) to the table and the
  // chart drawn, for 1,000 rows. The goal (100 ms) is measured by `BENCH_ONLY=ui npm run bench`;
  // this bound, generous (the first chart loads Chart.js; the machine is shared), catches a regression
  await page.evaluate(ANSWER_PROBE);
  fake.script({ text: sqlAnswer('SELECT day, revenue FROM daily ORDER BY day', 'Revenue per day.') });
  const timing = await timeAnswer(page, async () => {
    await page.fill('textarea.question', 'Revenue per day');
    await page.click('button.go');
  });
  const daily = page.locator('.answer').first();
  t.equal(timing.rows, 1000, 'a reply of 1,000 rows');
  t.equal(await daily.locator('tbody tr').count(), 50, 'its table');
  t.equal(await daily.locator('.chart').getAttribute('data-type'), 'line', 'its chart');
  t.ok(await page.evaluate('!!window.Chart.getChart(document.querySelector(".answer .chart canvas"))'), 'drawn by Chart.js on the canvas');
  t.comment(`reply → table and chart drawn, 1,000 rows (Chart.js loaded then): ${timing.drawnMs.toFixed(1)} ms; next frame ${timing.frameMs.toFixed(1)} ms`);
  t.ok(timing.drawnMs > 0 && timing.drawnMs < 3000, `drawn ${timing.drawnMs.toFixed(1)} ms after the reply arrived (a regression bound, not the goal)`);
  await page.screenshot({ path: `${ARTIFACTS}/answer-table.png`, fullPage: true });
  t.same(errors, [], 'no script errors');
  await page.context().close();
});

t.test('charts by rule: a monthly series is a line, category + measure a bar, a share a doughnut; the switch', async (t) => {
  const { page, errors } = await mountPage();
  fake.script({ text: sqlAnswer('SELECT month, revenue FROM monthly ORDER BY month', 'Revenue per month.') });
  await ask(page, 'Monthly revenue');
  const first = page.locator('.answer').first();
  await first.locator('.chart canvas').waitFor();
  t.equal(await first.locator('.chart').getAttribute('data-type'), 'line');
  await page.waitForFunction(() => { const c = document.querySelector('.answer .chart canvas'); return !!c && c.width > 0 && c.height > 0; });
  const size = await first.locator('.chart canvas').boundingBox();
  t.ok(size && size.width > 100 && size.height > 100, `the line chart is sized (${size?.width}×${size?.height})`);
  t.ok(await page.evaluate(() => !!(window as any).Chart?.getChart(document.querySelector('.answer .chart canvas'))), 'Chart.js drew it');
  await page.screenshot({ path: `${ARTIFACTS}/answer-line-chart.png`, fullPage: true });

  await first.locator('select.chart-type').selectOption('bar');
  t.equal(await page.evaluate(() => (window as any).Chart.getChart(document.querySelector('.answer .chart canvas')).config.type), 'bar', 'switched to a bar chart');
  await first.locator('select.chart-type').selectOption('none');
  t.equal(await first.locator('.chart canvas').count(), 0, 'hidden');

  fake.script({ text: sqlAnswer('SELECT region, sales FROM regions ORDER BY sales DESC', 'Sales per region.') });
  await ask(page, 'Sales by region');
  const bar = page.locator('.answer').first();
  await bar.locator('.chart canvas').waitFor();
  t.equal(await bar.locator('.chart').getAttribute('data-type'), 'bar', 'category + measure → bar');

  fake.script({ text: sqlAnswer('SELECT channel, share FROM channels ORDER BY share DESC', 'Share of orders per channel.') });
  await ask(page, 'Share of orders by channel');
  const pie = page.locator('.answer').first();
  await pie.locator('.chart canvas').waitFor();
  t.equal(await pie.locator('.chart').getAttribute('data-type'), 'doughnut', 'a share with 3 parts → doughnut');
  t.same(errors, [], 'no script errors');
  await page.context().close();
});

t.test('downloads: csv, xlsx and html parsed back; anonymous callers are told to sign in', async (t) => {
  const { page } = await mountPage({ token: true });
  fake.script({ text: sqlAnswer('SELECT region, sales FROM regions ORDER BY region', 'Sales per region.') });
  await ask(page, 'Sales by region');
  const answer = page.locator('.answer').first();
  const fetchFile = async (format: string) => {
    const [download] = await Promise.all([page.waitForEvent('download'), answer.locator(`.downloads button[data-format="${format}"]`).click()]);
    return { name: download.suggestedFilename(), data: await downloaded(download) };
  };
  const csv = await fetchFile('csv');
  t.match(csv.name, /\.csv$/);
  t.same(csv.data.toString('utf8').replace(/^\uFEFF/, '').trim().split(/\r?\n/), ['region,sales', 'Centre,160', 'East,75', 'North,120', 'South,340', 'West,210']);
  const xlsx = await fetchFile('excel');
  t.match(xlsx.name, /\.xlsx$/);
  const book = new ExcelJS.Workbook();
  await book.xlsx.load(xlsx.data as unknown as ArrayBuffer);
  const sheet = book.worksheets[0]!;
  t.same(sheet.getRow(1).values, [undefined, 'region', 'sales']);
  t.equal(sheet.rowCount, 6, 'a header and five rows');
  const html = await fetchFile('html');
  t.match(html.name, /\.html$/);
  t.match(html.data.toString('utf8'), /<td[^>]*>South<\/td>/);
  await page.context().close();

  const anon = await mountPage();
  fake.script({ text: sqlAnswer('SELECT region, sales FROM regions ORDER BY region') });
  await ask(anon.page, 'Sales by region');
  await anon.page.locator('.downloads button[data-format="csv"]').click();
  await anon.page.waitForFunction(() => /sign in/.test(document.querySelector('.dl-status')?.textContent ?? ''));
  t.ok(await anon.page.locator('.downloads button[data-format="csv"]').isDisabled(), 'the buttons are disabled after the 401');
  await anon.page.context().close();
});

t.test('chat as safe markdown; an error with its code and request id; a follow-up; thumbs', async (t) => {
  const { page, errors } = await mountPage();
  fake.script({ text: chatAnswer('Hello **there**! Try:\n- *monthly* revenue\n- `top` products\n<img src=x onerror="window.__xss=1"> [docs](https://example.com/d) [bad](javascript:alert(1))') });
  await ask(page, 'hi');
  const msg = page.locator('.answer .message').first();
  t.equal(await msg.locator('strong').textContent(), 'there');
  t.same(await msg.locator('li').allTextContents(), ['monthly revenue', 'top products']);
  t.equal(await msg.locator('img').count(), 0, 'no <img> element');
  t.match(await msg.textContent(), /<img src=x onerror="window.__xss=1">/, 'the HTML shows as text');
  t.equal(await msg.locator('a').count(), 1, 'only the https link is a link');
  t.equal(await msg.locator('a').getAttribute('href'), 'https://example.com/d');
  t.match(await msg.textContent(), /\[bad\]\(javascript:alert\(1\)\)/, 'a javascript: link stays text');
  t.equal(await page.evaluate(() => (window as any).__xss), undefined, 'nothing ran');

  fake.fallback(() => ({ text: sqlAnswer('DELETE FROM orders') }));
  await ask(page, 'delete everything');
  const error = page.locator('.answer .error').first();
  t.equal(await error.locator('code').textContent(), 'SQL_REJECTED');
  t.match(await error.locator('.rid').textContent(), /^request id [0-9a-f-]{36}$/);

  fake.script({ text: sqlAnswer('SELECT region, sales FROM regions ORDER BY sales DESC', 'Sales per region.') });
  await ask(page, 'Sales by region please');
  fake.script({ text: sqlAnswer('SELECT region, sales FROM regions WHERE sales > 150 ORDER BY sales DESC', 'Only the big ones.') });
  await ask(page, 'and only the big ones?');
  const prompt = fake.requests.at(-1)!;
  t.match(JSON.stringify(prompt.messages) + prompt.system, /Sales by region please/, 'the follow-up carries the earlier turn of the conversation');

  const [feedback] = await Promise.all([
    page.waitForRequest((r) => r.url().endsWith('/api/feedback')),
    page.locator('.answer').first().locator('.feedback button.down').click(),
  ]);
  const sent = feedback.postDataJSON();
  t.equal(sent.rating, 'down');
  t.match(sent.request_id, /^[0-9a-f-]{36}$/);
  t.equal((await feedback.response())?.status(), 200, '/api/feedback took it');
  await page.waitForFunction(() => /Thanks|Not recorded/.test(document.querySelector('.answer .feedback .status')?.textContent ?? ''));
  await axe(page, t, 'the answer view');
  await page.screenshot({ path: `${ARTIFACTS}/answer-chat-error.png`, fullPage: true });
  t.same(errors, [], 'no script errors');
  fake.fallback(() => ({ status: 500, message: 'no script' }));
  await page.context().close();
});

t.test('confirm_before_execute on /query: the SQL in a dialog, Run runs it, over SSE and WebSocket', async (t) => {
  for (const transport of ['sse', 'ws']) {
    const { page, errors } = await mountPage({ endpoint: '/query', confirmEndpoint: '/query/confirm-execute', widget: 'assistant', transport });
    fake.script({ text: sqlAnswer('SELECT region, sales FROM regions ORDER BY region', 'Sales per region.') });
    await ask(page, 'Sales by region');
    const held = page.locator('.answer').first();
    await held.locator('.confirm[role="dialog"]').waitFor();
    t.match(await held.locator('pre.sql').textContent(), /FROM regions/, `${transport}: the SQL is shown`);
    t.equal(await held.locator('tbody tr').count(), 0, 'nothing ran yet');
    await held.locator('.confirm button.run').click();
    await page.waitForSelector('.answer:first-child tbody tr');
    t.equal(await page.locator('.answer').first().locator('tbody tr').count(), 5, `${transport}: Run ran exactly that SQL`);
    t.same(await page.locator('.answer').first().locator('.steps li').allTextContents(), ['Confirmed']);
    if (transport === 'ws') {
      fake.script({ text: sqlAnswer('SELECT region, sales FROM regions ORDER BY region') });
      await ask(page, 'again, please');
      await page.locator('.answer').first().locator('.confirm button.cancel').click();
      t.equal(await page.locator('.answer').first().locator('.cancelled').textContent(), 'Not run.', 'Cancel runs nothing');
    }
    t.same(errors, [], 'no script errors');
    await page.context().close();
  }
});

t.test('mounted in a ShadowRoot on a page with hostile CSS, over the WebSocket', async (t) => {
  const { page, errors } = await mountPage({ transport: 'ws' }, true);
  const box = await page.locator('#root textarea.question').boundingBox();
  t.ok(box && box.width > 100 && box.height > 20, 'the question box is visible inside the shadow root');
  const styles = await page.locator('#root button.go').evaluate((b: any) => { const s = (window as any).getComputedStyle(b); return { color: s.color, fontSize: s.fontSize, display: s.display }; });
  t.not(styles.color, 'rgb(255, 0, 0)', 'the host page\'s colour does not reach in');
  t.equal(styles.fontSize, '14px');
  fake.script({ text: sqlAnswer('SELECT month, revenue FROM monthly ORDER BY month', 'Revenue per month.') });
  await ask(page, 'Monthly revenue');
  const answer = page.locator('#root .answer').first();
  t.equal(await answer.locator('tbody tr').count(), 12, 'rows over the WebSocket');
  await answer.locator('.chart canvas').waitFor();
  await page.waitForFunction(() => { const c = document.querySelector('#root').shadowRoot!.querySelector('.chart canvas'); return !!c && c.width > 0 && c.height > 0; });
  const chart = await answer.locator('.chart canvas').boundingBox();
  t.ok(chart && chart.width > 100 && chart.height > 100, 'the chart is drawn and sized in the shadow root');
  await page.setViewportSize({ width: 360, height: 800 });
  const narrow = await answer.boundingBox();
  t.ok(narrow && narrow.width <= 360, `fits 360 px (${narrow?.width})`);
  await page.screenshot({ path: `${ARTIFACTS}/answer-shadow-hostile.png`, fullPage: true });
  t.same(errors, [], 'no script errors');
  await page.context().close();
});

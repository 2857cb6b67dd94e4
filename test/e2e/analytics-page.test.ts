/**
 * /analytics in a real browser, over a real stack with analytics on (a PostgreSQL database of
 * its own): questions asked through the scripted model show up as charts that are drawn and
 * whose numbers are the report's; the filters change what is shown; thumbs given on `/#assistant`
 * (the dashboard's answer view) reach the report. And the doors: the report is the admin's
 * unless analytics.access says otherwise, the chart library comes from our own server, and bad
 * filters or feedback are 400s. Questions from the dashboard and plain API calls, both on
 * /api/query, are told apart by their widget. No page loads anything from elsewhere or breaks
 * its CSP (test/helpers/page-guard.ts).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import t from 'tap';
import type { Page } from 'playwright-core';
import type { AnalyticsReport } from '../../protocol/schemas/analytics.js';
import { launchBrowser } from '../helpers/browser.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { issueToken } from '../helpers/mcp.js';
import { guardPage } from '../helpers/page-guard.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';

const ADMIN = { username: 'admin', password: 'analytics-admin-pw' };
const nats = await startNats();
const db = await createTestDb('anpage');
await db.pool.query(`
  CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL);
  CREATE TABLE orders (id int PRIMARY KEY, customer_id int REFERENCES customers (id), amount numeric(10,2) NOT NULL);
  INSERT INTO customers SELECT g, 'customer ' || g FROM generate_series(1, 5) g;
  INSERT INTO orders SELECT g, 1 + g % 5, g * 10 FROM generate_series(1, 40) g;
`);
const store = await createTestDb('anpage_store');
const fake = await startFakeLlm();
// every question gets SQL over orders (and customers when it says "customer"); "delete" gets a write the guard refuses
fake.fallback((req) => {
  const q = req.last.toLowerCase();
  if (q.includes('delete')) return { text: sqlAnswer('DELETE FROM orders'), usage: { input_tokens: 50, output_tokens: 5 } };
  if (q.includes('customer')) return { text: sqlAnswer('SELECT c.name, sum(o.amount) AS revenue FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.name ORDER BY revenue DESC'), usage: { input_tokens: 120, output_tokens: 30 } };
  return { text: sqlAnswer('SELECT count(*) AS n FROM orders'), usage: { input_tokens: 100, output_tokens: 20 } };
});
const dbOpt = { host: db.host, port: db.port, name: db.name, user: db.user };
const stack = await startStack(testConfig({
  natsUrl: nats.url,
  db: dbOpt,
  llmUrl: fake.url,
  extra: {
    admin: { enabled: true, ...ADMIN },
    analytics: { enabled: true, store_questions: true, postgresql: { host: store.host, port: store.port, database: store.name, user: store.user } },
  },
}));
const browser = await launchBrowser();
t.teardown(async () => {
  await browser.close();
  await stack.stop();
  await fake.close();
  await store.drop();
  await db.drop();
  await nats.stop();
});

async function adminCookie(base: string): Promise<string> {
  const r = await call(`${base}/admin/login`, { body: ADMIN });
  if (r.status !== 200) throw new Error(`admin login: ${r.status} ${r.text}`);
  return (r.headers.get('set-cookie') ?? '').split(';')[0]!;
}

const cookie = await adminCookie(stack.url);
const report = async (query = ''): Promise<AnalyticsReport> => {
  const r = await call(`${stack.url}/api/analytics/report${query}`, { headers: { cookie } });
  if (r.status !== 200) throw new Error(`report: ${r.status} ${r.text}`);
  return r.body as AnalyticsReport;
};

/** The report once it holds `n` questions (the analytics actor reads the event stream on its own time). */
async function reportWith(n: number, check: (r: AnalyticsReport) => boolean = () => true): Promise<AnalyticsReport> {
  const until = Date.now() + 30_000;
  for (;;) {
    const r = await report();
    if (r.totals.questions >= n && check(r)) return r;
    if (Date.now() > until) throw new Error(`the report still holds ${r.totals.questions} questions, not ${n}: ${JSON.stringify(r.totals)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Every chart of the page: its data, and whether each non-zero datum is painted on its canvas. */
async function chartsOf(page: Page): Promise<Record<string, { type: string; labels: string[]; data: number[][]; painted: boolean[]; aria: string } | null>> {
  return page.evaluate(() => {
    // run in the page (the test's TypeScript has no DOM types)
    const w = globalThis as any;
    const out: Record<string, unknown> = {};
    for (const fig of w.document.querySelectorAll('figure.chart')) {
      const canvas = fig.querySelector('canvas');
      const chart = w.Chart.getChart(canvas);
      if (!chart) { out[fig.id] = null; continue; }
      const g = canvas.getContext('2d');
      const scale = canvas.width / canvas.clientWidth;
      const painted: boolean[] = [];
      chart.data.datasets.forEach((ds: any, i: number) => {
        chart.getDatasetMeta(i).data.forEach((el: any, j: number) => {
          if (!ds.data[j]) return;
          const p = el.getCenterPoint();
          const px = g.getImageData(Math.round(p.x * scale), Math.round(p.y * scale), 1, 1).data;
          painted.push(px[3] > 0);
        });
      });
      out[fig.id] = { type: chart.config.type, labels: chart.data.labels, data: chart.data.datasets.map((d: any) => d.data), painted, aria: canvas.getAttribute('aria-label') ?? '' };
    }
    return out as any;
  });
}

/** The page once its report is shown, with (and without) these bits in its address's query. */
const waitReady = (page: Page, has: string[] = [], not: string[] = []): Promise<unknown> => page.waitForFunction(([has, not]) => {
  const w = globalThis as any;
  const q: string = w.location.search;
  return w.document.body.dataset.state === 'ready' && has.every((x) => q.includes(x)) && not.every((x) => !q.includes(x));
}, [has, not] as const, { timeout: 15_000 });
/** The page's state (body data-state) becomes this. */
const waitState = (page: Page, state: string): Promise<unknown> => page.waitForFunction((s) => (globalThis as any).document.body.dataset.state === s, state);
/** The first answer's feedback status says this. */
const waitStatus = (page: Page, text: string): Promise<unknown> => page.waitForFunction((x) => (globalThis as any).document.querySelector('.answer .feedback .status')?.textContent === x, text);
const totalOf = (page: Page, id: string): Promise<string | null> => page.locator(`#${id}`).getAttribute('data-value');

// ---- questions from two channels, one of them failing ---------------------------------------

const { token } = await issueToken(stack.running.bus, 'ana-bob');
const asked: string[] = [];
for (const q of ['How many orders?', 'Revenue per customer?', 'How many orders last week?']) {
  const r = await call(`${stack.url}/api/query`, { body: { question: q } });
  if (r.status !== 200) throw new Error(`ask: ${r.status} ${r.text}`);
  asked.push(r.body.request_id);
}
for (const q of ['How many orders today?', 'Top customer by revenue?', 'Please delete every order']) {
  const r = await call(`${stack.url}/query`, { body: { question: q }, headers: { authorization: `Bearer ${token}` } });
  asked.push(r.body?.request_id ?? r.body?.error?.request_id);
}
const first = await reportWith(6);

t.test('the report counts what was asked, by channel, user and error', async (t) => {
  t.equal(first.enabled, true);
  t.equal(first.totals.questions, 6);
  t.equal(first.totals.errors, 1);
  t.same(first.errors.map((e) => [e.code, e.count]), [['SQL_REJECTED', 1]]);
  t.same(Object.fromEntries(first.channels.map((c) => [c.channel, c.questions])), { api: 3, legacy: 3 });
  t.same(first.users.map((u) => [u.user, u.questions, u.errors]), [['ana-bob', 3, 1]]);
  t.ok(first.models.length >= 1 && first.totals.input_tokens > 0, 'model use is counted');
  const { rows } = await store.pool.query('SELECT count(*)::int AS n, count(code)::int AS errors FROM cortado_analytics_questions');
  t.same(rows[0], { n: 6, errors: 1 }, 'the analytics database holds the same questions');
});

t.test('the page signs in, draws every chart with the report\'s numbers, and lists the slowest questions', async (t) => {
  const page = await browser.newPage();
  await guardPage(page, t);
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${stack.url}/analytics`);
  await waitState(page, 'login');
  t.equal(await page.locator('#login').isVisible(), true, 'a stranger is shown the sign-in, not a bare 401');
  await page.fill('#username', ADMIN.username);
  await page.fill('#password', 'wrong');
  await page.click('#sign-in');
  await page.waitForSelector('#login-error:not([hidden])');
  await page.fill('#password', ADMIN.password);
  await page.click('#sign-in');
  await waitReady(page);

  const r = await report();
  t.equal(await totalOf(page, 't-questions'), String(r.totals.questions));
  t.equal(await page.locator('#t-questions').textContent(), String(r.totals.questions));
  t.equal(await totalOf(page, 't-errors'), String(r.totals.errors));
  t.equal(await totalOf(page, 't-users'), String(r.totals.users));
  t.equal(await totalOf(page, 't-tokens'), `${r.totals.input_tokens}/${r.totals.output_tokens}`);
  t.equal(await page.locator('#empty').isVisible(), false);

  const charts = await chartsOf(page);
  for (const id of ['c-per-day', 'c-steps', 'c-errors', 'c-models', 'c-cost-day', 'c-widgets', 'c-channels', 'c-tables', 'c-users']) {
    const c = charts[id];
    t.ok(c, `${id} is drawn`);
    if (!c) continue;
    t.ok(c.painted.length > 0 && c.painted.every(Boolean), `${id}: every datum is painted on the canvas (${c.painted.length})`);
    t.ok(c.aria.length > 10, `${id} says its data in words`);
  }
  t.same(charts['c-per-day']!.labels, r.per_day.map((d) => d.day));
  t.same(charts['c-per-day']!.data, [r.per_day.map((d) => d.questions), r.per_day.map((d) => d.errors)]);
  t.same(charts['c-steps']!.labels, r.steps.map((s) => s.step));
  t.same(charts['c-steps']!.data, [r.steps.map((s) => s.p50_ms), r.steps.map((s) => s.p95_ms)]);
  t.ok(r.steps.some((s) => s.step === 'total' && s.count === 6 && s.p95_ms >= s.p50_ms), 'total latency over every question');
  t.same(charts['c-errors']!.data, [[1]]);
  t.same(charts['c-errors']!.labels, ['SQL_REJECTED']);
  t.same(charts['c-models']!.data, [r.models.map((m) => m.input_tokens), r.models.map((m) => m.output_tokens)]);
  t.same(charts['c-channels']!.labels, r.channels.map((c) => c.channel));
  t.same(charts['c-widgets']!.labels, r.widgets.map((w) => w.widget));
  t.same(charts['c-widgets']!.data, [r.widgets.map((w) => w.questions)]);
  t.same(charts['c-tables']!.labels, r.tables.map((x) => x.table));
  t.ok(r.tables.some((x) => /orders/.test(x.table)), 'orders is among the busiest tables');
  t.same(charts['c-users']!.labels, ['ana-bob']);

  // the same numbers as data tables, for whoever does not read charts
  const stepRows = await page.locator('#c-steps .table tbody tr').evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((c) => c.textContent)));
  t.same(stepRows, r.steps.map((s) => [s.step, String(s.count), String(Math.round(s.p50_ms)), String(Math.round(s.p95_ms))]));
  t.equal(await page.locator('#slowest tbody tr').count(), Math.min(6, r.slowest.length));
  t.match(await page.locator('#slowest tbody tr').first().textContent(), r.slowest[0]!.question!);
  t.same(errors, [], 'no script errors');
  await page.close();
});

t.test('the filters change what is shown', async (t) => {
  const page = await browser.newPage();
  await guardPage(page, t);
  await page.context().addCookies([{ name: cookie.split('=')[0]!, value: decodeURIComponent(cookie.split('=').slice(1).join('=')), url: stack.url }]);
  await page.goto(`${stack.url}/analytics`);
  await waitReady(page);
  t.equal(await totalOf(page, 't-questions'), '6');

  await page.selectOption('#f-channel', 'legacy');
  await waitReady(page, ['channel=legacy']);
  const legacy = await report('?channel=legacy');
  t.equal(legacy.totals.questions, 3);
  t.equal(await totalOf(page, 't-questions'), '3');
  t.equal(await totalOf(page, 't-errors'), '1');
  t.same((await chartsOf(page))['c-channels']!.labels, ['legacy']);

  await page.selectOption('#f-channel', 'api');
  await waitReady(page, ['channel=api']);
  t.equal(await totalOf(page, 't-questions'), '3');
  t.equal(await totalOf(page, 't-errors'), '0');
  t.equal(await page.locator('#c-errors .table').textContent(), 'Nothing in this range.');

  await page.selectOption('#f-channel', '');
  await page.fill('#f-user', 'ana-bob');
  await page.press('#f-user', 'Enter');
  await waitReady(page, ['user=ana-bob'], ['channel']);
  t.equal(await totalOf(page, 't-questions'), '3');
  t.same((await chartsOf(page))['c-users']!.labels, ['ana-bob']);

  // a range that cannot be: the report's refusal is said, and nothing stale stays on show
  const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
  await page.fill('#f-user', '');
  await page.fill('#f-from', tomorrow);
  await page.locator('#f-from').dispatchEvent('change');
  await waitState(page, 'error');
  t.match(await page.locator('#problem').textContent(), /^VALIDATION_FAILED: .*before/);
  t.equal(await page.locator('#content').isVisible(), false);

  // a range with nothing in it: the empty state, not empty charts
  await page.fill('#f-from', '2020-01-01');
  await page.fill('#f-to', '2020-01-31');
  await page.locator('#f-to').dispatchEvent('change');
  await waitReady(page, ['from=2020-01-01', 'to=2020-01-31'], ['user']);
  t.equal(await page.locator('#problem').isVisible(), false);
  t.equal(await page.locator('#empty').isVisible(), true);
  t.equal(await page.locator('#empty-title').textContent(), 'No questions in this range');
  t.equal(await page.locator('#content').isVisible(), false);

  // a link carries its filters
  await page.goto(`${stack.url}/analytics?channel=legacy`);
  await waitReady(page);
  t.equal(await page.locator('#f-channel').inputValue(), 'legacy');
  t.equal(await totalOf(page, 't-questions'), '3');
  await page.close();
});

t.test('thumbs on the dashboard\'s Assistant tab reach the report', async (t) => {
  const page = await browser.newPage();
  await guardPage(page, t);
  // `/` is the dashboard; its Assistant tab mounts the answer view
  await page.goto(`${stack.url}/#assistant`);
  await page.fill('#assistant-root textarea.question', 'How many orders in the browser?');
  await page.click('#assistant-root button.go');
  await page.waitForSelector('.answer .feedback button.down');
  const sent = page.waitForRequest((r) => r.url().endsWith('/api/feedback'));
  await page.click('.answer .feedback button.down');
  const requestId = (sent.then((r) => r.postDataJSON().request_id as string));
  await waitStatus(page, 'Thanks for the feedback.');
  t.equal(await page.locator('.answer .feedback button.down').getAttribute('aria-pressed'), 'true');
  await page.fill('.answer .feedback input.comment', 'wrong table');
  await page.click('.answer .feedback button.send');
  await waitStatus(page, 'Thanks for the comment.');
  const id = await requestId;
  t.match(id, /\S/);

  const r = await reportWith(7, (x) => x.totals.dislikes === 1);
  t.same(r.disliked.map((d) => [d.request_id, d.comment, d.question, d.widget]), [[id, 'wrong table', 'How many orders in the browser?', 'dashboard']]);

  // and the page shows it among the most disliked
  const board = await browser.newPage();
  await board.context().addCookies([{ name: cookie.split('=')[0]!, value: decodeURIComponent(cookie.split('=').slice(1).join('=')), url: stack.url }]);
  await board.goto(`${stack.url}/analytics`);
  await waitReady(board);
  t.equal(await totalOf(board, 't-feedback'), '0/1');
  t.match(await board.locator('#disliked tbody tr').first().textContent(), /wrong table[\s\S]*How many orders in the browser\?/);
  await board.close();
  await page.close();
});

t.test('the dashboard\'s questions and plain API calls, both on /api/query, are counted apart by widget', async (t) => {
  // by now: three plain /api/query calls, three on /query with a token, one asked on the dashboard (above)
  const r = await reportWith(7);
  t.same(Object.fromEntries(r.channels.map((c) => [c.channel, c.questions])), { api: 4, legacy: 3 }, 'one channel for both');
  t.same(r.widgets, [{ widget: 'api', questions: 3 }, { widget: 'assistant', questions: 3 }, { widget: 'dashboard', questions: 1 }], 'two widgets');
  t.equal((await report('?widget=dashboard')).totals.questions, 1);
  t.equal((await report('?widget=api')).totals.questions, 3);

  const page = await browser.newPage();
  await guardPage(page, t);
  await page.context().addCookies([{ name: cookie.split('=')[0]!, value: decodeURIComponent(cookie.split('=').slice(1).join('=')), url: stack.url }]);
  await page.goto(`${stack.url}/analytics`);
  await waitReady(page);
  const charts = await chartsOf(page);
  t.same(charts['c-widgets']!.labels, ['api', 'assistant', 'dashboard'], 'the page\'s chart by widget');
  t.same(charts['c-widgets']!.data, [[3, 3, 1]]);
  t.ok(charts['c-widgets']!.painted.every(Boolean), 'every bar painted');
  t.same(charts['c-channels']!.labels, ['api', 'legacy']);
  const options = await page.locator('#f-widget option').evaluateAll((os) => os.map((o) => (o as any).value));
  t.same(options, ['', 'assistant', 'agent', 'dashboard', 'api', 'mcp', 'schedule', 'eval'], 'the widget types to filter by');
  t.notOk((await page.locator('#f-channel option').evaluateAll((os) => os.map((o) => (o as any).value))).includes('web'), 'no channel nothing sets');

  await page.selectOption('#f-widget', 'dashboard');
  await waitReady(page, ['widget=dashboard']);
  t.equal(await totalOf(page, 't-questions'), '1', 'the dashboard\'s question alone');
  t.same((await chartsOf(page))['c-widgets']!.labels, ['dashboard']);
  t.match(await page.locator('#slowest tbody tr').first().textContent(), /dashboard.*How many orders in the browser\?/);
  await page.selectOption('#f-widget', 'api');
  await waitReady(page, ['widget=api']);
  t.equal(await totalOf(page, 't-questions'), '3', 'the plain API calls alone');

  // a link carries the widget filter
  await page.goto(`${stack.url}/analytics?widget=dashboard`);
  await waitReady(page, ['widget=dashboard']);
  t.equal(await page.locator('#f-widget').inputValue(), 'dashboard');
  t.equal(await totalOf(page, 't-questions'), '1');
  await page.close();
});

t.test('feedback from an API token is that token\'s user; bad feedback is a 400', async (t) => {
  const ok = await call(`${stack.url}/api/feedback`, { body: { request_id: asked[3], rating: 'up' }, headers: { authorization: `Bearer ${token}` } });
  t.equal(ok.status, 200, ok.text);
  t.same(ok.body, { ok: true });
  const { rows } = await store.pool.query('SELECT username, rating FROM cortado_analytics_feedback WHERE request_id = $1', [asked[3]]);
  t.same(rows, [{ username: 'ana-bob', rating: 'up' }]);
  const named = await call(`${stack.url}/api/feedback`, { body: { request_id: asked[0], rating: 'up', user: 'someone-else' } });
  t.equal(named.status, 400, 'a user named in the body is refused: the rater is the edge\'s to say');
  t.match(named.body?.error?.message, /^\/user: not a field of this body/);
  const anonymous = await call(`${stack.url}/api/feedback`, { body: { request_id: asked[0], rating: 'up' } });
  t.equal(anonymous.status, 200, 'the anonymous caller may rate what it asked');
  const who = await store.pool.query('SELECT username FROM cortado_analytics_feedback WHERE request_id = $1', [asked[0]]);
  t.same(who.rows, [{ username: '' }], 'as nobody in particular');
  const tokenOnAnother = await call(`${stack.url}/api/feedback`, { body: { request_id: asked[0], rating: 'down' }, headers: { authorization: `Bearer ${token}` } });
  t.equal(tokenOnAnother.status, 403, 'the token did not ask that one');

  for (const [body, path] of [
    [{ request_id: asked[0], rating: 'meh' }, '/rating'],
    [{ rating: 'up' }, '/request_id'],
    [{ request_id: '', rating: 'up' }, '/request_id'],
    [{ request_id: asked[0], rating: 'down', comment: 'x'.repeat(2001) }, '/comment'],
    [{ request_id: 'a\u0000b', rating: 'down' }, '/request_id'],
  ] as const) {
    const r = await call(`${stack.url}/api/feedback`, { body });
    t.equal(r.status, 400, `${JSON.stringify(body).slice(0, 60)}: ${r.text.slice(0, 200)}`);
    t.equal(r.body?.error?.code, 'VALIDATION_FAILED');
    t.match(r.body?.error?.message, path.slice(1));
  }
  const notJson = await call(`${stack.url}/api/feedback`, { raw: 'rating=up', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  t.equal(notJson.status, 415);
  const broken = await call(`${stack.url}/api/feedback`, { raw: '{"rating":', headers: { 'content-type': 'application/json' } });
  t.equal(broken.status, 400);
});

t.test('the report is the admin\'s by default; each part has its own route; bad filters are 400s', async (t) => {
  t.same(stack.running.edge!.routes.filter((r) => r.pattern.startsWith('/api/analytics/')).map((r) => r.auth), Array(13).fill('admin'));
  const stranger = await call(`${stack.url}/api/analytics/report`);
  t.equal(stranger.status, 401);
  t.equal(stranger.body.error.code, 'UNAUTHORIZED');
  const tokenHolder = await call(`${stack.url}/api/analytics/totals`, { headers: { authorization: `Bearer ${token}` } });
  t.equal(tokenHolder.status, 401, 'an API token is no admin');

  const whole = await report();
  for (const part of ['per_day', 'steps', 'errors', 'models', 'models_per_day', 'channels', 'widgets', 'tables', 'users', 'slowest', 'disliked', 'totals'] as const) {
    const r = await call(`${stack.url}/api/analytics/${part}`, { headers: { cookie } });
    t.equal(r.status, 200, `${part}: ${r.text.slice(0, 200)}`);
    t.same(Object.keys(r.body).sort(), [part, 'range'].sort());
    t.same(r.body[part], whole[part], `${part} is the report's`);
  }
  const top = await call(`${stack.url}/api/analytics/slowest?top=2&channel=api`, { headers: { cookie } });
  t.equal(top.body.slowest.length, 2);
  t.ok(top.body.slowest.every((s: { channel?: string }) => s.channel === 'api'));
  const unknown = await call(`${stack.url}/api/analytics/nope`, { headers: { cookie } });
  t.equal(unknown.status, 404);

  for (const q of ['?channel=carrier-pigeon', '?widget=web', '?widget=api&widget=mcp', '?top=0', '?top=101', '?top=ten', '?from=yesterday', '?to=2026-13-45', '?bogus=1',
    '?from=2026-02-01&to=2026-01-01', '?channel=api&channel=mcp', `?user=${'u'.repeat(300)}`]) {
    const r = await call(`${stack.url}/api/analytics/report${q}`, { headers: { cookie } });
    t.equal(r.status, 400, `${q}: ${r.text.slice(0, 200)}`);
    t.equal(r.body?.error?.code, 'VALIDATION_FAILED', q);
  }
  const control = await call(`${stack.url}/api/analytics/report?user=a%00b`, { headers: { cookie } });
  t.equal(control.status, 400);
});

t.test('the chart library is served from its npm package, by us', async (t) => {
  const require = createRequire(import.meta.url);
  const file = readFileSync(path.join(path.dirname(require.resolve('chart.js')), 'chart.umd.min.js'), 'utf8');
  const r = await call(`${stack.url}/vendor/chart.umd.min.js`);
  t.equal(r.status, 200);
  t.match(r.headers.get('content-type'), /javascript/);
  t.equal(r.text, file);
  t.equal((await call(`${stack.url}/vendor/nothing.js`)).status, 404);
  const html = await call(`${stack.url}/analytics`);
  t.equal(html.status, 200);
  t.notMatch(html.text, /https?:\/\//, 'the page loads nothing from elsewhere');
});

t.test('analytics.access public: anyone reads the report; with analytics off the page says so', async (t) => {
  const n2 = await startNats();
  const other = await startStack(testConfig({ natsUrl: n2.url, db: dbOpt, llmUrl: fake.url, extra: { analytics: { access: 'public' } } }));
  t.teardown(async () => {
    await other.stop();
    await n2.stop();
  });
  t.same(other.running.edge!.routes.filter((r) => r.pattern.startsWith('/api/analytics/')).map((r) => r.auth), Array(13).fill('none'));
  const r = await call(`${other.url}/api/analytics/report`);
  t.equal(r.status, 200, r.text);
  t.equal(r.body.enabled, false);
  t.equal(r.body.totals.questions, 0);
  const fb = await call(`${other.url}/api/feedback`, { body: { request_id: 'x-1', rating: 'up' } });
  t.same(fb.body, { ok: false }, 'nothing is kept while analytics are off');

  const page = await browser.newPage();
  await guardPage(page, t);
  await page.goto(`${other.url}/analytics`);
  await waitReady(page);
  t.equal(await page.locator('#empty').isVisible(), true);
  t.equal(await page.locator('#empty-title').textContent(), 'Analytics are off');
  t.equal(await page.locator('#content').isVisible(), false);
  t.equal(await page.locator('#login').isVisible(), false);
  await page.close();
});

t.test('analytics.access signed_in: any session or API token, nobody else', async (t) => {
  const n3 = await startNats();
  const other = await startStack(testConfig({ natsUrl: n3.url, db: dbOpt, llmUrl: fake.url, extra: { admin: { enabled: true, ...ADMIN }, analytics: { access: 'signed_in' } } }));
  t.teardown(async () => {
    await other.stop();
    await n3.stop();
  });
  t.same(other.running.edge!.routes.filter((r) => r.pattern.startsWith('/api/analytics/')).map((r) => r.auth), Array(13).fill('signed_in'));
  t.equal((await call(`${other.url}/api/analytics/report`)).status, 401, 'a stranger');
  t.equal((await call(`${other.url}/api/analytics/report`, { headers: { authorization: 'Bearer ctd_not-a-token' } })).status, 401, 'a wrong token');
  const { token: t2 } = await issueToken(other.running.bus, 'carol');
  t.equal((await call(`${other.url}/api/analytics/totals`, { headers: { authorization: `Bearer ${t2}` } })).status, 200, 'an API token');
  t.equal((await call(`${other.url}/api/analytics/totals`, { headers: { 'x-mcp-token': t2 } })).status, 200, 'an MCP token header');
  const adminC = await adminCookie(other.url);
  t.equal((await call(`${other.url}/api/analytics/totals`, { headers: { cookie: adminC } })).status, 200, 'the admin');
  t.equal((await call(`${other.url}/api/analytics/report?top=0`, { headers: { cookie: adminC } })).status, 400, 'bad filters still 400');
});

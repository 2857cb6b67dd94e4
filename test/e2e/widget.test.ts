/**
 * The Assistant widget embedded with one tag in a foreign page (another site: http://localhost:N
 * beside Cortado's http://127.0.0.1:M) whose CSS is hostile: ask → the answer with its table and
 * a sized chart; the confirm flow; query.require_session bringing the login form; auto sessions
 * from an allowed origin and refused from another; questions typed `assistant` on the bus. Also
 * /widget.js itself (one script, its gzipped size) and /demo (both widgets, the snippet copies,
 * no serious accessibility violation, off with ui.sections.demo).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { gzipSync } from 'node:zlib';
import t from 'tap';
import type { Page } from 'playwright-core';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import { QueryGeneratedEvt } from '../../protocol/subjects.js';
import { downloaded, launchBrowser } from '../helpers/browser.js';
import type { BrowserContext } from 'playwright-core';
import { testConfig, setConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { ADMIN_URL, createTestDb } from '../helpers/pg.js';
import { ANALYSTS_DN, PEOPLE_DN, startSlapd, SVC_DN, SVC_PASSWORD } from '../helpers/slapd.js';
import { call, startStack } from '../helpers/stack.js';

const ARTIFACTS = 'test-artifacts';
mkdirSync(ARTIFACTS, { recursive: true });

const slapd = await startSlapd();
const nats = await startNats();
const db = await createTestDb('widget');
const role = `widget_u_${process.pid}_${Date.now().toString(36)}`;
const PASS = 'wu-Secret-9';
await db.pool.query(`
  CREATE TABLE monthly_sales (month date PRIMARY KEY, revenue numeric(12,2) NOT NULL);
  INSERT INTO monthly_sales SELECT d::date, 1000 + extract(month FROM d) * 37 FROM generate_series('2025-01-01'::date, '2025-12-01', '1 month') d;
  CREATE ROLE ${role} LOGIN PASSWORD '${PASS}';
  GRANT CONNECT ON DATABASE ${db.name} TO ${role};
  GRANT USAGE ON SCHEMA public TO ${role};
  GRANT SELECT ON monthly_sales TO ${role};
`);
const fake = await startFakeLlm();
fake.fallback(() => ({ text: sqlAnswer('SELECT month, revenue FROM monthly_sales ORDER BY month', 'Revenue per month of 2025.') }));

/** Pages on other origins than Cortado's: the host page with its hostile CSS and the widget tag. */
function hostPage(cortado: string, widget = 'assistant'): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>A shop</title>
<style>* { font-size: 2px !important; display: block !important; } button { display: none !important; } div { background: lime !important; }</style>
</head><body><h1>Some shop</h1><p>Hostile CSS everywhere.</p>
<script src="${cortado}/widget.js" data-cortado-widget="${widget}" data-cortado-title="Ask the shop data"></script></body></html>`;
}
async function foreignServer(html: () => string): Promise<{ origin: string; close(): Promise<void> }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(html());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  // localhost and 127.0.0.1 are different sites: no cookie of Cortado's goes along
  return { origin: `http://localhost:${(server.address() as AddressInfo).port}`, close: () => new Promise((r) => server.close(() => r())) };
}

const config = testConfig({
  natsUrl: nats.url, db: { host: db.host, port: db.port, name: db.name, user: db.user }, llmUrl: fake.url,
  extra: {
    config_db: { encryption_key: generateFernetKey() },
    // the directory of the assistant login gate (plugins.assistant_login, switched on by the tests that use it)
    ldap: {
      enabled: true, server: slapd.url, connect_timeout: 1, bind_dn: SVC_DN, bind_password: SVC_PASSWORD,
      base_dn: PEOPLE_DN, user_search_filter: '(uid={username})', required_group_dn: ANALYSTS_DN, group_member_attr: 'member',
    },
    plugins: { auth: { enabled: true, allowed_db_types: ['postgresql'], allowed_catalogs: [{ name: db.name, allowed_schemas: ['public'] }], auto_session: { enabled: false, label: 'Shop visitor' } } },
  },
});
const stack = await startStack(config);
const shop = await foreignServer(() => hostPage(stack.url));
const other = await foreignServer(() => hostPage(stack.url));
/** a plain page (no hostile CSS) with both widgets: the accessibility and theme checks */
let plainTheme = '';
const plain = await foreignServer(() => `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>A plain page</title></head>
<body><main><h1>A plain page</h1><p>Two widgets below.</p></main>
<script src="${stack.url}/widget.js" data-cortado-widget="assistant"${plainTheme ? ` data-theme="${plainTheme}"` : ''}></script>
<script src="${stack.url}/widget.js" data-cortado-widget="agent"${plainTheme ? ` data-theme="${plainTheme}"` : ''}></script></body></html>`);
const watcher = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'widget-watcher', log: createLogger({ svc: 'w', level: 'silent' }) });
const generated: Array<{ request_id: string; widget?: string; channel?: string }> = [];
const unlisten = watcher.listen(QueryGeneratedEvt.subject, (d) => generated.push(d as never));
await watcher.flush();
const browser = await launchBrowser();

/** The widget's session secret, as the host page keeps it (sessionStorage). */
function storedSession(page: Page, kind: string): Promise<string | undefined> {
  return page.evaluate(`Object.entries(sessionStorage).find(([k]) => k.endsWith(':${kind}'))?.[1]`) as Promise<string | undefined>;
}

t.teardown(async () => {
  unlisten();
  await browser.close();
  await watcher.close();
  await shop.close();
  await other.close();
  await plain.close();
  await stack.stop();
  await fake.close();
  await db.drop();
  const { default: pg } = await import('pg');
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
  await admin.end();
  await nats.stop();
  await slapd.stop();
});

async function openWidget(origin: string, context?: BrowserContext): Promise<{ page: Page; errors: string[] }> {
  const page = await (context ?? browser).newPage({ viewport: { width: 1000, height: 800 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(origin);
  await page.click('[data-cortado-widget] .ctd-launch');
  await page.waitForSelector('[data-cortado-widget] .ctd-panel:not([hidden])');
  return { page, errors };
}

async function ask(page: Page, question: string): Promise<void> {
  // the question box, or what the widget says instead (a refused session, say): fail with its words
  await page.waitForSelector('[data-cortado-widget] textarea.question, [data-cortado-widget] .ctd-note.ctd-error:not([hidden])');
  const refused = page.locator('[data-cortado-widget] .ctd-note.ctd-error:not([hidden])');
  if (await refused.count()) throw new Error(`the widget shows no question box but: ${await refused.first().textContent()}`);
  await page.fill('[data-cortado-widget] textarea.question', question);
  await page.click('[data-cortado-widget] button.go');
}

t.test('/widget.js: one script, within the 150 KB gzipped budget', async (t) => {
  const res = await fetch(`${stack.url}/widget.js`);
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type') ?? '', /text\/javascript/);
  const body = Buffer.from(await res.arrayBuffer());
  const gz = gzipSync(body, { level: 9 }).length;
  t.comment(`widget.js: ${body.length} bytes, ${gz} bytes gzipped`);
  t.ok(gz <= 150 * 1024, `gzipped ${gz} bytes`);
  t.notMatch(body.toString('utf8'), /^\s*(import|export)\s/m, 'no module syntax left: a classic script');
  const chart = readFileSync(createRequire(import.meta.url).resolve('chart.js').replace(/[^/]*$/, 'chart.umd.min.js'));
  t.ok(body.length < chart.length, 'Chart.js is not bundled in (it is loaded when a chart is drawn)');
});

t.test('embedded in a foreign page with hostile CSS: ask, table, a sized chart, typed assistant', async (t) => {
  const { page, errors } = await openWidget(shop.origin);
  const launcher = await page.locator('[data-cortado-widget] .ctd-launch').boundingBox();
  t.ok(launcher && launcher.width >= 40 && launcher.height >= 40, `the launcher keeps its size (${JSON.stringify(launcher)})`);
  await ask(page, 'Revenue per month in 2025?');
  await page.waitForSelector('[data-cortado-widget] .answer table tbody tr');
  const answer = page.locator('[data-cortado-widget] .answer').first();
  t.equal(await answer.locator('.explanation').textContent(), 'Revenue per month of 2025.');
  t.ok((await answer.locator('tbody tr').count()) >= 10, 'the rows are shown');
  const canvas = answer.locator('canvas').first();
  await canvas.waitFor();
  await page.waitForFunction('!!window.Chart');
  const box = await canvas.boundingBox();
  t.ok(box && box.width > 100 && box.height > 50, `the chart is drawn and sized (${JSON.stringify(box)})`);
  const fontSize = await page.locator('[data-cortado-widget] textarea.question').evaluate((e) => (globalThis as unknown as { getComputedStyle(x: unknown): { fontSize: string } }).getComputedStyle(e).fontSize);
  t.not(fontSize, '2px', 'the host page\'s font-size does not reach the widget');
  t.ok(await page.locator('[data-cortado-widget] button.go').isVisible(), 'nor does its button { display: none }');
  await page.screenshot({ path: `${ARTIFACTS}/widget-embedded.png` });

  const rid = (await answer.locator('.rid').count()) ? '' : undefined;
  void rid;
  const mine = generated.filter((g) => g.channel === 'legacy');
  t.ok(mine.length > 0 && mine.every((g) => g.widget === 'assistant'), `the question's events are typed assistant: ${JSON.stringify(mine.map((g) => g.widget))}`);
  t.same(errors, [], 'no script errors');
  await page.close();
});

t.test('confirm_before_execute: the SQL first, Run runs it', async (t) => {
  setConfig(config, 'query.confirm_before_execute', true);
  t.teardown(() => { setConfig(config, 'query.confirm_before_execute', false); });
  const { page } = await openWidget(shop.origin);
  await ask(page, 'Revenue per month, but ask me first');
  const dialog = page.locator('[data-cortado-widget] .answer .confirm').first();
  await dialog.waitFor();
  t.match(await page.locator('[data-cortado-widget] .answer pre.sql').first().textContent(), /FROM monthly_sales/);
  t.equal(await page.locator('[data-cortado-widget] .answer tbody tr').count(), 0, 'nothing ran yet');
  await dialog.locator('button.run').click();
  await page.waitForSelector('[data-cortado-widget] .answer table tbody tr');
  t.ok((await page.locator('[data-cortado-widget] .answer').first().locator('tbody tr').count()) >= 10, 'confirmed: the rows');
  await page.close();
});

t.test('require_session: the login form, a database login, then the question kept and answered', async (t) => {
  setConfig(config, 'query.require_session', true);
  t.teardown(() => { setConfig(config, 'query.require_session', false); });
  const { page, errors } = await openWidget(shop.origin);
  await ask(page, 'Revenue per month please');
  const form = page.locator('[data-cortado-widget] form.ctd-login');
  await form.waitFor();
  t.match(await form.textContent(), /Sign in with your database account/);
  t.same(await form.locator('select[name=catalog] option').allTextContents(), [db.name], 'the database picker from /auth/config');
  await form.locator('input[name=username]').fill(role);
  // (this machine's PostgreSQL trusts loopback logins, so a wrong password is not tested here:
  // test/e2e/auth-sessions.test.ts covers refused logins)
  await form.locator('input[name=password]').fill(PASS);
  await form.locator('button[type=submit]').click();
  await page.waitForSelector('[data-cortado-widget] .answer table tbody tr');
  t.equal(await page.locator('[data-cortado-widget] .answer .q').first().textContent(), 'Revenue per month please', 'the question was kept and asked again');
  const sid = await storedSession(page, 'assistant');
  t.ok(sid, 'the session is kept in the host page\'s sessionStorage');
  const direct = await call(`${stack.url}/query`, { body: { question: 'Revenue per month' }, headers: { 'x-session-id': `${sid}x` } });
  t.equal(direct.status, 401, 'an X-Session-ID that holds no session is refused, not ignored');
  t.same(errors, []);
  await page.close();
});

t.test('auto_session: an allowed origin gets one; another origin is refused with a clear message', async (t) => {
  setConfig(config, 'query.require_session', true);
  setConfig(config, 'plugins.auth.auto_session.enabled', true);
  setConfig(config, 'plugins.auth.auto_session.allowed_origins', [shop.origin]);
  t.teardown(() => {
    setConfig(config, 'query.require_session', false);
    setConfig(config, 'plugins.auth.auto_session.enabled', false);
    setConfig(config, 'plugins.auth.auto_session.allowed_origins', []);
  });
  const { page } = await openWidget(shop.origin);
  await page.waitForFunction("Object.keys(sessionStorage).some((k) => k.endsWith(':assistant'))");
  await ask(page, 'Revenue per month, anonymously');
  await page.waitForSelector('[data-cortado-widget] .answer table tbody tr');
  t.match(await page.locator('[data-cortado-widget] .ctd-who').first().textContent(), /Shop visitor/);
  const sid = await storedSession(page, 'assistant');
  await page.close();

  const refused = await openWidget(other.origin);
  const note = refused.page.locator('[data-cortado-widget] .ctd-note.ctd-error');
  await note.waitFor();
  t.match(await note.textContent(), /FORBIDDEN.*allowed_origins/);
  await refused.page.screenshot({ path: `${ARTIFACTS}/widget-origin-refused.png` });
  await refused.page.close();

  const elsewhere = await call(`${stack.url}/query`, { body: { question: 'Revenue per month' }, headers: { 'x-session-id': sid!, origin: other.origin } });
  t.equal(elsewhere.status, 403, 'the session taken to another origin is refused there');
  t.match(elsewhere.body.error.message, /allowed_origins/);
});

/** Ask and wait for that question's table (the newest answer is first). */
async function askAndWait(page: Page, question: string): Promise<void> {
  await ask(page, question);
  const card = page.locator('[data-cortado-widget] .answer').filter({ has: page.locator('.q', { hasText: question }) });
  await card.locator('tbody tr').first().waitFor();
  // the history entry is written: the answer's star is enabled then
  await card.locator('button.fav:not([disabled])').waitFor();
}

/** Open the widget's History region; the questions of its two lists. */
async function openHistory(page: Page): Promise<{ recent: string[]; favourites: string[]; where: string }> {
  await page.click('[data-cortado-widget] button.ctd-hist');
  const region = page.locator('[data-cortado-widget] .ctd-history');
  await region.waitFor();
  await region.locator('.ctd-h-where:not(:empty)').waitFor();
  return readHistory(page);
}
async function readHistory(page: Page): Promise<{ recent: string[]; favourites: string[]; where: string }> {
  const region = page.locator('[data-cortado-widget] .ctd-history');
  return {
    recent: await region.locator('.ctd-h-recent .ctd-h-q').allTextContents(),
    favourites: await region.locator('.ctd-h-favs .ctd-h-q').allTextContents(),
    where: (await region.locator('.ctd-h-where').textContent()) ?? '',
  };
}

t.test('history and favourites of an anonymous visitor: in the browser, across a reopened page, by keyboard', async (t) => {
  const context = await browser.newContext();
  t.teardown(() => context.close());
  const first = await openWidget(shop.origin, context);
  await askAndWait(first.page, 'Revenue per month, first');
  await askAndWait(first.page, 'Revenue per month, second');
  t.same(first.errors, []);
  await first.page.close();

  const { page, errors } = await openWidget(shop.origin, context);
  await page.waitForSelector('[data-cortado-widget] textarea.question');
  const seen = await openHistory(page);
  t.same(seen.recent, ['Revenue per month, second', 'Revenue per month, first'], 'the reopened page shows both questions, newest first');
  t.same(seen.favourites, []);
  t.match(seen.where, /this browser/);
  const kept = JSON.parse(String(await page.evaluate(`localStorage.getItem(${JSON.stringify(`cortado:${stack.url}:history`)})`)));
  t.equal(kept.length, 2, 'kept in the host page\'s localStorage, under this Cortado\'s key');

  // by keyboard: the History button took the focus to the first entry; Tab to its star, Space
  const focused = () => page.evaluate(`(() => { let a = document.activeElement; while (a?.shadowRoot?.activeElement) a = a.shadowRoot.activeElement; return a?.className + '|' + (a?.textContent ?? ''); })()`);
  t.match(await focused(), /ctd-h-q\|Revenue per month, second/, 'the first entry has the focus');
  await page.keyboard.press('Tab');
  t.match(await focused(), /ctd-h-star/);
  await page.keyboard.press('Space');
  await page.locator('[data-cortado-widget] .ctd-h-favs .ctd-h-q').first().waitFor();
  const starred = await readHistory(page);
  t.same(starred.favourites, ['Revenue per month, second'], 'starred: it is in the favourites');
  t.equal(await page.locator('[data-cortado-widget] .ctd-h-recent .ctd-h-star[aria-pressed=true]').count(), 1);
  t.match(await focused(), /ctd-h-star/, 'the focus stays on the star');

  // an entry asks again
  await page.locator('[data-cortado-widget] .ctd-h-recent .ctd-h-q', { hasText: 'first' }).press('Enter');
  await page.locator('[data-cortado-widget] .answer .q', { hasText: 'Revenue per month, first' }).first().waitFor();
  t.ok(await page.locator('[data-cortado-widget] .ctd-history').isHidden(), 'the history closes when an entry is asked');
  await page.screenshot({ path: `${ARTIFACTS}/widget-history.png` });
  t.same(errors, []);
});

/** The assistant gate's session of a directory user (POST /assistant/login). */
async function assistantSession(): Promise<string> {
  const r = await call(`${stack.url}/assistant/login`, { body: { username: 'alice', password: 'alice-pw' } });
  if (r.status !== 200) throw new Error(`assistant login: ${r.status} ${r.text}`);
  return r.body.session_id as string;
}

t.test('signed_in routes take the session in X-Session-ID as they take its cookie (export, history), with the same checks', async (t) => {
  setConfig(config, 'plugins.assistant_login.enabled', true);
  t.teardown(() => { setConfig(config, 'plugins.assistant_login.enabled', false); });
  const sid = await assistantSession();
  const exportBody = { sql: 'SELECT month, revenue FROM monthly_sales ORDER BY month', format: 'csv', title: 'x' };
  const exp = await call(`${stack.url}/api/export`, { body: exportBody, headers: { 'x-session-id': sid, origin: shop.origin } });
  t.equal(exp.status, 200, `an assistant session in the header downloads (${exp.status} ${exp.text.slice(0, 200)})`);
  t.match(exp.text, /^\uFEFF?month,revenue/);
  const add = await call(`${stack.url}/api/history`, { body: { question: 'from the header' }, headers: { 'x-session-id': sid } });
  t.equal(add.status, 201, 'a header session writes without a CSRF token (no ambient credential to forge)');
  const list = await call(`${stack.url}/api/history`, { headers: { 'x-session-id': sid } });
  t.same(list.body.entries.map((e: { question: string }) => e.question), ['from the header']);
  t.equal((await call(`${stack.url}/api/workspace`, { headers: { 'x-session-id': sid } })).body.kind, 'assistant');
  t.equal((await call(`${stack.url}/api/export`, { body: exportBody })).status, 401, 'no session: 401');
  t.equal((await call(`${stack.url}/api/export`, { body: exportBody, headers: { 'x-session-id': `${sid}x` } })).status, 401, 'a header that holds no session: 401');
  t.equal((await call(`${stack.url}/auth/session`, { headers: { 'x-session-id': sid } })).status, 401, 'nothing else widened: an assistant session is no plugins.auth session');

  // an auto session: from an Origin in allowed_origins only, as on /query
  setConfig(config, 'plugins.auth.auto_session.enabled', true);
  setConfig(config, 'plugins.auth.auto_session.allowed_origins', [shop.origin]);
  t.teardown(() => { setConfig(config, 'plugins.auth.auto_session.enabled', false); setConfig(config, 'plugins.auth.auto_session.allowed_origins', []); });
  setConfig(config, 'plugins.assistant_login.enabled', false);
  const auto = await call(`${stack.url}/auth/auto-session`, { body: {}, headers: { origin: shop.origin } });
  t.equal(auto.status, 200, auto.text);
  const autoId = auto.body.session_id as string;
  const fromShop = await call(`${stack.url}/api/history`, { headers: { 'x-session-id': autoId, origin: shop.origin } });
  t.equal(fromShop.status, 200, 'an auto session from an allowed origin is signed in');
  const fromOther = await call(`${stack.url}/api/export`, { body: exportBody, headers: { 'x-session-id': autoId, origin: other.origin } });
  t.equal(fromOther.status, 403, 'from another origin it is refused');
  t.match(fromOther.body.error.message, /allowed_origins/);
  t.equal((await call(`${stack.url}/api/history`, { headers: { 'x-session-id': autoId, origin: other.origin } })).status, 403);
});

t.test('the directory login form in the widget on another site: a download, and history on the server', async (t) => {
  setConfig(config, 'plugins.assistant_login.enabled', true);
  t.teardown(() => { setConfig(config, 'plugins.assistant_login.enabled', false); });
  const context = await browser.newContext({ acceptDownloads: true });
  t.teardown(() => context.close());
  const { page, errors } = await openWidget(shop.origin, context);
  const form = page.locator('[data-cortado-widget] form.ctd-login');
  await form.waitFor();
  t.match(await form.textContent(), /Sign in to ask questions/);
  t.equal(await form.locator('select').count(), 0, 'a directory login: no database pickers');
  await form.locator('input[name=username]').fill('alice');
  await form.locator('input[name=password]').fill('wrong-pw');
  await form.locator('button[type=submit]').click();
  const note = page.locator('[data-cortado-widget] .ctd-note.ctd-error');
  await note.waitFor();
  t.match(await note.textContent(), /UNAUTHORIZED/, 'a wrong password: the error, with its code');
  await form.locator('input[name=password]').fill('alice-pw');
  await form.locator('button[type=submit]').click();
  await page.waitForSelector('[data-cortado-widget] textarea.question');
  t.match(await page.locator('[data-cortado-widget] .ctd-who').first().textContent(), /alice/);
  await askAndWait(page, 'Revenue per month, signed in');

  const answer = page.locator('[data-cortado-widget] .answer').first();
  const [download] = await Promise.all([page.waitForEvent('download'), answer.locator('.downloads button[data-format="csv"]').click()]);
  const csv = (await downloaded(download)).toString('utf8').replace(/^\uFEFF/, '').trim().split(/\r?\n/);
  t.equal(csv[0], 'month,revenue', `the download from ${shop.origin}: ${await answer.locator('.dl-status').textContent()}`);
  t.equal(csv.length, 13, 'a header and twelve months');

  const sid = await storedSession(page, 'assistant');
  const server = await call(`${stack.url}/api/history`, { headers: { 'x-session-id': sid! } });
  t.ok(server.body.entries.some((e: { question: string }) => e.question === 'Revenue per month, signed in'), 'the question is kept on the server');
  const seen = await openHistory(page);
  t.match(seen.where, /server/);
  t.ok(seen.recent.includes('Revenue per month, signed in'));
  await page.locator('[data-cortado-widget] .ctd-h-recent .ctd-h-star').first().click();
  await page.locator('[data-cortado-widget] .ctd-h-favs .ctd-h-q').first().waitFor();
  const favs = await call(`${stack.url}/api/history?favourites=true`, { headers: { 'x-session-id': sid! } });
  t.same(favs.body.entries.map((e: { question: string }) => e.question), ['Revenue per month, signed in'], 'starred on the server');
  t.equal(await page.evaluate(`localStorage.getItem(${JSON.stringify(`cortado:${stack.url}:history`)})`), null, 'nothing in the host page\'s storage');
  t.same(errors, []);
});

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * axe-core inside one widget's shadow root (and the answer view's, nested in it): the serious and
 * critical violations, and how many checked nodes lay in a shadow tree (axe names those by a path
 * of selectors; none would mean it never looked inside).
 */
async function axeWidget(page: Page, kind: 'assistant' | 'agent'): Promise<{ bad: string[]; inShadow: number; nested: number }> {
  if (!(await page.evaluate('typeof window.axe === "object"'))) await page.evaluate(AXE);
  return page.evaluate(`axe.run({ include: [{ fromShadowDom: ['[data-cortado-widget="${kind}"]', '.ctd-w'] }] }).then((r) => {
    const shadow = r.passes.flatMap((p) => p.nodes).filter((n) => Array.isArray(n.target[0]));
    return {
      bad: r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
        .map((v) => v.impact + ' ' + v.id + ': ' + v.help + ' (' + v.nodes.slice(0, 3).map((n) => JSON.stringify(n.target)).join('; ') + ')'),
      inShadow: shadow.length,
      nested: shadow.filter((n) => n.target[0].length >= 3).length,
    };
  })`) as Promise<{ bad: string[]; inShadow: number; nested: number }>;
}

/** a computed style of an element inside a widget (through its shadow roots) */
function styleOf(page: Page, selector: string, prop: string): Promise<string> {
  return page.locator(selector).first().evaluate((e, p) => (globalThis as unknown as { getComputedStyle(x: unknown): Record<string, string> }).getComputedStyle(e)[p]!, prop);
}

const DARK_CARD = 'rgb(38, 32, 25)';
const DARK_INK = 'rgb(239, 230, 220)';
const LIGHT_CARD = 'rgb(255, 255, 255)';

t.test('themes: the widgets follow prefers-color-scheme and data-theme; axe finds nothing serious in either (answers, history, both login forms, the agent)', async (t) => {
  for (const scheme of ['light', 'dark'] as const) {
    const context = await browser.newContext({ viewport: { width: 1100, height: 900 }, colorScheme: scheme });
    t.teardown(() => context.close());
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    plainTheme = '';
    await page.goto(plain.origin);
    const A = '[data-cortado-widget="assistant"]';
    const G = '[data-cortado-widget="agent"]';

    // the Assistant with an answer (a table, a chart) and its history open
    await page.click(`${A} .ctd-launch`);
    await page.fill(`${A} textarea.question`, `Revenue per month, ${scheme}`);
    await page.click(`${A} button.go`);
    await page.locator(`${A} .answer button.fav:not([disabled])`).first().waitFor();
    await page.locator(`${A} .answer .chart canvas`).first().waitFor();
    await page.click(`${A} button.ctd-hist`);
    await page.locator(`${A} .ctd-h-recent .ctd-h-q`).first().waitFor();
    t.equal(await styleOf(page, `${A} .ctd-panel`, 'backgroundColor'), scheme === 'dark' ? DARK_CARD : LIGHT_CARD, `${scheme}: the panel's background`);
    t.equal(await styleOf(page, `${A} .answer`, 'backgroundColor'), scheme === 'dark' ? DARK_CARD : LIGHT_CARD, `${scheme}: an answer's background (the answer view's own shadow root)`);
    t.equal(await styleOf(page, `${A} textarea.question`, 'color'), scheme === 'dark' ? DARK_INK : 'rgb(43, 33, 24)', `${scheme}: the question's text`);
    t.equal(await styleOf(page, `${A} .ctd-w`, 'colorScheme'), scheme, `${scheme}: native controls in the same scheme`);
    const answer = await axeWidget(page, 'assistant');
    t.same(answer.bad, [], `${scheme}: the Assistant with an answer and its history: no serious or critical violation`);
    t.ok(answer.inShadow > 20 && answer.nested > 5, `axe looked inside the shadow roots (${answer.inShadow} nodes, ${answer.nested} in the answer view's)`);
    await page.screenshot({ path: `${ARTIFACTS}/widget-assistant-${scheme}.png` });
    await page.click(`${A} .ctd-head button[aria-label^="Close"]`);

    // the Agent: its database login form, then signed in (its tables, a question)
    await page.click(`${G} .ctd-launch`);
    const form = page.locator(`${G} form.ctd-login`);
    await form.waitFor();
    t.same((await axeWidget(page, 'agent')).bad, [], `${scheme}: the Agent's database login form`);
    await form.locator('input[name=username]').fill(role);
    await form.locator('input[name=password]').fill(PASS);
    await form.locator('button[type=submit]').click();
    await page.locator(`${G} .ctd-tables li button`).first().waitFor();
    await page.fill(`${G} textarea.question`, `Revenue per month, the agent, ${scheme}`);
    await page.click(`${G} button.go`);
    await page.locator(`${G} .answer tbody tr`).first().waitFor();
    t.equal(await styleOf(page, `${G} .ctd-panel`, 'backgroundColor'), scheme === 'dark' ? DARK_CARD : LIGHT_CARD, `${scheme}: the Agent's panel`);
    t.same((await axeWidget(page, 'agent')).bad, [], `${scheme}: the Agent signed in, with tables and an answer`);
    await page.screenshot({ path: `${ARTIFACTS}/widget-agent-${scheme}.png` });
    t.same(errors, []);
    await page.close();

    // the Assistant's directory login form (plugins.assistant_login)
    setConfig(config, 'plugins.assistant_login.enabled', true);
    const gate = await context.newPage();
    await gate.goto(plain.origin);
    await gate.click(`${A} .ctd-launch`);
    await gate.locator(`${A} form.ctd-login`).waitFor();
    t.equal(await styleOf(gate, `${A} form.ctd-login input[name=username]`, 'backgroundColor'), scheme === 'dark' ? DARK_CARD : LIGHT_CARD, `${scheme}: the login form's fields`);
    t.same((await axeWidget(gate, 'assistant')).bad, [], `${scheme}: the Assistant's directory login form`);
    await gate.screenshot({ path: `${ARTIFACTS}/widget-login-${scheme}.png` });
    setConfig(config, 'plugins.assistant_login.enabled', false);
    await gate.close();
  }

  // data-theme on the tag wins over the visitor's preference, both ways
  for (const [scheme, theme, card] of [['light', 'dark', DARK_CARD], ['dark', 'light', LIGHT_CARD]] as const) {
    const context = await browser.newContext({ colorScheme: scheme });
    t.teardown(() => context.close());
    const page = await context.newPage();
    plainTheme = theme;
    await page.goto(plain.origin);
    plainTheme = '';
    await page.click('[data-cortado-widget="assistant"] .ctd-launch');
    await page.locator('[data-cortado-widget="assistant"] textarea.question').waitFor();
    t.equal(await styleOf(page, '[data-cortado-widget="assistant"] .ctd-panel', 'backgroundColor'), card, `data-theme="${theme}" in a ${scheme} browser`);
    t.equal(await styleOf(page, '[data-cortado-widget="agent"] .ctd-launch', 'backgroundColor'), theme === 'dark' ? 'rgb(224, 185, 143)' : 'rgb(138, 90, 46)', 'the other widget\'s launcher too');
  }
});

t.test('/demo: both widgets, the snippet copies, no serious accessibility violation; off by ui.sections', async (t) => {
  // bypassCSP: only so that the test can inject axe-core (an inline script the page's CSP refuses)
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 }, bypassCSP: true });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.url });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  const res = await page.goto(`${stack.url}/demo`);
  t.match(res?.headers()['content-security-policy'] ?? '', /script-src 'self'/);
  await page.waitForSelector('[data-cortado-widget="assistant"] .ctd-launch');
  await page.waitForSelector('[data-cortado-widget="agent"] .ctd-launch');
  const [a, b] = await Promise.all(['assistant', 'agent'].map((k) => page.locator(`[data-cortado-widget="${k}"] .ctd-launch`).boundingBox()));
  t.ok(a && b && Math.abs(a.y - b.y) > 40, 'two launchers, one above the other');
  await page.click('#copy-snippet');
  await page.waitForFunction("document.getElementById('copy-status')?.textContent === 'Copied.'");
  const copied = String(await page.evaluate('navigator.clipboard.readText()'));
  t.match(copied, new RegExp(`<script src="${stack.url}/widget.js" data-cortado-widget="assistant" defer></script>`));
  t.match(copied, /data-cortado-widget="agent"/);

  await page.click('[data-cortado-widget="assistant"] .ctd-launch');
  await page.waitForSelector('[data-cortado-widget="assistant"] textarea.question');
  await page.addScriptTag({ content: readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8') });
  const hasAxe = await page.evaluate("typeof window.axe === 'object'");
  if (!hasAxe) {
    await context.close();
    t.fail('axe-core could not be injected');
    return;
  }
  const result = await page.evaluate(`axe.run().then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length })))`) as Array<{ id: string; impact: string; nodes: number }>;
  const bad = result.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  t.same(bad, [], `no serious or critical violations (all: ${JSON.stringify(result)})`);
  await page.screenshot({ path: `${ARTIFACTS}/demo.png`, fullPage: true });
  t.same(errors.filter((e) => !/Content Security Policy/.test(e)), [], 'no script errors');
  await context.close();

  setConfig(config, 'ui.sections.demo', false);
  t.teardown(() => { setConfig(config, 'ui.sections.demo', true); });
  const off = await call(`${stack.url}/demo`);
  t.equal(off.status, 404);
  t.match(off.body.error.message, /ui\.sections\.demo/);
});

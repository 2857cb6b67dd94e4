/**
 * The Authenticated Agent widget embedded with one tag in a foreign page: sign in with a
 * PostgreSQL role (database type, database and schema pickers from /auth/config), the session's
 * tables, a question on /auth/query typed `agent`, the confirm flow, a session that ends
 * mid-conversation (the login comes back with a message and the question is kept), sign out.
 */
import { mkdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import type { Page } from 'playwright-core';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import { QueryGeneratedEvt } from '../../protocol/subjects.js';
import { launchBrowser } from '../helpers/browser.js';
import { testConfig, setConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { ADMIN_URL, createTestDb } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';

mkdirSync('test-artifacts', { recursive: true });
const nats = await startNats();
const db = await createTestDb('agentw');
const role = `agent_u_${process.pid}_${Date.now().toString(36)}`;
const PASS = 'ag-Secret-7';
await db.pool.query(`
  CREATE TABLE stores (id int PRIMARY KEY, city text NOT NULL, sales numeric NOT NULL);
  INSERT INTO stores VALUES (1, 'Lyon', 120), (2, 'Porto', 90), (3, 'Gent', 75), (4, 'Turin', 60);
  CREATE TABLE secret_notes (id int);
  CREATE ROLE ${role} LOGIN PASSWORD '${PASS}';
  GRANT CONNECT ON DATABASE ${db.name} TO ${role};
  GRANT USAGE ON SCHEMA public TO ${role};
  GRANT SELECT ON stores TO ${role};
`);
const fake = await startFakeLlm();
fake.fallback(() => ({ text: sqlAnswer('SELECT city, sales FROM stores ORDER BY sales DESC', 'Sales per store.') }));
const config = testConfig({
  natsUrl: nats.url, db: { host: db.host, port: db.port, name: db.name, user: db.user }, llmUrl: fake.url,
  extra: {
    config_db: { encryption_key: generateFernetKey() },
    plugins: { auth: { enabled: true, allowed_db_types: ['postgresql'], allowed_catalogs: [{ name: db.name, allowed_schemas: ['public'] }] } },
  },
});
const stack = await startStack(config);
const server = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Intranet</title>
<style>* { font-size: 2px !important; display: block !important; } button { display: none !important; }</style></head>
<body><h1>Intranet</h1><script src="${stack.url}/widget.js" data-cortado-widget="agent"></script></body></html>`);
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const origin = `http://localhost:${(server.address() as AddressInfo).port}`;
const watcher = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'agent-watcher', log: createLogger({ svc: 'w', level: 'silent' }) });
const generated: Array<{ widget?: string; channel?: string }> = [];
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
  await new Promise((r) => server.close(r));
  await stack.stop();
  await fake.close();
  await db.drop();
  const { default: pg } = await import('pg');
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
  await admin.end();
  await nats.stop();
});

const W = '[data-cortado-widget="agent"]';

t.test('sign in, tables, a question, confirm, expiry with the question kept, sign out', async (t) => {
  const page = await browser.newPage({ viewport: { width: 390, height: 800 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(origin);
  await page.click(`${W} .ctd-launch`);
  const form = page.locator(`${W} form.ctd-login`);
  await form.waitFor();
  t.same(await form.locator('select[name=catalog] option').allTextContents(), [db.name], 'the database picker');
  t.same(await form.locator('select[name=schema] option').allTextContents(), ['public'], 'the schema picker of that database');
  await form.locator('input[name=username]').fill(role);
  await form.locator('input[name=password]').fill(PASS);
  await form.locator('button[type=submit]').click();

  await page.waitForSelector(`${W} .ctd-tables li button`);
  t.same(await page.locator(`${W} .ctd-tables li button`).allTextContents(), ['stores'], 'the tables the role sees, not the others');
  t.match(await page.locator(`${W} .ctd-who`).first().textContent(), new RegExp(`${role} · ${db.name}\\.public`));
  await page.locator(`${W} .ctd-tables li button`).first().click();
  t.equal(await page.locator(`${W} .ctd-tables li button`).first().getAttribute('aria-pressed'), 'true');

  await page.fill(`${W} textarea.question`, 'Which store sells most?');
  await page.click(`${W} button.go`);
  await page.waitForSelector(`${W} .answer table tbody tr`);
  t.equal(await page.locator(`${W} .answer`).first().locator('tbody tr').count(), 4);
  t.ok(await page.locator(`${W} .answer canvas`).first().isVisible(), 'category + measure: a chart');
  t.ok(generated.some((g) => g.channel === 'auth' && g.widget === 'agent'), 'typed agent on the bus');
  await page.screenshot({ path: 'test-artifacts/agent-widget-360.png' });

  // confirm_before_execute
  setConfig(config, 'query.confirm_before_execute', true);
  await page.fill(`${W} textarea.question`, 'Which store sells most, ask first?');
  await page.click(`${W} button.go`);
  const dialog = page.locator(`${W} .answer .confirm`).first();
  await dialog.waitFor();
  await dialog.locator('button.run').click();
  await page.locator(`${W} .answer`).first().locator('tbody tr').first().waitFor();
  t.equal(await page.locator(`${W} .answer`).first().locator('tbody tr').count(), 4, 'confirmed and run on the session\'s connection');
  setConfig(config, 'query.confirm_before_execute', false);

  // the session ends elsewhere (another tab signed out, or it expired): the login comes back
  const sid = await storedSession(page, 'agent');
  t.ok(sid);
  t.equal((await call(`${stack.url}/auth/logout`, { method: 'POST', headers: { 'x-session-id': sid! } })).status, 200);
  await page.fill(`${W} textarea.question`, 'Lowest sales?');
  await page.click(`${W} button.go`);
  await form.waitFor();
  t.match(await form.textContent(), /expired or was ended/);
  await form.locator('input[name=username]').fill(role);
  await form.locator('input[name=password]').fill(PASS);
  await form.locator('button[type=submit]').click();
  await page.locator(`${W} .answer`, { has: page.locator('.q', { hasText: 'Lowest sales?' }) }).locator('tbody tr').first().waitFor();
  t.pass('the kept question was asked again after signing in');

  // sign out
  await page.click(`${W} button[aria-label="Sign out"]`);
  await form.waitFor();
  const after = await call(`${stack.url}/auth/session`, { headers: { 'x-session-id': (await storedSession(page, 'agent')) ?? 'none' } });
  t.equal(after.status, 401, 'signed out: no session left in the page');
  t.same(errors, []);
  await page.close();
});

t.test('table discovery (plugins.auth.enable_discovery_tokens): the search asks /auth/discover; history kept on the server', async (t) => {
  setConfig(config, 'plugins.auth.enable_discovery_tokens', true);
  t.teardown(() => { setConfig(config, 'plugins.auth.enable_discovery_tokens', false); });
  const page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const discovered: string[] = [];
  page.on('request', (r) => { if (new URL(r.url()).pathname === '/auth/discover') discovered.push(new URL(r.url()).searchParams.get('q') ?? ''); });
  await page.goto(origin);
  await page.click(`${W} .ctd-launch`);
  const form = page.locator(`${W} form.ctd-login`);
  await form.waitFor();
  await form.locator('input[name=username]').fill(role);
  await form.locator('input[name=password]').fill(PASS);
  await form.locator('button[type=submit]').click();
  const search = page.locator(`${W} .ctd-tables input[type=search]`);
  await page.waitForSelector(`${W} .ctd-tables li button`);
  t.equal(await search.getAttribute('aria-label'), 'Search tables', 'discovery on: a search, not a filter');
  // typed one key at a time: one search, once the typing stopped (on the session's own connection,
  // so the tables the role may not read are not found)
  await search.pressSequentially('stor', { delay: 30 });
  const found = page.locator(`${W} .ctd-tables li button`, { hasText: `${db.name}.public.stores` });
  await Promise.race([found.waitFor(), page.locator(`${W} .ctd-note.ctd-error`).waitFor().then(async () => { throw new Error(`the search failed: ${await page.locator(`${W} .ctd-note`).textContent()}`); })]);
  t.same(await page.locator(`${W} .ctd-tables li button`).allTextContents(), [`${db.name}.public.stores`], 'the search\'s answer, named by database and schema');
  t.same(discovered, ['stor'], 'one request to /auth/discover, after the typing stopped');
  await search.fill('secret');
  await page.waitForFunction(`document.querySelector('div${W}').shadowRoot.querySelectorAll('.ctd-tables li button').length === 0`);
  t.same(discovered, ['stor', 'secret'], 'a table the role may not read is not found');
  await search.fill('');
  await page.waitForFunction(`document.querySelector('div${W}').shadowRoot.querySelectorAll('.ctd-tables li button').length === 1`);
  t.same(await page.locator(`${W} .ctd-tables li button`).allTextContents(), ['stores'], 'an empty search: the session\'s own tables again');

  await page.fill(`${W} textarea.question`, 'Which store sells most, again?');
  await page.click(`${W} button.go`);
  await page.locator(`${W} .answer button.fav:not([disabled])`).first().waitFor();
  await page.click(`${W} button.ctd-hist`);
  await page.locator(`${W} .ctd-h-where:not(:empty)`).waitFor();
  t.match(await page.locator(`${W} .ctd-h-where`).textContent(), /server/, 'a database login keeps its history on the server');
  t.ok((await page.locator(`${W} .ctd-h-recent .ctd-h-q`).allTextContents()).includes('Which store sells most, again?'));
  const sid = await storedSession(page, 'agent');
  const server = await call(`${stack.url}/api/history`, { headers: { 'x-session-id': sid! } });
  t.ok(server.body.entries.some((e: { question: string }) => e.question === 'Which store sells most, again?'), 'on /api/history');
  t.same(errors, []);
  await page.close();
});

/**
 * GET /api-docs: the OpenAPI document drawn in Chromium by Cortado's own script under the
 * page's strict CSP (no inline script, no other origin): every operation of /openapi.json is
 * there, a body's schema is shown with its $ref resolved, and the filter narrows the list.
 */
import t from 'tap';
import { launchBrowser } from '../helpers/browser.js';
import { testConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { startStack } from '../helpers/stack.js';

const nats = await startNats();
const stack = await startStack(testConfig({ natsUrl: nats.url, extra: { admin: { enabled: true, username: 'admin', password: 'docs-admin-pw' } } }), { edge: true, actors: [] });
const browser = await launchBrowser();
t.teardown(async () => {
  await browser.close();
  await stack.stop();
  await nats.stop();
});

t.test('the docs page draws every operation of /openapi.json, with schemas, under a strict CSP', async (t) => {
  const doc = await (await fetch(`${stack.url}/openapi.json`)).json() as { paths: Record<string, Record<string, unknown>> };
  const operations = Object.values(doc.paths).reduce((n, item) => n + Object.keys(item).length, 0);

  const res = await fetch(`${stack.url}/api-docs`);
  t.equal(res.status, 200);
  const csp = res.headers.get('content-security-policy') ?? '';
  t.match(csp, /default-src 'none'/);
  t.match(csp, /script-src 'self'(;|$)/, 'only our own script');
  t.notMatch(await res.text(), /<script>(?!<\/script>)|https?:\/\//, 'no inline script and no other origin in the page');

  const page = await browser.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('request', (r) => { if (!r.url().startsWith(stack.url)) problems.push(`asked another origin: ${r.url()}`); });
  await page.goto(`${stack.url}/api-docs`);
  await page.waitForSelector('#operations[data-operations]');
  t.equal(Number(await page.getAttribute('#operations', 'data-operations')), operations, 'every operation is drawn');
  t.equal(await page.locator('details.op').count(), operations);
  t.match(await page.textContent('#title') ?? '', /Cortado HTTP API/);

  // POST /api/query: its body's schema, resolved from the components
  const query = page.locator('details.op', { has: page.locator('.path', { hasText: /^\/api\/query$/ }) }).filter({ has: page.locator('.method.post') });
  await query.locator('summary').click();
  const body = await query.textContent() ?? '';
  t.match(body, /Request body \(application\/json\) \(ApiQueryBody\)/);
  t.match(body, /"question"/);
  t.match(body, /"maxLength": 4000/, 'the limits the route checks');

  await page.fill('#filter', 'mask-rules');
  const shown = await page.locator('details.op:not([hidden])').count();
  t.ok(shown >= 4 && shown < operations, `the filter narrows the list (${shown})`);
  t.same(problems, [], 'no script error, CSP refusal or request elsewhere');
  await page.close();
});

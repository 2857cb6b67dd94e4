/**
 * The README's images, made by hand, never by a test:
 *
 *   npx tsx scripts/screenshots.ts            # writes docs/images/dashboard.png and answer.png
 *
 * Cortado as `npm start` runs it — its real name, the embedded PostgreSQL with the generated
 * coffee-chain data — on a private nats-server, with a scripted model (a local server speaking
 * Anthropic's API, so no key and the same answer every time) and Debian's Chromium, as the tests
 * use them (test/helpers/). It asks one question on the dashboard's Assistant tab and takes:
 *
 *   docs/images/dashboard.png  Home: example questions, the service's health, a favourite and the recent questions
 *   docs/images/answer.png     the answer: its SQL, explanation, the line chart of the monthly series and the table
 *
 * Look at both before committing them.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { parseConfig } from '../config/load.js';
import { launchBrowser } from '../test/helpers/browser.js';
import { testConfigObject, deepMerge } from '../test/helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../test/helpers/fake-llm.js';
import { startNats } from '../test/helpers/nats.js';
import { startStack } from '../test/helpers/stack.js';

const OUT = 'docs/images';
const QUESTION = 'Monthly revenue for the last 12 months';
// the twelve whole months before the newest order of the demo data, as the model would write it
const SQL = `SELECT to_char(date_trunc('month', ordered_at), 'YYYY-MM') AS month, round(sum(total), 2) AS revenue, count(*) AS orders
FROM orders
WHERE ordered_at >= date_trunc('month', (SELECT max(ordered_at) FROM orders)) - interval '12 months'
  AND ordered_at < date_trunc('month', (SELECT max(ordered_at) FROM orders))
GROUP BY 1
ORDER BY 1`;

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cortado-screens-'));
  const nats = await startNats();
  const llm = await startFakeLlm();
  llm.fallback(() => ({ text: sqlAnswer(SQL, 'Revenue and orders per calendar month, over the twelve whole months before the latest order.') }));
  const object = deepMerge(testConfigObject({ natsUrl: nats.url, llmUrl: llm.url }), {
    app: { name: 'Cortado' },
    database: { postgresql: { embedded: true, embedded_dir: path.join(dataDir, 'pg') } },
    query: { timeout: 30 },
  });
  const config = parseConfig(YAML.stringify(object), 'screenshots.yaml', {}).config;
  const stack = await startStack(config);
  const browser = await launchBrowser();
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1, colorScheme: 'light' });
    const page = await context.newPage();
    await page.goto(`${stack.url}/#assistant`);
    await page.locator('body[data-ui=ready]').waitFor();
    const box = page.locator('#assistant-root textarea');
    await box.fill(QUESTION);
    await box.press('Enter');
    await page.locator('#assistant-root table tbody tr').first().waitFor({ timeout: 60_000 });
    await page.locator('#assistant-root canvas, #assistant-root svg.chart').first().waitFor({ timeout: 30_000 });
    await page.waitForTimeout(500); // the chart's first frame
    await page.locator('#assistant-root .answer').first().screenshot({ path: `${OUT}/answer.png` });

    await page.click('#tab-home');
    const item = page.locator('#home-history li', { hasText: QUESTION });
    await item.waitFor();
    await item.locator('button.star').click();
    await page.locator('#home-favourites li', { hasText: QUESTION }).waitFor();
    await page.locator('#health.ok').waitFor();
    await page.screenshot({ path: `${OUT}/dashboard.png` });
    console.log(`written: ${OUT}/dashboard.png, ${OUT}/answer.png`);
  } finally {
    await browser.close();
    await stack.stop();
    await llm.close();
    await nats.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();

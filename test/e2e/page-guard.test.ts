/**
 * The page guard (test/helpers/page-guard.ts) the page tests rely on: it reports an inline script
 * a strict CSP refuses, in the page and in an iframe, and a request to a host other than this
 * machine; a clean page reports nothing. Its reports are collected here instead of failing.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { launchBrowser } from '../helpers/browser.js';
import { guardPage, isLocal } from '../helpers/page-guard.js';

const CSP = "default-src 'self'; script-src 'self'; img-src 'self'";
const PAGES: Record<string, string> = {
  '/clean': '<!doctype html><title>clean</title><script src="/ok.js"></script><p>fine</p>',
  '/ok.js': 'document.title = "ok";',
  '/inline': '<!doctype html><title>inline</title><script>document.title = "ran"</script>',
  '/outer': '<!doctype html><title>outer</title><iframe src="/inline"></iframe>',
  '/remote': '<!doctype html><title>remote</title><img src="http://cdn.example.com/x.png" alt="">',
};
const server = createServer((req, res) => {
  const body = PAGES[req.url ?? ''];
  if (body === undefined) { res.writeHead(404).end(); return; }
  res.writeHead(200, { 'content-type': req.url?.endsWith('.js') ? 'text/javascript' : 'text/html', 'content-security-policy': CSP }).end(body);
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const browser = await launchBrowser();
t.teardown(async () => {
  await browser.close();
  server.close();
});

async function breachesOf(path: string): Promise<string[]> {
  const seen: string[] = [];
  const page = await browser.newPage();
  await guardPage(page, { fail: (msg?: string) => { seen.push(String(msg)); return true; } } as never);
  await page.goto(`${base}${path}`);
  await page.waitForLoadState('load');
  await page.waitForTimeout(300);
  await page.close();
  return seen;
}

t.test('what the guard reports', async (t) => {
  t.same(await breachesOf('/clean'), [], 'a page that keeps its CSP and asks only this machine: nothing');
  const inline = await breachesOf('/inline');
  t.equal(inline.length, 1, inline.join('; '));
  t.match(inline[0], /CSP violation: script-src.* blocked inline on \/inline/);
  const framed = await breachesOf('/outer');
  t.match(framed.join('\n'), /CSP violation: .* on \/inline/, 'in an iframe too');
  const remote = await breachesOf('/remote');
  t.match(remote.join('\n'), /a request to another host: GET http:\/\/cdn\.example\.com\/x\.png/);
  t.match(remote.join('\n'), /CSP violation: img-src/, 'and the CSP refusing it');
});

t.test('loopback is this machine', async (t) => {
  for (const u of ['http://127.0.0.1:8000/x', 'http://localhost/', 'http://[::1]:3000/', 'data:text/plain,x', 'about:blank']) t.ok(isLocal(u), u);
  for (const u of ['http://example.com/', 'https://10.0.0.1/', 'http://127.0.0.1.evil.test/', 'not a url']) t.notOk(isLocal(u), u);
});

/**
 * What every page test asks of a page, whatever else it checks: nothing is refused by its CSP (a
 * `securitypolicyviolation` event in any frame: an inline script or style, a script from
 * elsewhere) and nothing is asked of a host that is not this machine (every script, font, image
 * and chart library is served by Cortado). Each breach fails the test that set the guard.
 *
 *   const page = await browser.newPage();
 *   await guardPage(page, t);            // before the first goto
 */
import type { Test } from 'tap';
import type { BrowserContext, Page } from 'playwright-core';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** Whether the browser may ask for this URL in a test: loopback, or nothing on the network at all. */
export function isLocal(url: string): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  if (u.protocol === 'data:' || u.protocol === 'blob:' || u.protocol === 'about:') return true;
  return LOOPBACK.has(u.hostname);
}

/** The page's breaches so far, and what a test asserts on when it wants them listed. */
export interface Guarded {
  readonly breaches: string[];
}

async function guard(target: Page | BrowserContext, t: Pick<Test, 'fail'>, breaches: string[]): Promise<void> {
  const breach = (what: string): void => {
    breaches.push(what);
    t.fail(what);
  };
  target.on('request', (r) => {
    if (!isLocal(r.url())) breach(`a request to another host: ${r.method()} ${r.url()}`);
  });
  await target.exposeBinding('__cortadoCspViolation', (_source, text: string) => breach(`a CSP violation: ${text}`));
  // an init script is not subject to the page's CSP, and runs in every frame (the dashboard's iframes too)
  await target.addInitScript(`document.addEventListener('securitypolicyviolation', (e) => {
    window.__cortadoCspViolation?.(e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' on ' + location.pathname + ' (' + e.sourceFile + ':' + e.lineNumber + ')');
  });`);
}

/** Guard one page (set before its first `goto`). */
export async function guardPage(page: Page, t: Pick<Test, 'fail'>): Promise<Guarded> {
  const g = { breaches: [] as string[] };
  await guard(page, t, g.breaches);
  return g;
}

/** Guard every page a context opens. */
export async function guardContext(context: BrowserContext, t: Pick<Test, 'fail'>): Promise<Guarded> {
  const g = { breaches: [] as string[] };
  await guard(context, t, g.breaches);
  return g;
}

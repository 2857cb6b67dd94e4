/**
 * Debian's Chromium through playwright-core, kept off the network (environment-recipes §2.9).
 *
 * One Chromium serves the whole run: scripts/test.sh starts it (test/helpers/browser-server.ts)
 * when a browser file is among those it runs and hands its address over in
 * CORTADO_TEST_BROWSER_WS; launchBrowser() then connects to it instead of starting a browser of
 * its own (about 3 s of start and stop per file, issue 26). Each connection has its own contexts,
 * so files running side by side share no cookies or storage, and closing it only disconnects.
 * A file run on its own (tap, no test.sh) starts its own browser as before.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserServer, type Download } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p)) ?? '/usr/bin/chromium';

const LAUNCH = {
  executablePath: CHROMIUM,
  headless: true,
  args: [
    '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync',
    '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1',
  ],
};

function installed(): void {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium is not installed at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`);
}

/** The run's shared Chromium when there is one (CORTADO_TEST_BROWSER_WS), else a browser of this process's own. */
export async function launchBrowser(): Promise<Browser> {
  const shared = process.env.CORTADO_TEST_BROWSER_WS;
  if (shared) return chromium.connect(shared);
  installed();
  return chromium.launch(LAUNCH);
}

/** A Chromium other processes connect to (test/helpers/browser-server.ts). */
export async function launchBrowserServer(): Promise<BrowserServer> {
  installed();
  // its own signal handlers close it (browser-server.ts), not playwright's
  return chromium.launchServer({ ...LAUNCH, handleSIGINT: false, handleSIGTERM: false, handleSIGHUP: false });
}

/** A finished download's bytes (read over the connection: a shared browser's files are not this process's to open). */
export async function downloaded(download: Download): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await download.createReadStream()) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * The run's shared Chromium (scripts/test.sh starts it when a browser file runs): prints the
 * address the test files connect to (test/helpers/browser.ts), then runs until it is told to stop
 * (SIGTERM, SIGINT, SIGHUP) or the script that started it is gone (killed, it could not say so),
 * and closes the browser then.
 *   node .build/test/helpers/browser-server.js   one line: ws://127.0.0.1:…
 */
import { launchBrowserServer } from './browser.js';

const server = await launchBrowserServer();
let closing: Promise<void> | undefined;
const stop = (): void => {
  closing ??= server.close().catch(() => undefined).finally(() => process.exit(0));
};
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, stop);
const parent = process.ppid;
setInterval(() => { if (process.ppid !== parent) stop(); }, 1_000);
process.stdout.write(`${server.wsEndpoint()}\n`);

/**
 * Which HTTP server runs (app.http_server): node:http by default (`node`, and `auto`, its older
 * name), on every Node; uWebSockets.js only when asked for (`uws`) and only where its native build
 * loads (it ships builds up to Node 20), with start-up warnings that it belongs behind a
 * normalising proxy (issue 25); `uws` on a Node it has no build for is a clear CONFIG_INVALID,
 * never a crash. Both answer. The timeouts are checked against each other when the config loads.
 */
import t from 'tap';
import { CortadoError } from '../../protocol/errors.js';
import { createHttpServer, DEFAULT_TIMEOUTS, uwsAvailable } from '../../edge/http/server.js';
import { testConfig } from '../helpers/config.js';

const handler = (_req: unknown, res: { send(s: number, h: Record<string, string>, b: string): void }): void => res.send(200, { 'content-type': 'text/plain' }, 'pong');

t.test('the default is node:http on every Node, and auto is its older name', async (t) => {
  t.equal(testConfig({ natsUrl: 'nats://127.0.0.1:1' }).app.http_server, 'node', 'the shipped default');
  const server = await createHttpServer({ kind: 'auto', maxBodyBytes: 1024, handler: handler as never });
  t.teardown(() => server.close());
  t.equal(server.kind, 'node', `Node ${process.version} (ABI ${process.versions.modules})`);
  t.same(server.warnings, [], 'nothing to warn about');
  const port = await server.listen('127.0.0.1', 0);
  const res = await fetch(`http://127.0.0.1:${port}/ping`);
  t.equal(res.status, 200);
  t.equal(await res.text(), 'pong');
});

t.test('uws where its build loads: uWebSockets.js, with its warnings', { skip: !uwsAvailable() && 'uWebSockets.js has no build for this Node' }, async (t) => {
  // the binaries it ships are named by ABI: Node 20 is 115
  if (process.versions.modules === '115' && process.platform === 'linux' && process.arch === 'x64') t.ok(uwsAvailable());
  const server = await createHttpServer({ kind: 'uws', maxBodyBytes: 1024, handler: handler as never });
  t.teardown(() => server.close());
  t.equal(server.kind, 'uws');
  t.equal(server.warnings.length, 1, 'one warning with the defaults');
  t.match(server.warnings[0], /behind a reverse proxy that normalises HTTP\/1\.1/);
  t.match(server.warnings[0], /app\.http_server: node/, 'and names the way out');
  const port = await server.listen('127.0.0.1', 0);
  t.equal(await (await fetch(`http://127.0.0.1:${port}/`)).text(), 'pong');

  // timeouts uWS cannot honour are named, not silently ignored
  const odd = await createHttpServer({ kind: 'uws', maxBodyBytes: 1024, handler: handler as never, timeouts: { ...DEFAULT_TIMEOUTS, headersMs: 30_000, keepAliveMs: 60_000, requestMs: 60_000 } });
  t.teardown(() => odd.close());
  t.match(odd.warnings[1], /app\.headers_timeout_seconds, app\.keep_alive_timeout_seconds, app\.request_timeout_seconds over 10: not in force on uws/);
});

t.test('timeouts that could never strike are refused when the config loads', async (t) => {
  for (const [app, message] of [
    [{ headers_timeout_seconds: 40, request_timeout_seconds: 30 }, /app\.headers_timeout_seconds: must not exceed app\.request_timeout_seconds/],
    [{ body_idle_timeout_seconds: 40 }, /app\.body_idle_timeout_seconds: must not exceed app\.request_timeout_seconds/],
    [{ keep_alive_timeout_seconds: 0 }, /keep_alive_timeout_seconds/],
  ] as const) {
    const err = (() => { try { testConfig({ natsUrl: 'nats://127.0.0.1:1', extra: { app } }); return undefined; } catch (e) { return e; } })();
    t.ok(err instanceof CortadoError, JSON.stringify(app));
    t.equal((err as CortadoError).code, 'CONFIG_INVALID');
    t.match((err as CortadoError).message, message);
  }
});

t.test('node is the node:http twin on every Node', async (t) => {
  const server = await createHttpServer({ kind: 'node', maxBodyBytes: 1024, handler: handler as never });
  t.teardown(() => server.close());
  t.equal(server.kind, 'node');
  const port = await server.listen('127.0.0.1', 0);
  t.equal(await (await fetch(`http://127.0.0.1:${port}/`)).text(), 'pong');
});

t.test('uws where it has no build is CONFIG_INVALID naming the Node version', { skip: uwsAvailable() && 'uWebSockets.js loads on this Node' }, async (t) => {
  const err = await createHttpServer({ kind: 'uws', maxBodyBytes: 1024, handler: handler as never }).then(() => undefined, (e: unknown) => e);
  t.ok(err instanceof CortadoError);
  t.equal((err as CortadoError).code, 'CONFIG_INVALID');
  t.match((err as CortadoError).message, process.version);
});

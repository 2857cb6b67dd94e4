/**
 * Which HTTP server runs (app.http_server): `auto` is uWebSockets.js where its native build loads
 * for this Node (it ships builds up to Node 20) and the node:http twin elsewhere (Node 22, 24);
 * `uws` on a Node it has no build for is a clear CONFIG_INVALID, never a crash. Both answer.
 */
import t from 'tap';
import { CortadoError } from '../../protocol/errors.js';
import { createHttpServer, uwsAvailable } from '../../edge/http/server.js';

const handler = (_req: unknown, res: { send(s: number, h: Record<string, string>, b: string): void }): void => res.send(200, { 'content-type': 'text/plain' }, 'pong');

t.test('auto picks uWebSockets.js exactly where its native build loads, and serves', async (t) => {
  const server = await createHttpServer({ kind: 'auto', maxBodyBytes: 1024, handler: handler as never });
  t.teardown(() => server.close());
  t.equal(server.kind, uwsAvailable() ? 'uws' : 'node', `Node ${process.version} (ABI ${process.versions.modules})`);
  // the binaries it ships are named by ABI: Node 20 is 115
  if (process.versions.modules === '115' && process.platform === 'linux' && process.arch === 'x64') t.equal(server.kind, 'uws');
  const port = await server.listen('127.0.0.1', 0);
  const res = await fetch(`http://127.0.0.1:${port}/ping`);
  t.equal(res.status, 200);
  t.equal(await res.text(), 'pong');
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

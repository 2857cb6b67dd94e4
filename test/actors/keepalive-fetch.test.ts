/**
 * keepAliveFetch: the fetch the LLM SDKs use. Against a real node:http server on loopback:
 * what it sends, what it answers, aborts, failures, and what it hands to the built-in fetch.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { keepAliveFetch } from '../../actors/llm/providers/keepalive-fetch.js';

interface Seen { method: string; url: string; headers: http.IncomingHttpHeaders; body: string; socket: string }
const seen: Seen[] = [];
const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString(), socket: `${req.socket.remotePort}` });
    if (req.url === '/slow') return void setTimeout(() => res.end('late'), 2_000);
    if (req.url === '/trickle') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first ');
      return void setTimeout(() => res.end('second'), 1_500);
    }
    if (req.url === '/empty') return void res.writeHead(204).end();
    res.writeHead(req.url === '/missing' ? 404 : 200, [['content-type', 'application/json'], ['set-cookie', 'a=1'], ['set-cookie', 'b=2'], ['x-request-id', 'r-1']]);
    res.end(JSON.stringify({ ok: true, path: req.url }));
  });
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
t.teardown(() => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }));

t.test('a JSON POST: method, path, headers and body arrive; the reply reads like a Response', async (t) => {
  const res = await keepAliveFetch(`${base}/v1/messages?beta=true`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'k' }, body: JSON.stringify({ q: 'é' }) });
  t.equal(res.status, 200);
  t.ok(res.ok);
  t.same(await res.json(), { ok: true, path: '/v1/messages?beta=true' });
  t.equal(res.headers.get('x-request-id'), 'r-1');
  t.same(res.headers.getSetCookie(), ['a=1', 'b=2'], 'repeated headers kept apart');
  const last = seen.at(-1)!;
  t.equal(last.method, 'POST');
  t.equal(last.headers['x-api-key'], 'k');
  t.equal(last.headers['content-length'], String(Buffer.byteLength(JSON.stringify({ q: 'é' }))), 'byte length, not characters');
  t.same(JSON.parse(last.body), { q: 'é' });
});

t.test('sockets are kept alive between calls', async (t) => {
  const from = seen.length;
  for (let i = 0; i < 8; i++) await (await keepAliveFetch(`${base}/k${i}`)).text();
  const sockets = new Set(seen.slice(from).map((s) => s.socket));
  // a connection goes back to the pool a moment after its body ends, so back-to-back calls may
  // alternate between two; never one per call
  t.ok(sockets.size <= 2, `8 calls over ${sockets.size} connection(s)`);
});

t.test('the body can be read once, as text, JSON or bytes, or as a stream', async (t) => {
  const a = await keepAliveFetch(`${base}/once`);
  t.same(await a.json(), { ok: true, path: '/once' });
  await t.rejects(a.text(), TypeError, 'not twice');
  const b = await keepAliveFetch(`${base}/bytes`);
  t.equal(Buffer.from(await b.arrayBuffer()).toString(), JSON.stringify({ ok: true, path: '/bytes' }));
  const c = await keepAliveFetch(`${base}/stream`);
  const chunks: Uint8Array[] = [];
  for await (const chunk of c.body!) chunks.push(chunk);
  t.equal(Buffer.concat(chunks).toString(), JSON.stringify({ ok: true, path: '/stream' }));
});

t.test('the answer\'s head reads like Headers: case-insensitive, sorted, joined, immutable', async (t) => {
  const res = await keepAliveFetch(`${base}/head`);
  t.equal(res.headers.get('Content-Type'), 'application/json', 'any case');
  t.equal(res.headers.has('X-REQUEST-ID'), true);
  t.equal(res.headers.get('absent'), null);
  t.equal(res.headers.get('set-cookie'), 'a=1, b=2', 'repeated values joined by get()');
  const entries = [...res.headers.entries()];
  const names = entries.map(([k]) => k);
  t.same(names, [...names].sort(), 'entries in name order');
  t.same(entries.filter(([k]) => k === 'set-cookie').map(([, v]) => v), ['a=1', 'b=2'], 'set-cookie apart in entries');
  const seenByForEach: string[] = [];
  res.headers.forEach((_v, k) => seenByForEach.push(k));
  t.same(seenByForEach, names);
  t.throws(() => res.headers.set('x', 'y'), TypeError, 'an answer\'s head cannot be changed');
  t.equal(res.url, `${base}/head`);
  t.equal(res.statusText, 'OK');
  t.equal(res.bodyUsed, false);
  const copy = res.clone();
  t.same(await res.json(), { ok: true, path: '/head' });
  t.equal(res.bodyUsed, true);
  t.equal(await (await copy.blob()).text(), JSON.stringify({ ok: true, path: '/head' }), 'a clone reads the same bytes');
  t.throws(() => res.clone(), TypeError, 'no clone of a read body');
});

t.test('asking for the body stream reads nothing until somebody reads it', async (t) => {
  const res = await keepAliveFetch(`${base}/lazy`);
  t.ok(res.body, 'a stream is there');
  t.equal(res.bodyUsed, false, 'making it read nothing');
  t.same(await res.json(), { ok: true, path: '/lazy' }, 'so the body can still be read whole');
});

t.test('statuses: an error status is a Response, 204 has no body', async (t) => {
  const missing = await keepAliveFetch(`${base}/missing`);
  t.equal(missing.status, 404);
  t.notOk(missing.ok);
  const empty = await keepAliveFetch(`${base}/empty`, { method: 'DELETE' });
  t.equal(empty.status, 204);
  t.equal(empty.body, null);
});

t.test('abort: before the call, while waiting for the answer, while reading the body', async (t) => {
  const before = new AbortController();
  before.abort();
  await t.rejects(keepAliveFetch(`${base}/x`, { signal: before.signal }), { name: 'AbortError' });

  const waiting = new AbortController();
  const started = Date.now();
  setTimeout(() => waiting.abort(), 100);
  await t.rejects(keepAliveFetch(`${base}/slow`, { signal: waiting.signal }), { name: 'AbortError' });
  t.ok(Date.now() - started < 1_000, 'at once, not when the server answers');

  // the head has come, the body has not: the call (which reads the whole body) is aborted too
  const reading = new AbortController();
  setTimeout(() => reading.abort(), 100);
  const at = Date.now();
  await t.rejects(keepAliveFetch(`${base}/trickle`, { signal: reading.signal }).then((res) => res.text()), { name: 'AbortError' });
  t.ok(Date.now() - at < 1_000, 'at once');
});

t.test('a refused connection is a TypeError with the socket error as its cause, like fetch', async (t) => {
  const closed = http.createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const err = await keepAliveFetch(`http://127.0.0.1:${port}/`).then(() => undefined, (e: unknown) => e);
  t.type(err, TypeError);
  t.match((err as TypeError & { cause: { code: string } }).cause, { code: 'ECONNREFUSED' });
});

t.test('what it does not handle itself goes to the built-in fetch', async (t) => {
  const res = await keepAliveFetch(new Request(`${base}/request-object`, { method: 'PUT', body: 'x' }));
  t.same(await res.json(), { ok: true, path: '/request-object' });
  t.equal(seen.at(-1)!.method, 'PUT');
  const streamed = await keepAliveFetch(`${base}/streamed`, { method: 'POST', body: new Blob(['blob body']) });
  t.equal(streamed.status, 200);
  t.equal(seen.at(-1)!.body, 'blob body');
});

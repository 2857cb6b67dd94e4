/**
 * HTTP/1.1 at the byte level, on both HTTP servers, over raw TCP sockets (issue 25, items 3
 * and 10): request smuggling forms (ambiguous or broken framing, header syntax, chunk syntax)
 * are refused and never let a second, smuggled request through; HEAD answers carry no body;
 * pipelined requests are answered in order; slow or idle clients are cut off by the header,
 * request, body-idle and keep-alive timeouts; a body over the limit gets 413 and the connection
 * is closed instead of being read to its end; WebSocket frames that break RFC 6455 (unmasked
 * client frames first) close the connection with 1002.
 *
 * node:http is the default server and must refuse every form with a 4xx and close. The opt-in
 * uWebSockets.js edge (app.http_server: uws, Node 20 only) must never serve a smuggled request:
 * it refuses what its JavaScript API can see (every chunked body, repeated framing or Host
 * headers) and closes silently on what its C++ parser drops; the gaps that remain are listed in
 * docs/security.md and marked `todo` here.
 */
import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import { startNats } from '../helpers/nats.js';
import { testConfig } from '../helpers/config.js';
import { exchange, type RawExchange, type Step } from '../helpers/raw-http.js';
import { startStack } from '../helpers/stack.js';
import { uwsAvailable } from '../../edge/http/server.js';

const nats = await startNats();
t.teardown(() => nats.stop());

const kinds = uwsAvailable() ? (['node', 'uws'] as const) : (['node'] as const);
type Kind = (typeof kinds)[number];

/** a question: read whole, then 503 once the bus finds no assistant (the answer comes late) */
const BODY = '{"question":"hi"}';
/** a question of the wrong type: 400 as soon as it is read (the answer comes at once) */
const FAST_BODY = '{"question":1}';
const HEAD = 'POST /api/query HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n';
/** the request hidden behind each form: a 404 if any server ever answers it */
const SMUGGLED = 'GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
const chunked = (body: string): string => `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;

/**
 * Each form carries SMUGGLED where some parser would take it as the next request. Built around a
 * body that is answered late and one answered at once: uWS closes a connection on which a request
 * arrives while the one before is unanswered, which hides a smuggled request behind a slow answer
 * but not behind a quick one.
 */
const forms = (BODY: string): Record<string, string> => {
  const L = BODY.length;
  const X = L.toString(16);
  return {
  'two different Content-Lengths': `${HEAD}Content-Length: ${L}\r\nContent-Length: ${L + SMUGGLED.length}\r\n\r\n${BODY}${SMUGGLED}`,
  'two equal Content-Lengths': `${HEAD}Content-Length: ${L}\r\nContent-Length: ${L}\r\n\r\n${BODY}${SMUGGLED}`,
  'a Content-Length list': `${HEAD}Content-Length: ${L}, ${L + SMUGGLED.length}\r\n\r\n${BODY}${SMUGGLED}`,
  'Content-Length then Transfer-Encoding (CL.TE)': `${HEAD}Content-Length: ${chunked(BODY).length}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${SMUGGLED}`,
  'Transfer-Encoding then Content-Length (TE.CL)': `${HEAD}Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n${chunked(BODY)}${SMUGGLED}`,
  'two Transfer-Encoding headers': `${HEAD}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n${chunked(BODY)}${SMUGGLED}`,
  'Transfer-Encoding: chunked, identity': `${HEAD}Transfer-Encoding: chunked, identity\r\n\r\n${chunked(BODY)}${SMUGGLED}`,
  'Transfer-Encoding: identity': `${HEAD}Transfer-Encoding: identity\r\n\r\n${BODY}${SMUGGLED}`,
  'Transfer-Encoding: xchunked': `${HEAD}Transfer-Encoding: xchunked\r\n\r\n${chunked(BODY)}${SMUGGLED}`,
  'Transfer-Encoding: "chunked" (quoted)': `${HEAD}Transfer-Encoding: "chunked"\r\n\r\n${chunked(BODY)}${SMUGGLED}`,
  'a space before the colon': `${HEAD}Transfer-Encoding : chunked\r\n\r\n${chunked(BODY)}${SMUGGLED}`,
  'a tab before the colon': `${HEAD}Content-Length\t: ${L}\r\n\r\n${BODY}${SMUGGLED}`,
  'an obs-fold continuation line': `${HEAD}Transfer-Encoding:\r\n chunked\r\n\r\n${chunked(BODY)}${SMUGGLED}`,
  'a vertical tab in Transfer-Encoding': `${HEAD}Transfer-Encoding:\x0bchunked\r\n\r\n${chunked(BODY)}${SMUGGLED}`,
  'bare LF line ends': `POST /api/query HTTP/1.1\nHost: x\nContent-Type: application/json\nContent-Length: ${L}\n\n${BODY}${SMUGGLED}`,
  'a bare CR inside the headers': `${HEAD}X-A: a\rContent-Length: ${L}\r\n\r\n${BODY}${SMUGGLED}`,
  'a chunk size that overflows 64 bits': `${HEAD}Transfer-Encoding: chunked\r\n\r\nffffffffffffffff${X}\r\n${BODY}\r\n0\r\n\r\n${SMUGGLED}`,
  'a chunk size with 0x': `${HEAD}Transfer-Encoding: chunked\r\n\r\n0x${X}\r\n${BODY}\r\n0\r\n\r\n${SMUGGLED}`,
  'a negative chunk size': `${HEAD}Transfer-Encoding: chunked\r\n\r\n-${X}\r\n${BODY}\r\n0\r\n\r\n${SMUGGLED}`,
  'a space after the chunk size': `${HEAD}Transfer-Encoding: chunked\r\n\r\n${X} \r\n${BODY}\r\n0\r\n\r\n${SMUGGLED}`,
  'chunk data not followed by CRLF': `${HEAD}Transfer-Encoding: chunked\r\n\r\n${X}\r\n${BODY}XX0\r\n\r\n${SMUGGLED}`,
  'a control character in a chunk extension': `${HEAD}Transfer-Encoding: chunked\r\n\r\n${X};\x01\r\n${BODY}\r\n0\r\n\r\n${SMUGGLED}`,
  'a NUL in a header value': `${HEAD}X-A: a\x00b\r\nContent-Length: ${L}\r\n\r\n${BODY}${SMUGGLED}`,
  'a NUL in a header name': `${HEAD}X-\x00A: b\r\nContent-Length: ${L}\r\n\r\n${BODY}${SMUGGLED}`,
  'a space inside a header name': `${HEAD}Content Length: ${L}\r\n\r\n${BODY}${SMUGGLED}`,
  'a header line without a colon': `${HEAD}Content-Length ${L}\r\n\r\n${BODY}${SMUGGLED}`,
  'HTTP/1.0 with Transfer-Encoding': `POST /api/query HTTP/1.0\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${chunked(BODY)}${SMUGGLED}`,
  'Content-Length with a plus sign': `${HEAD}Content-Length: +${L}\r\n\r\n${BODY}${SMUGGLED}`,
  'a negative Content-Length': `${HEAD}Content-Length: -${L}\r\n\r\n${BODY}${SMUGGLED}`,
  'a Content-Length that overflows 64 bits': `${HEAD}Content-Length: ${(2n ** 64n + BigInt(L)).toString()}\r\n\r\n${BODY}${SMUGGLED}`,
  'a hexadecimal Content-Length': `${HEAD}Content-Length: 0x${X}\r\n\r\n${BODY}${SMUGGLED}`,
  'two Host headers': `GET /health HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n${SMUGGLED}`,
  'no Host in HTTP/1.1': `GET /health HTTP/1.1\r\n\r\n${SMUGGLED}`,
  'headers over 16 KB': `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n${SMUGGLED}`,
  'an unknown HTTP version': `GET /health HTTP/1.x\r\nHost: x\r\n\r\n${SMUGGLED}`,
};
};

async function startEdge(t: Test, kind: Kind, app: Record<string, unknown> = {}): Promise<{ port: number; url: string }> {
  const stack = await startStack(testConfig({ natsUrl: nats.url, extra: { app: { http_server: kind, max_body_kb: 4, ...app } } }), { edge: true, actors: [] });
  t.teardown(() => stack.stop());
  t.equal(stack.running.edge?.kind, kind);
  return { port: stack.running.edge?.port ?? 0, url: stack.url };
}

const statuses = (x: RawExchange): number[] => x.responses.map((r) => r.status);

t.test('the default server is node:http; uWebSockets.js only when asked for', async (t) => {
  const stack = await startStack(testConfig({ natsUrl: nats.url }), { edge: true, actors: [] });
  t.teardown(() => stack.stop());
  t.equal(stack.running.edge?.kind, 'node');
});

for (const kind of kinds) {
  t.test(`on ${kind}`, async (t) => {
    const { port, url } = await startEdge(t, kind);

    await t.test('every smuggling form is refused, and the request behind it never answered', async (t) => {
      // all at once: uWS's C++ parser drops some forms without a word, and only its own ~10 s
      // timeout ends those connections
      const untilMs = kind === 'uws' ? 16_000 : 3_000;
      const all = [...Object.entries(forms(BODY)).map(([n, b]) => [`${n}, answered late`, b] as const), ...Object.entries(forms(FAST_BODY)).map(([n, b]) => [`${n}, answered at once`, b] as const)];
      const results = await Promise.all(all.map(async ([name, bytes]) => [name, await exchange(port, [bytes], { untilMs })] as const));
      for (const [name, x] of results) {
        t.ok(x.responses.length <= 1, `${name}: one answer at most (${statuses(x).join(', ') || 'none'})`);
        t.notOk(x.responses.some((r) => r.status === 404), `${name}: the smuggled request is not answered`);
        t.ok(x.responses.every((r) => r.status >= 400 && r.status < 500), `${name}: refused with a 4xx (${statuses(x).join(', ') || 'none'})`);
        t.not(x.closedAfterMs, undefined, `${name}: the connection is closed`);
        if (kind === 'node') t.equal(x.responses.length, 1, `${name}: node:http says why, with a status`);
      }
      t.equal((await fetch(`${url}/health`)).status, 200, 'and the server still answers');
    });

    await t.test('a body on GET is framed as a body, never taken for the next request', async (t) => {
      const withLength = await exchange(port, [`GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: ${SMUGGLED.length}\r\n\r\n${SMUGGLED}`], { untilMs: 1_500, done: (x) => x.responses.length > 0 });
      t.same(statuses(withLength), [200], 'one answer, to the GET');
      const withChunks = await exchange(port, [`GET /health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${chunked(SMUGGLED)}`], { untilMs: 1_500 });
      t.notOk(withChunks.responses.some((r) => r.status === 404), 'a chunked body on GET is not the next request either');
    });

    await t.test('well-formed requests still go through: Content-Length bodies, and keep-alive after them', async (t) => {
      const x = await exchange(port, [`${HEAD}Content-Length: ${BODY.length}\r\n\r\n${BODY}`, { waitMs: 200 }, 'GET /nope HTTP/1.1\r\nHost: x\r\n\r\n'], { untilMs: 2_000, done: (x) => x.responses.length >= 2 });
      t.same(statuses(x), [503, 404], 'the question reaches the (absent) assistant; the next request on the same connection is answered');
      t.equal(x.closedAfterMs, undefined, 'and the connection stays open');
      const c = await exchange(port, [`${HEAD}Transfer-Encoding: chunked\r\n\r\n${chunked(BODY)}`], { untilMs: 2_000, done: (x) => x.responses.length >= 1 });
      if (kind === 'node') t.same(statuses(c), [503], 'node:http takes a chunked body');
      else t.same(statuses(c), [400], 'uWS refuses every chunked body (its chunk parser is lax): 400, send Content-Length');
    });

    await t.test('HEAD answers carry headers only', async (t) => {
      for (const path of ['/health', '/nope', '/']) {
        const get = await exchange(port, [`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`], { untilMs: 2_000, done: (x) => x.responses.length >= 1 });
        const x = await exchange(port, [`HEAD ${path} HTTP/1.1\r\nHost: x\r\n\r\n`, { waitMs: 300 }, 'GET /nope HTTP/1.1\r\nHost: x\r\n\r\n'], { untilMs: 2_000, methods: ['HEAD', 'GET'], done: (x) => x.responses.length >= 2 });
        t.equal(x.responses[0]?.status, get.responses[0]?.status, `HEAD ${path}: the status GET has`);
        t.same(statuses(x).slice(1), [404], `HEAD ${path}: no body bytes before the next answer`);
        t.equal(x.rest.length, 0, `HEAD ${path}: nothing stray after it`);
        t.ok(Number(x.responses[0]?.headers['content-length']) > 0, `HEAD ${path}: the length GET would have`);
      }
    });

    await t.test('pipelined requests are each answered, in order', async (t) => {
      const reqs = [
        'GET /health HTTP/1.1\r\nHost: x\r\n\r\n',
        `${HEAD}Content-Length: ${BODY.length}\r\n\r\n${BODY}`,
        'GET /nope HTTP/1.1\r\nHost: x\r\n\r\n',
        'HEAD /health HTTP/1.1\r\nHost: x\r\n\r\n',
        'GET /health HTTP/1.1\r\nHost: x\r\n\r\n',
      ];
      const methods = ['GET', 'POST', 'GET', 'HEAD', 'GET'];
      const oneWrite = await exchange(port, [reqs.join('')], { untilMs: 3_000, methods, done: (x) => x.responses.length >= 5 });
      const spread = await exchange(port, reqs.flatMap((r) => [r, { waitMs: 2 } as Step]), { untilMs: 3_000, methods, done: (x) => x.responses.length >= 5 });
      for (const [how, x] of [['in one write', oneWrite], ['2 ms apart', spread]] as const) {
        const want = [200, 503, 404, 200, 200];
        if (kind === 'node') {
          t.same(statuses(x), want, `${how}: every answer, in order`);
          t.equal(x.closedAfterMs, undefined, `${how}: the connection stays open`);
        } else {
          // uWS closes a connection on which a request arrives before the previous one is answered
          // (in its C++ core): never a wrong or out-of-order answer, but not every answer either
          t.same(statuses(x), want.slice(0, x.responses.length), `${how}: whatever is answered is answered in order`);
          t.ok(x.responses.length === want.length || x.closedAfterMs !== undefined, `${how}: all answered, or the connection closed (never left hanging)`);
          t.same(statuses(x), want, `${how}: every answer`, { todo: 'uWebSockets.js 20.30 drops the connection on a request pipelined behind an unanswered one (docs/security.md)' });
        }
      }
    });

    await t.test('a body over the limit: 413, Connection: close, and the rest is not read', async (t) => {
      const big = 50 * 1024 * 1024;
      const declared = await exchange(port, [`${HEAD}Content-Length: ${big}\r\n\r\n`, { upload: big }], { untilMs: 5_000 });
      t.same(statuses(declared), [413]);
      t.equal(declared.responses[0]?.headers.connection?.toLowerCase(), 'close', 'the answer says it closes');
      t.ok(declared.closedAfterMs !== undefined && declared.closedAfterMs < 3_000, `and closes (after ${declared.closedAfterMs} ms)`);
      t.ok(declared.bytesWritten < 20 * 1024 * 1024, `the server took ${Math.round(declared.bytesWritten / 1024)} KB of 50 MB`);

      // a route that never reads its body (no such route) does not read 50 MB either
      const unread = await exchange(port, [`POST /nope HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${big}\r\n\r\n`, { upload: big }], { untilMs: 5_000 });
      t.same(statuses(unread), [404]);
      t.ok(unread.closedAfterMs !== undefined && unread.closedAfterMs < 3_000, `an answer before the body is read closes the connection (after ${unread.closedAfterMs} ms)`);
      t.ok(unread.bytesWritten < 20 * 1024 * 1024, `the server took ${Math.round(unread.bytesWritten / 1024)} KB of 50 MB`);

      if (kind === 'node') {
        // chunked, so only counting tells: refused at the limit, closed, not read on
        const chunks = await exchange(port, [`${HEAD}Transfer-Encoding: chunked\r\n\r\n${(big).toString(16)}\r\n`, { upload: big }], { untilMs: 5_000 });
        t.same(statuses(chunks), [413]);
        t.ok(chunks.closedAfterMs !== undefined && chunks.closedAfterMs < 3_000, `a chunked body over the limit closes too (after ${chunks.closedAfterMs} ms)`);
        t.ok(chunks.bytesWritten < 20 * 1024 * 1024, `the server took ${Math.round(chunks.bytesWritten / 1024)} KB of 50 MB`);
      }
      t.equal((await fetch(`${url}/health`)).status, 200, 'and the server still answers');
    });

    await t.test('slow and idle clients are cut off (default timeouts: headers 10 s, body idle 10 s, keep-alive 10 s)', async (t) => {
      const line = (i: number): Step[] => [`X-${i}: a\r\n`, { waitMs: 1_000 }];
      const [slowHeaders, idleBody, keptAlive] = await Promise.all([
        // a slowloris: one header line a second, never the blank line
        exchange(port, ['GET /health HTTP/1.1\r\nHost: x\r\n', { waitMs: 1_000 }, ...Array.from({ length: 20 }, (_, i) => line(i)).flat()], { untilMs: 20_000 }),
        // a body that stops coming
        exchange(port, [`${HEAD}Content-Length: 100\r\n\r\n{"a":`], { untilMs: 20_000 }),
        // one answer, then silence
        exchange(port, ['GET /health HTTP/1.1\r\nHost: x\r\n\r\n'], { untilMs: 20_000 }),
      ]);
      t.ok(slowHeaders.closedAfterMs !== undefined && slowHeaders.closedAfterMs < 16_000, `headers a line a second: closed after ${slowHeaders.closedAfterMs} ms`);
      t.ok(idleBody.closedAfterMs !== undefined && idleBody.closedAfterMs < 16_000, `a body that stalls: closed after ${idleBody.closedAfterMs} ms`);
      t.same(statuses(keptAlive), [200]);
      t.ok(keptAlive.closedAfterMs !== undefined && keptAlive.closedAfterMs < 16_000, `an idle keep-alive connection: closed after ${keptAlive.closedAfterMs} ms`);
      if (kind === 'node') {
        t.same(statuses(slowHeaders), [408], 'node:http says 408');
        t.same(statuses(idleBody), [408], 'node:http says 408');
      }
    });

    await t.test('WebSocket frames that break RFC 6455 close the connection with 1002', async (t) => {
      const key = randomBytes(16).toString('base64');
      const upgrade = `GET /api/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`;
      const frame = (first: number, payload: Buffer, masked: boolean): Buffer => {
        const mask = randomBytes(4);
        const head = Buffer.from([first, (masked ? 0x80 : 0) | payload.length]);
        return masked ? Buffer.concat([head, mask, payload.map((b, i) => b ^ (mask[i % 4] ?? 0))]) : Buffer.concat([head, payload]);
      };
      const closeCode = (x: RawExchange): number | undefined => {
        const at = x.rest.indexOf('\r\n\r\n');
        const frames = at >= 0 ? x.rest.subarray(at + 4) : x.data.subarray(x.data.indexOf('\r\n\r\n') + 4);
        // frames from the server: find the close frame (opcode 8)
        for (let i = 0; i + 1 < frames.length;) {
          const op = (frames[i] ?? 0) & 0x0f;
          const len = (frames[i + 1] ?? 0) & 0x7f;
          if (op === 8) return len >= 2 ? frames.readUInt16BE(i + 2) : 1005;
          i += 2 + len;
        }
        return undefined;
      };
      const violations: Record<string, Buffer> = {
        'an unmasked text frame': frame(0x81, Buffer.from('{"type":"ask"}'), false),
        'an unmasked close frame': frame(0x88, Buffer.from([0x03, 0xe8]), false),
        'RSV1 set with no extension': frame(0xc1, Buffer.from('{}'), true),
        'a reserved opcode': frame(0x83, Buffer.from('{}'), true),
        'a fragmented ping': frame(0x09, Buffer.from('hi'), true),
      };
      for (const [name, bytes] of Object.entries(violations)) {
        const x = await exchange(port, [upgrade, { waitMs: 200 }, bytes], { untilMs: 2_000 });
        t.equal(x.responses[0]?.status, 101, `${name}: the upgrade is taken`);
        const todo = kind === 'uws' ? 'uWebSockets.js 20.30 does this in its C++ core: unmasked frames are taken, other violations cut without a close frame (docs/security.md)' : false;
        t.equal(closeCode(x), 1002, `${name}: close frame 1002`, { todo });
        t.not(x.closedAfterMs, undefined, `${name}: the connection is closed`, { todo: name.startsWith('an unmasked') && todo });
      }
    });
  });
}

t.test('the timeouts are settings', async (t) => {
  for (const kind of kinds) {
    await t.test(`on ${kind}`, async (t) => {
      // on uWS the header and keep-alive timeouts are its own ~10 s (it has no setting for them)
      const { port } = await startEdge(t, kind, { headers_timeout_seconds: 2, request_timeout_seconds: 4, body_idle_timeout_seconds: 2, keep_alive_timeout_seconds: 2 });
      const [slowHeaders, idleBody, trickle, keptAlive] = await Promise.all([
        exchange(port, ['GET /health HTTP/1.1\r\nHost: x\r\n', ...Array.from({ length: 20 }, (_, i) => [`X-${i}: a\r\n`, { waitMs: 500 }] as Step[]).flat()], { untilMs: 12_000 }),
        exchange(port, [`${HEAD}Content-Length: 100\r\n\r\n{"a":`], { untilMs: 12_000 }),
        // a byte every half second never lets the body go idle: the request timeout ends it
        exchange(port, [`${HEAD}Content-Length: 100\r\n\r\n`, ...Array.from({ length: 24 }, () => [' ', { waitMs: 500 }] as Step[]).flat()], { untilMs: 12_000 }),
        exchange(port, ['GET /health HTTP/1.1\r\nHost: x\r\n\r\n'], { untilMs: 12_000 }),
      ]);
      const within = (x: RawExchange, lo: number, hi: number, what: string): void => {
        t.ok(x.closedAfterMs !== undefined && x.closedAfterMs >= lo && x.closedAfterMs <= hi, `${what}: closed after ${x.closedAfterMs} ms (${lo}–${hi})`);
      };
      within(idleBody, 1_500, 4_000, 'body idle 2 s');
      within(trickle, 3_500, 6_500, 'request 4 s');
      t.same(statuses(idleBody), [408]);
      t.same(statuses(trickle), [408]);
      if (kind === 'node') {
        within(slowHeaders, 1_500, 4_000, 'headers 2 s');
        within(keptAlive, 1_500, 4_000, 'keep-alive 2 s');
        t.same(statuses(slowHeaders), [408]);
      }
    });
  }
});

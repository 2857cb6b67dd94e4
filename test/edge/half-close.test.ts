/**
 * Half-closed connections, on both HTTP servers, over raw TCP sockets (issue 31, item 5). A
 * client may send its request and then end its side of the connection (a FIN: `shutdown(SHUT_WR)`,
 * `socket.end()`, `curl` with a file on some platforms, proxies that close early) while it waits
 * for the answer. Every such request gets an answer, or the connection is closed, promptly and
 * always the same way:
 *
 * - a whole body, then a FIN: answered (node:http), however long the body; uWebSockets.js closes
 *   a half-closed connection at once in its C++ core (no answer, no wait);
 * - a body shorter than its Content-Length, then a FIN: 400 MALFORMED_REQUEST at once (node:http),
 *   closed at once (uWS), never the body timeout;
 * - a body shorter than its Content-Length and the connection kept open: 408 REQUEST_TIMEOUT at
 *   app.body_idle_timeout_seconds, then closed.
 *
 * No actor runs: a question that reaches the bus is answered 503 ACTOR_UNAVAILABLE, which is an
 * answer like any other here.
 */
import t, { type Test } from 'tap';
import { startNats } from '../helpers/nats.js';
import { testConfig } from '../helpers/config.js';
import { exchange, type RawExchange } from '../helpers/raw-http.js';
import { startStack } from '../helpers/stack.js';
import { uwsAvailable } from '../../edge/http/server.js';

const nats = await startNats();
t.teardown(() => nats.stop());

const kinds = uwsAvailable() ? (['node', 'uws'] as const) : (['node'] as const);
type Kind = (typeof kinds)[number];

/** the body timeout of these edges: a stalled body is answered 408 after it */
const BODY_IDLE_S = 2;

const question = (bytes: number): string => {
  const head = '{"question":"';
  return `${head}${'a'.repeat(bytes - head.length - 2)}"}`;
};
const post = (contentLength: number): string => `POST /api/query HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${contentLength}\r\n\r\n`;

async function startEdge(t: Test, kind: Kind): Promise<number> {
  const stack = await startStack(testConfig({ natsUrl: nats.url, extra: { app: { http_server: kind, max_body_kb: 64, body_idle_timeout_seconds: BODY_IDLE_S } } }), { edge: true, actors: [] });
  t.teardown(() => stack.stop());
  t.equal(stack.running.edge?.kind, kind);
  return stack.running.edge?.port ?? 0;
}

const statuses = (x: RawExchange): number[] => x.responses.map((r) => r.status);
const code = (x: RawExchange): string | undefined => (JSON.parse(x.responses[0]?.body.toString() || '{}') as { error?: { code?: string } }).error?.code;

for (const kind of kinds) {
  t.test(`on ${kind}`, async (t) => {
    const port = await startEdge(t, kind);

    await t.test('a whole body, then a FIN', async (t) => {
      for (const bytes of [200, 1_499, 1_500, 4_000]) {
        const body = question(bytes);
        const x = await exchange(port, [post(body.length) + body, { halfClose: true }], { untilMs: 8_000 });
        t.comment(`${kind}, ${bytes} bytes then FIN: ${statuses(x).join(', ') || 'no answer'}, closed after ${x.closedAfterMs ?? 'never'} ms`);
        if (kind === 'node') {
          t.same(statuses(x), [503], `${bytes} bytes: answered (the question reaches the absent assistant: 503)`);
          t.equal(code(x), 'ACTOR_UNAVAILABLE', `${bytes} bytes: the answer is the route's`);
        } else {
          t.ok(x.responses.length <= 1, `${bytes} bytes: one answer at most`);
          if (x.responses.length === 0) t.ok((x.closedAfterMs ?? Infinity) < 2_000, `${bytes} bytes: no answer, and the connection closed at once (${x.closedAfterMs} ms)`);
        }
        t.not(x.closedAfterMs, undefined, `${bytes} bytes: the server closes the connection once done`);
      }
    });

    await t.test('a body shorter than its Content-Length, then a FIN', async (t) => {
      for (const [declared, sent] of [[100, 10], [2_000, 1_000], [20_000, 1_500]] as const) {
        const started = Date.now();
        const x = await exchange(port, [post(declared) + question(Math.max(20, sent)).slice(0, sent), { halfClose: true }], { untilMs: 8_000 });
        const ms = Date.now() - started;
        t.comment(`${kind}, ${sent} of ${declared} bytes then FIN: ${statuses(x).join(', ') || 'no answer'} ${code(x) ?? ''}, closed after ${x.closedAfterMs ?? 'never'} ms`);
        t.ok(ms < 2_000, `${sent} of ${declared}: settled at once (${ms} ms), not at the body timeout`);
        t.not(x.closedAfterMs, undefined, `${sent} of ${declared}: the connection is closed`);
        if (kind === 'node') {
          t.same(statuses(x), [400], `${sent} of ${declared}: 400`);
          t.equal(code(x), 'MALFORMED_REQUEST', `${sent} of ${declared}: MALFORMED_REQUEST`);
          t.match(x.responses[0]?.body.toString() ?? '', /closed its side of the connection before the whole request came/, `${sent} of ${declared}: saying why`);
        } else {
          t.ok(x.responses.every((r) => r.status === 400), `${sent} of ${declared}: a 400 or nothing (${statuses(x).join(', ') || 'nothing'})`);
        }
      }
    });

    await t.test('a body shorter than its Content-Length, the connection kept open', async (t) => {
      const started = Date.now();
      const x = await exchange(port, [post(2_000) + question(1_000).slice(0, 1_000)], { untilMs: 20_000 });
      const ms = Date.now() - started;
      t.comment(`${kind}, 1000 of 2000 bytes, no FIN: ${statuses(x).join(', ') || 'no answer'} ${code(x) ?? ''} after ${ms} ms`);
      t.same(statuses(x), [408], '408');
      t.equal(code(x), 'REQUEST_TIMEOUT', 'REQUEST_TIMEOUT');
      t.ok(ms >= BODY_IDLE_S * 1000 - 200 && ms < BODY_IDLE_S * 1000 + 2_500, `at app.body_idle_timeout_seconds (${BODY_IDLE_S} s): ${ms} ms`);
      t.not(x.closedAfterMs, undefined, 'and the connection is closed');
    });
  });
}

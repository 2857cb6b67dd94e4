/**
 * The scripted model for the benchmark, as its own process: Anthropic's Messages API answering
 * every call at once with the same SQL. Unlike the tests' recording fake
 * (test/helpers/fake-llm.ts) it keeps nothing and parses nothing: it reads the whole request,
 * checks it is a Messages call, and writes a reply made once at start. It serves through the
 * edge's own HTTP adapter (uWebSockets.js where it loads), the cheapest server this machine
 * has: a hosted model spends none of our CPU, so the stand-in should spend as little as it can
 * of the two cores the benchmark shares.
 *   node --import tsx bench/fake-llm.ts <sql>
 * BENCH_MODEL_DELAY_MS: answer each call after this long (a real model's latency; default 0).
 * Prints {"url": ...} when it listens.
 */
import { createHttpServer, uwsAvailable } from '../edge/http/server.js';
import { sqlAnswer } from '../test/helpers/fake-llm.js';

const sql = process.argv[2] ?? 'SELECT 1';
const text = sqlAnswer(sql, 'Twenty items by id.');
const reply = Buffer.from(JSON.stringify({
  id: 'msg_bench',
  type: 'message',
  role: 'assistant',
  model: 'bench',
  content: [{ type: 'text', text }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 600, output_tokens: 30, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
}));
const headers = { 'content-type': 'application/json', 'request-id': 'req_bench' };
const delayMs = Math.max(0, Number(process.env.BENCH_MODEL_DELAY_MS ?? 0) || 0);
const notFound = Buffer.from('{"type":"error","error":{"type":"not_found_error","message":"not found"}}');

const server = await createHttpServer({
  // the scripted model is not Cortado: it stays on uWS where that loads (its cost as in the
  // earlier figures); BENCH_MODEL_SERVER=node puts it on node:http
  kind: (process.env.BENCH_MODEL_SERVER as 'uws' | 'node' | undefined) ?? (uwsAvailable() ? 'uws' : 'node'),
  maxBodyBytes: 4 * 1024 * 1024,
  handler: (req, res) => {
    void req.body().then(
      () => {
        if (req.method === 'POST' && req.path.startsWith('/v1/messages')) {
          if (delayMs > 0) setTimeout(() => res.send(200, headers, reply), delayMs);
          else res.send(200, headers, reply);
        } else res.send(404, { 'content-type': 'application/json' }, notFound);
      },
      () => res.send(413, { 'content-type': 'application/json' }, notFound),
    );
  },
});
const port = await server.listen('127.0.0.1', 0);
process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}`, kind: server.kind })}\n`);
process.on('SIGTERM', () => {
  void server.close().then(() => process.exit(0));
});

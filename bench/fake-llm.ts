/**
 * The scripted model for the benchmark, as its own process: Anthropic's Messages API answering
 * every call at once with the same SQL. Unlike the tests' recording fake
 * (test/helpers/fake-llm.ts) it keeps nothing and parses nothing: it reads the whole request,
 * checks it is a Messages call, and writes a reply made once at start — so what the benchmark
 * measures is Cortado and its model client, not the fake's own work.
 *   node --import tsx bench/fake-llm.ts <sql>
 * Prints {"url": ...} when it listens.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
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
const headers = { 'content-type': 'application/json', 'content-length': String(reply.length), 'request-id': 'req_bench' };
const notFound = Buffer.from('{"type":"error","error":{"type":"not_found_error","message":"not found"}}');

const server = http.createServer((req, res) => {
  req.resume();
  req.once('end', () => {
    if (req.method === 'POST' && req.url?.startsWith('/v1/messages')) res.writeHead(200, headers).end(reply);
    else res.writeHead(404, { 'content-type': 'application/json', 'content-length': String(notFound.length) }).end(notFound);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);
});
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});

/**
 * The composed floor: HTTP (the same edge server adapter) → one NATS request/reply to the
 * executor → the same query on the same pool → reply. Run as its own process by bench/run.ts.
 * With a model URL, the with-model floor: before the query, one model call through the same
 * SDK and HTTP client the llm actor uses (@anthropic-ai/sdk over keepalive-fetch) to the same
 * scripted model; its answer is read and dropped (the SQL is the same).
 *   node --import tsx bench/floor.ts <nats url> <port> <sql> [<model url>]
 */
import Anthropic from '@anthropic-ai/sdk';
import { createKeepAliveFetch } from '../actors/llm/providers/keepalive-fetch.js';
import { Bus } from '../runtime/bus.js';
import { createLogger } from '../runtime/log.js';
import { SqlExecute } from '../protocol/subjects.js';
import { createHttpServer } from '../edge/http/server.js';

const [natsUrl = 'nats://127.0.0.1:4222', port = '0', sql = 'SELECT 1', modelUrl] = process.argv.slice(2);
const model = modelUrl ? new Anthropic({ apiKey: 'bench', baseURL: modelUrl, maxRetries: 0, timeout: 60_000, fetch: createKeepAliveFetch() }) : undefined;
const log = createLogger({ svc: 'floor', level: 'silent' });
const bus = await Bus.connect({ url: natsUrl, prefix: 'cortado', name: 'bench-floor', log });
let n = 0;
const server = await createHttpServer({
  // the pipeline's own server (bench/run.ts sets it): node:http unless the uws edge is measured
  kind: process.env.BENCH_FLOOR_SERVER === 'uws' ? 'uws' : 'node',
  maxBodyBytes: 65536,
  handler: (req, res) => {
    void req.body().then(async () => {
      try {
        if (model) {
          const msg = await model.messages.create({ model: 'bench', max_tokens: 1024, system: [{ type: 'text', text: 'bench', cache_control: { type: 'ephemeral' } }], messages: [{ role: 'user', content: 'the twenty items from 500?' }] });
          if (msg.content.length === 0) throw new Error('the model answered nothing');
        }
        const reply = await bus.request(SqlExecute, { sql }, { requestId: `floor-${++n}` });
        res.send(200, { 'content-type': 'application/json' }, JSON.stringify(reply));
      } catch (err) {
        res.send(503, { 'content-type': 'application/json' }, JSON.stringify({ error: String(err) }));
      }
    });
  },
});
const bound = await server.listen('127.0.0.1', Number(port));
process.stdout.write(`${JSON.stringify({ port: bound, kind: server.kind })}\n`);
process.on('SIGTERM', () => { void server.close().then(() => bus.close()).then(() => process.exit(0)); });

/**
 * The composed floor: HTTP (the same edge server adapter) → one NATS request/reply to the
 * executor → the same query on the same pool → reply. Run as its own process by bench/run.ts.
 *   node --import tsx bench/floor.ts <nats url> <port> <sql>
 */
import { Bus } from '../protocol/bus.js';
import { createLogger } from '../protocol/log.js';
import { SqlExecute } from '../protocol/subjects.js';
import { createHttpServer } from '../edge/http/server.js';

const [natsUrl = 'nats://127.0.0.1:4222', port = '0', sql = 'SELECT 1'] = process.argv.slice(2);
const log = createLogger({ svc: 'floor', level: 'silent' });
const bus = await Bus.connect({ url: natsUrl, prefix: 'cortado', name: 'bench-floor', log });
let n = 0;
const server = await createHttpServer({
  kind: 'auto',
  maxBodyBytes: 65536,
  handler: (req, res) => {
    void req.body().then(async () => {
      try {
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

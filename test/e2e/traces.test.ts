/**
 * One question is one trace (runtime/tracing.ts), across two processes: the edge and the
 * assistant in this one, the llm and executor actors in a `cortado --role actors:llm,executor`
 * child. Both export over OTLP/HTTP to a receiver in this test (a node:http server reading the
 * JSON the exporter sends), and the spans are checked the way a trace viewer draws them: one
 * trace id (the caller's), each span's parent present, the edge's under the caller's span.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import YAML from 'yaml';
import { ROOT } from '../../config/load.js';
import { ALL_ACTORS } from '../../protocol/subjects.js';
import { flushTracing } from '../../runtime/tracing.js';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { testConfig, testConfigObject } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { endWithProcess } from '../helpers/leftovers.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';

// ---- an OTLP/HTTP receiver ----------------------------------------------------------------------

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  status: { code?: number };
  /** the exporting process (resource service.instance.id) */
  process: string;
}

type KeyValue = { key: string; value: Record<string, unknown> };
const attrs = (list: KeyValue[] | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, Object.values(kv.value)[0]]));

const spans: Span[] = [];
const exports: string[] = [];
const receiver = http.createServer((req, res) => {
  const parts: Buffer[] = [];
  req.on('data', (c: Buffer) => parts.push(c));
  req.on('end', () => {
    exports.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
    try {
      const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as {
        resourceSpans: Array<{ resource: { attributes: KeyValue[] }; scopeSpans: Array<{ spans: Array<Omit<Span, 'attributes' | 'process'> & { attributes: KeyValue[] }> }> }>;
      };
      for (const rs of body.resourceSpans) {
        const process = String(attrs(rs.resource.attributes)['service.instance.id']);
        for (const ss of rs.scopeSpans) for (const s of ss.spans) spans.push({ ...s, parentSpanId: s.parentSpanId ?? '', attributes: attrs(s.attributes), process });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    } catch {
      res.writeHead(400).end();
    }
  });
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
const otlp = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

// ---- two processes ------------------------------------------------------------------------------

const nats = await startNats();
const db = await createTestDb('traces');
await db.pool.query(GUARD_SCHEMA_SQL);
const fake = await startFakeLlm();
const dbRef = { host: db.host, port: db.port, name: db.name, user: db.user };
const dir = mkdtempSync(path.join(tmpdir(), 'cortado-traces-'));
const tracing = { otlp_endpoint: otlp, sample_ratio: 1 };

const file = path.join(dir, 'actors.yaml');
writeFileSync(file, YAML.stringify(testConfigObject({ natsUrl: nats.url, db: dbRef, llmUrl: fake.url, extra: { tracing } })));
const child = endWithProcess(spawn(process.execPath, [path.join(ROOT, 'bin/cortado.js'), '--config', file, '--role', 'actors:llm,executor'], {
  cwd: ROOT, env: { ...process.env, CORTADO_LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'],
}));
let out = '';
child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
child.stderr.on('data', (d: Buffer) => { out += d.toString(); });
const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));

const stack = await startStack(
  testConfig({ natsUrl: nats.url, db: dbRef, llmUrl: fake.url, extra: { tracing } }),
  { edge: true, actors: ALL_ACTORS.filter((a) => a !== 'llm' && a !== 'executor') },
);
t.teardown(async () => {
  if (child.exitCode === null) child.kill('SIGKILL');
  await stack.stop();
  await fake.close();
  await db.drop();
  await nats.stop();
  receiver.close();
  rmSync(dir, { recursive: true, force: true });
});
const end = Date.now() + 60_000;
while (!(/llm ready/.test(out) && /executor ready/.test(out)) && Date.now() < end && child.exitCode === null) await new Promise((r) => setTimeout(r, 100));

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const CALLER_SPAN = 'b7ad6b7169203331';
const UNSAMPLED = '5b8efff798038103d269b633813fc60c';

t.test('one question, one trace, across the edge, the assistant, the model and the database', async (t) => {
  t.match(out, /executor ready/, 'the actor process started');
  fake.script({ text: sqlAnswer('SELECT count(*) AS n FROM orders'), usage: { input_tokens: 200, output_tokens: 20 } });
  const res = await call(`${stack.url}/api/query`, { body: { question: 'how many orders?' }, headers: { traceparent: `00-${TRACE}-${CALLER_SPAN}-01` } });
  t.equal(res.status, 200, res.text);
  const echoed = res.headers.get('traceparent') ?? '';
  t.match(echoed, new RegExp(`^00-${TRACE}-[0-9a-f]{16}-01$`), 'the reply names the edge\'s span in the caller\'s trace');
  t.not(echoed.split('-')[2], CALLER_SPAN);

  // and one the caller chose not to sample: nothing is recorded for it
  fake.script({ text: sqlAnswer('SELECT count(*) AS n FROM orders') });
  const quiet = await call(`${stack.url}/api/query`, { body: { question: 'how many orders?' }, headers: { traceparent: `00-${UNSAMPLED}-${CALLER_SPAN}-00` } });
  t.equal(quiet.status, 200);
  t.match(quiet.headers.get('traceparent') ?? '', new RegExp(`^00-${UNSAMPLED}-[0-9a-f]{16}-00$`));

  // both processes export what they hold: this one on demand, the child as it stops; the event
  // readers take what is pending every 100 ms, so the executed event's reader may come a moment
  // after the answer: export again until its span is in
  await flushTracing();
  for (let i = 0; i < 50 && !spans.some((s) => s.traceId === TRACE && s.name === 'evt.query.executed'); i++) {
    await new Promise((r) => setTimeout(r, 100));
    await flushTracing();
  }
  child.kill('SIGTERM');
  t.equal(await exited, 0, 'the actor process stopped cleanly');

  t.ok(exports.every((e) => /^POST \/v1\/traces application\/json/.test(e)), `OTLP/HTTP JSON to /v1/traces: ${exports[0]}`);
  t.equal(spans.filter((s) => s.traceId === UNSAMPLED).length, 0, 'an unsampled trace records nothing');
  const trace = spans.filter((s) => s.traceId === TRACE);
  const byId = new Map(trace.map((s) => [s.spanId, s]));
  const one = (name: string | RegExp): Span => {
    const found = trace.filter((s) => (typeof name === 'string' ? s.name === name : name.test(s.name)));
    t.ok(found.length >= 1, `a span ${name}: ${trace.map((s) => s.name).join(', ')}`);
    return found[0]!;
  };
  const edge = one('POST /api/query');
  const ask = one('ask');
  const llm = one('llm.complete');
  const model = one('llm anthropic');
  const execute = one('sql.execute');
  const query = one('db postgresql');
  one('schema.context');
  one('sql.generate');
  one('insights.generate');
  one('evt.query.executed');

  t.equal(edge.parentSpanId, CALLER_SPAN, 'the edge\'s span is under the caller\'s');
  t.equal(edge.kind, 2, 'server');
  t.equal(edge.attributes['http.route'], '/api/query');
  t.equal(edge.attributes['http.response.status_code'], 200);
  t.equal(echoed.split('-')[2], edge.spanId, 'the echoed traceparent is the edge\'s span');
  t.equal(ask.parentSpanId, edge.spanId, 'the assistant under the edge');
  t.equal(model.parentSpanId, llm.spanId, 'the model call under llm.complete');
  t.equal(query.parentSpanId, execute.spanId, 'the query under sql.execute');
  t.equal(model.attributes['gen_ai.usage.input_tokens'], 200);
  t.equal(model.attributes['gen_ai.request.model'], 'claude-test');
  t.equal(query.attributes['db.system.name'], 'postgresql');
  t.equal(query.attributes['db.response.returned_rows'], 1);

  // every span's parent is in the trace (the edge's: the caller's), and leads up to the edge
  for (const s of trace) {
    if (s === edge) continue;
    t.ok(byId.has(s.parentSpanId), `${s.name}'s parent is in the trace`);
    let up: Span | undefined = s;
    for (let i = 0; up && up !== edge && i < 20; i++) up = byId.get(up.parentSpanId);
    t.equal(up, edge, `${s.name} leads up to the edge's span`);
  }
  const here = new Set([edge.process, ask.process]);
  const there = new Set([llm.process, model.process, execute.process, query.process]);
  t.equal(here.size, 1);
  t.equal(there.size, 1);
  t.not([...here][0], [...there][0], 'the model and database spans come from the other process');
  t.notOk(trace.some((s) => JSON.stringify(s.attributes).includes('orders')), 'no SQL text or question in a span');
});

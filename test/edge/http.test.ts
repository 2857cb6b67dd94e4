/**
 * The edge alone (no actors), on both HTTP servers: request hygiene, error shapes,
 * request ids, CORS, 503 when no actor answers.
 */
import t from 'tap';
import { startNats } from '../helpers/nats.js';
import { testConfig } from '../helpers/config.js';
import { call, startStack } from '../helpers/stack.js';
import { uwsAvailable } from '../../edge/http/server.js';

t.test('edge', async (t) => {
  const nats = await startNats();
  t.teardown(() => nats.stop());
  const kinds = uwsAvailable() ? (['uws', 'node'] as const) : (['node'] as const);
  t.ok(uwsAvailable(), 'uWebSockets.js loads natively on this Node');

  for (const kind of kinds) {
    await t.test(`on ${kind}`, async (t) => {
      const config = testConfig({
        natsUrl: nats.url,
        extra: { app: { http_server: kind, max_body_kb: 4 }, cors: { allow_origins: ['https://app.example'], allow_credentials: true } },
      });
      const stack = await startStack(config, { edge: true, actors: [] });
      t.teardown(() => stack.stop());
      t.equal(stack.running.edge?.kind, kind);
      const q = `${stack.url}/api/query`;

      await t.test('wrong content type → 415', async (t) => {
        const r = await call(q, { raw: 'question=hi', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
        t.equal(r.status, 415);
        t.equal(r.body.error.code, 'UNSUPPORTED_MEDIA_TYPE');
        t.equal(r.body.error.request_id, r.headers.get('x-request-id'));
      });

      await t.test('malformed JSON → 400 MALFORMED_BODY', async (t) => {
        const r = await call(q, { raw: '{"question": ', headers: { 'content-type': 'application/json' } });
        t.equal(r.status, 400);
        t.equal(r.body.error.code, 'MALFORMED_BODY');
      });

      await t.test('schema errors → 400 VALIDATION_FAILED with the path', async (t) => {
        for (const body of [{}, { question: '' }, { question: 42 }, { question: 'x', tables: 'orders' }, { question: 'x', conversation_id: 'has spaces' }]) {
          const r = await call(q, { body });
          t.equal(r.status, 400, JSON.stringify(body));
          t.equal(r.body.error.code, 'VALIDATION_FAILED');
          t.type(r.body.error.message, 'string');
        }
      });

      await t.test('a body over the limit → 413', async (t) => {
        const r = await call(q, { body: { question: 'x'.repeat(6_000) } });
        t.equal(r.status, 413);
        t.equal(r.body.error.code, 'PAYLOAD_TOO_LARGE');
      });

      await t.test('no actor running → 503 ACTOR_UNAVAILABLE', async (t) => {
        const r = await call(q, { body: { question: 'which store sold the most?' } });
        t.equal(r.status, 503);
        t.equal(r.body.error.code, 'ACTOR_UNAVAILABLE');
        t.match(r.body.error.message, /assistant/);
        const tables = await call(`${stack.url}/api/tables`);
        t.equal(tables.status, 503);
      });

      await t.test('health answers even with nothing behind it, without paying for a model call', async (t) => {
        const r = await call(`${stack.url}/health`);
        t.equal(r.status, 200);
        t.equal(r.body.status, 'degraded');
        t.type(r.body.version, 'string');
        t.equal(r.body.database, 'unavailable');
        t.equal(r.body.llm, 'unavailable');
      });

      await t.test('unknown route → 404, wrong method → 405 with Allow', async (t) => {
        const a = await call(`${stack.url}/nope`);
        t.equal(a.status, 404);
        t.equal(a.body.error.code, 'NOT_FOUND');
        const b = await call(q);
        t.equal(b.status, 405);
        t.equal(b.headers.get('allow'), 'POST');
      });

      await t.test('request ids: taken from the client when sane, made otherwise', async (t) => {
        const a = await call(`${stack.url}/nope`, { headers: { 'x-request-id': 'client-123' } });
        t.equal(a.headers.get('x-request-id'), 'client-123');
        t.equal(a.body.error.request_id, 'client-123');
        const b = await call(`${stack.url}/nope`, { headers: { 'x-request-id': 'bad id with spaces' } });
        t.match(b.headers.get('x-request-id'), /^[0-9a-f-]{36}$/);
      });

      await t.test('CORS: preflight for an allowed origin, nothing for others', async (t) => {
        const pre = await fetch(q, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' } });
        t.equal(pre.status, 204);
        t.equal(pre.headers.get('access-control-allow-origin'), 'https://app.example');
        t.equal(pre.headers.get('access-control-allow-credentials'), 'true');
        const other = await fetch(q, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
        t.equal(other.headers.get('access-control-allow-origin'), null);
      });

      await t.test('the first page and its static files are served', async (t) => {
        const page = await fetch(`${stack.url}/`);
        t.equal(page.status, 200);
        t.match(page.headers.get('content-type'), /text\/html/);
        t.match(await page.text(), /Cortado test/);
        const js = await fetch(`${stack.url}/static/app.js`);
        t.equal(js.status, 200);
        t.match(js.headers.get('content-type'), /javascript/);
        const escape = await fetch(`${stack.url}/static/..%2f..%2fpackage.json`);
        t.equal(escape.status, 404);
      });
    });
  }

  await t.test('a wildcard origin never goes out with credentials', async (t) => {
    const config = testConfig({ natsUrl: nats.url, extra: { cors: { allow_origins: ['*'], allow_credentials: true } } });
    const stack = await startStack(config, { edge: true, actors: [] });
    t.teardown(() => stack.stop());
    const pre = await fetch(`${stack.url}/api/query`, { method: 'OPTIONS', headers: { origin: 'https://x.example', 'access-control-request-method': 'POST' } });
    t.equal(pre.headers.get('access-control-allow-origin'), '*');
    t.equal(pre.headers.get('access-control-allow-credentials'), null);
  });
});

/**
 * The edge alone (no actors), on both HTTP servers: request hygiene, error shapes,
 * request ids, CORS, 503 when no actor answers; JSON nested too deep and control characters in
 * bodies, path and query parameters refused with 400 before anything reaches the bus; URLs
 * redacted for the log the way the query is parsed.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { startNats } from '../helpers/nats.js';
import { testConfig } from '../helpers/config.js';
import { call, startStack } from '../helpers/stack.js';
import { uwsAvailable } from '../../edge/http/server.js';
import { jsonDepth, MAX_JSON_DEPTH } from '../../edge/http/json.js';
import { redactUrl } from '../../runtime/log.js';

const STATIC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../edge/web/static');

t.test('edge', async (t) => {
  const nats = await startNats();
  t.teardown(() => nats.stop());
  const kinds = uwsAvailable() ? (['uws', 'node'] as const) : (['node'] as const);
  // uWebSockets.js ships native builds up to Node 20 (ABI 115): on Node 22 and 24 only the node:http twin runs (test/edge/server-choice.test.ts)
  if (process.versions.modules === '115') t.ok(uwsAvailable(), 'uWebSockets.js loads natively on Node 20');

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

      await t.test(`JSON nested more than ${MAX_JSON_DEPTH} deep → 400 while reading, cheaply`, async (t) => {
        const json = { 'content-type': 'application/json' };
        const over = await call(q, { raw: `{"question":"x","tables":${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}}`, headers: json });
        t.equal(over.status, 400);
        t.equal(over.body.error.code, 'VALIDATION_FAILED');
        t.match(over.body.error.message, /more than 64 levels deep/);
        const at = await call(q, { raw: `{"question":"x","tables":${'['.repeat(MAX_JSON_DEPTH - 1)}${']'.repeat(MAX_JSON_DEPTH - 1)}}`, headers: json });
        t.equal(at.status, 400, 'exactly the limit reaches the schema check');
        t.match(at.body.error.message, /^\/tables/, 'which names the field');
        const started = performance.now();
        const flat = await call(q, { raw: '['.repeat(4_000), headers: json });
        t.equal(flat.status, 400);
        t.ok(performance.now() - started < 2_000, 'no parse of a bracket wall');
        const brackets = await call(q, { raw: `{"question":"${'[{'.repeat(100)}"}`, headers: json });
        t.equal(brackets.status, 503, 'brackets inside a string are text, not nesting');
      });

      await t.test('control characters → 400 naming the field; tabs and newlines are text in a question', async (t) => {
        const cases: Array<[unknown, RegExp]> = [
          [{ question: 'a\u0000b' }, /^\/question: control characters other than tab and line breaks/],
          [{ question: 'bell \u0007' }, /^\/question/],
          [{ question: 'x', tables: ['or\tders'] }, /^\/tables\/0: control characters are not allowed here \(found U\+0009/],
          [{ question: 'x', conversation_id: 'c\u0000' }, /^\/conversation_id/],
          [{ question: 'x', 'a\u0000': 1 }, /the field name/],
          [{ question: 'lone \udc00' }, /not valid Unicode/],
        ];
        for (const [body, message] of cases) {
          const r = await call(q, { body });
          t.equal(r.status, 400, JSON.stringify(body));
          t.equal(r.body.error.code, 'VALIDATION_FAILED');
          t.match(r.body.error.message, message);
          t.ok(r.body.error.details.errors[0].path.startsWith('/'));
        }
        const text = await call(q, { body: { question: 'which store\tsold\r\nthe most? 💥 \u202e' } });
        t.equal(text.status, 503, 'a question with tabs, line breaks, emoji and RTL passes the edge (no actor behind it)');
      });

      await t.test('path and query parameters with control characters → 400 naming them', async (t) => {
        const path = await call(`${stack.url}/api/tables/or%00ders`);
        t.equal(path.status, 400);
        t.match(path.body.error.message, /^path parameter name: control characters/);
        t.equal((await call(`${stack.url}/api/tables/or%0Aders`)).status, 400);
        t.equal((await call(`${stack.url}/api/tables/orders`)).status, 503, 'a clean name goes on');
        t.equal((await call(`${stack.url}/api/tables/%ED%A0%80`)).status, 404, 'not UTF-8 at all: no such route');
        const query = await call(`${stack.url}/api/tables?refresh=tr%00ue`);
        t.equal(query.status, 400);
        t.match(query.body.error.message, /^query parameter refresh/);
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

      await t.test('request ids: always the edge\'s own; a client\'s x-request-id is a label for the logs', async (t) => {
        const a = await call(`${stack.url}/nope`, { headers: { 'x-request-id': 'client-123' } });
        t.match(a.headers.get('x-request-id'), /^[0-9a-f-]{36}$/);
        t.equal(a.body.error.request_id, a.headers.get('x-request-id'));
        const again = await call(`${stack.url}/nope`, { headers: { 'x-request-id': 'client-123' } });
        t.not(again.headers.get('x-request-id'), a.headers.get('x-request-id'), 'the same label twice: two ids');
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
        const js = await fetch(`${stack.url}/static/dashboard.js`);
        t.equal(js.status, 200);
        t.match(js.headers.get('content-type'), /javascript/);
        const escape = await fetch(`${stack.url}/static/..%2f..%2fpackage.json`);
        t.equal(escape.status, 404);
        // the pages load their scripts as ES modules (static/lib/ and the rest): a module runs only
        // when served with a JavaScript type, and nosniff holds the browser to it
        const modules = readdirSync(STATIC, { recursive: true }).map(String).filter((f) => f.endsWith('.js'));
        t.ok(modules.includes(path.join('lib', 'api.js')) && modules.length > 30, `${modules.length} scripts`);
        const wrong: string[] = [];
        for (const f of modules) {
          const r = await fetch(`${stack.url}/static/${f.split(path.sep).join('/')}`);
          await r.arrayBuffer();
          if (r.status !== 200 || !/^text\/javascript/.test(r.headers.get('content-type') ?? '') || r.headers.get('x-content-type-options') !== 'nosniff') {
            wrong.push(`${f}: ${r.status} ${r.headers.get('content-type')} ${r.headers.get('x-content-type-options')}`);
          }
        }
        t.same(wrong, [], 'every script is served as JavaScript, nosniff');
        // modules import one another by plain URLs: revalidated on each use (ETag), never kept stale
        const first = await fetch(`${stack.url}/static/lib/api.js`);
        await first.arrayBuffer();
        t.equal(first.headers.get('cache-control'), 'no-cache', 'revalidated on each use');
        const etag = first.headers.get('etag') ?? '';
        t.match(etag, /^"[\w-]{16,}"$/, 'with an ETag');
        const again = await fetch(`${stack.url}/static/lib/api.js`, { headers: { 'if-none-match': etag } });
        t.equal(again.status, 304, 'unchanged: 304');
        t.equal((await again.arrayBuffer()).byteLength, 0, 'with no body');
        const other = await fetch(`${stack.url}/static/lib/dom.js`, { headers: { 'if-none-match': etag } });
        t.equal(other.status, 200, 'another file\'s ETag does not match');
        await other.arrayBuffer();
        // and the pages' policy stays strict: scripts from this origin only, no inline script, no eval
        const csp = page.headers.get('content-security-policy') ?? '';
        const scriptSrc = /script-src ([^;]*)/.exec(csp)?.[1]?.trim();
        t.equal(scriptSrc, "'self'", `script-src 'self' and nothing more (${csp})`);
      });
    });
  }

  await t.test('redactUrl: secret parameters however encoded, and anything like a token anywhere', async (t) => {
    const token = `ctd_${'Ab9_-'.repeat(8)}`;
    const cases = [
      `/mcp/sse?token=${token}`, `/mcp/sse?%74oken=${token}`, `/mcp/sse?%54OKEN=${token}`, `/mcp/sse?t%6Fken=${token}`, `/mcp/sse?%2574oken=${token}`,
      `/mcp/sse?a=1;token=${token}`, `/mcp/sse?token=x&token=${token}`, `/mcp/sse?to+ken=${token}`, `/mcp/sse?q=${token.replace('_', '%5F')}`,
      `/mcp/sse?q=${token.replace('_', '%255F')}`, `/mcp/${token}/x`, `/x?${token}`, `/x?api_key=${token}`,
    ];
    for (const url of cases) {
      const out = redactUrl(url);
      t.notOk(out.includes(token.slice(4)), `${url} → ${out}`);
      t.match(out, /\[redacted\]/);
    }
    t.equal(redactUrl('/x?password=hunter2&q=hello+world&limit=5'), '/x?password=[redacted]&q=hello+world&limit=5', 'other parameters stay as sent');
    t.equal(redactUrl('/x?%70assword=hunter2'), '/x?%70assword=[redacted]');
    t.equal(redactUrl('/x?secret=1;apikey=2'), '/x?secret=[redacted];apikey=[redacted]');
    t.equal(redactUrl('/api/tables?refresh=true'), '/api/tables?refresh=true');
    t.equal(redactUrl('/x?q=%E0%A4%A'), '/x?q=%E0%A4%A', 'a malformed escape neither throws nor changes');
  });

  await t.test('jsonDepth counts brackets outside strings only', async (t) => {
    t.equal(jsonDepth(Buffer.from('{"a":[1,{"b":"[[[["}]}')), 3);
    t.equal(jsonDepth(Buffer.from(String.raw`"\\"[[`)), 2, 'an escaped backslash: the string ends at the next quote');
    t.equal(jsonDepth(Buffer.from(String.raw`"\"[[`)), 0, 'an escaped quote: the string goes on');
    t.equal(jsonDepth(Buffer.from(String.raw`{"a\"]]":[[1]]}`)), 3, 'a closing bracket inside a key is text');
  });

  await t.test('a wildcard origin never goes out with credentials', async (t) => {
    const config = testConfig({ natsUrl: nats.url, extra: { cors: { allow_origins: ['*'], allow_credentials: true } } });
    const stack = await startStack(config, { edge: true, actors: [] });
    t.teardown(() => stack.stop());
    const pre = await fetch(`${stack.url}/api/query`, { method: 'OPTIONS', headers: { origin: 'https://x.example', 'access-control-request-method': 'POST' } });
    t.equal(pre.headers.get('access-control-allow-origin'), '*');
    t.equal(pre.headers.get('access-control-allow-credentials'), null);
  });
});

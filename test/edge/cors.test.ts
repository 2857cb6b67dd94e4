/**
 * CORS over real HTTP, on both servers (test/edge/http.test.ts already covers the basic
 * allowed/refused preflight): explicit origins next to `*`, credentials never with the
 * wildcard, origin normalisation, configured methods and headers, `*` headers reflecting the
 * preflight's request, actual responses vs preflights, and changes made at run time.
 */
import { Writable } from 'node:stream';
import t from 'tap';
import type { Config } from '../../config/schema.js';
import { createLogger } from '../../runtime/log.js';
import { corsPolicy } from '../../edge/http/cors.js';
import { uwsAvailable } from '../../edge/http/server.js';
import { testConfig, setConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { startStack } from '../helpers/stack.js';

const nats = await startNats();
t.teardown(() => nats.stop());

const APP = 'https://app.example';
const OTHER = 'https://other.example';

function preflight(url: string, origin: string | undefined, headers: Record<string, string> = {}) {
  return fetch(url, { method: 'OPTIONS', headers: { ...(origin ? { origin } : {}), 'access-control-request-method': 'POST', ...headers } });
}

function acHeaders(res: Response): Record<string, string> {
  const out: Record<string, string> = {};
  res.headers.forEach((v, k) => { if (k.startsWith('access-control-')) out[k] = v; });
  return out;
}

const kinds = uwsAvailable() ? (['uws', 'node'] as const) : (['node'] as const);
for (const kind of kinds) {
  t.test(`on ${kind}`, async (t) => {
    const config = testConfig({ natsUrl: nats.url, extra: { app: { http_server: kind } } });
    const stack = await startStack(config, { edge: true, actors: [] });
    t.teardown(() => stack.stop());
    const q = `${stack.url}/api/query`;
    const page = `${stack.url}/`;
    const set = (cors: Partial<Config['cors']>) => {
      setConfig(config, 'cors', { allow_origins: ['*'], allow_credentials: true, allow_methods: ['*'], allow_headers: ['*'], ...cors });
    };

    await t.test('an origin listed by name next to "*": echoed with credentials; others get "*" without', async (t) => {
      set({ allow_origins: ['*', APP] });
      const named = await preflight(q, APP);
      t.equal(named.status, 204);
      t.equal(named.headers.get('access-control-allow-origin'), APP);
      t.equal(named.headers.get('access-control-allow-credentials'), 'true');
      t.match(named.headers.get('vary'), /Origin/);
      const other = await preflight(q, OTHER);
      t.equal(other.headers.get('access-control-allow-origin'), '*');
      t.equal(other.headers.get('access-control-allow-credentials'), null, 'a wildcard answer never carries credentials');
      const actual = await fetch(page, { headers: { origin: OTHER } });
      t.equal(actual.headers.get('access-control-allow-origin'), '*');
      t.equal(actual.headers.get('access-control-allow-credentials'), null, 'not on actual responses either');
    });

    await t.test('explicit origins: case and a trailing slash in the config do not matter; others get nothing', async (t) => {
      set({ allow_origins: ['https://App.Example/'], allow_credentials: true });
      const ok = await fetch(page, { headers: { origin: APP } });
      t.equal(ok.status, 200);
      t.equal(ok.headers.get('access-control-allow-origin'), APP, 'the request origin echoed');
      t.equal(ok.headers.get('access-control-allow-credentials'), 'true');
      t.equal(ok.headers.get('vary'), 'Origin');
      t.match(ok.headers.get('access-control-expose-headers'), /x-request-id/);
      t.match(ok.headers.get('access-control-expose-headers'), /ratelimit-reset/);
      t.match(ok.headers.get('access-control-expose-headers'), /traceparent/, 'a page can read the trace it is part of');
      t.equal(ok.headers.get('access-control-allow-methods'), null, 'methods and headers belong to preflights only');
      const refused = await fetch(page, { headers: { origin: OTHER } });
      t.same(acHeaders(refused), {}, 'a refused origin gets no CORS header at all');
      t.equal(refused.headers.get('vary'), 'Origin', 'but caches still key on Origin');
      const pre = await preflight(q, OTHER);
      t.equal(pre.status, 204);
      t.same(acHeaders(pre), {}, 'its preflight answers nothing its browser could use');
      const none = await fetch(page);
      t.same(acHeaders(none), {}, 'no Origin, no CORS');
      t.same(acHeaders(await fetch(page, { headers: { origin: 'null' } })), {}, 'the "null" origin is not an allowed name');
    });

    await t.test('allow_credentials false: a named origin is echoed without credentials', async (t) => {
      set({ allow_origins: [APP], allow_credentials: false });
      const pre = await preflight(q, APP);
      t.equal(pre.headers.get('access-control-allow-origin'), APP);
      t.equal(pre.headers.get('access-control-allow-credentials'), null);
    });

    await t.test('preflight: configured methods and headers, max-age, an empty body', async (t) => {
      set({ allow_origins: [APP], allow_methods: ['get', 'POST'], allow_headers: ['Content-Type', 'X-Session-Id'] });
      const pre = await preflight(q, APP, { 'access-control-request-headers': 'content-type, x-evil' });
      t.equal(pre.status, 204);
      t.equal(pre.headers.get('access-control-allow-methods'), 'GET, POST');
      t.equal(pre.headers.get('access-control-allow-headers'), 'content-type, x-session-id', 'the configured list, not what was asked');
      t.equal(pre.headers.get('access-control-max-age'), '600');
      t.equal(await pre.text(), '');
      t.ok(pre.headers.get('x-request-id'), 'a request id as on every answer');
    });

    await t.test('"*" methods and headers: every method, and the headers the browser asked for', async (t) => {
      set({ allow_origins: [APP], allow_credentials: true });
      const pre = await preflight(q, APP, { 'access-control-request-headers': 'Content-Type, Authorization, X-CSRF-Token' });
      t.equal(pre.headers.get('access-control-allow-methods'), 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS');
      t.equal(pre.headers.get('access-control-allow-headers'), 'content-type, authorization, x-csrf-token', 'reflected (a literal "*" would not cover Authorization with credentials)');
      t.match(pre.headers.get('vary'), /Access-Control-Request-Headers/);
      const odd = await preflight(q, APP, { 'access-control-request-headers': 'x-a, (b)' });
      t.equal(odd.headers.get('access-control-allow-headers'), null, 'what is not a list of header names is not reflected');
    });

    await t.test('a change at run time applies to the next request', async (t) => {
      set({ allow_origins: [APP] });
      t.equal((await fetch(page, { headers: { origin: OTHER } })).headers.get('access-control-allow-origin'), null);
      set({ allow_origins: [APP, OTHER] });
      t.equal((await fetch(page, { headers: { origin: OTHER } })).headers.get('access-control-allow-origin'), OTHER);
    });
  });
}

t.test('the wildcard-with-credentials setting is warned about once, not per request', async (t) => {
  const lines: string[] = [];
  const log = createLogger({ svc: 'test', level: 'warn', destination: new Writable({ write(c, _e, cb) { lines.push(String(c)); cb(); } }) });
  const config = testConfig({ natsUrl: nats.url, extra: { cors: { allow_origins: ['*'], allow_credentials: true } } });
  const policy = corsPolicy(config, log);
  for (let i = 0; i < 5; i++) t.same(policy.response(OTHER)['access-control-allow-origin'], '*');
  t.equal(lines.filter((l) => l.includes('never carries credentials')).length, 1);
  setConfig(config, 'cors.allow_origins', [APP]);
  t.equal(policy.response(APP)['access-control-allow-credentials'], 'true');
  t.equal(lines.length, 1, 'no warning once origins are named');
});

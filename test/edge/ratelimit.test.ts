/**
 * Rate limiting: the three strategies with exact counts (on an injected clock, then over HTTP
 * with 2-second windows), path rules (override > exclude > protected), whose budget (ip, a
 * trusted proxy's X-Forwarded-For, a spoofed one, sessions, users, API tokens, unknown session
 * ids), ONE limit across two edges on one NATS (in this process and as two `cortado --role edge`
 * processes), failing open without JetStream, and the 429 shape.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import t from 'tap';
import YAML from 'yaml';
import { ROOT } from '../../config/load.js';
import type { Config } from '../../config/schema.js';
import { createLogger } from '../../runtime/log.js';
import { Bus } from '../../runtime/bus.js';
import { Bucket } from '../../protocol/subjects.js';
import { compileRules } from '../../edge/http/ratelimit-paths.js';
import { decide, type Quota, type Strategy } from '../../edge/http/ratelimit-strategy.js';
import { createRateLimiter, normaliseIp } from '../../edge/http/ratelimit.js';
import type { HttpRequest } from '../../edge/http/server.js';
import { testConfig, testConfigObject, setConfig } from '../helpers/config.js';
import { endWithProcess } from '../helpers/leftovers.js';
import { startNats } from '../helpers/nats.js';
import { call, startStack } from '../helpers/stack.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Run a sequence of request times through one strategy, threading the state like the store does. */
function simulate(strategy: Strategy, q: Quota, times: number[], start?: unknown) {
  let state = start;
  return times.map((now) => {
    const v = decide(strategy, state, now, q);
    if (v.allowed) state = v.next;
    return v;
  });
}

// ---- strategies, exact, on an injected clock ------------------------------------------------

t.test('sliding_window is an exact sliding log', async (t) => {
  const q = { limit: 5, windowMs: 10_000 };
  const v = simulate('sliding_window', q, [0, 1000, 2000, 3000, 4000, 5000, 9_999, 10_000, 10_500, 11_000]);
  t.same(v.slice(0, 5).map((x) => x.allowed), [true, true, true, true, true], 'the first 5 pass');
  t.same(v.slice(0, 5).map((x) => x.remaining), [4, 3, 2, 1, 0]);
  t.equal(v[0]!.resetMs, 10_000, 'the quota grows again when the first request leaves the window');
  t.equal(v[4]!.resetMs, 6_000);
  t.equal(v[5]!.allowed, false, 'the 6th in the window is refused');
  t.equal(v[5]!.retryAfterMs, 5_000, 'until the request at 0 leaves the window at 10 000');
  t.equal(v[6]!.allowed, false, 'still refused 1 ms before');
  t.equal(v[6]!.retryAfterMs, 1);
  t.equal(v[7]!.allowed, true, 'the request at 0 left at exactly 10 000: one place');
  t.equal(v[8]!.allowed, false, 'and only one');
  t.equal(v[8]!.retryAfterMs, 500, 'until the request at 1 000 leaves');
  t.equal(v[9]!.allowed, true);

  // property: over a long irregular stream, no window of 10 s holds more than 5 allowed
  // requests, and a request is refused only when 5 are already in its window
  const times = Array.from({ length: 400 }, (_, i) => Math.floor(i * 437 + ((i * 7919) % 613)));
  const out = simulate('sliding_window', q, times);
  const allowedAt = times.filter((_, i) => out[i]!.allowed);
  const wrong: string[] = [];
  for (let i = 0; i < times.length; i++) {
    const inWindow = allowedAt.filter((a) => a > times[i]! - q.windowMs && a <= times[i]!).length;
    if (out[i]!.allowed ? inWindow > 5 : inWindow !== 5) wrong.push(`${out[i]!.allowed ? 'allowed' : 'refused'} at ${times[i]} with ${inWindow} in the window`);
  }
  t.same(wrong, [], 'never more than 5 in any window, and never refused with room left');
  t.ok(allowedAt.length > 50 && allowedAt.length < 400, `${allowedAt.length} of 400 allowed`);
});

t.test('token_bucket: a burst of L, then L per W, refilled continuously', async (t) => {
  const q = { limit: 5, windowMs: 10_000 }; // one token every 2 s
  const v = simulate('token_bucket', q, [0, 0, 0, 0, 0, 0, 1_999, 2_000, 2_001, 8_000, 8_000, 8_000, 8_000, 100_000]);
  t.same(v.slice(0, 5).map((x) => x.remaining), [4, 3, 2, 1, 0], 'full at the start: 5 pass');
  t.equal(v[0]!.resetMs, 2_000, 'one more token in 2 s');
  t.equal(v[5]!.allowed, false, 'the 6th is refused');
  t.equal(v[5]!.retryAfterMs, 2_000);
  t.equal(v[6]!.allowed, false, '1 ms before the token');
  t.equal(v[6]!.retryAfterMs, 1);
  t.equal(v[7]!.allowed, true, 'the token at 2 000');
  t.equal(v[8]!.allowed, false);
  t.same(v.slice(9, 13).map((x) => x.allowed), [true, true, true, false], '6 s after the last token was taken: 3 tokens');
  t.same(v.slice(9, 12).map((x) => x.remaining), [2, 1, 0]);
  t.equal(v[12]!.retryAfterMs, 2_000);
  t.equal(v[13]!.remaining, 4, 'a long pause fills the bucket to L, never more');
  const after = simulate('token_bucket', q, [100_000, 100_000, 100_000, 100_000, 100_000], v[13]!.next);
  t.same(after.map((x) => x.allowed), [true, true, true, true, false], 'capacity is L, not more');
});

t.test('fixed_window: anchored at the first request, L per window, all back when it ends', async (t) => {
  const q = { limit: 5, windowMs: 10_000 };
  const v = simulate('fixed_window', q, [3_000, 3_100, 3_200, 3_300, 3_400, 4_000, 12_999, 13_000, 13_001]);
  t.same(v.slice(0, 5).map((x) => x.remaining), [4, 3, 2, 1, 0]);
  t.equal(v[0]!.resetMs, 10_000, 'the window opened at 3 000 ends at 13 000');
  t.equal(v[5]!.allowed, false);
  t.equal(v[5]!.retryAfterMs, 9_000);
  t.equal(v[6]!.allowed, false, '1 ms before the end');
  t.equal(v[6]!.retryAfterMs, 1);
  t.equal(v[7]!.allowed, true, 'a new window at 13 000');
  t.equal(v[7]!.remaining, 4, 'with the whole quota');
  t.equal(v[8]!.resetMs, 9_999);
});

t.test('a state from another strategy, or garbage, is a fresh start; a lowered limit waits', async (t) => {
  const q = { limit: 2, windowMs: 1_000 };
  for (const junk of [undefined, null, 'x', { s: 'tb', k: 0, t: 0 }, { s: 'sw', t: 'nope' }, { s: 'fw', w: 'a', n: 9 }]) {
    t.equal(decide('sliding_window', junk, 100, q).remaining, 1, JSON.stringify(junk));
  }
  // eight requests logged under an older limit of 8; the limit is now 2
  const log = { s: 'sw', t: [100, 200, 300, 400, 500, 600, 700, 800] };
  const v = decide('sliding_window', log, 850, q);
  t.equal(v.allowed, false);
  t.equal(v.retryAfterMs, 700 + 1_000 - 850, 'until only one of them is left in the window');
});

t.test('a request that counts as several (an MCP batch): all of them fit, or none is taken', async (t) => {
  const q = { limit: 5, windowMs: 10_000 };
  for (const strategy of ['sliding_window', 'token_bucket', 'fixed_window'] as const) {
    const three = decide(strategy, undefined, 0, q, 3);
    t.equal(three.allowed, true, `${strategy}: 3 of 5 fit`);
    t.equal(three.remaining, 2, `${strategy}: 2 left`);
    const again = decide(strategy, three.next, 1, q, 3);
    t.equal(again.allowed, false, `${strategy}: 3 more do not`);
    t.equal(again.remaining, 2, `${strategy}: and nothing was taken`);
    t.ok(again.retryAfterMs > 0, `${strategy}: told when to come back`);
    const two = decide(strategy, three.next, 1, q, 2);
    t.equal(two.allowed, true, `${strategy}: the 2 that are left fit`);
    t.equal(two.remaining, 0);
    const whole = decide(strategy, undefined, 0, q, 6);
    t.equal(whole.allowed, false, `${strategy}: more than the whole quota never fits`);
  }
  // sliding: 3 more fit once the first three have left the window, not before
  const first = decide('sliding_window', undefined, 0, q, 3);
  const second = decide('sliding_window', first.next, 4_000, q, 2);
  const wait = decide('sliding_window', second.next, 5_000, q, 3);
  t.equal(wait.retryAfterMs, 5_000, 'until the three taken at 0 leave at 10 000');
  t.equal(decide('sliding_window', second.next, 10_000, q, 3).allowed, true);
  // token bucket: 3 tokens come back in 6 s at one per 2 s
  const drained = decide('token_bucket', decide('token_bucket', undefined, 0, q, 5).next, 0, q, 3);
  t.equal(drained.retryAfterMs, 6_000);
});

// ---- path rules ----------------------------------------------------------------------------

t.test('path rules: override > exclude > protected; segment prefixes and * globs', async (t) => {
  const config = testConfig({ natsUrl: 'nats://127.0.0.1:1' });
  const rl = {
    ...config.rate_limiting,
    requests_per_window: 30,
    window_seconds: 60,
    protected_paths: ['/query', '/auth/query', '/api/*/export'],
    exclude_paths: ['/health', '/static', '/admin'],
    path_overrides: {
      '/auth/query': { requests_per_window: 10, window_seconds: 60 },
      '/auth/discover': { requests_per_window: 20, window_seconds: 60 },
      '/admin/login': { requests_per_window: 3, window_seconds: 300 },
      '/auth/schema/*': { requests_per_window: 7, window_seconds: 60 },
      '/auth/schema/orders': { requests_per_window: 2, window_seconds: 60 },
    },
  };
  const rules = compileRules(rl);
  const at = (p: string) => {
    const r = rules.ruleFor(p);
    return r ? `${r.pattern} ${r.limit}/${r.windowMs / 1000}` : 'none';
  };
  t.equal(at('/query'), '/query 30/60');
  t.equal(at('/query/confirm-execute'), '/query 30/60', 'below a protected path');
  t.equal(at('//query/'), '/query 30/60', 'empty segments as the router sees them');
  t.equal(at('/query-log'), 'none', 'a prefix of whole segments, not of characters');
  t.equal(at('/Query'), 'none', 'case counts, as in the router');
  t.equal(at('/auth/query'), '/auth/query 10/60', 'an override takes priority over the defaults');
  t.equal(at('/auth/discover/tables'), '/auth/discover 20/60', 'an override need not be protected');
  t.equal(at('/admin/login'), '/admin/login 3/300', 'an override wins inside an excluded prefix');
  t.equal(at('/admin/config'), 'none', 'the rest of /admin stays excluded');
  t.equal(at('/health'), 'none');
  t.equal(at('/static/dashboard.js'), 'none');
  t.equal(at('/auth/schema/customers'), '/auth/schema/* 7/60', 'a glob segment');
  t.equal(at('/auth/schema/orders'), '/auth/schema/orders 2/60', 'the most specific override wins');
  t.equal(at('/api/sales/export'), '/api/*/export 30/60', 'a glob in a protected path');
  t.equal(at('/api/sales'), 'none');
  t.equal(at('/api/query'), 'none', 'not protected by default');
  t.not(rules.ruleFor('/query')!.id, rules.ruleFor('/auth/query')!.id, 'each rule has its own counters');
  t.equal(rules.maxWindowMs, 300_000);

  const all = compileRules({ ...rl, protected_paths: [], path_overrides: {} });
  t.equal(all.ruleFor('/anything/at/all')?.pattern, '/', 'an empty protected_paths protects every path');
  t.equal(all.ruleFor('/health'), undefined, 'but not the excluded ones');
  const strategyId = (s: Strategy) => compileRules({ ...rl, strategy: s }).ruleFor('/query')!.id;
  t.not(strategyId('token_bucket'), strategyId('fixed_window'), 'another strategy starts fresh counters');
});

t.test('addresses: IPv4-mapped IPv6 is the IPv4 address', async (t) => {
  t.equal(normaliseIp('::ffff:10.1.2.3'), '10.1.2.3');
  t.equal(normaliseIp('2001:DB8::1'), '2001:db8::1');
});

// ---- over HTTP, on JetStream KV -----------------------------------------------------------------

const nats = await startNats();
t.teardown(() => nats.stop());

const BASE = {
  enabled: true,
  strategy: 'sliding_window',
  key_type: 'ip',
  requests_per_window: 5,
  window_seconds: 2,
  protected_paths: ['/query', '/auth/query'],
  exclude_paths: ['/health', '/static', '/admin'],
  path_overrides: {},
};
// one config object for both edges: a change made here reaches both at once, like a runtime override
const config = testConfig({
  natsUrl: nats.url,
  extra: { admin: { enabled: true, username: 'admin', password: 'pw-for-tests' }, rate_limiting: BASE, cors: { allow_origins: ['https://app.example'], allow_credentials: true } },
});
const a = await startStack(config, { edge: true, actors: ['identity'] });
const b = await startStack(config, { edge: true, actors: [] });
t.teardown(async () => {
  await b.stop();
  await a.stop();
});

/** Set the rate_limiting section for the next test (both edges read it live). */
function limits(over: Partial<Config['rate_limiting']> & Record<string, unknown>): void {
  setConfig(config, 'rate_limiting', structuredClone({ ...BASE, ...over }) as Config['rate_limiting']);
}

/** POST /query (no assistant runs: an allowed request answers 503, a refused one 429). */
function ask(url: string, headers: Record<string, string> = {}) {
  return call(`${url}/query`, { body: { question: 'how many?' }, headers });
}

const statuses = (rs: Array<{ status: number }>) => rs.map((r) => (r.status === 429 ? 429 : 'ok'));
const okN = (n: number, then: number[] = []) => [...Array.from({ length: n }, () => 'ok'), ...then];

async function login(url: string) {
  const res = await call(`${url}/admin/login`, { body: { username: 'admin', password: 'pw-for-tests' } });
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  return { cookie, secret: decodeURIComponent(cookie.split('=')[1] ?? ''), csrf: res.body?.csrf_token as string };
}

// windows of 2 s (a token every 2 s for the bucket); the exact arithmetic is tested above on an
// injected clock, so here the Retry-After bounds allow for a slow machine: [W - elapsed, W]
for (const [strategy, windowS, refillS] of [['sliding_window', 2, 2], ['fixed_window', 2, 2], ['token_bucket', 10, 2]] as const) {
  t.test(`${strategy} over HTTP: 5 pass, the 6th is 429 with the right headers, then the quota returns`, async (t) => {
    limits({ strategy, window_seconds: windowS });
    const began = performance.now();
    const first = await ask(a.url);
    t.equal(first.status, 503, 'allowed: on to the (absent) assistant');
    t.equal(first.headers.get('ratelimit-limit'), '5');
    t.equal(first.headers.get('ratelimit-remaining'), '4');
    t.equal(first.headers.get('ratelimit-policy'), `5;w=${windowS}`);
    t.equal(first.headers.get('ratelimit-reset'), String(refillS), 'the quota grows again in 2 s');
    t.equal(first.headers.get('retry-after'), null, 'no Retry-After on an allowed request');
    const rest = [];
    for (let i = 0; i < 5; i++) rest.push(await ask(a.url));
    const elapsed = performance.now() - began;
    t.same(rest.map((r) => r.headers.get('ratelimit-remaining')), ['3', '2', '1', '0', '0']);
    t.same(statuses(rest), okN(4, [429]), 'exactly 5 allowed');
    const refused = rest[4]!;
    t.equal(refused.body.error.code, 'RATE_LIMITED');
    t.match(refused.body.error.message, new RegExp(`at most 5 per ${windowS} s for /query`));
    t.equal(refused.body.error.request_id, refused.headers.get('x-request-id'));
    const retry = Number(refused.headers.get('retry-after'));
    t.ok(retry >= Math.ceil((refillS * 1000 - elapsed) / 1000) && retry <= refillS, `Retry-After ${retry} s after ${Math.round(elapsed)} ms (2 when that is under a second)`);
    t.equal(refused.headers.get('ratelimit-reset'), String(retry));
    t.equal(refused.headers.get('ratelimit-remaining'), '0');
    t.equal((await ask(a.url)).status, 429, 'refused again at once (remembered locally)');
    t.equal((await ask(b.url)).status, 429, 'and by the other edge (from the store)');

    if (strategy === 'token_bucket') {
      await sleep(retry * 1000 + 50);
      t.same(statuses([await ask(a.url), await ask(b.url)]), ['ok', 429], 'after Retry-After: one token, one request');
    } else {
      await sleep(windowS * 1000 + 50);
      const again = [];
      for (let i = 0; i < 6; i++) again.push(await ask(i % 2 ? a.url : b.url));
      t.same(statuses(again), okN(5, [429]), 'a window later: 5 again, not more');
    }
  });
}

t.test('paths: unlimited paths carry no headers; override priority over HTTP', async (t) => {
  limits({ window_seconds: 60, path_overrides: { '/query': { requests_per_window: 2, window_seconds: 60 }, '/api/query': { requests_per_window: 3, window_seconds: 60 } } });
  const plain = await call(`${a.url}/health`);
  t.equal(plain.headers.get('ratelimit-limit'), null, 'an excluded path is not counted');
  const q = [await ask(a.url), await ask(a.url), await ask(a.url)];
  t.same(statuses(q), ['ok', 'ok', 429], 'the override (2) beats the default (5) on /query');
  t.equal(q[0]!.headers.get('ratelimit-limit'), '2');
  const api = [];
  for (let i = 0; i < 4; i++) api.push(await call(`${a.url}/api/query`, { body: { question: 'x' } }));
  t.same(statuses(api), okN(3, [429]), '/api/query limited by its override though not in protected_paths');
  limits({ window_seconds: 66, protected_paths: ['/query'], exclude_paths: ['/health'], requests_per_window: 2 });
  const unlisted = [];
  for (let i = 0; i < 4; i++) unlisted.push(await call(`${a.url}/api/query`, { body: { question: 'x' } }));
  t.same(statuses(unlisted), okN(4), 'neither protected nor overridden: never limited');
  t.equal(unlisted[0]!.headers.get('ratelimit-limit'), null);
});

t.test('ip key: the peer address; X-Forwarded-For only from a trusted proxy', async (t) => {
  limits({ requests_per_window: 3, window_seconds: 60 });
  setConfig(config, 'app.trusted_proxies', []);
  t.teardown(() => { setConfig(config, 'app.trusted_proxies', []); });
  const spoofed = [];
  for (let i = 0; i < 5; i++) spoofed.push(await ask(a.url, { 'x-forwarded-for': `203.0.113.${i + 1}` }));
  t.same(statuses(spoofed), okN(3, [429, 429]), 'an untrusted peer rotating X-Forwarded-For shares one budget');

  limits({ requests_per_window: 3, window_seconds: 61 });
  setConfig(config, 'app.trusted_proxies', ['127.0.0.1']);
  const one = [];
  for (let i = 0; i < 4; i++) one.push(await ask(i % 2 ? a.url : b.url, { 'x-forwarded-for': '198.51.100.7' }));
  t.same(statuses(one), okN(3, [429]), 'behind a trusted proxy: the forwarded client has its budget');
  t.equal((await ask(a.url, { 'x-forwarded-for': '198.51.100.7, 10.0.0.1' })).status, 429, 'the first hop is the client');
  t.equal((await ask(a.url, { 'x-forwarded-for': '198.51.100.8' })).status, 503, 'another client behind the proxy: its own budget');
  t.equal((await ask(a.url)).status, 503, 'the proxy itself (no header): its own budget');
});

t.test('session_id key: one budget per known session; unknown ids spend the address budget', async (t) => {
  limits({ key_type: 'session_id', requests_per_window: 3, window_seconds: 62 });
  const s1 = await login(a.url);
  const s2 = await login(a.url);
  t.ok(s1.secret && s2.secret && s1.secret !== s2.secret, 'two sessions');
  const one = [];
  for (let i = 0; i < 3; i++) one.push(await ask(i % 2 ? a.url : b.url, { cookie: s1.cookie }));
  t.same(statuses(one), okN(3), 'session 1: 3 allowed');
  t.equal((await ask(b.url, { 'x-session-id': s1.secret })).status, 429, 'the same session sent as x-session-id: the same budget');
  t.equal((await ask(a.url, { cookie: s2.cookie })).status, 503, 'session 2 has its own budget');

  // unknown ids: random cookies and headers all land on the caller's address
  const random = [];
  for (let i = 0; i < 5; i++) {
    const id = `forged-${i}-${Math.random().toString(36).slice(2)}`;
    random.push(await ask(i % 2 ? a.url : b.url, i % 2 ? { 'x-session-id': id } : { cookie: `cortado_admin=${id}` }));
  }
  t.same(statuses(random), okN(3, [429, 429]), 'inventing session ids buys no fresh budget');
  t.equal((await ask(a.url)).status, 429, 'they used the address budget');
  t.equal((await ask(a.url, { cookie: s2.cookie })).status, 503, 'a real session is still served');
});

t.test('user_id key: all sessions and tokens of one user share a budget', async (t) => {
  limits({ key_type: 'user_id', requests_per_window: 3, window_seconds: 63 });
  const s1 = await login(a.url);
  const s2 = await login(b.url);
  const issued = await call(`${a.url}/admin/tokens`, { body: { username: 'ann', label: 'rl test' }, headers: { cookie: s1.cookie, 'x-csrf-token': s1.csrf } });
  t.equal(issued.status, 201, issued.text);
  const admin = [await ask(a.url, { cookie: s1.cookie }), await ask(b.url, { cookie: s2.cookie }), await ask(a.url, { cookie: s2.cookie }), await ask(b.url, { cookie: s1.cookie })];
  t.same(statuses(admin), okN(3, [429]), 'user admin: 3 across two sessions and two edges');
  const ann = [];
  for (let i = 0; i < 4; i++) ann.push(await ask(i % 2 ? a.url : b.url, { authorization: `Bearer ${issued.body.token}` }));
  t.same(statuses(ann), okN(3, [429]), 'user ann (API token): a budget of her own');
  t.equal((await ask(a.url)).status, 503, 'no user: the address budget');
  const bogus = [];
  for (let i = 0; i < 3; i++) bogus.push(await ask(a.url, { authorization: `Bearer ctd_${Math.random().toString(36).slice(2)}` }));
  t.same(statuses(bogus), okN(2, [429]), 'unknown tokens spend the address budget too');
});

t.test('two edges on one NATS enforce ONE limit, alternating and all at once', async (t) => {
  for (const strategy of ['sliding_window', 'fixed_window', 'token_bucket'] as const) {
    limits({ strategy, requests_per_window: 7, window_seconds: 60 });
    const alternating = [];
    for (let i = 0; i < 12; i++) alternating.push(await ask(i % 2 ? a.url : b.url));
    t.same(statuses(alternating), okN(7, [429, 429, 429, 429, 429]), `${strategy}: alternating, exactly 7`);

    limits({ strategy, requests_per_window: 9, window_seconds: 61 });
    const burst = await Promise.all(Array.from({ length: 40 }, (_, i) => ask(i % 2 ? a.url : b.url)));
    t.equal(burst.filter((r) => r.status !== 429).length, 9, `${strategy}: 40 at once through both edges, exactly 9 allowed`);
    t.same(burst.filter((r) => r.status !== 429).map((r) => r.headers.get('ratelimit-remaining')).sort(), ['0', '1', '2', '3', '4', '5', '6', '7', '8'], 'each allowed one saw its own remaining count');
  }
});

t.test('CORS and rate limits: a 429 is readable by the page; preflights are never counted', async (t) => {
  limits({ requests_per_window: 2, window_seconds: 64, path_overrides: { '/auth/query': { requests_per_window: 2, window_seconds: 65 } } });
  const origin = 'https://app.example';
  for (let i = 0; i < 5; i++) {
    const pre = await fetch(`${a.url}/auth/query`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST' } });
    t.equal(pre.status, 204);
    t.equal(pre.headers.get('ratelimit-limit'), null);
  }
  const rs = [];
  for (let i = 0; i < 3; i++) rs.push(await call(`${a.url}/auth/query`, { body: {}, headers: { origin } }));
  t.same(statuses(rs), ['ok', 'ok', 429], 'five preflights used none of the budget');
  const refused = rs[2]!;
  t.equal(refused.headers.get('access-control-allow-origin'), origin);
  t.equal(refused.headers.get('access-control-allow-credentials'), 'true');
  t.match(refused.headers.get('access-control-expose-headers'), /retry-after/);
  t.match(refused.headers.get('access-control-expose-headers'), /ratelimit-remaining/);
});

t.test('the store holds hashes, not addresses or session secrets', async (t) => {
  const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'rl-peek', log: createLogger({ svc: 'test', level: 'silent' }) });
  t.teardown(() => bus.close());
  const kv = await bus.bucket<unknown>(Bucket.Ratelimit);
  const keys = await kv.keys();
  t.ok(keys.length > 10, `${keys.length} counters`);
  t.ok(keys.every((k) => /^[0-9a-f]{16}\.(ip|sid|tok|user)\.[0-9a-f]{32}$/.test(k)), 'rule.kind.hash keys only');
  for (const kind of ['ip', 'sid', 'user']) t.ok(keys.some((k) => k.includes(`.${kind}.`)), `${kind} counters`);
  t.ok((await kv.ttlMs()) >= 3_600_000, 'counters live at least an hour of silence');
});

t.test('without JetStream the limiter fails open, says so once, and never crashes', async (t) => {
  const plain = await startNats({ jetstream: false });
  t.teardown(() => plain.stop());
  const lines: string[] = [];
  const sink = new Writable({ write(chunk, _enc, cb) { lines.push(String(chunk)); cb(); } });
  const log = createLogger({ svc: 'test', level: 'warn', destination: sink });
  const cfg = testConfig({ natsUrl: plain.url, extra: { rate_limiting: { ...BASE, requests_per_window: 2, window_seconds: 60 } } });
  const bus = await Bus.connect({ url: plain.url, prefix: 'cortado', name: 'rl-open', log });
  t.teardown(() => bus.close());
  const limiter = createRateLimiter({ bus, config: cfg, log });
  const req = { method: 'POST', path: '/query', rawQuery: '', query: new URLSearchParams(), headers: {}, remoteAddress: '127.0.0.1', params: {}, body: async () => Buffer.alloc(0) } satisfies HttpRequest;
  const results = [];
  for (let i = 0; i < 5; i++) results.push(await limiter.check(req, `rid-${i}`));
  t.same(results.map((r) => r?.allowed), [true, true, true, true, true], 'all pass: fail open');
  t.same(results.map((r) => Object.keys(r?.headers ?? {}).length), [0, 0, 0, 0, 0], 'no RateLimit headers it could not vouch for');
  const warned = lines.filter((l) => l.includes('rate limiting fails open'));
  t.equal(warned.length, 1, 'one warning, not one per request');
  t.equal(JSON.parse(warned[0]!).level, 'warn');
  t.equal(limiter.check({ ...req, path: '/health' }, 'x'), undefined, 'unlimited paths do not even make a promise');
});

// ---- two `cortado --role edge` processes ----------------------------------------------------------

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((r) => srv.close(r));
  return port;
}

t.test('two edge processes share one limit', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'cortado-rl-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const ports = [await freePort(), await freePort()];
  const children = ports.map((port, i) => {
    const obj = testConfigObject({ natsUrl: nats.url, extra: { rate_limiting: { ...BASE, strategy: 'fixed_window', requests_per_window: 6, window_seconds: 120 } } });
    (obj.app as Record<string, unknown>).port = port;
    const file = path.join(dir, `edge-${i}.yaml`);
    writeFileSync(file, YAML.stringify(obj));
    const child = endWithProcess(spawn(process.execPath, [path.join(ROOT, 'bin/cortado.js'), '--config', file, '--role', 'edge'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] }));
    t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL'); });
    return child;
  });
  const urls = ports.map((p) => `http://127.0.0.1:${p}`);
  const end = Date.now() + 30_000;
  for (const url of urls) {
    while ((await call(`${url}/health`).catch(() => undefined)) === undefined) {
      if (Date.now() > end) throw new Error('the edge processes did not start');
      await sleep(100);
    }
  }
  const burst = await Promise.all(Array.from({ length: 30 }, (_, i) => ask(urls[i % 2]!)));
  t.equal(burst.filter((r) => r.status !== 429).length, 6, '30 requests at once through two processes: exactly 6 allowed');
  t.ok(burst.filter((r, i) => i % 2 === 0 && r.status === 429).length > 0 && burst.filter((r, i) => i % 2 === 1 && r.status === 429).length > 0, 'both processes refused some');
  for (const c of children) c.kill('SIGTERM');
});

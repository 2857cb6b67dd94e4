/**
 * Budgets that hold (issue 25, items 5 and 9), on both HTTP servers: every tool call of an MCP
 * batch counts against the caller's rate limit (a batch that does not fit is refused whole, and
 * one larger than the whole quota says so), a batch holds at most MCP_MAX_BATCH messages (more
 * is the JSON-RPC error -32600); each question over a WebSocket and over SSE counts as one; an
 * auto session is taken only from a page auto_session.allowed_origins lists on the /auth routes
 * too (header and cookie), and a fresh auto session never buys a fresh budget: it counts as
 * its address.
 */
import t from 'tap';
import WebSocket from 'ws';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { uwsAvailable } from '../../edge/http/server.js';
import { MCP_MAX_BATCH } from '../../edge/mcp/routes.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { INITIALIZE, issueToken } from '../helpers/mcp.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack, type Stack } from '../helpers/stack.js';

const ORIGIN = 'https://shop.example';
const MCP_LIMIT = 6;
const QUESTIONS = 3;
const SESSION_READS = 3;

const nats = await startNats();
const db = await createTestDb('budgets');
await db.pool.query(`CREATE TABLE items (id int PRIMARY KEY, name text); INSERT INTO items VALUES (1, 'one'), (2, 'two');`);
const fake = await startFakeLlm();
fake.fallback(() => ({ text: sqlAnswer('SELECT count(*) AS n FROM items') }));
const kinds = uwsAvailable() ? (['uws', 'node'] as const) : (['node'] as const);
const stacks: Array<{ kind: string; stack: Stack }> = [];
for (const [i, kind] of kinds.entries()) {
  const config = testConfig({
    natsUrl: nats.url,
    db: { host: db.host, port: db.port, name: db.name, user: db.user },
    llmUrl: fake.url,
    extra: {
      // the test client is the trusted proxy: X-Forwarded-For names the caller's address
      app: { http_server: kind, trusted_proxies: ['127.0.0.1'] },
      config_db: { encryption_key: generateFernetKey() },
      insights: { mode: 'statistical_only' },
      plugins: { auth: { enabled: true, allowed_db_types: ['postgresql'], auto_session: { enabled: true, label: 'Kiosk', allowed_origins: [ORIGIN] } } },
      rate_limiting: {
        enabled: true, strategy: 'fixed_window', key_type: 'session_id', requests_per_window: QUESTIONS, window_seconds: 600,
        protected_paths: ['/api/query'], exclude_paths: [],
        path_overrides: { '/mcp': { requests_per_window: MCP_LIMIT, window_seconds: 600 }, '/auth/session': { requests_per_window: SESSION_READS, window_seconds: 600 } },
      },
    },
  });
  // the first stack runs every actor; the second is a second edge on the same bus (and the same counters)
  stacks.push({ kind, stack: await startStack(config, i === 0 ? undefined : { edge: true, actors: [] }) });
}
t.teardown(async () => {
  for (const { stack } of [...stacks].reverse()) await stack.stop();
  await fake.close();
  await db.drop();
  await nats.stop();
});

const rpcHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const toolCall = (id: number, name = 'list_tables') => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: name === 'ask_database' ? { question: 'how many items?' } : {} } });

for (const { kind, stack } of stacks) {
  t.test(`on ${kind}`, async (t) => {
    /** An MCP session of a fresh token over Streamable HTTP, and a way to POST to it. */
    const mcpSession = async (label: string) => {
      const { token } = await issueToken(stacks[0]!.stack.running.bus, label);
      let session: string | undefined;
      const post = async (body: unknown) => {
        const res = await fetch(`${stack.url}/mcp`, { method: 'POST', headers: { ...rpcHeaders, 'x-mcp-token': token, ...(session ? { 'mcp-session-id': session } : {}) }, body: JSON.stringify(body) });
        const text = await res.text();
        let json: any;
        try {
          // tool calls answer as an SSE stream of their messages when the client takes one
          json = (res.headers.get('content-type') ?? '').includes('text/event-stream')
            ? text.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5))).flat()
            : JSON.parse(text);
        } catch { json = undefined; }
        return { status: res.status, headers: res.headers, json, text };
      };
      const init = await post(INITIALIZE(0));
      t.equal(init.status, 200, init.text);
      session = init.headers.get('mcp-session-id')!;
      return post;
    };

    await t.test('MCP: every tool call of a batch counts against the caller\'s budget', async (t) => {
      const post = await mcpSession(`budget-${kind}`);
      t.equal((await post({ jsonrpc: '2.0', method: 'notifications/initialized' })).status, 202);
      // 2 of MCP_LIMIT spent: a batch of 3 tool calls counts as 3
      const three = await post([toolCall(1), toolCall(2), toolCall(3)]);
      t.equal(three.status, 200, three.text);
      t.equal(three.json?.length, 3, 'three answers');
      t.ok(three.json?.every((m: any) => m.result && !m.result.isError), 'each a tool result');
      // 5 spent: a batch of 2 takes the 6th with its request, and its second call does not fit
      const two = await post([toolCall(4), toolCall(5)]);
      t.equal(two.status, 429, `two more tool calls do not fit: ${two.text}`);
      t.ok(Number(two.headers.get('retry-after')) >= 1, 'with Retry-After');
      t.equal(two.json?.error?.code, 'RATE_LIMITED');
      t.match(two.json?.error?.message, /counts as 2 \(one per tool call\) and 1 of 6 per 600 s for \/mcp were left/);
      const one = await post(toolCall(6));
      t.equal(one.status, 429, 'and the budget is spent: the next request is refused before it is read');
    });

    await t.test('MCP: at most MCP_MAX_BATCH messages in a batch; a batch over the whole quota is refused whole', async (t) => {
      const post = await mcpSession(`budget-big-${kind}`);
      const pings = await post(Array.from({ length: MCP_MAX_BATCH + 1 }, (_, i) => ({ jsonrpc: '2.0', id: 100 + i, method: 'ping' })));
      t.equal(pings.status, 400, `a batch of ${MCP_MAX_BATCH + 1}: ${pings.text}`);
      t.equal(pings.json?.jsonrpc, '2.0');
      t.equal(pings.json?.error?.code, -32600, 'the JSON-RPC error Invalid Request');
      t.match(pings.json?.error?.message, new RegExp(`1 to ${MCP_MAX_BATCH} messages \\(this one ${MCP_MAX_BATCH + 1}\\)`));
      const ten = await post(Array.from({ length: MCP_MAX_BATCH }, (_, i) => ({ jsonrpc: '2.0', id: 200 + i, method: 'ping' })));
      t.equal(ten.status, 200, `${MCP_MAX_BATCH} pings are a batch: ${ten.text}`);
      t.equal(ten.json?.length, MCP_MAX_BATCH);
      const before = fake.requests.length;
      const big = await post(Array.from({ length: MCP_LIMIT + 1 }, (_, i) => toolCall(300 + i, 'ask_database')));
      t.equal(big.status, 429, big.text);
      t.match(big.json?.error?.message, /counts as 7 \(one per tool call\), more than the 6 per 600 s for \/mcp: send fewer at once/);
      t.equal(fake.requests.length, before, 'no question of it reached the model');
    });

    await t.test('WebSocket and SSE: each question counts as one', async (t) => {
      const wsUrl = `${stack.url.replace('http', 'ws')}/api/ws`;
      const ws = new WebSocket(wsUrl, { headers: { 'x-forwarded-for': `10.20.${kind.length}.1` } });
      const frames: any[] = [];
      ws.on('message', (b) => frames.push(JSON.parse(b.toString())));
      await new Promise((res, rej) => { ws.on('open', res); ws.on('error', rej); });
      t.teardown(() => ws.close());
      for (let i = 0; i < QUESTIONS + 2; i++) {
        ws.send(JSON.stringify({ type: 'ask', id: `q${i}`, question: 'how many items?' }));
        const until = Date.now() + 10_000;
        while (!frames.some((f) => f.ref === `q${i}` && f.event === 'end') && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      }
      const outcome = (i: number) => (frames.find((f) => f.ref === `q${i}` && (f.event === 'result' || f.event === 'error'))?.data?.error?.code ?? 'answered');
      t.same(Array.from({ length: QUESTIONS + 2 }, (_, i) => outcome(i)), [...Array(QUESTIONS).fill('answered'), 'RATE_LIMITED', 'RATE_LIMITED'], 'frames past the quota are refused one by one');

      const sse = [];
      for (let i = 0; i < QUESTIONS + 1; i++) {
        const res = await fetch(`${stack.url}/api/query`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'x-forwarded-for': `10.21.${kind.length}.1` }, body: JSON.stringify({ question: 'how many items?' }) });
        await res.text();
        sse.push(res.status);
      }
      t.same(sse, [...Array(QUESTIONS).fill(200), 429], 'and so are streams');
    });

    await t.test('an auto session is taken on the /auth routes only from the pages allowed_origins lists', async (t) => {
      const mint = await call(`${stack.url}/auth/auto-session`, { method: 'POST', headers: { origin: ORIGIN, 'x-forwarded-for': `10.30.${kind.length}.1` } });
      t.equal(mint.status, 200, mint.text);
      const sid = mint.body.session_id as string;
      // a sign-in from another site's page gets no cookie (login CSRF, edge/caller.ts `login`):
      // the cookie comes from one opened by a page the browser calls same-origin (ORIGIN as
      // Cortado's own public address, behind a proxy)
      t.equal(mint.headers.get('set-cookie'), null);
      const direct = await call(`${stack.url}/auth/auto-session`, { method: 'POST', headers: { origin: ORIGIN, 'sec-fetch-site': 'same-origin', 'x-forwarded-for': `10.30.${kind.length}.2` } });
      const cookie = (direct.headers.get('set-cookie') ?? '').split(';')[0]!;
      t.match(cookie, /^cortado_auth=./);
      // each request from an address of its own (an auto session counts as its address: /auth/session is limited)
      let n = 0;
      const from = (origin: string | undefined, extra: Record<string, string> = { 'x-session-id': sid }) => ({ ...extra, ...(origin ? { origin } : {}), 'x-forwarded-for': `10.31.${kind.length}.${++n}` });
      const evil = 'https://evil.example';
      const session = await call(`${stack.url}/auth/session`, { headers: from(evil) });
      t.equal(session.status, 403, `GET /auth/session from another page: ${session.text}`);
      t.match(session.body.error.message, /allowed_origins/);
      const ask = await call(`${stack.url}/auth/query`, { body: { question: 'how many items?' }, headers: from(evil) });
      t.equal(ask.status, 403, 'POST /auth/query from another page');
      const tables = await call(`${stack.url}/auth/tables`, { headers: from(evil) });
      t.equal(tables.status, 403, 'GET /auth/tables from another page');
      const byCookie = await call(`${stack.url}/auth/session`, { headers: from(evil, { cookie }) });
      t.equal(byCookie.status, 403, 'the cookie too');
      const workspace = await call(`${stack.url}/api/workspace`, { headers: from(evil, { cookie }) });
      t.equal(workspace.status, 403, 'and a signed_in route taking the cookie');
      t.equal((await call(`${stack.url}/auth/session`, { headers: from(ORIGIN) })).status, 200, 'from the allowed page');
      t.equal((await call(`${stack.url}/auth/session`, { headers: from(`${ORIGIN}/`) })).status, 200, 'spelt with a slash');
      t.equal((await call(`${stack.url}/auth/session`, { headers: from(undefined) })).status, 200, 'and from no page at all (no Origin: not a browser page)');
    });

    await t.test('a fresh auto session is no fresh budget: it counts as its address', async (t) => {
      const address = `10.40.${kind.length}.1`;
      const statuses: number[] = [];
      for (let i = 0; i < SESSION_READS + 1; i++) {
        const mint = await call(`${stack.url}/auth/auto-session`, { method: 'POST', headers: { origin: ORIGIN, 'x-forwarded-for': address } });
        t.equal(mint.status, 200, mint.text);
        const read = await call(`${stack.url}/auth/session`, { headers: { 'x-session-id': mint.body.session_id, origin: ORIGIN, 'x-forwarded-for': address } });
        statuses.push(read.status);
      }
      t.same(statuses, [...Array(SESSION_READS).fill(200), 429], `${SESSION_READS + 1} auto sessions from one address share its ${SESSION_READS}`);
      const elsewhere = await call(`${stack.url}/auth/auto-session`, { method: 'POST', headers: { origin: ORIGIN, 'x-forwarded-for': `10.41.${kind.length}.1` } });
      const other = await call(`${stack.url}/auth/session`, { headers: { 'x-session-id': elsewhere.body.session_id, origin: ORIGIN, 'x-forwarded-for': `10.41.${kind.length}.1` } });
      t.equal(other.status, 200, 'another address has its own');
    });
  });
}

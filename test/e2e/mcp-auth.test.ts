/**
 * MCP authentication and session life: 401 before any session for missing, invalid and revoked
 * tokens (header, bearer and query forms, both transports); a revoked token's open streams are
 * closed; a session answers only the token that opened it; the Streamable HTTP rules (session
 * header, protocol version, one stream, DELETE); the transports switch off at run time; the
 * query-string token never reaches a log line.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import t from 'tap';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { runCortado } from '../../cli/run.js';
import { mcpSessionRegistry, type McpSession } from '../../edge/mcp/session.js';
import { createLogger } from '../../runtime/log.js';
import { ALL_ACTORS, ConfigReset, ConfigUpdate } from '../../protocol/subjects.js';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { testConfig } from '../helpers/config.js';
import { closeClient, connectClient, INITIALIZE, issueToken, openRawSse, postMessage, revokeToken, until } from '../helpers/mcp.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call } from '../helpers/stack.js';

const nats = await startNats();
const db = await createTestDb('mcpauth');
await db.pool.query(GUARD_SCHEMA_SQL);
const config = testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  // node:http here (the other MCP tests run on uWebSockets.js where it loads): the transports use only the adapter
  extra: { app: { http_server: 'node' }, config_db: { encryption_key: generateFernetKey() } },
});
// every log line of the process, to prove no token reaches one
const lines: string[] = [];
const sink = new Writable({ write(chunk, _enc, done) { lines.push(...String(chunk).split('\n').filter(Boolean)); done(); } });
const log = createLogger({ svc: 'test', level: 'info', destination: sink });
const running = await runCortado({ config, roles: { edge: true, actors: [...ALL_ACTORS] }, log, port: 0, host: '127.0.0.1', name: 'mcp-auth' });
const base = `http://127.0.0.1:${running.edge!.port}`;
const bus = running.bus;
const registry = mcpSessionRegistry(bus)!;
t.teardown(async () => {
  await running.stop(3_000);
  await db.drop();
  await nats.stop();
});

const initHeaders = { accept: 'application/json, text/event-stream' };

/** POST initialize to /mcp; returns the status, the session id and the body. */
async function initialize(headers: Record<string, string>, query = ''): Promise<{ status: number; session: string | null; body: any }> {
  const res = await fetch(`${base}/mcp${query}`, { method: 'POST', headers: { 'content-type': 'application/json', ...initHeaders, ...headers }, body: JSON.stringify(INITIALIZE(1)) });
  const text = await res.text();
  let body: any;
  try { body = JSON.parse(text); } catch { body = text; }
  return { status: res.status, session: res.headers.get('mcp-session-id'), body };
}

t.test('no token, a wrong one or a revoked one: 401 and no session, on every form and transport', async (t) => {
  t.equal(running.edge!.kind, 'node');
  const revoked = await issueToken(bus, 'mallory');
  await revokeToken(bus, revoked.id);
  const cases: Array<[string, string | undefined]> = [
    ['missing', undefined],
    ['not a token', 'hello'],
    ['unknown token', `ctd_${'x'.repeat(43)}`],
    ['revoked token', revoked.token],
  ];
  for (const [what, token] of cases) {
    const forms: Array<[string, Record<string, string>, string]> = token === undefined
      ? [['none', {}, '']]
      : [['x-mcp-token', { 'x-mcp-token': token }, ''], ['query', {}, `?token=${encodeURIComponent(token)}`], ['bearer', { authorization: `Bearer ${token}` }, '']];
    for (const [form, headers, query] of forms) {
      const before = registry.size;
      const sse = await openRawSse(`${base}/mcp/sse${query}`, headers);
      t.equal(sse.status, 401, `SSE, ${what}, ${form}: 401`);
      t.equal(JSON.parse(sse.body).error.code, 'UNAUTHORIZED');
      const http = await initialize(headers, query);
      t.equal(http.status, 401, `Streamable HTTP, ${what}, ${form}: 401`);
      t.equal(http.body.error.code, 'UNAUTHORIZED');
      t.equal(http.session, null, 'no session id handed out');
      t.equal(registry.size, before, 'no session created');
    }
  }
  t.equal(registry.size, 0);
});

t.test('revoking a token closes its open streams, and only its own', async (t) => {
  const doomed = await issueToken(bus, 'bob');
  const other = await issueToken(bus, 'carol');

  const sse = await openRawSse(`${base}/mcp/sse?token=${doomed.token}`);
  t.equal(sse.status, 200);
  const endpoint = (await sse.next('endpoint')).data;
  t.match(endpoint, /^\/mcp\/messages\/\?sessionId=[0-9a-f-]{36}$/);

  const init = await initialize({ 'x-mcp-token': doomed.token });
  t.equal(init.status, 200);
  t.ok(init.session);
  const stream = await openRawSse(`${base}/mcp`, { 'x-mcp-token': doomed.token, 'mcp-session-id': init.session! });
  t.equal(stream.status, 200, 'GET /mcp opens the session stream');

  const survivor = await connectClient(base, 'sse', other.token);
  t.equal(registry.size, 3);
  t.equal(registry.ofToken(doomed.id).length, 2);

  await revokeToken(bus, doomed.id);
  await Promise.all([sse.ended, stream.ended]);
  t.pass('both streams of the revoked token ended');
  await until(() => registry.ofToken(doomed.id).length === 0, 5_000, 'the sessions to be forgotten');
  t.equal(registry.size, 1, 'the other token\'s session stays');
  t.same((await survivor.listTools()).tools.length, 3, 'and still works');

  const late = await postMessage(`${base}${endpoint}`, { jsonrpc: '2.0', id: 5, method: 'tools/list' }, { 'x-mcp-token': doomed.token });
  t.equal(late, 401, 'the revoked token hears 401 on its old session');
  const lateHttp = await fetch(`${base}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', ...initHeaders, 'x-mcp-token': doomed.token, 'mcp-session-id': init.session! }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) });
  t.equal(lateHttp.status, 401);
  await closeClient(survivor);
  await until(() => registry.size === 0, 5_000, 'the last session to end');
});

t.test('a session answers only the token that opened it', async (t) => {
  const a = await issueToken(bus, 'alice');
  const b = await issueToken(bus, 'bob');
  const sse = await openRawSse(`${base}/mcp/sse`, { 'x-mcp-token': a.token });
  const endpoint = `${base}${(await sse.next('endpoint')).data}`;
  t.equal(await postMessage(endpoint, INITIALIZE(1), { 'x-mcp-token': b.token }), 401, 'another user\'s token is refused');
  t.equal(await postMessage(endpoint, INITIALIZE(1)), 202, 'no token: the session id is the capability the SSE transport gives');
  const init = JSON.parse((await sse.next('message')).data);
  t.equal(init.id, 1);
  t.equal(init.result.serverInfo.name, 'cortado');
  t.equal(await postMessage(endpoint, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'x-mcp-token': a.token }), 202);
  t.equal(await postMessage(endpoint, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_tables', arguments: {} } }), 202);
  const listed = JSON.parse((await sse.next('message')).data);
  t.equal(listed.id, 2);
  t.ok(listed.result.structuredContent.tables.some((x: { name: string }) => x.name === 'orders'));
  t.equal(await postMessage(`${base}/mcp/messages/?sessionId=${randomUUID()}`, INITIALIZE(1)), 404, 'an unknown session');
  t.equal((await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hi' })).status, 415);
  t.equal((await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' })).status, 400);
  t.equal((await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"hello": 1}' })).status, 400, 'not JSON-RPC');

  const init2 = await initialize({ authorization: `Bearer ${a.token}` });
  t.equal(init2.status, 200);
  t.equal(init2.body.result.serverInfo.name, 'cortado', 'the initialize answer as JSON');
  const post = (token: string, session: string | null, message: unknown, extra: Record<string, string> = {}) =>
    fetch(`${base}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', ...initHeaders, 'x-mcp-token': token, ...(session ? { 'mcp-session-id': session } : {}), ...extra }, body: JSON.stringify(message) });
  t.equal((await post(b.token, init2.session, { jsonrpc: '2.0', id: 2, method: 'tools/list' })).status, 404, 'another token does not find the session');
  t.equal((await post(a.token, null, { jsonrpc: '2.0', id: 2, method: 'tools/list' })).status, 400, 'the session header is required after initialize');
  t.equal((await post(a.token, init2.session, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, { 'mcp-protocol-version': '1999-01-01' })).status, 400, 'an unknown protocol version');
  t.equal((await post(a.token, init2.session, INITIALIZE(3))).status, 400, 'initialize twice');
  t.equal((await post(a.token, init2.session, { jsonrpc: '2.0', method: 'notifications/initialized' })).status, 202, 'a notification: 202');
  const batch = await post(a.token, init2.session, [{ jsonrpc: '2.0', id: 7, method: 'tools/list' }, { jsonrpc: '2.0', id: 8, method: 'ping' }], { accept: 'application/json' });
  t.equal(batch.status, 200);
  const answers = (await batch.json()) as Array<{ id: number }>;
  t.same(answers.map((x) => x.id).sort(), [7, 8], 'a batch is answered with an array');
  const streamed = await post(a.token, init2.session, { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'get_schema', arguments: { table: 'orders' } } });
  t.match(streamed.headers.get('content-type'), /^text\/event-stream/, 'a tool call is answered as a stream when the client takes one');
  t.match(await streamed.text(), /event: message\ndata: \{"result":\{"content"/);

  const noAccept = await fetch(`${base}/mcp`, { headers: { 'x-mcp-token': a.token, 'mcp-session-id': init2.session! } });
  t.equal(noAccept.status, 406, 'GET /mcp needs Accept: text/event-stream');
  const first = await openRawSse(`${base}/mcp`, { 'x-mcp-token': a.token, 'mcp-session-id': init2.session! });
  t.equal(first.status, 200);
  const second = await openRawSse(`${base}/mcp`, { 'x-mcp-token': a.token, 'mcp-session-id': init2.session! });
  t.equal(second.status, 409, 'one session stream at a time');
  const del = await fetch(`${base}/mcp`, { method: 'DELETE', headers: { 'x-mcp-token': a.token, 'mcp-session-id': init2.session! } });
  t.equal(del.status, 200);
  await first.ended;
  t.pass('DELETE ends the session and its stream');
  t.equal((await post(a.token, init2.session, { jsonrpc: '2.0', id: 10, method: 'tools/list' })).status, 404, 'a deleted session is gone');
  sse.close();
  await until(() => registry.size === 0, 5_000, 'the sessions to end');
});

t.test('a session ends when its token expires', async (t) => {
  let closed = '';
  const session: McpSession = {
    info: {
      id: 'expiring', transport: 'sse', username: 'x', tokenId: 'tok', dbConfig: {}, maskRules: [], dialect: 'postgresql', discovery: false,
      createdAt: new Date().toISOString(), expiresAt: new Date(Date.now() + 150).toISOString(),
    },
    tokenDigest: '',
    lastSeen: Date.now(),
    busy: () => true,
    async close(reason) {
      closed = reason;
      registry.remove('expiring');
    },
  };
  registry.add(session);
  t.equal(registry.size, 1);
  await until(() => closed !== '', 2_000, 'the expiry');
  t.equal(closed, 'token expired');
  t.equal(registry.size, 0);
});

t.test('the transports switch off at run time (404), and back on', async (t) => {
  const { token } = await issueToken(bus, 'dave');
  const set = (key: string, value: unknown) => bus.request(ConfigUpdate, { key, value, by: 'admin' }, { requestId: randomUUID() });
  const reset = (key: string) => bus.request(ConfigReset, { key, by: 'admin' }, { requestId: randomUUID() });
  await set('mcp.sse.enabled', false);
  await set('mcp.streamable_http.enabled', false);
  await until(() => !config.mcp.sse.enabled && !config.mcp.streamable_http.enabled, 5_000, 'the change to apply');
  const sse = await openRawSse(`${base}/mcp/sse`, { 'x-mcp-token': token });
  t.equal(sse.status, 404);
  t.equal((await initialize({ 'x-mcp-token': token })).status, 404);
  t.equal(registry.size, 0);
  await reset('mcp.sse.enabled');
  await reset('mcp.streamable_http.enabled');
  await until(() => config.mcp.sse.enabled && config.mcp.streamable_http.enabled, 5_000, 'the reset to apply');
  const client = await connectClient(base, 'http', token);
  t.equal((await client.listTools()).tools.length, 3);
  await closeClient(client);
});

t.test('the query-string token is never logged', async (t) => {
  const { token } = await issueToken(bus, 'erin');
  const sse = await openRawSse(`${base}/mcp/sse?token=${token}&x=1`);
  t.equal(sse.status, 200);
  await sse.next('endpoint');
  sse.close();
  const refused = await call(`${base}/mcp/sse?token=ctd_wrong${'y'.repeat(40)}`);
  t.equal(refused.status, 401);
  await until(() => registry.size === 0, 5_000, 'the session to end');
  await until(() => lines.some((l) => l.includes('"status":401') && l.includes('/mcp/sse')), 2_000, 'the request lines');
  const secret = token.slice(4);
  t.notOk(lines.some((l) => l.includes(secret)), 'the token appears in no log line');
  t.notOk(lines.some((l) => l.includes('ctd_wrong')), 'nor does a wrong one');
  const logged = lines.filter((l) => l.includes('"msg":"http"') && l.includes('/mcp/sse')).map((l) => JSON.parse(l).path as string);
  t.ok(logged.includes('/mcp/sse?token=[redacted]&x=1'), 'the request line keeps the path with the token redacted');
  t.ok(lines.some((l) => l.includes('MCP session opened') && l.includes('"user":"erin"')), 'the session is logged by user');
});

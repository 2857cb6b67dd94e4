/**
 * 200 MCP sessions over SSE at once, each initializing and calling list_tables on its own
 * stream, then disconnecting: every one is served, and the registry is back to zero.
 */
import t from 'tap';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { mcpSessionRegistry } from '../../edge/mcp/session.js';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { testConfig } from '../helpers/config.js';
import { INITIALIZE, issueToken, openRawSse, postMessage, until } from '../helpers/mcp.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { startStack } from '../helpers/stack.js';

const SESSIONS = 200;

const nats = await startNats();
const db = await createTestDb('mcpload');
await db.pool.query(GUARD_SCHEMA_SQL);
const config = testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  extra: { config_db: { encryption_key: generateFernetKey() } },
});
const stack = await startStack(config);
const registry = mcpSessionRegistry(stack.running.bus)!;
t.teardown(async () => {
  await stack.stop();
  await db.drop();
  await nats.stop();
});

t.test(`${SESSIONS} concurrent SSE sessions are served and cleaned up`, async (t) => {
  const { token } = await issueToken(stack.running.bus, 'loadtest');
  const started = performance.now();
  const streams = await Promise.all(Array.from({ length: SESSIONS }, () => openRawSse(`${stack.url}/mcp/sse`, { 'x-mcp-token': token })));
  t.ok(streams.every((s) => s.status === 200), 'every stream opened');
  const endpoints = await Promise.all(streams.map(async (s) => `${stack.url}${(await s.next('endpoint', 30_000)).data}`));
  t.equal(new Set(endpoints).size, SESSIONS, 'each with its own session');
  t.equal(registry.count('sse'), SESSIONS, 'all open at once');
  const opened = performance.now();

  const results = await Promise.all(streams.map(async (s, i) => {
    const endpoint = endpoints[i]!;
    if (await postMessage(endpoint, INITIALIZE(1)) !== 202) return 'initialize refused';
    const init = JSON.parse((await s.next('message', 30_000)).data);
    if (init.id !== 1 || !init.result) return 'no initialize answer';
    if (await postMessage(endpoint, { jsonrpc: '2.0', method: 'notifications/initialized' }) !== 202) return 'initialized refused';
    if (await postMessage(endpoint, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_tables', arguments: {} } }) !== 202) return 'call refused';
    const reply = JSON.parse((await s.next('message', 30_000)).data);
    if (reply.id !== 2 || reply.result?.isError) return `call failed: ${JSON.stringify(reply).slice(0, 200)}`;
    return reply.result.structuredContent.tables.some((x: { name: string }) => x.name === 'orders') ? 'ok' : 'no tables';
  }));
  const served = performance.now();
  const failures = results.filter((r) => r !== 'ok');
  t.same(failures, [], 'every session initialized and listed the tables');
  t.equal(registry.count('sse'), SESSIONS, 'still open until the clients go');

  for (const s of streams) s.close();
  await until(() => registry.size === 0, 20_000, 'every session to end');
  t.equal(registry.size, 0, 'the registry is empty after the disconnects');
  t.comment(`open ${SESSIONS}: ${Math.round(opened - started)} ms; initialize + list_tables on all: ${Math.round(served - opened)} ms; cleanup: ${Math.round(performance.now() - served)} ms`);
});

/**
 * One caller (edge/caller.ts), over HTTP and MCP against a real stack: every route says what it
 * needs of its caller; a stranger is refused before any body is read; a conversation belongs
 * to whoever started it (another widget or session with the same id starts its own); and the
 * MCP row cap travels in the question down to the database (the SQL that ran asks for no more
 * rows than mcp.max_rows), with one limit per field on every door.
 */
import t from 'tap';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { closeClient, connectClient, issueToken } from '../helpers/mcp.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb, dropRoles } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';

const MAX_ROWS = 3;
const tag = `${process.pid}_${Date.now().toString(36)}`;
const role = `caller_${tag}`;
const PASSWORD = 'caller-pw-1';
const nats = await startNats();
const db = await createTestDb('caller');
await db.pool.query(`
  CREATE TABLE items (id int PRIMARY KEY, name text);
  INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 20) g;
  CREATE ROLE ${role} LOGIN PASSWORD '${PASSWORD}';
  GRANT CONNECT ON DATABASE ${db.name} TO ${role};
  GRANT USAGE ON SCHEMA public TO ${role};
  GRANT SELECT ON items TO ${role};
`);
const fake = await startFakeLlm();
fake.fallback(() => ({ text: sqlAnswer('SELECT count(*) AS n FROM items') }));
const config = testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: {
    // the test client is the trusted proxy: X-Forwarded-For names the widget's address
    app: { trusted_proxies: ['127.0.0.1'] },
    admin: { enabled: true, username: 'admin', password: 'caller-admin-pw' },
    config_db: { encryption_key: generateFernetKey() },
    mcp: { max_rows: MAX_ROWS },
    plugins: { auth: { enabled: true } },
  },
});
const stack = await startStack(config);
t.teardown(async () => {
  await stack.stop();
  await fake.close();
  await db.drop();
  await dropRoles(role);
  await nats.stop();
});

/** Everything the model was shown for the last question. */
const lastPrompt = (): string => {
  const r = fake.requests.at(-1)!;
  return [r.system, ...r.messages.map((m) => m.content)].join('\n');
};

t.test('every route says what it needs of its caller', async (t) => {
  const table = stack.running.edge!.routes.map((r) => `${r.method} ${r.pattern} ${r.auth}`);
  t.same(table, [
    'GET /health none',
    'GET /metrics none',
    'POST /api/query open',
    'POST /query any',
    'POST /query/confirm-execute any',
    'GET /api/insights/:id none',
    'POST /admin/login login',
    'POST /admin/logout admin',
    'GET /admin/session admin',
    'POST /assistant/login login',
    'POST /assistant/logout assistant',
    'GET /assistant/session assistant',
    'GET /admin/config admin',
    'GET /admin/config/schema admin',
    'PUT /admin/config/:key admin',
    'DELETE /admin/config/:key admin',
    'GET /admin/config-history admin',
    'GET /admin/prompts admin',
    'PUT /admin/prompts/:key admin',
    'DELETE /admin/prompts/:key admin',
    'POST /admin/eval admin',
    'GET /admin/tokens admin',
    'POST /admin/tokens admin',
    'POST /admin/tokens/:id/revoke admin',
    'DELETE /admin/tokens/:id admin',
    'GET /admin/mask-rules admin',
    'POST /admin/mask-rules admin',
    'PUT /admin/mask-rules/:id admin',
    'DELETE /admin/mask-rules/:id admin',
    'GET /admin/audit admin',
    'GET /admin/audit.csv admin',
    'GET /admin/ldap admin',
    'PUT /admin/ldap admin',
    'POST /admin/ldap/test admin',
    'POST /admin/test-email admin',
    'GET /api/tables open',
    'GET /api/tables/:name open',
    'GET /tables open',
    'GET /auth/config none',
    'POST /auth/login login',
    'POST /auth/auto-session login',
    'POST /auth/logout auth',
    'GET /auth/session auth',
    'POST /auth/query auth',
    'POST /auth/query/confirm auth',
    'GET /auth/tables auth',
    'GET /auth/schema/:table auth',
    'GET /auth/discover auth',
    'POST /auth/tokens auth',
    'GET /mcp/sse token',
    'POST /mcp/messages/ token',
    'POST /mcp token',
    'GET /mcp token',
    'DELETE /mcp token',
    'GET /api/analytics/report admin',
    'GET /api/analytics/per_day admin',
    'GET /api/analytics/steps admin',
    'GET /api/analytics/errors admin',
    'GET /api/analytics/models admin',
    'GET /api/analytics/models_per_day admin',
    'GET /api/analytics/channels admin',
    'GET /api/analytics/widgets admin',
    'GET /api/analytics/tables admin',
    'GET /api/analytics/users admin',
    'GET /api/analytics/slowest admin',
    'GET /api/analytics/disliked admin',
    'GET /api/analytics/totals admin',
    'POST /api/feedback any',
    'GET /api/semantic/entities admin_or_any',
    'POST /api/semantic/entities admin',
    'GET /api/semantic/entities/:id admin_or_any',
    'PUT /api/semantic/entities/:id admin',
    'PATCH /api/semantic/entities/:id admin',
    'DELETE /api/semantic/entities/:id admin',
    'POST /api/semantic/entities/:id/columns admin',
    'PUT /api/semantic/entities/:id/columns/:column_id admin',
    'PATCH /api/semantic/entities/:id/columns/:column_id admin',
    'DELETE /api/semantic/entities/:id/columns/:column_id admin',
    'GET /api/semantic/relationships admin_or_any',
    'POST /api/semantic/relationships admin',
    'GET /api/semantic/relationships/:id admin_or_any',
    'PUT /api/semantic/relationships/:id admin',
    'PATCH /api/semantic/relationships/:id admin',
    'DELETE /api/semantic/relationships/:id admin',
    'GET /api/semantic/metrics admin_or_any',
    'POST /api/semantic/metrics admin',
    'GET /api/semantic/metrics/:id admin_or_any',
    'PUT /api/semantic/metrics/:id admin',
    'PATCH /api/semantic/metrics/:id admin',
    'POST /api/semantic/metrics/:id/activate admin',
    'POST /api/semantic/metrics/:id/deactivate admin',
    'DELETE /api/semantic/metrics/:id admin',
    'GET /api/semantic/context admin_or_any',
    'POST /api/semantic/discover admin',
    'POST /api/schedules/cron-preview signed_in',
    'POST /api/schedules signed_in',
    'GET /api/schedules signed_in',
    'GET /api/schedules/:id signed_in',
    'PUT /api/schedules/:id signed_in',
    'PATCH /api/schedules/:id signed_in',
    'DELETE /api/schedules/:id signed_in',
    'POST /api/schedules/:id/pause signed_in',
    'POST /api/schedules/:id/resume signed_in',
    'POST /api/schedules/:id/run signed_in',
    'GET /api/schedules/:id/history signed_in',
    'POST /api/export signed_in',
    'GET /api/ops/status admin',
    'GET /api/ops/:operation admin',
    'GET /api/alarms admin',
    'POST /api/alarms admin',
    'POST /api/alarms/test admin',
    'GET /api/alarms/:id admin',
    'PUT /api/alarms/:id admin',
    'DELETE /api/alarms/:id admin',
    'POST /api/alarms/:id/test admin',
    'GET /api/alarms/:id/history admin',
    'GET /api/workspace signed_in',
    'GET /api/history signed_in',
    'POST /api/history signed_in',
    'PUT /api/history/:id signed_in',
    'DELETE /api/history/:id signed_in',
    'GET /api/dashboards signed_in',
    'POST /api/dashboards signed_in',
    'GET /api/dashboards/:id signed_in',
    'PUT /api/dashboards/:id signed_in',
    'DELETE /api/dashboards/:id signed_in',
    'POST /api/tiles/run signed_in',
    'GET /auth/tokens auth',
    'DELETE /auth/tokens/:id auth',
    'GET /api/me none',
    'GET /api/ws none',
    'GET / none',
    'GET /ui/config none',
    'GET /admin none',
    'GET /analytics none',
    'GET /ops none',
    'GET /demo none',
    'GET /static/* none',
    'GET /vendor/:file none',
    'GET /widget.js none',
    'GET /openapi.json none',
    'GET /asyncapi.json none',
    'GET /api-docs none',
  ]);
});

t.test('session routes refuse a stranger before reading the body; cookie writes need the CSRF header', async (t) => {
  const guarded = stack.running.edge!.routes.filter((r) => r.auth === 'admin' || r.auth === 'assistant' || r.auth === 'auth');
  t.ok(guarded.length > 30);
  for (const r of guarded) {
    const path = r.pattern.replace(/:[a-z]+/g, 'x');
    const body = r.method === 'GET' ? {} : { raw: '{"not json', headers: { 'content-type': 'application/json' } };
    const res = await call(`${stack.url}${path}`, { method: r.method, ...body });
    t.equal(res.status, 401, `${r.method} ${r.pattern}: ${res.text}`);
    t.equal(res.body?.error?.code, 'UNAUTHORIZED');
  }

  const admin = await call(`${stack.url}/admin/login`, { body: { username: 'admin', password: 'caller-admin-pw' } });
  t.equal(admin.status, 200, admin.text);
  const cookie = (admin.headers.get('set-cookie') ?? '').split(';')[0]!;
  const noCsrf = await call(`${stack.url}/admin/mask-rules`, { body: { field_pattern: 'x', strategy: 'hash' }, headers: { cookie } });
  t.equal(noCsrf.status, 403, 'a cookie write without the CSRF header');
  const read = await call(`${stack.url}/admin/mask-rules`, { headers: { cookie } });
  t.equal(read.status, 200, 'a read needs none');
  const wrongKind = await call(`${stack.url}/assistant/session`, { headers: { cookie } });
  t.equal(wrongKind.status, 401, 'the admin cookie is no assistant session');

  const login = await call(`${stack.url}/auth/login`, { body: { username: role, password: PASSWORD } });
  t.equal(login.status, 200, login.text);
  const authCookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
  const cookieWrite = await call(`${stack.url}/auth/tokens`, { body: { label: 'x' }, headers: { cookie: authCookie } });
  t.equal(cookieWrite.status, 403, 'an auth cookie write without the CSRF header');
  const headerWrite = await call(`${stack.url}/auth/tokens`, { body: { label: 'x' }, headers: { 'x-session-id': login.body.session_id } });
  t.equal(headerWrite.status, 201, `the X-Session-ID header needs none: ${headerWrite.text}`);
});

t.test('a legacy conversation belongs to the widget that started it (session_id and address)', async (t) => {
  const ask = (question: string, address: string) => call(`${stack.url}/query`, { body: { question, session_id: 'widget-7' }, headers: { 'x-forwarded-for': address } });
  const first = await ask('which item came first?', '10.9.0.1');
  t.equal(first.status, 200, first.text);
  t.equal(first.body.session_id, 'widget-7');
  const stranger = await ask('and the next one?', '10.9.0.2');
  t.equal(stranger.status, 200, stranger.text);
  t.notMatch(lastPrompt(), /which item came first/, 'another address with the same session_id does not see the conversation');
  const same = await ask('and the last one?', '10.9.0.1');
  t.equal(same.status, 200, same.text);
  t.match(lastPrompt(), /which item came first\?/, 'the widget that started it does');
  t.notMatch(lastPrompt(), /and the next one/, 'and never the stranger\'s turn');
});

t.test('an auth session\'s conversation is its own; its id takes the same 128 characters as everywhere', async (t) => {
  const session = async (): Promise<string> => {
    const r = await call(`${stack.url}/auth/login`, { body: { username: role, password: PASSWORD } });
    t.equal(r.status, 200, r.text);
    return r.body.session_id as string;
  };
  const [a, b] = [await session(), await session()];
  const conversation_id = `c${'x'.repeat(127)}`;
  const ask = (sid: string, question: string, id = conversation_id) => call(`${stack.url}/auth/query`, { body: { question, conversation_id: id }, headers: { 'x-session-id': sid } });
  const first = await ask(a, 'how many items are there?');
  t.equal(first.status, 200, first.text);
  t.equal(first.body.conversation_id, conversation_id, 'the id comes back as sent');
  t.same(first.body.data, [[20]], 'on the session\'s own connection');
  await ask(b, 'how many now?');
  t.notMatch(lastPrompt(), /how many items are there/, 'another session with the same id starts its own conversation');
  await ask(a, 'and now?');
  t.match(lastPrompt(), /how many items are there\?/, 'the session that started it continues it');
  const tooLong = await ask(a, 'x', `${conversation_id}y`);
  t.equal(tooLong.status, 400, '129 characters');
  t.match(tooLong.body.error.message, /\/conversation_id/);
  const api = await call(`${stack.url}/api/query`, { body: { question: 'x', conversation_id: `${conversation_id}y` } });
  t.equal(api.status, 400, 'the same limit on /api/query');
});

t.test('MCP: the row cap reaches the database; tables take the same limit as HTTP', async (t) => {
  const { token } = await issueToken(stack.running.bus, 'caller-mcp');
  const client = await connectClient(stack.url, 'http', token);
  t.teardown(() => closeClient(client));
  type ToolResult = { structuredContent?: any; isError?: boolean; content: Array<{ text?: string }> };

  fake.script({ text: sqlAnswer('SELECT id, name FROM items ORDER BY id LIMIT 500') });
  const capped = (await client.callTool({ name: 'ask_database', arguments: { question: 'all items?' } })) as ToolResult;
  t.notOk(capped.isError, capped.content[0]?.text ?? '');
  const s = capped.structuredContent;
  t.match(s.sql, new RegExp(`LIMIT ${MAX_ROWS}$`), 'the SQL that ran asks the database for no more than mcp.max_rows');
  t.equal(s.rows.length, MAX_ROWS);
  t.same(s.rows[0], [1, 'item 1']);
  t.equal(s.truncated, true, 'and says the result was cut');

  fake.script({ text: sqlAnswer('SELECT id FROM items ORDER BY id LIMIT 2') });
  const small = (await client.callTool({ name: 'ask_database', arguments: { question: 'two items?' } })) as ToolResult;
  t.equal(small.structuredContent.rows.length, 2);
  t.equal(small.structuredContent.truncated, false, 'a result under the cap is whole');

  fake.script({ text: sqlAnswer('SELECT count(*) AS n FROM items') });
  const hinted = (await client.callTool({ name: 'ask_database', arguments: { question: 'count?', tables: Array.from({ length: 60 }, () => 'items') } })) as ToolResult;
  t.notOk(hinted.isError, hinted.content[0]?.text ?? '');
  t.same(hinted.structuredContent.rows, [[20]], '60 table hints are arguments MCP takes, as HTTP does (it took 50)');
  let refused: unknown;
  try {
    await client.callTool({ name: 'ask_database', arguments: { question: 'count?', tables: Array.from({ length: 201 }, (_, i) => `t${i}`) } });
  } catch (err) {
    refused = err;
  }
  t.ok(refused instanceof McpError, '201 table hints are bad arguments');
  t.match((refused as McpError).message, /invalid arguments for ask_database: \/tables/);
});

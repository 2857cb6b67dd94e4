/**
 * The MCP tools end to end, with the official SDK client over SSE and over Streamable HTTP:
 * every actor on a private NATS, a real PostgreSQL, a local server speaking Anthropic's API.
 * Also the MCP Inspector CLI (a client nobody here wrote) against both transports.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { ROOT } from '../../config/load.js';
import { mcpSessionRegistry } from '../../edge/mcp/session.js';
import { ConfigReset, ConfigUpdate, MaskRuleCreate } from '../../protocol/subjects.js';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { testConfig } from '../helpers/config.js';
import { chatAnswer, sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { closeClient, connectClient, issueToken, until, type TransportKind } from '../helpers/mcp.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { startStack } from '../helpers/stack.js';

const run = promisify(execFile);

const nats = await startNats();
const db = await createTestDb('mcp');
await db.pool.query(GUARD_SCHEMA_SQL);
await db.pool.query("ALTER TABLE customers ADD COLUMN email text; UPDATE customers SET email = lower(name) || '@example.com'");
const fake = await startFakeLlm();
const MAX_ROWS = 3;
const config = testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: { mcp: { max_rows: MAX_ROWS }, config_db: { encryption_key: generateFernetKey() }, plugins: { auth: { enabled: true } } },
});
const stack = await startStack(config);
const bus = stack.running.bus;
const registry = mcpSessionRegistry(bus)!;
// a mask rule from the start: the masking actor reads the rule store every few seconds
await bus.request(MaskRuleCreate, { field_pattern: 'email', strategy: 'redact', description: 'mcp test' }, { requestId: 'mask-create' });
const { token, id: tokenId } = await issueToken(bus, 'alice', { db_config: { catalog: 'shop', password: 'db-secret' } });
t.teardown(async () => {
  await stack.stop();
  await fake.close();
  await db.drop();
  await nats.stop();
});

t.beforeEach(() => {
  fake.requests.length = 0;
  fake.fallback(() => ({ status: 500, message: 'unscripted' }));
});

/** The protocol error a call was answered with (undefined when it got a result). */
async function protocolError(p: Promise<unknown>): Promise<McpError | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    if (err instanceof McpError) return err;
    throw err;
  }
}

type ToolResult = { content: Array<{ type: string; text?: string }>; structuredContent?: any; isError?: boolean };
const textOf = (r: ToolResult): string => r.content.map((c) => c.text ?? '').join('\n');

for (const kind of ['sse', 'http'] as TransportKind[]) {
  t.test(`${kind}: list the tools, call each one`, async (t) => {
    const client = await connectClient(stack.url, kind, token);
    t.equal(registry.size, 1, 'one session while connected');
    t.equal(registry.count(kind === 'sse' ? 'sse' : 'streamable_http'), 1);
    const [session] = registry.ofToken(tokenId);
    t.equal(session?.info.username, 'alice', 'the session knows its user');
    t.equal(session?.info.dialect, 'postgresql', 'and the dialect of the provider');
    t.same(session?.info.dbConfig, { catalog: 'shop', password: '********' }, 'and the token\'s scope, secrets masked');
    t.same(session?.info.maskRules, [{ field_pattern: 'email', strategy: 'redact' }], 'and the active mask rules');
    t.equal(client.getServerVersion()?.name, 'cortado');

    const { tools } = await client.listTools();
    t.same(tools.map((x) => x.name), ['ask_database', 'list_tables', 'get_schema'], 'discover_tables is not advertised while discovery is off');
    for (const tool of tools) {
      t.ok(tool.description && tool.description.length < 120, `${tool.name}: a short description`);
      t.equal(tool.inputSchema.type, 'object');
    }

    const list = (await client.callTool({ name: 'list_tables', arguments: {} })) as ToolResult;
    t.notOk(list.isError, textOf(list));
    const names = list.structuredContent.tables.map((x: { name: string }) => x.name);
    for (const n of ['customers', 'orders', 'paid_orders', 'sales.targets']) t.ok(names.includes(n), `list_tables names ${n}`);
    t.match(textOf(list), /^orders -- one row per order$/m, 'the text names each table with its comment');
    t.match(textOf(list), /^paid_orders \(view\)$/m);

    const schema = (await client.callTool({ name: 'get_schema', arguments: { table: 'orders' } })) as ToolResult;
    t.notOk(schema.isError, textOf(schema));
    t.equal(schema.structuredContent.table, 'orders');
    t.same(schema.structuredContent.columns.find((c: { name: string }) => c.name === 'amount'), { name: 'amount', type: 'numeric(12,2)', nullable: false, comment: 'order total in EUR' });
    t.match(textOf(schema), /amount numeric\(12,2\) NOT NULL -- order total in EUR/);

    const unknown = (await client.callTool({ name: 'get_schema', arguments: { table: 'ordres' } })) as ToolResult;
    t.equal(unknown.isError, true, 'an unknown table is a tool error, not a protocol error');
    t.match(textOf(unknown), /^NOT_FOUND: there is no table "ordres" \(did you mean "orders"\?\)/);
    t.equal(unknown.structuredContent.error.code, 'NOT_FOUND');

    fake.script({ text: sqlAnswer('SELECT id, name, country FROM customers ORDER BY id', 'Every customer.') });
    const asked = (await client.callTool({ name: 'ask_database', arguments: { question: 'Who are our customers?' } })) as ToolResult;
    t.notOk(asked.isError, textOf(asked));
    const s = asked.structuredContent;
    t.equal(s.intent, 'sql');
    t.match(s.sql, /^SELECT id, name, country FROM customers ORDER BY id/);
    t.equal(s.explanation, 'Every customer.');
    t.same(s.columns.map((c: { name: string }) => c.name), ['id', 'name', 'country']);
    t.equal(s.rows.length, MAX_ROWS, 'rows capped at mcp.max_rows');
    t.same(s.rows[0], [1, 'Ada', 'UK'], 'the database\'s rows');
    t.equal(s.truncated, true);
    t.equal(s.executed, true);
    t.match(textOf(asked), /id \| name \| country\n1 \| Ada \| UK\n2 \| Grace \| US\n3 \| Linus \| FI/, 'a compact text table');
    t.match(textOf(asked), /3 rows \(truncated at 3\)/);
    t.equal(fake.requests.length, 1);
    t.match(fake.requests[0]!.last, /Who are our customers\?/);

    fake.script({ text: sqlAnswer('SELECT name FROM customers ORDER BY name') });
    const hinted = (await client.callTool({ name: 'ask_database', arguments: { question: 'names?', tables: ['customers'] } })) as ToolResult;
    t.notOk(hinted.isError, textOf(hinted));
    t.match(fake.requests.at(-1)!.system, /customers/);
    t.notMatch(fake.requests.at(-1)!.system, /Table orders/, 'the table hints decide the schema in the prompt');

    fake.script({ text: chatAnswer('Hello! Ask me about orders.') });
    const chat = (await client.callTool({ name: 'ask_database', arguments: { question: 'hello' } })) as ToolResult;
    t.equal(chat.structuredContent.intent, 'chat');
    t.equal(textOf(chat), 'Hello! Ask me about orders.');

    fake.fallback(() => ({ status: 429 }));
    const failed = (await client.callTool({ name: 'ask_database', arguments: { question: 'How many orders?' } })) as ToolResult;
    t.equal(failed.isError, true);
    t.match(textOf(failed), /^LLM_UNAVAILABLE: /, 'a failure carries its code');
    t.equal(failed.structuredContent.error.retryable, true);

    await closeClient(client);
    await until(() => registry.size === 0, 5_000, 'the session to end');
    t.equal(registry.size, 0, kind === 'sse' ? 'the session ends with the connection' : 'DELETE /mcp ends the session');
  });

  t.test(`${kind}: bad arguments are protocol errors (InvalidParams)`, async (t) => {
    const client = await connectClient(stack.url, kind, token);
    const bad = [
      { name: 'get_schema', arguments: {} },
      { name: 'get_schema', arguments: { table: 42 } },
      { name: 'ask_database', arguments: { question: '' } },
      { name: 'ask_database', arguments: { question: 'x', extra: true } },
      { name: 'no_such_tool', arguments: {} },
    ];
    for (const call of bad) {
      const e = await protocolError(client.callTool(call));
      t.equal(e?.code, ErrorCode.InvalidParams, `${call.name} ${JSON.stringify(call.arguments)}: InvalidParams`);
      t.notMatch(e?.message, /MCP error .*MCP error/, 'the message is not prefixed twice');
    }
    t.equal(fake.requests.length, 0, 'no model call for bad arguments');
    const e = await protocolError(client.callTool({ name: 'ask_database', arguments: { question: 'x', tables: ['nope_table'] } }));
    t.equal(e?.code, ErrorCode.InvalidParams, 'an unknown table hint is a bad argument');
    t.match(e?.message, /^MCP error -32602: VALIDATION_FAILED: unknown table: "nope_table"/);
    await closeClient(client);
  });
}

t.test('tools/list stays small', async (t) => {
  const client = await connectClient(stack.url, 'http', token);
  const listed = await client.listTools();
  const chars = JSON.stringify(listed).length;
  const tokens = Math.ceil(chars / 4);
  t.comment(`tools/list: ${chars} characters ≈ ${tokens} tokens (3 tools)`);
  t.ok(tokens < 300, `about ${tokens} tokens`);
  await closeClient(client);
});

t.test('ask_database masks columns that match a mask rule', async (t) => {
  const client = await connectClient(stack.url, 'sse', token);
  fake.script({ text: sqlAnswer('SELECT name, email FROM customers ORDER BY id') });
  const r = (await client.callTool({ name: 'ask_database', arguments: { question: 'customer e-mails?' } })) as ToolResult;
  t.notOk(r.isError, textOf(r));
  const emails = (r.structuredContent.rows as unknown[][]).map((row) => row[1]);
  t.equal(emails.length, MAX_ROWS);
  for (const e of emails) t.notMatch(String(e), /@example\.com/, 'no e-mail address leaves unmasked');
  t.same(r.structuredContent.masked?.map((m: { column: string }) => m.column), ['email']);
  t.notMatch(textOf(r), /@example\.com/);
  t.match(textOf(r), /Masked: email \(redact\)/);
  await closeClient(client);
});

t.test('the MCP Inspector CLI lists and calls tools over SSE and Streamable HTTP', async (t) => {
  const cli = path.join(ROOT, 'node_modules', '.bin', 'mcp-inspector');
  const sse = await run(cli, ['--cli', `${stack.url}/mcp/sse?token=${token}`, '--transport', 'sse', '--method', 'tools/list'], { timeout: 30_000 });
  const listed = JSON.parse(sse.stdout) as { tools: Array<{ name: string }> };
  t.same(listed.tools.map((x) => x.name), ['ask_database', 'list_tables', 'get_schema']);

  const http = await run(cli, ['--cli', `${stack.url}/mcp?token=${token}`, '--transport', 'http', '--method', 'tools/call', '--tool-name', 'get_schema', '--tool-arg', 'table=customers'], { timeout: 30_000 });
  const called = JSON.parse(http.stdout) as ToolResult;
  t.notOk(called.isError);
  t.same(called.structuredContent.columns.map((c: { name: string }) => c.name), ['id', 'name', 'country', 'created_at', 'email']);
  // the SSE session ends with the inspector; a Streamable HTTP client that leaves without DELETE /mcp
  // leaves its session to the idle timeout
  await until(() => registry.count('sse') === 0, 5_000, 'the inspector\'s SSE session to end');
  t.equal(registry.count('streamable_http'), 1);
  await registry.closeAll('test');
});

t.test('discover_tables: advertised only with discovery tokens on; names across the allowed catalogs, never rows', async (t) => {
  // a discovery token: no catalog of its own, so it searches every allowed catalog
  const { token: discovery } = await issueToken(bus, 'alice');
  const set = (key: string, value: unknown) => bus.request(ConfigUpdate, { key, value, by: 'admin' }, { requestId: randomUUID() });
  const earlier = await connectClient(stack.url, 'http', discovery);
  await set('plugins.auth.allowed_catalogs', [{ name: db.name, allowed_schemas: ['public'] }]);
  await set('plugins.auth.enable_discovery_tokens', true);
  t.teardown(async () => {
    await bus.request(ConfigReset, { key: 'plugins.auth.enable_discovery_tokens', by: 'admin' }, { requestId: randomUUID() });
    await bus.request(ConfigReset, { key: 'plugins.auth.allowed_catalogs', by: 'admin' }, { requestId: randomUUID() });
  });
  await until(() => config.plugins.auth.enable_discovery_tokens && config.plugins.auth.allowed_catalogs.length === 1, 5_000, 'the settings to apply');

  t.same((await earlier.listTools()).tools.map((x) => x.name), ['ask_database', 'list_tables', 'get_schema'], 'a session keeps what it was opened with');
  const e = await protocolError(earlier.callTool({ name: 'discover_tables', arguments: { query: 'order' } }));
  t.equal(e?.code, ErrorCode.InvalidParams, 'and cannot call a tool it was not offered');
  await closeClient(earlier);

  for (const kind of ['sse', 'http'] as TransportKind[]) {
    const client = await connectClient(stack.url, kind, discovery);
    const { tools } = await client.listTools();
    t.same(tools.map((x) => x.name), ['ask_database', 'list_tables', 'get_schema', 'discover_tables'], `${kind}: discover_tables is advertised`);
    if (kind === 'http') t.comment(`tools/list with discover_tables: ${JSON.stringify({ tools }).length} characters ≈ ${Math.ceil(JSON.stringify({ tools }).length / 4)} tokens`);
    const found = (await client.callTool({ name: 'discover_tables', arguments: { query: 'ORDER' } })) as ToolResult;
    t.notOk(found.isError, textOf(found));
    t.same(found.structuredContent.tables, [
      { catalog: db.name, schema: 'public', name: 'orders', kind: 'table' },
      { catalog: db.name, schema: 'public', name: 'paid_orders', kind: 'view' },
    ], 'partial, case-insensitive matches in the allowed schemas');
    t.equal(textOf(found), `${db.name}.public.orders\n${db.name}.public.paid_orders (view)`);
    t.notOk(JSON.stringify(found).includes('sentinel'), 'metadata only: no row value');
    const outside = (await client.callTool({ name: 'discover_tables', arguments: { query: 'target' } })) as ToolResult;
    t.same(outside.structuredContent.tables, [], 'a schema outside allowed_schemas is not searched');
    t.match(textOf(outside), /No table name contains "target"/);
    await closeClient(client);
  }

  await set('plugins.auth.allowed_catalogs', [{ name: db.name, allowed_schemas: [] }, { name: 'other_catalog', allowed_schemas: [] }]);
  await until(() => config.plugins.auth.allowed_catalogs.length === 2, 5_000, 'the new catalogs');
  const client = await connectClient(stack.url, 'sse', discovery);
  const all = (await client.callTool({ name: 'discover_tables', arguments: { query: 'target' } })) as ToolResult;
  t.same(all.structuredContent.tables, [{ catalog: db.name, schema: 'sales', name: 'targets', kind: 'table' }], 'every schema of a catalog without allowed_schemas');
  await closeClient(client);
  // a token bound to its own database searches that one only, under its own name
  const { token: own } = await issueToken(bus, 'alice', { db_config: { database: db.name } });
  const ownClient = await connectClient(stack.url, 'http', own);
  const mine = (await ownClient.callTool({ name: 'discover_tables', arguments: { query: 'target' } })) as ToolResult;
  t.same(mine.structuredContent.tables, [{ catalog: db.name, schema: 'sales', name: 'targets', kind: 'table' }], 'its own catalog, with that catalog\'s allowed_schemas');
  await closeClient(ownClient);
});


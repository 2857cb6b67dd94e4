/**
 * The stdio bridge as an MCP client launches it: the official SDK client spawns
 * `node bin/cortado-mcp.js` (and `node bin/cortado.js mcp-stdio`) with SERVICE_TOKEN and
 * CORTADO_URL, and uses the service's tools through it.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { ROOT } from '../../config/load.js';
import { mcpSessionRegistry } from '../../edge/mcp/session.js';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { endWithProcess } from '../helpers/leftovers.js';
import { issueToken, revokeToken, until } from '../helpers/mcp.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { startStack } from '../helpers/stack.js';

const nats = await startNats();
const db = await createTestDb('mcpstdio');
await db.pool.query(GUARD_SCHEMA_SQL);
const fake = await startFakeLlm();
const config = testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: { config_db: { encryption_key: generateFernetKey() } },
});
const stack = await startStack(config);
const bus = stack.running.bus;
const registry = mcpSessionRegistry(bus)!;
t.teardown(async () => {
  await stack.stop();
  await fake.close();
  await db.drop();
  await nats.stop();
});

type ToolResult = { content: Array<{ type: string; text?: string }>; structuredContent?: any; isError?: boolean };

async function launch(args: string[], env: Record<string, string>): Promise<Client> {
  const transport = new StdioClientTransport({ command: process.execPath, args, cwd: ROOT, env: { ...process.env as Record<string, string>, ...env }, stderr: 'pipe' });
  const client = new Client({ name: 'stdio-test', version: '0.0.1' });
  await client.connect(transport);
  return client;
}

for (const args of [[path.join('bin', 'cortado-mcp.js')], [path.join('bin', 'cortado.js'), 'mcp-stdio']]) {
  t.test(`node ${args.join(' ')}: the service's tools over stdio`, async (t) => {
    const { token } = await issueToken(bus, 'desktop');
    const client = await launch(args, { SERVICE_TOKEN: token, CORTADO_URL: stack.url });
    t.equal(registry.count('streamable_http'), 1, 'the bridge holds one session on the service');
    t.equal(client.getServerVersion()?.name, 'cortado');
    const { tools } = await client.listTools();
    t.same(tools.map((x) => x.name), ['ask_database', 'list_tables', 'get_schema']);

    const list = (await client.callTool({ name: 'list_tables', arguments: {} })) as ToolResult;
    t.ok(list.structuredContent.tables.some((x: { name: string }) => x.name === 'orders'));
    const schema = (await client.callTool({ name: 'get_schema', arguments: { table: 'customers' } })) as ToolResult;
    t.match(schema.content[0]!.text, /^Table customers -- people and companies who order/);
    const missing = (await client.callTool({ name: 'get_schema', arguments: { table: 'nope' } })) as ToolResult;
    t.equal(missing.isError, true);
    t.match(missing.content[0]!.text, /^NOT_FOUND: /);
    try {
      await client.callTool({ name: 'get_schema', arguments: {} });
      t.fail('bad arguments must be a protocol error');
    } catch (err) {
      t.ok(err instanceof McpError && err.code === ErrorCode.InvalidParams, 'bad arguments stay a protocol error through the bridge');
      t.match((err as Error).message, /^MCP error -32602: invalid arguments for get_schema/, 'with the service\'s message, not wrapped twice');
    }

    fake.script({ text: sqlAnswer('SELECT count(*) AS n FROM orders') });
    const asked = (await client.callTool({ name: 'ask_database', arguments: { question: 'How many orders?' } })) as ToolResult;
    if (asked.isError) t.comment(`ask_database: ${asked.content[0]?.text}`);
    t.notOk(asked.isError, 'ask_database answers through the bridge');
    t.same(asked.structuredContent?.rows, [[40]]);

    // the service forgets the session (restart, idle timeout): the bridge opens a new one
    await registry.closeAll('test: the service forgot the session');
    const again = (await client.callTool({ name: 'list_tables', arguments: {} })) as ToolResult;
    t.notOk(again.isError, 'the next call still works');
    t.equal(registry.count('streamable_http'), 1, 'on a new session');

    await client.close();
    await until(() => registry.size === 0, 5_000, 'the bridge to end its session when it exits');
    t.pass('the bridge ends its session (DELETE /mcp) when the client closes it');
  });
}

/** Run the bridge with this environment and stdin closed at once; its exit code and stderr. */
function exitOf(env: Record<string, string>): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve) => {
    const child = endWithProcess(spawn(process.execPath, [path.join('bin', 'cortado-mcp.js')], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env } }));
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (d) => { stderr += String(d); });
    child.stdout.on('data', (d) => { stdout += String(d); });
    child.on('close', (code) => resolve({ code, stderr, stdout }));
  });
}

t.test('a missing, revoked or refused token ends the bridge at once, with the reason on stderr', async (t) => {
  const none = await exitOf({});
  t.equal(none.code, 2);
  t.match(none.stderr, /set SERVICE_TOKEN/);
  t.equal(none.stdout, '', 'stdout stays for the protocol');

  const { token, id } = await issueToken(bus, 'gone');
  await revokeToken(bus, id);
  const revoked = await exitOf({ SERVICE_TOKEN: token, CORTADO_URL: stack.url });
  t.equal(revoked.code, 1);
  t.match(revoked.stderr, /refused SERVICE_TOKEN \(401\)/);
  t.notMatch(revoked.stderr, new RegExp(token.slice(4)), 'the token is not printed');

  const down = await exitOf({ SERVICE_TOKEN: token, CORTADO_URL: 'http://127.0.0.1:9' });
  t.equal(down.code, 1);
  t.match(down.stderr, /cannot open an MCP session at http:\/\/127\.0\.0\.1:9\/mcp/);
});

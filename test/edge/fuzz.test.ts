/**
 * Hostile bodies on every route that takes one, against a real running Cortado (NATS with
 * JetStream, PostgreSQL for the data and for config_db, the fake LLM): property-based cases
 * (fast-check) of random JSON of any shape and depth, wrong types in every field, huge
 * strings, Unicode edge cases (NUL, controls, lone surrogates, RTL, emoji), numbers at the
 * edges (1e309, -0, NaN as text, 30-digit integers), prototype keys, duplicate keys, truncated
 * or invalid JSON and invalid UTF-8, wrong content types, nesting around the limit; path
 * parameters too. Every other case goes to a second edge on the other HTTP server
 * (uWebSockets.js and node:http both; MCP cases stay on the edge that holds their sessions).
 *
 * Every answer must be below 500 (an SSE stream's error event included), every error in the
 * one error shape (`{error: {code, message, request_id}}`, or JSON-RPC on the MCP routes),
 * nothing may hang, Object.prototype must be untouched and the stack must still answer a real
 * question at the end.
 *
 * The seed is fixed and printed: CORTADO_FUZZ_SEED=<n> replays a run, CORTADO_FUZZ_SCALE=<x>
 * multiplies the number of cases (the default keeps the file under 90 s on 2 cores).
 */
import fc from 'fast-check';
import t from 'tap';
import { Agent, request } from 'undici';
import { ERRORS, isErrorCode } from '../../protocol/errors.js';
import { PROMPT_KEYS } from '../../config/prompts.js';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { testConfig } from '../helpers/config.js';
import { chatAnswer, sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { INITIALIZE, openRawSse } from '../helpers/mcp.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';
import { uwsAvailable } from '../../edge/http/server.js';

const SEED = Number(process.env.CORTADO_FUZZ_SEED ?? 20261125);
const SCALE = Number(process.env.CORTADO_FUZZ_SCALE ?? 1);
/** requests in flight at once */
const CONCURRENCY = 32;
/** an answer slower than this is a failure too (a hang) */
const ANSWER_MS = 30_000;

const tag = `${process.pid}_${Date.now().toString(36)}`;
const nats = await startNats();
const db = await createTestDb('fuzz');
const cfgDb = await createTestDb('fuzzcfg');
const role = `fuzz_${tag}`;
await db.pool.query(`
  CREATE TABLE orders (id int PRIMARY KEY, amount numeric, note text);
  INSERT INTO orders VALUES (1, 10, 'first'), (2, 20, 'second');
  CREATE ROLE ${role} LOGIN PASSWORD 'fuzz-pw';
  GRANT CONNECT ON DATABASE ${db.name} TO ${role};
  GRANT USAGE ON SCHEMA public TO ${role};
  GRANT SELECT ON orders TO ${role};
`);
const fake = await startFakeLlm();
// a question about "chat" gets a chat answer, anything else one harmless query
fake.fallback((req) => ({ text: req.last.toLowerCase().includes('chat') ? chatAnswer('hello') : sqlAnswer('SELECT count(*) AS n FROM orders') }));
const config = testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: {
    admin: { enabled: true, username: 'admin', password: 'fuzz-admin-pw' },
    config_db: { enabled: true, encryption_key: generateFernetKey(), postgresql: { host: cfgDb.host, port: cfgDb.port, database: cfgDb.name, user: cfgDb.user } },
    plugins: { auth: { enabled: true, enable_discovery_tokens: true } },
  },
});
const stack = await startStack(config);
// a second edge on the same bus, on the other HTTP server: every other case goes to it
// (where uWebSockets.js has no build for this Node, both are the node:http twin)
const otherKind = stack.running.edge?.kind === 'uws' || !uwsAvailable() ? 'node' : 'uws';
const other = await startStack(testConfig({
  natsUrl: nats.url, db: { host: db.host, port: db.port, name: db.name, user: db.user }, llmUrl: fake.url,
  extra: { app: { http_server: otherKind }, admin: { enabled: true, username: 'admin', password: 'fuzz-admin-pw' }, plugins: { auth: { enabled: true, enable_discovery_tokens: true } }, config_db: { encryption_key: config.config_db.encryption_key } },
}), { edge: true, actors: [] });
const agent = new Agent({ connections: CONCURRENCY, headersTimeout: ANSWER_MS, bodyTimeout: ANSWER_MS, keepAliveTimeout: 10_000 });
t.teardown(async () => {
  await agent.close();
  await other.stop();
  await stack.stop();
  await fake.close();
  await db.drop();
  await cfgDb.drop();
  const { default: pg } = await import('pg');
  const { ADMIN_URL } = await import('../helpers/pg.js');
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
  await admin.end();
  await nats.stop();
});

// ---- the sessions the authenticated routes are fuzzed with ----------------------------------

const adminLogin = await call(`${stack.url}/admin/login`, { body: { username: 'admin', password: 'fuzz-admin-pw' } });
if (adminLogin.status !== 200) throw new Error(`admin login: ${adminLogin.text}`);
const ADMIN = { cookie: (adminLogin.headers.get('set-cookie') ?? '').split(';')[0]!, 'x-csrf-token': adminLogin.body.csrf_token as string };
const authLogin = await call(`${stack.url}/auth/login`, { body: { username: role, password: 'fuzz-pw' } });
if (authLogin.status !== 200) throw new Error(`auth login: ${authLogin.text}`);
const AUTH = { 'x-session-id': authLogin.body.session_id as string };
const issued = await call(`${stack.url}/admin/tokens`, { body: { label: 'fuzz' }, headers: ADMIN });
if (issued.status !== 201) throw new Error(`token: ${issued.text}`);
const TOKEN = issued.body.token as string;
const MCP_ACCEPT = 'application/json, text/event-stream';
const init = await fetch(`${stack.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: MCP_ACCEPT, 'x-mcp-token': TOKEN }, body: JSON.stringify(INITIALIZE(1)) });
await init.text();
const MCP_SESSION = init.headers.get('mcp-session-id') ?? '';
if (!MCP_SESSION) throw new Error(`MCP initialize: ${init.status}`);
const sse = await openRawSse(`${stack.url}/mcp/sse`, { 'x-mcp-token': TOKEN });
const endpoint = (await sse.next('endpoint')).data;
t.teardown(() => sse.close());

// ---- hostile values ---------------------------------------------------------------------------

const SPECIAL_STRINGS = [
  '', ' ', '\u0000', 'a\u0000b', 'admin\u0000', '\u0001\u0002', '\t', '\n', '\r\n', '\u007f', '\u0085', '\u2028', '\u202e' + 'evil', '\u200b',
  '\ufeff', '\ud800', '\udfff', 'a\ud800b', '\udc00\ud800', '💥', '👩‍👩‍👧‍👦', '\u{10ffff}', 'é', 'ﬀ', 'İ', 'NaN', 'Infinity', '-0', '1e309', 'null', 'true',
  '[]', '{}', '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', "' OR '1'='1", '"; DROP TABLE orders; --',
  '../../../etc/passwd', '%00', '%', '%%', '${jndi:ldap://127.0.0.1:1/x}', '<script>alert(1)</script>', `ctd_${'A'.repeat(43)}`,
  'SELECT pg_sleep(10)', 'admin', 'root', 'public', 'orders', 'public.orders', '*', '*)(uid=*', '\\', '"', "'", '`', 'a'.repeat(257),
  'mysql', 'trino', 'bigquery', 'postgresql', 'POSTGRESQL', 'hash', 'redact', 'partial', 'ldap://127.0.0.1:1', 'query.max_limit',
];
const CONTROL_CHARS = Array.from({ length: 32 }, (_, i) => String.fromCharCode(i)).concat(['\u007f', '\ud800', '\udc00', '\u0085', '\u202e']);

const hostileString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...SPECIAL_STRINGS), weight: 6 },
  { arbitrary: fc.string({ maxLength: 40 }), weight: 3 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 40 }), weight: 3 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }), weight: 2 },
  { arbitrary: fc.string({ unit: fc.constantFrom(...CONTROL_CHARS, 'a', 'é', '💥'), maxLength: 12 }), weight: 3 },
  { arbitrary: fc.integer({ min: 300, max: 300_000 }).map((n) => 'x'.repeat(n)), weight: 1 },
);
const shortString = fc.oneof(fc.constantFrom(...SPECIAL_STRINGS.filter((s) => s.length < 64)), fc.string({ unit: 'binary', maxLength: 12 }));
const hostileNumber: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(-0, 0, 1, -1, 0.5, 2 ** 31, 2 ** 53 + 2, -(2 ** 63), 1e308, -1e308, 5e-324, 65535, 65536, 1e21),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);
const hostileKey = fc.oneof(
  { arbitrary: fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty', 'password', 'enc', 'json', 'provider', ''), weight: 2 },
  { arbitrary: shortString, weight: 3 },
);
const { value: hostileValue } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileString,
    hostileNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 6 }),
    fc.dictionary(hostileKey, tie('value'), { maxKeys: 6 }),
  ),
}));

// ---- valid-ish field values (what a real client would send), per kind ------------------------

const question = fc.oneof(fc.constantFrom('how many orders are there?', 'chat with me', 'total amount by note', 'tabs\tand\nnewlines'), fc.string({ minLength: 1, maxLength: 60 }));
const tableName = fc.oneof(fc.constantFrom('orders', 'public.orders', 'pg_catalog.pg_class', 'nope'), fc.string({ minLength: 1, maxLength: 20 }));
const ident = fc.oneof(fc.constantFrom('abc', 'conv-1', 'a.b:c_d', 'x'.repeat(80)), fc.stringMatching(/^[A-Za-z0-9_.:-]{1,40}$/));
const username = fc.oneof(fc.constantFrom('admin', 'root', 'alice', role, 'Admin'), fc.string({ minLength: 1, maxLength: 20 }));
const password = fc.oneof(fc.constantFrom('wrong', 'fuzz-pw', ''), fc.string({ maxLength: 20 }));
/** the first value four times out of five, else one of the others */
const mostly = <T>(first: T, ...others: T[]): fc.Arbitrary<T> => fc.oneof({ arbitrary: fc.constant(first), weight: 4 }, { arbitrary: fc.constantFrom(first, ...others), weight: 1 });
const smallInt = fc.oneof(fc.integer({ min: -5, max: 100_000 }), hostileNumber);
/** config keys the fuzzer may set to any value: none that takes the LLM, LDAP or the database away */
const SAFE_CONFIG_KEYS = [
  'query.max_limit', 'query.default_limit', 'query.max_corrections', 'query.confirm_before_execute', 'query.execute_generated_sql', 'query.max_result_mb',
  'query.max_value_kb', 'insights.max_insights', 'insights.enabled', 'insights.mode', 'mcp.max_rows', 'ui.sections.demo', 'prompts.sql_generation',
  'plugins.auth.token_max_ttl_hours', 'plugins.auth.allowed_db_types',
];
const LDAP_KEYS = ['enabled', 'server', 'use_ssl', 'connect_timeout', 'user_dn_template', 'bind_dn', 'bind_password', 'base_dn', 'user_search_filter', 'required_group_dn', 'group_member_attr'];
/** directory servers the fuzzer may name: loopback only (the fuzzer attacks Cortado, not the network) */
const ldapSetting = fc.oneof(fc.constantFrom('ldap://127.0.0.1:1', 'ldaps://127.0.0.1:1', 'not a url', '', 'ldap://[::1]:1'), fc.boolean(), fc.integer({ min: -1, max: 3 }), shortString);
const dbConfig = fc.dictionary(
  fc.oneof(fc.constantFrom('provider', 'host', 'port', 'user', 'password', 'database', 'catalog', 'schema', 'project_id', 'credentials_json', 'discovery'), hostileKey),
  hostileValue,
  { maxKeys: 6 },
);
const rpcMethod = fc.oneof(
  { arbitrary: fc.constantFrom('tools/call', 'tools/list', 'ping', 'initialize', 'resources/list', 'prompts/list', 'notifications/initialized', 'notifications/cancelled', 'logging/setLevel', 'completion/complete'), weight: 4 },
  { arbitrary: shortString, weight: 1 },
);
const toolCall = fc.oneof(
  fc.record({ name: fc.constant('ask_database'), arguments: fc.record({ question, tables: fc.array(tableName, { maxLength: 3 }) }, { requiredKeys: [] }) }),
  fc.record({ name: fc.constant('get_schema'), arguments: fc.record({ table: tableName }, { requiredKeys: [] }) }),
  fc.record({ name: fc.constant('discover_tables'), arguments: fc.record({ query: fc.string({ maxLength: 10 }) }, { requiredKeys: [] }) }),
  fc.record({ name: fc.constantFrom('list_tables', 'nope', '__proto__'), arguments: hostileValue }),
);
const rpcMessage = fc.record({
  jsonrpc: fc.oneof({ arbitrary: fc.constant('2.0'), weight: 5 }, { arbitrary: hostileValue, weight: 1 }),
  id: fc.oneof(fc.integer(), fc.string({ maxLength: 8 }), fc.constant(null), hostileValue),
  method: rpcMethod,
  params: fc.oneof(toolCall, hostileValue),
}, { requiredKeys: ['jsonrpc', 'method'] });

// ---- routes -------------------------------------------------------------------------------

interface Route {
  method: 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** the path, with the fuzzed parameter (already percent-encoded) in it */
  path: (param: string) => string;
  /** values a path parameter takes besides hostile ones */
  param?: fc.Arbitrary<string>;
  headers?: Record<string, string>;
  /** a plausible body's fields (each optional in a case, but those in `required`) */
  fields: Record<string, fc.Arbitrary<unknown>>;
  required?: readonly string[];
  /** a plausible body that is not an object (MCP batches) */
  whole?: fc.Arbitrary<unknown>;
  /** answers may be JSON-RPC errors; and the cases go to the edge holding the MCP sessions */
  mcp?: boolean;
  /** takes a form post too */
  form?: boolean;
  /** may answer as an SSE stream when asked */
  sse?: boolean;
  /** cases, before CORTADO_FUZZ_SCALE */
  cases: number;
}

const semanticId = fc.constantFrom('1', '2', '3', '0', '-1', '1.5', 'abc', '99999999999');
const semanticEntity = {
  schema_name: mostly('public', 'nope'), table_name: mostly('orders', 'nope'), display_name: fc.string(), description: fc.string(),
  primary_key: mostly('id', 'nope', ''), entity_type: mostly('table', 'view', 'cube'), synonyms: fc.array(fc.string(), { maxLength: 3 }),
  columns: fc.array(fc.record({ name: mostly('amount', 'note', 'nope'), role: mostly('dimension', 'metric', 'x'), description: fc.string() }, { requiredKeys: [] }), { maxLength: 3 }),
};
const semanticColumn = { name: mostly('amount', 'note', 'id', 'nope'), role: mostly('metric', 'dimension', 'x'), aggregation: mostly('sum', 'median'), description: fc.string(), synonyms: fc.array(fc.string(), { maxLength: 3 }) };
const semanticMetric = {
  name: fc.oneof(fc.stringMatching(/^[a-z_]{1,12}$/), fc.string()), display_name: fc.string(),
  sql_expression: fc.oneof(fc.constantFrom('SUM(amount)', 'COUNT(*)', 'amount', 'SUM((SELECT 1))', 'SUM(amount); DROP TABLE orders', 'SUM(amount) -- x', "COUNT(*) FILTER (WHERE note = 'first')"), fc.string()),
  entity_id: fc.oneof(fc.integer({ min: 0, max: 4 }), fc.constant(null)), active: fc.boolean(), format_type: mostly('currency', 'euro'),
};
const MCP_HEADERS = { 'x-mcp-token': TOKEN, accept: MCP_ACCEPT };
const ROUTES: Record<string, Route> = {
  'POST /api/query': { method: 'POST', path: () => '/api/query', sse: true, cases: 1000, fields: { question, tables: fc.array(tableName, { maxLength: 4 }), conversation_id: ident } },
  'POST /query': { method: 'POST', path: () => '/query', sse: true, cases: 1000, fields: { question, table_schema: fc.constantFrom('Table: public.orders', 'Table: nope\nTable: x'), schema: fc.string(), tables: fc.array(tableName, { maxLength: 4 }), session_id: fc.oneof(ident, fc.constant(null)) } },
  'POST /query/confirm-execute': { method: 'POST', path: () => '/query/confirm-execute', cases: 1000, fields: { confirmation_id: ident, session_id: fc.oneof(ident, fc.constant(null)) } },
  'POST /auth/login': {
    method: 'POST', path: () => '/auth/login', cases: 1000, required: ['username', 'password'],
    fields: {
      username, password, db_type: mostly('postgresql', 'mysql', 'trino', 'bigquery', 'x'), database_type: mostly('postgresql', 'PostgreSQL'), host: mostly(db.host, 'localhost', 'evil.example'),
      port: fc.oneof({ arbitrary: fc.constant(db.port), weight: 4 }, { arbitrary: smallInt, weight: 1 }), database: mostly(db.name, 'postgres', 'nope'), catalog: ident, schema: mostly('public', 'pg_catalog', 'nope'),
    },
  },
  'POST /auth/auto-session': { method: 'POST', path: () => '/auth/auto-session', cases: 1000, fields: { origin: fc.string() } },
  'POST /auth/logout': { method: 'POST', path: () => '/auth/logout', cases: 1000, fields: { token: fc.string() } },
  'POST /auth/query': { method: 'POST', path: () => '/auth/query', headers: AUTH, sse: true, cases: 1000, fields: { question, tables: fc.array(tableName, { maxLength: 4 }), conversation_id: ident, table_schema: fc.string(), schema: fc.string() } },
  'POST /auth/query/confirm': { method: 'POST', path: () => '/auth/query/confirm', headers: AUTH, cases: 1000, fields: { confirmation_id: ident } },
  'POST /auth/tokens': { method: 'POST', path: () => '/auth/tokens', headers: AUTH, cases: 1000, fields: { label: fc.string(), ttl_hours: smallInt, discovery: fc.boolean() } },
  'POST /admin/login': { method: 'POST', path: () => '/admin/login', form: true, cases: 1000, fields: { username, password } },
  'POST /assistant/login': { method: 'POST', path: () => '/assistant/login', form: true, cases: 1000, fields: { username, password } },
  'POST /admin/logout': { method: 'POST', path: () => '/admin/logout', cases: 1000, fields: {} },
  'POST /assistant/logout': { method: 'POST', path: () => '/assistant/logout', cases: 1000, fields: {} },
  'POST /admin/tokens': { method: 'POST', path: () => '/admin/tokens', headers: ADMIN, cases: 1000, fields: { username, label: fc.string(), ttl_hours: smallInt, db_config: dbConfig } },
  'POST /admin/tokens/:id/revoke': { method: 'POST', path: (p) => `/admin/tokens/${p}/revoke`, param: fc.uuid(), headers: ADMIN, cases: 1000, fields: {} },
  'DELETE /admin/tokens/:id': { method: 'DELETE', path: (p) => `/admin/tokens/${p}`, param: fc.uuid(), headers: ADMIN, cases: 1000, fields: {} },
  'POST /admin/mask-rules': { method: 'POST', path: () => '/admin/mask-rules', headers: ADMIN, cases: 1000, fields: { field_pattern: fc.oneof(fc.constantFrom('email', '*_id', 'note?'), fc.string()), strategy: fc.constantFrom('hash', 'partial', 'redact', 'nope'), enabled: fc.boolean(), description: fc.string() } },
  'PUT /admin/mask-rules/:id': { method: 'PUT', path: (p) => `/admin/mask-rules/${p}`, param: fc.uuid(), headers: ADMIN, cases: 1000, fields: { field_pattern: fc.string(), strategy: fc.constantFrom('hash', 'partial', 'redact'), enabled: fc.boolean(), description: fc.string() } },
  'DELETE /admin/mask-rules/:id': { method: 'DELETE', path: (p) => `/admin/mask-rules/${p}`, param: fc.uuid(), headers: ADMIN, cases: 1000, fields: {} },
  'PUT /admin/prompts/:key': { method: 'PUT', path: (p) => `/admin/prompts/${p}`, param: fc.constantFrom(...PROMPT_KEYS), headers: ADMIN, cases: 1000, fields: { text: fc.string({ maxLength: 200 }) } },
  'DELETE /admin/prompts/:key': { method: 'DELETE', path: (p) => `/admin/prompts/${p}`, param: fc.constantFrom(...PROMPT_KEYS), headers: ADMIN, cases: 1000, fields: {} },
  'PUT /admin/config/:key': { method: 'PUT', path: (p) => `/admin/config/${p}`, param: fc.constantFrom(...SAFE_CONFIG_KEYS, 'admin.password', 'bus.url', '__proto__', 'constructor', 'toString', 'query.__proto__', 'query.max_limit.x'), headers: ADMIN, cases: 1000, fields: { value: hostileValue } },
  'DELETE /admin/config/:key': { method: 'DELETE', path: (p) => `/admin/config/${p}`, param: fc.constantFrom(...SAFE_CONFIG_KEYS, '__proto__', 'toString'), headers: ADMIN, cases: 1000, fields: {} },
  'PUT /admin/ldap': { method: 'PUT', path: () => '/admin/ldap', headers: ADMIN, cases: 1000, fields: { settings: fc.dictionary(fc.oneof(fc.constantFrom(...LDAP_KEYS), hostileKey), ldapSetting, { maxKeys: 4 }) } },
  'POST /admin/ldap/test': { method: 'POST', path: () => '/admin/ldap/test', headers: ADMIN, cases: 1000, fields: { settings: fc.dictionary(fc.oneof(fc.constantFrom(...LDAP_KEYS), hostileKey), ldapSetting, { maxKeys: 4 }) } },
  'POST /api/semantic/entities': { method: 'POST', path: () => '/api/semantic/entities', headers: ADMIN, cases: 300, required: ['schema_name', 'table_name', 'display_name'], fields: semanticEntity },
  'PATCH /api/semantic/entities/:id': { method: 'PATCH', path: (p) => `/api/semantic/entities/${p}`, param: semanticId, headers: ADMIN, cases: 300, fields: semanticEntity },
  'POST /api/semantic/entities/:id/columns': { method: 'POST', path: (p) => `/api/semantic/entities/${p}/columns`, param: semanticId, headers: ADMIN, cases: 300, required: ['name', 'role'], fields: semanticColumn },
  'POST /api/semantic/relationships': {
    method: 'POST', path: () => '/api/semantic/relationships', headers: ADMIN, cases: 300,
    fields: { name: fc.string(), from_entity_id: fc.oneof(fc.integer({ min: 0, max: 4 }), hostileNumber), from_column: mostly('id', 'amount', 'nope'), to_entity_id: fc.integer({ min: 0, max: 4 }), to_column: mostly('id', 'note'), relationship_type: mostly('many_to_one', 'one_to_one', 'x'), join_type: mostly('LEFT', 'INNER', 'OUTER') },
  },
  'POST /api/semantic/metrics': { method: 'POST', path: () => '/api/semantic/metrics', headers: ADMIN, cases: 300, required: ['name', 'display_name', 'sql_expression'], fields: semanticMetric },
  'PATCH /api/semantic/metrics/:id': { method: 'PATCH', path: (p) => `/api/semantic/metrics/${p}`, param: semanticId, headers: ADMIN, cases: 300, fields: semanticMetric },
  'POST /api/semantic/discover': { method: 'POST', path: () => '/api/semantic/discover', headers: ADMIN, cases: 100, required: ['schema'], fields: { schema: mostly('public', 'pg_catalog', 'nope'), tables: fc.array(tableName, { maxLength: 3 }) } },
  'POST /mcp': { method: 'POST', path: () => '/mcp', mcp: true, headers: { ...MCP_HEADERS, 'mcp-session-id': MCP_SESSION }, cases: 1000, fields: { jsonrpc: fc.constant('2.0'), id: fc.integer(), method: rpcMethod, params: toolCall }, whole: fc.oneof(rpcMessage, fc.array(rpcMessage, { minLength: 0, maxLength: 4 })) },
  'POST /mcp (no session)': { method: 'POST', path: () => '/mcp', mcp: true, headers: MCP_HEADERS, cases: 1000, fields: { jsonrpc: fc.constant('2.0'), id: fc.integer(), method: rpcMethod, params: hostileValue }, whole: rpcMessage },
  'POST /mcp/messages/': { method: 'POST', path: () => endpoint, mcp: true, headers: MCP_HEADERS, cases: 1000, fields: { jsonrpc: fc.constant('2.0'), id: fc.integer(), method: rpcMethod, params: toolCall }, whole: rpcMessage },
  'DELETE /mcp': { method: 'DELETE', path: () => '/mcp', mcp: true, headers: { ...MCP_HEADERS, 'mcp-session-id': 'not-a-session' }, cases: 1000, fields: { jsonrpc: fc.constant('2.0') } },
};

// ---- cases --------------------------------------------------------------------------------

interface Case {
  contentType: string | undefined;
  body: string | Buffer;
  param: string;
  accept?: string;
}

const CONTENT_TYPES = [
  undefined, 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=utf-16',
  'APPLICATION/JSON', 'application/json;;;', 'application/merge-patch+json', 'application/jsonx', '*/*', 'application/json, text/plain', '',
];
const LITERALS = ['1e309', '-1e309', '-0', 'NaN', 'Infinity', '123456789012345678901234567890', '0x10', '01', '.5', '1.', 'undefined', "'x'", '1e-400', '9007199254740993'];

/** A JSON text with raw damage: the kinds of bytes JSON.stringify never writes. */
function damaged(json: string, pick: number, at: number): string | Buffer {
  const cut = json.length ? at % json.length : 0;
  const firstKey = /^\{"((?:[^"\\]|\\.)*)"/.exec(json)?.[1];
  switch (pick % 12) {
    case 0: return json.slice(0, cut);
    case 1: return firstKey !== undefined ? `{"${firstKey}":1,${json.slice(1)}` : `{"a":1,"a":2}`;
    case 2: return json.replace(/:("(?:[^"\\]|\\.)*"|[^,{}[\]]+)/, `:${LITERALS[at % LITERALS.length]}`);
    case 3: return `\ufeff${json}`;
    case 4: return `${json}${['x', ',', '}', ']', '\u0000', ' //c'][at % 6]}`;
    case 5: return Buffer.concat([Buffer.from(json.slice(0, cut)), Buffer.from([0xff, 0xfe, 0xc0, 0x80, 0xed, 0xa0, 0x80]), Buffer.from(json.slice(cut))]);
    case 6: { const n = [62, 63, 64, 65, 66, 200, 10_000, 100_000][at % 8]!; return `${'['.repeat(n)}${']'.repeat(n)}`; }
    case 7: { const n = [62, 63, 64, 65, 1_000, 20_000][at % 6]!; return `{"a":${'{"b":'.repeat(n)}1${'}'.repeat(n)}}`; }
    case 8: return ['', 'null', '[]', '"str"', '0', 'true', '{}', '{"":""}'][at % 8]!;
    case 9: return `${' '.repeat(at % 250_000)}${json}`;
    case 10: return json.replace(/"/, '"\\u0000');
    default: return json.replace(/\{/, '{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}},');
  }
}

function caseArb(route: Route): fc.Arbitrary<Case> {
  const names = Object.keys(route.fields);
  const template = fc.record(route.fields, { requiredKeys: [...(route.required ?? [])] });
  const param = fc.oneof({ arbitrary: route.param ?? fc.constant('x'), weight: 3 }, { arbitrary: hostileString.filter((s) => s.length < 2_000), weight: 1 })
    // a lone surrogate cannot be percent-encoded (no UTF-8 for it): its bytes go as U+FFFD's
    .map((p) => encodeURIComponent(p.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd')));
  const json = (v: unknown) => JSON.stringify(v) ?? 'null';
  const bodies = fc.oneof(
    { arbitrary: (route.whole ?? template).map(json), weight: 4 },
    { arbitrary: fc.tuple(template, names.length ? fc.constantFrom(...names) : fc.constant('x'), hostileValue).map(([o, k, v]) => json({ ...o, [k]: v })), weight: 5 },
    { arbitrary: fc.tuple(template, hostileKey, hostileValue).map(([o, k, v]) => json(Object.defineProperty({ ...o }, k, { value: v, enumerable: true }))), weight: 2 },
    { arbitrary: hostileValue.map(json), weight: 2 },
    { arbitrary: fc.tuple(template.map(json), fc.nat(), fc.nat()).map(([s, pick, at]) => damaged(s, pick, at)), weight: 3 },
  );
  const type = fc.oneof({ arbitrary: fc.constant<string | undefined>('application/json'), weight: 9 }, { arbitrary: fc.constantFrom(...CONTENT_TYPES), weight: 1 });
  const formBody = fc.tuple(template, fc.dictionary(shortString, shortString, { maxKeys: 3 }))
    .map(([o, extra]) => new URLSearchParams(Object.entries({ ...o, ...extra }).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : json(v)])).toString());
  const accept = route.sse ? fc.constantFrom(undefined, undefined, 'text/event-stream') : fc.constant(undefined);
  const jsonCase = fc.record({ contentType: type, body: bodies, param, accept });
  if (!route.form) return jsonCase;
  return fc.oneof(
    { arbitrary: jsonCase, weight: 4 },
    { arbitrary: fc.record({ contentType: fc.constant('application/x-www-form-urlencoded'), body: formBody, param, accept }), weight: 1 },
  );
}

// ---- running ------------------------------------------------------------------------------

interface Failure {
  route: string;
  index: number;
  why: string;
  request: string;
  answer: string;
}

function shown(b: string | Buffer, max = 300): string {
  const s = typeof b === 'string' ? b : `<bytes> ${b.toString('latin1')}`;
  return JSON.stringify(s.length > max ? `${s.slice(0, max)}… (${s.length} chars)` : s);
}

/** What is wrong with one answer, or undefined. */
function judge(route: Route, status: number, type: string, text: string): string | undefined {
  if (status >= 500) return `status ${status}`;
  if (type.includes('text/event-stream')) {
    for (const m of text.matchAll(/^event: error\ndata: (.*)$/gm)) {
      const code = (JSON.parse(m[1]!) as { error?: { code?: string } }).error?.code;
      if (!isErrorCode(code) || ERRORS[code].http >= 500) return `SSE error event ${code}`;
    }
    return undefined;
  }
  if (status < 400) return undefined;
  let body: { error?: unknown; jsonrpc?: unknown };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    return `status ${status} with a body that is not JSON`;
  }
  const e = body.error as { code?: unknown; message?: unknown; request_id?: unknown } | undefined;
  if (route.mcp && body.jsonrpc === '2.0' && e && typeof e.code === 'number' && typeof e.message === 'string') return undefined;
  if (!e || typeof e.code !== 'string' || !isErrorCode(e.code) || typeof e.message !== 'string' || typeof e.request_id !== 'string') {
    return `status ${status} without the error shape`;
  }
  if (ERRORS[e.code].http !== status) return `code ${e.code} with status ${status}`;
  return undefined;
}

async function runRoute(name: string, route: Route, seed: number): Promise<{ count: number; statuses: Record<number, number>; failures: Failure[] }> {
  const cases = fc.sample(caseArb(route), { seed, numRuns: Math.max(1, Math.round(route.cases * SCALE)) });
  const statuses: Record<number, number> = {};
  const failures: Failure[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < cases.length) {
      const index = next++;
      const c = cases[index]!;
      const headers: Record<string, string> = { ...route.headers };
      if (c.contentType !== undefined) headers['content-type'] = c.contentType;
      if (c.accept) headers.accept = c.accept;
      let status = 0;
      let why: string | undefined;
      let text = '';
      try {
        const base = route.mcp || index % 2 === 0 ? stack.url : other.url;
        const res = await request(`${base}${route.path(c.param)}`, { method: route.method, headers, body: c.body, dispatcher: agent });
        status = res.statusCode;
        text = await res.body.text();
        why = judge(route, status, String(res.headers['content-type'] ?? ''), text);
      } catch (err) {
        why = `no answer: ${(err as Error).message}`;
      }
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (why && failures.length < 20) {
        failures.push({ route: name, index, why, request: `${route.method} ${route.path(c.param).slice(0, 120)} [${c.contentType}] ${shown(c.body)}`, answer: shown(text, 400) });
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return { count: cases.length, statuses, failures };
}

// ---- the run -------------------------------------------------------------------------------

t.comment(`fuzz seed ${SEED} (CORTADO_FUZZ_SEED), scale ${SCALE} (CORTADO_FUZZ_SCALE)`);
const prototypeBefore = Object.getOwnPropertyNames(Object.prototype).sort();
const totals: Array<[string, number, Record<number, number>]> = [];
const names = Object.keys(ROUTES);

for (const [i, name] of names.entries()) {
  await t.test(name, async (t) => {
    const r = await runRoute(name, ROUTES[name]!, SEED + i);
    totals.push([name, r.count, r.statuses]);
    t.equal(r.failures.length, 0, `${r.count} cases, none answered 5xx, hung or broke the error shape (seed ${SEED + i})`, { failures: r.failures });
  });
}

t.test('afterwards: nothing polluted, and the stack still answers a real question', async (t) => {
  t.same(Object.getOwnPropertyNames(Object.prototype).sort(), prototypeBefore, 'Object.prototype is untouched');
  t.equal(({} as Record<string, unknown>).polluted, undefined);
  // the fuzzed runtime config back to the file's values, and the fuzzed mask rules gone
  for (const key of [...SAFE_CONFIG_KEYS, ...LDAP_KEYS.map((k) => `ldap.${k}`)]) await call(`${stack.url}/admin/config/${key}`, { method: 'DELETE', headers: ADMIN });
  const rules = await call(`${stack.url}/admin/mask-rules`, { headers: ADMIN });
  t.equal(rules.status, 200, 'the fuzzed mask rules can be listed');
  for (const r of rules.body.rules as Array<{ id: string }>) await call(`${stack.url}/admin/mask-rules/${encodeURIComponent(r.id)}`, { method: 'DELETE', headers: ADMIN });
  const health = await call(`${stack.url}/health`);
  t.equal(health.status, 200);
  t.equal(health.body.database, 'ok');
  t.equal((await call(`${other.url}/health`)).status, 200, `the ${otherKind} edge too`);
  const answer = await call(`${stack.url}/api/query`, { body: { question: 'how many orders are there?' } });
  t.equal(answer.status, 200, answer.text);
  t.same(answer.body.rows, [[2]]);
  const total = totals.reduce((n, [, c]) => n + c, 0);
  const table = totals.map(([n, c, s]) => `${n.padEnd(32)} ${String(c).padStart(6)}  ${Object.entries(s).map(([k, v]) => `${k}:${v}`).join(' ')}`);
  t.comment(`cases per route (status: count)\n${table.join('\n')}\n${'total'.padEnd(32)} ${String(total).padStart(6)} cases on ${totals.length} routes`);
});

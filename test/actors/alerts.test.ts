/**
 * Security alerts: the risk score, factor by factor and in combinations (the default
 * threshold of 70 is reached by realistic bad queries), the guard's real refusal messages
 * read back as factors, and the alerts actor over a real NATS with JetStream: it consumes the
 * query events, fires only when the rules say so, raises one alert per question across
 * redeliveries and copies, takes mask rules from the settings actor, and mails a real SMTP
 * server through the mailer.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import type { Channel, Dialect } from '../../protocol/schemas/common.js';
import {
  ALERTS_CONSUMER, AlertRaisedEvt, eventsStreamName, MaskRuleCreate, QueryExecutedEvt, QueryGeneratedEvt, QueryRejectedEvt,
} from '../../protocol/subjects.js';
import { start as startAlerts } from '../../actors/alerts/actor.js';
import { appliesTo, MemoryAlertState, widgetType } from '../../actors/alerts/handle.js';
import { FACTORS, guardClass, score, sensitivity, type GuardClass, type ScoreInput } from '../../actors/alerts/score.js';
import { catalogLockFor, checkCatalogLock } from '../../actors/executor/guard/catalog-lock.js';
import { guardSql, prepareGuard } from '../../actors/executor/guard/index.js';
import { start as startSettings } from '../../actors/settings/actor.js';
import { startMailer } from '../../actors/mailer/actor.js';
import { testConfig, setConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { startSmtp } from '../helpers/smtp.js';

// ---- the score, table-driven ----------------------------------------------------------------

const USERS = { columns: ['id', 'email', 'password_hash', 'created_at'], row_estimate: 2_000 };
const EVENTS = { columns: ['id', 'kind', 'at'], row_estimate: 5_000_000 };
const schema = (parts: string[]) => ({ users: USERS, events: EVENTS })[parts[parts.length - 1] as 'users' | 'events'];

interface Case {
  name: string;
  input: ScoreInput;
  score: number;
  factors: string[];
}

const CASES: Case[] = [
  { name: 'a filtered read of plain columns', input: { sql: 'SELECT name FROM products WHERE id = 1' }, score: 0, factors: [] },
  { name: 'no filter', input: { sql: 'SELECT count(*) FROM orders' }, score: 10, factors: ['no_filter'] },
  { name: 'SELECT * without a filter', input: { sql: 'SELECT * FROM orders' }, score: 20, factors: ['select_star', 'no_filter'] },
  { name: 'one personal column, filtered', input: { sql: 'SELECT email FROM customers WHERE id = 7' }, score: 15, factors: ['sensitive_columns'] },
  { name: 'two personal columns, unfiltered', input: { sql: 'SELECT email, phone FROM customers' }, score: 55, factors: ['sensitive_columns', 'no_filter', 'unfiltered_sensitive'] },
  { name: 'e-mails and password hashes of everyone', input: { sql: 'SELECT email, password_hash FROM users' }, score: 75, factors: ['sensitive_columns', 'no_filter', 'unfiltered_sensitive'] },
  { name: 'ssn and salary of everyone', input: { sql: 'SELECT name, ssn, salary FROM employees' }, score: 75, factors: ['sensitive_columns', 'no_filter', 'unfiltered_sensitive'] },
  { name: 'SELECT * on a table whose columns are secret (schema known)', input: { sql: 'SELECT * FROM users', table: schema }, score: 85, factors: ['sensitive_columns', 'select_star', 'no_filter', 'unfiltered_sensitive'] },
  { name: 'the same without the schema', input: { sql: 'SELECT * FROM users' }, score: 20, factors: ['select_star', 'no_filter'] },
  { name: 't.* expands too', input: { sql: 'SELECT u.* FROM public.users u WHERE u.id > 10', table: schema }, score: 55, factors: ['sensitive_columns', 'select_star'] },
  { name: 'a system catalog', input: { sql: "SELECT table_name, column_name FROM information_schema.columns WHERE column_name LIKE '%pass%'" }, score: 40, factors: ['system_catalog'] },
  { name: 'the credential catalog', input: { sql: 'SELECT usename, passwd FROM pg_shadow' }, score: 100, factors: ['sensitive_columns', 'no_filter', 'unfiltered_sensitive', 'system_catalog', 'credential_catalog'] },
  { name: 'mysql.user', input: { sql: 'SELECT user, host FROM mysql.user WHERE user <> \'\'' }, score: 70, factors: ['system_catalog', 'credential_catalog'] },
  { name: 'DELETE without WHERE', input: { sql: 'DELETE FROM users' }, score: 85, factors: ['no_filter', 'write_statement'] },
  { name: 'DROP', input: { sql: 'DROP TABLE users' }, score: 75, factors: ['write_statement'] },
  { name: 'reading a server file', input: { sql: "SELECT pg_read_file('/etc/passwd')" }, score: 75, factors: ['dangerous_function'] },
  { name: 'a stacked DROP', input: { sql: 'SELECT 1; DROP TABLE x' }, score: 100, factors: ['write_statement', 'multiple_statements'] },
  { name: 'a writable CTE', input: { sql: 'WITH d AS (DELETE FROM x RETURNING *) SELECT * FROM d' }, score: 95, factors: ['select_star', 'no_filter', 'write_statement'] },
  { name: 'FOR UPDATE', input: { sql: 'SELECT id FROM orders WHERE id = 3 FOR UPDATE' }, score: 30, factors: ['locking_clause'] },
  { name: 'a masked column, filtered', input: { sql: 'SELECT phone FROM customers WHERE id = 1', maskPatterns: ['*phone*'] }, score: 45, factors: ['sensitive_columns', 'masked_column'] },
  { name: 'a masked column that is not named sensitive', input: { sql: 'SELECT loyalty_tier FROM customers WHERE id = 1', maskPatterns: ['loyalty_*'] }, score: 30, factors: ['masked_column'] },
  { name: 'an alias and a string are not columns', input: { sql: "SELECT id AS ssn FROM t WHERE x = 'password'" }, score: 0, factors: [] },
  { name: 'a comment is not a column', input: { sql: 'SELECT id FROM t WHERE id = 1 -- password\n/* ssn */' }, score: 0, factors: [] },
  { name: 'a quoted identifier is a column', input: { sql: 'SELECT "Customer_Email" FROM "Customers" WHERE id = 2' }, score: 15, factors: ['sensitive_columns'] },
  { name: 'an aliased source column still counts', input: { sql: 'SELECT u.email AS contact FROM users u JOIN orders o ON o.user_id = u.id WHERE o.total > 5' }, score: 15, factors: ['sensitive_columns'] },
  { name: 'WHERE 1 = 1 is no filter', input: { sql: 'SELECT email FROM users WHERE 1 = 1' }, score: 45, factors: ['sensitive_columns', 'no_filter', 'unfiltered_sensitive'] },
  { name: 'no filter on a large table', input: { sql: 'SELECT id FROM events', table: schema }, score: 25, factors: ['no_filter', 'large_table'] },
  { name: 'a large table, filtered', input: { sql: "SELECT id FROM events WHERE kind = 'x'", table: schema }, score: 0, factors: [] },
  { name: 'the sensitive-column points are capped', input: { sql: 'SELECT password, ssn, card_number, iban, email, phone FROM people WHERE id = 1' }, score: 60, factors: ['sensitive_columns'] },
  {
    name: 'a catalog-lock refusal',
    input: { sql: 'SELECT * FROM hive.sales.orders', rejection: { code: 'SQL_REJECTED', reason: 'the SQL reads hive.sales.orders, in catalog "hive", but this session is locked to catalog "lake"' } },
    score: 95, factors: ['select_star', 'no_filter', 'catalog_lock_violation'],
  },
  {
    name: 'the guard refused a write the scan also saw: counted once',
    input: { sql: 'DROP TABLE users', rejection: { code: 'SQL_REJECTED', reason: 'only a SELECT query may run; this is DROP' } },
    score: 75, factors: ['write_statement'],
  },
  {
    name: 'a refusal is classed by its kind when the event has one (the message alone reads as a write)',
    input: { sql: 'SELECT * FROM mysql.user WHERE id = 1', rejection: { code: 'SQL_REJECTED', kind: 'relation_not_allowed', reason: 'the SQL reads mysql.user, which is not allowed: credentials' } },
    score: 95, factors: ['select_star', 'system_catalog', 'credential_catalog', 'guard_violation'],
  },
  {
    name: 'a parse refusal',
    input: { sql: 'SELEC name FROM t WHERE id = 1', rejection: { code: 'SQL_REJECTED', reason: 'the SQL does not parse as PostgreSQL: syntax error at or near "SELEC"' } },
    score: 15, factors: ['guard_violation'],
  },
  {
    name: 'the database said permission denied',
    input: { sql: 'SELECT id FROM payroll WHERE id = 1', rejection: { code: 'DB_QUERY_FAILED', reason: 'permission denied for table payroll' } },
    score: 25, factors: ['permission_denied'],
  },
  {
    name: 'an ordinary database error adds nothing',
    input: { sql: 'SELECT nme FROM t WHERE id = 1', rejection: { code: 'DB_QUERY_FAILED', reason: 'column "nme" does not exist' } },
    score: 0, factors: [],
  },
  {
    name: 'personal data of everyone, up to the row cap',
    input: { sql: 'SELECT email, phone, address FROM customers\nLIMIT 1000', rows: { count: 1000, truncated: true, maxLimit: 1000 } },
    score: 80, factors: ['sensitive_columns', 'no_filter', 'unfiltered_sensitive', 'many_rows'],
  },
  { name: 'a few rows are not many', input: { sql: 'SELECT id FROM t WHERE id < 5', rows: { count: 4, truncated: false, maxLimit: 1000 } }, score: 0, factors: [] },
  { name: 'a burst of questions', input: { sql: 'SELECT count(*) FROM orders', recentQuestions: 20 }, score: 30, factors: ['no_filter', 'burst'] },
  { name: 'just under a burst', input: { sql: 'SELECT count(*) FROM orders', recentQuestions: 19 }, score: 10, factors: ['no_filter'] },
];

t.test('risk score: each factor alone and in combination', async (t) => {
  for (const c of CASES) {
    const r = score(c.input);
    t.equal(r.score, c.score, `${c.name}: score`);
    t.same(r.factors.map((f) => f.name), c.factors, `${c.name}: factors`);
    t.equal(r.factors.reduce((s, f) => s + f.points, 0) >= r.score, true, `${c.name}: the factors add up`);
  }
});

t.test('the default threshold (70) is reached by realistic bad queries, and not by ordinary ones', async (t) => {
  const over = CASES.filter((c) => c.score > 70).map((c) => c.name);
  for (const name of [
    'e-mails and password hashes of everyone', 'ssn and salary of everyone', 'SELECT * on a table whose columns are secret (schema known)',
    'the credential catalog', 'DELETE without WHERE', 'DROP', 'reading a server file', 'a stacked DROP', 'a catalog-lock refusal',
    'personal data of everyone, up to the row cap',
  ]) t.ok(over.includes(name), `${name} is above 70`);
  for (const name of ['a filtered read of plain columns', 'no filter', 'SELECT * without a filter', 'one personal column, filtered', 'a system catalog']) {
    t.notOk(over.includes(name), `${name} stays under`);
  }
  t.equal(score({ sql: 'SELECT 1' }).score, 0);
  t.ok(Object.values(FACTORS).every((v) => typeof v === 'object' || v > 0));
});

t.test('query.executed: the relations the guard read are scored, not the ones the lexer guesses', async (t) => {
  const catalogFactors = (r: ReturnType<typeof score>): string[] => r.factors.map((f) => f.name).filter((n) => n === 'credential_catalog' || n === 'system_catalog');
  // a CTE named like a credential catalog: the lexer takes it for the relation, the guard knows better
  const sql = 'WITH pg_authid AS (SELECT 1 AS x) SELECT x FROM pg_authid';
  t.same(catalogFactors(score({ sql })).sort(), ['credential_catalog', 'system_catalog'], 'lexed: the CTE counts as the catalog');
  t.same(catalogFactors(score({ sql, relations: [] })), [], 'the guard read no relation: nothing to score');
  t.notOk(score({ sql, relations: [] }).factors.some((f) => f.name === 'no_filter'), 'and no unfiltered table read');
  // and a relation the guard read counts even where the text hides it from the lexer
  t.same(catalogFactors(score({ sql: 'SELECT 1', relations: [['pg_catalog', 'pg_authid']] })).sort(), ['credential_catalog', 'system_catalog']);
});

t.test('sensitive names', async (t) => {
  for (const n of ['password', 'PasswordHash', 'user_pwd', 'ssn', 'credit_card_number', 'cardNumber', 'api_key', 'iban', 'access_token', 'cvv']) t.equal(sensitivity(n), 'secret', n);
  for (const n of ['email', 'e_mail', 'customer_emails', 'phone_number', 'mobile', 'home_address', 'addresses', 'date_of_birth', 'dob', 'salary', 'salaries', 'zip_code']) t.equal(sensitivity(n), 'personal', n);
  for (const n of ['name', 'id', 'amount', 'shipping', 'status', 'description', 'input_tokens', 'mail_date', 'discard']) t.equal(sensitivity(n), undefined, n);
});

t.test("the guard's real refusals are read as the right factor", async (t) => {
  const cases: Array<[Dialect, string, GuardClass]> = [
    ['postgresql', 'DELETE FROM t', 'write'],
    ['postgresql', 'WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x', 'write'],
    ['postgresql', 'SELECT * INTO n FROM t', 'write'],
    ['postgresql', 'SELECT pg_sleep(1)', 'dangerous_function'],
    ['postgresql', 'SELECT 1; SELECT 2', 'multiple_statements'],
    ['postgresql', 'SELECT * FROM t FOR UPDATE', 'locking'],
    ['postgresql', 'SELEC 1', 'other'],
    ['postgresql', '', 'other'],
    ['mysql', 'SELECT SLEEP(1)', 'dangerous_function'],
    ['mysql', "SELECT GET_LOCK('a', 1)", 'dangerous_function'],
    ['mysql', 'SELECT * FROM t LOCK IN SHARE MODE', 'locking'],
    ['mysql', "SELECT * FROM t INTO OUTFILE '/tmp/x'", 'write'],
    ['mysql', 'SELECT @x := 1', 'write'],
    ['trino', 'SELECT * FROM system.runtime.queries', 'dangerous_function'],
    ['trino', 'INSERT INTO t VALUES (1)', 'write'],
    ['trino', "SELECT * FROM TABLE(system.query(query => 'x'))", 'dangerous_function'],
    ['trino', 'SET SESSION a = 1', 'write'],
    ['bigquery', 'CREATE TABLE d.x AS SELECT 1', 'write'],
    ['bigquery', 'SELECT 1; SELECT 2', 'multiple_statements'],
  ];
  for (const d of ['postgresql', 'mysql', 'trino', 'bigquery'] as const) await prepareGuard(d);
  for (const [dialect, sql, cls] of cases) {
    let reason = '';
    try {
      guardSql(sql, dialect, { defaultLimit: 100, maxLimit: 1000 });
    } catch (err) {
      reason = (err as Error).message;
    }
    t.not(reason, '', `${dialect}: ${sql} is refused`);
    t.equal(guardClass(reason), cls, `${dialect}: ${sql} → ${cls} ("${reason}")`);
  }
  const lock = catalogLockFor({ enforce: true, allowed: [{ name: 'lake', allowed_schemas: ['sales'] }, { name: 'hive', allowed_schemas: [] }], catalog: 'lake', discovery: false })!;
  for (const sql of ['SELECT * FROM hive.sales.orders', 'SELECT * FROM "HIVE".sales.orders', 'SELECT 1 FROM lake.hr.people', 'SELECT * FROM a.b.c.d']) {
    let reason = '';
    try {
      checkCatalogLock(sql, lock);
    } catch (err) {
      reason = (err as Error).message;
    }
    t.not(reason, '', `catalog lock: ${sql} is refused`);
    t.equal(guardClass(reason), 'catalog_lock', `catalog lock: ${sql} ("${reason}")`);
  }
});

t.test('widget types and apply_to', async (t) => {
  t.equal(widgetType('mcp'), 'mcp');
  t.equal(widgetType('legacy'), 'assistant');
  t.equal(widgetType('auth'), 'agent', 'the authenticated agent');
  t.equal(widgetType('web'), 'dashboard');
  t.equal(widgetType('api', 'dashboard'), 'dashboard', 'the widget an event carries wins over its channel');
  t.equal(widgetType(undefined), 'unknown');
  t.ok(appliesTo('mcp', ['mcp']));
  t.notOk(appliesTo('api', ['mcp']));
  t.ok(appliesTo('legacy', ['assistant']));
  t.ok(appliesTo('legacy', ['Legacy']), 'the channel name, any case');
  t.ok(appliesTo('api', ['*']));
  t.ok(appliesTo(undefined, ['*']));
  t.notOk(appliesTo(undefined, ['mcp', 'api']));
  t.ok(appliesTo('auth', ['auth']) && appliesTo('auth', ['agent']), 'auth: the old name of agent');
  t.ok(appliesTo('api', ['web'], 'dashboard'), 'web: the old name of dashboard');
  t.notOk(appliesTo('api', ['api'], 'dashboard'), 'the dashboard is not api, though it asks on /api/query');
  t.notOk(appliesTo('api', ['dashboard']), 'nor is api the dashboard');
  const s = new MemoryAlertState();
  t.equal(await s.claim('r1'), true);
  t.equal(await s.claim('r1'), false);
});

// ---- the actor over a real bus ----------------------------------------------------------------

const nats = await startNats();
const smtp = await startSmtp({ tls: 'none' });
const logLines: string[] = [];
const sink = new Writable({ write(chunk: Buffer, _e, cb) { logLines.push(...chunk.toString().split('\n').filter(Boolean)); cb(); } });
const log = createLogger({ svc: 'alerts-test', level: 'info', destination: sink });
const quiet = createLogger({ svc: 'client', level: 'silent' });
const config = testConfig({
  natsUrl: nats.url,
  extra: {
    mcp: { security_alerts: { enabled: true, risk_threshold: 70, apply_to: ['mcp'], notify_emails: ['sec@example.org', 'ciso@example.org'] } },
    email: { enabled: false, smtp: { host: smtp.host, port: smtp.port, from_email: 'cortado@example.org', use_tls: false, use_ssl: false } },
  },
});
const alerts0 = structuredClone(config.mcp.security_alerts);

const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'actors', log, strict: true });
await bus.ensureEventStream();
const client = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'client', log: quiet, strict: true });
const settings = await startSettings({ bus, config, log: quiet });
const mailer = await startMailer({ bus, config, log: quiet });
// the mask rules exist before the alerts actor first reads them
await client.request(MaskRuleCreate, { field_pattern: '*phone*', strategy: 'redact' }, { requestId: 'setup' });
await client.request(MaskRuleCreate, { field_pattern: '*iban*', strategy: 'hash', enabled: false }, { requestId: 'setup' });
const alerts = await startAlerts({ bus, config, log });

const raised: any[] = [];
const unlisten = client.listen(AlertRaisedEvt.subject, (data) => raised.push(data));
const nc = await connect({ servers: nats.url });
const jsm = await jetstreamManager(nc);

t.teardown(async () => {
  unlisten();
  await alerts.stop();
  await bus.stopServing(['settings', 'mailer'], Date.now() + 2_000);
  await settings.stop();
  await mailer.stop();
  await nc.close();
  await bus.close();
  await client.close();
  await smtp.close();
  await nats.stop();
});

t.beforeEach(() => {
  setConfig(config, 'mcp.security_alerts', structuredClone(alerts0));
  setConfig(config, 'email.enabled', false);
  setConfig(config, 'email.max_recipients_per_email', 10);
});

const usage = { input_tokens: 1, output_tokens: 1, cached_input_tokens: 0, llm_calls: 1 };
interface Opts { channel?: Channel; user?: string; ts?: string; widget?: string }
const base = (rid: string, o: Opts) => ({
  id: randomUUID(), ts: o.ts ?? new Date().toISOString(), request_id: rid, ...(o.user ? { user: o.user } : {}), ...(o.channel ? { channel: o.channel } : {}),
  ...(o.widget ? { widget: o.widget } : {}),
});
const ctxOf = (rid: string, o: Opts) => ({ requestId: rid, ...(o.user ? { user: o.user } : {}) });
function generated(rid: string, sql: string, o: Opts = {}): void {
  client.publish(QueryGeneratedEvt, { ...base(rid, o), question: 'q', sql, model: 'm', usage, attempt: 0 }, ctxOf(rid, o));
}
function executed(rid: string, sql: string, rows: number, o: Opts = {}): void {
  client.publish(QueryExecutedEvt, { ...base(rid, o), sql, duration_ms: 3, row_count: rows, truncated: rows >= 1000, usage, attempt: 0 }, ctxOf(rid, o));
}
function rejected(rid: string, sql: string, code: string, reason: string, o: Opts = {}): void {
  client.publish(QueryRejectedEvt, { ...base(rid, o), sql, code, reason }, ctxOf(rid, o));
}

/** Every event published so far has been handled by the alerts consumer. */
async function settled(): Promise<void> {
  await client.flush();
  const stream = eventsStreamName('cortado');
  const end = Date.now() + 10_000;
  for (;;) {
    const si = await jsm.streams.info(stream);
    const ci = await jsm.consumers.info(stream, ALERTS_CONSUMER);
    if (ci.num_pending === 0 && ci.num_ack_pending === 0 && ci.delivered.stream_seq >= si.state.last_seq) break;
    if (Date.now() > end) throw new Error('the alerts consumer did not catch up');
    await new Promise((r) => setTimeout(r, 20));
  }
  await new Promise((r) => setTimeout(r, 50)); // the event of a decided alert is published right after
}

async function alertFor(rid: string, timeoutMs = 5_000): Promise<any> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const a = raised.find((x) => x.request_id === rid);
    if (a || Date.now() > end) return a;
    await new Promise((r) => setTimeout(r, 20));
  }
}
const alertsFor = (rid: string) => raised.filter((x) => x.request_id === rid);

const BAD = 'SELECT email, password_hash FROM users';

/** Whether the alerts' durable consumer exists on the server. */
async function consumerExists(): Promise<boolean> {
  return jsm.consumers.info(eventsStreamName('cortado'), ALERTS_CONSUMER).then(() => true, () => false);
}

async function until(what: string, cond: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

t.test('disabled: nothing reads the stream; enabled again: the questions from then on are scored', async (t) => {
  t.ok(await consumerExists(), 'enabled: the durable consumer is there');
  setConfig(config, 'mcp.security_alerts.enabled', false);
  await until('the consumer is removed', async () => !(await consumerExists()));
  t.pass('switched off at run time: the durable consumer is removed (no work for the server per event)');
  generated('off-1', BAD, { channel: 'mcp', user: 'ann' });
  await client.flush();
  await new Promise((r) => setTimeout(r, 300));
  t.same(alertsFor('off-1'), [], 'nothing fires while off');

  setConfig(config, 'mcp.security_alerts.enabled', true);
  await until('the consumer is back', consumerExists);
  generated('on-again', BAD, { channel: 'mcp', user: 'ann' });
  t.ok(await alertFor('on-again'), 'switched on again: a question from now on fires');
  await settled();
  t.same(alertsFor('off-1'), [], 'a question asked while off is not scored later');
});

t.test('an MCP query above the threshold fires; the same from the API does not (apply_to: [mcp])', async (t) => {
  generated('mcp-1', BAD, { channel: 'mcp', user: 'ann' });
  generated('api-1', BAD, { channel: 'api', user: 'ann' });
  generated('mcp-ok', 'SELECT name FROM products WHERE id = 1', { channel: 'mcp', user: 'ann' });
  const a = await alertFor('mcp-1');
  t.ok(a, 'alert raised');
  t.match(a, { request_id: 'mcp-1', user: 'ann', channel: 'mcp', widget_type: 'mcp', score: 75, reasons: ['score'], sql: BAD, notified: [] });
  t.same(a.factors.map((f: any) => f.name), ['sensitive_columns', 'no_filter', 'unfiltered_sensitive']);
  await settled();
  t.same(alertsFor('api-1'), [], 'api is not in apply_to');
  t.same(alertsFor('mcp-ok'), [], 'a harmless query');
  const line = logLines.map((l) => JSON.parse(l)).find((l) => l.rid === 'mcp-1' && l.msg === 'security alert');
  t.ok(line, 'a warn log line');
  t.equal(line.level, 'warn');
  t.match(line, { score: 75, widget_type: 'mcp', user: 'ann', reasons: ['score'] });
  t.notOk(logLines.some((l) => l.includes('password_hash')), 'the SQL text is not logged');
});

t.test('apply_to takes widget types, channel names and *', async (t) => {
  setConfig(config, 'mcp.security_alerts.apply_to', ['assistant', 'api']);
  generated('wt-legacy', BAD, { channel: 'legacy' });
  generated('wt-api', BAD, { channel: 'api' });
  generated('wt-mcp', BAD, { channel: 'mcp' });
  t.match(await alertFor('wt-legacy'), { widget_type: 'assistant', channel: 'legacy' });
  t.match(await alertFor('wt-api'), { widget_type: 'api' });
  await settled();
  t.same(alertsFor('wt-mcp'), [], 'mcp is not in this apply_to');
  setConfig(config, 'mcp.security_alerts.apply_to', ['*']);
  generated('wt-star', BAD, { channel: 'web' });
  t.match(await alertFor('wt-star'), { widget_type: 'dashboard' });
  setConfig(config, 'mcp.security_alerts.apply_to', ['dashboard']);
  generated('wt-dash', BAD, { channel: 'api', widget: 'dashboard' });
  generated('wt-api-2', BAD, { channel: 'api', widget: 'api' });
  t.match(await alertFor('wt-dash'), { widget_type: 'dashboard', channel: 'api' });
  await settled();
  t.same(alertsFor('wt-api-2'), [], 'api is not the dashboard');
});

t.test('the threshold: above fires, equal does not', async (t) => {
  const sql = 'SELECT email, address FROM customers'; // 55 (phone would be masked here)
  setConfig(config, 'mcp.security_alerts.risk_threshold', 55);
  generated('th-equal', sql, { channel: 'mcp' });
  await settled();
  t.same(alertsFor('th-equal'), [], 'a score equal to the threshold is not above it');
  setConfig(config, 'mcp.security_alerts.risk_threshold', 54);
  generated('th-above', sql, { channel: 'mcp' });
  t.match(await alertFor('th-above'), { score: 55, reasons: ['score'] });
});

t.test('a column matching an enabled mask rule fires whatever the score; a disabled rule does not', async (t) => {
  generated('mask-1', 'SELECT phone FROM customers WHERE id = 1', { channel: 'mcp', user: 'bob' });
  const a = await alertFor('mask-1');
  t.match(a, { score: 45, reasons: ['masked_column'] });
  t.ok(a.factors.some((f: any) => f.name === 'masked_column' && f.detail === 'phone'));
  generated('mask-2', 'SELECT iban FROM accounts WHERE id = 1', { channel: 'mcp', user: 'bob' });
  await settled();
  t.same(alertsFor('mask-2'), [], 'the *iban* rule is disabled (and 30 is under 70)');
  generated('mask-3', 'SELECT phone FROM customers WHERE id = 1', { channel: 'api', user: 'bob' });
  await settled();
  t.same(alertsFor('mask-3'), [], 'still only for apply_to');
});

t.test('a rejection without a channel is judged by the channel its question came in on', async (t) => {
  const sql = 'SELECT * FROM hive.sales.orders';
  generated('rej-1', sql, { channel: 'mcp', user: 'cy' }); // 20: no alert yet
  rejected('rej-1', sql, 'SQL_REJECTED', 'the SQL reads hive.sales.orders, in catalog "hive", but this session is locked to catalog "lake"', { user: 'cy' });
  const a = await alertFor('rej-1');
  t.match(a, { channel: 'mcp', widget_type: 'mcp', score: 95, user: 'cy' });
  t.ok(a.factors.some((f: any) => f.name === 'catalog_lock_violation'));
  rejected('rej-2', 'DROP TABLE users', 'SQL_REJECTED', 'only a SELECT query may run; this is DROP', { user: 'cy' });
  await settled();
  t.same(alertsFor('rej-2'), [], 'a channel never seen: only apply_to [*] covers it');
});

t.test('the executed event adds the row count', async (t) => {
  const sql = 'SELECT email, birth_date, address FROM customers'; // 65 as generated
  generated('rows-1', sql, { channel: 'mcp' });
  await settled();
  t.same(alertsFor('rows-1'), [], 'under the threshold when generated');
  executed('rows-1', `${sql}\nLIMIT 1000`, 1000, { channel: 'mcp' });
  const a = await alertFor('rows-1');
  t.match(a, { score: 80 });
  t.ok(a.factors.some((f: any) => f.name === 'many_rows'));
});

t.test('one alert per question: its later events and redeliveries fold into it', async (t) => {
  generated('dup-1', BAD, { channel: 'mcp' });
  executed('dup-1', `${BAD}\nLIMIT 100`, 3, { channel: 'mcp' });
  generated('dup-1', BAD, { channel: 'mcp' }); // the same event again, as a redelivery would bring it
  await settled();
  await new Promise((r) => setTimeout(r, 200));
  t.equal(alertsFor('dup-1').length, 1);
});

t.test('two alerts actors sharing the consumer still raise one alert per question', async (t) => {
  const bus2 = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'actors-2', log: quiet, strict: true });
  const second = await startAlerts({ bus: bus2, config, log: quiet });
  t.teardown(async () => {
    await second.stop();
    await bus2.close();
  });
  const rids = Array.from({ length: 20 }, (_, i) => `pair-${i}`);
  for (const rid of rids) {
    generated(rid, BAD, { channel: 'mcp' });
    executed(rid, `${BAD}\nLIMIT 100`, 3, { channel: 'mcp' });
    rejected(rid, BAD, 'DB_QUERY_FAILED', 'permission denied for table users', { channel: 'mcp' });
  }
  await settled();
  await new Promise((r) => setTimeout(r, 300));
  for (const rid of rids) t.equal(alertsFor(rid).length, 1, rid);
});

t.test('a burst of questions by one user', async (t) => {
  setConfig(config, 'mcp.security_alerts.risk_threshold', 25);
  const rids = Array.from({ length: 20 }, (_, i) => `burst-${i + 1}`);
  for (const rid of rids) generated(rid, 'SELECT count(*) FROM orders', { channel: 'mcp', user: 'dora' }); // 10 each
  await settled();
  const fired = raised.filter((a) => a.request_id.startsWith('burst-'));
  t.same(fired.map((a) => a.request_id), ['burst-20'], 'the 20th question in the window fires');
  t.match(fired[0], { score: 30, user: 'dora' });
});

t.test('events older than an hour are not scored', async (t) => {
  generated('old-1', BAD, { channel: 'mcp', ts: new Date(Date.now() - 2 * 3_600_000).toISOString() });
  await settled();
  t.same(alertsFor('old-1'), []);
});

t.test('e-mail on: notify_emails receive the alert through the mailer', async (t) => {
  setConfig(config, 'email.enabled', true);
  const before = smtp.received.length;
  generated('mail-1', BAD, { channel: 'mcp', user: 'eve' });
  const a = await alertFor('mail-1', 10_000);
  t.same(a.notified, ['sec@example.org', 'ciso@example.org']);
  const got = (await smtp.waitFor(before + 1)).slice(before);
  t.equal(got.length, 1);
  t.same(got[0]!.to, ['sec@example.org', 'ciso@example.org']);
  const m = got[0]!.parsed;
  t.match(m.subject, /Security alert: risk 75\/100 \(mcp\)/);
  t.match(m.text, /User: +eve/);
  t.match(m.text, /Request id: +mail-1/);
  t.match(m.text, /\+45 +sensitive_columns \(password_hash, email\)/);
  t.match(m.text, /SELECT email, password_hash FROM users/);
  t.match(m.html, /&lt;|<pre/);
});

t.test('e-mail on, more addresses than one e-mail may carry: split, every address reached', async (t) => {
  setConfig(config, 'email.enabled', true);
  setConfig(config, 'email.max_recipients_per_email', 1);
  const before = smtp.received.length;
  generated('mail-2', BAD, { channel: 'mcp' });
  const a = await alertFor('mail-2', 10_000);
  t.same(a.notified, ['sec@example.org', 'ciso@example.org']);
  const got = (await smtp.waitFor(before + 2)).slice(before);
  t.same(got.map((g) => g.to).flat().sort(), ['ciso@example.org', 'sec@example.org']);
});

t.test('e-mail off: the alert is raised and logged, nobody is mailed', async (t) => {
  const before = smtp.received.length;
  generated('mail-3', BAD, { channel: 'mcp' });
  const a = await alertFor('mail-3');
  t.same(a.notified, []);
  await new Promise((r) => setTimeout(r, 300));
  t.equal(smtp.received.length, before);
});

/**
 * Reports by e-mail against real SMTP servers on loopback (test/helpers/smtp.ts), with Cortado
 * running for real (edge, executor, masking over a private NATS; PostgreSQL): a result exported
 * by sql.export (stored in the JetStream object store) goes out as an attachment through
 * STARTTLS with a login and through implicit TLS, and the received message is parsed back; an
 * html report is embedded; a report over export.max_file_size_mb is not attached and the e-mail
 * says why; a login refused, a connection refused and a TLS failure each come back distinctly;
 * POST /admin/test-email; POST /api/export (the browser's download).
 *
 * The mailer runs beside the stack with the test servers' certificate as its CA (operators use
 * NODE_EXTRA_CA_CERTS); every other actor is the stack's.
 */
import { parseString } from '@fast-csv/parse';
import ExcelJS from 'exceljs';
import { DomUtils, parseDocument } from 'htmlparser2';
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import type { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { ALL_ACTORS, MailSend, SqlExport } from '../../protocol/subjects.js';
import { startMailer } from '../../actors/mailer/actor.js';
import { reportMail } from '../../actors/lib/mail/template.js';
import { testConfig, setConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { startSmtp, type SmtpServer } from '../helpers/smtp.js';
import { call, startStack } from '../helpers/stack.js';

const PASSWORD = 'smtp-Pw-9931-not-in-logs';
const nats = await startNats();
const db = await createTestDb('mail');
await db.pool.query(`
  CREATE TABLE sales (id integer PRIMARY KEY, region text NOT NULL, amount numeric(10,2) NOT NULL, contact_email text NOT NULL, note text);
  INSERT INTO sales SELECT g, CASE WHEN g % 3 = 0 THEN 'North' WHEN g % 3 = 1 THEN 'Süd, "East"' ELSE '=cmd|calc' END, g * 1.5, 'user' || g || '@example.org', CASE WHEN g % 5 = 0 THEN NULL ELSE 'line ' || g END FROM generate_series(1, 120) g;
`);
const starttls = await startSmtp({ tls: 'starttls', auth: { user: 'reports', pass: PASSWORD } });
const implicit = await startSmtp({ tls: 'implicit', auth: { user: 'reports', pass: PASSWORD } });
const gone = await startSmtp({ tls: 'none' });
const refusedPort = gone.port;
await gone.close();

const config = testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  extra: {
    admin: { enabled: true, username: 'admin', password: 'correct horse' },
    email: {
      enabled: true,
      smtp: { host: starttls.host, port: starttls.port, user: 'reports', password: PASSWORD, from_email: 'cortado@example.org', from_name: 'Cortado', use_tls: true, use_ssl: false, reply_to: 'data@example.org', custom_headers: { 'X-Report': 'daily' } },
    },
    export: { max_rows: 100, max_file_size_mb: 1, filename_template: '{{schedule_name}}_{{date}}_{{time}}' },
  },
});
const smtp0 = structuredClone(config.email.smtp);
const stack = await startStack(config, { edge: true, actors: ALL_ACTORS.filter((a) => a !== 'mailer') });
const quiet = createLogger({ svc: 'test', level: 'silent' });
const mailerBus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'mailer', log: quiet, strict: true });
const mailer = await startMailer({ bus: mailerBus, config, log: quiet }, { tls: { ca: [starttls.cert!, implicit.cert!] } });
const client = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'client', log: quiet, strict: true });
t.teardown(async () => {
  await mailerBus.stopServing(['mailer'], Date.now() + 2_000);
  await mailer.stop();
  await mailerBus.close();
  await client.close();
  await stack.stop();
  await starttls.close();
  await implicit.close();
  await db.drop();
  await nats.stop();
});
t.beforeEach(() => {
  setConfig(config, 'email.smtp', structuredClone(smtp0));
  setConfig(config, 'export.max_file_size_mb', 1);
});

const SQL = 'SELECT id, region, amount, note FROM sales ORDER BY id';
const ctx = (rid: string) => ({ requestId: rid });
const templates = config.email.templates;
/** the rows as Cortado reads them: an exact numeric is a JSON number */
const expected = async (limit: number) => ((await db.pool.query({ text: `${SQL} LIMIT ${limit}`, rowMode: 'array' })).rows as unknown[][]).map((r) => [r[0], r[1], Number(r[2]), r[3]]);

function parseCsv(text: string): Promise<string[][]> {
  return new Promise((resolve, reject) => {
    const out: string[][] = [];
    parseString(text.replace(/^\ufeff/, ''), { headers: false }).on('data', (r: string[]) => out.push(r)).on('error', reject).on('end', () => resolve(out));
  });
}
const safe = (v: unknown) => (v === null ? '' : typeof v === 'string' && /^[=+\-@\t\r]/.test(v) ? `'${v}` : String(v));

async function refusal(p: Promise<unknown>): Promise<CortadoError> {
  try {
    await p;
  } catch (err) {
    return err as CortadoError;
  }
  throw new Error('expected a refusal');
}

async function exportAndMail(server: SmtpServer, format: 'csv' | 'excel' | 'html', rid: string) {
  const at = new Date('2026-11-25T06:30:00Z');
  const exp = await client.request(SqlExport, { sql: SQL, format, title: 'Daily sales', at: at.toISOString(), timezone: 'Europe/Paris' }, ctx(rid));
  const mail = reportMail({ templates, schedule_name: 'Daily sales', format, at, timeZone: 'Europe/Paris', max_file_size_mb: config.export.max_file_size_mb, rows: exp.rows, ...(exp.truncated ? { truncated_at: exp.rows } : {}), file: { filename: exp.filename, content_type: exp.content_type, bytes: exp.bytes, too_large: exp.too_large, ...(exp.object ? { object: exp.object } : {}) } });
  const before = server.received.length;
  const reply = await client.request(MailSend, {
    to: ['boss@example.org'], subject: mail.subject, text: mail.text,
    ...(mail.html !== undefined ? { html: mail.html } : {}), ...(mail.html_object ? { html_object: mail.html_object } : {}),
    ...(mail.attachment ? { attachments: [{ filename: mail.attachment.filename, content_type: mail.attachment.content_type, object: mail.attachment.object }] } : {}),
  }, ctx(`${rid}-mail`));
  t.equal(reply.sent, true);
  const got = (await server.waitFor(before + 1))[before]!;
  return { exp, got };
}

t.test('csv through STARTTLS with a login: the attachment parsed back equals the rows', async (t) => {
  const { exp, got } = await exportAndMail(starttls, 'csv', 'csv-1');
  t.equal(exp.rows, 100, 'export.max_rows');
  t.equal(exp.truncated, true);
  t.equal(exp.filename, 'Daily_sales_2026-11-25_07-30-00.csv', 'filename_template, local time, hyphens');
  t.equal(got.secure, true, 'encrypted (STARTTLS)');
  t.equal(got.user, 'reports', 'logged in');
  t.equal(got.parsed.subject, 'Report: Daily sales (2026-11-25)');
  t.match(got.parsed.text, /ran on 2026-11-25 at 07:30:00/);
  t.match(got.parsed.text, /first 100 rows/);
  t.equal(got.parsed.headers.get('x-report'), 'daily', 'custom_headers');
  t.match(JSON.stringify(got.parsed.replyTo?.value), /data@example\.org/, 'reply_to');
  const [att] = got.parsed.attachments;
  t.equal(att?.filename, exp.filename);
  t.equal(att?.contentType, 'text/csv');
  const rows = await parseCsv(att!.content.toString('utf8'));
  t.same(rows[0], ['id', 'region', 'amount', 'note']);
  t.same(rows.slice(1), (await expected(100)).map((r) => r.map(safe)));
  t.ok(rows.slice(1).some((r) => r[1] === "'=cmd|calc"), 'a formula-looking value arrives defused');
});

t.test('excel through implicit TLS: the attachment read back with exceljs', async (t) => {
  setConfig(config, 'email.smtp', { ...smtp0, host: implicit.host, port: implicit.port, use_tls: false, use_ssl: true });
  const { exp, got } = await exportAndMail(implicit, 'excel', 'xlsx-1');
  t.equal(got.secure, true);
  const [att] = got.parsed.attachments;
  t.equal(att?.filename, exp.filename);
  t.match(exp.filename, /\.xlsx$/);
  const wb = new ExcelJS.Workbook();
  await wb.xlsx.load(att!.content as unknown as ArrayBuffer);
  const ws = wb.worksheets[0]!;
  const want = await expected(100);
  t.equal(ws.rowCount, 101);
  for (let i = 0; i < want.length; i++) {
    const values = (ws.getRow(i + 2).values as unknown[]).slice(1);
    t.same(values.map((v) => v ?? null).concat(Array(4 - values.length).fill(null)), want[i], `row ${i + 1}`);
  }
});

t.test('html: embedded in the body, escaped', async (t) => {
  const { got } = await exportAndMail(starttls, 'html', 'html-1');
  t.equal(got.parsed.attachments.length, 0, 'not attached');
  const doc = parseDocument(String(got.parsed.html));
  const body = DomUtils.textContent(doc);
  t.match(body, /ran on 2026-11-25 at 07:30:00/, 'the template text first');
  const trs = DomUtils.getElementsByTagName('tr', doc).slice(1);
  t.equal(trs.length, 100);
  const want = await expected(100);
  t.same(trs.map((tr) => DomUtils.getElementsByTagName('td', tr).map((td) => DomUtils.textContent(td))), want.map((r) => r.map((v) => (v === null ? '' : String(v)))));
});

t.test('over export.max_file_size_mb: not stored, not attached, the e-mail says why', async (t) => {
  const big = `SELECT id, repeat('x', 20000) AS filler FROM sales ORDER BY id`;
  const exp = await client.request(SqlExport, { sql: big, format: 'csv', title: 'Big' }, ctx('big-1'));
  t.equal(exp.too_large, true);
  t.equal(exp.object, undefined);
  const mail = reportMail({ templates, schedule_name: 'Big', format: 'csv', at: new Date(), timeZone: 'UTC', max_file_size_mb: 1, file: { filename: exp.filename, content_type: exp.content_type, bytes: exp.bytes, too_large: true } });
  t.equal(mail.attachment, undefined);
  const before = starttls.received.length;
  await client.request(MailSend, { to: ['boss@example.org'], subject: mail.subject, text: mail.text }, ctx('big-1-mail'));
  const got = (await starttls.waitFor(before + 1))[before]!;
  t.equal(got.parsed.attachments.length, 0);
  t.match(got.parsed.text, /larger than the attachment limit of 1 MB \(export\.max_file_size_mb\) and is not attached/);
});

t.test('SMTP failures come back distinctly: login refused, connection refused, TLS', async (t) => {
  setConfig(config, 'email.smtp', { ...smtp0, password: 'wrong' });
  const auth = await refusal(client.request(MailSend, { to: ['a@example.org'], subject: 's', text: 't' }, ctx('f-auth')));
  t.match(auth.details, { smtp: 'auth' });
  t.notMatch(auth.message, /wrong|smtp-Pw/, 'no password in the message');
  setConfig(config, 'email.smtp', { ...smtp0, port: refusedPort });
  const conn = await refusal(client.request(MailSend, { to: ['a@example.org'], subject: 's', text: 't' }, ctx('f-conn')));
  t.match(conn.details, { smtp: 'connection' });
  t.match(conn.message, /connection refused/);
  // implicit TLS spoken to a STARTTLS server: the handshake fails
  setConfig(config, 'email.smtp', { ...smtp0, use_tls: false, use_ssl: true });
  const tls = await refusal(client.request(MailSend, { to: ['a@example.org'], subject: 's', text: 't' }, ctx('f-tls')));
  t.match(tls.details, { smtp: 'tls' });
  t.not(auth.details?.smtp, conn.details?.smtp);
  t.not(conn.details?.smtp, tls.details?.smtp);
  const missing = await refusal(client.request(MailSend, { to: ['a@example.org'], subject: 's', text: 't', attachments: [{ filename: 'x.csv', content_type: 'text/csv', object: 'no-such-object' }] }, ctx('f-obj')));
  t.equal(missing.code, 'NOT_FOUND', 'a stored file that is not there');
});

async function signIn() {
  const res = await call(`${stack.url}/admin/login`, { body: { username: 'admin', password: 'correct horse' } });
  return { cookie: (res.headers.get('set-cookie') ?? '').split(';')[0] ?? '', csrf: res.body?.csrf_token as string };
}

t.test('POST /admin/test-email', async (t) => {
  const anon = await call(`${stack.url}/admin/test-email`, { body: { to: 'x@example.org', subject: 's', body: 'b' } });
  t.equal(anon.status, 401, 'admins only');
  const { cookie, csrf } = await signIn();
  const headers = { cookie, 'x-csrf-token': csrf };
  const before = starttls.received.length;
  const ok = await call(`${stack.url}/admin/test-email`, { body: { to: 'ops@example.org', subject: 'Test from Cortado', body: 'It works.\nSecond line.' }, headers });
  t.equal(ok.status, 200, ok.text);
  t.match(ok.body, { ok: true, sent: true });
  const got = (await starttls.waitFor(before + 1))[before]!;
  t.same(got.to, ['ops@example.org']);
  t.equal(got.parsed.subject, 'Test from Cortado');
  t.match(got.parsed.text, /It works\.\nSecond line\./);
  const bad = await call(`${stack.url}/admin/test-email`, { body: { to: 'not an address', subject: 's', body: 'b' }, headers });
  t.equal(bad.status, 400);
  t.equal(bad.body.error.code, 'VALIDATION_FAILED');
  const missing = await call(`${stack.url}/admin/test-email`, { body: { to: 'ops@example.org' }, headers });
  t.equal(missing.status, 400);
  setConfig(config, 'email.smtp', { ...smtp0, password: 'wrong' });
  const refused = await call(`${stack.url}/admin/test-email`, { body: { to: 'ops@example.org', subject: 's', body: 'b' }, headers });
  t.equal(refused.status, 200);
  t.match(refused.body, { ok: false, sent: false, smtp: 'auth' });
  t.match(refused.body.error, /refused the login/);
  t.notOk(refused.text.includes('wrong'), 'no password echoed');
});

t.test('POST /api/export: the download, signed in only, masked', async (t) => {
  const anon = await call(`${stack.url}/api/export`, { body: { sql: SQL, format: 'csv' } });
  t.equal(anon.status, 401, 'anonymous callers get no file');
  const { cookie, csrf } = await signIn();
  const headers = { cookie, 'x-csrf-token': csrf };
  const rule = await call(`${stack.url}/admin/mask-rules`, { body: { field_pattern: 'contact_email', strategy: 'redact' }, headers });
  t.equal(rule.status, 201, rule.text);
  // the masking actor caches the rules a few seconds: ask until the new rule is in force
  const download = () => fetch(`${stack.url}/api/export`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ sql: 'SELECT id, contact_email FROM sales ORDER BY id LIMIT 5', format: 'csv', title: 'My contacts' }) });
  let res = await download();
  for (let i = 0; i < 40 && (await res.clone().text()).includes('@example.org'); i++) {
    await new Promise((r) => setTimeout(r, 250));
    res = await download();
  }
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^text\/csv/);
  t.match(res.headers.get('content-disposition'), /^attachment; filename="My_contacts_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d\.csv"/);
  const rows = await parseCsv(await res.text());
  t.equal(rows.length, 6);
  t.same(rows.map((r) => r[0]), ['id', '1', '2', '3', '4', '5']);
  for (const r of rows.slice(1)) t.notMatch(r[1], /@example\.org/, 'the mask rule applied to the file');
  const x = await fetch(`${stack.url}/api/export`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ sql: 'SELECT id FROM sales ORDER BY id', format: 'excel' }) });
  t.equal(x.status, 200);
  const wb = new ExcelJS.Workbook();
  await wb.xlsx.load(await x.arrayBuffer());
  t.equal(wb.worksheets[0]!.rowCount, 101, 'header + export.max_rows rows');
  const write = await call(`${stack.url}/api/export`, { body: { sql: 'DELETE FROM sales', format: 'csv' }, headers });
  t.equal(write.status, 422, write.text);
  t.equal(write.body.error.code, 'SQL_REJECTED', 'the guard refuses what is not a read');
  t.equal((await db.pool.query('SELECT count(*)::int AS n FROM sales')).rows[0].n, 120);
  const big = await call(`${stack.url}/api/export`, { body: { sql: `SELECT id, repeat('x', 20000) AS filler FROM sales`, format: 'csv' }, headers });
  t.equal(big.status, 422, big.text);
  t.equal(big.body.error.code, 'LIMIT_EXCEEDED');
  const nope = await call(`${stack.url}/api/export`, { body: { sql: SQL, format: 'pdf' }, headers });
  t.equal(nope.status, 400);
  const missing = await call(`${stack.url}/api/export`, { body: { sql: 'SELECT * FROM no_such_table', format: 'csv' }, headers });
  t.equal(missing.body.error.code, 'DB_QUERY_FAILED', missing.text);
});

t.test('the server\'s PostgreSQL is read through a server-side cursor, on a read-only connection of its own', async (t) => {
  const seen = new Set<string>();
  let done = false;
  const watcher = (async () => {
    while (!done) {
      const r = await db.pool.query(`SELECT query FROM pg_stat_activity WHERE application_name LIKE 'cortado-export-%' AND datname = current_database()`);
      for (const row of r.rows) seen.add(String(row.query));
      await new Promise((res) => setTimeout(res, 20));
    }
  })();
  // some work on the server (millions of joined rows), so the connection is there to be seen
  const exp = await client.request(SqlExport, { sql: 'SELECT s.id, count(*) AS n FROM sales s CROSS JOIN generate_series(1, 40000) g GROUP BY s.id ORDER BY s.id', format: 'csv', title: 'Slow' }, ctx('cursor-1'));
  done = true;
  await watcher;
  t.equal(exp.rows, 100);
  t.ok([...seen].some((q) => /^(DECLARE cortado_export|FETCH 1000 FROM cortado_export)/.test(q)), `the export's connection ran the cursor (${[...seen].join(' | ').slice(0, 200)})`);
});

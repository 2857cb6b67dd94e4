/**
 * The mailer actor over a real NATS (JetStream KV for the daily count) against real SMTP
 * servers on loopback: what arrives, the caps, e-mail off, and each kind of SMTP failure.
 */
import { Writable } from 'node:stream';
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { Bucket, MailFailedEvt, MailSend, MailSentEvt } from '../../protocol/subjects.js';
import { startMailer } from '../../actors/mailer/actor.js';
import { KvCounter, MemoryCounter, send, Transports, utcDay, type MailerDeps } from '../../actors/mailer/handle.js';
import { testConfig, setConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { startSmtp } from '../helpers/smtp.js';

const PASSWORD = 'pw-Zq81-never-logged';
const nats = await startNats();
const plain = await startSmtp({ tls: 'none', auth: { user: 'mailer', pass: PASSWORD } });
const tlsServer = await startSmtp({ tls: 'starttls', auth: { user: 'mailer', pass: PASSWORD } });
const closed = await startSmtp({ tls: 'none' });
const closedPort = closed.port;
await closed.close();

const lines: string[] = [];
const sink = new Writable({ write(chunk: Buffer, _enc, cb) { lines.push(...chunk.toString().split('\n').filter(Boolean)); cb(); } });
const log = createLogger({ svc: 'test', level: 'debug', destination: sink });
// SHOW_LOG=1 prints what the mailer logged
if (process.env.SHOW_LOG) t.teardown(() => { for (const l of lines) console.error(l); });
const quiet = createLogger({ svc: 'client', level: 'silent' });

const config = testConfig({
  natsUrl: nats.url,
  extra: {
    email: {
      enabled: true,
      smtp: {
        host: plain.host, port: plain.port, user: 'mailer', password: PASSWORD, from_email: 'cortado@example.org', from_name: 'Cortado Reports',
        use_tls: false, use_ssl: false, reply_to: 'data-team@example.org', custom_headers: { 'X-Cortado-Test': 'yes' },
      },
      max_recipients_per_email: 3,
      max_emails_per_day: 1000,
    },
  },
});
const smtp0 = structuredClone(config.email.smtp);

const actorBus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'mailer', log, strict: true });
const client = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'client', log: quiet, strict: true });
const mailer = await startMailer({ bus: actorBus, config, log }, { tls: { ca: [tlsServer.cert!] } });
const events: any[] = [];
const failures: any[] = [];
const unlisteners = [
  client.listen(MailSentEvt.subject, (data) => events.push(data)),
  client.listen(MailFailedEvt.subject, (data) => failures.push(data)),
];
const unlisten = () => { for (const u of unlisteners) u(); };
await client.flush();

t.teardown(async () => {
  unlisten();
  await actorBus.stopServing(['mailer'], Date.now() + 2_000);
  await mailer.stop();
  await actorBus.close();
  await client.close();
  await plain.close();
  await tlsServer.close();
  await nats.stop();
});

t.beforeEach(() => {
  setConfig(config, 'email.enabled', true);
  setConfig(config, 'email.smtp', structuredClone(smtp0));
  setConfig(config, 'email.max_recipients_per_email', 3);
  setConfig(config, 'email.max_emails_per_day', 1000);
});

const ctx = (rid: string) => ({ requestId: rid });
const attachment = { filename: 'report.csv', content_type: 'text/csv', content: Buffer.from('a,b\n1,2\n').toString('base64') };

async function refused(p: Promise<unknown>): Promise<CortadoError> {
  try {
    await p;
  } catch (err) {
    return err as CortadoError;
  }
  throw new Error('expected a refusal');
}

async function eventFor(rid: string, list: any[] = events): Promise<any> {
  const end = Date.now() + 3_000;
  for (;;) {
    const e = list.find((x) => x.request_id === rid);
    if (e || Date.now() > end) return e;
    await new Promise((r) => setTimeout(r, 20));
  }
}
/** the mail.failed event of a request */
const failureFor = (rid: string) => eventFor(rid, failures);

t.test('e-mail off: logged with recipients, subject, attachment name and size; not sent', async (t) => {
  setConfig(config, 'email.enabled', false);
  const before = plain.received.length;
  const reply = await client.request(MailSend, { to: ['ops@example.org'], subject: 'Daily sales', text: 'see attached', attachments: [attachment] }, ctx('off-1'));
  t.same(reply, { sent: false });
  await new Promise((r) => setTimeout(r, 200));
  t.equal(plain.received.length, before, 'nothing reached the SMTP server');
  const line = lines.map((l) => JSON.parse(l)).find((l) => l.rid === 'off-1' && /not sent/.test(l.msg));
  t.ok(line, 'a log line for it');
  t.same(line.to, ['ops@example.org']);
  t.equal(line.subject, 'Daily sales');
  t.same(line.attachments, [{ filename: 'report.csv', bytes: 8 }]);
  const e = await eventFor('off-1');
  t.match(e, { sent: false, to: ['ops@example.org'], subject: 'Daily sales', attachments: [{ filename: 'report.csv', bytes: 8 }] });
});

t.test('plain SMTP with a login: the mail arrives whole', async (t) => {
  const reply = await client.request(MailSend, {
    to: ['ops@example.org', 'OPS@example.org', 'cfo@example.org'], subject: 'Daily sales', text: 'see attached', html: '<p>see attached</p>', attachments: [attachment],
  }, ctx('plain-1'));
  t.equal(reply.sent, true);
  t.type(reply.message_id, 'string');
  const [got] = (await plain.waitFor(1)).slice(-1);
  t.equal(got!.user, 'mailer', 'logged in');
  t.equal(got!.from, 'cortado@example.org');
  t.same(got!.to, ['ops@example.org', 'cfo@example.org'], 'a recipient given twice (any case) gets one copy');
  const m = got!.parsed;
  t.equal(m.subject, 'Daily sales');
  t.equal(m.from?.value[0]?.name, 'Cortado Reports');
  t.equal(m.replyTo?.value[0]?.address, 'data-team@example.org');
  t.equal(m.headers.get('x-cortado-test'), 'yes', 'custom header');
  t.equal(m.text?.trim(), 'see attached');
  t.match(m.html, /<p>see attached<\/p>/);
  t.equal(m.attachments.length, 1);
  t.equal(m.attachments[0]!.filename, 'report.csv');
  t.equal(m.attachments[0]!.contentType, 'text/csv');
  t.equal(m.attachments[0]!.content.toString(), 'a,b\n1,2\n');
  t.equal(m.messageId, reply.message_id);
  t.match(await eventFor('plain-1'), { sent: true, to: ['ops@example.org', 'cfo@example.org'] });
});

t.test('STARTTLS (use_tls) with a certificate the mailer trusts', async (t) => {
  setConfig(config, 'email.smtp', { ...smtp0, host: 'localhost', port: tlsServer.port, use_tls: true });
  const reply = await client.request(MailSend, { to: ['sec@example.org'], subject: 'over TLS', text: 'hi' }, ctx('tls-1'));
  t.equal(reply.sent, true);
  const [got] = await tlsServer.waitFor(1);
  t.equal(got!.secure, true, 'the session was encrypted before the login');
  t.equal(got!.user, 'mailer');
  t.equal(got!.parsed.subject, 'over TLS');
});

t.test('use_tls against a server that offers no STARTTLS: refused, nothing sent in the clear', async (t) => {
  setConfig(config, 'email.smtp', { ...smtp0, use_tls: true });
  const before = plain.received.length;
  const err = await refused(client.request(MailSend, { to: ['a@example.org'], subject: 's', text: 't' }, ctx('tls-2')));
  t.equal(err.code, 'INTERNAL');
  t.match(err.message, /STARTTLS|TLS/i);
  t.equal(plain.received.length, before);
});

t.test('SMTP login refused: a clear error, the password nowhere', async (t) => {
  setConfig(config, 'email.smtp', { ...smtp0, password: `${PASSWORD}-wrong` });
  const err = await refused(client.request(MailSend, { to: ['a@example.org'], subject: 's', text: 't' }, ctx('auth-1')));
  t.equal(err.code, 'INTERNAL');
  t.match(err.message, /refused the login of "mailer"/);
  t.match(err.details, { smtp: 'auth', response_code: 535 });
  t.notMatch(err.message, PASSWORD);
  const e = await failureFor('auth-1');
  t.match(e, { reason: 'smtp_auth', code: 'INTERNAL', error: /refused the login/, to: ['a@example.org'] });
  t.notOk(events.some((x) => x.request_id === 'auth-1'), 'no mail.sent for a failure');
  await new Promise((r) => setTimeout(r, 100));
  const all = lines.join('\n');
  t.notOk(all.includes(PASSWORD), 'the SMTP password is in no log line');
  t.ok(lines.some((l) => l.includes('auth-1') && /SMTP failed/.test(l)), 'the failure is logged');
});

t.test('connection refused: a clear error, quickly', async (t) => {
  setConfig(config, 'email.smtp', { ...smtp0, port: closedPort });
  const started = Date.now();
  const err = await refused(client.request(MailSend, { to: ['a@example.org'], subject: 's', text: 't' }, ctx('conn-1')));
  t.equal(err.code, 'INTERNAL');
  t.match(err.message, new RegExp(`cannot connect to the SMTP server 127.0.0.1:${closedPort}: connection refused`));
  t.match(err.details, { smtp: 'connection' });
  t.ok(Date.now() - started < 5_000);
  t.match(await failureFor('conn-1'), { reason: 'smtp_connection', code: 'INTERNAL' });
});

t.test('an untrusted certificate: a TLS error', async (t) => {
  // a second mailer without the test CA: the server's self-signed certificate is not trusted
  const bus2 = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'mailer-2', log: quiet });
  t.teardown(() => bus2.close());
  const cfg = testConfig({ natsUrl: nats.url, extra: { email: { enabled: true, smtp: { ...smtp0, host: 'localhost', port: tlsServer.port, use_tls: true } } } });
  const transports = new Transports();
  t.teardown(() => transports.close());
  const deps: MailerDeps = { bus: bus2, config: cfg, log: quiet, counter: new MemoryCounter(), transports };
  const err = await refused(send({ to: ['a@example.org'], subject: 's', text: 't' }, deps, ctx('tls-3')));
  t.equal(err.code, 'INTERNAL');
  t.match(err.details, { smtp: 'tls' });
  t.match(err.message, /certificate/);
});

t.test('recipient cap: more distinct recipients than max_recipients_per_email are refused', async (t) => {
  const before = plain.received.length;
  const err = await refused(client.request(MailSend, { to: ['a@x.org', 'b@x.org', 'c@x.org', 'd@x.org'], subject: 's', text: 't' }, ctx('cap-1')));
  t.equal(err.code, 'LIMIT_EXCEEDED');
  t.match(err.message, /at most 3 recipients/);
  t.match(err.details, { limit: 'max_recipients_per_email', max: 3, recipients: 4 });
  setConfig(config, 'email.enabled', false);
  const off = await refused(client.request(MailSend, { to: ['a@x.org', 'b@x.org', 'c@x.org', 'd@x.org'], subject: 's', text: 't' }, ctx('cap-2')));
  t.equal(off.code, 'LIMIT_EXCEEDED', 'also while e-mail is off');
  const bad = await refused(client.request(MailSend, { to: ['not an address'], subject: 's', text: 't' }, ctx('cap-3')));
  t.equal(bad.code, 'VALIDATION_FAILED');
  t.equal(plain.received.length, before);
  t.match(await failureFor('cap-1'), { reason: 'max_recipients_per_email', code: 'LIMIT_EXCEEDED', to: ['a@x.org', 'b@x.org', 'c@x.org', 'd@x.org'] }, 'a refusal is a mail.failed event');
  t.match(await failureFor('cap-2'), { reason: 'max_recipients_per_email' });
  t.match(await failureFor('cap-3'), { reason: 'invalid', code: 'VALIDATION_FAILED' });
});

t.test('daily cap: counted in KV, a failed send gives its slot back, 0 sends nothing', async (t) => {
  const counter = new KvCounter(await client.bucket<number>(Bucket.Mail));
  const day = utcDay();
  const used = await counter.used(day);
  setConfig(config, 'email.max_emails_per_day', used + 2);
  const before = plain.received.length;
  t.equal((await client.request(MailSend, { to: ['a@x.org'], subject: 'one', text: 't' }, ctx('day-1'))).sent, true);
  // a failure does not use up the allowance
  setConfig(config, 'email.smtp', { ...smtp0, password: 'wrong' });
  t.equal((await refused(client.request(MailSend, { to: ['a@x.org'], subject: 'x', text: 't' }, ctx('day-2')))).code, 'INTERNAL');
  t.equal(await counter.used(day), used + 1, 'the failed send gave its slot back');
  setConfig(config, 'email.smtp', structuredClone(smtp0));
  t.equal((await client.request(MailSend, { to: ['a@x.org'], subject: 'two', text: 't' }, ctx('day-3'))).sent, true);
  const err = await refused(client.request(MailSend, { to: ['a@x.org'], subject: 'three', text: 't' }, ctx('day-4')));
  t.equal(err.code, 'LIMIT_EXCEEDED');
  t.match(err.message, /allowance is used up/);
  t.match(err.details, { limit: 'max_emails_per_day' });
  t.match(await failureFor('day-4'), { reason: 'max_emails_per_day', code: 'LIMIT_EXCEEDED', error: /allowance/ });
  await new Promise((r) => setTimeout(r, 200));
  t.equal(plain.received.length - before, 2, 'exactly the allowance arrived');
  t.equal(await counter.used(day), used + 2);

  setConfig(config, 'email.max_emails_per_day', 0);
  t.equal((await refused(client.request(MailSend, { to: ['a@x.org'], subject: 'zero', text: 't' }, ctx('day-5')))).code, 'LIMIT_EXCEEDED', '0: no e-mail at all');
});

t.test('the daily count is one allowance for every mailer: concurrent reservations from two connections', async (t) => {
  const other = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'other', log: quiet });
  t.teardown(() => other.close());
  const a = new KvCounter(await client.bucket<number>(Bucket.Mail));
  const b = new KvCounter(await other.bucket<number>(Bucket.Mail));
  const day = '2001-01-01';
  const results = await Promise.all(Array.from({ length: 24 }, (_, i) => (i % 2 ? a : b).reserve(day, 7)));
  t.equal(results.filter(Boolean).length, 7, 'exactly the cap, never more');
  t.equal(await a.used(day), 7);
  await b.release(day);
  t.equal(await a.used(day), 6);
});

t.test('attachments over export.max_file_size_mb are refused', async (t) => {
  const cfg = testConfig({ natsUrl: nats.url, extra: { email: { enabled: true, smtp: smtp0 }, export: { max_file_size_mb: 1 } } });
  const deps: MailerDeps = { bus: client, config: cfg, log: quiet, counter: new MemoryCounter(), transports: { get: () => { throw new Error('must not send'); } } };
  const big = Buffer.alloc(1024 * 1024 + 1, 65).toString('base64');
  const err = await refused(send({ to: ['a@x.org'], subject: 's', text: 't', attachments: [{ filename: 'big.csv', content_type: 'text/csv', content: big }] }, deps, ctx('big-1')));
  t.equal(err.code, 'LIMIT_EXCEEDED');
  t.match(err.details, { limit: 'max_file_size_mb', max: 1 });
  t.match(await failureFor('big-1'), { reason: 'max_file_size_mb', code: 'LIMIT_EXCEEDED', attachments: [{ filename: 'big.csv', bytes: 1024 * 1024 + 1 }] });
});

/**
 * One e-mail per idempotency key (mail.send `idempotency_key`), over a real NATS (the mailer's
 * JetStream KV bucket) against a real SMTP server on loopback: a repeat sends nothing and gets
 * the first reply (or error); two at once send one; a `sending` record left by a mailer that
 * died mid-send is not sent again and says delivery is unknown; mail.outcome reads a record;
 * refusals and failures are mail.failed events with their reason, successes mail.sent.
 */
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { Bucket, MailFailedEvt, MailOutcome, MailSend, MailSentEvt } from '../../protocol/subjects.js';
import { startMailer } from '../../actors/mailer/actor.js';
import { SEND_MAX_MS, type SendRecord } from '../../actors/mailer/handle.js';
import { testConfig, setConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { startSmtp } from '../helpers/smtp.js';

const PASSWORD = 'idem-Pw-5521-never-logged';
const nats = await startNats();
const smtp = await startSmtp({ tls: 'none', auth: { user: 'mailer', pass: PASSWORD } });
const quiet = createLogger({ svc: 'test', level: 'silent' });
const config = testConfig({
  natsUrl: nats.url,
  extra: {
    email: {
      enabled: true,
      smtp: { host: smtp.host, port: smtp.port, user: 'mailer', password: PASSWORD, from_email: 'reports@example.org', use_tls: false, use_ssl: false },
      max_recipients_per_email: 2,
      max_emails_per_day: 1000,
    },
  },
});
const smtp0 = structuredClone(config.email.smtp);

const actorBus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'mailer', log: quiet, strict: true });
const client = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'client', log: quiet, strict: true });
const mailer = await startMailer({ bus: actorBus, config, log: quiet });
const sentEvents: any[] = [];
const failedEvents: any[] = [];
const unlisten = [
  client.listen(MailSentEvt.subject, (d) => sentEvents.push(d)),
  client.listen(MailFailedEvt.subject, (d) => failedEvents.push(d)),
];
await client.flush();
const records = (await client.bucket<SendRecord>(Bucket.Mail));

t.teardown(async () => {
  for (const u of unlisten) u();
  await actorBus.stopServing(['mailer'], Date.now() + 2_000);
  await mailer.stop();
  await actorBus.close();
  await client.close();
  await smtp.close();
  await nats.stop();
});
t.beforeEach(() => {
  setConfig(config, 'email.enabled', true);
  setConfig(config, 'email.smtp', structuredClone(smtp0));
});

const ctx = (rid: string) => ({ requestId: rid });
let n = 0;
const newKey = () => `exec-${process.pid}-${++n}-${Math.random().toString(36).slice(2, 8)}`;
const mail = (key: string, extra: Record<string, unknown> = {}) => ({
  to: ['boss@example.org'], subject: `Report ${key}`, text: 'see attached', idempotency_key: key,
  attachments: [{ filename: 'r.csv', content_type: 'text/csv', content: Buffer.from('a\n1\n').toString('base64') }], ...extra,
});
const to = (key: string) => smtp.received.filter((m) => m.parsed.subject === `Report ${key}`);
const settle = () => new Promise((r) => setTimeout(r, 300));

async function refusal(p: Promise<unknown>): Promise<CortadoError> {
  try {
    await p;
  } catch (err) {
    return err as CortadoError;
  }
  throw new Error('expected a refusal');
}

t.test('the same mail.send twice: one message received, the same reply, one mail.sent', async (t) => {
  const key = newKey();
  const first = await client.request(MailSend, mail(key), ctx('idem-1a'));
  const second = await client.request(MailSend, mail(key), ctx('idem-1b'));
  t.equal(first.sent, true);
  t.same(second, first, 'the repeat gets the first reply');
  t.equal(first.message_id, `<cortado.${key}@example.org>`, 'the Message-ID comes from the key');
  await settle();
  t.equal(to(key).length, 1, 'one message reached the SMTP server');
  t.equal(to(key)[0]?.parsed.messageId, `<cortado.${key}@example.org>`, 'it carries that Message-ID');
  t.match(await records.get(`sent.${key}`), { state: 'sent', message_id: first.message_id });
  t.equal(sentEvents.filter((e) => e.idempotency_key === key).length, 1, 'one mail.sent (the repeat is the same e-mail)');
  t.match(sentEvents.find((e) => e.idempotency_key === key), { sent: true, message_id: first.message_id, request_id: 'idem-1a' });
  t.same(await client.request(MailOutcome, { idempotency_key: key }, ctx('idem-1c')), { state: 'sent', at: (await records.get(`sent.${key}`))!.at, message_id: first.message_id });
});

t.test('two at once with one key: one message, both get its reply', async (t) => {
  const key = newKey();
  const replies = await Promise.all([0, 1, 2].map((i) => client.request(MailSend, mail(key), ctx(`idem-2${i}`))));
  for (const r of replies) t.same(r, replies[0]);
  t.equal(replies[0]?.sent, true);
  await settle();
  t.equal(to(key).length, 1, 'one message');
});

t.test('a failure is recorded: the repeat gets the same error and does not try again', async (t) => {
  const key = newKey();
  setConfig(config, 'email.smtp', { ...smtp0, password: `${PASSWORD}-wrong` });
  const first = await refusal(client.request(MailSend, mail(key), ctx('idem-3a')));
  t.equal(first.code, 'INTERNAL');
  t.match(first.message, /refused the login/);
  const tries = smtp.authFailures;
  setConfig(config, 'email.smtp', structuredClone(smtp0)); // fixed: still the same key's outcome
  const again = await refusal(client.request(MailSend, mail(key), ctx('idem-3b')));
  t.equal(again.code, first.code);
  t.equal(again.message, first.message);
  t.same(again.details, first.details);
  t.equal(smtp.authFailures, tries, 'no second login');
  await settle();
  t.equal(to(key).length, 0);
  const failed = failedEvents.filter((e) => e.idempotency_key === key);
  t.equal(failed.length, 1, 'one mail.failed');
  t.match(failed[0], { reason: 'smtp_auth', code: 'INTERNAL', error: /refused the login/, request_id: 'idem-3a', to: ['boss@example.org'] });
  t.notOk(JSON.stringify(failedEvents).includes(PASSWORD), 'no password in an event');
  t.match(await client.request(MailOutcome, { idempotency_key: key }, ctx('idem-3c')), { state: 'failed', code: 'INTERNAL', error: /refused the login/ });
});

t.test('logged only (e-mail off) is an outcome too: turned on later, the key still sends nothing', async (t) => {
  const key = newKey();
  setConfig(config, 'email.enabled', false);
  t.same(await client.request(MailSend, mail(key), ctx('idem-4a')), { sent: false });
  setConfig(config, 'email.enabled', true);
  t.same(await client.request(MailSend, mail(key), ctx('idem-4b')), { sent: false });
  await settle();
  t.equal(to(key).length, 0);
  t.match(sentEvents.filter((e) => e.idempotency_key === key), [{ sent: false }], 'one mail.sent with sent: false (logged)');
});

t.test('a `sending` record left by a mailer that died mid-send: not sent again, delivery unknown', async (t) => {
  const key = newKey();
  const at = new Date(Date.now() - SEND_MAX_MS - 60_000).toISOString();
  await records.put(`sent.${key}`, { state: 'sending', at, request_id: 'dead-mailer' });
  const err = await refusal(client.request(MailSend, mail(key), ctx('idem-5a')));
  t.equal(err.code, 'CONFLICT');
  t.match(err.message, /^delivery unknown: a mailer began sending this e-mail at .* and stopped before it recorded the outcome; it is not sent again/);
  t.match(err.details, { delivery: 'unknown', idempotency_key: key });
  await settle();
  t.equal(to(key).length, 0, 'nothing sent');
  t.match(await records.get(`sent.${key}`), { state: 'sending', request_id: 'dead-mailer' }, 'the record is left as it was');
  t.match(failedEvents.find((e) => e.idempotency_key === key), { reason: 'delivery_unknown', code: 'CONFLICT', request_id: 'idem-5a' });
  t.match(await client.request(MailOutcome, { idempotency_key: key }, ctx('idem-5b')), { state: 'sending', at, code: 'CONFLICT', error: /delivery unknown/ });
});

t.test('a `sending` record of a send still under way: the repeat waits for its outcome', async (t) => {
  const key = newKey();
  await records.put(`sent.${key}`, { state: 'sending', at: new Date().toISOString(), request_id: 'busy-mailer' });
  setTimeout(() => { void records.put(`sent.${key}`, { state: 'sent', at: new Date().toISOString(), message_id: '<other@example.org>' }); }, 600);
  const started = Date.now();
  t.same(await client.request(MailSend, mail(key), ctx('idem-6a')), { sent: true, message_id: '<other@example.org>' });
  t.ok(Date.now() - started >= 500, 'it waited');
  await settle();
  t.equal(to(key).length, 0, 'and sent nothing itself');
});

t.test('a send still under way past the asker\'s time: TIMEOUT (ask again), never "unknown", nothing sent', async (t) => {
  const key = newKey();
  await records.put(`sent.${key}`, { state: 'sending', at: new Date().toISOString(), request_id: 'slow-mailer' });
  const err = await refusal(client.request(MailOutcome, { idempotency_key: key }, ctx('idem-6b')));
  t.equal(err.code, 'TIMEOUT');
  t.match(err.details, { delivery: 'in_progress', idempotency_key: key });
  const again = await refusal(client.request(MailSend, mail(key), { requestId: 'idem-6c', deadline: Date.now() + 1_500 }));
  t.equal(again.code, 'TIMEOUT', 'mail.send the same');
  t.match(again.message, /is sending this e-mail right now/);
  t.notOk(failedEvents.some((e) => e.idempotency_key === key), 'not an outcome: no mail.failed');
  await settle();
  t.equal(to(key).length, 0);
});

t.test('mail.outcome of a key nobody sent: none', async (t) => {
  t.same(await client.request(MailOutcome, { idempotency_key: newKey() }, ctx('idem-7')), { state: 'none' });
  await t.rejects(client.request(MailOutcome, { idempotency_key: 'not a key!' } as any, ctx('idem-7b')), { code: 'VALIDATION_FAILED' });
});

t.test('refusals are mail.failed events with their reason code; nothing recorded for the key', async (t) => {
  const cases: Array<[string, Record<string, unknown>, string, string]> = [
    ['recipients', { to: ['a@x.org', 'b@x.org', 'c@x.org'] }, 'max_recipients_per_email', 'LIMIT_EXCEEDED'],
    ['address', { to: ['not an address'] }, 'invalid', 'VALIDATION_FAILED'],
    ['missing', { attachments: [{ filename: 'gone.csv', content_type: 'text/csv', object: 'no-such-object' }] }, 'attachment_missing', 'NOT_FOUND'],
  ];
  for (const [name, extra, reason, code] of cases) {
    const key = newKey();
    const err = await refusal(client.request(MailSend, mail(key, extra), ctx(`idem-8-${name}`)));
    t.equal(err.code, code, name);
    const until = Date.now() + 3_000;
    while (!failedEvents.some((e) => e.request_id === `idem-8-${name}`) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    t.match(failedEvents.find((e) => e.request_id === `idem-8-${name}`), { reason, code, idempotency_key: key }, `${name}: mail.failed ${reason}`);
    t.equal(await records.get(`sent.${key}`), undefined, `${name}: a refused request records nothing for its key`);
  }
  // the daily cap
  const key = newKey();
  setConfig(config, 'email.max_emails_per_day', 0);
  t.teardown(() => { setConfig(config, 'email.max_emails_per_day', 1000); });
  t.equal((await refusal(client.request(MailSend, mail(key), ctx('idem-8-cap')))).code, 'LIMIT_EXCEEDED');
  await settle();
  t.match(failedEvents.find((e) => e.request_id === 'idem-8-cap'), { reason: 'max_emails_per_day', code: 'LIMIT_EXCEEDED', error: /max_emails_per_day is 0/ });
  t.match(await records.get(`sent.${key}`), { state: 'failed', reason: 'max_emails_per_day' }, 'the cap is an outcome of the claimed key');
});

t.test('the mailer bucket keeps the records a week', async (t) => {
  t.ok((await records.ttlMs()) >= 7 * 24 * 3_600_000);
});

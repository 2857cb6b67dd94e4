/**
 * `email.max_emails_per_day` is one allowance for every mailer: two real `cortado` processes
 * running only the mailer (`--role actors:mailer`) share one NATS (the mailer bucket's
 * compare-and-set counter) and take many e-mails at once between them (the mailer queue
 * group); the real SMTP server receives exactly the cap, never more, and each process sent or
 * refused some of them.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import YAML from 'yaml';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import { MailSend } from '../../protocol/subjects.js';
import { testConfigObject } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { cortado, until, type Proc } from '../helpers/processes.js';
import { startSmtp } from '../helpers/smtp.js';

const CAP = 7;
const ASKED = 30;
const nats = await startNats();
const smtp = await startSmtp({ tls: 'none' });
const dir = mkdtempSync(path.join(tmpdir(), 'cortado-mailcap-'));
const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'mail-cap-test', log: createLogger({ svc: 'test', level: 'silent' }) });
t.teardown(async () => {
  await bus.close();
  await smtp.close();
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
});

const file = path.join(dir, 'mailer.yaml');
writeFileSync(file, YAML.stringify(testConfigObject({
  natsUrl: nats.url,
  extra: {
    email: {
      enabled: true, max_emails_per_day: CAP,
      smtp: { host: smtp.host, port: smtp.port, from_email: 'reports@example.org', use_tls: false, use_ssl: false },
    },
  },
})));

const mailer = (): Proc => cortado(['--config', file, '--role', 'actors:mailer']);
const ready = (p: Proc) => /mailer ready/.test(p.output()) && /actors started/.test(p.output());

t.test('two mailer processes, one daily cap: the total sent never exceeds it', async (t) => {
  const a = mailer();
  const b = mailer();
  await until('both mailers', () => ready(a) && ready(b));

  const settled = await Promise.allSettled(Array.from({ length: ASKED }, (_, i) => bus.request(MailSend, {
    to: [`r${i}@example.org`], subject: `capped ${i}`, text: 'one of many',
  }, { requestId: `cap-${i}` })));
  const sent = settled.filter((r) => r.status === 'fulfilled' && r.value.sent === true).length;
  const refused = settled.filter((r) => r.status === 'rejected' && (r.reason as { code?: string }).code === 'LIMIT_EXCEEDED');
  t.equal(sent, CAP, `exactly the cap was sent (${CAP})`);
  t.equal(refused.length, ASKED - CAP, 'every other one was refused for the daily cap');
  t.match((refused[0] as PromiseRejectedResult | undefined)?.reason, { message: /max_emails_per_day = 7/ });
  await new Promise((r) => setTimeout(r, 1_000));
  t.equal(smtp.received.length, CAP, 'the SMTP server received exactly the cap');

  // both processes took part (the mailer queue group spreads the requests)
  for (const [name, p] of [['first', a], ['second', b]] as const) {
    const handled = (p.output().match(/"msg":"e-mail sent"|e-mail refused: daily cap reached/g) ?? []).length;
    t.ok(handled > 0, `the ${name} process handled some (${handled})`);
  }

  // a new request to either is refused too: the count is shared, not per process
  await t.rejects(bus.request(MailSend, { to: ['late@example.org'], subject: 'late', text: 't' }, { requestId: 'cap-late' }), { code: 'LIMIT_EXCEEDED' });
  a.child.kill('SIGTERM');
  b.child.kill('SIGTERM');
  t.equal(await a.exited, 0);
  t.equal(await b.exited, 0);
  t.equal(smtp.received.length, CAP, 'never more than the cap');
});

/**
 * The mailer actor: mail.send over the bus (handle.ts). Today's e-mail count lives in a
 * JetStream KV bucket shared by every mailer copy; without JetStream it is counted in this
 * process (warned).
 */
import type { ConnectionOptions } from 'node:tls';
import { Actor, Bucket, MailSend } from '../../protocol/subjects.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import { countMail } from '../../protocol/metrics.js';
import { EXPORT_TTL_MS } from '../lib/export/index.js';
import { KvCounter, MemoryCounter, send, Transports, type DailyCounter } from './handle.js';

export interface MailerOptions {
  /** extra TLS socket options for the SMTP connection (a CA to trust); operators use NODE_EXTRA_CA_CERTS */
  tls?: ConnectionOptions;
}

export async function startMailer(deps: ActorDeps, opts: MailerOptions = {}): Promise<RunningActor> {
  const { bus, config, log } = deps;
  let counter: DailyCounter;
  try {
    // two days: yesterday's count must not vanish at the stroke of midnight in another time zone's clock skew
    counter = new KvCounter(await bus.bucket<number>(Bucket.Mail, { ttlMs: 2 * 24 * 3_600_000 }));
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'no JetStream KV: max_emails_per_day is counted in this process only');
    counter = new MemoryCounter();
  }
  const transports = new Transports(opts.tls);
  // the exports bucket (attachments[].object, html_object), opened on first use
  let opening: ReturnType<typeof bus.objects> | undefined;
  const objects = (): ReturnType<typeof bus.objects> => {
    opening ??= bus.objects(Bucket.Exports, { ttlMs: EXPORT_TTL_MS }).catch((err: unknown) => {
      opening = undefined;
      throw err;
    });
    return opening;
  };
  bus.serve(MailSend, async (input, ctx) => {
    // /metrics: sent, logged (email.enabled is false) or failed (protocol/metrics.ts)
    try {
      const reply = await send(input, { bus, config, log, counter, transports, objects }, ctx);
      countMail(reply.sent ? 'sent' : 'logged');
      return reply;
    } catch (err) {
      countMail('failed');
      throw err;
    }
  });
  const smtp = config.email.smtp;
  log.info({ enabled: config.email.enabled, host: smtp.host, port: smtp.port, tls: smtp.use_ssl ? 'ssl' : smtp.use_tls ? 'starttls' : 'none' }, 'mailer ready');
  return {
    name: Actor.Mailer,
    async stop() {
      transports.close();
    },
  };
}

export function start(deps: ActorDeps): Promise<RunningActor> {
  return startMailer(deps);
}

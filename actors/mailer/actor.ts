/**
 * The mailer actor: mail.send and mail.outcome over the bus (handle.ts). Its KV bucket, shared
 * by every mailer copy, holds today's e-mail count and each idempotency key's e-mail; without
 * JetStream both are kept in this process (warned).
 */
import type { ConnectionOptions } from 'node:tls';
import { Actor, Bucket, MailOutcome, MailSend } from '../../protocol/subjects.js';
import { memoryKv, type Kv } from '../../runtime/kv.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import { EXPORT_TTL_MS } from '../lib/export/index.js';
import { KvCounter, MAIL_BUCKET_TTL_MS, outcome, send, SentLog, Transports } from './handle.js';

export interface MailerOptions {
  /** extra TLS socket options for the SMTP connection (a CA to trust); operators use NODE_EXTRA_CA_CERTS */
  tls?: ConnectionOptions;
}

export async function startMailer(deps: ActorDeps, opts: MailerOptions = {}): Promise<RunningActor> {
  const { bus, config, log } = deps;
  let kv: Kv<unknown>;
  try {
    // a day's count must outlive its day in every time zone; an idempotency record, any redelivery of its run
    kv = await bus.bucket<unknown>(Bucket.Mail, { ttlMs: MAIL_BUCKET_TTL_MS });
    const ttl = await kv.ttlMs().catch(() => MAIL_BUCKET_TTL_MS);
    if (ttl > 0 && ttl < MAIL_BUCKET_TTL_MS) {
      log.warn({ ttl_hours: Math.round(ttl / 3_600_000) }, 'the mailer bucket was made with a shorter TTL: an e-mail\'s idempotency key is remembered that long only');
    }
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'no JetStream KV: max_emails_per_day and the e-mails\' idempotency keys are kept in this process only');
    kv = memoryKv<unknown>({ ttlMs: MAIL_BUCKET_TTL_MS });
  }
  const counter = new KvCounter(kv.as<number>());
  const sent = new SentLog(kv.as());
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
  // /metrics (cortado_mail_total) is counted where the events are published (handle.ts)
  bus.serve(MailSend, (input, ctx) => send(input, { bus, config, log, counter, transports, objects, sent }, ctx));
  bus.serve(MailOutcome, (input, ctx) => outcome(input, { sent }, ctx));
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

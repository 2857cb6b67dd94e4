/**
 * One e-mail (mail.send), through nodemailer's SMTP transport built from the `email` section.
 *
 * - `max_recipients_per_email`: more distinct recipients → LIMIT_EXCEEDED, nothing sent (also
 *   when e-mail is off: a schedule that would break the cap should hear it before it is on).
 * - `max_emails_per_day`: counted per UTC day in JetStream KV, so every mailer copy in every
 *   process shares one allowance; one message is one e-mail whatever its recipients. The slot
 *   is taken before the send and given back when the send fails. 0 means no e-mail at all.
 * - `export.max_file_size_mb` bounds the attachments of one e-mail together. An attachment is
 *   given inline (base64 `content`) or, for a report too big for a NATS message, as `object`: a
 *   file in the exports Object Store bucket (sql.export wrote it), read from there; `html_object`
 *   embeds a stored HTML report in the HTML body (format html).
 * - `email.enabled: false`: the e-mail is logged (recipients, subject, attachment names and
 *   sizes) and not sent; the reply says `sent: false`.
 * - SMTP failures (login refused, connection refused, TLS, timeout, recipients refused) are
 *   INTERNAL errors whose message says which, with `details.smtp` naming the kind; the SMTP
 *   password never appears in a message, a log line or an event.
 * - Every outcome is a `mail.sent` event (sent or not, with the error).
 */
import { randomUUID } from 'node:crypto';
import type { ConnectionOptions } from 'node:tls';
import nodemailer, { type Transporter } from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';
import type { Bus, Ctx } from '../../protocol/bus.js';
import { KvContention, memoryKv, type Kv } from '../../protocol/kv.js';
import type { PayloadOf } from '../../protocol/define.js';
import { CortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../protocol/log.js';
import type { MailSendReply, MailSendRequest } from '../../protocol/schemas/policy.js';
import { MailSentEvt } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import type { ObjectBucket } from '../../protocol/bus-objects.js';
import { embedHtml } from '../lib/mail-template.js';

type MailSent = PayloadOf<typeof MailSentEvt>;
type Smtp = Config['email']['smtp'];

// ---- the daily allowance ------------------------------------------------------------------

export interface DailyCounter {
  /** take one e-mail of `day`'s allowance; false when `max` are already taken */
  reserve(day: string, max: number): Promise<boolean>;
  /** give one back (the send failed) */
  release(day: string): Promise<void>;
  used(day: string): Promise<number>;
}

/** `2026-11-01` for now, in UTC. */
export function utcDay(now: number = Date.now()): string {
  return new Date(now).toISOString().slice(0, 10);
}

/**
 * One counter per day in a shared bucket (protocol/kv.ts): `increment` with the cap is a
 * compare-and-set, so two mailers never both take the last slot.
 */
export class KvCounter implements DailyCounter {
  constructor(private readonly kv: Kv<number>) {}

  private key(day: string): string {
    return `day.${day}`;
  }

  async reserve(day: string, max: number): Promise<boolean> {
    try {
      return (await this.kv.increment(this.key(day), max)) !== undefined;
    } catch (err) {
      if (err instanceof KvContention) throw new CortadoError('INTERNAL', 'cannot count today\'s e-mails: the shared counter keeps changing');
      throw err;
    }
  }
  async release(day: string): Promise<void> {
    await this.kv.increment(this.key(day), Number.MAX_SAFE_INTEGER, -1);
  }
  async used(day: string): Promise<number> {
    return (await this.kv.get(this.key(day))) ?? 0;
  }
}

/** The count in this process only (no JetStream): the same counter over the memory twin. */
export class MemoryCounter extends KvCounter {
  constructor() {
    super(memoryKv<number>());
  }
}

// ---- the transport ------------------------------------------------------------------------

/** nodemailer options from `email.smtp`; `tls` adds socket options (a CA to trust, in tests). */
export function transportOptions(smtp: Smtp, tls?: ConnectionOptions): SMTPTransport.Options {
  const opts: SMTPTransport.Options = {
    host: smtp.host,
    port: smtp.port,
    // use_ssl: TLS from the first byte (port 465); it wins over use_tls, which means nothing then
    secure: smtp.use_ssl,
    // use_tls: STARTTLS is required (port 587); a server that does not offer it is refused
    requireTLS: !smtp.use_ssl && smtp.use_tls,
    // neither: plain SMTP, no STARTTLS attempted (a local relay on port 25)
    ignoreTLS: !smtp.use_ssl && !smtp.use_tls,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 30_000,
    dnsTimeout: 10_000,
    logger: false,
    debug: false,
  };
  if (smtp.user || smtp.password) opts.auth = { user: smtp.user, pass: smtp.password };
  if (tls) opts.tls = tls;
  return opts;
}

export type Sender = Pick<Transporter<SMTPTransport.SentMessageInfo>, 'sendMail' | 'close'>;

/** One transport per distinct `email.smtp` (rebuilt when an admin changes it at run time). */
export class Transports {
  private current: { key: string; transport: Sender } | undefined;
  constructor(private readonly tls?: ConnectionOptions) {}

  get(smtp: Smtp): Sender {
    const key = JSON.stringify(smtp);
    if (this.current?.key !== key) {
      this.current?.transport.close();
      this.current = { key, transport: nodemailer.createTransport(transportOptions(smtp, this.tls)) };
    }
    return this.current.transport;
  }

  close(): void {
    this.current?.transport.close();
    this.current = undefined;
  }
}

// ---- SMTP failures ------------------------------------------------------------------------

export type SmtpFailure = 'auth' | 'connection' | 'tls' | 'timeout' | 'recipients' | 'other';

/** A nodemailer error as a CortadoError people can act on; no secret in it. */
export function smtpError(err: unknown, smtp: Smtp): CortadoError {
  const e = (err ?? {}) as { code?: string; message?: string; responseCode?: number; response?: string; command?: string };
  const scrub = (s: string): string => {
    let out = s.replace(/\s+/g, ' ').trim();
    if (smtp.password) out = out.split(smtp.password).join('[redacted]');
    return out.slice(0, 300);
  };
  const server = `${smtp.host}:${smtp.port}`;
  const said = e.response ? scrub(e.response) : undefined;
  const message = scrub(String(e.message ?? err));
  let kind: SmtpFailure;
  let text: string;
  if (e.code === 'EAUTH' || e.responseCode === 535 || e.responseCode === 534) {
    kind = 'auth';
    text = `the SMTP server ${server} refused the login of "${smtp.user}"${said ? ` (${said})` : ''}`;
  } else if (/ECONNREFUSED/.test(message)) {
    kind = 'connection';
    text = `cannot connect to the SMTP server ${server}: connection refused`;
  } else if (e.code === 'ETIMEDOUT' || /timed? ?out/i.test(message)) {
    kind = 'timeout';
    text = `the SMTP server ${server} did not answer in time`;
  } else if (e.code === 'ETLS' || /certificate|\bssl\b|\btls\b|wrong version number|handshake/i.test(message)) {
    kind = 'tls';
    text = `TLS with the SMTP server ${server} failed: ${message}`;
  } else if (e.code === 'EENVELOPE') {
    kind = 'recipients';
    text = `the SMTP server ${server} refused the sender or the recipients${said ? ` (${said})` : `: ${message}`}`;
  } else if (e.code === 'ECONNECTION' || e.code === 'ESOCKET' || e.code === 'EDNS' || /ENOTFOUND|EHOSTUNREACH|ECONNRESET|EAI_AGAIN/.test(message)) {
    kind = 'connection';
    text = `cannot talk to the SMTP server ${server}: ${message}`;
  } else {
    kind = 'other';
    text = `sending through ${server} failed: ${said ?? message}`;
  }
  const details: Record<string, unknown> = { smtp: kind };
  if (e.responseCode !== undefined) details.response_code = e.responseCode;
  return new CortadoError('INTERNAL', text, details);
}

// ---- mail.send ----------------------------------------------------------------------------

export interface MailerDeps {
  bus: Bus;
  config: Config;
  log: Logger;
  counter: DailyCounter;
  transports: { get(smtp: Smtp): Sender };
  now?: () => number;
  /** the exports Object Store bucket (attachments[].object, html_object); absent: such a mail is refused */
  objects?: () => Promise<ObjectBucket>;
}

/** A stored export, read whole (bounded): the mailer attaches or embeds it. */
async function storedFile(name: string, deps: MailerDeps, maxBytes: number): Promise<Buffer> {
  if (!deps.objects) throw new CortadoError('INTERNAL', 'this mailer cannot read stored files (no JetStream object store)');
  let got: Awaited<ReturnType<ObjectBucket['getBytes']>>;
  try {
    got = await (await deps.objects()).getBytes(name, maxBytes);
  } catch (err) {
    if (err instanceof CortadoError && err.code === 'LIMIT_EXCEEDED') {
      throw new CortadoError('LIMIT_EXCEEDED', `the attachment is over export.max_file_size_mb (${deps.config.export.max_file_size_mb} MB)`, { limit: 'max_file_size_mb', max: deps.config.export.max_file_size_mb });
    }
    throw err;
  }
  if (!got) throw new CortadoError('NOT_FOUND', `the stored report "${name.slice(0, 80)}" is not there (expired, or never written)`);
  return got.data;
}

/** The attachments' bytes: given inline (base64) or stored (object); exactly one of the two each. */
async function attachmentsOf(input: MailSendRequest, deps: MailerDeps, maxBytes: number): Promise<Array<{ filename: string; content_type: string; data: Buffer }>> {
  const out: Array<{ filename: string; content_type: string; data: Buffer }> = [];
  for (const a of input.attachments ?? []) {
    if ((a.content === undefined) === (a.object === undefined)) {
      throw new CortadoError('VALIDATION_FAILED', `attachment "${a.filename.slice(0, 80)}": give either content (base64) or object (a stored file), not both or neither`);
    }
    const data = a.object !== undefined ? await storedFile(a.object, deps, maxBytes) : Buffer.from(a.content!, 'base64');
    out.push({ filename: a.filename.replace(/[\r\n"\\/]+/g, '_'), content_type: a.content_type, data });
  }
  return out;
}

/** The HTML body: `html`, with a stored HTML report embedded (html_object) after it. */
async function htmlOf(input: MailSendRequest, deps: MailerDeps): Promise<string | undefined> {
  if (input.html_object === undefined) return input.html;
  const report = (await storedFile(input.html_object, deps, deps.config.export.max_file_size_mb * 1024 * 1024)).toString('utf8');
  return embedHtml(report, input.html ?? '');
}

const ADDRESS = /^[^\s@<>()[\],;:"\\]+@[^\s@<>()[\],;:"\\]+$/;

/** Trimmed, lower-case-deduplicated, checked. */
export function recipients(to: readonly string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const raw of to) {
    const a = raw.trim();
    if (!ADDRESS.test(a)) throw new CortadoError('VALIDATION_FAILED', `"${a.slice(0, 80)}" is not an e-mail address`);
    if (seen.has(a.toLowerCase())) continue;
    seen.add(a.toLowerCase());
    out.push(a);
  }
  return out;
}

export async function send(input: MailSendRequest, deps: MailerDeps, ctx: Ctx): Promise<MailSendReply> {
  const { config, log, bus } = deps;
  const email = config.email;
  const to = recipients(input.to);
  if (to.length > email.max_recipients_per_email) {
    throw new CortadoError('LIMIT_EXCEEDED', `an e-mail may go to at most ${email.max_recipients_per_email} recipients (email.max_recipients_per_email); this one has ${to.length}`, {
      limit: 'max_recipients_per_email', max: email.max_recipients_per_email, recipients: to.length,
    });
  }
  const subject = input.subject.replace(/[\r\n]+/g, ' ');
  const maxBytes = config.export.max_file_size_mb * 1024 * 1024;
  const files = await attachmentsOf(input, deps, maxBytes);
  const attachments = files.map((f) => ({ filename: f.filename, bytes: f.data.length }));
  const total = attachments.reduce((s, a) => s + a.bytes, 0);
  const html = await htmlOf(input, deps);
  if (total > maxBytes) {
    throw new CortadoError('LIMIT_EXCEEDED', `the attachments (${(total / 1024 / 1024).toFixed(1)} MB) are over export.max_file_size_mb (${config.export.max_file_size_mb} MB)`, {
      limit: 'max_file_size_mb', max: config.export.max_file_size_mb, bytes: total,
    });
  }
  const event = (sent: boolean, error?: string): MailSent => ({
    id: randomUUID(), ts: new Date(deps.now?.() ?? Date.now()).toISOString(), request_id: ctx.requestId,
    to, subject, sent, attachments, ...(error !== undefined ? { error } : {}),
  });

  if (!email.enabled) {
    log.info({ rid: ctx.requestId, to, subject, attachments }, 'e-mail not sent (email.enabled is false): logged only');
    bus.publish(MailSentEvt, event(false), ctx);
    return { sent: false };
  }

  const smtp = email.smtp;
  const from = smtp.from_email || (smtp.user.includes('@') ? smtp.user : '');
  if (!smtp.host || !from) {
    const e = new CortadoError('INTERNAL', !smtp.host ? 'email.smtp.host is not set: no e-mail can be sent' : 'email.smtp.from_email is not set: no e-mail can be sent', { smtp: 'config' });
    bus.publish(MailSentEvt, event(false, e.message), ctx);
    throw e;
  }

  const day = utcDay(deps.now?.() ?? Date.now());
  if (!(await deps.counter.reserve(day, email.max_emails_per_day))) {
    const why = email.max_emails_per_day === 0
      ? 'email.max_emails_per_day is 0: no e-mail is sent'
      : `today's e-mail allowance is used up (email.max_emails_per_day = ${email.max_emails_per_day}); sending resumes after midnight UTC`;
    const e = new CortadoError('LIMIT_EXCEEDED', why, {
      limit: 'max_emails_per_day', max: email.max_emails_per_day,
    });
    log.warn({ rid: ctx.requestId, code: e.code, max: email.max_emails_per_day, recipients: to.length }, 'e-mail refused: daily cap reached');
    bus.publish(MailSentEvt, event(false, e.message), ctx);
    throw e;
  }

  let info: SMTPTransport.SentMessageInfo;
  try {
    info = await deps.transports.get(smtp).sendMail({
      from: { name: smtp.from_name, address: from },
      to,
      subject,
      text: input.text,
      ...(html !== undefined ? { html } : {}),
      ...(smtp.reply_to ? { replyTo: smtp.reply_to } : {}),
      ...(Object.keys(smtp.custom_headers).length ? { headers: smtp.custom_headers } : {}),
      attachments: files.map((f) => ({ filename: f.filename, content: f.data, contentType: f.content_type })),
    });
  } catch (err) {
    await deps.counter.release(day).catch(() => undefined);
    const e = smtpError(err, smtp);
    log.warn({ rid: ctx.requestId, smtp: e.details?.smtp, recipients: to.length, err: e.message }, 'e-mail not sent: SMTP failed');
    bus.publish(MailSentEvt, event(false, e.message), ctx);
    throw e;
  }
  log.info({ rid: ctx.requestId, to, subject, attachments, message_id: info.messageId }, 'e-mail sent');
  bus.publish(MailSentEvt, event(true), ctx);
  return { sent: true, message_id: info.messageId };
}

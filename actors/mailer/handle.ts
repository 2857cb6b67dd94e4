/**
 * One e-mail (mail.send), through nodemailer's SMTP transport built from the `email` section.
 *
 * - `idempotency_key` (a scheduled run's execution id): one e-mail per key, however often it is
 *   asked for. Before anything is sent the mailer claims `sent.<key>` in its KV bucket with a
 *   compare-and-set create (state `sending`), then records the outcome over it (sent with the
 *   Message-ID, logged, or the failure). A repeat of the key gets the recorded outcome (the same
 *   reply, or the same error) and sends nothing; one that finds `sending` waits while that send
 *   may still be under way (SEND_MAX_MS; past its own deadline: TIMEOUT, ask again) and then,
 *   the mailer having died mid-send, answers CONFLICT "delivery unknown" without sending again. The key is also the Message-ID
 *   (`<cortado.KEY@sender's domain>`), so a receiving server can drop a copy too. Records
 *   live as long as the bucket keeps a key (MAIL_BUCKET_TTL_MS). mail.outcome reads one.
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
 * - Events: `mail.sent` for an e-mail the SMTP server took (`sent: true`) or logged instead
 *   (`sent: false`, email.enabled off); `mail.failed` for every refusal and failure, with its
 *   reason code. A repeat of a recorded key publishes nothing (it is the same e-mail), except
 *   "delivery unknown", a new outcome. /metrics counts the same (cortado_mail_total).
 */
import { randomUUID } from 'node:crypto';
import type { ConnectionOptions } from 'node:tls';
import nodemailer, { type Transporter } from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import { KvContention, memoryKv, type Kv } from '../../runtime/kv.js';
import type { PayloadOf } from '../../protocol/define.js';
import { CortadoError, toCortadoError, type ErrorCode } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/log.js';
import { countMail } from '../../runtime/metrics.js';
import type { MailFailReason, MailOutcomeReply, MailOutcomeRequest, MailSendReply, MailSendRequest } from '../../protocol/schemas/policy.js';
import { MailFailedEvt, MailSentEvt } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import type { ObjectBucket } from '../../runtime/bus-objects.js';
import { embedHtml } from '../lib/mail/template.js';

type MailSent = PayloadOf<typeof MailSentEvt>;
type MailFailed = PayloadOf<typeof MailFailedEvt>;
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
 * One counter per day in a shared bucket (runtime/kv.ts): `increment` with the cap is a
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

// ---- one e-mail per idempotency key -------------------------------------------------------

/** What the mailer bucket keeps of one idempotency key, as `sent.<key>`. */
export type SendRecord =
  | { state: 'sending'; at: string; request_id: string }
  | { state: 'sent'; at: string; message_id: string }
  | { state: 'logged'; at: string }
  | { state: 'failed'; at: string; reason: MailFailReason; code: ErrorCode; error: string; details?: Record<string, unknown> };

/**
 * How long the mailer bucket keeps a key after its last write, as this version makes the
 * bucket: the idempotency records must outlive any redelivery of a scheduled run (the work
 * queue keeps a run at most 7 days). A bucket made earlier keeps the TTL it was made with.
 */
export const MAIL_BUCKET_TTL_MS = 7 * 24 * 3_600_000;

/**
 * How long one send may be under way: nodemailer's connection (10 s), greeting (10 s) and
 * socket (30 s of silence) timeouts, and room for a large attachment. A `sending` record older
 * than this belongs to a mailer that died mid-send.
 */
export const SEND_MAX_MS = 90_000;

/** how often a repeat looks again at a `sending` record that may still be under way */
const SENDING_POLL_MS = 200;

/** The idempotency records, in the mailer's bucket (or the memory twin): claim, settle, read. */
export class SentLog {
  constructor(private readonly kv: Kv<SendRecord>, private readonly now: () => number = Date.now) {}

  private key(k: string): string {
    return `sent.${k}`;
  }

  get(k: string): Promise<SendRecord | undefined> {
    return this.kv.get(this.key(k));
  }

  /** Take the key (compare-and-set create, state `sending`): false when somebody has it already. */
  claim(k: string, requestId: string): Promise<boolean> {
    return this.kv.create(this.key(k), { state: 'sending', at: new Date(this.now()).toISOString(), request_id: requestId });
  }

  /** The outcome over this request's claim (compare-and-set: never over another's record). */
  async settle(k: string, requestId: string, outcome: SendRecord): Promise<void> {
    await this.kv.update(this.key(k), (cur) => (cur === undefined || (cur.state === 'sending' && cur.request_id === requestId) ? outcome : undefined));
  }

  /**
   * The record, once it is no longer a `sending` that may still be under way (younger than
   * SEND_MAX_MS), or as it is at `deadline`.
   */
  async settled(k: string, deadline: number): Promise<SendRecord | undefined> {
    for (;;) {
      const rec = await this.get(k);
      if (rec?.state !== 'sending') return rec;
      const claimed = Date.parse(rec.at);
      const now = this.now();
      if (!(now - claimed < SEND_MAX_MS) || Date.now() + SENDING_POLL_MS >= deadline) return rec;
      await new Promise((r) => setTimeout(r, SENDING_POLL_MS));
    }
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
  /** the idempotency records; absent: `idempotency_key` only names the Message-ID */
  sent?: SentLog;
}

/** A stored export, read whole (bounded): the mailer attaches or embeds it. */
async function storedFile(name: string, deps: MailerDeps, maxBytes: number): Promise<Buffer> {
  if (!deps.objects) throw new CortadoError('INTERNAL', 'this mailer cannot read stored files (no JetStream object store)', { attachment: 'missing' });
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

/** The reason code of a refusal or failure (mail.failed). */
export function reasonOf(e: CortadoError): MailFailReason {
  const d = e.details ?? {};
  if (d.limit === 'max_recipients_per_email' || d.limit === 'max_file_size_mb' || d.limit === 'max_emails_per_day') return d.limit;
  if (d.delivery === 'unknown') return 'delivery_unknown';
  switch (d.smtp) {
    case 'config': return 'not_configured';
    case 'auth': return 'smtp_auth';
    case 'connection': return 'smtp_connection';
    case 'tls': return 'smtp_tls';
    case 'timeout': return 'smtp_timeout';
    case 'recipients': return 'smtp_recipients';
    case 'other': return 'smtp_other';
    default: break;
  }
  if (d.attachment === 'missing' || e.code === 'NOT_FOUND') return 'attachment_missing';
  if (e.code === 'VALIDATION_FAILED') return 'invalid';
  return 'internal';
}

/** The Message-ID of a keyed e-mail: the same for every attempt, so a receiving server can drop a copy. */
export function messageIdFor(key: string, from: string): string {
  const domain = from.slice(from.lastIndexOf('@') + 1).replace(/[^A-Za-z0-9.-]/g, '') || 'localhost';
  return `<cortado.${key}@${domain}>`;
}

/** A `sending` record whose send may still be under way (younger than SEND_MAX_MS). */
function underWay(rec: SendRecord, now: number): boolean {
  return rec.state === 'sending' && now - Date.parse(rec.at) < SEND_MAX_MS;
}

/** A repeat of a key whose e-mail another request is sending right now, past the repeat's deadline: ask again. */
function inProgress(key: string): CortadoError {
  return new CortadoError('TIMEOUT', 'another request is sending this e-mail right now and has not finished: it is not sent twice; ask again shortly for its outcome',
    { delivery: 'in_progress', idempotency_key: key });
}

/** The error a repeat of a key gets when a mailer began its e-mail and recorded no outcome. */
function deliveryUnknown(key: string, rec: Extract<SendRecord, { state: 'sending' }>): CortadoError {
  return new CortadoError('CONFLICT',
    `delivery unknown: a mailer began sending this e-mail at ${rec.at} and stopped before it recorded the outcome; it is not sent again (it arrived once or not at all)`,
    { delivery: 'unknown', idempotency_key: key });
}

export async function send(input: MailSendRequest, deps: MailerDeps, ctx: Ctx): Promise<MailSendReply> {
  const { config, log, bus } = deps;
  const email = config.email;
  const key = input.idempotency_key;
  const sentLog = key !== undefined ? deps.sent : undefined;
  const subject = input.subject.replace(/[\r\n]+/g, ' ');
  const at = (): string => new Date(deps.now?.() ?? Date.now()).toISOString();
  // what the events say of this e-mail, filled in as it is checked
  let to = input.to.map((a) => a.trim());
  let attachments: Array<{ filename: string; bytes: number }> = [];
  const about = () => ({
    id: randomUUID(), ts: at(), request_id: ctx.requestId, ...(ctx.user ? { user: ctx.user } : {}),
    to, subject, attachments, ...(key !== undefined ? { idempotency_key: key } : {}),
  });
  const sentEvent = (sent: boolean, messageId?: string): void => {
    const e: MailSent = { ...about(), sent, ...(messageId !== undefined ? { message_id: messageId } : {}) };
    bus.publish(MailSentEvt, e, ctx);
    countMail(sent ? 'sent' : 'logged');
  };
  /** a refusal or failure: the mail.failed event, counted; the error to throw */
  const failed = (err: unknown): CortadoError => {
    const e = toCortadoError(err);
    const reason = reasonOf(e);
    const evt: MailFailed = { ...about(), reason, code: e.code, error: e.message };
    bus.publish(MailFailedEvt, evt, ctx);
    countMail(reason === 'delivery_unknown' ? 'unknown' : 'failed');
    return e;
  };
  /** A key seen before: its recorded outcome; nothing is sent. */
  const replay = async (first: SendRecord): Promise<MailSendReply> => {
    // waiting within mail.send's own timeout (60 s), and the caller's deadline
    const until = Math.min(Date.now() + 45_000, (ctx.deadline ?? Infinity) - 1_000);
    const rec = first.state === 'sending' && sentLog ? ((await sentLog.settled(key as string, until)) ?? first) : first;
    log.info({ rid: ctx.requestId, idempotency_key: key, state: rec.state }, 'e-mail of this idempotency key handled before: its outcome, not sent again');
    switch (rec.state) {
      case 'sent': return { sent: true, message_id: rec.message_id };
      case 'logged': return { sent: false };
      case 'failed': throw new CortadoError(rec.code, rec.error, rec.details);
      case 'sending': {
        if (underWay(rec, deps.now?.() ?? Date.now())) throw inProgress(key as string);
        log.warn({ rid: ctx.requestId, idempotency_key: key, claimed_at: rec.at }, 'e-mail not sent again: a mailer began it and recorded no outcome (delivery unknown)');
        throw failed(deliveryUnknown(key as string, rec));
      }
    }
  };

  // 0. a key recorded already: its outcome
  if (sentLog) {
    const prior = await sentLog.get(key as string);
    if (prior) return replay(prior);
  }

  // 1. the checks: nothing is sent, nothing is recorded for the key (the same request fails the same way)
  let files: Array<{ filename: string; content_type: string; data: Buffer }>;
  let html: string | undefined;
  try {
    to = recipients(input.to);
    if (to.length > email.max_recipients_per_email) {
      throw new CortadoError('LIMIT_EXCEEDED', `an e-mail may go to at most ${email.max_recipients_per_email} recipients (email.max_recipients_per_email); this one has ${to.length}`, {
        limit: 'max_recipients_per_email', max: email.max_recipients_per_email, recipients: to.length,
      });
    }
    const maxBytes = config.export.max_file_size_mb * 1024 * 1024;
    files = await attachmentsOf(input, deps, maxBytes);
    attachments = files.map((f) => ({ filename: f.filename, bytes: f.data.length }));
    const total = attachments.reduce((sum, a) => sum + a.bytes, 0);
    html = await htmlOf(input, deps);
    if (total > maxBytes) {
      throw new CortadoError('LIMIT_EXCEEDED', `the attachments (${(total / 1024 / 1024).toFixed(1)} MB) are over export.max_file_size_mb (${config.export.max_file_size_mb} MB)`, {
        limit: 'max_file_size_mb', max: config.export.max_file_size_mb, bytes: total,
      });
    }
  } catch (err) {
    throw failed(err);
  }

  // 2. the key claimed (compare-and-set create): from here on one outcome is recorded for it
  if (sentLog) {
    let claimed: boolean;
    try {
      claimed = await sentLog.claim(key as string, ctx.requestId);
    } catch (err) {
      log.warn({ rid: ctx.requestId, err: (err as Error).message }, 'e-mail not sent: its idempotency key cannot be recorded');
      throw failed(new CortadoError('INTERNAL', 'cannot record this e-mail\'s idempotency key in the mailer\'s bucket (JetStream KV): not sent, so that it is never sent twice'));
    }
    if (!claimed) {
      // another request with this key got in first
      const other = await sentLog.get(key as string);
      return replay(other ?? { state: 'sending', at: at(), request_id: '' });
    }
  }
  const record = async (outcome: SendRecord): Promise<void> => {
    if (!sentLog) return;
    await sentLog.settle(key as string, ctx.requestId, outcome).catch((err: unknown) => {
      // the claim stays `sending`: a repeat answers "delivery unknown" and sends nothing
      log.warn({ rid: ctx.requestId, idempotency_key: key, state: outcome.state, err: (err as Error).message }, 'cannot record the outcome of an e-mail\'s idempotency key');
    });
  };
  const fail = async (err: unknown): Promise<CortadoError> => {
    const e = toCortadoError(err);
    await record({ state: 'failed', at: at(), reason: reasonOf(e), code: e.code, error: e.message, ...(e.details ? { details: e.details } : {}) });
    return failed(e);
  };

  if (!email.enabled) {
    log.info({ rid: ctx.requestId, to, subject, attachments }, 'e-mail not sent (email.enabled is false): logged only');
    await record({ state: 'logged', at: at() });
    sentEvent(false);
    return { sent: false };
  }

  const smtp = email.smtp;
  const from = smtp.from_email || (smtp.user.includes('@') ? smtp.user : '');
  if (!smtp.host || !from) {
    throw await fail(new CortadoError('INTERNAL', !smtp.host ? 'email.smtp.host is not set: no e-mail can be sent' : 'email.smtp.from_email is not set: no e-mail can be sent', { smtp: 'config' }));
  }

  const day = utcDay(deps.now?.() ?? Date.now());
  let reserved: boolean;
  try {
    reserved = await deps.counter.reserve(day, email.max_emails_per_day);
  } catch (err) {
    throw await fail(err);
  }
  if (!reserved) {
    const why = email.max_emails_per_day === 0
      ? 'email.max_emails_per_day is 0: no e-mail is sent'
      : `today's e-mail allowance is used up (email.max_emails_per_day = ${email.max_emails_per_day}); sending resumes after midnight UTC`;
    const e = new CortadoError('LIMIT_EXCEEDED', why, {
      limit: 'max_emails_per_day', max: email.max_emails_per_day,
    });
    log.warn({ rid: ctx.requestId, code: e.code, max: email.max_emails_per_day, recipients: to.length }, 'e-mail refused: daily cap reached');
    throw await fail(e);
  }

  let info: SMTPTransport.SentMessageInfo;
  try {
    info = await deps.transports.get(smtp).sendMail({
      from: { name: smtp.from_name, address: from },
      to,
      subject,
      text: input.text,
      ...(key !== undefined ? { messageId: messageIdFor(key, from) } : {}),
      ...(html !== undefined ? { html } : {}),
      ...(smtp.reply_to ? { replyTo: smtp.reply_to } : {}),
      ...(Object.keys(smtp.custom_headers).length ? { headers: smtp.custom_headers } : {}),
      attachments: files.map((f) => ({ filename: f.filename, content: f.data, contentType: f.content_type })),
    });
  } catch (err) {
    await deps.counter.release(day).catch(() => undefined);
    const e = smtpError(err, smtp);
    log.warn({ rid: ctx.requestId, smtp: e.details?.smtp, recipients: to.length, err: e.message }, 'e-mail not sent: SMTP failed');
    throw await fail(e);
  }
  const messageId = info.messageId;
  await record({ state: 'sent', at: at(), message_id: messageId });
  log.info({ rid: ctx.requestId, to, subject, attachments, message_id: messageId }, 'e-mail sent');
  sentEvent(true, messageId);
  return { sent: true, message_id: messageId };
}

/**
 * mail.outcome: what became of one key's e-mail, waiting while a send may still be under way
 * (TIMEOUT, retryable, when it still is at the deadline).
 */
export async function outcome(input: MailOutcomeRequest, deps: Pick<MailerDeps, 'sent' | 'now'>, ctx: Ctx): Promise<MailOutcomeReply> {
  if (!deps.sent) return { state: 'none' };
  // within mail.outcome's own timeout (10 s), and the caller's deadline
  const rec = await deps.sent.settled(input.idempotency_key, Math.min(Date.now() + 8_000, (ctx.deadline ?? Infinity) - 1_000));
  if (!rec) return { state: 'none' };
  if (underWay(rec, deps.now?.() ?? Date.now())) throw inProgress(input.idempotency_key);
  switch (rec.state) {
    case 'sent': return { state: 'sent', at: rec.at, message_id: rec.message_id };
    case 'logged': return { state: 'logged', at: rec.at };
    case 'failed': return { state: 'failed', at: rec.at, code: rec.code, error: rec.error };
    case 'sending': return { state: 'sending', at: rec.at, code: 'CONFLICT', error: deliveryUnknown(input.idempotency_key, rec).message };
  }
}

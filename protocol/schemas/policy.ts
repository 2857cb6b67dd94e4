/**
 * Masking, security alerts, mail and table discovery: the contracts of the actors that guard
 * what leaves Cortado.
 */
import Type, { type Static } from 'typebox';
import { Cell, Channel, Column, Dialect } from './common.js';

// ---- masking --------------------------------------------------------------------------

export const MaskStrategyName = Type.Enum(['hash', 'partial', 'redact']);

export const MaskRuleLite = Type.Object({
  field_pattern: Type.String(),
  strategy: MaskStrategyName,
});
export type MaskRuleLite = Static<typeof MaskRuleLite>;

export const ResultMaskRequest = Type.Object({
  /** the SQL that produced the rows: masking follows each output column back to its source columns */
  sql: Type.String(),
  dialect: Dialect,
  columns: Type.Array(Column),
  rows: Type.Array(Type.Array(Cell)),
  /** the rules to apply; absent: the active rules of the rule store */
  rules: Type.Optional(Type.Array(MaskRuleLite)),
});
export type ResultMaskRequest = Static<typeof ResultMaskRequest>;

export const MaskedColumn = Type.Object({
  /** index in columns */
  index: Type.Integer({ minimum: 0 }),
  column: Type.String(),
  strategy: MaskStrategyName,
  /** the rule's pattern; or `(lineage unknown)` when the source could not be traced and a rule might apply */
  rule: Type.String(),
  /** the source columns that matched (table.column when known) */
  sources: Type.Array(Type.String()),
});
export type MaskedColumn = Static<typeof MaskedColumn>;

export const ResultMaskReply = Type.Object({
  rows: Type.Array(Type.Array(Cell)),
  masked: Type.Array(MaskedColumn),
});
export type ResultMaskReply = Static<typeof ResultMaskReply>;

// ---- alerts ---------------------------------------------------------------------------

export const RiskFactor = Type.Object({
  name: Type.String(),
  points: Type.Integer(),
  detail: Type.Optional(Type.String()),
});
export type RiskFactor = Static<typeof RiskFactor>;

export const AlertRaised = Type.Object({
  id: Type.String(),
  ts: Type.String(),
  request_id: Type.String(),
  user: Type.Optional(Type.String()),
  channel: Type.Optional(Channel),
  /** the widget type the alert was judged for (apply_to) */
  widget_type: Type.String(),
  score: Type.Integer({ minimum: 0, maximum: 100 }),
  factors: Type.Array(RiskFactor),
  /** why it fired: score, masked_column, or both */
  reasons: Type.Array(Type.String()),
  sql: Type.Optional(Type.String()),
  /** e-mail addresses notified (empty when e-mail is off) */
  notified: Type.Array(Type.String()),
});
export type AlertRaised = Static<typeof AlertRaised>;

// ---- mail -----------------------------------------------------------------------------

/** A key a caller makes each e-mail unique by (a JetStream KV key token: letters, digits, `_`, `-`). */
export const IdempotencyKey = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_-]+$' });

export const MailSendRequest = Type.Object({
  to: Type.Array(Type.String({ minLength: 3, maxLength: 320 }), { minItems: 1 }),
  subject: Type.String({ maxLength: 998 }),
  text: Type.String(),
  html: Type.Optional(Type.String()),
  attachments: Type.Optional(Type.Array(Type.Object({
    filename: Type.String({ maxLength: 255 }),
    content_type: Type.String(),
    /** base64; or, for a file too big for a message, `object` */
    content: Type.Optional(Type.String()),
    /** a file in the exports Object Store bucket (Bucket.Exports; sql.export's `object`): the mailer reads it from there */
    object: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  }))),
  /** a stored HTML report (exports bucket) embedded in the HTML body, after `html` (format html) */
  html_object: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  /**
   * One e-mail per key, whoever asks how often (a scheduled run's execution id): the first
   * request sends, a repeat gets the first one's outcome and sends nothing. Also the e-mail's
   * Message-ID (`<cortado.KEY@the sender's domain>`). Kept for the mailer bucket's TTL.
   */
  idempotency_key: Type.Optional(IdempotencyKey),
});
export type MailSendRequest = Static<typeof MailSendRequest>;

export const MailSendReply = Type.Object({
  /** false when email.enabled is false: the mail was logged, not sent */
  sent: Type.Boolean(),
  message_id: Type.Optional(Type.String()),
});
export type MailSendReply = Static<typeof MailSendReply>;

/** What the mailer recorded of one idempotency key (mail.outcome). */
export const MailOutcomeRequest = Type.Object({
  idempotency_key: IdempotencyKey,
});
export type MailOutcomeRequest = Static<typeof MailOutcomeRequest>;

export const MailOutcomeReply = Type.Object({
  /**
   * none: no mail.send with this key got as far as sending (or its record expired);
   * sending: a mailer began and recorded no outcome (it died mid-send: delivery unknown);
   * sent; logged (email.enabled false); failed (`error`, `code`)
   */
  state: Type.Enum(['none', 'sending', 'sent', 'logged', 'failed']),
  /** when the state was recorded */
  at: Type.Optional(Type.String()),
  message_id: Type.Optional(Type.String()),
  code: Type.Optional(Type.String()),
  error: Type.Optional(Type.String()),
});
export type MailOutcomeReply = Static<typeof MailOutcomeReply>;

const MailAttachmentInfo = Type.Object({ filename: Type.String(), bytes: Type.Integer() });

/**
 * An e-mail that went to the SMTP server (`sent: true`), or was logged instead because
 * email.enabled is false (`sent: false`, log-only mode). Refusals and failures are `mail.failed`.
 */
export const MailSent = Type.Object({
  id: Type.String(),
  ts: Type.String(),
  request_id: Type.String(),
  user: Type.Optional(Type.String()),
  to: Type.Array(Type.String()),
  subject: Type.String(),
  sent: Type.Boolean(),
  attachments: Type.Array(MailAttachmentInfo),
  /** the SMTP server's Message-ID (sent) */
  message_id: Type.Optional(Type.String()),
  idempotency_key: Type.Optional(Type.String()),
  /** never set any more (a failure is `mail.failed`); kept so older readers still parse */
  error: Type.Optional(Type.String()),
});

/** Why an e-mail was not sent (mail.failed `reason`). */
export const MailFailReason = Type.Enum([
  /** an address or an attachment that is not well-formed */
  'invalid',
  /** more distinct recipients than email.max_recipients_per_email */
  'max_recipients_per_email',
  /** the attachments over export.max_file_size_mb */
  'max_file_size_mb',
  /** today's email.max_emails_per_day used up (or it is 0) */
  'max_emails_per_day',
  /** a stored report (attachment object, html_object) not there or not readable */
  'attachment_missing',
  /** email.smtp.host or from_email not set */
  'not_configured',
  /** the SMTP server refused the login */
  'smtp_auth',
  /** the SMTP server could not be reached (refused, reset, DNS) */
  'smtp_connection',
  /** TLS with the SMTP server failed (certificate, STARTTLS not offered) */
  'smtp_tls',
  /** the SMTP server did not answer in time */
  'smtp_timeout',
  /** the SMTP server refused the sender or the recipients */
  'smtp_recipients',
  /** any other SMTP failure */
  'smtp_other',
  /** a mailer began sending this key's e-mail and recorded no outcome (it died mid-send); not sent again */
  'delivery_unknown',
  /** anything else (the shared state could not be read or written, ...) */
  'internal',
]);
export type MailFailReason = Static<typeof MailFailReason>;

/** An e-mail refused or failed: what, why (reason, the error code and message); never a password. */
export const MailFailed = Type.Object({
  id: Type.String(),
  ts: Type.String(),
  request_id: Type.String(),
  user: Type.Optional(Type.String()),
  to: Type.Array(Type.String()),
  subject: Type.String(),
  attachments: Type.Array(MailAttachmentInfo),
  reason: MailFailReason,
  /** the error code the caller got (LIMIT_EXCEEDED, INTERNAL, ...) */
  code: Type.String(),
  error: Type.String(),
  idempotency_key: Type.Optional(Type.String()),
});

// ---- discovery ------------------------------------------------------------------------

export const SchemaDiscoverRequest = Type.Object({
  /** part of a table name, case-insensitive */
  query: Type.String({ minLength: 1, maxLength: 200 }),
  /** the catalogs to search (the token's allowed_catalogs); each with the schemas allowed, empty = all */
  catalogs: Type.Array(Type.Object({ name: Type.String(), allowed_schemas: Type.Array(Type.String()) })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
  /** the catalog the caller's scope is connected to (its tables are named in it); default: the server's */
  own_catalog: Type.Optional(Type.String({ maxLength: 200 })),
});
export type SchemaDiscoverRequest = Static<typeof SchemaDiscoverRequest>;

export const SchemaDiscoverReply = Type.Object({
  tables: Type.Array(Type.Object({ catalog: Type.String(), schema: Type.String(), name: Type.String(), kind: Type.Enum(['table', 'view']) })),
  truncated: Type.Boolean(),
});
export type SchemaDiscoverReply = Static<typeof SchemaDiscoverReply>;

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
});
export type MailSendRequest = Static<typeof MailSendRequest>;

export const MailSendReply = Type.Object({
  /** false when email.enabled is false: the mail was logged, not sent */
  sent: Type.Boolean(),
  message_id: Type.Optional(Type.String()),
});
export type MailSendReply = Static<typeof MailSendReply>;

export const MailSent = Type.Object({
  id: Type.String(),
  ts: Type.String(),
  request_id: Type.String(),
  to: Type.Array(Type.String()),
  subject: Type.String(),
  sent: Type.Boolean(),
  attachments: Type.Array(Type.Object({ filename: Type.String(), bytes: Type.Integer() })),
  error: Type.Optional(Type.String()),
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

/**
 * Exports (SPEC.md section export): one guarded, read-only query written to a file (csv, excel,
 * html) by the executor, page by page and masked page by page, and stored in the exports
 * Object Store bucket (Bucket.Exports, bus.objects) where the mailer and the edge read it.
 */
import Type, { type Static } from 'typebox';
import { Column } from './common.js';
import { MaskRuleLite } from './policy.js';
import { ExportFormat } from './schedules.js';

/**
 * How long a stored export is kept (the exports Object Store bucket's TTL; every process opens
 * the bucket with this one value): long enough for the e-mail to go out and a download to be
 * fetched.
 */
export const EXPORT_TTL_MS = 24 * 3_600_000;

export const SqlExportRequest = Type.Object({
  sql: Type.String({ minLength: 1, maxLength: 100_000 }),
  format: ExportFormat,
  /** the report's title (the schedule's name; the download's question): the html heading, the sheet, {{schedule_name}} */
  title: Type.String({ minLength: 1, maxLength: 200 }),
  /** the run's time, ISO (default: now): {{date}} and {{time}} of the file name */
  at: Type.Optional(Type.String({ maxLength: 40 })),
  /** the zone {{date}} and {{time}} are read in (default UTC) */
  timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  /** mask rules to apply besides the rule store's active ones (never instead: no request gets rows the store's rules do not mask) */
  rules: Type.Optional(Type.Array(MaskRuleLite)),
  /** fewer rows than export.max_rows (never more) */
  max_rows: Type.Optional(Type.Integer({ minimum: 1 })),
  timeout_ms: Type.Optional(Type.Integer({ minimum: 1 })),
});
export type SqlExportRequest = Static<typeof SqlExportRequest>;

export const SqlExportReply = Type.Object({
  /** the stored file's name in the exports bucket; absent when too_large (nothing stored) */
  object: Type.Optional(Type.String()),
  /** export.filename_template, made safe */
  filename: Type.String(),
  content_type: Type.String(),
  bytes: Type.Integer({ minimum: 0 }),
  rows: Type.Integer({ minimum: 0 }),
  /** rows past export.max_rows were not read */
  truncated: Type.Boolean(),
  /** the file is over export.max_file_size_mb: not stored, not to be sent */
  too_large: Type.Boolean(),
  columns: Type.Array(Column),
  /** the SQL that ran (the guard's) */
  sql: Type.String(),
  /** the columns masking changed */
  masked: Type.Array(Type.String()),
  duration_ms: Type.Number({ minimum: 0 }),
});
export type SqlExportReply = Static<typeof SqlExportReply>;

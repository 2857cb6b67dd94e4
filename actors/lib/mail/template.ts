/**
 * The e-mails of scheduled reports (SPEC.md section email): email.templates rendered with the
 * spec's variables, as plain functions (the scheduler calls them; nothing here sends).
 *
 * | variable            | value                                                        |
 * |---------------------|--------------------------------------------------------------|
 * | {{schedule_name}}   | the schedule's name                                          |
 * | {{date}}            | YYYY-MM-DD of the run, in the schedule's time zone           |
 * | {{time}}            | HH:MM:SS of the run, in the schedule's time zone             |
 * | {{format}}          | csv, excel or html                                           |
 * | {{error_message}}   | why the run failed (failure bodies; empty otherwise)          |
 *
 * `{{ name }}` with spaces is the same variable; an unknown name is left as written (a typo
 * shows in the e-mail instead of vanishing). Values are inserted as they are in subjects and
 * text bodies (a subject loses its line breaks: no header injection) and HTML-escaped in HTML.
 * A success e-mail of an html report carries the report in its HTML body; csv and excel reports
 * are attachments. An attachment over export.max_file_size_mb is not attached and the body
 * says why.
 */
import type { ExportFormat } from '../../../protocol/schemas/schedules.js';

export const TEMPLATE_VARIABLES = ['schedule_name', 'date', 'time', 'format', 'error_message'] as const;
export type TemplateVariable = (typeof TEMPLATE_VARIABLES)[number];
export type TemplateVars = Partial<Record<TemplateVariable, string>>;

const VARIABLE = /\{\{\s*([a-z_]+)\s*\}\}/g;

/** `{{name}}` replaced by vars[name] where given; anything else left as written. One pass: a value is never read as a template. */
export function renderTemplate(template: string, vars: TemplateVars, escape: (s: string) => string = (s) => s): string {
  return template.replace(VARIABLE, (whole, name: string) => {
    const v = (vars as Record<string, string | undefined>)[name];
    return v === undefined ? whole : escape(v);
  });
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** `{date: '2026-11-25', time: '07:30:00'}` of an instant in a time zone (24-hour clock). */
export function localParts(at: Date, timeZone = 'UTC'): { date: string; time: string } {
  const parts = new Intl.DateTimeFormat('en-CA', {
    timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23',
  }).formatToParts(at);
  const get = (t: string): string => parts.find((p) => p.type === t)?.value ?? '00';
  return { date: `${get('year')}-${get('month')}-${get('day')}`, time: `${get('hour')}:${get('minute')}:${get('second')}` };
}

export interface MailTemplates {
  success_subject: string;
  failure_subject: string;
  success_body: string;
  failure_body: string;
}

/** What a report run produced, as the e-mail needs it. */
export interface ReportFile {
  filename: string;
  content_type: string;
  bytes: number;
  /** where the file is (the exports object store): the mailer attaches it from there */
  object?: string;
  /** over export.max_file_size_mb: not attached (the body says why) */
  too_large?: boolean;
}

export interface ReportMailInput {
  templates: MailTemplates;
  schedule_name: string;
  /** the schedule's own subject (template variables allowed); empty: the template's */
  subject?: string;
  format: ExportFormat;
  /** the run's time */
  at: Date;
  timeZone: string;
  /** absent: success */
  error?: string;
  file?: ReportFile;
  rows?: number;
  /** export.max_file_size_mb, for the "too large" line */
  max_file_size_mb: number;
  /** rows were cut at export.max_rows */
  truncated_at?: number;
}

export interface ReportMail {
  subject: string;
  text: string;
  /** the HTML body (the text body as HTML); with html_object, the mailer embeds the report in it */
  html?: string;
  /** format html: the stored report the mailer embeds in the HTML body (embedHtml) */
  html_object?: string;
  /** the stored file to attach (csv, excel), when within the size cap */
  attachment?: { filename: string; content_type: string; object: string };
}

/** The success or failure e-mail of one run. */
export function reportMail(input: ReportMailInput): ReportMail {
  const { date, time } = localParts(input.at, input.timeZone);
  const failed = input.error !== undefined;
  const vars: TemplateVars = { schedule_name: input.schedule_name, date, time, format: input.format, error_message: input.error ?? '' };
  const subjectTemplate = !failed && input.subject ? input.subject : failed ? input.templates.failure_subject : input.templates.success_subject;
  const subject = renderTemplate(subjectTemplate, vars).replace(/[\r\n]+/g, ' ').trim().slice(0, 998);
  const bodyTemplate = failed ? input.templates.failure_body : input.templates.success_body;
  const notes: string[] = [];
  const file = input.file;
  if (!failed && file?.too_large) {
    notes.push(`The report (${file.filename}, ${(file.bytes / 1024 / 1024).toFixed(1)} MB) is larger than the attachment limit of ${input.max_file_size_mb} MB (export.max_file_size_mb) and is not attached.`);
  }
  if (!failed && input.truncated_at !== undefined) notes.push(`The report holds the first ${input.truncated_at} rows (export.max_rows).`);
  const text = [renderTemplate(bodyTemplate, vars), ...notes].join('\n\n');
  const mail: ReportMail = { subject, text };
  const htmlText = `<div style="white-space:pre-wrap">${renderTemplate(escapeHtml(bodyTemplate), vars, escapeHtml)}</div>${notes.map((n) => `<p>${escapeHtml(n)}</p>`).join('')}`;
  if (!failed && input.format === 'html' && file?.object && !file.too_large) {
    mail.html = htmlText;
    mail.html_object = file.object;
  } else if (!failed && input.format !== 'html' && file?.object && !file.too_large) {
    mail.attachment = { filename: file.filename, content_type: file.content_type, object: file.object };
  }
  return mail;
}

/** The report's HTML document with `intro` (the body text as HTML) at the start of its body. */
export function embedHtml(report: string, intro: string): string {
  const m = /<body[^>]*>/i.exec(report);
  if (!m) return `${intro}${report}`;
  const at = m.index + m[0].length;
  return `${report.slice(0, at)}${intro}${report.slice(at)}`;
}

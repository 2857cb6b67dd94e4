/**
 * The file name of an export: export.filename_template with {{schedule_name}}, {{date}}
 * (YYYY-MM-DD), {{time}} (HH-MM-SS: hyphens, as SPEC.md asks, since `:` is not allowed in file
 * names on every system) and {{format}}, then made safe for any file system and any mail
 * client: no path separators, no control or reserved characters, no leading dot, no reserved
 * Windows device name, at most 180 characters, and the format's extension.
 */
import type { ExportFormat } from '../../../protocol/schemas/schedules.js';
import { renderTemplate } from '../mail/template.js';

export const EXTENSION: Readonly<Record<ExportFormat, string>> = { csv: 'csv', excel: 'xlsx', html: 'html' };
export const CONTENT_TYPE: Readonly<Record<ExportFormat, string>> = {
  csv: 'text/csv; charset=utf-8',
  excel: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  html: 'text/html; charset=utf-8',
};

const MAX_STEM = 180;
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f<>:"/\\|?*\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]/g;
const WINDOWS_DEVICE = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?$/i;

/** A name safe for a file: unsafe characters become `_`, spaces `_`, no leading dots or dashes. */
export function safeFileStem(name: string): string {
  let s = name.normalize('NFC').replace(UNSAFE, '_').replace(/\s+/g, '_').replace(/_{2,}/g, '_');
  s = s.replace(/^[._-]+/, '').replace(/[._ ]+$/, '');
  if (s.length > MAX_STEM) s = s.slice(0, MAX_STEM).replace(/[._ ]+$/, '');
  if (WINDOWS_DEVICE.test(s)) s = `_${s}`;
  return s || 'export';
}

export interface FilenameVars {
  schedule_name: string;
  /** YYYY-MM-DD */
  date: string;
  /** HH:MM:SS or HH-MM-SS; written with hyphens */
  time: string;
  format: ExportFormat;
}

/** export.filename_template rendered and made safe, with the format's extension. */
export function exportFilename(template: string, vars: FilenameVars): string {
  const ext = EXTENSION[vars.format];
  let stem = renderTemplate(template || '{{schedule_name}}_{{date}}_{{time}}', {
    schedule_name: vars.schedule_name,
    date: vars.date,
    time: vars.time.replace(/:/g, '-'),
    format: vars.format,
  });
  // a template that already ends in the extension keeps one
  if (stem.toLowerCase().endsWith(`.${ext}`)) stem = stem.slice(0, -(ext.length + 1));
  return `${safeFileStem(stem)}.${ext}`;
}

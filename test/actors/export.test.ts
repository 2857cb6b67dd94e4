/**
 * The export writers (actors/lib/export) and the report e-mails (actors/lib/mail/template.ts):
 * each file parsed back by an independent reader equals the rows (csv with fast-csv, xlsx with
 * exceljs, html with htmlparser2); formula-safe cells; the row and size caps; file names.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseString } from '@fast-csv/parse';
import ExcelJS from 'exceljs';
import { parseDocument, DomUtils } from 'htmlparser2';
import t from 'tap';
import type { Cell, Column } from '../../protocol/schemas/common.js';
import { exportFilename, formulaSafe, safeFileStem, writeExport, type Page } from '../../actors/lib/export/index.js';
import { embedHtml, localParts, renderTemplate, reportMail } from '../../actors/lib/mail/template.js';

const dir = mkdtempSync(path.join(tmpdir(), 'cortado-export-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const file = (ext: string): string => path.join(dir, `f${++n}.${ext}`);

const columns: Column[] = [
  { name: 'id', type: 'integer' }, { name: 'name, "quoted"', type: 'text' }, { name: 'amount', type: 'numeric' },
  { name: 'active', type: 'boolean' }, { name: 'note', type: 'text' },
];
const tricky: Cell[][] = [
  [1, 'Ada', 12.5, true, null],
  [2, 'Zoë «Ünïcode» 東京', -3, false, 'line one\nline two'],
  [3, 'comma, and "quotes"', 0, null, 'cr\r\nlf'],
  [4, '=HYPERLINK("http://evil.example","click")', 1e6, true, '+1+2'],
  [5, '-2+3', 7, false, '@SUM(A1:A2)'],
  [6, '\tTabbed', 8, true, '\rCR first'],
  [7, '<script>alert(1)</script> & co', 9, false, "it's"],
];

async function* pagesOf(rows: Cell[][], size = 3, cols = columns): AsyncGenerator<Page> {
  for (let i = 0; i < rows.length || i === 0; i += size) yield { columns: cols, rows: rows.slice(i, i + size) };
}

function parseCsv(text: string): Promise<string[][]> {
  return new Promise((resolve, reject) => {
    const out: string[][] = [];
    parseString(text, { headers: false })
      .on('data', (r: string[]) => out.push(r))
      .on('error', reject)
      .on('end', () => resolve(out));
  });
}

/** What a spreadsheet-bound text cell must read as: the value, with an apostrophe if it could run. */
const expectText = (v: Cell): string => (v === null ? '' : typeof v === 'string' ? formulaSafe(v) : String(v));

const base = { title: 'Daily <sales>', when: 'Generated 2026-11-25 07:30:00 UTC', maxRows: 10_000, maxBytes: 25 * 1024 * 1024 };

t.test('csv: RFC 4180 with a BOM, parsed back equal to the rows; formula cells prefixed', async (t) => {
  const f = file('csv');
  const r = await writeExport(pagesOf(tricky), { ...base, format: 'csv', file: f });
  t.equal(r.rows, tricky.length);
  t.equal(r.truncated, false);
  t.equal(r.too_large, false);
  const raw = readFileSync(f);
  t.equal(r.bytes, raw.length, 'bytes counted are the file\'s');
  t.same([...raw.subarray(0, 3)], [0xef, 0xbb, 0xbf], 'UTF-8 byte-order mark');
  const text = raw.toString('utf8').slice(1);
  t.ok(text.endsWith('\r\n'), 'records end with CRLF');
  const parsed = await parseCsv(text);
  t.same(parsed[0], columns.map((c) => c.name));
  t.same(parsed.slice(1), tricky.map((row) => row.map(expectText)));
  t.equal(parsed[4]![1], '\'=HYPERLINK("http://evil.example","click")');
  t.equal(parsed[4]![4], "'+1+2");
  t.equal(parsed[5]![1], "'-2+3", 'text that starts with - is prefixed');
  t.equal(parsed[2]![2], '-3', 'a negative number stays a number');
  t.equal(parsed[5]![4], "'@SUM(A1:A2)");
  t.equal(parsed[6]![1], "'\tTabbed");
  t.equal(parsed[6]![4], "'\rCR first");
  parsed.slice(1).forEach((row, i) => row.forEach((cell, j) => {
    if (typeof tricky[i]![j] === 'string') t.notMatch(cell, /^[=+\-@\t\r]/, `text cell ${i}/${j} starts no formula`);
  }));
});

t.test('csv without the BOM, and with no rows: just the header', async (t) => {
  const f = file('csv');
  const r = await writeExport(pagesOf([]), { ...base, format: 'csv', file: f, bom: false });
  t.equal(r.rows, 0);
  const text = readFileSync(f, 'utf8');
  t.equal(text.charCodeAt(0), 'i'.charCodeAt(0));
  t.same(await parseCsv(text), [columns.map((c) => c.name)]);
});

t.test('xlsx: read back with exceljs equal to the rows; every text cell is a string, none a formula', async (t) => {
  const f = file('xlsx');
  const r = await writeExport(pagesOf(tricky), { ...base, format: 'excel', file: f });
  t.equal(r.rows, tricky.length);
  t.ok(r.bytes > 0);
  const wb = new ExcelJS.Workbook();
  await wb.xlsx.readFile(f);
  const ws = wb.worksheets[0]!;
  t.equal(ws.name, 'Daily _sales_'.replace(/_/g, '').length ? ws.name : '', 'a sheet');
  t.same((ws.getRow(1).values as unknown[]).slice(1), columns.map((c) => c.name));
  for (let i = 0; i < tricky.length; i++) {
    const row = ws.getRow(i + 2);
    for (let j = 0; j < columns.length; j++) {
      const cell = row.getCell(j + 1);
      const want = tricky[i]![j]!;
      if (want === null) {
        t.equal(cell.value, null, `row ${i} col ${j} empty`);
        continue;
      }
      // XML keeps no lone CR: a spreadsheet's line break is LF (as Excel writes it)
      t.same(cell.value, typeof want === 'string' ? want.replace(/\r\n?/g, '\n') : want, `row ${i} col ${j}`);
      if (typeof want === 'string') t.equal(cell.type, ExcelJS.ValueType.String, `row ${i} col ${j} is text, not a formula`);
      t.not(cell.type, ExcelJS.ValueType.Formula);
    }
  }
});

t.test('html: escaped, parsed back equal to the rows, with the title and time', async (t) => {
  const f = file('html');
  const r = await writeExport(pagesOf(tricky), { ...base, format: 'html', file: f });
  const html = readFileSync(f, 'utf8');
  t.equal(r.bytes, Buffer.byteLength(html));
  t.notMatch(html, /<script>/, 'no live script tag');
  const doc = parseDocument(html);
  t.equal(DomUtils.textContent(DomUtils.getElementsByTagName('h1', doc)[0]!), 'Daily <sales>');
  t.match(DomUtils.textContent(DomUtils.getElementsByTagName('p', doc)[0]!), /2026-11-25 07:30:00/);
  t.same(DomUtils.getElementsByTagName('th', doc).map((e) => DomUtils.textContent(e)), columns.map((c) => c.name));
  const trs = DomUtils.getElementsByTagName('tr', doc).slice(1);
  const back = trs.map((tr) => DomUtils.getElementsByTagName('td', tr).map((td) => DomUtils.textContent(td)));
  t.same(back, tricky.map((row) => row.map((v) => (v === null ? '' : String(v)))));
});

t.test('export.max_rows: rows past it are not read, and the source is closed', async (t) => {
  const rows: Cell[][] = Array.from({ length: 50 }, (_, i) => [i, `n${i}`, i / 2, i % 2 === 0, null]);
  let closed = false;
  let pagesRead = 0;
  async function* source(): AsyncGenerator<Page> {
    try {
      for (let i = 0; i < rows.length; i += 10) {
        pagesRead++;
        yield { columns, rows: rows.slice(i, i + 10) };
      }
    } finally {
      closed = true;
    }
  }
  for (const format of ['csv', 'excel', 'html'] as const) {
    closed = false;
    pagesRead = 0;
    const f = file(format);
    const r = await writeExport(source(), { ...base, format, file: f, maxRows: 25 });
    t.equal(r.rows, 25, `${format}: 25 rows`);
    t.equal(r.truncated, true);
    t.ok(closed, `${format}: the source was closed`);
    t.equal(pagesRead, 3, `${format}: no page read past the cap`);
  }
  const csv = await parseCsv(readFileSync(path.join(dir, `f${n - 2}.csv`), 'utf8').slice(1));
  t.equal(csv.length, 26, 'header + 25 rows in the csv');
  const exact = await writeExport(pagesOf(rows.slice(0, 20), 10), { ...base, format: 'csv', file: file('csv'), maxRows: 20 });
  t.equal(exact.truncated, false, 'exactly max_rows rows is not truncated');
});

t.test('export.max_file_size_mb: csv stops once over the size; xlsx is measured', async (t) => {
  const rows: Cell[][] = Array.from({ length: 2_000 }, (_, i) => [i, 'x'.repeat(500), i, true, 'y'.repeat(500)]);
  let pulled = 0;
  async function* source(): AsyncGenerator<Page> {
    for (let i = 0; i < rows.length; i += 100) {
      pulled++;
      yield { columns, rows: rows.slice(i, i + 100) };
    }
  }
  const r = await writeExport(source(), { ...base, format: 'csv', file: file('csv'), maxBytes: 200_000 });
  t.equal(r.too_large, true);
  t.ok(pulled < 20, 'stopped reading once over');
  const x = await writeExport(pagesOf(rows, 500), { ...base, format: 'excel', file: file('xlsx'), maxBytes: 10_000 });
  t.equal(x.too_large, true);
  const ok = await writeExport(pagesOf(rows.slice(0, 5)), { ...base, format: 'excel', file: file('xlsx') });
  t.equal(ok.too_large, false);
});

t.test('file names: template variables, hyphenated time, made safe, one extension', async (t) => {
  const vars = { schedule_name: 'Daily sales', date: '2026-11-25', time: '07:30:05', format: 'csv' as const };
  t.equal(exportFilename('{{schedule_name}}_{{date}}_{{time}}', vars), 'Daily_sales_2026-11-25_07-30-05.csv');
  t.equal(exportFilename('{{ schedule_name }}-{{format}}', { ...vars, format: 'excel' }), 'Daily_sales-excel.xlsx');
  t.equal(exportFilename('report.html', { ...vars, format: 'html' }), 'report.html', 'the extension is not doubled');
  t.equal(exportFilename('{{schedule_name}}', { ...vars, schedule_name: '../../etc/passwd' }), 'etc_passwd.csv', 'no path');
  t.equal(exportFilename('{{schedule_name}}', { ...vars, schedule_name: 'a:b*c?"d<e>f|g\\h\r\n' }), 'a_b_c_d_e_f_g_h.csv');
  t.equal(exportFilename('{{schedule_name}}', { ...vars, schedule_name: 'CON' }), '_CON.csv');
  t.equal(exportFilename('{{schedule_name}}', { ...vars, schedule_name: '...' }), 'export.csv');
  t.ok(exportFilename('{{schedule_name}}', { ...vars, schedule_name: 'z'.repeat(900) }).length <= 185);
  t.equal(exportFilename('', vars), 'Daily_sales_2026-11-25_07-30-05.csv', 'empty template: the default');
  t.equal(exportFilename('{{unknown}}', vars), '{{unknown}}.csv'.replace(/[{}]/g, (c) => c), 'an unknown variable stays');
  t.equal(safeFileStem('Zoë 東京'), 'Zoë_東京', 'letters of any script stay');
});

t.test('templates: variables, time zone, subject without line breaks', async (t) => {
  t.equal(renderTemplate('{{schedule_name}} {{ date }} {{nope}}', { schedule_name: 'S', date: 'D' }), 'S D {{nope}}');
  t.equal(renderTemplate('{{schedule_name}}', { schedule_name: '{{date}}', date: 'X' }), '{{date}}', 'a value is not read as a template');
  t.same(localParts(new Date('2026-03-29T00:30:00Z'), 'Europe/Paris'), { date: '2026-03-29', time: '01:30:00' });
  t.same(localParts(new Date('2026-03-29T01:30:00Z'), 'Europe/Paris'), { date: '2026-03-29', time: '03:30:00' }, 'after the DST change');
  t.same(localParts(new Date('2026-11-25T23:59:59Z'), 'UTC'), { date: '2026-11-25', time: '23:59:59' });
  const templates = {
    success_subject: 'Report: {{schedule_name}} ({{date}})', failure_subject: 'Failed: {{schedule_name}} at {{time}}',
    success_body: 'Ran {{schedule_name}} on {{date}} at {{time}} as {{format}}.', failure_body: 'Error: {{error_message}}',
  };
  const at = new Date('2026-11-25T06:30:00Z');
  const common = { templates, schedule_name: 'Sales\r\nBcc: x@evil', format: 'csv' as const, at, timeZone: 'Europe/Paris', max_file_size_mb: 25 };
  const ok = reportMail({ ...common, file: { filename: 'a.csv', content_type: 'text/csv', bytes: 10, object: 'obj-1' } });
  t.equal(ok.subject, 'Report: Sales Bcc: x@evil (2026-11-25)', 'no line break in a subject');
  t.match(ok.text, /on 2026-11-25 at 07:30:00 as csv/);
  t.same(ok.attachment, { filename: 'a.csv', content_type: 'text/csv', object: 'obj-1' });
  const own = reportMail({ ...common, subject: 'Custom {{format}} {{date}}' });
  t.equal(own.subject, 'Custom csv 2026-11-25', 'the schedule\'s own subject');
  const bad = reportMail({ ...common, error: 'relation "sales" does not exist' });
  t.equal(bad.subject, 'Failed: Sales Bcc: x@evil at 07:30:00');
  t.equal(bad.text, 'Error: relation "sales" does not exist');
  t.equal(bad.attachment, undefined);
  const big = reportMail({ ...common, file: { filename: 'a.csv', content_type: 'text/csv', bytes: 30 * 1024 * 1024, object: 'o', too_large: true } });
  t.equal(big.attachment, undefined, 'too large: not attached');
  t.match(big.text, /a\.csv, 30\.0 MB\) is larger than the attachment limit of 25 MB/);
  const html = reportMail({ ...common, schedule_name: '<b>x</b>', format: 'html', file: { filename: 'a.html', content_type: 'text/html', bytes: 10, object: 'o2' } });
  t.equal(html.attachment, undefined, 'html is embedded, not attached');
  t.equal(html.html_object, 'o2');
  t.match(html.html, /&lt;b&gt;x&lt;\/b&gt;/, 'variables escaped in html');
  t.equal(embedHtml('<html><body>\n<h1>T</h1></body></html>', '<p>intro</p>'), '<html><body><p>intro</p>\n<h1>T</h1></body></html>');
  t.equal(embedHtml('<table></table>', '<p>i</p>'), '<p>i</p><table></table>');
});

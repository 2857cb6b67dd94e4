// The xlsx writer's thread (xlsx.ts): exceljs's streaming WorkbookWriter, off the event loop
// of the process that asked. Plain JavaScript so the thread needs no TypeScript loader. One
// thread serves every export of its process, each a job with an id:
//   {type:'begin', id, file, sheet, columns}  → {type:'ack', id}
//   {type:'rows', id, rows}                   → {type:'ack', id}
//   {type:'end', id}                          → {type:'done', id}
//   {type:'abort', id}                        → (nothing; the job is dropped)
// A failure is {type:'error', id, message}.
import { parentPort } from 'node:worker_threads';
// only the streaming writer: exceljs's main module loads the whole library (the reader, the
// document model, every format), about twice the start-up time for nothing a report uses
import WorkbookWriter from 'exceljs/lib/stream/xlsx/workbook-writer.js';

const jobs = new Map();

function fail(id, err) {
  jobs.delete(id);
  parentPort.postMessage({ type: 'error', id, message: String(err && err.message ? err.message : err) });
}

parentPort.on('message', (msg) => {
  const { id } = msg;
  try {
    if (msg.type === 'begin') {
      // no styles (a plain header row): styles double the time of a large sheet; no shared
      // strings table, which would be held whole until the end
      const workbook = new WorkbookWriter({ filename: msg.file, useStyles: false, useSharedStrings: false });
      const sheet = workbook.addWorksheet(msg.sheet);
      sheet.columns = msg.columns.map((c) => ({ header: c.name, width: Math.min(60, Math.max(10, c.name.length + 2)) }));
      sheet.getRow(1).commit();
      jobs.set(id, { workbook, sheet });
      parentPort.postMessage({ type: 'ack', id });
    } else if (msg.type === 'rows') {
      const job = jobs.get(id);
      if (!job) return fail(id, new Error('unknown export'));
      // every value as it is: strings stay strings (exceljs writes a formula only for a
      // {formula} value), numbers numbers, booleans booleans, null an empty cell
      for (const row of msg.rows) job.sheet.addRow(row).commit();
      parentPort.postMessage({ type: 'ack', id });
    } else if (msg.type === 'end') {
      const job = jobs.get(id);
      if (!job) return fail(id, new Error('unknown export'));
      job.sheet.commit();
      job.workbook.commit().then(() => {
        jobs.delete(id);
        parentPort.postMessage({ type: 'done', id });
      }, (err) => fail(id, err));
    } else if (msg.type === 'abort') {
      jobs.delete(id);
    }
  } catch (err) {
    fail(id, err);
  }
});

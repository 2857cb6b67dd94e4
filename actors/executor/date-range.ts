/**
 * A dashboard's date filter (SqlExecuteRequest.date_range) as SQL: the statement wrapped as a
 * subquery, its rows kept when the named column falls within the days. Nothing a person typed is
 * spliced as written: the column is quoted for the dialect (profile-sql.ts) and each day must be
 * a real YYYY-MM-DD day, re-printed from the date it parses to. The result is guarded and masked
 * like any statement (handle.ts execute), so a wrap cannot reach what the SQL alone could not.
 */
import { CortadoError } from '../../protocol/errors.js';
import type { Dialect } from '../../protocol/schemas/common.js';
import type { DateRange } from '../../protocol/schemas/sql.js';
import { quoteIdent } from './profile-sql.js';

/** `2024-02-30` is no day: the day parsed and printed again must be the one given. */
function day(value: string, field: 'from' | 'to'): string {
  const m = /^([0-9]{4})-([0-9]{2})-([0-9]{2})$/.exec(value);
  const d = m ? new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))) : undefined;
  const back = d && !Number.isNaN(d.getTime()) ? d.toISOString().slice(0, 10) : '';
  if (!m || back !== value) {
    throw new CortadoError('VALIDATION_FAILED', `date_range.${field}: a day as YYYY-MM-DD`, { errors: [{ path: `/date_range/${field}`, message: 'a day as YYYY-MM-DD' }] });
  }
  return back;
}

/** The statement with only the rows within the range (both days included). */
export function withDateRange(sql: string, dialect: Dialect, range: DateRange): string {
  const from = range.from === undefined ? undefined : day(range.from, 'from');
  const to = range.to === undefined ? undefined : day(range.to, 'to');
  if (from && to && from > to) {
    throw new CortadoError('VALIDATION_FAILED', 'date_range: the first day is after the last', { errors: [{ path: '/date_range', message: 'from on or before to' }] });
  }
  // CAST … AS DATE: a timestamp compares with a DATE literal on every dialect this way (BigQuery
  // refuses TIMESTAMP >= DATE); the statement's own trailing semicolon would end the subquery
  const col = `CAST(cortado_filtered.${quoteIdent(dialect, range.column)} AS DATE)`;
  const where = [from ? `${col} >= DATE '${from}'` : '', to ? `${col} <= DATE '${to}'` : ''].filter(Boolean);
  const inner = sql.replace(/[\s;]+$/, '');
  // the line breaks end a trailing `--` comment of the statement before the closing parenthesis
  return `SELECT * FROM (\n${inner}\n) cortado_filtered${where.length ? ` WHERE ${where.join(' AND ')}` : ''}`;
}

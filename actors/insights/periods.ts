/**
 * Periods of a time series: which calendar unit a date column steps by (year, quarter, month,
 * week, day, hour), each date's period as an ordinal (consecutive periods are consecutive
 * integers), its bounds, its label, the same period a year earlier, and whether the last period
 * is only partly covered by the data.
 *
 * Dates are taken as written (a label `2025-09-01 00:00:00+02` is September in its own zone);
 * bounds are absolute instants, shifted by the label's own offset.
 */
import { dateGrain, formatDate, type ParsedDate } from './values.js';

export type PeriodUnit = 'year' | 'quarter' | 'month' | 'week' | 'day' | 'hour';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

export interface PeriodScale {
  unit: PeriodUnit;
  ordinal(d: ParsedDate): number;
  /** [start, end) of the period holding d, in ms since the epoch */
  bounds(d: ParsedDate): { start: number; end: number };
  label(d: ParsedDate): string;
  /** the ordinal of the same period one year before, when the unit has one */
  yearAgo(d: ParsedDate): number | null;
}

/** d's wall-clock time as if it were UTC, in ms */
function local(d: ParsedDate): number {
  return Date.UTC(d.year, d.month - 1, d.day, d.hour, d.minute, d.second);
}

/** how far d's zone is ahead of UTC, in ms (whole minutes) */
function offset(d: ParsedDate): number {
  return Math.round((local(d) - d.epoch) / 60_000) * 60_000;
}

const mod = (a: number, n: number): number => ((a % n) + n) % n;

/**
 * The unit a series of dates steps by, or null when the dates are irregular timestamps.
 * A daily-looking series whose dates all fall on one weekday (three or more) is weekly, one of
 * month ends (two or more) monthly; a monthly one whose months are all January, April, July or
 * October (three or more) quarterly.
 */
export function periodScale(dates: readonly ParsedDate[]): PeriodScale | null {
  if (dates.length === 0) return null;
  const grain = dateGrain(dates);
  const distinct = new Set(dates.map((d) => local(d))).size;
  let unit: PeriodUnit;
  if (grain === 'year') unit = 'year';
  else if (grain === 'month') unit = distinct >= 3 && dates.every((d) => (d.month - 1) % 3 === 0) ? 'quarter' : 'month';
  else if (grain === 'day') {
    const weekday = mod(Math.floor(local(dates[0]!) / DAY_MS), 7);
    const monthEnd = (d: ParsedDate): boolean => new Date(Date.UTC(d.year, d.month - 1, d.day + 1)).getUTCDate() === 1;
    if (distinct >= 2 && dates.every(monthEnd)) unit = 'month';
    else unit = distinct >= 3 && dates.every((d) => mod(Math.floor(local(d) / DAY_MS), 7) === weekday) ? 'week' : 'day';
  } else if (dates.every((d) => d.minute === 0 && d.second === 0)) unit = 'hour';
  else return null;
  // weeks start on the series' own weekday
  const weekAnchor = mod(Math.floor(local(dates[0]!) / DAY_MS), 7);
  return scaleOf(unit, weekAnchor);
}

function scaleOf(unit: PeriodUnit, weekAnchor: number): PeriodScale {
  const ordinal = (d: ParsedDate): number => {
    switch (unit) {
      case 'year':
        return d.year;
      case 'quarter':
        return d.year * 4 + Math.floor((d.month - 1) / 3);
      case 'month':
        return d.year * 12 + d.month - 1;
      case 'week':
        return Math.floor((Math.floor(local(d) / DAY_MS) - weekAnchor) / 7);
      case 'day':
        return Math.floor(local(d) / DAY_MS);
      case 'hour':
        return Math.floor(local(d) / HOUR_MS);
    }
  };
  /** the wall-clock start of period `o` (as if UTC) */
  const startOf = (o: number): number => {
    switch (unit) {
      case 'year':
        return Date.UTC(o, 0, 1);
      case 'quarter':
        return Date.UTC(Math.floor(o / 4), mod(o, 4) * 3, 1);
      case 'month':
        return Date.UTC(Math.floor(o / 12), mod(o, 12), 1);
      case 'week':
        return (o * 7 + weekAnchor) * DAY_MS;
      case 'day':
        return o * DAY_MS;
      case 'hour':
        return o * HOUR_MS;
    }
  };
  return {
    unit,
    ordinal,
    bounds(d) {
      const o = ordinal(d);
      const shift = offset(d);
      return { start: startOf(o) - shift, end: startOf(o + 1) - shift };
    },
    label(d) {
      if (unit === 'quarter') return `${d.year} Q${Math.floor((d.month - 1) / 3) + 1}`;
      if (unit === 'hour') return `${formatDate(d, 'day')} ${String(d.hour).padStart(2, '0')}:00`;
      return formatDate(d, unit === 'year' ? 'year' : unit === 'month' ? 'month' : 'day');
    },
    yearAgo(d) {
      const o = ordinal(d);
      if (unit === 'month') return o - 12;
      if (unit === 'quarter') return o - 4;
      if (unit === 'week') return o - 52;
      if (unit === 'day') {
        if (d.month === 2 && d.day === 29) return null;
        return Math.floor(Date.UTC(d.year - 1, d.month - 1, d.day) / DAY_MS);
      }
      return null;
    },
  };
}

/** "a month", "months" … for messages */
export function unitWords(unit: PeriodUnit | null): { one: string; many: string } {
  if (!unit) return { one: 'a day', many: 'points' };
  return { one: unit === 'hour' ? 'an hour' : `a ${unit}`, many: `${unit}s` };
}

export interface PartialPeriod {
  /** the period's label, e.g. 2025-09 */
  label: string;
  /** `running`: the period holds `now`; `data_ends`: the data's last timestamp is before its end */
  reason: 'running' | 'data_ends';
  /** today (running) or the data's last date (data_ends), as written for people */
  until: string;
}

/**
 * Whether the period holding `last` (the series' last date) is only partly covered:
 * - it holds `now` (the period is still running), or
 * - `dataEnd`, the latest value of a finer date column of the same rows, ends before the period
 *   does. A date covers its whole day; an hourly series is covered up to the last timestamp's
 *   minute. So a day is partial only while it is running.
 */
export function partialPeriod(scale: PeriodScale, last: ParsedDate, dataEnd: ParsedDate | null, now: number | undefined): PartialPeriod | null {
  const { start, end } = scale.bounds(last);
  const label = scale.label(last);
  if (now !== undefined && Number.isFinite(now) && start <= now && now < end) {
    const today = new Date(now).toISOString();
    return { label, reason: 'running', until: scale.unit === 'hour' ? `${today.slice(0, 10)} ${today.slice(11, 16)}` : today.slice(0, 10) };
  }
  if (dataEnd && dataEnd.epoch >= start) {
    const covered = scale.unit === 'hour' ? dataEnd.epoch + 60_000 : (Math.floor(local(dataEnd) / DAY_MS) + 1) * DAY_MS - offset(dataEnd);
    const hasTime = dataEnd.hour !== 0 || dataEnd.minute !== 0 || dataEnd.second !== 0;
    if (covered < end) return { label, reason: 'data_ends', until: formatDate(dataEnd, scale.unit === 'hour' && hasTime ? 'minute' : 'day') };
  }
  return null;
}

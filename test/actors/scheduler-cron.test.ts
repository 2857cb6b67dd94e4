/**
 * Five-field cron (actors/lib/jobs/cron.ts): ranges, steps, lists, names, 0 and 7 both Sunday,
 * day-of-month OR day-of-week; every kind of bad input refused with a message naming the field;
 * IANA zones checked; and daylight-saving transitions: a time in the spring-forward gap runs
 * once at the first valid time after it, a time in the repeated fall-back hour runs once (its
 * first occurrence). Times are compared as instants (UTC) and as the zone shows them.
 */
import t from 'tap';
import { CortadoError } from '../../protocol/errors.js';
import { describeCron, isoInZone, nextRuns, parseCron, runsBetween, validZone } from '../../actors/lib/jobs/cron.js';

const utc = (cron: string, from: string, n = 5): string[] => nextRuns(parseCron(cron, 'UTC'), new Date(from), n).map((d) => d.toISOString());
const local = (cron: string, zone: string, from: string, n = 5): string[] => nextRuns(parseCron(cron, zone), new Date(from), n).map((d) => isoInZone(d, zone));

type T = Pick<typeof t, 'ok' | 'equal' | 'match'>;

function refused(t: T, cron: string, message: RegExp, zone = 'UTC'): void {
  let err: unknown;
  try {
    parseCron(cron, zone);
  } catch (e) {
    err = e;
  }
  t.ok(err instanceof CortadoError, `${JSON.stringify(cron)} is refused`);
  t.equal((err as CortadoError).code, 'VALIDATION_FAILED');
  t.match((err as CortadoError).message, message, `${JSON.stringify(cron)}: ${(err as Error).message}`);
}

t.test('ranges, steps, lists and names', async (t) => {
  t.same(utc('*/15 * * * *', '2026-01-05T10:07:00Z', 4), ['2026-01-05T10:15:00.000Z', '2026-01-05T10:30:00.000Z', '2026-01-05T10:45:00.000Z', '2026-01-05T11:00:00.000Z'], 'every 15 minutes');
  t.same(utc('0 9 * * 1-5', '2026-01-09T10:00:00Z', 3), ['2026-01-12T09:00:00.000Z', '2026-01-13T09:00:00.000Z', '2026-01-14T09:00:00.000Z'], 'weekdays at 9 (Friday 10:00 → Monday)');
  t.same(utc('0 9 * * mon-fri', '2026-01-09T10:00:00Z', 3), utc('0 9 * * 1-5', '2026-01-09T10:00:00Z', 3), 'weekday names');
  t.same(utc('5,35 1-2 * * *', '2026-01-01T00:00:00Z', 5), ['2026-01-01T01:05:00.000Z', '2026-01-01T01:35:00.000Z', '2026-01-01T02:05:00.000Z', '2026-01-01T02:35:00.000Z', '2026-01-02T01:05:00.000Z'], 'a list over a range');
  t.same(utc('10-30/10 0 * * *', '2026-01-01T00:00:00Z', 4), ['2026-01-01T00:10:00.000Z', '2026-01-01T00:20:00.000Z', '2026-01-01T00:30:00.000Z', '2026-01-02T00:10:00.000Z'], 'a stepped range');
  t.same(utc('0 0 1 jan,jul *', '2026-02-01T00:00:00Z', 2), ['2026-07-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z'], 'month names');
  t.same(utc('0 0 * * 0', '2026-11-02T00:00:00Z', 2), utc('0 0 * * 7', '2026-11-02T00:00:00Z', 2), '0 and 7 are both Sunday');
  t.same(utc('0 0 * * 7', '2026-11-02T00:00:00Z', 1), ['2026-11-08T00:00:00.000Z'], '2026-11-08 is a Sunday');
  t.same(utc('0 0 13 * 5', '2026-02-01T00:00:00Z', 3), ['2026-02-06T00:00:00.000Z', '2026-02-13T00:00:00.000Z', '2026-02-20T00:00:00.000Z'], 'day of month OR day of week (13th, and Fridays)');
  t.same(utc('0 0 29 2 *', '2026-01-01T00:00:00Z', 1), ['2028-02-29T00:00:00.000Z'], '29 February: the next leap year');
  t.same(utc('* * * * *', '2026-01-01T00:00:30Z', 2), ['2026-01-01T00:01:00.000Z', '2026-01-01T00:02:00.000Z'], 'strictly after the start, on whole minutes');
  t.equal(nextRuns(parseCron('* * * * *', 'UTC'), new Date(), 500).length, 100, 'at most 100 at once');
});

t.test('bad input is refused, naming the field', async (t) => {
  refused(t, '* * * *', /five fields .*this has 4/);
  refused(t, '0 * * * * *', /this has 6 \(a seconds field is not supported\)/);
  refused(t, '', /empty/);
  refused(t, '@daily', /"@daily" is not supported/);
  refused(t, '60 * * * *', /^cron: minute: 60 is out of range \(0-59\)/);
  refused(t, '0 24 * * *', /^cron: hour: 24 is out of range \(0-23\)/);
  refused(t, '0 0 0 * *', /^cron: day of month: 0 is out of range \(1-31\)/);
  refused(t, '0 0 * 13 *', /^cron: month: 13 is out of range \(1-12\)/);
  refused(t, '0 0 * * 8', /^cron: day of week: 8 is out of range \(0-7\)/);
  refused(t, '0 0 * * funday', /^cron: day of week: "funday"/);
  refused(t, '0 0 * foo *', /^cron: month: "foo" is no month/);
  refused(t, 'x * * * *', /^cron: minute: "x" is not a number/);
  refused(t, '5-1 * * * *', /^cron: minute: the range 5-1 runs backwards/);
  refused(t, '*/0 * * * *', /^cron: minute: the step .* at least 1/);
  refused(t, '*/61 * * * *', /^cron: minute: the step 61 .* larger than the field's range/);
  refused(t, '1,,2 * * * *', /^cron: minute: an empty item/);
  refused(t, '0 0 L * *', /^cron: day of month: "L" is not supported/);
  refused(t, '0 9 * * MON#2', /^cron: day of week: "#" is not supported/);
  refused(t, '0 0 ? * *', /^cron: day of month: "\?" is not supported/);
  refused(t, '0 0 31 2 *', /^cron: day of month: 31 never occurs in February/);
  refused(t, '0 0 * * *', /^timezone: "Mars\/Olympus" is not an IANA time zone/, 'Mars/Olympus');
  t.ok(validZone('Europe/Berlin') && validZone('UTC') && validZone('America/Argentina/Buenos_Aires'), 'real zones');
  t.notOk(validZone('../../etc/passwd') || validZone('Nowhere/City') || validZone(''), 'not zones');
});

t.test('read in a zone', async (t) => {
  t.same(local('0 9 * * *', 'America/New_York', '2026-01-05T00:00:00Z', 2), ['2026-01-05T09:00:00-05:00', '2026-01-06T09:00:00-05:00'], '09:00 New York time');
  t.same(utc('0 9 * * *', '2026-01-05T00:00:00Z', 1), ['2026-01-05T09:00:00.000Z'], 'the same cron in UTC');
  t.same(local('30 5 * * *', 'Asia/Kolkata', '2026-01-04T20:00:00Z', 1), ['2026-01-05T05:30:00+05:30'], 'half-hour offsets');
  t.equal(describeCron(parseCron('0 9 * * 1-5', 'Europe/Berlin')), 'at 09:00 on Monday to Friday (Europe/Berlin)');
  t.equal(describeCron(parseCron('*/15 * * * *', 'UTC')), 'every 15 minutes (UTC)');
});

t.test('spring forward: a time in the gap runs once, at the first valid time after it', async (t) => {
  // Europe/Berlin, 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00 UTC)
  t.same(local('30 2 * * *', 'Europe/Berlin', '2026-03-27T12:00:00Z', 4), [
    '2026-03-28T02:30:00+01:00', '2026-03-29T03:00:00+02:00', '2026-03-30T02:30:00+02:00', '2026-03-31T02:30:00+02:00',
  ], '02:30 does not exist on the 29th: it runs at 03:00, once');
  t.same(local('0,15,30,45 2 * * *', 'Europe/Berlin', '2026-03-28T12:00:00Z', 2), ['2026-03-29T03:00:00+02:00', '2026-03-30T02:00:00+02:00'],
    'four times in the gap are one run');
  t.same(local('*/30 * * * *', 'Europe/Berlin', '2026-03-29T00:00:00Z', 4), [
    '2026-03-29T01:30:00+01:00', '2026-03-29T03:00:00+02:00', '2026-03-29T03:30:00+02:00', '2026-03-29T04:00:00+02:00',
  ], 'every half hour: the gap is skipped, nothing runs twice');
  // America/New_York, 2026-03-08: 02:00 EST becomes 03:00 EDT
  t.same(local('0 2 * * *', 'America/New_York', '2026-03-07T12:00:00Z', 2), ['2026-03-08T03:00:00-04:00', '2026-03-09T02:00:00-04:00'], 'New York too');
  const ticks = runsBetween(parseCron('30 2 * * *', 'Europe/Berlin'), new Date('2026-03-28T12:00:00Z'), new Date('2026-03-30T12:00:00Z'));
  t.same(ticks.map((d) => d.toISOString()), ['2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z'], 'what a leader fires over the change: one run a day');
});

t.test('fall back: a time in the repeated hour runs once', async (t) => {
  // Europe/Berlin, 2026-10-25: 03:00 CEST becomes 02:00 CET (01:00 UTC); 02:00–02:59 happens twice
  t.same(local('30 2 * * *', 'Europe/Berlin', '2026-10-23T12:00:00Z', 3), ['2026-10-24T02:30:00+02:00', '2026-10-25T02:30:00+02:00', '2026-10-26T02:30:00+01:00'],
    '02:30 runs at its first occurrence only');
  t.same(local('*/30 * * * *', 'Europe/Berlin', '2026-10-24T23:30:00Z', 5), [
    '2026-10-25T02:00:00+02:00', '2026-10-25T02:30:00+02:00', '2026-10-25T03:00:00+01:00', '2026-10-25T03:30:00+01:00', '2026-10-25T04:00:00+01:00',
  ], 'every half hour: the repeated 02:00 and 02:30 do not run again');
  t.same(local('0 1 * * *', 'America/New_York', '2026-10-31T12:00:00Z', 2), ['2026-11-01T01:00:00-04:00', '2026-11-02T01:00:00-05:00'], 'New York: 01:00 once');
  const ticks = runsBetween(parseCron('0 * * * *', 'Europe/Berlin'), new Date('2026-10-24T23:30:00Z'), new Date('2026-10-25T03:30:00Z'));
  t.same(ticks.map((d) => isoInZone(d, 'Europe/Berlin')), ['2026-10-25T02:00:00+02:00', '2026-10-25T03:00:00+01:00', '2026-10-25T04:00:00+01:00'],
    'hourly over the change: each wall-clock hour once');
});

/**
 * The relative periods a schedule's question may name (actors/scheduler/periods.ts), resolved
 * at a run's time in the schedule's zone, and the SQL rewritten into run-time parameters and
 * bound again. Plain functions: no server involved.
 */
import t from 'tap';
import { bindPeriod, fixedPeriod, periodLabel, pinPeriod, relativePeriod, resolve } from '../../actors/scheduler/periods.js';

/** Tuesday 1 December 2026, 08:00 in Berlin */
const AT = new Date('2026-12-01T07:00:00Z');

t.test('each relative phrase, at one run', async (t) => {
  const cases: Array<[string, string, string, string]> = [
    ['revenue by store last month', 'last month', '2026-11-01', '2026-11-30'],
    ['orders this month', 'this month', '2026-12-01', '2026-12-31'],
    ['sales this year', 'this year', '2026-01-01', '2026-12-31'],
    ['sales last year', 'last year', '2025-01-01', '2025-12-31'],
    ['signups in the last 7 days', 'the last 7 days', '2026-11-24', '2026-11-30'],
    ['signups over the past two weeks', 'the past two weeks', '2026-11-16', '2026-11-29'],
    ['revenue the last 3 months', 'the last 3 months', '2026-09-01', '2026-11-30'],
    ['orders yesterday', 'yesterday', '2026-11-30', '2026-11-30'],
    ['orders today', 'today', '2026-12-01', '2026-12-01'],
    ['revenue year to date', 'year to date', '2026-01-01', '2026-12-01'],
    ['revenue month-to-date', 'month-to-date', '2026-12-01', '2026-12-01'],
    ['revenue same month last year', 'same month last year', '2025-12-01', '2025-12-31'],
    ['revenue last quarter', 'last quarter', '2026-07-01', '2026-09-30'],
    ['tickets this week', 'this week', '2026-11-30', '2026-12-06'],
    ['tickets last week', 'last week', '2026-11-23', '2026-11-29'],
  ];
  for (const [question, phrase, start, last] of cases) {
    const rule = relativePeriod(question);
    t.equal(rule?.phrase, phrase, question);
    if (rule) t.same([resolve(rule, AT, 'Europe/Berlin').start, resolve(rule, AT, 'Europe/Berlin').last], [start, last], question);
  }
  t.equal(relativePeriod('revenue by store'), undefined, 'no period named');
  t.equal(relativePeriod('revenue in October 2026'), undefined, 'a fixed period is not relative');
});

t.test('the zone decides the day; ISO weeks and months cross the year', async (t) => {
  const lastMonth = relativePeriod('last month')!;
  const lateUtc = new Date('2026-12-31T23:30:00Z');
  t.equal(resolve(lastMonth, lateUtc, 'UTC').start, '2026-11-01', 'still December in UTC');
  t.equal(resolve(lastMonth, lateUtc, 'Asia/Tokyo').start, '2026-12-01', 'already January in Tokyo');
  t.same(resolve(lastMonth, new Date('2027-01-15T12:00:00Z'), 'UTC'), { start: '2026-12-01', end: '2027-01-01', last: '2026-12-31' });
  // Friday 1 January 2027 is in ISO week 53 of 2026, which began Monday 28 December
  t.same(resolve(relativePeriod('this week')!, new Date('2027-01-01T12:00:00Z'), 'UTC'), { start: '2026-12-28', end: '2027-01-04', last: '2027-01-03' });
  t.equal(resolve(relativePeriod('last quarter')!, new Date('2027-02-10T12:00:00Z'), 'UTC').start, '2026-10-01');
});

t.test('fixed periods the question names', async (t) => {
  t.same(fixedPeriod('revenue in October 2026'), { start: '2026-10-01', end: '2026-11-01', last: '2026-10-31' });
  t.same(fixedPeriod('orders for Feb 2028'), { start: '2028-02-01', end: '2028-03-01', last: '2028-02-29' });
  t.same(fixedPeriod('sales Q3 2025'), { start: '2025-07-01', end: '2025-10-01', last: '2025-09-30' });
  t.same(fixedPeriod('sales in 2025'), { start: '2025-01-01', end: '2026-01-01', last: '2025-12-31' });
  t.equal(fixedPeriod('top 2025 customers'), undefined, 'a number that is not said as a period');
});

t.test('literals of the period become parameters; a run binds its own dates', async (t) => {
  const p = resolve(relativePeriod('last month')!, new Date('2026-11-15T12:00:00Z'), 'UTC');
  const sql = "SELECT 1 FROM o WHERE a >= DATE '2026-10-01' AND a < TIMESTAMP '2026-11-01 00:00:00' AND b BETWEEN '2026-10-01' AND '2026-10-31' AND c <> '2026-10-02'";
  const pinned = pinPeriod(sql, p);
  t.equal(pinned.replaced, 4);
  t.equal(pinned.sql, "SELECT 1 FROM o WHERE a >= DATE '{{period_start}}' AND a < TIMESTAMP '{{period_end}} 00:00:00' AND b BETWEEN '{{period_start}}' AND '{{period_last}}' AND c <> '2026-10-02'", 'another date stays');
  const dec = resolve(relativePeriod('last month')!, new Date('2027-01-02T00:00:00Z'), 'UTC');
  t.equal(bindPeriod(pinned.sql, dec), "SELECT 1 FROM o WHERE a >= DATE '2026-12-01' AND a < TIMESTAMP '2027-01-01 00:00:00' AND b BETWEEN '2026-12-01' AND '2026-12-31' AND c <> '2026-10-02'");
  t.equal(bindPeriod('SELECT 1 WHERE d >= {{period_start}} AND d < {{ period_end }}', dec), "SELECT 1 WHERE d >= DATE '2026-12-01' AND d < DATE '2027-01-01'", 'bare: a typed DATE literal');
});

t.test('labels', async (t) => {
  t.equal(periodLabel({ start: '2026-11-01', last: '2026-11-30' }), '1 Nov – 30 Nov 2026');
  t.equal(periodLabel({ start: '2026-12-28', last: '2027-01-03' }), '28 Dec 2026 – 3 Jan 2027');
  t.equal(periodLabel({ start: '2026-11-29', last: '2026-11-29' }), '29 Nov 2026');
});

import t from 'tap';
import { buildInsights, statisticalInsights, type InsightsConfig } from '../../actors/insights/handle.js';
import { periodScale } from '../../actors/insights/periods.js';
import {
  correlation,
  mannKendall,
  median,
  normalTwoSided,
  ranks,
  regularizedBeta,
  robustScores,
  SEN_FULL_MAX,
  senSlope,
  studentTwoSided,
} from '../../actors/insights/stats.js';
import { parseDate, type ParsedDate } from '../../actors/insights/values.js';
import type { Cell, Column } from '../../protocol/schemas/common.js';
import type { Insight, InsightsGenerateRequest } from '../../protocol/schemas/insights.js';

function request(columns: Array<[string, string]>, rows: Cell[][], extra: Partial<InsightsGenerateRequest> = {}): InsightsGenerateRequest {
  const cols: Column[] = columns.map(([name, type]) => ({ name, type }));
  return { question: 'q', sql: 'SELECT 1', columns: cols, rows, row_count: rows.length, truncated: false, ...extra };
}

const ofType = (insights: readonly Insight[], type: string): Insight | undefined => insights.find((i) => i.type === type);

/** `YYYY-MM` labels from a first month on */
function monthly(from: [number, number], values: readonly Cell[]): Cell[][] {
  return values.map((v, i) => {
    const m = from[1] - 1 + i;
    return [`${from[0] + Math.floor(m / 12)}-${String((m % 12) + 1).padStart(2, '0')}`, v];
  });
}

/** a day long after every date of these tests: no period of theirs is running */
const LATER = Date.UTC(2030, 0, 1);
const stats = (req: InsightsGenerateRequest, now = LATER): Insight[] => statisticalInsights(req, { now });
const p = (s: string): ParsedDate => parseDate(s)!;

// ---------------------------------------------------------------------------------------------
// stats.ts on crafted numbers

t.test('Mann-Kendall: S, tau, exact p without ties, normal p with ties', async (t) => {
  t.equal(mannKendall([1, 2]), null, 'two points: no test');
  const up5 = mannKendall([1, 2, 3, 4, 5])!;
  t.equal(up5.s, 10);
  t.equal(up5.tau, 1);
  t.ok(up5.exact);
  t.ok(Math.abs(up5.p - 2 / 120) < 1e-12, `a perfect rise of 5 is 2 orders in 5! as extreme: ${up5.p}`);
  t.ok(Math.abs(mannKendall([4, 3, 2, 1])!.p - 2 / 24) < 1e-12, 'a perfect fall of 4 is not significant (p = 1/12)');

  // the exact distribution against every permutation of 6 values
  const perms = (xs: number[]): number[][] => (xs.length <= 1 ? [xs] : xs.flatMap((x, i) => perms([...xs.slice(0, i), ...xs.slice(i + 1)]).map((r) => [x, ...r])));
  const all = perms([1, 2, 3, 4, 5, 6]);
  const sOf = (ys: number[]): number => {
    let s = 0;
    for (let i = 0; i < ys.length; i++) for (let j = i + 1; j < ys.length; j++) s += Math.sign(ys[j]! - ys[i]!);
    return s;
  };
  const sample = [[3, 1, 2, 6, 5, 4], [1, 3, 2, 4, 6, 5], [6, 5, 1, 2, 3, 4], [2, 1, 4, 3, 6, 5]];
  for (const ys of sample) {
    const mk = mannKendall(ys)!;
    t.equal(mk.s, sOf(ys), `S of ${ys.join(',')}`);
    const asExtreme = all.filter((q) => Math.abs(sOf(q)) >= Math.abs(mk.s)).length / all.length;
    t.ok(Math.abs(mk.p - asExtreme) < 1e-12, `exact p of ${ys.join(',')}: ${mk.p} = ${asExtreme}`);
  }

  const tied = mannKendall([1, 1, 2, 2, 3, 3, 4, 4])!;
  t.notOk(tied.exact, 'ties: normal approximation');
  t.equal(tied.s, 24, '28 pairs, 4 of them tied');
  // variance (8·7·21 − 4·(2·1·9)) / 18 = 61.33; z = 23 / 7.83 = 2.94
  t.ok(Math.abs(tied.p - normalTwoSided(23 / Math.sqrt(61 + 1 / 3))) < 1e-12);
  t.ok(tied.p < 0.01);
  t.equal(mannKendall([5, 5, 5, 5, 5])!.p, 1, 'all tied: nothing to test');
});

t.test("Sen's slope: robust to a wild point, incomplete method past its limit", async (t) => {
  const xs = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
  const ys = xs.map((x) => 10 + 2 * x);
  ys[7] = 500;
  const line = senSlope(xs, ys)!;
  t.equal(line.slope, 2, 'one wild point does not move the median slope');
  t.equal(line.intercept, 10);
  t.equal(senSlope([1], [1]), null);
  t.equal(senSlope([3, 3, 3], [1, 2, 3]), null, 'no spread in x');

  const n = SEN_FULL_MAX + 501;
  const bx = Array.from({ length: n }, (_, i) => i);
  const by = bx.map((x) => 7 - 0.5 * x + (x % 2 === 0 ? 0.25 : -0.25));
  const big = senSlope(bx, by)!;
  t.ok(Math.abs(big.slope + 0.5) < 1e-9, `a long series keeps its slope (${big.slope})`);
});

t.test('robust scores, ranks and median', async (t) => {
  t.equal(median([3, 1, 2]), 2);
  t.equal(median([4, 1, 3, 2]), 2.5);
  t.same(ranks([10, 20, 20, 30]), [1, 2.5, 2.5, 4], 'ties share their average rank');
  t.same(ranks([3, 3, 3]), [2, 2, 2]);
  t.equal(robustScores([1, 2, 3], 8), null, 'too few values');
  t.equal(robustScores([5, 5, 5, 5, 5, 6, 7, 100], 8), null, 'MAD of 0 (more than half equal): no scale to measure with');
  const r = robustScores([1, 2, 3, 4, 5, 6, 7, 8, 9], 8)!;
  t.equal(r.median, 5);
  t.equal(r.mad, 2);
  t.ok(Math.abs(r.scores[8]! - 4 / (2 * 1.482602218505602)) < 1e-12);
});

t.test('correlation: Pearson and Spearman with their p-values', async (t) => {
  const xs = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
  const exp = correlation(xs, xs.map((x) => Math.exp(x)), 8)!;
  t.equal(exp.spearman, 1, 'monotonic: Spearman is 1');
  t.ok(exp.pearson < 0.9, `not linear: Pearson is lower (${exp.pearson})`);
  t.equal(exp.spearmanP, 0);
  t.equal(correlation(xs.slice(0, 7), xs.slice(0, 7), 8), null, 'fewer than 8 pairs');
  t.equal(correlation(xs, xs.map(() => 3), 8), null, 'a constant side');
  // r = 0.5 over 10 pairs: t = 0.5·√(8/0.75) = 1.633 with 8 df, two-sided p = 0.141 (tables)
  t.ok(Math.abs(studentTwoSided(0.5 * Math.sqrt(8 / 0.75), 8) - 0.1411) < 5e-4);
  t.ok(Math.abs(studentTwoSided(2.306, 8) - 0.05) < 5e-4, 't(8) critical value');
  t.ok(Math.abs(studentTwoSided(12.706, 1) - 0.05) < 5e-4, 't(1) critical value');
  t.ok(Math.abs(normalTwoSided(1.959964) - 0.05) < 1e-6);
  t.ok(Math.abs(regularizedBeta(0.5, 2, 2) - 0.5) < 1e-12);
  t.ok(Math.abs(regularizedBeta(0.3, 2.5, 4) + regularizedBeta(0.7, 4, 2.5) - 1) < 1e-12, 'I_x(a,b) + I_(1-x)(b,a) = 1');
  const noise = correlation(xs, [5, 3, 8, 1, 9, 2, 7, 4, 10, 6], 8)!;
  t.ok(noise.spearmanP > 0.05, `no relation: not significant (p = ${noise.spearmanP})`);
});

t.test('periods: the unit a series steps by', async (t) => {
  t.equal(periodScale(['2025-01-01', '2025-02-01', '2025-03-01'].map(p))?.unit, 'month');
  t.equal(periodScale(['2025-01-01', '2025-04-01', '2025-07-01'].map(p))?.unit, 'quarter');
  t.equal(periodScale(['2025-01-01', '2025-04-01'].map(p))?.unit, 'month', 'two dates three months apart are months');
  t.equal(periodScale(['2025-03-03', '2025-03-10', '2025-03-17'].map(p))?.unit, 'week', 'one weekday');
  t.equal(periodScale(['2025-03-03', '2025-03-04', '2025-03-10'].map(p))?.unit, 'day');
  t.equal(periodScale(['2023-01-01', '2024-01-01'].map(p))?.unit, 'year');
  const ends = periodScale(['2024-02-29', '2024-03-31', '2024-04-30'].map(p))!;
  t.equal(ends.unit, 'month', 'month ends are months');
  t.equal(ends.label(p('2024-04-30')), '2024-04');
  t.equal(periodScale(['2025-03-03 10:00', '2025-03-03 11:00'].map(p))?.unit, 'hour');
  t.equal(periodScale(['2025-03-03 10:12', '2025-03-03 11:47'].map(p)), null, 'irregular timestamps have no period');
  const q = periodScale(['2025-01-01', '2025-04-01', '2025-07-01'].map(p))!;
  t.equal(q.label(p('2025-04-01')), '2025 Q2');
  const m = periodScale([p('2025-09-01 00:00:00+02')])!;
  t.same(m.bounds(p('2025-09-01 00:00:00+02')), { start: Date.UTC(2025, 7, 31, 22), end: Date.UTC(2025, 8, 30, 22) }, "a label's own zone");
});

// ---------------------------------------------------------------------------------------------
// Partial periods

t.test('the browser case: monthly orders whose last month is incomplete', async (t) => {
  // 2024-01 … 2025-08 about 120-152 orders a month, then 2025-09 with the data ending on the 14th
  const values = [120, 125, 131, 128, 135, 140, 138, 142, 139, 145, 150, 148, 141, 146, 149, 151, 147, 150, 152, 151, 75];
  const rows = monthly([2024, 1], values);
  const cols: Array<[string, string]> = [['month', 'text'], ['orders', 'bigint']];

  const now = Date.UTC(2025, 8, 14, 15, 30);
  const out = stats(request(cols, rows), now);
  const text = out.map((i) => i.message).join('\n');
  t.notMatch(text, /fell 50%/, 'no "fell 50%"');
  t.notMatch(text, /2025-09 stands out/, 'the last month is not an outlier');
  t.notMatch(text, /down 50%/, 'nor a 50% drop on the month before');
  t.equal(out[0]?.type, 'partial', 'the partial month is named first');
  t.equal(out[0]?.message, '2025-09 is partial: the period is still running (today is 2025-09-14), so it is left out of the trend, the comparisons and the outlier check.');
  t.match(ofType(out, 'trend')?.message, /^Orders rose from 2024-01 to 2025-08 \(120 → 151\): about \+1\.44 a month/, 'the trend of the complete months');
  t.equal(ofType(out, 'change')?.message, 'Orders in 2025-08: 151, down 0.7% on 2025-07 (152) and up 6.3% on 2024-08 (142).');
  t.equal(ofType(out, 'outlier'), undefined);

  // with the default 3 insights, what a user sees
  const cfg: InsightsConfig = { enabled: true, mode: 'statistical_only', max_insights: 3, include_statistical: true };
  t.same(buildInsights(request(cols, rows), cfg, [], { now }).map((i) => i.type), ['partial', 'trend', 'change']);

  // the data's own last timestamp, from a finer column of the same rows
  const withLast = rows.map((r, i) => [...r, i === rows.length - 1 ? '2025-09-14 17:03:00+00' : `${String(r[0])}-28 19:45:00+00`]);
  const finer = stats(request([...cols, ['last_order_at', 'timestamp with time zone']], withLast));
  t.equal(ofType(finer, 'partial')?.message, '2025-09 is partial: data ends on 2025-09-14, so it is left out of the trend, the comparisons and the outlier check.');
  t.notMatch(finer.map((i) => i.message).join('\n'), /fell 50%|2025-09 stands out|down 50%/);

  // the same column before the month: a first order tells where a period starts, not where its data ends
  const firstOrder = stats(request([...cols, ['first_order_at', 'timestamp with time zone']], withLast));
  t.equal(ofType(firstOrder, 'partial'), undefined, 'a column named first_* is not the end of the data');

  // not recognised (no clock inside it, no finer column): the low month is flagged, with the hint
  const unknown = stats(request(cols, rows));
  t.equal(ofType(unknown, 'partial'), undefined);
  t.match(ofType(unknown, 'outlier')?.message, /^2025-09 stands out: orders of 75 is far below what the trend suggests.*If the data stops partway through 2025-09, that period is only incomplete\.$/);
});

t.test('partial periods: complete ones are left alone; weeks, days, hours and years', async (t) => {
  const cols: Array<[string, string]> = [['month', 'date'], ['sales', 'integer'], ['last_sale', 'date']];
  const full = monthly([2025, 1], [10, 12, 11, 13, 12, 14]).map((r) => [`${String(r[0])}-01`, r[1]!, `${String(r[0])}-${r[0] === '2025-02' ? '28' : '30'}`]);
  full[full.length - 1]![2] = '2025-06-30';
  t.equal(ofType(stats(request(cols, full)), 'partial'), undefined, 'data up to the last day of the month: complete');
  const cut = full.map((r) => [...r]);
  cut[cut.length - 1]![2] = '2025-06-29';
  t.equal(ofType(stats(request(cols, cut)), 'partial')?.message?.slice(0, 45), '2025-06 is partial: data ends on 2025-06-29, ');
  t.equal(ofType(stats(request(cols, full), Date.UTC(2025, 6, 1)), 'partial'), undefined, 'the clock past the month: complete');
  const unrelated = cut.map((r, i) => [r[0]!, r[1]!, i === 0 ? '2024-12-31' : r[2]!]);
  t.equal(ofType(stats(request(cols, unrelated)), 'partial'), undefined, 'a date column outside its rows\' periods is not a finer column');

  const weeks = ['2025-03-03', '2025-03-10', '2025-03-17', '2025-03-24'].map((d, i) => [d, 100 + i]);
  t.match(ofType(stats(request([['week', 'date'], ['visits', 'integer']], weeks), Date.UTC(2025, 2, 26)), 'partial')?.message, /^2025-03-24 is partial: the period is still running \(today is 2025-03-26\)/);
  t.equal(ofType(stats(request([['week', 'date'], ['visits', 'integer']], weeks), Date.UTC(2025, 2, 31)), 'partial'), undefined, 'that week ended on the 30th');

  const days = ['2025-03-01', '2025-03-02', '2025-03-03'].map((d, i) => [d, 10 + i]);
  t.match(ofType(stats(request([['day', 'date'], ['visits', 'integer']], days), Date.UTC(2025, 2, 3, 9)), 'partial')?.message, /^2025-03-03 is partial/);

  const hours = ['2025-03-03 08:00', '2025-03-03 09:00', '2025-03-03 10:00'].map((d, i) => [d, 10 + i]);
  t.match(ofType(stats(request([['hour', 'timestamp'], ['hits', 'integer']], hours), Date.UTC(2025, 2, 3, 10, 20)), 'partial')?.message, /^2025-03-03 10:00 is partial: the period is still running \(today is 2025-03-03 10:20\)/);

  const years = [['2023-01-01', 5], ['2024-01-01', 6], ['2025-01-01', 2]];
  t.match(ofType(stats(request([['year', 'date'], ['n', 'integer']], years), Date.UTC(2025, 4, 1)), 'partial')?.message, /^2025 is partial/);
});

// ---------------------------------------------------------------------------------------------
// Period over period

t.test('period over period: the one before, and a year earlier when the series has it', async (t) => {
  const cols: Array<[string, string]> = [['month', 'date'], ['revenue', 'numeric']];
  const two = stats(request(cols, [['2025-01-01', 100], ['2025-02-01', 80]]));
  t.equal(ofType(two, 'change')?.message, 'Revenue in 2025-02: 80, down 20% on 2025-01 (100).');
  t.equal(ofType(two, 'trend'), undefined, 'two rows are not a trend');

  const yoy = monthly([2024, 1], [10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 30, 33]).map((r) => [`${String(r[0])}-01`, r[1]!]);
  t.equal(ofType(stats(request(cols, yoy)), 'change')?.message, 'Revenue in 2025-02: 33, up 10% on 2025-01 (30) and up 200% on 2024-02 (11).');

  const gap = [['2024-03-01', 40], ['2025-01-01', 50], ['2025-03-01', 60]];
  t.equal(ofType(stats(request(cols, gap)), 'change')?.message, 'Revenue in 2025-03: 60, up 50% on 2024-03 (40).', 'no February: the year-ago only');
  t.equal(ofType(stats(request(cols, [['2025-01-01', 1], ['2025-03-01', 2], ['2025-05-01', 3]])), 'change'), undefined, 'no period before and no year-ago: nothing');

  const same = stats(request(cols, [['2025-01-01', '7.50'], ['2025-02-01', '7.5']]));
  t.equal(ofType(same, 'change')?.message, 'Revenue in 2025-02: 7.5, unchanged from 2025-01 (7.5).');
  const fromZero = stats(request(cols, [['2025-01-01', 0], ['2025-02-01', 4]]));
  t.equal(ofType(fromZero, 'change')?.message, 'Revenue in 2025-02: 4, up on 2025-01 (0).', 'no percentage of zero');

  const quarters = [['2024-04-01', 10], ['2024-07-01', 12], ['2024-10-01', 11], ['2025-01-01', 13], ['2025-04-01', 15]];
  t.equal(ofType(stats(request(cols, quarters)), 'change')?.message, 'Revenue in 2025 Q2: 15, up 15% on 2025 Q1 (13) and up 50% on 2024 Q2 (10).');

  // several rows a month (one per store): the month is their sum
  const stores = [['2025-01-01', 'A', 10], ['2025-01-01', 'B', 20], ['2025-02-01', 'A', 15], ['2025-02-01', 'B', 30]];
  t.equal(ofType(stats(request([['month', 'date'], ['store', 'text'], ['revenue', 'integer']], stores)), 'change')?.message, 'Revenue in 2025-02: 45, up 50% on 2025-01 (30).');
  // but not when the result was cut: its months may be missing rows
  const cut = stats(request([['month', 'date'], ['store', 'text'], ['revenue', 'integer']], stores, { truncated: true, row_count: 500 }));
  t.equal(ofType(cut, 'change'), undefined, 'a truncated result with several rows a period: no comparison');
});

t.test('big numerics as strings stay exact in comparisons and trends', async (t) => {
  const big = ['12345678901234567890.10', '12345678901234567891.20', '12345678901234567892.30', '12345678901234567893.40', '12345678901234567999.99'];
  const out = stats(request([['month', 'date'], ['amount', 'numeric']], big.map((v, i) => [`2025-0${i + 1}-01`, v])));
  t.equal(ofType(out, 'change')?.message, 'Amount in 2025-05: 12,345,678,901,234,567,999.99, up by less than 0.1% on 2025-04 (12,345,678,901,234,567,893.4).');
  t.match(ofType(out, 'trend')?.message, /^Amount edged up from 2025-01 to 2025-05 \(12,345,678,901,234,567,890\.1 → 12,345,678,901,234,567,999\.99\)/, 'a significant but tiny rise edges up');
  t.notMatch(ofType(out, 'trend')?.message, /\+0%/, 'no "+0%" for a change below 0.1%');
  t.equal(ofType(out, 'total')?.message, 'Total amount is 61,728,394,506,172,839,566.99.', 'five rows: no mean per row');
});

// ---------------------------------------------------------------------------------------------
// Outliers, share, correlation

t.test('outliers against the trend: a steady rise is not an outlier, a spike on it is', async (t) => {
  const cols: Array<[string, string]> = [['month', 'date'], ['sales', 'integer']];
  const rising = monthly([2024, 1], [100, 110, 121, 129, 140, 151, 160, 171, 179, 190, 201, 210]).map((r) => [`${String(r[0])}-01`, r[1]!]);
  t.equal(ofType(stats(request(cols, rising)), 'outlier'), undefined, 'the last and highest month only follows the rise');
  const spike = rising.map((r) => [...r]);
  spike[5]![1] = 260;
  const out = stats(request(cols, spike));
  t.match(ofType(out, 'outlier')?.message, /^2024-06 stands out: sales of 260 is far above what the trend suggests, about 150 \(robust z-score [\d.]+\)\.$/);
  t.equal(ofType(out, 'trend')?.severity, 'success');

  const nulls = [[100], [null], [104], [98], [null], [101], [97], [103], [99], [180], ['n/a']];
  t.match(ofType(stats(request([['sales', 'numeric']], nulls)), 'outlier')?.message, /^Row 10 stands out: sales of 180/, 'nulls and text are skipped, rows keep their numbers');

  const twoOut = [['A', 10], ['B', 11], ['C', 9], ['D', 10], ['E', 12], ['F', 10], ['G', 11], ['H', 90], ['I', 95]];
  t.match(ofType(stats(request([['shop', 'text'], ['n', 'integer']], twoOut)), 'outlier')?.message, /^I stands out: .* 1 other value is unusual too\.$/);

  const ties = [['A', 5], ['B', 5], ['C', 5], ['D', 5], ['E', 5], ['F', 6], ['G', 7], ['H', 50]];
  t.equal(ofType(stats(request([['shop', 'text'], ['n', 'integer']], ties)), 'outlier'), undefined, 'more than half the values equal: no robust scale, nothing said');
});

t.test('share of total: the leader, the top 3, concentration, ties', async (t) => {
  const cols: Array<[string, string]> = [['store', 'text'], ['revenue', 'numeric']];
  const skewed = stats(request(cols, [['A', 700], ['B', 100], ['C', 80], ['D', 60], ['E', 40], ['F', 20]]));
  t.equal(ofType(skewed, 'top')?.message, 'A leads with 70% of revenue (700); the top 3 of 6 make 88%: highly concentrated.');
  const even = stats(request(cols, [['A', 105], ['B', 100], ['C', 98], ['D', 97], ['E', 100]]));
  t.equal(ofType(even, 'top')?.message, 'A leads with 21% of revenue (105); the top 3 of 5 make 61%: spread evenly.');
  // shares .3 .25 .15 .15 .1 .05: HHI 0.21, below 0.25; 1/HHI = 4.8 of 6, not even either
  const middle = stats(request(cols, [['A', 30], ['B', 25], ['C', 15], ['D', 15], ['E', 10], ['F', 5]]));
  t.equal(ofType(middle, 'top')?.message, 'A leads with 30% of revenue (30); the top 3 of 6 make 70%.');

  t.equal(ofType(stats(request(cols, [['A', 30], ['B', 30], ['C', 40]])), 'top')?.message, 'C leads with 40% of revenue (40).');
  t.equal(ofType(stats(request(cols, [['A', 40], ['B', 40], ['C', 20]])), 'top')?.message, 'A and B share the lead with 40% of revenue each (40).');
  t.equal(ofType(stats(request(cols, [['A', 10], ['B', 10]])), 'top'), undefined, 'all equal: nobody leads');
  t.equal(ofType(stats(request(cols, [['A', 10], ['A', 20]])), 'top'), undefined, 'one category is no share');
  t.equal(ofType(stats(request(cols, [['A', '0.1'], ['B', '0.10'], ['C', '0.05']])), 'top')?.message, 'A and B share the lead with 40% of revenue each (0.1).', 'equal decimals written differently tie');
});

t.test('correlation between two measures', async (t) => {
  const cols: Array<[string, string]> = [['store', 'text'], ['visits', 'integer'], ['revenue', 'numeric']];
  const visits = [120, 340, 200, 90, 410, 260, 150, 300, 180, 230];
  const related = visits.map((v, i) => [`S${i}`, v, v * 4.5 + (i % 3) * 20]);
  const out = stats(request(cols, related));
  t.match(ofType(out, 'correlation')?.message, /^Visits and revenue rise together across 10 rows \(strong: Spearman ρ 1, Pearson r 1, p < 0\.001\)\.$/);

  const opposite = visits.map((v, i) => [`S${i}`, v, 5000 - v * 10 + (i % 2) * 300]);
  t.match(ofType(stats(request(cols, opposite)), 'correlation')?.message, /^Visits and revenue move in opposite directions/);

  const unrelated = visits.map((v, i) => [`S${i}`, v, [5, 3, 8, 1, 9, 2, 7, 4, 10, 6][i]!]);
  t.equal(ofType(stats(request(cols, unrelated)), 'correlation'), undefined, 'no significant relation: nothing said');
  t.equal(ofType(stats(request(cols, related.slice(0, 7))), 'correlation'), undefined, 'fewer than 8 rows: nothing said');
  const ids = stats(request([['id', 'integer'], ['revenue', 'numeric']], visits.map((v, i) => [i + 1, v])));
  t.equal(ofType(ids, 'correlation'), undefined, 'an id column is not a measure');
  const years = stats(request([['year', 'integer'], ['revenue', 'numeric']], visits.map((v, i) => [2010 + i, v + i * 100])));
  t.equal(ofType(years, 'correlation'), undefined, 'a numeric year is time, not a second measure');

  const overTime = stats(request([['month', 'date'], ['visits', 'integer'], ['revenue', 'numeric']], monthly([2024, 1], visits).map((r, i) => [`${String(r[0])}-01`, r[1]!, (r[1] as number) * 3 + i])));
  t.match(ofType(overTime, 'correlation')?.message, /Over time, a trend they share can be enough for that\.$/);
});

t.test('small samples say nothing they cannot support', async (t) => {
  const one = stats(request([['month', 'date'], ['store', 'text'], ['revenue', 'numeric']], [['2025-01-01', 'A', 10]]));
  t.same(one.map((i) => i.type), ['total'], 'one row: its value, no "1 row returned."');
  const three = stats(request([['month', 'date'], ['revenue', 'numeric']], [['2025-01-01', 1], ['2025-02-01', 5], ['2025-03-01', 9]]));
  t.same(three.map((i) => i.type), ['change', 'total'], 'three months: a comparison, no trend, no outlier');
  const nulls = stats(request([['month', 'date'], ['revenue', 'numeric']], [['2025-01-01', null], ['2025-02-01', null], ['2025-03-01', 4]]));
  t.same(nulls.map((i) => i.type), ['total'], 'nulls are no periods');
});

t.test('10,000 rows', async (t) => {
  // a daily series of 10,000 days, and the same rows by store with a second measure
  const start = Date.UTC(1999, 0, 1);
  const rows: Cell[][] = [];
  for (let i = 0; i < 10_000; i++) {
    const day = new Date(start + i * 86_400_000).toISOString().slice(0, 10);
    const orders = 100 + Math.floor(i / 50) + ((i * 7919) % 23);
    rows.push([day, `store ${i % 40}`, orders, (orders * 4.25 + ((i * 104729) % 97)).toFixed(2)]);
  }
  const out = stats(request([['day', 'date'], ['store', 'text'], ['orders', 'integer'], ['revenue', 'numeric']], rows));
  t.equal(ofType(out, 'trend')?.severity, 'success', 'the slow rise is found');
  t.match(ofType(out, 'change')?.message, /^Revenue in 2026-05-18: /);
  t.match(ofType(out, 'top')?.message, /the top 3 of 40 make/);
  t.match(ofType(out, 'correlation')?.message, /^Orders and revenue rise together across 10,000 rows/);
  t.equal(ofType(out, 'summary'), undefined, 'no "10,000 rows returned.": the answer shows its count');
  t.match(ofType(out, 'total')?.message, /, averaging .* per row\.$/, 'over 10,000 rows, a mean per row says something');
});

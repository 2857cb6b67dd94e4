import t from 'tap';
import {
  buildInsights,
  generate,
  parseDecimal,
  pickRoles,
  statisticalInsights,
  type InsightsConfig,
} from '../../actors/insights/handle.js';
import type { Cell, Column } from '../../protocol/schemas/common.js';
import { ZERO_USAGE } from '../../protocol/schemas/common.js';
import type { Insight, InsightsGenerateRequest } from '../../protocol/schemas/insights.js';
import { testConfig } from '../helpers/config.js';

function request(columns: Array<[string, string]>, rows: Cell[][], extra: Partial<InsightsGenerateRequest> = {}): InsightsGenerateRequest {
  const cols: Column[] = columns.map(([name, type]) => ({ name, type }));
  return { question: 'q', sql: 'SELECT 1', columns: cols, rows, row_count: rows.length, truncated: false, ...extra };
}

function ofType(insights: readonly Insight[], type: string): Insight | undefined {
  return insights.find((i) => i.type === type);
}

const months = (values: readonly Cell[]): Cell[][] => values.map((v, i) => [`2025-${String(i + 1).padStart(2, '0')}-01`, v]);

const CFG: InsightsConfig = { enabled: true, mode: 'statistical_only', max_insights: 10, include_statistical: true };

t.test('no rows: a single "empty" insight', async (t) => {
  const out = statisticalInsights(request([['revenue', 'numeric']], []));
  t.same(out, [{ type: 'empty', severity: 'info', message: 'No rows matched.', icon: '🔍', source: 'statistical' }]);
});

t.test('no filler: no row count unless the result was cut, no total without a measure', async (t) => {
  const one = statisticalInsights(request([['name', 'text']], [['a']]));
  t.same(one, [], 'one text row: nothing to say (the answer shows its row count)');
  const many = statisticalInsights(request([['name', 'text']], [['a'], ['b']], { row_count: 1234 }));
  t.equal(ofType(many, 'summary'), undefined, 'no "1,234 rows returned."');
  t.equal(ofType(many, 'total'), undefined, 'no measure, no total');
});

t.test('truncated results say "at least", lead with it and qualify totals', async (t) => {
  const rows = [['a', 10], ['b', 30]] as Cell[][];
  const out = statisticalInsights(request([['store', 'text'], ['revenue', 'integer']], rows, { truncated: true, row_count: 1000 }));
  t.equal(out[0]?.type, 'summary', 'the cut comes first: it qualifies every other number');
  t.equal(out[0]?.severity, 'warning');
  t.equal(out[0]?.message, 'At least 1,000 rows — the result was cut at the limit.');
  t.match(ofType(out, 'total')?.message, /rows shown/);
  t.match(ofType(out, 'top')?.message, /in the rows shown/);
});

t.test('total: the last numeric non-id column; a mean per row only over enough rows', async (t) => {
  const rows: Cell[][] = [[1, 'North', 1200.5, 7], [2, 'South', 3000.123, 8], [3, 'East', 999, 9]];
  const req = request([['id', 'integer'], ['region', 'text'], ['revenue', 'numeric'], ['region_id', 'bigint']], rows);
  t.equal(pickRoles(req.columns, req.rows).measure?.name, 'revenue', 'id and *_id columns are not measures');
  const total = ofType(statisticalInsights(req), 'total');
  t.equal(total?.message, 'Total revenue is 5,199.62.', 'three rows: the total, no "averaging … per row"');
  t.equal(total?.severity, 'info');
  t.equal(total?.source, 'statistical');

  const single = statisticalInsights(request([['count', 'bigint']], [[42]]));
  t.equal(ofType(single, 'total')?.message, 'Count is 42.', 'one row: the value, no average');

  const named = statisticalInsights(request([['total_sales', 'numeric']], [[1], [2]]));
  t.equal(ofType(named, 'total')?.message, 'Total sales is 3.', 'no "Total total"');

  const avg = statisticalInsights(request([['shop', 'text'], ['avg_price', 'numeric']], [['a', 4], ['b', 5], ['c', 6.5]]));
  t.equal(ofType(avg, 'total'), undefined, 'an average over three rows: neither summed nor averaged again');
  const prices = Array.from({ length: 12 }, (_, i) => [`s${i}`, 4 + i * 0.5] as Cell[]);
  t.equal(ofType(statisticalInsights(request([['shop', 'text'], ['avg_price', 'numeric']], prices)), 'total')?.message, 'Avg price averages 6.75 across 12 rows, from 4 to 9.5.', 'over enough rows: its mean and range');
  const shares = statisticalInsights(request([['actor', 'text'], ['share_pct', 'numeric']], [['a', 50], ['b', 30], ['c', 20]]));
  t.equal(ofType(shares, 'total'), undefined, 'shares of a whole: no "averages 33.33"');
  const many = Array.from({ length: 12 }, (_, i) => [i + 1] as Cell[]);
  t.equal(ofType(statisticalInsights(request([['v', 'integer']], many)), 'total')?.message, 'Total v is 78, averaging 6.5 per row.', 'twelve rows: the mean per row');
  t.equal(ofType(avg, 'top')?.message, 'c has the highest avg price (6.5).');

  const nulls = statisticalInsights(request([['v', 'integer']], [[1], [null], [3]]));
  t.equal(ofType(nulls, 'total')?.message, 'Total v is 4.', 'nulls are left out');
});

t.test('big numerics arrive as strings and are added exactly', async (t) => {
  const rows: Cell[][] = [['12345678901234567890.125'], ['1.005'], ['-0.13']];
  const out = statisticalInsights(request([['amount', 'numeric']], rows));
  // 12345678901234567891.000 in total: a double would say ...7,900 or so
  t.equal(ofType(out, 'total')?.message, 'Total amount is 12,345,678,901,234,567,891.');
  t.same(parseDecimal('1.5e3'), { units: 1500n, scale: 0 });
  t.same(parseDecimal(' -0.25 '), { units: -25n, scale: 2 });
  t.equal(parseDecimal('abc'), null);
  t.equal(parseDecimal('NaN'), null);
  t.equal(parseDecimal(true), null);
  t.same(parseDecimal(1e21), { units: 10n ** 21n, scale: 0 });

  const mixed = statisticalInsights(request([['shop', 'text'], ['revenue', 'numeric']], [['A', '300.50'], ['B', 100], ['C', '99.5']]));
  t.equal(ofType(mixed, 'total')?.message, 'Total revenue is 500.', 'numbers and numeric strings mix');
  t.equal(ofType(mixed, 'top')?.message, 'A leads with 60.1% of revenue (300.5).');
});

t.test('top contributor and its share', async (t) => {
  const rows: Cell[][] = [['Harbor Kiosk', 1000], ['Downtown Roastery', 2340], ['Uptown', 5660]];
  const out = statisticalInsights(request([['store', 'text'], ['revenue', 'numeric']], rows));
  t.equal(ofType(out, 'top')?.message, 'Uptown leads with 62.9% of revenue (5,660).');

  const grouped = statisticalInsights(
    request([['month', 'date'], ['store', 'text'], ['revenue', 'integer']], [
      ['2025-01-01', 'A', 50], ['2025-01-01', 'B', 60], ['2025-02-01', 'A', 50], ['2025-02-01', 'B', 20],
    ]),
  );
  t.equal(ofType(grouped, 'top')?.message, 'A leads with 55.6% of revenue (100).', 'rows of one label add up');

  const negative = statisticalInsights(request([['store', 'text'], ['profit', 'numeric']], [['A', 10], ['B', -5]]));
  t.equal(ofType(negative, 'top'), undefined, 'no share when a value is negative');
  const zero = statisticalInsights(request([['store', 'text'], ['profit', 'numeric']], [['A', 0], ['B', 0]]));
  t.equal(ofType(zero, 'top'), undefined, 'no share of a zero total');
  const noLabel = statisticalInsights(request([['n', 'integer'], ['revenue', 'numeric']], [[1, 10], [2, 20]]));
  t.equal(ofType(noLabel, 'top'), undefined, 'no label column, no top');
  const oneLabel = statisticalInsights(request([['store', 'text'], ['revenue', 'numeric']], [['A', 10]]));
  t.equal(ofType(oneLabel, 'top'), undefined, 'a single row leads nothing');
});

t.test('trend over a date column: Mann-Kendall significance, Sen slope as the effect', async (t) => {
  const cols: Array<[string, string]> = [['month', 'date'], ['revenue', 'numeric']];
  const rose = statisticalInsights(request(cols, months([1000, 1100, 1050, 1200, 1250, 1300, 1280, 1310, 1330, 1290, 1340, 1350])));
  t.same(ofType(rose, 'trend'), {
    type: 'trend', severity: 'success', icon: '📈', source: 'statistical',
    message: 'Revenue rose from 2025-01 to 2025-12 (1,000 → 1,350): about +26.7 a month, +27% over the period (a significant trend: Mann-Kendall p < 0.001 over 12 months).',
  });
  t.equal(rose[0]?.type, 'trend', 'the trend comes first');

  const fell = statisticalInsights(request(cols, months(['2000', '1800', '1500', '1200', '1100', '900'])));
  t.equal(ofType(fell, 'trend')?.message, 'Revenue fell from 2025-01 to 2025-06 (2,000 → 900): about -225 a month, -56% over the period (a significant trend: Mann-Kendall p = 0.003 over 6 months).');
  // exact: a perfect fall of 6 points is 2 of the 720 orders as extreme, p = 0.0028
  t.equal(ofType(fell, 'trend')?.severity, 'warning');

  const flat = statisticalInsights(request(cols, months([100, 103, 98, 102, 99, 101, 100, 98])));
  t.equal(ofType(flat, 'trend')?.message, 'Revenue shows no clear trend from 2025-01 to 2025-08 (100 → 98; Mann-Kendall p = 0.38 over 8 months).');
  // S = -8 with two pairs of ties: variance (8·7·21 − 2·2·1·9)/18, z = (−8+1)/√63.3 = −0.88
  t.equal(ofType(flat, 'trend')?.severity, 'info');

  const shuffled = statisticalInsights(request(cols, [['2025-03-01', 300], ['2025-01-01', 100], ['2025-05-01', 500], ['2025-02-01', 200], ['2025-04-01', 400]]));
  t.match(ofType(shuffled, 'trend')?.message, /^Revenue rose from 2025-01 to 2025-05 \(100 → 500\): about \+100 a month/, 'sorted by date first');

  const isoText = statisticalInsights(request([['month', 'text'], ['orders', 'bigint']], [['2024-01', 10], ['2024-02', 9], ['2024-03', 7], ['2024-04', 6], ['2024-05', 5]]));
  t.match(ofType(isoText, 'trend')?.message, /^Orders fell from 2024-01 to 2024-05 \(10 → 5\)/, 'ISO date strings in a text column');
  t.equal(ofType(isoText, 'top'), undefined, 'a column of dates is not a label');

  const days = statisticalInsights(
    request([['day', 'timestamp with time zone'], ['visits', 'integer']], [
      ['2025-03-01 00:00:00+00', 10], ['2025-03-02 00:00:00+00', 11], ['2025-03-03 00:00:00+00', 20], ['2025-03-04 00:00:00+00', 21], ['2025-03-05 00:00:00+00', 25],
    ]),
  );
  t.match(ofType(days, 'trend')?.message, /^Visits rose from 2025-03-01 to 2025-03-05 \(10 → 25\): about \+[\d.]+ a day/);

  for (const n of [2, 3, 4]) {
    const few = statisticalInsights(request(cols, months([1, 2, 3, 4].slice(0, n))));
    t.equal(ofType(few, 'trend'), undefined, `${n} points are not a trend (even a perfect rise is not significant below 5)`);
  }

  const mixed = statisticalInsights(request(cols, months([100, 60, 40, 30, 20, 110])));
  t.equal(ofType(mixed, 'trend')?.severity, 'info', 'a fall then a jump back is no significant trend');
  t.match(ofType(mixed, 'trend')?.message, /^Revenue shows no clear trend from 2025-01 to 2025-06 \(100 → 110; Mann-Kendall p = [\d.]+ over 6 months\)\.$/);
});

t.test('outliers: robust z-score (median and MAD) beyond 3.5', async (t) => {
  const stores: Cell[][] = [
    ['A', 100], ['B', 104], ['C', 98], ['D', 101], ['E', 97], ['F', 103], ['G', 99], ['Airport Kiosk', 180],
  ];
  const out = statisticalInsights(request([['store', 'text'], ['sales', 'integer']], stores));
  const o = ofType(out, 'outlier');
  t.equal(o?.severity, 'warning');
  t.equal(o?.message, 'Airport Kiosk stands out: sales of 180 is far above the median of 100.5 (robust z-score 21.4).');
  t.equal(out[0]?.type, 'outlier', 'without a trend, the outlier leads');

  const calm = statisticalInsights(request([['store', 'text'], ['sales', 'integer']], stores.slice(0, 7).concat([['H', 106]])));
  t.equal(ofType(calm, 'outlier'), undefined, 'ordinary spread is not an outlier');
  t.equal(ofType(statisticalInsights(request([['store', 'text'], ['sales', 'integer']], stores.slice(1))), 'outlier'), undefined, 'fewer than 8 rows: no outlier check');

  const byDate = statisticalInsights(request([['month', 'date'], ['sales', 'numeric']], months([50, 52, 49, 51, 50, 48, 40, 50, 51, 49])));
  t.equal(ofType(byDate, 'outlier')?.message, '2025-07 stands out: sales of 40 is below the median of 50 (robust z-score -6.7).', 'named by its date');

  const byRow = statisticalInsights(request([['sales', 'numeric']], [[10], [11], [9], [10], [12], [10], [9], [11], [10], [60]]));
  t.match(ofType(byRow, 'outlier')?.message, /^Row 10 stands out/);
});

t.test('config: disabled, max_insights, modes', async (t) => {
  const req = request([['month', 'date'], ['store', 'text'], ['revenue', 'numeric']], [
    ['2025-01-01', 'A', 100], ['2025-02-01', 'B', 150], ['2025-03-01', 'C', 220],
  ]);
  t.same(buildInsights(req, { ...CFG, enabled: false }), [], 'disabled');
  t.same(buildInsights(req, { ...CFG, max_insights: 0 }), [], 'max_insights 0');

  const all = buildInsights(req, CFG);
  t.same(all.map((i) => i.type), ['change', 'top', 'total'], 'three months: a comparison, no trend');
  t.ok(all.every((i) => i.source === 'statistical'));
  t.same(buildInsights(req, { ...CFG, max_insights: 2 }).map((i) => i.type), ['change', 'top'], 'capped, most useful kept');

  for (const mode of ['llm_only', 'hybrid'] as const) {
    t.same(buildInsights(req, { ...CFG, mode, include_statistical: false }), all, `${mode} falls back to statistical`);
  }
  const llm: Insight = { type: 'llm', severity: 'info', message: 'Stores grew.', source: 'llm' };
  t.same(buildInsights(req, { ...CFG, mode: 'hybrid', max_insights: 2 }, [llm]).map((i) => i.type), ['llm', 'change'], 'model insights first');
  t.same(buildInsights(req, { ...CFG, mode: 'llm_only', include_statistical: false }, [llm]), [llm]);
});

t.test('generate: the reply with the shipped defaults, and no model call', async (t) => {
  const bus = { request: async (): Promise<never> => { throw new Error('statistical insights must not call the bus'); } };
  const req = request([['store', 'text'], ['revenue', 'numeric']], [['A', 1], ['B', 3], ['C', 4], ['D', 2]]);
  const ctx = { requestId: 'r1' };

  const config = testConfig({ natsUrl: 'nats://127.0.0.1:1' });
  t.equal(config.insights.max_insights, 3, 'shipped default');
  const reply = await generate(req, { bus, config }, ctx);
  t.same(reply.usage, ZERO_USAGE);
  t.same(reply.insights.map((i) => i.type), ['top', 'total']);
  t.equal(reply.insights[0]?.message, 'C leads with 40% of revenue (4).');

  const off = testConfig({ natsUrl: 'nats://127.0.0.1:1', extra: { insights: { enabled: false } } });
  t.same(await generate(req, { bus, config: off }, ctx), { insights: [], usage: ZERO_USAGE });

  const hybrid = testConfig({ natsUrl: 'nats://127.0.0.1:1', extra: { insights: { mode: 'hybrid', max_insights: 1 } } });
  const h = await generate(req, { bus, config: hybrid }, ctx);
  t.same(h.insights.map((i) => i.type), ['top']);
});

/**
 * The chart model and the column formats of the pages' shared layer (edge/web/static/lib/
 * chart-model.js, lib/format.js), without a browser: a (month, region, revenue) result pivots
 * into one series per region; ids, keys and years are never measures; a single value is a number
 * card; a share is a doughnut with percentages; more than eight series keep seven and "Other";
 * a person's picks (x, series, measure, the number of rows) are honoured; every chart has axis
 * titles; and the chart's measure is the one the insights pick (actors/insights/roles.ts).
 */
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import t from 'tap';
import type { Cell, Column } from '../../protocol/schemas/common.js';
import { pickRoles } from '../../actors/insights/roles.js';

const STATIC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../edge/web/static');
const cm = await import(pathToFileURL(path.join(STATIC, 'lib/chart-model.js')).href);
const fmt = await import(pathToFileURL(path.join(STATIC, 'lib/format.js')).href);

const col = (name: string, type: string): Column => ({ name, type });
const LONG: Cell[][] = [];
for (let m = 1; m <= 6; m++) for (const r of ['north', 'south', 'east']) LONG.push([`2024-0${m}-01`, r, String(1000 + m * 10 + r.length)]);
const LONG_COLS = [col('month', 'date'), col('region', 'text'), col('revenue', 'numeric')];

t.test('time × category × measure: one series per category, x in time order, with a legend and axis titles', async (t) => {
  const m = cm.chartModel(LONG_COLS, [...LONG].reverse());
  t.equal(m.kind, 'line');
  t.equal(m.labels.length, 6, 'each month once (not repeated per region)');
  t.same(m.datasets.map((d: { label: string }) => d.label).sort(), ['east', 'north', 'south'], 'a series per region');
  t.same(m.datasets.find((d: { label: string }) => d.label === 'north').data, [1015, 1025, 1035, 1045, 1055, 1065], 'sorted by month, whatever the rows\' order');
  t.equal(m.xTitle, 'Month');
  t.equal(m.yTitle, 'Revenue');
  t.equal(m.seriesTitle, 'Region');
  t.match(m.labels[0], /2024/, 'a month label, without a time or a zone');
  t.notMatch(m.labels[0], /00:00|\+00/);
});

t.test('more than eight series: seven by their total, and "Other" summing the rest', async (t) => {
  const rows: Cell[][] = [];
  for (let i = 0; i < 12; i++) for (const d of ['2024-01-01', '2024-02-01']) rows.push([d, `r${i}`, i + 1]);
  const m = cm.chartModel([col('month', 'date'), col('region', 'text'), col('sales', 'integer')], rows);
  t.equal(m.datasets.length, cm.MAX_SERIES);
  const other = m.datasets.at(-1);
  t.match(other.label, /^Other/);
  t.same(other.data, [1 + 2 + 3 + 4 + 5, 1 + 2 + 3 + 4 + 5], 'the five smallest, summed');
  t.notOk(m.datasets.some((d: { label: string }) => d.label === 'r0'), 'the smallest is inside Other');
});

t.test('ids, keys and years are never measures; a raw-rows answer charts its quantity', async (t) => {
  const roles = cm.columnRoles([col('id', 'integer'), col('customer_id', 'bigint'), col('order_key', 'integer'), col('year', 'integer'), col('name', 'text'), col('score', 'numeric')],
    [[1, 10, 100, 2023, 'a', '3.5'], [2, 11, 101, 2024, 'b', '4.5']]);
  t.same(roles.map((r: { role: string }) => r.role), ['id', 'id', 'id', 'calendar', 'category', 'measure']);
  const m = cm.chartModel([col('id', 'integer'), col('name', 'text'), col('score', 'numeric')], [[1, 'a', '3'], [2, 'b', '4']]);
  t.equal(m.yTitle, 'Score', 'the id column is not drawn');
  t.same(m.datasets.map((d: { label: string }) => d.label), ['Score']);
  const years = cm.chartModel([col('year', 'integer'), col('orders', 'bigint')], [[2023, 5], [2024, 7]]);
  t.equal(years.kind, 'line', 'a year is the x of a line');
  t.equal(years.yTitle, 'Orders');
  t.same(years.labels, ['2023', '2024'], 'years as they are: no thousands separator');
});

t.test('a single value is a number card with its label', async (t) => {
  const m = cm.chartModel([col('total_revenue', 'numeric')], [['19515.2']]);
  t.equal(m.kind, 'kpi');
  t.equal(m.cards.length, 1);
  t.equal(m.cards[0].label, 'Total revenue');
  t.equal(m.cards[0].text, (19515.2).toLocaleString(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 }), 'money with two decimals');
  const labelled = cm.chartModel([col('region', 'text'), col('orders', 'bigint')], [['north', 42]]);
  t.equal(labelled.kind, 'kpi');
  t.equal(labelled.cards[0].caption, 'north', 'the row\'s category under the figure');
});

t.test('a share: a doughnut with percentages up to eight parts, else bars', async (t) => {
  const m = cm.chartModel([col('channel', 'text'), col('share', 'numeric')], [['web', 55], ['mobile', 30], ['store', 15]]);
  t.equal(m.kind, 'doughnut');
  t.ok(m.percent);
  t.same(cm.percentages(m.datasets[0].data).map((p: number) => Math.round(p)), [55, 30, 15]);
  const rows = Array.from({ length: 10 }, (_, i) => [`c${i}`, 10]);
  t.equal(cm.chartModel([col('channel', 'text'), col('pct', 'numeric')], rows).kind, 'bar', 'ten parts: bars');
  t.equal(cm.chartModel([col('region', 'text'), col('sales', 'numeric')], [['a', 120], ['b', 340]]).kind, 'bar', 'not a share: bars');
});

t.test('two text columns: no chart by itself; the number of rows when a person asks', async (t) => {
  const cols = [col('city', 'text'), col('segment', 'text')];
  const rows = [['Lyon', 'retail'], ['Lyon', 'b2b'], ['Nice', 'retail']];
  const m = cm.chartModel(cols, rows);
  t.equal(m.kind, 'none');
  t.ok(m.choices.measures.includes(cm.COUNT_ROWS), 'the number of rows is offered');
  const picked = cm.chartModel(cols, rows, { x: 0, series: 1, measure: cm.COUNT_ROWS, kind: 'bar' });
  t.equal(picked.kind, 'bar');
  t.same(picked.labels, ['Lyon', 'Nice']);
  t.same(Object.fromEntries(picked.datasets.map((d: { label: string; data: unknown[] }) => [d.label, d.data])), { retail: [1, 1], b2b: [1, null] });
  t.equal(picked.yTitle, 'Number of rows');
  const swapped = cm.chartModel(LONG_COLS, LONG, { x: 1, series: null, measure: 2, kind: 'bar' });
  t.same(swapped.labels, ['north', 'south', 'east'], 'x by region, as picked');
  t.equal(swapped.datasets.length, 1);
});

t.test('the chart\'s measure is the insights\' measure', async (t) => {
  const cases: Array<[Column[], Cell[][]]> = [
    [LONG_COLS, LONG],
    [[col('region', 'text'), col('orders', 'bigint'), col('revenue', 'numeric')], [['a', 1, '10'], ['b', 2, '20']]],
    [[col('id', 'integer'), col('name', 'text'), col('score', 'numeric')], [[1, 'a', '3'], [2, 'b', '4']]],
    [[col('region', 'text'), col('revenue', 'numeric'), col('year', 'integer')], [['a', '10', 2023], ['b', '20', 2024]]],
    [[col('month', 'date'), col('revenue', 'numeric'), col('customer_id', 'integer')], [['2024-01-01', '10', 7], ['2024-02-01', '20', 8]]],
    [[col('product_code', 'integer'), col('units', 'integer')], [[100, 3], [200, 4]]],
  ];
  for (const [columns, rows] of cases) {
    const insights = pickRoles(columns, rows).measure?.name;
    const chart = cm.chartModel(columns, rows);
    t.equal(columns[chart.measure]?.name, insights, `${columns.map((c) => c.name).join(', ')}: both use ${insights}`);
  }
  // the question names the measure: both take it; else both take the last
  const monthly: Column[] = [col('month', 'text'), col('total_revenue', 'numeric'), col('orders', 'bigint')];
  const rows: Cell[][] = [['2024-01', '100.5', 3], ['2024-02', '120.25', 4]];
  for (const [question, want] of [
    ['Monthly revenue for the last 12 months', 'total_revenue'],
    ['How many orders did we get per month?', 'orders'],
    ['', 'orders'],
    ['Umsatz pro Monat', 'orders'],
    ['Total per month', 'orders'],
  ] as const) {
    const insights = pickRoles(monthly, rows, question).measure?.name;
    const chart = cm.chartModel(monthly, rows, {}, { question });
    t.equal(insights, want, `insights for "${question}": ${want}`);
    t.equal(monthly[chart.measure]?.name, want, `the chart for "${question}": ${want}`);
  }
});

t.test('numbers for people: by type and meaning', async (t) => {
  const f = (name: string, type: string, values: unknown[]) => fmt.columnFormat({ name, type }, values);
  const n2 = (v: number) => v.toLocaleString(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  t.equal(f('revenue', 'numeric', ['19515.2']).format('19515.2'), n2(19515.2), 'money: two decimals');
  t.equal(f('amount', 'numeric', [5]).kind, 'currency');
  t.equal(f('x', 'numeric', [1]).kind, 'integer');
  t.equal(f('net', 'numeric', [1]).kind, 'integer');
  t.equal(f('customer_id', 'integer', [12345]).format(12345), '12345', 'an id without a thousands separator');
  t.equal(f('year', 'integer', [2024]).format(2024), '2024');
  t.equal(f('qty', 'integer', [12345]).format(12345), (12345).toLocaleString());
  const avg = f('avg_basket', 'numeric', ['3.5', '2.25', '4']);
  t.same([avg.format('3.5'), avg.format('4')], [(3.5).toLocaleString(undefined, { minimumFractionDigits: 2 }), (4).toLocaleString(undefined, { minimumFractionDigits: 2 })], 'the same decimals on every row');
  t.equal(f('conversion_rate', 'numeric', [0.123, 0.5]).format(0.123), `${(12.3).toLocaleString(undefined, { minimumFractionDigits: 1 })} %`, 'a rate within 0–1 is a fraction');
  t.equal(f('pct_returned', 'numeric', [12.5]).format(12.5), `${(12.5).toLocaleString(undefined, { minimumFractionDigits: 1 })} %`);
  t.equal(fmt.columnFormat({ name: 'x', type: 'numeric', format: 'currency' }, ['3']).kind, 'currency', 'the semantic layer\'s format_type wins');
  t.equal(fmt.columnFormat({ name: 'revenue', type: 'numeric', format: 'percentage' }, [0.5]).kind, 'percent');
  const ts = f('created_at', 'timestamptz', ['2024-03-05 10:11:12+00']).format('2024-03-05 10:11:12+00');
  t.notMatch(ts, /\+00|T10/, `a timestamp in the browser's locale (${ts})`);
  t.equal(f('day', 'date', ['2024-03-01']).format('2024-03-01'), new Date(Date.UTC(2024, 2, 1)).toLocaleDateString(undefined, { timeZone: 'UTC' }), 'a date stays on its day');
  t.equal(f('zip', 'text', ['01234']).format('01234'), '01234', 'a text column of digits stays text');
  t.same(['total_revenue', 'orderCount', 'customer_id', 'REGION_NAME'].map(fmt.humanizeName), ['Total revenue', 'Order count', 'Customer ID', 'Region name']);
  t.equal(fmt.columnLabel({ name: 'rev', label: 'Net revenue' }), 'Net revenue', 'a display name from the reply wins');
});

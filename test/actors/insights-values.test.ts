/**
 * The order statistics and decimal comparison the insights run on every question: their fast
 * paths (same-scale comparison without subtraction; typed-array sorting without iterators) give
 * exactly what the plain definitions give.
 */
import t from 'tap';
import { median, sorted } from '../../actors/insights/stats.js';
import { addDecimal, compareDecimal, parseDecimal, type Decimal } from '../../actors/insights/values.js';

/** the definition: the sign of a − b, computed by exact subtraction */
function signOfDifference(a: Decimal, b: Decimal): number {
  const d = addDecimal(a, { units: -b.units, scale: b.scale }).units;
  return d > 0n ? 1 : d < 0n ? -1 : 0;
}

t.test('compareDecimal agrees with exact subtraction, at equal and at different scales', async (t) => {
  const texts = ['0', '-0', '0.0', '1', '1.0', '1.00', '-1', '-1.5', '1.5', '1.25', '1.250', '12345678901234567890.1', '12345678901234567890.10', '12345678901234567890.2', '-12345678901234567890.1', '0.001', '-0.001', '1e3', '1000', '999.999', '3.5e-2', '0.035'];
  const ds = texts.map((s) => parseDecimal(s)!);
  t.ok(ds.every((d) => d !== null), 'every text parses');
  let pairs = 0;
  for (const a of ds) for (const b of ds) {
    t.equal(compareDecimal(a, b), signOfDifference(a, b), `${a.units}e-${a.scale} vs ${b.units}e-${b.scale}`);
    pairs++;
  }
  t.equal(pairs, texts.length ** 2);
  t.equal(compareDecimal(parseDecimal('1.0')!, parseDecimal('1.00')!), 0, 'equal values at different scales');
  t.equal(compareDecimal(parseDecimal('2.5')!, parseDecimal('2.4')!), 1);
  t.equal(compareDecimal(parseDecimal('-2.5')!, parseDecimal('-2.4')!), -1);
});

t.test('sorted and median order numbers as numbers, like a Float64Array sort', async (t) => {
  const reference = (xs: number[]) => Array.from(Float64Array.from(xs).sort());
  const cases: number[][] = [[], [1], [10, 9, 1, 100, 2], [3, -0, 0, -1, 1e-300, -Infinity, Infinity], [NaN, 2, NaN, 1], [0.1 + 0.2, 0.3, 0.30000000000000004]];
  let seed = 7;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let n = 0; n < 20; n++) cases.push(Array.from({ length: 1 + Math.floor(rand() * 40) }, () => Math.round((rand() - 0.5) * 1000) / 10));
  for (const xs of cases) {
    const copy = [...xs];
    const s = sorted(xs);
    t.same(s.map(String), reference(xs).map(String), `sorted ${JSON.stringify(xs.map(String))}`);
    t.ok(Array.isArray(s), 'a plain array');
    t.same(xs.map(String), copy.map(String), 'the input is left as it was');
  }
  t.ok(Object.is(sorted([0, -0])[0], -0), '-0 before 0');
  t.equal(median([5, 1, 4, 2, 3]), 3);
  t.equal(median([10, 1, 7, 2]), 4.5);
  t.ok(Number.isNaN(median([])), 'no values: NaN');
});

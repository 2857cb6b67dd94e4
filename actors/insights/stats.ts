/**
 * Small statistics for the insights, written once here as pure, deterministic functions over
 * plain numbers: medians and the median absolute deviation (robust outliers), the Mann-Kendall
 * trend test with Sen's slope (trend significance and effect size), Pearson and Spearman
 * correlation with their p-values, and the distributions behind the p-values.
 *
 * Every function works in O(n log n) or better except `senSlope` up to SEN_FULL_MAX points
 * (all pairs); past that it uses Theil's incomplete method (pairs half a series apart), so a
 * result of many rows stays fast.
 */

// ---------------------------------------------------------------------------------------------
// Order statistics

/** Ascending copy (numbers compared as numbers, not as text). */
export function sorted(values: readonly number[]): number[] {
  const s = sortedFloats(values);
  const out = new Array<number>(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s[i]!;
  return out;
}

/** The same order in a typed array (no iterator on the way in or out: this runs per question). */
function sortedFloats(values: readonly number[]): Float64Array {
  const s = new Float64Array(values.length);
  for (let i = 0; i < values.length; i++) s[i] = values[i]!;
  return s.sort();
}

/** The median of already-sorted values; NaN when empty. */
export function medianOfSorted(s: ArrayLike<number>): number {
  const n = s.length;
  if (n === 0) return Number.NaN;
  const mid = n >> 1;
  return n % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export function median(values: readonly number[]): number {
  return medianOfSorted(sortedFloats(values));
}

/** Scales the MAD to a standard deviation for normal data (1 / Φ⁻¹(3/4)). */
export const MAD_TO_SIGMA = 1.482602218505602;

export interface RobustScores {
  median: number;
  /** median absolute deviation from the median (unscaled) */
  mad: number;
  /** per value: (x − median) / (MAD × 1.4826), the modified z-score of Iglewicz and Hoaglin */
  scores: number[];
}

/**
 * Robust z-scores, or null when they mean nothing: fewer than `minPoints` values, or a MAD of 0
 * (more than half the values are equal, so any other value would look infinitely far).
 */
export function robustScores(values: readonly number[], minPoints: number): RobustScores | null {
  if (values.length < Math.max(minPoints, 3)) return null;
  const med = median(values);
  const mad = median(values.map((v) => Math.abs(v - med)));
  if (!(mad > 1e-12 * Math.max(1, Math.abs(med)))) return null;
  const sigma = mad * MAD_TO_SIGMA;
  return { median: med, mad, scores: values.map((v) => (v - med) / sigma) };
}

/**
 * Ranks from 1, ties given the average of the ranks they span (what Spearman needs).
 */
export function ranks(values: readonly number[]): number[] {
  const order = values.map((_, i) => i).sort((a, b) => values[a]! - values[b]!);
  const out = new Array<number>(values.length);
  let i = 0;
  while (i < order.length) {
    let j = i;
    while (j + 1 < order.length && values[order[j + 1]!] === values[order[i]!]) j++;
    const rank = (i + j) / 2 + 1;
    for (let k = i; k <= j; k++) out[order[k]!] = rank;
    i = j + 1;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Trend: Mann-Kendall and Sen's slope

export interface MannKendall {
  n: number;
  /** Σ sign(y_j − y_i) over i < j: concordant minus discordant pairs */
  s: number;
  /** Kendall's tau-a, s over the number of pairs: −1 … 1 */
  tau: number;
  /** two-sided p-value: exact when there are no ties and n ≤ MK_EXACT_MAX, else normal with tie correction */
  p: number;
  exact: boolean;
}

/** Up to this many points without ties, the p-value comes from the exact distribution. */
export const MK_EXACT_MAX = 60;

/**
 * The Mann-Kendall test of a monotonic trend in values taken in time order. Null below 3 points
 * (no pair of pairs to compare).
 */
export function mannKendall(ys: readonly number[]): MannKendall | null {
  const n = ys.length;
  if (n < 3) return null;
  const s = kendallS(ys);
  const pairs = (n * (n - 1)) / 2;
  const ties = tieGroups(ys);
  let p: number;
  let exact = false;
  if (ties.length === 0 && n <= MK_EXACT_MAX) {
    p = exactKendallP(n, s);
    exact = true;
  } else {
    let variance = n * (n - 1) * (2 * n + 5);
    for (const t of ties) variance -= t * (t - 1) * (2 * t + 5);
    variance /= 18;
    if (variance <= 0) p = 1;
    else {
      // continuity correction: S moves in steps of 2
      const z = s === 0 ? 0 : (s - Math.sign(s)) / Math.sqrt(variance);
      p = normalTwoSided(z);
    }
  }
  return { n, s, tau: s / pairs, p: Math.min(1, p), exact };
}

/** Sizes of the groups of equal values (only groups of 2 or more). */
function tieGroups(values: readonly number[]): number[] {
  const s = sorted(values);
  const out: number[] = [];
  let run = 1;
  for (let i = 1; i <= s.length; i++) {
    if (i < s.length && s[i] === s[i - 1]) run++;
    else {
      if (run > 1) out.push(run);
      run = 1;
    }
  }
  return out;
}

/** Σ_{i<j} sign(y_j − y_i) in O(n log n): a Fenwick tree over the ranks of the values seen so far. */
function kendallS(ys: readonly number[]): number {
  const distinct = [...new Set(sorted(ys))];
  const rankOf = new Map(distinct.map((v, i) => [v, i + 1]));
  const tree = new Float64Array(distinct.length + 1);
  const add = (i: number): void => {
    for (; i < tree.length; i += i & -i) tree[i]! += 1;
  };
  const count = (i: number): number => {
    let c = 0;
    for (; i > 0; i -= i & -i) c += tree[i]!;
    return c;
  };
  let s = 0;
  ys.forEach((y, j) => {
    const r = rankOf.get(y)!;
    const below = count(r - 1);
    const atOrBelow = count(r);
    s += below - (j - atOrBelow);
    add(r);
  });
  return s;
}

/**
 * P(|S| ≥ |s|) for n values without ties, from the distribution of the number of inversions of a
 * random permutation (S = pairs − 2·inversions), built one element at a time as probabilities.
 */
function exactKendallP(n: number, s: number): number {
  const pairs = (n * (n - 1)) / 2;
  let dist = new Float64Array([1]);
  for (let i = 2; i <= n; i++) {
    // adding the i-th element adds 0 … i−1 inversions, each with probability 1/i
    const next = new Float64Array(dist.length + i - 1);
    let window = 0;
    for (let k = 0; k < next.length; k++) {
      if (k < dist.length) window += dist[k]!;
      if (k - i >= 0 && k - i < dist.length) window -= dist[k - i]!;
      next[k] = window / i;
    }
    dist = next;
  }
  // |S| ≥ |s| ⇔ inversions ≤ (pairs − |s|)/2 or ≥ (pairs + |s|)/2; the distribution is symmetric
  const limit = Math.floor((pairs - Math.abs(s)) / 2 + 1e-9);
  let tail = 0;
  for (let k = 0; k <= limit; k++) tail += dist[k]!;
  return Math.min(1, 2 * tail);
}

export interface Line {
  slope: number;
  /** the value of the line at x = 0 */
  intercept: number;
}

/** Past this many points Sen's slope is estimated from n/2 pairs instead of all n(n−1)/2. */
export const SEN_FULL_MAX = 1500;

/**
 * Sen's slope (the Theil-Sen estimator): the median of the slopes between pairs of points, and
 * the median of y − slope·x as the intercept. Robust to a few wild points. Null below 2 points
 * or when every x is the same.
 */
export function senSlope(xs: readonly number[], ys: readonly number[]): Line | null {
  const n = xs.length;
  if (n < 2) return null;
  const slopes: number[] = [];
  if (n <= SEN_FULL_MAX) {
    for (let i = 0; i < n; i++) {
      for (let j = i + 1; j < n; j++) {
        const dx = xs[j]! - xs[i]!;
        if (dx !== 0) slopes.push((ys[j]! - ys[i]!) / dx);
      }
    }
  } else {
    // Theil's incomplete method: each point against the one half a series later (xs ascending)
    const half = n >> 1;
    for (let i = 0; i + half < n; i++) {
      const dx = xs[i + half]! - xs[i]!;
      if (dx !== 0) slopes.push((ys[i + half]! - ys[i]!) / dx);
    }
  }
  if (slopes.length === 0) return null;
  const slope = median(slopes);
  const intercept = median(ys.map((y, i) => y - slope * xs[i]!));
  return { slope, intercept };
}

// ---------------------------------------------------------------------------------------------
// Correlation

export interface Correlation {
  n: number;
  /** Pearson's r (linear) */
  pearson: number;
  pearsonP: number;
  /** Spearman's rho (monotonic, on ranks: robust to outliers) */
  spearman: number;
  spearmanP: number;
}

/**
 * Pearson and Spearman correlation of paired values, with two-sided p-values from Student's t
 * with n − 2 degrees of freedom. Null below `minPoints` pairs or when either side is constant.
 */
export function correlation(xs: readonly number[], ys: readonly number[], minPoints: number): Correlation | null {
  const n = Math.min(xs.length, ys.length);
  if (n < Math.max(minPoints, 3)) return null;
  const r = pearson(xs, ys);
  if (r === null) return null;
  const rho = pearson(ranks(xs), ranks(ys));
  if (rho === null) return null;
  return { n, pearson: r, pearsonP: correlationP(r, n), spearman: rho, spearmanP: correlationP(rho, n) };
}

/** Pearson's r, or null when either side has no spread. */
export function pearson(xs: readonly number[], ys: readonly number[]): number | null {
  const n = Math.min(xs.length, ys.length);
  if (n < 2) return null;
  let mx = 0;
  let my = 0;
  for (let i = 0; i < n; i++) {
    mx += xs[i]!;
    my += ys[i]!;
  }
  mx /= n;
  my /= n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    const dx = xs[i]! - mx;
    const dy = ys[i]! - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  if (!(sxx > 0) || !(syy > 0)) return null;
  const r = sxy / Math.sqrt(sxx * syy);
  return Math.max(-1, Math.min(1, r));
}

/** Two-sided p-value of a correlation coefficient r over n pairs (t = r·√((n−2)/(1−r²))). */
export function correlationP(r: number, n: number): number {
  const df = n - 2;
  if (df < 1) return 1;
  if (Math.abs(r) >= 1) return 0;
  const t = r * Math.sqrt(df / (1 - r * r));
  return studentTwoSided(t, df);
}

// ---------------------------------------------------------------------------------------------
// Distributions

/** P(|Z| ≥ |z|) for a standard normal Z. */
export function normalTwoSided(z: number): number {
  return Math.min(1, erfc(Math.abs(z) / Math.SQRT2));
}

/**
 * The complementary error function, from its Chebyshev fit (fractional error below 1.2e-7
 * everywhere): enough for p-values shown with two significant digits.
 */
function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const poly =
    -z * z - 1.26551223 +
    t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  const r = t * Math.exp(poly);
  return x >= 0 ? r : 2 - r;
}

/** P(|T| ≥ |t|) for Student's t with df degrees of freedom: I_{df/(df+t²)}(df/2, 1/2). */
export function studentTwoSided(t: number, df: number): number {
  if (!Number.isFinite(t)) return 0;
  return Math.min(1, regularizedBeta(df / (df + t * t), df / 2, 0.5));
}

/** ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms). */
function logGamma(x: number): number {
  const c = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  const y = x - 1;
  let a = c[0]!;
  const g = y + 7.5;
  for (let i = 1; i < 9; i++) a += c[i]! / (y + i);
  return 0.5 * Math.log(2 * Math.PI) + (y + 0.5) * Math.log(g) - g + Math.log(a);
}

/** The regularized incomplete beta function I_x(a, b), by its continued fraction (modified Lentz). */
export function regularizedBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log(1 - x));
  // the fraction converges fast for x < (a+1)/(a+b+2); use the symmetry I_x(a,b) = 1 − I_{1−x}(b,a) otherwise
  if (x > (a + 1) / (a + b + 2)) return 1 - (front * betaFraction(1 - x, b, a)) / b;
  return (front * betaFraction(x, a, b)) / a;
}

function betaFraction(x: number, a: number, b: number): number {
  const tiny = 1e-300;
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  if (Math.abs(d) < tiny) d = tiny;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 300; m++) {
    const m2 = 2 * m;
    // even step
    let num = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 + num * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + num / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    // odd step
    num = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 + num * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + num / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const step = d * c;
    h *= step;
    if (Math.abs(step - 1) < 1e-12) break;
  }
  return h;
}

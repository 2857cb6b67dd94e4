/**
 * The embedded demo database's content: a small coffee chain (stores, products, customers,
 * two years of orders and their lines), generated from a fixed seed and a fixed end date, so
 * every install and every test sees the same rows. No Math.random, no clock.
 *
 * Patterns worth asking about: a growth trend (+35% over the two years, plus two stores that
 * open during it), weekday and monthly seasonality, holiday dips, morning rush hours, a mobile
 * channel that gains share, iced drinks in summer, a pumpkin latte only in autumn, a gift box
 * in November and December, Nitro Cold Brew launched on 2025-05-01, a price rise on
 * 2026-01-15 (order_lines keep the price paid), regular customers who order far more than
 * others, and loyalty tiers that follow the last twelve months' spend.
 *
 * Money is handled in integer cents and written as numeric(…, 2), so orders.total is exactly
 * the sum of its lines' line_total.
 */
import type { PGlite } from '@electric-sql/pglite';

/** Bump when the schema or the generator changes: an older database is rebuilt at start. */
export const DEMO_DATA_VERSION = 1;
export const DEMO_SEED = 0xc0ffee;
/** The last day with orders (inclusive). */
export const DEMO_END_DATE = '2026-10-31';
export const DEMO_DAYS = 730;

export interface DemoOptions {
  seed?: number;
  /** YYYY-MM-DD, the last day with orders */
  endDate?: string;
  days?: number;
  /** about how many orders to generate in all */
  targetOrders?: number;
  customers?: number;
}

export const Channel = { InStore: 'in_store', Mobile: 'mobile', Delivery: 'delivery' } as const;
export type Channel = (typeof Channel)[keyof typeof Channel];

export const LoyaltyTier = { Bronze: 'bronze', Silver: 'silver', Gold: 'gold' } as const;
export type LoyaltyTier = (typeof LoyaltyTier)[keyof typeof LoyaltyTier];

export interface StoreRow {
  id: number;
  name: string;
  city: string;
  region: string;
  opened_on: string;
}

export interface ProductRow {
  id: number;
  name: string;
  category: string;
  /** the current price */
  unit_price_cents: number;
}

export interface CustomerRow {
  id: number;
  first_name: string;
  last_name: string;
  email: string;
  city: string;
  joined_on: string;
  loyalty_tier: LoyaltyTier;
}

export interface OrderRow {
  id: number;
  store_id: number;
  customer_id: number | null;
  /** ISO 8601, UTC, whole seconds */
  ordered_at: string;
  channel: Channel;
  total_cents: number;
}

export interface OrderLineRow {
  id: number;
  order_id: number;
  product_id: number;
  quantity: number;
  unit_price_cents: number;
  line_total_cents: number;
}

export interface DemoData {
  /** what it was generated from (recorded with the data) */
  params: { seed: number; endDate: string; days: number };
  stores: StoreRow[];
  products: ProductRow[];
  customers: CustomerRow[];
  orders: OrderRow[];
  orderLines: OrderLineRow[];
}

export interface DemoCounts {
  stores: number;
  products: number;
  customers: number;
  orders: number;
  order_lines: number;
}

// ---- randomness -----------------------------------------------------------------------------

/** mulberry32: a small, fast, seedable 32-bit PRNG; returns floats in [0, 1). */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Rng {
  readonly next: () => number;

  /** `stream` separates the draws of each part, so changing one part does not shift the others. */
  constructor(seed: number, stream: number) {
    this.next = mulberry32((seed ^ Math.imul(stream + 1, 0x9e3779b1)) >>> 0);
  }

  /** an integer in [lo, hi] */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** an index drawn by weight (weights need not sum to 1; at least one must be > 0) */
  weighted(weights: readonly number[]): number {
    let total = 0;
    for (const w of weights) total += w;
    let r = this.next() * total;
    for (let i = 0; i < weights.length; i++) {
      r -= weights[i] as number;
      if (r < 0) return i;
    }
    // rounding: the last positive weight
    for (let i = weights.length - 1; i >= 0; i--) if ((weights[i] as number) > 0) return i;
    return 0;
  }

  /** Knuth's method; fine for the small means used here */
  poisson(lambda: number): number {
    const limit = Math.exp(-lambda);
    let k = 0;
    let p = this.next();
    while (p > limit) {
      k++;
      p *= this.next();
    }
    return k;
  }
}

// ---- dates ----------------------------------------------------------------------------------

const DAY_MS = 86_400_000;

function parseDay(ymd: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(ymd);
  if (!m) throw new Error(`not a YYYY-MM-DD date: ${ymd}`);
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  if (new Date(ms).toISOString().slice(0, 10) !== ymd) throw new Error(`not a calendar date: ${ymd}`);
  return ms;
}

function ymd(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

// ---- the fixed parts ------------------------------------------------------------------------

interface StoreSpec {
  name: string;
  city: string;
  region: string;
  opened_on: string;
  /** relative traffic */
  size: number;
  delivery: boolean;
}

const STORES: readonly StoreSpec[] = [
  { name: 'Downtown Roastery', city: 'Seattle', region: 'West', opened_on: '2019-03-15', size: 1.6, delivery: true },
  { name: 'Pike Street Espresso Bar', city: 'Seattle', region: 'West', opened_on: '2020-06-01', size: 1.2, delivery: true },
  { name: 'Pearl District Café', city: 'Portland', region: 'West', opened_on: '2021-04-10', size: 1.0, delivery: true },
  { name: 'Mission Street Coffee', city: 'San Francisco', region: 'West', opened_on: '2020-09-19', size: 1.3, delivery: true },
  { name: 'Union Station Kiosk', city: 'Chicago', region: 'Midwest', opened_on: '2022-02-01', size: 0.7, delivery: false },
  { name: 'Lakeview Roasters', city: 'Chicago', region: 'Midwest', opened_on: '2021-08-14', size: 1.1, delivery: true },
  { name: 'North Loop Café', city: 'Minneapolis', region: 'Midwest', opened_on: '2023-05-06', size: 0.8, delivery: true },
  { name: 'Back Bay Coffee House', city: 'Boston', region: 'Northeast', opened_on: '2019-11-02', size: 1.2, delivery: true },
  { name: 'Williamsburg Brew Lab', city: 'New York', region: 'Northeast', opened_on: '2022-10-08', size: 1.4, delivery: true },
  { name: 'Midtown Express', city: 'New York', region: 'Northeast', opened_on: '2025-03-01', size: 1.0, delivery: false },
  { name: 'South Congress Café', city: 'Austin', region: 'South', opened_on: '2023-09-16', size: 0.9, delivery: true },
  { name: 'Ponce City Coffee', city: 'Atlanta', region: 'South', opened_on: '2025-09-13', size: 0.8, delivery: true },
];

const Category = {
  Espresso: 'Espresso drinks',
  Brewed: 'Brewed coffee',
  Tea: 'Tea',
  Pastry: 'Pastry',
  Beans: 'Beans',
  Merch: 'Merch',
} as const;
type Category = (typeof Category)[keyof typeof Category];
const CATEGORIES: readonly Category[] = Object.values(Category);

/** How a product sells through the year: a factor per month (0 = not on sale). */
type Season = 'all' | 'iced' | 'warm' | 'autumn' | 'holiday';
const SEASONS: Record<Season, readonly number[]> = {
  //      Jan  Feb  Mar  Apr  May  Jun  Jul  Aug  Sep  Oct  Nov  Dec
  all: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
  iced: [0.3, 0.3, 0.5, 0.8, 1.5, 2.6, 3.0, 2.8, 1.6, 0.8, 0.4, 0.3],
  warm: [1.4, 1.4, 1.2, 1.0, 0.8, 0.6, 0.6, 0.6, 0.9, 1.1, 1.3, 1.5],
  autumn: [0, 0, 0, 0, 0, 0, 0, 0, 1.6, 2.0, 1.6, 0],
  holiday: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 4],
};

interface ProductSpec {
  name: string;
  category: Category;
  /** current price, cents */
  price: number;
  popularity: number;
  season: Season;
  /** on sale from this day on */
  launched_on?: string;
}

const PRODUCTS: readonly ProductSpec[] = [
  { name: 'Espresso', category: Category.Espresso, price: 300, popularity: 0.6, season: 'all' },
  { name: 'Americano', category: Category.Espresso, price: 350, popularity: 1.2, season: 'warm' },
  { name: 'Cappuccino', category: Category.Espresso, price: 450, popularity: 1.3, season: 'warm' },
  { name: 'Caffè Latte', category: Category.Espresso, price: 475, popularity: 2.0, season: 'all' },
  { name: 'Flat White', category: Category.Espresso, price: 475, popularity: 1.1, season: 'all' },
  { name: 'Cortado', category: Category.Espresso, price: 425, popularity: 0.8, season: 'all' },
  { name: 'Mocha', category: Category.Espresso, price: 525, popularity: 0.8, season: 'warm' },
  { name: 'Caramel Macchiato', category: Category.Espresso, price: 550, popularity: 0.9, season: 'all' },
  { name: 'Iced Latte', category: Category.Espresso, price: 500, popularity: 0.8, season: 'iced' },
  { name: 'Pumpkin Spice Latte', category: Category.Espresso, price: 595, popularity: 1.0, season: 'autumn' },
  { name: 'House Drip Coffee', category: Category.Brewed, price: 275, popularity: 2.0, season: 'warm' },
  { name: 'Single-Origin Pour-Over', category: Category.Brewed, price: 450, popularity: 0.6, season: 'all' },
  { name: 'Cold Brew', category: Category.Brewed, price: 425, popularity: 0.9, season: 'iced' },
  { name: 'Nitro Cold Brew', category: Category.Brewed, price: 495, popularity: 0.7, season: 'iced', launched_on: '2025-05-01' },
  { name: 'Chai Latte', category: Category.Tea, price: 475, popularity: 1.3, season: 'warm' },
  { name: 'Matcha Latte', category: Category.Tea, price: 525, popularity: 1.1, season: 'all' },
  { name: 'Earl Grey Tea', category: Category.Tea, price: 300, popularity: 0.6, season: 'warm' },
  { name: 'Iced Green Tea', category: Category.Tea, price: 325, popularity: 0.5, season: 'iced' },
  { name: 'Butter Croissant', category: Category.Pastry, price: 350, popularity: 1.6, season: 'all' },
  { name: 'Almond Croissant', category: Category.Pastry, price: 425, popularity: 1.0, season: 'all' },
  { name: 'Blueberry Muffin', category: Category.Pastry, price: 375, popularity: 1.0, season: 'all' },
  { name: 'Cinnamon Roll', category: Category.Pastry, price: 425, popularity: 0.9, season: 'warm' },
  { name: 'Banana Bread', category: Category.Pastry, price: 395, popularity: 0.7, season: 'all' },
  { name: 'Breakfast Sandwich', category: Category.Pastry, price: 650, popularity: 1.2, season: 'all' },
  { name: 'House Blend Beans 12oz', category: Category.Beans, price: 1495, popularity: 1.5, season: 'all' },
  { name: 'Ethiopia Yirgacheffe Beans 12oz', category: Category.Beans, price: 1850, popularity: 0.8, season: 'all' },
  { name: 'Decaf Colombia Beans 12oz', category: Category.Beans, price: 1595, popularity: 0.5, season: 'all' },
  { name: 'Ceramic Mug', category: Category.Merch, price: 1600, popularity: 1.0, season: 'all' },
  { name: 'Travel Tumbler', category: Category.Merch, price: 2800, popularity: 0.8, season: 'all' },
  { name: 'Holiday Gift Box', category: Category.Merch, price: 3900, popularity: 1.2, season: 'holiday' },
];

/** Drinks and pastries cost about 6% less before this day; beans and merch did not change. */
const PRICE_RISE_ON = '2026-01-15';

const FIRST_NAMES = [
  'Olivia', 'Liam', 'Emma', 'Noah', 'Ava', 'Elijah', 'Sophia', 'James', 'Isabella', 'William',
  'Mia', 'Benjamin', 'Charlotte', 'Lucas', 'Amelia', 'Henry', 'Harper', 'Alexander', 'Evelyn', 'Mateo',
  'Abigail', 'Daniel', 'Emily', 'Michael', 'Ella', 'Sebastian', 'Elizabeth', 'Jack', 'Sofia', 'Owen',
  'Avery', 'Samuel', 'Scarlett', 'Wyatt', 'Grace', 'Leo', 'Chloe', 'Jayden', 'Aria', 'Luke',
  'Priya', 'Wei', 'Fatima', 'Diego', 'Yuki', 'Omar', 'Aaliyah', 'Hiroshi', 'Camila', 'Arjun',
  'Zoe', 'Nora', 'Ethan', 'Maya', 'Gabriel', 'Lena', 'Ruth', 'Isaac', 'Hannah', 'Julian',
];

const LAST_NAMES = [
  'Smith', 'Johnson', 'Williams', 'Brown', 'Jones', 'Garcia', 'Miller', 'Davis', 'Rodriguez', 'Martinez',
  'Hernandez', 'Lopez', 'Gonzalez', 'Wilson', 'Anderson', 'Thomas', 'Taylor', 'Moore', 'Jackson', 'Martin',
  'Lee', 'Perez', 'Thompson', 'White', 'Harris', 'Sanchez', 'Clark', 'Ramirez', 'Lewis', 'Robinson',
  'Walker', 'Young', 'Allen', 'King', 'Wright', 'Scott', 'Torres', 'Nguyen', 'Hill', 'Flores',
  'Green', 'Adams', 'Nelson', 'Baker', 'Hall', 'Rivera', 'Campbell', "O'Brien", 'Kim', 'Patel',
  'Chen', 'Wang', 'Singh', 'Kowalski', 'Novak', 'Rossi', 'Müller', 'Dubois', 'Tanaka', 'Cohen',
];

const EMAIL_DOMAINS = ['example.com', 'example.org', 'example.net'];

/** When the loyalty programme started (the first customers joined then). */
const PROGRAMME_START = '2021-01-04';

//                       Sun   Mon   Tue   Wed   Thu   Fri   Sat
const WEEKDAY = [0.88, 0.94, 0.96, 1.0, 1.02, 1.1, 1.2];
//                       Jan   Feb   Mar   Apr   May   Jun   Jul   Aug   Sep   Oct   Nov   Dec
const MONTH = [0.92, 0.9, 0.95, 0.98, 1.0, 0.96, 0.9, 0.88, 1.02, 1.05, 1.08, 1.16];

/** Days the shops open late or close early: month-day → factor. */
const HOLIDAYS: Record<string, number> = { '12-24': 0.7, '12-25': 0.25, '12-31': 0.75, '01-01': 0.55, '07-04': 0.7 };

/** Opening hours 06:00–19:59; weights per hour. */
const HOURS = [6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19];
const HOUR_WEEKDAY = [0.7, 1.6, 1.9, 1.4, 1.0, 0.9, 1.1, 0.9, 0.75, 0.75, 0.6, 0.5, 0.35, 0.2];
const HOUR_WEEKEND = [0.2, 0.5, 0.9, 1.3, 1.5, 1.4, 1.2, 1.0, 0.9, 0.8, 0.6, 0.45, 0.3, 0.2];
const HOUR_DELIVERY = [0, 0, 0.3, 0.6, 0.9, 1.2, 1.5, 1.2, 0.9, 0.8, 0.8, 0.9, 0.8, 0.5];

// ---- the generator --------------------------------------------------------------------------

interface Pool {
  /** customer ids in join order */
  ids: number[];
  /** the day index (from the start of the orders) each joined */
  joinedDay: number[];
  /** cumulative activity weights */
  cum: number[];
}

function emptyPool(): Pool {
  return { ids: [], joinedDay: [], cum: [] };
}

function addToPool(pool: Pool, id: number, joinedDay: number, weight: number): void {
  pool.ids.push(id);
  pool.joinedDay.push(joinedDay);
  pool.cum.push((pool.cum[pool.cum.length - 1] ?? 0) + weight);
}

/** how many entries of a sorted array are <= x */
function countAtMost(sorted: readonly number[], x: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((sorted[mid] as number) <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** a customer who had joined by `day`, drawn by activity; null when none had */
function drawCustomer(pool: Pool, day: number, rng: Rng): number | null {
  const n = countAtMost(pool.joinedDay, day);
  if (n === 0) return null;
  const r = rng.next() * (pool.cum[n - 1] as number);
  // first index whose cumulative weight exceeds r
  let lo = 0;
  let hi = n - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((pool.cum[mid] as number) > r) hi = mid;
    else lo = mid + 1;
  }
  return pool.ids[lo] as number;
}

function asciiLower(s: string): string {
  return s.normalize('NFD').replace(/[^A-Za-z]/g, '').toLowerCase();
}

/** Generate the whole dataset. Pure: the same options give the same rows. */
export function generateDemoData(options: DemoOptions = {}): DemoData {
  const seed = options.seed ?? DEMO_SEED;
  const days = options.days ?? DEMO_DAYS;
  const targetOrders = options.targetOrders ?? 40_000;
  const customerCount = options.customers ?? 2_000;
  const endMs = parseDay(options.endDate ?? DEMO_END_DATE);
  const startMs = endMs - (days - 1) * DAY_MS;
  const dayOf = (ms: number): number => Math.floor((ms - startMs) / DAY_MS);

  // stores and products: fixed
  const stores: StoreRow[] = STORES.map((s, i) => ({ id: i + 1, name: s.name, city: s.city, region: s.region, opened_on: s.opened_on }));
  const storeOpenDay = STORES.map((s) => dayOf(parseDay(s.opened_on)));
  const priceRiseDay = dayOf(parseDay(PRICE_RISE_ON));
  const products: ProductRow[] = PRODUCTS.map((p, i) => ({ id: i + 1, name: p.name, category: p.category, unit_price_cents: p.price }));
  const oldPrice = PRODUCTS.map((p) =>
    p.category === Category.Beans || p.category === Category.Merch ? p.price : p.price - Math.round((p.price * 0.06) / 5) * 5,
  );
  const launchDay = PRODUCTS.map((p) => (p.launched_on ? dayOf(parseDay(p.launched_on)) : -Infinity));
  const productsBy = new Map<Category, number[]>(CATEGORIES.map((c) => [c, []]));
  PRODUCTS.forEach((p, i) => productsBy.get(p.category)?.push(i));

  // customers: drawn, then numbered in the order they joined
  const cRng = new Rng(seed, 1);
  const programmeDay = dayOf(parseDay(PROGRAMME_START));
  const drafts: Array<{ first: string; last: string; domain: string; store: number; joinedDay: number; weight: number; seq: number }> = [];
  for (let i = 0; i < customerCount; i++) {
    // a third joined before the two years; the rest at a rate that grows with the chain
    const joinedDay = cRng.chance(0.32)
      ? cRng.int(Math.min(programmeDay, -1), -1)
      : Math.min(days - 1, Math.floor(Math.sqrt(cRng.next()) * days));
    const open = STORES.map((s, k) => (storeOpenDay[k] as number) <= joinedDay ? s.size : 0);
    drafts.push({
      first: cRng.pick(FIRST_NAMES),
      last: cRng.pick(LAST_NAMES),
      domain: cRng.pick(EMAIL_DOMAINS),
      store: cRng.weighted(open),
      joinedDay,
      // a few regulars order far more often than most
      weight: 1 / (cRng.next() + 0.05),
      seq: i,
    });
  }
  drafts.sort((a, b) => a.joinedDay - b.joinedDay || a.seq - b.seq);
  const storePools = STORES.map(() => emptyPool());
  const allPool = emptyPool();
  const customers: CustomerRow[] = drafts.map((d, i) => {
    const id = i + 1;
    addToPool(storePools[d.store] as Pool, id, d.joinedDay, d.weight);
    addToPool(allPool, id, d.joinedDay, d.weight);
    // most live in their home store's city
    const city = cRng.chance(0.88) ? (STORES[d.store] as StoreSpec).city : cRng.pick(STORES).city;
    return {
      id,
      first_name: d.first,
      last_name: d.last,
      email: `${asciiLower(d.first)}.${asciiLower(d.last)}${id}@${d.domain}`,
      city,
      joined_on: ymd(startMs + d.joinedDay * DAY_MS),
      loyalty_tier: LoyaltyTier.Bronze, // set from spend below
    };
  });

  // the daily demand, without noise, to scale to targetOrders
  const dayFactor: number[] = [];
  const storeFactor: number[][] = [];
  let expected = 0;
  for (let d = 0; d < days; d++) {
    const date = new Date(startMs + d * DAY_MS);
    const md = ymd(date.getTime()).slice(5);
    const f = (1 + 0.35 * (d / Math.max(1, days - 1))) * (WEEKDAY[date.getUTCDay()] as number) * (MONTH[date.getUTCMonth()] as number) * (HOLIDAYS[md] ?? 1);
    dayFactor.push(f);
    const sf = STORES.map((s, k) => {
      const open = d - (storeOpenDay[k] as number);
      if (open < 0) return 0;
      return s.size * Math.min(1, 0.45 + 0.55 * (open / 90)); // a new store builds up over ~3 months
    });
    storeFactor.push(sf);
    for (const x of sf) expected += f * x;
  }
  const base = targetOrders / expected;

  // orders and lines
  const oRng = new Rng(seed, 2);
  const orders: OrderRow[] = [];
  const orderLines: OrderLineRow[] = [];
  const spend = new Map<number, number>(); // customer id → cents in the last 365 days
  const storeMood = STORES.map(() => 1);
  interface Draft {
    store: number;
    at: number;
    channel: Channel;
    customer: number | null;
    lines: Array<{ product: number; quantity: number; price: number }>;
  }
  for (let d = 0; d < days; d++) {
    const dayMs = startMs + d * DAY_MS;
    const date = new Date(dayMs);
    const month = date.getUTCMonth();
    const weekend = date.getUTCDay() === 0 || date.getUTCDay() === 6;
    const dayNoise = 0.9 + 0.2 * oRng.next();
    const mobileShare = 0.14 + 0.14 * (d / Math.max(1, days - 1));
    const deliveryShare = weekend ? 0.12 : 0.07;
    const productWeight = PRODUCTS.map((p, i) => (d < (launchDay[i] as number) ? 0 : p.popularity * (SEASONS[p.season][month] as number)));
    const catWeight = (cats: Record<Category, number>, hour: number): number[] =>
      CATEGORIES.map((c) => {
        let w = cats[c];
        if (c === Category.Pastry && hour < 11) w *= 1.4;
        if (c === Category.Beans && month === 11) w *= 2;
        if (c === Category.Merch && (month === 11 || month === 10)) w *= month === 11 ? 4 : 1.8;
        return w;
      });
    const today: Draft[] = [];
    for (let s = 0; s < STORES.length; s++) {
      const spec = STORES[s] as StoreSpec;
      const sf = (storeFactor[d] as number[])[s] as number;
      if (sf === 0) continue;
      // a store's good and bad weeks drift slowly
      storeMood[s] = Math.min(1.2, Math.max(0.8, (storeMood[s] as number) + (oRng.next() - 0.5) * 0.04));
      const n = oRng.poisson(base * (dayFactor[d] as number) * sf * dayNoise * (storeMood[s] as number));
      for (let k = 0; k < n; k++) {
        const r = oRng.next();
        const channel: Channel =
          spec.delivery && r < deliveryShare ? Channel.Delivery : r < deliveryShare + mobileShare ? Channel.Mobile : Channel.InStore;
        const hours = channel === Channel.Delivery ? HOUR_DELIVERY : weekend ? HOUR_WEEKEND : HOUR_WEEKDAY;
        const hour = HOURS[oRng.weighted(hours)] as number;
        const at = dayMs + hour * 3_600_000 + oRng.int(0, 3599) * 1000;
        // the app needs an account; walk-ins and some delivery-platform orders have none
        const known = channel === Channel.Mobile ? 1 : channel === Channel.Delivery ? 0.7 : 0.42;
        let customer: number | null = null;
        if (oRng.chance(known)) {
          customer = oRng.chance(0.85) ? drawCustomer(storePools[s] as Pool, d, oRng) : null;
          customer ??= drawCustomer(allPool, d, oRng);
        }
        const nLines =
          1 + (channel === Channel.Delivery ? oRng.weighted([0.2, 0.35, 0.3, 0.15]) : oRng.weighted([0.5, 0.32, 0.13, 0.05]));
        const lines: Draft['lines'] = [];
        for (let l = 0; l < nLines; l++) {
          const cats = l === 0
            ? { [Category.Espresso]: 0.55, [Category.Brewed]: 0.25, [Category.Tea]: 0.17, [Category.Pastry]: 0.03, [Category.Beans]: 0, [Category.Merch]: 0 }
            : { [Category.Espresso]: 0.22, [Category.Brewed]: 0.1, [Category.Tea]: 0.08, [Category.Pastry]: 0.5, [Category.Beans]: 0.06, [Category.Merch]: 0.04 };
          let product = -1;
          for (let attempt = 0; attempt < 4 && product < 0; attempt++) {
            const cat = CATEGORIES[oRng.weighted(catWeight(cats, hour))] as Category;
            const choices = productsBy.get(cat) ?? [];
            const p = choices[oRng.weighted(choices.map((i) => productWeight[i] as number))] as number;
            if (!lines.some((x) => x.product === p)) product = p;
          }
          if (product < 0) continue; // four duplicates in a row: a shorter order
          const item = PRODUCTS[product] as ProductSpec;
          const bulky = item.category === Category.Beans || item.category === Category.Merch;
          const quantity = 1 + (bulky ? oRng.weighted([0.92, 0.08]) : channel === Channel.Delivery ? oRng.weighted([0.65, 0.27, 0.08]) : oRng.weighted([0.82, 0.14, 0.04]));
          const price = d < priceRiseDay ? (oldPrice[product] as number) : item.price;
          lines.push({ product, quantity, price });
        }
        today.push({ store: s, at, channel, customer, lines });
      }
    }
    // ids follow time, as a sequence would
    today.sort((a, b) => a.at - b.at || a.store - b.store);
    for (const o of today) {
      const id = orders.length + 1;
      let total = 0;
      for (const l of o.lines) {
        const lineTotal = l.quantity * l.price;
        total += lineTotal;
        orderLines.push({ id: orderLines.length + 1, order_id: id, product_id: l.product + 1, quantity: l.quantity, unit_price_cents: l.price, line_total_cents: lineTotal });
      }
      orders.push({ id, store_id: o.store + 1, customer_id: o.customer, ordered_at: new Date(o.at).toISOString().replace('.000Z', 'Z'), channel: o.channel, total_cents: total });
      if (o.customer !== null && d >= days - 365) spend.set(o.customer, (spend.get(o.customer) ?? 0) + total);
    }
  }

  // loyalty tiers from the last twelve months' spend: top 8% gold, next 22% silver
  const ranked = [...spend.entries()].filter(([, cents]) => cents > 0).sort((a, b) => b[1] - a[1] || a[0] - b[0]);
  const goldN = Math.round(customers.length * 0.08);
  const silverN = Math.round(customers.length * 0.22);
  ranked.forEach(([id], rank) => {
    const c = customers[id - 1] as CustomerRow;
    c.loyalty_tier = rank < goldN ? LoyaltyTier.Gold : rank < goldN + silverN ? LoyaltyTier.Silver : LoyaltyTier.Bronze;
  });

  return { params: { seed, endDate: ymd(endMs), days }, stores, products, customers, orders, orderLines };
}

export function countsOf(data: DemoData): DemoCounts {
  return {
    stores: data.stores.length,
    products: data.products.length,
    customers: data.customers.length,
    orders: data.orders.length,
    order_lines: data.orderLines.length,
  };
}

// ---- the schema -----------------------------------------------------------------------------

const TABLES_DDL = `
CREATE TABLE stores (
  id integer PRIMARY KEY,
  name text NOT NULL UNIQUE,
  city text NOT NULL,
  region text NOT NULL,
  opened_on date NOT NULL
);
COMMENT ON TABLE stores IS 'The coffee shops of the chain, one row per shop.';
COMMENT ON COLUMN stores.id IS 'Store identifier.';
COMMENT ON COLUMN stores.name IS 'Shop name, e.g. "Downtown Roastery".';
COMMENT ON COLUMN stores.city IS 'City the shop is in.';
COMMENT ON COLUMN stores.region IS 'Sales region: West, Midwest, Northeast or South.';
COMMENT ON COLUMN stores.opened_on IS 'Day the shop opened; it has no orders before then.';

CREATE TABLE products (
  id integer PRIMARY KEY,
  name text NOT NULL UNIQUE,
  category text NOT NULL,
  unit_price numeric(8,2) NOT NULL CHECK (unit_price > 0)
);
COMMENT ON TABLE products IS 'What the shops sell: drinks, food, coffee beans and merchandise.';
COMMENT ON COLUMN products.id IS 'Product identifier.';
COMMENT ON COLUMN products.name IS 'Product name as on the menu.';
COMMENT ON COLUMN products.category IS 'One of: Espresso drinks, Brewed coffee, Tea, Pastry, Beans, Merch.';
COMMENT ON COLUMN products.unit_price IS 'Current menu price in USD; order_lines.unit_price holds the price actually paid.';

CREATE TABLE customers (
  id integer PRIMARY KEY,
  first_name text NOT NULL,
  last_name text NOT NULL,
  email text NOT NULL UNIQUE,
  city text NOT NULL,
  joined_on date NOT NULL,
  loyalty_tier text NOT NULL CHECK (loyalty_tier IN ('bronze', 'silver', 'gold'))
);
COMMENT ON TABLE customers IS 'Members of the loyalty programme. Orders without a member have customer_id NULL.';
COMMENT ON COLUMN customers.id IS 'Customer identifier.';
COMMENT ON COLUMN customers.first_name IS 'First name (personal data).';
COMMENT ON COLUMN customers.last_name IS 'Last name (personal data).';
COMMENT ON COLUMN customers.email IS 'E-mail address (personal data).';
COMMENT ON COLUMN customers.city IS 'City the customer lives in.';
COMMENT ON COLUMN customers.joined_on IS 'Day the customer joined the loyalty programme.';
COMMENT ON COLUMN customers.loyalty_tier IS 'bronze, silver or gold, from the spend of the last twelve months.';

CREATE TABLE orders (
  id integer PRIMARY KEY,
  store_id integer NOT NULL REFERENCES stores (id),
  customer_id integer REFERENCES customers (id),
  ordered_at timestamptz NOT NULL,
  channel text NOT NULL CHECK (channel IN ('in_store', 'mobile', 'delivery')),
  total numeric(10,2) NOT NULL CHECK (total >= 0)
);
COMMENT ON TABLE orders IS 'One row per order (a receipt). Its items are in order_lines.';
COMMENT ON COLUMN orders.id IS 'Order identifier; increases with ordered_at.';
COMMENT ON COLUMN orders.store_id IS 'The shop that took the order.';
COMMENT ON COLUMN orders.customer_id IS 'The loyalty member who ordered; NULL for walk-ins without an account.';
COMMENT ON COLUMN orders.ordered_at IS 'When the order was placed (the demo''s shop clocks run on UTC).';
COMMENT ON COLUMN orders.channel IS 'in_store (at the counter), mobile (app order and pick-up) or delivery.';
COMMENT ON COLUMN orders.total IS 'Amount paid in USD: the sum of the order''s order_lines.line_total.';

CREATE TABLE order_lines (
  id integer PRIMARY KEY,
  order_id integer NOT NULL REFERENCES orders (id),
  product_id integer NOT NULL REFERENCES products (id),
  quantity integer NOT NULL CHECK (quantity > 0),
  unit_price numeric(8,2) NOT NULL,
  line_total numeric(10,2) NOT NULL
);
COMMENT ON TABLE order_lines IS 'The items of each order: one row per product in an order.';
COMMENT ON COLUMN order_lines.id IS 'Order line identifier.';
COMMENT ON COLUMN order_lines.order_id IS 'The order this line belongs to.';
COMMENT ON COLUMN order_lines.product_id IS 'The product sold.';
COMMENT ON COLUMN order_lines.quantity IS 'How many units.';
COMMENT ON COLUMN order_lines.unit_price IS 'Price per unit actually paid, in USD (prices rose on 2026-01-15).';
COMMENT ON COLUMN order_lines.line_total IS 'quantity * unit_price, in USD.';
`;

const INDEXES_DDL = `
CREATE INDEX orders_ordered_at_idx ON orders (ordered_at);
CREATE INDEX orders_store_id_idx ON orders (store_id);
CREATE INDEX orders_customer_id_idx ON orders (customer_id);
CREATE INDEX order_lines_order_id_idx ON order_lines (order_id);
CREATE INDEX order_lines_product_id_idx ON order_lines (product_id);
`;

/** The demo tables, in the order they are created (and the reverse of the order they are dropped). */
export const DEMO_TABLES = ['stores', 'products', 'customers', 'orders', 'order_lines'] as const;

/** The whole schema: tables with their keys and comments, then the indexes. */
export function demoDdl(): string {
  return `${TABLES_DDL.trim()}\n\n${INDEXES_DDL.trim()}\n`;
}

// ---- loading --------------------------------------------------------------------------------

function money(cents: number): string {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}

type Cell = string | number | null;

/** COPY's text format: tab-separated, \N for NULL, backslash escapes. */
function copyText(rows: Iterable<readonly Cell[]>): string {
  const out: string[] = [];
  for (const row of rows) {
    out.push(
      row
        .map((v) => (v === null ? '\\N' : typeof v === 'number' ? String(v) : v.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'))))
        .join('\t'),
    );
  }
  return out.length ? `${out.join('\n')}\n` : '';
}

function* mapRows<T>(rows: readonly T[], f: (row: T) => readonly Cell[]): Generator<readonly Cell[]> {
  for (const r of rows) yield f(r);
}

/** The marker written with the data: which generator version made it. */
export const DEMO_META_SCHEMA = 'cortado';
export const DEMO_META_TABLE = `${DEMO_META_SCHEMA}.demo_meta`;

/**
 * Replace the demo tables with `data` in one transaction (COPY FROM PGlite's /dev/blob,
 * indexes after the rows), record the version marker, then ANALYZE. Tables other than the
 * five demo tables are left alone.
 */
export async function loadDemoData(db: PGlite, data: DemoData = generateDemoData()): Promise<DemoCounts> {
  const counts = countsOf(data);
  const copies: Array<[table: string, columns: string, text: string]> = [
    ['stores', 'id, name, city, region, opened_on', copyText(mapRows(data.stores, (s) => [s.id, s.name, s.city, s.region, s.opened_on]))],
    ['products', 'id, name, category, unit_price', copyText(mapRows(data.products, (p) => [p.id, p.name, p.category, money(p.unit_price_cents)]))],
    [
      'customers',
      'id, first_name, last_name, email, city, joined_on, loyalty_tier',
      copyText(mapRows(data.customers, (c) => [c.id, c.first_name, c.last_name, c.email, c.city, c.joined_on, c.loyalty_tier])),
    ],
    [
      'orders',
      'id, store_id, customer_id, ordered_at, channel, total',
      copyText(mapRows(data.orders, (o) => [o.id, o.store_id, o.customer_id, o.ordered_at, o.channel, money(o.total_cents)])),
    ],
    [
      'order_lines',
      'id, order_id, product_id, quantity, unit_price, line_total',
      copyText(mapRows(data.orderLines, (l) => [l.id, l.order_id, l.product_id, l.quantity, money(l.unit_price_cents), money(l.line_total_cents)])),
    ],
  ];

  await db.transaction(async (tx) => {
    // the session may default to read-only (pglite.ts sets that once the data is in)
    await tx.exec('SET TRANSACTION READ WRITE');
    await tx.exec(`DROP TABLE IF EXISTS ${[...DEMO_TABLES].reverse().join(', ')} CASCADE`);
    await tx.exec(TABLES_DDL);
    for (const [table, columns, text] of copies) {
      await tx.query(`COPY ${table} (${columns}) FROM '/dev/blob'`, [], { blob: new Blob([text]) });
    }
    await tx.exec(INDEXES_DDL);
    await tx.exec(`
      CREATE SCHEMA IF NOT EXISTS ${DEMO_META_SCHEMA};
      COMMENT ON SCHEMA ${DEMO_META_SCHEMA} IS 'Cortado''s bookkeeping for the embedded demo database.';
      CREATE TABLE IF NOT EXISTS ${DEMO_META_TABLE} (
        version integer NOT NULL,
        seed bigint NOT NULL,
        end_date date NOT NULL,
        days integer NOT NULL,
        counts jsonb NOT NULL,
        generated_at timestamptz NOT NULL DEFAULT now()
      );
      DELETE FROM ${DEMO_META_TABLE};`);
    await tx.query(`INSERT INTO ${DEMO_META_TABLE} (version, seed, end_date, days, counts) VALUES ($1, $2, $3, $4, $5)`, [
      DEMO_DATA_VERSION,
      data.params.seed,
      data.params.endDate,
      data.params.days,
      JSON.stringify(counts),
    ]);
  });
  await db.exec(`ANALYZE ${DEMO_TABLES.join(', ')}`);
  return counts;
}

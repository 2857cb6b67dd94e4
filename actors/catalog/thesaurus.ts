/**
 * The business thesaurus: words people use for the things business schemas hold, in groups of
 * words that stand for each other (a `client` is a `customer`, `takings` are `revenue` held as
 * payments and amounts). WordNet (lexicon.ts) knows English; these groups know how data people
 * and business people name the same thing. Administrators add their own groups with
 * `catalog.synonyms` (configuration), the semantic layer's synonyms name their own tables.
 *
 * A group is symmetric: each word reaches every other word of its group. Money and measure
 * words also reach the column words that hold them (`revenue` → amount, price, total …).
 */
import { stem } from './catalog.js';

/** How much a match through the thesaurus counts, against 1 for the question's own word. */
export const THESAURUS_WEIGHT = 0.85;
/** A measure word reaching the columns that hold it counts this much. */
export const MEASURE_WEIGHT = 0.6;

const GROUPS: readonly (readonly string[])[] = [
  // parties
  ['customer', 'client', 'buyer', 'shopper', 'purchaser', 'patron', 'consumer', 'renter', 'borrower', 'subscriber', 'member', 'guest', 'account holder', 'cust'],
  ['employee', 'staff', 'worker', 'personnel', 'headcount', 'colleague', 'rep', 'representative', 'salesperson', 'salesman', 'saleswoman', 'agent', 'clerk', 'associate', 'emp', 'hire'],
  ['supplier', 'vendor', 'provider', 'seller', 'distributor', 'wholesaler', 'supp'],
  ['manufacturer', 'maker', 'producer', 'brand', 'mfr'],
  ['manager', 'boss', 'supervisor', 'mgr'],
  ['contact', 'person', 'people', 'individual'],
  ['company', 'business', 'firm', 'organisation', 'organization', 'enterprise', 'corporation'],
  // things sold
  ['product', 'item', 'article', 'goods', 'merchandise', 'sku', 'ware', 'prod'],
  ['part', 'component', 'piece', 'spare'],
  ['film', 'movie', 'dvd', 'picture', 'flick'],
  ['track', 'song', 'tune', 'recording'],
  ['album', 'release'],
  ['artist', 'band', 'musician', 'performer', 'singer', 'composer'],
  ['actor', 'actress', 'cast', 'performer'],
  ['genre', 'category', 'style', 'kind'],
  ['category', 'class', 'segment', 'subcategory'],
  ['book', 'title', 'publication'],
  // events
  ['order', 'purchase', 'sale', 'transaction', 'basket', 'checkout', 'booking'],
  ['invoice', 'bill', 'billing', 'receipt'],
  ['payment', 'charge', 'receipt', 'takings', 'paid', 'pay'],
  ['rental', 'rent', 'hire', 'lease', 'loan', 'borrowing', 'checkout'],
  ['return', 'refund', 'chargeback'],
  ['shipment', 'delivery', 'dispatch', 'shipping', 'consignment', 'freight'],
  ['shipper', 'carrier', 'courier', 'haulier', 'forwarder', 'freight', 'ship'],
  ['booking', 'reservation', 'ticket'],
  ['flight', 'trip', 'journey', 'leg'],
  ['passenger', 'traveller', 'traveler', 'flyer', 'pax'],
  ['aircraft', 'plane', 'airplane', 'jet', 'fleet'],
  ['airport', 'airfield'],
  ['review', 'rating', 'feedback'],
  ['visit', 'session', 'pageview', 'hit'],
  ['ticket', 'incident'],
  ['promotion', 'promo', 'discount', 'coupon', 'offer', 'campaign', 'deal', 'markdown'],
  ['special offer', 'offer', 'discount'],
  // places
  ['country', 'nation', 'land', 'territory'],
  ['region', 'territory', 'area', 'zone', 'district'],
  ['city', 'town', 'municipality'],
  ['state', 'province', 'county'],
  ['address', 'postcode', 'zip'],
  ['store', 'shop', 'outlet', 'branch', 'showroom'],
  ['warehouse', 'depot', 'distribution', 'fulfilment', 'fulfillment', 'dc'],
  ['inventory', 'stock', 'stockpile', 'copy', 'copies', 'onhand'],
  // people data
  ['salary', 'pay', 'wage', 'wages', 'compensation', 'payroll', 'earnings', 'remuneration'],
  ['department', 'division', 'unit', 'team', 'dept'],
  ['job', 'title', 'role', 'position', 'occupation'],
  ['shift', 'roster', 'schedule'],
  // time
  ['date', 'day', 'calendar'],
  ['year', 'fiscal', 'fy'],
];

/** Measure words and the column words that hold them. */
const MEASURES: ReadonlyArray<readonly [readonly string[], readonly string[]]> = [
  [['revenue', 'sales', 'turnover', 'takings', 'income', 'earnings', 'proceeds', 'receipts', 'gross', 'money', 'spend', 'spent', 'spending', 'paid', 'earned', 'made', 'grossed'],
    ['amount', 'price', 'total', 'payment', 'revenue', 'sales', 'extendedprice', 'paid', 'subtotal', 'totaldue', 'linetotal', 'net', 'charge']],
  [['cost', 'costs', 'expense', 'expenses', 'outlay', 'spend'], ['cost', 'price', 'amount', 'expense', 'standardcost', 'wholesale']],
  [['price', 'prices', 'priced', 'expensive', 'cheap', 'cheapest', 'pricey'], ['price', 'unitprice', 'listprice', 'cost', 'rate', 'fee']],
  [['quantity', 'units', 'volume', 'sold', 'bought', 'ordered'], ['quantity', 'qty', 'units', 'count', 'orderqty']],
  [['profit', 'margin', 'profitable'], ['profit', 'margin', 'price', 'cost', 'amount']],
  [['late', 'overdue', 'delayed', 'delay'], ['due', 'return', 'required', 'shipped', 'scheduled', 'actual']],
  [['long', 'longest', 'shortest', 'duration', 'length', 'minutes'], ['length', 'duration', 'milliseconds', 'minutes', 'runtime']],
  [['stock', 'instock', 'available', 'availability'], ['inventory', 'stock', 'quantity', 'onhand', 'unitsinstock', 'available']],
  [['headcount', 'staffing'], ['employee', 'staff']],
];

export interface ThesaurusEntry {
  term: string;
  weight: number;
}

export type Thesaurus = ReadonlyMap<string, readonly ThesaurusEntry[]>;

/** Index terms of a phrase as the catalog writes them: each word stemmed; `account holder` → account, holder. */
function termsOf(phrase: string): string[] {
  const words = phrase.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((w) => w.length > 1);
  // a one-word entry also as its plural stems it (`movies` → movy, not movie; `cookies` → cooky)
  if (words.length === 1 && !words[0]!.endsWith('s')) return [...new Set([stem(words[0]!), stem(`${words[0]!}s`)])];
  return words.map(stem);
}

/** The thesaurus as question term (stemmed) → related index terms, with the administrator's groups added. */
export function buildThesaurus(extra: Readonly<Record<string, readonly string[]>> = {}, opts: { measures?: boolean } = {}): Thesaurus {
  const out = new Map<string, Map<string, number>>();
  const link = (from: string, to: string, weight: number): void => {
    if (from === to) return;
    const m = out.get(from) ?? new Map<string, number>();
    if ((m.get(to) ?? 0) < weight) m.set(to, weight);
    out.set(from, m);
  };
  const group = (words: readonly string[], weight: number): void => {
    const terms = [...new Set(words.flatMap(termsOf))];
    for (const a of terms) for (const b of terms) link(a, b, weight);
  };
  for (const g of GROUPS) group(g, THESAURUS_WEIGHT);
  if (opts.measures) for (const [asked, held] of MEASURES) {
    const heldTerms = [...new Set(held.flatMap(termsOf))];
    for (const a of new Set(asked.flatMap(termsOf))) for (const b of heldTerms) link(a, b, MEASURE_WEIGHT);
  }
  // the administrator's words: the key and its words all stand for each other, as strongly as a group
  for (const [word, words] of Object.entries(extra)) group([word, ...words], THESAURUS_WEIGHT);
  return new Map([...out].map(([k, m]) => [k, [...m].map(([term, weight]) => ({ term, weight }))]));
}

let vocabulary: ReadonlySet<string> | undefined;
/**
 * The single words of the shipped groups and measure lists, lower case (`cust`, `supp`, `qty`,
 * `linetotal` …): with WordNet, the dictionary identifier splitting cuts names by (split.ts).
 */
export function thesaurusWords(): ReadonlySet<string> {
  vocabulary ??= new Set(
    [...GROUPS.flat(), ...MEASURES.flatMap(([asked, held]) => [...asked, ...held])].filter((w) => /^[a-z]+$/.test(w)),
  );
  return vocabulary;
}

let shipped: Thesaurus | undefined;
/** The shipped thesaurus (no administrator groups), built once. */
export function defaultThesaurus(): Thesaurus {
  shipped ??= buildThesaurus();
  return shipped;
}

/**
 * A question as retrieval reads it: the words that name tables, apart from the dates (filters
 * on a column, never table words: "orders in 2023" wants `orders`, not `orders_2023`), the
 * literals (values to find in columns: 'Berlin', "ACME-42"), and question filler ("top",
 * "total", "daily") that says how to aggregate, not where the data lives.
 */
import { stem, termSet } from './catalog.js';

export interface QuestionWords {
  /** search terms (stemmed), without dates and filler */
  terms: string[];
  /** dates, years, months, quarters and periods found: filters for the model, not table words */
  filters: string[];
  /** quoted strings and capitalised or coded words inside the sentence: values to look for */
  literals: string[];
  /** every word as written, lowercased, unstemmed (what asks for an archive, a region copy …) */
  words: Set<string>;
  /** each search term → the word of the question it came from, lowercased (what the lexicon looks up) */
  surface: Map<string, string>;
}

const MONTHS = [
  'january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december',
  'jan', 'feb', 'mar', 'apr', 'jun', 'jul', 'aug', 'sep', 'sept', 'oct', 'nov', 'dec',
];
/** Period words: how to group or filter by time. */
const PERIOD_WORDS: ReadonlySet<string> = new Set([
  ...MONTHS, 'today', 'yesterday', 'tomorrow', 'day', 'days', 'daily', 'week', 'weeks', 'weekly', 'month', 'months', 'monthly',
  'quarter', 'quarters', 'quarterly', 'year', 'years', 'yearly', 'annual', 'annually', 'ytd', 'mtd', 'qtd', 'fy', 'hour', 'hourly',
  'weekend', 'weekday', 'q1', 'q2', 'q3', 'q4', 'h1', 'h2', 'ago', 'since', 'until', 'during', 'between', 'last', 'next', 'this',
  'previous', 'current', 'past', 'recent', 'recently', 'latest', 'earliest', 'now', 'date', 'dates',
]);
/**
 * Words that shape the answer (ranking, aggregation, comparison) and appear in report and test
 * table names, never in the business words that pick a table.
 */
const FILLER_WORDS: ReadonlySet<string> = new Set([
  'top', 'bottom', 'most', 'least', 'best', 'worst', 'highest', 'lowest', 'biggest', 'largest', 'smallest', 'total', 'totals',
  'sum', 'average', 'avg', 'mean', 'median', 'count', 'number', 'numbers', 'amount', 'share', 'percent', 'percentage', 'ratio',
  'rate', 'trend', 'trends', 'compare', 'compared', 'versus', 'vs', 'over', 'under', 'above', 'below', 'more', 'less', 'than',
  'new', 'test', 'each', 'every', 'some', 'only', 'also', 'get', 'find', 'want', 'need', 'know', 'see', 'like', 'would', 'could',
  'should', 'into', 'out', 'up', 'down', 'about', 'after', 'before', 'so', 'far', 'not', 'no', 'yes', 'still', 'ever', 'one',
  'two', 'three', 'ten', 'first', 'second', 'top10', 'breakdown', 'broken', 'split', 'group', 'grouped', 'by', 'show', 'showing',
  'list', 'give', 'tell', 'which', 'who', 'what', 'how', 'many', 'much', 'often', 'per', 'across', 'overall', 'whole', 'all',
  'did', 'does', 'do', 'done', 'have', 'has', 'had', 'been', 'being', 'are', 'is', 'was', 'were', 'will', 'got', 'made', 'make',
  'largest', 'bigger', 'higher', 'lower', 'growth', 'grew', 'increase', 'decrease', 'change', 'changed', 'level', 'levels',
]);

/** A period word, or its plural ("on weekends", "mornings", "weekdays"). */
function isPeriod(lower: string): boolean {
  return PERIOD_WORDS.has(lower) || (lower.length > 3 && lower.endsWith('s') && PERIOD_WORDS.has(lower.slice(0, -1)));
}

const YEAR = /^(?:19|20)\d{2}$/;
const DATE = /\b(?:\d{4}-\d{1,2}(?:-\d{1,2})?|\d{1,2}[./]\d{1,2}[./]\d{2,4})\b/g;
const QUOTED = /"([^"]{1,200})"|'([^']{1,200})'|“([^”]{1,200})”|‘([^’]{1,200})’/g;

/** The question read for retrieval. */
export function readQuestion(text: string): QuestionWords {
  const filters: string[] = [];
  const literals: string[] = [];
  let rest = text.replace(QUOTED, (_m, a?: string, b?: string, c?: string, d?: string) => {
    const lit = (a ?? b ?? c ?? d ?? '').trim();
    if (lit) literals.push(lit);
    return ' ';
  });
  rest = rest.replace(DATE, (m) => {
    filters.push(m);
    return ' ';
  });
  const words = new Set<string>();
  const kept: string[] = [];
  const tokens = rest.split(/[^\p{L}\p{N}_-]+/u).filter(Boolean);
  let run: string[] = [];
  const endRun = (): void => {
    if (run.length) literals.push(run.join(' '));
    run = [];
  };
  tokens.forEach((raw, i) => {
    const lower = raw.toLowerCase();
    words.add(lower);
    // a proper noun inside the sentence (a run of capitalised words), or a code (letters and digits): a value
    const capital = /^\p{Lu}[\p{L}&.'-]*$/u.test(raw) && !raw.includes('_') && !(raw.length > 1 && raw === raw.toUpperCase() && raw.length <= 3);
    if (i > 0 && capital && !YEAR.test(lower) && !isPeriod(lower)) run.push(raw);
    else endRun();
    if (YEAR.test(lower) || isPeriod(lower)) {
      filters.push(raw);
      return;
    }
    if (/\d/.test(raw) && /\p{L}/u.test(raw) && !/^q[1-4]$/i.test(raw)) literals.push(raw);
    if (FILLER_WORDS.has(lower)) return;
    if (/^\d+$/.test(lower)) return;
    kept.push(raw);
  });
  endRun();
  const terms = new Set<string>();
  const surface = new Map<string, string>();
  for (const w of kept) {
    for (const term of termSet(w)) {
      terms.add(term);
      if (!surface.has(term)) surface.set(term, w.toLowerCase());
    }
  }
  return { terms: [...terms], filters, literals, words, surface };
}

/** Whether a (lowercased, unstemmed) word of the question is one of these, stemmed or not. */
export function mentions(words: ReadonlySet<string>, candidates: readonly string[]): boolean {
  for (const c of candidates) if (words.has(c) || words.has(`${c}s`)) return true;
  for (const w of words) if (candidates.includes(stem(w))) return true;
  return false;
}

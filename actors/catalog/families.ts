/**
 * Families of copies: `orders_old`, `orders_v2`, `tmp_orders`, `orders_2019`,
 * `orders_archive_2021`, `bkp_orders`, `stg_orders`, `raw_orders`, `orders_snapshot_0601`,
 * `orders_eu`, and the same name in an `archive` or `staging` schema, are copies of `orders`;
 * `rpt_`/`kpi_`/`agg_` tables and `_daily`/`_weekly` roll-ups are reports built from others.
 * Retrieval folds a copy onto its original and ranks reports below the tables they summarise,
 * unless the question asks for them by one of their markers ("archived", "backup", "EU",
 * "report" …).
 */
import type { DbTable } from '../../protocol/schemas/sql.js';

export interface Family {
  /** the name without its markers (lowercased, `_`-joined) */
  base: string;
  /** the markers taken off (canonical words: archive, backup, staging, eu, report, year …) */
  markers: string[];
  /** copy: a copy or snapshot of base; report: a roll-up or report table; undefined: an ordinary table */
  kind?: 'copy' | 'report';
  /** a table of the same name in a sibling schema (northwind_eu.orders → northwind.orders): its index */
  sibling?: number;
}

/** Name parts that make a copy, as written → the word a question would use for it. */
const COPY_MARKERS: ReadonlyMap<string, string> = new Map([
  ['old', 'old'], ['older', 'old'], ['legacy', 'old'], ['deprecated', 'old'], ['obsolete', 'old'], ['prev', 'old'], ['previous', 'old'],
  ['tmp', 'temp'], ['temp', 'temp'], ['scratch', 'temp'], ['sandbox', 'temp'], ['test', 'test'], ['tst', 'test'], ['dev', 'test'], ['qa', 'test'], ['uat', 'test'],
  ['archive', 'archive'], ['archived', 'archive'], ['arch', 'archive'], ['arc', 'archive'], ['hist', 'archive'],
  ['bkp', 'backup'], ['bak', 'backup'], ['backup', 'backup'], ['bck', 'backup'], ['copy', 'backup'], ['cpy', 'backup'], ['dup', 'backup'], ['clone', 'backup'],
  ['stg', 'staging'], ['staging', 'staging'], ['stage', 'staging'], ['landing', 'staging'], ['lnd', 'staging'], ['import', 'staging'], ['load', 'staging'],
  ['raw', 'raw'], ['src', 'raw'], ['source', 'raw'], ['ext', 'raw'], ['external', 'raw'],
  ['snapshot', 'snapshot'], ['snap', 'snapshot'], ['snp', 'snapshot'],
  ['migrated', 'old'], ['migration', 'old'], ['mig', 'old'], ['new', 'new'], ['final', 'new'], ['fixed', 'new'], ['clean', 'new'], ['cleaned', 'new'],
  ['deleted', 'old'], ['del', 'old'], ['draft', 'test'], ['wip', 'test'], ['x', 'temp'], ['z', 'temp'], ['zz', 'temp'], ['zzz', 'temp'],
  ['tbl', 'temp'], ['dedup', 'backup'], ['deduped', 'backup'], ['fix', 'backup'], ['fixed', 'backup'], ['bkup', 'backup'], ['orig', 'backup'],
  ['latest', 'new'], ['current', 'new'], ['curr', 'new'], ['work', 'temp'], ['wrk', 'temp'], ['dump', 'backup'], ['extract', 'raw'],
  ['history', 'archive'], ['cdc', 'cdc'], ['changelog', 'cdc'], ['audit', 'audit'], ['aud', 'audit'], ['scd', 'snapshot'],
  ['replica', 'backup'], ['mirror', 'backup'], ['shadow', 'backup'],
]);
/** Per-region copies: the part → the region a question names. */
const REGIONS: ReadonlyMap<string, string> = new Map([
  ['eu', 'eu'], ['europe', 'eu'], ['emea', 'emea'], ['us', 'us'], ['usa', 'us'], ['na', 'na'], ['amer', 'americas'], ['americas', 'americas'],
  ['apac', 'apac'], ['asia', 'apac'], ['latam', 'latam'], ['uk', 'uk'], ['gb', 'uk'], ['de', 'de'], ['fr', 'fr'], ['es', 'es'], ['it', 'it'],
  ['nl', 'nl'], ['jp', 'jp'], ['cn', 'cn'], ['in', 'in'], ['br', 'br'], ['mx', 'mx'], ['ca', 'ca'], ['au', 'au'], ['anz', 'au'],
  ['nordics', 'nordics'], ['dach', 'dach'], ['benelux', 'benelux'], ['mena', 'mena'], ['east', 'east'], ['west', 'west'], ['north', 'north'], ['south', 'south'],
  ['central', 'central'], ['intl', 'intl'], ['global', 'global'], ['domestic', 'domestic'],
]);
/** Parts that make a report or roll-up. */
const REPORT_MARKERS: ReadonlyMap<string, string> = new Map([
  ['rpt', 'report'], ['report', 'report'], ['reports', 'report'], ['reporting', 'report'], ['kpi', 'kpi'], ['kpis', 'kpi'], ['agg', 'aggregate'],
  ['aggr', 'aggregate'], ['aggregated', 'aggregate'], ['summary', 'summary'], ['summ', 'summary'], ['sum', 'summary'], ['mart', 'report'],
  ['dash', 'dashboard'], ['dashboard', 'dashboard'], ['cube', 'report'], ['mv', 'report'], ['rollup', 'aggregate'], ['by', 'report'],
  ['daily', 'daily'], ['weekly', 'weekly'], ['monthly', 'monthly'], ['quarterly', 'quarterly'], ['yearly', 'yearly'], ['annual', 'yearly'],
  ['hourly', 'hourly'], ['dly', 'daily'], ['wkly', 'weekly'], ['mthly', 'monthly'], ['ytd', 'ytd'], ['mtd', 'mtd'], ['trend', 'report'],
  ['dm', 'report'], ['feed', 'report'], ['export', 'report'], ['extr', 'report'], ['int', 'report'], ['obt', 'report'],
]);
/** Parts that make a report only on a table no foreign key joins (a `fct_` table with keys is a real fact table). */
const LOOSE_REPORT_MARKERS: ReadonlyMap<string, string> = new Map([
  ['fct', 'report'], ['fact', 'report'], ['facts', 'report'], ['wide', 'report'], ['flat', 'report'], ['stats', 'summary'], ['metrics', 'kpi'],
]);
/** Schemas whose tables are all copies (or reports) of tables elsewhere. */
const COPY_SCHEMA = /^(?:archive|archived|arch|backup|backups|bkp|bak|staging|stage|stg|raw|landing|lnd|tmp|temp|scratch|sandbox|playground|test|dev|old|legacy|snapshots?|history|hist|import|ingest|cdc|audit|replica|mirror|ods|lake|bronze|src|source|sources)(?:_|$)/i;
const REPORT_SCHEMA = /^(?:reports?|reporting|rpt|marts?|datamarts?|kpis?|agg|aggregates?|analytics|bi|dashboards?|olap)(?:_|$)/i;

const VERSION = /^v\d{1,3}$/;
const DATED = /^(?:19|20)\d{2}(?:\d{2}(?:\d{2})?)?$|^\d{6,8}$|^q[1-4]$|^h[12]$|^\d{1,2}$|^(?:19|20)\d{2}q[1-4]$/;

function parts(name: string): string[] {
  return name
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1_$2')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

function markerOf(part: string, joined: boolean): { word: string; report: boolean } | undefined {
  const copy = COPY_MARKERS.get(part);
  if (copy) return { word: copy, report: false };
  if (VERSION.test(part)) return { word: 'version', report: false };
  if (DATED.test(part)) return { word: part.slice(0, 4), report: false };
  const report = REPORT_MARKERS.get(part);
  if (report) return { word: report, report: true };
  const loose = joined ? undefined : LOOSE_REPORT_MARKERS.get(part);
  if (loose) return { word: loose, report: true };
  return undefined;
}

/**
 * The family of one table name (and schema): its base name and the markers around it. Markers
 * come off both ends (`tmp_orders_v2`), and `archive`/`bkp`/`snapshot` parts also from the
 * middle (`orders_archive_2021`); a region part only at the end (`orders_eu`), and only when
 * what is left is a name on its own (`us_states` keeps its `us`).
 */
export function familyOf(table: Pick<DbTable, 'schema' | 'name'>, joined = false): Family {
  const p = parts(table.name);
  const markers: string[] = [];
  let report = false;
  let copy = false;
  const take = (m: { word: string; report: boolean }): void => {
    markers.push(m.word);
    if (m.report) report = true;
    else copy = true;
  };
  let changed = true;
  while (changed && p.length > 1) {
    changed = false;
    const first = p[0] ?? '';
    const mFirst = markerOf(first, joined);
    if (mFirst && first !== 'by') {
      take(mFirst);
      p.shift();
      if (p[0] === 'of' && p.length > 1) p.shift(); // copy_of_orders
      changed = true;
      if (p.length <= 1) break;
    }
    const last = p.at(-1) ?? '';
    const mLast = markerOf(last, joined);
    if (mLast && last !== 'by') {
      take(mLast);
      p.pop();
      changed = true;
      continue;
    }
    const region = REGIONS.get(last);
    if (region && p.length > 1) {
      markers.push(region);
      copy = true;
      p.pop();
      changed = true;
    }
  }
  // interior copy markers: orders_archive_2021 → orders (after 2021 came off the end)
  for (let i = p.length - 2; i >= 1; i -= 1) {
    const m = COPY_MARKERS.get(p[i] ?? '');
    if (m && ['archive', 'backup', 'snapshot', 'old', 'temp', 'staging'].includes(m)) {
      markers.push(m);
      copy = true;
      p.splice(i, 1);
    }
  }
  // a roll-up named by what it breaks down: late_shipments_by_carrier → late_shipments
  const by = p.indexOf('by');
  if (by > 0 && (report || copy)) {
    p.splice(by);
    report = true;
  }
  if (COPY_SCHEMA.test(table.schema)) {
    copy = true;
    // the schema's marker words only: `raw_sales` is asked for by "raw", not by "sales" (the
    // source it copies, which a question about the original says)
    const [head = '', ...tail] = parts(table.schema);
    markers.push(COPY_MARKERS.get(head) ?? head, ...tail.filter((s) => COPY_MARKERS.has(s)).map((s) => COPY_MARKERS.get(s) ?? s));
  } else if (REPORT_SCHEMA.test(table.schema)) {
    report = true;
    markers.push('report');
  }
  const base = p.join('_');
  const kind = report ? 'report' : copy ? 'copy' : undefined;
  return kind ? { base, markers, kind } : { base, markers };
}

/**
 * Words a question uses to ask for a marked table, by marker. Everyday words that only look
 * like markers ("landing page", "traffic source", "A/B test", "order history", "show us") are
 * left out: they would bring the copies back.
 */
const ASKED_BY: Readonly<Record<string, readonly string[]>> = {
  old: ['legacy', 'deprecated', 'obsolete'],
  temp: ['temp', 'temporary', 'tmp', 'scratch', 'sandbox'],
  test: ['qa', 'draft'],
  archive: ['archive', 'archived', 'archives'],
  backup: ['backup', 'backups', 'bkp', 'copy', 'copies'],
  staging: ['staging', 'staged', 'stg'],
  raw: ['raw', 'unprocessed'],
  snapshot: ['snapshot', 'snapshots'],
  cdc: ['cdc', 'changelog'],
  audit: ['audit', 'audited', 'auditing'],
  report: ['report', 'reports', 'reporting', 'rollup', 'roll-up', 'precomputed', 'dashboard'],
  kpi: ['kpi', 'kpis'],
  aggregate: ['aggregate', 'aggregated', 'rollup', 'roll-up', 'precomputed'],
  summary: ['summary', 'summaries', 'summarised', 'summarized'],
  dashboard: ['dashboard'],
  version: [],
  new: [],
  eu: ['eu', 'europe', 'european'],
  emea: ['emea'],
  us: ['usa', 'american', 'america'],
  na: [],
  americas: ['americas'],
  apac: ['apac', 'asia', 'asian', 'pacific'],
  latam: ['latam', 'latin'],
  uk: ['uk', 'britain', 'british', 'england'],
  de: ['germany', 'german'],
  fr: ['france', 'french'],
  es: ['spain', 'spanish'],
  it: ['italy', 'italian'],
  nl: ['netherlands', 'dutch'],
  jp: ['japan', 'japanese'],
  cn: ['china', 'chinese'],
  in: ['india', 'indian'],
  br: ['brazil', 'brazilian'],
  mx: ['mexico', 'mexican'],
  ca: ['canada', 'canadian'],
  au: ['australia', 'australian'],
};

/**
 * Whether the question asks for a table of this family: one of its markers is a word of the
 * question (years and versions never are: a year is a filter on the original).
 */
export function askedFor(family: Family, words: ReadonlySet<string>): boolean {
  for (const m of family.markers) {
    if (/^\d/.test(m)) continue;
    const asked = ASKED_BY[m] ?? [m];
    for (const w of asked) if (words.has(w)) return true;
  }
  return false;
}

/**
 * A large noisy catalog for schema linking, made the same way every time from a seed: the
 * ~120 real tables of bench/linking/domains.ts (12 domain schemas, terse names, business words
 * in the comments, declared foreign keys) and, around them, the noise a real warehouse holds:
 *
 * - copies of real tables: `_old`, `_v2`, `_bak`, `_2019`, `_archive_2021`, `_bkp_20230115`,
 *   `_snapshot_20240301`, per-region (`_emea`, `_apac` …), `tmp_`/`old_`/`test_` prefixes;
 * - staging, raw, archive, sandbox and legacy copies in their own schemas (`staging.stg_sales_so_hdr`);
 * - report roll-ups whose *names* carry the business words (`rpt_late_shipments_by_carrier_daily`,
 *   `agg_revenue_weekly`, `kpi_churn_by_segment`), wide, without foreign keys;
 * - unrelated wide tables (event shards, ML features, ETL logs) with generic column names.
 *
 * `generateCatalog({ tables, seed })` gives the introspection as the executor would reply it, the
 * questions whose answer tables are all present (names as the catalog shows them), the semantic
 * layer's entities with synonyms, known column values, and which table is noise of which family.
 * Below ~120 tables whole domains are kept in DOMAINS order and the questions are those they answer.
 * `catalogDdl(catalog)` writes the PostgreSQL statements that create the same catalog.
 */
import type { SemanticColumn, SemanticEntity } from '../../protocol/schemas/semantic.js';
import type { DbColumn, DbTable, SqlIntrospectReply } from '../../protocol/schemas/sql.js';
import { DOMAIN_QUESTIONS, DOMAIN_SYNONYMS, DOMAIN_TABLES, DOMAINS, type DomainTable } from './domains.js';

export const DEFAULT_SCHEMA = 'public';

export type NoiseFamily = 'copy' | 'prefix_copy' | 'staging' | 'report' | 'unrelated';
export const NOISE_FAMILIES: readonly NoiseFamily[] = ['copy', 'prefix_copy', 'staging', 'report', 'unrelated'];

export interface LinkingQuestion {
  question: string;
  /** as the catalog names them (`schema.table` outside the default schema), sorted */
  answer_tables: string[];
}

export interface GeneratedCatalog {
  introspection: SqlIntrospectReply;
  questions: LinkingQuestion[];
  /** the semantic layer's entities for the real tables present (ids from 1, fixed timestamps) */
  semantic: { entities: SemanticEntity[] };
  /** the real tables, by catalog name */
  real: string[];
  /** every noise table's catalog name → its family */
  noise: Record<string, NoiseFamily>;
  /** primary-key columns of the real tables (for the DDL), by catalog name */
  primary_keys: Record<string, string[]>;
  /** values known to occur in some columns, by catalog name then column (what statistics or samples would show) */
  values: Record<string, Record<string, string[]>>;
}

export interface GenerateOptions {
  /** how many tables in all (real + noise) */
  tables: number;
  seed?: number;
}

// ---- randomness --------------------------------------------------------------------------------

/** mulberry32: small, fast, and the same sequence on every machine */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Rand = () => number;
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
const int = (r: Rand, lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1));
const pad = (n: number, w: number): string => String(n).padStart(w, '0');

// ---- the real tables -----------------------------------------------------------------------------

interface ParsedColumn extends DbColumn {
  pk: boolean;
  ref?: string;
}

const PG_TYPES: Record<string, string> = { timestamp: 'timestamp without time zone' };

/** `char(2)` → `character(2)`, `timestamp` → `timestamp without time zone`: the names format_type() gives */
function pgTypeName(type: string): string {
  const char = /^char\((\d+)\)$/.exec(type);
  if (char) return `character(${char[1]})`;
  return PG_TYPES[type] ?? type;
}

function parseColumn(spec: string): ParsedColumn {
  const [head, ...rest] = spec.split(' # ');
  const words = head!.trim().split(/\s+/);
  const [name, type, ...flags] = words;
  const pk = flags.includes('pk');
  const ref = flags.find((f) => f.startsWith('>'))?.slice(1);
  const col: ParsedColumn = { name: name!, type: pgTypeName(type!), nullable: !pk && !flags.includes('nn'), pk };
  if (ref) col.ref = ref;
  const comment = rest.join(' # ').trim();
  if (comment) col.comment = comment;
  return col;
}

const key = (schema: string, name: string): string => (schema === DEFAULT_SCHEMA ? name : `${schema}.${name}`);

function realTables(limit: number): DomainTable[] {
  if (limit >= DOMAIN_TABLES.length) return [...DOMAIN_TABLES];
  const out: DomainTable[] = [];
  for (const domain of DOMAINS) {
    const mine = DOMAIN_TABLES.filter((t) => t.schema === domain);
    if (out.length + mine.length > limit) break;
    out.push(...mine);
  }
  return out;
}

function buildReal(defs: DomainTable[]): { tables: DbTable[]; pks: Record<string, string[]> } {
  const present = new Set(defs.map((d) => `${d.schema}.${d.name}`));
  const pks: Record<string, string[]> = {};
  const pkOf = new Map<string, string[]>();
  const parsed = defs.map((d) => ({ d, cols: d.columns.map(parseColumn) }));
  for (const { d, cols } of parsed) pkOf.set(`${d.schema}.${d.name}`, cols.filter((c) => c.pk).map((c) => c.name));
  const tables = parsed.map(({ d, cols }) => {
    const fks: NonNullable<DbTable['foreign_keys']> = [];
    for (const c of cols) {
      if (!c.ref || !present.has(c.ref)) continue;
      const [refSchema, refTable] = c.ref.split('.') as [string, string];
      const refPk = pkOf.get(c.ref)!;
      if (refPk.length !== 1) throw new Error(`${d.schema}.${d.name}.${c.name}: ${c.ref} has no one-column primary key`);
      fks.push({ columns: [c.name], ref_schema: refSchema, ref_table: refTable, ref_columns: refPk });
    }
    pks[key(d.schema, d.name)] = pkOf.get(`${d.schema}.${d.name}`)!;
    const table: DbTable = {
      schema: d.schema,
      name: d.name,
      kind: 'table',
      comment: d.comment,
      columns: cols.map(({ name, type, nullable, comment }) => (comment ? { name, type, nullable, comment } : { name, type, nullable })),
      row_estimate: d.rows,
    };
    if (fks.length) table.foreign_keys = fks;
    return table;
  });
  return { tables, pks };
}

// ---- noise ---------------------------------------------------------------------------------------

const YEARS = [2018, 2019, 2020, 2021, 2022, 2023, 2024];
const COPY_SUFFIXES = ['old', 'v2', 'v3', 'bak', 'backup', 'copy', 'new', 'test', 'tmp', 'dedup', 'fix', 'final', 'clean', 'hist', 'prev'];
const REGIONS = ['emea', 'apac', 'amer', 'latam', 'us', 'eu', 'uk', 'de', 'fr', 'jp'];
const COPY_PREFIXES = ['tmp', 'old', 'bak', 'test', 'copy_of', 'zz', 'x'];
const SIDE_SCHEMAS = ['staging', 'raw', 'archive', 'sandbox', 'legacy', 'landing', 'backup'];
const SANDBOX_USERS = ['jdoe', 'asmith', 'mlee', 'kpatel', 'rgarcia', 'tnguyen', 'analyst1', 'bi_team'];

const SUBJECTS = [
  'revenue', 'sales', 'orders', 'late_shipments', 'late_deliveries', 'deliveries', 'shipments', 'customers', 'clients', 'churn',
  'vendors', 'suppliers', 'spend', 'purchases', 'headcount', 'attrition', 'salaries', 'payroll', 'invoices', 'payments',
  'overdue_invoices', 'cash', 'mrr', 'stock', 'inventory', 'returns', 'refunds', 'tickets', 'complaints', 'csat', 'sla_breaches',
  'leads', 'campaigns', 'ad_spend', 'conversions', 'sessions', 'visits', 'page_views', 'pipeline', 'deals', 'win_rate', 'output',
  'downtime', 'defects', 'scrap', 'expenses', 'budget', 'margin', 'products', 'work_orders', 'freight_cost', 'reimbursements',
  'vacations', 'candidates', 'subscriptions', 'discounts', 'coupons', 'units_sold', 'on_time_delivery', 'exchange_rates',
];
const DIMS = [
  'carrier', 'region', 'customer', 'client', 'product', 'category', 'warehouse', 'channel', 'vendor', 'supplier', 'department',
  'plant', 'campaign', 'agent', 'team', 'rep', 'segment', 'country', 'plan', 'source', 'device', 'line', 'cost_center', 'account',
  'priority', 'stage', 'month', 'store', 'brand', 'job_title',
];
const GRAINS = ['daily', 'weekly', 'monthly', 'quarterly', 'yearly', 'ytd', 'mtd', '2021', '2022', '2023', '2024', 'hist', 'new', 'test', 'v2', 'latest', 'final'];
const REPORT_PREFIXES = ['rpt', 'agg', 'kpi', 'mart', 'dash', 'fct', 'summary', 'sum'];
const REPORT_SCHEMAS = ['reporting', 'analytics', 'mart', 'bi'];
const MEASURE_SUFFIXES = ['amt', 'cnt', 'qty', 'pct', 'avg', 'prev', 'yoy_pct', 'target', 'var', 'ytd', 'mtd', 'rank', 'share'];

const GENERIC_COLUMNS = [
  'id', 'created_at', 'updated_at', 'status', 'name', 'amount', 'customer_id', 'order_id', 'date', 'region', 'type', 'code', 'value',
  'flag', 'description', 'user_id', 'payload', 'source', 'category', 'total', 'price', 'qty', 'country', 'email', 'phone', 'city',
  'product_id', 'vendor_id', 'employee_id', 'invoice_no', 'ship_date', 'delivery_date', 'revenue', 'cost', 'score', 'label',
  'version', 'batch_id', 'session_id', 'event_ts', 'account_id', 'currency', 'notes', 'owner', 'is_deleted', 'tenant_id',
];
const UNRELATED_SCHEMAS = ['public', 'etl', 'ml', 'audit', 'ops', 'tmp', 'integration', 'legacy_erp'];
const UNRELATED_FORMS: ReadonlyArray<(r: Rand) => string> = [
  (r) => `evt_log_shard_${pad(int(r, 0, 999), 3)}`,
  (r) => `ml_features_${pick(r, ['user', 'item', 'session', 'account', 'basket'])}_v${int(r, 1, 9)}`,
  (r) => `etl_job_run_${pick(r, YEARS)}_${pad(int(r, 1, 52), 2)}`,
  (r) => `aud_trail_${pad(int(r, 0, 9999), 4)}`,
  (r) => `import_batch_${int(r, 1000, 99999)}`,
  (r) => `${pick(r, ['sap', 'ora', 'sfdc', 'ns', 'dyn'])}_${pick(r, ['ekpo', 'vbak', 'mara', 'bkpf', 'lfa1', 'kna1', 'obj', 'ext', 'tab'])}_${pick(r, ['extract', 'dump', 'load', 'raw', 'x'])}_${int(r, 1, 999)}`,
  (r) => `zz_misc_${int(r, 1, 99999)}`,
  (r) => `legacy_tbl_${pad(int(r, 0, 9999), 4)}`,
  (r) => `wide_export_${pick(r, ['finance', 'ops', 'bi', 'crm', 'erp'])}_${int(r, 1, 9999)}`,
  (r) => `tmp_${pick(r, ['calc', 'load', 'join', 'pivot', 'fix'])}_${int(r, 1, 99999)}`,
];

function dateTag(r: Rand): string {
  return `${pick(r, YEARS)}${pad(int(r, 1, 12), 2)}${pad(int(r, 1, 28), 2)}`;
}

function copyColumns(r: Rand, original: DbTable, keepComments: number): DbColumn[] {
  return original.columns.map((c) => {
    const out: DbColumn = { name: c.name, type: c.type, nullable: true };
    if (c.comment && r() < keepComments) out.comment = c.comment;
    return out;
  });
}

function copyComment(r: Rand, original: DbTable, what: string): string | undefined {
  const x = r();
  if (x < 0.4) return original.comment;
  if (x < 0.7) return `${what} of ${original.schema}.${original.name}`;
  return undefined;
}

/** One noise table (no name collision check: the caller skips names it holds). */
function noiseTable(r: Rand, family: NoiseFamily, reals: readonly DbTable[]): DbTable {
  const original = pick(r, reals);
  const base = (schema: string, name: string, comment: string | undefined, columns: DbColumn[], rows: number): DbTable => {
    const t: DbTable = { schema, name, kind: 'table', columns, row_estimate: rows };
    if (comment) t.comment = comment;
    return t;
  };
  const rows = Math.max(0, Math.round((original.row_estimate ?? 1000) * (0.05 + r() * 1.2)));
  switch (family) {
    case 'copy': {
      const x = r();
      let suffix: string;
      let what = 'Copy';
      if (x < 0.3) suffix = pick(r, COPY_SUFFIXES);
      else if (x < 0.45) suffix = String(pick(r, YEARS));
      else if (x < 0.6) { suffix = `archive_${pick(r, YEARS)}`; what = 'Archive'; }
      else if (x < 0.72) { suffix = `bkp_${dateTag(r)}`; what = 'Backup'; }
      else if (x < 0.84) { suffix = `snapshot_${dateTag(r)}`; what = 'Snapshot'; }
      else { suffix = pick(r, REGIONS); what = `Regional (${suffix.toUpperCase()}) copy`; }
      const t = base(original.schema, `${original.name}_${suffix}`, copyComment(r, original, what), copyColumns(r, original, 0.6), rows);
      // a `_v2`/`_v3` rebuild keeps its foreign keys to the originals
      if (/^v\d$/.test(suffix) && original.foreign_keys) t.foreign_keys = original.foreign_keys.map((fk) => ({ ...fk }));
      return t;
    }
    case 'prefix_copy': {
      const prefix = pick(r, COPY_PREFIXES);
      return base(original.schema, `${prefix}_${original.name}`, copyComment(r, original, 'Temporary copy'), copyColumns(r, original, 0.5), rows);
    }
    case 'staging': {
      const schema = pick(r, SIDE_SCHEMAS);
      const name = schema === 'staging' ? `stg_${original.schema}_${original.name}`
        : schema === 'raw' || schema === 'landing' ? `raw_${original.schema}_${original.name}${r() < 0.3 ? `_${dateTag(r)}` : ''}`
        : schema === 'sandbox' ? `${pick(r, SANDBOX_USERS)}_${original.name}${r() < 0.5 ? `_${int(r, 1, 9)}` : ''}`
        : `${original.schema}_${original.name}_${pick(r, YEARS)}`;
      const columns = copyColumns(r, original, 0.3);
      if (schema === 'staging' || schema === 'raw' || schema === 'landing') {
        columns.push({ name: '_loaded_at', type: 'timestamp without time zone', nullable: true }, { name: '_src_file', type: 'text', nullable: true }, { name: '_batch_id', type: 'bigint', nullable: true });
      }
      return base(schema, name, copyComment(r, original, `${schema[0]!.toUpperCase()}${schema.slice(1)} copy`), columns, rows);
    }
    case 'report': {
      const subject = pick(r, SUBJECTS);
      const dim = pick(r, DIMS);
      const grain = pick(r, GRAINS);
      const prefix = pick(r, REPORT_PREFIXES);
      const form = r();
      const name = form < 0.45 ? `${prefix}_${subject}_by_${dim}_${grain}` : form < 0.75 ? `${prefix}_${subject}_${grain}` : `${prefix}_${subject}_${dim}`;
      const schema = r() < 0.5 ? pick(r, REPORT_SCHEMAS) : original.schema;
      const columns: DbColumn[] = [
        { name: pick(r, ['period_dt', 'wk_start', 'mo', 'report_date', 'as_of_dt']), type: 'date', nullable: false },
        { name: `${dim}_id`, type: 'integer', nullable: true },
        { name: `${dim}_nm`, type: 'text', nullable: true },
      ];
      const width = int(r, 10, 80);
      const seen = new Set(columns.map((c) => c.name));
      const measures = [subject, pick(r, SUBJECTS), pick(r, SUBJECTS)];
      for (let i = 0; columns.length < width && i < width * 3; i++) {
        const name = `${pick(r, measures)}_${pick(r, MEASURE_SUFFIXES)}${r() < 0.3 ? `_${pick(r, REGIONS)}` : ''}`;
        if (seen.has(name)) continue;
        seen.add(name);
        columns.push({ name, type: r() < 0.5 ? 'numeric(18,2)' : 'bigint', nullable: true });
      }
      const words = subject.replace(/_/g, ' ');
      const comment = r() < 0.5 ? `Dashboard feed: ${words} by ${dim.replace(/_/g, ' ')} (${grain})` : undefined;
      return base(schema, name, comment, columns, int(r, 10, 200_000));
    }
    case 'unrelated': {
      const schema = pick(r, UNRELATED_SCHEMAS);
      const name = pick(r, UNRELATED_FORMS)(r);
      const width = int(r, 20, 150);
      const columns: DbColumn[] = [];
      const seen = new Set<string>();
      for (let i = 0; columns.length < width && i < width * 4; i++) {
        const x = r();
        const name = x < 0.5 ? pick(r, GENERIC_COLUMNS) : x < 0.8 ? `attr_${pad(int(r, 1, 300), 3)}` : `${pick(r, GENERIC_COLUMNS)}_${int(r, 1, 9)}`;
        if (seen.has(name)) continue;
        seen.add(name);
        columns.push({ name, type: pick(r, ['text', 'bigint', 'numeric(18,4)', 'timestamp without time zone', 'boolean', 'jsonb']), nullable: true });
      }
      return base(schema, name, r() < 0.2 ? 'Loaded by the nightly job' : undefined, columns, int(r, 0, 50_000_000));
    }
  }
}

/** the share of each family among noise tables */
const FAMILY_WEIGHTS: ReadonlyArray<[NoiseFamily, number]> = [['copy', 0.3], ['prefix_copy', 0.08], ['staging', 0.2], ['report', 0.25], ['unrelated', 0.17]];

function drawFamily(r: Rand): NoiseFamily {
  let x = r();
  for (const [f, w] of FAMILY_WEIGHTS) {
    if (x < w) return f;
    x -= w;
  }
  return 'unrelated';
}

// ---- the catalog -----------------------------------------------------------------------------------

const KNOWN_VALUES: Record<string, Record<string, string[]>> = {
  'sales.rgn': { rgn_nm: ['EMEA', 'APAC', 'AMER', 'LATAM'] },
  'sales.cust': { seg_cd: ['RETAIL', 'WHOLESALE', 'ENTERPRISE'], ctry_cd: ['DE', 'FR', 'US', 'GB', 'JP', 'BR'] },
  'sales.so_hdr': { ch_cd: ['WEB', 'STORE', 'PHONE', 'PARTNER'], stat_cd: ['OPEN', 'SHIPPED', 'CANCELLED', 'RETURNED'] },
  'sales.promo_cd': { code: ['SPRING20', 'WELCOME10', 'BF2024', 'FREESHIP'] },
  'sales.rtn': { rsn_cd: ['DAMAGED', 'WRONG_ITEM', 'NOT_NEEDED', 'LATE'] },
  'inventory.wh': { wh_nm: ['Dallas DC', 'Memphis DC', 'Rotterdam DC', 'Singapore DC', 'Reno DC'] },
  'inventory.prd': { sku: ['SKU-1042', 'SKU-2210', 'SKU-7781'] },
  'shipping.carr': { carr_nm: ['UPS', 'FedEx', 'DHL', 'USPS', 'Royal Mail', 'GLS'] },
  'shipping.svc_lvl': { descr: ['Ground', 'Express', 'Overnight', 'Economy'] },
  'shipping.dlv_exc': { exc_cd: ['DELAY', 'DAMAGED', 'ADDRESS', 'REFUSED'] },
  'shipping.addr': { city: ['Paris', 'Lyon', 'Berlin', 'Austin', 'Osaka'] },
  'hr.loc': { city: ['Berlin', 'Austin', 'London', 'Bangalore', 'Toronto'] },
  'hr.trn_crs': { crs_nm: ['Data Privacy Basics', 'Leadership 101', 'Safety at Work', 'SQL for Analysts'] },
  'hr.appl': { src_cd: ['REFERRAL', 'AGENCY', 'JOB_BOARD'], stage_cd: ['SCREEN', 'INTERVIEW', 'OFFER', 'HIRED', 'REJECTED'] },
  'hr.lv_req': { lv_typ: ['VACATION', 'SICK', 'PARENTAL', 'UNPAID'] },
  'finance.fx_rt': { curr_cd: ['EUR', 'USD', 'GBP', 'JPY'] },
  'finance.exp_ln': { exp_cat: ['TRAVEL', 'MEALS', 'LODGING', 'SUPPLIES'] },
  'billing.pmt': { mthd_cd: ['CARD', 'WIRE', 'ACH', 'CHECK'] },
  'billing.usage_rec': { metric_cd: ['API_CALLS', 'SEATS', 'STORAGE_GB'] },
  'manufacturing.plant': { plant_nm: ['Monterrey', 'Shenzhen', 'Leipzig', 'Pune'] },
  'manufacturing.prod_ln': { line_nm: ['Line 1', 'Line 2', 'Line 3', 'Line 4'] },
  'manufacturing.dt_evt': { rsn_cd: ['BREAKDOWN', 'CHANGEOVER', 'NO_MATERIAL', 'PLANNED'] },
  'marketing.cmp': { cmp_nm: ['Black Friday 2024', 'Spring Sale 2024', 'Summer Webinar'], ch_cd: ['EMAIL', 'SEARCH', 'SOCIAL', 'DISPLAY'] },
  'support.tkt': { prio_cd: ['P1', 'P2', 'P3', 'P4'] },
  'web.ab_exp': { exp_nm: ['checkout-button-color', 'free-shipping-banner', 'one-page-checkout'] },
  'web.sess': { dev_typ: ['desktop', 'mobile', 'tablet'], ref_src: ['google', 'facebook', 'direct', 'newsletter'] },
  'crm.acct': { industry: ['Banking', 'Retail', 'Healthcare', 'Manufacturing'] },
  'crm.partner': { tier: ['GOLD', 'SILVER', 'BRONZE'] },
};

const STAMP = '2026-01-01T00:00:00.000Z';

function semanticEntities(present: ReadonlySet<string>): SemanticEntity[] {
  const out: SemanticEntity[] = [];
  let columnId = 1;
  for (const s of DOMAIN_SYNONYMS) {
    if (!present.has(s.table)) continue;
    const [schema, table] = s.table.split('.') as [string, string];
    const def = DOMAIN_TABLES.find((t) => t.schema === schema && t.name === table)!;
    const id = out.length + 1;
    const columns: SemanticColumn[] = Object.entries(s.columns ?? {}).map(([name, synonyms]) => {
      const spec = parseColumn(def.columns.find((c) => c.startsWith(`${name} `))!);
      return {
        id: columnId++, entity_id: id, name, display_name: synonyms[0]!, description: spec.comment ?? '',
        role: /numeric|integer|bigint/.test(spec.type) && !spec.pk && !spec.ref ? 'metric' : 'dimension',
        synonyms, data_type: spec.type, created_at: STAMP, updated_at: STAMP,
      };
    });
    out.push({
      id, catalog: '', schema_name: schema, table_name: table, display_name: s.display, description: def.comment,
      primary_key: def.columns.map(parseColumn).filter((c) => c.pk).map((c) => c.name).join(','), entity_type: 'table',
      synonyms: s.synonyms, columns, created_at: STAMP, updated_at: STAMP,
    });
  }
  return out;
}

/** The catalog of `tables` tables for `seed` (the same object for the same arguments). */
export function generateCatalog(options: GenerateOptions): GeneratedCatalog {
  const total = Math.max(1, Math.floor(options.tables));
  const seed = options.seed ?? 13;
  const defs = realTables(total);
  const { tables: reals, pks } = buildReal(defs);
  const present = new Set(defs.map((d) => `${d.schema}.${d.name}`));
  const names = new Set(reals.map((t) => key(t.schema, t.name)));
  const noise: Record<string, NoiseFamily> = {};
  const tables: DbTable[] = [...reals];
  const r = rng(seed);
  let misses = 0;
  // families are visited in turn before the weighted draws, so every family is in a catalog with room for five
  let turn = 0;
  while (tables.length < total && reals.length > 0) {
    const family = turn < NOISE_FAMILIES.length ? NOISE_FAMILIES[turn++]! : drawFamily(r);
    const t = noiseTable(r, family, reals);
    const name = key(t.schema, t.name);
    if (names.has(name)) {
      if (++misses > total * 20) throw new Error(`could not find ${total} distinct table names`);
      continue;
    }
    names.add(name);
    noise[name] = family;
    tables.push(t);
  }
  const questions: LinkingQuestion[] = DOMAIN_QUESTIONS
    .filter((q) => q.answer.every((a) => present.has(a)))
    .map((q) => ({ question: q.question, answer_tables: [...new Set(q.answer)].map((a) => { const [s, n] = a.split('.') as [string, string]; return key(s, n); }).sort() }));
  const values: Record<string, Record<string, string[]>> = {};
  for (const [t, cols] of Object.entries(KNOWN_VALUES)) if (present.has(t)) values[t] = cols;
  return {
    introspection: { dialect: 'postgresql', provider: 'postgresql', default_schema: DEFAULT_SCHEMA, tables },
    questions,
    semantic: { entities: semanticEntities(present) },
    real: reals.map((t) => key(t.schema, t.name)),
    noise,
    primary_keys: pks,
    values,
  };
}

// ---- DDL -------------------------------------------------------------------------------------------

const ident = (s: string): string => `"${s.replace(/"/g, '""')}"`;
const literal = (s: string): string => `'${s.replace(/'/g, "''")}'`;

/**
 * PostgreSQL statements that create the catalog: schemas, tables (views are made tables too:
 * introspection reads them alike), primary keys of the real tables, comments, then foreign keys.
 * Meant for a database of its own (`cortado_bench_10k`).
 */
export function catalogDdl(catalog: GeneratedCatalog): string[] {
  const { tables } = catalog.introspection;
  const out: string[] = [];
  for (const schema of new Set(tables.map((t) => t.schema))) if (schema !== DEFAULT_SCHEMA) out.push(`CREATE SCHEMA IF NOT EXISTS ${ident(schema)}`);
  for (const t of tables) {
    const q = `${ident(t.schema)}.${ident(t.name)}`;
    const pk = catalog.primary_keys[key(t.schema, t.name)];
    const cols = t.columns.map((c) => `${ident(c.name)} ${c.type}${c.nullable ? '' : ' NOT NULL'}`);
    if (pk?.length) cols.push(`PRIMARY KEY (${pk.map(ident).join(', ')})`);
    const parts = [`CREATE TABLE ${q} (${cols.join(', ')})`];
    if (t.comment) parts.push(`COMMENT ON TABLE ${q} IS ${literal(t.comment)}`);
    for (const c of t.columns) if (c.comment) parts.push(`COMMENT ON COLUMN ${q}.${ident(c.name)} IS ${literal(c.comment)}`);
    out.push(parts.join(';\n'));
  }
  for (const t of tables) {
    for (const fk of t.foreign_keys ?? []) {
      out.push(`ALTER TABLE ${ident(t.schema)}.${ident(t.name)} ADD FOREIGN KEY (${fk.columns.map(ident).join(', ')}) REFERENCES ${ident(fk.ref_schema)}.${ident(fk.ref_table)} (${fk.ref_columns.map(ident).join(', ')})`);
    }
  }
  return out;
}

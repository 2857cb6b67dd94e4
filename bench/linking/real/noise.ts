/**
 * Warehouse noise around the real sources, the same every time from a seed: what a data
 * warehouse holds beside the tables a question needs.
 *
 * - raw: landing copies of every real table, Fivetran-style (`raw_<schema>.<table>`) and
 *   Airbyte-style (`landing.<source>_<table>`), holding the same rows, with ETL columns
 *   (`_loaded_at`, `_batch_id`, `_source_file`, the loader's own) that push them under a naive
 *   column-overlap test;
 * - staging: dbt staging views over the real and SaaS tables, `staging.stg_<source>__<plural>`;
 * - snapshot: dbt snapshots (`dbt_valid_from`, `dbt_valid_to`) of real tables;
 * - audit: `<table>_cdc`, `<table>_audit` and `<table>_history` beside the real table in its own
 *   schema, and `audit.log_<schema>_<table>`;
 * - sibling: whole real schemas copied under another name (`northwind_eu.orders`,
 *   `sales_eu.customer`), keys and rows included;
 * - copy: `_old`, `_v2`, `_bak`, `tmp_` copies beside the real tables, and yearly archives;
 * - saas: SaaS sources with their own customers, orders, products and users (Salesforce,
 *   HubSpot, Stripe, Shopify, Zendesk, NetSuite…), with or without declared keys, a few rows;
 * - erp: an SAP and an Oracle EBS replica with cryptic names (`sap.kna1`, `sap.vbak`);
 * - mart: dbt `int_`/`fct_`/`dim_` models of the SaaS business in several analytics schemas;
 * - report: wide `rpt_`/`agg_`/`kpi_` tables (100 columns and more) named by business words;
 * - events: daily event shards (`events_20240101`…);
 * - view: BI views over marts, reports and SaaS tables;
 * - team: the data team's pipeline, quality, ML and reference tables.
 *
 * `noisePlan(sources, count, seed)` draws the families by weight until `count` relations; a
 * family whose pool is spent leaves the draw. The first relations of a larger plan are the
 * relations of a smaller one with the same seed.
 */
import { rng } from '../generate.js';
import type { RowCopy } from './ddl.js';
import { parseColumn, parseForeignKey, type RealRows, type RealSchema, type RealSource, type RealTable, type RealView } from './model.js';
import { SYSTEMS, TEAM_TABLES, type SystemSpec } from './noise-sources.js';

export type NoiseFamily = 'raw' | 'staging' | 'snapshot' | 'audit' | 'sibling' | 'copy' | 'saas' | 'erp' | 'mart' | 'report' | 'events' | 'view' | 'team';
export const NOISE_FAMILIES: readonly NoiseFamily[] = ['raw', 'staging', 'snapshot', 'audit', 'sibling', 'copy', 'saas', 'erp', 'mart', 'report', 'events', 'view', 'team'];

export interface NoisePlan {
  schemas: RealSchema[];
  copies: RowCopy[];
  rows: RealRows[];
  /** `schema.name` → family */
  families: Record<string, NoiseFamily>;
}

interface Unit {
  family: NoiseFamily;
  schema: string;
  table?: RealTable;
  view?: RealView;
  copy?: RowCopy;
  rows?: RealRows;
}

interface Real {
  source: string;
  schema: string;
  table: RealTable;
}

const TS = 'timestamp with time zone';
const colName = (name: string): string => (/^[a-z_][a-z0-9_]*$/.test(name) ? name : `"${name.replaceAll('"', '""')}"`);
const col = (name: string, type: string): string => `${colName(name)} ${type}`;
/** a real table's columns as a copy holds them: same names and types, nullable, no comments */
const bareColumns = (t: RealTable): string[] => t.columns.map((c) => {
  const p = parseColumn(c);
  return col(p.name, p.type);
});
const names = (t: RealTable): string[] => t.columns.map((c) => parseColumn(c).name);
const quoted = (n: string): string => `"${n.replaceAll('"', '""')}"`;
const specColumns = (spec: string): string[] => spec.split(',').map((c) => c.trim());

export function plural(word: string): string {
  if (/(s|x|ch|sh)$/.test(word)) return /ss$|x$|ch$|sh$/.test(word) ? `${word}es` : word;
  if (/[^aeiou]y$/.test(word)) return `${word.slice(0, -1)}ies`;
  return `${word}s`;
}

// ---- the families ------------------------------------------------------------------------------

const FIVETRAN = [col('_fivetran_synced', TS), col('_fivetran_deleted', 'boolean'), col('_fivetran_id', 'text'), col('_loaded_at', TS), col('_batch_id', 'bigint'), col('_source_file', 'text')];
const AIRBYTE = [col('_airbyte_raw_id', 'text'), col('_airbyte_extracted_at', TS), col('_airbyte_meta', 'jsonb'), col('_airbyte_generation_id', 'bigint'), col('_loaded_at', TS), col('_batch_id', 'bigint'), col('_source_file', 'text'), col('_row_hash', 'text')];

function landingCopy(r: Real, schema: string, name: string, etl: readonly string[], family: NoiseFamily, hasRows: ReadonlySet<string>): Unit {
  const table: RealTable = { name, columns: [...bareColumns(r.table), ...etl] };
  const unit: Unit = { family, schema, table };
  if (hasRows.has(`${r.schema}.${r.table.name}`)) {
    const cols = names(r.table);
    const etlNames = etl.map((e) => parseColumn(e).name);
    const etlValue = (n: string): string => (n.endsWith('_at') || n.endsWith('_synced') ? `'2024-03-01 02:00:00+00'` : n.includes('deleted') ? 'false'
      : n.includes('batch') || n.includes('generation') ? '20240301' : n.endsWith('_meta') ? `'{}'` : n === '_source_file' ? `'s3://landing/${r.source}/${r.table.name}/part-00001.parquet'` : 'NULL');
    unit.copy = { into: `${schema}.${name}`, from: `${r.schema}.${r.table.name}`, columns: [...cols, ...etlNames], exprs: [...cols.map(quoted), ...etlNames.map(etlValue)] };
  }
  return unit;
}

function* rawFamily(reals: readonly Real[], hasRows: ReadonlySet<string>): Generator<Unit> {
  for (const r of reals) yield landingCopy(r, `raw_${r.schema}`, r.table.name, FIVETRAN, 'raw', hasRows);
}

function* landingFamily(reals: readonly Real[], hasRows: ReadonlySet<string>): Generator<Unit> {
  for (const r of reals) yield landingCopy(r, 'landing', `${r.source}_${r.table.name}`, AIRBYTE, 'raw', hasRows);
}

/** What the families that build on others read: the tables drawn so far, by kind. */
interface Drawn {
  saas: Unit[];
  /** marts, reports and SaaS tables no view is over yet */
  viewable: Unit[];
}

function* stagingFamily(reals: readonly Real[], drawn: Drawn, saasTables: number): Generator<Unit | undefined> {
  const view = (schema: string, name: string, from: string): Unit => ({
    family: 'staging', schema, view: { name, sql: `SELECT *, timestamptz '2024-03-01 02:00:00+00' AS _dbt_loaded_at FROM ${from.split('.').map(quoted).join('.')}` },
  });
  for (const r of reals) yield view('staging', `stg_${r.source}__${plural(r.table.name)}`, `${r.schema}.${r.table.name}`);
  // then the SaaS tables, as they are drawn
  for (let i = 0; i < saasTables;) {
    const u = drawn.saas[i];
    if (!u) {
      yield undefined;
      continue;
    }
    i++;
    yield view('staging', `stg_${u.schema}__${plural(u.table!.name)}`, `${u.schema}.${u.table!.name}`);
  }
}

function* snapshotFamily(reals: readonly Real[]): Generator<Unit> {
  const dbt = [col('dbt_scd_id', 'text'), col('dbt_updated_at', TS), col('dbt_valid_from', TS), col('dbt_valid_to', TS)];
  for (const r of reals) yield { family: 'snapshot', schema: 'snapshots', table: { name: `${r.source}__${r.table.name}_snapshot`, columns: [...bareColumns(r.table), ...dbt] } };
}

function* auditFamily(reals: readonly Real[], rand: () => number): Generator<Unit> {
  const kinds: Array<(r: Real) => Unit> = [
    (r) => ({ family: 'audit', schema: r.schema, table: { name: `${r.table.name}_cdc`, columns: [...bareColumns(r.table), col('_op', 'character(1)'), col('_lsn', 'bigint'), col('_commit_ts', TS), col('_txid', 'bigint')] } }),
    (r) => ({ family: 'audit', schema: r.schema, table: { name: `${r.table.name}_audit`, columns: [...bareColumns(r.table), col('audit_action', 'text'), col('audit_at', TS), col('audit_user', 'text'), col('audit_client_addr', 'inet')] } }),
    (r) => ({ family: 'audit', schema: r.schema, table: { name: `${r.table.name}_history`, columns: [...bareColumns(r.table), col('valid_from', TS), col('valid_to', TS), col('version', 'integer'), col('is_current', 'boolean')] } }),
    (r) => ({ family: 'audit', schema: 'audit', table: { name: `log_${r.schema}_${r.table.name}`, columns: [col('log_id', 'bigint'), col('action', 'text'), col('row_pk', 'text'), col('changed_at', TS), col('changed_by', 'text'), col('client_addr', 'inet'), col('old_values', 'jsonb'), col('new_values', 'jsonb')] } }),
  ];
  const pairs = reals.flatMap((r) => kinds.map((k) => ({ r, k })));
  for (const { r, k } of shuffle(pairs, rand)) yield k(r);
}

const SIBLINGS: ReadonlyArray<{ of: string; as: string; keys: boolean }> = [
  { of: 'northwind', as: 'northwind_eu', keys: true }, { of: 'chinook', as: 'chinook_archive', keys: false }, { of: 'sales', as: 'sales_eu', keys: false },
  { of: 'dvdrental', as: 'dvdrental_backup', keys: true }, { of: 'northwind', as: 'northwind_us', keys: true }, { of: 'tpch', as: 'tpch_sf100', keys: false },
  { of: 'employees', as: 'employees_dev', keys: true }, { of: 'world', as: 'world_old', keys: false }, { of: 'bookings', as: 'bookings_test', keys: false },
  { of: 'production', as: 'production_staging', keys: false },
];

function* siblingFamily(reals: readonly Real[], hasRows: ReadonlySet<string>): Generator<Unit> {
  for (const s of SIBLINGS) {
    const mine = reals.filter((r) => r.schema === s.of);
    for (const r of mine) {
      const table: RealTable = { name: r.table.name, columns: bareColumns(r.table) };
      if (r.table.pk) table.pk = r.table.pk;
      if (s.keys && r.table.fks) {
        // a restored copy keeps its keys, to the copy's own tables
        table.fks = r.table.fks.map((spec) => {
          const fk = parseForeignKey(spec);
          return fk.ref_schema === s.of ? `${fk.columns.join(', ')} -> ${s.as}.${fk.ref_table}(${fk.ref_columns.join(', ')})` : spec;
        });
      }
      const unit: Unit = { family: 'sibling', schema: s.as, table };
      if (hasRows.has(`${r.schema}.${r.table.name}`)) {
        const cols = names(r.table);
        unit.copy = { into: `${s.as}.${r.table.name}`, from: `${r.schema}.${r.table.name}`, columns: cols, exprs: cols.map(quoted) };
      }
      yield unit;
    }
  }
}

function* copyFamily(reals: readonly Real[], rand: () => number): Generator<Unit> {
  const kinds: Array<(r: Real) => Unit> = [
    (r) => ({ family: 'copy', schema: r.schema, table: { name: `${r.table.name}_old`, columns: bareColumns(r.table) } }),
    (r) => ({ family: 'copy', schema: r.schema, table: { name: `${r.table.name}_v2`, columns: [...bareColumns(r.table), col('migrated_at', TS)] } }),
    (r) => ({ family: 'copy', schema: r.schema, table: { name: `${r.table.name}_bak`, columns: bareColumns(r.table) } }),
    (r) => ({ family: 'copy', schema: r.schema, table: { name: `tmp_${r.table.name}`, columns: bareColumns(r.table) } }),
    (r) => ({ family: 'copy', schema: 'backup', table: { name: `${r.schema}_${r.table.name}_bkp_20230115`, columns: bareColumns(r.table) } }),
    ...[2019, 2020, 2021, 2022].map((y) => (r: Real): Unit => ({ family: 'copy', schema: 'archive', table: { name: `${r.schema}_${r.table.name}_${y}`, columns: bareColumns(r.table) } })),
  ];
  const pairs = reals.flatMap((r) => kinds.map((k) => ({ r, k })));
  for (const { r, k } of shuffle(pairs, rand)) yield k(r);
}

const isErp = (s: SystemSpec): boolean => s.schema === 'sap' || s.schema === 'ebs';

/** a few rows in some SaaS tables: their own customers' countries, product types, priorities, departments */
const SAAS_ROWS: readonly RealRows[] = [
  { table: 'salesforce.account', columns: ['id', 'name', 'type', 'industry', 'billing_city', 'billing_country'], values: [['0015g001', 'Acme Corporation', 'Customer', 'Manufacturing', 'Munich', 'Germany'], ['0015g002', 'Globex', 'Prospect', 'Technology', 'Toronto', 'Canada'], ['0015g003', 'Initech', 'Customer', 'Finance', 'Austin', 'United States'], ['0015g004', 'Umbrella Health', 'Customer', 'Healthcare', 'São Paulo', 'Brazil'], ['0015g005', 'Stark Industries', 'Partner', 'Energy', 'London', 'United Kingdom'], ['0015g006', 'Wayne Retail', 'Customer', 'Retail', 'Paris', 'France'], ['0015g007', 'Hooli', 'Prospect', 'Technology', 'Tokyo', 'Japan']] },
  { table: 'hubspot.companies', columns: ['id', 'name', 'industry', 'country', 'city'], values: [[101, 'Northwind Logistics', 'Logistics and Supply Chain', 'Germany', 'Berlin'], [102, 'Blue Yonder Airlines', 'Airlines/Aviation', 'United States', 'Seattle'], [103, 'Fabrikam', 'Computer Software', 'Canada', 'Montréal'], [104, 'Contoso Music', 'Music', 'Brazil', 'São Paulo'], [105, 'Tailspin Toys', 'Retail', 'United Kingdom', 'London']] },
  { table: 'shopify.products', columns: ['id', 'title', 'product_type', 'vendor', 'status'], values: [[7001, 'Cold Brew Coffee 12-pack', 'Beverages', 'Bean There', 'active'], [7002, 'Smoked Salmon Gift Box', 'Seafood', 'Nordic Catch', 'active'], [7003, 'Trail Helmet', 'Accessories', 'RideOn', 'active'], [7004, 'Road Bike Jersey', 'Clothing', 'RideOn', 'draft'], [7005, 'Vinyl: Greatest Hits', 'Music', 'Wax Records', 'active'], [7006, 'Paperback Thriller', 'Books', 'Page Turners', 'archived']] },
  { table: 'zendesk.tickets', columns: ['id', 'subject', 'status', 'priority', 'type', 'channel'], values: [[1, 'Order not delivered', 'open', 'urgent', 'incident', 'email'], [2, 'Refund request', 'pending', 'high', 'question', 'web'], [3, 'Wrong size shipped', 'solved', 'normal', 'problem', 'chat'], [4, 'Invoice copy', 'closed', 'low', 'task', 'email'], [5, 'Cannot log in', 'new', 'urgent', 'incident', 'voice']] },
  { table: 'netsuite.departments', columns: ['id', 'name', 'fullname'], values: [[1, 'Sales', 'Sales'], [2, 'Marketing', 'Marketing'], [3, 'Finance', 'G&A : Finance'], [4, 'Human Resources', 'G&A : Human Resources'], [5, 'Engineering', 'R&D : Engineering'], [6, 'Customer Service', 'Operations : Customer Service'], [7, 'Production', 'Operations : Production']] },
  { table: 'stripe.prices', columns: ['id', 'product_id', 'nickname', 'currency', 'unit_amount', 'recurring_interval', 'active', 'type'], values: [['price_1', 'prod_1', 'Starter Monthly', 'usd', 900, 'month', true, 'recurring'], ['price_2', 'prod_1', 'Starter Yearly', 'usd', 9000, 'year', true, 'recurring'], ['price_3', 'prod_2', 'Business Monthly', 'eur', 4900, 'month', true, 'recurring'], ['price_4', 'prod_3', 'Premium Support', 'usd', 19900, null, true, 'one_time']] },
];

function* systemFamily(systems: readonly SystemSpec[], family: NoiseFamily): Generator<Unit> {
  const units: Unit[] = [];
  for (const s of systems) {
    const key = s.key === undefined ? 'id' : s.key;
    const tables = Object.keys(s.tables);
    for (const name of tables) {
      const columns = specColumns(s.tables[name]!);
      const table: RealTable = { name, columns };
      const has = new Set(columns.map((c) => parseColumn(c).name));
      if (key && has.has(key)) table.pk = [key];
      if (s.fks && key) {
        const fks: string[] = [];
        for (const c of has) {
          const m = /^(.+)_id$/.exec(c);
          if (!m) continue;
          const target = [m[1]!, `${m[1]}s`, `${m[1]}es`, plural(m[1]!)].find((t) => tables.includes(t) && t !== name && specColumns(s.tables[t]!).some((x) => parseColumn(x).name === key));
          if (target) fks.push(`${c} -> ${s.schema}.${target}(${key})`);
        }
        if (fks.length) table.fks = fks;
      }
      const unit: Unit = { family, schema: s.schema, table };
      const rows = SAAS_ROWS.find((r) => r.table === `${s.schema}.${name}`);
      if (rows) unit.rows = rows;
      units.push(unit);
    }
  }
  // systems one after another, their tables in order: a connector lands a whole system
  yield* units;
}

const MART_TOPICS: Record<string, string> = {
  dim_customers: 'customer_key text, source_system text, customer_id text, customer_name text, email text, country text, city text, segment text, first_order_at timestamp with time zone, lifetime_orders integer, lifetime_revenue numeric, is_active boolean',
  dim_products: 'product_key text, source_system text, product_id text, product_name text, product_type text, vendor text, list_price numeric, is_active boolean',
  dim_users: 'user_key text, user_id text, email text, plan text, company text, signup_at timestamp with time zone, country text',
  dim_accounts: 'account_key text, account_id text, account_name text, industry text, owner text, country text, tier text',
  dim_date: 'date_day date, week_start date, month_start date, quarter integer, year integer, is_weekend boolean',
  dim_employees: 'employee_key text, worker_id text, full_name text, department text, job_title text, manager_key text, hire_date date, termination_date date, is_active boolean',
  dim_locations: 'location_key text, location_id text, name text, city text, country text, region text',
  dim_plans: 'plan_key text, price_id text, plan_name text, interval text, amount numeric, currency text',
  dim_campaigns: 'campaign_key text, platform text, campaign_id text, campaign_name text, channel text, status text',
  fct_orders: 'order_key text, source_system text, order_id text, customer_key text, order_date date, status text, currency text, gross_amount numeric, discount_amount numeric, tax_amount numeric, net_amount numeric, items integer',
  fct_order_items: 'order_item_key text, order_key text, product_key text, quantity integer, unit_price numeric, discount numeric, net_amount numeric',
  fct_sales: 'sale_key text, date_day date, customer_key text, product_key text, location_key text, channel text, quantity integer, revenue numeric, cost numeric, margin numeric',
  fct_payments: 'payment_key text, order_key text, customer_key text, paid_at timestamp with time zone, method text, amount numeric, fee numeric, currency text, status text',
  fct_invoices: 'invoice_key text, customer_key text, invoice_date date, due_date date, status text, amount_due numeric, amount_paid numeric, currency text',
  fct_subscriptions: 'subscription_key text, customer_key text, plan_key text, started_at timestamp with time zone, ended_at timestamp with time zone, status text, mrr numeric',
  fct_mrr: 'month_start date, customer_key text, plan_key text, mrr numeric, mrr_change numeric, change_category text',
  fct_tickets: 'ticket_key text, customer_key text, created_at timestamp with time zone, solved_at timestamp with time zone, priority text, status text, channel text, first_response_minutes integer, resolution_minutes integer, satisfaction text',
  fct_sessions: 'session_key text, user_key text, started_at timestamp with time zone, duration_seconds integer, pages integer, source text, medium text, campaign text, converted boolean',
  fct_ad_spend: 'date_day date, campaign_key text, platform text, impressions bigint, clicks bigint, spend numeric, conversions numeric, revenue numeric',
  fct_pipeline: 'opportunity_key text, account_key text, stage text, amount numeric, probability numeric, close_date date, owner text, is_won boolean',
  fct_headcount: 'month_start date, department text, location_key text, headcount integer, hires integer, terminations integer, fte numeric',
  fct_inventory_snapshot: 'snapshot_date date, product_key text, location_key text, on_hand integer, available integer, reserved integer, unit_cost numeric',
  fct_shipments: 'shipment_key text, order_key text, carrier text, shipped_at timestamp with time zone, delivered_at timestamp with time zone, status text, cost numeric',
  int_orders_joined_to_customers: 'order_id text, customer_id text, customer_email text, order_date date, status text, net_amount numeric',
  int_payments_pivoted_to_orders: 'order_id text, card_amount numeric, bank_transfer_amount numeric, gift_card_amount numeric, total_amount numeric',
  int_customer_order_history: 'customer_id text, first_order_date date, most_recent_order_date date, number_of_orders integer, customer_lifetime_value numeric',
  int_subscription_periods: 'subscription_id text, customer_id text, period_start date, period_end date, mrr numeric',
  int_ticket_first_response: 'ticket_id text, created_at timestamp with time zone, first_reply_at timestamp with time zone, business_minutes integer',
  int_sessions_sessionized: 'session_id text, anonymous_id text, user_id text, session_start timestamp with time zone, session_end timestamp with time zone, page_views integer',
};
const MART_SCHEMAS = ['analytics', 'marts', 'dbt_prod', 'dbt_dev_jsmith'];

function* martFamily(): Generator<Unit> {
  for (const schema of MART_SCHEMAS) {
    for (const [name, spec] of Object.entries(MART_TOPICS)) yield { family: 'mart', schema, table: { name, columns: specColumns(spec) } };
  }
}

const REPORT_SUBJECTS = ['sales', 'revenue', 'orders', 'customers', 'rentals', 'streams', 'tracks', 'films', 'flights', 'bookings', 'headcount', 'salaries', 'inventory', 'stock', 'returns', 'shipments', 'tickets', 'subscriptions', 'churn', 'payments', 'invoices', 'products', 'margin', 'traffic'];
const REPORT_DIMS = ['store', 'region', 'country', 'category', 'genre', 'channel', 'customer', 'product', 'department', 'carrier', 'segment', 'territory', 'airport', 'route', 'artist', 'supplier', 'vendor', 'city', 'brand', 'employee'];
const REPORT_GRAINS = ['daily', 'weekly', 'monthly', 'quarterly', 'ytd'];
const METRICS = ['net_sales', 'gross_sales', 'orders', 'units', 'customers', 'new_customers', 'returns', 'discounts', 'margin', 'cost', 'avg_order_value', 'conversion_rate'];
const WINDOWS = ['cur', 'prev', 'ly', 'd7', 'd28', 'mtd', 'qtd', 'ytd', 'var_ly', 'var_prev'];

function* reportFamily(rand: () => number): Generator<Unit> {
  const combos: string[] = [];
  for (const subject of REPORT_SUBJECTS) for (const dim of REPORT_DIMS) for (const grain of REPORT_GRAINS) combos.push(`${subject}|${dim}|${grain}`);
  for (const combo of shuffle(combos, rand)) {
    const [subject, dim, grain] = combo.split('|') as [string, string, string];
    const prefix = ['rpt', 'agg', 'kpi'][Math.floor(rand() * 3)]!;
    const dims = [col('report_date', 'date'), col(`${dim}_key`, 'text'), col(`${dim}_name`, 'text'), col('region', 'text'), col('country', 'text'), col('currency', 'text')];
    const metrics = METRICS.flatMap((m) => WINDOWS.map((w) => col(`${m}_${w}`, 'numeric')));
    yield { family: 'report', schema: 'reporting', table: { name: `${prefix}_${subject}_by_${dim}_${grain}`, columns: [...dims, ...metrics, col('refreshed_at', TS)] } };
  }
}

const EVENT_COLUMNS = ['event_date text', 'event_timestamp bigint', 'event_name text', 'event_params jsonb', 'event_previous_timestamp bigint', 'event_value_in_usd double precision', 'user_id text', 'user_pseudo_id text', 'user_properties jsonb', 'user_first_touch_timestamp bigint', 'device_category text', 'device_operating_system text', 'device_web_info_browser text', 'geo_continent text', 'geo_country text', 'geo_region text', 'geo_city text', 'traffic_source_name text', 'traffic_source_medium text', 'traffic_source_source text', 'stream_id text', 'platform text', 'ecommerce_transaction_id text', 'ecommerce_purchase_revenue double precision', 'items jsonb'];

function* eventsFamily(): Generator<Unit> {
  const properties = ['analytics_153293282', 'analytics_287163560', 'analytics_301942117'];
  const day0 = Date.UTC(2022, 0, 1);
  for (let d = 0; d < 1600; d++) {
    const day = new Date(day0 + d * 86_400_000).toISOString().slice(0, 10).replaceAll('-', '');
    for (const p of properties) yield { family: 'events', schema: p, table: { name: `events_${day}`, columns: EVENT_COLUMNS } };
  }
}

function* viewFamily(drawn: Drawn, rand: () => number): Generator<Unit | undefined> {
  for (;;) {
    if (!drawn.viewable.length) {
      yield undefined;
      continue;
    }
    const k = Math.floor(rand() * drawn.viewable.length);
    const t = drawn.viewable[k]!;
    drawn.viewable[k] = drawn.viewable[drawn.viewable.length - 1]!;
    drawn.viewable.pop();
    const name = t.family === 'saas' ? `v_${t.schema}_${t.table!.name}` : `v_${t.table!.name}`;
    yield { family: 'view', schema: t.family === 'report' ? 'bi_reports' : 'bi', view: { name, sql: `SELECT * FROM ${quoted(t.schema)}.${quoted(t.table!.name)}` } };
  }
}

function* teamFamily(): Generator<Unit> {
  for (const [name, spec] of Object.entries(TEAM_TABLES)) {
    const [schema, table] = name.split('.') as [string, string];
    yield { family: 'team', schema, table: { name: table, columns: specColumns(spec) } };
  }
}

function shuffle<T>(xs: readonly T[], rand: () => number): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

// ---- the draw ------------------------------------------------------------------------------------

const SCHEMA_COMMENTS: Record<string, string> = {
  landing: 'Airbyte landing zone: raw extracts, one table per source stream',
  staging: 'dbt staging models: one view per source table, renamed and typed',
  snapshots: 'dbt snapshots (type-2 history of source tables)',
  audit: 'row-level change log written by triggers',
  archive: 'yearly archives of source tables',
  backup: 'one-off backups before migrations',
  reporting: 'report tables refreshed nightly for the BI tool',
  sap: 'SAP ECC replica (SLT)',
  ebs: 'Oracle E-Business Suite replica',
};

/** `count` noise relations around the sources (whose `rows` landing and sibling copies take too), drawn by weight from the families. */
export function noisePlan(sources: readonly RealSource[], sampleRows: readonly RealRows[], count: number, seed: number): NoisePlan {
  const rand = rng(seed);
  const reals: Real[] = sources.flatMap((s) => s.schemas.flatMap((schema) => schema.tables.map((table) => ({ source: s.id, schema: schema.name, table }))));
  const hasRows = new Set(sampleRows.map((r) => r.table));
  const taken = new Set(sources.flatMap((s) => s.schemas.flatMap((schema) => [...schema.tables.map((t) => `${schema.name}.${t.name}`), ...(schema.views ?? []).map((v) => `${schema.name}.${v.name}`)])));
  const emitted: Unit[] = [];
  const drawn: Drawn = { saas: [], viewable: [] };
  const saas = SYSTEMS.filter((x) => !isErp(x));
  const families: Array<{ weight: number; it: Iterator<Unit | undefined> }> = [
    { weight: 10, it: rawFamily(reals, hasRows) },
    { weight: 6, it: landingFamily(reals, hasRows) },
    { weight: 8, it: stagingFamily(reals, drawn, saas.reduce((n, x) => n + Object.keys(x.tables).length, 0)) },
    { weight: 4, it: snapshotFamily(reals) },
    { weight: 7, it: auditFamily(reals, rand) },
    { weight: 6, it: siblingFamily(reals, hasRows) },
    { weight: 6, it: copyFamily(reals, rand) },
    { weight: 12, it: systemFamily(saas, 'saas') },
    { weight: 4, it: systemFamily(SYSTEMS.filter(isErp), 'erp') },
    { weight: 5, it: martFamily() },
    { weight: 12, it: reportFamily(rand) },
    { weight: 10, it: eventsFamily() },
    { weight: 3, it: viewFamily(drawn, rand) },
    { weight: 2, it: teamFamily() },
  ];
  let idle = 0;
  while (emitted.length < count) {
    if (!families.length) throw new Error(`warehouse noise: the families hold ${emitted.length} relations, ${count} asked for`);
    const total = families.reduce((n, f) => n + f.weight, 0);
    let x = rand() * total;
    const k = families.findIndex((f) => (x -= f.weight) < 0);
    const f = families[k < 0 ? families.length - 1 : k]!;
    const next = f.it.next();
    if (next.done) {
      families.splice(families.indexOf(f), 1);
      continue;
    }
    const unit = next.value;
    if (!unit) {
      // a family waiting on others (views over tables not drawn yet); give up when only such remain
      if (++idle > 10_000) throw new Error(`warehouse noise: stuck at ${emitted.length} of ${count} relations`);
      continue;
    }
    idle = 0;
    const name = `${unit.schema}.${unit.table?.name ?? unit.view!.name}`;
    if (taken.has(name)) continue;
    taken.add(name);
    emitted.push(unit);
    if (unit.family === 'saas') drawn.saas.push(unit);
    if (unit.table && (unit.family === 'saas' || unit.family === 'mart' || unit.family === 'report')) drawn.viewable.push(unit);
  }
  const bySchema = new Map<string, RealSchema>();
  const copies: RowCopy[] = [];
  const rows: RealRows[] = [];
  const out: Record<string, NoiseFamily> = {};
  for (const u of emitted) {
    let s = bySchema.get(u.schema);
    if (!s) {
      s = { name: u.schema, tables: [], views: [] };
      if (SCHEMA_COMMENTS[u.schema]) s.comment = SCHEMA_COMMENTS[u.schema]!;
      bySchema.set(u.schema, s);
    }
    if (u.table) s.tables.push(u.table);
    if (u.view) s.views!.push(u.view);
    if (u.copy) copies.push(u.copy);
    if (u.rows) rows.push(u.rows);
    out[`${u.schema}.${u.table?.name ?? u.view!.name}`] = u.family;
  }
  // noise in a real schema (cdc, audit, copies) is a second entry of the same name: the DDL creates each schema once
  const schemas = [...bySchema.values()];
  // a foreign key of a sibling copy to a table of the copy the plan did not draw goes to the original instead
  const present = new Set(Object.keys(out));
  for (const s of schemas) {
    for (const t of s.tables) {
      if (!t.fks) continue;
      t.fks = t.fks.map((spec) => {
        const fk = parseForeignKey(spec);
        const target = `${fk.ref_schema}.${fk.ref_table}`;
        if (present.has(target) || !out[`${s.name}.${t.name}`]) return spec;
        const sibling = SIBLINGS.find((x) => x.as === fk.ref_schema);
        return sibling ? `${fk.columns.join(', ')} -> ${sibling.of}.${fk.ref_table}(${fk.ref_columns.join(', ')})` : spec;
      }).filter((spec) => {
        const fk = parseForeignKey(spec);
        return present.has(`${fk.ref_schema}.${fk.ref_table}`) || taken.has(`${fk.ref_schema}.${fk.ref_table}`);
      });
    }
  }
  return { schemas, copies, rows, families: out };
}

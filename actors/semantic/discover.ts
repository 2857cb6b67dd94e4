/**
 * Auto-discover (POST /api/semantic/discover): the executor profiles the schema's tables
 * (`sql.profile`: statistics where the engine keeps them, else a bounded sample), and this turns
 * the figures into suggestions an admin accepts in one click: entities with display names and
 * descriptions, each column's role (dimension, metric with its aggregation, or neither) with a
 * short reason, and relationships:
 *
 * 1. declared foreign keys (confidence 1);
 * 2. names: `<x>_id` → the table `<x>` / `<x>s` (its key, or `id`), checked by value overlap
 *    (confidence: the share of sampled values found; 0.5 when there was nothing to check);
 * 3. value overlap alone: a key-like column (`…_id`, `…_ref`, `…_code`, `…_no`, …) whose
 *    sampled values are found in another table's key (confidence: that share, kept from 0.8).
 *
 * Sample values and min/max come masked from sql.profile (the executor masks them with the
 * table's SELECT for the lineage): a masked column is `masked: true` with masked values.
 * Nothing is stored here: the suggestions say which tables already have an entity.
 */
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import { CortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/log.js';
import { textProblem } from '../../protocol/schemas/text.js';
import type { Cell } from '../../protocol/schemas/common.js';
import type { ColumnStats, OverlapPair, SqlProfileReply, TableProfile } from '../../protocol/schemas/profile.js';
import type {
  Aggregation, ColumnProfile, DiscoverReply, DiscoverRequest, SemanticEntity, SuggestedEntity, SuggestedRelationship,
} from '../../protocol/schemas/semantic.js';
import { SemanticDiscover, SqlProfile } from '../../protocol/subjects.js';
import type { SemanticRepository } from '../../store/semantic.js';

export interface DiscoverDeps {
  bus: Pick<Bus, 'request'>;
  log: Logger;
  store: { semantic: Pick<SemanticRepository, 'listEntities'> };
}

/** Overlap checks asked of the executor in one discovery, at most (its contract's limit). */
const MAX_OVERLAP_PAIRS = 100;
/** Of the profile's share of the time: the rest is for the overlap checks. */
const PROFILE_SHARE = 0.7;
/** An overlap-only suggestion needs this share of the sampled values found, and this many values. */
const OVERLAP_MIN_SHARE = 0.8;
const OVERLAP_MIN_VALUES = 3;
/** A name match whose sampled values are mostly not found is dropped. */
const NAME_MIN_SHARE = 0.5;

export async function discover(input: DiscoverRequest, deps: DiscoverDeps, ctx: Ctx): Promise<DiscoverReply> {
  const started = performance.now();
  checkNames(input);
  const deadline = Math.min(ctx.deadline ?? Infinity, Date.now() + SemanticDiscover.timeoutMs);
  const profileDeadline = Date.now() + Math.floor((deadline - Date.now()) * PROFILE_SHARE);
  const tables = input.tables?.length ? input.tables : undefined;
  const profiled = await deps.bus.request(SqlProfile, {
    schema: input.schema,
    ...(input.catalog ? { catalog: input.catalog } : {}),
    ...(tables ? { tables } : {}),
  }, { ...ctx, deadline: profileDeadline });

  const existing = await deps.store.semantic.listEntities({ schema_name: input.schema });
  const relationships = await suggestRelationships(profiled, input, deps, { ...ctx, deadline });
  const entities = profiled.tables.map((t) => suggestEntity(t, columnProfiles(t, valuesOf(t)), input, existing));
  const reply: DiscoverReply = {
    entities,
    relationships,
    missing: profiled.missing,
    duration_ms: Math.round(performance.now() - started),
  };
  if (profiled.truncated) reply.truncated = true;
  deps.log.info({ rid: ctx.requestId, subj: SemanticDiscover.subject, entities: entities.length, relationships: relationships.length, missing: reply.missing.length, ms: reply.duration_ms }, 'discovered');
  return reply;
}

/** Names reach the executor as names: a control character is refused here, naming the field. */
function checkNames(input: DiscoverRequest): void {
  const fields: Array<[string, string | undefined]> = [['schema', input.schema], ['catalog', input.catalog], ...(input.tables ?? []).map((t, i): [string, string] => [`tables[${i}]`, t])];
  for (const [field, value] of fields) {
    const problem = value === undefined ? undefined : textProblem(value, 'name');
    if (problem) throw new CortadoError('VALIDATION_FAILED', `${field}: ${problem}`, { field });
  }
}

// ---- entities and columns ---------------------------------------------------------------------

function suggestEntity(t: TableProfile, columns: ColumnProfile[], input: DiscoverRequest, existing: SemanticEntity[]): SuggestedEntity {
  const catalog = input.catalog ?? '';
  const found = existing.find((e) => e.table_name === t.name && e.schema_name === input.schema && e.catalog === catalog);
  return {
    catalog,
    schema_name: input.schema,
    table_name: t.name,
    display_name: displayName(t.name),
    description: t.comment ?? '',
    primary_key: primaryKeyOf(t).join(', '),
    entity_type: t.kind,
    ...(t.row_count !== undefined ? { row_count: t.row_count } : {}),
    columns,
    ...(found ? { existing_entity_id: found.id } : {}),
  };
}

/** The declared key; else an `id` column (engines without declared keys). */
function primaryKeyOf(t: TableProfile): string[] {
  if (t.primary_key.length) return t.primary_key;
  const id = t.columns.find((c) => c.name.toLowerCase() === 'id');
  return id ? [id.name] : [];
}

/** `order_lines` → `Order lines`, `customerId` → `Customer ID`. */
export function displayName(name: string): string {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/[\s_\-.]+/)
    .filter(Boolean)
    .map((w) => (/^id$/i.test(w) ? 'ID' : w.toLowerCase()));
  const text = words.join(' ') || name;
  return text.charAt(0).toUpperCase() + text.slice(1);
}

type Kind = 'number' | 'integer' | 'boolean' | 'temporal' | 'text' | 'uuid' | 'other';

/** The type family of a database type name, for every engine's spelling. */
export function kindOf(type: string): Kind {
  const t = type.toLowerCase().trim();
  if (/^(tinyint\(1\)|bool\b|boolean\b)/.test(t)) return 'boolean';
  if (/\[\]$|^(array|struct|row|map|record|json|jsonb|bytea|bytes|blob|binary|varbinary|geometry|geography|point|tsvector|xml)\b/.test(t)) return 'other';
  if (/^(smallint|integer|int|int2|int4|int8|int64|bigint|tinyint|mediumint|serial|bigserial|smallserial)\b/.test(t)) return 'integer';
  if (/^(numeric|decimal|real|double|float|float4|float8|float64|bignumeric|money|number)\b/.test(t)) return 'number';
  if (/^(date|datetime|time|timestamp|year)\b/.test(t)) return 'temporal';
  if (/^uuid\b/.test(t)) return 'uuid';
  if (/^(char|character|varchar|nvarchar|text|tinytext|mediumtext|longtext|string|enum|set|citext|name|bpchar)\b/.test(t)) return 'text';
  return 'other';
}

/** `id`, `customer_id`, `CUSTOMER_ID`, `order_uuid` … and camelCase `customerId` / `customerID` (but not `paid`). */
const IDENTIFIER_NAME = /(^|_)(id|uuid|guid|key)$/i;
const CAMEL_IDENTIFIER = /[a-z0-9](Id|ID)$/;
const SUM_FIRST = /(^|_)(total|amount|amt|sum)(_|$)|total|amount/i;
const AVERAGED = /(^|_)(rate|ratio|pct|percent|percentage|price|score|rating|avg|average|margin|age|discount|share|probability|latitude|longitude|lat|lon|lng)(_|$)|price|rate$|ratio$|percent/i;
const SUMMED = /(^|_)(qty|quantity|count|revenue|cost|sales|value|balance|spend|fee|fees|tax|units|volume|weight|duration|profit|income|paid|hours|minutes|seconds|clicks|views|visits)(_|$)/i;
const FREE_TEXT_NAME = /(^|_)(description|comment|comments|note|notes|body|text|message|remarks|summary|content|bio|details)$/i;

interface RoleContext {
  isPrimaryKey: boolean;
  /** the table a declared foreign key of this column points at */
  foreignKeyTo: string | undefined;
  rowCount: number | undefined;
}

/** The suggested role of one column, its aggregation when a metric, and why. */
export function suggestRole(c: Pick<ColumnStats, 'name' | 'data_type' | 'distinct_count' | 'avg_length'>, r: RoleContext): Pick<ColumnProfile, 'suggested_role' | 'suggested_aggregation' | 'reason'> {
  const none = (reason: string) => ({ suggested_role: 'none' as const, reason });
  const dimension = (reason: string) => ({ suggested_role: 'dimension' as const, reason });
  const metric = (aggregation: Aggregation, reason: string) => ({ suggested_role: 'metric' as const, suggested_aggregation: aggregation, reason });
  const kind = kindOf(c.data_type);
  if (r.isPrimaryKey) return none('primary key: identifies a row');
  if (r.foreignKeyTo) return none(`key to ${r.foreignKeyTo}: used to join, not to group or add up`);
  if ((IDENTIFIER_NAME.test(c.name) || CAMEL_IDENTIFIER.test(c.name)) && kind !== 'number') return none('an identifier (by its name)');
  if (kind === 'uuid') return none('an identifier (uuid)');
  if (kind === 'boolean') return dimension('yes/no flag: group or filter by it');
  if (kind === 'temporal') return dimension('date/time: group by day, month or year');
  if (kind === 'integer' || kind === 'number') {
    if (SUM_FIRST.test(c.name)) return metric('sum', 'an amount: adds up');
    if (AVERAGED.test(c.name)) return metric('avg', 'a rate, price or percentage: averaged');
    if (SUMMED.test(c.name)) return metric('sum', 'a quantity: adds up');
    const few = c.distinct_count !== undefined && c.distinct_count <= 12 && (r.rowCount === undefined || r.rowCount >= 30 || c.distinct_count <= r.rowCount / 3);
    if (kind === 'integer' && few) return dimension(`whole numbers with few distinct values (${c.distinct_count}): a code or category`);
    return metric('sum', 'numeric: adds up');
  }
  if (kind === 'text') {
    if ((c.avg_length !== undefined && c.avg_length > 60) || (FREE_TEXT_NAME.test(c.name) && /text/i.test(c.data_type))) return none('free text: too long and varied to group by');
    if (c.distinct_count !== undefined && c.distinct_count <= 50) return dimension(`text with few distinct values (${c.distinct_count}): group or filter by it`);
    return dimension('text: group or filter by it');
  }
  return none(`${c.data_type} is neither grouped by nor added up`);
}

function columnProfiles(t: TableProfile, values: MaskedValues[]): ColumnProfile[] {
  const pk = new Set(primaryKeyOf(t));
  const fkTo = new Map<string, string>();
  for (const fk of t.foreign_keys) for (const c of fk.columns) fkTo.set(c, fk.ref_table);
  return t.columns.map((c, i) => {
    const v = values[i]!;
    const role = suggestRole(c, { isPrimaryKey: pk.has(c.name), foreignKeyTo: fkTo.get(c.name), rowCount: t.row_count });
    const out: ColumnProfile = {
      name: c.name,
      data_type: c.data_type,
      nullable: c.nullable,
      ...(c.comment ? { comment: c.comment } : {}),
      ...(c.distinct_count !== undefined ? { distinct_count: c.distinct_count } : {}),
      ...(c.null_fraction !== undefined ? { null_fraction: c.null_fraction } : {}),
      ...(v.min !== undefined ? { min: v.min } : {}),
      ...(v.max !== undefined ? { max: v.max } : {}),
      sample_values: v.sample_values,
      source: c.source ?? 'sample',
      ...role,
      ...(v.masked ? { masked: true } : {}),
    };
    if (!c.source) out.reason = `${out.reason} (no figures: ${t.note ?? 'not profiled'})`;
    return out;
  });
}

// ---- masking ----------------------------------------------------------------------------------

interface MaskedValues {
  min?: Cell;
  max?: Cell;
  sample_values: Cell[];
  masked: boolean;
}

/** Each table's values as sql.profile answered them: masked by the executor already (`masked` on a column a rule covers). */
function valuesOf(t: TableProfile): MaskedValues[] {
  return t.columns.map((c) => ({
    ...(c.min !== undefined ? { min: c.min } : {}),
    ...(c.max !== undefined ? { max: c.max } : {}),
    sample_values: c.sample_values,
    masked: c.masked === true,
  }));
}

// ---- relationships ----------------------------------------------------------------------------

interface Candidate {
  pair: OverlapPair;
  evidence: 'name' | 'overlap';
}

async function suggestRelationships(p: SqlProfileReply, input: DiscoverRequest, deps: DiscoverDeps, ctx: Ctx): Promise<SuggestedRelationship[]> {
  const label = (table: string, schema = input.schema): string => `${schema}.${table}`;
  const out: SuggestedRelationship[] = [];
  const linked = new Set<string>(); // table.column already related
  const byName = new Map(p.tables.map((t) => [t.name, t]));

  // 1. declared foreign keys (single-column: a relationship joins one column to one column)
  for (const t of p.tables) {
    for (const fk of t.foreign_keys) {
      if (fk.columns.length !== 1 || fk.ref_columns.length !== 1) continue;
      const from = fk.columns[0]!;
      const to = fk.ref_columns[0]!;
      const pk = primaryKeyOf(t);
      out.push(relationship(label(t.name), from, label(fk.ref_table, fk.ref_schema === p.schema ? input.schema : fk.ref_schema), to,
        pk.length === 1 && pk[0] === from ? 'one_to_one' : 'many_to_one', 'foreign_key', 1, t.name, fk.ref_table));
      linked.add(`${t.name}.${from}`);
    }
  }

  // 2. name matches, 3. key-like columns against other tables' keys: both checked by overlap
  const candidates: Candidate[] = [];
  for (const t of p.tables) {
    const pk = new Set(primaryKeyOf(t));
    for (const c of t.columns) {
      if (pk.has(c.name) || linked.has(`${t.name}.${c.name}`)) continue;
      const target = nameTarget(c.name, t, byName);
      if (target) candidates.push({ pair: { from_table: t.name, from_column: c.name, to_table: target.table.name, to_column: target.column }, evidence: 'name' });
    }
  }
  const named = new Set(candidates.map((c) => `${c.pair.from_table}.${c.pair.from_column}`));
  for (const t of p.tables) {
    const pk = new Set(primaryKeyOf(t));
    for (const c of t.columns) {
      const key = `${t.name}.${c.name}`;
      if (pk.has(c.name) || linked.has(key) || named.has(key)) continue;
      for (const other of p.tables) {
        const otherKey = primaryKeyOf(other);
        if (otherKey.length !== 1) continue;
        const toColumn = other.columns.find((x) => x.name === otherKey[0]);
        if (!toColumn || (other === t && toColumn.name === c.name)) continue;
        if (!keyLike(c.name, other) || family(c.data_type) !== family(toColumn.data_type) || family(c.data_type) === 'other') continue;
        candidates.push({ pair: { from_table: t.name, from_column: c.name, to_table: other.name, to_column: toColumn.name }, evidence: 'overlap' });
      }
    }
  }
  const asked = candidates.slice(0, MAX_OVERLAP_PAIRS);
  if (!asked.length) return out;

  let checked: SqlProfileReply['overlaps'] = [];
  try {
    const reply = await deps.bus.request(SqlProfile, { schema: input.schema, ...(input.catalog ? { catalog: input.catalog } : {}), tables: [], overlaps: asked.map((c) => c.pair) }, ctx);
    checked = reply.overlaps;
  } catch (err) {
    // the suggestions by name stand without their check; overlap-only ones need it
    deps.log.warn({ rid: ctx.requestId, err: (err as Error).message }, 'value overlap could not be checked');
  }
  const result = (c: Candidate) => checked.find((o) => o.from_table === c.pair.from_table && o.from_column === c.pair.from_column && o.to_table === c.pair.to_table && o.to_column === c.pair.to_column);

  for (const c of asked.filter((x) => x.evidence === 'name')) {
    const r = result(c);
    const confidence = r && !r.error && r.sampled > 0 ? r.share : 0.5;
    if (r && !r.error && r.sampled > 0 && r.share < NAME_MIN_SHARE) continue;
    out.push(relationship(label(c.pair.from_table), c.pair.from_column, label(c.pair.to_table), c.pair.to_column, 'many_to_one', 'name', round(confidence), c.pair.from_table, c.pair.to_table));
  }
  // overlap alone: per column, the best share (a target named in the column first on a tie)
  const best = new Map<string, Array<{ c: Candidate; share: number }>>();
  for (const c of asked.filter((x) => x.evidence === 'overlap')) {
    const r = result(c);
    if (!r || r.error || r.sampled < OVERLAP_MIN_VALUES || r.share < OVERLAP_MIN_SHARE) continue;
    const key = `${c.pair.from_table}.${c.pair.from_column}`;
    const list = best.get(key) ?? [];
    list.push({ c, share: r.share });
    best.set(key, list);
  }
  for (const list of best.values()) {
    const top = Math.max(...list.map((x) => x.share));
    let winners = list.filter((x) => x.share === top);
    const namedIn = winners.filter((x) => mentions(x.c.pair.from_column, x.c.pair.to_table));
    if (namedIn.length) winners = namedIn;
    for (const { c, share } of winners) {
      out.push(relationship(label(c.pair.from_table), c.pair.from_column, label(c.pair.to_table), c.pair.to_column, 'many_to_one', 'overlap', round(share), c.pair.from_table, c.pair.to_table));
    }
  }
  return out;
}

function relationship(
  fromTable: string, fromColumn: string, toTable: string, toColumn: string,
  type: SuggestedRelationship['relationship_type'], evidence: SuggestedRelationship['evidence'], confidence: number,
  fromName: string, toName: string,
): SuggestedRelationship {
  return {
    name: `${fromName}.${fromColumn} → ${toName}`,
    from_table: fromTable,
    from_column: fromColumn,
    to_table: toTable,
    to_column: toColumn,
    relationship_type: type,
    join_type: 'LEFT',
    evidence,
    confidence,
  };
}

/** The singular and plural spellings a table for `base` may have. */
function tableNamesFor(base: string): string[] {
  const b = base.toLowerCase();
  const out = [b, `${b}s`, `${b}es`];
  if (/[^aeiou]y$/.test(b)) out.push(`${b.slice(0, -1)}ies`);
  return out;
}

/** `customer_id` / `customerId` → the table customer(s) and its key (or `id`, or a column of the same name). */
function nameTarget(column: string, from: TableProfile, tables: Map<string, TableProfile>): { table: TableProfile; column: string } | undefined {
  const m = /^(.+?)_?id$/i.exec(column);
  if (!m || !m[1]) return undefined;
  const names = tableNamesFor(m[1].replace(/_$/, ''));
  for (const t of tables.values()) {
    if (!names.includes(t.name.toLowerCase())) continue;
    const key = primaryKeyOf(t);
    const to = key.length === 1 ? key[0]! : t.columns.find((c) => c.name.toLowerCase() === 'id')?.name ?? t.columns.find((c) => c.name === column)?.name;
    if (!to || (t === from && to === column)) continue;
    return { table: t, column: to };
  }
  return undefined;
}

/** A column that may hold another table's key: a key-like name, the key's own name, or the table's name. */
function keyLike(column: string, target: TableProfile): boolean {
  const c = column.toLowerCase();
  if (/(^|_)(id|key|code|ref|no|num|number|sku)$/.test(c) || /[a-z0-9]Id$/.test(column)) return true;
  const key = primaryKeyOf(target);
  if (key.length === 1 && key[0]!.toLowerCase() === c) return true;
  return mentions(column, target.name);
}

/** The column's name holds the table's name, singular or plural (`buyer_customer` and customers). */
function mentions(column: string, table: string): boolean {
  const c = column.toLowerCase();
  const t = table.toLowerCase();
  const singular = t.endsWith('ies') ? `${t.slice(0, -3)}y` : t.endsWith('s') ? t.slice(0, -1) : t;
  return c.includes(t) || (singular.length >= 3 && c.includes(singular));
}

/** Types whose values compare: whole numbers, other numbers, text, uuids. */
function family(type: string): string {
  const k = kindOf(type);
  return k === 'integer' || k === 'number' ? 'number' : k;
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}

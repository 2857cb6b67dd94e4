/**
 * The business-context block the model reads (SPEC.md "Prompt injection rules" 1-4), and the
 * part of the layer a question needs. Pure: the layer in, the ContextReply out.
 *
 * 1. Entities (business name, description, dimensions, metrics, primary key, synonyms),
 *    relationships (name, `from_table.from_column = to_table.to_column`, type, join type) and
 *    metrics (display name, description, the SQL expression, format).
 * 2. The model is told to use a relationship's exact join condition and to prefer LEFT JOIN
 *    (or the relationship's own join type) unless the question says otherwise.
 * 3. And to use a metric's SQL expression verbatim, without recalculating it.
 * 4. Injected only when the layer lives in PostgreSQL (config_db) and an entity is defined.
 *
 * The header (our instructions) stands before a fence; what admins and the auto-discovery wrote
 * (names, descriptions, synonyms, expressions) is inside it, as data (lib/model-io/prompting.ts).
 *
 * Relevance: with `tables` (the tables of the question's prompt, named as the catalog names
 * them: unqualified in the default schema, `schema.table` elsewhere) only the entities of those
 * tables go in, the relationships between two of them, and the active metrics over them (or
 * over no entity) — those whose words the question uses first. Within `max_chars`, whole items
 * are taken most relevant first; what does not fit is left out.
 */
import type { Dialect } from '../../protocol/schemas/common.js';
import { fence, neutralize } from '../lib/model-io/prompting.js';
import type {
  ContextReply, ContextRequest, SemanticEntity, SemanticMetric, SemanticRelationship,
} from '../../protocol/schemas/semantic.js';

export interface Layer {
  entities: readonly SemanticEntity[];
  relationships: readonly SemanticRelationship[];
  /** every metric, active or not */
  metrics: readonly SemanticMetric[];
}

export type StorageKind = ContextReply['storage'];

export const BLOCK_HEADER = [
  'Business context (the semantic layer defined by the data team):',
  '- Joins: when you join tables that a relationship below connects, use its exact join condition (table aliases may stand for the table names). Prefer LEFT JOIN unless the question asks otherwise or the relationship names another join type.',
  '- Metrics: when the question asks for a metric defined below, use its SQL expression exactly as written, verbatim; do not recalculate it or write your own formula.',
  '- Names: the business names and synonyms below say which table or column a word of the question means.',
].join('\n');

export const REASON_MEMORY = 'config_db is off: the semantic layer is kept in memory and is not added to prompts';
export const REASON_EMPTY = 'no semantic entity is defined';
export const REASON_IRRELEVANT = 'nothing in the semantic layer concerns the tables of this question';
export const REASON_BUDGET = 'the prompt budget (catalog.semantic_max_chars) leaves no room for the block';

// ---- names ------------------------------------------------------------------------------------

const PLAIN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** An identifier as SQL reads it in the dialect: bare when plain (lower case on PostgreSQL, which folds), quoted otherwise. */
export function sqlName(name: string, dialect: Dialect | undefined): string {
  const bare = PLAIN.test(name) && (dialect !== 'postgresql' || name === name.toLowerCase());
  if (bare) return name;
  const q = dialect === 'mysql' || dialect === 'bigquery' ? '`' : '"';
  return `${q}${name.split(q).join(q + q)}${q}`;
}

/** The entity's table as the catalog names it: unqualified in the default schema, `schema.table` elsewhere (or always, without one). */
export function tableName(e: Pick<SemanticEntity, 'schema_name' | 'table_name'>, defaultSchema: string | undefined): string {
  return defaultSchema !== undefined && e.schema_name === defaultSchema ? e.table_name : `${e.schema_name}.${e.table_name}`;
}

function tableSql(e: Pick<SemanticEntity, 'schema_name' | 'table_name'>, defaultSchema: string | undefined, dialect: Dialect | undefined): string {
  const t = sqlName(e.table_name, dialect);
  return defaultSchema !== undefined && e.schema_name === defaultSchema ? t : `${sqlName(e.schema_name, dialect)}.${t}`;
}

/** `from_table.from_column = to_table.to_column`, as the model should write it. */
export function joinCondition(
  r: Pick<SemanticRelationship, 'from_column' | 'to_column'>, from: SemanticEntity, to: SemanticEntity,
  defaultSchema: string | undefined, dialect: Dialect | undefined,
): string {
  return `${tableSql(from, defaultSchema, dialect)}.${sqlName(r.from_column, dialect)} = ${tableSql(to, defaultSchema, dialect)}.${sqlName(r.to_column, dialect)}`;
}

// ---- words ------------------------------------------------------------------------------------

/** Lower-case words of a text, split at anything not a letter or digit and at camelCase humps, a plural `s` dropped. */
export function words(text: string): Set<string> {
  const out = new Set<string>();
  const spaced = text.replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2');
  for (const raw of spaced.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (raw.length < 2) continue;
    out.add(raw.length > 3 && raw.endsWith('s') && !raw.endsWith('ss') ? raw.slice(0, -1) : raw);
  }
  return out;
}

function overlap(question: ReadonlySet<string>, texts: ReadonlyArray<string | undefined>): number {
  if (question.size === 0) return 0;
  let n = 0;
  const seen = new Set<string>();
  for (const text of texts) {
    if (!text) continue;
    for (const w of words(text)) {
      if (question.has(w) && !seen.has(w)) {
        seen.add(w);
        n += 1;
      }
    }
  }
  return n;
}

function entityWords(e: SemanticEntity): string[] {
  return [e.display_name, e.table_name, ...e.synonyms, ...e.columns.flatMap((c) => [c.name, c.display_name, ...c.synonyms])];
}

function metricWords(m: SemanticMetric): string[] {
  return [m.name, m.display_name, m.category, ...m.synonyms];
}

// ---- relevance --------------------------------------------------------------------------------

export interface Relevant {
  entities: SemanticEntity[];
  relationships: SemanticRelationship[];
  metrics: SemanticMetric[];
}

/** What the question needs, most relevant first; without `tables` every entity (ranked by the question's words). */
export function relevantLayer(layer: Layer, input: Pick<ContextRequest, 'question' | 'tables' | 'default_schema'>): Relevant {
  const q = words(input.question ?? '');
  const active = layer.metrics.filter((m) => m.active);
  let entities = [...layer.entities];
  if (input.tables !== undefined) {
    const order = new Map<string, number>();
    input.tables.forEach((t, i) => {
      if (!order.has(t)) order.set(t, i);
      if (!order.has(t.toLowerCase())) order.set(t.toLowerCase(), i);
    });
    const position = (e: SemanticEntity): number | undefined => {
      const name = tableName(e, input.default_schema);
      return order.get(name) ?? order.get(name.toLowerCase());
    };
    entities = entities.filter((e) => position(e) !== undefined);
    const score = new Map(entities.map((e) => [e.id, overlap(q, entityWords(e))]));
    entities.sort((a, b) => score.get(b.id)! - score.get(a.id)! || position(a)! - position(b)!);
  } else if (q.size) {
    const score = new Map(entities.map((e) => [e.id, overlap(q, entityWords(e))]));
    entities.sort((a, b) => score.get(b.id)! - score.get(a.id)! || a.id - b.id);
  }
  const rank = new Map(entities.map((e, i) => [e.id, i]));
  const relationships = layer.relationships
    .filter((r) => rank.has(r.from_entity_id) && rank.has(r.to_entity_id))
    .sort((a, b) => Math.max(rank.get(a.from_entity_id)!, rank.get(a.to_entity_id)!) - Math.max(rank.get(b.from_entity_id)!, rank.get(b.to_entity_id)!) || a.id - b.id);
  const metricRank = (m: SemanticMetric): number => (m.entity_id === null ? entities.length : rank.get(m.entity_id) ?? Infinity);
  const metrics = active
    .filter((m) => input.tables === undefined || m.entity_id === null || rank.has(m.entity_id))
    .map((m) => ({ m, s: overlap(q, metricWords(m)) }))
    .sort((a, b) => b.s - a.s || metricRank(a.m) - metricRank(b.m) || a.m.id - b.m.id)
    .map((x) => x.m);
  return { entities, relationships, metrics };
}

// ---- the block --------------------------------------------------------------------------------

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function columnLabel(c: SemanticEntity['columns'][number], withAggregation: boolean): string {
  let s = c.name;
  const extra: string[] = [];
  if (c.display_name && c.display_name.toLowerCase() !== c.name.toLowerCase()) extra.push(`"${oneLine(c.display_name)}"`);
  if (withAggregation && c.aggregation) extra.push(c.aggregation.toUpperCase().replace('_DISTINCT', ' DISTINCT'));
  if (c.synonyms.length) extra.push(`also: ${c.synonyms.map(oneLine).join(', ')}`);
  if (c.description) extra.push(oneLine(c.description));
  if (extra.length) s += ` (${extra.join('; ')})`;
  return s;
}

export function renderEntity(e: SemanticEntity, defaultSchema: string | undefined): string {
  const lines = [`- ${oneLine(e.display_name)}: ${e.entity_type === 'view' ? 'view' : 'table'} ${tableName(e, defaultSchema)}`];
  if (e.description) lines.push(`  Description: ${oneLine(e.description)}`);
  if (e.primary_key) lines.push(`  Primary key: ${e.primary_key}`);
  if (e.synonyms.length) lines.push(`  Also called: ${e.synonyms.map(oneLine).join(', ')}`);
  const dims = e.columns.filter((c) => c.role === 'dimension');
  const mets = e.columns.filter((c) => c.role === 'metric');
  if (dims.length) lines.push(`  Dimensions (group by): ${dims.map((c) => columnLabel(c, false)).join(', ')}`);
  if (mets.length) lines.push(`  Metric columns (aggregate): ${mets.map((c) => columnLabel(c, true)).join(', ')}`);
  return lines.join('\n');
}

export function renderRelationship(
  r: SemanticRelationship, byId: ReadonlyMap<number, SemanticEntity>, defaultSchema: string | undefined, dialect: Dialect | undefined,
): string | undefined {
  const from = byId.get(r.from_entity_id);
  const to = byId.get(r.to_entity_id);
  if (!from || !to) return undefined;
  let s = `- ${oneLine(r.name)}: ${oneLine(from.display_name)} to ${oneLine(to.display_name)}, ${r.relationship_type.replace(/_/g, '-')}, ${r.join_type} JOIN ON ${joinCondition(r, from, to, defaultSchema, dialect)}`;
  if (r.description) s += `\n  ${oneLine(r.description)}`;
  return s;
}

/** The expression is kept exactly as defined (line breaks too): the model copies it. */
export function renderMetric(m: SemanticMetric): string {
  const lines = [`- ${oneLine(m.display_name)} (${m.name})${m.category ? ` [${oneLine(m.category)}]` : ''}`];
  if (m.description) lines.push(`  Description: ${oneLine(m.description)}`);
  lines.push(`  SQL: ${m.sql_expression}`);
  if (m.format_type) lines.push(`  Format: ${m.format_type}`);
  if (m.synonyms.length) lines.push(`  Also called: ${m.synonyms.map(oneLine).join(', ')}`);
  return lines.join('\n');
}

interface Item {
  kind: 'entity' | 'relationship' | 'metric';
  text: string;
  /** position in its section: the relevance order */
  order: number;
}

const SECTION_TITLE: Record<Item['kind'], string> = { entity: 'Entities:', relationship: 'Relationships (join conditions):', metric: 'Metrics:' };

/**
 * The block for the relevant part of the layer, within `maxChars` (whole items; the most
 * relevant of each kind first, metrics and joins before entity descriptions, as the schema
 * text already shows the tables). '' when nothing fits.
 */
export function renderBlock(rel: Relevant, byId: ReadonlyMap<number, SemanticEntity>, opts: { defaultSchema?: string | undefined; dialect?: Dialect | undefined; maxChars?: number | undefined }): { text: string; entities: SemanticEntity[]; relationships: SemanticRelationship[]; metrics: SemanticMetric[] } {
  const items: Array<Item & { ref: SemanticEntity | SemanticRelationship | SemanticMetric }> = [];
  // as the fence will hold them (neutralised), so that what is counted is what is sent
  rel.metrics.forEach((m, i) => items.push({ kind: 'metric', text: neutralize(renderMetric(m)), order: i, ref: m }));
  rel.relationships.forEach((r, i) => {
    const text = renderRelationship(r, byId, opts.defaultSchema, opts.dialect);
    if (text !== undefined) items.push({ kind: 'relationship', text: neutralize(text), order: i, ref: r });
  });
  rel.entities.forEach((e, i) => items.push({ kind: 'entity', text: neutralize(renderEntity(e, opts.defaultSchema)), order: i, ref: e }));
  // priority: interleave the kinds by their rank, metrics first at a tie
  const kindRank = { metric: 0, relationship: 1, entity: 2 } as const;
  items.sort((a, b) => a.order - b.order || kindRank[a.kind] - kindRank[b.kind]);

  const budget = opts.maxChars ?? Infinity;
  const chosen: typeof items = [];
  const kinds = new Set<Item['kind']>();
  // the header, a line break and the fence's two lines (the sections inside start without a blank line)
  let size = BLOCK_HEADER.length + fence('semantic layer', '').length - 1;
  if (size > budget) return { text: '', entities: [], relationships: [], metrics: [] };
  for (const item of items) {
    // "\n\n<title>" the first time a kind appears, then "\n<item>"
    const cost = item.text.length + 1 + (kinds.has(item.kind) ? 0 : SECTION_TITLE[item.kind].length + 2);
    if (size + cost > budget) continue;
    size += cost;
    kinds.add(item.kind);
    chosen.push(item);
  }
  if (chosen.length === 0) return { text: '', entities: [], relationships: [], metrics: [] };
  const sections: string[] = [];
  for (const kind of ['entity', 'relationship', 'metric'] as const) {
    const of = chosen.filter((i) => i.kind === kind).sort((a, b) => a.order - b.order);
    if (of.length) sections.push(`${SECTION_TITLE[kind]}\n${of.map((i) => i.text).join('\n')}`);
  }
  const pick = <K extends Item['kind']>(kind: K) => chosen.filter((i) => i.kind === kind).sort((a, b) => a.order - b.order).map((i) => i.ref);
  return {
    text: `${BLOCK_HEADER}\n${fence('semantic layer', sections.join('\n\n'))}`,
    entities: pick('entity') as SemanticEntity[],
    relationships: pick('relationship') as SemanticRelationship[],
    metrics: pick('metric') as SemanticMetric[],
  };
}

/**
 * The ContextReply: without `question` and `tables`, the whole layer (active metrics) and its
 * whole block; with them, the relevant part within `max_chars`. Not injected (block '') in
 * memory mode or without entities (rule 4), and when nothing relevant fits.
 */
export function buildContext(layer: Layer, storage: StorageKind, input: ContextRequest): ContextReply {
  const targeted = input.question !== undefined || input.tables !== undefined;
  const rel = relevantLayer(layer, input);
  const byId = new Map(layer.entities.map((e) => [e.id, e]));
  const base = { entities: rel.entities, relationships: rel.relationships, metrics: rel.metrics, storage };
  if (storage !== 'postgresql') return { ...base, injected: false, reason: REASON_MEMORY, block: '' };
  if (layer.entities.length === 0) return { ...base, injected: false, reason: REASON_EMPTY, block: '' };
  if (rel.entities.length === 0 && rel.metrics.length === 0) return { ...base, injected: false, reason: REASON_IRRELEVANT, block: '' };
  const out = renderBlock(rel, byId, { defaultSchema: input.default_schema, dialect: input.dialect, maxChars: input.max_chars });
  if (out.text === '') return { ...base, injected: false, reason: REASON_BUDGET, block: '' };
  // asked for a question: the arrays say what the block holds
  const shown = targeted ? { entities: out.entities, relationships: out.relationships, metrics: out.metrics } : {};
  return { ...base, ...shown, injected: true, block: out.text };
}

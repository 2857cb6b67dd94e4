/**
 * The semantic layer (SPEC.md "Semantic entity", "… column", "… relationship", "… metric",
 * "Semantic context"): business names over the database's tables, owned by the semantic actor
 * and stored by store/semantic.ts. The HTTP bodies of /api/semantic/* derive from these
 * (protocol/schemas/http.ts), so a field has one limit whichever door it comes in by.
 *
 * | field                                   | limit                                            |
 * |-----------------------------------------|--------------------------------------------------|
 * | catalog, schema_name                    | 0–256 / 1–256 characters, a name                 |
 * | table_name, column name, from/to_column | 1–256 characters, a name                         |
 * | display_name, relationship name         | 1–200 characters, a name                         |
 * | metric name                             | 1–100, identifier-style `[A-Za-z_][A-Za-z0-9_]*` |
 * | description                             | at most 2,000 characters of text                 |
 * | synonyms                                | at most 30, each 1–100 characters, a name        |
 * | sql_expression                          | 1–4,000 characters of text                       |
 * | category                                | at most 100 characters, a name                   |
 *
 * Ids are integers assigned by the service (SPEC.md), positive, in creation order.
 */
import Type, { type Static } from 'typebox';
import { Cell, Dialect } from './common.js';
import { NameString, TextString } from './text.js';

const Iso = Type.String();
export const SemanticId = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });

const Name = (min = 1, max = 256) => NameString({ minLength: min, maxLength: max });
const Description = TextString({ maxLength: 2000 });
export const Synonyms = Type.Array(NameString({ minLength: 1, maxLength: 100 }), { maxItems: 30 });

export const ColumnRole = Type.Enum(['dimension', 'metric']);
export type ColumnRole = Static<typeof ColumnRole>;
/** how a metric column adds up when the model aggregates it by default */
export const Aggregation = Type.Enum(['sum', 'avg', 'min', 'max', 'count', 'count_distinct']);
export type Aggregation = Static<typeof Aggregation>;
export const EntityType = Type.Enum(['table', 'view']);
export const RelationshipType = Type.Enum(['many_to_one', 'one_to_many', 'one_to_one']);
export type RelationshipType = Static<typeof RelationshipType>;
export const JoinType = Type.Enum(['LEFT', 'INNER', 'RIGHT']);
export type JoinType = Static<typeof JoinType>;
export const FormatType = Type.Enum(['currency', 'percentage', '']);
export type FormatType = Static<typeof FormatType>;

// ---- records ----------------------------------------------------------------------------------

/** One column of an entity, tagged a dimension (GROUP BY) or a metric (numeric, aggregated). */
export const SemanticColumn = Type.Object({
  id: SemanticId,
  entity_id: SemanticId,
  /** the column's exact name in the table */
  name: Type.String(),
  display_name: Type.String(),
  description: Type.String(),
  role: ColumnRole,
  /** metric columns: how they add up by default (sum when not said) */
  aggregation: Type.Optional(Aggregation),
  synonyms: Type.Array(Type.String()),
  /** the database's type name, when known (discovery fills it) */
  data_type: Type.String(),
  created_at: Iso,
  updated_at: Iso,
});
export type SemanticColumn = Static<typeof SemanticColumn>;

export const SemanticEntity = Type.Object({
  id: SemanticId,
  /** empty for relational databases */
  catalog: Type.String(),
  schema_name: Type.String(),
  table_name: Type.String(),
  display_name: Type.String(),
  description: Type.String(),
  /** the primary key column(s), comma-separated; empty when none is named */
  primary_key: Type.String(),
  entity_type: EntityType,
  /** other words people use for it ("clients" for customers) */
  synonyms: Type.Array(Type.String()),
  /** in creation order */
  columns: Type.Array(SemanticColumn),
  created_at: Iso,
  updated_at: Iso,
});
export type SemanticEntity = Static<typeof SemanticEntity>;

export const SemanticRelationship = Type.Object({
  id: SemanticId,
  name: Type.String(),
  from_entity_id: SemanticId,
  from_column: Type.String(),
  to_entity_id: SemanticId,
  to_column: Type.String(),
  relationship_type: RelationshipType,
  join_type: JoinType,
  description: Type.String(),
  created_at: Iso,
  updated_at: Iso,
});
export type SemanticRelationship = Static<typeof SemanticRelationship>;

export const SemanticMetric = Type.Object({
  id: SemanticId,
  /** identifier-style, unique */
  name: Type.String(),
  display_name: Type.String(),
  /** an aggregate expression the configured database's dialect accepts, used verbatim */
  sql_expression: Type.String(),
  format_type: FormatType,
  category: Type.String(),
  description: Type.String(),
  active: Type.Boolean(),
  /** the entity whose table the expression reads, when one is named (checked against it) */
  entity_id: Type.Union([SemanticId, Type.Null()]),
  synonyms: Type.Array(Type.String()),
  created_at: Iso,
  updated_at: Iso,
});
export type SemanticMetric = Static<typeof SemanticMetric>;

// ---- inputs (create: required as the spec says; update: every field optional) -----------------

export const ColumnInput = Type.Object({
  name: Name(),
  display_name: Type.Optional(Name(0, 200)),
  description: Type.Optional(Description),
  role: ColumnRole,
  aggregation: Type.Optional(Aggregation),
  synonyms: Type.Optional(Synonyms),
  data_type: Type.Optional(Name(0, 200)),
});
export type ColumnInput = Static<typeof ColumnInput>;

export const EntityInput = Type.Object({
  catalog: Type.Optional(Name(0, 256)),
  schema_name: Name(),
  table_name: Name(),
  display_name: Name(1, 200),
  description: Type.Optional(Description),
  primary_key: Type.Optional(Name(0, 512)),
  entity_type: Type.Optional(EntityType),
  synonyms: Type.Optional(Synonyms),
  /** columns created with the entity (discover's one-click accept sends them) */
  columns: Type.Optional(Type.Array(ColumnInput, { maxItems: 2000 })),
});
export type EntityInput = Static<typeof EntityInput>;

export const RelationshipInput = Type.Object({
  name: Name(1, 200),
  from_entity_id: SemanticId,
  from_column: Name(),
  to_entity_id: SemanticId,
  to_column: Name(),
  relationship_type: RelationshipType,
  /** LEFT when not said (the spec's rule 2) */
  join_type: Type.Optional(JoinType),
  description: Type.Optional(Description),
});
export type RelationshipInput = Static<typeof RelationshipInput>;

export const MetricInput = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }),
  display_name: Name(1, 200),
  sql_expression: TextString({ minLength: 1, maxLength: 4000 }),
  format_type: Type.Optional(FormatType),
  category: Type.Optional(Name(0, 100)),
  description: Type.Optional(Description),
  active: Type.Optional(Type.Boolean()),
  entity_id: Type.Optional(Type.Union([SemanticId, Type.Null()])),
  synonyms: Type.Optional(Synonyms),
});
export type MetricInput = Static<typeof MetricInput>;

const partial = <T extends import('typebox').TObject>(o: T) => Type.Partial(o);

export const EntityPatch = partial(Type.Omit(EntityInput, ['columns']));
export type EntityPatch = Static<typeof EntityPatch>;
export const ColumnPatch = partial(ColumnInput);
export type ColumnPatch = Static<typeof ColumnPatch>;
export const RelationshipPatch = partial(RelationshipInput);
export type RelationshipPatch = Static<typeof RelationshipPatch>;
export const MetricPatch = partial(MetricInput);
export type MetricPatch = Static<typeof MetricPatch>;

// ---- bus requests -----------------------------------------------------------------------------

const ById = Type.Object({ id: SemanticId });
/** who asked (the admin's or token's user), for the change event and the logs */
const By = { by: Type.String({ minLength: 1, maxLength: 256 }) };

export const EntityListRequest = Type.Object({ catalog: Type.Optional(Type.String({ maxLength: 256 })), schema_name: Type.Optional(Type.String({ maxLength: 256 })) });
export type EntityListRequest = Static<typeof EntityListRequest>;
export const EntityListReply = Type.Object({ entities: Type.Array(SemanticEntity) });
export const EntityGetRequest = ById;
export const EntityCreateRequest = Type.Object({ ...EntityInput.properties, ...By });
export type EntityCreateRequest = Static<typeof EntityCreateRequest>;
export const EntityUpdateRequest = Type.Object({ id: SemanticId, ...EntityPatch.properties, ...By });
export type EntityUpdateRequest = Static<typeof EntityUpdateRequest>;
export const DeleteRequest = Type.Object({ id: SemanticId, ...By });
export type DeleteRequest = Static<typeof DeleteRequest>;
/** what went with an entity: its columns and the relationships that named it; metrics over it are kept, detached */
export const EntityDeleteReply = Type.Object({
  ok: Type.Boolean(),
  deleted_columns: Type.Integer({ minimum: 0 }),
  deleted_relationships: Type.Array(SemanticId),
  detached_metrics: Type.Array(SemanticId),
});
export type EntityDeleteReply = Static<typeof EntityDeleteReply>;

export const ColumnAddRequest = Type.Object({ entity_id: SemanticId, ...ColumnInput.properties, ...By });
export type ColumnAddRequest = Static<typeof ColumnAddRequest>;
export const ColumnUpdateRequest = Type.Object({ entity_id: SemanticId, id: SemanticId, ...ColumnPatch.properties, ...By });
export type ColumnUpdateRequest = Static<typeof ColumnUpdateRequest>;
export const ColumnDeleteRequest = Type.Object({ entity_id: SemanticId, id: SemanticId, ...By });
export type ColumnDeleteRequest = Static<typeof ColumnDeleteRequest>;

export const RelationshipListReply = Type.Object({ relationships: Type.Array(SemanticRelationship) });
export const RelationshipCreateRequest = Type.Object({ ...RelationshipInput.properties, ...By });
export type RelationshipCreateRequest = Static<typeof RelationshipCreateRequest>;
export const RelationshipUpdateRequest = Type.Object({ id: SemanticId, ...RelationshipPatch.properties, ...By });
export type RelationshipUpdateRequest = Static<typeof RelationshipUpdateRequest>;

export const MetricListRequest = Type.Object({ active_only: Type.Optional(Type.Boolean()) });
export type MetricListRequest = Static<typeof MetricListRequest>;
export const MetricListReply = Type.Object({ metrics: Type.Array(SemanticMetric) });
export const MetricCreateRequest = Type.Object({ ...MetricInput.properties, ...By });
export type MetricCreateRequest = Static<typeof MetricCreateRequest>;
export const MetricUpdateRequest = Type.Object({ id: SemanticId, ...MetricPatch.properties, ...By });
export type MetricUpdateRequest = Static<typeof MetricUpdateRequest>;

export const OkReply = Type.Object({ ok: Type.Boolean() });

/**
 * The context as injected into the model's prompt. Without `question`/`tables`: everything
 * defined (GET /api/semantic/context). With them: only what is relevant to the question and
 * its tables, within `max_chars` (the catalog asks this way for every question).
 */
export const ContextRequest = Type.Object({
  question: Type.Optional(Type.String({ maxLength: 4000 })),
  /** the tables the question's prompt holds, as the catalog names them (schema-qualified outside the default schema) */
  tables: Type.Optional(Type.Array(Type.String({ maxLength: 512 }), { maxItems: 500 })),
  /** the database's default schema, for unqualified names in `tables` */
  default_schema: Type.Optional(Type.String({ maxLength: 256 })),
  dialect: Type.Optional(Dialect),
  /** the most characters the block may take (the prompt budget) */
  max_chars: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
});
export type ContextRequest = Static<typeof ContextRequest>;

export const ContextReply = Type.Object({
  entities: Type.Array(SemanticEntity),
  relationships: Type.Array(SemanticRelationship),
  /** active metrics only */
  metrics: Type.Array(SemanticMetric),
  /** whether the block goes into prompts (SPEC.md rule 4: not when config_db is off or no entity is defined) */
  injected: Type.Boolean(),
  /** why it is not injected, for people */
  reason: Type.Optional(Type.String()),
  /** the business-context block as the model reads it; empty when not injected */
  block: Type.String(),
  /** the storage the layer lives in */
  storage: Type.Enum(['postgresql', 'memory']),
});
export type ContextReply = Static<typeof ContextReply>;

// ---- discovery ----------------------------------------------------------------------------------

export const DiscoverRequest = Type.Object({
  catalog: Type.Optional(Type.String({ maxLength: 256 })),
  schema: Type.String({ minLength: 1, maxLength: 256 }),
  tables: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 256 }), { maxItems: 200 })),
});
export type DiscoverRequest = Static<typeof DiscoverRequest>;

/** One column as discovery saw it. Sample values and min/max pass the mask rules first. */
export const ColumnProfile = Type.Object({
  name: Type.String(),
  data_type: Type.String(),
  nullable: Type.Boolean(),
  comment: Type.Optional(Type.String()),
  /** distinct values (estimated from statistics, or counted in the sample) */
  distinct_count: Type.Optional(Type.Number({ minimum: 0 })),
  /** share of NULLs, 0..1 */
  null_fraction: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  min: Type.Optional(Cell),
  max: Type.Optional(Cell),
  sample_values: Type.Array(Cell),
  /** where the figures come from: the engine's statistics (pg_stats …) or a bounded sample */
  source: Type.Enum(['statistics', 'sample']),
  /** the suggestion: dimension, metric, or neither (ids, free text, timestamps kept as dimensions when grouped by) */
  suggested_role: Type.Union([ColumnRole, Type.Literal('none')]),
  suggested_aggregation: Type.Optional(Aggregation),
  /** why this role, in a few words */
  reason: Type.String(),
  /** the column is masked by a mask rule (its values are shown masked) */
  masked: Type.Optional(Type.Boolean()),
});
export type ColumnProfile = Static<typeof ColumnProfile>;

export const SuggestedEntity = Type.Object({
  catalog: Type.String(),
  schema_name: Type.String(),
  table_name: Type.String(),
  display_name: Type.String(),
  description: Type.String(),
  primary_key: Type.String(),
  entity_type: EntityType,
  row_count: Type.Optional(Type.Number({ minimum: 0 })),
  columns: Type.Array(ColumnProfile),
  /** the id of the entity already defined for this table, when there is one */
  existing_entity_id: Type.Optional(SemanticId),
});
export type SuggestedEntity = Static<typeof SuggestedEntity>;

export const SuggestedRelationship = Type.Object({
  name: Type.String(),
  /** schema.table, as in the suggested entities */
  from_table: Type.String(),
  from_column: Type.String(),
  to_table: Type.String(),
  to_column: Type.String(),
  relationship_type: RelationshipType,
  join_type: JoinType,
  /** foreign_key: declared; name: the column names match; overlap: the sampled values are found in the other column */
  evidence: Type.Enum(['foreign_key', 'name', 'overlap']),
  /** 0..1: 1 for a declared key; the share of sampled values found for overlap */
  confidence: Type.Number({ minimum: 0, maximum: 1 }),
});
export type SuggestedRelationship = Static<typeof SuggestedRelationship>;

export const DiscoverReply = Type.Object({
  entities: Type.Array(SuggestedEntity),
  relationships: Type.Array(SuggestedRelationship),
  /** tables asked for that were not found (or are not visible to Cortado's role) */
  missing: Type.Array(Type.String()),
  duration_ms: Type.Number({ minimum: 0 }),
  /** more tables than one discovery profiles (100 when none are named), or the time ran out: ask for the rest by name */
  truncated: Type.Optional(Type.Boolean()),
});
export type DiscoverReply = Static<typeof DiscoverReply>;

// ---- events -------------------------------------------------------------------------------------

/** A change to the layer: every process that caches it drops its copy; the audit trail keeps who did what. */
export const SemanticChanged = Type.Object({
  id: Type.String(),
  ts: Type.String(),
  request_id: Type.String(),
  user: Type.String(),
  kind: Type.Enum(['entity', 'column', 'relationship', 'metric']),
  action: Type.Enum(['create', 'update', 'delete']),
  record_id: SemanticId,
  /** the entity a column belongs to */
  entity_id: Type.Optional(SemanticId),
});
export type SemanticChanged = Static<typeof SemanticChanged>;

/**
 * The semantic layer's records (owner: the semantic actor): entities with their columns,
 * relationships between entities, metrics. Ids are integers assigned here, in creation order.
 * Validation (enums, that ids exist, that a metric's SQL parses) is the actor's; the repository
 * keeps what it is given, and refuses only what would break its own rules: a second entity for
 * the same catalog.schema.table, a second column of one name in an entity, a second metric of
 * one name, a second relationship between the same two columns (CONFLICT). A column for an
 * entity that is not there is `undefined` (the caller's NOT_FOUND); a relationship or metric
 * naming an entity that is not there is VALIDATION_FAILED naming the field.
 *
 * Deleting an entity deletes its columns and every relationship that names it, and detaches
 * the metrics over it (entity_id becomes null): the reply says which.
 */
import type pg from 'pg';
import { CortadoError } from '../protocol/errors.js';
import { clean, iso, json, optText, type PgDatabase } from './postgres.js';
import { copy } from './values.js';
import type {
  ColumnInput, ColumnPatch, EntityInput, EntityPatch, MetricInput, MetricPatch, RelationshipInput, RelationshipPatch,
  SemanticColumn, SemanticEntity, SemanticMetric, SemanticRelationship,
} from '../protocol/schemas/semantic.js';

export type {
  ColumnInput, ColumnPatch, EntityInput, EntityPatch, MetricInput, MetricPatch, RelationshipInput, RelationshipPatch,
  SemanticColumn, SemanticEntity, SemanticMetric, SemanticRelationship,
} from '../protocol/schemas/semantic.js';

export interface EntityFilter {
  /** exact match; '' matches entities without a catalog */
  catalog?: string;
  /** exact match */
  schema_name?: string;
}

export interface EntityDeleted {
  deleted_columns: number;
  deleted_relationships: number[];
  detached_metrics: number[];
}

export interface SemanticRepository {
  /** with their columns; by id */
  listEntities(filter?: EntityFilter): Promise<SemanticEntity[]>;
  getEntity(id: number): Promise<SemanticEntity | undefined>;
  /** with the columns of `input.columns`, in one transaction: all or nothing */
  createEntity(input: EntityInput): Promise<SemanticEntity>;
  updateEntity(id: number, patch: EntityPatch): Promise<SemanticEntity | undefined>;
  /** undefined when there is no such entity */
  deleteEntity(id: number): Promise<EntityDeleted | undefined>;

  /** undefined when there is no such entity */
  addColumn(entityId: number, input: ColumnInput): Promise<SemanticColumn | undefined>;
  /** undefined when the entity has no such column */
  updateColumn(entityId: number, columnId: number, patch: ColumnPatch): Promise<SemanticColumn | undefined>;
  deleteColumn(entityId: number, columnId: number): Promise<boolean>;

  /** by id */
  listRelationships(): Promise<SemanticRelationship[]>;
  getRelationship(id: number): Promise<SemanticRelationship | undefined>;
  createRelationship(input: RelationshipInput): Promise<SemanticRelationship>;
  updateRelationship(id: number, patch: RelationshipPatch): Promise<SemanticRelationship | undefined>;
  deleteRelationship(id: number): Promise<boolean>;

  /** by id; only the active ones when `activeOnly` */
  listMetrics(activeOnly: boolean): Promise<SemanticMetric[]>;
  getMetric(id: number): Promise<SemanticMetric | undefined>;
  createMetric(input: MetricInput): Promise<SemanticMetric>;
  updateMetric(id: number, patch: MetricPatch): Promise<SemanticMetric | undefined>;
  deleteMetric(id: number): Promise<boolean>;
}

const TABLE_TAKEN = 'a semantic entity for this table exists already';
const COLUMN_TAKEN = 'this entity has a column of this name already';
const RELATIONSHIP_TAKEN = 'a relationship between these two columns exists already';
const METRIC_TAKEN = 'a metric of this name exists already';

function noEntity(field: string, id: number): CortadoError {
  return new CortadoError('VALIDATION_FAILED', `${field}: there is no semantic entity ${id}`, { field });
}

const now = (): string => new Date().toISOString();

// ---- memory -----------------------------------------------------------------------------------

type StoredEntity = Omit<SemanticEntity, 'columns'>;

export class MemorySemantic implements SemanticRepository {
  /** Maps keep insertion order, and ids grow with it: by id is creation order */
  private readonly entities = new Map<number, StoredEntity>();
  private readonly columns = new Map<number, SemanticColumn>();
  private readonly relationships = new Map<number, SemanticRelationship>();
  private readonly metrics = new Map<number, SemanticMetric>();
  private readonly next = { entity: 0, column: 0, relationship: 0, metric: 0 };

  private withColumns(e: StoredEntity): SemanticEntity {
    return copy({ ...e, columns: [...this.columns.values()].filter((c) => c.entity_id === e.id) });
  }

  private tableTaken(key: Pick<StoredEntity, 'catalog' | 'schema_name' | 'table_name'>, except?: number): boolean {
    for (const e of this.entities.values()) {
      if (e.id !== except && e.catalog === key.catalog && e.schema_name === key.schema_name && e.table_name === key.table_name) return true;
    }
    return false;
  }

  private columnTaken(entityId: number, name: string, except?: number): boolean {
    for (const c of this.columns.values()) if (c.id !== except && c.entity_id === entityId && c.name === name) return true;
    return false;
  }

  private relationshipTaken(r: Pick<SemanticRelationship, 'from_entity_id' | 'from_column' | 'to_entity_id' | 'to_column'>, except?: number): boolean {
    for (const o of this.relationships.values()) {
      if (o.id !== except && o.from_entity_id === r.from_entity_id && o.from_column === r.from_column
        && o.to_entity_id === r.to_entity_id && o.to_column === r.to_column) return true;
    }
    return false;
  }

  private metricTaken(name: string, except?: number): boolean {
    for (const m of this.metrics.values()) if (m.id !== except && m.name === name) return true;
    return false;
  }

  private newColumn(entityId: number, input: ColumnInput, at: string): SemanticColumn {
    const c: SemanticColumn = {
      id: ++this.next.column,
      entity_id: entityId,
      name: input.name,
      display_name: input.display_name ?? '',
      description: input.description ?? '',
      role: input.role,
      synonyms: [...(input.synonyms ?? [])],
      data_type: input.data_type ?? '',
      created_at: at,
      updated_at: at,
    };
    if (input.aggregation !== undefined) c.aggregation = input.aggregation;
    return c;
  }

  async listEntities(filter: EntityFilter = {}): Promise<SemanticEntity[]> {
    return [...this.entities.values()]
      .filter((e) => (filter.catalog === undefined || e.catalog === filter.catalog) && (filter.schema_name === undefined || e.schema_name === filter.schema_name))
      .map((e) => this.withColumns(e));
  }

  async getEntity(id: number): Promise<SemanticEntity | undefined> {
    const e = this.entities.get(id);
    return e && this.withColumns(e);
  }

  async createEntity(input: EntityInput): Promise<SemanticEntity> {
    const at = now();
    const key = { catalog: input.catalog ?? '', schema_name: input.schema_name, table_name: input.table_name };
    if (this.tableTaken(key)) throw new CortadoError('CONFLICT', TABLE_TAKEN);
    const names = new Set<string>();
    for (const c of input.columns ?? []) {
      if (names.has(c.name)) throw new CortadoError('CONFLICT', COLUMN_TAKEN);
      names.add(c.name);
    }
    const e: StoredEntity = {
      id: ++this.next.entity,
      ...key,
      display_name: input.display_name,
      description: input.description ?? '',
      primary_key: input.primary_key ?? '',
      entity_type: input.entity_type ?? 'table',
      synonyms: [...(input.synonyms ?? [])],
      created_at: at,
      updated_at: at,
    };
    this.entities.set(e.id, e);
    for (const c of input.columns ?? []) {
      const col = this.newColumn(e.id, c, at);
      this.columns.set(col.id, col);
    }
    return this.withColumns(e);
  }

  async updateEntity(id: number, patch: EntityPatch): Promise<SemanticEntity | undefined> {
    const e = this.entities.get(id);
    if (!e) return undefined;
    const key = {
      catalog: patch.catalog ?? e.catalog, schema_name: patch.schema_name ?? e.schema_name, table_name: patch.table_name ?? e.table_name,
    };
    if (this.tableTaken(key, id)) throw new CortadoError('CONFLICT', TABLE_TAKEN);
    Object.assign(e, key);
    if (patch.display_name !== undefined) e.display_name = patch.display_name;
    if (patch.description !== undefined) e.description = patch.description;
    if (patch.primary_key !== undefined) e.primary_key = patch.primary_key;
    if (patch.entity_type !== undefined) e.entity_type = patch.entity_type;
    if (patch.synonyms !== undefined) e.synonyms = [...patch.synonyms];
    e.updated_at = now();
    return this.withColumns(e);
  }

  async deleteEntity(id: number): Promise<EntityDeleted | undefined> {
    if (!this.entities.has(id)) return undefined;
    const at = now();
    let deletedColumns = 0;
    for (const c of [...this.columns.values()]) {
      if (c.entity_id === id) {
        this.columns.delete(c.id);
        deletedColumns++;
      }
    }
    const deletedRelationships: number[] = [];
    for (const r of [...this.relationships.values()]) {
      if (r.from_entity_id === id || r.to_entity_id === id) {
        this.relationships.delete(r.id);
        deletedRelationships.push(r.id);
      }
    }
    const detachedMetrics: number[] = [];
    for (const m of this.metrics.values()) {
      if (m.entity_id === id) {
        m.entity_id = null;
        m.updated_at = at;
        detachedMetrics.push(m.id);
      }
    }
    this.entities.delete(id);
    return { deleted_columns: deletedColumns, deleted_relationships: deletedRelationships, detached_metrics: detachedMetrics };
  }

  async addColumn(entityId: number, input: ColumnInput): Promise<SemanticColumn | undefined> {
    if (!this.entities.has(entityId)) return undefined;
    if (this.columnTaken(entityId, input.name)) throw new CortadoError('CONFLICT', COLUMN_TAKEN);
    const c = this.newColumn(entityId, input, now());
    this.columns.set(c.id, c);
    return copy(c);
  }

  async updateColumn(entityId: number, columnId: number, patch: ColumnPatch): Promise<SemanticColumn | undefined> {
    const c = this.columns.get(columnId);
    if (!c || c.entity_id !== entityId) return undefined;
    if (patch.name !== undefined && this.columnTaken(entityId, patch.name, columnId)) throw new CortadoError('CONFLICT', COLUMN_TAKEN);
    if (patch.name !== undefined) c.name = patch.name;
    if (patch.display_name !== undefined) c.display_name = patch.display_name;
    if (patch.description !== undefined) c.description = patch.description;
    if (patch.role !== undefined) c.role = patch.role;
    if (patch.aggregation !== undefined) c.aggregation = patch.aggregation;
    if (patch.synonyms !== undefined) c.synonyms = [...patch.synonyms];
    if (patch.data_type !== undefined) c.data_type = patch.data_type;
    c.updated_at = now();
    return copy(c);
  }

  async deleteColumn(entityId: number, columnId: number): Promise<boolean> {
    const c = this.columns.get(columnId);
    if (!c || c.entity_id !== entityId) return false;
    return this.columns.delete(columnId);
  }

  async listRelationships(): Promise<SemanticRelationship[]> {
    return [...this.relationships.values()].map(copy);
  }

  async getRelationship(id: number): Promise<SemanticRelationship | undefined> {
    const r = this.relationships.get(id);
    return r && copy(r);
  }

  private checkEnds(r: Pick<SemanticRelationship, 'from_entity_id' | 'to_entity_id'>): void {
    if (!this.entities.has(r.from_entity_id)) throw noEntity('from_entity_id', r.from_entity_id);
    if (!this.entities.has(r.to_entity_id)) throw noEntity('to_entity_id', r.to_entity_id);
  }

  async createRelationship(input: RelationshipInput): Promise<SemanticRelationship> {
    this.checkEnds(input);
    if (this.relationshipTaken(input)) throw new CortadoError('CONFLICT', RELATIONSHIP_TAKEN);
    const at = now();
    const r: SemanticRelationship = {
      id: ++this.next.relationship,
      name: input.name,
      from_entity_id: input.from_entity_id,
      from_column: input.from_column,
      to_entity_id: input.to_entity_id,
      to_column: input.to_column,
      relationship_type: input.relationship_type,
      join_type: input.join_type ?? 'LEFT',
      description: input.description ?? '',
      created_at: at,
      updated_at: at,
    };
    this.relationships.set(r.id, r);
    return copy(r);
  }

  async updateRelationship(id: number, patch: RelationshipPatch): Promise<SemanticRelationship | undefined> {
    const r = this.relationships.get(id);
    if (!r) return undefined;
    const next: SemanticRelationship = {
      ...r,
      name: patch.name ?? r.name,
      from_entity_id: patch.from_entity_id ?? r.from_entity_id,
      from_column: patch.from_column ?? r.from_column,
      to_entity_id: patch.to_entity_id ?? r.to_entity_id,
      to_column: patch.to_column ?? r.to_column,
      relationship_type: patch.relationship_type ?? r.relationship_type,
      join_type: patch.join_type ?? r.join_type,
      description: patch.description ?? r.description,
    };
    this.checkEnds(next);
    if (this.relationshipTaken(next, id)) throw new CortadoError('CONFLICT', RELATIONSHIP_TAKEN);
    next.updated_at = now();
    this.relationships.set(id, next);
    return copy(next);
  }

  async deleteRelationship(id: number): Promise<boolean> {
    return this.relationships.delete(id);
  }

  async listMetrics(activeOnly: boolean): Promise<SemanticMetric[]> {
    return [...this.metrics.values()].filter((m) => !activeOnly || m.active).map(copy);
  }

  async getMetric(id: number): Promise<SemanticMetric | undefined> {
    const m = this.metrics.get(id);
    return m && copy(m);
  }

  async createMetric(input: MetricInput): Promise<SemanticMetric> {
    const entityId = input.entity_id ?? null;
    if (entityId !== null && !this.entities.has(entityId)) throw noEntity('entity_id', entityId);
    if (this.metricTaken(input.name)) throw new CortadoError('CONFLICT', METRIC_TAKEN);
    const at = now();
    const m: SemanticMetric = {
      id: ++this.next.metric,
      name: input.name,
      display_name: input.display_name,
      sql_expression: input.sql_expression,
      format_type: input.format_type ?? '',
      category: input.category ?? '',
      description: input.description ?? '',
      active: input.active ?? true,
      entity_id: entityId,
      synonyms: [...(input.synonyms ?? [])],
      created_at: at,
      updated_at: at,
    };
    this.metrics.set(m.id, m);
    return copy(m);
  }

  async updateMetric(id: number, patch: MetricPatch): Promise<SemanticMetric | undefined> {
    const m = this.metrics.get(id);
    if (!m) return undefined;
    if (patch.entity_id != null && !this.entities.has(patch.entity_id)) throw noEntity('entity_id', patch.entity_id);
    if (patch.name !== undefined && this.metricTaken(patch.name, id)) throw new CortadoError('CONFLICT', METRIC_TAKEN);
    if (patch.name !== undefined) m.name = patch.name;
    if (patch.display_name !== undefined) m.display_name = patch.display_name;
    if (patch.sql_expression !== undefined) m.sql_expression = patch.sql_expression;
    if (patch.format_type !== undefined) m.format_type = patch.format_type;
    if (patch.category !== undefined) m.category = patch.category;
    if (patch.description !== undefined) m.description = patch.description;
    if (patch.active !== undefined) m.active = patch.active;
    if (patch.entity_id !== undefined) m.entity_id = patch.entity_id;
    if (patch.synonyms !== undefined) m.synonyms = [...patch.synonyms];
    m.updated_at = now();
    return copy(m);
  }

  async deleteMetric(id: number): Promise<boolean> {
    return this.metrics.delete(id);
  }
}

// ---- PostgreSQL (cortado_semantic_entities, _columns, _relationships, _metrics) ----------------

interface ColumnRow {
  id: number;
  entity_id: number;
  name: string;
  display_name: string;
  description: string;
  role: SemanticColumn['role'];
  aggregation: SemanticColumn['aggregation'] | null;
  synonyms: string[];
  data_type: string;
  created_at: Date | string;
  updated_at: Date | string;
}

interface EntityRow {
  id: number;
  catalog: string;
  schema_name: string;
  table_name: string;
  display_name: string;
  description: string;
  primary_key: string;
  entity_type: SemanticEntity['entity_type'];
  synonyms: string[];
  /** json_agg of the column rows: times arrive as text */
  columns: ColumnRow[];
  created_at: Date;
  updated_at: Date;
}

interface RelationshipRow extends Omit<SemanticRelationship, 'created_at' | 'updated_at'> {
  created_at: Date;
  updated_at: Date;
}

interface MetricRow extends Omit<SemanticMetric, 'created_at' | 'updated_at'> {
  created_at: Date;
  updated_at: Date;
}

const COLUMN_COLUMNS = 'id, entity_id, name, display_name, description, role, aggregation, synonyms, data_type, created_at, updated_at';
/** an entity with its columns in creation order, in one statement (one snapshot) */
const ENTITY_SELECT = `SELECT e.id, e.catalog, e.schema_name, e.table_name, e.display_name, e.description, e.primary_key,
    e.entity_type, e.synonyms, e.created_at, e.updated_at,
    COALESCE((SELECT json_agg(c ORDER BY c.id) FROM cortado_semantic_columns c WHERE c.entity_id = e.id), '[]'::json) AS columns
  FROM cortado_semantic_entities e`;
const RELATIONSHIP_COLUMNS = 'id, name, from_entity_id, from_column, to_entity_id, to_column, relationship_type, join_type, description, created_at, updated_at';
const METRIC_COLUMNS = 'id, name, display_name, sql_expression, format_type, category, description, active, entity_id, synonyms, created_at, updated_at';

function columnFromRow(r: ColumnRow): SemanticColumn {
  const c: SemanticColumn = {
    id: r.id, entity_id: r.entity_id, name: r.name, display_name: r.display_name, description: r.description, role: r.role,
    synonyms: r.synonyms, data_type: r.data_type, created_at: iso(r.created_at), updated_at: iso(r.updated_at),
  };
  if (r.aggregation != null) c.aggregation = r.aggregation;
  return c;
}

function entityFromRow(r: EntityRow): SemanticEntity {
  return {
    id: r.id, catalog: r.catalog, schema_name: r.schema_name, table_name: r.table_name, display_name: r.display_name,
    description: r.description, primary_key: r.primary_key, entity_type: r.entity_type, synonyms: r.synonyms,
    columns: r.columns.map(columnFromRow), created_at: iso(r.created_at), updated_at: iso(r.updated_at),
  };
}

function relationshipFromRow(r: RelationshipRow): SemanticRelationship {
  return { ...r, created_at: iso(r.created_at), updated_at: iso(r.updated_at) };
}

function metricFromRow(r: MetricRow): SemanticMetric {
  return { ...r, created_at: iso(r.created_at), updated_at: iso(r.updated_at) };
}

/** The SQLSTATE and constraint of a failure, from pg's error or the CortadoError wrapping it. */
function pgFailure(err: unknown): { code?: string; constraint?: string } {
  const e = (err instanceof CortadoError ? err.cause : err) as { code?: unknown; constraint?: unknown } | undefined;
  return {
    ...(typeof e?.code === 'string' ? { code: e.code } : {}),
    ...(typeof e?.constraint === 'string' ? { constraint: e.constraint } : {}),
  };
}

const UNIQUE: Record<string, string> = {
  cortado_semantic_entities_table_key: TABLE_TAKEN,
  cortado_semantic_columns_name_key: COLUMN_TAKEN,
  cortado_semantic_relationships_key: RELATIONSHIP_TAKEN,
  cortado_semantic_metrics_name_key: METRIC_TAKEN,
};

/** a missing entity named by a foreign key: which field of the input names it */
const FOREIGN: Record<string, 'entity_id' | 'from_entity_id' | 'to_entity_id'> = {
  cortado_semantic_columns_entity_id_fkey: 'entity_id',
  cortado_semantic_relationships_from_entity_id_fkey: 'from_entity_id',
  cortado_semantic_relationships_to_entity_id_fkey: 'to_entity_id',
  cortado_semantic_metrics_entity_id_fkey: 'entity_id',
};

/** a CortadoError so that the transaction passes it through as is; the methods say how it answers */
class MissingEntity extends CortadoError {
  constructor(readonly field: 'entity_id' | 'from_entity_id' | 'to_entity_id') {
    super('NOT_FOUND', `there is no such semantic entity (${field})`);
  }
}

/** A duplicate → CONFLICT saying which; a missing entity → MissingEntity (the caller says how it answers); anything else as is. */
function translate(err: unknown): unknown {
  const f = pgFailure(err);
  if (f.code === '23505') return new CortadoError('CONFLICT', (f.constraint && UNIQUE[f.constraint]) ?? 'the record exists already');
  if (f.code === '23503' && f.constraint && FOREIGN[f.constraint]) return new MissingEntity(FOREIGN[f.constraint] as MissingEntity['field']);
  return err;
}

type Client = Pick<pg.PoolClient, 'query'>;

export class PostgresSemantic implements SemanticRepository {
  constructor(private readonly db: PgDatabase) {}

  /** one write in a transaction, its failures translated before the pool's generic ones */
  private async write<T>(fn: (c: Client) => Promise<T>): Promise<T> {
    return this.db.tx(async (c) => {
      try {
        return await fn(c);
      } catch (err) {
        throw translate(err);
      }
    });
  }

  /** a write that names entities in its input: a missing one is VALIDATION_FAILED naming the field */
  private async writeNaming<T>(input: Partial<Record<'entity_id' | 'from_entity_id' | 'to_entity_id', number | null>>, fn: (c: Client) => Promise<T>): Promise<T> {
    try {
      return await this.write(fn);
    } catch (err) {
      if (err instanceof MissingEntity) throw noEntity(err.field, input[err.field] ?? 0);
      throw err;
    }
  }

  private async entityIn(c: Client, id: number): Promise<SemanticEntity | undefined> {
    const r = await c.query<EntityRow>(`${ENTITY_SELECT} WHERE e.id = $1`, [id]);
    return r.rows[0] && entityFromRow(r.rows[0]);
  }

  async listEntities(filter: EntityFilter = {}): Promise<SemanticEntity[]> {
    const r = await this.db.query<EntityRow>(
      `${ENTITY_SELECT} WHERE ($1::text IS NULL OR e.catalog = $1) AND ($2::text IS NULL OR e.schema_name = $2) ORDER BY e.id`,
      [optText(filter.catalog), optText(filter.schema_name)]);
    return r.rows.map(entityFromRow);
  }

  async getEntity(id: number): Promise<SemanticEntity | undefined> {
    const r = await this.db.query<EntityRow>(`${ENTITY_SELECT} WHERE e.id = $1`, [id]);
    return r.rows[0] && entityFromRow(r.rows[0]);
  }

  async createEntity(input: EntityInput): Promise<SemanticEntity> {
    const at = now();
    return this.write(async (c) => {
      const r = await c.query<{ id: number }>(
        `INSERT INTO cortado_semantic_entities
           (catalog, schema_name, table_name, display_name, description, primary_key, entity_type, synonyms, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $9) RETURNING id`,
        [clean(input.catalog ?? ''), clean(input.schema_name), clean(input.table_name), clean(input.display_name), clean(input.description ?? ''),
          clean(input.primary_key ?? ''), input.entity_type ?? 'table', json(input.synonyms ?? []), at]);
      const id = (r.rows[0] as { id: number }).id;
      for (const col of input.columns ?? []) await this.insertColumn(c, id, col, at);
      return (await this.entityIn(c, id)) as SemanticEntity;
    });
  }

  async updateEntity(id: number, patch: EntityPatch): Promise<SemanticEntity | undefined> {
    return this.write(async (c) => {
      const r = await c.query(
        `UPDATE cortado_semantic_entities SET
           catalog = COALESCE($2, catalog), schema_name = COALESCE($3, schema_name), table_name = COALESCE($4, table_name),
           display_name = COALESCE($5, display_name), description = COALESCE($6, description), primary_key = COALESCE($7, primary_key),
           entity_type = COALESCE($8, entity_type), synonyms = COALESCE($9::jsonb, synonyms), updated_at = $10
         WHERE id = $1`,
        [id, optText(patch.catalog), optText(patch.schema_name), optText(patch.table_name), optText(patch.display_name),
          optText(patch.description), optText(patch.primary_key), patch.entity_type ?? null,
          patch.synonyms === undefined ? null : json(patch.synonyms), now()]);
      if ((r.rowCount ?? 0) === 0) return undefined;
      return this.entityIn(c, id);
    });
  }

  async deleteEntity(id: number): Promise<EntityDeleted | undefined> {
    const at = now();
    return this.write(async (c) => {
      const e = await c.query('SELECT id FROM cortado_semantic_entities WHERE id = $1 FOR UPDATE', [id]);
      if ((e.rowCount ?? 0) === 0) return undefined;
      const cols = await c.query('DELETE FROM cortado_semantic_columns WHERE entity_id = $1', [id]);
      const rels = await c.query<{ id: number }>('DELETE FROM cortado_semantic_relationships WHERE from_entity_id = $1 OR to_entity_id = $1 RETURNING id', [id]);
      const mets = await c.query<{ id: number }>('UPDATE cortado_semantic_metrics SET entity_id = NULL, updated_at = $2 WHERE entity_id = $1 RETURNING id', [id, at]);
      await c.query('DELETE FROM cortado_semantic_entities WHERE id = $1', [id]);
      const ids = (rows: Array<{ id: number }>) => rows.map((x) => x.id).sort((a, b) => a - b);
      return { deleted_columns: cols.rowCount ?? 0, deleted_relationships: ids(rels.rows), detached_metrics: ids(mets.rows) };
    });
  }

  private async insertColumn(c: Client, entityId: number, input: ColumnInput, at: string): Promise<SemanticColumn> {
    const r = await c.query<ColumnRow>(
      `INSERT INTO cortado_semantic_columns
         (entity_id, name, display_name, description, role, aggregation, synonyms, data_type, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $9) RETURNING ${COLUMN_COLUMNS}`,
      [entityId, clean(input.name), clean(input.display_name ?? ''), clean(input.description ?? ''), input.role, input.aggregation ?? null,
        json(input.synonyms ?? []), clean(input.data_type ?? ''), at]);
    return columnFromRow(r.rows[0] as ColumnRow);
  }

  async addColumn(entityId: number, input: ColumnInput): Promise<SemanticColumn | undefined> {
    try {
      return await this.write((c) => this.insertColumn(c, entityId, input, now()));
    } catch (err) {
      if (err instanceof MissingEntity) return undefined;
      throw err;
    }
  }

  async updateColumn(entityId: number, columnId: number, patch: ColumnPatch): Promise<SemanticColumn | undefined> {
    return this.write(async (c) => {
      const r = await c.query<ColumnRow>(
        `UPDATE cortado_semantic_columns SET
           name = COALESCE($3, name), display_name = COALESCE($4, display_name), description = COALESCE($5, description),
           role = COALESCE($6, role), aggregation = COALESCE($7, aggregation), synonyms = COALESCE($8::jsonb, synonyms),
           data_type = COALESCE($9, data_type), updated_at = $10
         WHERE id = $2 AND entity_id = $1 RETURNING ${COLUMN_COLUMNS}`,
        [entityId, columnId, optText(patch.name), optText(patch.display_name), optText(patch.description), patch.role ?? null,
          patch.aggregation ?? null, patch.synonyms === undefined ? null : json(patch.synonyms), optText(patch.data_type), now()]);
      return r.rows[0] && columnFromRow(r.rows[0]);
    });
  }

  async deleteColumn(entityId: number, columnId: number): Promise<boolean> {
    const r = await this.db.query('DELETE FROM cortado_semantic_columns WHERE id = $2 AND entity_id = $1', [entityId, columnId]);
    return (r.rowCount ?? 0) > 0;
  }

  async listRelationships(): Promise<SemanticRelationship[]> {
    const r = await this.db.query<RelationshipRow>(`SELECT ${RELATIONSHIP_COLUMNS} FROM cortado_semantic_relationships ORDER BY id`);
    return r.rows.map(relationshipFromRow);
  }

  async getRelationship(id: number): Promise<SemanticRelationship | undefined> {
    const r = await this.db.query<RelationshipRow>(`SELECT ${RELATIONSHIP_COLUMNS} FROM cortado_semantic_relationships WHERE id = $1`, [id]);
    return r.rows[0] && relationshipFromRow(r.rows[0]);
  }

  async createRelationship(input: RelationshipInput): Promise<SemanticRelationship> {
    const at = now();
    return this.writeNaming(input, async (c) => {
      const r = await c.query<RelationshipRow>(
        `INSERT INTO cortado_semantic_relationships
           (name, from_entity_id, from_column, to_entity_id, to_column, relationship_type, join_type, description, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING ${RELATIONSHIP_COLUMNS}`,
        [clean(input.name), input.from_entity_id, clean(input.from_column), input.to_entity_id, clean(input.to_column), input.relationship_type,
          input.join_type ?? 'LEFT', clean(input.description ?? ''), at]);
      return relationshipFromRow(r.rows[0] as RelationshipRow);
    });
  }

  async updateRelationship(id: number, patch: RelationshipPatch): Promise<SemanticRelationship | undefined> {
    return this.writeNaming(patch, async (c) => {
      const r = await c.query<RelationshipRow>(
        `UPDATE cortado_semantic_relationships SET
           name = COALESCE($2, name), from_entity_id = COALESCE($3, from_entity_id), from_column = COALESCE($4, from_column),
           to_entity_id = COALESCE($5, to_entity_id), to_column = COALESCE($6, to_column),
           relationship_type = COALESCE($7, relationship_type), join_type = COALESCE($8, join_type),
           description = COALESCE($9, description), updated_at = $10
         WHERE id = $1 RETURNING ${RELATIONSHIP_COLUMNS}`,
        [id, optText(patch.name), patch.from_entity_id ?? null, optText(patch.from_column), patch.to_entity_id ?? null, optText(patch.to_column),
          patch.relationship_type ?? null, patch.join_type ?? null, optText(patch.description), now()]);
      return r.rows[0] && relationshipFromRow(r.rows[0]);
    });
  }

  async deleteRelationship(id: number): Promise<boolean> {
    const r = await this.db.query('DELETE FROM cortado_semantic_relationships WHERE id = $1', [id]);
    return (r.rowCount ?? 0) > 0;
  }

  async listMetrics(activeOnly: boolean): Promise<SemanticMetric[]> {
    const r = await this.db.query<MetricRow>(`SELECT ${METRIC_COLUMNS} FROM cortado_semantic_metrics WHERE active OR NOT $1 ORDER BY id`, [activeOnly]);
    return r.rows.map(metricFromRow);
  }

  async getMetric(id: number): Promise<SemanticMetric | undefined> {
    const r = await this.db.query<MetricRow>(`SELECT ${METRIC_COLUMNS} FROM cortado_semantic_metrics WHERE id = $1`, [id]);
    return r.rows[0] && metricFromRow(r.rows[0]);
  }

  async createMetric(input: MetricInput): Promise<SemanticMetric> {
    const at = now();
    return this.writeNaming(input, async (c) => {
      const r = await c.query<MetricRow>(
        `INSERT INTO cortado_semantic_metrics
           (name, display_name, sql_expression, format_type, category, description, active, entity_id, synonyms, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10, $10) RETURNING ${METRIC_COLUMNS}`,
        [clean(input.name), clean(input.display_name), clean(input.sql_expression), input.format_type ?? '', clean(input.category ?? ''),
          clean(input.description ?? ''), input.active ?? true, input.entity_id ?? null, json(input.synonyms ?? []), at]);
      return metricFromRow(r.rows[0] as MetricRow);
    });
  }

  async updateMetric(id: number, patch: MetricPatch): Promise<SemanticMetric | undefined> {
    return this.writeNaming(patch, async (c) => {
      const r = await c.query<MetricRow>(
        `UPDATE cortado_semantic_metrics SET
           name = COALESCE($2, name), display_name = COALESCE($3, display_name), sql_expression = COALESCE($4, sql_expression),
           format_type = COALESCE($5, format_type), category = COALESCE($6, category), description = COALESCE($7, description),
           active = COALESCE($8, active), entity_id = CASE WHEN $9 THEN $10 ELSE entity_id END,
           synonyms = COALESCE($11::jsonb, synonyms), updated_at = $12
         WHERE id = $1 RETURNING ${METRIC_COLUMNS}`,
        [id, optText(patch.name), optText(patch.display_name), optText(patch.sql_expression), patch.format_type ?? null, optText(patch.category),
          optText(patch.description), patch.active ?? null, patch.entity_id !== undefined, patch.entity_id ?? null,
          patch.synonyms === undefined ? null : json(patch.synonyms), now()]);
      return r.rows[0] && metricFromRow(r.rows[0]);
    });
  }

  async deleteMetric(id: number): Promise<boolean> {
    const r = await this.db.query('DELETE FROM cortado_semantic_metrics WHERE id = $1', [id]);
    return (r.rowCount ?? 0) > 0;
  }
}

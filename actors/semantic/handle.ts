/**
 * The semantic actor's logic: entities with their columns, relationships and metrics over the
 * bus (store/semantic.ts keeps them: PostgreSQL with config_db, else memory), checked against
 * the database first (validate.ts), and the business context of a question (block.ts). Plain
 * functions over (input, deps, ctx).
 *
 * Every write publishes `semantic.changed` (who, what) and drops the cached layer; the cache is
 * also dropped on the event from other processes (actor.ts), so each copy of the actor reads
 * the stored layer again at the next question.
 */
import { randomUUID } from 'node:crypto';
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import { CortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/log.js';
import type { Dialect } from '../../protocol/schemas/common.js';
import type * as S from '../../protocol/schemas/semantic.js';
import { SemanticChangedEvt } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import type { SemanticRepository, Storage } from '../../store/index.js';
import { buildContext, type Layer } from './block.js';
import { checkColumn, checkEntity, checkMetricExpression, checkRelationshipColumns, type ValidateDeps } from './validate.js';

export interface SemanticDeps {
  bus: Pick<Bus, 'publish' | 'request'>;
  config: Pick<Config, 'database'>;
  log: Logger;
  store: Pick<Storage, 'kind' | 'semantic'>;
  cache: LayerCache;
  now?: () => number;
}

// ---- the cached layer -------------------------------------------------------------------------

/** The whole layer, read once and kept until a change drops it (one read shared by the callers that arrive while it runs). */
export class LayerCache {
  private loading: Promise<Layer> | undefined;
  private generation = 0;

  constructor(private readonly repo: SemanticRepository) {}

  get(): Promise<Layer> {
    if (!this.loading) {
      const gen = this.generation;
      const p = this.read();
      this.loading = p;
      // a failed read is not kept; nor a read a change overtook
      p.then(() => {
        if (gen !== this.generation && this.loading === p) this.loading = undefined;
      }, () => {
        if (this.loading === p) this.loading = undefined;
      });
    }
    return this.loading;
  }

  drop(): void {
    this.generation += 1;
    this.loading = undefined;
  }

  private async read(): Promise<Layer> {
    const [entities, relationships, metrics] = await Promise.all([this.repo.listEntities(), this.repo.listRelationships(), this.repo.listMetrics(false)]);
    return { entities, relationships, metrics };
  }
}

// ---- helpers ------------------------------------------------------------------------------------

function dialectOf(deps: SemanticDeps): Dialect {
  return deps.config.database.provider;
}

function validator(deps: SemanticDeps): ValidateDeps {
  return { bus: deps.bus, dialect: dialectOf(deps) };
}

type Change = Pick<S.SemanticChanged, 'kind' | 'action' | 'record_id'> & { entity_id?: number };

/** After a write: the cache dropped, the change announced (audit keeps who did what). */
function changed(change: Change, by: string, deps: SemanticDeps, ctx: Ctx): void {
  deps.cache.drop();
  deps.bus.publish(SemanticChangedEvt, {
    id: randomUUID(),
    ts: new Date(deps.now?.() ?? Date.now()).toISOString(),
    request_id: ctx.requestId,
    user: by,
    ...change,
  }, ctx);
  deps.log.info({ rid: ctx.requestId, kind: change.kind, action: change.action, record_id: change.record_id, by }, 'semantic layer changed');
}

function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

async function entityOr404(id: number, deps: SemanticDeps): Promise<S.SemanticEntity> {
  const e = await deps.store.semantic.getEntity(id);
  if (!e) throw new CortadoError('NOT_FOUND', `there is no semantic entity ${id}`);
  return e;
}

/** An entity id inside a body: an unknown one is the body's fault (400), naming the field. */
async function entityIn(field: string, id: number, deps: SemanticDeps): Promise<S.SemanticEntity> {
  const e = await deps.store.semantic.getEntity(id);
  if (!e) throw new CortadoError('VALIDATION_FAILED', `${field}: there is no semantic entity ${id}`, { field });
  return e;
}

// ---- entities -----------------------------------------------------------------------------------

export async function entityList(input: S.EntityListRequest, deps: SemanticDeps): Promise<{ entities: S.SemanticEntity[] }> {
  const filter = defined({ catalog: input.catalog, schema_name: input.schema_name });
  return { entities: await deps.store.semantic.listEntities(filter) };
}

export async function entityGet(input: { id: number }, deps: SemanticDeps): Promise<S.SemanticEntity> {
  return entityOr404(input.id, deps);
}

function columnsUnique(columns: ReadonlyArray<{ name: string }>): void {
  const seen = new Set<string>();
  for (const c of columns) {
    if (seen.has(c.name)) throw new CortadoError('VALIDATION_FAILED', `columns: "${c.name}" is given twice`, { field: 'columns' });
    seen.add(c.name);
  }
}

export async function entityCreate(input: S.EntityCreateRequest, deps: SemanticDeps, ctx: Ctx): Promise<S.SemanticEntity> {
  const { by, ...body } = input;
  columnsUnique(body.columns ?? []);
  await checkEntity(body, validator(deps), ctx);
  const e = await deps.store.semantic.createEntity(body);
  changed({ kind: 'entity', action: 'create', record_id: e.id }, by, deps, ctx);
  return e;
}

export async function entityUpdate(input: S.EntityUpdateRequest, deps: SemanticDeps, ctx: Ctx): Promise<S.SemanticEntity> {
  const { id, by, ...patch } = input;
  const current = await entityOr404(id, deps);
  const next = { ...current, ...defined(patch) };
  if (next.schema_name !== current.schema_name || next.table_name !== current.table_name || next.primary_key !== current.primary_key) {
    // a table changed: its columns must still be columns of it
    await checkEntity({ ...next, columns: current.columns }, validator(deps), ctx);
  }
  const e = await deps.store.semantic.updateEntity(id, defined(patch));
  if (!e) throw new CortadoError('NOT_FOUND', `there is no semantic entity ${id}`);
  changed({ kind: 'entity', action: 'update', record_id: id }, by, deps, ctx);
  return e;
}

export async function entityDelete(input: S.DeleteRequest, deps: SemanticDeps, ctx: Ctx): Promise<S.EntityDeleteReply> {
  const r = await deps.store.semantic.deleteEntity(input.id);
  if (!r) throw new CortadoError('NOT_FOUND', `there is no semantic entity ${input.id}`);
  changed({ kind: 'entity', action: 'delete', record_id: input.id }, input.by, deps, ctx);
  return { ok: true, ...r };
}

// ---- columns ------------------------------------------------------------------------------------

export async function columnAdd(input: S.ColumnAddRequest, deps: SemanticDeps, ctx: Ctx): Promise<S.SemanticColumn> {
  const { entity_id, by, ...body } = input;
  const entity = await entityIn('entity_id', entity_id, deps);
  if (entity.columns.some((c) => c.name === body.name)) {
    throw new CortadoError('CONFLICT', `${entity.display_name} already has a column "${body.name}"`);
  }
  await checkColumn(entity, body.name, validator(deps), ctx);
  const c = await deps.store.semantic.addColumn(entity_id, body);
  if (!c) throw new CortadoError('VALIDATION_FAILED', `entity_id: there is no semantic entity ${entity_id}`, { field: 'entity_id' });
  changed({ kind: 'column', action: 'create', record_id: c.id, entity_id }, by, deps, ctx);
  return c;
}

export async function columnUpdate(input: S.ColumnUpdateRequest, deps: SemanticDeps, ctx: Ctx): Promise<S.SemanticColumn> {
  const { entity_id, id, by, ...patch } = input;
  const entity = await entityIn('entity_id', entity_id, deps);
  const current = entity.columns.find((c) => c.id === id);
  if (!current) throw new CortadoError('NOT_FOUND', `semantic entity ${entity_id} has no column ${id}`);
  if (patch.name !== undefined && patch.name !== current.name) await checkColumn(entity, patch.name, validator(deps), ctx);
  const c = await deps.store.semantic.updateColumn(entity_id, id, defined(patch));
  if (!c) throw new CortadoError('NOT_FOUND', `semantic entity ${entity_id} has no column ${id}`);
  changed({ kind: 'column', action: 'update', record_id: id, entity_id }, by, deps, ctx);
  return c;
}

export async function columnDelete(input: S.ColumnDeleteRequest, deps: SemanticDeps, ctx: Ctx): Promise<{ ok: boolean }> {
  await entityIn('entity_id', input.entity_id, deps);
  if (!(await deps.store.semantic.deleteColumn(input.entity_id, input.id))) {
    throw new CortadoError('NOT_FOUND', `semantic entity ${input.entity_id} has no column ${input.id}`);
  }
  changed({ kind: 'column', action: 'delete', record_id: input.id, entity_id: input.entity_id }, input.by, deps, ctx);
  return { ok: true };
}

// ---- relationships ------------------------------------------------------------------------------

async function checkRelationship(r: S.RelationshipInput, deps: SemanticDeps, ctx: Ctx): Promise<void> {
  const from = await entityIn('from_entity_id', r.from_entity_id, deps);
  const to = await entityIn('to_entity_id', r.to_entity_id, deps);
  await checkRelationshipColumns(from, r.from_column, to, r.to_column, validator(deps), ctx);
}

export async function relationshipList(deps: SemanticDeps): Promise<{ relationships: S.SemanticRelationship[] }> {
  return { relationships: await deps.store.semantic.listRelationships() };
}

export async function relationshipGet(input: { id: number }, deps: SemanticDeps): Promise<S.SemanticRelationship> {
  const r = await deps.store.semantic.getRelationship(input.id);
  if (!r) throw new CortadoError('NOT_FOUND', `there is no semantic relationship ${input.id}`);
  return r;
}

export async function relationshipCreate(input: S.RelationshipCreateRequest, deps: SemanticDeps, ctx: Ctx): Promise<S.SemanticRelationship> {
  const { by, ...body } = input;
  const rel: S.RelationshipInput = { ...body, join_type: body.join_type ?? 'LEFT' };
  await checkRelationship(rel, deps, ctx);
  const r = await deps.store.semantic.createRelationship(rel);
  changed({ kind: 'relationship', action: 'create', record_id: r.id }, by, deps, ctx);
  return r;
}

export async function relationshipUpdate(input: S.RelationshipUpdateRequest, deps: SemanticDeps, ctx: Ctx): Promise<S.SemanticRelationship> {
  const { id, by, ...patch } = input;
  const current = await relationshipGet({ id }, deps);
  const next = { ...current, ...defined(patch) };
  const moved = (['from_entity_id', 'from_column', 'to_entity_id', 'to_column'] as const).some((k) => next[k] !== current[k]);
  if (moved) await checkRelationship(next, deps, ctx);
  const r = await deps.store.semantic.updateRelationship(id, defined(patch));
  if (!r) throw new CortadoError('NOT_FOUND', `there is no semantic relationship ${id}`);
  changed({ kind: 'relationship', action: 'update', record_id: id }, by, deps, ctx);
  return r;
}

export async function relationshipDelete(input: S.DeleteRequest, deps: SemanticDeps, ctx: Ctx): Promise<{ ok: boolean }> {
  if (!(await deps.store.semantic.deleteRelationship(input.id))) throw new CortadoError('NOT_FOUND', `there is no semantic relationship ${input.id}`);
  changed({ kind: 'relationship', action: 'delete', record_id: input.id }, input.by, deps, ctx);
  return { ok: true };
}

// ---- metrics ------------------------------------------------------------------------------------

async function checkMetric(m: Pick<S.MetricInput, 'sql_expression' | 'entity_id'>, deps: SemanticDeps, ctx: Ctx): Promise<void> {
  const entity = m.entity_id == null ? undefined : await entityIn('entity_id', m.entity_id, deps);
  await checkMetricExpression(m.sql_expression, entity, validator(deps), ctx);
}

export async function metricList(input: S.MetricListRequest, deps: SemanticDeps): Promise<{ metrics: S.SemanticMetric[] }> {
  return { metrics: await deps.store.semantic.listMetrics(input.active_only ?? true) };
}

export async function metricGet(input: { id: number }, deps: SemanticDeps): Promise<S.SemanticMetric> {
  const m = await deps.store.semantic.getMetric(input.id);
  if (!m) throw new CortadoError('NOT_FOUND', `there is no semantic metric ${input.id}`);
  return m;
}

export async function metricCreate(input: S.MetricCreateRequest, deps: SemanticDeps, ctx: Ctx): Promise<S.SemanticMetric> {
  const { by, ...body } = input;
  await checkMetric(body, deps, ctx);
  const m = await deps.store.semantic.createMetric(body);
  changed({ kind: 'metric', action: 'create', record_id: m.id }, by, deps, ctx);
  return m;
}

export async function metricUpdate(input: S.MetricUpdateRequest, deps: SemanticDeps, ctx: Ctx): Promise<S.SemanticMetric> {
  const { id, by, ...patch } = input;
  const current = await metricGet({ id }, deps);
  const next = { ...current, ...defined(patch) };
  if (next.sql_expression !== current.sql_expression || next.entity_id !== current.entity_id) await checkMetric(next, deps, ctx);
  const m = await deps.store.semantic.updateMetric(id, defined(patch));
  if (!m) throw new CortadoError('NOT_FOUND', `there is no semantic metric ${id}`);
  changed({ kind: 'metric', action: 'update', record_id: id }, by, deps, ctx);
  return m;
}

export async function metricDelete(input: S.DeleteRequest, deps: SemanticDeps, ctx: Ctx): Promise<{ ok: boolean }> {
  if (!(await deps.store.semantic.deleteMetric(input.id))) throw new CortadoError('NOT_FOUND', `there is no semantic metric ${input.id}`);
  changed({ kind: 'metric', action: 'delete', record_id: input.id }, input.by, deps, ctx);
  return { ok: true };
}

// ---- context ------------------------------------------------------------------------------------

/** The layer as the model reads it (block.ts): the whole of it, or what one question needs. */
export async function context(input: S.ContextRequest, deps: SemanticDeps): Promise<S.ContextReply> {
  const layer = await deps.cache.get();
  return buildContext(layer, deps.store.kind, input);
}

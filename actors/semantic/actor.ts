/**
 * The semantic actor: the semantic layer (entities and their columns, relationships, metrics)
 * over the bus, and the business context the catalog puts in every question's prompt. It opens
 * its own storage (config_db → PostgreSQL; else memory, per process, not injected: SPEC.md
 * rule 4) and keeps the layer cached until a change: its own writes, or `semantic.changed`
 * from another copy of it.
 */
import {
  Actor, SemanticChangedEvt, SemanticColumnAdd, SemanticColumnDelete, SemanticColumnUpdate, SemanticContext, SemanticEntityCreate,
  SemanticEntityDelete, SemanticEntityGet, SemanticEntityList, SemanticEntityUpdate, SemanticMetricCreate, SemanticMetricDelete,
  SemanticMetricGet, SemanticMetricList, SemanticMetricUpdate, SemanticRelationshipCreate, SemanticRelationshipDelete,
  SemanticRelationshipGet, SemanticRelationshipList, SemanticRelationshipUpdate, SemanticDiscover,
} from '../../protocol/subjects.js';
import { openStorage } from '../../store/index.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import * as h from './handle.js';
import { discover } from './discover.js';

export async function start(deps: ActorDeps): Promise<RunningActor> {
  const { bus, config, log } = deps;
  const store = await openStorage(config, log);
  let stopListening: (() => void) | undefined;
  try {
    const d: h.SemanticDeps = { bus, config, log, store, cache: new h.LayerCache(store.semantic) };
    // a change made by another process: read the layer again at the next question
    stopListening = bus.on(SemanticChangedEvt, () => d.cache.drop());

    bus.serve(SemanticEntityList, (input) => h.entityList(input, d));
    bus.serve(SemanticEntityGet, (input) => h.entityGet(input, d));
    bus.serve(SemanticEntityCreate, (input, ctx) => h.entityCreate(input, d, ctx));
    bus.serve(SemanticEntityUpdate, (input, ctx) => h.entityUpdate(input, d, ctx));
    bus.serve(SemanticEntityDelete, (input, ctx) => h.entityDelete(input, d, ctx));
    bus.serve(SemanticColumnAdd, (input, ctx) => h.columnAdd(input, d, ctx));
    bus.serve(SemanticColumnUpdate, (input, ctx) => h.columnUpdate(input, d, ctx));
    bus.serve(SemanticColumnDelete, (input, ctx) => h.columnDelete(input, d, ctx));
    bus.serve(SemanticRelationshipList, () => h.relationshipList(d));
    bus.serve(SemanticRelationshipGet, (input) => h.relationshipGet(input, d));
    bus.serve(SemanticRelationshipCreate, (input, ctx) => h.relationshipCreate(input, d, ctx));
    bus.serve(SemanticRelationshipUpdate, (input, ctx) => h.relationshipUpdate(input, d, ctx));
    bus.serve(SemanticRelationshipDelete, (input, ctx) => h.relationshipDelete(input, d, ctx));
    bus.serve(SemanticMetricList, (input) => h.metricList(input, d));
    bus.serve(SemanticMetricGet, (input) => h.metricGet(input, d));
    bus.serve(SemanticMetricCreate, (input, ctx) => h.metricCreate(input, d, ctx));
    bus.serve(SemanticMetricUpdate, (input, ctx) => h.metricUpdate(input, d, ctx));
    bus.serve(SemanticMetricDelete, (input, ctx) => h.metricDelete(input, d, ctx));
    bus.serve(SemanticContext, (input) => h.context(input, d));
    bus.serve(SemanticDiscover, (input, ctx) => discover(input, d, ctx));
    log.info({ store: store.kind }, 'semantic layer ready');
  } catch (err) {
    stopListening?.();
    await store.close().catch(() => undefined);
    throw err;
  }
  return {
    name: Actor.Semantic,
    stop: async () => {
      stopListening?.();
      await store.close();
    },
  };
}

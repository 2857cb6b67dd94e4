import { Actor, LlmComplete, MaskChangedEvt, SchemaContext, SchemaDescribe, SchemaDiscover, SchemaTables, SemanticChangedEvt } from '../../protocol/subjects.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import { busCatalogSource, busSemantic, busSemanticTerms, busValueIndex, busValues, context, describe, tables, type CatalogDeps } from './handle.js';
import { discover } from './discover.js';

export async function start(deps: ActorDeps): Promise<RunningActor> {
  const { bus, config, log } = deps;
  const semanticTerms = busSemanticTerms(bus, config);
  const h: CatalogDeps = { config, catalog: busCatalogSource(bus, config), semantic: busSemantic(bus), semanticTerms, values: busValues(bus, config), valueIndex: busValueIndex(bus, config), complete: (input, ctx) => bus.request(LlmComplete, input, ctx), log };
  // the layer's synonyms feed the ranking: read them again after any change
  const stopSemantic = bus.on(SemanticChangedEvt, () => semanticTerms.drop());
  // the values kept leave out masked columns: a rule change makes them ask the executor again
  const stopMask = bus.on(MaskChangedEvt, () => {
    h.values?.drop();
    h.valueIndex?.drop();
  });
  const stopListening = (): void => {
    stopSemantic();
    stopMask();
  };
  bus.serve(SchemaTables, (input, ctx) => tables(input, h, ctx));
  bus.serve(SchemaDescribe, (input, ctx) => describe(input, h, ctx));
  bus.serve(SchemaContext, (input, ctx) => context(input, h, ctx));
  bus.serve(SchemaDiscover, (input, ctx) => discover(input, h, ctx));
  return { name: Actor.Catalog, stop: async () => stopListening() };
}

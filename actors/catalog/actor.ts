import { Actor, SchemaContext, SchemaDescribe, SchemaDiscover, SchemaTables } from '../../protocol/subjects.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import { busCatalogSource, busSemantic, context, describe, tables, type CatalogDeps } from './handle.js';
import { discover } from './discover.js';

export async function start(deps: ActorDeps): Promise<RunningActor> {
  const { bus, config, log } = deps;
  const h: CatalogDeps = { config, catalog: busCatalogSource(bus, config), semantic: busSemantic(bus), log };
  bus.serve(SchemaTables, (input, ctx) => tables(input, h, ctx));
  bus.serve(SchemaDescribe, (input, ctx) => describe(input, h, ctx));
  bus.serve(SchemaContext, (input, ctx) => context(input, h, ctx));
  bus.serve(SchemaDiscover, (input, ctx) => discover(input, h, ctx));
  return { name: Actor.Catalog, stop: async () => undefined };
}

/**
 * What the semantic layer says of each table, as text for the lexical index's `semantic` field:
 * an entity's display name, synonyms and description, its columns' display names, synonyms and
 * descriptions, and the metrics defined over it. The catalog asks the semantic actor for the
 * whole layer once and keeps it until SemanticChangedEvt says it changed.
 */
import type { Ctx } from '../../protocol/bus.js';
import type { ContextReply, ContextRequest, SemanticMetric } from '../../protocol/schemas/semantic.js';
import { displayName } from './catalog.js';

export interface SemanticTerms {
  /** catalog table name → text */
  docs: Map<string, string>;
  /** active metrics with their words, for ties between metrics */
  metrics: Array<Pick<SemanticMetric, 'name' | 'display_name' | 'synonyms' | 'description'>>;
}

/** The layer's words by table (names as the catalog writes them under this default schema). */
export function semanticTerms(layer: Pick<ContextReply, 'entities' | 'metrics'>, defaultSchema: string): SemanticTerms {
  const docs = new Map<string, string>();
  const tableOf = new Map<number, string>();
  for (const e of layer.entities) {
    const name = displayName({ schema: e.schema_name, name: e.table_name }, defaultSchema);
    tableOf.set(e.id, name);
    const parts = [e.display_name, ...e.synonyms, e.description];
    for (const c of e.columns) parts.push(c.display_name, ...c.synonyms, c.description);
    docs.set(name, [docs.get(name) ?? '', ...parts].filter(Boolean).join(' \n '));
  }
  for (const m of layer.metrics) {
    if (!m.active || m.entity_id === null) continue;
    const name = tableOf.get(m.entity_id);
    if (name === undefined) continue;
    docs.set(name, [docs.get(name) ?? '', m.display_name, m.name, ...m.synonyms].filter(Boolean).join(' \n '));
  }
  const metrics = layer.metrics.filter((m) => m.active).map((m) => ({ name: m.name, display_name: m.display_name, synonyms: m.synonyms, description: m.description }));
  return { docs, metrics };
}

export interface SemanticTermsSource {
  get(ctx: Ctx, defaultSchema: string): Promise<SemanticTerms | undefined>;
  /** forget the layer (on evt.semantic.changed) */
  drop(): void;
}

/**
 * The whole layer, asked once and kept until dropped. A semantic actor that does not answer
 * costs the synonyms, never the question: undefined, and asked again on the next call.
 */
export function createSemanticTerms(ask: (input: ContextRequest, ctx: Ctx) => Promise<ContextReply>): SemanticTermsSource {
  let kept: { layer: Pick<ContextReply, 'entities' | 'metrics'>; bySchema: Map<string, SemanticTerms> } | undefined;
  let inFlight: Promise<Pick<ContextReply, 'entities' | 'metrics'> | undefined> | undefined;
  let generation = 0;
  return {
    async get(ctx, defaultSchema) {
      if (!kept) {
        const mine = generation;
        inFlight ??= ask({ max_chars: 0 }, { requestId: ctx.requestId })
          .then((r) => ({ entities: r.entities, metrics: r.metrics }))
          .catch(() => undefined)
          .finally(() => { inFlight = undefined; });
        const layer = await inFlight;
        if (!layer) return undefined;
        if (mine === generation) kept = { layer, bySchema: new Map() };
        else return semanticTerms(layer, defaultSchema);
      }
      let terms = kept.bySchema.get(defaultSchema);
      if (!terms) {
        terms = semanticTerms(kept.layer, defaultSchema);
        kept.bySchema.set(defaultSchema, terms);
      }
      return terms;
    },
    drop() {
      generation += 1;
      kept = undefined;
    },
  };
}

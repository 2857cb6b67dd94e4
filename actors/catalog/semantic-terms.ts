/**
 * What the semantic layer says of each table, as text for the lexical index's `semantic` field:
 * an entity's display name, synonyms and description, its columns' display names, synonyms and
 * descriptions, and the metrics defined over it. The catalog asks the semantic actor for the
 * whole layer once and keeps it until SemanticChangedEvt says it changed (or a TTL passes), with
 * whether the layer can inject a block at all: when it cannot, no question asks for one.
 */
import type { Ctx } from '../../protocol/headers.js';
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
  get(ctx: Ctx, defaultSchema: string): Promise<KeptTerms | undefined>;
  /** forget the layer (on evt.semantic.changed) */
  drop(): void;
}

/** The terms, and whether the layer can inject a block into a prompt at all. */
export interface KeptTerms extends SemanticTerms {
  /**
   * false when no question can get a business-context block: the layer lives in memory (SPEC
   * rule: not injected) or defines no entity. The catalog then skips asking the semantic actor
   * for a question's block (one bus request per question saved).
   */
  injectable: boolean;
}

export interface SemanticTermsOptions {
  /** how long the layer is kept even when no evt.semantic.changed arrives (an event missed while the broker was away) */
  ttlMs?: number | (() => number);
  now?: () => number;
}

/** the layer is read again after this long, changed or not */
const DEFAULT_TTL_MS = 300_000;

/** Whether a layer, as the whole-layer reply describes it, can inject a block (semantic/block.ts: buildContext's rules). */
export function injectable(reply: Pick<ContextReply, 'storage' | 'entities'>): boolean {
  return reply.storage === 'postgresql' && reply.entities.length > 0;
}

/**
 * The whole layer, asked once and kept until dropped or `ttlMs` old. A semantic actor that does
 * not answer costs the synonyms, never the question: undefined, and asked again on the next call.
 */
export function createSemanticTerms(ask: (input: ContextRequest, ctx: Ctx) => Promise<ContextReply>, opts: SemanticTermsOptions = {}): SemanticTermsSource {
  type Layer = Pick<ContextReply, 'entities' | 'metrics'> & { injectable: boolean };
  const ttl = opts.ttlMs ?? DEFAULT_TTL_MS;
  const now = opts.now ?? Date.now;
  let kept: { layer: Layer; at: number; bySchema: Map<string, KeptTerms> } | undefined;
  let inFlight: Promise<Layer | undefined> | undefined;
  let generation = 0;
  const terms = (layer: Layer, defaultSchema: string): KeptTerms => ({ ...semanticTerms(layer, defaultSchema), injectable: layer.injectable });
  return {
    async get(ctx, defaultSchema) {
      if (kept && now() - kept.at >= (typeof ttl === 'function' ? ttl() : ttl)) {
        generation += 1;
        kept = undefined;
      }
      if (!kept) {
        const mine = generation;
        inFlight ??= ask({ max_chars: 0 }, { requestId: ctx.requestId })
          .then((r) => ({ entities: r.entities, metrics: r.metrics, injectable: injectable(r) }))
          .catch(() => undefined)
          .finally(() => { inFlight = undefined; });
        const layer = await inFlight;
        if (!layer) return undefined;
        if (mine === generation) kept = { layer, at: now(), bySchema: new Map() };
        else return terms(layer, defaultSchema);
      }
      let t = kept.bySchema.get(defaultSchema);
      if (!t) {
        t = terms(kept.layer, defaultSchema);
        kept.bySchema.set(defaultSchema, t);
      }
      return t;
    },
    drop() {
      generation += 1;
      kept = undefined;
    },
  };
}

/**
 * The catalog asks the semantic actor for a question's business-context block only when the
 * layer can inject one: the whole layer, asked once and kept, says so (PostgreSQL storage and
 * at least one entity). A layer in memory, or an empty one, costs no request per question; a
 * change (evt.semantic.changed → drop) or the TTL reads the layer again.
 */
import t from 'tap';
import { buildCatalog, context, createSemanticTerms, type CatalogDeps } from '../../actors/catalog/handle.js';
import type { ContextReply, ContextRequest, SemanticEntity } from '../../protocol/schemas/semantic.js';
import type { SqlIntrospectReply } from '../../protocol/schemas/sql.js';
import { testConfig } from '../helpers/config.js';

const REPLY: SqlIntrospectReply = {
  dialect: 'postgresql', provider: 'postgresql', default_schema: 'public',
  tables: [
    { schema: 'public', name: 'orders', kind: 'table', columns: [{ name: 'id', type: 'integer', nullable: false }, { name: 'total', type: 'numeric', nullable: false }] },
    { schema: 'public', name: 'customers', kind: 'table', columns: [{ name: 'id', type: 'integer', nullable: false }, { name: 'name', type: 'text', nullable: false }] },
  ],
};
const catalog = buildCatalog(REPLY);
const entity: SemanticEntity = {
  id: 1, catalog: '', schema_name: 'public', table_name: 'orders', display_name: 'Orders', description: 'what clients bought',
  primary_key: 'id', entity_type: 'table', synonyms: ['purchases'], created_at: '', updated_at: '', columns: [],
};

/** a semantic actor: the layer in `storage`, counting what it is asked */
function semanticActor(layer: { storage: 'postgresql' | 'memory'; entities: SemanticEntity[] }) {
  const asked = { whole: 0, question: 0 };
  const answer = async (input: ContextRequest): Promise<ContextReply> => {
    const whole = input.question === undefined && input.tables === undefined;
    if (whole) asked.whole++;
    else asked.question++;
    const injected = layer.storage === 'postgresql' && layer.entities.length > 0 && !whole;
    return { entities: layer.entities, relationships: [], metrics: [], storage: layer.storage, injected, block: injected ? 'Orders: what clients bought' : '' };
  };
  return { asked, answer, layer };
}

function deps(actor: ReturnType<typeof semanticActor>, now?: () => number): CatalogDeps {
  return {
    config: testConfig({ natsUrl: 'nats://127.0.0.1:1' }),
    catalog: { get: async () => catalog },
    semantic: actor.answer,
    semanticTerms: createSemanticTerms(actor.answer, { ttlMs: 60_000, ...(now ? { now } : {}) }),
  };
}

const ctx = { requestId: 'sem-skip' };
const ask = (d: CatalogDeps, q = 'total of purchases per customer') => context({ question: q }, d, ctx);

t.test('a layer kept in memory is never injected: no request per question', async (t) => {
  const actor = semanticActor({ storage: 'memory', entities: [entity] });
  const d = deps(actor);
  for (let i = 0; i < 5; i++) t.equal((await ask(d)).business_context, '');
  t.same(actor.asked, { whole: 1, question: 0 }, 'the whole layer once (its synonyms rank tables), nothing per question');
});

t.test('an empty layer in PostgreSQL: nothing per question either', async (t) => {
  const actor = semanticActor({ storage: 'postgresql', entities: [] });
  const d = deps(actor);
  for (let i = 0; i < 3; i++) await ask(d);
  t.same(actor.asked, { whole: 1, question: 0 });
});

t.test('a layer that can inject: each question gets its block; a change is seen after drop', async (t) => {
  const actor = semanticActor({ storage: 'postgresql', entities: [] });
  const d = deps(actor);
  t.equal((await ask(d)).business_context, '');
  t.equal(actor.asked.question, 0);
  // an entity is defined: evt.semantic.changed makes the catalog drop what it kept
  actor.layer.entities = [entity];
  d.semanticTerms!.drop();
  const reply = await ask(d);
  t.equal(reply.business_context, 'Orders: what clients bought', 'the block is injected now');
  t.ok(reply.tables.includes('public.orders') || reply.tables.includes('orders'), `the synonym ranks orders (${reply.tables.join(', ')})`);
  await ask(d);
  t.same(actor.asked, { whole: 2, question: 2 }, 'the layer read again once, then a block per question');
});

t.test('without any event, the kept layer is read again after its TTL', async (t) => {
  let clock = 1_000_000;
  const actor = semanticActor({ storage: 'memory', entities: [entity] });
  const d = deps(actor, () => clock);
  await ask(d);
  clock += 59_000;
  await ask(d);
  t.equal(actor.asked.whole, 1, 'within the TTL: kept');
  actor.layer.storage = 'postgresql';
  clock += 2_000;
  t.equal((await ask(d)).business_context, 'Orders: what clients bought', 'past it: read again, and the change is seen');
  t.same(actor.asked, { whole: 2, question: 1 });
});

t.test('a semantic actor that does not answer the whole-layer ask: questions still ask for their block', async (t) => {
  const actor = semanticActor({ storage: 'postgresql', entities: [entity] });
  let down = true;
  const d: CatalogDeps = {
    ...deps(actor),
    semanticTerms: createSemanticTerms(async (input) => {
      if (down) throw new Error('no semantic actor');
      return actor.answer(input);
    }),
  };
  t.equal((await ask(d)).business_context, 'Orders: what clients bought', 'unknown is not "cannot inject"');
  down = false;
  t.equal(actor.asked.question, 1);
});

/**
 * The value index on a real PostgreSQL: every table's low-cardinality values from pg_stats
 * (sql.values' engine side), on a connection of its own — with the question pool's two
 * connections both busy, the index is still read at once, and the questions are not slowed —
 * and a question's phrases found in it bring their tables into the prompt, however the ranking
 * places them.
 */
import { fixedMasking } from '../../actors/lib/masking/service.js';
import t from 'tap';
import { buildCatalog, buildContext, context, createCatalogCache, createValueIndex, createValueSource, lookupValues, type CatalogDeps } from '../../actors/catalog/handle.js';
import { lexicalIndex } from '../../actors/catalog/lexical.js';
import { stem } from '../../actors/catalog/catalog.js';
import { createEngine } from '../../actors/executor/engines/index.js';
import type { ExecutorDeps } from '../../actors/executor/handle.js';
import { profile } from '../../actors/executor/profile.js';
import { values } from '../../actors/executor/value-index.js';
import { createLogger } from '../../runtime/log.js';
import { testConfig } from '../helpers/config.js';
import { createTestDb } from '../helpers/pg.js';

const db = await createTestDb('value_index');
const filler = Array.from({ length: 30 }, (_, i) => `CREATE TABLE noise_${i} (id int, label text, note text); INSERT INTO noise_${i} SELECT g, 'label ' || (g % 5), md5(g::text) FROM generate_series(1, 300) g;`).join('\n');
await db.pool.query(`
  CREATE SCHEMA shop;
  CREATE TABLE shop.categories (category_id int PRIMARY KEY, category_name text, description text);
  INSERT INTO shop.categories VALUES (1, 'Beverages', 'Soft drinks'), (2, 'Seafood', 'Fish'), (3, 'Dairy Products', 'Cheeses'), (4, 'Confections', 'Sweets');
  CREATE TABLE shop.shippers (shipper_id int PRIMARY KEY, company_name text);
  INSERT INTO shop.shippers VALUES (1, 'Speedy Express'), (2, 'United Package'), (3, 'Federal Shipping');
  CREATE TABLE shop.products (product_id int PRIMARY KEY, product_name text, category_id int REFERENCES shop.categories, unit_price numeric);
  INSERT INTO shop.products SELECT g, 'product ' || g, 1 + g % 4, g FROM generate_series(1, 40) g;
  CREATE TABLE shop.orders (order_id int PRIMARY KEY, ship_via int REFERENCES shop.shippers, freight numeric);
  INSERT INTO shop.orders SELECT g, 1 + g % 3, g FROM generate_series(1, 60) g;
  CREATE SCHEMA media;
  CREATE TABLE media.playlist (playlist_id int PRIMARY KEY, name text);
  INSERT INTO media.playlist VALUES (1, 'Music'), (2, 'Movies'), (3, 'Audiobooks');
  CREATE TABLE media.film (film_id int PRIMARY KEY, title text, length int);
  INSERT INTO media.film SELECT g, 'film ' || g, 90 FROM generate_series(1, 50) g;
  CREATE TABLE people (id int, email text, status text);
  INSERT INTO people SELECT g, 'p' || g || '@example.com', (ARRAY['active','churned'])[1 + g % 2] FROM generate_series(1, 500) g;
  ${filler}
  ANALYZE;
`);
const u = new URL(db.url);
const config = testConfig({ natsUrl: 'nats://127.0.0.1:1', db: { host: db.host, port: db.port, name: db.name, user: decodeURIComponent(u.username || 'postgres') }, extra: { database: { pool_size: 2 } } });
const engine = await createEngine(config, createLogger({ svc: 'test', level: 'silent' }));
t.teardown(async () => {
  await engine.close();
  await db.drop();
});

t.test('the index holds each low-cardinality text column of every table, and no unique or long text', async (t) => {
  const { columns } = await engine.valueIndex!();
  const of = (table: string, column: string) => columns.find((c) => c.table === table && c.column === column)?.values.slice().sort();
  t.same(of('categories', 'category_name'), ['Beverages', 'Confections', 'Dairy Products', 'Seafood']);
  t.same(of('shippers', 'company_name'), ['Federal Shipping', 'Speedy Express', 'United Package']);
  t.same(of('people', 'status'), ['active', 'churned']);
  t.notOk(of('people', 'email'), '500 distinct e-mails are no value list');
  t.notOk(columns.some((c) => c.column === 'note'), '300 unique md5 strings: not indexed');
});

t.test('on its own connection: with both question connections busy, the index is read at once and the questions finish on time', async (t) => {
  const started = Date.now();
  const slow = [engine.execute('SELECT pg_sleep(1.5)', { timeoutMs: 10_000, maxRows: 10 }), engine.execute('SELECT pg_sleep(1.5)', { timeoutMs: 10_000, maxRows: 10 })];
  await new Promise((r) => setTimeout(r, 200));
  const t0 = Date.now();
  const { columns } = await engine.valueIndex!();
  const indexMs = Date.now() - t0;
  t.ok(columns.length > 0);
  t.ok(indexMs < 1000, `the index did not wait for a question's connection (${indexMs} ms while both were held for 1.5 s)`);
  await Promise.all(slow);
  t.ok(Date.now() - started < 4000, 'the questions were not held up');
  const r = await db.pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'cortado-values-%'`);
  t.ok(r.rows[0].n <= 1, 'one value-index connection at most');
});

t.test("a question's phrases found among the values bring their tables, capitals or not", async (t) => {
  const schema = await engine.introspect();
  const catalog = buildCatalog({ dialect: 'postgresql', provider: 'postgresql', ...schema });
  const source = createValueIndex(async () => ({ source: 'statistics', ...(await engine.valueIndex!()), duration_ms: 0 }), 60);
  let index = await source.get(catalog, { requestId: 'v1' });
  for (let i = 0; !index && i < 20; i += 1) index = await source.get(catalog, { requestId: 'v1' });
  t.ok(index, 'the index was built');
  const words = lexicalIndex(catalog);
  const look = (q: string) => lookupValues(q, index!, (w) => words.has(stem(w)));
  t.same([...look('How many orders were shipped with Speedy Express?').keys()], ['Speedy Express']);
  t.same(look('total sales of seafood in 1997').get('seafood')?.map((h) => `${h.table}.${h.column}`), ['shop.categories.category_name']);
  t.same([...look('revenue from dairy products and beverages').keys()].sort(), ['beverages', 'dairy products']);
  t.notOk(look('how many products are there?').size, 'a word the schema uses is a table word, not a value');
  t.notOk(look('how many people are active').size, "'active' is too common a word to look up alone");
  // through the context: the categories table reaches a prompt of four tables for "seafood"
  const reply = buildContext(catalog, { question: 'total freight of seafood orders' }, 4, { valueHits: look('total freight of seafood orders') });
  t.ok(reply.tables.includes('shop.categories'), `categories sent (${reply.tables.join(', ')})`);
  t.match(reply.schema_text, /category_name text -- holds 'Seafood'/);
  const without = buildContext(catalog, { question: 'total freight of seafood orders' }, 4);
  t.notOk(without.tables.includes('shop.categories'), 'without the index it was not');
});

t.test('with value statistics the literals are looked up in the index, not profiled table by table; elsewhere the profile still answers', async (t) => {
  const schema = await engine.introspect();
  const introspection = { dialect: engine.dialect, provider: engine.provider, default_schema: schema.default_schema, tables: schema.tables };
  const log = createLogger({ svc: 'test', level: 'silent' });
  const executor: ExecutorDeps = { config, engine, log, masking: fixedMasking([], log), bus: { publish: async () => undefined } as unknown as ExecutorDeps['bus'] };
  // a catalog larger than the prompt: the value index is asked
  const catalogConfig = testConfig({ natsUrl: 'nats://127.0.0.1:1', extra: { catalog: { max_tables_in_prompt: 4 } } });
  const setup = (source: 'statistics' | 'none') => {
    const profiled: string[][] = [];
    const deps: CatalogDeps = {
      config: catalogConfig,
      catalog: createCatalogCache({ load: async () => introspection, ttlSeconds: 3600 }),
      values: createValueSource(async (input, ctx) => {
        profiled.push(input.tables ?? []);
        return profile(input, executor, ctx);
      }, 60),
      valueIndex: createValueIndex(async (ctx) => (source === 'statistics' ? values({}, executor, ctx) : { source: 'none', columns: [], truncated: false, duration_ms: 0 }), 60),
    };
    return { deps, profiled };
  };
  const ask = async (deps: CatalogDeps, question: string) => {
    // the index is built on the first question (VALUE_INDEX_WAIT_MS at most): wait for it as a running service would have
    const catalog = await deps.catalog.get({ requestId: 'warm' });
    for (let i = 0; i < 40 && !(await deps.valueIndex!.get(catalog, { requestId: 'warm' })); i += 1);
    return context({ question }, deps, { requestId: 'q', deadline: Date.now() + 10_000 });
  };

  const stats = setup('statistics');
  const shipped = await ask(stats.deps, 'How many orders were shipped with Speedy Express?');
  t.ok(shipped.tables.includes('shop.shippers'), `shippers sent (${shipped.tables.join(', ')})`);
  t.match(shipped.schema_text, /company_name text -- holds 'Speedy Express'/);
  // a typo of a value in a column the index holds whole is still asked, from the index's values
  const typo = await ask(stats.deps, "How many orders were shipped with 'Speedy Expres'?");
  t.equal(typo.ambiguity?.word, 'Speedy Expres');
  t.same(typo.ambiguity?.choices.map((c) => c.value), ['Speedy Express']);
  t.same(stats.profiled, [], 'no sql.profile was asked');
  // a lower-case word the business thesaurus maps to the schema's words names tables, not a value
  // ('Movies' is a playlist's name; "movies" are the films)
  const movies = await ask(stats.deps, 'How many movies are longer than two hours?');
  t.ok(movies.tables.includes('media.film'), movies.tables.join(', '));
  t.notMatch(movies.schema_text, /holds 'Movies'/, 'not taken for the playlist named Movies');

  // an engine with no value statistics (MySQL, Trino, BigQuery): the best tables are profiled, as before
  const none = setup('none');
  const literal = await ask(none.deps, 'How many orders were shipped with Speedy Express?');
  t.same(none.profiled, [['shippers']], 'the best tables with text columns were profiled');
  t.ok(literal.tables.includes('shop.shippers'));
});

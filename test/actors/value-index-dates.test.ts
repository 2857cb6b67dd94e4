/**
 * What the value index reads besides text values, on a real PostgreSQL: the first and last date
 * of each date column (a question's "in 1995" tells the source whose data covers 1995 from one
 * whose data starts in 2021, whatever their names say), and the strings inside jsonb documents
 * (a city kept as `{"en": "Moscow", "ru": "Москва"}` is found as 'Moscow').
 */
import { fixedMasking } from '../../actors/lib/masking/service.js';
import t from 'tap';
import { buildCatalog, context, createCatalogCache, createValueIndex, lookupDates, lookupValues, periodsOf, type CatalogDeps } from '../../actors/catalog/handle.js';
import { createEngine } from '../../actors/executor/engines/index.js';
import type { ExecutorDeps } from '../../actors/executor/handle.js';
import { values } from '../../actors/executor/value-index.js';
import { createLogger } from '../../runtime/log.js';
import type { SqlValuesReply } from '../../protocol/schemas/profile.js';
import { testConfig } from '../helpers/config.js';
import { createTestDb } from '../helpers/pg.js';

const db = await createTestDb('value_dates');
const filler = Array.from({ length: 20 }, (_, i) => `CREATE TABLE noise_${i} (id int, label text); INSERT INTO noise_${i} SELECT g, 'label ' || (g % 5) FROM generate_series(1, 50) g;`).join('\n');
await db.pool.query(`
  -- a wholesaler's old system, its orders from 1994 to 1996, named as its designers named things
  CREATE SCHEMA wholesale;
  CREATE TABLE wholesale.country (c_countrykey int PRIMARY KEY, c_name text, c_code text);
  INSERT INTO wholesale.country VALUES (1, 'FRANCE', 'FRA'), (2, 'GERMANY', 'DEU'), (3, 'JAPAN', 'JPN'), (4, 'CANADA', 'CAN');
  CREATE TABLE wholesale.customer (c_custkey int PRIMARY KEY, c_name text, c_countrykey int REFERENCES wholesale.country);
  INSERT INTO wholesale.customer SELECT g, 'Customer#' || g, 1 + g % 3 FROM generate_series(1, 30) g;
  CREATE TABLE wholesale.orders (o_orderkey int PRIMARY KEY, o_custkey int REFERENCES wholesale.customer, o_orderdate date, o_totalprice numeric);
  INSERT INTO wholesale.orders SELECT g, 1 + g % 30, date '1994-01-03' + g * 7, g * 10 FROM generate_series(1, 150) g;
  -- today's web shop, 2021 to 2023, in the words people use; its customers were last touched by a
  -- migration whose dates say nothing of the data
  CREATE SCHEMA shop;
  CREATE TABLE shop.countries (country_id int PRIMARY KEY, country_name text);
  INSERT INTO shop.countries VALUES (1, 'France'), (2, 'Germany');
  CREATE TABLE shop.customers (customer_id int PRIMARY KEY, country_id int REFERENCES shop.countries, updated_at timestamptz);
  INSERT INTO shop.customers SELECT g, 1 + g % 2, timestamptz '1995-06-01' + g * interval '1 day' FROM generate_series(1, 40) g;
  CREATE TABLE shop.orders (order_id int PRIMARY KEY, customer_id int REFERENCES shop.customers, placed_at timestamptz, revenue numeric, country_id int REFERENCES shop.countries);
  INSERT INTO shop.orders SELECT g, 1 + g % 40, timestamptz '2021-02-01' + g * interval '5 days', g, 1 + g % 2 FROM generate_series(1, 200) g;
  -- job titles held from 2005, the current ones "until 9999-01-01"
  CREATE SCHEMA hr;
  CREATE TABLE hr.titles (emp_no int, title text, from_date date, to_date date);
  INSERT INTO hr.titles SELECT g, 'Engineer', date '2005-01-01' + g * 30, CASE WHEN g % 2 = 0 THEN date '9999-01-01' ELSE date '2008-01-01' + g * 30 END FROM generate_series(1, 60) g;
  -- an airline's airports, their cities in jsonb by language
  CREATE SCHEMA air;
  CREATE TABLE air.airports (airport_code text PRIMARY KEY, city jsonb);
  INSERT INTO air.airports VALUES ('SVO', '{"en": "Moscow", "ru": "Москва"}'), ('DME', '{"en": "Moscow", "ru": "Москва"}'),
    ('LED', '{"en": "St. Petersburg", "ru": "Санкт-Петербург"}'), ('KGD', '{"en": "Kaliningrad", "ru": "Калининград"}');
  CREATE TABLE air.flights (flight_id int PRIMARY KEY, departure_airport text REFERENCES air.airports, arrival_airport text REFERENCES air.airports, status text);
  INSERT INTO air.flights SELECT g, (ARRAY['SVO','DME','LED','KGD'])[1 + g % 4], (ARRAY['LED','KGD','SVO','DME'])[1 + g % 4], 'Arrived' FROM generate_series(1, 80) g;
  ${filler}
  ANALYZE;
`);
const u = new URL(db.url);
const config = testConfig({ natsUrl: 'nats://127.0.0.1:1', db: { host: db.host, port: db.port, name: db.name, user: decodeURIComponent(u.username || 'postgres') }, extra: { database: { pool_size: 2 } } });
const log = createLogger({ svc: 'test', level: 'silent' });
const engine = await createEngine(config, log);
t.teardown(async () => {
  await engine.close();
  await db.drop();
});
const executor: ExecutorDeps = { config, engine, log, masking: fixedMasking([], log), bus: { publish: async () => undefined } as unknown as ExecutorDeps['bus'] };

t.test('the index holds each date column\'s first and last day, placeholders left out, and the strings of jsonb documents', async (t) => {
  const { dates, columns } = await engine.valueIndex!();
  const range = (table: string, column: string) => {
    const d = dates?.find((x) => x.table === table && x.column === column);
    return d ? [d.first, d.last] : undefined;
  };
  t.same(range('orders', 'o_orderdate'), ['1994-01-10', '1996-11-18']);
  t.same(range('titles', 'from_date'), ['2005-01-31', '2009-12-06']);
  const until = range('titles', 'to_date');
  t.ok((until?.[1] ?? '9999') < '2100-01-01', `the '9999-01-01' placeholders are no date of the data (${until?.join(' to ')})`);
  t.notOk(dates?.some((d) => d.first > d.last || !/^\d{4}-\d{2}-\d{2}$/.test(d.first)), 'every range is two days in order');
  const city = columns.find((c) => c.table === 'airports' && c.column === 'city')?.values.slice().sort();
  t.same(city, ['Kaliningrad', 'Moscow', 'St. Petersburg', 'Калининград', 'Москва', 'Санкт-Петербург']);
});

t.test('the periods a question names', async (t) => {
  const p = (q: string) => periodsOf(q).map((x) => `${x.from}..${x.to}`);
  t.same(p('Revenue per country for orders placed in 1995'), ['1995-01-01..1995-12-31']);
  t.same(p('rental takings in July 2022'), ['2022-07-01..2022-07-31']);
  t.same(p('tickets sold on 2017-08-15'), ['2017-08-15..2017-08-15']);
  t.same(p('sales in Q3 2001'), ['2001-07-01..2001-09-30']);
  t.same(p('staff hired since 1995'), ['1995-01-01..9999-12-31']);
  t.same(p('nations independent after 1950'), ['1951-01-01..9999-12-31']);
  t.same(p('orders before 2000'), ['0001-01-01..1999-12-31']);
  t.same(p('How many orders did we get last year?'), [], 'a relative period is no date of the data');
});

t.test("a question's years find the tables whose data covers them; load and update dates do not count", async (t) => {
  const reply = await values({}, executor, { requestId: 'd1' });
  const schema = await engine.introspect();
  const catalog = buildCatalog({ dialect: 'postgresql', provider: 'postgresql', ...schema });
  const index = await createValueIndex(async () => reply, 60).get(catalog, { requestId: 'd1' });
  t.ok(index, 'the index was built');
  const tables = (q: string) => [...lookupDates(q, index!).values()].flat().map((h) => h.table).sort();
  t.same(tables('orders placed in 1995'), ['wholesale.orders'], "shop.customers' updated_at is a migration's date, not the data's");
  t.same(tables('orders placed in March 2022'), ['shop.orders']);
  t.same(tables('titles held in 2007'), ['hr.titles']);
  t.same(tables('orders placed in 1980'), [], 'no data in 1980');
  // and a modal verb or a pronoun is no value, unless written as the code it then is
  const look = (q: string) => [...lookupValues(q, index!, () => false).keys()];
  t.same(look('Which suppliers can deliver by Friday?'), [], "'can' is no country code here");
  t.same(look('Can you list the customers in CAN?'), ['CAN']);
});

t.test('through the context: the source whose dates cover the year is chosen over the one whose names match better', async (t) => {
  const schema = await engine.introspect();
  const introspection = { dialect: engine.dialect, provider: engine.provider, default_schema: schema.default_schema, tables: schema.tables };
  const catalogConfig = testConfig({ natsUrl: 'nats://127.0.0.1:1', extra: { catalog: { max_tables_in_prompt: 4 } } });
  const deps = (strip: boolean): CatalogDeps => ({
    config: catalogConfig,
    catalog: createCatalogCache({ load: async () => introspection, ttlSeconds: 3600 }),
    valueIndex: createValueIndex(async (ctx) => {
      const r: SqlValuesReply = await values({}, executor, ctx);
      if (strip) delete r.dates;
      return r;
    }, 60),
  });
  const ask = async (d: CatalogDeps, question: string) => {
    const catalog = await d.catalog.get({ requestId: 'warm' });
    for (let i = 0; i < 40 && !(await d.valueIndex!.get(catalog, { requestId: 'warm' })); i += 1);
    return context({ question }, d, { requestId: 'q', deadline: Date.now() + 10_000 });
  };
  const question = 'Revenue per country for orders placed in 1995';
  const dated = await ask(deps(false), question);
  for (const name of ['wholesale.orders', 'wholesale.customer', 'wholesale.country']) t.ok(dated.tables.includes(name), `${name} sent (${dated.tables.join(', ')})`);
  t.notOk(dated.ambiguity, 'no clarifying question');
  // without the dates the shop's names win: the clue was the data's years
  const undated = await ask(deps(true), question);
  t.notOk(['wholesale.orders', 'wholesale.customer', 'wholesale.country'].every((name) => undated.tables.includes(name)), `without dates: ${undated.tables.join(', ')}`);
  // a city kept in jsonb brings its airports table, and the schema text says how the data spells it
  const moscow = await ask(deps(false), 'How many flights left from Moscow?');
  t.ok(moscow.tables.includes('air.airports'), moscow.tables.join(', '));
  t.match(moscow.schema_text, /city jsonb -- holds 'Moscow'/);
});

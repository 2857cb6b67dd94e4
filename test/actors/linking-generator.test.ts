import t from 'tap';
import { buildCatalog } from '../../actors/catalog/handle.js';
import { catalogDdl, generateCatalog, NOISE_FAMILIES, type GeneratedCatalog } from '../../bench/linking/generate.js';
import { countTokens, evaluateLinking } from '../../bench/linking/evaluate.js';
import { createTestDb } from '../helpers/pg.js';

const names = (g: GeneratedCatalog): string[] => buildCatalog(g.introspection).entries.map((e) => e.name);

t.test('the same seed gives the same catalog, another seed another noise', async (t) => {
  const a = generateCatalog({ tables: 1000, seed: 7 });
  const b = generateCatalog({ tables: 1000, seed: 7 });
  const c = generateCatalog({ tables: 1000, seed: 8 });
  t.same(a, b, 'deep-equal for the same arguments');
  t.equal(JSON.stringify(a), JSON.stringify(b), 'and byte-equal once serialised');
  t.not(JSON.stringify(a.introspection), JSON.stringify(c.introspection), 'another seed changes the noise');
  t.same(a.real, c.real, 'but not the real tables');
  t.same(a.questions, c.questions, 'nor the questions');
});

t.test('sizes, real tables and questions', async (t) => {
  for (const n of [100, 1000]) {
    const g = generateCatalog({ tables: n, seed: 13 });
    t.equal(g.introspection.tables.length, n, `${n} tables in all`);
    t.equal(new Set(names(g)).size, n, 'every name distinct');
    t.equal(g.real.length + Object.keys(g.noise).length, n, 'each table real or noise');
  }
  const full = generateCatalog({ tables: 1000, seed: 13 });
  t.ok(full.real.length >= 115 && full.real.length <= 130, `about 120 real tables (${full.real.length})`);
  t.equal(new Set(full.introspection.tables.filter((x) => full.real.includes(`${x.schema}.${x.name}`)).map((x) => x.schema)).size, 12, 'over 12 domain schemas');
  t.ok(full.questions.length >= 80, `80+ questions (${full.questions.length})`);
  t.ok(full.questions.some((q) => /\b20\d\d\b/.test(q.question)), 'some name a year');
  t.ok(full.questions.some((q) => /'[^']+'/.test(q.question)), 'some quote a literal');
  t.ok(full.questions.some((q) => q.answer_tables.length >= 3), 'some need joins through three tables or more');
  const small = generateCatalog({ tables: 100, seed: 13 });
  t.ok(small.real.length < full.real.length && small.real.length <= 100, 'a smaller catalog keeps whole domains');
  t.ok(small.questions.length > 40 && small.questions.length < full.questions.length, 'and the questions they answer');
});

t.test('foreign keys point at real tables and columns; answer tables exist', async (t) => {
  const g = generateCatalog({ tables: 2000, seed: 13 });
  const byName = new Map(g.introspection.tables.map((x) => [`${x.schema}.${x.name}`, x]));
  let fks = 0;
  const bad: string[] = [];
  for (const table of g.introspection.tables) {
    for (const fk of table.foreign_keys ?? []) {
      fks++;
      const target = byName.get(`${fk.ref_schema}.${fk.ref_table}`);
      const ok = target !== undefined
        && g.real.includes(`${fk.ref_schema}.${fk.ref_table}`)
        && fk.columns.every((c) => table.columns.some((x) => x.name === c))
        && fk.ref_columns.every((c) => target.columns.some((x) => x.name === c))
        && JSON.stringify(g.primary_keys[`${fk.ref_schema}.${fk.ref_table}`]) === JSON.stringify(fk.ref_columns);
      if (!ok) bad.push(`${table.schema}.${table.name} -> ${fk.ref_schema}.${fk.ref_table}`);
    }
  }
  t.ok(fks > 150, `foreign keys declared (${fks})`);
  t.same(bad, [], 'every one to a real table\'s primary key');
  const catalogNames = new Set(names(g));
  const missing = g.questions.flatMap((q) => q.answer_tables.filter((a) => !catalogNames.has(a) || !g.real.includes(a)));
  t.same(missing, [], 'every answer table is a real table of the catalog');
  const entities = g.semantic.entities.map((e) => `${e.schema_name}.${e.table_name}`);
  t.ok(entities.length >= 15, 'semantic entities given');
  t.same(entities.filter((e) => !g.real.includes(e)), [], 'each over a real table');
  t.ok(g.semantic.entities.find((e) => e.table_name === 'cust')?.synonyms.includes('clients'), 'customers are also clients');
  t.ok(g.introspection.tables.filter((x) => g.real.includes(`${x.schema}.${x.name}`)).every((x) => x.comment), 'every real table has a comment');
});

t.test('the noise families are present', async (t) => {
  const g = generateCatalog({ tables: 1000, seed: 13 });
  const families = new Set(Object.values(g.noise));
  t.same([...families].sort(), [...NOISE_FAMILIES].sort(), 'copy, prefix copy, staging, report, unrelated');
  const noise = Object.keys(g.noise);
  for (const [what, re] of [
    ['_old/_v2/_bak', /_(old|v2|v3|bak|backup)$/], ['year copies', /_(20\d\d)$/], ['archives', /_archive_20\d\d$/], ['backups', /_bkp_\d{8}$/],
    ['snapshots', /_snapshot_\d{8}$/], ['per-region copies', /_(emea|apac|amer|latam)$/], ['tmp_ copies', /(^|\.)tmp_/],
    ['staging', /^staging\.stg_/], ['raw', /^(raw|landing)\.raw_/], ['rpt_ roll-ups', /(^|\.)rpt_\w+_by_\w+/], ['agg_/kpi_ roll-ups', /(^|\.)(agg|kpi)_/],
  ] as const) {
    t.ok(noise.some((n) => re.test(n)), `${what}: e.g. ${noise.find((n) => re.test(n))}`);
  }
  const wide = g.introspection.tables.filter((x) => g.noise[`${x.schema}.${x.name}`] === 'unrelated' && x.columns.length >= 50);
  t.ok(wide.length > 0, 'unrelated wide tables');
  const late = g.introspection.tables.filter((x) => /late_(shipments|deliveries)/.test(x.name));
  t.ok(late.length > 0, 'report tables carry the business words in their names');
});

t.test('10,000 tables', async (t) => {
  const started = performance.now();
  const g = generateCatalog({ tables: 10_000, seed: 13 });
  t.comment(`generated in ${Math.round(performance.now() - started)} ms`);
  t.equal(g.introspection.tables.length, 10_000);
  t.equal(new Set(names(g)).size, 10_000, 'distinct names');
  const thousand = generateCatalog({ tables: 1000, seed: 13 });
  t.equal(g.questions.length, thousand.questions.length, 'the same questions as at 1,000');
  t.same(g.introspection.tables.slice(0, 1000), thousand.introspection.tables, 'and the 1,000 catalog is its first 1,000 tables: a bigger catalog only adds noise');
});

t.test('the evaluation measures what a selector sends', async (t) => {
  const g = generateCatalog({ tables: 300, seed: 13 });
  const perfect = await evaluateLinking(g, (_g, q) => q.answer_tables);
  t.equal(perfect.recall, 1, 'the answer tables: full recall');
  t.equal(perfect.complete, 1, 'every question complete');
  t.equal(perfect.noise_share, 0, 'no noise');
  t.ok(perfect.tokens_mean > 200 && perfect.tokens_p95 >= perfect.tokens_mean, `prompt tokens counted (${Math.round(perfect.tokens_mean)})`);
  const noise = Object.keys(g.noise).slice(0, 5);
  const halves = await evaluateLinking(g, (_g, q) => [...q.answer_tables.slice(0, 1), ...noise]);
  t.ok(halves.recall < 1 && halves.recall > 0, 'first answer table only: partial recall');
  t.equal(halves.complete, g.questions.filter((q) => q.answer_tables.length === 1).length / g.questions.length, 'complete only where one table answers');
  t.ok(Math.abs(halves.noise_share - 5 / 6) < 1e-9, 'five noise tables of six sent');
  t.ok(halves.tokens_mean > perfect.tokens_mean, 'more tables, more tokens');
  t.equal(countTokens('hello world'), 2, 'a real tokenizer');
});

t.test('the DDL makes the same catalog in PostgreSQL', async (t) => {
  const db = await createTestDb('linkgen');
  t.teardown(() => db.drop());
  const g = generateCatalog({ tables: 250, seed: 13 });
  for (const statement of catalogDdl(g)) await db.pool.query(statement);
  const { rows } = await db.pool.query<{ schema: string; name: string; comment: string | null; columns: number }>(
    `SELECT n.nspname AS schema, c.relname AS name, obj_description(c.oid, 'pg_class') AS comment, c.relnatts::int AS columns
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_'`,
  );
  t.equal(rows.length, 250, 'every table created');
  const made = new Map(rows.map((r) => [`${r.schema}.${r.name}`, r]));
  const differ = g.introspection.tables.filter((x) => {
    const r = made.get(`${x.schema}.${x.name}`);
    return !r || r.columns !== x.columns.length || (r.comment ?? undefined) !== x.comment;
  });
  t.same(differ.map((x) => x.name), [], 'with its columns and comment');
  const fk = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_constraint WHERE contype = 'f'`);
  t.equal(fk.rows[0]!.n, g.introspection.tables.reduce((n, x) => n + (x.foreign_keys?.length ?? 0), 0), 'and every foreign key');
});

/**
 * The real-schema linking benchmark's data is consistent: questions, answer tables, foreign keys,
 * sample rows and the database the loader makes from them (bench/linking/real/).
 */
import t from 'tap';
import { buildCatalog } from '../../actors/catalog/handle.js';
import { createEngine } from '../../actors/executor/engines/index.js';
import { createLogger } from '../../runtime/log.js';
import { databaseDdl } from '../../bench/linking/real/ddl.js';
import { planRelations, realPlan } from '../../bench/linking/real/load.js';
import { parseColumn, parseForeignKey, type RealTable } from '../../bench/linking/real/model.js';
import { NOISE_FAMILIES } from '../../bench/linking/real/noise.js';
import { QUESTION_CLASSES, QUESTIONS, splitOf } from '../../bench/linking/real/questions.js';
import { bestSet, summarize, type RealQuestionResult } from '../../bench/linking/real/run.js';
import { SOURCES } from '../../bench/linking/real/sources.js';
import { testConfig } from '../helpers/config.js';
import { createTestDb } from '../helpers/pg.js';

const bare = realPlan(0);
const relations = new Set(planRelations(bare));
const tables = new Map<string, RealTable>(bare.schemas.flatMap((s) => s.tables.map((x) => [`${s.name}.${x.name}`, x] as const)));

t.test('questions: ids, split, classes, sources', async (t) => {
  t.ok(QUESTIONS.length >= 150, `at least 150 questions (${QUESTIONS.length})`);
  const ids = QUESTIONS.map((q) => q.id);
  t.equal(new Set(ids).size, ids.length, 'unique ids');
  t.ok(QUESTIONS.every((q) => q.split === splitOf(q.id)), 'each split is its id\'s hash');
  const dev = QUESTIONS.filter((q) => q.split === 'dev').length / QUESTIONS.length;
  t.ok(dev > 0.5 && dev < 0.7, `about 60 % dev (${(dev * 100).toFixed(0)} %)`);
  t.same([...new Set(QUESTIONS.map((q) => q.class))].sort(), [...QUESTION_CLASSES].sort(), 'every class has questions');
  const ambiguous = QUESTIONS.filter((q) => !q.clear);
  t.ok(ambiguous.length >= 5 && ambiguous.length <= 15, `a few ambiguous questions (${ambiguous.length})`);
  t.ok(ambiguous.some((q) => q.split === 'dev') && ambiguous.some((q) => q.split === 'test'), 'in both splits');
  const sources = new Set(SOURCES.map((s) => s.id));
  t.same(QUESTIONS.filter((q) => !sources.has(q.source)).map((q) => q.id), [], 'each names a known source');
  for (const s of SOURCES) t.ok(QUESTIONS.filter((q) => q.source === s.id && q.clear).length >= 8, `${s.id}: 8 clear questions or more`);
  t.ok(QUESTIONS.some((q) => q.class === 'literal' && /^[a-z]/.test(q.question)), 'some literal questions in lower case');
  // a table is named when its name, or its plural, or its words, are in the question
  const named = (question: string, table: string): boolean => {
    const text = ` ${question.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, ' ')} `;
    const name = table.split('.')[1]!.replaceAll('_', ' ');
    return [name, `${name}s`, `${name}es`].some((n) => text.includes(` ${n} `));
  };
  t.same(QUESTIONS.filter((q) => q.class === 'synonym' && q.tables.every((x) => named(q.question, x))).map((q) => q.id), [], 'a synonym question leaves an answer table unnamed');
});

t.test('answer tables exist, in the question\'s own source', async (t) => {
  const schemasOf = new Map(SOURCES.map((s) => [s.id, new Set(s.schemas.map((x) => x.name))]));
  const unknown: string[] = [];
  const foreign: string[] = [];
  for (const q of QUESTIONS) {
    for (const set of [q.tables, ...(q.alternatives ?? [])]) {
      t.ok(set.length > 0, `${q.id}: a set is not empty`);
      t.same(set, [...new Set(set)].sort(), `${q.id}: sorted, no repeats`);
      for (const name of set) {
        if (!relations.has(name)) unknown.push(`${q.id}: ${name}`);
        if (!schemasOf.get(q.source)?.has(name.split('.')[0]!)) foreign.push(`${q.id}: ${name}`);
      }
    }
  }
  t.same(unknown, [], 'every answer table is a relation of the sources');
  t.same(foreign, [], 'of the question\'s source');
});

t.test('foreign keys, keys, rows and partitions are consistent', async (t) => {
  const bad: string[] = [];
  let fks = 0;
  for (const [name, table] of tables) {
    const cols = new Set(table.columns.map((c) => parseColumn(c).name));
    for (const k of table.pk ?? []) if (!cols.has(k)) bad.push(`${name}: primary key column ${k}`);
    for (const spec of table.fks ?? []) {
      fks++;
      const fk = parseForeignKey(spec);
      const target = tables.get(`${fk.ref_schema}.${fk.ref_table}`);
      if (!target) bad.push(`${name}: ${spec} (no such table)`);
      else if (JSON.stringify(target.pk) !== JSON.stringify(fk.ref_columns)) bad.push(`${name}: ${spec} (not the target's primary key)`);
      for (const c of fk.columns) if (!cols.has(c)) bad.push(`${name}: ${spec} (no column ${c})`);
      if (fk.columns.length !== fk.ref_columns.length) bad.push(`${name}: ${spec} (column counts differ)`);
    }
  }
  t.same(bad, [], 'every foreign key points at a table\'s primary key from columns the table has');
  t.ok(fks > 250, `foreign keys declared (${fks})`);
  const payment = tables.get('dvdrental.payment');
  t.equal(payment?.fks_on, 'partitions', 'the DVD store\'s payments declare their foreign keys on the partitions');
  t.ok((payment?.partitions?.parts.filter((p) => p.fks).length ?? 0) >= 6, 'six partitions or more carry them');
  for (const r of bare.rows) {
    t.ok(tables.has(r.table), `rows for ${r.table}: a table of the sources`);
    t.ok(r.values.length > 0 && r.values.length <= 60, `${r.table}: a few rows (${r.values.length})`);
  }
  t.ok(bare.relations >= 240 && bare.relations <= 300, `240 to 300 relations (${bare.relations})`);
});

t.test('the loaded database: every answer table in the catalog the engine introspects', async (t) => {
  const db = await createTestDb('linkreal');
  t.teardown(() => db.drop());
  const ddl = databaseDdl(bare);
  for (let i = 0; i < ddl.length; i += 200) await db.pool.query(ddl.slice(i, i + 200).join(';\n'));
  await db.pool.query('ANALYZE');
  const engine = await createEngine(testConfig({ natsUrl: 'nats://127.0.0.1:4222', db }), createLogger({ svc: 'test', level: 'silent' }));
  t.teardown(() => engine.close());
  const schema = await engine.introspect();
  const catalog = buildCatalog({ dialect: engine.dialect, provider: engine.provider, ...schema });
  const names = new Set(catalog.entries.map((e) => e.name));
  t.equal(names.size, bare.relations, `the catalog holds the ${bare.relations} relations`);
  t.same([...relations].filter((r) => !names.has(r)), [], 'named schema.table, as the questions name them');
  const gold = QUESTIONS.flatMap((q) => [q.tables, ...(q.alternatives ?? [])]).flat();
  t.same(gold.filter((g) => !names.has(g)), [], 'every answer table is there');
  const parts = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid WHERE con.contype = 'f' AND c.relispartition`);
  t.ok(parts.rows[0]!.n >= 18, `foreign keys on the payment partitions (${parts.rows[0]!.n})`);
  const rated = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM dvdrental.film WHERE rating = 'PG-13'`);
  t.ok(rated.rows[0]!.n > 0, 'sample rows loaded');
  const stats = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stats WHERE schemaname = 'northwind' AND tablename = 'shippers'`);
  t.ok(stats.rows[0]!.n > 0, 'and analysed');
});

t.test('warehouse noise: deterministic, the size asked for, every family and hard case', async (t) => {
  const a = realPlan(2000);
  const b = realPlan(2000);
  t.equal(JSON.stringify(a), JSON.stringify(b), 'the same plan every time');
  const other = realPlan(2000, 7);
  t.not(JSON.stringify(other.noise), JSON.stringify(a.noise), 'another seed, other noise');
  t.same(other.real, a.real, 'the same sources');
  const big = realPlan(10_000);
  for (const p of [a, big]) {
    const all = planRelations(p);
    t.equal(all.length, p.relations, `${p.relations}: relations counted`);
    t.equal(new Set(all).size, all.length, `${p.relations}: every name distinct`);
    t.equal(Object.keys(p.noise).length + p.real.length, p.relations, `${p.relations}: each relation real or noise`);
  }
  t.equal(a.relations, 2000, '2,000 asked, 2,000 made');
  t.equal(big.relations, 10_000, '10,000 asked, 10,000 made');
  t.same(Object.keys(big.noise).slice(0, Object.keys(a.noise).length), Object.keys(a.noise), 'a larger plan only adds noise');
  t.same([...new Set(Object.values(a.noise))].sort(), [...NOISE_FAMILIES].sort(), 'every family at 2,000');
  const noise = Object.keys(a.noise);
  const tablesOf = new Map<string, RealTable>(a.schemas.flatMap((s) => s.tables.map((x) => [`${s.name}.${x.name}`, x] as const)));
  for (const [what, re] of [
    ['raw copies', /^raw_\w+\./], ['landing copies', /^landing\.\w+/], ['dbt staging, plural', /^staging\.stg_\w+__\w+s$/], ['snapshots', /^snapshots\.\w+_snapshot$/],
    ['cdc', /_cdc$/], ['audit', /_audit$/], ['history', /_history$/], ['audit log', /^audit\.log_/], ['sibling schema', /^northwind_eu\./],
    ['generic SaaS names', /^(stripe|shopify|netsuite)\.customers$/], ['cryptic ERP names', /^sap\.(kna1|vbak|vbap|mara|lfa1)$/], ['dbt marts', /\.(fct|dim|int)_/],
    ['wide reports', /^reporting\.(rpt|agg|kpi)_/], ['event shards', /\.events_20\d{6}$/], ['views', /^bi\./], ['copies', /(_old|_v2|_bak|_bkp_\d{8}|_20\d\d)$/],
  ] as const) {
    t.ok(noise.some((n) => re.test(n)), `${what}: e.g. ${noise.find((n) => re.test(n))}`);
  }
  const raw = noise.filter((n) => n.startsWith('raw_') && tablesOf.has(n));
  const etl = raw.filter((n) => ['_loaded_at', '_batch_id', '_source_file'].every((c) => tablesOf.get(n)!.columns.some((x) => parseColumn(x).name === c)));
  t.equal(etl.length, raw.length, 'raw copies carry _loaded_at, _batch_id, _source_file');
  const small = raw.filter((n) => tables.get(n.replace(/^raw_/, ''))!.columns.length <= 4);
  t.ok(small.length > 0 && small.every((n) => tables.get(n.replace(/^raw_/, ''))!.columns.length / tablesOf.get(n)!.columns.length < 0.5), 'a narrow table\'s copy shares under half its columns');
  const wide = noise.filter((n) => n.startsWith('reporting.') && tablesOf.get(n)!.columns.length >= 100);
  t.ok(wide.length > 0, `report tables of 100 columns and more (${wide.length})`);
  for (const word of ['customers', 'orders', 'products', 'users', 'sales', 'store']) {
    const same = planRelations(big).filter((n) => n.split('.')[1]!.split('_').includes(word));
    t.ok(same.length >= 5, `'${word}' names ${same.length} relations at 10,000`);
  }
  const bad: string[] = [];
  const bigTables = new Map<string, RealTable>(big.schemas.flatMap((s) => s.tables.map((x) => [`${s.name}.${x.name}`, x] as const)));
  for (const [name, table] of bigTables) {
    for (const spec of table.fks ?? []) {
      const fk = parseForeignKey(spec);
      const target = bigTables.get(`${fk.ref_schema}.${fk.ref_table}`);
      if (!target || JSON.stringify(target.pk) !== JSON.stringify(fk.ref_columns)) bad.push(`${name}: ${spec}`);
    }
  }
  t.same(bad, [], 'every foreign key of the noise points at a table of the plan, to its primary key');
});

t.test('the 2,000-relation database loads, and its catalog holds every relation', async (t) => {
  const db = await createTestDb('linkreal2k');
  t.teardown(() => db.drop());
  const plan = realPlan(2000);
  const ddl = databaseDdl(plan);
  for (let i = 0; i < ddl.length; i += 200) await db.pool.query(ddl.slice(i, i + 200).join(';\n'));
  const engine = await createEngine(testConfig({ natsUrl: 'nats://127.0.0.1:4222', db }), createLogger({ svc: 'test', level: 'silent' }));
  t.teardown(() => engine.close());
  const schema = await engine.introspect();
  const names = new Set(buildCatalog({ dialect: engine.dialect, provider: engine.provider, ...schema }).entries.map((e) => e.name));
  t.equal(names.size, 2000, '2,000 relations in the catalog');
  t.same(planRelations(plan).filter((r) => !names.has(r)), [], 'the ones the plan names');
  const copied = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM raw_northwind.shippers WHERE company_name = 'Speedy Express'`).catch(() => ({ rows: [{ n: -1 }] }));
  t.not(copied.rows[0]!.n, 0, 'landing copies hold the real rows (or the copy is not drawn at this size)');
});

t.test('the measurement: best minimal set, clear and ambiguous apart', async (t) => {
  const q = { tables: ['a.x', 'a.y', 'a.z'], alternatives: [['a.v']] };
  t.same(bestSet(q, new Set(['a.x', 'a.y'])), { tables: ['a.x', 'a.y', 'a.z'], missing: ['a.z'] }, 'two of three beat none of one');
  t.same(bestSet(q, new Set(['a.v'])), { tables: ['a.v'], missing: [] }, 'a complete alternative wins');
  const result = (id: string, clear: boolean, missing: string[], clarified: boolean): RealQuestionResult => ({
    id, split: 'dev', source: 's', class: 'plain', clear, question: id, answer_tables: ['a.x', 'a.y'], sent: ['a.x', 'a.y'].filter((x) => !missing.includes(x)), missing, clarified, tokens: 100, ms: 1,
  });
  const s = summarize([result('1', true, [], false), result('2', true, ['a.y'], true), result('3', false, ['a.x', 'a.y'], true), result('4', false, [], false)]);
  t.equal(s.questions, 2, 'clear questions counted');
  t.equal(s.recall, 3 / 4, 'recall over the clear questions\' answer tables');
  t.equal(s.complete, 1 / 2);
  t.equal(s.wrong_clarifications, 1, 'a clarifying question on a clear question is wrong');
  t.equal(s.wrong_clarifications_per_100, 50);
  t.same([s.ambiguous, s.ambiguous_clarified], [2, 1], 'ambiguous ones apart');
});

/**
 * Exports read page by page from the database (actors/executor/engines/mysql.ts `pages`),
 * against the real MariaDB/MySQL: more rows than one page arrive as several pages, the file
 * parses back equal to the rows, a reader that stops early ends the query on the server and the
 * pool goes on; timeouts and errors end the stream. Then `sql.export` over the bus (executor +
 * masking) writes a MySQL result of several pages to the exports bucket, parsed back equal.
 * Trino (trino.ts `pages`, against test/helpers/fake-trino.ts): nextUri pages fetched only as
 * the reader asks, an early stop cancelling the query on the coordinator. BigQuery (bigquery.ts
 * `pages`, against test/helpers/fake-bigquery.ts): one jobs.getQueryResults page per page read.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseString } from '@fast-csv/parse';
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import type { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import type { Cell } from '../../protocol/schemas/common.js';
import { Bucket, SqlExport } from '../../protocol/subjects.js';
import { runCortado } from '../../cli/run.js';
import { MysqlEngine } from '../../actors/executor/engines/mysql.js';
import { TrinoEngine } from '../../actors/executor/engines/trino.js';
import { createBigQueryFromConfig, type BigQueryEngine } from '../../actors/executor/engines/bigquery.js';
import { PAGE_ROWS } from '../../actors/executor/export.js';
import { writeExport, type Page } from '../../actors/lib/export/index.js';
import { testConfig } from '../helpers/config.js';
import { startFakeBigQuery } from '../helpers/fake-bigquery.js';
import { startFakeTrino } from '../helpers/fake-trino.js';
import { createTestMysqlDb } from '../helpers/mysql.js';
import { createTestDb } from '../helpers/pg.js';
import { startNats } from '../helpers/nats.js';

const ROWS = 2_500;
const db = await createTestMysqlDb('xpage');
await db.pool.query('CREATE TABLE items (id INT PRIMARY KEY, label VARCHAR(40), amount DECIMAL(10,2), big BIGINT, made DATE)');
for (let i = 0; i < ROWS; i += 500) {
  const values = Array.from({ length: 500 }, (_, k) => {
    const id = i + k + 1;
    return `(${id}, ${id % 7 === 0 ? "'=cmd|x'" : `'item ${id}, "q"'`}, ${id}.25, ${id === 3 ? '9007199254740993' : id * 1000}, '2026-01-${String((id % 28) + 1).padStart(2, '0')}')`;
  });
  await db.pool.query(`INSERT INTO items VALUES ${values.join(', ')}`);
}
const SQL = 'SELECT id, label, amount, big, made FROM items ORDER BY id';
const expectedRow = (id: number): Cell[] => [
  id, id % 7 === 0 ? '=cmd|x' : `item ${id}, "q"`, id + 0.25, id === 3 ? '9007199254740993' : id * 1000, `2026-01-${String((id % 28) + 1).padStart(2, '0')}`,
];
const expected = Array.from({ length: ROWS }, (_, i) => expectedRow(i + 1));

const log = createLogger({ svc: 'test', level: 'silent' });
const dir = mkdtempSync(path.join(tmpdir(), 'cortado-xpage-'));
const nats = await startNats();
t.teardown(async () => {
  rmSync(dir, { recursive: true, force: true });
  await db.drop();
  await nats.stop();
});

function engine(t: { teardown(fn: () => unknown): void }, extra: Partial<ConstructorParameters<typeof MysqlEngine>[0]> = {}): MysqlEngine {
  const e = new MysqlEngine({ ...db, database: db.name, autocommit: true, maxConnections: 1, statementTimeoutMs: 10_000, log, ...extra });
  t.teardown(() => e.close());
  return e;
}

function parseCsv(text: string): Promise<string[][]> {
  return new Promise((resolve, reject) => {
    const out: string[][] = [];
    parseString(text.replace(/^\ufeff/, ''), { headers: false }).on('data', (r: string[]) => out.push(r)).on('error', reject).on('end', () => resolve(out));
  });
}
const asCsv = (v: Cell): string => (v === null ? '' : typeof v === 'string' && /^[=+\-@\t\r]/.test(v) ? `'${v}` : String(v));

/**
 * Threads of our test database still on a statement (the processlist, from the test's own pool):
 * running, or killed but still sending (a killed thread blocked on a socket nobody reads holds
 * its metadata lock until net_write_timeout).
 */
async function runningOn(): Promise<number> {
  const [rows] = await db.pool.query<any[]>("SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = ? AND COMMAND IN ('Query', 'Killed') AND (INFO LIKE 'SELECT id, label%' OR INFO LIKE 'SELECT a.id, a.label%')", [db.name]);
  return Number(rows[0].n);
}

t.test('mysql: more rows than a page arrive page by page and the file parses back equal', async (t) => {
  const e = engine(t);
  const sizes: number[] = [];
  const rows: Cell[][] = [];
  for await (const page of e.pages(SQL, { timeoutMs: 10_000, maxRows: 100_000, pageRows: 1_000 })) {
    t.same(page.columns.map((c) => c.name), ['id', 'label', 'amount', 'big', 'made']);
    sizes.push(page.rows.length);
    rows.push(...page.rows);
  }
  t.same(sizes, [1_000, 1_000, 500], 'three pages: no page is the whole result');
  t.same(rows, expected, 'values converted as execute() does (exact BIGINT as text, DECIMAL as number, dates as text)');
  const whole = await e.execute(SQL, { timeoutMs: 10_000, maxRows: 100_000 });
  t.same(whole.rows, rows, 'pages() and execute() agree');

  async function* paged(): AsyncGenerator<Page> {
    for await (const page of e.pages(SQL, { timeoutMs: 10_000, maxRows: 100_000, pageRows: PAGE_ROWS })) yield page;
  }
  const file = path.join(dir, 'all.csv');
  const written = await writeExport(paged(), { format: 'csv', file, title: 'Items', when: 'now', maxRows: 10_000, maxBytes: 25 * 1024 * 1024 });
  t.equal(written.rows, ROWS);
  t.equal(written.truncated, false);
  const parsed = await parseCsv(readFileSync(file, 'utf8'));
  t.same(parsed[0], ['id', 'label', 'amount', 'big', 'made']);
  t.same(parsed.slice(1), expected.map((r) => r.map(asCsv)), 'the csv equals the rows');
});

t.test('mysql: maxRows bounds the rows read; an empty result still has its columns', async (t) => {
  const e = engine(t);
  const pages: Cell[][][] = [];
  for await (const page of e.pages(SQL, { timeoutMs: 10_000, maxRows: 1_500, pageRows: 1_000 })) pages.push(page.rows);
  t.same(pages.map((p) => p.length), [1_000, 500]);
  const empty: Page[] = [];
  for await (const page of e.pages('SELECT id, label FROM items WHERE id < 0', { timeoutMs: 10_000, maxRows: 10, pageRows: 1_000 })) empty.push(page);
  t.equal(empty.length, 1);
  t.same(empty[0]!.rows, []);
  t.same(empty[0]!.columns.map((c) => c.name), ['id', 'label']);
});

t.test('mysql: a reader that stops early (max_rows reached) ends the query and the pool goes on', async (t) => {
  const e = engine(t); // one connection: the next query needs the pool back
  // a result far larger than what is read: the server would still be sending
  const big = 'SELECT a.id, a.label FROM items a CROSS JOIN items b';
  let pages = 0;
  for await (const page of e.pages(big, { timeoutMs: 30_000, maxRows: 10_000_000, pageRows: 500 })) {
    t.equal(page.rows.length, 500);
    if (++pages === 3) break;
  }
  t.equal(pages, 3);
  const again = await e.execute('SELECT COUNT(*) FROM items', { timeoutMs: 5_000, maxRows: 1 });
  t.same(again.rows, [[ROWS]], 'a follow-up query on the (one-connection) pool works');
  let left = await runningOn();
  for (let i = 0; i < 50 && left > 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
    left = await runningOn();
  }
  t.equal(left, 0, 'nothing is left running on the server');

  // writeExport stopping at its own max_rows: the same early stop, through the writer
  async function* paged(): AsyncGenerator<Page> {
    for await (const page of e.pages(big, { timeoutMs: 30_000, maxRows: 10_000_000, pageRows: 1_000 })) yield page;
  }
  const written = await writeExport(paged(), { format: 'csv', file: path.join(dir, 'cut.csv'), title: 'Cut', when: 'now', maxRows: 1_200, maxBytes: 25 * 1024 * 1024 });
  t.equal(written.rows, 1_200);
  t.equal(written.truncated, true);
  const after = await e.execute('SELECT 1', { timeoutMs: 5_000, maxRows: 1 });
  t.same(after.rows, [[1]], 'the pool goes on after the writer stopped reading');
  left = await runningOn();
  for (let i = 0; i < 50 && left > 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
    left = await runningOn();
  }
  t.equal(left, 0, 'nothing is left on the server, not even a killed thread still sending');
});

t.test('mysql: a failing statement and the timeout end the stream with their error', async (t) => {
  const e = engine(t);
  const failed = await (async () => {
    for await (const _ of e.pages('SELECT nope FROM items', { timeoutMs: 5_000, maxRows: 10, pageRows: 10 })) { /* none */ }
  })().then(() => undefined, (err: unknown) => err as CortadoError);
  t.equal(failed?.code, 'DB_QUERY_FAILED');
  const slow = await (async () => {
    for await (const _ of e.pages('SELECT SLEEP(5) AS s', { timeoutMs: 1_000, maxRows: 10, pageRows: 10 })) { /* none */ }
  })().then(() => undefined, (err: unknown) => err as CortadoError);
  // MariaDB's max_statement_time errors; MySQL's SLEEP is interrupted and answers 1: either way it ends early
  if (slow) t.equal(slow.code, 'DB_TIMEOUT');
  else t.pass('SLEEP interrupted by the server timeout');
  const read: Cell[][] = [];
  for await (const page of e.pages('SELECT 7 AS n', { timeoutMs: 5_000, maxRows: 10, pageRows: 10 })) read.push(...page.rows);
  t.same(read, [[7]], 'the engine goes on');
});

t.test('mysql: the wire cap stops a result over query.max_result_mb while it streams', async (t) => {
  const e = engine(t);
  const err = await (async () => {
    for await (const _ of e.pages(SQL, { timeoutMs: 10_000, maxRows: 100_000, pageRows: 100, maxResultBytes: 20_000 })) { /* read */ }
  })().then(() => undefined, (x: unknown) => x as CortadoError);
  t.equal(err?.code, 'RESULT_TOO_LARGE');
  const after = await e.execute('SELECT 1', { timeoutMs: 5_000, maxRows: 1 });
  t.same(after.rows, [[1]]);
});

t.test('sql.export over the bus: a MySQL result of several pages stored and parsed back equal', async (t) => {
  const config = testConfig({
    natsUrl: nats.url,
    extra: {
      database: { provider: 'mysql', mysql: db.section() },
      query: { default_limit: 10, max_limit: 20, timeout: 30 },
      export: { max_rows: 2_000 },
    },
  });
  const running = await runCortado({ config, roles: { edge: false, actors: ['executor', 'masking', 'settings'] }, log, name: 'xpage-test' });
  const client = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'xpage-client', log });
  t.teardown(async () => {
    await client.close();
    await running.stop();
  });
  const reply = await client.request(SqlExport, { sql: SQL, format: 'csv', title: 'Items' }, { requestId: 'xpage-1' });
  t.equal(reply.rows, 2_000);
  t.equal(reply.truncated, true, 'cut at export.max_rows');
  t.ok(reply.object);
  const stored = await (await client.objects(Bucket.Exports)).getBytes(reply.object!, 10 * 1024 * 1024);
  const parsed = await parseCsv(stored!.data.toString('utf8'));
  t.same(parsed.slice(1), expected.slice(0, 2_000).map((r) => r.map(asCsv)), 'the stored csv equals the rows');
  const after = await client.request(SqlExport, { sql: 'SELECT id FROM items WHERE id <= 3 ORDER BY id', format: 'csv', title: 'Few' }, { requestId: 'xpage-2' });
  t.equal(after.rows, 3, 'the executor goes on');
});

t.test('trino: nextUri pages are read as the reader asks; an early stop cancels the query', async (t) => {
  const pgDb = await createTestDb('xpage_trino');
  await pgDb.pool.query('CREATE TABLE items (id integer PRIMARY KEY, label text)');
  await pgDb.pool.query("INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 350) g");
  const fake = await startFakeTrino({ databaseUrl: pgDb.url, pageSize: 100, catalog: 'postgresql' });
  const e = new TrinoEngine({ server: fake.url, user: 'cortado', password: '', catalog: 'postgresql', schema: 'public', timeoutMs: 10_000, log });
  t.teardown(async () => {
    await e.close();
    await fake.close();
    await pgDb.drop();
  });
  const want = Array.from({ length: 350 }, (_, i) => [i + 1, `item ${i + 1}`]);
  const sizes: number[] = [];
  const rows: Cell[][] = [];
  const handedOut: number[] = [];
  for await (const page of e.pages('SELECT id, label FROM items ORDER BY id', { timeoutMs: 10_000, maxRows: 10_000, pageRows: 100 })) {
    handedOut.push(fake.statements.at(-1)!.pages);
    t.same(page.columns.map((c) => c.name), ['id', 'label']);
    sizes.push(page.rows.length);
    rows.push(...page.rows);
  }
  t.same(sizes, [100, 100, 100, 50], 'several pages');
  t.same(rows, want, 'the rows, in order, converted');
  t.ok(handedOut[0]! < 4, `the coordinator had handed out ${handedOut[0]} of 4 pages when the first reached the reader`);
  t.same(fake.deletes.length, 0, 'read to the end: nothing to cancel');

  let pages = 0;
  for await (const page of e.pages('SELECT id, label FROM items ORDER BY id', { timeoutMs: 10_000, maxRows: 10_000, pageRows: 50 })) {
    t.equal(page.rows.length, 50);
    if (++pages === 2) break;
  }
  const stopped = fake.statements.at(-1)!;
  t.ok(stopped.pages < 4, 'the rest was never fetched');
  t.ok(fake.deletes.some((d) => d.id === stopped.id), 'the stopped query was cancelled on the coordinator');

  const capped: number[] = [];
  for await (const page of e.pages('SELECT id, label FROM items ORDER BY id', { timeoutMs: 10_000, maxRows: 120, pageRows: 100 })) capped.push(page.rows.length);
  t.same(capped, [100, 20], 'maxRows bounds the rows');

  fake.failNext({ message: 'line 1:8: Column nope cannot be resolved', errorName: 'COLUMN_NOT_FOUND', errorType: 'USER_ERROR', errorCode: 47 });
  const err = await (async () => {
    for await (const _ of e.pages('SELECT nope FROM items', { timeoutMs: 10_000, maxRows: 10, pageRows: 10 })) { /* none */ }
  })().then(() => undefined, (x: unknown) => x as CortadoError);
  t.equal(err?.code, 'DB_QUERY_FAILED');

  let path2 = 0;
  for await (const page of e.pages('SELECT id FROM items WHERE id < 0', { timeoutMs: 10_000, maxRows: 10, pageRows: 10 })) {
    path2++;
    t.same(page.rows, []);
    t.same(page.columns.map((c) => c.name), ['id']);
  }
  t.equal(path2, 1, 'an empty result is one page with its columns');
});

t.test('bigquery: one getQueryResults page per page read; an early stop fetches no more', async (t) => {
  const PROJECT = 'xpage-project';
  const pgDb = await createTestDb('xpage_bq');
  await pgDb.pool.query('CREATE SCHEMA shop; CREATE TABLE shop.items (id integer PRIMARY KEY, label text)');
  await pgDb.pool.query("INSERT INTO shop.items SELECT g, 'item ' || g FROM generate_series(1, 250) g");
  const fake = await startFakeBigQuery({ databaseUrl: pgDb.url, projectId: PROJECT });
  const config = testConfig({
    natsUrl: nats.url,
    extra: {
      database: {
        provider: 'bigquery',
        bigquery: { project_id: PROJECT, dataset: 'shop', location: 'US', credentials_json: JSON.stringify(fake.serviceAccount()), max_results: 1_000, base_url: fake.url, timeout: 10 },
      },
    },
  });
  const e = (await createBigQueryFromConfig(config, log)) as BigQueryEngine;
  t.teardown(async () => {
    await e.close();
    await fake.close();
    await pgDb.drop();
  });
  const sql = 'SELECT id, label FROM shop.items ORDER BY id';
  const results = (): number => fake.calls.filter((c) => /\/queries\/[^/]+$/.test(c) && c.startsWith('GET')).length;
  const before = results();
  const sizes: number[] = [];
  const rows: Cell[][] = [];
  for await (const page of e.pages(sql, { timeoutMs: 10_000, maxRows: 10_000, pageRows: 100 })) {
    t.same(page.columns.map((c) => c.name), ['id', 'label']);
    sizes.push(page.rows.length);
    rows.push(...page.rows);
  }
  t.same(sizes, [100, 100, 50], 'pages of pageRows rows');
  t.same(rows, Array.from({ length: 250 }, (_, i) => [i + 1, `item ${i + 1}`]), 'the rows, in order');
  t.equal(results() - before, 2, 'jobs.query answered the first page, getQueryResults the other two');

  const from = results();
  let pages = 0;
  for await (const _ of e.pages(sql, { timeoutMs: 10_000, maxRows: 10_000, pageRows: 50 })) {
    if (++pages === 2) break;
  }
  t.equal(results() - from, 1, 'stopped after two pages: only the second was fetched');

  const capped: number[] = [];
  for await (const page of e.pages(sql, { timeoutMs: 10_000, maxRows: 120, pageRows: 100 })) capped.push(page.rows.length);
  t.same(capped, [100, 20], 'maxRows bounds the rows');

  const refused = await (async () => {
    for await (const _ of e.pages('DELETE FROM shop.items', { timeoutMs: 10_000, maxRows: 10, pageRows: 10 })) { /* none */ }
  })().then(() => undefined, (x: unknown) => x as CortadoError);
  t.ok(refused, 'a statement other than SELECT is refused before it runs');
  t.equal((await pgDb.pool.query('SELECT count(*)::int AS n FROM shop.items')).rows[0].n, 250);
});

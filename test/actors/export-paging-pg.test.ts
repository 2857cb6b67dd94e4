/**
 * A plugins.auth scope's own PostgreSQL read page by page for an export
 * (actors/executor/engines/postgresql.ts `pages`: a server-side cursor on one of the scope
 * pool's connections), against the real PostgreSQL: more rows than a page come as several
 * pages, maxRows bounds the read, a reader that stops early leaves the pool clean (the cursor is
 * closed by the rollback, the session reset), a failing statement and the wire cap end the stream
 * with their error, and the connection held is read-only.
 */
import t from 'tap';
import type { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import type { Cell } from '../../protocol/schemas/common.js';
import { createPostgresEngine } from '../../actors/executor/engines/postgresql.js';
import { createTestDb } from '../helpers/pg.js';

const log = createLogger({ svc: 'test', level: 'silent' });
const ROWS = 2_500;
const db = await createTestDb('xpagepg');
t.teardown(() => db.drop());
await db.pool.query(`CREATE SCHEMA shop; CREATE TABLE shop.items AS SELECT g AS id, 'item ' || g AS label, g * 1.25 AS amount FROM generate_series(1, ${ROWS}) g`);
const options = { host: db.host, port: db.port, database: db.name, user: db.user, password: '', schema: 'shop', minConnections: 1, maxConnections: 1, ssl: false, statementTimeoutMs: 10_000, log };
const engine = await createPostgresEngine(options);
t.teardown(() => engine.close());
const caps = { timeoutMs: 10_000, maxRows: 100_000 };

async function collect(sql: string, opts: { maxRows?: number; pageRows?: number; stopAfter?: number; maxResultBytes?: number } = {}) {
  const pages: Cell[][][] = [];
  let columns: string[] = [];
  for await (const p of engine.pages(sql, { ...caps, maxRows: opts.maxRows ?? caps.maxRows, pageRows: opts.pageRows ?? 1_000, ...(opts.maxResultBytes ? { maxResultBytes: opts.maxResultBytes } : {}) })) {
    columns = p.columns.map((c) => `${c.name}:${c.type}`);
    pages.push(p.rows);
    if (opts.stopAfter !== undefined && pages.length >= opts.stopAfter) break;
  }
  return { pages, columns };
}

t.test('more rows than a page arrive as pages, equal to the table, with their column types', async (t) => {
  const { pages, columns } = await collect('SELECT id, label, amount FROM items ORDER BY id');
  t.same(pages.map((p) => p.length), [1000, 1000, 500], 'three pages of at most 1,000 rows');
  t.same(columns, ['id:integer', 'label:text', 'amount:numeric']);
  const rows = pages.flat();
  t.equal(rows.length, ROWS);
  t.same(rows[0], [1, 'item 1', '1.25'], 'values decoded as the engine decodes them (numeric as text)');
  t.same(rows[ROWS - 1], [ROWS, `item ${ROWS}`, (ROWS * 1.25).toFixed(2)]);
});

t.test('maxRows bounds the rows read; an empty result still has its columns', async (t) => {
  const bounded = await collect('SELECT id FROM items ORDER BY id', { maxRows: 1_234 });
  t.same(bounded.pages.map((p) => p.length), [1000, 234]);
  const empty = await collect('SELECT id, label FROM items WHERE id < 0');
  t.same(empty.pages, [[]], 'one empty page');
  t.same(empty.columns, ['id:integer', 'label:text']);
});

t.test('a reader that stops early leaves the one pooled connection clean for the next query', async (t) => {
  const { pages } = await collect('SELECT id FROM items ORDER BY id', { stopAfter: 1 });
  t.equal(pages.length, 1);
  // the pool has one connection: this runs on the same one, its cursor and transaction gone
  const after = await engine.execute(`SELECT count(*)::int, current_setting('transaction_read_only') FROM pg_cursors WHERE name = 'cortado_export'`, caps);
  t.same(after.rows[0], [0, 'on'], 'no cursor left open; a read-only transaction again');
});

t.test('the export connection is read-only; a failing statement ends the stream with its error', async (t) => {
  const write = await collect('SELECT id FROM items FOR UPDATE').then(() => undefined, (e: CortadoError) => e);
  t.ok(write, 'a locking read in a read-only transaction fails');
  const bad = await collect('SELECT nosuch FROM items').then(() => undefined, (e: CortadoError) => e);
  const direct = await engine.execute('SELECT nosuch FROM items', caps).then(() => undefined, (e: CortadoError) => e);
  t.equal(bad?.code, direct?.code, 'the same error a question gets');
  t.match(bad?.message, /nosuch/);
  const ok = await engine.execute('SELECT 1', caps);
  t.same(ok.rows, [[1]], 'the pool goes on after each failure');
});

t.test('the wire cap applies to each page (query.max_result_mb)', async (t) => {
  const err = await collect(`SELECT repeat('x', 2000) FROM generate_series(1, 2000)`, { maxResultBytes: 100_000 }).then(() => undefined, (e: CortadoError) => e);
  t.equal(err?.code, 'RESULT_TOO_LARGE');
  const ok = await engine.execute('SELECT 2', caps);
  t.same(ok.rows, [[2]], 'a fresh connection after the one dropped');
});
